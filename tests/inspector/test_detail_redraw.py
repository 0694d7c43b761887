"""How the detail pane follows the timeline's cursor: a single move redraws it at once, a
run of quick moves once they stop; a new record repaints the pane without a layout of the
whole screen when nothing in it changes size (the JSON tree's box is fixed by the pane,
the identity block keeps its height), and lays it out when something does."""

from __future__ import annotations

import asyncio

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static

import inspector.screens.timeline as timeline_screen
from inspector.app import InspectorApp
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.detail_pane import update_static
from inspector.widgets.json_tree import JsonTree

pytestmark = pytest.mark.asyncio

SIZE = (140, 40)


async def settled(pilot, app) -> TimelineScreen:
    await app.workers.wait_for_complete()
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    await asyncio.wait_for(screen.detail_settled(), timeout=30)
    await pilot.pause()
    return screen


async def test_a_single_move_redraws_the_detail_at_once_and_quick_moves_once_they_stop(real, monkeypatch):
    # a long settle time: the moves of this test all follow each other within it
    monkeypatch.setattr(timeline_screen, "DETAIL_DELAY", 5.0)
    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settled(pilot, app)
        screen._last_move = float("-inf")  # the cursor has been still for longer than the delay
        await pilot.press("down")
        assert screen.detail.position == screen.table.cursor_position == 1  # no timer waited for
        assert screen._detail_timer is None
        await pilot.press("down", "down")  # within the delay of the first: deferred
        assert screen.table.cursor_position == 3
        assert screen.detail.position == 1
        assert screen._detail_timer is not None and not screen._detail_current.is_set()
        screen._detail_timer.stop()
        screen._detail_timer = None
        screen._show_detail(screen.table.cursor_position)  # what the timer would do
        await asyncio.wait_for(screen.detail_settled(), timeout=5)
        assert screen.detail.position == 3


async def test_moves_queued_behind_a_slow_redraw_wait_as_a_held_keys_do(real, monkeypatch):
    """Stillness is counted from the end of the last redraw: keys that arrive while a slow
    record is drawn are a run of quick moves, not single presses each redrawn at once."""
    import time

    from inspector.widgets.detail_pane import DetailPane

    monkeypatch.setattr(timeline_screen, "DETAIL_DELAY", 0.2)
    shown: list[int | None] = []
    original = DetailPane.show

    def slow_show(self, index, position, empty_message=""):
        shown.append(position)
        time.sleep(0.25)  # a redraw slower than the delay (a huge record)
        original(self, index, position, empty_message)

    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settled(pilot, app)
        monkeypatch.setattr(DetailPane, "show", slow_show)
        screen._last_move = float("-inf")
        await pilot.press(*["down"] * 6)
        await asyncio.wait_for(screen.detail_settled(), timeout=30)
        await pilot.pause()
        assert screen.table.cursor_position == 6
        assert shown[0] == 1 and shown[-1] == 6
        assert len(shown) <= 3, shown  # the first move, the last; not one per key


async def test_a_filter_after_a_quick_move_leaves_the_record_under_the_cursor(real, monkeypatch):
    monkeypatch.setattr(timeline_screen, "DETAIL_DELAY", 1.0)  # the moves below are "quick"
    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settled(pilot, app)
        assert screen.index.kinds[0] == "lifecycle"
        # quick moves back to row 0 (a lifecycle record), then lifecycle hidden: the row
        # stays 0 (no move is posted) and the cursor is now on the first shown record
        await pilot.press("down", "up", "5")
        await settled(pilot, app)
        assert screen.table.cursor_position != 0
        assert screen.detail.position == screen.table.cursor_position


async def test_held_keys_with_the_default_delay_end_on_the_record_under_the_cursor(real):
    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settled(pilot, app)
        await pilot.press(*["down"] * 6, "up")
        await settled(pilot, app)
        assert screen.detail.position == screen.table.cursor_position == 5


async def test_a_new_record_repaints_the_tree_without_a_screen_layout(real):
    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settled(pilot, app)
        tree = screen.detail.query_one(JsonTree)
        shown = tree.virtual_size
        tree.show({f"k{i}": i for i in range(200)}, "big")  # many more lines than the pane holds
        assert not tree._layout_required
        await pilot.pause()
        assert tree.virtual_size.height > tree.size.height
        assert tree.virtual_size != shown
        assert tree.show_vertical_scrollbar  # the scrollbar a layout would have shown
        assert tree.vertical_scrollbar.window_virtual_size == tree.virtual_size.height
        tree.show({"a": 1}, "small")
        await pilot.pause()
        assert tree.virtual_size.height < tree.size.height
        assert not tree.show_vertical_scrollbar
        assert tree.scroll_y == 0


class _AutoTree(App[None]):
    CSS = "JsonTree { height: auto; }"

    def compose(self) -> ComposeResult:
        yield JsonTree()
        yield Static("below", id="below")


async def test_a_tree_that_grows_with_its_lines_still_asks_for_a_layout():
    app = _AutoTree()
    async with app.run_test(size=(60, 30)) as pilot:
        tree = app.query_one(JsonTree)
        tree.show({"a": list(range(5))}, "five")
        await pilot.pause()
        before = tree.size.height
        tree.show({"a": list(range(12))}, "twelve")
        assert tree._layout_required
        await pilot.pause()
        assert tree.size.height > before
        assert app.query_one("#below").region.y == tree.region.bottom


class _Statics(App[None]):
    CSS = "Static { height: auto; max-height: 4; padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield Static("one line", id="s")
        yield Static("below", id="below")


async def test_update_static_lays_out_only_when_the_height_changes():
    app = _Statics()
    async with app.run_test(size=(40, 20)) as pilot:
        s = app.query_one("#s", Static)
        await pilot.pause()
        assert s.size.height == 1
        update_static(s, Text("another line"))
        assert not s._layout_required
        await pilot.pause()
        update_static(s, Text("a\nb\nc"))
        assert s._layout_required
        await pilot.pause()
        assert s.size.height == 3
        assert app.query_one("#below").region.y == 3
        update_static(s, Text("x " * 200))  # wraps to more lines than max-height
        await pilot.pause()
        assert s.size.height == 4
        update_static(s, Text("y " * 150))  # still capped: the same height
        assert not s._layout_required
        await pilot.pause()
        assert s.size.height == 4
        update_static(s, Text("short"))
        assert s._layout_required
        await pilot.pause()
        assert s.size.height == 1
