"""Canonical JSON (RFC 8785, "JCS") and the keys derived from it.

The reference implementation is the ``rfc8785`` package. :func:`canonical_json` is a
fast path built on ``orjson`` that produces byte-identical output (a hypothesis property
test in ``tests/core/record/test_canonical.py`` holds it to that); values it cannot prove safe
for the fast path (object keys at or above U+E000, whose UTF-16 order differs from code
point order, RFC 8785 §3.2.3) go through the reference implementation. Values nested
deeper than orjson is given (:data:`core.record.nesting.ORJSON_LEVELS`: orjson overflows
its output buffer on some deeper values) or than the recursion limit allows are written
by :func:`_canonical_deep`, without recursion: it writes each container nested too deeply
itself (members sorted by their names' UTF-16 code units, RFC 8785 §3.2.3) and everything
within ``ORJSON_LEVELS`` levels through the fast path; the same property tests hold it, forced to
write every container itself, to the reference, and compare both on values nested up to
the nesting limit (:data:`core.record.nesting.MAX_DEPTH`, 1,000 levels).

Keys (SPEC "Canonical keys"):

* ``tool_key(tool, arguments)``  = ``sha256:`` + hex SHA-256 of canonical
  ``{"kind": "tool", "tool": tool, "arguments": arguments}``;
* ``model_key(model, request)`` = ``sha256:`` + hex SHA-256 of canonical
  ``{"kind": "model", "model": model, "messages": [...], "tools": [...],
  "stop": normalized stop, "options": {...}}``;
* ``args_hash(arguments)``      = ``sha256:`` + hex SHA-256 of canonical ``arguments``.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import rfc8785

from ..errors import CanonicalizationError
from .nesting import ORJSON_LEVELS, exceeds, is_depth_failure

__all__ = [
    "canonical_json",
    "canonical_hash",
    "normalize_stop",
    "tool_key",
    "model_key",
    "args_hash",
    "CanonicalizationError",
]

_INT_MAX = 2**53 - 1  # RFC 8785 §3.2.2.3 / I-JSON (RFC 7493 §2.2) safe integer range
_UTF16_ORDER_BREAK = "\ue000"  # keys with chars >= U+E000 may sort differently in UTF-16


def _es_number(value: float) -> bytes:
    """ECMAScript Number::toString of a finite float (ECMA-262 §7.1.12.1, RFC 8785 §3.2.2.3)."""
    return rfc8785.dumps(value)


class _NeedsReference(Exception):
    """Internal: the fast path cannot guarantee RFC 8785 key order for this value."""


def _prepare(value: Any, path: str = "") -> Any:
    """Validate ``value`` and return an orjson-ready equivalent.

    Floats become ``orjson.Fragment`` holding their ECMAScript form; containers are
    rebuilt only when a descendant changed. Strings are not checked here: orjson refuses
    lone surrogates when it serializes. Raises :class:`CanonicalizationError` with the
    JSON Pointer (RFC 6901) of the first offending value, located by :func:`_locate`
    only once something failed (``path`` is the pointer of ``value`` itself). Raises
    :class:`_TooDeep` (a ``RecursionError``) for a value nested more than
    :data:`~core.record.nesting.ORJSON_LEVELS` levels, which orjson must not be given.
    """
    try:
        return _prep(value)
    except _Invalid:
        raise _locate(value, path) from None


class _Invalid(Exception):
    """Internal: some value below has no canonical form (located afterwards)."""


def _prep(value: Any, levels: int = ORJSON_LEVELS) -> Any:
    """:func:`_prepare` without locating; ``levels``: the container levels ``value`` may
    still nest (orjson overflows its buffer on some values nested deeper)."""
    t = type(value)
    if t is str or t is bool or value is None:
        return value
    if levels <= 0 and (t is dict or t is list or t is tuple or isinstance(value, Mapping)):
        raise _TooDeep
    if t is dict:
        changed = False
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _Invalid
            if not k.isascii() and max(k) >= _UTF16_ORDER_BREAK:
                raise _NeedsReference
            tv = type(v)
            if tv is str or tv is bool or v is None:
                out[k] = v
                continue
            nv = _prep(v, levels - 1)
            if nv is not v:
                changed = True
            out[k] = nv
        return out if changed else value
    if t is list:
        changed = False
        items = []
        for v in value:
            tv = type(v)
            if tv is str or tv is bool or v is None:
                items.append(v)
                continue
            nv = _prep(v, levels - 1)
            if nv is not v:
                changed = True
            items.append(nv)
        return items if changed else value
    if t is int:
        if -_INT_MAX <= value <= _INT_MAX:
            return value
        raise _Invalid
    if t is float:
        if value != value or value in (_INF, _NINF):
            raise _Invalid
        return orjson.Fragment(_es_number(value))
    if t is tuple:
        return [_prep(v, levels - 1) for v in value]
    if isinstance(value, Mapping):
        return _prep(dict(value), levels)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _prep(int(value))
    if isinstance(value, float):
        return _prep(float(value))
    if isinstance(value, str):
        return str(value)
    raise _Invalid


_INF = float("inf")
_NINF = float("-inf")


def _locate(value: Any, path: str) -> CanonicalizationError:
    """Find the first value without a canonical form; return the error naming it."""
    t = type(value)
    if isinstance(value, str):
        return CanonicalizationError("unexpected string failure", path)
    if isinstance(value, bool) or value is None:
        return CanonicalizationError("unexpected failure", path)
    if isinstance(value, int):
        return CanonicalizationError(f"integer {value} is outside the I-JSON safe range ±(2**53-1)", path)
    if isinstance(value, float):
        return CanonicalizationError(f"{value} is not a JSON number", path)
    if isinstance(value, Mapping):
        for k, v in value.items():
            if type(k) is not str:
                return CanonicalizationError(f"object key {k!r} is a {type(k).__name__}, not a string", path)
            try:
                _prep(v)
            except _Invalid:
                return _locate(v, f"{path}/{_escape_pointer(k)}")
            except _NeedsReference:
                pass
        return CanonicalizationError("unexpected failure", path)
    if t is list or t is tuple:
        for i, v in enumerate(value):
            try:
                _prep(v)
            except _Invalid:
                return _locate(v, f"{path}/{i}")
            except _NeedsReference:
                pass
        return CanonicalizationError("unexpected failure", path)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return CanonicalizationError("bytes have no JSON form", path)
    if isinstance(value, (set, frozenset)):
        return CanonicalizationError("a set has no deterministic order", path)
    return CanonicalizationError(f"a {type(value).__name__} object is not JSON", path)


def _check_strings(value: Any, path: str = "") -> None:
    """Raise CanonicalizationError at the first string (or key) with a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise CanonicalizationError("string contains a lone UTF-16 surrogate", path) from None
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(k, str):
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    raise CanonicalizationError("object key contains a lone UTF-16 surrogate", path) from None
            _check_strings(v, f"{path}/{_escape_pointer(str(k))}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_strings(v, f"{path}/{i}")


def _escape_pointer(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 §3)."""
    return token.replace("~", "~0").replace("/", "~1")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical JSON of ``value`` as UTF-8 bytes.

    ``value`` is made of ``dict`` (string keys), ``list``/``tuple``, ``str``, ``int``
    (within ±(2**53-1)), finite ``float``, ``bool`` and ``None``, nested to any depth.

    Raises:
        CanonicalizationError: NaN/±Infinity, out-of-range integers, lone surrogates,
            bytes, sets, non-string keys, or any other object — never silently dropped.
    """
    try:
        return _canonical_fast(value, "")
    except (_TooDeep, RecursionError):
        return _canonical_deep(value)


class _TooDeep(RecursionError):
    """Internal: the value is nested deeper than orjson is given (its 254 levels, or
    :data:`~core.record.nesting.ORJSON_LEVELS` from :func:`_prep`). A RecursionError, so
    that the callers of :func:`_prepare` that take their slow path on one
    (``core.record.io``'s records digest) take it on this too."""


def _canonical_fast(value: Any, path: str) -> bytes:
    """The fast path (orjson, or the reference for keys at or above U+E000); raises
    :class:`_TooDeep` (or RecursionError) when ``value`` is nested too deeply for it."""
    try:
        prepared = _prepare(value, path)
    except _NeedsReference:
        _check_strings(value, path)
        try:
            return rfc8785.dumps(value)
        except rfc8785.CanonicalizationError as exc:  # pragma: no cover - _prepare validated
            raise CanonicalizationError(str(exc), path) from exc
    try:
        return orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:
        if is_depth_failure(exc):
            raise _TooDeep from None
        _check_strings(value, path)
        raise


#: subtrees nested at most this many levels go through the fast path in _canonical_deep
#: (what orjson is given without overflowing its buffer; far below the recursion limit)
_FAST_LEVELS = ORJSON_LEVELS


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _canonical_deep(value: Any, path: str = "", *, use_fast: bool = True) -> bytes:
    """RFC 8785 canonical JSON of ``value`` without recursion (any depth).

    A container nested more than ``_FAST_LEVELS`` levels is written here: ``{`` or
    ``[``, members separated by ``,`` without whitespace (§3.2.1), object members sorted
    by the UTF-16 code units of their names (§3.2.3), names as JSON strings (§3.2.2.2);
    every other value — a scalar, a subtree within ``_FAST_LEVELS`` — through
    :func:`_canonical_fast`, which validates it and names the JSON Pointer (RFC 6901) of a
    value without a canonical form. ``use_fast=False`` writes every container here (the
    property test's form).
    """
    out: list[bytes] = []
    # an open container: [members iterator, closing bracket, its JSON Pointer, is a dict, started]
    stack: list[list[Any]] = []

    def write(v: Any, p: str) -> None:
        t = type(v)
        if t is not dict and t is not list and t is not tuple and not isinstance(v, Mapping):
            out.append(_canonical_fast(v, p))
            return
        if use_fast and not exceeds(v, limit=_FAST_LEVELS):
            try:
                out.append(_canonical_fast(v, p))
                return
            except _TooDeep:  # a Mapping other than dict, which exceeds() does not enter
                pass
        if t is dict or isinstance(v, Mapping):
            members = []
            for k, item in (v if t is dict else dict(v)).items():
                if type(k) is not str:
                    raise CanonicalizationError(f"object key {k!r} is a {type(k).__name__}, not a string", p)
                try:
                    name = orjson.dumps(k)
                except orjson.JSONEncodeError:
                    raise CanonicalizationError("object key contains a lone UTF-16 surrogate", p) from None
                members.append((_utf16_order(k), name, k, item))
            members.sort(key=lambda m: m[0])
            out.append(b"{")
            stack.append([iter(members), b"}", p, True, False])
        else:
            out.append(b"[")
            stack.append([iter(enumerate(v)), b"]", p, False, False])

    write(value, path)
    while stack:
        frame = stack[-1]
        nxt = next(frame[0], None)
        if nxt is None:
            out.append(frame[1])
            stack.pop()
            continue
        if frame[4]:
            out.append(b",")
        frame[4] = True
        if frame[3]:
            _, name, k, child = nxt
            out.append(name)
            out.append(b":")
            write(child, f"{frame[2]}/{_escape_pointer(k)}")
        else:
            i, child = nxt
            write(child, f"{frame[2]}/{i}")
    return b"".join(out)


def canonical_hash(value: Any) -> str:
    """``"sha256:<hex>"`` of :func:`canonical_json` of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def normalize_stop(stop: str | Iterable[str] | None) -> list[str]:
    """Stop sequences as a de-duplicated, sorted list (SPEC: "normalized stop").

    ``None`` → ``[]``; a single string → ``[string]``. Sorting is by code point.
    """
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    return sorted(set(stop))


def args_hash(arguments: Any) -> str:
    """Hash of a tool call's arguments alone: ``sha256:`` + hex of canonical JSON."""
    return canonical_hash(arguments)


def tool_key(tool: str, arguments: Any) -> str:
    """Canonical key of a tool call: hash of ``{kind: "tool", tool, arguments}``
    (interned, as every key: see :func:`intern_key`)."""
    return intern_key(canonical_hash({"kind": "tool", "tool": tool, "arguments": arguments}))


def _interned_strings_are_freed() -> bool:
    """Whether this interpreter frees an interned string with its last reference:
    CPython 3.11 and 3.12.6+ do; 3.12.0–3.12.5 made interned strings immortal
    (python/cpython#113993), and a free-threaded build keeps them too."""
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    return sys.implementation.name == "cpython" and not (3, 12, 0) <= sys.version_info[:3] < (3, 12, 6)


#: keys are interned only where that keeps nothing alive longer (see intern_key)
_INTERN_KEYS = _interned_strings_are_freed()


def intern_key(key: str) -> str:
    """``sys.intern(key)``: every equal key made or loaded in the process is then one
    object, so comparing two runs' keys (alignment, matching) compares pointers and
    never reads the strings (memory, not hashing, is the cost at 100,000 records:
    docs/performance.md, "Interned keys, answers compared in blocks, and the detail
    pane"). Only where interned strings are freed with their last reference
    (:func:`_interned_strings_are_freed`); elsewhere ``key`` itself, which compares
    equal all the same, only slower."""
    return sys.intern(key) if _INTERN_KEYS else key


def model_key(model: str, request: Any) -> str:
    """Canonical key of a model call.

    ``request`` is a :class:`core.record.recording.ModelRequest` or a mapping with
    ``messages`` (list of message dicts), ``tools``, ``stop`` and ``options``. The key
    covers the model identity, every message, every tool schema, the *normalized* stop
    sequences and every option — so stop order/duplicates never change the key and any
    other change does.
    """
    if hasattr(request, "key_for"):
        key: str = request.key_for(model)
        return key
    if not hasattr(request, "identity"):
        # validate a mapping into the model so that absent and null fields key the same
        from .recording import ModelRequest

        request = ModelRequest.model_validate(request)
    identity = request.identity()
    return intern_key(canonical_hash({"kind": "model", "model": model, **identity}))


# --------------------------------------------------------------------------- streamed keys


class IdentityCache:
    """A cache of values computed from objects, by the objects' identity, that forgets an
    entry when its object is garbage-collected (a weak reference per entry). For frozen
    objects only: a value is computed once per object and never again.

    Thread-safe for concurrent readers and writers (dict operations are atomic).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.KeyedRef[int, Any], Any]] = {}

    def get(self, obj: Any) -> Any:
        """The value cached for ``obj`` (this very object), else ``None``."""
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def put(self, obj: Any, value: Any) -> None:
        """Cache ``value`` for ``obj`` until ``obj`` is collected."""
        key = id(obj)
        # the standard library's KeyedRef: one shared callback instead of a closure per entry
        self._entries[key] = (weakref.KeyedRef(obj, self._forget, key), value)

    def _forget(self, ref: weakref.KeyedRef[int, Any]) -> None:
        entry = self._entries.get(ref.key)
        if entry is not None and entry[0] is ref:
            del self._entries[ref.key]

    def __len__(self) -> int:
        return len(self._entries)


#: how many message-list prefixes :func:`model_key_of` keeps per thread
_PREFIX_CHAINS = 8
_MODEL_KEY_HEAD = b'{"kind":"model","messages":['


class _Chains(threading.local):
    def __init__(self) -> None:
        #: each chain: [message bytes list, SHA-256 states after each message]
        self.chains: list[tuple[list[bytes], list[Any]]] = []


_chains = _Chains()


def model_key_tail(model: str, tools: Any, stop: list[str], options: Any) -> bytes:
    """What :func:`model_key_of` hashes after the messages' canonical JSON: ``],"model":``
    and the canonical JSON of ``model``, ``options``, ``normalize_stop(stop)`` and
    ``tools`` as members of the key's object (RFC 8785 §3.2.3 order), then ``}`` — for
    a caller that hashes many requests with the same other parts (``tail=`` of
    :func:`model_key_of`).

    Raises:
        CanonicalizationError: ``model``, ``tools``, ``stop`` or ``options`` has no
            canonical form (JSON Pointer relative to the key's object).
    """
    return b"".join(
        (
            b'],"model":',
            _canonical_member(model, "/model"),
            b',"options":',
            _canonical_member(options, "/options"),
            b',"stop":',
            _canonical_member(normalize_stop(stop), "/stop"),
            b',"tools":',
            _canonical_member(tools, "/tools"),
            b"}",
        )
    )


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """The length of the longest common prefix of two lists (members compared with
    ``==``, which checks identity first). The comparisons are list-slice comparisons,
    done in C: one when one list extends the other (a growing history), a binary search
    of O(log n) slices otherwise."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def model_key_of(
    model: str, messages: list[bytes], tools: Any, stop: list[str], options: Any, *, tail: bytes | None = None
) -> str:
    """:func:`model_key` from the canonical JSON of each message (``messages``, in order)
    and the other parts of the request: byte-identical to hashing
    ``canonical_json({"kind": "model", "model": model, "messages": [...], "tools": tools,
    "stop": normalize_stop(stop), "options": options})`` — an object's members sorted by
    name (RFC 8785 §3.2.3: ``kind`` < ``messages`` < ``model`` < ``options`` < ``stop`` <
    ``tools``), an array's members joined by ``,`` (§3.2.1).

    A chat history grows by appending: the SHA-256 state after each message of the last
    few message lists hashed (per thread) is kept, and a request that starts with one of
    them resumes from the longest shared prefix — each message of a growing history is
    hashed once rather than once per request. ``tail``: :func:`model_key_tail` of
    ``model``, ``tools``, ``stop`` and ``options`` when the caller has it already (then
    those four are not read).

    Raises:
        CanonicalizationError: ``model``, ``tools``, ``stop`` or ``options`` has no
            canonical form (JSON Pointer relative to the key's object).
    """
    if tail is None:
        tail = model_key_tail(model, tools, stop, options)
    n = len(messages)
    if n == 0:
        return intern_key("sha256:" + hashlib.sha256(_MODEL_KEY_HEAD + tail).hexdigest())
    chains = _chains.chains
    best: tuple[list[bytes], list[Any]] | None = None
    shared = 0
    for chain in chains:
        msgs = chain[0]
        if not msgs or msgs[0] is not messages[0] and msgs[0] != messages[0]:
            continue
        k = common_prefix(msgs, messages)
        if k > shared:
            best, shared = chain, k
    if best is not None and shared == len(best[0]) and shared <= n:
        chain_msgs, states = best  # extend this chain in place
        chains.remove(best)
    elif best is not None:
        chain_msgs, states = best[0][:shared], best[1][:shared]
    else:
        chain_msgs, states = [], []
    if shared:
        h = states[shared - 1].copy()
    else:
        h = hashlib.sha256(_MODEL_KEY_HEAD)
    for j in range(shared, n):
        if j:
            h.update(b",")
        h.update(messages[j])
        chain_msgs.append(messages[j])
        states.append(h.copy())
    chains.insert(0, (chain_msgs, states))
    del chains[_PREFIX_CHAINS:]
    h = h.copy()
    h.update(tail)
    return intern_key("sha256:" + str(h.hexdigest()))


def _canonical_member(value: Any, path: str) -> bytes:
    try:
        return canonical_json(value)
    except CanonicalizationError as exc:
        raise CanonicalizationError(exc.reason, path + exc.path) from None
