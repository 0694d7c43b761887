"""Format version 3: the message pool, the record index, and reading a record on demand.

A version-3 file is one JSON document (docs/format.md § "Version 3"). It holds the same
logical records as version 2 — the same keys and the same ``digest``, both defined on the
records with every reference resolved — in an encoding that stores each distinct value
once and can be read piece by piece:

* ``pool``: an object from a **pool id** to a value written once, in its RFC 8785
  canonical JSON. The id is the first 16 hex digits of the SHA-256 of those bytes (all 64
  when two values of one file share the first 16). The writer pools every chat message of
  a model request and of a response, and each tool result ``content`` whose canonical
  JSON is :data:`POOL_MIN_BYTES` or longer.
* a **reference** ``{"$pool": "<id>"}`` stands for the pooled value wherever it appears in
  a record. A record's own object with that one member (recorded content shaped like a
  reference) is itself pooled, so a reference is never ambiguous. Pool values are
  literal: nothing in the pool is resolved.
* each record is written in canonical JSON (with its references), one per line;
* ``index``: the last member, columns with one entry per record — ``seq``, ``kind``,
  ``name``, ``status``, tokens, ``duration``, ``at`` (seconds since the epoch),
  ``run_id``, the tool-call ids answered or requested, and each record's byte range —
  plus the byte range of every pool value. The header's leading members
  ``index_offset``, ``index_length`` and ``header_end`` are written at a fixed width
  (:data:`OFFSET_WIDTH` characters, padded with spaces), so a reader finds the header
  and the index from the first bytes of the file without parsing the rest; the index
  gives the byte range of each column (:func:`layout_index`), so a reader parses only
  the columns it needs (:class:`RecordIndex`).

A file rewritten by another JSON tool (re-indented, say) is still a version-3 document:
it loads through the whole-document path (:func:`resolve_pool`) without its index. The
loader never trusts an index that disagrees with the records it points at: the record
read at an index range must be the record the index row describes, and a full load
compares every row with its record.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import mmap
import operator
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final, cast, overload

import orjson

from ..errors import CanonicalizationError, FormatError
from .canonical import IdentityCache, _NeedsReference, _prepare, canonical_json, common_prefix
from .nesting import dumps, json_mode_dump
from .reader import check_mapped_size, release_pages
from .recording import (
    ChatMessage,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    Recording,
    SnapshotRecord,
    ToolRecord,
    adopt_message_canonical,
    message_canonical,
    messages_canonical,
)
from .redaction import holds_marker

INDEXED_VERSION: Final = 3
#: characters of each fixed-width number (``index_offset``, ``index_length``,
#: ``header_end``, the index's ``records_at``)
OFFSET_WIDTH: Final = 20
#: a tool result's ``content`` whose canonical JSON is at least this long is pooled
POOL_MIN_BYTES: Final = 1024
POOL_KEY: Final = "$pool"
_REF_OPEN = b'{"$pool":"'
_INDEX_MEMBER = b'"index":'
_ID_SHORT = 16
_PREFIX = re.compile(
    rb'\{"format":"chassis\.replay","format_version":3,"index_offset":([0-9][0-9 ]{19}),'
    rb'"index_length":([0-9][0-9 ]{19}),"header_end":([0-9][0-9 ]{19}),'
)
_PREFIX_LEN = (
    len(b'{"format":"chassis.replay","format_version":3,"index_offset":,"index_length":,"header_end":,')
    + 3 * OFFSET_WIDTH
)
#: the index's first member: the byte where its ``records`` object begins (fixed width)
_INDEX_HEAD = re.compile(rb'\{"records_at":([0-9][0-9 ]{19}),')
_RECORDS_MEMBER = b',"records":'
_ID = r"(?:[0-9a-f]{16}|[0-9a-f]{64})"
_POOL_ID = re.compile(_ID)
#: pool ids joined by commas (checked in one match)
_POOL_IDS = re.compile(rf"{_ID}(?:,{_ID})*")
#: the record index's columns, in the order :func:`index_row` returns them
INDEX_COLUMNS: Final = (
    "seq",
    "kind",
    "name",
    "status",
    "input_tokens",
    "output_tokens",
    "duration",
    "at",
    "run_id",
    "tool_call_id",
    "calls",
)
#: the ``records`` members of an index, in the order the writer lays them out: the byte
#: where each record begins, the columns (``calls`` as two flat arrays), the pool's
#: byte ranges and the integral floats
RECORD_MEMBERS: Final = ("start", *INDEX_COLUMNS[:-1], "call_ids", "call_records", "pool", "floats")
assert INDEX_COLUMNS[-1] == "calls"

_USER_ROLES = frozenset({"human", "user"})
_USER_TYPES = frozenset({"human", "user", "user_message", "user_input", "human_input", "input"})


# --------------------------------------------------------------------------- index rows


def interrupt_status(value: Any) -> str:
    """``input`` when an interrupt's value is a human/user message — an object whose
    ``role`` or ``source`` is ``human``/``user`` or whose ``type`` is one of
    ``human``, ``user``, ``user_message``, ``user_input``, ``human_input``, ``input``
    (e.g. Who&When's opening question, OpenHands' user_message, Inspect's input event) —
    else ``interrupted`` (an approval, a pause, an agent-state change)."""
    if isinstance(value, dict) and (
        value.get("role") in _USER_ROLES or value.get("source") in _USER_ROLES or value.get("type") in _USER_TYPES
    ):
        return "input"
    return "interrupted"


def record_status(rec: Any) -> str:
    """The status of a record (SPEC "Application": timeline), by precedence ``error`` >
    ``interrupted`` / ``input`` > ``redacted`` > ``live-fallback`` > ``replayed`` > ``ok``."""
    if type(rec) is ToolRecord:
        if rec.result.error is not None:
            return "error"
    elif type(rec) is ModelRecord:
        if rec.error is not None:
            return "error"
    elif type(rec) is InterruptRecord:
        return interrupt_status(rec.value)
    if type(rec) is ToolRecord and (rec.result.redacted or holds_marker(rec.result.content)):
        return "redacted"
    if type(rec) is ModelRecord and rec.response is not None and rec.response.message is not None:
        if holds_marker(rec.response.message.content):
            return "redacted"
    if rec.live_fallback:
        return "live-fallback"
    if rec.replayed:
        return "replayed"
    return "ok"


def record_name(rec: Any) -> str:
    """The name column of a record: the model identity (``model → live_model`` for a
    replay's call answered by the policy's live model), the tool name, the lifecycle
    event, the snapshot's generation, or ``interrupt``."""
    if type(rec) is ToolRecord:
        return rec.tool
    if type(rec) is ModelRecord:
        swapped = rec.meta.get("live_model") if rec.meta else None
        return f"{rec.model} → {swapped}" if isinstance(swapped, str) else rec.model
    if type(rec) is LifecycleRecord:
        return rec.event
    if type(rec) is SnapshotRecord:
        return rec.generation_id or "snapshot"
    return "interrupt"


def epoch_seconds(at: str | None) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (``None`` for none or one that
    does not parse)."""
    if not at:
        return None
    try:  # Python 3.11 reads a "Z" itself (a third of the time of replacing it first)
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()
    except ValueError:
        return None


def index_row(rec: Any) -> tuple[Any, ...]:
    """One row of the record index (:data:`INDEX_COLUMNS`) computed from a validated
    record: ``seq``, ``kind``, ``name`` (:func:`record_name`), ``status``
    (:func:`record_status`), ``input_tokens`` / ``output_tokens`` (model calls with a
    usage, else ``None``), ``duration`` (seconds), ``at`` (seconds since the epoch),
    ``run_id``, ``tool_call_id`` (tool records) and ``calls`` (the ids of the tool calls a
    model response requested, else ``None``)."""
    tin = tout = None
    calls = None
    duration = None
    call_id = None
    if type(rec) is ModelRecord:
        duration = rec.duration_seconds
        resp = rec.response
        if resp is not None:
            if resp.usage is not None:
                tin, tout = resp.usage.input_tokens, resp.usage.output_tokens
            if resp.message.tool_calls:
                calls = [c.id for c in resp.message.tool_calls]
    elif type(rec) is ToolRecord:
        duration = rec.duration_seconds
        call_id = rec.tool_call_id
    return (
        rec.seq,
        rec.kind,
        record_name(rec),
        record_status(rec),
        tin,
        tout,
        duration,
        epoch_seconds(rec.at),
        rec.run_id,
        call_id,
        calls,
    )


# --------------------------------------------------------------------------- writing


class _Pool:
    """The pool being written: canonical bytes → reference bytes and pool id; id →
    canonical bytes; ``floats``: id → the JSON Pointers of its integral floats
    (:func:`float_pointers`)."""

    def __init__(self) -> None:
        self.refs: dict[bytes, bytes] = {}
        self.ids: dict[bytes, str] = {}
        self.values: dict[str, bytes] = {}
        self.floats: dict[str, list[str]] = {}

    def ref(self, data: bytes, floats: list[str] | None = None) -> bytes:
        """The reference to ``data`` (canonical JSON; ``floats``: its integral floats),
        pooling it on first sight."""
        ref = self.refs.get(data)
        if ref is None:
            ref = self.refs[data] = b'{"$pool":"' + self.id_of(data, floats).encode() + b'"}'
        return ref

    def id_of(self, data: bytes, floats: list[str] | None = None) -> str:
        """The pool id of ``data`` (canonical JSON), pooling it on first sight."""
        pid = self.ids.get(data)
        if pid is None:
            full = hashlib.sha256(data).hexdigest()
            pid = full[:_ID_SHORT]
            if self.values.get(pid, data) != data:
                pid = full  # two values of this file share the short id
            self.values[pid] = data
            if floats:
                self.floats[pid] = floats
            self.ids[data] = pid
        return pid


#: the integral floats of a message (:func:`float_pointers`), once per message object
_MESSAGE_FLOATS = IdentityCache()
#: beyond this magnitude canonical JSON writes a float with an exponent (RFC 8785
#: §3.2.2.3: ``1e+21``), which reads back as a float
_INTEGRAL_FLOAT_MAX = 1e21


def float_pointers(value: Any, path: str = "", skip: frozenset[str] = frozenset()) -> list[str]:
    """The JSON Pointers (RFC 6901) of the floats in ``value`` whose canonical JSON is an
    integer literal (``45.0`` is written ``45``, RFC 8785 §3.2.2.3): what a reader turns
    back into floats, so that a recorded value keeps its number type. ``skip``: member
    names of the top level not to look into (typed fields, which validation converts)."""
    out: list[str] = []
    todo: list[tuple[Any, str]] = [(value, path)]
    while todo:
        v, p = todo.pop()
        t = type(v)
        if t is float:
            if v.is_integer() and abs(v) < _INTEGRAL_FLOAT_MAX:
                out.append(p)
        elif t is dict:
            for k, item in v.items():
                ti = type(item)
                if ti is str or ti is bool or item is None or ti is int:
                    continue
                if p == path and k in skip:
                    continue
                todo.append((item, f"{p}/{_escape(k)}"))
        elif t is list:
            for j, item in enumerate(v):
                ti = type(item)
                if ti is str or ti is bool or item is None or ti is int:
                    continue
                todo.append((item, f"{p}/{j}"))
    out.sort()
    return out


def _message_floats(message: Any) -> list[str]:
    found = _MESSAGE_FLOATS.get(message)
    if found is None:
        found = float_pointers(message.to_json_obj())
        _MESSAGE_FLOATS.put(message, found)
    return found  # type: ignore[no-any-return]


def apply_floats(value: Any, pointers: list[str], source: str, where: str) -> Any:
    """``value`` (parsed JSON, changed in place) with the integers at ``pointers`` made
    floats again (:func:`float_pointers`).

    Raises:
        FormatError: a pointer that does not lead to an integer (a damaged index; names
            ``where``).
    """
    for pointer in pointers:
        parent: Any = None
        key: Any = None
        node = value
        try:
            for token in pointer.split("/")[1:]:
                token = token.replace("~1", "/").replace("~0", "~")
                parent, key = node, (int(token) if type(node) is list else token)
                node = node[key]
        except (KeyError, IndexError, ValueError, TypeError):
            node = None
        if type(node) is not int or parent is None:
            raise FormatError(
                f"the index lists {pointer!r} as a float, which is not an integer there (a damaged index)",
                file=source,
                path=where,
            )
        parent[key] = float(node)
    return value


class _Histories:
    """The history nodes being written: a request's messages are a node — the pool ids
    of its messages after its parent node's — so a history that grows by appending is
    written once, not once per request. Chains of recent message lists (message objects,
    the end of each node along them, the node ids) find the longest shared prefix."""

    def __init__(self, pool: _Pool, share: bool = True) -> None:
        self.pool = pool
        #: whether messages are pooled at all (:func:`_repeats_messages`)
        self.share = share
        self.chains: list[tuple[list[Any], list[int], list[str]]] = []

    def node(self, messages: list[Any], data: list[bytes]) -> str:
        """The pool id of the node of ``messages`` (whose canonical JSON is ``data``).
        Prefixes are found on the canonical JSON, so equal histories give the same nodes
        whether or not their messages are the same objects."""
        n = len(messages)
        best = None
        shared = 0
        first = data[0]
        for chain in self.chains:
            if chain[0][0] is first or chain[0][0] == first:
                k = common_prefix(chain[0], data)
                if k > shared:
                    best, shared = chain, k
        ends, ids = (best[1], best[2]) if best is not None else ([], [])
        j = bisect.bisect_right(ends, shared)
        parent = ids[j - 1] if j else None
        start = ends[j - 1] if j else 0
        if start == n and parent is not None:
            node = parent
        else:
            pid = self.pool.id_of
            node = pid(
                b'{"messages":['
                + b",".join(
                    [b'"' + pid(d, _message_floats(m)).encode() + b'"' for m, d in zip(messages[start:], data[start:])]
                )
                + b'],"parent":'
                + (b'"' + parent.encode() + b'"' if parent is not None else b"null")
                + b"}"
            )
        if best is not None and shared == len(best[0]) and j == len(ends):
            self.chains.remove(best)
            chain = (list(data), ends, ids)
        else:
            chain = (list(data), ends[:j], ids[:j])
        if node != parent:
            chain[1].append(n)
            chain[2].append(node)
        self.chains.insert(0, chain)
        del self.chains[8:]
        return node


_MODEL_EXCLUDE = {"request": {"messages"}, "response": {"message"}}


def _relative(exc: CanonicalizationError, i: int) -> CanonicalizationError:
    return CanonicalizationError(exc.reason, f"/{i}{exc.path}")


def _encode_record(
    rec: Any, i: int, pool: _Pool, histories: _Histories, msgs: list[bytes] | None = None
) -> tuple[bytes, list[bytes], list[str]]:
    """``(bytes written: canonical JSON with references, parts of the logical record's
    canonical JSON hashed into the digest, the record's integral floats)`` of record
    ``i`` (:func:`float_pointers`). Raises CanonicalizationError (JSON Pointer relative
    to the records array)."""
    try:
        if type(rec) is ModelRecord:
            return _encode_model(rec, i, pool, histories, msgs)
        if type(rec) is ToolRecord:
            return _encode_tool(rec, i, pool)
        return _encode_plain(rec, i, pool)
    except _Fallback:
        return _encode_plain(rec, i, pool)


def _has_ref_shape(data: bytes) -> bool:
    return _REF_OPEN in data or _HISTORY_OPEN in data


class _Fallback(Exception):
    """Internal: the record is written by the plain path (:func:`_encode_plain`)."""


def _canonical_dump(obj: Any, i: int) -> bytes | None:
    """The canonical JSON of ``obj`` by the fast path, or ``None`` when only the plain
    path writes it (keys at or above U+E000, deep values, lone surrogates)."""
    try:
        prepared = _prepare(obj, f"/{i}")
        return orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)
    except (_NeedsReference, RecursionError, orjson.JSONEncodeError):
        return None


def _encode_model(
    rec: ModelRecord, i: int, pool: _Pool, histories: _Histories, msgs: list[bytes] | None = None
) -> tuple[bytes, list[bytes], list[str]]:
    obj = json_mode_dump(partial(rec.model_dump, exclude=_MODEL_EXCLUDE), exclude_none=True)
    if msgs is None:
        try:
            msgs = messages_canonical(rec.request.messages)
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, f"/{i}/request/messages{exc.path}") from None
    response = rec.response
    resp_bytes = None
    if response is not None:
        try:
            resp_bytes = message_canonical(response.message)
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, f"/{i}/response/message{exc.path}") from None
    try:
        prepared = _prepare(obj, f"/{i}")
    except (_NeedsReference, RecursionError):
        raise _Fallback from None
    floats = float_pointers(obj, skip=_TYPED_FLOATS) if prepared is not obj else []
    if prepared is obj:
        prepared = dict(obj)
    prepared["request"] = dict(prepared["request"], messages=orjson.Fragment(b"\x01"))
    if resp_bytes is not None:
        prepared["response"] = dict(prepared["response"], message=orjson.Fragment(b"\x02"))
    try:
        out = orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        raise _Fallback from None
    if _has_ref_shape(out):
        raise _Fallback
    head, rest = out.split(b"\x01")
    joined = b",".join(msgs)
    inline = not histories.share and not _has_ref_shape(joined)
    if inline and resp_bytes is not None and _has_ref_shape(resp_bytes):
        inline = False
    if inline:  # a run that repeats no message: messages in place, as in version 2
        history = b"[" + joined + b"]"
        floats = floats + [
            f"/request/messages/{j}{p}" for j, m in enumerate(rec.request.messages) for p in _message_floats(m)
        ]
    elif msgs:
        history = b'{"$history":"' + histories.node(rec.request.messages, msgs).encode() + b'"}'
    else:
        history = b"[]"
    if resp_bytes is None or response is None:
        return b"".join((head, history, rest)), [head, b"[", joined, b"]", rest], floats
    mid, tail = rest.split(b"\x02")
    if inline:
        ref = resp_bytes
        floats = floats + [f"/response/message{p}" for p in _message_floats(response.message)]
    else:
        ref = pool.ref(resp_bytes, _message_floats(response.message))
    return b"".join((head, history, mid, ref, tail)), [head, b"[", joined, b"]", mid, resp_bytes, tail], floats


def _encode_tool(rec: ToolRecord, i: int, pool: _Pool) -> tuple[bytes, list[bytes], list[str]]:
    obj = rec.to_json_obj()
    try:
        prepared = _prepare(obj, f"/{i}")
        out = orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)
    except (_NeedsReference, RecursionError, orjson.JSONEncodeError):
        raise _Fallback from None
    if _has_ref_shape(out):
        raise _Fallback
    if len(out) < POOL_MIN_BYTES or "content" not in obj.get("result", {}):
        return out, [out], float_pointers(obj, skip=_TYPED_FLOATS) if prepared is not obj else []
    content_value = obj["result"]["content"]
    content = _canonical_dump(content_value, i)
    if content is None or len(content) < POOL_MIN_BYTES:
        return out, [out], float_pointers(obj, skip=_TYPED_FLOATS) if prepared is not obj else []
    ref = pool.ref(content, float_pointers(content_value) if prepared is not obj else None)
    rest = {**obj, "result": {**obj["result"], "content": None}}
    base = dict(prepared)
    base["result"] = dict(prepared["result"], content=orjson.Fragment(b"\x03"))
    head, tail = orjson.dumps(base, option=orjson.OPT_SORT_KEYS).split(b"\x03")
    floats = float_pointers(rest, skip=_TYPED_FLOATS) if prepared is not obj else []
    return b"".join((head, ref, tail)), [out], floats


def _encode_plain(rec: Any, i: int, pool: _Pool) -> tuple[bytes, list[bytes], list[str]]:
    """The plain path: the record's canonical JSON (:func:`canonical_json`: any depth,
    any key), with every object of recorded content shaped like a reference pooled."""
    obj = rec.to_json_obj()
    try:
        out = canonical_json(obj)
    except CanonicalizationError as exc:
        raise _relative(exc, i) from None
    if _has_ref_shape(out):
        obj = _escape_refs(obj, pool)
        written = canonical_json(obj)
    else:
        written = out
    return written, [out], float_pointers(obj, skip=_TYPED_FLOATS)


#: typed float fields of a record: validation makes them floats whatever was written
_TYPED_FLOATS = frozenset({"duration_seconds"})


def _is_ref(value: Any) -> bool:
    return (
        type(value) is dict
        and len(value) == 1
        and (type(value.get(POOL_KEY)) is str or type(value.get(HISTORY_KEY)) is str)
    )


def _escape_refs(value: Any, pool: _Pool) -> Any:
    """``value`` with every object shaped like a reference replaced by a reference to
    itself in the pool (so that a reader resolves it to what was recorded)."""
    if type(value) is dict:
        if _is_ref(value):
            return orjson.loads(pool.ref(canonical_json(value), float_pointers(value)))
        return {k: _escape_refs(v, pool) for k, v in value.items()}
    if type(value) is list:
        return [_escape_refs(v, pool) for v in value]
    return value


#: a run whose message references are at least this many times its distinct messages
#: has its messages pooled; below it (each message used about once) they stay in place
SHARE_FACTOR: Final = 1.5


def _messages_data(rec: Recording) -> tuple[list[list[bytes] | None], bool]:
    """The canonical JSON of every model request's messages (``None`` for other records,
    or a request with a value that has no canonical form: its encoding reports it with
    its place), and whether the run refers to its messages often enough for the pool
    to pay (:data:`SHARE_FACTOR`): a growing history repeats every message in every
    later request; a run of one-off calls does not, and pooling would only add
    references. Messages are counted by their canonical JSON, so the choice depends on
    the content only."""
    total = 0
    distinct: set[bytes] = set()
    out: list[list[bytes] | None] = []
    for r in rec.records:
        data = None
        if type(r) is ModelRecord:
            try:
                data = messages_canonical(r.request.messages)
                total += len(data)
                distinct.update(data)
                if r.response is not None:
                    total += 1
                    distinct.add(message_canonical(r.response.message))
            except CanonicalizationError:
                data = None
        out.append(data)
    return out, total > 0 and total >= SHARE_FACTOR * len(distinct)


def _json_number(value: int) -> bytes:
    return str(value).encode().ljust(OFFSET_WIDTH)


@dataclass
class Encoded:
    """A recording encoded as version 3: ``data`` (the file's bytes) and ``digest``."""

    data: bytes
    digest: str


def encode_indexed(rec: Recording, header: dict[str, Any]) -> Encoded:
    """Encode ``rec`` as a version-3 document. ``header`` holds the header members after
    the version (``metadata``, ``session``, ``links`` when set), already checked.

    Raises:
        CanonicalizationError: a record holds a value with no canonical form (JSON
            Pointer relative to the records array, ``/<record index>/...``).
    """
    pool = _Pool()
    msg_data, share = _messages_data(rec)
    histories = _Histories(pool, share)
    digest = hashlib.sha256(b"[")
    written: list[bytes] = []
    rows: list[tuple[Any, ...]] = []
    record_floats: dict[str, list[str]] = {}
    for i, r in enumerate(rec.records):
        data, parts, floats = _encode_record(r, i, pool, histories, msg_data[i])
        if floats:
            record_floats[str(i)] = floats
        if i:
            digest.update(b",")
        for p in parts:
            digest.update(p)
        written.append(data)
        rows.append(index_row(r))
    digest.update(b"]")
    digest_text = "sha256:" + digest.hexdigest()

    out: list[bytes] = []
    pos = 0

    def put(b: bytes) -> int:
        nonlocal pos
        out.append(b)
        start = pos
        pos += len(b)
        return start

    put(b'{"format":"chassis.replay","format_version":3,"index_offset":')
    put(_json_number(0))
    offset_part = len(out) - 1
    put(b',"index_length":')
    put(_json_number(0))
    length_part = len(out) - 1
    put(b',"header_end":')
    put(_json_number(0))
    header_end_part = len(out) - 1
    put(b",")
    first = True
    for name, value in header.items():
        put((b"" if first else b",") + b'"' + name.encode() + b'":' + dumps(value))
        first = False
    summary = index_summary(dict(zip(INDEX_COLUMNS, zip(*rows))) if rows else None, len(rows), rec.records.__getitem__)
    put(b',"summary":' + dumps(summary))
    put(b',"digest":"' + digest_text.encode() + b'"')
    header_end = pos
    put(b',"pool":{')
    pool_ids = list(pool.values)
    pool_spans: list[int] = []
    for k, pid in enumerate(pool_ids):
        put((b"\n" if k == 0 else b",\n") + b'"' + pid.encode() + b'":')
        value = pool.values[pid]
        pool_spans.append(put(value))
        pool_spans.append(pos)
    put(b"\n}," if pool_ids else b"},")
    put(b'"records":[')
    starts: list[int] = []
    ends: list[int] = []
    for k, data in enumerate(written):
        put(b"\n" if k == 0 else b",\n")
        starts.append(put(data))
        ends.append(pos)
    put(b"\n]," if written else b"],")
    put(b'"index":')
    columns = list(zip(*rows)) if rows else [() for _ in INDEX_COLUMNS]
    grouped: dict[tuple[str, ...], list[int]] = {}
    for position, pointers in record_floats.items():
        grouped.setdefault(tuple(pointers), []).append(int(position))
    float_groups = [[list(pointers), positions] for pointers, positions in grouped.items()]
    records: dict[str, Any] = {"start": starts, **{name: list(col) for name, col in zip(INDEX_COLUMNS, columns)}}
    records["pool"] = {"ids": pool_ids, "spans": pool_spans}
    records["floats"] = {"records": float_groups, "pool": pool.floats}
    # the tool calls a response requested: two flat arrays (a list per record is slow to read)
    calls_col = records.pop("calls")
    records["call_ids"] = [c for ids in calls_col if ids for c in ids]
    records["call_records"] = [i for i, ids in enumerate(calls_col) if ids for _ in ids]
    # columns of a few distinct strings are written as positions in a table of them
    coded: dict[str, list[Any]] = {}
    for name in CODED_COLUMNS:
        col = records[name]
        table = list(dict.fromkeys(col))
        at = {v: k for k, v in enumerate(table)}
        records[name] = [at[v] for v in col]
        coded[name] = table
    members = {
        "count": len(written),
        "records_end": ends[-1] if ends else header_end,
        "strings": coded,
    }
    index_bytes = layout_index(members, records, pos)
    index_at = put(index_bytes)
    put(b"}\n")
    out[offset_part] = _json_number(index_at)
    out[length_part] = _json_number(len(index_bytes))
    out[header_end_part] = _json_number(header_end)
    return Encoded(b"".join(out), digest_text)


def layout_index(members: Mapping[str, Any], records: Mapping[str, list[Any]], at: int) -> bytes:
    """The bytes of a record index written at byte ``at`` of its file: first
    ``records_at`` (:data:`OFFSET_WIDTH` characters wide: the byte where the ``records``
    object begins), then ``columns`` (each member of ``records`` → its value's byte range
    ``[start, end]``, relative to ``records_at``), then ``members`` (``count``,
    ``records_end``, ``strings``; any ``records_at`` / ``columns``
    in it are replaced), and last ``records`` (:data:`RECORD_MEMBERS` in order, then
    any others) — so a reader parses the small head alone, and each column only when it
    is asked for."""
    order = [m for m in RECORD_MEMBERS if m in records] + [m for m in records if m not in RECORD_MEMBERS]
    parts: list[bytes] = []
    spans: dict[str, list[int]] = {}
    pos = 1  # after the records object's "{"
    for k, name in enumerate(order):
        key = (b"," if k else b"") + orjson.dumps(name) + b":"
        value = orjson.dumps(records[name])
        spans[name] = [pos + len(key), pos + len(key) + len(value)]
        parts.append(key + value)
        pos += len(key) + len(value)
    body = b"{" + b"".join(parts) + b"}"
    rest = {k: v for k, v in members.items() if k not in ("records_at", "columns", "records")}
    head_tail = b',"columns":' + orjson.dumps(spans)
    if rest:
        head_tail += b"," + orjson.dumps(rest)[1:-1]
    head_len = len(b'{"records_at":') + OFFSET_WIDTH + len(head_tail) + len(_RECORDS_MEMBER)
    records_at = at + head_len
    return b'{"records_at":' + _json_number(records_at) + head_tail + _RECORDS_MEMBER + body + b"}"


# --------------------------------------------------------------------------- reading


def is_indexed(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) opens a version-3 document as the
    writer lays it out (the fixed-width index position)."""
    return _PREFIX.match(head) is not None


class RecordIndex:
    """The index of a version-3 file (:func:`layout_index`), read lazily: its head
    (``pool`` id → byte range, ``floats``, the string tables) when the file is opened,
    each column of ``records`` when it is first asked for, checked for shape then.

    ``columns`` maps each of :data:`INDEX_COLUMNS` to one entry per record; ``start`` /
    ``end`` give each record's byte range; ``header_end`` the byte where the header's
    members end. A damaged column raises :class:`FormatError` (naming
    ``/index/records/<column>``) when it is read: at the latest by a full load, which
    reads them all.
    """

    def __init__(
        self,
        data: bytes | mmap.mmap,
        source: str,
        *,
        header_end: int,
        index_offset: int,
        count: int,
        records_at: int,
        spans: dict[str, tuple[int, int]],
        records_end: int,
        strings: dict[str, Any],
    ) -> None:
        self._data = data
        self._source = source
        self.header_end = header_end
        self._index_offset = index_offset
        self._n = count
        self._records_at = records_at
        self._spans = spans
        self.records_end = records_end
        self._strings = strings
        self._pool: dict[str, tuple[int, int]] | None = None
        self._floats: tuple[list[tuple[list[str], list[int]]], dict[str, list[str]]] | None = None
        self._float_records: dict[int, list[str]] | None = None
        self._ranges: tuple[list[int], list[int]] | None = None
        #: the columns read so far, by name (kept here, not on the IndexColumns view: a
        #: view held by the index would make a reference cycle, which a load's
        #: ``gc.freeze`` keeps forever with the file's bytes it reaches)
        self._columns_read: dict[str, Sequence[Any]] = {}

    @property
    def columns(self) -> IndexColumns:
        """Each of :data:`INDEX_COLUMNS` → one entry per record, read and checked on
        first use and kept (:class:`IndexColumns`)."""
        return IndexColumns(self)

    def __len__(self) -> int:
        return self._n

    def _read_floats(self) -> tuple[list[tuple[list[str], list[int]]], dict[str, list[str]]]:
        if self._floats is None:
            floats = self.member("floats") if "floats" in self._spans else {"records": [], "pool": {}}
            ok = type(floats) is dict and type(floats.get("records")) is list and type(floats.get("pool")) is dict
            groups: list[tuple[list[str], list[int]]] = []
            if ok:
                n = self._n
                for group in floats["records"]:
                    if type(group) is not list or len(group) != 2 or not _pointers(group[0]):
                        ok = False
                        break
                    positions = group[1]
                    if type(positions) is not list or (
                        positions and (set(map(type, positions)) != {int} or min(positions) < 0 or max(positions) >= n)
                    ):
                        ok = False
                        break
                    groups.append((group[0], positions))
                ok = ok and all(_pointers(v) for v in floats["pool"].values())
            if not ok:
                raise _index_error(
                    "'floats' must list groups of [JSON Pointers, record positions] and map pool ids to JSON Pointers",
                    self._source,
                    "/index/records/floats",
                )
            self._floats = (groups, dict(floats["pool"]))
        return self._floats

    @property
    def pool(self) -> dict[str, tuple[int, int]]:
        """Pool id → the byte range of its value (``records.pool``: ``ids`` and two
        offsets per id), read and checked on first use.

        Raises:
            FormatError: a damaged ``pool`` (``/index/records/pool/...``).
        """
        if self._pool is None:
            source = self._source
            raw = self.member("pool") if "pool" in self._spans else {"ids": [], "spans": []}
            if type(raw) is not dict:
                raise _index_error("'pool' is not an object", source, "/index/records/pool")
            ids = raw.get("ids")
            if type(ids) is not list or (
                ids and (set(map(type, ids)) != {str} or not _POOL_IDS.fullmatch(",".join(ids)))
            ):
                raise _index_error(
                    "pool ids must be an array of 16 or 64 hex digits", source, "/index/records/pool/ids"
                )
            spans = _check_ints(
                raw.get("spans"), "/index/records/pool/spans", source, self.header_end, self._index_offset
            )
            if len(spans) != 2 * len(ids):
                raise _index_error("pool spans must hold two offsets per pool id", source, "/index/records/pool/spans")
            pool = dict(zip(ids, zip(spans[::2], spans[1::2])))
            if len(pool) != len(ids):
                raise _index_error("a pool id is listed twice", source, "/index/records/pool/ids")
            self._pool = pool
        return self._pool

    @property
    def float_groups(self) -> list[tuple[list[str], list[int]]]:
        """The integral floats of records (:func:`float_pointers`): groups of (JSON
        Pointers, the positions of the records that have exactly these); read from
        ``records.floats`` on first use.

        Raises:
            FormatError: a damaged ``floats`` (``/index/records/floats``).
        """
        return self._read_floats()[0]

    @property
    def float_pool(self) -> dict[str, list[str]]:
        """Pool id → the JSON Pointers of its integral floats (read on first use).

        Raises:
            FormatError: a damaged ``floats`` (``/index/records/floats``).
        """
        return self._read_floats()[1]

    def floats_of(self, i: int) -> list[str] | None:
        """The JSON Pointers of record ``i``'s integral floats (``None``: none)."""
        if self._float_records is None:
            self._float_records = {k: pointers for pointers, positions in self.float_groups for k in positions}
        return self._float_records.get(i)

    def member(self, name: str) -> Any:
        """The parsed value of ``records.<name>`` (not checked).

        Raises:
            FormatError: the index has no such member, or its bytes are not JSON.
        """
        span = self._spans.get(name)
        if span is None:
            raise _index_error(f"no column {name!r} in the index", self._source, f"/index/records/{name}")
        a, b = span
        check_mapped_size(self._data, self._source)
        try:
            return orjson.loads(self._data[self._records_at + a : self._records_at + b])
        except orjson.JSONDecodeError as exc:
            raise _index_error(
                f"column {name!r} is not JSON at its range ({exc.msg})", self._source, f"/index/records/{name}"
            ) from None

    def array(self, name: str) -> list[Any]:
        """Column ``name`` as an array of one entry per record.

        Raises:
            FormatError: it is not (names ``/index/records/<name>``).
        """
        col = self.member(name)
        if type(col) is not list or len(col) != self._n:
            raise _index_error(
                f"column {name!r} must be an array of {self._n:,} entries", self._source, f"/index/records/{name}"
            )
        return col

    def _byte_ranges(self) -> tuple[list[int], list[int]]:
        if self._ranges is None:
            source, n = self._source, self._n
            start = _check_ints(
                self.array("start"), "/index/records/start", source, self.header_end, self._index_offset
            )
            # records are written one per line: each ends where ",\n" and the next begin
            end = (
                [*map(operator.sub, itertools.islice(start, 1, None), itertools.repeat(2)), self.records_end]
                if n
                else []
            )
            # each range non-empty and after the one before (compared in C)
            if not all(map(operator.lt, start, end)) or not all(map(operator.le, end[:-1], start[1:])):
                i = next((k for k in range(n) if not start[k] < end[k] or (k and end[k - 1] > start[k])), 0)
                raise _index_error(f"record {i}'s byte range is out of order", source, f"/index/records/start/{i}")
            self._ranges = (start, end)
        return self._ranges

    @property
    def start(self) -> list[int]:
        """The byte where each record begins (the ``start`` column, read and checked on
        first use)."""
        return self._byte_ranges()[0]

    @property
    def end(self) -> list[int]:
        """The byte where each record ends: two before the next begins, the last at
        ``records_end``."""
        return self._byte_ranges()[1]


class IndexColumns(Mapping[str, Sequence[Any]]):
    """The columns of a :class:`RecordIndex` by name (:data:`INDEX_COLUMNS`), each read
    and checked on first use and kept: coded columns decoded from their string table,
    ``seq`` checked to hold integers, ``calls`` built from ``call_ids`` /
    ``call_records``.

    Raises (on a lookup):
        FormatError: the column is damaged (``/index/records/<name>``).
    """

    def __init__(self, index: RecordIndex) -> None:
        self._index = index
        self._read = index._columns_read

    def __getitem__(self, name: str) -> Sequence[Any]:
        col = self._read.get(name)
        if col is None:
            if name not in INDEX_COLUMNS:
                raise KeyError(name)
            col = self._load(name)
            self._read[name] = col
        return col

    def __iter__(self) -> Iterator[str]:
        return iter(INDEX_COLUMNS)

    def __len__(self) -> int:
        return len(INDEX_COLUMNS)

    def _load(self, name: str) -> Sequence[Any]:
        ix = self._index
        source = ix._source
        if name == "calls":
            return _calls_column(ix.member("call_ids"), ix.member("call_records"), len(ix), source)
        col = ix.array(name)
        if name in CODED_COLUMNS:
            return _decode_column(col, ix._strings.get(name), name, source)
        allowed, what = _COLUMN_TYPES[name]
        if col and not set(map(type, col)) <= allowed:  # in C: a type per entry
            raise _index_error(f"column {name!r} must hold {what}", source, f"/index/records/{name}")
        return col


#: the members of a version-3 document that belong to its encoding, not to the recording
ENCODING_MEMBERS: Final = ("pool", "index", "index_offset", "index_length", "header_end", "summary")


def error_details(r: Any) -> dict[str, Any]:
    """What ``info`` shows of a record's error: ``seq``, ``kind``, ``name`` (the tool or
    the model), and the error's ``type`` and ``message`` (``None`` when the record has
    no error object)."""
    err = r.result.error if isinstance(r, ToolRecord) else getattr(r, "error", None)
    return {
        "seq": r.seq,
        "kind": r.kind,
        "name": r.tool if isinstance(r, ToolRecord) else getattr(r, "model", None),
        "type": err.type if err else None,
        "message": err.message if err else None,
    }


def first_error_position(columns: Mapping[str, Sequence[Any]]) -> int | None:
    """The position of the first tool or model record whose status is ``error``."""
    return next(
        (
            i
            for i, (k, st) in enumerate(zip(columns["kind"], columns["status"]))
            if st == "error" and k in ("tool", "model")
        ),
        None,
    )


_SUMMARY_MEMBERS: Final = ("counts", "models", "tools", "run_ids", "tokens", "first_error")
_ERROR_MEMBERS: Final = frozenset({"position", "seq", "kind", "name", "type", "message"})


def check_summary(summary: Any, source: str) -> dict[str, Any]:
    """``summary`` (a header's, read without the records) if it has the shape
    :func:`index_summary` writes, every member present: ``counts``, ``models`` and
    ``tools`` objects of counts, ``run_ids`` strings, ``tokens`` ``None`` or exactly
    ``input`` and ``output`` integers, ``first_error``
    ``None`` or the position, seq, kind (``tool`` / ``model``) and strings (or ``None``)
    of :func:`error_details`. Its values are not checked against the records here (a full
    load does that).

    Raises:
        FormatError: another shape (names ``/summary/<member>``).
    """

    def counts(v: Any) -> bool:
        return type(v) is dict and all(type(k) is str and type(c) is int for k, c in v.items())

    def text(v: Any) -> bool:
        return v is None or type(v) is str

    if type(summary) is not dict:
        raise FormatError("'summary' is not an object", file=source, path="/summary")
    missing = [m for m in _SUMMARY_MEMBERS if m not in summary]
    if missing:
        raise FormatError(
            f"the header's summary lacks {missing[0]!r} (the header was changed)",
            file=source,
            path=f"/summary/{missing[0]}",
        )
    tokens, fe = summary["tokens"], summary["first_error"]
    checks = {
        "counts": counts(summary.get("counts")),
        "models": counts(summary.get("models")),
        "tools": counts(summary.get("tools")),
        "run_ids": type(summary.get("run_ids")) is list and all(type(r) is str for r in summary["run_ids"]),
        "tokens": tokens is None
        or (
            type(tokens) is dict
            and tokens.keys() == {"input", "output"}
            and type(tokens["input"]) is int
            and type(tokens["output"]) is int
        ),
        "first_error": fe is None
        or (
            type(fe) is dict
            and fe.keys() == _ERROR_MEMBERS
            and type(fe.get("position")) is int
            and type(fe.get("seq")) is int
            and fe.get("kind") in ("tool", "model")
            and all(text(fe.get(k)) for k in ("name", "type", "message"))
        ),
    }
    for member, ok in checks.items():
        if not ok:
            raise FormatError(
                f"the header's summary has a malformed {member!r} (the header was changed)",
                file=source,
                path=f"/summary/{member}",
            )
    return summary


def index_summary(
    columns: Mapping[str, Sequence[Any]] | None, n: int, record_at: Callable[[int], Any] | None = None
) -> dict[str, Any]:
    """The header's ``summary`` of a version-3 file, from its index columns: ``counts``
    by kind, ``models`` and ``tools`` (name → calls), ``run_ids`` (in order of first
    appearance), ``tokens`` (``{"input", "output"}`` sums, ``None`` when no call has a
    usage) and ``first_error``: ``None``, or ``{"position": i}`` and, with ``record_at``
    (position → the record model), :func:`error_details` of that record — what ``info``
    prints, read without the index or any record."""
    counts = {k: 0 for k in ("tool", "model", "interrupt", "snapshot", "lifecycle")}
    models: dict[str, int] = {}
    tools: dict[str, int] = {}
    if columns is None or n == 0:
        return {"counts": counts, "models": models, "tools": tools, "run_ids": [], "tokens": None, "first_error": None}
    kinds, names = columns["kind"], columns["name"]
    for kind, name in zip(kinds, names):
        if kind in counts:
            counts[kind] += 1
        if kind == "model":
            models[name] = models.get(name, 0) + 1
        elif kind == "tool":
            tools[name] = tools.get(name, 0) + 1
    tins = [t for t in columns["input_tokens"] if t is not None]
    touts = [t for t in columns["output_tokens"] if t is not None]
    position = first_error_position(columns)
    first_error = None
    if position is not None:
        first_error = {"position": position, **(error_details(record_at(position)) if record_at else {})}
    return {
        "counts": counts,
        "models": models,
        "tools": tools,
        "run_ids": list(dict.fromkeys(r for r in columns["run_id"] if r)),
        "tokens": {"input": sum(tins), "output": sum(touts)} if tins or touts else None,
        "first_error": first_error,
    }


#: index columns written as positions in a table of their distinct values
CODED_COLUMNS: Final = ("kind", "name", "status", "run_id")


_NUMBER = {int, float, type(None)}
#: the types each uncoded column may hold, and how a message says it
_COLUMN_TYPES: Final[dict[str, tuple[set[type], str]]] = {
    "seq": ({int}, "integers"),
    "input_tokens": ({int, type(None)}, "integers or null"),
    "output_tokens": ({int, type(None)}, "integers or null"),
    "duration": (_NUMBER, "numbers or null"),
    "at": (_NUMBER, "numbers or null"),
    "tool_call_id": ({str, type(None)}, "strings or null"),
}


def _decode_column(codes: list[Any], table: Any, name: str, source: str) -> list[Any]:
    """The values of a coded column: ``table[code]`` for each code (in C). A table holds
    strings (``run_id``'s also ``null``).

    Raises:
        FormatError: no table, a table of other values, or a code that is no position
            in the table.
    """
    allowed = (str, type(None)) if name == "run_id" else (str,)
    if type(table) is not list or not all(type(v) in allowed for v in table):
        raise _index_error(
            f"the string table of column {name!r} must be an array of strings", source, f"/index/strings/{name}"
        )
    # a lookup in {position: string} fails on a negative or too large code, a string or
    # a non-integral number; ``true`` or ``1.0`` read as the position they equal (what
    # the row check then compares is the decoded value, so nothing is misread)
    lookup = dict(enumerate(table))
    try:
        return list(map(lookup.__getitem__, codes))
    except (KeyError, TypeError):
        raise _index_error(
            f"column {name!r} must hold positions in its string table (0 to {len(table) - 1})",
            source,
            f"/index/records/{name}",
        ) from None


def _index_error(reason: str, source: str, path: str) -> FormatError:
    return FormatError(f"damaged record index: {reason}", file=source, path=path)


class CallsColumn(Sequence[Any]):
    """The ``calls`` column of a record index (per record: the ids of the tool calls its
    response requested, or ``None``), kept as the index writes it — ``call_records``
    (positions) and ``call_ids``, one entry per call — and made a list per record only
    when a record's entry is asked for (the verification's row check)."""

    def __init__(self, positions: list[int], ids: list[str], n: int) -> None:
        self.positions = positions
        self.ids = ids
        self._n = n
        self._rows: list[Any] | None = None

    def __len__(self) -> int:
        return self._n

    def _built(self) -> list[Any]:
        if self._rows is None:
            rows: list[Any] = [None] * self._n
            for position, cid in zip(self.positions, self.ids):
                found = rows[position]
                if found is None:
                    rows[position] = [cid]
                else:
                    found.append(cid)
            self._rows = rows
        return self._rows

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        return self._built()[i]


def _calls_column(ids: Any, positions: Any, n: int, source: str) -> CallsColumn:
    """The ``calls`` column from the index's flat ``call_ids`` / ``call_records``."""
    if (
        type(ids) is not list
        or type(positions) is not list
        or len(ids) != len(positions)
        or (positions and (set(map(type, positions)) != {int} or min(positions) < 0 or max(positions) >= n))
        or (ids and set(map(type, ids)) != {str})
    ):
        raise _index_error(
            "'call_ids' and 'call_records' must be arrays of one tool-call id and one record position per call",
            source,
            "/index/records/call_ids",
        )
    return CallsColumn(positions, ids, n)


def _pointers(value: Any) -> bool:
    return type(value) is list and all(type(q) is str and q.startswith("/") for q in value)


def _check_ints(values: Any, path: str, source: str, low: int, high: int) -> list[int]:
    """``values`` if it is an array of integers from ``low`` to ``high`` (checked in C)."""
    if type(values) is not list or (
        values and (set(map(type, values)) != {int} or min(values) < low or max(values) > high)
    ):
        raise _index_error(f"expected an array of byte offsets within the file (0 to {high:,})", source, path)
    return values


def file_identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """Which file, as it was: device, inode, size and modification time (ns) — what two
    readers compare to know they read the same bytes (a file replaced or rewritten in
    between differs in one of them)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class IndexedFile:
    """A version-3 file opened for reading piece by piece: the header and the index are
    read at once (the fixed-width ``index_offset`` / ``index_length``), records and pool
    values only when asked for.

    ``data`` is the file's bytes, or a read-only memory map of it (:meth:`open`).

    Raises (from the constructor):
        FormatError: not a version-3 file as the writer lays it out, or a damaged index
            or trailer (names the file and the JSON Pointer under ``/index``).
    """

    def __init__(self, data: bytes | mmap.mmap, source: str) -> None:
        self.data = data
        self.source = source
        m = _PREFIX.match(data[:_PREFIX_LEN])
        if m is None:
            raise FormatError("not a version-3 file with a record index", file=source, path="/index_offset")
        try:
            offset, length, header_end = int(m[1]), int(m[2]), int(m[3])
        except ValueError:  # digits, then spaces: "12 3" is no number
            raise _index_error(
                "index_offset, index_length and header_end must be integers", source, "/index_offset"
            ) from None
        size = len(data)
        if offset + length > size or offset < _PREFIX_LEN:
            raise _index_error(
                f"index_offset {offset:,} and index_length {length:,} point outside the file ({size:,} bytes)",
                source,
                "/index_offset",
            )
        if data[offset - len(_INDEX_MEMBER) : offset] != _INDEX_MEMBER:
            raise _index_error(
                "the index is not where index_offset says (the file was edited after it was written)",
                source,
                "/index_offset",
            )
        trailer = bytes(data[offset + length :])
        if trailer.strip() != b"}":
            raise _index_error("the index is not the document's last member (bytes follow it)", source, "/index")
        if not _PREFIX_LEN <= header_end < offset:
            raise _index_error("header_end is not a byte offset within the header", source, "/header_end")
        self.index = self._read_index(offset, length, header_end)
        #: the file this was read from (:func:`file_identity`), when opened by path
        self.identity: tuple[int, int, int, int] | None = None
        self._header: dict[str, Any] | None = None
        self._pool_values: dict[str, Any] = {}
        self._histories: dict[str, list[str]] = {}
        self._released = 0

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> IndexedFile:
        """Map the file at ``path`` read-only (nothing is read until used).

        Raises:
            FormatError: as the constructor; an unreadable file.
        """
        source = str(path)
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                data: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if st.st_size else b""
        except OSError as exc:
            raise FormatError(f"cannot read: {exc.strerror or exc}", file=source) from None
        f = cls(data, source)
        f.identity = file_identity(st)
        return f

    def _read_index(self, offset: int, length: int, header_end: int) -> RecordIndex:
        """The index's head (everything before its ``records``), checked for shape; the
        columns are read when asked for."""
        source, data = self.source, self.data
        m = _INDEX_HEAD.match(data[offset : offset + len(b'{"records_at":') + OFFSET_WIDTH + 1])
        try:
            records_at = int(m[1]) if m is not None else -1
        except ValueError:
            records_at = -1
        index_end = offset + length
        if (
            not offset < records_at < index_end
            or data[records_at - len(_RECORDS_MEMBER) : records_at] != _RECORDS_MEMBER
            or data[index_end - 1 : index_end] != b"}"
        ):
            raise _index_error(
                "the index does not begin with records_at, the byte of its records object", source, "/index/records_at"
            )
        try:
            raw = orjson.loads(bytes(data[offset : records_at - len(_RECORDS_MEMBER)]) + b"}")
        except orjson.JSONDecodeError as exc:
            raise _index_error(f"not JSON at index_offset ({exc.msg})", source, "/index") from None
        if type(raw) is not dict:
            raise _index_error("the index is not an object", source, "/index")
        count = raw.get("count")
        if type(count) is not int or count < 0:
            raise _index_error("count is not a number of records", source, "/index/count")
        records_len = index_end - 1 - records_at
        spans_raw = raw.get("columns")
        spans: dict[str, tuple[int, int]] = {}
        if type(spans_raw) is dict:
            for name, span in spans_raw.items():
                if (
                    type(span) is not list
                    or len(span) != 2
                    or any(type(x) is not int for x in span)
                    or not 0 < span[0] < span[1] <= records_len
                ):
                    spans = {}
                    break
                spans[name] = (span[0], span[1])
        if not spans:
            raise _index_error(
                "'columns' must map each member of records to a byte range within it", source, "/index/columns"
            )
        records_end = raw.get("records_end")
        if type(records_end) is not int or not header_end <= records_end <= offset:
            raise _index_error("records_end is not a byte offset within the file", source, "/index/records_end")
        strings = raw.get("strings")
        if type(strings) is not dict:
            raise _index_error("'strings' must be an object of string tables", source, "/index/strings")
        return RecordIndex(
            data,
            source,
            header_end=header_end,
            index_offset=offset,
            count=count,
            records_at=records_at,
            spans=spans,
            records_end=records_end,
            strings=strings,
        )

    # ------------------------------------------------------------------ pieces

    def __len__(self) -> int:
        return len(self.index)

    def header(self) -> dict[str, Any]:
        """The header members (``format`` … ``digest``) as parsed JSON, parsed once
        (callers read it, never change it).

        Raises:
            FormatError: the header range does not hold the header (a damaged index).
        """
        if self._header is not None:
            return self._header
        try:
            doc = orjson.loads(bytes(self.data[: self.index.header_end]) + b"}")
        except orjson.JSONDecodeError as exc:
            raise _index_error(f"header_end does not end the header ({exc.msg})", self.source, "/header_end") from None
        if type(doc) is not dict:
            raise _index_error("header_end does not end the header", self.source, "/header_end")
        self._header = doc
        return doc

    def pool_bytes(self, pid: str, *, record: int | None = None, path: str = "") -> bytes:
        """The canonical JSON of pool value ``pid``.

        Raises:
            FormatError: no such pool id (names ``record`` and ``path``, the reference).
        """
        span = self.index.pool.get(pid)
        if span is None:
            raise FormatError(
                f"reference to pool id {pid!r}, which the pool does not hold",
                file=self.source,
                record=record,
                path=path,
            )
        check_mapped_size(self.data, self.source)
        return bytes(self.data[span[0] : span[1]])

    def pool_value(self, pid: str, *, record: int | None = None, path: str = "") -> Any:
        """The parsed pool value ``pid`` (parsed once).

        Raises:
            FormatError: no such id; the bytes at its range are not JSON.
        """
        value = self._pool_values.get(pid, _MISSING)
        if value is _MISSING:
            data = self.pool_bytes(pid, record=record, path=path)
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise FormatError(
                    f"pool value is not JSON ({exc.msg}): the pool or its index is damaged",
                    file=self.source,
                    path=f"/pool/{pid}",
                ) from None
            floats = self.index.float_pool.get(pid)
            if floats:
                value = apply_floats(value, floats, self.source, f"/index/records/floats/pool/{pid}")
            self._pool_values[pid] = value
        return value

    def history(self, node: str, *, record: int | None = None, path: str = "") -> list[str]:
        """The pool ids of the messages of history node ``node``: its parent's, then its
        own (memoized per node).

        Raises:
            FormatError: a node that is not ``{"messages": [ids], "parent": id|null}``,
                or a chain of parents that loops (names ``/pool/<id>``).
        """
        return expand_history(
            node, lambda pid: self.pool_value(pid, record=record, path=path), self._histories, self.source
        )

    def record_bytes(self, i: int) -> bytes:
        """The bytes of record ``i`` as written (references unresolved)."""
        check_mapped_size(self.data, self.source)  # a truncated file is an error, not SIGBUS
        return bytes(self.data[self.index.start[i] : self.index.end[i]])

    def raw_record(self, i: int) -> dict[str, Any]:
        """Record ``i`` as parsed JSON with its references resolved (pool values shared,
        not copied). Checks that the bytes at the index's range are that record (an
        object with the ``seq`` and ``kind`` of the index row).

        Raises:
            FormatError: the range does not hold record ``i``, a reference names no pool
                value (record and JSON Pointer given).
        """
        data = self.record_bytes(i)
        raw = self.parse_record(i, data)
        if _HISTORY_OPEN in data:
            raw = self.expand_messages(raw, i)
        if _REF_OPEN in data:
            return self.resolve(raw, i)
        return raw

    def parse_record(self, i: int, data: bytes) -> dict[str, Any]:
        """Record ``i`` parsed from ``data`` (its bytes), references left in place:
        checked to be the record its index row describes (an object with that ``seq``
        and ``kind``), its integral floats made floats again (the index's ``floats``).

        Raises:
            FormatError: the bytes are not JSON, or not that record (names the index's
                place), or the index lists a float that is not there.
        """
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise FormatError(
                f"the record index points at bytes that are not a record ({exc.msg})",
                file=self.source,
                record=i,
                path=f"/index/records/start/{i}",
            ) from None
        cols = self.index.columns
        if type(raw) is not dict or raw.get("seq") != cols["seq"][i] or raw.get("kind") != cols["kind"][i]:
            raise FormatError(
                "the record index disagrees with the record at its range (seq or kind)",
                file=self.source,
                record=i,
                path=f"/index/records/seq/{i}",
            )
        floats = self.index.floats_of(i)
        if floats:
            raw = apply_floats(raw, floats, self.source, f"/index/records/floats/records/{i}")
        return cast(dict[str, Any], raw)

    def expand_messages(self, raw: dict[str, Any], i: int) -> dict[str, Any]:
        """``raw`` (record ``i``) with a request's history reference
        ``{"$history": id}`` replaced by the references of its messages."""
        req = raw.get("request")
        if type(req) is dict:
            ref = req.get("messages")
            if type(ref) is dict and is_history_ref(ref):
                path = f"/records/{i}/request/messages"
                ids = self.history(ref[HISTORY_KEY], record=i, path=path)
                return {**raw, "request": {**req, "messages": [{POOL_KEY: m} for m in ids]}}
        return raw

    def resolve(self, raw: dict[str, Any], i: int) -> dict[str, Any]:
        """``raw`` (record ``i``) with every reference replaced by its pool value."""
        return _resolve(raw, lambda pid, path: self.pool_value(pid, record=i, path=path), f"/records/{i}")  # type: ignore[no-any-return]

    def iter_raw(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self.raw_record(i)

    def release_before(self, offset: int) -> None:
        """Let the kernel drop the pages of a memory-mapped file before ``offset`` that
        a pass has read (``MADV_DONTNEED``: clean file pages, read again from the page
        cache if touched): a pass over a big file then keeps the process's resident
        memory bounded. Nothing for a file read into memory."""
        self._released = release_pages(self.data, self._released, offset)

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            try:
                self.data.close()
            except BufferError:  # a slice still exported (memoryview): closed with the object
                pass


_MISSING: Any = object()
HISTORY_KEY: Final = "$history"
_HISTORY_OPEN = b'{"$history":"'


def is_history_ref(value: Any) -> bool:
    """Whether ``value`` is a history reference ``{"$history": "<id>"}`` (only a
    request's ``messages`` may be one: in a logical document they are an array)."""
    return type(value) is dict and len(value) == 1 and type(value.get(HISTORY_KEY)) is str


def expand_history(
    node: str,
    value_of: Callable[[str], Any],
    memo: dict[str, list[Any]],
    source: str,
    item: Callable[[str], Any] | None = None,
) -> list[Any]:
    """The messages of history node ``node`` (``value_of(id)`` gives a pool value), as
    their pool ids or as ``item(id)``: walk the parents up to a memoized node or the
    root, then build each node's list down — its parent's list plus its own messages —
    memoized per node. Raises FormatError for a malformed node or a loop."""
    found = memo.get(node)
    if found is not None:
        return found
    chain: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    at: str | None = node
    base: list[str] = []
    while at is not None:
        known = memo.get(at)
        if known is not None:
            base = known
            break
        if at in seen:
            raise FormatError("history nodes form a loop (the pool is damaged)", file=source, path=f"/pool/{at}")
        seen.add(at)
        value = value_of(at)
        msgs = value.get("messages") if type(value) is dict else None
        parent = value.get("parent") if type(value) is dict else None
        if (
            type(value) is not dict
            or set(value) != {"messages", "parent"}
            or type(msgs) is not list
            or any(type(m) is not str for m in msgs)
            or (parent is not None and type(parent) is not str)
        ):
            raise FormatError(
                'a history node must be {"messages": [pool ids], "parent": a node id or null}',
                file=source,
                path=f"/pool/{at}",
            )
        chain.append((at, msgs))
        at = parent
    for nid, msgs in reversed(chain):
        base = base + (msgs if item is None else [item(m) for m in msgs])
        memo[nid] = base
    return base


def _resolve(value: Any, lookup: Callable[[str, str], Any], path: str) -> Any:
    """``value`` with every reference ``{"$pool": id}`` replaced by ``lookup(id,
    pointer)``; containers are copied only where something changed."""
    t = type(value)
    if t is dict:
        if len(value) == 1 and type(value.get(POOL_KEY)) is str:
            return lookup(value[POOL_KEY], path)
        changed = False
        out = {}
        for k, v in value.items():
            tv = type(v)
            if tv is dict or tv is list:
                nv = _resolve(v, lookup, f"{path}/{_escape(k)}")
                changed = changed or nv is not v
                out[k] = nv
            else:
                out[k] = v
        return out if changed else value
    if t is list:
        changed = False
        items = []
        for j, v in enumerate(value):
            tv = type(v)
            if tv is dict or tv is list:
                nv = _resolve(v, lookup, f"{path}/{j}")
                changed = changed or nv is not v
                items.append(nv)
            else:
                items.append(v)
        return items if changed else value
    return value


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def resolve_pool(doc: dict[str, Any], *, source: str) -> dict[str, Any]:
    """A parsed version-3 document as a logical one: ``pool`` checked (every id the hash
    of its value's canonical JSON) and every reference in ``records`` resolved; ``pool``,
    ``index``, ``index_offset`` and ``index_length`` removed. A document without a
    ``pool`` is returned without them and with nothing resolved.

    Raises:
        FormatError: a pool that is not an object of ids to values, an id that is not the
            hash of its value, a reference to an id the pool does not hold.
    """
    out = {k: v for k, v in doc.items() if k not in ENCODING_MEMBERS}
    if "pool" not in doc:
        return out
    pool = doc["pool"]
    if type(pool) is not dict:
        raise FormatError("'pool' must be an object of pool ids to values", file=source, path="/pool")
    for pid, value in pool.items():
        check_pool_entry(pid, canonical_or_error(value, source, f"/pool/{_escape(pid)}"), source)

    def lookup(pid: str, path: str) -> Any:
        if pid not in pool:
            raise FormatError(f"reference to pool id {pid!r}, which the pool does not hold", file=source, path=path)
        return pool[pid]

    memo: dict[str, list[str]] = {}

    def expanded(r: Any, i: int) -> Any:
        req = r.get("request") if type(r) is dict else None
        if type(req) is dict and is_history_ref(req.get("messages")):
            path = f"/records/{i}/request/messages"
            ids = expand_history(req["messages"][HISTORY_KEY], lambda pid: lookup(pid, path), memo, source)
            return {**r, "request": {**req, "messages": [{POOL_KEY: m} for m in ids]}}
        return r

    records = out.get("records")
    if type(records) is list:
        out["records"] = [_resolve(expanded(r, i), lookup, f"/records/{i}") for i, r in enumerate(records)]
    return out


def canonical_or_error(value: Any, source: str, path: str) -> bytes:
    try:
        return canonical_json(value)
    except CanonicalizationError as exc:
        raise FormatError(f"value cannot be canonicalized: {exc.reason}", file=source, path=path + exc.path) from None


def check_pool_entry(pid: str, data: bytes, source: str) -> None:
    """Check that ``pid`` is the pool id of ``data`` (canonical JSON).

    Raises:
        FormatError: it is not (names ``/pool/<id>``)."""
    if not _POOL_ID.fullmatch(pid):
        raise FormatError(f"pool id {pid!r} is not 16 or 64 hex digits", file=source, path=f"/pool/{_escape(pid)}")
    if not hashlib.sha256(data).hexdigest().startswith(pid):
        raise FormatError("pool value does not hash to its id (the pool is damaged)", file=source, path=f"/pool/{pid}")


# --------------------------------------------------------------------------- full load


@dataclass
class StreamedCheck:
    """What a streamed verification of a version-3 file found: ``digest`` (computed on
    the logical records), ``records``."""

    digest: str
    records: int


def verify_pool(f: IndexedFile) -> dict[str, bytes]:
    """Check every pool value of ``f``: bytes whose SHA-256 starts with their id — the
    canonical JSON the writer hashed (SHA-256 second preimages aside), so nothing is
    serialized again. Returns id → canonical bytes.

    Raises:
        FormatError: the first damaged pool value (``/pool/<id>``).
    """
    out: dict[str, bytes] = {}
    whole, source, sha256, ok_id = f.data, f.source, hashlib.sha256, _POOL_ID.fullmatch
    check_mapped_size(whole, source)
    for pid, (a, b) in f.index.pool.items():  # check_pool_entry, inlined
        data = bytes(whole[a:b])
        if ok_id(pid) is None or not sha256(data).hexdigest().startswith(pid):
            check_pool_entry(pid, data, source)
        out[pid] = data
    return out


_REF_SPLIT = re.compile(rb'\{"\$(pool|history)":"([0-9a-f]{16}|[0-9a-f]{64})"\}')


def logical_bytes(
    record: bytes, pool: dict[str, bytes], histories: Callable[[str], bytes] | None = None
) -> list[bytes]:
    """The canonical JSON of a record as written (canonical, with references) with each
    reference replaced by its pooled value's canonical JSON and a history reference by
    ``[``, ``histories(id)`` (the messages' canonical JSON joined by commas) and ``]`` —
    the bytes its digest part is (references occur only as whole objects: recorded
    content shaped like one is pooled by the writer). Returns the parts in order.

    Raises:
        KeyError: a reference names an id not in ``pool``.
    """
    parts = _REF_SPLIT.split(record)
    if len(parts) == 1:
        return parts
    out = []
    for k in range(0, len(parts) - 1, 3):
        out.append(parts[k])
        pid = parts[k + 2].decode()
        if parts[k + 1] == b"pool":
            out.append(pool[pid])
        elif histories is not None:
            out += (b"[", histories(pid), b"]")
        else:
            raise KeyError(pid)
    out.append(parts[-1])
    return out


def validated_message(
    f: IndexedFile, pid: str, memo: dict[str, ChatMessage], pool: dict[str, bytes], i: int, path: str
) -> Any:
    """The chat message of pool value ``pid``, validated once (memo) and carrying its
    canonical bytes."""
    m = memo.get(pid)
    if m is None:
        value = f.pool_value(pid, record=i, path=path)
        m = ChatMessage.model_validate(value, strict=True)
        if pid in pool:
            adopt_message_canonical(m, pool[pid])
        memo[pid] = m
    return m


def _short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (a damaged index may hold any size)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_row_mismatch(f: IndexedFile, i: int, row: Sequence[Any]) -> FormatError | None:
    """``None`` when index row ``i`` of ``f`` equals ``row`` (computed from the record),
    else the FormatError naming the first column that disagrees."""
    cols = f.index.columns
    for name, value in zip(INDEX_COLUMNS, row):
        have = cols[name][i]
        if have != value and not (type(value) is float and type(have) in (int, float) and abs(have - value) < 1e-6):
            return FormatError(
                f"the record index disagrees with record {i}: {name} is {_short_repr(have)} in the index, "
                f"{_short_repr(value)} in the record",
                file=f.source,
                record=i,
                path=f"/index/records/{name}/{i}",
            )
    return None
