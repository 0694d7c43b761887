"""Loading and saving recordings (orjson), with verification.

Loading (:func:`load_recording`, :func:`loads_recording`, :func:`recording_from_dict`):

1. parse with orjson — malformed JSON is a :class:`FormatError` with line and column;
   a document that ends early is reported as *truncated*; a value nested deeper than
   :data:`core.record.nesting.MAX_DEPTH` (1,000 levels; the values are located by
   :data:`RECORDING_VALUES`) is refused with the JSON Pointer where the limit is crossed
   — the header's values are checked first, the records' when they are canonicalized
   (step 5: the fast path serializes no more than 254 levels, so only a deeper recording
   is walked);
2. detect the format version and migrate older layouts (:mod:`core.record.migrate`);
3. validate against the pydantic models (unknown kind, missing field, wrong type → the
   record index and JSON Pointer of the value);
4. check ``seq`` strictly increasing and no ``tool_call_id`` answered twice in one run;
5. canonicalize every record (RFC 8785) and verify ``digest`` when present;
6. recompute every canonical key and compare — when the file has no digest, or always
   with ``verify_keys=True`` (``validate`` does); a matching digest seals the keys that
   :func:`save_recording` recomputed.

Saving (:func:`save_recording`) redacts by field name (and with an optional
:class:`~core.record.redaction.SecretRedactor`), recomputes keys of anything redacted, writes
the digest, and replaces the file atomically: temp file in the same folder, fsync,
``os.replace``, fsync of the folder. A recording with a value beyond the nesting limit is
not written; values deeper than orjson serializes are written by
:func:`core.record.nesting.dumps`, with the bytes orjson would write.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import TypeAdapter, ValidationError

from ..errors import CanonicalizationError, FormatError, OutputError
from .canonical import _NeedsReference, _prepare, canonical_json
from .hashing import BackgroundSha256
from .indexed import (
    ENCODING_MEMBERS,
    INDEX_COLUMNS,
    Encoded,
    IndexedFile,
    describe_row_mismatch,
    encode_indexed,
    expand_history,
    first_error_position,
    index_row,
    index_summary,
    is_history_ref,
    is_indexed,
    logical_bytes,
    resolve_pool,
    validated_message,
    verify_pool,
)
from .migrate import migrate
from .nesting import (
    VALUE,
    Each,
    Pattern,
    check_text,
    check_values,
    dumps,
    ensure_recursion_limit,
    is_depth_failure,
    is_parse_depth_failure,
)
from .reader import read_input
from .recording import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ChatMessage,
    ModelRecord,
    Record,
    Recording,
    SessionInfo,
    ToolRecord,
)
from .recording_redaction import redact_recording as _redact_recording
from .redaction import SecretRedactor
from .userjson import invalid_utf8_at

_RECORD_ADAPTER: TypeAdapter[Any] = TypeAdapter(Record)

_MESSAGE_VALUES: Pattern = {"tool_calls": Each({})}
#: Where a recording's JSON values are, for the nesting limit
#: (:data:`core.record.nesting.MAX_DEPTH` levels per value): every member of the
#: header, of a link, of a record, of a tool result, of a model request or response, of a
#: chat message and of a tool call is a value, except the arrays and objects named here,
#: which are the format's own structure. So ``metadata``, ``meta``, ``arguments``, a
#: result's ``content``, a request's ``tools`` and ``options``, a message's ``content``,
#: an interrupt's ``value``, ``composition`` and ``details`` may each nest 1,000 levels.
RECORDING_VALUES: Pattern = {
    "links": Each({}),
    "records": Each(
        {"result": {}, "request": {"messages": Each(_MESSAGE_VALUES)}, "response": {"message": _MESSAGE_VALUES}}
    ),
}
_RECORDS_VALUES: Pattern = RECORDING_VALUES["records"] if isinstance(RECORDING_VALUES, dict) else VALUE


def _pointer(loc: tuple[Any, ...]) -> str:
    parts = []
    for p in loc:
        parts.append(str(p).replace("~", "~0").replace("/", "~1"))
    return "/" + "/".join(parts) if parts else "/"


def _describe(err: Mapping[str, Any]) -> str:
    typ = err.get("type", "")
    if typ == "missing":
        return f"missing required field {err['loc'][-1]!r}" if err.get("loc") else "missing required field"
    if typ == "extra_forbidden":
        return f"unknown field {err['loc'][-1]!r}"
    if typ == "union_tag_invalid":
        ctx = err.get("ctx", {})
        return f"unknown record kind {ctx.get('tag')!r} (expected one of {ctx.get('expected_tags')})"
    if typ == "union_tag_not_found":
        return "record has no 'kind'"
    got = err.get("input")
    shown = repr(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{err.get('msg', 'invalid value')} (got {shown})"


def _validation_to_format_error(exc: ValidationError, source: str, record_offset: int | None) -> FormatError:
    err = exc.errors(include_url=False)[0]
    loc = list(err.get("loc", ()))
    record = None
    if record_offset is not None:
        # loc is inside one record: (kind-tag, field, ...)
        record = record_offset
        if loc and loc[0] in ("tool", "model", "interrupt", "snapshot", "lifecycle"):
            loc = loc[1:]
        loc = ["records", record, *loc]
    elif len(loc) >= 2 and loc[0] == "records" and isinstance(loc[1], int):
        record = loc[1]
        if len(loc) >= 3 and loc[2] in ("tool", "model", "interrupt", "snapshot", "lifecycle"):
            del loc[2]
    if err.get("type") in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("kind")
    more = len(exc.errors()) - 1
    reason = _describe(err) + (f" (and {more} more problem(s))" if more > 0 else "")
    return FormatError(reason, file=source, record=record, path=_pointer(tuple(loc)))


def parse_json(data: bytes | str, *, source: str) -> Any:
    """Parse JSON bytes; raise :class:`FormatError` with line/column (or *truncated*)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        tail = raw.rstrip()
        pos = exc.pos
        if not tail:
            raise FormatError("file is empty", file=source) from None
        if is_parse_depth_failure(exc):  # orjson parses 1,024 levels at most
            check_text(raw, RECORDING_VALUES, source=source)
        bad = invalid_utf8_at(raw) if "UTF-8" in exc.msg else None
        if bad is not None:  # orjson checks the encoding first and reports line 1, column 1
            line, column, offset, byte = bad
            raise FormatError(
                f"malformed JSON: not valid UTF-8 (byte 0x{byte:02x} at byte offset {offset:,})",
                file=source,
                line=line,
                column=column,
            ) from None
        if pos >= len(tail) or "EOF" in exc.msg or "unexpected end" in exc.msg.lower():
            reason = f"truncated JSON: the document ends early ({exc.msg})"
        else:
            reason = f"malformed JSON: {exc.msg}"
        raise FormatError(reason, file=source, line=exc.lineno, column=exc.colno) from None


