"""The recording model (format version 3): header plus ordered records.

Shapes follow SPEC "Recording format" and its "Format versions" addition (version 2 =
version 1 plus an optional per-record ``meta`` object and run-level ``links``, never part
of a key); every field is documented in ``docs/format.md``
and the JSON Schema generated from these models is committed at
``core/record/schema/recording.schema.json``.

Records are a discriminated union on ``kind``: :class:`ToolRecord`,
:class:`ModelRecord`, :class:`InterruptRecord`, :class:`SnapshotRecord`,
:class:`LifecycleRecord`. Loading and saving live in :mod:`core.record.io`; this module only
knows shapes and derived values (keys).
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from functools import partial
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .canonical import (
    CanonicalizationError,
    IdentityCache,
    canonical_json,
    common_prefix,
    intern_key,
    model_key_of,
    normalize_stop,
    tool_key,
)
from .nesting import dumps, json_mode_dump

FORMAT_NAME: Final = "chassis.replay"
FORMAT_VERSION: Final = 3

RECORD_KINDS = ("tool", "model", "interrupt", "snapshot", "lifecycle")
LIFECYCLE_EVENTS = (
    "plugin.mount",
    "plugin.unmount",
    "generation.publish",
    "generation.draining",
    "generation.retired",
    "harness.shutdown",
)
STANDARD_ROLES = ("system", "user", "assistant", "tool")
#: Link relations with a documented meaning (docs/format.md § "Version 2"); other rels
#: that are RFC 8288 ``reg-rel-type`` tokens are accepted and kept as written.
LINK_RELS = ("sub-run", "parent", "fork", "forked-from", "replay-of", "source")
_REL_TOKEN = re.compile(r"[a-z][a-z0-9.\-]*")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    def to_json_obj(self) -> dict[str, Any]:
        """JSON-ready dict with ``None`` fields omitted (the saved form), at any depth up
        to the nesting limit (:func:`core.record.nesting.json_mode_dump`)."""
        out: dict[str, Any] = json_mode_dump(self.model_dump, exclude_none=True)
        return out


# --------------------------------------------------------------------------- messages


class ToolCall(_Model):
    """A tool call requested by an assistant message.

    ``arguments`` is normally a JSON object; an importer that met arguments that are not
    an object keeps them raw (any JSON value) and says so in ``raw_arguments``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    arguments: Any = Field(default_factory=dict)
    raw_arguments: bool | None = None


