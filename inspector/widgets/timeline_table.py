"""The virtualized timeline table: one line per record, rendered on demand.

A Line API widget (``ScrollView`` + ``render_line``): only the visible lines are ever
rendered, and rendered lines are memoised in an LRU cache keyed by everything that
changes their look, so a recording of 1,000,000 records scrolls as fast as one of 100.
Data comes from a :class:`core.analysis.timeline.TimelineIndex` (columnar); the rows shown are
``view``, a list of record positions (the filtered selection), set by the screen.

Messages up: :class:`TimelineTable.RecordHighlighted` when the cursor moves,
:class:`TimelineTable.RecordSelected` on enter / double click,
:class:`TimelineTable.SourceFilterChanged` when the answer-source filter changes (and
once on mount, so the filter bar can show the sources of a replay's events).

A replay's events (``index.has_answer_sources``) get a ``source`` column: what answered
each call, as a symbol, its name and a colour (:data:`SOURCE_SYMBOLS`); a plain
recording has no such column (it takes no room). The answer-source filter narrows every
view the screen sets (:meth:`TimelineTable.set_source_filter`), so it composes with the
kind and error filters the screen owns.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from core.analysis.timeline import ANSWER_SOURCES, UNKNOWN_SOURCE, TimelineIndex
from core.analysis.timeline_text import SOURCE_SYMBOLS, format_duration, format_offset, source_label

from ..plain import cut_cells, line

KIND_LABELS = {
    "model": "model",
    "tool": "tool",
    "interrupt": "interrupt",
    "snapshot": "snapshot",
    "lifecycle": "lifecycle",
}
STATUS_MARKS = {
    "ok": "ok",
    "error": "✗ error",
    "interrupted": "‖ interrupted",
    "input": "› input",
    "redacted": "▒ redacted",
    "replayed": "↺ replayed",
    "live-fallback": "⚡ live-fallback",
}
#: every answer source the column can show, in filter order
SOURCES = (*ANSWER_SOURCES, UNKNOWN_SOURCE)
#: answer-source names where the full ones do not fit (the source column, the chips)
SHORT_SOURCES = {
    "recorded": "rec",
    "intervention": "intv",
    "fixture": "fix",
    "drift": "drift",
    "live": "live",
    "policy": "pol",
    "user": "user",
    UNKNOWN_SOURCE: "unk",
}


def short_source_label(source: str) -> str:
    """``"✎ intv"``: the symbol of an answer source and its short name."""
    return f"{SOURCE_SYMBOLS.get(source, '?')} {SHORT_SOURCES.get(source, source)}"


def source_cell(source: str, width: int) -> str:
    """The source column's text in ``width`` cells: ``✎ intervention``, else ``✎ intv``,
    else the symbol alone."""
    full = source_label(source)
    if len(full) <= width:
        return full
    short = short_source_label(source)
    return short if len(short) <= width else SOURCE_SYMBOLS.get(source, "?")


#: Rich styles of the answer sources where a widget draws them outside the table (the
#: detail pane); the table's own are the ``timeline--source-*`` component classes. Hues
#: that keep apart in 16 colours (bright magenta, bright blue, bright yellow, yellow,
#: bright red, cyan); the symbol and the name say the same, for any palette.
SOURCE_STYLES = {
    "recorded": "dim",
    "intervention": "bold #c060c0",
    "fixture": "bold #5f87ff",
    "drift": "#ffaf5f",
    "live": "bold #d7af00",
    "policy": "bold #ff5f5f",
    "user": "#4fb0b0",
    UNKNOWN_SOURCE: "bold",
}


@dataclass(frozen=True)
class Columns:
    """Column widths (cells) for one table width; ``summary`` takes what is left."""

    mark: int
    seq: int
    offset: int
    kind: int
    name: int
    summary: int
    status: int
    duration: int
    tokens: int
    #: answer source (a replay's events only; 0: not shown)
    source: int = 0

    @classmethod
    def fit(
        cls,
        width: int,
        max_seq: int,
        *,
        has_offset: bool = True,
        has_duration: bool = True,
        has_tokens: bool = True,
        name_width: int = 22,
        status_width: int = 15,
        source_width: int = 0,
        source_short_width: int = 0,
    ) -> Columns:
        """Lay out the columns for ``width`` cells.

        Columns empty for the whole recording (``has_offset``/``has_duration``/
        ``has_tokens`` false, ``source_width`` 0: not a replay's events) are never shown.
        ``name_width`` is the longest name (the column is 8–32 cells), ``status_width``
        the longest status label present, ``source_width`` / ``source_short_width`` the
        longest answer-source label present, full (``✎ intervention``) and short
        (``✎ intv``). The summary keeps at least :data:`MIN_SUMMARY` cells: the name
        shrinks first (to 12), then the source column to its short labels, then tokens
        and time are dropped, then the source column keeps its symbols alone (3 cells),
        then duration is dropped."""
        seq = max(3, len(str(max_seq)))
        name = max(8, min(32, name_width))
        cols = {
            "mark": 1,
            "seq": seq,
            "offset": 8 if has_offset else 0,
            "kind": 9,
            "name": name,
            "status": max(6, min(15, status_width)),
            "duration": 7 if has_duration else 0,
            "tokens": 7 if has_tokens else 0,
            "source": max(6, min(16, source_width)) if source_width else 0,
        }

        def summary_room() -> int:
            return width - (sum(cols.values()) + sum(1 for v in cols.values() if v) + 1)

        while summary_room() < MIN_SUMMARY and cols["name"] > 12:
            cols["name"] -= 1
        if summary_room() < MIN_SUMMARY and cols["source"]:
            cols["source"] = max(6, min(cols["source"], source_short_width or 6))
        for drop in ("tokens", "offset", "source", "duration"):
            if summary_room() < MIN_SUMMARY:
                if drop == "source":
                    cols["source"] = min(cols["source"], 3)  # the symbol only ("src")
                else:
                    cols[drop] = 0
        while summary_room() < MIN_SUMMARY and cols["name"] > 8:
            cols["name"] -= 1
        return cls(summary=max(8, summary_room()), **cols)


#: the summary column keeps at least this many cells (other columns give way)
MIN_SUMMARY = 30


def _holds(view: Sequence[int], position: int) -> bool:
    """Whether the ascending ``view`` holds ``position`` (binary search)."""
    i = bisect.bisect_left(view, position)
    return i < len(view) and view[i] == position


def _cell(text: str, width: int, right: bool = False) -> str:
    """``text`` cut (``…``) or padded to ``width`` terminal cells, right-aligned with
    ``right``. A wide character (CJK, most emoji) takes two cells (``rich.cells``); the
    ASCII case, one cell a character, is counted by ``len``."""
    if width <= 0:
        return ""
    if text.isascii():
        if len(text) > width:
            text = text[: width - 1] + "…"
        return text.rjust(width) if right else text.ljust(width)
    text = cut_cells(text, width)
    pad = " " * (width - cell_len(text))
    return pad + text if right else text + pad


class TimelineTable(ScrollView, can_focus=True):
    """The timeline: a fixed header line, then one line per position in ``view``.

    Attributes (set by the parent): ``index`` (the columnar data), ``view`` (positions
    shown, in order), ``matches`` (positions that match the search: marked) and
    ``term`` (the search text, highlighted in summaries). ``cursor`` is a row of
    ``view`` (not a position); :attr:`cursor_position` gives the record position.
    """

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="timeline.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="timeline.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown,space", "page_down", "Page down", show=False, id="timeline.page_down"),
        Binding("home", "first", "First row", show=False, id="timeline.home"),
        Binding("end,G", "last", "Last row", show=False, id="timeline.end"),
        Binding("enter", "select", "Open detail", show=False, id="timeline.select"),
    ]

    COMPONENT_CLASSES = {
        "timeline--header",
        "timeline--cursor",
        "timeline--cursor-blurred",
        "timeline--match",
        "timeline--dim",
        "timeline--separator",
        "timeline--marked",
        "timeline--kind-model",
        "timeline--kind-tool",
        "timeline--kind-interrupt",
        "timeline--kind-snapshot",
        "timeline--kind-lifecycle",
        "timeline--status-ok",
        "timeline--status-error",
        "timeline--status-interrupted",
        "timeline--status-input",
        "timeline--status-redacted",
        "timeline--status-replayed",
        "timeline--status-live-fallback",
        *(f"timeline--source-{source}" for source in SOURCES),
    }

    DEFAULT_CSS = """
    TimelineTable {
        background: $surface;
        overflow-x: hidden;
        scrollbar-gutter: stable;
    }
    TimelineTable > .timeline--header { text-style: bold; background: $panel; color: $foreground; }
    TimelineTable > .timeline--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    TimelineTable > .timeline--cursor-blurred { background: $block-cursor-blurred-background; }
    TimelineTable > .timeline--match { background: #e0c000; color: #000000; text-style: bold; }
    TimelineTable > .timeline--dim { color: $text-muted; }
    TimelineTable > .timeline--marked { color: #d7af00; text-style: bold reverse; }
    TimelineTable > .timeline--separator { color: #4fb0b0; text-style: italic; }
    /* hues chosen so that Rich's downgrade keeps them: bright blue, bright green, yellow,
       bright magenta, cyan, bright red in 16 colours (see docs/app.md) */
    TimelineTable > .timeline--kind-model { color: #5f87ff; text-style: bold; }
    TimelineTable > .timeline--kind-tool { color: #5faf5f; text-style: bold; }
    TimelineTable > .timeline--kind-interrupt { color: #d7af00; text-style: bold; }
    TimelineTable > .timeline--kind-snapshot { color: #c060c0; }
    TimelineTable > .timeline--kind-lifecycle { color: #4fb0b0; }
    TimelineTable > .timeline--status-ok { color: $text-muted; }
    TimelineTable > .timeline--status-error { color: #ff5f5f; text-style: bold; }
    TimelineTable > .timeline--status-interrupted { color: #d7af00; }
    TimelineTable > .timeline--status-input { color: #4fb0b0; }
    TimelineTable > .timeline--status-redacted { color: #c060c0; }
    TimelineTable > .timeline--status-replayed { color: #5f87ff; }
    TimelineTable > .timeline--status-live-fallback { color: #d7af00; text-style: bold; }
    /* answer sources (see SOURCE_STYLES; a symbol and a name besides the colour) */
    TimelineTable > .timeline--source-recorded { color: $text-muted; }
    TimelineTable > .timeline--source-intervention { color: #c060c0; text-style: bold; }
    TimelineTable > .timeline--source-fixture { color: #5f87ff; text-style: bold; }
    TimelineTable > .timeline--source-drift { color: #ffaf5f; }
    TimelineTable > .timeline--source-live { color: #d7af00; text-style: bold; }
    TimelineTable > .timeline--source-policy { color: #ff5f5f; text-style: bold; }
    TimelineTable > .timeline--source-user { color: #4fb0b0; }
    TimelineTable > .timeline--source-unknown { text-style: bold; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class RecordHighlighted(Message):
        """The cursor moved to the record at ``position`` (``None``: empty view)."""

        def __init__(self, table: TimelineTable, position: int | None) -> None:
            super().__init__()
            self.table = table
            self.position = position

        @property
        def control(self) -> TimelineTable:
            return self.table

    class RecordSelected(Message):
        """Enter (or a double click) on the record at ``position``."""

        def __init__(self, table: TimelineTable, position: int) -> None:
            super().__init__()
            self.table = table
            self.position = position

        @property
        def control(self) -> TimelineTable:
            return self.table

    class SourceFilterChanged(Message):
        """The answer sources shown changed (or the table was mounted): ``counts`` maps
        each source present to its rows (``{}``: not a replay's events), ``shown`` is
        the set of sources shown (``None``: every row)."""

        def __init__(self, table: TimelineTable, counts: dict[str, int], shown: frozenset[str] | None) -> None:
            super().__init__()
            self.table = table
            self.counts = counts
            self.shown = shown

        @property
        def control(self) -> TimelineTable:
            return self.table

    def __init__(
        self, index: TimelineIndex, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.index = index
        self.view: Sequence[int] = range(len(index))
        #: the view the screen set, before the answer-source filter narrowed it
        self._given: Sequence[int] = self.view
        #: the answer sources shown (``None``: every row; see set_source_filter)
        self.sources: frozenset[str] | None = None
        #: a replay's events (a source column; their ``replayed`` status drawn as ``ok``)
        self._sourced = index.has_answer_sources
        #: (the screen's empty message, the one the source filter put in its place)
        self._source_empty: tuple[str, str] | None = None
        self.matches: frozenset[int] = frozenset()
        self.term = ""
        self._line_cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._style_cache: dict[tuple[str, bool], Style] = {}
        self._max_seq = index.seqs[-1] if len(index) else 0
        #: seq → label ("mistake", "fault") of the records the metadata marks
        self.marks: dict[int, str] = {}
        #: shown when the view is empty (e.g. "no errors in this recording")
        self.empty_message = "no record matches the filter"
        self._status_widths: list[int] = []
        self._fit: tuple[tuple[int, int], dict, Columns] | None = None
        self._column_facts = self._facts()
        self._update_virtual_size()

    def _facts(self) -> dict:
        """Which optional columns have data, the longest name and status (for :meth:`Columns.fit`).
        Read from the index once; :meth:`set_marks` only widens the status column."""
        idx = self.index
        n = len(idx)
        sample = range(n) if n <= 200_000 else range(0, n, max(1, n // 200_000))
        # widths as drawn (control characters shown, marked); names repeat, so each once
        distinct = {idx.names[p] for p in sample if idx.kinds[p] not in ("snapshot", "lifecycle")}
        names = [len(line(name)) for name in distinct]
        statuses = {idx.statuses[p] for p in sample}
        present = idx.source_counts()
        source_width = max((len(source_label(src)) for src in present), default=0)
        source_short_width = max((len(short_source_label(src)) for src in present), default=0)
        if present:
            # a replay's events: every record is replayed, the source column says by what
            statuses = {"ok" if st == "replayed" else st for st in statuses}
        return {
            "has_offset": any(o is not None for o in idx.offsets),
            "has_duration": any(d is not None for d in idx.durations),
            "has_tokens": any(t is not None for t in idx.tokens),
            "name_width": max(names, default=8),
            "status_width": self._status_width(statuses),
            "source_width": source_width,
            "source_short_width": source_short_width,
        }

    def _status_width(self, statuses: set[str] | None = None) -> int:
        """The status column's width: the longest status drawn (``statuses`` seen, kept
        from the first call) or mark (``✗ ⚑ mistake`` on a marked step that failed)."""
        if statuses is not None:
            self._status_widths = [len(STATUS_MARKS.get(st, st)) for st in statuses]
        return max(self._status_widths + [4 + len(m) for m in self.marks.values()], default=6)

    def redraw_rows(self) -> None:
        """Draw every row again from the index (after the index adopted the verified
        recording: a row that could not be read before reads now)."""
        self._line_cache.clear()
        self.refresh()

    def set_marks(self, marks: dict[int, str]) -> None:
        """Mark records by seq (``{seq: "mistake"}``): shown as ``⚑ mistake`` in the
        status column."""
        self.marks = dict(marks)
        self._column_facts = {**self._column_facts, "status_width": self._status_width()}
        self._line_cache.clear()
        self.refresh()

    def _columns(self, width: int) -> Columns:
        """The layout for ``width`` cells (kept until the width or the facts change:
        every line drawn asks for it)."""
        fit = self._fit
        if fit is None or fit[0] != (width, self._max_seq) or fit[1] is not self._column_facts:
            columns = Columns.fit(width, self._max_seq, **self._column_facts)
            fit = self._fit = ((width, self._max_seq), self._column_facts, columns)
        return fit[2]

    # ------------------------------------------------------------------ data (attributes down)

    def on_mount(self) -> None:
        self.post_message(self.SourceFilterChanged(self, self.index.source_counts(), self.sources))

    def set_view(self, view: Sequence[int], keep_position: int | None = None) -> None:
        """Show ``view`` (positions), narrowed by the answer-source filter; put the
        cursor on ``keep_position`` if it is shown, else on the first row after it, else
        on the last row. When the source filter alone leaves nothing, the empty message
        says so."""
        self._given = view
        if self._source_empty is not None:
            # the message this filter put there last time: the screen's own again
            saved, ours = self._source_empty
            if self.empty_message == ours:
                self.empty_message = saved
            self._source_empty = None
        if self.sources is not None:
            view = self.index.with_sources(view, self.sources)
            if not len(view) and len(self._given):
                names = ", ".join(source_label(s) for s in SOURCES if s in self.sources) or "no source"
                ours = f"no row shown is answered by {names} (S: next source)"
                self._source_empty = (self.empty_message, ours)
                self.empty_message = ours
        self.view = view
        self._line_cache.clear()
        self._update_virtual_size()
        row = 0
        if keep_position is not None and len(view):
            row = self.row_of_position(keep_position, nearest=True) or 0
        self.cursor = min(row, max(0, len(view) - 1))
        self.refresh()
        # once the new height is laid out: a scroll made now is clamped to the old view's
        # height (a filter widened from a few rows leaves the cursor below the screen)
        self.call_after_refresh(self._scroll_cursor_into_view)

    def grow_view(self, view: Sequence[int], *, settle: bool = False) -> None:
        """Show ``view``, the view the screen set grown at its end (more records of a
        big file read after the first paint): rows already shown keep their places and
        the cursor its row; nothing scrolls. ``settle``: every record is read now, so the
        optional columns and widths are measured again over all of them."""
        self._given = view
        if self.sources is not None:
            view = self.index.with_sources(view, self.sources)
        self.view = view
        self._max_seq = self.index.seqs[-1] if len(self.index) else 0
        if settle:
            self._column_facts = self._facts()
        self._line_cache.clear()
        self._update_virtual_size()
        self.refresh()

    def set_source_filter(self, sources: frozenset[str] | None) -> None:
        """Show only rows answered by ``sources`` (``None``, or every source present:
        every row) within the view the screen set; the cursor stays on its record when it
        is still shown. Posts :class:`SourceFilterChanged`.

        Raises:
            ValueError: an unknown answer source.
        """
        counts = self.index.source_counts()
        if sources is not None:
            self.index.with_sources((), sources)  # an unknown source: ValueError, nothing changed
            if sources >= frozenset(counts):
                sources = None  # every source present: every row (separators included)
        self.sources = sources
        self.set_view(self._given, keep_position=self.cursor_position)
        self.post_message(self.SourceFilterChanged(self, counts, sources))

    def set_matches(self, matches: frozenset[int], term: str) -> None:
        """Mark ``matches`` (positions) and highlight ``term`` in summaries."""
        self.matches = matches
        self.term = term
        self._line_cache.clear()
        self.refresh()

    @property
    def cursor_position(self) -> int | None:
        """The record position under the cursor, or ``None`` when the view is empty."""
        if not len(self.view):
            return None
        return self.view[min(self.cursor, len(self.view) - 1)]

    def row_of_position(self, position: int, nearest: bool = False) -> int | None:
        """Row of ``position`` in the view (binary search: the view is ascending); with
        ``nearest`` the first row at or after it (or the last row)."""
        view = self.view
        i = bisect.bisect_left(view, position)
        if i < len(view) and view[i] == position:
            return i
        if nearest and len(view):
            return min(i, len(view) - 1)
        return None

    def go_to_position(self, position: int, center: bool = False) -> bool:
        """Move the cursor to ``position``; ``False`` when it is not in the view. With
        ``center`` a row outside the visible lines is scrolled to the middle (so the
        records after it show too)."""
        row = self.row_of_position(position)
        if row is None and self.sources is not None and _holds(self._given, position):
            # hidden by the answer-source filter only: jumping there clears it
            self.set_source_filter(None)
            row = self.row_of_position(position)
        if row is None:
            return False
        if center:
            top = round(self.scroll_y)
            if not top <= row < top + self._page:
                self.scroll_to(y=max(0, row - self._page // 2), animate=False, immediate=True)
        self.cursor = row
        return True

    # ------------------------------------------------------------------ geometry

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.size.width or 80, len(self.view) + 1)

    def on_resize(self, event: events.Resize) -> None:
        self._line_cache.clear()
        self._update_virtual_size()
        self._scroll_cursor_into_view()

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        height = self._page
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        n = len(self.view)
        if n and not 0 <= new < n:
            self.cursor = max(0, min(new, n - 1))
            return
        self._scroll_cursor_into_view()
        top = round(self.scroll_y)
        # repaint the two lines that changed (y is in virtual lines: +1 for the header)
        for row in (old, new):
            y = row - top + 1
            if 1 <= y <= self._page:
                self.refresh_line(row + 1)
        self.post_message(self.RecordHighlighted(self, self.cursor_position))

    def on_focus(self) -> None:
        self._line_cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._line_cache.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_cache.clear()
        self._style_cache.clear()

    def _known_style(self, name: str) -> Style:
        """:meth:`_style` of component ``name``, or no style when the table has no such
        component: a kind, status or source this table does not know (an index not yet
        verified may say anything) is drawn as recorded text, unstyled, until the
        verification refuses the file."""
        return self._style(name) if name in self.COMPONENT_CLASSES else Style()

    def _style(self, name: str, partial: bool = True) -> Style:
        """A component style (``name`` = "" for the widget's own), memoised until the
        styles change: computing rich styles is costly and every line needs a dozen."""
        key = (name, partial)
        style = self._style_cache.get(key)
        if style is None:
            style = self.rich_style if not name else self.get_component_rich_style(name, partial=partial)
            self._style_cache[key] = style
        return style

    # ------------------------------------------------------------------ actions

    def action_cursor_up(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.cursor = min(max(0, len(self.view) - 1), self.cursor + 1)

    def action_page_up(self) -> None:
        self.cursor = max(0, self.cursor - self._page)

    def action_page_down(self) -> None:
        self.cursor = min(max(0, len(self.view) - 1), self.cursor + self._page)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = max(0, len(self.view) - 1)

    def action_select(self) -> None:
        p = self.cursor_position
        if p is not None:
            self.post_message(self.RecordSelected(self, p))

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        row = round(self.scroll_y) + event.y - 1
        if 0 <= row < len(self.view):
            self.cursor = row
            if event.chain >= 2:
                self.action_select()

    # ------------------------------------------------------------------ rendering

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        cols = self._columns(width)
        if y == 0:
            return self._header_strip(cols, width)
        row = round(self.scroll_y) + y - 1
        if row >= len(self.view):
            if y == 1 and not len(self.view):
                return Strip([Segment(_cell("  " + self.empty_message, width), self._style("timeline--dim"))], width)
            return Strip.blank(width, self._style(""))
        position = self.view[row]
        is_cursor = row == self.cursor
        key = (position, width, is_cursor, self.has_focus, position in self.matches, self.term)
        strip = self._line_cache.get(key)
        if strip is None:
            strip = self._row_strip(position, cols, width, is_cursor, position in self.matches)
            self._line_cache[key] = strip
        return strip

    def _header_strip(self, cols: Columns, width: int) -> Strip:
        style = self._style("timeline--header", partial=False)
        parts = [
            _cell("", cols.mark),
            _cell("seq", cols.seq, right=True),
            _cell("time", cols.offset, right=True),
            _cell("kind", cols.kind),
            _cell("name", cols.name),
            _cell("summary", cols.summary),
            _cell("status", cols.status),
            _cell("source" if cols.source >= 6 else "src", cols.source),
            _cell("dur", cols.duration, right=True),
            _cell("tokens", cols.tokens, right=True),
        ]
        text = " ".join(p for p in parts if p)
        return Strip([Segment(_cell(text, width), style)], width)

    def _highlight(self, text: str, base: Style, match_style: Style) -> list[Segment]:
        term = self.term.lower()
        if not term:
            return [Segment(text, base)]
        low = text.lower()
        out: list[Segment] = []
        start = 0
        while True:
            i = low.find(term, start)
            if i < 0:
                break
            if i > start:
                out.append(Segment(text[start:i], base))
            out.append(Segment(text[i : i + len(term)], base + match_style))
            start = i + len(term)
        if start < len(text):
            out.append(Segment(text[start:], base))
        return out

    #: ``None``: detect 16-colour terminals from the console; tests pin it
    FORCE_LOW_COLOUR: bool | None = None

    @property
    def _low_colour(self) -> bool:
        """16 colours (e.g. ``TERM=xterm``): the cursor row is drawn black on white."""
        if self.FORCE_LOW_COLOUR is not None:
            return self.FORCE_LOW_COLOUR
        return self.app.console.color_system in ("standard", "windows")

    def _finish_row(self, strip: Strip, width: int, base: Style, is_cursor: bool) -> Strip:
        strip = strip.adjust_cell_length(width, base).crop(0, width)
        if is_cursor and self._low_colour:
            over = (
                Style(color="#000000", bgcolor="#ffffff", bold=True)
                if self.has_focus
                else Style(color="#000000", bgcolor="#808080")
            )
            strip = Strip(list(Segment.apply_style(list(strip), post_style=over)), width)
        return strip

    def _row_strip(self, position: int, cols: Columns, width: int, is_cursor: bool, is_match: bool) -> Strip:
        idx = self.index
        base = self._style("")
        if is_cursor:
            if self._low_colour:
                # 16 colours: the theme's cursor colours collapse to low contrast: black
                # on white (grey when the table has no focus) reads in any palette
                # (applied over every cell at the end, see _finish_row)
                pass
            else:
                base = base + self._style(
                    "timeline--cursor" if self.has_focus else "timeline--cursor-blurred", partial=False
                )
        dim = self._style("timeline--dim")
        match_style = self._style("timeline--match")
        kind = idx.kinds[position]
        status = idx.statuses[position]
        kind_style = self._known_style(f"timeline--kind-{kind}")
        segs: list[Segment] = []
        mark = "●" if is_match else " "
        segs.append(Segment(_cell(mark, cols.mark), base + (match_style if is_match else Style())))
        segs.append(Segment(" ", base))
        segs.append(Segment(_cell(str(idx.seqs[position]), cols.seq, right=True) + " ", base + dim))
        if cols.offset:
            segs.append(Segment(_cell(format_offset(idx.offsets[position]), cols.offset, right=True) + " ", base + dim))
        if kind in ("snapshot", "lifecycle"):
            # a separator line that explains the run's composition
            sep_style = self._style("timeline--separator")
            used = sum(s.cell_length for s in segs)
            label = f"── {'⚙' if kind == 'snapshot' else '◆'} {kind} {line(idx.names[position])}: "
            rest = max(0, width - used)
            text = _cell(label + line(idx.summary_of(position)) + " ", rest)
            text = text.rstrip()
            text = text + " " + "─" * max(0, rest - len(text) - 1) if len(text) < rest else text
            segs.append(Segment(label, base + kind_style))
            segs.extend(self._highlight(text[len(label) :], base + sep_style, match_style))
            return self._finish_row(Strip(segs, width), width, base, is_cursor)
        segs.append(Segment(_cell(KIND_LABELS.get(kind) or line(str(kind)), cols.kind) + " ", base + kind_style))
        # recorded text: control, bidi and invisible characters shown, marked (inspector.plain)
        segs.append(Segment(_cell(line(idx.names[position]), cols.name) + " ", base))
        summary = _cell(line(idx.summary_of(position)), cols.summary)
        segs.extend(self._highlight(summary, base, match_style))
        segs.append(Segment(" ", base))
        if status == "replayed" and self._sourced:
            status = "ok"  # every record of a replay's events is replayed: the source column says how
        status_style = self._known_style(f"timeline--status-{status}")
        label = STATUS_MARKS.get(status) or line(str(status))
        mark_label = self.marks.get(idx.seqs[position])
        if mark_label and status == "error" and cols.status > 4:
            # the marked step failed too: both show, the error first (it is what `e` finds)
            segs.append(Segment("✗ ", base + status_style))
            segs.append(Segment(_cell("⚑ " + mark_label, cols.status - 2), base + self._style("timeline--marked")))
        elif mark_label:
            segs.append(Segment(_cell("⚑ " + mark_label, cols.status), base + self._style("timeline--marked")))
        else:
            segs.append(Segment(_cell(label, cols.status), base + status_style))
        if cols.source:
            source = idx.answer_source(position)
            text = "" if source is None else source_cell(source, cols.source)
            segs.append(Segment(" ", base))
            style = self._known_style(f"timeline--source-{source}") if source else Style()
            segs.append(Segment(_cell(text, cols.source), base + style))
        if cols.duration:
            segs.append(
                Segment(" " + _cell(format_duration(idx.durations[position]), cols.duration, right=True), base + dim)
            )
        if cols.tokens:
            tok = idx.tokens[position]
            segs.append(Segment(" " + _cell("" if tok is None else f"{tok:,}", cols.tokens, right=True), base + dim))
        return self._finish_row(Strip(segs), width, base, is_cursor)
