"""Reading source files for importers: bytes, digest, JSON parsing, damage recovery.

* :func:`read_source` reads a file once and computes its SHA-256 (recorded in every
  imported recording's ``metadata.source``).
* :func:`parse_source_json` parses JSON with orjson (falling back to the standard
  library for the non-standard ``NaN``/``Infinity`` literals some tools write); a
  document cut short raises :class:`TruncatedSourceError` whose ``partial`` holds what
  :func:`salvage_json` could recover.
* :func:`salvage_json` closes a truncated JSON document at the last element that is
  certainly complete (the element after the last comma of the innermost open container
  is dropped, since a number or a string there may itself be cut).
* :func:`salvage_zip` reads the complete entries of a zip whose central directory is
  missing (a truncated ``.eval`` log), from the local file headers (PKWARE APPNOTE
  §4.3.7), checking each entry's CRC-32.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import sys
import threading
import zlib
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import FormatError

if sys.version_info >= (3, 14):  # Zstandard in the standard library (PEP 784)
    import zipfile as zipfile

    from compression import zstd as zstd
else:  # the backport of Python 3.14's compression.zstd, with its zipfile module
    from backports import zstd as zstd
    from backports.zstd import zipfile as zipfile

#: zip compression method 93 (APPNOTE.TXT 4.4.5): Zstandard, as inspect-ai writes .eval logs
ZIP_ZSTANDARD = 93

HEAD_BYTES = 64 * 1024


#: sources at least this big are hashed in a thread while the importer parses them
#: (hashlib releases the GIL: on two cores the digest then costs no wall time)
HASH_IN_THREAD_BYTES = 8 * 1024 * 1024


@dataclass
class SourceFile:
    """A source file read into memory: ``path``, ``data`` (bytes), :attr:`sha256` (hex).

    ``digest`` is the SHA-256 hex digest, or a future of it computed in a thread."""

    path: Path
    data: bytes
    digest: str | Future[str]
    _big: bool | None = field(default=None, repr=False, compare=False)

    @property
    def sha256(self) -> str:
        """The SHA-256 of :attr:`data`, hex (waits for the hashing thread)."""
        if not isinstance(self.digest, str):
            self.digest = self.digest.result()
        return self.digest

    @property
    def name(self) -> str:
        """The path as the user gave it (used in error messages)."""
        return str(self.path)

    @property
    def may_hold_big_ints(self) -> bool:
        """Whether an integer outside ±(2**53-1) may be in the data (computed once): a
        compressed file (zip, gzip) may; a text file only if it has a number of 16 or
        more digits (:func:`core.record.jsonvalues.might_hold_big_int`; also inside JSON held
        in a string, e.g. tool-call arguments, since the digits follow ``:`` there too)."""
        if self._big is None:
            from ..record.jsonvalues import might_hold_big_int

            self._big = self.data[:2] in (b"PK", b"\x1f\x8b") or might_hold_big_int(self.data)
        return self._big


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object (a dict), else a new empty one."""
    return value if isinstance(value, dict) else {}


def as_array(value: Any) -> list[Any]:
    """``value`` when it is a JSON array (a list), else a new empty one."""
    return value if isinstance(value, list) else []


def read_source(path: str | Path) -> SourceFile:
    """Read ``path`` and hash it.

    Raises:
        FormatError: no such file, a directory, or unreadable (names the file).
    """
    from ..record.reader import read_input

    p = Path(path)
    data = read_input(p)  # regular files only (core.record.reader)
    if len(data) < HASH_IN_THREAD_BYTES:
        return SourceFile(p, data, hashlib.sha256(data).hexdigest())
    digest: Future[str] = Future()

    def work() -> None:
        try:
            digest.set_result(hashlib.sha256(data).hexdigest())
        except BaseException as exc:  # noqa: BLE001 (handed to whoever asks for the digest)
            digest.set_exception(exc)

    threading.Thread(target=work, name="source-sha256", daemon=True).start()
    return SourceFile(p, data, digest)


def read_head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of ``path`` (``b""`` when unreadable or not a regular
    file: a FIFO or a device is never read while sniffing)."""
    from ..record.reader import read_input_head

    return read_input_head(path, n)


def read_tail(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The last ``n`` bytes of ``path`` (``b""`` as :func:`read_head`)."""
    from ..record.reader import read_input_tail

    return read_input_tail(path, n)


