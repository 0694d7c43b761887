"""Two runs side by side (SPEC "Diffs, metrics, effects, audit": the compare view): every
record of both runs in aligned rows, the payload diff of one aligned pair, and the
differences to step through.

:func:`compare_runs` aligns *all* records (:data:`~core.analysis.diff.ALL_KINDS`: calls,
interrupts, snapshots, lifecycle events) with :func:`~core.analysis.diff.trace_diff`, so
each row is one :class:`~core.analysis.diff.TraceOp`: ``same``, ``changed`` (same call,
another answer), ``removed`` (only in the base) or ``inserted`` (only in the other run);
a row with one side only is drawn with a blank filler on the other. The trace diff
matches a record that is not a call by its whole content, so a lifecycle event, an
interrupt or a snapshot whose payload changed falls into a gap as one removed and one
inserted record; inside each gap, such records of the same kind (and, for lifecycle
records, the same event) are paired in order (a longest common subsequence, so both
columns stay in order) and shown as one ``changed`` row. The **first divergence** is
the one the replay record and ``diff`` report — over model and tool calls only
(:data:`~core.analysis.diff.CALL_KINDS`) — located among the rows.

:func:`pair_diff` is the payload diff of one row
(:func:`core.analysis.payload_diff.payload_diff`, JSON Pointer paths, RFC 6901) between
the two records without the fields that are fresh on every run (seq, timestamps, run
and generation ids, durations, the replay flags), stopped once more than
:data:`MAX_CHANGES` changes are found; a one-sided row is diffed against its
counterpart when the gap paired one (changed request or tool arguments), else shown as
all removed or all added. :func:`value_text` is how a value of a change is shown on one
line: escaped (never terminal control), binary data written as text as its placeholder
with a short hash (``<image/png, 3.0 MB, sha256:1a2b3c4d5e6f…>``), long strings cut, and
beyond :data:`HASHED_AT` characters by a size and a hash; :func:`changed_texts` shows
the two sides of a changed string around its first difference
(:func:`changed_strings`, which the ``diff`` command uses too).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import orjson
from deepdiff import DeepDiff

from ..record.nesting import dumps
from ..record.recording import Recording
from .align import align
from .diff import (
    _CALL_TYPE_SET,
    ALL_KINDS,
    CALL_KINDS,
    FirstDivergence,
    TraceDiff,
    TraceOp,
    TraceOps,
    _Gap,
    _Segment,
    first_divergence,
    trace_diff,
)
from .payload_diff import PINNED_OPTIONS, Change, _Digests, _HashGuide, findings_of, payload_diff
from .placeholders import blob_of, format_size, mime_hint
from .safe_text import HIDDEN_MARK, shown

__all__ = [
    "CONTEXT_CHARS",
    "HASHED_AT",
    "HASH_DIGITS",
    "MAX_CHANGES",
    "Comparison",
    "PairDiff",
    "changed_strings",
    "changed_texts",
    "common_prefix",
    "compare_runs",
    "pair_changes",
    "pair_diff",
    "value_text",
]

#: strings longer than this (characters) are shown by their size and a hash, not cut
HASHED_AT = 4096

#: hex digits of the sha256 shown in a placeholder (48 bits: two different values of one
#: size show different hashes but for a 2⁻⁴⁸ chance)
HASH_DIGITS = 12

#: changes of one pair's payload diff computed at most (:func:`pair_diff` stops after one more)
MAX_CHANGES = 200

#: characters of unchanged text shown before the first difference of two changed strings
CONTEXT_CHARS = 12

_SEQ = attrgetter("seq")

#: record fields fresh on every run, and the key (derived from the call), never a difference
_FRESH = ("seq", "at", "run_id", "generation_id", "replayed", "live_fallback", "duration_seconds", "key")


@dataclass
class Comparison:
    """Two runs aligned (:func:`compare_runs`).

    ``rows``: one :class:`~core.analysis.diff.TraceOp` per aligned position, in order
    (the trace diff's ops, with the changed non-call records of a gap paired: module
    docstring; from :func:`compare_runs` a :class:`~core.analysis.diff.TraceOps`, each
    row made when read); ``trace``: the diff over all kinds they come from; ``counts``: rows per
    op (``same``, ``changed``, ``removed``, ``inserted``); ``first_divergence``: over
    calls only, as the replay record holds it (``None``: the calls are the same);
    ``first_divergence_row``: the index of its row; ``differences``: the indices of the
    rows that are not ``same``, in order."""

    base: Recording
    other: Recording
    rows: Sequence[TraceOp]
    trace: TraceDiff
    first_divergence: FirstDivergence | None
    first_divergence_row: int | None
    differences: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    _base_seqs: dict[int, Any] = field(default_factory=dict, repr=False)
    _other_seqs: dict[int, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._base_seqs = dict(zip(map(_SEQ, self.base.records), self.base.records))
        self._other_seqs = dict(zip(map(_SEQ, self.other.records), self.other.records))
        if not self.counts:
            self.counts = {"same": 0, "changed": 0, "removed": 0, "inserted": 0}
            for op in self.rows:
                self.counts[op.op] += 1

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
    """Align every record of ``base`` and ``other`` (module docstring). Cost: the trace
    diff over every kind, O(N + M + D²) for D differing records, the calls' first
    divergence (:func:`~core.analysis.diff.first_divergence`: their alignment, answers
    compared up to the first difference), and one more alignment of each gap's records
    (O(G + H + E²) for a gap of G and H records, E of them unpaired, only for gaps that
    hold records other than calls). When every record of both runs is a call, the calls'
    first divergence is the trace diff's own. The rows are made when read
    (:class:`~core.analysis.diff.TraceOps`); counts and differences come from the runs
    and gaps of the trace diff."""
    trace = trace_diff(base, other, kinds=ALL_KINDS)
    ops = trace.ops
    assert isinstance(ops, TraceOps)  # trace_diff's ops are made when read
    a, b = ops.records()
    if set(map(type, a)) <= _CALL_TYPE_SET and set(map(type, b)) <= _CALL_TYPE_SET:
        fd = trace.first_divergence  # the records of every kind are the calls
    else:
        fd = first_divergence(base, other, kinds=CALL_KINDS)
    rows = _paired_rows(ops)
    differences = rows.difference_rows()
    fd_row: int | None = None
    if fd is not None:
        fd_row = _row_of(rows, fd, differences)
    return Comparison(base, other, rows, trace, fd, fd_row, differences, rows.counts())


def _paired_rows(ops: TraceOps) -> TraceOps:
    """:func:`_pair_changed_records` on a :class:`~core.analysis.diff.TraceOps`: each gap
    (one block of removed and inserted ops) that holds a record other than a call is
    paired; a gap of calls only stays as it is (a call never pairs here), unmade."""
    a, b = ops.records()
    segments: list[_Segment] = []
    for seg in ops.segments():
        if isinstance(seg, _Gap):
            types = set(map(type, a[seg.i : seg.i + seg.ni])) | set(map(type, b[seg.j : seg.j + seg.nj]))
            if not types <= _CALL_TYPE_SET:
                gap_ops = seg.ops if seg.ops is not None else ops._ops_of(seg, 0, len(seg))
                seg = _Gap(seg.i, seg.j, seg.ni, seg.nj, _pair_gap(list(gap_ops)))
        segments.append(seg)
    return TraceOps(a, b, segments)


def _pair_changed_records(ops: Sequence[TraceOp]) -> list[TraceOp]:
    """``ops`` with, in each gap (a run of removed and inserted ops), the removed and
    inserted records that are not calls paired by kind (and lifecycle event) in order —
    a longest common subsequence, so the base's and the other run's records stay in
    order — each pair one ``changed`` row (dimension ``None``). A gap with no such pair
    is kept as it is."""
    ops = list(ops)
    out: list[TraceOp] = []
    i, n = 0, len(ops)
    while i < n:
        if ops[i].op not in ("removed", "inserted"):
            out.append(ops[i])
            i += 1
            continue
        j = i
        while j < n and ops[j].op in ("removed", "inserted"):
            j += 1
        out.extend(_pair_gap(ops[i:j]))
        i = j
    return out


def _pair_gap(gap: list[TraceOp]) -> list[TraceOp]:
    removed = [op for op in gap if op.op == "removed"]
    inserted = [op for op in gap if op.op == "inserted"]

    def key(op: TraceOp, side: str, k: int) -> Any:
        # a call never pairs here (the trace diff paired calls already): a key of its own
        return (side, k) if op.kind in CALL_KINDS else (op.kind, op.name)

    ka = [key(op, "base", k) for k, op in enumerate(removed)]
    kb = [key(op, "other", k) for k, op in enumerate(inserted)]
    if not set(ka) & set(kb):
        return gap
    out: list[TraceOp] = []
    pa = pb = 0
    for x, y in align(ka, kb):
        out.extend(removed[pa:x])
        out.extend(inserted[pb:y])
        a, b = removed[x], inserted[y]
        out.append(TraceOp("changed", a.kind, a.name, a.base_seq, b.other_seq))
        pa, pb = x + 1, y + 1
    out.extend(removed[pa:])
    out.extend(inserted[pb:])
    return out


def _row_of(rows: Sequence[TraceOp], fd: FirstDivergence, differences: Sequence[int] | None = None) -> int | None:
    """The row of the first divergence: the first row holding its base seq or its other
    seq, not ``same`` (a removed call's ``replay_seq`` names the other run's record at
    that place, which may be a later row). ``differences``: the indices of the rows
    that are not ``same``, when known (only those rows are read)."""
    if differences is None:
        differences = [i for i, op in enumerate(rows) if op.op != "same"]
    for i in differences:
        op = rows[i]
        if (fd.base_seq is not None and op.base_seq == fd.base_seq) or (
            fd.replay_seq is not None and op.other_seq == fd.replay_seq
        ):
            return i
    return differences[0] if differences else None


# --------------------------------------------------------------------------- payload diff of a pair


def _comparable(record: Any) -> Any:
    body = record.to_json_obj()
    for k in _FRESH:
        body.pop(k, None)
    return body


@dataclass(frozen=True)
class PairDiff:
    """The payload diff of one pair (:func:`pair_diff`): ``changes`` sorted by path
    (JSON Pointers into the records' JSON), at most the limit asked for; ``complete``:
    ``False`` when the diff stopped because it found more than that (how many more is
    not known: finding them is the cost saved)."""

    changes: list[Change]
    complete: bool = True


class _Enough(Exception):
    """Raised inside deepdiff once the limit is passed; carries the tree found so far."""

    def __init__(self, tree: Any) -> None:
        super().__init__("enough changes")
        self.tree = tree


class _BoundedDeepDiff(DeepDiff):
    """deepdiff that raises :class:`_Enough` on the report after ``limit`` (a class
    attribute of the subclass :func:`_bounded_diff` makes: deepdiff refuses unknown
    arguments)."""

    limit = MAX_CHANGES
    _found = 0

    def _counted(self) -> None:
        self._found += 1
        if self._found > self.limit:
            raise _Enough(self.tree)

    def _report_result(self, report_type: str, change_level: Any, local_tree: Any = None) -> None:
        super()._report_result(report_type, change_level, local_tree)  # type: ignore[no-untyped-call]
        if local_tree is None:
            self._counted()

    def custom_report_result(self, report_type: str, level: Any, extra_info: Any = None) -> None:
        super().custom_report_result(report_type, level, extra_info)  # type: ignore[no-untyped-call]
        self._counted()


def _bounded_diff(old: Any, new: Any, limit: int) -> PairDiff:
    """:func:`~core.analysis.payload_diff.payload_diff` in its default mode (hash-guided,
    lists aligned by item digest), stopped at the change after ``limit``: the same
    findings when there are at most ``limit`` of them; else ``limit`` of them (the first
    ones deepdiff's walk meets, sorted by path) and ``complete`` false."""
    digests = _Digests()
    if type(old) is type(new) and isinstance(old, (dict, list)) and digests.of(old) == digests.of(new):
        return PairDiff([])
    guide = _HashGuide(digests, own_containers=True)
    cls = type("_Bounded", (_BoundedDeepDiff,), {"limit": limit})
    try:
        tree = cls(old, new, custom_operators=[guide], **PINNED_OPTIONS).tree
    except _Enough as stop:
        found = findings_of(stop.tree)
        return PairDiff(found[:limit], complete=False)
    return PairDiff(findings_of(tree))


def pair_diff(base_record: Any | None, other_record: Any | None, *, limit: int | None = MAX_CHANGES) -> PairDiff:
    """The payload diff of two records (either may be ``None``: the whole of the other
    is one ``added`` or ``removed`` change at path ``""``), without the fields fresh on
    every run (module docstring), stopped after ``limit`` changes (``None``: all of
    them). Paths are JSON Pointers into the record's JSON. Cost: the walk stops at the
    change after ``limit``, so a pair of records whose lists differ in every one of
    100,000 items costs as much as 200 changes, not 100,000."""
    if base_record is None and other_record is None:
        return PairDiff([])
    if base_record is None:
        return PairDiff([Change("added", "", new=_comparable(other_record))])
    if other_record is None:
        return PairDiff([Change("removed", "", old=_comparable(base_record))])
    old, new = _comparable(base_record), _comparable(other_record)
    if limit is None:
        return PairDiff(payload_diff(old, new))
    return _bounded_diff(old, new, limit)


def pair_changes(base_record: Any | None, other_record: Any | None) -> list[Change]:
    """Every change of :func:`pair_diff` (no limit)."""
    return pair_diff(base_record, other_record, limit=None).changes


# --------------------------------------------------------------------------- values on one line


def _hash_of(text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:HASH_DIGITS]


def _compact(value: Any, context: Any = None) -> Any:
    """``value`` with every string that is binary data written as text, or longer than
    :data:`HASHED_AT`, replaced by its placeholder (what :func:`value_text` prints)."""
    if isinstance(value, str):
        blob = blob_of(value, mime_hint(context) if isinstance(context, dict) else None)
        if blob is not None:
            return f"<{blob.mime or blob.form}, {format_size(blob.size)}, sha256:{_hash_of(value)}…>"
        if len(value) > HASHED_AT:
            size = len(value.encode("utf-8", "surrogatepass"))
            return f"<text, {format_size(size)}, sha256:{_hash_of(value)}…>"
        return value
    if isinstance(value, dict):
        return {k: _compact(v, value) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v, context) for v in value]
    return value


def _cut(text: str, width: int) -> str:
    """``text`` escaped (:func:`~core.analysis.safe_text.shown`) and cut to ``width``
    characters with ``…``. Only the first ``width + 1`` characters are escaped: an
    escape never makes text shorter, so the rest cannot reach the line."""
    width = max(1, width)
    more = len(text) > width
    out = shown(text[: width + 1])
    if len(out) > width or more:
        return out[: width - 1] + "…"
    return out


def value_text(value: Any, width: int = 100, *, context: dict[str, Any] | None = None) -> str:
    """``value`` on one line of at most ``width`` characters, as the compare view shows
    it: strings that are binary data written as text as their placeholder with the first
    :data:`HASH_DIGITS` hex digits of the sha256 of the text (UTF-8), so two different
    images of one size differ (:mod:`core.analysis.placeholders`:
    ``<image/png, 3.0 MB, sha256:1a2b3c4d5e6f…>``), strings over :data:`HASHED_AT`
    characters as ``<text, 12.3 kB, sha256:1a2b3c4d5e6f…>`` (also inside objects and
    arrays), a placeholder alone unquoted, anything else as JSON (sorted keys); escaped
    then (:func:`~core.analysis.safe_text.shown`: no control, bidi or invisible character
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
    return _cut(text, width)


def changed_texts(old: Any, new: Any, width: int = 100) -> tuple[str, str, int | None]:
    """The two sides of a ``changed`` value on one line each, at most ``width``
    characters: :func:`value_text` of each, except for two strings (neither binary data
    written as text) that do not both fit — those are shown as JSON (quoted, escaped)
    from :data:`CONTEXT_CHARS` characters before their first difference
    (:func:`changed_strings`), so a change past the width is on the line, however long
    the strings (past :data:`HASHED_AT` too). Returns ``(old_text, new_text, index)``,
    ``index`` the 0-based character offset of the first difference in the strings
    themselves when the window is used, else ``None``."""
    a, b = value_text(old, width), value_text(new, width)
    if not (isinstance(old, str) and isinstance(new, str)):
        return a, b, None
    if blob_of(old) is not None or blob_of(new) is not None:
        return a, b, None
    if len(old) <= HASHED_AT and len(new) <= HASHED_AT and not a.endswith("…") and not b.endswith("…"):
        return a, b, None
    try:
        ja, jb = dumps(old).decode(), dumps(new).decode()
    except (TypeError, ValueError):  # a lone surrogate: their repr
        ja, jb = repr(old), repr(new)
    left, right, _ = changed_strings(ja, jb, width)
    return left, right, common_prefix(old, new)


# --------------------------------------------------------------------------- changed strings


def _escaped(s: str) -> str:
    return shown(s.replace("\n", "\\n"))


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (slices compared in C, a
    binary search: fast on megabytes)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, min(limit, len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _side(s: str, prefix: int, end: int, n: int) -> str:
    """One side of a changed pair: :data:`CONTEXT_CHARS` columns of escaped text before
    the first difference, then the changed region, escaped, cut to ``n`` columns with
    ``…`` where text is left out. The context is measured after escaping, so the first
    changed character is always on the line, whatever the context escapes to."""
    raw_lead = s[max(0, prefix - CONTEXT_CHARS) : prefix]
    lead = _escaped(raw_lead)
    body = _escaped(s[prefix:end])
    if HIDDEN_MARK in lead:  # one marker per line, before the first hidden character
        body = body.replace(HIDDEN_MARK, "", 1)
    cut_lead = prefix > len(raw_lead)
    if len(lead) > CONTEXT_CHARS + (HIDDEN_MARK in lead):
        kept = lead[-CONTEXT_CHARS:]
        lead = (HIDDEN_MARK if HIDDEN_MARK in lead and HIDDEN_MARK not in kept else "") + kept
        cut_lead = True
    text = ("…" if cut_lead else "") + lead + body
    if len(text) > n or end < len(s):
        text = text[: n - 1] + "…" if len(text) >= n else text + "…"
    return text


def changed_strings(old: str, new: str, n: int = 38) -> tuple[str, str, int]:
    """Two changed strings as one line each, showing where they differ: the common
    prefix and suffix are left out but for :data:`CONTEXT_CHARS` columns (after
    escaping) before the first difference; each side is escaped (newlines as ``\\n``,
    control characters as visible stand-ins, one marker) and at most ``n`` characters.
    Returns ``(old_text, new_text, index)``, ``index`` the 0-based character offset of
    the first difference. Costs a few slice comparisons on megabyte strings."""
    prefix = common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    if len(old) <= n and len(new) <= n and len(_escaped(old)) <= n and len(_escaped(new)) <= n:
        return _escaped(old), _escaped(new), prefix
    return (
        _side(old, prefix, min(len(old), len(old) - suffix + CONTEXT_CHARS), n),
        _side(new, prefix, min(len(new), len(new) - suffix + CONTEXT_CHARS), n),
        prefix,
    )
