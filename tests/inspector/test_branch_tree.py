"""The branch tree side panel: base → branches → branches of branches, replays with
their status (queued, running with progress, paused on N requirements, completed,
failed, interrupted) and outcome; folding; a workspace that is missing, damaged or
holds hostile labels; and the snapshot of a tree with running, paused and completed
replays."""

from __future__ import annotations

from pathlib import Path

from core.record.recording import Recording, ToolResult
from core.replay.boundary import ExecutorChoice
from core.replay.branch import BranchDraft, Policy, ToolResultIntervention, resolve_branch
from core.replay.engine import ReplayProgress
from core.replay.replay_record import Attempt, ReplayRecord
from core.replay.replays import start_replay
from core.workspace import BranchTree, Workspace
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.replay_runner import RunState
from inspector.widgets.branch_tree import BranchTreePanel, TreeData, flatten

from .test_replay_runner import SIZE, base_copy, idle, make_branch, open_tree, panel_of, row_texts

EXECUTOR = ExecutorChoice("core.sample_agent:make_executor", "recording")


def _store(ws: Workspace, base_path: Path, draft: BranchDraft, base: Recording | None = None):
    base = base if base is not None else Recording.load(base_path)
    branch = resolve_branch(ws, draft, base)
    ws.add_branch(branch, base, str(base_path))
    return branch, base


def build_tree_workspace(tmp_path: Path) -> tuple[Path, Path, object]:
    """``support-run.json`` (the sample agent's timed-out refund policy) and ``ws`` with
    fixed ids: a completed replay (and a branch of its events), a paused one, one
    running (its lock held: returned, release it), one interrupted."""
    base_path = base_copy(tmp_path, "sample-agent-fault-tool-error.json", "support-run.json")
    ws_path = tmp_path / "ws"
    fix = ToolResultIntervention(seq=8, result=ToolResult(content={"eligible": True, "max_refund": 89.99}))
    with Workspace.open(ws_path) as ws:
        done, base = _store(
            ws, base_path, BranchDraft(str(base_path), 3, [], Policy(), "as recorded", None, "br-snap-a")
        )
        start_replay(ws, str(base_path), done, base=base, replay_id="rp-snap-done", events_file=True)
        events = ws.replay_events("rp-snap-done")
        assert events is not None
        events_path = ws.events_file("rp-snap-done")
        _store(
            ws,
            events_path,
            BranchDraft(str(events_path), 5, [], Policy(), "again from the replay", "br-snap-a", "br-snap-a1"),
            events,
        )
        paused, _ = _store(
            ws,
            base_path,
            BranchDraft(str(base_path), 8, [fix], Policy(model="live"), "policy service up", None, "br-snap-b"),
        )
        start_replay(ws, str(base_path), paused, base=base, executor=EXECUTOR, replay_id="rp-snap-paused")
        running, _ = _store(
            ws, base_path, BranchDraft(str(base_path), 5, [], Policy(), "from step 2", None, "br-snap-c")
        )
        digest = paused.base_digest
        for rid in ("rp-snap-killed", "rp-snap-running"):
            claim = ws.claim_replay(rid)
            record = ReplayRecord(
                id=rid, base_digest=digest, base_path=str(base_path), branch_id=running.id, policy=running.policy
            )
            record.owner = claim.owner
            ws.create_replay(record)
            record.begin_attempt(Attempt(number=1, kind="start", started_at="2026-12-01T00:00:00Z"), claim.owner)
            ws.save_replay_state(record)
            if rid == "rp-snap-killed":
                claim.release()  # its process is "gone": read as interrupted
        return base_path, ws_path, claim


def inject_running(app: InspectorApp) -> None:
    """What the runner knows of the running replay (its worker is this test)."""
    app.replay_runner.runs["rp-snap-running"] = RunState(
        replay_id="rp-snap-running",
        branch_id="br-snap-c",
        kind="start",
        status="running",
        progress=ReplayProgress(
            kind="call",
            calls_answered=3,
            base_calls=7,
            steps=2,
            current_seq=6,
            call_kind="tool",
            call_name="get_order",
            source="recorded",
        ),
    )


def test_branch_tree_with_running_paused_and_completed_replays(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, _, claim = build_tree_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")

    async def run_before(pilot):
        inject_running(app)
        await pilot.press("T")
        await idle(pilot, app)
        panel_of(app).view.go_to("replay", "rp-snap-running")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)
    finally:
        claim.release()


