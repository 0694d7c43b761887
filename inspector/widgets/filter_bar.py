"""The filter bar: kind toggles, an errors-only toggle, answer-source toggles (a replay's
events only), the search box and match count.

Attributes down (:meth:`FilterBar.set_state`, :meth:`FilterBar.set_sources`,
:meth:`FilterBar.set_match_info`), messages up (:class:`FilterBar.KindToggled`,
:class:`FilterBar.ErrorsToggled`, :class:`FilterBar.SourceToggled`,
:class:`FilterBar.SearchSubmitted`, :class:`FilterBar.SearchCancelled`).
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from core.analysis.timeline import VIEW_KINDS as RECORD_KINDS
from core.analysis.timeline_text import SOURCE_SYMBOLS

from .timeline_table import SHORT_SOURCES, SOURCE_STYLES, SOURCES

KIND_KEYS = {kind: str(i + 1) for i, kind in enumerate(RECORD_KINDS)}
#: chip labels when the bar is narrower than :data:`COMPACT_BELOW` cells (or than the
#: full chips need next to the search box and the match counter)
SHORT_NAMES = {"model": "mdl", "tool": "tool", "interrupt": "intr", "snapshot": "snap", "lifecycle": "life"}
COMPACT_BELOW = 110


class Chip(Static):
    """A clickable on/off toggle label."""

    DEFAULT_CSS = """
    Chip { width: auto; height: 1; padding: 0 1; margin: 0 1 0 0; background: $panel; color: $text-muted; }
    Chip.on { background: $primary-muted; color: $text; text-style: bold; }
    Chip:hover { background: $panel-lighten-2; }
    """

    class Clicked(Message):
        """The chip was clicked."""

        def __init__(self, chip: Chip) -> None:
            super().__init__()
            self.chip = chip

        @property
        def control(self) -> Chip:
            return self.chip

    def on_click(self) -> None:
        self.post_message(self.Clicked(self))


class SearchInput(Input):
    """The search box; escape hands focus back (as :class:`FilterBar.SearchCancelled`)."""

    BINDINGS = [Binding("escape", "cancel", "Leave search", show=False, id="search.cancel")]

    def action_cancel(self) -> None:
        self.post_message(FilterBar.SearchCancelled())


class FilterBar(Horizontal):
    """Kind chips ``1``–``5``, errors chip ``x``, answer-source chips (``S`` steps through
    them; only the sources a replay's events hold, none for a plain recording), search
    box ``/``."""

    DEFAULT_CSS = """
    FilterBar { height: 1; background: $surface; }
    FilterBar > SearchInput { width: 1fr; height: 1; border: none; padding: 0 1; background: $boost; }
    FilterBar > SearchInput:focus { border: none; background: $primary 20%; }
    FilterBar > SearchInput { min-width: 16; }
    FilterBar > #match-info { width: auto; padding: 0 1; color: $text-muted; }
    FilterBar > Chip.empty { display: none; }
    FilterBar > #source-key { width: auto; padding: 0 1 0 0; color: $text-muted; }
    FilterBar > #source-key.empty { display: none; }
    FilterBar.-searching > #source-key { display: none; }
    FilterBar.-searching > Chip { display: none; }
    FilterBar.-compact > Chip { padding: 0 0 0 1; }
    """

    class KindToggled(Message):
        """The user toggled the visibility of ``kind``."""

        def __init__(self, kind: str) -> None:
            super().__init__()
            self.kind = kind

    class ErrorsToggled(Message):
        """The user toggled "errors only"."""

    class SourceToggled(Message):
        """The user toggled the rows answered by ``source`` (an answer source)."""

        def __init__(self, source: str) -> None:
            super().__init__()
            self.source = source

    class SearchSubmitted(Message):
        """The user submitted a search for ``text`` (empty: clear the search)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class SearchCancelled(Message):
        """The user left the search box with escape."""

    _match_info = ""
    _state: tuple[frozenset[str], bool, dict[str, int]] | None = None
    #: answer sources present → rows, and the sources shown (None: all)
    _sources: tuple[dict[str, int], frozenset[str] | None] = ({}, None)

    def compose(self) -> ComposeResult:
        for kind in RECORD_KINDS:
            yield Chip(f"{KIND_KEYS[kind]} {kind}", id=f"chip-{kind}", classes="on")
        yield Chip("x errors", id="chip-errors")
        yield Static("S", id="source-key", classes="empty")
        for source in SOURCES:
            yield Chip(source, id=f"source-{source}", classes="on empty")
        yield SearchInput(placeholder="/ search names, arguments, contents, results", id="search")
        yield Static("", id="match-info")

    def set_state(self, kinds: frozenset[str], errors_only: bool, counts: dict[str, int]) -> None:
        """Show which kinds are visible and whether only errors are shown. Below
        :data:`COMPACT_BELOW` cells the chips are short (``1 mdl``, no counts: the header
        has them) so the search box and the match counter keep their room."""
        self._state = (kinds, errors_only, counts)
        labels = {kind: f"{KIND_KEYS[kind]} {kind} {counts.get(kind, 0):,}" for kind in RECORD_KINDS}
        sources = self._sources[0]
        # full chips + "x errors" + a search box of 24 and a counter of 16 ("51,859 matches")
        needed = sum(len(lbl) + 3 for k, lbl in labels.items() if counts.get(k, 0)) + 11 + 24 + 16
        if sources:  # "S" and a chip "✎ intervention 1" per source present
            needed += 2 + sum(len(self._source_text(s, n, compact=False)) + 3 for s, n in sources.items())
        compact = 0 < self.size.width < max(COMPACT_BELOW, needed)
        self.set_class(compact, "-compact")
        for kind in RECORD_KINDS:
            chip = self.query_one(f"#chip-{kind}", Chip)
            chip.set_class(kind in kinds, "on")
            # a kind the recording has none of takes no room (its key still works)
            chip.set_class(not counts.get(kind, 0), "empty")
            chip.update(f"{KIND_KEYS[kind]} {SHORT_NAMES[kind]}" if compact else labels[kind])
        errors = self.query_one("#chip-errors", Chip)
        errors.set_class(errors_only, "on")
        errors.update("x err" if compact else "x errors")
        self._show_sources(compact)

    def set_sources(self, counts: dict[str, int], shown: frozenset[str] | None) -> None:
        """Show a chip per answer source present (``counts``: source → rows; ``{}``, a
        plain recording: no chip, no room taken), lit when its rows are ``shown``
        (``None``: every source)."""
        self._sources = (dict(counts), shown)
        if self._state is not None:
            self.set_state(*self._state)  # the chips change what fits
        else:
            self._show_sources(self.has_class("-compact"))

    @staticmethod
    def _source_text(source: str, n: int, *, compact: bool) -> str:
        name = SHORT_SOURCES.get(source, source) if compact else source
        return f"{SOURCE_SYMBOLS.get(source, '?')} {name}" + ("" if compact else f" {n:,}")

    def _show_sources(self, compact: bool) -> None:
        counts, shown = self._sources
        self.query_one("#source-key", Static).set_class(not counts, "empty")
        for source in SOURCES:
            chip = self.query_one(f"#source-{source}", Chip)
            n = counts.get(source, 0)
            chip.set_class(not n, "empty")
            chip.set_class(shown is None or source in shown, "on")
            if n:
                text = Text(self._source_text(source, n, compact=compact))
                text.stylize(SOURCE_STYLES.get(source, ""), 0, 1)  # the symbol in the source's colour
                chip.update(text)

    def on_resize(self) -> None:
        if self._state is not None:
            self.set_state(*self._state)

    def set_match_info(self, text: str) -> None:
        """Show e.g. ``match 3/17`` next to the search box."""
        if text != self._match_info:
            self._match_info = text
            self.query_one("#match-info", Static).update(text)

    @on(Chip.Clicked)
    def _chip_clicked(self, event: Chip.Clicked) -> None:
        event.stop()
        cid = event.chip.id or ""
        if cid == "chip-errors":
            self.post_message(self.ErrorsToggled())
        elif cid.startswith("source-"):
            self.post_message(self.SourceToggled(cid[7:]))
        elif cid.startswith("chip-"):
            self.post_message(self.KindToggled(cid[5:]))

    def on_descendant_focus(self, event) -> None:
        # while typing a search the chips make way for the box and the match counter
        self.set_class(isinstance(event.widget, SearchInput), "-searching")

    def on_descendant_blur(self, event) -> None:
        self.remove_class("-searching")

    @on(Input.Submitted, "#search")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.SearchSubmitted(event.value.strip()))
