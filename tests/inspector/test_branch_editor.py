"""The branch editor in the app (pilot tests): open it on the failing tool call of a
sample-agent run, override its result, watch the dry run, save, export — and the bad
inputs: invalid JSON, an intervention of the wrong kind, a workspace that cannot be
written or read. The workspace is checked with core after each."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Button, Input, OptionList, Select, Static, TextArea

from core.record.recording import Recording
from core.workspace import NoWorkspace, Workspace
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.commands import BRANCH_EDITOR_COMMANDS, TIMELINE_COMMANDS
from inspector.loader import load_for_view
from inspector.messages import BranchSaved
from inspector.screens.branch_editor import BranchEditorScreen, ConsentScreen, ExportScreen
from inspector.screens.error import ErrorScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.json_editor import JsonEditor
from tests.builders import SAMPLES

from .test_app_pilot import settle

SIZE = (160, 45)
CORRUPTED = SAMPLES / "sample-agent-fault-corrupted-result.json"


@pytest.fixture
def base_file(tmp_path: Path, monkeypatch) -> Path:
    """The corrupted-result sample, copied to ``tmp_path/base.json`` (the cwd), so the app
    and ``branch new`` name the same base path."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(CORRUPTED, tmp_path / "base.json")
    return Path("base.json")


def _app(base_file: Path, workspace: Path | str = "ws") -> InspectorApp:
    return InspectorApp(load_for_view(base_file), workspace=Path(workspace))


def _saved_messages(app: InspectorApp) -> list[BranchSaved]:
    """Record every BranchSaved posted to the app."""
    seen: list[BranchSaved] = []
    post = app.post_message

    def spy(message):
        if isinstance(message, BranchSaved):
            seen.append(message)
        return post(message)

    app.post_message = spy  # type: ignore[method-assign]
    return seen


async def _editor(pilot, app: InspectorApp) -> BranchEditorScreen:
    """Select the planted fault's tool call, press B, wait for the first dry run."""
    await settle(pilot, app)
    fault = app.loaded.recording.metadata["fault"]["seq"]
    assert isinstance(app.screen, TimelineScreen) and app.screen.go_to_seq(fault)
    await settle(pilot, app)
    await pilot.press("B")
    await pilot.pause()
    editor = app.screen
    assert isinstance(editor, BranchEditorScreen)
    await _settled(pilot, editor)
    return editor


async def _settled(pilot, editor: BranchEditorScreen) -> None:
    await pilot.pause()
    await asyncio.wait_for(editor.settled(), timeout=30)  # a hang fails, never a race
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def _answers(editor: BranchEditorScreen) -> dict[int | None, str]:
    assert editor.last is not None and editor.last.dry_run is not None
    return {p["base_seq"]: p["answer"] for p in editor.last.dry_run["predictions"]}


def _replace_in_editor(editor: BranchEditorScreen, old: str, new: str) -> None:
    """Edit the JSON as a user would (a document edit, which posts TextArea.Changed)."""
    area = editor.query_one(JsonEditor).area
    for row, text in enumerate(area.text.split("\n")):
        col = text.find(old)
        if col >= 0:
            area.replace(new, (row, col), (row, col + len(old)))
            return
    raise AssertionError(f"{old!r} is not in the editor")


def _stored(ws: Path) -> list:
    try:
        with Workspace.open(ws, create=False) as w:
            return w.list_branches()
    except NoWorkspace:
        return []


def _save_disabled(editor: BranchEditorScreen) -> bool:
    return editor.query_one("#be-save", Button).disabled


async def _executor_off(pilot, editor: BranchEditorScreen) -> None:
    editor.query_one("#pol-executor", Select).value = "none"
    await _settled(pilot, editor)


