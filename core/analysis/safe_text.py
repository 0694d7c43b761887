"""Recorded text made safe to show on a terminal: every control character visible.

Recorded strings are data. A tool result holding ``ESC[2J`` (clear screen), an OSC
sequence (``ESC]0;title BEL`` sets the window title, OSC 52 writes the clipboard), a
carriage return that overwrites the line, or a bidi override that reorders what a reader
sees (Unicode Technical Standard #39 / "Trojan Source", CVE-2021-42574) must be shown,
never obeyed. :func:`visible` replaces each such character with a visible stand-in:

* C0 controls U+0000–U+001F (ISO 6429) → the Control Pictures block (``␛`` for ESC,
  ``␍`` for CR, ``␀`` for NUL …, U+2400 + code); ``\\n`` and ``\\t`` only when asked;
* DEL U+007F → ``␡``; C1 controls U+0080–U+009F → ``\\x9b``-style escapes (one
  of them, CSI U+009B, starts a control sequence on its own);
* bidi embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069) and the
  marks U+200E, U+200F, U+061C (Unicode Standard Annex #9) → ``\\u202e``-style escapes;
* zero-width and invisible format characters (U+200B–U+200D, U+2060–U+2064, U+FEFF,
  U+00AD) and the line/paragraph separators U+2028/U+2029 → ``\\u200b``-style escapes.

Everything else — letters of every script, emoji, combining marks — is left as it is.
:func:`has_hidden` says whether a text holds any of these, for a marker on the row.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["HIDDEN_MARK", "has_hidden", "visible"]

#: shown on a row whose text had control or invisible characters made visible
HIDDEN_MARK = "⚠"

_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_INVISIBLE = [0x00AD, 0x200B, 0x200C, 0x200D, *range(0x2060, 0x2065), 0xFEFF, 0x2028, 0x2029]


def _stand_in(cp: int) -> str:
    if cp < 0x20:
        return chr(0x2400 + cp)
    if cp == 0x7F:
        return "\u2421"
    if cp <= 0x9F:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}"


@lru_cache(maxsize=4)
def _table(keep_newline: bool, keep_tab: bool) -> dict[int, str]:
    cps = [*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI, *_INVISIBLE]
    keep = {0x0A} if keep_newline else set()
    if keep_tab:
        keep.add(0x09)
    return {cp: _stand_in(cp) for cp in cps if cp not in keep}


_HIDDEN = re.compile(
    "[" + "".join(re.escape(chr(cp)) for cp in [*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI, *_INVISIBLE]) + "]"
)


def visible(text: str, *, keep_newline: bool = False, keep_tab: bool = False) -> str:
    """``text`` with every control, bidi and invisible character replaced by a visible
    stand-in (see the module docstring). ``keep_newline`` / ``keep_tab`` leave ``\\n`` /
    ``\\t`` as they are (multi-line views; tables). Linear in ``len(text)``."""
    return text.translate(_table(keep_newline, keep_tab))


def has_hidden(text: str, *, keep_newline: bool = True, keep_tab: bool = True) -> bool:
    """Whether ``text`` holds a character :func:`visible` would replace (by default not
    counting ``\\n`` and ``\\t``, which are ordinary in multi-line text)."""
    for m in _HIDDEN.finditer(text):
        c = m.group()
        if not ((c == "\n" and keep_newline) or (c == "\t" and keep_tab)):
            return True
    return False