class ChatMessage(_Model):
    """One chat message.

    ``role`` is one of ``system|user|assistant|tool``; a role outside those (e.g.
    mini-swe-agent's ``exit``) is kept as written and shown as "other" by the app.
    ``content`` is a string, a list of content parts (objects with a ``type``), or
    ``None``.

    Messages are frozen: a recording's growing chat history repeats the same messages in
    every model request, and loading shares one instance per repeated message (see
    :mod:`core.record.io`). Build a changed copy with ``model_copy(update=...)``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str
    content: str | list[Any] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        """Plain text of ``content`` (text parts joined; other parts skipped)."""
        c = self.content
        if c is None:
            return ""
        if isinstance(c, str):
            return c
        out = []
        for part in c:
            if isinstance(part, dict):
                if part.get("type") in (None, "text") and isinstance(part.get("text"), str):
                    out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)


_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])

#: the canonical JSON of each chat message object, computed once per (frozen) object
_MESSAGE_CANONICAL = IdentityCache()


def message_canonical(message: ChatMessage) -> bytes:
    """The RFC 8785 canonical JSON of ``message`` in its saved form (``None`` fields
    omitted), computed once per message object: messages are frozen, and a growing chat
    history repeats the same objects in every request (the model key, the digest and the
    message pool of format version 3 all start from these bytes).

    Raises:
        CanonicalizationError: a value of the message has no canonical form (JSON
            Pointer relative to the message).
    """
    cached: bytes | None = _MESSAGE_CANONICAL.get(message)
    if cached is None:
        cached = canonical_json(message.to_json_obj())
        _MESSAGE_CANONICAL.put(message, cached)
    return cached


class _MessageChains(threading.local):
    def __init__(self) -> None:
        #: recent message lists and their messages' canonical JSON, most recent first
        self.chains: list[tuple[list[ChatMessage], list[bytes]]] = []


_message_chains = _MessageChains()


def messages_canonical(messages: list[ChatMessage]) -> list[bytes]:
    """:func:`message_canonical` of each message of a request, in order. A list that
    starts with the messages of one of the last few lists asked for (per thread; the
    same message objects — a growing history) takes that prefix's bytes as a slice, so
    the cost is that of the new messages. The list returned must not be changed.

    Raises:
        CanonicalizationError: a message has no canonical form (JSON Pointer
            ``/<index>/...`` relative to the list).
    """
    n = len(messages)
    if n == 0:
        return []
    chains = _message_chains.chains
    best: tuple[list[ChatMessage], list[bytes]] | None = None
    shared = 0
    first = messages[0]
    for chain in chains:
        if chain[0][0] is first:
            k = common_prefix(chain[0], messages)
            if k > shared:
                best, shared = chain, k
    out = best[1][:shared] if best is not None else []
    for j in range(shared, n):
        try:
            out.append(message_canonical(messages[j]))
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, f"/{j}{exc.path}") from None
    if best is not None and shared == len(best[0]):
        chains.remove(best)
    chains.insert(0, (list(messages), out))
    del chains[_CHAINS:]
    return out


_CHAINS = 8


def adopt_message_canonical(message: ChatMessage, data: bytes) -> None:
    """Record ``data`` as the canonical JSON of ``message`` (a reader that built the
    message from bytes it checked to be that canonical form: the pool of a version-3
    file), so it is not serialized again."""
    _MESSAGE_CANONICAL.put(message, data)


class Usage(_Model):
    """Token usage of one model call (counts of tokens)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class ErrorInfo(_Model):
    """An error: ``type`` (e.g. ``timeout``, ``ValueError``) and a ``message``."""

    type: str
    message: str = ""


# --------------------------------------------------------------------------- records


def check_rfc3339(v: str | None) -> str | None:
    """Accept ``None`` or an RFC 3339 date-time (RFC 3339 §5.6: a time and an offset,
    ``Z`` or ``±hh:mm``); raise ``ValueError`` otherwise."""
    if v is None:
        return v
    try:
        parsed = datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{v!r} is not an RFC 3339 timestamp") from None
    if "T" not in v.upper() and " " not in v:
        raise ValueError(f"{v!r} is not an RFC 3339 timestamp (no time of day)")
    if parsed.tzinfo is None:
        raise ValueError(f"{v!r} is not an RFC 3339 timestamp (no offset: add Z or ±hh:mm)")
    return v


def _json_type(v: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
    }.get(type(v), type(v).__name__)


def check_json_object(v: Any, field: str) -> Any:
    """Accept ``None`` (absent) or a dict; otherwise raise a validation error whose
    message says ``field`` must be a JSON object (format v2 ``meta``)."""
    if v is None or isinstance(v, dict):
        return v
    raise PydanticCustomError(
        "json_object", "{field} must be a JSON object, found {found}", {"field": field, "found": _json_type(v)}
    )


