"""Canonical keys of the model requests a replayed agent makes, computed once per message.

A replay matches each model call of the agent on its canonical key computed on the
redacted request (:func:`core.record.recording_redaction.redacted_model_key`: SHA-256 of
the RFC 8785 canonical JSON of ``{"kind": "model", "model", "messages", "tools",
"stop", "options"}`` after :func:`core.record.redaction.redact`). An agent's requests
repeat its chat history: the plain computation dumps, redacts and serializes the whole
history again for every call. :class:`LiveRequests` gives the same key (byte for byte the
same hashed bytes — never another key scheme) from parts computed once:

* **Each message once.** The canonical JSON of a message's redacted form is cached per
  message object (:data:`_REDACTED_BYTES`, weak references; messages are frozen). Redaction
  without a redactor is a function of the value alone, and it treats the members of the
  ``messages`` array one by one (an array of chat messages is never an HTTP header list:
  a message has no ``value`` member), so the redacted request's ``messages`` are the
  messages redacted one by one; RFC 8785 writes an array's members one by one (§3.2.1),
  so the request's canonical JSON holds each message's canonical JSON as it is. The
  bytes are streamed into the hash by :func:`core.record.canonical.model_key_of`.
* **Fresh objects recognised.** An agent that rebuilds its history for each call (an HTTP
  client: the model-API proxy parses every request body anew) sends new message objects
  with the same content. A message object sent in the last request is known at once;
  any other is looked up — at the same position of the recorded request the call stands
  for, then in a table by a cheap content signature — and replaced by the message
  already known when both are saved alike (:func:`same_message`, :func:`strict_equal`:
  Python's equality is not enough, ``True == 1`` and ``1 == 1.0``), so its cached bytes
  serve. The request handed on (to the events) shares those message objects — the
  recorded request itself when it is all equal to it.
* **The other parts once per change.** The canonical JSON of ``model``, the redacted
  ``tools`` and ``options`` and the stop sequences (what follows the messages,
  :func:`~core.record.canonical.model_key_tail`) is kept from the last request and
  reused while they hold the very same items or equal ones of the very same types.
* **Anything unusual takes the plain path**: a value without a canonical form (the plain
  path raises its own error, naming the first offending value as it always did), or stop
  sequences that redaction changes (the plain path hashes them as redacted, unsorted).

Like the message cache of :func:`~core.record.recording.message_canonical`, this trusts
a request's values not to be changed in place once sent (messages are frozen; a tool
schema or option value that is the very same object as in the last request is taken as
unchanged).

Tests: ``tests/core/replay/test_live_keys.py`` holds every key to the plain computation.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import CanonicalizationError
from ..record.canonical import IdentityCache, canonical_json, model_key_of, model_key_tail, normalize_stop
from ..record.recording import ChatMessage, ModelRequest, message_canonical
from ..record.recording_redaction import redacted_model_key
from ..record.redaction import redact

__all__ = ["LiveRequests", "live_model_key", "redacted_message_canonical", "same_message", "strict_equal"]

#: the canonical JSON of each message object's redacted form (once per frozen message)
_REDACTED_BYTES = IdentityCache()

#: how many different messages one content signature keeps (oldest dropped first)
_CANDIDATES = 8


def redacted_message_canonical(message: ChatMessage) -> bytes:
    """The RFC 8785 canonical JSON of ``message``'s saved form after
    :func:`~core.record.redaction.redact` (no redactor), computed once per message object;
    when redaction changes nothing, the very bytes of
    :func:`~core.record.recording.message_canonical`.

    Raises:
        CanonicalizationError: a value of the message has no canonical form (JSON
            Pointer relative to the message).
    """
    cached: bytes | None = _REDACTED_BYTES.get(message)
    if cached is None:
        red, changed = redact(message.to_json_obj())
        cached = canonical_json(red) if changed else message_canonical(message)
        _REDACTED_BYTES.put(message, cached)
    return cached


#: orjson refuses what it would write like a JSON value without being one: subclasses of
#: ``str``/``int``/``float``/``dict``/``list`` (an ``OrderedDict`` equals a dict),
#: dataclasses, dates
_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def strict_equal(x: Any, y: Any) -> bool:
    """Whether two values *of a message* (its content, a tool call's arguments) are saved
    alike, so the messages have the same canonical JSON — told at C speed: equal in
    Python (same structure and members, equal scalars; ``None`` never equals NaN) *and*
    written to the same bytes by ``orjson`` (members in their order, ``true`` ≠ ``1``,
    ``1`` ≠ ``1.0``), which refuses what would pass for equal without being the same
    JSON (``True == 1``; a ``Decimal`` or an ``OrderedDict`` equal to an int or a dict).
    Equal bytes are the same JSON text; what orjson writes for a value that is not
    plainly JSON (an ``Enum`` member: its value; a ``UUID``: its text) is also what a
    message's saved form holds (pydantic's JSON-mode dump,
    :meth:`~core.record.recording.ChatMessage.to_json_obj`), and equal values hold the
    same. ``False`` may be answered for values saved alike (members in another order,
    ``1`` and ``1.0``, something orjson refuses): that only costs a cache miss.

    Not for the raw ``tools``/``options`` of a request, which are canonicalized as they
    are (a ``(str, Enum)`` member as its ``str()``): :func:`_same_value` compares those.
    """
    try:
        return bool(x == y) and orjson.dumps(x, option=_STRICT) == orjson.dumps(y, option=_STRICT)
    except Exception:  # noqa: BLE001 — orjson's refusal, or an __eq__ that cannot answer
        return False


def _exactly_equal(x: Any, y: Any) -> bool:
    """``x`` and ``y`` are equal JSON values of the very same types at every place
    (``dict`` with ``str`` keys in the same order, ``list``, ``str``, ``int``, ``float``,
    ``bool``, ``None``), so :func:`~core.record.canonical.canonical_json` writes them
    alike; anything else is not equal here."""
    t = type(x)
    if t is not type(y):
        return False
    if t is str or t is int or t is float or t is bool or x is None:
        return bool(x == y)
    if t is dict:
        if len(x) != len(y):
            return False
        for (k1, v1), (k2, v2) in zip(x.items(), y.items()):
            if type(k1) is not str or type(k2) is not str or k1 != k2 or not _exactly_equal(v1, v2):
                return False
        return True
    if t is list:
        return len(x) == len(y) and all(_exactly_equal(a, b) for a, b in zip(x, y))
    return False


def _text(x: Any) -> bool:
    return x is None or type(x) is str


def same_message(known: ChatMessage, fresh: ChatMessage) -> bool:
    """Whether ``fresh`` has exactly the content of ``known``, so ``known``'s canonical
    JSON is ``fresh``'s too: ``content`` and each tool call's ``arguments``
    :func:`strict_equal`; the text fields (``role``, ``tool_call_id``, ``name``, a string
    ``content``, a tool call's ``id`` and ``name``) equal, ``fresh``'s a ``str`` (or
    ``None``); ``raw_arguments`` the same.

    Only ``fresh``'s text fields need their type checked: a value equal to a ``str`` is a
    ``str`` or a subclass of it, which a message's saved form (pydantic's JSON-mode dump)
    writes as its text; ``None`` equals only ``None``.
    """
    if known is fresh:
        return True
    a, b = known.__dict__, fresh.__dict__
    c1, c2 = a["content"], b["content"]
    if type(c2) is str:
        if c1 != c2:
            return False
    elif c2 is None:
        if c1 is not None:
            return False
    elif not strict_equal(c1, c2):
        return False
    r = b["role"]
    if type(r) is not str or a["role"] != r or a["tool_call_id"] != b["tool_call_id"] or a["name"] != b["name"]:
        return False
    if not (_text(b["tool_call_id"]) and _text(b["name"])):
        return False
    calls1, calls2 = a["tool_calls"], b["tool_calls"]
    if calls2 is None or calls1 is None:
        return calls1 is calls2
    if type(calls1) is not list or type(calls2) is not list or len(calls1) != len(calls2):
        return False
    for x, y in zip(calls1, calls2):
        xd, yd = x.__dict__, y.__dict__
        i, n = yd["id"], yd["name"]
        if (
            type(i) is not str
            or type(n) is not str
            or xd["id"] != i
            or xd["name"] != n
            or xd["raw_arguments"] is not yd["raw_arguments"]  # None, True or False
            or not strict_equal(xd["arguments"], yd["arguments"])
        ):
            return False
    return True


def _signature(m: ChatMessage) -> tuple[Any, ...]:
    """A cheap content signature of a message: equal messages have equal signatures."""
    c = m.content
    calls = m.tool_calls
    first = calls[0].id if calls else None
    if type(c) is str:
        return (m.role, m.tool_call_id, m.name, first, len(c), c[:48], c[-16:])
    return (m.role, m.tool_call_id, m.name, first, -1 if c is None else len(c))


def live_model_key(model: str, request: ModelRequest) -> str:
    """:func:`~core.record.recording_redaction.redacted_model_key` of ``request``, each
    message's redacted canonical JSON computed once per message object (see the module
    docstring; fresh objects are not recognised here — :class:`LiveRequests` does that).

    Raises:
        CanonicalizationError: as the plain computation raises it (a value without a
            canonical form, named by its JSON Pointer in the key's object).
    """
    try:
        parts = [redacted_message_canonical(m) for m in request.messages]
    except CanonicalizationError:
        return redacted_model_key(model, request)  # its error names the first bad value
    tail = _redacted_tail(model, request)
    if tail is None:
        return redacted_model_key(model, request)  # its error names the first bad value
    return model_key_of(model, parts, None, [], None, tail=tail)


def _redacted_tail(model: str, request: ModelRequest) -> bytes | None:
    """:func:`~core.record.canonical.model_key_tail` of ``model`` and ``request``'s
    ``tools``, ``stop`` and ``options`` as the plain path hashes them (redacted; stop
    normalized first), or ``None`` — left to the plain path — when redaction changes the
    stop sequences (the plain path hashes them as redacted, not sorted again) or a value
    has no canonical form (the plain path names the first one)."""
    stop = normalize_stop(request.stop)
    if redact(stop)[1]:
        return None
    try:
        return model_key_tail(model, redact(request.tools)[0], stop, redact(request.options)[0])
    except CanonicalizationError:
        return None


def _same_items(a: Any, b: Any) -> bool:
    """``a`` and ``b`` (lists or dicts) hold the very same objects, in the same order."""
    if type(a) is not type(b) or len(a) != len(b):
        return False
    if type(a) is dict:
        return all(
            k1 == k2 and type(k1) is str and type(k2) is str and v1 is v2
            for (k1, v1), (k2, v2) in zip(a.items(), b.items())
        )
    return all(x is y for x, y in zip(a, b))


def _same_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` (a request's ``tools`` or ``options``) have the same canonical
    JSON: they hold the very same objects (values of a request are not changed in place
    once sent, as messages are not), or are :func:`_exactly_equal`."""
    return _same_items(a, b) or _exactly_equal(a, b)


class LiveRequests:
    """The requests of one replay's agent: :meth:`prepare` shares message objects seen
    before (by strict content equality) and computes the key once per message.

    Holds the messages it has seen (one replay's worth) in a table by content signature,
    the message objects of the last request (an agent that keeps its history sends them
    again), and what its ``model``, ``tools``, ``stop`` and ``options`` add to the hashed
    bytes. Not thread-safe: one per replay engine.
    """

    def __init__(self) -> None:
        self._table: dict[tuple[Any, ...], list[ChatMessage]] = {}
        #: id of each message object used -> (it, its redacted canonical JSON)
        self._mine: dict[int, tuple[ChatMessage, bytes]] = {}
        #: id of each message object of the last request -> (it, the message used, its bytes)
        self._last: dict[int, tuple[ChatMessage, ChatMessage, bytes]] = {}
        #: the last request's model, tools and stop and options (copies: items shared) and
        #: their bytes (model_key_tail of the redacted values)
        self._tail: tuple[str, Any, list[str], Any, bytes] | None = None

    def _known(self, m: ChatMessage) -> ChatMessage:
        """The message seen before with exactly ``m``'s content, else ``m`` (remembered)."""
        sig = _signature(m)
        cands = self._table.get(sig)
        if cands is None:
            self._table[sig] = [m]
            return m
        for c in cands:
            if c is m or same_message(c, m):
                return c
        cands.append(m)
        if len(cands) > _CANDIDATES:
            del cands[0]
        return m

    def _tail_of(self, model: str, request: ModelRequest) -> bytes | None:
        last = self._tail
        if (
            last is not None
            and last[0] == model
            and last[2] == request.stop
            and _same_value(last[1], request.tools)
            and _same_value(last[3], request.options)
        ):
            return last[4]
        tail = _redacted_tail(model, request)
        if tail is not None:
            tools, options = request.tools, request.options
            self._tail = (
                model,
                list(tools) if type(tools) is list else tools,
                list(request.stop),
                dict(options) if type(options) is dict else options,
                tail,
            )
        return tail

    def _bytes(self, c: ChatMessage) -> bytes:
        """:func:`redacted_message_canonical` of ``c``, looked up here first."""
        hit = self._mine.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        b = redacted_message_canonical(c)
        self._mine[id(c)] = (c, b)
        return b

    def prepare(
        self, model: str, request: ModelRequest, recorded: ModelRequest | None = None
    ) -> tuple[ModelRequest, str]:
        """``(request', key)``: the key
        :func:`~core.record.recording_redaction.redacted_model_key` gives for ``request``,
        and ``request`` with each message replaced by the equal one seen before — at the
        same position of ``recorded`` (the recorded request this call stands for), in the
        last request, or earlier in this replay; ``recorded`` itself when every message is
        its own and the tools, stop sequences and options are equal to its own;
        ``request`` itself when nothing was replaced.

        Raises:
            CanonicalizationError: as the plain computation raises it.
        """
        msgs = request.messages
        out: list[ChatMessage] | None = None
        parts: list[bytes] = []
        last = self._last
        mine = self._mine
        seen: dict[int, tuple[ChatMessage, ChatMessage, bytes]] = {}
        hint = recorded.messages if recorded is not None else []
        nhint = len(hint)
        ident = nhint == len(msgs)  # every message is the recorded request's own (so far)
        try:
            for j, m in enumerate(msgs):
                hit = last.get(id(m))
                if hit is not None and hit[0] is m:
                    c, b = hit[1], hit[2]
                else:
                    h = hint[j] if j < nhint else None
                    if h is m:
                        c = m
                    else:
                        md = m.__dict__
                        if h is not None and (
                            # a plain text message, inline (same_message's rule)
                            md["tool_calls"] is None
                            and type(md["content"]) is str
                            and type(md["role"]) is str
                            and _text(md["tool_call_id"])
                            and _text(md["name"])
                            and h.__dict__ == md
                            or same_message(h, m)
                        ):
                            c = h
                        else:
                            c = self._known(m)
                    entry = mine.get(id(c))
                    if entry is not None and entry[0] is c:
                        b = entry[1]
                    else:
                        b = self._bytes(c)
                seen[id(m)] = (m, c, b)
                if c is not m:
                    if out is None:
                        out = list(msgs)
                    out[j] = c
                if ident and c is not hint[j]:
                    ident = False
                parts.append(b)
        except CanonicalizationError:
            return request, redacted_model_key(model, request)  # raises the plain path's error
        self._last = seen
        tail = self._tail_of(model, request)
        if tail is None:
            key = redacted_model_key(model, request)  # the plain path (and its error)
        else:
            key = model_key_of(model, parts, None, [], None, tail=tail)
        if (
            ident
            and recorded is not None
            and recorded.stop == request.stop
            and _same_value(recorded.tools, request.tools)
            and _same_value(recorded.options, request.options)
        ):
            return recorded, key
        if out is not None:
            request = request.model_copy(update={"messages": out})
        return request, key
