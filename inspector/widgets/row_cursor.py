"""One row cursor over a Line API table with a header line: the movement keys (the
timeline's, under its binding ids, so one keymap entry moves every table), the cursor
kept in view, the page size, clicks on rows — what the compare and effects tables share.

A subclass gives :meth:`row_count`, draws its lines in ``render_line`` (line 0 is the
header, line ``y`` shows row ``scroll_y + y - 1``; its strips may be cached in
``_cache``, which is cleared when focus or size changes) and says what a move means in
:meth:`cursor_moved` (posting its own message).
"""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

__all__ = ["RowCursorView"]


class RowCursorView(ScrollView, can_focus=True):
    """A table of :meth:`row_count` rows under one header line, with ``cursor`` (the
    row index) always in view (module docstring)."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="timeline.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="timeline.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown,space", "page_down", "Page down", show=False, id="timeline.page_down"),
        Binding("home", "first", "First row", show=False, id="timeline.home"),
        Binding("end,G", "last", "Last row", show=False, id="timeline.end"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self._cache: dict[tuple[int, int, bool, bool], Strip] = {}

    def row_count(self) -> int:
        """How many rows the table has (the header line aside)."""
        raise NotImplementedError

    def cursor_moved(self, row: int) -> None:
        """The cursor is on ``row`` now (a subclass posts its message)."""

    def row_clicked(self, row: int, was_cursor: bool) -> None:
        """A click on ``row`` (``was_cursor``: it held the cursor already); the cursor
        moves there."""
        self.cursor = row

    # ------------------------------------------------------------------ geometry

    def on_mount(self) -> None:
        self._update_virtual_size()

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.size.width or 80, self.row_count() + 1)

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self._update_virtual_size()
        self._scroll_cursor_into_view()

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self._page:
            self.scroll_to(y=self.cursor - self._page + 1, animate=False, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        n = self.row_count()
        if n and not 0 <= new < n:
            self.cursor = max(0, min(new, n - 1))
            return
        self._scroll_cursor_into_view()
        self.refresh()
        self.cursor_moved(self.cursor)

    def on_focus(self) -> None:
        self._cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._cache.clear()
        self.refresh()

    # ------------------------------------------------------------------ actions

    def _last(self) -> int:
        return max(0, self.row_count() - 1)

    def action_cursor_up(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.cursor = min(self._last(), self.cursor + 1)

    def action_page_up(self) -> None:
        self.cursor = max(0, self.cursor - self._page)

    def action_page_down(self) -> None:
        self.cursor = min(self._last(), self.cursor + self._page)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = self._last()

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        row = round(self.scroll_y) + event.y - 1
        if 0 <= row < self.row_count():
            self.row_clicked(row, row == self.cursor)