class RecordBase(_Model):
    """Fields every record has: ``seq`` (0-based, strictly increasing), optional ``at``
    (RFC 3339 timestamp), ``run_id``, ``generation_id``, ``replayed``, ``live_fallback``,
    and (format v2) ``meta``.

    ``meta`` is a free-form JSON object about how the interaction was observed (SPEC
    "Format versions": e.g. ``observed: true`` for an unmediated call, the importer's
    ``action_parser``, the upstream ``http_status``). It is never part of a key, is
    redacted and canonicalized like every other value, and — being inside the record —
    is sealed by the ``digest``.
    """

    seq: int = Field(ge=0)
    at: str | None = None
    run_id: str | None = None
    generation_id: str | None = None
    replayed: bool = False
    live_fallback: bool = False
    meta: dict[str, Any] | None = None

    @field_validator("at")
    @classmethod
    def _rfc3339(cls, v: str | None) -> str | None:
        return check_rfc3339(v)

    @field_validator("meta", mode="before")
    @classmethod
    def _meta_object(cls, v: Any) -> Any:
        return check_json_object(v, "meta")

    @field_validator("key", mode="after", check_fields=False)
    @classmethod
    def _interned_key(cls, v: str | None) -> str | None:
        # the key of a tool or model call (the kinds that have one), loaded or given, is
        # interned as a computed one is (core.record.canonical.intern_key)
        return None if v is None else intern_key(v)

    @property
    def at_datetime(self) -> datetime | None:
        """``at`` parsed, or ``None``."""
        if self.at is None:
            return None
        return datetime.fromisoformat(self.at.replace("Z", "+00:00"))


class ToolResult(_Model):
    """The outcome of a tool call: ``content`` (any JSON), ``artifact`` (any JSON),
    ``error`` (``None`` or :class:`ErrorInfo`), ``redacted`` (something was scrubbed)."""

    content: Any = None
    artifact: Any = None
    error: ErrorInfo | None = None
    redacted: bool = False

    def message_text(self) -> str:
        """The text a ``tool`` message carries for this result: ``ERROR <type>: <message>``
        for an error, the content itself when it is a string, else its JSON with sorted
        keys (the generic chat loop's rendering, the sample agent's, and what the proxy
        writes for an overridden result)."""
        if self.error is not None:
            return f"ERROR {self.error.type}: {self.error.message}"
        if isinstance(self.content, str):
            return self.content
        return dumps(self.content, orjson.OPT_SORT_KEYS).decode()


class ToolRecord(RecordBase):
    """A tool call at the execution boundary. ``key`` = ``tool_key(tool, arguments)``;
    ``key`` is ``None`` only for imported calls whose identity cannot be canonicalized."""

    kind: Literal["tool"] = "tool"
    key: str | None = None
    tool: str
    arguments: Any = Field(default_factory=dict)
    tool_call_id: str | None = None
    result: ToolResult = Field(default_factory=ToolResult)
    duration_seconds: float | None = Field(default=None, ge=0)

    def compute_key(self) -> str:
        """Recompute the canonical key from ``tool`` and ``arguments``."""
        return tool_key(self.tool, self.arguments)

    @property
    def is_error(self) -> bool:
        return self.result.error is not None


