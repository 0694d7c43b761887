"""Diffs of two recordings: trace, tool, state and output (SPEC "Diffs, metrics, effects").

**Trace diff** (:func:`trace_diff`). The call records of both recordings (kinds ``model``
and ``tool`` by default) are aligned by their *canonical key* — the hash of the call's
identity (``core.record.canonical``) — with :func:`core.analysis.align.align` (common prefix/suffix
trimmed, then Myers). Each aligned position becomes one :class:`TraceOp`:

* ``same`` — same call identity and same result;
* ``changed`` — same call identity, different result (a tool's ``result`` — content,
  artifact, error, redacted — or a model's answer — response message, finish reason,
  error). Durations, timestamps, token usage, ``tool_call_id``, ``run_id`` and
  ``generation_id`` are not part of the result: they are fresh on every run;
* ``removed`` — a record of the base with no counterpart in the other recording;
* ``inserted`` — a record of the other recording with no counterpart in the base.

Inside one gap (records removed and inserted at the same place) removed and inserted
records are *paired* in order (``counterpart_seq``) — model calls with model calls,
tool calls only with calls of the same tool: a paired model call differs in its
**request**, a paired tool call in its **tool arguments** (calls of two different tools
are never paired: one is missing, the other extra). Unpaired removed records are **missing**, unpaired inserted
ones **extra**; a ``changed`` model call differs in its **response**, a ``changed`` tool
call in its **tool result**. These six are :data:`DIMENSIONS`.

The **first divergence** is the first op that is not ``same``: ``base_seq`` and
``replay_seq`` are record ``seq`` values (the names the replay record uses). For a record
missing from the other run ``replay_seq`` is the other run's record at that position (its
counterpart, or the first record of the gap, or the next record; ``None`` at the end);
for an extra record ``base_seq`` is likewise the base record at that position.

The alignment is a function of the unordered pair: ``trace_diff(b, a)`` is the mirror of
``trace_diff(a, b)`` (same matched pairs; removed ↔ inserted), because the alignment is
always computed in one canonical orientation.

**Tool diff** (:func:`tool_diffs`): for every aligned or paired tool pair, the payload
diff of its arguments and of its result. **State diff** (:func:`state_diff`): snapshot
compositions, paired by generation id (else by order). **Output diff**
(:func:`output_diff`): the final outputs — a line diff for text, a structural diff for
JSON. Payload diffs come from :func:`core.analysis.payload_diff.payload_diff` (JSON Pointer
paths, RFC 6901).
"""

from __future__ import annotations

import difflib
import hashlib
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, filterfalse, repeat
from operator import attrgetter, eq, is_, is_not, not_
from typing import Any

import orjson

from ..errors import CanonicalizationError
from ..record.nesting import dumps, is_depth_failure, json_mode_dump
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    Recording,
    SnapshotRecord,
    ToolCall,
    ToolRecord,
    ToolResult,
)
from .align import DEFAULT_MAX_EDITS, _lis, align, opcodes
from .payload_diff import Change, payload_diff

__all__ = [
    "ALL_KINDS",
    "CALL_KINDS",
    "DIMENSIONS",
    "FirstDivergence",
    "OutputDiff",
    "StateDiff",
    "ToolDiff",
    "TraceDiff",
    "TraceOp",
    "TraceOps",
    "call_identity",
    "first_divergence",
    "output_diff",
    "result_fingerprint",
    "state_diff",
    "tool_diffs",
    "trace_diff",
]

DIMENSIONS = ("request", "response", "tool arguments", "tool result", "missing", "extra")
CALL_KINDS = ("model", "tool")
ALL_KINDS = ("model", "tool", "interrupt", "snapshot", "lifecycle")
_VOLATILE = ("seq", "at", "run_id", "generation_id", "replayed", "live_fallback", "duration_seconds")


# --------------------------------------------------------------------------- fingerprints


def _loose_hash(value: Any) -> str:
    """Deterministic hash of a JSON-like value that never fails (sorted keys)."""
    try:
        data = dumps(value, orjson.OPT_SORT_KEYS)
    except TypeError:
        data = dumps(value, orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def call_identity(record: Any) -> str:
    """The alignment key of a record.

    Tool and model records: their canonical key (``record.key``, or recomputed; a call
    whose identity cannot be canonicalized gets a deterministic loose hash of it).
    Other kinds: a hash of the record without ``seq``, timestamps and run ids.
    """
    if isinstance(record, (ToolRecord, ModelRecord)):
        if record.key:
            return record.key
        try:
            return record.compute_key()
        except CanonicalizationError:
            if isinstance(record, ToolRecord):
                return "loose:" + _loose_hash({"kind": "tool", "tool": record.tool, "arguments": record.arguments})
            return "loose:" + _loose_hash({"kind": "model", "model": record.model, **record.request.identity()})
    body = record.to_json_obj()
    for k in _VOLATILE:
        body.pop(k, None)
    return "record:" + _loose_hash(body)


def result_fingerprint(record: Any) -> str:
    """Hash of what a call *answered*: a tool's ``result``; a model's response message,
    finish reason and error (not usage or duration). Other kinds: ``""``."""
    if isinstance(record, ToolRecord):
        return _loose_hash(record.result.to_json_obj())
    if isinstance(record, ModelRecord):
        resp = record.response
        return _loose_hash(
            {
                "message": resp.message.to_json_obj() if resp else None,
                "finish_reason": resp.finish_reason if resp else None,
                "error": record.error.to_json_obj() if record.error else None,
            }
        )
    return ""


def _js(obj: Any) -> bytes:
    """pydantic's own JSON of a model (field order fixed by the model; dict order as held);
    for a value nested deeper than pydantic-core serializes (254 levels), the same fields
    as JSON-mode data written by :func:`core.record.nesting.dumps`."""
    try:
        out: bytes = obj.__pydantic_serializer__.to_json(obj)
    except ValueError as exc:  # PydanticSerializationError
        if not is_depth_failure(exc):
            raise
        out = dumps(json_mode_dump(obj.model_dump))
    return out


def _same_result(ra: Any, rb: Any) -> bool:
    """Equal answers? Identical objects or identical serialized bytes prove it at once
    (fast path); otherwise the key-order-independent :func:`result_fingerprint` decides."""
    if isinstance(ra, ToolRecord) and isinstance(rb, ToolRecord):
        x, y = ra.result, rb.result
        if x is y or _js(x) == _js(y):
            return True
    elif isinstance(ra, ModelRecord) and isinstance(rb, ModelRecord):
        pa, pb = ra.response, rb.response
        ea, eb = ra.error, rb.error
        same_resp = (pa is pb) or (
            pa is not None
            and pb is not None
            and pa.finish_reason == pb.finish_reason
            and (pa.message is pb.message or _js(pa.message) == _js(pb.message))
        )
        same_err = (ea is eb) or (ea is not None and eb is not None and _js(ea) == _js(eb))
        if same_resp and same_err:
            return True
    else:
        return True  # other kinds are matched by their whole content
    return result_fingerprint(ra) == result_fingerprint(rb)


def _name(record: Any) -> str | None:
    if isinstance(record, ToolRecord):
        return record.tool
    if isinstance(record, ModelRecord):
        return record.model
    if record.kind == "lifecycle":
        event: str = record.event
        return event
    return None


# --------------------------------------------------------------------------- trace diff


@dataclass(frozen=True)
class FirstDivergence:
    """Where two runs first differ: ``base_seq``, ``replay_seq`` (record seqs, either may
    be ``None`` at the end of a run) and ``dimension`` (one of :data:`DIMENSIONS`)."""

    base_seq: int | None
    replay_seq: int | None
    dimension: str

    def to_json(self) -> dict[str, Any]:
        """``{"base_seq", "replay_seq", "dimension"}`` — the replay record's field names."""
        return {"base_seq": self.base_seq, "replay_seq": self.replay_seq, "dimension": self.dimension}


@dataclass(frozen=True)
class TraceOp:
    """One aligned position.

    ``op`` ∈ same|changed|removed|inserted; ``kind`` and ``name`` (tool name, model name,
    lifecycle event) of the record(s); ``base_seq``/``other_seq`` (``None`` on the side
    that has no record); ``dimension`` (``None`` for ``same``); ``counterpart_seq`` — for
    a removed/inserted record paired inside a gap, the seq of its pair on the other side.
    """

    op: str
    kind: str
    name: str | None
    base_seq: int | None
    other_seq: int | None
    dimension: str | None = None
    counterpart_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "op": self.op,
            "kind": self.kind,
            "name": self.name,
            "base_seq": self.base_seq,
            "other_seq": self.other_seq,
        }
        if self.dimension is not None:
            d["dimension"] = self.dimension
        if self.counterpart_seq is not None:
            d["counterpart_seq"] = self.counterpart_seq
        return d


