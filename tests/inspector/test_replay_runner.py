"""Replays launched from the app: the branch tree's launch key, executor consent,
progress in thread workers, the paused notification, answering requirements, resume,
cancel, several replays at once, and opening a replay's events as a timeline.

The flows use the bundled sample agent's fault recordings and branches made with core
(:class:`core.replay.branch.BranchDraft`), as ``branch new`` makes them; the app does the
rest with keys. Waits are on workers and messages (:func:`idle`), never sleeps.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import threading
from pathlib import Path
from typing import Any

from textual.widgets._toast import Toast

from core.examples.sample_agent import get_order
from core.record.recording import Recording, ToolResult
from core.replay.branch import BranchDraft, Policy, ToolResultIntervention, resolve_branch
from core.replay.editing import to_json_text
from core.workspace import Workspace
from inspector import replay_runner
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.replay_runner import ExecutorConsentScreen
from inspector.screens.fixture_editor import TEMPLATES, FixtureEditorScreen
from inspector.screens.requirements import RequirementsScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.branch_tree import BranchTreePanel
from inspector.widgets.json_editor import JsonEditor
from tests.builders import SAMPLES
from tests.inspector.held_executor import GATE_ENV, GO
from tests.inspector.held_executor import SPEC as HELD

SIZE = (160, 45)

#: what the sample agent's tools would have answered (the worked example's fixtures)
OUTPUTS: dict[str, Any] = {
    "check_refund_policy": {
        "content": {
            "order_id": "A1001",
            "sku": "BL-200",
            "eligible": True,
            "max_refund": 89.99,
            "rule": "damaged delivered items are refunded in full",
        }
    },
    "issue_refund": {
        "content": {"refund_id": "R-1", "order_id": "A1001", "sku": "BL-200", "amount": 89.99, "status": "issued"}
    },
    "send_message": {"content": {"delivered": True, "customer_id": "C-1001"}},
}


# ---------------------------------------------------------------------- helpers (shared)


async def idle(pilot, app, rounds: int = 6) -> None:
    """Wait until no worker runs and the messages they posted are handled (a worker's
    end posts messages that start other workers: several rounds)."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()
    await app.workers.wait_for_complete()


def base_copy(
    tmp_path: Path, sample: str = "sample-agent-fault-corrupted-result.json", name: str = "base.json"
) -> Path:
    dest = tmp_path / name
    shutil.copy(SAMPLES / sample, dest)
    return dest


def make_branch(
    ws_path: Path,
    base_path: Path,
    *,
    interventions: list[Any] | None = None,
    at: int | None = None,
    policy: Policy | None = None,
    label: str | None = None,
    branch_id: str | None = None,
) -> str:
    """Store a branch as ``branch new`` does: by default the fault fixed at
    ``metadata.fault.seq`` (the honest order), policy model live."""
    base = Recording.load(base_path)
    seq = base.metadata["fault"]["seq"]
    if interventions is None:
        interventions = [ToolResultIntervention(seq=seq, result=ToolResult(content=get_order("A1001")))]
    draft = BranchDraft(
        base_path=str(base_path),
        at=seq if at is None else at,
        interventions=interventions,
        policy=policy if policy is not None else Policy(model="live"),
        label=label,
        branch_id=branch_id,
    )
    branch = resolve_branch(None, draft, base)
    with Workspace.open(ws_path) as ws:
        ws.add_branch(branch, base, str(base_path))
    return branch.id


def check_workspace(ws_path: Path) -> None:
    """The workspace is consistent (nothing half-stored)."""
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.check() == []


def panel_of(app) -> BranchTreePanel:
    assert isinstance(app.screen, TimelineScreen)
    return app.screen.query_one(BranchTreePanel)


def row_texts(panel: BranchTreePanel) -> list[str]:
    """The tree's lines as drawn (without styles)."""
    view = panel.view
    return ["  " * r.depth + "".join(t for t, _ in view._parts(r)) for r in view.rows]


async def open_tree(pilot, app) -> BranchTreePanel:
    await pilot.press("T")
    await idle(pilot, app)
    panel = panel_of(app)
    assert panel.shown and panel.view.has_focus
    return panel


async def select(pilot, panel: BranchTreePanel, kind: str, ident: str) -> None:
    assert panel.view.go_to(kind, ident), row_texts(panel)
    await pilot.pause()


