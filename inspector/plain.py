"""Recorded text as the app shows it: plain text, every control character visible.

Two rules hold for every string that comes from a recording (names, ids, model names,
arguments, results, messages, metadata keys and values, errors) wherever the app draws
it — table rows, the detail pane, the JSON tree, the transcript, titles, notifications,
the error screen:

* it is **text, never markup**: widgets get a Rich :class:`~rich.text.Text` (or a
  Textual ``Content``) built from the string, never a markup string built by
  interpolation, so ``run[/red]`` or ``toolu_[/]01`` is drawn as written;
* it is **shown, never obeyed**: control functions (ECMA-48 / ISO 6429: C0, DEL, C1,
  ESC and OSC sequences) and bidi or invisible characters (Unicode Standard Annex #9)
  are replaced by visible stand-ins, with :data:`~core.analysis.safe_text.HIDDEN_MARK`
  just before the first one (:func:`core.analysis.safe_text.shown`). Markup escaping
  (``rich.markup.escape``) would not be enough: Rich passes ESC through to the terminal.

:func:`line` is for one-line places (a newline becomes ``␊``), :func:`block` for
multi-line ones (newlines kept, tabs expanded to spaces: a raw tab would move the
terminal's cursor where the layout does not expect it).

Invalid Unicode (the ``{"$invalid_unicode": TEXT, …}`` tag of :mod:`core.record.jsonvalues`,
or a string holding its JSON text) is shown as ``TEXT`` — U+FFFD in each bad place —
with the marker just before the first one (:func:`invalid_text`), never as the tag.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.style import StyleType
from rich.text import Text

from core.analysis.placeholders import invalid_unicode_of
from core.analysis.safe_text import HIDDEN_MARK, shown
from core.record.jsonvalues import display_text, is_tagged

__all__ = ["TAB_SIZE", "block", "block_text", "invalid_text", "line", "line_text", "mark_at"]

#: tabs in multi-line text become spaces up to the next multiple of this
TAB_SIZE = 4


def mark_at(text: str, index: int | None) -> str:
    """``text`` with :data:`~core.analysis.safe_text.HIDDEN_MARK` inserted before
    ``text[index]`` (``text`` itself when ``index`` is ``None`` or out of range)."""
    if index is None or not 0 <= index <= len(text):
        return text
    return text[:index] + HIDDEN_MARK + text[index:]


def invalid_text(value: Any) -> str | None:
    """The text an invalid-Unicode value stands for, with the marker before its first
    U+FFFD (see the module docstring); ``None`` for any other value."""
    found = invalid_unicode_of(value)
    return None if found is None else mark_at(*found)


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value if not value.startswith("{") else (invalid_text(value) or value)
    if is_tagged(value):
        return invalid_text(value) or display_text(value)
    return str(value)


def line(value: Any) -> str:
    """``value`` (a string, a tagged value as what it stands for, else ``str(value)``)
    for a one-line place."""
    return shown(_text_of(value))


def block(value: Any) -> str:
    """``value`` for a multi-line place: newlines kept, tabs expanded."""
    return shown(_text_of(value), keep_newline=True, keep_tab=True).expandtabs(TAB_SIZE)


def line_text(value: Any, style: StyleType = "") -> Text:
    """:func:`line` as a Rich ``Text`` (never parsed as markup)."""
    return Text(line(value), style=style)


def block_text(value: Any, style: StyleType = "") -> Text:
    """:func:`block` as a Rich ``Text`` (never parsed as markup)."""
    return Text(block(value), style=style)


def cut_cells(text: str, width: int) -> str:
    """``text`` in at most ``width`` terminal cells (a wide character, CJK or most emoji,
    takes two: ``rich.cells``), ending with ``…`` when cut; a wide character cut in half
    leaves a space."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(0, width - 1)) + "…"
