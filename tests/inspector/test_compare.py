"""The compare screen: a finished replay beside its base (opened from the branch tree),
two real runs (``compare A B``), the first divergence, next/previous difference, one
cursor for both columns, and the diff pane's JSON Pointer paths; ``compare`` with bad
input."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.analysis.compare import compare_runs, pair_changes, value_text
from core.record.recording import Recording
from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.loader import LoadedRecording, load_for_view
from inspector.screens.compare import CompareScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.compare_table import CompareTable
from tests.builders import SAMPLES, recording, tool
from tests.inspector.test_replay_runner import SIZE, base_copy, idle, launch, make_branch, open_tree, select

TAU = Path(__file__).resolve().parents[1] / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"


async def settle(pilot, app) -> None:
    """Until the screen's workers (the alignment, the diff pane) are done and drawn."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


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
        await settle(pilot, app)
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
        await settle(pilot, app)
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
    assert value_text(png).startswith("<image/png, 3.0 MB, sha256:")
    huge = "x" * 10_000
    assert value_text(huge).startswith("<text, 10.0 kB, sha256:")
    digest = value_text(png).split("sha256:")[1].rstrip("…>")
    assert (
        value_text({"image": png, "note": "ok"}) == f'{{"image":"<image/png, 3.0 MB, sha256:{digest}…>","note":"ok"}}'
    )
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
        await settle(pilot, pilot.app)

    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


def test_snapshot_compare_at_110_columns(snap_compare, tmp_path):
    a = load_for_view(SAMPLES / "tau-bench-airline-task5-trial0.json")
    b = load_for_view(SAMPLES / "tau-bench-airline-task5-trial1.json")

    async def run_before(pilot):
        await settle(pilot, pilot.app)
        await pilot.press("right_square_bracket")
        await settle(pilot, pilot.app)

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
        await settle(pilot, app)
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


# ---------------------------------------------------------------------- two samples of one Inspect log

#: written by the real inspect-ai package (tests/data/inspect_ai/make_two_sample_log.py)
INSPECT_LOG = Path(__file__).resolve().parents[1] / "data" / "inspect_ai" / "two-samples.eval"


def check_two_inspect_samples(screen: CompareScreen) -> None:
    """Sample s1 beside sample s2: both named with their run, and the first divergence
    (checked by hand) is the first model call's answer — add(x=1, y=2) against add(x=2, y=1)."""
    header = str(screen.query_one("#compare-header").render())
    assert "two-samples.eval [run s1_epoch_1]" in header and "two-samples.eval [run s2_epoch_1]" in header
    c = screen.comparison
    assert c is not None and c.first_divergence is not None
    assert (c.first_divergence.dimension, c.first_divergence.base_seq, c.first_divergence.replay_seq) == (
        "response",
        0,
        0,
    )
    assert screen.table.cursor == c.first_divergence_row == 0
    assert [(op.op, op.kind) for op in c.rows] == [
        ("changed", "model"),
        ("removed", "tool"),
        ("removed", "model"),
        ("inserted", "tool"),
        ("inserted", "model"),
    ]
    diff = str(screen.query_one("#compare-diff").render())
    assert "differs in: response" in diff
    assert "/response/message/tool_calls/0/arguments/x" in diff and "/response/message/tool_calls/0/arguments/y" in diff
    deltas = str(screen.query_one("#compare-deltas").render())
    assert "first divergence: response at base seq 0 / other seq 0" in deltas


def test_two_samples_of_one_inspect_log_through_compare(monkeypatch, capfd):
    """``compare LOG LOG --run-a s1_epoch_1 --run-b s2_epoch_1`` opens the compare screen."""
    seen: list[CompareScreen] = []
    failures: list[BaseException] = []
    original_run = InspectorApp.run

    def headless_run(self, *args, **kwargs):
        async def look(pilot):
            await settle(pilot, self)
            try:
                assert isinstance(self.screen, CompareScreen)
                check_two_inspect_samples(self.screen)
                seen.append(self.screen)
            except BaseException as exc:  # reported after the app ends
                failures.append(exc)
            self.exit()

        return original_run(self, headless=True, size=(160, 40), auto_pilot=look)

    monkeypatch.setattr(InspectorApp, "run", headless_run)
    args = ["compare", str(INSPECT_LOG), str(INSPECT_LOG), "--run-a", "s1_epoch_1", "--run-b", "s2_epoch_1"]
    code = main(args)
    _, err = capfd.readouterr()
    if failures:
        raise failures[0]
    assert code == 0, err
    assert len(seen) == 1


async def test_two_samples_of_one_inspect_log_from_the_run_picker(tmp_path):
    from inspector.screens.run_picker import RunPickerScreen

    app = InspectorApp(load_for_view(INSPECT_LOG), workspace=tmp_path / "ws")
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, RunPickerScreen)
        assert [r.id for r in picker.shown] == ["s1_epoch_1", "s2_epoch_1"]
        await pilot.press("ctrl+k", "down", "ctrl+k")
        await settle(pilot, app)
        assert isinstance(app.screen, CompareScreen)
        check_two_inspect_samples(app.screen)


