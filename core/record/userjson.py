"""Exact reading of user-authored JSON (branch, intervention, policy and fixture files,
``--args-json``).

orjson reads integers beyond 64 bits as floats (``100000000000000000000000000`` becomes
``1e+26``) and the recording format only admits values with an RFC 8785 canonical form
(integers within ±(2**53-1), I-JSON, RFC 7493 §2.2; finite numbers; no lone surrogates).
:func:`loads_user_json` reads with the standard library's :mod:`json` (exact integers,
``NaN``/``Infinity`` refused) and then rejects any value without a canonical form, naming
the source, the JSON Pointer and the reason — so a bad value is refused when the file is
read, not later in the middle of a replay. The same holds for nesting: each value of the
file nests at most :data:`core.record.nesting.MAX_DEPTH` levels (the whole file is one
value, unless the reader names the file's own structure, as the branch reader does).

Privacy (docs/format.md, "Redaction"): the value is redacted
(:func:`core.record.redaction.redact`) as it is read, before it is validated or used —
so the copy the workspace stores, the replay events and the exports hold exactly what
the replay used, and a resumed replay equals a fresh one.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CanonicalizationError, FormatError, InspectorError, short_pointer
from .canonical import canonical_json
from .nesting import VALUE, Pattern, check_text, check_values, depth_reason, ensure_recursion_limit
from .redaction import SecretRedactor, redact

__all__ = ["loads_user_json"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_user_json(data: bytes | str, source: str, error: type[InspectorError], *, values: Pattern = VALUE) -> Any:
    """Parse ``data`` (UTF-8 bytes or text) exactly, redact it, and check every value has
    a canonical form and nests at most :data:`core.record.nesting.MAX_DEPTH` levels
    (``values`` locates the values: :data:`~core.record.nesting.VALUE`, the default,
    makes the whole document one).

    Raises:
        ``error`` (a :class:`~core.errors.InspectorError` subclass) with a one-line message
        ``"{source}: ..."``: not UTF-8, malformed JSON (line and column), ``NaN`` /
        ``Infinity``, nested deeper than the limit (the JSON Pointer where it is crossed,
        and the limit), or a value without a canonical form (its JSON Pointer and the
        reason, e.g. an integer outside ±(2**53-1)).
    """
    ensure_recursion_limit()
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            line, column, offset, byte = invalid_utf8_at(bytes(data)) or (1, 1, 0, 0)
            raise error(
                f"{source}: line {line}, column {column}: not UTF-8 text (byte 0x{byte:02x} at byte offset {offset:,})"
            ) from None
    else:
        text = data
    text = text.removeprefix("\ufeff")
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise error(f"{source}: line {exc.lineno}, column {exc.colno}: malformed JSON ({exc.msg})") from None
    except ValueError as exc:
        raise error(f"{source}: malformed JSON ({exc})") from None
    except RecursionError:
        _too_deep(text, values, source, error)
        raise error(f"{source}: {depth_reason()}") from None
    try:
        check_values(obj, values, source=source)
    except FormatError as exc:
        raise _as(error, source, exc) from None
    # redacted as it is read, before validation and use: what a replay uses and what is
    # stored (workspace, events, exports) is the redacted value (docs/format.md, "Redaction")
    obj, _ = redact(obj, SecretRedactor())
    try:
        canonical_json(obj)
    except CanonicalizationError as exc:
        raise error(f"{source}: at {short_pointer(exc.path or '/')}: {exc.reason}") from None
    return obj


def _too_deep(text: str, values: Pattern, source: str, error: type[InspectorError]) -> None:
    try:
        check_text(text, values, source=source)
    except FormatError as exc:
        raise _as(error, source, exc) from None


def _as(error: type[InspectorError], source: str, exc: FormatError) -> InspectorError:
    return error(f"{source}: at {short_pointer(exc.path or '/')}: {exc.reason}")


def invalid_utf8_at(raw: bytes) -> tuple[int, int, int, int] | None:
    """Where ``raw`` first stops being UTF-8 (RFC 3629; an encoded surrogate counts as
    invalid, as RFC 8259 section 8.1 requires of JSON text): ``(line, column, offset,
    byte)`` — line and column 1-based, the column counted in characters as orjson counts
    them, ``offset`` in bytes from the start, ``byte`` the first bad byte; ``None`` when
    all of ``raw`` is UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start
        line_start = raw.rfind(b"\n", 0, offset) + 1
        line = raw.count(b"\n", 0, offset) + 1
        column = len(raw[line_start:offset].decode("utf-8", "replace")) + 1
        return line, column, offset, raw[offset]
    return None
