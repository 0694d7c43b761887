"""Building one imported run: records, canonical keys, redaction, pairing, metadata.

Every importer converts its source into calls on a :class:`RunBuilder`, which

* numbers records (``seq`` from 0) and stamps ``run_id``;
* redacts by default (docs/format.md, "Redaction"): field names that look sensitive
  (:func:`core.record.redaction.is_sensitive_name`), secrets by shape (detect-secrets'
  pattern plugins and :data:`core.record.redaction.OWN_RULES`) and sensitive names
  inside text, with one :class:`core.record.redaction.SecretRedactor` per run that
  learns what it removes; a value removed anywhere is scrubbed everywhere in the run (a
  last pass when the run held any); tool results scrubbed are marked
  (``result.redacted``) and anything else scrubbed is warned;
* computes canonical keys (:func:`core.record.canonical.tool_key` / :func:`model_key`);
  a call whose identity cannot be canonicalized (NaN, huge integers, lone surrogates)
  is kept with ``key = None`` and a warning that replay cannot match it — never
  dropped. An identity that held an integer outside ±(2**53-1) counts as such even
  once the integer is tagged ``{"$bigint": DIGITS}`` (:func:`identity_key`);
* tags every integer outside ±(2**53-1) left anywhere in a record or in the metadata
  (:func:`tag_big_ints`), so the recording can be saved (its digest is RFC 8785
  canonical JSON) and decodes to the exact integer;
* settles the run's tool-call ids (:func:`unify_tool_call_ids`): one id per call, unique
  in the run (the loader rejects an id answered twice; a reused id becomes ``ID~N``, an
  empty one the client's id or ``~N``), the same in the response that asked for the
  call, its tool record and every later request message — every consumer pairs by id;
* writes ``metadata.source`` = ``{format, file, sha256, run, index, warnings,
  incomplete}``.

:class:`CallPairer` pairs tool results with the calls that asked for them: by id,
and when an id is empty or was rewritten, by name and then by position (oldest
unanswered first), with a warning.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, TypeVar

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import CanonicalizationError, FormatError, name_text
from ..record.canonical import canonical_json, model_key_of, normalize_stop
from ..record.jsonvalues import (
    BIGINT_TAG,
    SAFE_INT_MAX,
    display_text,
    encode_value,
    find_big_int,
    is_tagged,
    json_loads_exact,
    might_hold_big_int,
)
from ..record.nesting import depth_reason, dumps, exceeds, is_parse_depth_failure
from ..record.recording import (
    FORMAT_VERSION,
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Record,
    Recording,
    SessionInfo,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
    adopt_message_canonical,
    message_canonical,
)
from ..record.recording_redaction import redact_recording
from ..record.redaction import SECRET_VALUE_PATTERNS, SecretRedactor, redact
from ._source import SourceFile, as_object
from .base import ImportedRun, ImportWarning

MAX_STORED_WARNINGS = 200
# every text SECRET_VALUE_PATTERNS can match contains one of these (a fast pre-check);
# if core.record.redaction's patterns change, the pre-check turns itself off (matches everything)
_KNOWN_PATTERNS = {
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-(?:proj-)?[A-Za-z0-9_\-]{16,}",
    r"AKIA[0-9A-Z]{16}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"hf_[A-Za-z0-9]{20,}",
    r"(?i)(?<=bearer )[A-Za-z0-9._\-]{16,}",
}
_TRIGGER = (
    re.compile(r"sk-|AKIA|gh[pousr]_|hf_|(?i:bearer )")
    if {p.pattern for p in SECRET_VALUE_PATTERNS} == _KNOWN_PATTERNS
    else re.compile("")
)
PRODUCER = "chassis-inspector import"


def default_redactor() -> SecretRedactor:
    """The redactor importers use (one per run): field names, shapes, names in text;
    it learns what it removes; parsed values passed again (tool schemas) are answered
    from memory."""
    return SecretRedactor(memo=True)


def to_rfc3339(value: Any) -> tuple[str | None, bool]:
    """Normalize a timestamp to RFC 3339.

    Accepts ISO 8601 strings (with or without offset) and Unix epoch seconds (int or
    float). Returns ``(text, assumed_utc)``; ``assumed_utc`` is True when the source
    carried no offset and UTC was assumed. Unparseable values give ``(None, False)``.
    """
    if value is None or isinstance(value, bool):
        return None, False
    if isinstance(value, (int, float)):
        try:
            dt = datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None, False
        return dt.isoformat().replace("+00:00", "Z"), False
    if isinstance(value, str):
        text = value.strip()
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None, False
        if dt.tzinfo is None:
            return dt.isoformat() + "Z", True
        return text, False
    return None, False


def parse_arguments(raw: Any) -> tuple[Any, bool]:
    """Decode tool-call arguments.

    A JSON object (or a string holding one) → ``(dict, False)``. Anything else — a JSON
    string literal, truncated JSON, an empty string, an array — is kept exactly as
    found, with ``True`` (the ``raw_arguments`` marker); so is an arguments string that
    held invalid Unicode (a :mod:`core.record.jsonvalues` tag), and one whose JSON nests
    deeper than the nesting limit (:data:`core.record.nesting.MAX_DEPTH` levels; the
    string is one JSON value). ``None`` → ``({}, False)``.
    """
    if raw is None:
        return {}, False
    if isinstance(raw, dict):
        if is_tagged(raw):  # an arguments string that held invalid Unicode (core.record.jsonvalues tag)
            return raw, True
        return raw, False
    if isinstance(raw, str):
        try:
            # orjson reads an integer beyond 64 bits as an inexact float: read exactly then
            parsed = json_loads_exact(raw) if might_hold_big_int(raw) else orjson.loads(raw)
        except (ValueError, RecursionError):  # orjson.JSONDecodeError, json.JSONDecodeError
            return raw, True
        if isinstance(parsed, dict) and not exceeds(parsed):
            return parsed, False
        return raw, True
    return raw, True


# --------------------------------------------------------------------------- keys


def tool_identity(tool: str, arguments: Any) -> dict[str, Any]:
    """What :func:`core.record.canonical.tool_key` hashes: ``{kind: "tool", tool, arguments}``."""
    return {"kind": "tool", "tool": tool, "arguments": arguments}


def record_identity(rec: ToolRecord | ModelRecord) -> dict[str, Any]:
    """What ``rec.compute_key()`` hashes (:func:`core.record.canonical.tool_key` /
    :func:`core.record.canonical.model_key`): ``{kind: "tool", tool, arguments}`` or
    ``{kind: "model", model, messages, tools, stop, options}``."""
    if isinstance(rec, ToolRecord):
        return tool_identity(rec.tool, rec.arguments)
    return {"kind": "model", "model": rec.model, **rec.request.identity()}


def identity_key(identity: dict[str, Any]) -> tuple[str | None, str | None]:
    """The canonical key of a call identity, or why the call gets none.

    Returns ``("sha256:<hex>", None)`` — SHA-256 of the RFC 8785 canonical JSON of
    ``identity`` (:func:`tool_identity` / :func:`record_identity`; the same bytes
    ``tool_key``/``model_key`` hash) — or ``(None, reason)`` when

    * the identity cannot be canonicalized (a raw NaN, an integer outside ±(2**53-1),
      a lone surrogate: reason names the value and its JSON Pointer), or
    * it holds an integer outside ±(2**53-1) already tagged ``{"$bigint": DIGITS}``
      (:mod:`core.record.jsonvalues`). The tag could be hashed, but the importer rule (SPEC "Recording format", Privacy) is that a call whose
      identity holds a value that cannot be canonicalized is imported *without a key*
      (replay cannot match it: a live call carries the raw integer, which has no
      canonical form), so the tagged form is not keyed either.

    Cheap on the common path: the tag search runs only when the canonical bytes contain
    ``"$bigint"``.
    """
    try:
        data = canonical_json(identity)
    except CanonicalizationError as exc:
        return None, f"{exc.reason} at {exc.path or '/'}"
    if b'"$bigint"' in data:
        where = find_big_int(identity)
        if where is not None:
            return None, (
                f'integer outside the I-JSON safe range ±(2**53-1) at {where}, kept exactly as {{"$bigint": ...}}'
            )
    return "sha256:" + hashlib.sha256(data).hexdigest(), None


def extends(messages: list[ChatMessage], last: list[ChatMessage]) -> int:
    """``len(last)`` when ``messages`` starts with the messages of ``last`` (a growing
    history: compared in C, each pair by identity first, then by value), else 0."""
    k = len(last)
    return k if k <= len(messages) and messages[:k] == last else 0


#: how many message lists :class:`ModelKeys` remembers (a run may interleave a few
#: conversations: an agent, its judge, a sub-agent)
_KEY_CHAINS = 4
_TAG = b'"$bigint"'


def _holds_tag(value: Any) -> bool:
    """Whether ``value`` (tools, options) may hold a ``{"$bigint": ...}`` tag or a raw
    integer orjson cannot write: its compact JSON contains ``"$bigint"``, or orjson
    refuses it (then the plain path decides)."""
    try:
        return _TAG in orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, a key that is no string, …
        return True


class ModelKeys:
    """Model keys of a run's requests at linear cost in a growing chat history.

    The key is :func:`identity_key` of ``{kind: "model", model, messages, tools, stop,
    options}`` (what :func:`core.record.canonical.model_key` hashes). Here each message's
    canonical JSON comes from :func:`core.record.recording.message_canonical` (once per
    message object) and the list of those bytes of a request is built from the list of
    the last request it extends (``messages[:len(last)] == last``, compared in C, by
    identity first), so a history of ``n`` messages asked ``n`` times costs ``O(n)``
    canonicalizations, not ``O(n²)``; :func:`core.record.canonical.model_key_of` then
    streams those bytes into SHA-256, resuming from the longest prefix it hashed before.

    Whatever the fast path cannot decide exactly as :func:`identity_key` does — a value
    with no canonical form (the reason and its JSON Pointer), a ``{"$bigint": ...}`` tag
    anywhere (no key) — is handed to :func:`identity_key` on the whole identity, so the
    key and the reason are always those of the plain path.
    """

    def __init__(self) -> None:
        #: recent message lists: (messages, their canonical bytes, any bytes holding "$bigint")
        self._chains: list[tuple[list[ChatMessage], list[bytes], bool]] = []

    def _parts(self, messages: list[ChatMessage]) -> tuple[list[bytes], bool] | None:
        """The canonical bytes of ``messages`` and whether one holds ``"$bigint"``; ``None``
        when a message has no canonical form."""
        n = len(messages)
        best: tuple[list[ChatMessage], list[bytes], bool] | None = None
        for chain in self._chains:
            k = len(chain[0])
            if k <= n and (best is None or k > len(best[0])) and messages[:k] == chain[0]:
                best = chain
        if best is not None:
            self._chains.remove(best)
            start, parts, tagged = len(best[0]), best[1], best[2]
        else:
            start, parts, tagged = 0, [], False
        if start < n:
            new: list[bytes] = []
            try:
                for m in messages[start:]:
                    data = message_canonical(m)
                    if _TAG in data:
                        tagged = True
                    new.append(data)
            except CanonicalizationError:
                return None
            parts = parts + new  # a new list: the chain's own stays as it was
        self._chains.insert(0, (list(messages), parts, tagged))
        del self._chains[_KEY_CHAINS:]
        return parts, tagged

    def key(
        self, model: str, messages: list[ChatMessage], tools: Any, stop: list[str], options: Any
    ) -> tuple[str | None, str | None]:
        """``(key, None)`` or ``(None, why)`` exactly as :func:`identity_key` of the
        request's identity (``stop`` already normalized)."""
        got = self._parts(messages)
        if got is not None and not got[1] and not _holds_tag(tools) and not _holds_tag(options):
            try:
                return model_key_of(model, got[0], tools, stop, options), None
            except CanonicalizationError:
                pass
        identity = {
            "kind": "model",
            "model": model,
            "messages": [m.to_json_obj() for m in messages],
            "tools": tools,
            "stop": stop,
            "options": options,
        }
        return identity_key(identity)