class _Run:
    """Aligned records ``a[i:i+n]`` / ``b[j:j+n]`` (equal keys); ``changed``: the offsets
    (increasing) of the pairs whose answers differ."""

    __slots__ = ("changed", "i", "j", "n")

    def __init__(self, i: int, j: int, n: int, changed: list[int]) -> None:
        self.i, self.j, self.n, self.changed = i, j, n, changed

    def __len__(self) -> int:
        return self.n


class _Gap:
    """Records ``a[i:i+ni]`` removed and ``b[j:j+nj]`` inserted at one place; ``ops``:
    their ops (:func:`_gap_ops`, or rows given by a caller), made on first read."""

    __slots__ = ("i", "j", "ni", "nj", "ops")

    def __init__(self, i: int, j: int, ni: int, nj: int, ops: list[TraceOp] | None = None) -> None:
        self.i, self.j, self.ni, self.nj, self.ops = i, j, ni, nj, ops

    def __len__(self) -> int:
        return self.ni + self.nj if self.ops is None else len(self.ops)


_Segment = _Run | _Gap
_ITER_CHUNK = 4096


class TraceOps(Sequence[TraceOp]):
    """The ops of a trace diff as a read-only sequence, each :class:`TraceOp` made when
    read: the diff keeps runs of aligned records and gaps, not one object per record (a
    screen reads the rows it shows; 100,000 ops made at once cost ~0.1 s).

    Indexing (negative indexes too), slicing (a ``list``), iteration, ``len`` and ``==``
    (with a list, a tuple of ops or another :class:`TraceOps`: the same ops in order)
    behave as on ``list(self)``. Cost: ``len`` O(1); one op O(log S) for S segments;
    iteration O(N) in chunks. Thread-safe to read (a gap's ops are cached on first read;
    two readers may both make them, alike).
    """

    __slots__ = ("_a", "_b", "_segs", "_starts", "_len")

    def __init__(self, a: list[Any], b: list[Any], segments: list[_Segment]) -> None:
        self._a, self._b = a, b
        self._segs = [s for s in segments if len(s)]
        self._starts: list[int] = []
        total = 0
        for s in self._segs:
            self._starts.append(total)
            total += len(s)
        self._len = total

    # -- the sequence

    def __len__(self) -> int:
        return self._len

    def _ops_of(self, seg: _Segment, lo: int, hi: int) -> list[TraceOp]:
        """Ops ``lo:hi`` (offsets inside ``seg``)."""
        if isinstance(seg, _Gap):
            if seg.ops is None:
                seg.ops = _gap_ops(self._a[seg.i : seg.i + seg.ni], self._b[seg.j : seg.j + seg.nj])
            return seg.ops[lo:hi]
        same = [True] * (hi - lo)
        ch = seg.changed
        for c in ch[bisect_left(ch, lo) : bisect_left(ch, hi)]:
            same[c - lo] = False
        return _equal_ops(self._a[seg.i + lo : seg.i + hi], self._b[seg.j + lo : seg.j + hi], same)

    def _range(self, start: int, stop: int) -> list[TraceOp]:
        out: list[TraceOp] = []
        if start >= stop:
            return out
        k = bisect_right(self._starts, start) - 1
        while start < stop and k < len(self._segs):
            s0 = self._starts[k]
            seg = self._segs[k]
            hi = min(stop - s0, len(seg))
            out.extend(self._ops_of(seg, start - s0, hi))
            start = s0 + hi
            k += 1
        return out

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step == 1:
                return self._range(start, stop)
            return [self._range(t, t + 1)[0] for t in range(start, stop, step)]
        t = index.__index__()
        if t < 0:
            t += self._len
        if not 0 <= t < self._len:
            raise IndexError("trace op index out of range")
        return self._range(t, t + 1)[0]

    def __iter__(self) -> Iterator[TraceOp]:
        for seg in self._segs:
            for lo in range(0, len(seg), _ITER_CHUNK):
                yield from self._ops_of(seg, lo, min(lo + _ITER_CHUNK, len(seg)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TraceOps, list, tuple)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<TraceOps: {self._len} ops>"

    # -- what callers read without every op

    def segments(self) -> list[_Segment]:
        """The runs and gaps, in order (for :mod:`core.analysis.compare`)."""
        return list(self._segs)

    def records(self) -> tuple[list[Any], list[Any]]:
        """The aligned records of both sides (the lists the segments index)."""
        return self._a, self._b

    def changes(self) -> list[TraceOp]:
        """The ops that are not ``same``, in order (only those are made)."""
        out: list[TraceOp] = []
        for seg in self._segs:
            if isinstance(seg, _Gap):
                out.extend(op for op in self._ops_of(seg, 0, len(seg)) if op.op != "same")
            else:
                for c in seg.changed:
                    out.extend(self._ops_of(seg, c, c + 1))
        return out

    def difference_rows(self) -> list[int]:
        """The indices of the ops that are not ``same``, in order."""
        out: list[int] = []
        for s0, seg in zip(self._starts, self._segs):
            if isinstance(seg, _Gap):
                if seg.ops is None:
                    out.extend(range(s0, s0 + len(seg)))
                else:
                    out.extend(s0 + t for t, op in enumerate(seg.ops) if op.op != "same")
            else:
                out.extend(s0 + c for c in seg.changed)
        return out

    def counts(self) -> dict[str, int]:
        """Ops per ``op`` (``same``, ``changed``, ``removed``, ``inserted``)."""
        counts = {"same": 0, "changed": 0, "removed": 0, "inserted": 0}
        for seg in self._segs:
            if isinstance(seg, _Gap):
                if seg.ops is None:
                    counts["removed"] += seg.ni
                    counts["inserted"] += seg.nj
                else:
                    for op in seg.ops:
                        counts[op.op] += 1
            else:
                counts["changed"] += len(seg.changed)
                counts["same"] += seg.n - len(seg.changed)
        return counts

    def first_divergence(self) -> FirstDivergence | None:
        """The first divergence of these ops (:func:`_first_divergence`), reading only
        the first segment that differs and the op after it."""
        for k, seg in enumerate(self._segs):
            if isinstance(seg, _Run):
                if seg.changed:
                    return _first_divergence(self._ops_of(seg, seg.changed[0], seg.changed[0] + 1), [], [], [])
                continue
            after = self._segs[k + 1] if k + 1 < len(self._segs) else None
            nxt = (self._a[after.i], self._b[after.j]) if isinstance(after, _Run) else None
            if seg.ops is None:
                return _gap_first_divergence(self._a[seg.i : seg.i + seg.ni], self._b[seg.j : seg.j + seg.nj], nxt)
            ops = list(seg.ops)
            if after is not None:
                ops.extend(self._ops_of(after, 0, 1))
            return _first_divergence(ops, [], [], [])
        return None


@dataclass
class TraceDiff:
    """Result of :func:`trace_diff`: ``ops`` in order (a :class:`TraceOps` from
    :func:`trace_diff`: made when read), ``first_divergence`` (``None`` when the runs are
    the same), ``counts`` per op, and the aligned record counts."""

    ops: Sequence[TraceOp]
    first_divergence: FirstDivergence | None
    counts: dict[str, int]
    base_records: int
    other_records: int
    kinds: tuple[str, ...] = CALL_KINDS

    @property
    def identical(self) -> bool:
        """True when every aligned record is ``same``."""
        return self.first_divergence is None

    def changes(self) -> list[TraceOp]:
        """The ops that are not ``same``."""
        if isinstance(self.ops, TraceOps):
            return self.ops.changes()
        return [o for o in self.ops if o.op != "same"]

    def to_json(self, *, include_same: bool = True) -> dict[str, Any]:
        """JSON form: ``first_divergence`` (object or null), ``counts``, ``kinds``,
        ``base_records``, ``other_records`` and ``ops`` (all, or only changes)."""
        return {
            "first_divergence": self.first_divergence.to_json() if self.first_divergence else None,
            "counts": dict(self.counts),
            "kinds": list(self.kinds),
            "base_records": self.base_records,
            "other_records": self.other_records,
            "ops": [o.to_json() for o in (self.ops if include_same else self.changes())],
        }


def _records(run: Recording | Sequence[Any], kinds: Sequence[str]) -> list[Any]:
    """The records of ``run`` whose ``kind`` is one of ``kinds``, in order. When every
    record is a tool or model call and both kinds are asked for, the list itself (its
    types read in C, no record's fields)."""
    recs = run.records if isinstance(run, Recording) else list(run)
    if "tool" in kinds and "model" in kinds and set(map(type, recs)) <= _CALL_TYPE_SET:
        return list(recs)
    return [r for r in recs if r.kind in kinds]


def _pair_key(r: Any) -> tuple[str, str]:
    """What a removed record may pair with: a tool call with a call of the same tool
    (two different tools are a missing and an extra call, not changed arguments), a
    model call with any model call."""
    return (r.kind, r.tool) if r.kind == "tool" else (r.kind, "")


def _gap_ops(base_recs: list[Any], other_recs: list[Any]) -> list[TraceOp]:
    """Ops of one gap: removed base records then inserted ones, pairs linked (model
    calls pair with model calls, tool calls with calls of the *same tool*, in order)."""
    by_kind_b: dict[tuple[str, str], list[Any]] = {}
    for r in other_recs:
        by_kind_b.setdefault(_pair_key(r), []).append(r)
    pair_of_base: dict[int, Any] = {}
    pair_of_other: dict[int, Any] = {}
    used: dict[tuple[str, str], int] = {}
    for r in base_recs:
        if r.kind not in ("model", "tool"):
            continue
        key = _pair_key(r)
        lst = by_kind_b.get(key, [])
        k = used.get(key, 0)
        if k < len(lst):
            pair_of_base[r.seq] = lst[k]
            pair_of_other[lst[k].seq] = r
            used[key] = k + 1
    ops: list[TraceOp] = []
    for r in base_recs:
        p = pair_of_base.get(r.seq)
        if p is not None:
            dim = "request" if r.kind == "model" else "tool arguments"
            ops.append(TraceOp("removed", r.kind, _name(r), r.seq, None, dim, p.seq))
        else:
            ops.append(TraceOp("removed", r.kind, _name(r), r.seq, None, "missing"))
    for r in other_recs:
        p = pair_of_other.get(r.seq)
        if p is not None:
            dim = "request" if r.kind == "model" else "tool arguments"
            ops.append(TraceOp("inserted", r.kind, _name(r), None, r.seq, dim, p.seq))
        else:
            ops.append(TraceOp("inserted", r.kind, _name(r), None, r.seq, "extra"))
    return ops


def _gap_first_divergence(
    base_recs: list[Any], other_recs: list[Any], after: tuple[Any, Any] | None
) -> FirstDivergence | None:
    """``_first_divergence(_gap_ops(base_recs, other_recs) + [the op of after])`` without
    the gap's ops: its first op is the first removed record (paired with the first
    record of the same pair key on the other side, :func:`_gap_ops`), else the first
    inserted one (nothing to pair with); ``after``: the aligned pair after the gap."""
    if base_recs:
        r = base_recs[0]
        if r.kind in ("model", "tool"):
            key = _pair_key(r)
            p = next((q for q in other_recs if _pair_key(q) == key), None)
            if p is not None:
                return FirstDivergence(r.seq, p.seq, "request" if r.kind == "model" else "tool arguments")
        if other_recs:
            return FirstDivergence(r.seq, other_recs[0].seq, "missing")
        return FirstDivergence(r.seq, after[1].seq if after else None, "missing")
    if other_recs:
        return FirstDivergence(after[0].seq if after else None, other_recs[0].seq, "extra")
    return None


def trace_diff(
    base: Recording | Sequence[Any],
    other: Recording | Sequence[Any],
    *,
    kinds: Sequence[str] = CALL_KINDS,
    max_edits: int = DEFAULT_MAX_EDITS,
) -> TraceDiff:
    """Align two runs (recordings or record lists) by canonical key; see module docstring.

    ``kinds`` selects which record kinds take part (default: model and tool calls;
    :data:`ALL_KINDS` adds interrupts, snapshots and lifecycle events, matched by their
    whole content). ``max_edits`` bounds the exact Myers search (:mod:`core.analysis.align`).
    Cost: O(N + M + D²) for D differing records; the O(N + M) part runs in C (runs of
    equal keys found by comparing list slices, answers of aligned pairs compared a chunk
    at a time, at once when both sides hold the same record or answer object); the ops
    are a :class:`TraceOps`, each op made when read (see docs/performance.md, "Trace
    diff at 100k records"). The result is the one of
    :func:`core.analysis.align.align` and :func:`core.analysis.align.opcodes` on the
    same keys, pair by pair (a property test holds it to that).
    Raises ``ValueError`` for an unknown kind or a negative ``max_edits``.
    """
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        raise ValueError(f"unknown record kind(s) {bad}; expected some of {list(ALL_KINDS)}")
    if max_edits < 0:
        raise ValueError("max_edits must be >= 0")
    a = _records(base, kinds)
    b = _records(other, kinds)
    ka = _identities(a)
    kb = _identities(b)
    runs = _align_keys(ka, kb, max_edits)
    segments: list[_Segment] = []
    i = j = 0
    for ri, rj, n in [*runs, (len(a), len(b), 0)]:
        if ri > i or rj > j:
            segments.append(_Gap(i, j, ri - i, rj - j))
        if n:
            same = _same_flags(a[ri : ri + n], b[rj : rj + n])
            segments.append(_Run(ri, rj, n, list(compress(range(n), map(not_, same)))))
        i, j = ri + n, rj + n
    ops = TraceOps(a, b, segments)
    return TraceDiff(ops, ops.first_divergence(), ops.counts(), len(a), len(b), tuple(kinds))


def first_divergence(
    base: Recording | Sequence[Any],
    other: Recording | Sequence[Any],
    *,
    kinds: Sequence[str] = CALL_KINDS,
    max_edits: int = DEFAULT_MAX_EDITS,
) -> FirstDivergence | None:
    """``trace_diff(base, other, kinds=kinds, max_edits=max_edits).first_divergence``
    without the ops of the rest: the answers are compared only up to the first pair that
    differs, and ops are made only for the first gap. Raises as :func:`trace_diff`."""
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        raise ValueError(f"unknown record kind(s) {bad}; expected some of {list(ALL_KINDS)}")
    if max_edits < 0:
        raise ValueError("max_edits must be >= 0")
    a = _records(base, kinds)
    b = _records(other, kinds)
    i = j = 0
    for ri, rj, n in [*_align_keys(_identities(a), _identities(b), max_edits), (len(a), len(b), 0)]:
        if ri > i or rj > j:  # the record pair after the gap: "the next record" of a missing or extra one
            return _gap_first_divergence(a[i:ri], b[j:rj], (a[ri], b[rj]) if n else None)
        s, step = 0, _CHUNK  # growing steps: a divergence near the start costs little
        while s < n:
            xa, xb = a[ri + s : ri + min(n, s + step)], b[rj + s : rj + min(n, s + step)]
            same = _same_flags(xa, xb)
            if not all(same):
                return _first_divergence(_equal_ops(xa, xb, same), a, b, [])
            s, step = s + step, min(step * 4, 1 << 16)
        i, j = ri + n, rj + n
    return None


def _trace_diff_plain(
    base: Recording | Sequence[Any],
    other: Recording | Sequence[Any],
    *,
    kinds: Sequence[str] = CALL_KINDS,
    max_edits: int = DEFAULT_MAX_EDITS,
) -> TraceDiff:
    """The reference :func:`trace_diff`: every identity from :func:`call_identity`, the
    alignment of :func:`core.analysis.align.align`, every aligned pair's answers compared
    by :func:`_same_result`, one by one. Kept for the tests, which hold the fast path to
    the same ops, counts and first divergence."""
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        raise ValueError(f"unknown record kind(s) {bad}; expected some of {list(ALL_KINDS)}")
    a = _records(base, kinds)
    b = _records(other, kinds)
    ka = [call_identity(r) for r in a]
    kb = [call_identity(r) for r in b]
    if ka <= kb:
        matches = align(ka, kb, max_edits=max_edits)
    else:
        matches = [(i, j) for j, i in align(kb, ka, max_edits=max_edits)]
    ops: list[TraceOp] = []
    for tag, i1, i2, j1, j2 in opcodes(matches, len(a), len(b)):
        if tag == "equal":
            for t in range(i2 - i1):
                ra, rb = a[i1 + t], b[j1 + t]
                if _same_result(ra, rb):
                    ops.append(TraceOp("same", ra.kind, _name(ra), ra.seq, rb.seq))
                else:
                    dim = "response" if ra.kind == "model" else ("tool result" if ra.kind == "tool" else None)
                    ops.append(TraceOp("changed", ra.kind, _name(ra), ra.seq, rb.seq, dim))
        else:
            ops.extend(_gap_ops(a[i1:i2], b[j1:j2]))
    counts = {"same": 0, "changed": 0, "removed": 0, "inserted": 0}
    for o in ops:
        counts[o.op] += 1
    return TraceDiff(ops, _first_divergence(ops, a, b, matches), counts, len(a), len(b), tuple(kinds))


# --------------------------------------------------------------------------- fast path: identities

_CALL_TYPES = (ToolRecord, ModelRecord)
_KEY = attrgetter("key")
_CALL_TYPE_SET: frozenset[type] = frozenset(_CALL_TYPES)
_KIND = attrgetter("kind")
_SEQ = attrgetter("seq")


def _identities(recs: list[Any]) -> list[str]:
    """``[call_identity(r) for r in recs]``, reading the sealed ``key`` of a call directly
    (in C when every record is a call) and calling :func:`call_identity` only for the
    records without one (no key, or not a call)."""
    keys: list[Any] = []
    for s in range(0, len(recs), _BLOCK):  # a block at a time: its keys are checked while cached
        block = recs[s : s + _BLOCK]
        if set(map(type, block)) <= _CALL_TYPE_SET:
            got = list(map(_KEY, block))
        else:
            got = [r.key if isinstance(r, _CALL_TYPES) else None for r in block]
        if None in got or "" in got:
            for idx, k in enumerate(got):
                if not k:
                    got[idx] = call_identity(block[idx])
        keys += got
    return keys


# --------------------------------------------------------------------------- fast path: alignment
#
# The same algorithm as core.analysis.align (trim the common prefix and suffix, drop keys
# found on one side only, bounded Myers, patience anchors), step for step, so the matches
# are the same; what differs is how equal runs are found. align() walks them one key at a
# time in Python; here a run is found by comparing list slices (C, item by item: the
# same string object at once, else by length and memcmp), galloping then halving, and the
# matches are kept as runs ``(i, j, n)`` — a[i + t] == b[j + t] for t < n — never as one
# tuple per pair. The keys are the identities themselves: equal strings are equal keys,
# as align()'s interned ids are. A key is interned where it is made or loaded
# (core.record.canonical.intern_key), so two runs' equal keys are usually one object and
# a slice comparison, a set lookup or list.index compares pointers without reading the
# strings; interning them here would cost a pass over 100,000 cold strings, more than the
# search. Keys that are not interned (set by hand) still compare equal by content.

_GALLOP = 8


def _run_len(a: list[str], i: int, b: list[str], j: int, limit: int) -> int:
    """Length of the longest common prefix of ``a[i:i+limit]`` and ``b[j:j+limit]``."""
    if limit <= 0 or a[i] != b[j]:
        return 0
    n, step = 1, _GALLOP
    while n < limit:
        c = min(step, limit - n)
        if a[i + n : i + n + c] == b[j + n : j + n + c]:
            n += c
            step += step
            continue
        while c > 1:  # the first difference is in [n, n + c): halve
            h = c >> 1
            if a[i + n : i + n + h] == b[j + n : j + n + h]:
                n += h
                c -= h
            else:
                c = h
        return n
    return n


def _run_back(a: list[str], i: int, b: list[str], j: int, limit: int) -> int:
    """Length of the longest common suffix of ``a[i-limit:i]`` and ``b[j-limit:j]``."""
    if limit <= 0 or a[i - 1] != b[j - 1]:
        return 0
    n, step = 1, _GALLOP
    while n < limit:
        c = min(step, limit - n)
        if a[i - n - c : i - n] == b[j - n - c : j - n]:
            n += c
            step += step
            continue
        while c > 1:
            h = c >> 1
            if a[i - n - h : i - n] == b[j - n - h : j - n]:
                n += h
                c -= h
            else:
                c = h
        return n
    return n


def _match_runs(a: list[str], b: list[str], max_edits: int) -> list[tuple[int, int, int]]:
    """The matches of ``align(a, b, max_edits=max_edits)`` as maximal runs ``(i, j, n)``."""
    out: list[tuple[int, int, int]] = []
    _range_runs(a, 0, len(a), b, 0, len(b), max_edits, out)
    merged: list[tuple[int, int, int]] = []
    for i, j, n in out:
        if merged:
            pi, pj, pn = merged[-1]
            if pi + pn == i and pj + pn == j:
                merged[-1] = (pi, pj, pn + n)
                continue
        merged.append((i, j, n))
    return merged


def _align_keys(ka: list[str], kb: list[str], max_edits: int) -> list[tuple[int, int, int]]:
    """The matches of trace_diff's alignment of the identities ``ka`` and ``kb`` as runs:
    ``align(ka, kb)`` when ``ka <= kb`` (as lists of strings), else ``align(kb, ka)``
    mirrored — the canonical orientation, so the result depends on the pair only."""
    if ka <= kb:
        return _match_runs(ka, kb, max_edits)
    return [(i, j, n) for j, i, n in _match_runs(kb, ka, max_edits)]


def _range_runs(
    a: list[str], a0: int, a1: int, b: list[str], b0: int, b1: int, max_edits: int, out: list[tuple[int, int, int]]
) -> None:
    """``core.analysis.align._align_range`` on runs."""
    p = _run_len(a, a0, b, b0, min(a1 - a0, b1 - b0))
    if p:
        out.append((a0, b0, p))
        a0 += p
        b0 += p
    s = _run_back(a, a1, b, b1, min(a1 - a0, b1 - b0))
    m_a1, m_b1 = a1 - s, b1 - s
    if a0 < m_a1 and b0 < m_b1:
        mid_a, mid_b = a[a0:m_a1], b[b0:m_b1]
        only_a = set(mid_a)  # one set built, the other side only looked up (C)
        only_b = set(filterfalse(only_a.__contains__, mid_b))
        only_a.difference_update(mid_b)
        if not only_a and not only_b:
            _middle_runs(a, a0, m_a1, b, b0, m_b1, max_edits, out)
        else:
            # keys found on one side only can never match: align the rest (align.py)
            ra, drops_a = _without(mid_a, only_a)
            rb, drops_b = _without(mid_b, only_b)
            if ra and rb:
                tmp: list[tuple[int, int, int]] = []
                _range_runs(ra, 0, len(ra), rb, 0, len(rb), max_edits, tmp)
                _lift(tmp, a0, drops_a, b0, drops_b, out)
    if s:
        out.append((m_a1, m_b1, s))


#: up to this many keys dropped from one side, each is found by a scan of its own
_FEW_DROPPED = 8


def _without(keys: list[str], dropped: set[str]) -> tuple[list[str], list[int]]:
    """``keys`` without those in ``dropped``, and the positions left out (increasing)."""
    if not dropped:
        return keys, []
    if len(dropped) > _FEW_DROPPED:
        mask = list(map(dropped.__contains__, keys))
        return list(compress(keys, map(not_, mask))), list(compress(range(len(keys)), mask))
    # a few keys: each found by list.index (C), the rest copied as slices between them
    drops: list[int] = []
    for x in dropped:
        at = keys.index(x)
        while True:
            drops.append(at)
            try:
                at = keys.index(x, at + 1)
            except ValueError:
                break
    drops.sort()
    kept: list[str] = []
    prev = 0
    for d in drops:
        kept += keys[prev:d]
        prev = d + 1
    kept += keys[prev:]
    return kept, drops


def _lift(
    runs: list[tuple[int, int, int]],
    a0: int,
    drops_a: list[int],
    b0: int,
    drops_b: list[int],
    out: list[tuple[int, int, int]],
) -> None:
    """Runs over the kept keys → runs over the original positions (``a0`` / ``b0`` plus
    the kept index plus the dropped positions before it); a run is cut where a dropped
    key lay between two of its keys."""
    # at[t]: the kept index just after the t-th dropped position (non-decreasing)
    at_a = [d - t for t, d in enumerate(drops_a)]
    at_b = [d - t for t, d in enumerate(drops_b)]
    for x, y, n in runs:
        cuts = {c - x for c in at_a[bisect_right(at_a, x) : bisect_left(at_a, x + n)]}
        cuts.update(c - y for c in at_b[bisect_right(at_b, y) : bisect_left(at_b, y + n)])
        start = 0
        for c in [*sorted(cuts), n]:
            f, g = x + start, y + start
            out.append((a0 + f + bisect_right(at_a, f), b0 + g + bisect_right(at_b, g), c - start))
            start = c


def _middle_runs(
    a: list[str], a0: int, a1: int, b: list[str], b0: int, b1: int, max_edits: int, out: list[tuple[int, int, int]]
) -> None:
    mid = _myers_runs(a, a0, a1, b, b0, b1, max_edits)
    if mid is not None:
        out.extend(mid)
    else:
        _patience_runs(a, a0, a1, b, b0, b1, max_edits, out)


def _myers_runs(
    a: list[str], a0: int, a1: int, b: list[str], b0: int, b1: int, max_edits: int
) -> list[tuple[int, int, int]] | None:
    """``core.analysis.align._myers`` with each snake found by :func:`_run_len`."""
    n = a1 - a0
    m = b1 - b0
    max_d = min(n + m, max_edits)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace: list[list[int]] = []
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            if x < n and y < m:
                x += _run_len(a, a0 + x, b, b0 + y, min(n - x, m - y))
            v[off + k] = x
            if x >= n and x - k >= m:
                trace.append(v[off - d : off + d + 1])
                return _backtrack_runs(trace, n, m, a0, b0)
        trace.append(v[off - d : off + d + 1])
    return None


def _backtrack_runs(trace: list[list[int]], n: int, m: int, a0: int, b0: int) -> list[tuple[int, int, int]]:
    runs: list[tuple[int, int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        prev = trace[d - 1]
        k = x - y
        if k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1]):
            pk = k + 1
            px = prev[pk + d - 1]
            sx = px
        else:
            pk = k - 1
            px = prev[pk + d - 1]
            sx = px + 1
        if x > sx:
            runs.append((a0 + sx, b0 + sx - k, x - sx))
        x, y = px, px - pk
    t = min(x, y)
    if t > 0:
        runs.append((a0 + x - t, b0 + y - t, t))
    runs.reverse()
    return runs


def _patience_runs(
    a: list[str], a0: int, a1: int, b: list[str], b0: int, b1: int, max_edits: int, out: list[tuple[int, int, int]]
) -> None:
    """``core.analysis.align._patience`` on runs."""
    count_a = Counter(a[a0:a1])
    count_b = Counter(b[b0:b1])
    pos_b = {x: j for j, x in enumerate(b[b0:b1], b0)}
    cand = [(i, pos_b[x]) for i, x in enumerate(a[a0:a1], a0) if count_a[x] == 1 and count_b.get(x) == 1]
    anchors = _lis(cand)
    if not anchors:
        return
    pi, pj = a0, b0
    for i, j in anchors:
        _range_runs(a, pi, i, b, pj, j, max_edits, out)
        out.append((i, j, 1))
        pi, pj = i + 1, j + 1
    _range_runs(a, pi, a1, b, pj, b1, max_edits, out)


# --------------------------------------------------------------------------- fast path: answers
#
# Aligned pairs are compared a chunk at a time: the answers of a chunk's calls are written
# by orjson in one call per side (our own models as their fields, by ``_fields``) and the
# bytes compared. Equal bytes prove equal answers as _same_result defines them: orjson
# writes exact JSON types only (subclasses, dataclasses and datetimes are refused through
# the passthrough options, other objects by ``_fields``) with the fields and keys in the
# order held, and what it writes alike (NaN, ±Infinity and None as null; a tuple and a list
# as an array; an enum as its value) pydantic writes alike too, so the pydantic JSON that
# _same_result compares is equal as well. A chunk whose bytes differ, or that orjson
# refuses, is compared pair by pair with _same_result itself.

_CHUNK = 256
#: pairs whose answers are compared together: the steps of the comparison (types, answer
#: objects, their fields, their bytes) each walk the block, which stays in the CPU cache
#: between steps; over a whole run of 100,000 records every step would fetch each record
#: from memory again (about a quarter of the whole diff's time; docs/performance.md)
_BLOCK = 1024
_OWN_MODELS = frozenset({ToolResult, ErrorInfo, ChatMessage, ToolCall})
_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
_DICT = attrgetter("__dict__")
_RESULT = attrgetter("result")
_RESPONSE = attrgetter("response")
_MESSAGE = attrgetter("message")
_FINISH = attrgetter("finish_reason")
_ERROR = attrgetter("error")
_PLAIN_KINDS = frozenset({InterruptRecord, SnapshotRecord, LifecycleRecord})


def _fields(obj: Any) -> Any:
    """orjson's ``default``: one of our own models as its fields (what pydantic writes for
    it, in the same order); anything else is refused."""
    if type(obj) in _OWN_MODELS:
        return obj.__dict__
    raise TypeError


def _chunk_bytes(objs: list[Any]) -> bytes | None:
    try:
        return orjson.dumps(objs, _fields, option=_ORJSON_STRICT)
    except TypeError:  # orjson.JSONEncodeError: a value it refuses, or nested too deep
        return None


def _equal_answers(xs: list[Any], ys: list[Any]) -> list[bool]:
    """For each pair of answers (lists of the same length): proven equal at C speed?
    ``False`` means "not proven" (the caller asks _same_result)."""
    out = list(map(is_, xs, ys))
    if all(out):
        return out
    if any(out):  # the same objects are equal: write only the others
        rest = list(compress(range(len(xs)), map(not_, out)))
        for t, ok in zip(rest, _equal_answers(list(map(xs.__getitem__, rest)), list(map(ys.__getitem__, rest)))):
            out[t] = ok
        return out
    types = set(map(type, xs)) | set(map(type, ys))
    if len(types) == 1 and types <= _OWN_MODELS:  # one of our models: its fields, as _fields gives them
        xs, ys = list(map(_DICT, xs)), list(map(_DICT, ys))
    for s in range(0, len(xs), _CHUNK):
        cx, cy = xs[s : s + _CHUNK], ys[s : s + _CHUNK]
        bx = _chunk_bytes(cx)
        if bx is not None and bx == _chunk_bytes(cy):
            out[s : s + len(cx)] = [True] * len(cx)
            continue
        for t, (x, y) in enumerate(zip(cx, cy), s):  # one by one: which pairs differ
            if not out[t]:
                ex = _chunk_bytes([x])
                out[t] = ex is not None and ex == _chunk_bytes([y])
    return out


def _same_flags(xa: list[Any], xb: list[Any]) -> list[bool]:
    """``[_same_result(p, q) for p, q in zip(xa, xb)]`` for the records of one run of
    matched keys, a block of :data:`_BLOCK` pairs at a time (see :data:`_BLOCK`)."""
    if len(xa) <= _BLOCK:
        return _block_flags(xa, xb)
    out: list[bool] = []
    for s in range(0, len(xa), _BLOCK):
        out += _block_flags(xa[s : s + _BLOCK], xb[s : s + _BLOCK])
    return out


def _block_flags(xa: list[Any], xb: list[Any]) -> list[bool]:
    """:func:`_same_flags` of one block: a record paired with itself (a replay's events
    share the base's record objects) answers alike at once; the others' answers are
    compared by :func:`_distinct_flags`."""
    out = list(map(is_, xa, xb))
    if all(out):
        return out
    if not any(out):
        return _distinct_flags(xa, xb)
    rest = list(compress(range(len(xa)), map(not_, out)))
    for t, ok in zip(rest, _distinct_flags(list(map(xa.__getitem__, rest)), list(map(xb.__getitem__, rest)))):
        out[t] = ok
    return out


def _distinct_flags(xa: list[Any], xb: list[Any]) -> list[bool]:
    """:func:`_same_flags` with the answers compared by :func:`_equal_answers`."""
    types = list(map(type, xa))
    if types != list(map(type, xb)):
        return [_same_result(p, q) for p, q in zip(xa, xb)]
    out = [True] * len(xa)
    tools = list(compress(range(len(xa)), map(is_, types, repeat(ToolRecord))))
    models = list(compress(range(len(xa)), map(is_, types, repeat(ModelRecord))))
    if len(tools) + len(models) < len(xa):  # others: kinds matched by content, or foreign types
        for t, ty in enumerate(types):
            if ty is not ToolRecord and ty is not ModelRecord and ty not in _PLAIN_KINDS:
                out[t] = _same_result(xa[t], xb[t])
    if tools:
        ta = list(map(xa.__getitem__, tools))
        tb = list(map(xb.__getitem__, tools))
        proven = _equal_answers(list(map(_RESULT, ta)), list(map(_RESULT, tb)))
        for t in compress(range(len(tools)), map(not_, proven)):
            out[tools[t]] = _same_result(ta[t], tb[t])
    if models:
        ma = list(map(xa.__getitem__, models))
        mb = list(map(xb.__getitem__, models))
        pa, pb = list(map(_RESPONSE, ma)), list(map(_RESPONSE, mb))
        both: Sequence[int] = range(len(models))
        if not all(map(is_not, pa, repeat(None))) or not all(map(is_not, pb, repeat(None))):
            # a call without a response: _same_result decides
            both = [t for t in both if pa[t] is not None and pb[t] is not None]
            pa, pb = [pa[t] for t in both], [pb[t] for t in both]
        proven = _equal_answers(list(map(_MESSAGE, pa)), list(map(_MESSAGE, pb)))
        fa, fb = list(map(_FINISH, pa)), list(map(_FINISH, pb))
        ea = list(map(_ERROR, map(ma.__getitem__, both)))
        eb = list(map(_ERROR, map(mb.__getitem__, both)))
        if fa != fb or not all(map(is_, ea, eb)):  # pair by pair: same finish reason, same error object
            proven = list(map(all, zip(proven, map(eq, fa, fb), map(is_, ea, eb))))
        if len(both) == len(models):
            settled = proven
        else:
            settled = [False] * len(models)
            for t, ok in zip(both, proven):
                settled[t] = ok
        for t in compress(range(len(models)), map(not_, settled)):
            out[models[t]] = _same_result(ma[t], mb[t])
    return out


def _equal_ops(xa: list[Any], xb: list[Any], same: list[bool]) -> list[TraceOp]:
    """The ``same`` / ``changed`` ops of one run of matched records."""
    kinds = list(map(_KIND, xa))
    names = [
        r.tool if ty is ToolRecord else (r.model if ty is ModelRecord else _name(r)) for r, ty in zip(xa, map(type, xa))
    ]
    seq_a, seq_b = list(map(_SEQ, xa)), list(map(_SEQ, xb))
    ops = list(map(TraceOp, repeat("same"), kinds, names, seq_a, seq_b))
    for t in compress(range(len(same)), map(not_, same)):
        dim = "response" if kinds[t] == "model" else ("tool result" if kinds[t] == "tool" else None)
        ops[t] = TraceOp("changed", kinds[t], names[t], seq_a[t], seq_b[t], dim)
    return ops


def _first_divergence(
    ops: list[TraceOp], a: list[Any], b: list[Any], matches: list[tuple[int, int]]
) -> FirstDivergence | None:
    for idx, o in enumerate(ops):
        if o.op == "same":
            continue
        if o.op == "changed":
            return FirstDivergence(o.base_seq, o.other_seq, o.dimension or "tool result")
        if o.counterpart_seq is not None:
            if o.op == "removed":
                return FirstDivergence(o.base_seq, o.counterpart_seq, o.dimension or "missing")
            return FirstDivergence(o.counterpart_seq, o.other_seq, o.dimension or "extra")
        # the record at the same position on the other side: first of the gap, else next
        if o.op == "removed":
            other_seq = next((p.other_seq for p in ops[idx + 1 :] if p.other_seq is not None), None)
            return FirstDivergence(o.base_seq, other_seq, "missing")
        base_seq = next((p.base_seq for p in ops[idx + 1 :] if p.base_seq is not None), None)
        return FirstDivergence(base_seq, o.other_seq, "extra")
    return None


# --------------------------------------------------------------------------- payload diffs


@dataclass
class ToolDiff:
    """Arguments and result diffs of one aligned (or paired) tool pair."""

    base_seq: int
    other_seq: int
    tool: str
    other_tool: str
    arguments: list[Change] = field(default_factory=list)
    result: list[Change] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "base_seq": self.base_seq,
            "other_seq": self.other_seq,
            "tool": self.tool,
            "other_tool": self.other_tool,
            "arguments": [c.to_json() for c in self.arguments],
            "result": [c.to_json() for c in self.result],
        }