def _canonical_failure(exc: CanonicalizationError, source: str) -> FormatError:
    # exc.path is /<record index>/... relative to the records array
    parts = exc.path.split("/")
    record = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return FormatError(
        f"value cannot be canonicalized: {exc.reason}",
        file=source,
        record=record,
        path="/records" + exc.path,
    )


def _prepare_record(raw: dict[str, Any], i: int) -> Any:
    """orjson-ready form of one *validated* raw record (see :func:`core.record.canonical._prepare`).

    Chat messages whose content is a string and that carry no tool calls hold only
    strings and nulls under known ASCII field names (validation guaranteed it), so they
    are passed through unwalked; that is most of a growing chat history.
    """
    req = raw.get("request") if raw.get("kind") == "model" else None
    if type(req) is not dict or type(req.get("messages")) is not list:
        return _prepare(raw, f"/{i}")
    msgs = []
    for j, m in enumerate(req["messages"]):
        if type(m) is dict and type(m.get("content")) is str and m.get("tool_calls") is None:
            msgs.append(m)
        else:
            msgs.append(_prepare(m, f"/{i}/request/messages/{j}"))
    out = dict(_prepare({k: v for k, v in raw.items() if k != "request"}, f"/{i}"))
    req_out = dict(_prepare({k: v for k, v in req.items() if k != "messages"}, f"/{i}/request"))
    req_out["messages"] = msgs
    out["request"] = req_out
    return out


def _records_sha256(raw_records: list[Any], *, source: str | None = None) -> str:
    """``sha256:<hex>`` of the RFC 8785 canonical JSON of ``raw_records`` (validated record
    dicts): the one digest computation of the package. Byte-identical to
    ``canonical_hash(raw_records)`` (a property test holds the fast path to the ``rfc8785``
    package); faster on chat histories.

    When the fast path refuses the records for their depth (more than 254 levels), they
    are first checked against the nesting limit as the ``records`` of a document (level
    2 and below; :data:`core.record.nesting.MAX_DEPTH`).

    Raises:
        CanonicalizationError: a value has no canonical form (its JSON Pointer relative to
            the list, ``/<record index>/...``).
        FormatError: the records nest deeper than the limit (names ``source``, the
            record and the JSON Pointer from the document's top, ``/records/...``).
    """
    try:
        prepared = []
        for i, r in enumerate(raw_records):
            prepared.append(_prepare_record(r, i) if type(r) is dict else _prepare(r, f"/{i}"))
    except (_NeedsReference, CanonicalizationError, RecursionError) as exc:
        if isinstance(exc, RecursionError):
            check_values(raw_records, _RECORDS_VALUES, source=source, at=("records",))
        data = canonical_json(raw_records)  # slow path: exact order / exact error place / depth
        return "sha256:" + hashlib.sha256(data).hexdigest()
    try:
        parts = dump_array_parts(prepared, _dump_sorted)
    except orjson.JSONEncodeError as exc:
        if not is_depth_failure(exc):
            parts = [canonical_json(raw_records)]  # the exact error place (a lone surrogate)
        else:
            check_values(raw_records, _RECORDS_VALUES, source=source, at=("records",))
            parts = [_records_canonical_each(raw_records, prepared)]
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return "sha256:" + h.hexdigest()