async def test_override_the_failing_tool_result_dry_run_and_save(base_file, tmp_path):
    app = _app(base_file)
    saved = _saved_messages(app)
    base = Recording.load(base_file)
    fault = base.metadata["fault"]["seq"]
    recorded = next(r for r in base.records if r.seq == fault).result.to_json_obj()
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        # the checkpoint is the selected record, the intervention its result as recorded
        assert editor.query_one("#be-checkpoint", Input).value == str(fault)
        assert editor.query_one("#iv-kind", Select).value == "tool_result"
        assert json.loads(editor.query_one(JsonEditor).text) == recorded
        assert _answers(editor)[fault] == "intervention"
        # the recorded value changes nothing after it: every other call as recorded
        assert set(editor.last.counts) == {"recorded", "intervention"} and editor.last.counts["intervention"] == 1
        # the recording names an executor: offered, and once the value differs the dry run
        # counts its live answer
        assert editor.query_one("#pol-executor", Select).value == "recording"
        _replace_in_editor(editor, '"C-2002"', '"C-1001"')
        await _settled(pilot, editor)
        assert _answers(editor)[fault] == "intervention"
        assert editor.last.counts == {"recorded": 3, "intervention": 1, "live": 1, "unknown": 1}
        counts = str(editor.query_one("#dry-counts", Static).render())
        assert "intervention 1" in counts and "live 1" in counts
        assert not _save_disabled(editor)

        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ConsentScreen)  # the module is shown before anything runs
        assert "core.sample_agent" in str(app.screen.query_one("#consent-module", Static).render())
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)

    (branch,) = _stored(tmp_path / "ws")
    assert branch.id == editor.branch_id and branch.checkpoint == fault
    (iv,) = branch.interventions
    assert iv.kind == "tool_result" and iv.seq == fault and iv.result.content["customer_id"] == "C-1001"
    (message,) = saved
    assert message.branch_id == branch.id and not message.launch
    assert message.executor is not None and message.executor.origin == "recording"
    assert message.executor.spec == base.metadata["executor"]

    # what `branch new` stores for the same intervention and policy
    edited = json.loads(json.dumps(recorded))
    edited["content"]["customer_id"] = "C-1001"
    Path("iv.json").write_text(json.dumps({"kind": "tool_result", "seq": fault, "result": edited}))
    Path("policy.json").write_text(json.dumps({"model": "live"}))
    argv = ["branch", "new", str(base_file), "--at", str(fault), "--intervention", "iv.json"]
    assert main([*argv, "--policy", "policy.json", "--workspace", "cli-ws"]) == 0
    (cli,) = _stored(tmp_path / "cli-ws")
    ours, theirs = branch.to_json_obj(), cli.to_json_obj()
    for doc in (ours, theirs):
        doc.pop("id"), doc.pop("created_at")
    assert ours == theirs


async def test_export_to_a_file_replay_accepts(base_file, tmp_path, capsys):
    app = _app(base_file)
    saved = _saved_messages(app)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        await _executor_off(pilot, editor)  # recorded answers, with requirements: no code runs
        assert editor.query_one("#pol-model", Select).value == "recorded"
        assert _answers(editor)[7] == "recorded"  # the recorded value: the path stays the base's
        _replace_in_editor(editor, '"C-2002"', '"C-1001"')
        await _settled(pilot, editor)
        assert _answers(editor)[7] == "requirement"
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        box = app.screen.query_one("#export-path", Input)
        box.value = "exported.json"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
    (branch,) = _stored(tmp_path / "ws")
    assert json.loads(Path("exported.json").read_text())["id"] == branch.id
    assert saved[0].executor is None
    capsys.readouterr()
    code = main(["replay", str(base_file), "--branch", "exported.json", "--workspace", "replay-ws", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 3 and record["status"] == "paused" and record["branch_id"] == branch.id  # paused on the new reply


async def test_invalid_json_disables_save_and_shows_where(base_file, tmp_path):
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        json_editor = editor.query_one(JsonEditor)
        _replace_in_editor(editor, '"C-2002",', '"C-2002"')  # a comma gone
        await _settled(pilot, editor)
        assert json_editor.problem is not None and json_editor.problem.line is not None
        shown = str(json_editor.query_one(".json-problem", Static).render())
        assert f"line {json_editor.problem.line}, column" in shown and "malformed JSON" in shown
        assert _save_disabled(editor) and editor.last.dry_run is None
        assert "malformed JSON" in str(editor.query_one("#be-status", Static).render())
        # a value with no canonical form: its JSON Pointer
        _replace_in_editor(editor, '"C-2002"', '"C-2002",')
        _replace_in_editor(editor, "114.49", "9007199254740993")
        await _settled(pilot, editor)
        shown = str(json_editor.query_one(".json-problem", Static).render())
        assert "at /result/content/total:" in shown and "I-JSON safe range" in shown
        assert _save_disabled(editor)
        # the list marks it, and ctrl+s stores nothing
        assert "✗" in str(editor.query_one("#be-list", OptionList).get_option_at_index(0).prompt)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, BranchEditorScreen)
        # ctrl+g puts the cursor in the JSON
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.focused, TextArea)
    assert not (tmp_path / "ws").exists() and _stored(tmp_path / "ws") == []


