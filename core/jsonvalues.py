"""JSON values that standard JSON cannot hold: non-finite numbers and invalid Unicode.

Sources we import are not always strict JSON. Python's ``json`` module writes and reads
the literals ``NaN``, ``Infinity`` and ``-Infinity``; tool output can hold lone UTF-16
surrogates (a JSON ``"\\ud800"`` escape with no partner) or bytes that are not UTF-8.
A recording must hold none of these: ``orjson.dumps`` silently writes NaN as ``null``
(a misread), and RFC 8785 canonical JSON rejects them (no key could be computed).

So importers turn each such value into a *tagged object* before it reaches a
:class:`~core.recording.Recording` (documented in ``docs/format.md``, section
"Non-standard values"):

* a non-finite number becomes ``{"$nonfinite": "NaN"}`` (or ``"Infinity"``,
  ``"-Infinity"``);
* a string with invalid Unicode becomes
  ``{"$invalid_unicode": TEXT, "surrogates": [[i, unit], ...], "bytes": [[i, byte], ...]}``
  where ``TEXT`` is the string with every bad code unit or byte replaced by U+FFFD (what
  a viewer shows), each ``[i, unit]`` says that ``TEXT[i]`` was the lone surrogate
  ``unit`` (0xD800–0xDFFF) and each ``[i, byte]`` that ``TEXT[i]`` was the undecodable
  byte ``byte`` (0x80–0xFF). At least one of the two lists is present and non-empty.

A tagged object is ordinary JSON: it saves and loads with our own format unchanged,
canonicalizes (so keys can be computed), and two NaNs compare equal (``==``, deepdiff,
canonical hashes), so a diff sees no difference between NaN and NaN — while NaN stays
distinct from ``null``. :func:`decode_value` turns tags back into Python values
(``float('nan')``, a ``str`` holding the lone surrogates; undecodable bytes come back as
the ``surrogateescape`` code points U+DC80–U+DCFF, and :func:`invalid_unicode_bytes`
gives the original bytes).

Entry points for importers: :func:`load_json_lenient` (bytes → value + warnings),
:func:`encode_value` (any parsed value → tagged value + warnings), :func:`encode_text`,
:func:`encode_bytes`, and :func:`display_text` for showing a value.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import FormatError

__all__ = [
    "NONFINITE_TAG",
    "INVALID_UNICODE_TAG",
    "ValueWarning",
    "load_json_lenient",
    "encode_value",
    "encode_text",
    "encode_bytes",
    "encode_float",
    "decode_value",
    "invalid_unicode_bytes",
    "is_tagged",
    "display_text",
]

NONFINITE_TAG = "$nonfinite"
INVALID_UNICODE_TAG = "$invalid_unicode"
_NONFINITE_NAMES = ("NaN", "Infinity", "-Infinity")
_REPLACEMENT = "\ufffd"
_MAX_WARNINGS = 50  # per call; further ones are summarised in one last warning


@dataclass(frozen=True)
class ValueWarning:
    """Something non-standard met in a value: ``place`` (JSON Pointer inside the value,
    prefixed by the caller's place) and ``message``. Importers turn these into
    :class:`core.importers.base.ImportWarning` with the same fields."""

    place: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


# --------------------------------------------------------------------------- tags


def encode_float(value: float) -> float | dict[str, str]:
    """``value`` itself when finite, else its tag ``{"$nonfinite": "NaN"|"Infinity"|"-Infinity"}``."""
    if math.isnan(value):
        return {NONFINITE_TAG: "NaN"}
    if math.isinf(value):
        return {NONFINITE_TAG: "Infinity" if value > 0 else "-Infinity"}
    return value


def _has_surrogate(s: str) -> bool:
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def encode_text(s: str, *, escaped_bytes: bool = False) -> str | dict[str, Any]:
    """``s`` itself when it is valid Unicode, else its ``$invalid_unicode`` tag.

    Args:
        s: the string; lone surrogates (U+D800–U+DFFF) are the invalid part.
        escaped_bytes: the string came from bytes decoded with ``surrogateescape``, so
            code points U+DC80–U+DCFF stand for undecodable bytes 0x80–0xFF (recorded
            under ``"bytes"``); other lone surrogates are recorded under ``"surrogates"``.
    """
    if not _has_surrogate(s):
        return s
    chars = list(s)
    surrogates: list[list[int]] = []
    raw: list[list[int]] = []
    for i, ch in enumerate(chars):
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            if escaped_bytes and 0xDC80 <= cp <= 0xDCFF:
                raw.append([i, cp - 0xDC00])
            else:
                surrogates.append([i, cp])
            chars[i] = _REPLACEMENT
    tag: dict[str, Any] = {INVALID_UNICODE_TAG: "".join(chars)}
    if surrogates:
        tag["surrogates"] = surrogates
    if raw:
        tag["bytes"] = raw
    return tag


def encode_bytes(data: bytes) -> str | dict[str, Any]:
    """``data`` decoded as UTF-8, or its ``$invalid_unicode`` tag (``"bytes"`` list)
    when it is not valid UTF-8. Reversible: :func:`invalid_unicode_bytes` gives
    ``data`` back."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return encode_text(data.decode("utf-8", "surrogateescape"), escaped_bytes=True)


def _valid_pairs(v: Any, lo: int, hi: int, n: int) -> bool:
    if not isinstance(v, list) or not v:
        return False
    for p in v:
        if not (isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p)):
            return False
        if not (0 <= p[0] < n and lo <= p[1] <= hi):
            return False
    return True


