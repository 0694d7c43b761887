"""The compare screen: a finished replay beside its base (opened from the branch tree),
two real runs (``compare A B``), the first divergence, next/previous difference, one
cursor for both columns, and the diff pane's JSON Pointer paths; ``compare`` with bad
input."""

from __future__ import annotations

from pathlib import Path

from core.analysis.compare import compare_runs, pair_changes, value_text
from core.record.recording import Recording
from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.loader import load_for_view
from inspector.screens.compare import CompareScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.compare_table import CompareTable
from tests.builders import SAMPLES
from tests.inspector.test_replay_runner import SIZE, base_copy, idle, launch, make_branch, open_tree, select

TAU = Path(__file__).resolve().parents[1] / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"


def lines_of(table: CompareTable) -> list[str]:
    """The table's visible lines as drawn (header first)."""
    height = table.scrollable_content_region.height
    return ["".join(seg.text for seg in table.render_line(y)) for y in range(height)]


async def test_a_finished_replay_opens_beside_its_base_at_the_first_divergence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)  # the corrupted get_order result at seq 6 (metadata.fault)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base, label="honest order")  # seq 6 answered with the honest order
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, branch_id)
        await idle(pilot, app)
        [state] = app.replay_runner.runs.values()
        assert state.status == "paused"  # the replay stored its events up to the pause
        await select(pilot, panel, "replay", state.replay_id)
        await pilot.press("C")
        await idle(pilot, app)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        c = screen.comparison
        table = screen.table
        # the cursor is on the first divergence: the checkpoint, where the intervention answered
        row = c.first_divergence_row
        assert row is not None and table.cursor == row
        op = c.rows[row]
        assert (op.op, op.kind, op.base_seq, op.other_seq) == ("changed", "tool", 6, 6)
        assert c.first_divergence.dimension == "tool result"
        # the diff pane names the overridden value's JSON Pointer path
        diff = str(screen.query_one("#compare-diff").render())
        assert "~ changed answer" in diff and "/result/content/customer_id" in diff
        assert '"C-2002"' in diff and '"C-1001"' in diff
        # the row shows both sides, the replayed call's answer source marked
        drawn = lines_of(table)[row - round(table.scroll_y) + 1]
        assert drawn.startswith("▶") and drawn.count("get_order") == 2 and "✎" in drawn
        header = str(screen.query_one("#compare-deltas").render())
        assert "first divergence: tool result at base seq 6 / other seq 6" in header
        # escape: back to the base's timeline
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TimelineScreen) and app.screen.loaded.path == base
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.check() == []


async def test_next_and_previous_difference_and_one_cursor_for_both_sides(tmp_path):
    a = load_for_view(SAMPLES / "sample-agent-fault-corrupted-result.json")
    b = load_for_view(SAMPLES / "sample-agent-success.json")
    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        c, table = screen.comparison, screen.table
        assert table.cursor == c.first_divergence_row == c.differences[0]
        await pilot.press("right_square_bracket")
        assert table.cursor == c.differences[1]
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert table.cursor == c.differences[3]
        await pilot.press("left_square_bracket")
        assert table.cursor == c.differences[2]
        await pilot.press("home")
        await pilot.press("left_square_bracket")  # nothing before the first row: says so, stays
        assert table.cursor == 0
        await pilot.press("d")
        assert table.cursor == c.first_divergence_row
        # a row only in the other run: a filler on the base side, its record on the other
        inserted = next(i for i, op in enumerate(c.rows) if op.op == "inserted")
        table.cursor = inserted
        await pilot.pause()
        drawn = lines_of(table)[inserted - round(table.scroll_y) + 1]
        assert drawn.startswith("+ ") and "·····" in drawn.split("  ")[0] + drawn
        diff = str(screen.query_one("#compare-diff").render())
        assert "only in the other run" in diff
        # one scroll position: paging moves both columns, the header stays
        await pilot.press("home")
        top_before = lines_of(table)[1]
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert table.scroll_y > 0
        shown = lines_of(table)
        assert shown[0].lstrip().startswith("base") and shown[1] != top_before
        first = c.rows[round(table.scroll_y)]
        left, right = shown[1][2:].split("  ", 1)[0], shown[1]
        if first.base_seq is not None:
            assert f"{first.base_seq:>5}" in left
        if first.other_seq is not None:
            assert f"{first.other_seq:>5}" in right


def test_two_real_tau_bench_trials_align():
    """Task 5 of tau-bench's airline domain, two trials of one agent: the same task,
    different wording from the first user turn on."""
    a = Recording.load(SAMPLES / "tau-bench-airline-task5-trial0.json")
    b = Recording.load(SAMPLES / "tau-bench-airline-task5-trial1.json")
    c = compare_runs(a, b)
    assert c.first_divergence is not None and c.first_divergence.dimension == "request"
    assert c.first_divergence_row == c.differences[0]
    # every record of both runs is on exactly one row, in order
    base_seqs = [op.base_seq for op in c.rows if op.base_seq is not None]
    other_seqs = [op.other_seq for op in c.rows if op.other_seq is not None]
    assert base_seqs == [r.seq for r in a.records] and other_seqs == [r.seq for r in b.records]
    x, y = c.counterparts(c.first_divergence_row)
    paths = {ch.path for ch in pair_changes(x, y)}
    assert "/request/messages/1/content" in paths  # the simulated user's first words
    assert "/key" not in paths and "/at" not in paths  # derived and fresh fields are no difference


