"""Reading JSON Lines sources (Claude Code sessions, Codex CLI rollouts): one JSON value
per line, a damaged line reported with its number and the rest kept.

:func:`read_jsonl` parses every non-blank line of a :class:`~._source.SourceFile`
(orjson first; the standard library for what orjson refuses or may read inexactly —
``NaN``, lone surrogates, integers of 16 or more digits — with each such value tagged by
:func:`core.record.jsonvalues.encode_value`, as :func:`~._source.parse_source_json`
does for whole documents). A line that is not JSON, or is nested past the limit, is a
:class:`BadLine` (its 1-based number and the reason), never an exception: the JSON Lines
text format (jsonlines.org) has no framing beyond the newline, so one damaged line costs
that line only. The last line, when the file does not end with a newline and that line
does not parse, is reported as cut short (``truncated``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from ._source import SourceFile

#: longest reason text kept from a parser's message
_REASON_CHARS = 120


@dataclass(frozen=True)
class Line:
    """One parsed line: ``number`` (1-based) and ``value`` (any JSON value)."""

    number: int
    value: Any


@dataclass(frozen=True)
class BadLine:
    """A line that could not be read: ``number`` (1-based), ``reason`` (plain words),
    ``truncated`` (the file's last line, cut short: no final newline)."""

    number: int
    reason: str
    truncated: bool = False

    @property
    def message(self) -> str:
        """The warning text for a person (``ImportWarning.message``)."""
        if self.truncated:
            return f"the last line is cut short ({self.reason}); the file ends early, the line is skipped"
        return f"not a JSON line ({self.reason}); skipped"


def _exact(text: str) -> Any:
    """Parse ``text`` with the standard library, reading integers exactly and accepting
    NaN/Infinity and lone surrogates; the value tagged as the loader stores it."""
    from ..record.jsonvalues import encode_value, json_loads_exact

    value = json_loads_exact(text)
    return encode_value(value)[0]


def read_jsonl(src: SourceFile) -> tuple[list[Line], list[BadLine]]:
    """Every line of ``src`` as a :class:`Line`, and the lines that failed as
    :class:`BadLine`, both in file order. Blank lines are ignored.

    Never raises for bad content (a file that is not UTF-8 is read with
    ``surrogateescape`` and its odd bytes tagged); the caller decides whether zero good
    lines is an error.

    Two checks are skipped when they cannot find anything, so the common line costs one
    orjson call: the search for integers of 16 or more digits runs per line only when the
    whole file has one (:attr:`~._source.SourceFile.may_hold_big_ints`: a line holding
    one makes the file hold one, the line's start being a newline there), and the nesting
    walk runs only on a line with more than :data:`~core.record.nesting.MAX_DEPTH` opening
    brackets (a value nested ``d`` levels has ``d`` of them in its text, and as many
    closing ones: a line of at most ``2 * MAX_DEPTH + 1`` bytes is not counted).
    """
    from ..record.jsonvalues import might_hold_big_int
    from ..record.nesting import MAX_DEPTH, depth_reason, ensure_recursion_limit, exceeds

    ensure_recursion_limit()
    data = src.data
    ends_with_newline = data.endswith(b"\n")
    raw_lines = data.split(b"\n")
    if ends_with_newline:
        raw_lines.pop()
    good: list[Line] = []
    bad: list[BadLine] = []
    last = len(raw_lines)
    big = src.may_hold_big_ints
    short = 2 * MAX_DEPTH + 1  # deeper than MAX_DEPTH takes that many brackets, then as many closing ones
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    append = good.append
    for i, raw in enumerate(raw_lines, start=1):
        if not raw or raw.isspace():  # what bytes.strip() removes: ASCII whitespace
            continue
        value: Any
        try:
            value = loads(raw)
            if big and might_hold_big_int(raw):
                value = _exact(raw.decode("utf-8"))
            elif len(raw) <= short or raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
                append(Line(i, value))
                continue
        except decode_error as exc:
            try:
                value = _exact(raw.decode("utf-8", "surrogateescape"))
            except (json.JSONDecodeError, RecursionError, ValueError):
                reason = str(exc).split(":", 1)[0] if "recursion" not in str(exc).lower() else depth_reason()
                bad.append(BadLine(i, reason[:_REASON_CHARS], truncated=(i == last and not ends_with_newline)))
                continue
        if exceeds(value):
            bad.append(BadLine(i, depth_reason()))
            continue
        append(Line(i, value))
    return good, bad
