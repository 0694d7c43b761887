"""The run picker of a multi-run file (pilot): it opens first, lists the runs in run
order with outcome, score and records, filters as you type, opens a run with enter
(from the runs parsed once), comes back with ``p``; ``open --run N`` skips it; recorded
ids are drawn as text. And the run-info dialog's layout at 160×45 and 110 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable, Footer, Input

from core.analysis.safe_text import HIDDEN_MARK
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.screens.run_info import RunInfoScreen, run_info_text
from inspector.screens.run_picker import RunPickerScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.json_tree import JsonTree
from inspector.widgets.recording_header import RecordingHeader
from tests.builders import TESTS
from tests.core.importers.test_run_order import SAMPLE_IDS, write_inspect_log
from tests.hostile import unsafe_in

from .test_app_pilot import settle

SIZE = (160, 45)
TAU = TESTS / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"
HOSTILE_ID = "[red]x[/]\x1b]0;pwn\x07"


@pytest.fixture
def many(tmp_path: Path) -> Path:
    return write_inspect_log(tmp_path / "many.json", [*SAMPLE_IDS[:-1], HOSTILE_ID])


def screen_text(app) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def header_of(app) -> str:
    r = app.screen.query_one(RecordingHeader).render()
    return r.plain if isinstance(r, Text) else str(r)


def picker_of(app) -> RunPickerScreen:
    assert isinstance(app.screen, RunPickerScreen), type(app.screen).__name__
    return app.screen


def table_ids(picker: RunPickerScreen) -> list[str]:
    table: DataTable = picker.table
    return [table.get_row_at(i)[2].plain for i in range(table.row_count)]


async def test_a_file_of_runs_opens_on_the_picker_in_run_order(many):
    loaded = load_for_view(many)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        picker = picker_of(app)
        ids = table_ids(picker)
        assert ids[:8] == [
            "1_epoch_1",
            "1_epoch_2",
            "2_epoch_1",
            "2_epoch_2",
            "3_epoch_1",
            "3_epoch_2",
            "10_epoch_1",
            "10_epoch_2",
        ]
        assert len(ids) == len(loaded.opened.runs) == 12
        row = [c.plain for c in picker.table.get_row_at(4)]
        assert row[1:] == ["4", "3_epoch_1", "3", "1", "failure", "includes I", "7"]
        text = screen_text(app)
        assert "12 runs" in text and "many.json" in text
        # a markup-looking sample id with an OSC sequence: drawn as written, made visible
        assert f"[red]x[/]{HIDDEN_MARK}␛]0;pwn␇_epoch_1" in text and unsafe_in(text) == []
        assert all(isinstance(c, Text) for c in picker.table.get_row_at(10))


async def test_typing_filters_enter_opens_and_p_comes_back(many):
    app = InspectorApp(load_for_view(many))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        picker = picker_of(app)
        await pilot.press(*"3 fail")
        await settle(pilot, app)
        assert table_ids(picker) == ["3_epoch_1"]
        assert "1 of 12 runs" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert app.loaded.opened.run_id == "3_epoch_1"
        header = header_of(app)
        assert "run 3_epoch_1" in header and "outcome failure" in header and "score includes I" in header
        timeline = app.screen
        await pilot.press("down")
        await settle(pilot, app)
        cursor = timeline.table.cursor_position
        # back to the picker: the run shown is marked and under the cursor
        await pilot.press("p")
        await settle(pilot, app)
        picker = picker_of(app)
        assert picker.highlighted.id == "3_epoch_1"
        assert picker.table.get_row_at(4)[0].plain == "●"
        # escape: back to the same timeline, as it was left
        await pilot.press("escape")
        await settle(pilot, app)
        assert app.screen is timeline and timeline.table.cursor_position == cursor
        # another run: a new timeline replaces it
        await pilot.press("p")
        await settle(pilot, app)
        await pilot.press("down", "down", "enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen) and app.screen is not timeline
        assert app.loaded.opened.run_id == "10_epoch_1"
        assert [type(s) for s in app.screen_stack[1:]] == [TimelineScreen]
        assert "run 10_epoch_1" in header_of(app)


async def test_escape_clears_the_filter_and_a_filter_of_no_run_says_so(many):
    app = InspectorApp(load_for_view(many))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        picker = picker_of(app)
        await pilot.press(*"zzz")
        await settle(pilot, app)
        assert table_ids(picker) == [] and "no run matches 'zzz'" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert picker_of(app) is picker
        await pilot.press("escape")
        await settle(pilot, app)
        assert picker.query_one(Input).value == "" and len(table_ids(picker)) == 12
        # nothing open yet: escape stays on the picker
        await pilot.press("escape")
        await settle(pilot, app)
        assert picker_of(app) is picker


async def test_open_run_skips_the_picker_and_uses_the_same_index(many):
    expected = load_for_view(many).opened.runs[6].id
    loaded = load_for_view(many, run="6")
    assert loaded.opened.run_id == expected == "10_epoch_1" and loaded.run_requested
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert "run 10_epoch_1" in header_of(app)
        await pilot.press("p")
        await settle(pilot, app)
        assert picker_of(app).highlighted.id == expected


async def test_picking_a_run_does_not_parse_the_file_again(many, monkeypatch):
    import core.importers as importers

    app = InspectorApp(load_for_view(many))

    def no_second_parse(*args, **kwargs):
        raise AssertionError("the file was parsed again")

    monkeypatch.setattr(importers, "import_file", no_second_parse)
    many.unlink()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen) and app.loaded.opened.run_id == "1_epoch_2"


async def test_a_file_of_one_run_has_no_picker(tmp_path):
    one = write_inspect_log(tmp_path / "one.json", [1], (1,))
    app = InspectorApp(load_for_view(one))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert "Runs" not in screen_text(app)  # no footer key
        await pilot.press("p")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert not [c for c in app.get_system_commands(app.screen) if c.title.startswith("run: pick")]


async def test_the_palette_goes_back_to_the_picker(many):
    app = InspectorApp(load_for_view(many, run=0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        (command,) = [c for c in app.get_system_commands(app.screen) if c.title == "run: pick another run"]
        assert "12 runs" in command.help
        command.callback()
        await settle(pilot, app)
        assert picker_of(app).highlighted.id == "1_epoch_1"


async def test_two_hundred_tau_bench_runs(tmp_path):
    app = InspectorApp(load_for_view(TAU))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        picker = picker_of(app)
        assert table_ids(picker)[:5] == ["task0-trial0", "task0-trial1", "task0-trial2", "task0-trial3", "task1-trial0"]
        await pilot.press(*"task1-trial1")
        await settle(pilot, app)
        assert [c.plain for c in picker.table.get_row_at(0)][1:] == [
            "5",
            "task1-trial1",
            "1",
            "1",
            "success",
            "reward 1.0",
            "15",
        ]
        await pilot.press("enter")
        await settle(pilot, app)
        assert "run task1-trial1" in header_of(app) and "score reward 1.0" in header_of(app)


# ---------------------------------------------------------------------- run info layout


async def test_run_info_at_160x45_shows_every_warning_with_one_scrollbar():
    """tau-bench's task0-trial0 has 3 import warnings: the list under the heading is in
    view when the dialog opens, and only the dialog scrolls (the tree does not)."""
    app = InspectorApp(load_for_view(TAU, run=0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("i")
        await settle(pilot, app)
        assert isinstance(app.screen, RunInfoScreen)
        text = screen_text(app)
        assert "3 import warnings" in text
        for needle in ("file name: the agent model", "[0].traj[13]: tool_call_id", "[0].traj[17]: tool_call_id"):
            assert f"• {needle}" in text, needle
        scrollers = [w for w in app.screen.query("*") if w.show_vertical_scrollbar]
        assert [w.id for w in scrollers] == ["runinfo"]
        tree = app.screen.query_one(JsonTree)
        assert not tree.show_vertical_scrollbar and tree.size.height == tree.virtual_size.height
        # the tree's cursor is followed by the dialog's scroll
        await pilot.press("a")
        await settle(pilot, app)
        assert tree.has_focus
        for _ in range(12):
            await pilot.press("down")
        await settle(pilot, app)
        scroll = app.screen.query_one("#runinfo")
        y = tree.virtual_region.y + tree.cursor_line
        assert scroll.scroll_offset.y <= y < scroll.scroll_offset.y + scroll.scrollable_content_region.height


@pytest.mark.parametrize("width", [110, 160])
async def test_run_info_has_its_own_footer_below_the_dialog(width):
    app = InspectorApp(load_for_view(TAU, run=0))
    async with app.run_test(size=(width, 45)) as pilot:
        await settle(pilot, app)
        await pilot.press("i")
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, RunInfoScreen)
        footer = screen.query_one(Footer)
        dialog = screen.query_one("#runinfo")
        assert dialog.region.bottom <= footer.region.y
        last = screen_text(app).splitlines()[-1]
        assert "Close" in last and "All metadata" in last and "Next error" not in last
        # no marked step in this run: no "m" key offered
        assert "Jump to marked step" not in last


async def test_run_info_wraps_the_error_whole_under_its_column(many):
    app = InspectorApp(load_for_view(many, run=4))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("i")
        await settle(pilot, app)
        widget = app.screen.query_one("#runinfo-text")
        plain = str(widget.render())
        message = app.loaded.recording.metadata["error"]["message"]
        lines = plain.splitlines()
        first = next(i for i, s in enumerate(lines) if s.startswith("error "))
        block = []
        for s in lines[first:]:
            if block and not s.startswith(" " * 19):
                break
            block.append(s[19:])
        assert " ".join(block).split() == message.split()  # every word, none cut
        assert all(len(s) <= widget.content_size.width for s in lines)
        assert "index              4 of 0..11 in run order (--run 4; p: pick another); 10 in the file" in plain


def test_run_info_text_without_width_is_unwrapped():
    from core.record.io import load_recording

    tau = load_recording(TESTS.parent / "sample_recordings" / "tau-bench-airline-task0-trial0.json")
    text = run_info_text(tau, [], width=None).plain
    assert "expected [0]       book_reservation(" in text


# ---------------------------------------------------------------------- pictures


def test_snapshot_run_picker(snap_compare, many, monkeypatch):
    monkeypatch.chdir(many.parent)
    app = InspectorApp(load_for_view(Path(many.name)))

    async def run_before(pilot):
        await settle(pilot, pilot.app)

    assert snap_compare(app, terminal_size=(110, 30), run_before=run_before)


def test_snapshot_run_info_of_a_failed_sample(snap_compare, many, monkeypatch):
    monkeypatch.chdir(many.parent)
    app = InspectorApp(load_for_view(Path(many.name), run=4))

    async def run_before(pilot):
        await pilot.press("i")
        await settle(pilot, pilot.app)

    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)


async def test_help_lists_the_picker_key_only_for_a_file_of_runs(many, tmp_path):
    def ids(app) -> set[str]:
        return {b.id or "" for _, group in app.help_groups() for b in group}

    assert "app.pick_run" in ids(InspectorApp(load_for_view(many, run=0)))
    one = write_inspect_log(tmp_path / "one.json", [1], (1,))
    assert "app.pick_run" not in ids(InspectorApp(load_for_view(one)))


async def test_p_types_into_the_search_box(many):
    app = InspectorApp(load_for_view(many, run=0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", "p")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.query_one("#search", Input).value == "p"