async def test_an_intervention_of_the_wrong_kind_for_the_record_is_an_inline_error(base_file, tmp_path):
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        editor.query_one("#iv-kind", Select).value = "model_response"
        await _settled(pilot, editor)
        assert editor.query_one("#iv-seq", Input).value == "7"  # the next model call, its response
        assert not _save_disabled(editor)
        editor.query_one("#iv-seq", Input).value = "6"  # the tool call: the wrong kind
        await _settled(pilot, editor)
        error = str(editor.query_one("#iv-error", Static).render())
        assert "seq 6 is a tool call (get_order), not a model call" in error
        assert _save_disabled(editor)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, BranchEditorScreen)
    assert _stored(tmp_path / "ws") == []


async def test_a_read_only_workspace_is_an_error_screen_and_nothing_is_stored(base_file, tmp_path, monkeypatch):
    Workspace.open(tmp_path / "ws").close()
    import core.workspace

    monkeypatch.setattr(core.workspace, "_cannot_write", lambda path: True)  # as a read-only mount looks
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        await _executor_off(pilot, editor)
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await settle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        message = str(app.screen.query_one("#error-message", Static).render())
        assert "cannot be written" in message and "nothing was stored" in message
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is editor and not _save_disabled(editor)  # the editor as it was
    monkeypatch.undo()
    assert _stored(tmp_path / "ws") == []


async def test_a_damaged_workspace_is_an_error_screen_and_stays_as_it_was(base_file, tmp_path):
    (tmp_path / "ws").mkdir()
    db = tmp_path / "ws" / "workspace.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        assert "cannot be read" in (editor.last.workspace_note or "")  # the dry run goes on without fixtures
        assert _answers(editor)[6] == "intervention"
        await _executor_off(pilot, editor)
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await settle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        assert "not a workspace database" in str(app.screen.query_one("#error-message", Static).render())
    assert db.read_bytes() == b"this is not a database" * 100


async def test_refusing_the_executor_saves_nothing_and_falls_back_to_recorded(base_file, tmp_path):
    app = _app(base_file)
    saved = _saved_messages(app)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConsentScreen)
        await pilot.press("n")
        await _settled(pilot, editor)
        assert app.screen is editor
        assert editor.query_one("#pol-executor", Select).value == "none"
        assert editor.query_one("#pol-model", Select).value == "recorded"
        assert _answers(editor)[7] == "recorded"  # the intervention is the recorded value
        assert _stored(tmp_path / "ws") == []
        # saved and launched now, without an executor
        await pilot.press("ctrl+r")
        await app.workers.wait_for_complete()
        await settle(pilot, app)
    (message,) = saved
    assert message.launch and message.executor is None
    (branch,) = _stored(tmp_path / "ws")
    assert branch.policy.model == "recorded"