def _by_seq(run: Recording | Sequence[Any]) -> dict[int, Any]:
    recs = run.records if isinstance(run, Recording) else list(run)
    return {r.seq: r for r in recs}


def tool_diffs(
    base: Recording | Sequence[Any], other: Recording | Sequence[Any], trace: TraceDiff | None = None
) -> list[ToolDiff]:
    """Payload diffs of every ``changed`` tool op and every paired removed/inserted tool
    pair of ``trace`` (computed when not given), in base order. Same-result pairs are
    skipped (nothing to report)."""
    if trace is None:
        trace = trace_diff(base, other)
    ba, ob = _by_seq(base), _by_seq(other)
    out: list[ToolDiff] = []
    for o in trace.changes():
        if o.kind != "tool":
            continue
        if o.op == "changed":
            bs, os_ = o.base_seq, o.other_seq
        elif o.op == "removed" and o.counterpart_seq is not None:
            bs, os_ = o.base_seq, o.counterpart_seq
        else:
            continue
        assert bs is not None and os_ is not None  # changed / paired-removed tool ops have both seqs
        rb, ro = ba[bs], ob[os_]
        out.append(
            ToolDiff(
                bs,
                os_,
                rb.tool,
                ro.tool,
                payload_diff(rb.arguments, ro.arguments),
                payload_diff(rb.result.to_json_obj(), ro.result.to_json_obj()),
            )
        )
    return out