# --------------------------------------------------------------------------- construction

_IMMUTABLE_DEFAULTS = (type(None), bool, int, float, str)
_M = TypeVar("_M", bound=BaseModel)
_object_setattr = object.__setattr__


class Construct(Generic[_M]):
    """``Construct(Model)(**values)`` is ``Model.model_construct(**values)`` — the same
    ``__dict__`` (every field in declaration order, a default for each one not given),
    ``__pydantic_fields_set__`` (the names given), no extra and no private values — made
    by copying a template of the defaults instead of pydantic's per-field loop (about a
    fifth of its cost; an import makes a few objects per source line).

    Only for models where that is what ``model_construct`` does (pydantic 2,
    ``BaseModel.model_construct``): no field alias or validation alias, no
    ``model_post_init``, not a root model, ``extra`` not ``"allow"``, and every default
    an immutable scalar without a factory (``model_construct`` copies a default with
    ``smart_deepcopy``, which returns such a value itself). For any other model, and for
    a call that passes a name that is no field or leaves out a required one, it calls
    ``model_construct``.
    """

    def __init__(self, cls: type[_M]) -> None:
        self.cls = cls
        fields = cls.__pydantic_fields__
        self.required = frozenset(n for n, f in fields.items() if f.is_required())
        fast = (
            not cls.__pydantic_post_init__
            and not cls.__pydantic_root_model__
            and cls.model_config.get("extra") != "allow"
            and all(f.alias is None and f.validation_alias is None for f in fields.values())
        )
        template: dict[str, Any] = {}
        for n, f in fields.items():
            if f.is_required():
                template[n] = None  # always given (checked per call)
            elif f.default_factory is None and type(f.default) in _IMMUTABLE_DEFAULTS:
                template[n] = f.default
            else:
                template[n] = None
                self.required |= {n}  # its default is made per instance: the fast path needs it given
        self.template: dict[str, Any] | None = template if fast else None

    def __call__(self, **values: Any) -> _M:
        template = self.template
        if template is None or not values.keys() >= self.required:
            return self.cls.model_construct(**values)
        state = template.copy()
        state.update(values)
        if len(state) != len(template):  # a name that is no field
            return self.cls.model_construct(**values)
        m = self.cls.__new__(self.cls)
        _object_setattr(m, "__dict__", state)
        _object_setattr(m, "__pydantic_fields_set__", set(values))
        _object_setattr(m, "__pydantic_extra__", None)
        _object_setattr(m, "__pydantic_private__", None)
        return m


_CHAT_MESSAGE = Construct(ChatMessage)


