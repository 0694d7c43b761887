"""Two runs side by side (SPEC "Diffs, metrics, effects, audit": the compare view): every
record of both runs in aligned rows, the payload diff of one aligned pair, and the
differences to step through.

:func:`compare_runs` aligns *all* records (:data:`~core.analysis.diff.ALL_KINDS`: calls,
interrupts, snapshots, lifecycle events) with :func:`~core.analysis.diff.trace_diff`, so
each row is one :class:`~core.analysis.diff.TraceOp`: ``same``, ``changed`` (same call,
another answer), ``removed`` (only in the base) or ``inserted`` (only in the other run);
a row with one side only is drawn with a blank filler on the other. The **first
divergence** is the one the replay record and ``diff`` report — over model and tool calls
only (:data:`~core.analysis.diff.CALL_KINDS`) — located among the rows.

:func:`pair_changes` is the payload diff of one row
(:func:`core.analysis.payload_diff.payload_diff`, JSON Pointer paths, RFC 6901) between
the two records without the fields that are fresh on every run (seq, timestamps, run
and generation ids, durations, the replay flags); a one-sided row is diffed against its
counterpart when the gap paired one (changed request or tool arguments), else shown as
all removed or all added. :func:`value_text` is how a value of a change is shown on one
line: escaped (never terminal control), binary data written as text as its placeholder
(``<image/png, 3.0 MB>``), long strings cut, and beyond :data:`HASHED_AT` characters
compared by a hash and a size.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..record.nesting import dumps
from ..record.recording import Recording
from .diff import ALL_KINDS, CALL_KINDS, FirstDivergence, TraceDiff, TraceOp, trace_diff
from .payload_diff import Change, payload_diff
from .placeholders import blob_of, format_size, mime_hint
from .safe_text import shown

__all__ = ["HASHED_AT", "Comparison", "compare_runs", "pair_changes", "value_text"]

#: strings longer than this (characters) are shown by their size and a hash, not cut
HASHED_AT = 4096

#: record fields fresh on every run, and the key (derived from the call), never a difference
_FRESH = ("seq", "at", "run_id", "generation_id", "replayed", "live_fallback", "duration_seconds", "key")


@dataclass
class Comparison:
    """Two runs aligned (:func:`compare_runs`).

    ``rows``: one :class:`~core.analysis.diff.TraceOp` per aligned position, in order;
    ``trace``: the diff over all kinds they come from; ``first_divergence``: over calls
    only, as the replay record holds it (``None``: the calls are the same);
    ``first_divergence_row``: the index of its row; ``differences``: the indices of the
    rows that are not ``same``, in order."""

    base: Recording
    other: Recording
    rows: list[TraceOp]
    trace: TraceDiff
    first_divergence: FirstDivergence | None
    first_divergence_row: int | None
    differences: list[int] = field(default_factory=list)
    _base_seqs: dict[int, Any] = field(default_factory=dict, repr=False)
    _other_seqs: dict[int, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._base_seqs = {r.seq: r for r in self.base.records}
        self._other_seqs = {r.seq: r for r in self.other.records}

    def next_difference(self, row: int, step: int = 1) -> int | None:
        """The index of the next row after ``row`` (``step`` 1) or before it (``step``
        -1) that is not ``same``; ``None`` when there is none."""
        d = self.differences
        if step >= 0:
            i = bisect_right(d, row)
            return d[i] if i < len(d) else None
        i = bisect_left(d, row)
        return d[i - 1] if i > 0 else None

    def records(self, row: int) -> tuple[Any | None, Any | None]:
        """The base's and the other run's record of row ``row`` (``None`` for a side
        without one)."""
        op = self.rows[row]
        a = self._base_seqs.get(op.base_seq) if op.base_seq is not None else None
        b = self._other_seqs.get(op.other_seq) if op.other_seq is not None else None
        return a, b

    def counterparts(self, row: int) -> tuple[Any | None, Any | None]:
        """Like :meth:`records`, with a one-sided row's counterpart (the record the gap
        paired it with: a changed request or tool arguments) filled in."""
        a, b = self.records(row)
        op = self.rows[row]
        if op.counterpart_seq is not None:
            if a is None:
                a = self._base_seqs.get(op.counterpart_seq)
            elif b is None:
                b = self._other_seqs.get(op.counterpart_seq)
        return a, b


def compare_runs(base: Recording, other: Recording) -> Comparison:
    """Align every record of ``base`` and ``other`` (module docstring). Cost: two trace
    diffs, O(N + M + D²) each for D differing records."""
    trace = trace_diff(base, other, kinds=ALL_KINDS)
    calls = trace_diff(base, other, kinds=CALL_KINDS)
    rows = trace.ops
    differences = [i for i, op in enumerate(rows) if op.op != "same"]
    fd = calls.first_divergence
    fd_row: int | None = None
    if fd is not None:
        fd_row = _row_of(rows, fd)
    return Comparison(base, other, rows, trace, fd, fd_row, differences)


def _row_of(rows: list[TraceOp], fd: FirstDivergence) -> int | None:
    """The row of the first divergence: the first row holding its base seq or its other
    seq, not ``same`` (a removed call's ``replay_seq`` names the other run's record at
    that place, which may be a later row)."""
    for i, op in enumerate(rows):
        if op.op == "same":
            continue
        if (fd.base_seq is not None and op.base_seq == fd.base_seq) or (
            fd.replay_seq is not None and op.other_seq == fd.replay_seq
        ):
            return i
    return next((i for i, op in enumerate(rows) if op.op != "same"), None)


def _comparable(record: Any) -> Any:
    body = record.to_json_obj()
    for k in _FRESH:
        body.pop(k, None)
    return body


def pair_changes(base_record: Any | None, other_record: Any | None) -> list[Change]:
    """The payload diff of two records (either may be ``None``: the whole of the other
    is one ``added`` or ``removed`` change at path ``""``), without the fields fresh on
    every run (module docstring). Paths are JSON Pointers into the record's JSON."""
    if base_record is None and other_record is None:
        return []
    if base_record is None:
        return [Change("added", "", new=_comparable(other_record))]
    if other_record is None:
        return [Change("removed", "", old=_comparable(base_record))]
    return payload_diff(_comparable(base_record), _comparable(other_record))


