"""Exact reading of user-authored JSON (branch, intervention, policy and fixture files,
``--args-json``).

orjson reads integers beyond 64 bits as floats (``100000000000000000000000000`` becomes
``1e+26``) and the recording format only admits values with an RFC 8785 canonical form
(integers within ±(2**53-1), I-JSON, RFC 7493 §2.2; finite numbers; no lone surrogates).
:func:`loads_user_json` reads with the standard library's :mod:`json` (exact integers,
``NaN``/``Infinity`` refused) and then rejects any value without a canonical form, naming
the source, the JSON Pointer and the reason — so a bad value is refused when the file is
read, not later in the middle of a replay.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CanonicalizationError, InspectorError
from .canonical import canonical_json

__all__ = ["loads_user_json"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_user_json(data: bytes | str, source: str, error: type[InspectorError]) -> Any:
    """Parse ``data`` (UTF-8 bytes or text) exactly and check every value has a canonical
    form.

    Raises:
        ``error`` (a :class:`~core.errors.InspectorError` subclass) with a one-line message
        ``"{source}: ..."``: not UTF-8, malformed JSON (line and column), ``NaN`` /
        ``Infinity``, nesting too deep, or a value without a canonical form (its JSON
        Pointer and the reason, e.g. an integer outside ±(2**53-1)).
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{source}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
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
        raise error(f"{source}: JSON nested too deeply") from None
    try:
        canonical_json(obj)
    except CanonicalizationError as exc:
        raise error(f"{source}: at {exc.path or '/'}: {exc.reason}") from None
    except RecursionError:
        raise error(f"{source}: JSON nested too deeply") from None
    return obj