def _adopt_plain_canonical(msg: ChatMessage) -> None:
    """Give :func:`core.record.recording.message_canonical` the canonical JSON of a
    message of strings only (``role``, ``content`` and ``tool_call_id`` / ``name`` when
    set; no tool calls), so the model keys and the pool do not serialize it through
    pydantic: its saved form is those members, and RFC 8785 writes them as orjson's
    compact JSON with sorted keys (the names are ASCII; :func:`core.record.canonical.canonical_json`
    hands strings to orjson unchanged). A value that is not a plain ``str`` or that orjson
    refuses (a lone surrogate) leaves the message to ``message_canonical``."""
    saved = {"content": msg.content, "name": msg.name, "role": msg.role, "tool_call_id": msg.tool_call_id}
    plain = {k: v for k, v in saved.items() if v is not None}
    if any(type(v) is not str for v in plain.values()):
        return
    try:
        data = orjson.dumps(plain)
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate
        return
    adopt_message_canonical(msg, data)


_TOOL_CALL = Construct(ToolCall)
_MODEL_REQUEST = Construct(ModelRequest)
_USAGE = Construct(Usage)
_MODEL_RESPONSE = Construct(ModelResponse)
_MODEL_RECORD = Construct(ModelRecord)
_ERROR_INFO = Construct(ErrorInfo)
_TOOL_RECORD = Construct(ToolRecord)
_TOOL_RESULT = Construct(ToolResult)
_INTERRUPT_RECORD = Construct(InterruptRecord)


# --------------------------------------------------------------------------- big integers

_RECORD: TypeAdapter[Any] = TypeAdapter(Record)


def _big(v: Any) -> bool:
    return type(v) is int and not -SAFE_INT_MAX <= v <= SAFE_INT_MAX


def tag_big_ints(records: list[Any], warn: Callable[[str, str], None]) -> int:
    """Tag, in place, every integer outside ±(2**53-1) left raw in ``records``.

    Such an integer has no RFC 8785 canonical form, so a recording holding one cannot be
    saved (its digest) — see :mod:`core.record.jsonvalues`, ``{"$bigint": DIGITS}``. A record
    holding one is rebuilt from its JSON with the integers tagged (each warned through
    ``warn(place, message)``, place ``record <seq>/<JSON Pointer>``); token counts
    (``response.usage``) that large are dropped with a warning (they are typed
    integers). Keys are left as they are: a call whose identity held a raw integer
    already got ``key = None`` (it could not be canonicalized).

    Cheap when there is nothing to do: each record is serialized once (pydantic's JSON
    writer) and searched for a number of 16+ digits (:func:`core.record.jsonvalues.might_hold_big_int`);
    a model request's messages are serialized and searched once per message object (a
    growing history repeats them in every request; a number token never spans two
    messages, so this finds what searching the whole record finds). Returns the number
    of records rebuilt.
    """
    changed = 0
    clean: dict[int, tuple[ChatMessage, bool]] = {}  # id(message) -> (message, holds no candidate)

    def message_clean(m: ChatMessage) -> bool:
        hit = clean.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        try:
            ok = not might_hold_big_int(m.__pydantic_serializer__.to_json(m, exclude_none=True, warnings=False))
        except ValueError:  # PydanticSerializationError: the record's JSON form decides
            ok = False
        clean[id(m)] = (m, ok)
        return ok

    prev: list[ChatMessage] = []  # the last request's messages, and whether all are clean
    prev_clean = True
    for i, r in enumerate(records):
        js: bytes | None
        try:
            if type(r) is ModelRecord:
                msgs = r.request.messages
                lo = extends(msgs, prev)
                ok = (prev_clean or not lo) and all(message_clean(m) for m in msgs[lo:])
                prev, prev_clean = msgs, ok
                js = r.__pydantic_serializer__.to_json(
                    r, exclude_none=True, exclude={"request": {"messages"}}, warnings=False
                )
                if not ok:
                    js = None
            else:
                js = r.__pydantic_serializer__.to_json(r, exclude_none=True, warnings=False)
        except ValueError:  # PydanticSerializationError (e.g. a lone surrogate): look at the JSON form
            js = None
        if js is not None and not might_hold_big_int(js):
            continue
        obj = r.to_json_obj()
        place = f"record {obj.get('seq', i)}"
        usage = (obj.get("response") or {}).get("usage") if obj.get("kind") == "model" else None
        dropped = isinstance(usage, dict) and any(_big(v) for v in usage.values())
        if dropped:
            del obj["response"]["usage"]
            warn(f"{place}/response/usage", "token usage outside ±(2**53-1) is not a count; dropped")
        new, vws = encode_value(obj, place=place)
        if new is obj and not dropped:
            continue
        try:
            nr = _RECORD.validate_python(new)
        except ValidationError as exc:
            warn(
                place,
                f"record could not be rebuilt with its large integers tagged ({exc.error_count()} "
                "validation error(s)); saving it will fail",
            )
            continue
        for w in vws:
            warn(w.place, w.message)
        records[i] = nr
        changed += 1
    return changed


def tag_big_ints_in(value: Any, place: str, warn: Callable[[str, str], None]) -> Any:
    """``value`` (metadata, any JSON) with every integer outside ±(2**53-1) tagged
    ``{"$bigint": DIGITS}`` (each warned at ``place`` + JSON Pointer); ``value`` itself
    when it holds none (checked by orjson's 53-bit integer limit, in C)."""
    try:
        orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER)
        return value
    except TypeError:  # orjson.JSONEncodeError: a big integer (or something else odd)
        pass
    if find_big_int(value) is None:
        return value
    new, vws = encode_value(value, place=place)
    for w in vws:
        warn(w.place, w.message)
    return new


def id_text(value: Any) -> str:
    """Text of a source value used in an id (run ids): a :mod:`core.record.jsonvalues` tag as
    what it stands for (``{"$bigint": "1152921504606846976"}`` → its digits), anything
    else as ``str(value)``."""
    return display_text(value) if is_tagged(value) else str(value)


def json_text(value: Any) -> str:
    """Compact JSON text of ``value`` (for messages that must be strings)."""
    try:
        return dumps(value).decode()
    except TypeError:
        return repr(value)


@dataclass
class PendingCall:
    """A tool call asked for by a model response and not yet answered."""

    id: str
    name: str
    arguments: Any
    raw: bool
    place: str
    at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class CallPairer:
    """Pairs tool results with the calls that asked for them.

    :meth:`add` registers a call; :meth:`take` finds its call for a result: the
    unanswered call with the same id; else (empty, missing or rewritten id) the oldest
    unanswered call with the same tool name; else the oldest unanswered call. Every
    fallback adds a warning to ``builder``.
    """

    def __init__(self, builder: RunBuilder) -> None:
        self.builder = builder
        self.pending: list[PendingCall] = []

    def add(self, call: PendingCall) -> None:
        self.pending.append(call)

    def take(self, call_id: str | None, name: str | None, place: str) -> PendingCall | None:
        """Remove and return the call a result answers (``None`` if none is pending)."""
        if call_id:
            for i, c in enumerate(self.pending):
                if c.id == call_id:
                    return self.pending.pop(i)
        how = "has no tool_call_id" if not call_id else f"has tool_call_id {call_id!r}, which no pending call has"
        if name:
            for i, c in enumerate(self.pending):
                if c.name == name:
                    self.builder.warn(
                        place, f"tool result {how}; paired with the oldest unanswered {name!r} call ({c.id or 'no id'})"
                    )
                    return self.pending.pop(i)
        if self.pending:
            c = self.pending.pop(0)
            self.builder.warn(place, f"tool result {how}; paired by position with call {c.id or '(no id)'} ({c.name})")
            return c
        return None

    def drain(self) -> list[PendingCall]:
        """Remove and return every unanswered call, oldest first."""
        out, self.pending = self.pending, []
        return out