def _dump_sorted(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


#: members per orjson call when a long array (the records) is written in parts: each call
#: stays small, and a member nested too deep for orjson sends only its own part down the
#: slower writer of :mod:`core.record.nesting`
ARRAY_PART = 256


def dump_array_parts(items: list[Any], dump: Callable[[Any], bytes], part: int | None = None) -> list[bytes]:
    """The compact JSON array of ``items`` as byte parts whose concatenation is exactly
    ``dump(items)``: ``[``, the members joined by ``,``, ``]`` (RFC 8259 §5; for canonical
    JSON, RFC 8785 §3.2.1), each run of ``part`` members written by one ``dump`` call.
    ``dump`` must write compact JSON (no indentation); ``part`` defaults to
    :data:`ARRAY_PART`.

    Raises:
        whatever ``dump`` raises for a member it cannot serialize.
    """
    part = ARRAY_PART if part is None else part
    if len(items) <= part:
        return [dump(items)]
    parts = [b"["]
    for start in range(0, len(items), part):
        if start:
            parts.append(b",")
        parts.append(dump(items[start : start + part])[1:-1])
    parts.append(b"]")
    return parts


def dumps_document(doc: dict[str, Any], option: int = 0) -> bytes:
    """``core.record.nesting.dumps(doc, option)``, the same bytes, with the ``records``
    array of a saved document written in parts (:func:`dump_array_parts`) when it is the
    last key and the output is compact (``option`` 0); other documents in one call.

    Raises:
        TypeError: what orjson raises for a value it cannot serialize.
    """
    records = doc.get("records")
    if option != 0 or type(records) is not list or len(records) <= ARRAY_PART or next(reversed(doc)) != "records":
        return dumps(doc, option)
    head = dumps({k: v for k, v in doc.items() if k != "records"})
    parts = [head[:-1], b',"records":' if len(head) > 2 else b'"records":']
    parts.extend(dump_array_parts(records, dumps))
    parts.append(b"}")
    return b"".join(parts)


def _records_canonical_each(raw_records: list[Any], prepared: list[Any]) -> bytes:
    """The canonical JSON of the records list, record by record (an array is ``[``, its
    members' canonical JSON joined by ``,``, ``]``: RFC 8785 §3.2.1): the fast path for
    each record it can take, :func:`canonical_json` (its deep writer) for the others."""
    parts = []
    for i, (raw, prep) in enumerate(zip(raw_records, prepared)):
        try:
            parts.append(orjson.dumps(prep, option=orjson.OPT_SORT_KEYS))
        except orjson.JSONEncodeError:
            try:
                parts.append(canonical_json(raw))
            except CanonicalizationError as exc:
                raise CanonicalizationError(exc.reason, f"/{i}{exc.path}") from None
    return b"[" + b",".join(parts) + b"]"


def records_digest(raw_records: list[Any], *, source: str = "<records>") -> str:
    """The ``digest`` of a document whose records are ``raw_records`` (validated dicts):
    ``sha256:<hex>`` of their RFC 8785 canonical JSON (SPEC "Recording format": digest).

    Raises:
        FormatError: a value cannot be canonicalized (``source``, record index and JSON
            Pointer given).
    """
    try:
        return _records_sha256(raw_records, source=source)
    except CanonicalizationError as exc:
        raise _canonical_failure(exc, source) from None


def recording_digest(rec: Recording) -> str:
    """The digest a recording is known by (SPEC "Recording format": digest): its own
    ``digest`` when it has one (verified when it was loaded, written when it was saved),
    else ``sha256:<hex>`` of the canonical JSON of its records — the value :func:`save_recording`
    would write. The workspace stores bases under it, branches name their base by it.

    Raises:
        CanonicalizationError: the recording has no digest and a record holds a value
            without a canonical form.
        FormatError: the recording has no digest and a record holds a value nested
            deeper than the nesting limit (:data:`core.record.nesting.MAX_DEPTH`).
    """
    if rec.digest:
        return rec.digest
    return _records_sha256([r.to_json_obj() for r in rec.records])


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str else None


def _first_call_id(tool_calls: Any) -> str | None:
    """The id of a raw message's first tool call (a string), else ``None``."""
    if type(tool_calls) is list and tool_calls and type(tool_calls[0]) is dict:
        return _str_or_none(tool_calls[0].get("id"))
    return None


class _MessageMemo:
    """Validates chat messages once per distinct message.

    A recording's model requests repeat the growing chat history; each raw message is
    compared (dict equality) with the ones already validated under the same role, string
    content, tool call id and first tool call's id, and an equal one reuses the
    validated (frozen) instance. The ids are in the key because the assistant messages
    of a tool-calling agent mostly share one content (``""``): under role and content
    alone they would all land in one bucket, each compared with every earlier one — a
    run of 50,000 such messages took minutes to load instead of seconds.
    """

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str, str | None, str | None], list[tuple[dict[str, Any], ChatMessage]]] = {}

    def messages(self, raw_msgs: list[Any], record: int, source: str) -> list[Any]:
        out: list[Any] = []
        for j, m in enumerate(raw_msgs):
            content = m.get("content") if type(m) is dict else None
            if type(content) is not str or type(m.get("role")) is not str:
                out.append(m)  # validated with the record
                continue
            key = (m["role"], content, _str_or_none(m.get("tool_call_id")), _first_call_id(m.get("tool_calls")))
            bucket = self.seen.get(key)
            if bucket is not None:
                for raw_prev, val in bucket:
                    if raw_prev == m:
                        out.append(val)
                        break
                else:
                    bucket.append((m, self._validate(m, record, j, source)))
                    out.append(bucket[-1][1])
            else:
                val = self._validate(m, record, j, source)
                self.seen[key] = [(m, val)]
                out.append(val)
        return out

    @staticmethod
    def _validate(m: dict[str, Any], record: int, j: int, source: str) -> ChatMessage:
        try:
            return ChatMessage.model_validate(m, strict=True)
        except ValidationError as exc:
            err = _validation_to_format_error(exc, source, None)
            raise FormatError(
                err.reason,
                file=source,
                record=record,
                path=f"/records/{record}/request/messages/{j}" + ("" if err.path in (None, "/") else err.path),
            ) from None