# ---------------------------------------------------------------------- the diff pane in a worker


def big_pair(n: int) -> tuple[LoadedRecording, LoadedRecording]:
    """Two runs of one tool call whose result lists differ in every one of ``n`` items."""
    a = recording(tool(0, "list_rows", {"q": 1}, [{"i": i, "v": "a"} for i in range(n)]), tool(1, "done"))
    b = recording(tool(0, "list_rows", {"q": 1}, [{"i": i, "v": "b"} for i in range(n)]), tool(1, "done"))
    return LoadedRecording.from_recording(a, "a.json"), LoadedRecording.from_recording(b, "b.json")


async def test_the_diff_pane_is_computed_in_a_worker_and_the_latest_row_wins(tmp_path, monkeypatch):
    import threading

    from inspector.screens import compare as compare_screen

    a, b = big_pair(3)
    release = threading.Event()
    threads: list[str] = []
    real = compare_screen.pair_diff

    def slow_pair_diff(x, y, **kwargs):
        threads.append(threading.current_thread().name)
        release.wait(10)
        return real(x, y, **kwargs)

    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.table.cursor == 0
        monkeypatch.setattr(compare_screen, "pair_diff", slow_pair_diff)
        await pilot.press("down")  # row 1: the same `done` call, drawn at once
        await pilot.pause()
        assert "the two records are the same" in str(screen.query_one("#compare-diff").render())
        await pilot.press("up")  # row 0 again: its diff waits in the worker
        await pilot.pause()
        assert "comparing…" in str(screen.query_one("#compare-diff").render())
        await pilot.press("down", "up")  # moves while it runs: the UI is not blocked
        await pilot.pause()
        assert screen.table.cursor == 0
        release.set()
        await settle(pilot, app)
        await settle(pilot, app)
        diff = str(screen.query_one("#compare-diff").render())
        assert "comparing…" not in diff and "/result/content/2/v" in diff
        assert threads and threading.main_thread().name not in threads


async def test_a_huge_diff_stops_after_max_changes_and_says_so(tmp_path):
    from core.analysis.compare import MAX_CHANGES

    a, b = big_pair(100_000)
    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        diff = str(screen.query_one("#compare-diff").render())
        assert f"{MAX_CHANGES}+ changes" in diff
        assert diff.count("\n~ ") == MAX_CHANGES  # one line per change, after the head line


# ---------------------------------------------------------------------- values in the diff pane


async def test_long_strings_that_differ_late_show_a_window_around_the_first_difference(tmp_path):
    text = "The quick brown fox jumps over the lazy dog. " * 8  # 360 characters
    a = recording(tool(0, "read", {"p": 1}, text[:300] + "A" + text[301:]))
    b = recording(tool(0, "read", {"p": 1}, text[:300] + "B" + text[301:]))
    app = InspectorApp(
        LoadedRecording.from_recording(a, "a.json"),
        workspace=tmp_path / "ws",
        compare_with=LoadedRecording.from_recording(b, "b.json"),
    )
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        diff = str(app.screen.query_one("#compare-diff").render())
        lines = diff.splitlines()
        old = next(ln for ln in lines if ln.startswith("    - "))
        new = next(ln for ln in lines if ln.startswith("    + "))
        assert old[6:] != new[6:]
        window = text[300 - 12 : 300]
        assert old[6:].startswith("…" + window + "A") and new[6:].startswith("…" + window + "B")
        assert "(from character 300 of 360 → 360)" in diff


def test_the_diff_command_and_the_compare_pane_share_changed_strings():
    from core.analysis import compare as core_compare
    from inspector.cli import analysis_cmds

    assert analysis_cmds.changed_strings is core_compare.changed_strings
    assert not hasattr(analysis_cmds, "_common_prefix")


def test_two_images_of_one_size_show_different_hashes():
    one = "data:image/png;base64,iVBORw0KGgo" + "A" * 4_000_000
    two = "data:image/png;base64,iVBORw0KGgo" + "A" * 3_999_999 + "B"
    a, b = value_text(one), value_text(two)
    assert a.startswith("<image/png, 3.0 MB, sha256:") and b.startswith("<image/png, 3.0 MB, sha256:")
    assert a != b


# ---------------------------------------------------------------------- names, durations, errors


def test_durations_in_the_header_use_one_scheme():
    from inspector.screens.compare import format_seconds, metric_deltas

    assert format_seconds(9.37e-05) == "94 µs"
    assert format_seconds(0.01234) == "12.3 ms"
    assert format_seconds(0.012) == "12 ms"
    assert format_seconds(3.4) == "3.4 s"
    assert format_seconds(3.0) == "3 s"
    assert format_seconds(125) == "2 min 05 s"
    assert format_seconds(0) == "0 s"
    row = {"outcome": "success", "duration_seconds": 9.37e-05}
    text = metric_deltas(row, {"outcome": "success", "duration_seconds": 3.4})
    assert "duration 94 µs → 3.4 s" in text and "e-0" not in text