class ModelRequest(_Model):
    """What was sent to a model: ``messages``, ``tools`` (schemas), ``stop`` (normalized:
    de-duplicated, sorted) and ``options`` (temperature, tool choice, structured output,
    provider options, ...)."""

    messages: list[ChatMessage] = Field(default_factory=list)
    tools: list[Any] = Field(default_factory=list)
    stop: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("stop", mode="before")
    @classmethod
    def _normalize_stop(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return normalize_stop(v)
        if isinstance(v, list) and all(isinstance(s, str) for s in v):
            return normalize_stop(v)
        return v

    def key_for(self, model: str) -> str:
        """``model_key(model, self)``: the messages' canonical JSON comes from
        :func:`message_canonical` (once per message object) and is streamed into the hash
        (:func:`core.record.canonical.model_key_of`).

        Raises:
            CanonicalizationError: a value has no canonical form (JSON Pointer relative to
                the key's object, e.g. ``/messages/3/content``).
        """
        try:
            parts = messages_canonical(self.messages)
        except CanonicalizationError as exc:
            raise CanonicalizationError(exc.reason, f"/messages{exc.path}") from None
        return model_key_of(model, parts, self.tools, self.stop, self.options)

    def identity(self) -> dict[str, Any]:
        """The parts of the request that the model key covers, as JSON."""
        return {
            "messages": json_mode_dump(partial(_MESSAGES.dump_python, self.messages), exclude_none=True),
            "tools": self.tools,
            "stop": normalize_stop(self.stop),
            "options": self.options,
        }


class ModelResponse(_Model):
    """What a model answered: ``message``, ``finish_reason``, ``usage``."""

    message: ChatMessage
    finish_reason: str | None = None
    usage: Usage | None = None


class ModelRecord(RecordBase):
    """A model call through a wrapped model. ``key`` = ``model_key(model, request)``."""

    kind: Literal["model"] = "model"
    key: str | None = None
    model: str
    request: ModelRequest = Field(default_factory=ModelRequest)
    response: ModelResponse | None = None
    duration_seconds: float | None = Field(default=None, ge=0)
    error: ErrorInfo | None = None

    def compute_key(self) -> str:
        """Recompute the canonical key from ``model`` and ``request``."""
        return self.request.key_for(self.model)

    @property
    def is_error(self) -> bool:
        return self.error is not None


class InterruptRecord(RecordBase):
    """The run paused on an interrupt; ``value`` is what it paused with (attribution only)."""

    kind: Literal["interrupt"] = "interrupt"
    value: Any = None


class SnapshotRecord(RecordBase):
    """Runtime composition at a generation publication: ``composition`` holds
    ``plugins``, ``tools``, ``capabilities`` (attribution only)."""

    kind: Literal["snapshot"] = "snapshot"
    composition: dict[str, Any] = Field(default_factory=dict)


class LifecycleRecord(RecordBase):
    """A harness lifecycle event (attribution only)."""

    kind: Literal["lifecycle"] = "lifecycle"
    event: Literal[
        "plugin.mount",
        "plugin.unmount",
        "generation.publish",
        "generation.draining",
        "generation.retired",
        "harness.shutdown",
    ]
    details: dict[str, Any] = Field(default_factory=dict)


Record = Annotated[
    ToolRecord | ModelRecord | InterruptRecord | SnapshotRecord | LifecycleRecord,
    Field(discriminator="kind"),
]


class SessionInfo(_Model):
    """How the recording was produced: ``mode`` (live|record|replay), ``fallback``
    (error|live), ``created_at`` (RFC 3339), ``producer`` (e.g. ``chassis-inspector 0.9.0``)."""

    mode: Literal["live", "record", "replay"] = "record"
    fallback: Literal["error", "live"] = "error"
    created_at: str | None = None
    producer: str | None = None

    @field_validator("created_at")
    @classmethod
    def _rfc3339(cls, v: str | None) -> str | None:
        return check_rfc3339(v)


class RunLink(_Model):
    """A run-level link (format v2 ``links``): how this run relates to another.

    Fields: ``rel`` (required) — the relation, an RFC 8288 ``reg-rel-type`` token
    (lowercase letter, then lowercase letters, digits, ``.`` or ``-``); the rels in
    :data:`LINK_RELS` have a documented meaning, any other token is accepted and kept as
    written (extension relations). ``target`` (required, non-empty) — what the link
    points to: a ``run_id`` (in this file or another), a file path relative to the
    recording, or a URI. Optional: ``seq`` — the record of this run the link attaches to
    (where a fork branched, where a sub-run was spawned); ``title`` — a label for
    people; ``meta`` — a free-form JSON object. Unknown fields are rejected, as
    everywhere in the format. Links are not part of any key and, being in the header,
    are not sealed by the ``digest`` (like ``metadata``).
    """

    rel: str
    target: str = Field(min_length=1)
    seq: int | None = Field(default=None, ge=0)
    title: str | None = None
    meta: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, v: Any) -> Any:
        if isinstance(v, (dict, RunLink)):
            return v
        raise PydanticCustomError(
            "json_object", "a link must be a JSON object, found {found}", {"found": _json_type(v)}
        )

    @field_validator("rel")
    @classmethod
    def _rel_token(cls, v: str) -> str:
        if not _REL_TOKEN.fullmatch(v):
            raise PydanticCustomError(
                "link_rel",
                "rel {rel} is not a link relation token (RFC 8288 reg-rel-type: a lowercase "
                "letter, then lowercase letters, digits, '.' or '-')",
                {"rel": repr(v)},
            )
        return v

    @field_validator("meta", mode="before")
    @classmethod
    def _meta_object(cls, v: Any) -> Any:
        return check_json_object(v, "meta")