# --------------------------------------------------------------------------- tool-call ids


@dataclass(eq=False)
class _Issue:
    """One tool call a model response asked for: where (record index, call index), the
    id the source gave it (``src``, maybe empty), and what it is recorded as (``final``)."""

    model: int
    index: int
    src: str
    name: str
    final: str = ""
    answered_by: Any = None  # the tool record paired with it
    client_id: str = ""  # for an empty src: the id a later request gives it


def _call_fp(m: ChatMessage) -> tuple[Any, ...]:
    """What identifies an assistant message with tool calls apart from the calls' ids:
    its text and each call's name and arguments (a client may rewrite ids in history)."""
    calls = tuple((tc.name, json_text(tc.arguments)) for tc in m.tool_calls or ())
    return (m.text if not isinstance(m.content, list) else json_text(m.content), calls)


_Mapping = dict[int, list[_Issue | None]]
_Open = list[tuple[str, str, _Issue]]


def _map_calls(
    messages: list[ChatMessage],
    lo: int,
    by_fp: dict[tuple[Any, ...], list[list[_Issue]]],
    by_src: dict[str, list[_Issue]],
    fp_cache: dict[int, tuple[Any, ...]],
    out: _Mapping,
) -> tuple[list[list[_Issue]], bool]:
    """The first step of :func:`_map_request` on ``messages[lo:]``, from the last message
    back: each assistant message with tool calls → the earlier calls it carries (into
    ``out``). Returns the responses' groups taken by fingerprint, and whether every such
    message was matched by fingerprint (none by id)."""
    taken: set[int] = set()
    groups: list[list[_Issue]] = []
    all_by_fp = True
    for i in range(len(messages) - 1, lo - 1, -1):
        m = messages[i]
        if m.role != "assistant" or not m.tool_calls:
            continue
        fp = fp_cache.get(id(m))
        if fp is None:
            fp = fp_cache[id(m)] = _call_fp(m)
        found = next((g for g in reversed(by_fp.get(fp, ())) if id(g) not in taken), None)
        if found is not None:
            taken.add(id(found))
            taken.update(id(c) for c in found)
            groups.append(found)
            out[i] = list(found)
            continue
        all_by_fp = False
        mapped: list[_Issue | None] = []
        for tc in m.tool_calls:
            cands = by_src.get(tc.id, ()) if tc.id else ()
            mapped.append(next((c for c in reversed(cands) if id(c) not in taken), None))
            if mapped[-1] is not None:
                taken.add(id(mapped[-1]))
        out[i] = mapped
    return groups, all_by_fp


def _map_results(messages: list[ChatMessage], lo: int, out: _Mapping, open_calls: _Open) -> None:
    """The second step of :func:`_map_request` on ``messages[lo:]``, first to last: each
    ``tool`` message → the call it answers (``open_calls``: the calls of the messages
    before, not yet answered; updated)."""
    for i in range(lo, len(messages)):
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            for tc, issue in zip(m.tool_calls, out.get(i, ())):
                if issue is not None:
                    open_calls.append((tc.id, tc.name, issue))
        elif m.role == "tool" and open_calls:
            tid = m.tool_call_id or ""
            k = next((n for n, (cid, _, _) in enumerate(open_calls) if tid and cid == tid), None)
            if k is None and m.name:
                k = next((n for n, (cid, nm, _) in enumerate(open_calls) if nm == m.name), None)
            if k is None and not tid:
                k = 0
            if k is not None:
                out[i] = [open_calls.pop(k)[2]]


def _map_request(
    messages: list[ChatMessage],
    by_fp: dict[tuple[Any, ...], list[list[_Issue]]],
    by_src: dict[str, list[_Issue]],
    fp_cache: dict[int, tuple[Any, ...]],
) -> tuple[_Mapping, _Open]:
    """Which earlier call each tool call and ``tool`` message of one request stands for.

    An assistant message with tool calls is the earlier response it repeats (same text,
    same call names and arguments; from the last message back, each takes the latest such
    response no later message of this request took), else each call is the latest earlier
    call with its id. A ``tool`` message answers the call of an assistant message before it
    in the request: the one with its id, else the first unanswered one of its name, else
    (no id) the first unanswered one. Returns ``{message index: [issue or None, ...]}``
    (one entry per tool call, or one for a ``tool`` message) and the calls left
    unanswered at the end of the request."""
    out: _Mapping = {}
    _map_calls(messages, 0, by_fp, by_src, fp_cache, out)
    open_calls: _Open = []
    _map_results(messages, 0, out, open_calls)
    return out, open_calls


@dataclass
class _Mapped:
    """The mapping of one request: ``delta`` holds the entries of ``messages[lo:]``; those
    of ``messages[:lo]`` are the mapping of the request mapped before it (``lo > 0``: this
    request extends that one)."""

    messages: list[ChatMessage]
    lo: int
    delta: _Mapping
    open_calls: _Open
    groups: int  # how many responses' groups were registered when it was mapped


class _CarriesCalls:
    """``carries(messages)``: whether a request holds a message with tool calls or a
    ``tool`` message; a request that extends the last one asked about looks at its new
    messages only."""

    def __init__(self) -> None:
        self._last: list[ChatMessage] = []
        self._has = False

    def __call__(self, messages: list[ChatMessage]) -> bool:
        k = extends(messages, self._last)
        has = (k > 0 and self._has) or any(m.tool_calls or m.role == "tool" for m in messages[k:])
        self._last, self._has = messages, has
        return has