@dataclass
class Truncation:
    """What :func:`salvage_json` recovered from a document cut short.

    ``value`` is the document closed at the last certainly-complete element;
    ``open_path`` lists, from the root down, each open container when the data ended:
    for an array the number of its elements that are complete, for an object the last
    key seen (or ``None``). For a top-level array, elements ``0 .. open_path[0] - 1``
    are complete; a further element in ``value`` is partial.
    """

    value: Any
    open_path: list[Any] = field(default_factory=list)

    def complete_items(self) -> int:
        """For a top-level array: how many leading elements are complete."""
        if not isinstance(self.value, list):
            return 0
        if not self.open_path:
            return len(self.value)
        first = self.open_path[0]
        return first if isinstance(first, int) else 0


class TruncatedSourceError(FormatError):
    """A source file ends early (a JSON document cut mid-way, a zip without its end).

    ``recovered`` holds the runs an importer could rebuild from the part before the
    damage, each marked ``incomplete`` (may be empty). ``partial`` is the salvaged
    document (:class:`Truncation`) or ``None``. ``damage`` is what is wrong with the
    file alone (``reason`` may add what can be done about it).
    """

    def __init__(self, reason: str, *, file: str, partial: Truncation | None = None, **kw: Any) -> None:
        super().__init__(reason, file=file, **kw)
        self.partial = partial
        self.recovered: list[Any] = []
        self.damage = reason


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{},:]', re.S)


def salvage_json(text: str) -> Truncation | None:
    """Close a truncated JSON document; ``None`` when nothing can be recovered.

    Scans the structural characters outside strings, finds the innermost open
    container, cuts it after its last certainly-complete element (before its last
    comma, or after its last closed child container, or just after its opening
    bracket), closes every open container and parses the result.
    """
    # stack entries: [closer, safe_cut, complete_count, commas, key]
    stack: list[list[Any]] = []
    last_string: str | None = None
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c == '"':
            if len(tok) < 2 or not tok.endswith('"') or (tok.endswith('\\"') and _odd_backslashes(tok)):
                break  # unterminated string: the data ends here
            last_string = tok
            continue
        if c in "[{":
            stack.append(["]" if c == "[" else "}", m.start() + 1, 0, 0, None])
        elif c in "]}":
            if not stack:
                return None
            stack.pop()
            if stack:
                top = stack[-1]
                top[1] = m.end()
                top[2] = top[3] + 1
        elif c == ",":
            if stack:
                top = stack[-1]
                top[1] = m.start()
                top[2] = top[3] + 1
                top[3] += 1
        elif c == ":":
            if stack and last_string is not None:
                try:
                    stack[-1][4] = json.loads(last_string)
                except ValueError:
                    stack[-1][4] = None
        last_string = None
    if not stack:
        return None
    cut = stack[-1][1]
    candidate = text[:cut] + "".join(e[0] for e in reversed(stack))
    from ..record.jsonvalues import json_loads_exact
    from ..record.nesting import exceeds

    try:
        value = json_loads_exact(candidate)
    except (ValueError, RecursionError):
        return None
    if exceeds(value):  # beyond the nesting limit: nothing is recovered
        return None
    path = [e[2] if e[0] == "]" else e[4] for e in stack]
    return Truncation(value, path)


def _odd_backslashes(tok: str) -> bool:
    n = 0
    i = len(tok) - 2
    while i >= 0 and tok[i] == "\\":
        n += 1
        i -= 1
    return n % 2 == 1


