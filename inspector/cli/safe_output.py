"""The one output path of the command line: recorded text is shown, never obeyed.

Recorded strings (tool names, results, ids, metadata) reach the terminal in every
command. A control function in one of them — ``ESC[2J`` (erase display), an OSC string
(``ESC]0;…BEL`` sets the window title, OSC 52 writes the clipboard), a bare CR, a C1
control such as CSI U+009B (all ECMA-48 / ISO 6429), or a bidi override that reorders
the line (Unicode Standard Annex #9) — would act on the user's terminal. So
:func:`protected_output` replaces ``sys.stdout`` and ``sys.stderr`` for the whole
command with a :class:`SafeTextStream`: every write passes through
:func:`core.analysis.safe_text.visible` (``\\n`` kept, ``\\t`` shown as ``␉`` too: no
command aligns with tabs), and :data:`~core.analysis.safe_text.HIDDEN_MARK` is put
before the first character made visible on each line. A new command is covered without
doing anything.

Commands format their rows with :func:`cell` (``shown`` from ``core.analysis.safe_text``:
escape, mark, then cut and pad), so widths hold and a newline in a name cannot forge a
row; the stream is the net under everything else. Machine formats keep their value:
``--json`` goes through :func:`core.analysis.safe_text.json_safe` (``\\uXXXX`` escapes,
decodes to the same strings), ``--csv`` through :func:`csv_safe` (stand-ins in the
cells, no marker). Neither leaves anything for the stream to change.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from core.analysis.safe_text import has_hidden, shown, visible

__all__ = ["SafeTextStream", "cell", "csv_safe", "protected_output"]


def cell(value: Any, width: int | None = None) -> str:
    """A recorded value as one line of a row: :func:`~core.analysis.safe_text.shown`
    (newlines too become ``␊``), cut to ``width`` characters when given (no ellipsis:
    the callers pad or add their own)."""
    text = shown(value if isinstance(value, str) else str(value))
    return text if width is None else text[:width]


def csv_safe(text: str) -> str:
    """CSV text with every control, bidi and invisible character in its cells shown as a
    stand-in (``\\n`` and ``\\t`` kept: quoted cells may hold them)."""
    return visible(text, keep_newline=True, keep_tab=True)


class SafeTextStream:
    """A text stream that writes to ``raw`` what :func:`visible` makes of each write,
    with :data:`~core.analysis.safe_text.HIDDEN_MARK` before the first character it
    replaced on each line.

    Everything but writing is the wrapped stream's (``isatty``, ``encoding``,
    ``fileno`` ...), except ``buffer``: there is no way around the filter with bytes.
    """

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        #: the current line (since the last newline written) already carries the marker
        self._marked = False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not has_hidden(text, keep_newline=True, keep_tab=False):
            if "\n" in text:
                self._marked = False
            self.raw.write(text)
            return len(text)
        lines = text.split("\n")
        out = []
        for i, line in enumerate(lines):
            if i:
                self._marked = False
            if has_hidden(line, keep_tab=False):
                if self._marked:
                    line = visible(line)
                else:
                    line = shown(line)
                    self._marked = True
            out.append(line)
        self.raw.write("\n".join(out))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(self.raw.isatty())

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError("buffer: recorded text is written as text, through the filter")
        return getattr(self.raw, name)


@contextmanager
def protected_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`SafeTextStream` for the duration
    (nested uses wrap once); the streams are put back afterwards."""
    old_out, old_err = sys.stdout, sys.stderr
    if not isinstance(old_out, SafeTextStream):
        sys.stdout = SafeTextStream(old_out)
    if not isinstance(old_err, SafeTextStream):
        sys.stderr = SafeTextStream(old_err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = old_out, old_err
