"""The effects table: the ranked effects of one base, one line per candidate (Line API:
only the visible lines are drawn, so ten thousand rows paint as fast as ten).

Each row is one :class:`core.effects.ranking.Effect` in its JSON shape (what
``effects --json`` prints and the workspace stores): rank, target seq, score (effect ×
reliability, what the ranking orders by), effect ± spread over the repeats, reliability,
direction, usable / all replays, and the candidate's description. The direction is a
word and a colour (never colour alone): ``fixes`` green, ``breaks`` red, ``changes``
yellow, ``none`` dim; a row without a usable replay is dim too, with ``-`` for the
figures it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.message import Message
from textual.strip import Strip

from ..plain import line
from .row_cursor import RowCursorView

__all__ = ["EffectsTable", "effect_row_text"]

#: the header line's columns (widths match :func:`effect_row_text`)
HEADER = f"{'rank':>4}  {'seq':>5}  {'score':>5}  {'effect':>6} {'±':>4}  {'rel':>4}  {'direction':<9} {'replays':>7}  candidate"


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def effect_row_text(e: dict[str, Any]) -> str:
    """One effect (JSON shape) as the table's line, before cutting to the width."""
    o = e["outcome"]
    seq = "-" if e.get("seq") is None else str(e["seq"])
    replays = f"{e['usable']}/{e['replays']}"
    return (
        f"{e['rank']:>4}  {seq:>5}  {_fmt(e['score']):>5}  {_fmt(o['effect']):>6} {_fmt(o['spread']):>4}  "
        f"{_fmt(e['reliability']):>4}  {o['direction']:<9} {replays:>7}  {line(e['description'])}"
    )


def _fit(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…"
    return set_cell_size(text, width)


class EffectsTable(RowCursorView):
    """The ranked effects (module docstring); ``effects`` is the list shown (JSON
    shapes, rank order), ``cursor`` the row index."""

    COMPONENT_CLASSES = {
        "effects--header",
        "effects--cursor",
        "effects--cursor-blurred",
        "effects--fixes",
        "effects--breaks",
        "effects--changes",
        "effects--none",
        "effects--unusable",
    }

    DEFAULT_CSS = """
    EffectsTable { background: $surface; overflow-x: hidden; scrollbar-gutter: stable; }
    EffectsTable > .effects--header { text-style: bold; background: $panel; color: $foreground; }
    EffectsTable > .effects--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    EffectsTable > .effects--cursor-blurred { background: $block-cursor-blurred-background; }
    EffectsTable > .effects--fixes { color: #5faf5f; text-style: bold; }
    EffectsTable > .effects--breaks { color: #ff5f5f; text-style: bold; }
    EffectsTable > .effects--changes { color: #d7af00; }
    EffectsTable > .effects--none { color: $text-muted; }
    EffectsTable > .effects--unusable { color: $text-disabled; }
    """

    class RowHighlighted(Message):
        """The cursor moved to row ``row``."""

        def __init__(self, table: EffectsTable, row: int) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> EffectsTable:
            return self.table

    class RowSelected(Message):
        """A click on the cursor row ``row`` (enter is the screen's binding)."""

        def __init__(self, table: EffectsTable, row: int) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> EffectsTable:
            return self.table

    def __init__(self, effects: Sequence[dict[str, Any]] = (), *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.effects: list[dict[str, Any]] = list(effects)

    def set_effects(self, effects: Sequence[dict[str, Any]]) -> None:
        """Show ``effects`` (rank order); the cursor goes back to the first row."""
        self.effects = list(effects)
        self._cache.clear()
        self._update_virtual_size()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.cursor = 0
        self.refresh()

    def extend_effects(self, more: Sequence[dict[str, Any]]) -> None:
        """Append ``more`` rows (the rest of a ranking shown in part); the cursor stays."""
        self.effects.extend(more)
        self._update_virtual_size()
        self.refresh()

    # ------------------------------------------------------------------ the cursor (RowCursorView)

    def row_count(self) -> int:
        return len(self.effects)

    def cursor_moved(self, row: int) -> None:
        self.post_message(self.RowHighlighted(self, row))

    def row_clicked(self, row: int, was_cursor: bool) -> None:
        if was_cursor:
            self.post_message(self.RowSelected(self, row))
        self.cursor = row

    # ------------------------------------------------------------------ rendering

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return Strip([Segment(_fit(HEADER, width), self._style("effects--header"))], width)
        row = round(self.scroll_y) + y - 1
        if row >= len(self.effects):
            return Strip.blank(width, self.rich_style)
        is_cursor = row == self.cursor
        key = (row, width, is_cursor, self.has_focus)
        strip = self._cache.get(key)
        if strip is not None:
            return strip
        e = self.effects[row]
        direction = e["outcome"]["direction"]
        usable = e["usable"] > 0 and e["outcome"]["effect"] is not None
        style = self._style(f"effects--{direction}" if usable else "effects--unusable")
        strip = Strip([Segment(_fit(effect_row_text(e), width), style)], width)
        if is_cursor:
            over = self._style("effects--cursor" if self.has_focus else "effects--cursor-blurred")
            strip = Strip(list(Segment.apply_style(list(strip), post_style=over)), width)
        self._cache[key] = strip
        return strip