def unify_tool_call_ids(
    records: list[Any], warn: Callable[[str, str], None], place_of: Callable[[int], str] | None = None
) -> set[int]:
    """Give every tool call of a run one id, unique in the run, used everywhere it appears.

    Sources reuse ids (tau-bench, SWE-agent 1.x) and leave them empty (Gemini's calls have
    none; a client may invent one in the next request), while every consumer of a
    recording — the timeline's "answered by" links, the transcript, the audit's
    ``tool_call_id`` lineage, the canonical keys the diff aligns by, the replay engine's
    transcript — pairs a tool result with its call *by id*. So ids are settled once, at
    import, for the response that asked for the call, its tool record and every later
    request message that carries it:

    * each tool record is paired with the call it answers (the oldest unanswered call of a
      response before it with the record's id, else — an empty id on one side — the
      oldest unanswered call without an id of the same tool);
    * the n-th call a run gives id ``X`` is recorded as ``X`` (n = 1) or ``X~n``;
    * a call without an id gets the id a later request gives it (the client's rewrite),
      else the id its result carried, else ``~n`` (the n-th call without one);
    * messages of later requests are mapped to the calls they carry (see
      :func:`_map_request`: by position and content, never by id alone) and renamed;
    * a tool record that answers no call keeps its id, made unique with ``~n``.

    Each renaming is warned once (``place_of(record index)`` names the place). Records
    and messages are replaced, never mutated (messages are shared between requests).
    Returns the indexes of the model records whose request changed (their keys must be
    computed again)."""
    issues: list[_Issue] = []
    per_model: dict[int, list[_Issue]] = {}
    for i, r in enumerate(records):
        if type(r) is ModelRecord and r.response is not None and r.response.message.tool_calls:
            group = [_Issue(i, j, tc.id or "", tc.name) for j, tc in enumerate(r.response.message.tool_calls)]
            per_model[i] = group
            issues.extend(group)
    if not issues:
        seen: Counter[tuple[Any, str]] = Counter()
        for i, r in enumerate(records):
            if type(r) is ToolRecord and r.tool_call_id:
                k = (r.run_id, r.tool_call_id)
                seen[k] += 1
                if seen[k] > 1:
                    new = f"{r.tool_call_id}~{seen[k]}"
                    warn(place_of(i) if place_of else f"record {r.seq}", _reused(r.tool_call_id, new))
                    records[i] = r.model_copy(update={"tool_call_id": new})
        return set()

    if _already_settled(records, issues):
        return set()

    # 1. pair tool records with calls; map every request's messages to calls. A request
    # that extends the one mapped before it (a growing history) maps only its new
    # messages when that gives the plain mapping: its new assistant messages took, by
    # fingerprint, exactly the responses registered since — then its older messages see
    # what they saw before and map as before (see _Mapped).
    open_by_src: dict[str, list[_Issue]] = {}
    by_fp: dict[tuple[Any, ...], list[list[_Issue]]] = {}
    by_src: dict[str, list[_Issue]] = {}
    fp_cache: dict[int, tuple[Any, ...]] = {}
    mappings: dict[int, _Mapped] = {}
    groups_in_order: list[list[_Issue]] = []
    last: _Mapped | None = None
    carries = _CarriesCalls()
    for i, r in enumerate(records):
        if type(r) is ModelRecord:
            msgs = r.request.messages
            if carries(msgs):
                mp: _Mapped | None = None
                lo = extends(msgs, last.messages) if last is not None else 0
                if last is not None and lo:
                    delta: _Mapping = {}
                    took, all_by_fp = _map_calls(msgs, lo, by_fp, by_src, fp_cache, delta)
                    since = groups_in_order[last.groups :]
                    if all_by_fp and len(took) == len(since) and {id(g) for g in took} == {id(g) for g in since}:
                        open_calls = list(last.open_calls)
                        _map_results(msgs, lo, delta, open_calls)
                        mp = _Mapped(msgs, lo, delta, open_calls, len(groups_in_order))
                if mp is None:
                    full, open_calls = _map_request(msgs, by_fp, by_src, fp_cache)
                    mp = _Mapped(msgs, 0, full, open_calls, len(groups_in_order))
                mappings[i] = last = mp
                for mi, found in mp.delta.items():
                    m = msgs[mi]
                    written = [tc.id for tc in m.tool_calls or ()] if m.role == "assistant" else [m.tool_call_id or ""]
                    for issue, wid in zip(found, written):
                        if issue is not None and not issue.src and wid and not issue.client_id:
                            issue.client_id = wid
            asked = per_model.get(i)
            if asked and r.response is not None:
                msg = r.response.message
                fp = fp_cache.get(id(msg))
                if fp is None:
                    fp = fp_cache[id(msg)] = _call_fp(msg)
                by_fp.setdefault(fp, []).append(asked)
                groups_in_order.append(asked)
                for issue in asked:
                    open_by_src.setdefault(issue.src, []).append(issue)
                    by_src.setdefault(issue.src, []).append(issue)
        elif type(r) is ToolRecord:
            tid = r.tool_call_id or ""
            pool = open_by_src.get(tid, []) if tid else []
            at: int | None = 0 if pool else None
            if at is None:
                pool = open_by_src.get("", [])
                at = next((n for n, c in enumerate(pool) if c.name == r.tool), None)
            if at is not None:
                pool.pop(at).answered_by = i

    # 2. the id each call is recorded as
    linked = {c.answered_by for c in issues if c.answered_by is not None}
    reserved = set(by_src)  # ids the source gave calls
    reserved.update(
        r.tool_call_id for i, r in enumerate(records) if type(r) is ToolRecord and r.tool_call_id and i not in linked
    )
    given: Counter[str] = Counter()
    taken: set[str] = set()
    unnamed = 0
    for c in issues:
        if c.src:
            given[c.src] += 1
            n = given[c.src]
            final = c.src if n == 1 else f"{c.src}~{n}"
            while final in taken or (n > 1 and final in reserved):
                n += 1
                final = f"{c.src}~{n}"
        else:
            rec_id = records[c.answered_by].tool_call_id if c.answered_by is not None else None
            final = next((x for x in (c.client_id, rec_id) if x and x not in taken and x not in reserved), "")
            while not final or final in taken or final in reserved:
                unnamed += 1
                final = f"~{unnamed}"
        taken.add(final)
        c.final = final

    # 3. rename: responses, tool records, request messages
    cache: dict[tuple[int, tuple[str, ...]], ChatMessage] = {}

    def renamed(m: ChatMessage, ids: list[str | None]) -> ChatMessage:
        if m.role == "assistant" and m.tool_calls:
            new_ids = tuple(x if x is not None else tc.id for tc, x in zip(m.tool_calls, ids))
            if new_ids == tuple(tc.id for tc in m.tool_calls):
                return m
        else:
            new_ids = (ids[0] if ids and ids[0] is not None else (m.tool_call_id or ""),)
            if new_ids[0] == (m.tool_call_id or ""):
                return m
        hit = cache.get((id(m), new_ids))
        if hit is None:
            if m.role == "assistant" and m.tool_calls:
                calls = [tc if tc.id == x else tc.model_copy(update={"id": x}) for tc, x in zip(m.tool_calls, new_ids)]
                hit = m.model_copy(update={"tool_calls": calls})
            else:
                hit = m.model_copy(update={"tool_call_id": new_ids[0]})
            cache[(id(m), new_ids)] = hit
        return hit

    changed: set[int] = set()
    # the request of the last mapped record as renamed, and whether it changed: a request
    # that extends it (_Mapped.lo > 0) starts with it
    prev_new: list[ChatMessage] = []
    prev_changed = False
    for i, r in enumerate(records):
        if type(r) is ModelRecord:
            mapped = mappings.get(i)
            if mapped is not None:
                msgs = r.request.messages
                lo, delta = mapped.lo, mapped.delta
                tail = [
                    renamed(m, [c.final if c is not None else None for c in delta[k]]) if k in delta else m
                    for k, m in enumerate(msgs[lo:], start=lo)
                ]
                head_changed = lo > 0 and prev_changed
                if head_changed or any(a is not b for a, b in zip(tail, msgs[lo:])):
                    new_msgs = (prev_new if head_changed else msgs[:lo]) + tail
                    r = r.model_copy(update={"request": r.request.model_copy(update={"messages": new_msgs})})
                    changed.add(i)
                    prev_new, prev_changed = new_msgs, True
                else:
                    prev_new, prev_changed = msgs, False
            asked = per_model.get(i)
            if asked and r.response is not None and any(c.final != c.src for c in asked):
                msg = renamed(r.response.message, [c.final for c in asked])
                r = r.model_copy(update={"response": r.response.model_copy(update={"message": msg})})
                for c in asked:
                    if c.final != c.src:
                        where = place_of(c.answered_by) if place_of and c.answered_by is not None else f"record {r.seq}"
                        if c.src:
                            warn(where, _reused(c.src, c.final))
                        else:
                            how = (
                                "the id a later request gives it"
                                if c.final == c.client_id
                                else "the id its result carried"
                                if c.answered_by is not None and c.final == records[c.answered_by].tool_call_id
                                else "a made-up id"
                            )
                            warn(where, f"tool call of {c.name!r} has no id; recorded as {c.final!r} ({how})")
            records[i] = r
    answer_of = {c.answered_by: c for c in issues if c.answered_by is not None}
    orphans: Counter[str] = Counter()
    for i, r in enumerate(records):
        if type(r) is not ToolRecord:
            continue
        answered = answer_of.get(i)
        if answered is not None:
            if r.tool_call_id != answered.final:
                records[i] = r.model_copy(update={"tool_call_id": answered.final})
        elif r.tool_call_id:
            orphans[r.tool_call_id] += 1
            if r.tool_call_id in taken or orphans[r.tool_call_id] > 1:
                n = max(orphans[r.tool_call_id], 2)
                new = f"{r.tool_call_id}~{n}"
                while new in taken:
                    n += 1
                    new = f"{r.tool_call_id}~{n}"
                taken.add(new)
                warn(place_of(i) if place_of else f"record {r.seq}", _reused(r.tool_call_id, new))
                records[i] = r.model_copy(update={"tool_call_id": new})
    return changed


