"""Canonical JSON (RFC 8785, "JCS") and the keys derived from it.

The reference implementation is the ``rfc8785`` package. :func:`canonical_json` is a
fast path built on ``orjson`` that produces byte-identical output (a hypothesis property
test in ``tests/core/test_canonical.py`` holds it to that); values it cannot prove safe
for the fast path (object keys at or above U+E000, whose UTF-16 order differs from code
point order, RFC 8785 §3.2.3) go through the reference implementation.

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
import math
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import rfc8785

from .errors import CanonicalizationError

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


def _prepare(value: Any, path: str) -> Any:
    """Validate ``value`` and return an orjson-ready equivalent.

    Floats become ``orjson.Fragment`` holding their ECMAScript form; containers are
    rebuilt only when a descendant changed. Raises :class:`CanonicalizationError` with
    the JSON Pointer of the first offending value.
    """
    t = type(value)
    if t is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise CanonicalizationError("string contains a lone UTF-16 surrogate", path) from None
        return value
    if t is bool or value is None:
        return value
    if t is int:
        if -_INT_MAX <= value <= _INT_MAX:
            return value
        raise CanonicalizationError(
            f"integer {value} is outside the I-JSON safe range ±(2**53-1)", path
        )
    if t is float:
        if math.isnan(value) or math.isinf(value):
            raise CanonicalizationError(f"{value} is not a JSON number", path)
        return orjson.Fragment(_es_number(value))
    if t is dict or isinstance(value, Mapping):
        changed = t is not dict
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                raise CanonicalizationError(
                    f"object key {k!r} is a {type(k).__name__}, not a string", path
                )
            if not k.isascii():
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError:
                    raise CanonicalizationError(
                        "object key contains a lone UTF-16 surrogate", path
                    ) from None
                if max(k) >= _UTF16_ORDER_BREAK:
                    raise _NeedsReference
            nv = _prepare(v, f"{path}/{_escape_pointer(k)}")
            if nv is not v:
                changed = True
            out[k] = nv
        return out if changed else value
    if t is list or t is tuple:
        changed = t is not list
        items = []
        for i, v in enumerate(value):
            nv = _prepare(v, f"{path}/{i}")
            if nv is not v:
                changed = True
            items.append(nv)
        return items if changed else value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _prepare(int(value), path)
    if isinstance(value, float):
        return _prepare(float(value), path)
    if isinstance(value, str):
        return _prepare(str(value), path)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise CanonicalizationError("bytes have no JSON form", path)
    if isinstance(value, (set, frozenset)):
        raise CanonicalizationError("a set has no deterministic order", path)
    raise CanonicalizationError(f"a {type(value).__name__} object is not JSON", path)


def _escape_pointer(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 §3)."""
    return token.replace("~", "~0").replace("/", "~1")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical JSON of ``value`` as UTF-8 bytes.

    ``value`` is made of ``dict`` (string keys), ``list``/``tuple``, ``str``, ``int``
    (within ±(2**53-1)), finite ``float``, ``bool`` and ``None``.

    Raises:
        CanonicalizationError: NaN/±Infinity, out-of-range integers, lone surrogates,
            bytes, sets, non-string keys, or any other object — never silently dropped.
    """
    try:
        prepared = _prepare(value, "")
    except _NeedsReference:
        try:
            return rfc8785.dumps(value)
        except rfc8785.CanonicalizationError as exc:  # pragma: no cover - _prepare validated
            raise CanonicalizationError(str(exc)) from exc
    return orjson.dumps(prepared, option=orjson.OPT_SORT_KEYS)


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
    """Canonical key of a tool call: hash of ``{kind: "tool", tool, arguments}``."""
    return canonical_hash({"kind": "tool", "tool": tool, "arguments": arguments})


def model_key(model: str, request: Any) -> str:
    """Canonical key of a model call.

    ``request`` is a :class:`core.recording.ModelRequest` or a mapping with
    ``messages`` (list of message dicts), ``tools``, ``stop`` and ``options``. The key
    covers the model identity, every message, every tool schema, the *normalized* stop
    sequences and every option — so stop order/duplicates never change the key and any
    other change does.
    """
    if not hasattr(request, "identity"):
        # validate a mapping into the model so that absent and null fields key the same
        from .recording import ModelRequest

        request = ModelRequest.model_validate(request)
    identity = request.identity()
    return canonical_hash({"kind": "model", "model": model, **identity})