async def test_interventions_are_added_reordered_and_removed(base_file, tmp_path):
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        await pilot.press("alt+a")  # a second one: the next request's messages, as recorded
        await _settled(pilot, editor)
        assert [d.kind for d in editor.drafts] == ["tool_result", "messages"]
        messages = json.loads(editor.query_one(JsonEditor).text)
        assert messages[0]["role"] == "tool" and "C-2002" in messages[0]["content"]
        editor.query_one("#iv-kind", Select).value = "options"
        await _settled(pilot, editor)
        assert json.loads(editor.query_one(JsonEditor).text) == {"temperature": 0.0, "tool_choice": "auto"}
        await pilot.press("alt+up")
        await _settled(pilot, editor)
        assert [d.kind for d in editor.drafts] == ["options", "tool_result"] and editor.current == 0
        assert editor.last.check.ok and len(editor.last.check.branch.interventions) == 2
        await pilot.press("alt+d")
        await _settled(pilot, editor)
        assert [d.kind for d in editor.drafts] == ["tool_result"]
        # the checkpoint can move: after the call, its intervention is refused
        editor.query_one("#be-checkpoint", Input).value = "7"
        await _settled(pilot, editor)
        assert "before the checkpoint 7" in str(editor.query_one("#iv-error", Static).render())
        assert _save_disabled(editor)
        await pilot.press("escape")  # leaves the text area? the editor asks before discarding
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
    assert _stored(tmp_path / "ws") == []


async def test_every_key_is_on_the_help_screen_and_in_the_palette(base_file):
    ids = {b.id for _, group in _app(base_file).help_groups() for b in group}
    assert {b.id for b in BranchEditorScreen.BINDINGS} <= ids and "workspace.branch" in ids
    actions = {a for _, _, a in BRANCH_EDITOR_COMMANDS}
    assert {b.action for b in BranchEditorScreen.BINDINGS} <= actions
    assert "new_branch" in {a for _, _, a in TIMELINE_COMMANDS}


async def test_the_palette_opens_the_editor(base_file):
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await settle(pilot, app)
        await pilot.press(*"new branch")
        await settle(pilot, app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, BranchEditorScreen)
        assert app.screen.start_seq == app.loaded.recording.records[0].seq


# --------------------------------------------------------------------------- snapshots


def _snap_app(tmp_path: Path, monkeypatch) -> InspectorApp:
    monkeypatch.chdir(tmp_path)
    shutil.copy(CORRUPTED, tmp_path / "corrupted-result.json")
    monkeypatch.setattr("inspector.screens.branch_editor.new_branch_id", lambda: "br-0123456789ab")
    return InspectorApp(load_for_view(Path("corrupted-result.json")), workspace=Path("ws"))


async def _open_for_snapshot(pilot) -> BranchEditorScreen:
    app = pilot.app
    editor = await _editor(pilot, app)
    for widget in [*editor.query(TextArea), *editor.query(Input)]:
        widget.cursor_blink = False  # a blinking cursor would make the picture depend on timing
    return editor


def test_snapshot_branch_editor_valid(snap_compare, tmp_path, monkeypatch):
    async def run_before(pilot):
        editor = await _open_for_snapshot(pilot)
        _replace_in_editor(editor, '"C-2002"', '"C-1001"')
        await _settled(pilot, editor)

    assert snap_compare(_snap_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=run_before)


def test_snapshot_branch_editor_invalid(snap_compare, tmp_path, monkeypatch):
    async def run_before(pilot):
        editor = await _open_for_snapshot(pilot)
        _replace_in_editor(editor, "114.49", "9007199254740993")
        await _settled(pilot, editor)

    assert snap_compare(_snap_app(tmp_path, monkeypatch), terminal_size=SIZE, run_before=run_before)


async def test_alt_t_switches_forms_from_any_field_and_focuses_the_first(base_file, tmp_path):
    app = _app(base_file)
    async with app.run_test(size=SIZE) as pilot:
        editor = await _editor(pilot, app)
        tabs = editor.query_one("#be-tabs")
        await pilot.press("alt+t")
        await pilot.pause()
        assert tabs.active == "tab-policy" and app.focused is editor.query_one("#pol-executor")
        # from a field inside the policy form, back to the intervention form (a focused
        # field in a hidden pane used to bring its tab back)
        editor.query_one("#pol-max-steps", Input).focus()
        await pilot.pause()
        await pilot.press("alt+t")
        await pilot.pause()
        assert tabs.active == "tab-iv" and app.focused is editor.query_one("#iv-kind")