async def launch(
    pilot,
    app,
    panel: BranchTreePanel,
    branch_id: str,
    consent: str = "#consent-run",
    module: str = "core.sample_agent:make_executor",
) -> None:
    """Select the branch, press R, answer the consent dialog (which names ``module``)."""
    await select(pilot, panel, "branch", branch_id)
    await pilot.press("R")
    await pilot.pause()
    assert isinstance(app.screen, ExecutorConsentScreen)
    assert module in str(app.screen.query_one("#consent-module").render())
    await pilot.click(consent)
    await pilot.pause()


async def answer_with(pilot, app, text: str) -> FixtureEditorScreen:
    """In the fixture editor: replace the text, wait for the check, save."""
    editor_screen = app.screen
    assert isinstance(editor_screen, FixtureEditorScreen)
    editor = editor_screen.query_one(JsonEditor)
    area = editor.area
    area.select_all()
    area.replace(text, *area.selection)
    await pilot.pause()
    await idle(pilot, app)
    await asyncio.wait_for(editor.settled(), 10)
    await pilot.pause()
    await pilot.press("ctrl+s")
    await idle(pilot, app)
    return editor_screen


def paused_toasts(app) -> list[Toast]:
    return [t for t in app.screen.query(Toast) if getattr(t, "_notification", None) is not None]


# ---------------------------------------------------------------------- the whole flow


async def test_launch_pause_answer_resume_until_completed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base, label="honest order")
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        assert any("honest order" in t and "@6 · 1 iv" in t for t in row_texts(panel))
        await launch(pilot, app, panel, branch_id)
        await idle(pilot, app)
        runs = list(app.replay_runner.runs.values())
        assert len(runs) == 1 and runs[0].status == "paused"
        rid = runs[0].replay_id
        # the tree shows the paused replay under its branch
        assert any(rid in t and "‖" in t and "paused · 1 req" in t for t in row_texts(panel)), row_texts(panel)
        # the notification names the requirement; a click on it opens the requirements
        toasts = [t for t in paused_toasts(app) if t._notification.identity in app.replay_runner.paused_notices]
        assert toasts and "check_refund_policy" in str(toasts[0]._notification.message)
        await pilot.click(toasts[0])
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RequirementsScreen) and screen.replay_id == rid
        rounds = 0
        while True:
            assert isinstance(app.screen, RequirementsScreen)
            [req] = app.screen.requirements
            await pilot.press("A")
            await pilot.pause()
            editor_screen = app.screen
            assert isinstance(editor_screen, FixtureEditorScreen)
            # the editor starts from the nearest recorded result, or the template
            expected = to_json_text(req.nearest.output) if req.nearest else to_json_text(TEMPLATES["tool"])
            assert editor_screen.query_one(JsonEditor).text == expected
            await answer_with(pilot, app, to_json_text(OUTPUTS[req.name]))
            assert isinstance(app.screen, RequirementsScreen)
            check_workspace(ws_path)
            await pilot.press("u")
            await idle(pilot, app)
            rounds += 1
            state = app.replay_runner.runs[rid]
            if state.status == "completed":
                break
            assert state.status == "paused" and rounds < 5
        assert rounds == 3  # check_refund_policy, issue_refund, send_message
        with Workspace.open(ws_path, create=False) as ws:
            record = ws.get_replay(rid)
            assert record.status == "completed" and len(record.attempts) == 4
            events = ws.replay_events(rid)
            assert events is not None and events.metadata["outcome"] == "success"
            assert ws.events_file(rid).exists()
        check_workspace(ws_path)
        # back on the timeline the tree shows it completed, with its outcome
        await pilot.press("escape")
        await idle(pilot, app)
        panel = panel_of(app)
        assert any(rid in t and "✓" in t and "completed" in t and "success" in t for t in row_texts(panel))
        # enter on the replay opens its events as a timeline; escape returns to the base
        await select(pilot, panel, "replay", rid)
        panel.view.focus()
        await pilot.press("enter")
        await idle(pilot, app)
        assert isinstance(app.screen, TimelineScreen) and app.screen.loaded.recording.metadata.get("replayed")
        assert app.screen.loaded.path.name == f"{rid}.json"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TimelineScreen) and app.screen.loaded.path == base


async def test_o_opens_the_last_paused_replay_and_a_opens_its_answer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, branch_id)
        await idle(pilot, app)
        rid = next(iter(app.replay_runner.runs))
        await pilot.press("T")  # hide the panel: o then means "the replay that paused last"
        await pilot.pause()
        assert not panel.shown
        await pilot.press("A")
        await idle(pilot, app)
        assert isinstance(app.screen, FixtureEditorScreen) and app.screen.requirement.replay_id == rid
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RequirementsScreen) and app.screen.replay_id == rid
        # o switches to the whole workspace and back
        await pilot.press("o")
        assert app.screen.replay_id is None and len(app.screen.requirements) == 1
        await pilot.press("o")
        assert app.screen.replay_id == rid
        # resuming before answering says what is missing, and starts nothing
        await pilot.press("u")
        await idle(pilot, app)
        assert app.replay_runner.runs[rid].status == "paused"
        assert any("answer it first" in str(n.message) for n in app._notifications)