def _compact(value: Any, context: Any = None) -> Any:
    """``value`` with every string that is binary data written as text, or longer than
    :data:`HASHED_AT`, replaced by its placeholder (what :func:`value_text` prints)."""
    if isinstance(value, str):
        blob = blob_of(value, mime_hint(context) if isinstance(context, dict) else None)
        if blob is not None:
            return blob.label()
        if len(value) > HASHED_AT:
            data = value.encode("utf-8", "surrogatepass")
            return f"<text, {format_size(len(data))}, sha256:{hashlib.sha256(data).hexdigest()[:12]}…>"
        return value
    if isinstance(value, dict):
        return {k: _compact(v, value) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v, context) for v in value]
    return value


def value_text(value: Any, width: int = 100, *, context: dict[str, Any] | None = None) -> str:
    """``value`` on one line of at most ``width`` characters, as the compare view shows
    it: strings that are binary data written as text as their placeholder
    (:mod:`core.analysis.placeholders`), strings over :data:`HASHED_AT` characters as
    ``<text, 12.3 kB, sha256:1a2b3c4d5e6f…>`` (also inside objects and arrays), a
    placeholder alone unquoted, anything else as JSON (sorted keys); escaped then
    (:func:`~core.analysis.safe_text.shown`: no control, bidi or invisible character
    reaches a terminal) and cut with ``…``. ``context`` is the object holding the value
    (its ``media_type`` or ``mimeType`` names a blob's type)."""
    compact = _compact(value, context)
    if isinstance(value, str) and compact is not value:
        text = compact
    else:
        try:
            text = dumps(compact, orjson.OPT_SORT_KEYS).decode()
        except (TypeError, ValueError):  # not JSON (a lone surrogate, say): its repr
            text = repr(compact)
    text = shown(text)
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"