async def test_the_tree_lists_every_status_and_branches_of_branches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, ws_path, claim = build_tree_workspace(tmp_path)
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    try:
        async with app.run_test(size=SIZE) as pilot:
            inject_running(app)
            panel = await open_tree(pilot, app)
            texts = row_texts(panel)
            assert texts[0].startswith("◆ support-run.json") and "4 branches" in texts[0]
            by_id = {r.ident: (r, t) for r, t in zip(panel.view.rows, texts)}
            assert "✓ rp-snap-done completed" in by_id["rp-snap-done"][1]
            assert "‖ rp-snap-paused paused · 1 req" in by_id["rp-snap-paused"][1]
            assert "● rp-snap-running running ▰▰▰▱▱▱▱▱ 3/7" in by_id["rp-snap-running"][1]
            assert "⚠ rp-snap-killed interrupted" in by_id["rp-snap-killed"][1]
            # a branch of a replay's events sits under the branch that produced them
            child, _ = by_id["br-snap-a1"]
            assert child.depth == by_id["br-snap-a"][0].depth + 1 and child.node.parent == "br-snap-a"
            assert "again from the replay  @5 · 0 iv" in by_id["br-snap-a1"][1]
            # the selected paused replay says what it waits on
            panel.view.go_to("replay", "rp-snap-paused")
            await pilot.pause()
            detail = str(panel.query_one("#branch-tree-detail").render())
            assert "paused on 1 requirement: tool issue_refund" in detail
            # live progress redraws the line without reading the workspace again
            state = app.replay_runner.runs["rp-snap-running"]
            state.progress = ReplayProgress(kind="call", calls_answered=6, base_calls=7, current_seq=9)
            reads = panel._generation
            app.replay_runner.changed("replay", "rp-snap-running")
            await pilot.pause()
            assert panel._generation == reads
            assert "6/7" in row_texts(panel)[panel.view.rows.index(by_id["rp-snap-running"][0])]
    finally:
        claim.release()


async def test_folding_and_moving_in_the_tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base_path, _, claim = build_tree_workspace(tmp_path)
    claim.release()
    app = InspectorApp(load_for_view(base_path.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_tree(pilot, app)
        n = len(panel.view.rows)
        panel.view.go_to("branch", "br-snap-a")
        await pilot.press("left")  # fold: its replay and its child branch go
        assert len(panel.view.rows) == n - 2 and panel.view.current.ident == "br-snap-a"
        assert row_texts(panel)[panel.view.cursor].lstrip().startswith("▸ as recorded")
        await pilot.press("right")
        assert len(panel.view.rows) == n
        await pilot.press("down", "left")  # on a replay, left goes to its branch
        assert panel.view.current.ident == "br-snap-a"
        await pilot.press("end")
        assert panel.view.cursor == n - 1
        await pilot.press("home")
        assert panel.view.cursor == 0
        # T: focused → hidden, the timeline has the focus again; T again shows it
        await pilot.press("T")
        assert not panel.shown and app.screen.table.has_focus
        await pilot.press("T")
        assert panel.shown and panel.view.has_focus


async def test_no_workspace_is_said_and_never_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "nowhere")
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_tree(pilot, app)
        assert any("no workspace at" in t and "nowhere" in t for t in row_texts(panel))
        await pilot.press("R")  # nothing selected that can be replayed
        await pilot.press("o")
        await pilot.pause()
        assert "no workspace at" in str(app.screen.query_one("#req-status").render())
    assert not (tmp_path / "nowhere").exists()


async def test_a_damaged_workspace_is_an_inline_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    ws_path.mkdir()
    (ws_path / "workspace.sqlite").write_bytes(b"this is not a database" * 100)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_tree(pilot, app)
        [note] = [t for r, t in zip(panel.view.rows, row_texts(panel)) if r.kind == "note"]
        assert "cannot read the workspace" in note and "not a workspace database" in note
    assert (ws_path / "workspace.sqlite").read_bytes() == b"this is not a database" * 100


async def test_branch_labels_are_drawn_as_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    label = "[red]x[/red] \x1b[2J\u202eevil"
    make_branch(ws_path, base, label=label)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_tree(pilot, app)
        [text] = [t for r, t in zip(panel.view.rows, row_texts(panel)) if r.kind == "branch"]
        assert "[red]x[/red]" in text and "\x1b" not in text and "␛[2J" in text and "\u202e" not in text


def test_flatten_folds_and_adds_replays_not_listed_yet(tmp_path):
    base_path, ws_path, claim = build_tree_workspace(tmp_path)
    claim.release()
    with Workspace.open(ws_path) as ws:
        tree = ws.branch_tree(Recording.load(base_path).digest or "")
    assert isinstance(tree, BranchTree)
    data = TreeData(tree, base_path.name, {})
    rows = flatten(data, set())
    assert [r.kind for r in rows[:3]] == ["base", "branch", "replay"]
    starting = RunState(replay_id="rp-new", branch_id="br-snap-b", kind="start")
    with_new = flatten(data, {"br-snap-a"}, [starting])
    assert "rp-snap-done" not in {r.ident for r in with_new}
    [new] = [r for r in with_new if r.ident == "rp-new"]
    assert new.replay is None and new.node is not None and new.node.id == "br-snap-b"
    # no tree: one note
    assert [r.kind for r in flatten(TreeData(None, "x", {}, note="none"), set())] == ["base", "note"]


async def test_enter_on_a_branch_folds_and_r_on_the_base_asks_for_a_branch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base, at=6)
    with Workspace.open(ws_path) as ws:
        start_replay(ws, str(base), ws.get_branch(branch_id), executor=EXECUTOR)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        panel = await open_tree(pilot, app)
        assert isinstance(panel, BranchTreePanel)
        await pilot.press("home", "R")
        await pilot.pause()
        assert app.replay_runner.runs == {}
        assert any("select a branch" in str(n.message) for n in app._notifications)
        panel.view.go_to("branch", branch_id)
        n = len(panel.view.rows)
        await pilot.press("enter")
        assert len(panel.view.rows) == n - 1