def _header_json(rec: Recording) -> dict[str, Any]:
    """The header values that are free JSON or typed JSON outside the records:
    ``metadata`` and (format v2) ``links``, keyed by their JSON Pointer prefix.

    Links are dumped in Python mode (their fields are strings, integers and a ``meta``
    object), so a NaN in a link's ``meta`` reaches canonicalization and is rejected
    instead of being written as ``null``."""
    out: dict[str, Any] = {"/metadata": rec.metadata}
    if rec.links is not None:
        out["/links"] = [link.model_dump(exclude_none=True) for link in rec.links]
    return out


def _check_header_depth(doc: dict[str, Any], source: str | None) -> None:
    """Check the values of a parsed document's header (everything but ``records``)
    against the nesting limit (:data:`RECORDING_VALUES`)."""
    check_values({k: v for k, v in doc.items() if k != "records"}, RECORDING_VALUES, source=source)


def _check_header_canonical(rec: Recording, source: str) -> None:
    """Canonicalize ``metadata`` and ``links`` (RFC 8785); raise :class:`FormatError`
    with the JSON Pointer of a value that has no canonical form."""
    for prefix, value in _header_json(rec).items():
        try:
            canonical_json(value)
        except CanonicalizationError as exc:
            raise FormatError(
                f"value cannot be canonicalized: {exc.reason}", file=source, path=prefix + exc.path
            ) from None


