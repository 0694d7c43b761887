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
  U+00AD) and the line/paragraph separators U+2028/U+2029 → ``\\u200b``-style escapes;
* lone surrogates U+D800–U+DFFF → ``\\udcff``-style escapes: no text has them, but
  Python decodes the bytes of a file name or an argument that are not UTF-8 to
  U+DC80–U+DCFF (PEP 383), and a stream cannot encode them.

Everything else — letters of every script, emoji, combining marks — is left as it is.
:func:`has_hidden` says whether a text holds any of these, for a marker on the row;
:func:`shown` is :func:`visible` with that marker (:data:`HIDDEN_MARK`) put just before
the first character it replaced, so a reader sees both that something was hidden and
where. :func:`json_safe` does the same job for JSON text: RFC 8259 §7 lets any character
of a string be written as a ``\\uXXXX`` escape, so JSON output keeps its exact value
while no control, bidi or invisible character is left raw.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN_MARK", "has_hidden", "json_safe", "shown", "visible"]

#: shown on a row whose text had control or invisible characters made visible
HIDDEN_MARK = "⚠"

_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_INVISIBLE = [0x00AD, 0x200B, 0x200C, 0x200D, *range(0x2060, 0x2065), 0xFEFF, 0x2028, 0x2029]
#: every code point :func:`visible` replaces
_ALL = [*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI, *_INVISIBLE, *range(0xD800, 0xE000)]


def _stand_in(cp: int) -> str:
    if cp < 0x20:
        return chr(0x2400 + cp)
    if cp == 0x7F:
        return "\u2421"
    if cp <= 0x9F:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}"


def _table(keep_newline: bool, keep_tab: bool) -> dict[int, str]:
    keep = {0x0A} if keep_newline else set()
    if keep_tab:
        keep.add(0x09)
    return {cp: _stand_in(cp) for cp in _ALL if cp not in keep}


def _pattern(keep_newline: bool, keep_tab: bool) -> re.Pattern[str]:
    """One character :func:`visible` would replace (with the same ``keep_*`` options)."""
    cps = [cp for cp in _ALL if not ((cp == 0x0A and keep_newline) or (cp == 0x09 and keep_tab))]
    return re.compile("[" + "".join(re.escape(chr(cp)) for cp in cps) + "]")


_OPTIONS = [(n, t) for n in (False, True) for t in (False, True)]
#: (keep_newline, keep_tab) -> translation table / pattern, built once (they run per row)
_TABLES = {o: _table(*o) for o in _OPTIONS}
_PATTERNS = {o: _pattern(*o) for o in _OPTIONS}


def visible(text: str, *, keep_newline: bool = False, keep_tab: bool = False) -> str:
    """``text`` with every control, bidi and invisible character replaced by a visible
    stand-in (see the module docstring). ``keep_newline`` / ``keep_tab`` leave ``\\n`` /
    ``\\t`` as they are (multi-line views; tables). Linear in ``len(text)``."""
    if _PATTERNS[keep_newline, keep_tab].search(text) is None:
        return text
    return text.translate(_TABLES[keep_newline, keep_tab])


def has_hidden(text: str, *, keep_newline: bool = True, keep_tab: bool = True) -> bool:
    """Whether ``text`` holds a character :func:`visible` would replace (by default not
    counting ``\\n`` and ``\\t``, which are ordinary in multi-line text)."""
    return _PATTERNS[keep_newline, keep_tab].search(text) is not None


def shown(text: str, *, keep_newline: bool = False, keep_tab: bool = False) -> str:
    """:func:`visible` with :data:`HIDDEN_MARK` inserted just before the first character
    it replaced (``"ok\\x1b[2J"`` → ``"ok⚠␛[2J"``); ``text`` itself when nothing is
    replaced. The form every view of recorded text uses: escape first, then cut to a
    width, so a cut never leaves half an escape sequence raw."""
    m = _PATTERNS[keep_newline, keep_tab].search(text)
    if m is None:
        return text
    i = m.start()
    return text[:i] + HIDDEN_MARK + text[i:].translate(_TABLES[keep_newline, keep_tab])


def json_safe(json_text: str) -> str:
    """JSON text (as an encoder wrote it) with every control, bidi and invisible
    character left raw written as a ``\\uXXXX`` escape instead; newlines between values
    are kept. Encoders escape U+0000–U+001F inside strings already (RFC 8259 §7 requires
    it) but pass DEL, C1 controls and bidi or zero-width characters through; outside
    strings JSON has nothing but ASCII punctuation and whitespace, so every character
    replaced is inside a string and the value decodes unchanged."""
    pattern = _PATTERNS[True, False]
    if pattern.search(json_text) is None:
        return json_text
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
