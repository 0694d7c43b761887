"""The requirements panel, the fixture editor and the fixtures list: what a paused
replay waits on (with the nearest recorded call and its argument diff), answers
validated as you type, approvals, bad input (invalid JSON, a requirement answered
meanwhile, a read-only or damaged workspace: an inline error or the error screen,
nothing half-stored), and a fixture reused for another branch."""

from __future__ import annotations

from pathlib import Path

from core.record.recording import Recording, ToolResult
from core.replay.boundary import ExecutorChoice
from core.replay.branch import BranchDraft, Policy, ToolPolicyIntervention, ToolResultIntervention, resolve_branch
from core.replay.editing import to_json_text
from core.replay.replays import start_replay
from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.screens.error import ErrorScreen
from inspector.screens.fixture_editor import FixtureEditorScreen, check_answer
from inspector.screens.requirements import (
    BranchPickScreen,
    DecisionScreen,
    FixturesScreen,
    RequirementsScreen,
    requirement_text,
)
from inspector.widgets.json_editor import JsonEditor

from .test_replay_runner import (
    OUTPUTS,
    SIZE,
    answer_with,
    base_copy,
    check_workspace,
    idle,
    launch,
    make_branch,
    open_tree,
    panel_of,
    select,
)

EXECUTOR = ExecutorChoice("core.sample_agent:make_executor", "recording")


def renamed_sku_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """``refund-run.json`` (the timed-out refund policy) with a branch whose order names
    the blender ``BL-201``: the agent then asks the policy for ``BL-201``, a call the base
    made for ``BL-200`` — replay ``rp-sku`` pauses on it, nearest call seq 8, diff ``/sku``."""
    base_path = base_copy(tmp_path, "sample-agent-fault-tool-error.json", "refund-run.json")
    ws_path = tmp_path / "ws"
    base = Recording.load(base_path)
    order = dict(base.records[6].result.content)
    order["items"] = [{**order["items"][0], "sku": "BL-201"}, order["items"][1]]
    draft = BranchDraft(
        str(base_path.name),
        6,
        [ToolResultIntervention(seq=6, result=ToolResult(content=order))],
        Policy(model="live"),
        "renamed sku",
        None,
        "br-sku",
    )
    branch = resolve_branch(None, draft, base)
    with Workspace.open(ws_path) as ws:
        ws.add_branch(branch, base, base_path.name)
        record, _ = start_replay(ws, base_path.name, branch, base=base, executor=EXECUTOR, replay_id="rp-sku")
        assert record.status == "paused"
    return base_path, ws_path


async def open_requirements(pilot, app, replay_id: str) -> RequirementsScreen:
    panel = panel_of(app)
    if panel.shown:
        panel.view.focus()
    else:
        panel = await open_tree(pilot, app)
    await select(pilot, panel, "replay", replay_id)
    await pilot.press("o")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, RequirementsScreen) and screen.replay_id == replay_id
    return screen


def test_requirements_panel_with_a_nearest_call_diff(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, _ = renamed_sku_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")

    async def run_before(pilot):
        await open_requirements(pilot, app, "rp-sku")
        await idle(pilot, app)

    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


async def test_the_detail_names_the_call_and_its_nearest_recorded_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, ws_path = renamed_sku_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        screen = await open_requirements(pilot, app, "rp-sku")
        [req] = screen.requirements
        text = str(requirement_text(req))
        assert "tool  check_refund_policy" in text and '"sku": "BL-201"' in text
        assert "seq 8 check_refund_policy" in text
        assert '/sku  changed  "BL-200" → "BL-201"' in text
        # the editor starts from the nearest recorded result (the timed-out answer)
        await pilot.press("A")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, FixtureEditorScreen)
        assert editor.query_one(JsonEditor).text == to_json_text(req.nearest.output)
        assert "recorded result of seq 8" in str(editor.query_one("#fx-origin").render())
        assert "differ at /sku" in str(editor.query_one("#fx-origin").render())