@dataclass
class StateDiff:
    """Diff of one snapshot's composition (``plugins``, ``tools``, ``capabilities``).

    ``status`` is ``changed``, ``same``, ``removed`` (only in the base) or ``added``
    (only in the other run)."""

    generation_id: str | None
    base_seq: int | None
    other_seq: int | None
    status: str
    changes: list[Change] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "generation_id": self.generation_id,
            "base_seq": self.base_seq,
            "other_seq": self.other_seq,
            "status": self.status,
            "changes": [c.to_json() for c in self.changes],
        }


def state_diff(base: Recording | Sequence[Any], other: Recording | Sequence[Any]) -> list[StateDiff]:
    """Diff snapshot compositions. Snapshots pair by ``generation_id`` when both have one,
    otherwise by their order among the unpaired snapshots."""
    sa = [r for r in _records(base, ("snapshot",)) if isinstance(r, SnapshotRecord)]
    sb = [r for r in _records(other, ("snapshot",)) if isinstance(r, SnapshotRecord)]
    by_gen_b = {r.generation_id: r for r in sb if r.generation_id is not None}
    paired: list[tuple[Any, Any]] = []
    used_b: set[int] = set()
    rest_a: list[Any] = []
    for r in sa:
        p = by_gen_b.get(r.generation_id) if r.generation_id is not None else None
        if p is not None and p.seq not in used_b:
            paired.append((r, p))
            used_b.add(p.seq)
        else:
            rest_a.append(r)
    rest_b = [r for r in sb if r.seq not in used_b]
    for r, p in zip(rest_a, rest_b):
        paired.append((r, p))
    out: list[StateDiff] = []
    for r, p in paired:
        ch = payload_diff(r.composition, p.composition)
        out.append(StateDiff(r.generation_id or p.generation_id, r.seq, p.seq, "changed" if ch else "same", ch))
    for r in rest_a[len(rest_b) :]:
        out.append(StateDiff(r.generation_id, r.seq, None, "removed"))
    for p in rest_b[len(rest_a) :]:
        out.append(StateDiff(p.generation_id, None, p.seq, "added"))
    out.sort(key=lambda s: (s.base_seq if s.base_seq is not None else float("inf"), s.other_seq or 0))
    return out