def is_tagged(value: Any) -> bool:
    """True when ``value`` is a well-formed ``$nonfinite`` or ``$invalid_unicode`` tag.

    A well-formed tag has exactly the documented keys; an object that merely contains a
    key named ``$nonfinite`` among others is ordinary data.
    """
    if type(value) is not dict:
        return False
    if NONFINITE_TAG in value:
        return len(value) == 1 and value[NONFINITE_TAG] in _NONFINITE_NAMES
    if INVALID_UNICODE_TAG in value:
        text = value[INVALID_UNICODE_TAG]
        if not isinstance(text, str) or not set(value) <= {INVALID_UNICODE_TAG, "surrogates", "bytes"}:
            return False
        if len(value) == 1:
            return False
        n = len(text)
        if "surrogates" in value and not _valid_pairs(value["surrogates"], 0xD800, 0xDFFF, n):
            return False
        if "bytes" in value and not _valid_pairs(value["bytes"], 0x80, 0xFF, n):
            return False
        return True
    return False


def decode_value(value: Any) -> Any:
    """The Python value a tagged value stands for (recursively).

    ``{"$nonfinite": "NaN"}`` → ``float('nan')`` (and ±inf); an ``$invalid_unicode``
    tag → a ``str`` holding its lone surrogates, with undecodable bytes as the
    ``surrogateescape`` code points U+DC80–U+DCFF. Everything else is returned as is
    (containers rebuilt only when something inside changed).
    """
    if type(value) is dict:
        if is_tagged(value):
            if NONFINITE_TAG in value:
                return float(value[NONFINITE_TAG].replace("Infinity", "inf"))
            chars = list(value[INVALID_UNICODE_TAG])
            for i, unit in value.get("surrogates", ()):
                chars[i] = chr(unit)
            for i, byte in value.get("bytes", ()):
                chars[i] = chr(0xDC00 + byte)
            return "".join(chars)
        out = {}
        changed = False
        for k, v in value.items():
            nv = decode_value(v)
            changed |= nv is not v
            out[k] = nv
        return out if changed else value
    if type(value) is list:
        items = [decode_value(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value


def invalid_unicode_bytes(tag: dict[str, Any]) -> bytes:
    """The original bytes of an ``$invalid_unicode`` tag: UTF-8 of the text, each
    ``"bytes"`` entry as its raw byte and each lone surrogate in its 3-byte generalized
    UTF-8 form (``surrogatepass``). Raises ValueError when ``tag`` is not such a tag."""
    if not is_tagged(tag) or INVALID_UNICODE_TAG not in tag:
        raise ValueError("not an $invalid_unicode tag")
    text = tag[INVALID_UNICODE_TAG]
    subst: dict[int, bytes] = {}
    for i, unit in tag.get("surrogates", ()):
        subst[i] = chr(unit).encode("utf-8", "surrogatepass")
    for i, byte in tag.get("bytes", ()):
        subst[i] = bytes([byte])
    out = bytearray()
    for i, ch in enumerate(text):
        out += subst[i] if i in subst else ch.encode("utf-8")
    return bytes(out)


def display_text(value: Any) -> str:
    """A one-line text form of a value for viewers: tags shown as what they stand for
    (``NaN``, ``-Infinity``, or the text with U+FFFD where Unicode was invalid), other
    values as compact JSON (strings as themselves)."""
    if isinstance(value, str):
        return value
    if is_tagged(value):
        if NONFINITE_TAG in value:
            return value[NONFINITE_TAG]
        return value[INVALID_UNICODE_TAG]
    return orjson.dumps(_for_display(value)).decode()


def _for_display(value: Any) -> Any:
    if is_tagged(value):
        return display_text(value)
    if isinstance(value, dict):
        return {k: _for_display(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_for_display(v) for v in value]
    return value


# --------------------------------------------------------------------------- walking


class _Walker:
    def __init__(self, place: str, escaped_bytes: bool) -> None:
        self.place = place
        self.escaped_bytes = escaped_bytes
        self.warnings: list[ValueWarning] = []
        self.dropped = 0

    def warn(self, path: str, message: str) -> None:
        if len(self.warnings) < _MAX_WARNINGS:
            self.warnings.append(ValueWarning(f"{self.place}{path}", message))
        else:
            self.dropped += 1

    def finish(self) -> list[ValueWarning]:
        if self.dropped:
            self.warnings.append(
                ValueWarning(self.place or "/", f"... and {self.dropped} more non-standard value(s)")
            )
        return self.warnings

    def text(self, s: str, path: str) -> Any:
        enc = encode_text(s, escaped_bytes=self.escaped_bytes)
        if enc is not s:
            parts = []
            if "surrogates" in enc:
                parts.append(f"{len(enc['surrogates'])} lone UTF-16 surrogate(s)")
            if "bytes" in enc:
                parts.append(f"{len(enc['bytes'])} byte(s) that are not UTF-8")
            self.warn(
                path,
                "invalid unicode: " + " and ".join(parts)
                + ' kept reversibly as {"$invalid_unicode": ...} (shown as U+FFFD)',
            )
        return enc

    def walk(self, v: Any, path: str) -> Any:
        t = type(v)
        if t is str:
            return self.text(v, path)
        if t is float:
            if math.isfinite(v):
                return v
            enc = encode_float(v)
            self.warn(path, f'non-standard number {enc[NONFINITE_TAG]} kept as {{"$nonfinite": "{enc[NONFINITE_TAG]}"}}')
            return enc
        if t is dict:
            if is_tagged(v):
                return v
            out: dict[str, Any] = {}
            changed = False
            for k, item in v.items():
                nk = k
                if type(k) is str and _has_surrogate(k):
                    nk = encode_text(k, escaped_bytes=self.escaped_bytes)
                    nk = nk[INVALID_UNICODE_TAG]
                    self.warn(path, f"invalid unicode in object key {nk!r}: bad code units replaced by U+FFFD (lossy)")
                    changed = True
                elif type(k) is not str:
                    nk = str(k)
                    changed = True
                nv = self.walk(item, f"{path}/{_escape_pointer(nk)}")
                changed |= nv is not item
                out[nk] = nv
            return out if changed else v
        if t is list or t is tuple:
            items = [self.walk(item, f"{path}/{i}") for i, item in enumerate(v)]
            if t is tuple or any(a is not b for a, b in zip(items, v)):
                return items
            return v
        if t is bytes or t is bytearray:
            enc = encode_bytes(bytes(v))
            if not isinstance(enc, str):
                self.warn(path, f"invalid unicode: {len(enc['bytes'])} byte(s) that are not UTF-8 kept reversibly")
            return enc
        return v


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def encode_value(value: Any, *, place: str = "", escaped_bytes: bool = False) -> tuple[Any, list[ValueWarning]]:
    """Replace every non-standard value inside ``value`` by its tag.

    Returns ``(encoded, warnings)``; ``value`` is never mutated (containers are rebuilt
    only where something changed). Non-finite floats → ``$nonfinite``; strings with lone
    surrogates (or, with ``escaped_bytes``, ``surrogateescape``-decoded bytes) →
    ``$invalid_unicode``; ``bytes`` → text or ``$invalid_unicode``; tuples → lists;
    object keys with invalid Unicode get U+FFFD (lossy, warned). Existing well-formed
    tags are kept as they are. ``place`` prefixes each warning's place.
    """
    w = _Walker(place, escaped_bytes)
    out = w.walk(value, "")
    return out, w.finish()


# --------------------------------------------------------------------------- loading


def _nonfinite_constant(name: str) -> float:
    return float(name.replace("Infinity", "inf"))


def load_json_lenient(
    data: bytes | str, *, source: str = "<bytes>", place: str = ""
) -> tuple[Any, list[ValueWarning]]:
    """Parse JSON that may hold ``NaN``/``Infinity``/``-Infinity`` literals, lone
    surrogate escapes or bytes that are not UTF-8; return ``(value, warnings)`` with every
    such value tagged (see module docstring).

    Strict JSON goes through orjson (fast path); anything orjson refuses is parsed again
    with the standard library's ``json`` (which accepts the non-finite literals and lone
    surrogates) after decoding the bytes with ``surrogateescape``. When the bytes were not
    UTF-8, code points U+DC80–U+DCFF in the result are taken as those bytes (a document
    mixing raw bytes with ``\\udc80``-``\\udcff`` escapes is read as bytes for both).

    Raises:
        FormatError: not JSON at all (names ``source``, line and column; "truncated"
            when the document ends early).
    """
    try:
        value = orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError, and str input holding surrogates
        pass
    else:
        # orjson accepts only strict JSON: no NaN/Infinity (nor overflowing numbers), no
        # lone surrogates, valid UTF-8 — nothing to tag, so no walk is needed
        return value, []
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
            escaped = False
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "surrogateescape")
            escaped = True
    else:
        text = data
        escaped = False
    try:
        value = json.loads(text, parse_constant=_nonfinite_constant)
    except json.JSONDecodeError as exc:
        tail = text.rstrip()
        if not tail:
            raise FormatError("empty document", file=source) from None
        if exc.pos >= len(tail) or exc.msg.startswith("Unterminated string"):
            reason = f"truncated JSON: the document ends early ({exc.msg})"
        else:
            reason = f"malformed JSON: {exc.msg}"
        raise FormatError(reason, file=source, path=place or None, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise FormatError("JSON nested too deeply", file=source, path=place or None) from None
    return encode_value(value, place=place, escaped_bytes=escaped)
