"""JSON values that a recording cannot hold as they are: non-finite numbers, integers
beyond ±(2**53-1) and invalid Unicode.

Sources we import are not always strict JSON. Python's ``json`` module writes and reads
the literals ``NaN``, ``Infinity`` and ``-Infinity``; tool output can hold lone UTF-16
surrogates (a JSON ``"\\ud800"`` escape with no partner) or bytes that are not UTF-8;
ids and counters can be integers of any size. A recording must hold none of these raw:
``orjson.dumps`` silently writes NaN as ``null`` (a misread), orjson reads an integer
beyond 64 bits as an inexact float, and RFC 8785 canonical JSON rejects all of them
(§3.2.2.3 and I-JSON, RFC 7493 §2.2: integers only within ±(2**53-1)) — so neither a
key nor the recording's digest could be computed and the recording could not be saved.

So importers turn each such value into a *tagged object* before it reaches a
:class:`~core.record.recording.Recording` (documented in ``docs/format.md``, section
"Non-standard values"):

* a non-finite number becomes ``{"$nonfinite": "NaN"}`` (or ``"Infinity"``,
  ``"-Infinity"``);
* an integer outside ±(2**53-1) becomes ``{"$bigint": DIGITS}``, its exact decimal
  digits (``"-"`` first when negative, no leading zeros), e.g.
  ``{"$bigint": "1152921504606846976"}`` for 2**60; only integers outside the range are
  tagged, so each integer has exactly one form;
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
(``float('nan')``, the exact ``int``, a ``str`` holding the lone surrogates; undecodable
bytes come back as the ``surrogateescape`` code points U+DC80–U+DCFF, and
:func:`invalid_unicode_bytes` gives the original bytes).

Entry points for importers: :func:`load_json_lenient` (bytes → value + warnings),
:func:`encode_value` (any parsed value → tagged value + warnings), :func:`encode_text`,
:func:`encode_bytes`, :func:`encode_int`, :func:`find_big_int` (where an identity holds
an integer beyond the range: importers then give the call no key),
:func:`might_hold_big_int` / :func:`json_loads_exact` (reading such integers exactly),
and :func:`display_text` for showing a value.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import FormatError
from .nesting import check_text, check_values, depth_reason, dumps, ensure_recursion_limit, is_parse_depth_failure

__all__ = [
    "NONFINITE_TAG",
    "INVALID_UNICODE_TAG",
    "BIGINT_TAG",
    "SAFE_INT_MAX",
    "ValueWarning",
    "load_json_lenient",
    "encode_value",
    "encode_text",
    "encode_bytes",
    "encode_float",
    "encode_int",
    "find_big_int",
    "might_hold_big_int",
    "json_loads_exact",
    "decode_value",
    "invalid_unicode_bytes",
    "is_tagged",
    "display_text",
    "check_parsed_depth",
]

NONFINITE_TAG = "$nonfinite"
INVALID_UNICODE_TAG = "$invalid_unicode"
BIGINT_TAG = "$bigint"
#: The largest integer a recording holds as a JSON number (RFC 8785 §3.2.2.3, I-JSON
#: RFC 7493 §2.2); integers beyond ±SAFE_INT_MAX are tagged ``{"$bigint": DIGITS}``.
SAFE_INT_MAX = 2**53 - 1
_SAFE_DIGITS = str(SAFE_INT_MAX)  # 16 digits
_BIGINT_DIGITS = re.compile(r"-?[1-9][0-9]*")
_CHUNK = 500  # digits per step when converting huge integers (below any int_max_str_digits)
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


def _int_digits(value: int) -> str:
    """Exact decimal text of any ``int`` (beyond Python's ``int_max_str_digits`` too)."""
    try:
        return str(value)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows at once
        pass
    neg = value < 0
    n = -value if neg else value
    base = 10**_CHUNK
    parts: list[str] = []
    while n:
        n, low = divmod(n, base)
        parts.append(str(low))
    out = parts[-1] + "".join(p.zfill(_CHUNK) for p in reversed(parts[:-1]))
    return "-" + out if neg else out


def _int_from_digits(text: str) -> int:
    """The ``int`` a decimal text stands for, of any length (see :func:`_int_digits`)."""
    try:
        return int(text)
    except ValueError:
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise
    neg = text.startswith("-")
    digits = text.lstrip("+-")
    n = 0
    for i in range(0, len(digits), _CHUNK):
        chunk = digits[i : i + _CHUNK]
        n = n * 10 ** len(chunk) + int(chunk)
    return -n if neg else n


def encode_int(value: int) -> int | dict[str, str]:
    """``value`` itself when it is within ±(2**53-1), else its tag
    ``{"$bigint": DIGITS}`` (exact decimal digits, ``-`` first when negative).

    The range is the one RFC 8785 canonical JSON accepts (§3.2.2.3; I-JSON, RFC 7493
    §2.2); :func:`decode_value` gives the exact ``int`` back.
    """
    if -SAFE_INT_MAX <= value <= SAFE_INT_MAX:
        return value
    return {BIGINT_TAG: _int_digits(int(value))}


def _out_of_range_digits(text: Any) -> bool:
    """True when ``text`` is the canonical decimal form of an integer beyond ±(2**53-1)."""
    if type(text) is not str or not _BIGINT_DIGITS.fullmatch(text):
        return False
    digits = text[1:] if text[0] == "-" else text
    return len(digits) > len(_SAFE_DIGITS) or (len(digits) == len(_SAFE_DIGITS) and digits > _SAFE_DIGITS)


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
    """True when ``value`` is a well-formed ``$nonfinite``, ``$bigint`` or
    ``$invalid_unicode`` tag.

    A well-formed tag has exactly the documented keys; an object that merely contains a
    key named ``$nonfinite`` among others is ordinary data. A ``$bigint`` tag holds the
    canonical decimal digits (optional ``-``, no leading zeros, no ``+``) of an integer
    *outside* ±(2**53-1); ``{"$bigint": "5"}`` is ordinary data (5 is never tagged).
    """
    if type(value) is not dict:
        return False
    if NONFINITE_TAG in value:
        return len(value) == 1 and value[NONFINITE_TAG] in _NONFINITE_NAMES
    if BIGINT_TAG in value:
        return len(value) == 1 and _out_of_range_digits(value[BIGINT_TAG])
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

    ``{"$nonfinite": "NaN"}`` → ``float('nan')`` (and ±inf); ``{"$bigint": DIGITS}`` →
    the exact ``int``; an ``$invalid_unicode`` tag → a ``str`` holding its lone
    surrogates, with undecodable bytes as the ``surrogateescape`` code points
    U+DC80–U+DCFF. Everything else is returned as is (containers rebuilt only when
    something inside changed).
    """
    if type(value) is dict:
        if is_tagged(value):
            if NONFINITE_TAG in value:
                return float(value[NONFINITE_TAG].replace("Infinity", "inf"))
            if BIGINT_TAG in value:
                return _int_from_digits(value[BIGINT_TAG])
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
    (``NaN``, ``-Infinity``, an integer's digits, or the text with U+FFFD where Unicode
    was invalid), other values as compact JSON (strings as themselves; an integer
    tagged ``$bigint`` inside a container appears as a bare JSON number)."""
    if isinstance(value, str):
        return value
    if is_tagged(value):
        shown: str
        if NONFINITE_TAG in value:
            shown = value[NONFINITE_TAG]
        elif BIGINT_TAG in value:
            shown = value[BIGINT_TAG]
        else:
            shown = value[INVALID_UNICODE_TAG]
        return shown
    return dumps(_for_display(value)).decode()


def _for_display(value: Any) -> Any:
    if is_tagged(value):
        if BIGINT_TAG in value:
            return orjson.Fragment(value[BIGINT_TAG].encode())
        return display_text(value)
    if type(value) is int and not -(2**63) <= value < 2**64:  # beyond what orjson writes
        return orjson.Fragment(_int_digits(value).encode())
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
            self.warnings.append(ValueWarning(self.place or "/", f"... and {self.dropped} more non-standard value(s)"))
        return self.warnings

    def text(self, s: str, path: str) -> Any:
        enc = encode_text(s, escaped_bytes=self.escaped_bytes)
        if not isinstance(enc, str):  # a tag (encode_text returns ``s`` itself when valid)
            parts = []
            if "surrogates" in enc:
                parts.append(f"{len(enc['surrogates'])} lone UTF-16 surrogate(s)")
            if "bytes" in enc:
                parts.append(f"{len(enc['bytes'])} byte(s) that are not UTF-8")
            self.warn(
                path,
                "invalid unicode: "
                + " and ".join(parts)
                + ' kept reversibly as {"$invalid_unicode": ...} (shown as U+FFFD)',
            )
        return enc

    def big_int(self, v: int, path: str) -> dict[str, str]:
        enc = encode_int(v)
        assert isinstance(enc, dict)
        digits = enc[BIGINT_TAG]
        shown = digits if len(digits) <= 40 else f"{digits[:24]}… ({len(digits.lstrip('-'))} digits)"
        self.warn(
            path,
            f"integer {shown} is outside ±(2**53-1), which RFC 8785 canonical JSON cannot hold; "
            'kept exactly as {"$bigint": "<digits>"}',
        )
        return enc

    def walk(self, v: Any, path: str) -> Any:
        t = type(v)
        if t is str:
            return self.text(v, path)
        if t is int:
            if -SAFE_INT_MAX <= v <= SAFE_INT_MAX:
                return v
            return self.big_int(v, path)
        if t is float:
            if math.isfinite(v):
                return v
            fenc = encode_float(v)
            assert isinstance(fenc, dict)  # a non-finite float is always tagged
            self.warn(
                path, f'non-standard number {fenc[NONFINITE_TAG]} kept as {{"$nonfinite": "{fenc[NONFINITE_TAG]}"}}'
            )
            return fenc
        if t is dict:
            if is_tagged(v):
                return v
            out: dict[str, Any] = {}
            changed = False
            for k, item in v.items():
                nk = k
                if type(k) is str and _has_surrogate(k):
                    ktag = encode_text(k, escaped_bytes=self.escaped_bytes)
                    assert isinstance(ktag, dict)  # a key with a lone surrogate is always tagged
                    nk = ktag[INVALID_UNICODE_TAG]
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
        if isinstance(v, int) and not isinstance(v, bool) and not -SAFE_INT_MAX <= v <= SAFE_INT_MAX:
            return self.big_int(int(v), path)  # an int subclass (IntEnum, numpy-like)
        return v


def _escape_pointer(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def encode_value(value: Any, *, place: str = "", escaped_bytes: bool = False) -> tuple[Any, list[ValueWarning]]:
    """Replace every non-standard value inside ``value`` by its tag.

    Returns ``(encoded, warnings)``; ``value`` is never mutated (containers are rebuilt
    only where something changed). Non-finite floats → ``$nonfinite``; integers outside
    ±(2**53-1) → ``$bigint`` (exact digits); strings with lone
    surrogates (or, with ``escaped_bytes``, ``surrogateescape``-decoded bytes) →
    ``$invalid_unicode``; ``bytes`` → text or ``$invalid_unicode``; tuples → lists;
    object keys with invalid Unicode get U+FFFD (lossy, warned). Existing well-formed
    tags are kept as they are. ``place`` prefixes each warning's place.
    """
    w = _Walker(place, escaped_bytes)
    out = w.walk(value, "")
    return out, w.finish()


def find_big_int(value: Any, path: str = "") -> str | None:
    """JSON Pointer (prefixed by ``path``) of the first integer outside ±(2**53-1) in
    ``value`` — a ``{"$bigint": ...}`` tag or a raw ``int`` — or ``None`` when it holds
    none.

    Importers ask this of a call's identity (tool arguments; a model request) after
    tagging: a call whose identity held such an integer is imported without a key
    (SPEC "Recording format": such a call is imported without a key, with a warning that replay cannot match it),
    although the tagged form itself could be canonicalized.
    """
    t = type(value)
    if t is dict:
        if BIGINT_TAG in value and is_tagged(value):
            return path or "/"
        for k, v in value.items():
            tv = type(v)
            if tv is str or tv is bool or v is None or tv is float:
                continue
            found = find_big_int(v, f"{path}/{_escape_pointer(str(k))}")
            if found is not None:
                return found
        return None
    if t is list or t is tuple:
        for i, v in enumerate(value):
            tv = type(v)
            if tv is str or tv is bool or v is None or tv is float:
                continue
            found = find_big_int(v, f"{path}/{i}")
            if found is not None:
                return found
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not -SAFE_INT_MAX <= value <= SAFE_INT_MAX:
        return path or "/"
    return None


# --------------------------------------------------------------------------- loading

# A JSON number token of 16 or more digits is the only way to write an integer outside
# ±(2**53-1) (2**53 has 16 digits). A number token follows the document start, "[",
# ":" or ",", then optional whitespace; a line start counts too (JSON Lines). Inside a
# string the same characters are at worst a false alarm (the exact reading then costs a
# little time); a token is never missed. Digit runs are found with bytes.translate +
# bytes.find (a regular expression is 5-15 times slower on a 4 MB file).
_DIGIT_MAP = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_SIXTEEN = b"1" * 16
_SCAN_BLOCK = 1 << 18
_BEFORE_NUMBER = frozenset(b"[:,")
_SPACE = frozenset(b" \t")
_NEWLINE = frozenset(b"\r\n")


def might_hold_big_int(data: bytes | bytearray | memoryview | str) -> bool:
    """True when the JSON text ``data`` may hold an integer outside ±(2**53-1): it has a
    number token of 16 or more digits. ``False`` means it certainly holds none.

    orjson reads integers up to 64 bits exactly but an integer beyond 64 bits as an
    inexact float; a document for which this is true is read with
    :func:`json_loads_exact` instead. About 0.6 ms per MB.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    elif not isinstance(data, bytes):
        data = bytes(data)
    # a block at a time, each overlapping the next by 15 bytes: a run of 16 digits that
    # starts in a block lies whole in it, and each run start is judged in one block. The
    # digit mask of a block stays in the CPU cache, where a mask of the whole file would
    # be a second copy of it written to fresh memory (a third less time on 100 MB).
    for s in range(0, len(data), _SCAN_BLOCK):
        mask = data[s : s + _SCAN_BLOCK + 15].translate(_DIGIT_MAP)
        pos = mask.find(_SIXTEEN)
        while pos != -1:
            i = s + pos - 1
            if i >= 0 and data[i] == 0x2D:  # "-"
                i -= 1
            while i >= 0 and data[i] in _SPACE:
                i -= 1
            if i < 0 or data[i] in _BEFORE_NUMBER or data[i] in _NEWLINE:
                return True
            end = mask.find(b"0", pos)
            if end == -1:
                break  # the run goes on into the next block, which sees its rest as inside a run
            pos = mask.find(_SIXTEEN, end)
    return False


def _nonfinite_constant(name: str) -> float:
    return float(name.replace("Infinity", "inf"))


def json_loads_exact(text: str) -> Any:
    """Parse JSON text with the standard library: ``NaN``/``Infinity``/``-Infinity``
    literals become floats, lone surrogate escapes stay in strings, and every integer is
    read exactly, whatever its length (also beyond Python's ``int_max_str_digits``).
    Pass the result through :func:`encode_value` to tag what a recording cannot hold.

    Raises:
        json.JSONDecodeError: not JSON (``msg``, ``lineno``, ``colno``, ``pos``).
        RecursionError: nested too deeply.
    """
    try:
        return json.loads(text, parse_constant=_nonfinite_constant)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        if "integer string conversion" not in str(exc):
            raise
    return json.loads(text, parse_constant=_nonfinite_constant, parse_int=_int_from_digits)


def load_json_lenient(data: bytes | str, *, source: str = "<bytes>", place: str = "") -> tuple[Any, list[ValueWarning]]:
    """Parse JSON that may hold ``NaN``/``Infinity``/``-Infinity`` literals, integers
    outside ±(2**53-1), lone surrogate escapes or bytes that are not UTF-8; return
    ``(value, warnings)`` with every such value tagged (see module docstring).

    Strict JSON goes through orjson (fast path); anything orjson refuses, and any
    document with a number of 16 or more digits (:func:`might_hold_big_int`; orjson
    would read an integer beyond 64 bits as an inexact float), is parsed again with
    :func:`json_loads_exact` (which accepts the non-finite literals and lone surrogates
    and reads integers exactly) after decoding the bytes with ``surrogateescape``. When the bytes were not
    UTF-8, code points U+DC80–U+DCFF in the result are taken as those bytes (a document
    mixing raw bytes with ``\\udc80``-``\\udcff`` escapes is read as bytes for both).

    The document is one JSON value, held to the nesting limit
    (:data:`core.record.nesting.MAX_DEPTH` levels; :func:`check_parsed_depth`).

    Raises:
        FormatError: not JSON at all (names ``source``, line and column; "truncated"
            when the document ends early), or nested deeper than the limit (names the
            JSON Pointer, after ``place``, and the limit).
    """
    ensure_recursion_limit()
    try:
        value = orjson.loads(data)
    except ValueError as exc:  # orjson.JSONDecodeError, and str input holding surrogates
        check_parsed_depth(data, exc=exc, source=source, place=place)
    else:
        check_parsed_depth(data, value, source=source, place=place)
        # orjson accepts only strict JSON: no NaN/Infinity (nor overflowing numbers), no
        # lone surrogates, valid UTF-8 — nothing to tag, so no walk is needed, unless an
        # integer may be outside ±(2**53-1) (then read exactly and tagged below)
        if not might_hold_big_int(data):
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
        value = json_loads_exact(text)
    except json.JSONDecodeError as exc:
        tail = text.rstrip()
        if not tail:
            raise FormatError("empty document", file=source) from None
        if exc.pos >= len(tail) or exc.msg.startswith("Unterminated string"):
            reason = f"truncated JSON: the document ends early ({exc.msg})"
        else:
            reason = f"malformed JSON: {exc.msg}"
        raise FormatError(reason, file=source, path=place or None, line=exc.lineno, column=exc.colno) from None
    except RecursionError as exc:
        check_parsed_depth(text, exc=exc, source=source, place=place)
    check_parsed_depth(text, value, source=source, place=place)
    return encode_value(value, place=place, escaped_bytes=escaped)


def check_parsed_depth(
    data: bytes | bytearray | memoryview | str,
    value: Any = None,
    exc: BaseException | None = None,
    *,
    source: str,
    place: str = "",
) -> None:
    """Hold a parsed document to the nesting limit (:data:`core.record.nesting.MAX_DEPTH`
    levels; the document is one value): ``value`` as parsed, or — when a parser refused
    ``data`` with ``exc`` for its depth (orjson's "depth limit exceeded" at 1,024 levels,
    the ``json`` module's RecursionError) — the text itself.

    Raises:
        FormatError: nested deeper than the limit; names ``source``, the JSON Pointer
            (after ``place``) of the first container beyond it, and the limit.
    """
    if exc is None:
        check_values(value, source=source, prefix=place)
    elif is_parse_depth_failure(exc):
        check_text(data, source=source, prefix=place)
        raise FormatError(depth_reason(), file=source, path=place or None) from None
