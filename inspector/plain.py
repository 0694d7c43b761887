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
"""

from __future__ import annotations

from typing import Any

from rich.style import StyleType
from rich.text import Text

from core.analysis.safe_text import shown

__all__ = ["TAB_SIZE", "block", "block_text", "line", "line_text"]

#: tabs in multi-line text become spaces up to the next multiple of this
TAB_SIZE = 4


def line(value: Any) -> str:
    """``value`` (a string, else ``str(value)``) for a one-line place."""
    return shown(value if isinstance(value, str) else str(value))


def block(value: Any) -> str:
    """``value`` for a multi-line place: newlines kept, tabs expanded."""
    text = value if isinstance(value, str) else str(value)
    return shown(text, keep_newline=True, keep_tab=True).expandtabs(TAB_SIZE)


def line_text(value: Any, style: StyleType = "") -> Text:
    """:func:`line` as a Rich ``Text`` (never parsed as markup)."""
    return Text(line(value), style=style)


def block_text(value: Any, style: StyleType = "") -> Text:
    """:func:`block` as a Rich ``Text`` (never parsed as markup)."""
    return Text(block(value), style=style)