def _already_settled(records: list[Any], issues: list[_Issue]) -> bool:
    """The common case, checked in one pass over distinct messages: every call has its own
    non-empty id, every id a request message carries is one of them, and no two tool
    records share an id — then nothing is renamed."""
    srcs = {c.src for c in issues}
    if "" in srcs or len(srcs) != len(issues):
        return False
    seen: set[int] = set()
    answered: set[str] = set()
    prev: list[ChatMessage] = []
    for r in records:
        if type(r) is ModelRecord:
            msgs = r.request.messages
            lo = extends(msgs, prev)
            prev = msgs
            for m in msgs[lo:]:  # the messages before lo were looked at (a growing history)
                if id(m) in seen:
                    continue
                seen.add(id(m))
                if m.tool_calls and any(tc.id not in srcs for tc in m.tool_calls):
                    return False
                if m.role == "tool" and (m.tool_call_id or "") not in srcs:
                    return False
        elif type(r) is ToolRecord and r.tool_call_id:
            if r.tool_call_id in answered:
                return False
            answered.add(r.tool_call_id)
    return True


def _reused(src: str, final: str) -> str:
    return (
        f"tool_call_id {src!r} is used by more than one call in this run; recorded as {final!r} "
        "(in the response that asked for it, its result and every later request)"
    )