async def test_consent_refused_runs_nothing_and_without_an_executor_fails_live_policy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base)
    imported: list[str] = []

    class Spy(replay_runner.AttemptProcess):
        def __init__(self, *a, **k) -> None:
            imported.append(str(a[4]))
            super().__init__(*a, **k)

    monkeypatch.setattr(replay_runner, "AttemptProcess", Spy)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, branch_id, consent="#consent-cancel")
        await idle(pilot, app)
        assert imported == [] and app.replay_runner.runs == {}
        await launch(pilot, app, panel, branch_id, consent="#consent-none")
        await idle(pilot, app)
        assert imported == ["None"]
        [state] = app.replay_runner.runs.values()
        assert state.status == "failed" and state.error is not None and "NoExecutor" in state.error
        assert any(state.replay_id in t and "✗" in t and "failed" in t for t in row_texts(panel_of(app)))
    check_workspace(ws_path)


# ---------------------------------------------------------------------- several at once, cancel


class Gate:
    """Holds replays at their first tool call until opened, so that they are running
    (each in its child process) at the same time, for as long as the test needs: the
    base names :mod:`tests.inspector.held_executor`, which connects to this gate's
    socket and waits for :data:`~tests.inspector.held_executor.GO`."""

    def __init__(self, tmp_path: Path, monkeypatch, expected: int) -> None:
        self.path = tmp_path / "gate.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(expected)
        self.server.settimeout(30)
        self.expected = expected
        self.held: list[socket.socket] = []
        monkeypatch.setenv(GATE_ENV, str(self.path))

    async def all_held(self) -> None:
        """Wait until ``expected`` replays are held at the gate."""
        for _ in range(self.expected):
            conn, _ = await asyncio.to_thread(self.server.accept)
            self.held.append(conn)

    def open(self) -> None:
        """Let every held replay go on."""
        for conn in self.held:
            with conn:
                conn.sendall(GO)
        self.held.clear()
        self.server.close()
        self.path.unlink()  # open for good: a resumed replay runs through


def held_base(tmp_path: Path) -> Path:
    """The tool-error sample whose ``metadata.executor`` (a field the digest does not
    seal) names the held sample agent."""
    path = base_copy(tmp_path, "sample-agent-fault-tool-error.json")
    doc = json.loads(path.read_text())
    doc["metadata"]["executor"] = HELD
    path.write_text(json.dumps(doc))
    return path


def finished_event(monkeypatch) -> threading.Event:
    """Set when a replay attempt of the runner returns or raises (its child has stored
    the outcome and ended)."""
    finished = threading.Event()

    class Watched(replay_runner.AttemptProcess):
        def wait(self, *a, **k):
            try:
                return super().wait(*a, **k)
            finally:
                finished.set()

    monkeypatch.setattr(replay_runner, "AttemptProcess", Watched)
    return finished


async def test_two_replays_run_at_once_while_the_user_browses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = held_base(tmp_path)
    ws_path = tmp_path / "ws"
    a = make_branch(ws_path, base, interventions=[], at=3, policy=Policy(), label="as recorded")
    b = make_branch(ws_path, base, interventions=[], at=5, policy=Policy(), label="from step 2")
    gate = Gate(tmp_path, monkeypatch, 2)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        try:
            await launch(pilot, app, panel, a, module=HELD)
            await launch(pilot, app, panel, b, module=HELD)
            await gate.all_held()
            await pilot.pause()
            running = app.replay_runner.active()
            assert len(running) == 2 and {s.branch_id for s in running} == {a, b}
            texts = row_texts(panel)
            assert sum(1 for t in texts if "● " in t and "running" in t) == 2, texts
            # the progress bar of the selected running replay
            await select(pilot, panel, "replay", running[0].replay_id)
            await pilot.pause()
            assert panel.query_one("#branch-tree-progress").has_class("-running")
            # browsing the timeline meanwhile: the cursor moves, the detail follows
            screen = app.screen
            assert isinstance(screen, TimelineScreen)
            screen.table.focus()
            for _ in range(4):
                await pilot.press("down")
            await asyncio.wait_for(screen.detail_settled(), 10)
            assert screen.table.cursor_position == 4
            await pilot.press("e")
            await pilot.pause()
            assert screen.index.seqs[screen.table.cursor_position] == 8
        finally:
            gate.open()
        await idle(pilot, app)
        assert [s.status for s in app.replay_runner.runs.values()] == ["completed", "completed"]
        panel = panel_of(app)
        assert sum(1 for t in row_texts(panel) if "✓ " in t and "completed" in t) == 2
    check_workspace(ws_path)