class Recording(_Model):
    """A recording: header + ordered records (format ``chassis.replay`` version 3).

    Load with :meth:`load` (path), :meth:`loads` (bytes) or :meth:`from_dict`; save with
    :meth:`save` (atomic, writes ``digest``). All raise/return as documented in
    :mod:`core.record.io`.
    """

    format: Literal["chassis.replay"] = FORMAT_NAME
    format_version: Literal[3] = FORMAT_VERSION
    metadata: dict[str, Any] = Field(default_factory=dict)
    session: SessionInfo = Field(default_factory=SessionInfo)
    links: list[RunLink] | None = None
    records: list[Record] = Field(default_factory=list)
    digest: str | None = None
    _migrated_from: int | None = PrivateAttr(default=None)

    @field_validator("links", mode="before")
    @classmethod
    def _links_list(cls, v: Any) -> Any:
        if v is None or isinstance(v, list):
            return v
        raise PydanticCustomError(
            "json_array", "links must be a JSON array of link objects, found {found}", {"found": _json_type(v)}
        )

    @property
    def migrated_from(self) -> int | None:
        """The format version this recording was migrated from on load (``0`` for the
        0.8.1 legacy layout), or ``None`` when it was read as the current version.
        A digest the file carried is kept (it was verified, and migration 1 → 2 leaves
        the records it seals untouched); otherwise a migrated recording has no
        ``digest`` until it is saved."""
        return self._migrated_from

    # -- io (implemented in core.record.io; thin wrappers for the curated API) -----------------

    @classmethod
    def load(cls, path: Any, *, verify_keys: bool | str = "auto") -> Recording:
        """Load and verify a recording file (migrating older versions). Raises FormatError.

        ``verify_keys``: ``"auto"`` recomputes keys only when the file has no digest (a
        matching digest seals keys recomputed at save); ``True`` always; ``False`` never.
        """
        from .io import load_recording

        return load_recording(path, verify_keys=verify_keys)

    @classmethod
    def loads(cls, data: bytes | str, *, source: str = "<bytes>", verify_keys: bool | str = "auto") -> Recording:
        """Parse and verify a recording from bytes. Raises FormatError."""
        from .io import loads_recording

        return loads_recording(data, source=source, verify_keys=verify_keys)

    @classmethod
    def from_dict(cls, obj: Any, *, source: str = "<dict>", verify_keys: bool | str = "auto") -> Recording:
        """Validate (and migrate) a parsed JSON document. Raises FormatError."""
        from .io import recording_from_dict

        return recording_from_dict(obj, source=source, verify_keys=verify_keys)

    def save(self, path: Any) -> str:
        """Write atomically (temp file, fsync, rename) with a fresh digest; return it."""
        from .io import save_recording

        return save_recording(self, path)

    def to_dict(self) -> dict[str, Any]:
        """The document as saved (with the digest of the current records)."""
        from .io import recording_to_dict

        return recording_to_dict(self)

    def dumps(self) -> bytes:
        """The document as saved, as bytes."""
        from .io import dumps_recording

        return dumps_recording(self)

    # -- derived views --------------------------------------------------------------------

    def counts_by_kind(self) -> dict[str, int]:
        """``{kind: count}`` for every kind (zeros included)."""
        counts = dict.fromkeys(RECORD_KINDS, 0)
        for r in self.records:
            counts[r.kind] += 1
        return counts

    def first_error(self) -> ToolRecord | ModelRecord | None:
        """The first tool or model record carrying an error, or ``None``."""
        for r in self.records:
            if isinstance(r, (ToolRecord, ModelRecord)) and r.is_error:
                return r
        return None