class _RecordOrder:
    """The checks across records of one recording, fed in order (SPEC "Recording
    format"): ``seq`` strictly increases, and no ``tool_call_id`` is answered twice in
    one run."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.prev_seq = -1
        self.answered: dict[tuple[str | None, str], int] = {}

    def check(self, rec: Any, i: int) -> None:
        """Check validated record ``i``. Raises FormatError naming the record and field."""
        if rec.seq <= self.prev_seq:
            raise FormatError(
                f"seq {rec.seq} does not increase (previous record has seq {self.prev_seq})",
                file=self.source,
                record=i,
                path=f"/records/{i}/seq",
            )
        self.prev_seq = rec.seq
        if type(rec) is ToolRecord and rec.tool_call_id:
            k = (rec.run_id, rec.tool_call_id)
            if k in self.answered:
                raise FormatError(
                    f"tool_call_id {rec.tool_call_id!r} is answered twice (records {self.answered[k]} and {i})",
                    file=self.source,
                    record=i,
                    path=f"/records/{i}/tool_call_id",
                )
            self.answered[k] = i


def recording_from_dict(obj: Any, *, source: str = "<dict>", verify_keys: bool | str = "auto") -> Recording:
    """Validate (and migrate) a parsed JSON document into a :class:`Recording`.

    Raises:
        FormatError: any of the cases listed in the module docstring.
    """
    ensure_recursion_limit()
    if isinstance(obj, dict):
        _check_header_depth(obj, source)
    doc, original = migrate(obj, source=source)
    doc = resolve_pool(doc, source=source)  # a version-3 document's references (none in older ones)
    raw_records = doc.get("records")
    if not isinstance(raw_records, list):
        raise FormatError("'records' must be an array", file=source, path="/records")
    header = {k: v for k, v in doc.items() if k != "records"}
    try:
        shell = Recording.model_validate(header, strict=True)
    except ValidationError as exc:
        raise _validation_to_format_error(exc, source, None) from None

    _check_header_canonical(shell, source)

    records = []
    validate = _RECORD_ADAPTER.validate_python
    memo = _MessageMemo()
    order = _RecordOrder(source)
    for i, raw in enumerate(raw_records):
        if type(raw) is dict and raw.get("kind") == "model":
            req = raw.get("request")
            if type(req) is dict and type(req.get("messages")) is list:
                raw = {**raw, "request": {**req, "messages": memo.messages(req["messages"], i, source)}}
        try:
            rec = validate(raw, strict=True)
        except ValidationError as exc:
            raise _validation_to_format_error(exc, source, i) from None
        order.check(rec, i)
        records.append(rec)

    digest = records_digest(raw_records, source=source)
    if shell.digest is not None and shell.digest != digest:
        raise FormatError(
            f"digest mismatch: header says {shell.digest}, records hash to {digest} "
            "(the file was changed or corrupted after it was saved)",
            file=source,
            path="/digest",
        )
    # A matching digest seals keys that save_recording recomputed; without one (or when
    # asked, as `validate` does) every key is recomputed and compared.
    if verify_keys is True or (verify_keys == "auto" and shell.digest is None):
        verify_record_keys(records, source=source)
    shell.records = records
    if original < FORMAT_VERSION:
        shell._migrated_from = original
    # A digest the file carried has just been checked against the (migrated) records, so
    # it still seals them (migration 1 → 2 leaves records untouched); a migrated file
    # without one (the 0.8.1 layout never had one) gets its digest when it is saved.
    shell.digest = digest if (shell.digest is not None or original == FORMAT_VERSION) else None
    return shell


#: bytes read to recognise a version-3 file by its fixed-width header
_INDEXED_HEAD = 160


def load_indexed(
    f: IndexedFile,
    *,
    verify_keys: bool | str = "auto",
    keep: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Recording:
    """:func:`_load_indexed` with the cyclic garbage collector paused (:func:`gc_paused`).

    Read and verify a version-3 file record by record (bounded memory beyond the
    records kept): the header as :func:`recording_from_dict` checks it, every pool value
    (its id is the hash of its canonical JSON), each record (parsed from its index range,
    references resolved, validated, ``seq`` increasing, no ``tool_call_id`` answered
    twice, its index row equal to the row computed from it), the digest over the
    logical records (each reference replaced by its value's canonical JSON) and, as for
    other versions, the keys when asked. ``keep=False`` verifies without keeping the
    records (the returned recording has none; its ``digest`` is verified);
    ``progress(done, total)`` is called every 4,096 records.

    Raises:
        FormatError: the first problem, naming the file, the record and the JSON Pointer
            (``/pool/<id>``, ``/records/<i>/...``, ``/index/...``, ``/digest``).
    """
    with gc_paused():
        return _load_indexed(f, verify_keys=verify_keys, keep=keep, progress=progress)


def _load_indexed(
    f: IndexedFile,
    *,
    verify_keys: bool | str = "auto",
    keep: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Recording:
    ensure_recursion_limit()
    source = f.source
    shell, original = indexed_header(f)
    pool = verify_pool(f)
    memo: dict[str, ChatMessage] = {}
    history_bytes: dict[str, list[bytes]] = {}
    history_messages: dict[str, list[Any]] = {}

    def messages_of(node: str, i: int) -> list[Any]:
        """The validated messages of history node ``node``: its parent's list plus its own
        (each node's list built once)."""
        path = f"/records/{i}/request/messages"
        return expand_history(
            node,
            lambda pid: f.pool_value(pid, record=i, path=path),
            history_messages,
            source,
            lambda m: validated_message(f, m, memo, pool, i, path),
        )

    def history_json(node: str) -> bytes:
        # the canonical bytes of the node's messages, built as messages_of builds their
        # objects (its parent's list plus its own); the walk's nodes are parsed already
        data = expand_history(node, f.pool_value, history_bytes, source, pool.__getitem__)
        return b",".join(data)

    validate = _RECORD_ADAPTER.validate_python
    h = BackgroundSha256(b"[")  # the digest, hashed on a second thread
    records: list[Any] = []
    order = _RecordOrder(source)
    n = len(f)
    error_at = first_error_position(f.index.columns) if n else None
    # the index as rows, compared with each record's row in C (the first column that
    # disagrees is found only on a mismatch)
    index_rows = list(zip(*(f.index.columns[name] for name in INDEX_COLUMNS))) if n else []
    error_record: Any = None
    with h:
        for i in range(n):
            data = f.record_bytes(i)
            raw = _indexed_record(f, i, data, pool, memo, messages_of)
            try:
                rec = validate(raw, strict=True)
            except ValidationError as exc:
                raise _validation_to_format_error(exc, source, i) from None
            order.check(rec, i)
            row = index_row(rec)
            if row != index_rows[i]:
                mismatch = describe_row_mismatch(f, i, row)
                if mismatch is not None:
                    raise mismatch
            try:
                parts = logical_bytes(data, pool, history_json)
            except KeyError as exc:  # checked when the record was resolved; a guard
                raise FormatError(
                    f"reference to pool id {exc.args[0]!r}, which the pool does not hold", file=source, record=i
                ) from None
            if i:
                h.update(b",")
            h.update_many(parts)
            if keep:
                records.append(rec)
            if i == error_at:
                error_record = rec
            if not i & 4095:
                if progress is not None:
                    progress(i, n)
                f.release_before(f.index.start[i])
        h.update(b"]")
        digest = "sha256:" + h.hexdigest()
    stated = f.header().get("summary")
    if stated is not None and stated != index_summary(f.index.columns, n, lambda _: error_record):
        raise FormatError(
            "the header's summary disagrees with the record index (the header was changed)",
            file=source,
            path="/summary",
        )
    if shell.digest != digest:
        raise FormatError(
            f"digest mismatch: header says {shell.digest}, records hash to {digest} "
            "(the file was changed or corrupted after it was saved)",
            file=source,
            path="/digest",
        )
    if keep and verify_keys is True:
        verify_record_keys(records, source=source)
    shell.records = records
    shell.digest = digest
    if original < FORMAT_VERSION:
        shell._migrated_from = original
    return shell


def indexed_header(f: IndexedFile) -> tuple[Recording, int]:
    """The validated header of a version-3 file (a recording without records; its
    ``digest`` as the header says, not yet verified) and the version it was written in.
    Reads only the header's bytes.

    Raises:
        FormatError: as :func:`recording_from_dict` for a header.
    """
    source = f.source
    header = f.header()
    if _suspicious_float(header):  # orjson reads an integer beyond 64 bits as a float
        header = _exact_reparse(bytes(f.data[: f.index.header_end]) + b"}", source)
    _check_header_depth(header, source)
    doc, original = migrate({**header, "records": []}, source=source)
    fields = {k: v for k, v in doc.items() if k != "records" and k not in ENCODING_MEMBERS}
    try:
        shell = Recording.model_validate(fields, strict=True)
    except ValidationError as exc:
        raise _validation_to_format_error(exc, source, None) from None
    _check_header_canonical(shell, source)
    return shell, original


def _indexed_record(
    f: IndexedFile,
    i: int,
    data: bytes,
    pool: dict[str, bytes],
    memo: dict[str, ChatMessage],
    messages_of: Callable[[str, int], list[Any]],
) -> dict[str, Any]:
    """Record ``i`` of ``f`` parsed from ``data`` with its references resolved: the
    messages of a request and a response as chat messages validated once per pool id
    (carrying their canonical bytes), any other reference as the pooled value."""
    raw = f.parse_record(i, data)
    if _may_hold_huge_int(data) and _HUGE_INT.search(data) is not None:
        _check_exact_integers(data, f.source, i)
    refs = data.count(b'{"$pool":"') + data.count(b'{"$history":"')
    if not refs:
        return raw
    if raw.get("kind") == "model":
        try:
            req = raw.get("request")
            if type(req) is dict and is_history_ref(req.get("messages")):
                raw["request"] = {**req, "messages": list(messages_of(req["messages"]["$history"], i))}
                refs -= 1
            elif type(req) is dict and type(req.get("messages")) is list:
                msgs = [
                    validated_message(f, m["$pool"], memo, pool, i, f"/records/{i}/request/messages/{j}")
                    if type(m) is dict and len(m) == 1 and type(m.get("$pool")) is str
                    else m
                    for j, m in enumerate(req["messages"])
                ]
                raw["request"] = {**req, "messages": msgs}
                refs -= sum(1 for m in msgs if type(m) is ChatMessage)
            resp = raw.get("response")
            if type(resp) is dict:
                m = resp.get("message")
                if type(m) is dict and len(m) == 1 and type(m.get("$pool")) is str:
                    raw["response"] = {
                        **resp,
                        "message": validated_message(f, m["$pool"], memo, pool, i, f"/records/{i}/response/message"),
                    }
                    refs -= 1
        except ValidationError as exc:
            raise _validation_to_format_error(exc, f.source, i) from None
    return f.resolve(raw, i) if refs else raw


def _check_exact_integers(data: bytes, source: str, i: int) -> None:
    """Refuse a record holding an integer beyond the I-JSON range (orjson would read it
    as an inexact float; the writer never writes one)."""
    try:
        exact = _exact_reparse(data, source)
    except ValueError:
        return
    found = _raw_big_int(exact, "")
    if found is not None:
        raise FormatError(
            "integer outside the I-JSON safe range ±(2**53-1) (the writer never writes one)",
            file=source,
            record=i,
            path=f"/records/{i}{found}",
        )


def _raw_big_int(value: Any, path: str) -> str | None:
    """JSON Pointer of the first integer outside ±(2**53-1) in ``value``, else ``None``."""
    t = type(value)
    if t is int:
        return path if abs(value) > 2**53 - 1 else None
    if t is dict:
        for k, v in value.items():
            found = _raw_big_int(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}")
            if found is not None:
                return found
    elif t is list:
        for j, v in enumerate(value):
            found = _raw_big_int(v, f"{path}/{j}")
            if found is not None:
                return found
    return None


def verify_record_keys(records: list[Any], *, source: str) -> None:
    """Recompute each tool/model key and compare. Raises :class:`FormatError`."""
    for i, rec in enumerate(records):
        if type(rec) is ToolRecord or type(rec) is ModelRecord:
            if rec.key is None:
                continue
            try:
                expected = rec.compute_key()
            except CanonicalizationError as exc:
                field = "arguments" if type(rec) is ToolRecord else "request"
                raise FormatError(
                    f"value cannot be canonicalized: {exc.reason}",
                    file=source,
                    record=i,
                    path=f"/records/{i}/{field}{exc.path}",
                ) from None
            if expected != rec.key:
                raise FormatError(
                    f"key {rec.key} does not match the canonical key of the call ({expected})",
                    file=source,
                    record=i,
                    path=f"/records/{i}/key",
                )


# A JSON number of 20+ digits in value position: orjson reads integers beyond 64 bits as
# (inexact) floats without a word, so such a document is re-read exactly.
_HUGE_INT = re.compile(rb"[:\[,][ \t\r\n]*-?[0-9]{20}")
#: each digit → "1", any other byte → "0" (``bytes.translate``)
_DIGIT_MASK: Final = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_TWENTY_DIGITS: Final = b"1" * 20


def _may_hold_huge_int(data: bytes) -> bool:
    """False when ``data`` has no run of 20 digits, so no match of :data:`_HUGE_INT`: a
    digit mask searched in C, five times faster than the pattern, which tries a match at
    every ``:``, ``,`` and ``[``."""
    if not isinstance(data, (bytes, bytearray)):
        data = bytes(data)
    return _TWENTY_DIGITS in data.translate(_DIGIT_MASK)


def _has_huge_integer(raw: bytes) -> bool:
    if not _may_hold_huge_int(raw):
        return False
    for m in _HUGE_INT.finditer(raw):
        if raw[max(0, m.start() - 6) : m.start()] != b"sha256":  # hex digests of keys
            return True
    return False


def _suspicious_float(value: Any) -> bool:
    """True when ``value`` holds an integral float of magnitude ≥ 2**63: what orjson makes
    of an integer literal beyond 64 bits. Without recursion (any depth)."""
    todo = [value]
    while todo:
        v = todo.pop()
        t = type(v)
        if t is float:
            if abs(v) >= 9.223372036854776e18 and v.is_integer():
                return True
        elif t is dict:
            todo.extend(v.values())
        elif t is list:
            todo.extend(v)
    return False


def _exact_reparse(raw: bytes, source: str) -> Any:
    def refuse(name: str) -> Any:
        raise FormatError(f"non-standard JSON literal {name}", file=source)

    return json.loads(raw, parse_constant=refuse)


def loads_recording(data: bytes | str, *, source: str = "<bytes>", verify_keys: bool | str = "auto") -> Recording:
    """Parse and verify a recording from bytes. Raises :class:`FormatError`.

    A document without a digest that holds a number of 20 or more digits is re-read
    with exact integers (orjson would read an integer beyond 64 bits as a float), so
    such an integer is rejected with its place instead of silently rounded. A matching
    digest rules this out: the writer never seals such a value.
    """
    ensure_recursion_limit()
    raw_bytes = data.encode() if isinstance(data, str) else data
    if is_indexed(raw_bytes[:_INDEXED_HEAD]):
        try:
            f = IndexedFile(raw_bytes, source)
        except FormatError as exc:
            if exc.path != "/index_offset":
                raise
            f = None  # the header's offsets are out of date (an edited file): read it whole
        if f is not None:
            return load_indexed(f, verify_keys=verify_keys)
    doc = parse_json(data, source=source)
    if isinstance(doc, dict):
        _check_header_depth(doc, source)
        raw = data.encode() if isinstance(data, str) else data
        # the digest seals records only: the header is checked whatever it says
        suspicious = (
            _suspicious_float(doc.get("metadata"))
            or _suspicious_float(doc.get("session"))
            or _suspicious_float(doc.get("links"))
        )
        if suspicious or (doc.get("digest") is None and _has_huge_integer(raw)):
            doc = _exact_reparse(raw, source)
    return recording_from_dict(doc, source=source, verify_keys=verify_keys)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a recording is read: loading creates
    millions of objects and no garbage cycles, and every full collection would rescan
    the growing heap (20–37% of a big load's time). Restores the collector's state,
    after moving the objects alive then to the permanent generation (``gc.freeze``):
    they are long-lived, hold no reference cycles, and are still freed by reference
    counting when dropped."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # what was loaded lives on: out of the collector's reach (gc.freeze), or the
            # first collection after this would scan all of it (seconds for a big run);
            # reference counting still frees it
            gc.freeze()
            gc.enable()


def load_recording(path: str | os.PathLike[str], *, verify_keys: bool | str = "auto") -> Recording:
    """Read, parse, migrate and verify the recording at ``path``.

    Raises:
        FormatError: unreadable file, or any validation failure (names the file).
    """
    source = str(path)
    data = read_input(path)  # regular files only, no size limit (core.record.reader)
    with gc_paused():
        return loads_recording(data, source=source, verify_keys=verify_keys)


def redact_recording(rec: Recording, redactor: SecretRedactor | None = None) -> int:
    """Redact ``rec`` in place; return how many records changed
    (:func:`core.record.recording_redaction.redact_recording`: field names, shapes and
    known secrets in the header's ``metadata`` and ``links`` and in the whole of every
    record, ``meta`` included; values learned anywhere scrubbed everywhere; tool results
    scrubbed get ``result.redacted = True``; keys of changed records are recomputed on
    the redacted values)."""
    return _redact_recording(rec, redactor)


def refresh_keys(rec: Recording) -> None:
    """Recompute the key of every tool/model record that has one (keys are derived).

    Records imported with ``key: None`` (identity not canonicalizable) keep ``None``.

    Raises:
        CanonicalizationError: a keyed record's identity cannot be canonicalized.
    """
    for r in rec.records:
        if (type(r) is ToolRecord or type(r) is ModelRecord) and r.key is not None:
            k = r.compute_key()
            if k != r.key:
                r.key = k


def recording_to_dict(rec: Recording) -> dict[str, Any]:
    """The logical document: a version-3 document without a pool (every value in place,
    nothing shared, no index) — header fields, ``links`` when set, the digest and the
    records (``None`` omitted). The digest seals the records only. Files are written by
    :func:`encode_recording`; this form is for code that reads the records as JSON.

    Raises:
        CanonicalizationError: a value has no canonical form.
        FormatError: the document would nest deeper than
            :data:`core.record.nesting.MAX_DEPTH` levels (it could not be read back):
            names the record and the JSON Pointer (the file is ``<recording>``).
    """
    header = _header_json(rec)
    for prefix, value in header.items():
        try:
            canonical_json(value)
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, prefix + exc.path) from None
    for i, r in enumerate(rec.records):
        if r.meta is not None:  # free JSON: checked as given, so NaN is rejected, not nulled
            try:
                canonical_json(r.meta)
            except CanonicalizationError as exc:
                raise CanonicalizationError(exc.reason, f"/{i}/meta{exc.path}") from None
    records = [r.to_json_obj() for r in rec.records]
    check_values({p[1:]: v for p, v in header.items()}, RECORDING_VALUES, source="<recording>")
    digest = _records_sha256(records, source="<recording>")
    doc: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "metadata": rec.metadata,
        "session": rec.session.to_json_obj(),
    }
    if "/links" in header:
        doc["links"] = header["/links"]
    doc["digest"] = digest
    doc["records"] = records
    return doc


def encode_recording(rec: Recording) -> Encoded:
    """The version-3 file of ``rec`` (:mod:`core.record.indexed`: message pool, one
    canonical record per line, record index) and its digest — what every writer writes.

    Raises:
        CanonicalizationError: a value has no canonical form (JSON Pointer from the
            document's top for the header, relative to ``records`` otherwise).
        FormatError: the document would nest deeper than
            :data:`core.record.nesting.MAX_DEPTH` levels (names the record and the JSON
            Pointer; the file is ``<recording>``).
    """
    header = _header_json(rec)
    for prefix, value in header.items():
        try:
            canonical_json(value)
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, prefix + exc.path) from None
    for i, r in enumerate(rec.records):
        if r.meta is not None:  # free JSON: checked as given, so NaN is rejected, not nulled
            try:
                canonical_json(r.meta)
            except CanonicalizationError as exc:
                raise CanonicalizationError(exc.reason, f"/{i}/meta{exc.path}") from None
    check_values({p[1:]: v for p, v in header.items()}, RECORDING_VALUES, source="<recording>")
    members: dict[str, Any] = {"metadata": rec.metadata, "session": rec.session.to_json_obj()}
    if "/links" in header:
        members["links"] = header["/links"]
    try:
        with gc_paused():  # millions of short-lived objects, no cycles
            return encode_indexed(rec, members)
    except RecursionError:
        records = [r.to_json_obj() for r in rec.records]
        check_values(records, _RECORDS_VALUES, source="<recording>", at=("records",))
        raise