def test_run_of_one_file_is_named_with_its_run_id():
    from inspector.screens.compare import run_label

    tau = load_for_view(TAU)
    runs = tau.opened.runs
    a, b = tau.for_run(0), tau.for_run(1)
    assert run_label(a) != run_label(b)
    assert run_label(a).endswith(f"[run {runs[0].id}]") and run_label(b).endswith(f"[run {runs[1].id}]")
    one = load_for_view(SAMPLES / "sample-agent-success.json")
    assert run_label(one) == "sample-agent-success.json"


def test_compare_names_the_run_option_the_user_typed(capsys):
    ok = SAMPLES / "sample-agent-success.json"

    def fails(*args: object) -> str:
        assert main(["compare", *(str(a) for a in args)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return err

    err = fails(ok, ok, "--run-a", "X")
    assert "--run-a picks a run" in err and "--run " not in err
    err = fails(ok, ok, "--run-b", "X")
    assert "--run-b picks a run" in err and "--run " not in err
    err = fails(INSPECT_LOG, INSPECT_LOG, "--run-a", "s1_epoch_1", "--run-b", "nope")
    assert "--run-b nope" in err and "no run 'nope'" in err


# ---------------------------------------------------------------------- aligning in a worker


async def test_the_runs_are_aligned_in_a_worker_and_the_keys_wait(tmp_path, monkeypatch):
    import threading

    from inspector.screens import compare as compare_screen

    release = threading.Event()
    threads: list[str] = []
    real = compare_screen.compare_runs

    def slow_compare_runs(x, y):
        threads.append(threading.current_thread().name)
        release.wait(10)
        return real(x, y)

    monkeypatch.setattr(compare_screen, "compare_runs", slow_compare_runs)
    a = load_for_view(SAMPLES / "sample-agent-fault-corrupted-result.json")
    b = load_for_view(SAMPLES / "sample-agent-success.json")
    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    async with app.run_test(size=(160, 30), notifications=True) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.aligning and screen.comparison is None
        assert "aligning…" in str(screen.query_one("#compare-header").render())
        assert "aligning the two runs…" in lines_of(screen.table)[1]
        await pilot.press("d", "right_square_bracket", "left_square_bracket", "down", "end")  # safe meanwhile
        await pilot.pause()
        assert screen.comparison is None and screen.table.cursor == 0
        assert any("still being aligned" in str(n.message) for n in app._notifications)
        release.set()
        await settle(pilot, app)
        await settle(pilot, app)
        c = screen.comparison
        assert c is not None and not screen.aligning
        assert screen.table.cursor == c.first_divergence_row
        assert "aligning" not in str(screen.query_one("#compare-header").render())
        assert threads and threading.main_thread().name not in threads
        await pilot.press("right_square_bracket")
        assert screen.table.cursor == c.differences[1]


def test_pack_breaks_lines_between_parts():
    from inspector.screens.compare import pack

    parts = ["outcome failure → success", "steps 3 → 6 (+3)", "tokens in 305 → 881 (+576)"]
    assert pack(parts, 0) == " · ".join(parts)  # before layout: one line
    assert pack(parts, 200) == " · ".join(parts)
    assert pack(parts, 50) == "outcome failure → success · steps 3 → 6 (+3)\ntokens in 305 → 881 (+576)"
    assert pack(parts, 10).split("\n") == parts  # each wider than the line: one per line
    assert pack(parts, 50, first=30).split("\n")[0] == "outcome failure → success"


@pytest.mark.parametrize("width", [110, 90, 70])
async def test_the_compare_header_wraps_between_phrases(width, tmp_path):
    a = load_for_view(SAMPLES / "sample-agent-fault-corrupted-result.json")
    b = load_for_view(SAMPLES / "sample-agent-success.json")
    app = InspectorApp(a, workspace=tmp_path / "ws", compare_with=b)
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen._deltas is not None
        phrases = screen._deltas[0].split(" · ")
        deltas = screen.query_one("#compare-deltas")
        lines = [deltas.render_line(y).text.strip() for y in range(deltas.size.height)]
        metric_lines = [ln for ln in lines if ln and not ln.startswith("first divergence")]
        assert len(metric_lines) >= 2  # the metrics do not fit one line at these widths
        for ln in metric_lines:
            assert any(ln.startswith(p) for p in phrases), ln
            assert any(ln.rstrip(" ·").endswith(p) for p in phrases), ln
        header = screen.query_one("#compare-header")
        counts = [header.render_line(y).text.strip() for y in range(header.size.height)]
        assert not any(c.startswith(("in base", "in other", "only", "same", "changed")) for c in counts), counts