def parse_source_json(src: SourceFile) -> tuple[Any, list[Any]]:
    """Parse ``src`` as JSON; return ``(value, value_warnings)``.

    orjson first. What orjson refuses, and a document with a number of 16 or more digits
    (:func:`core.record.jsonvalues.might_hold_big_int`: orjson reads integers beyond 64 bits as
    inexact floats), is parsed again with the standard library
    (:func:`core.record.jsonvalues.json_loads_exact`), which accepts ``NaN``/``Infinity``/
    ``-Infinity`` and lone surrogate escapes and reads integers exactly (bytes that are
    not UTF-8 are read with ``surrogateescape``); every such value is then tagged with
    :func:`core.record.jsonvalues.encode_value` (``{"$nonfinite": "NaN"}``,
    ``{"$bigint": "1152921504606846976"}``, ``{"$invalid_unicode": ...}``) so it stays
    distinct from null, exact, and survives save/load, and each is reported in
    ``value_warnings`` (:class:`core.record.jsonvalues.ValueWarning`).

    The document is one JSON value, held to the nesting limit
    (:data:`core.record.nesting.MAX_DEPTH` levels;
    :func:`core.record.jsonvalues.check_parsed_depth`).

    Raises:
        FormatError: empty or malformed (line and column), or nested deeper than the
            limit (the JSON Pointer where it is crossed, and the limit).
        TruncatedSourceError: the document ends early (the salvaged part in ``partial``).
    """
    from ..record.jsonvalues import check_parsed_depth, encode_value, json_loads_exact, might_hold_big_int
    from ..record.nesting import ensure_recursion_limit

    ensure_recursion_limit()
    data = src.data
    orjson_exc: orjson.JSONDecodeError | None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        orjson_exc = exc
        check_parsed_depth(data, exc=exc, source=src.name)
    else:
        check_parsed_depth(data, value, source=src.name)
        if not might_hold_big_int(data):
            return value, []
        # a number of 16+ digits: orjson reads an integer beyond 64 bits as an inexact
        # float, so read exactly below and tag integers outside ±(2**53-1) ($bigint)
        orjson_exc = None
    if not data.strip():
        raise FormatError("file is empty", file=src.name)
    try:
        text = data.decode("utf-8")
        escaped = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", "surrogateescape")
        escaped = True
    try:
        value = json_loads_exact(text)
    except json.JSONDecodeError as exc:
        tail = text.rstrip()
        if exc.pos >= len(tail) or "Unterminated string" in exc.msg:
            partial = salvage_json(text)
            if partial is not None:
                partial.value, _ = encode_value(partial.value, escaped_bytes=escaped)
            raise TruncatedSourceError(
                f"truncated: the JSON document ends early ({exc.msg})",
                file=src.name,
                line=exc.lineno,
                column=exc.colno,
                partial=partial,
            ) from None
        raise FormatError(f"malformed JSON: {exc.msg}", file=src.name, line=exc.lineno, column=exc.colno) from None
    except RecursionError as exc:
        check_parsed_depth(text, exc=exc, source=src.name)
    if orjson_exc is not None:
        check_parsed_depth(text, value, source=src.name)
    return encode_value(value, escaped_bytes=escaped)


_LOCAL = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIG = 0x04034B50


def salvage_zip(data: bytes) -> tuple[dict[str, bytes], str]:
    """Read the complete entries of a zip from its local file headers.

    Returns ``({name: content}, reason_stopped)``. Entries stored (method 0), deflated
    (method 8) or Zstandard-compressed (method 93) with sizes in the local header are
    read; reading stops at the
    first entry that is cut short, fails its CRC, or uses a data descriptor.
    """
    out: dict[str, bytes] = {}
    pos = 0
    n = len(data)
    while pos + _LOCAL.size <= n:
        fields = _LOCAL.unpack_from(data, pos)
        sig, _ver, flags, method, _t, _d, crc, csize, usize, nlen, elen = fields
        if sig != _LOCAL_SIG:
            return out, "end of local entries"
        name_start = pos + _LOCAL.size
        name = data[name_start : name_start + nlen].decode("utf-8", "replace")
        body = name_start + nlen + elen
        if flags & 0x08:
            return out, f"entry {name!r} uses a data descriptor"
        if body + csize > n:
            return out, f"entry {name!r} is cut short"
        raw = data[body : body + csize]
        try:
            if method == 0:
                content = raw
            elif method == 8:
                content = zlib.decompress(raw, -15)
            elif method == ZIP_ZSTANDARD:
                content = zstd.decompress(raw)
            else:
                return out, f"entry {name!r} uses compression method {method}"
        except (zlib.error, zstd.ZstdError):
            return out, f"entry {name!r} is damaged"
        if zlib.crc32(content) != crc or len(content) != usize:
            return out, f"entry {name!r} fails its CRC check"
        out[name] = content
        pos = body + csize
    return out, "data ends"