def dumps_recording(rec: Recording, *, indent: bool = False) -> bytes:
    """Serialize as saved: the version-3 bytes :func:`save_recording` writes
    (:func:`encode_recording`), at any depth up to the nesting limit. ``indent`` is
    accepted for older callers; a version-3 file is always one record per line.

    Raises:
        CanonicalizationError: a value has no canonical form.
        FormatError: nested deeper than the limit (see :func:`encode_recording`).
    """
    return encode_recording(rec).data


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    A crash at any moment leaves either the old file or the new one, never a mix. Missing
    folders are created. The file is created with mode 0600.

    Raises:
        OutputError: the target is a directory or not a regular file (a device, a FIFO),
            a folder on the way is a file, or the write failed (disk full, permissions) —
            nothing is left behind.
    """
    target = Path(path)
    name = str(path)
    if not target.name:
        raise OutputError(name or "''", "no file name given")
    try:
        if target.is_dir():
            raise OutputError(name, "is a directory; give a file name")
        if target.exists() and not target.is_file():
            raise OutputError(
                name, "exists and is not a regular file (a device, FIFO or socket); refusing to replace it"
            )
    except OutputError:
        raise
    except OSError as exc:  # e.g. ENAMETOOLONG: a name of more than 255 bytes
        raise OutputError(name, f"cannot write: {exc.strerror or exc}") from None
    folder = target.parent if str(target.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(name, f"{_first_file_on_path(folder)} is a file, not a folder") from None
    except OSError as exc:
        raise OutputError(name, f"cannot create folder {folder}: {exc.strerror or exc}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(name, f"cannot write in {folder}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(name, f"cannot write: {exc.strerror or exc}") from None
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _first_file_on_path(folder: Path) -> Path:
    for parent in [*reversed(folder.parents), folder]:
        if parent.exists() and not parent.is_dir():
            return parent
    return folder


def save_recording(
    rec: Recording,
    path: str | os.PathLike[str],
    *,
    redactor: SecretRedactor | None = None,
    indent: bool = False,
) -> str:
    """Redact, then write ``rec`` atomically with a fresh digest; return the digest.

    Raises:
        CanonicalizationError: a record holds a value with no canonical JSON form.
        FormatError: the recording nests deeper than the nesting limit
            (:data:`core.record.nesting.MAX_DEPTH`); names ``path``, the record and the
            JSON Pointer. Nothing is written.
    """
    ensure_recursion_limit()
    redact_recording(rec, redactor)
    refresh_keys(rec)
    if rec.session is None:
        rec.session = SessionInfo()
    try:
        encoded = encode_recording(rec)
    except FormatError as exc:
        raise exc.with_file(str(path)) from None
    atomic_write_bytes(path, encoded.data)
    rec.digest = encoded.digest
    return encoded.digest