async def test_invalid_answers_are_inline_errors_and_save_stays_disabled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, ws_path = renamed_sku_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await open_requirements(pilot, app, "rp-sku")
        await pilot.press("A")
        await pilot.pause()
        editor_screen = app.screen
        assert isinstance(editor_screen, FixtureEditorScreen)
        editor = editor_screen.query_one(JsonEditor)
        save = editor_screen.query_one("#fx-save")
        for text, expected in (
            ('{"content": {"eligible": true,}}', "line 1, column 31"),
            ('{"content": 1, "bogus": 2}', "at /bogus: unknown field 'bogus'"),
            ('{"error": "timeout"}', "at /error: Input should be a valid dictionary"),
            ("{}", "the object is empty"),
        ):
            area = editor.area
            area.select_all()
            area.replace(text, *area.selection)
            await idle(pilot, app)
            await editor.settled()
            await pilot.pause()
            shown = str(editor.query_one(".json-problem").render())
            assert expected in shown, (text, shown)
            assert save.disabled
            await pilot.press("ctrl+s")
            await pilot.pause()
            assert app.screen is editor_screen
            assert "not valid yet" in str(editor_screen.query_one("#fx-error").render())
        with Workspace.open(ws_path, create=False) as ws:
            assert ws.fixtures() == [] and ws.requirements(open_only=True)
            assert ws.check() == []


def test_check_answer_speaks_core_words():
    assert check_answer("tool", '{"content": "ok"}') is None
    assert check_answer("model", to_json_text({"message": {"role": "assistant", "content": "hi"}})) is None
    problem = check_answer("model", '{"finish_reason": "stop"}')
    assert problem is not None and problem.describe() == "at /message: missing required field 'message'"
    assert check_answer("tool", "").message.startswith("the answer is empty")


async def test_a_requirement_answered_meanwhile_stores_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, ws_path = renamed_sku_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        screen = await open_requirements(pilot, app, "rp-sku")
        [req] = screen.requirements
        await pilot.press("A")
        await pilot.pause()
        # meanwhile, the command line answers it
        with Workspace.open(ws_path, create=False) as ws:
            other = ws.attach_fixture(req.id, OUTPUTS["check_refund_policy"], source="cli.json")
        editor_screen = await answer_with(pilot, app, to_json_text(OUTPUTS["check_refund_policy"]))
        assert app.screen is editor_screen
        error = str(editor_screen.query_one("#fx-error").render())
        assert f"already satisfied by fixture {other.id}" in error and "nothing was stored" in error
        with Workspace.open(ws_path, create=False) as ws:
            assert [f.id for f in ws.fixtures()] == [other.id]
            assert ws.check() == []


async def test_a_read_only_workspace_lists_but_stores_nothing(tmp_path, monkeypatch):
    import core.workspace

    monkeypatch.chdir(tmp_path)
    base_path, ws_path = renamed_sku_workspace(tmp_path)
    before = (ws_path / "workspace.sqlite").read_bytes()
    # what a read-only mount or an immutable file looks like to the workspace, even to root
    monkeypatch.setattr(core.workspace, "_cannot_write", lambda path: True)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        screen = await open_requirements(pilot, app, "rp-sku")
        assert len(screen.requirements) == 1  # listing works
        editor_screen = None
        await pilot.press("A")
        await pilot.pause()
        editor_screen = await answer_with(pilot, app, to_json_text(OUTPUTS["check_refund_policy"]))
        assert app.screen is editor_screen
        assert "cannot be written" in str(editor_screen.query_one("#fx-error").render())
        await pilot.press("escape", "escape")
        await pilot.pause()
        # launching: the error screen at once (no executor question), nothing stored
        panel = app.screen.query_one("#branch-tree")
        await select(pilot, panel, "branch", "br-sku")
        await pilot.press("R")
        await idle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        assert app.screen.error_title == "cannot replay branch br-sku"
        assert "cannot be written" in app.screen.message
        assert app.replay_runner.runs == {}
        await pilot.press("enter")
        await pilot.pause()
        # a resume (the runner's, as `u` calls it once nothing is open): the same
        assert app.replay_runner.resume("rp-sku") is False
        await idle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        assert app.screen.error_title == "cannot resume replay rp-sku" and "cannot be written" in app.screen.message
        assert app.replay_runner.runs == {}
    monkeypatch.undo()
    assert (ws_path / "workspace.sqlite").read_bytes() == before
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.fixtures() == [] and ws.count_replays() == 1
        assert ws.check() == []