async def test_a_replay_runs_in_its_own_process_and_the_app_never_holds_its_lock(tmp_path, monkeypatch):
    """The replay's child process holds the replay's lock (its owner) while it runs; the
    app's process only relays its progress."""
    monkeypatch.chdir(tmp_path)
    base = held_base(tmp_path)
    ws_path = tmp_path / "ws"
    a = make_branch(ws_path, base, interventions=[], at=3, policy=Policy())
    gate = Gate(tmp_path, monkeypatch, 1)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        try:
            await launch(pilot, app, panel, a, module=HELD)
            await gate.all_held()
            [state] = app.replay_runner.active()
            with Workspace.open(ws_path, create=False) as ws:
                running = ws.get_replay(state.replay_id)
            assert running.status == "running" and running.owner is not None
            assert running.owner.pid != os.getpid()
            assert Path(f"/proc/{running.owner.pid}").exists()
        finally:
            gate.open()
        await idle(pilot, app)
        assert state.status == "completed"
    check_workspace(ws_path)


async def test_cancel_stops_between_two_calls_and_resume_completes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = held_base(tmp_path)
    ws_path = tmp_path / "ws"
    a = make_branch(ws_path, base, interventions=[], at=3, policy=Policy())
    gate = Gate(tmp_path, monkeypatch, 1)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        try:
            await launch(pilot, app, panel, a, module=HELD)
            await gate.all_held()
            await pilot.pause()
            [state] = app.replay_runner.active()
            await select(pilot, panel, "replay", state.replay_id)
            await pilot.press("K")
            assert state.cancel.is_set()
            assert await asyncio.to_thread(state.process.cancelling.wait, 30)  # taken in, mid-call
        finally:
            gate.open()
        await idle(pilot, app)
        assert state.status == "failed" and "Cancelled" in (state.error or "")
        # held in its first tool call (after one model call): that call is answered, then it stops
        assert any("cancelled after 2 call(s)" in str(n.message) for n in app._notifications)
        check_workspace(ws_path)
        await select(pilot, panel, "replay", state.replay_id)
        await pilot.press("u")
        await idle(pilot, app)
        assert app.replay_runner.runs[state.replay_id].status == "completed"
    check_workspace(ws_path)


async def test_quitting_cancels_running_replays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = held_base(tmp_path)
    ws_path = tmp_path / "ws"
    a = make_branch(ws_path, base, interventions=[], at=3, policy=Policy())
    gate = Gate(tmp_path, monkeypatch, 1)
    finished = finished_event(monkeypatch)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, a, module=HELD)
        await gate.all_held()
        [state] = app.replay_runner.active()
        app.exit()
        assert state.cancel.is_set()
        # the child has taken the cancel in while its call is held (else the last calls,
        # a few milliseconds, could all be answered before it reads it)
        assert await asyncio.to_thread(state.process.cancelling.wait, 30)
        gate.open()
    # the worker's thread outlives the app: the child stops between two calls and stores that
    assert await asyncio.to_thread(finished.wait, 30)
    with Workspace.open(ws_path, create=False) as ws:
        record = ws.get_replay(state.replay_id)
        assert record.status == "failed" and record.error is not None and record.error.type == "Cancelled"
        assert ws.check() == []


# ---------------------------------------------------------------------- messages from other screens


async def test_branch_saved_with_launch_replays_with_the_editors_executor(tmp_path, monkeypatch):
    from core.replay.boundary import ExecutorChoice
    from inspector.messages import BranchSaved

    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        assert any("no workspace at" in t for t in row_texts(panel))
        assert not ws_path.exists()  # opening the app and the tree never creates it
        branch_id = make_branch(ws_path, base, label="from the editor")
        app.post_message(
            BranchSaved(branch_id, launch=True, executor=ExecutorChoice("core.sample_agent:make_executor", "recording"))
        )
        await idle(pilot, app)
        assert not isinstance(app.screen, ExecutorConsentScreen)  # the editor asked already
        screen = app.screen
        assert len(app.replay_runner.runs) == 1, (screen, getattr(screen, "message", None))
        [state] = app.replay_runner.runs.values()
        assert state.status == "paused" and state.branch_id == branch_id
        assert any("from the editor" in t for t in row_texts(panel_of(app)))
    check_workspace(ws_path)