def test_values_are_shown_escaped_with_blobs_and_huge_strings_as_placeholders():
    png = "data:image/png;base64," + "iVBORw0KGgo" + "A" * 4_000_000
    assert value_text(png).startswith("<image/png, 3.0 MB>")
    huge = "x" * 10_000
    assert value_text(huge).startswith("<text, 10.0 kB, sha256:")
    assert value_text({"image": png, "note": "ok"}) == '{"image":"<image/png, 3.0 MB>","note":"ok"}'
    hostile = "ok\x1b]0;owned\x07\u202e"
    shown = value_text(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert len(value_text("y" * 500, 40)) == 40


def test_compare_with_bad_input_says_so_in_one_line(capsys, tmp_path):
    ok = SAMPLES / "sample-agent-success.json"

    def fails(*args: object) -> str:
        assert main(["compare", *(str(a) for a in args)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        return err

    assert "no-such.json: no such file" in fails(tmp_path / "no-such.json", ok)
    not_a_run = tmp_path / "notes.json"
    not_a_run.write_text('{"hello": 1}')
    assert "notes.json: not a recognised agent-run format" in fails(ok, not_a_run)
    err = fails(TAU, ok)
    assert "gpt-4o-airline.json: the file holds" in err and "name one with --run-a" in err
    err = fails(ok, TAU)
    assert "name one with --run-b" in err


def test_snapshot_compare_with_filler_rows(snap_compare, tmp_path):
    """The fault run beside the successful one: removed and inserted rows with fillers,
    the first divergence marked, the diff pane of the changed get_order result."""
    a = load_for_view(SAMPLES / "sample-agent-fault-corrupted-result.json")
    b = load_for_view(SAMPLES / "sample-agent-success.json")

    async def run_before(pilot):
        await pilot.pause()

    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


def test_snapshot_compare_at_110_columns(snap_compare, tmp_path):
    a = load_for_view(SAMPLES / "tau-bench-airline-task5-trial0.json")
    b = load_for_view(SAMPLES / "tau-bench-airline-task5-trial1.json")

    async def run_before(pilot):
        await pilot.pause()
        await pilot.press("right_square_bracket")
        await pilot.pause()

    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    assert snap_compare(app, terminal_size=(110, 30), run_before=run_before)


async def test_two_runs_of_one_file_compared_from_the_run_picker(tmp_path):
    """ctrl+k marks a run of the picker, ctrl+k on another compares the two (the marked
    one as the base); escape returns to the picker."""
    from inspector.screens.run_picker import RunPickerScreen

    app = InspectorApp(load_for_view(TAU), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, RunPickerScreen)
        first, second = picker.shown[0], picker.shown[1]
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert picker.compare_mark == first
        await pilot.press("down", "ctrl+k")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.base.opened.run.id == first.id and screen.other.opened.run.id == second.id
        a, b = screen.base.recording, screen.other.recording
        assert [op.base_seq for op in screen.comparison.rows if op.base_seq is not None] == [r.seq for r in a.records]
        assert [op.other_seq for op in screen.comparison.rows if op.other_seq is not None] == [r.seq for r in b.records]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker and picker.compare_mark is None


def test_the_help_screen_lists_the_compare_keys(tmp_path):
    app = InspectorApp(load_for_view(SAMPLES / "sample-agent-success.json"), workspace=tmp_path / "ws")
    groups = dict(app.help_groups())
    ids = {b.id for b in groups["Compare (C, compare A B)"]}
    assert ids == {"compare.first_divergence", "compare.next", "compare.previous", "compare.close"}
    assert "workspace.compare" in {b.id for b in groups["Workspace: branches, replays, requirements"]}


def test_a_long_outcome_or_name_stays_on_one_short_line():
    from inspector.screens.compare import metric_deltas

    row = {"outcome": "failure " * 20_000, "steps": 1}
    text = metric_deltas(row, {"outcome": "success", "steps": 2})
    assert len(text) < 200 and text.startswith("outcome failure failure") and "… → success" in text


async def test_compare_waits_for_a_fast_opened_base_to_be_verified(tmp_path, monkeypatch):
    """A fast-opened base holds no records until its verification ends: C says so
    instead of comparing the replay with an empty run."""
    monkeypatch.chdir(tmp_path)
    base = base_copy(tmp_path)
    ws_path = tmp_path / "ws"
    branch_id = make_branch(ws_path, base)
    app = InspectorApp(load_for_view(base), workspace=ws_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await idle(pilot, app)
        panel = await open_tree(pilot, app)
        await launch(pilot, app, panel, branch_id)
        await idle(pilot, app)
        [state] = app.replay_runner.runs.values()
        await select(pilot, panel, "replay", state.replay_id)
        monkeypatch.setattr(app.screen.loaded, "verify", lambda: None)  # as while a big file is verified
        await pilot.press("C")
        await idle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert any("still being verified" in str(n.message) for n in app._notifications)