class RunBuilder:
    """Accumulates the records of one run; see the module docstring.

    Args:
        fmt: importer name (``--from`` value), recorded in ``metadata.source.format``.
        src: the source file.
        run_id: the run's id in the source (stamped on every record).
        index: the run's position in the source (0-based).
        redactor: value redactor (default :func:`default_redactor`); ``None`` disables
            redaction entirely (tests of raw mapping only).
    """

    def __init__(
        self,
        fmt: str,
        src: SourceFile,
        run_id: str,
        index: int = 0,
        *,
        redactor: SecretRedactor | None | bool = True,
    ) -> None:
        self.fmt = fmt
        self.src = src
        self.run_id = run_id
        self.index = index
        self.redact_enabled = redactor is not None and redactor is not False
        self.redactor = default_redactor() if redactor is True else (redactor or None)
        self.records: list[Any] = []
        self.warnings: list[ImportWarning] = []
        self._places: dict[int, str] = {}  # record index -> its place in the source (tool records)
        self.keys = ModelKeys()
        self._shared: dict[bytes, tuple[ChatMessage, int]] = {}
        self._assumed_utc = False
        self._redacted_places: list[str] = []
        self.pairer = CallPairer(self)

    # -- helpers ---------------------------------------------------------------------

    def warn(self, place: str, message: str) -> None:
        """Add a warning located at ``place`` in the source."""
        self.warnings.append(ImportWarning(place, message))

    def scrub(self, value: Any, place: str) -> Any:
        """Redact ``value`` (field names + secret-looking values); note where."""
        redactor = self.redactor
        if not self.redact_enabled or redactor is None:  # redact_enabled implies a redactor
            return value
        t = type(value)
        if t is str:
            if not _TRIGGER.search(value) and not redactor.known:
                return value  # no pattern can match: skip the six-pattern scan
        elif (t is not dict and t is not list) or not value:
            return value  # a number, a bool, None, {} or []: redact() gives it back unchanged
        new, changed = redact(value, redactor)
        if changed:
            self._redacted_places.append(place)
        return new

    def time(self, value: Any) -> str | None:
        """RFC 3339 text of a source timestamp (UTC assumed when it has no offset)."""
        text, assumed = to_rfc3339(value)
        if assumed:
            self._assumed_utc = True
        return text

    def message(
        self,
        role: str,
        content: Any = None,
        *,
        tool_calls: list[ToolCall] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        place: str = "",
    ) -> ChatMessage:
        """A redacted :class:`ChatMessage`. Content that is not a string, a list or
        ``None`` is stored as its JSON text (with a warning)."""
        if content is not None and not isinstance(content, (str, list)):
            if is_tagged(content) and BIGINT_TAG in content:  # an integer: its digits are its JSON text
                self.warn(place, "message content is int; stored as JSON text")
                content = content[BIGINT_TAG]
            else:
                self.warn(place, f"message content is {type(content).__name__}; stored as JSON text")
                content = json_text(content)
        content = self.scrub(content, place) if content is not None else None
        if tool_calls:
            fixed = []
            for tc in tool_calls:
                args = self.scrub(tc.arguments, place)
                fixed.append(tc if args is tc.arguments else tc.model_copy(update={"arguments": args}))
            tool_calls = fixed
        msg = _CHAT_MESSAGE(
            role=role if isinstance(role, str) else str(role),
            content=content,
            tool_calls=tool_calls or None,
            tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
            name=name if isinstance(name, str) else None,
        )
        if not tool_calls and (content is None or type(content) is str):
            _adopt_plain_canonical(msg)
        return msg

    def shared_message(self, source: Any, make: Callable[[], ChatMessage]) -> ChatMessage:
        """``make()`` — the conversion of the source message ``source`` (a parsed JSON
        value) — or the very object an equal source message was converted to before in
        this run, so a source that writes the whole history into every call (Inspect's
        ``input``, a provider request body) gives requests that share message objects
        (keys, big-integer checks and format v3's message pool work once per object).

        Equal means the same compact JSON (orjson; a value orjson cannot write is never
        shared). A conversion is reused only when it warned nothing and redacted nothing
        (those name the place of each copy) and the redactor has learned no secret since
        (a later copy would be scrubbed of it) — so the records are those of converting
        every copy.
        """
        try:
            key = orjson.dumps(source)
        except TypeError:  # orjson.JSONEncodeError
            return make()
        known = len(self.redactor.known) if self.redactor is not None else 0
        hit = self._shared.get(key)
        if hit is not None and hit[1] == known:
            return hit[0]
        warned, scrubbed = len(self.warnings), len(self._redacted_places)
        msg = make()
        if len(self.warnings) == warned and len(self._redacted_places) == scrubbed:
            self._shared[key] = (msg, len(self.redactor.known) if self.redactor is not None else 0)
        return msg

    def tool_call(self, call_id: Any, name: Any, raw_args: Any, place: str) -> ToolCall:
        """A :class:`ToolCall` with decoded arguments (raw kept and marked if not an object)."""
        args, raw = parse_arguments(raw_args)
        if raw:
            self.warn(place, f"tool-call arguments are not a JSON object ({_describe_raw(raw_args)}); kept raw")
        elif isinstance(raw_args, str) and find_big_int(args) is not None:
            args, vws = encode_value(args, place=f"{place}.arguments")
            for w in vws:
                self.warn(w.place, w.message)
        return _TOOL_CALL(
            id=call_id if isinstance(call_id, str) else ("" if call_id is None else str(call_id)),
            name=name if isinstance(name, str) else str(name or ""),
            arguments=args,
            raw_arguments=True if raw else None,
        )

    # -- records ---------------------------------------------------------------------

    def model(
        self,
        *,
        model: str,
        messages: list[ChatMessage],
        response: ChatMessage | None,
        tools: list[Any] | None = None,
        options: dict[str, Any] | None = None,
        stop: Any = None,
        finish_reason: str | None = None,
        usage: tuple[int, int] | None = None,
        at: str | None = None,
        duration: float | None = None,
        error: ErrorInfo | None = None,
        place: str = "",
    ) -> ModelRecord:
        """Append a model record; returns it. ``usage`` is ``(input, output)`` tokens."""
        tools = self.scrub(list(tools or []), place)
        options = self.scrub(dict(options or {}), place)
        stop_n = (
            normalize_stop(stop)
            if stop is None
            or isinstance(stop, str)
            or (isinstance(stop, list) and all(isinstance(s, str) for s in stop))
            else []
        )
        # the identity model_key() hashes; each message serialized once (ModelKeys)
        key, why = self.keys.key(model, messages, tools, stop_n, options)
        if key is None:
            self.warn(
                place, f"model call cannot be canonicalized ({why}); imported without a key: replay cannot match it"
            )
        request = _MODEL_REQUEST(messages=messages, tools=tools, stop=stop_n, options=options)
        resp = None
        if response is not None:
            u = None
            if usage is not None:
                u = _USAGE(input_tokens=int(usage[0] or 0), output_tokens=int(usage[1] or 0))
            resp = _MODEL_RESPONSE(message=response, finish_reason=finish_reason, usage=u)
        rec = _MODEL_RECORD(
            seq=len(self.records),
            at=at,
            run_id=self.run_id,
            generation_id=None,
            replayed=False,
            live_fallback=False,
            kind="model",
            key=key,
            model=model,
            request=request,
            response=resp,
            duration_seconds=_dur(duration),
            error=error,
        )
        self.records.append(rec)
        return rec

    def tool(
        self,
        *,
        tool: str,
        arguments: Any,
        tool_call_id: str | None,
        content: Any = None,
        error: ErrorInfo | None = None,
        artifact: Any = None,
        at: str | None = None,
        duration: float | None = None,
        place: str = "",
        identity_known: bool = True,
    ) -> ToolRecord:
        """Append a tool record; returns it.

        ``identity_known=False`` (the source never recorded the call's arguments) keeps
        ``key`` ``None`` with a warning.
        """
        arguments = self.scrub(arguments, place)
        scrubbed_before = len(self._redacted_places)
        content = self.scrub(content, place)
        artifact = self.scrub(artifact, place)
        if error is not None:
            error = _ERROR_INFO(type=error.type, message=self.scrub(error.message, place))
        redacted = len(self._redacted_places) > scrubbed_before
        key: str | None = None
        if identity_known:
            key, why = identity_key(tool_identity(tool, arguments))
            if key is None:
                self.warn(
                    place, f"tool call cannot be canonicalized ({why}); imported without a key: replay cannot match it"
                )
        else:
            self.warn(
                place, "the tool call's arguments are not in the source; imported without a key: replay cannot match it"
            )
        # ids are made unique and consistent with the messages when the run is built
        # (unify_tool_call_ids): here the source's id is kept as written
        tcid = tool_call_id if isinstance(tool_call_id, str) and tool_call_id else None
        self._places[len(self.records)] = place
        rec = _TOOL_RECORD(
            seq=len(self.records),
            at=at,
            run_id=self.run_id,
            generation_id=None,
            replayed=False,
            live_fallback=False,
            kind="tool",
            key=key,
            tool=tool,
            arguments=arguments,
            tool_call_id=tcid,
            result=_TOOL_RESULT(content=content, artifact=artifact, error=error, redacted=redacted),
            duration_seconds=_dur(duration),
        )
        self.records.append(rec)
        return rec

    def interrupt(self, value: Any, *, at: str | None = None, place: str = "") -> InterruptRecord:
        """Append an interrupt record (human input, an unknown message role, a state change)."""
        rec = _INTERRUPT_RECORD(
            seq=len(self.records),
            at=at,
            run_id=self.run_id,
            generation_id=None,
            replayed=False,
            live_fallback=False,
            kind="interrupt",
            value=self.scrub(value, place),
        )
        self.records.append(rec)
        return rec

    def unanswered(self, place: str) -> None:
        """Record every pending call that never got a result (result ``None``, warned)."""
        for c in self.pairer.drain():
            self.warn(c.place, f"tool call {c.id or '(no id)'} ({c.name}) has no recorded result")
            self.tool(tool=c.name, arguments=c.arguments, tool_call_id=c.id, content=None, at=c.at, place=c.place)

    # -- finishing -------------------------------------------------------------------

    def build(
        self,
        metadata: dict[str, Any] | None = None,
        *,
        created_at: str | None = None,
        incomplete: bool = False,
    ) -> ImportedRun:
        """Finish: a validated-shape :class:`Recording` wrapped in an :class:`ImportedRun`."""
        if self._assumed_utc:
            self.warn("timestamps", "timestamps carry no UTC offset; read as UTC")
        if self._redacted_places:
            places = sorted(set(self._redacted_places))
            shown = ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")
            self.warn("redaction", f"secret-looking values or sensitive fields were redacted in {shown}")
        meta = self.scrub(dict(metadata or {}), "metadata")
        for i in unify_tool_call_ids(self.records, self.warn, lambda i: self._places.get(i, f"record {i}")):
            r = self.records[i]
            if r.key is not None:  # renamed ids are part of the request: its key changes
                rq = r.request
                r.key = self.keys.key(r.model, rq.messages, rq.tools, rq.stop, rq.options)[0]
        if self.src.may_hold_big_ints:
            tag_big_ints(self.records, self.warn)
            meta = tag_big_ints_in(meta, "metadata", self.warn)
        warnings = [str(w) for w in self.warnings]
        source = {
            "format": self.fmt,
            "file": name_text(self.src.path.name),  # a name that is not UTF-8 is stored escaped
            "sha256": self.src.sha256,
            "run": self.run_id,
            "index": self.index,
            "redacted": self.redact_enabled,
            "warnings": warnings[:MAX_STORED_WARNINGS],
        }
        if len(warnings) > MAX_STORED_WARNINGS:
            source["warnings_omitted"] = len(warnings) - MAX_STORED_WARNINGS
        if incomplete:
            source["incomplete"] = True
        meta["source"] = source
        rec = Recording.model_construct(
            format="chassis.replay",
            format_version=FORMAT_VERSION,
            metadata=meta,
            session=SessionInfo(
                mode="record", fallback="error", created_at=created_at, producer=f"{PRODUCER} --from {self.fmt}"
            ),
            records=self.records,
            digest=None,
        )
        if self.redactor is not None and self.redactor.known:
            # a secret removed in one place is scrubbed where it appeared before it (propagation)
            redact_recording(rec, self.redactor)
        return ImportedRun(run_id=self.run_id, recording=rec, warnings=list(self.warnings), incomplete=incomplete)


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (RFC 3339 texts), to the microsecond; ``None``
    when either is missing or unreadable, or the difference is negative."""
    if not start or not end:
        return None
    try:
        d = datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
    except (ValueError, TypeError):
        return None
    s = d.total_seconds()
    return round(s, 6) if s >= 0 else None


def _dur(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if f == f and f >= 0 else None


def _describe_raw(raw: Any) -> str:
    if isinstance(raw, dict):
        return "a string holding invalid Unicode"
    if isinstance(raw, str):
        if raw == "":
            return "an empty string"
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if is_parse_depth_failure(exc):
                return f"JSON {depth_reason()}"
            return "not valid JSON, e.g. truncated"
        if exceeds(parsed):
            return f"JSON {depth_reason()}"
        return "JSON that is not an object"
    return f"a {type(raw).__name__}"


def usage_pair(u: Any) -> tuple[int, int] | None:
    """``(input, output)`` tokens from an OpenAI-, Anthropic- or Inspect-style usage object."""
    if not isinstance(u, dict):
        return None
    inp = u.get("input_tokens", u.get("prompt_tokens"))
    out = u.get("output_tokens", u.get("completion_tokens"))
    if inp is None and out is None:
        return None
    try:
        return int(inp or 0), int(out or 0)
    except (TypeError, ValueError):
        return None


def openai_message(b: RunBuilder, d: Any, place: str) -> ChatMessage:
    """Convert an OpenAI-style chat message (dict) to a :class:`ChatMessage`.

    Keeps ``role`` as written (unknown roles included), ``content``, ``tool_calls``
    (``function.arguments`` decoded; non-object arguments kept raw and marked),
    ``tool_call_id`` and ``name``; other fields (``extra``, provider fields) are not
    part of the chat message and are dropped.
    """
    if not isinstance(d, dict):
        b.warn(place, f"message is a {type(d).__name__}, not an object; stored as user text")
        return b.message("user", json_text(d), place=place)
    role = d.get("role")
    if not isinstance(role, str):
        b.warn(place, "message has no role; kept with role 'unknown'")
        role = "unknown"
    calls = None
    raw_calls = d.get("tool_calls")
    if isinstance(raw_calls, list) and raw_calls:
        calls = []
        for j, tc in enumerate(raw_calls):
            if not isinstance(tc, dict):
                b.warn(f"{place}.tool_calls[{j}]", "tool call is not an object; skipped")
                continue
            fn = as_object(tc.get("function"))
            name = fn.get("name", tc.get("name"))
            args = fn.get("arguments", tc.get("arguments")) if fn else tc.get("arguments")
            calls.append(b.tool_call(tc.get("id"), name, args, f"{place}.tool_calls[{j}]"))
    return b.message(
        role, d.get("content"), tool_calls=calls, tool_call_id=d.get("tool_call_id"), name=d.get("name"), place=place
    )


class JsonImporter:
    """Mixin for importers of JSON sources: read, parse, and recover on truncation.

    Subclasses implement :meth:`convert` (document → runs) and may implement
    :meth:`recover` (salvaged :class:`~._source.Truncation` → runs, each marked
    ``incomplete``), :meth:`parse_otherwise` (a source that is not one JSON document,
    e.g. JSON Lines) and :meth:`value_warnings` (which of the parser's non-standard-value
    warnings the runs get).
    """

    name: ClassVar[str] = ""
    #: whether a source that is a JSON array holds one run per element (its value
    #: warnings then go to the run of their element); ``False`` for an array of parts
    array_of_runs: ClassVar[bool] = True

    def load(self, path: Any) -> list[ImportedRun]:
        """Import every run; see :meth:`core.importers.base.Importer.load`.

        Raises:
            FormatError: damaged or not of this format.
            TruncatedSourceError: the file ends early; ``recovered`` holds what could be
                rebuilt from before the damage.
        """
        from ._source import TruncatedSourceError, parse_source_json, read_source

        src = read_source(path)
        try:
            doc, value_warnings = parse_source_json(src)
        except TruncatedSourceError as exc:
            recovered: list[ImportedRun] = []
            if exc.partial is not None:
                try:
                    recovered = self.recover(src, exc.partial)
                except (FormatError, KeyError, TypeError, ValueError, AttributeError):
                    recovered = []
            raise truncated_error(exc, recovered) from None
        except FormatError as exc:
            doc, value_warnings = self.parse_otherwise(src, exc), []
        runs = self.convert(src, doc)
        if value_warnings:
            attach_value_warnings(
                runs, self.value_warnings(doc, value_warnings), by_index=self.array_of_runs and isinstance(doc, list)
            )
        return runs

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse_otherwise(self, src: SourceFile, error: FormatError) -> Any:
        """The document of a source that is not one JSON document (default: none —
        ``error``, the parser's, is raised)."""
        raise error

    def value_warnings(self, doc: Any, warnings: list[Any]) -> list[Any]:
        """The parser's non-standard-value warnings the runs of ``doc`` get (default:
        all of them)."""
        return warnings

    def recover(self, src: SourceFile, partial: Any) -> list[ImportedRun]:
        """Runs recoverable from a truncated document (default: none)."""
        return []


def attach_value_warnings(runs: list[ImportedRun], warnings: list[Any], *, by_index: bool) -> None:
    """Add the parser's non-standard-value warnings (NaN, invalid Unicode) to the runs.

    With ``by_index`` (the document is an array of runs) a warning whose JSON Pointer
    starts with ``/<i>/`` goes to run ``i`` only; otherwise to every run.
    """
    for w in warnings:
        place = str(getattr(w, "place", ""))
        iw = ImportWarning(place or "/", str(getattr(w, "message", w)))
        targets = runs
        if by_index:
            head = place.lstrip("/").split("/", 1)[0]
            if head.isdigit():
                targets = [r for r in runs if r.recording.metadata.get("source", {}).get("index") == int(head)]
        for r in targets:
            r.warnings.append(iw)
            src_meta = r.recording.metadata.get("source")
            if isinstance(src_meta, dict) and isinstance(src_meta.get("warnings"), list):
                if len(src_meta["warnings"]) < MAX_STORED_WARNINGS:
                    src_meta["warnings"].append(str(iw))


def truncated_error(exc: Any, recovered: list[ImportedRun]) -> Any:
    """A copy of a :class:`TruncatedSourceError` that says what was recovered."""
    from ._source import TruncatedSourceError

    for r in recovered:
        r.incomplete = True
        src_meta = r.recording.metadata.get("source")
        if isinstance(src_meta, dict):
            src_meta["incomplete"] = True
    if recovered:
        reason = (
            f"{exc.reason}; {len(recovered)} run(s) before the damage can be recovered, "
            "marked incomplete (chassis-inspector import --recover)"
        )
    else:
        reason = f"{exc.reason}; no complete run before the damage"
    new = TruncatedSourceError(
        reason, file=exc.file, partial=exc.partial, line=exc.line, column=exc.column, path=exc.path
    )
    new.recovered = recovered
    new.damage = exc.damage
    return new


def format_error(src: SourceFile, reason: str, path: str | None = None) -> Any:
    """A :class:`FormatError` naming the source file."""
    return FormatError(reason, file=src.name, path=path)
