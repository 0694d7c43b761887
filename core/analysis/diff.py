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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CanonicalizationError
from ..record.nesting import dumps, is_depth_failure, json_mode_dump
from ..record.recording import ModelRecord, Recording, SnapshotRecord, ToolRecord
from .align import DEFAULT_MAX_EDITS, align, opcodes
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
    "call_identity",
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


@dataclass
class TraceDiff:
    """Result of :func:`trace_diff`: ``ops`` in order, ``first_divergence`` (``None``
    when the runs are the same), ``counts`` per op, and the aligned record counts."""

    ops: list[TraceOp]
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
    recs = run.records if isinstance(run, Recording) else list(run)
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
    Cost: O(N + M + D²) for D differing records. Raises ``ValueError`` for an unknown kind.
    """
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        raise ValueError(f"unknown record kind(s) {bad}; expected some of {list(ALL_KINDS)}")
    a = _records(base, kinds)
    b = _records(other, kinds)
    ka = [call_identity(r) for r in a]
    kb = [call_identity(r) for r in b]
    # canonical orientation → the alignment depends only on the unordered pair
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
    for o in trace.ops:
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
    for o in trace.ops:
        if o.op != "same":
            yield o.base_seq, (o.other_seq if o.other_seq is not None else o.counterpart_seq)
