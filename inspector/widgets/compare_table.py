"""The compare table: two runs in two columns, one line per aligned row of a
:class:`core.analysis.compare.Comparison` (Line API: only the visible lines are drawn).

Each line: the row's mark — ``=`` same, ``~`` changed, ``−`` only in the base (removed),
``+`` only in the other run (inserted) — then the base's record (seq, kind, name,
summary) and the other run's, with its answer source when it is a replay's events. A side
without a record is a filler of ``·``. Both columns move together: there is one cursor
and one scroll position, so scrolling one side scrolls the other. The first divergence
is marked ``▶``. Until its comparison is set (:meth:`CompareTable.set_comparison`: the
compare screen aligns the runs in a worker) the table has no rows and says so under its
header; the movement keys do nothing meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.message import Message
from textual.strip import Strip

from core.analysis.compare import Comparison
from core.analysis.diff import TraceOp
from core.analysis.timeline import TimelineIndex
from core.analysis.timeline_text import SOURCE_SYMBOLS

from ..plain import line
from .row_cursor import RowCursorView

__all__ = ["OP_MARKS", "CompareTable"]

#: the mark of each row op (a symbol as well as a colour: never colour alone)
OP_MARKS = {"same": "=", "changed": "~", "removed": "−", "inserted": "+"}
#: what a row's op is called in words (the legend, the diff pane)
OP_WORDS = {
    "same": "same",
    "changed": "changed answer",
    "removed": "only in the base",
    "inserted": "only in the other run",
}


def _fit(text: str, width: int) -> str:
    """``text`` cut (with ``…``) or padded to ``width`` terminal cells."""
    if width <= 0:
        return ""
    from rich.cells import cell_len

    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…"
    return set_cell_size(text, width)


class CompareTable(RowCursorView):
    """Two runs side by side (module docstring). ``comparison`` is what is shown
    (``None``: not aligned yet, no rows); ``base_index`` / ``other_index`` give each
    side's summaries and answer sources. ``cursor`` is the row index."""

    COMPONENT_CLASSES = {
        "compare--header",
        "compare--cursor",
        "compare--cursor-blurred",
        "compare--same",
        "compare--changed",
        "compare--removed",
        "compare--inserted",
        "compare--filler",
        "compare--divergence",
    }

    DEFAULT_CSS = """
    CompareTable { background: $surface; overflow-x: hidden; scrollbar-gutter: stable; }
    CompareTable > .compare--header { text-style: bold; background: $panel; color: $foreground; }
    CompareTable > .compare--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    CompareTable > .compare--cursor-blurred { background: $block-cursor-blurred-background; }
    CompareTable > .compare--same { color: $text-muted; }
    CompareTable > .compare--changed { color: #d7af00; text-style: bold; }
    CompareTable > .compare--removed { color: #ff5f5f; }
    CompareTable > .compare--inserted { color: #5faf5f; }
    CompareTable > .compare--filler { color: $text-disabled; }
    CompareTable > .compare--divergence { color: #ff5f5f; text-style: bold reverse; }
    """

    class RowHighlighted(Message):
        """The cursor moved to row ``row``."""

        def __init__(self, table: CompareTable, row: int) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> CompareTable:
            return self.table

    def __init__(
        self,
        comparison: Comparison | None,
        base_index: TimelineIndex,
        other_index: TimelineIndex,
        *,
        id: str | None = None,  # noqa: A002 - Textual's name
    ) -> None:
        super().__init__(id=id)
        self.comparison = comparison
        self.base_index = base_index
        self.other_index = other_index
        self._sourced = other_index.has_answer_sources

    @property
    def rows(self) -> Sequence[TraceOp]:
        """The comparison's rows (none before it is set)."""
        return self.comparison.rows if self.comparison is not None else []

    def set_comparison(self, comparison: Comparison, cursor: int = 0) -> None:
        """Show ``comparison`` (the runs are aligned), the cursor on row ``cursor``."""
        self.comparison = comparison
        self._cache.clear()
        self._update_virtual_size()
        self.cursor = cursor

    # ------------------------------------------------------------------ the cursor (RowCursorView)

    def row_count(self) -> int:
        return len(self.rows)

    def cursor_moved(self, row: int) -> None:
        self.post_message(self.RowHighlighted(self, row))

    # ------------------------------------------------------------------ rendering

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def _side_width(self, width: int) -> int:
        return max(10, (width - 4) // 2)

    def _side_text(self, index: TimelineIndex, seq: int | None, width: int, sourced: bool) -> str:
        if seq is None:
            return "·" * width
        pos = index.position_of_seq(seq)
        if pos is None:
            return _fit(f"{seq:>5} (not in the recording)", width)
        kind = index.kinds[pos]
        name = line(index.names[pos] or "")
        summary = line(index.summary_of(pos))
        source = ""
        if sourced:
            src = index.answer_source(pos)
            if src:
                source = f" {SOURCE_SYMBOLS.get(src, '?')}"
        text = f"{seq:>5} {kind[:5]:<5} {_fit(name, 14)}{source} {summary}"
        return _fit(text, width)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        side = self._side_width(width)
        if y == 0:
            text = f"  {_fit('base', side)}  {_fit('other' + (' (answer source)' if self._sourced else ''), side)}"
            return Strip([Segment(_fit(text, width), self._style("compare--header"))], width)
        if self.comparison is None:
            if y == 1:
                return Strip([Segment(_fit("  aligning the two runs…", width), self._style("compare--filler"))], width)
            return Strip.blank(width, self.rich_style)
        rows = self.comparison.rows
        row = round(self.scroll_y) + y - 1
        if row >= len(rows):
            return Strip.blank(width, self.rich_style)
        is_cursor = row == self.cursor
        key = (row, width, is_cursor, self.has_focus)
        strip = self._cache.get(key)
        if strip is not None:
            return strip
        op = rows[row]
        mark = "▶" if row == self.comparison.first_divergence_row else OP_MARKS[op.op]
        left = self._side_text(self.base_index, op.base_seq, side, False)
        right = self._side_text(self.other_index, op.other_seq, side, self._sourced)
        op_style = self._style(f"compare--{op.op}")
        mark_style = self._style("compare--divergence") if mark == "▶" else op_style
        filler = self._style("compare--filler")
        segs = [
            Segment(mark + " ", mark_style),
            Segment(left, filler if op.base_seq is None else op_style),
            Segment("  ", self.rich_style),
            Segment(right, filler if op.other_seq is None else op_style),
        ]
        strip = Strip(segs).adjust_cell_length(width)
        if is_cursor:
            over = self._style("compare--cursor" if self.has_focus else "compare--cursor-blurred")
            strip = Strip(list(Segment.apply_style(list(strip), post_style=over)), width)
        self._cache[key] = strip
        return strip