@dataclass
class OutputDiff:
    """Diff of two final outputs.

    ``mode`` is ``same``, ``text`` (``text_diff`` holds unified-diff lines), ``json``
    (``changes`` holds the structural changes) or ``missing`` (one side has no output).
    """

    mode: str
    base: Any
    other: Any
    text_diff: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.mode != "same"

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "changed": self.changed,
            "base": self.base,
            "other": self.other,
            "text_diff": self.text_diff,
            "changes": [c.to_json() for c in self.changes],
        }


def _as_json(value: Any) -> tuple[bool, Any]:
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                return True, orjson.loads(s)
            except orjson.JSONDecodeError:
                return False, value
        return False, value
    return True, value


def output_diff(base_output: Any, other_output: Any) -> OutputDiff:
    """Compare two final outputs (see :func:`core.analysis.metrics.final_output`).

    Strings that both parse as a JSON object/array, and non-string values, are diffed
    structurally (:func:`core.analysis.payload_diff.payload_diff`); other strings get a line diff
    (``difflib.unified_diff``, 2 lines of context). ``None`` on one side → ``missing``.
    """
    if base_output is None and other_output is None:
        return OutputDiff("same", None, None)
    if base_output is None or other_output is None:
        return OutputDiff("missing", base_output, other_output)
    ja, va = _as_json(base_output)
    jb, vb = _as_json(other_output)
    if ja and jb and not (isinstance(va, str) and isinstance(vb, str)):
        ch = payload_diff(va, vb)
        return OutputDiff("json" if ch else "same", base_output, other_output, changes=ch)
    ta = base_output if isinstance(base_output, str) else dumps(base_output).decode()
    tb = other_output if isinstance(other_output, str) else dumps(other_output).decode()
    if ta == tb:
        return OutputDiff("same", base_output, other_output)
    lines = list(
        difflib.unified_diff(ta.splitlines(), tb.splitlines(), fromfile="base", tofile="other", lineterm="", n=2)
    )
    return OutputDiff("text", base_output, other_output, text_diff=lines)


def iter_changed_seqs(trace: TraceDiff) -> Iterable[tuple[int | None, int | None]]:
    """``(base_seq, other_seq)`` of every op that is not ``same`` (for highlighting)."""
    for o in trace.changes():
        yield o.base_seq, (o.other_seq if o.other_seq is not None else o.counterpart_seq)