async def test_a_damaged_workspace_is_an_error_in_the_panel_and_on_launch(tmp_path, monkeypatch):
    from inspector.messages import LaunchReplay

    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    ws_path.mkdir()
    junk = b"SQLite format 3\x00" + b"\xff" * 4000
    (ws_path / "workspace.sqlite").write_bytes(junk)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, RequirementsScreen)
        status = app.screen.query_one("#req-status")
        assert status.has_class("-error") and "cannot read the workspace" in str(status.render())
        await pilot.press("escape")
        app.post_message(LaunchReplay("br-anything"))
        await idle(pilot, app)
        assert isinstance(app.screen, ErrorScreen) and "br-anything" in app.screen.error_title
        assert "workspace" in app.screen.message
    assert (ws_path / "workspace.sqlite").read_bytes() == junk


async def test_an_approval_is_approved_and_the_replay_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path, "sample-agent-fault-tool-error.json")
    ws_path = tmp_path / "ws"
    gate = ToolPolicyIntervention(tool="check_refund_policy", action="require_approval", reason="a person signs off")
    branch_id = make_branch(ws_path, base, interventions=[gate], at=7, policy=Policy(), label="signed off")
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, branch_id, consent="#consent-none")
        await idle(pilot, app)
        [state] = app.replay_runner.runs.values()
        assert state.status == "paused"
        screen = await open_requirements(pilot, app, state.replay_id)
        [req] = screen.requirements
        assert req.kind == "approval"
        assert "approve or deny" in str(requirement_text(req))
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, DecisionScreen)
        await pilot.press("y")
        await idle(pilot, app)
        assert app.screen is screen and screen.requirements == []
        check_workspace(ws_path)
        await pilot.press("u")
        await idle(pilot, app)
        assert app.replay_runner.runs[state.replay_id].status == "completed"
    check_workspace(ws_path)


async def test_a_fixture_is_reused_for_a_second_branch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    first = make_branch(ws_path, base, label="first")
    second = make_branch(ws_path, base, label="second")
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, first)
        await idle(pilot, app)
        [rid] = list(app.replay_runner.runs)
        screen = await open_requirements(pilot, app, rid)
        [req] = screen.requirements
        await pilot.press("A")
        await pilot.pause()
        await answer_with(pilot, app, to_json_text(OUTPUTS[req.name]))
        # the fixtures list: scope, and where used once the replay resumes
        await pilot.press("u")
        await idle(pilot, app)
        await pilot.press("F")
        await pilot.pause()
        fixtures = app.screen
        assert isinstance(fixtures, FixturesScreen)
        [fx] = fixtures.fixtures
        assert fx.scope == f"branch:{first}"
        table = fixtures.query_one("DataTable")
        assert str(table.get_row_at(0)[5]).startswith(f"{rid}@")
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, BranchPickScreen)
        assert [b for b, _ in app.screen.branches] == [second]
        await pilot.press("enter")
        await idle(pilot, app)
        assert app.screen is fixtures and len(fixtures.fixtures) == 2
        copy = fixtures.fixtures[1]
        assert copy.scope == f"branch:{second}" and copy.output == fx.output and copy.args_hash == fx.args_hash
        check_workspace(ws_path)
        # the second branch's replay is answered by the copy: it pauses further on
        await pilot.press("escape", "escape")
        await pilot.pause()
        panel = app.screen.query_one("#branch-tree")
        await launch(pilot, app, panel, second)
        await idle(pilot, app)
        second_rid = next(r for r, s in app.replay_runner.runs.items() if s.branch_id == second)
    with Workspace.open(ws_path, create=False) as ws:
        record = ws.get_replay(second_rid)
        assert copy.id in {u["fixture_id"] for u in record.fixture_uses}
        assert all(r.name != req.name for r in ws.requirements(replay_id=second_rid, open_only=True))
        assert ws.check() == []
