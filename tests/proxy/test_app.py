"""A recording made by ``record`` in the app: it opens like any other; the branch editor
offers the command the recording names, its dry run says the agent runs its own tools,
the consent dialog shows the command, and the replay launched from the editor runs it
(in the replay's worker process) to a completed replay whose comparability says the
tools ran unmediated. Waits are on workers and messages, never sleeps."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Static

from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.screens.branch_editor import BranchEditorScreen, ConsentScreen
from inspector.screens.timeline import TimelineScreen

from ..inspector.test_app_pilot import settle
from ..inspector.test_replay_runner import idle
from .conftest import agent, record

SIZE = (160, 45)


async def test_a_recorded_command_replays_from_the_branch_editor(tmp_path: Path, upstream, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "tool.log"
    record(agent("openai_agent", "--stream", "--log", str(log)), tmp_path / "run.json", upstream)
    sent = upstream.model_requests()
    app = InspectorApp(load_for_view(tmp_path / "run.json"), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        assert len(app.screen.index) == 3
        assert app.screen.go_to_seq(1)  # the tool call the agent ran itself
        await settle(pilot, app)
        identity = str(app.screen.detail.query_one("#detail-identity").render())
        assert "observed the agent ran it itself, unmediated" in identity
        assert app.screen.go_to_seq(0)
        await settle(pilot, app)
        await pilot.press("B")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, BranchEditorScreen)
        await asyncio.wait_for(editor.settled(), timeout=30)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert editor.query_one("#pol-executor").value == "recording"
        assert editor.last is not None and editor.last.dry_run is not None
        tool_rows = [p for p in editor.last.dry_run["predictions"] if p["kind"] == "tool"]
        assert tool_rows and tool_rows[0]["answer"] == "live" and "runs it itself" in tool_rows[0]["detail"]
        # the prefilled intervention is the recorded response: the path stays the base's
        answers = {p["base_seq"]: p["answer"] for p in editor.last.dry_run["predictions"]}
        assert answers == {0: "intervention", 1: "live", 2: "recorded"}
        assert editor.query_one("#pol-model").value == "recorded"  # never a paid live model by default

        await pilot.press("ctrl+r")
        await pilot.pause()
        consent = app.screen
        assert isinstance(consent, ConsentScreen)
        shown = str(consent.query_one("#consent-module", Static).render())
        assert shown.startswith("command ") and "openai_agent.py --stream" in shown
        await pilot.press("y")
        await idle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        [state] = app.replay_runner.runs.values()
        assert state.status == "completed", state
        rid = state.replay_id
    with Workspace.open(tmp_path / "ws", create=False) as ws:
        rec = ws.get_replay(rid)
    assert rec.executor is not None and rec.executor.startswith("cmd:")
    assert rec.comparability.level == "partial"
    assert any("unmediated" in r for r in rec.comparability.reasons)
    assert upstream.model_requests() == sent  # answered from the recording
    assert log.read_text().count("lookup weather") == 2  # the agent's own tool ran again


def test_an_incomplete_recording_says_so_when_opened(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent", "--exit", "4"), tmp_path / "run.json", upstream)
    loaded = load_for_view(tmp_path / "run.json")
    assert "this recording is incomplete: the command exited with status 4" in loaded.notices


async def test_an_imported_swe_agent_run_continues_from_the_branch_editor(
    tmp_path: Path, upstream, monkeypatch
) -> None:
    """The bundled SWE-agent run, branched at its first rejected edit with the edit
    accepted, the built-in provider executor chosen in the Policy tab with a live model:
    the dry run says the next model call goes live and estimates its tokens; save & replay
    sends it to the (stand-in) provider, and the new reply's action pauses the replay on a
    requirement for the tool call it asks for."""
    from core.proxy.provider import PROVIDERS
    from inspector.defaults import default_recording_path
    from inspector.widgets.json_editor import JsonEditor

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the field below wins over it
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-stored-0123456789abcdef")
    upstream.script = [("Let me check.\n\n```\npython -c 'print(42)'\n```", [])]
    app = InspectorApp(load_for_view(default_recording_path()), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        await pilot.press("e")  # the first error: the rejected edit at seq 11
        await settle(pilot, app)
        await pilot.press("B")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, BranchEditorScreen)

        async def settled() -> None:
            await pilot.pause()
            await asyncio.wait_for(editor.settled(), timeout=30)
            await app.workers.wait_for_complete()
            await pilot.pause()

        await settled()
        area = editor.query_one(JsonEditor).area
        area.select_all()
        area.replace('{"content": "File updated. Please review the changes."}', *area.selection)
        await settled()
        # the executor choices include the built-in providers; choosing one turns model calls live
        executor = editor.query_one("#pol-executor")
        assert set(PROVIDERS) <= {value for _, value in executor._options}
        note = str(editor.query_one("#pol-live-model-note", Static).render())
        assert "required for live calls" in note  # SWE-agent 0.x files do not name the model
        assert not editor.query_one("#pol-provider-url").display  # only for a provider executor
        executor.value = "provider:openai"
        await settled()
        assert editor.query_one("#pol-model").value == "live"
        assert editor.query_one("#pol-provider-url").display
        assert "http://127.0.0.1:9/v1 (OPENAI_BASE_URL" in str(editor.query_one("#pol-executor-note", Static).render())
        editor.query_one("#pol-provider-url").value = upstream.openai_url
        await settled()
        assert upstream.openai_url in str(editor.query_one("#pol-executor-note", Static).render())
        # without a live model the dry run says the replay would fail at once
        assert editor.last.dry_run["status"] == "failed" and "live_model" in editor.last.dry_run["reason"]
        editor.query_one("#pol-live-model").value = "gpt-4o"
        await settled()
        dry = editor.last.dry_run
        assert dry["status"] == "ok" and dry["counts"]["live"] == 1
        assert dry["live_cost"]["calls"][0]["how"] == "characters / 4"
        shown = str(editor.query_one("#dry-rows", Static).render())
        assert "live: 1 model call(s)" in shown and "an estimate: characters / 4" in shown

        await pilot.press("ctrl+r")  # built-in: no consent dialog, no code of the recording's runs
        await idle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        [state] = app.replay_runner.runs.values()
        assert state.status == "paused", state
    assert upstream.model_requests() == 1 and upstream.requests[0][1]["model"] == "gpt-4o"
    with Workspace.open(tmp_path / "ws", create=False) as ws:
        rec = ws.get_replay(state.replay_id)
        assert rec.executor == f"provider:openai@{upstream.openai_url}" and rec.policy.live_model == "gpt-4o"
        [req] = ws.requirements(open_only=True, replay_id=rec.id)
    assert (req.kind, req.name, req.arguments) == ("tool", "bash", {"command": "python -c 'print(42)'"})
