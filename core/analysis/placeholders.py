"""What a viewer shows in place of recorded values it cannot usefully show as they are.

**Binary data written as text.** A data URL (RFC 2397: ``data:image/png;base64,iVBOR…``)
or a long base64 string (RFC 4648 §4 standard or §5 URL-safe alphabet, padded or not, on
one line, or wrapped in lines of equal length as MIME and ``base64(1)`` write it) is
megabytes of text nobody reads. A viewer shows a :class:`Blob`'s :meth:`~Blob.label`
instead, e.g. ``<image/png, 3.0 MB>``: the MIME type when it is known (the data URL's
own, a sibling field's such as ``media_type`` or ``mimeType`` — :func:`mime_hint` — or
sniffed from the first decoded bytes, :func:`sniff_mime`), and the decoded size in bytes
(:func:`format_size`, decimal units).

* :func:`blob_of` judges a whole string (a JSON value);
* :func:`find_blobs` finds blobs inside a text (a tool's output, the JSON of a content
  part), only in a window of it when asked, so a 50 MB text costs what its window costs.

What counts as base64, so that ordinary text is never taken for it: at least
:data:`MIN_BASE64` characters of one alphabet with nothing else between them (a space, a
dot, a colon, a quote end the run), a valid length (not 1 modulo 4; with ``=`` padding a
multiple of 4), and the look of random data in its first 4,096 characters: at least
:data:`MIN_DISTINCT` distinct characters, with upper-case and lower-case letters and
digits each a fair share (hex digests, repeated characters, words and identifiers fail
it). A data URL says what it is, so its payload needs only the base64 alphabet and
:data:`MIN_DATA_URL` characters; a data URL that is not base64 is a blob only as a whole
string of at least :data:`MIN_BASE64` characters.

**Invalid Unicode.** Importers keep a string holding lone surrogates or bytes that are not
UTF-8 as the tag ``{"$invalid_unicode": TEXT, "surrogates": …, "bytes": …}``
(:mod:`core.record.jsonvalues`), where ``TEXT`` has U+FFFD in each bad place; some keep
the tag's JSON text as a message string. :func:`invalid_unicode_of` recognizes both and
gives ``TEXT`` and the index of its first replaced character, where a viewer puts its
marker; :func:`shown_value` gives a JSON value with every such tag replaced by ``TEXT``.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..record.jsonvalues import INVALID_UNICODE_TAG, is_tagged
from .safe_text import HIDDEN_MARK

__all__ = [
    "MIN_BASE64",
    "MIN_DATA_URL",
    "MIN_DISTINCT",
    "Blob",
    "blob_of",
    "find_blobs",
    "format_size",
    "has_base64_run",
    "invalid_unicode_of",
    "mime_hint",
    "shown_value",
    "sniff_mime",
]

#: base64 characters a bare string needs (about 384 bytes of data) to be a blob
MIN_BASE64 = 512
#: base64 characters a data URL's payload needs to be a blob
MIN_DATA_URL = 64
#: distinct characters the first 4,096 of a bare base64 run must have
MIN_DISTINCT = 40
#: characters sampled for the randomness test and for sniffing
_SAMPLE = 4096

_STD = "A-Za-z0-9+/"
_URL = "A-Za-z0-9_-"
_ANY = "A-Za-z0-9+/_="  # with "-" last in each class below
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]+"  # RFC 6838 restricted-name characters
_MIME = re.compile(rf"{_TOKEN}/{_TOKEN}")

#: a base64 data URL; group "mime" (optional), "data" (the payload)
_DATA_URL = re.compile(
    rf"(?<![A-Za-z0-9+.-])(?i:data):(?P<mime>{_TOKEN}/{_TOKEN})?"
    rf"(?:;{_TOKEN}=(?:{_TOKEN}|\"[^\"\\\r\n]*\"))*;(?i:base64),"
    rf"(?P<data>[{_STD}]*={{0,2}}|[{_URL}]*={{0,2}})(?![{_ANY}-])"
)
#: a data URL that is not base64 (whole strings only)
_DATA_URL_TEXT = re.compile(
    rf"(?i:data):(?P<mime>{_TOKEN}/{_TOKEN})?(?:;{_TOKEN}=(?:{_TOKEN}|\"[^\"\\\r\n]*\"))*,(?P<data>.*)", re.S
)
#: a run of one base64 alphabet on one line; only run starts are tried (the lookbehind),
#: so a search is linear in the text's length
_RUN = re.compile(rf"(?<![{_ANY}-])(?:[{_STD}]{{{MIN_BASE64},}}|[{_URL}]{{{MIN_BASE64},}})={{0,2}}(?![{_ANY}-])")
#: base64 wrapped in lines (the lengths are checked after the match)
_WRAPPED = re.compile(rf"(?m)^(?:[{_STD}]{{16,1024}}\r?\n)+(?:[{_STD}]+={{0,2}}|={{1,2}})?$")
_TAG_TEXT = re.compile(r"\{\s*\"\$invalid_unicode\"\s*:")
_URLSAFE = str.maketrans("-_", "+/")
_NOT_BASE64 = re.compile(rf"[^{_ANY}\r\n-]")
#: characters past a window's end a blob beginning in it may need to be recognized
_WINDOW_SLACK = 2 * MIN_BASE64

#: (offset, magic bytes, MIME type), checked in order on the first decoded bytes
_MAGIC: list[tuple[int, bytes, str]] = [
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"PK\x03\x04", "application/zip"),
    (0, b"\x1f\x8b\x08", "application/gzip"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\x1aE\xdf\xa3", "video/webm"),
    (0, b"\x00\x00\x01\x00", "image/x-icon"),
]
#: RIFF containers: the form type at offset 8
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}
#: ISO base media files: the major brand at offset 8 (after "ftyp" at offset 4)
_FTYP = {b"avif": "image/avif", b"avis": "image/avif", b"heic": "image/heic", b"heix": "image/heic"}


@dataclass(frozen=True)
class Blob:
    """Binary data written as text, found at ``text[start:end]``: ``size`` decoded bytes,
    ``mime`` (``None``: unknown) and ``form`` (``"data URL"`` or ``"base64"``)."""

    start: int
    end: int
    size: int
    mime: str | None
    form: str

    @property
    def chars(self) -> int:
        """Characters of the text it stands for."""
        return self.end - self.start

    def label(self) -> str:
        """The placeholder: ``<image/png, 3.0 MB>``, ``<base64, 12.3 kB>`` when the type
        is unknown."""
        return f"<{self.mime or self.form}, {format_size(self.size)}>"


def format_size(n: int) -> str:
    """A byte count in decimal units: ``512 B``, ``12.3 kB``, ``3.0 MB``, ``1.2 GB``."""
    if n < 1000:
        return f"{n} B"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n < scale * 1000 or unit == "GB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def sniff_mime(head: bytes) -> str | None:
    """The MIME type the first bytes of a file announce (PNG, JPEG, GIF, WebP, PDF, ZIP,
    gzip, TIFF, AVIF, HEIC, common audio and video), or ``None``."""
    for offset, magic, mime in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return mime
    if head[:4] == b"RIFF" and head[8:12] in _RIFF:
        return _RIFF[head[8:12]]
    if head[4:8] == b"ftyp":
        return _FTYP.get(head[8:12], "video/mp4")
    return None


def mime_hint(obj: Mapping[str, Any]) -> str | None:
    """The MIME type an object says its data has: its ``media_type``, ``mime_type``,
    ``mimeType``, ``content_type`` or ``contentType`` field, when that is a well-formed
    ``type/subtype``; else ``None``."""
    for key in ("media_type", "mime_type", "mimeType", "content_type", "contentType"):
        value = obj.get(key)
        if isinstance(value, str) and _MIME.fullmatch(value):
            return value.lower()
    return None


def _decoded_head(payload: str) -> bytes:
    sample = "".join(payload[:64].split()).translate(_URLSAFE).rstrip("=")
    sample = sample[: len(sample) // 4 * 4]
    try:
        return binascii.a2b_base64(sample)
    except binascii.Error:  # pragma: no cover - the alphabet was checked
        return b""


def _size(chars: int) -> int:
    """Decoded bytes of ``chars`` base64 characters (padding and line breaks excluded)."""
    return chars * 3 // 4


def _valid_length(chars: int, padding: int) -> bool:
    if padding:
        return (chars + padding) % 4 == 0
    return chars % 4 != 1


def _looks_random(sample: str) -> bool:
    """The first characters of a run look like encoded data, not like words or hex."""
    sample = "".join(sample[:_SAMPLE].split())
    if len(set(sample)) < MIN_DISTINCT:
        return False
    n = len(sample)
    upper = sum(1 for c in sample if "A" <= c <= "Z")
    lower = sum(1 for c in sample if "a" <= c <= "z")
    digits = sum(1 for c in sample if c.isdigit())
    # random data: 40.6 % each of upper and lower case, 15.6 % digits
    return upper >= n * 0.2 and lower >= n * 0.2 and digits >= n * 0.04


def _bare(text: str, start: int, end: int, hint: str | None) -> Blob | None:
    """``text[start:end]``, a run of one alphabet with its padding, as a blob."""
    run = text[start:end]
    body = run.rstrip("=")
    if not _valid_length(len(body), len(run) - len(body)) or not _looks_random(body):
        return None
    mime = hint or sniff_mime(_decoded_head(body))
    return Blob(start, end, _size(len(body)), mime, "base64")


def _wrapped(text: str, start: int, end: int, hint: str | None) -> Blob | None:
    """Lines of one length ``L`` (a multiple of 4) and a last line of at most ``L`` in
    ``text[start:end]``, as a blob that ends after that last line; ``None`` when they are
    not that, are fewer than two, or hold fewer than :data:`MIN_BASE64` characters."""
    lines = text[start:end].split("\n")
    width = len(lines[0].rstrip("\r"))
    if width % 4 or len(lines) < 2:
        return None
    kept: list[str] = []
    stop = start
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if len(line) == width and "=" not in line:
            kept.append(line)
        elif len(line) <= width and line:
            kept.append(line)
            stop += len(raw)
            break
        else:
            stop -= 1  # the newline before this line is not part of the blob
            break
        stop += len(raw) + (1 if i < len(lines) - 1 else 0)
    else:
        stop = end
    joined = "".join(kept)
    body = joined.rstrip("=")
    if len(kept) < 2 or len(joined) < MIN_BASE64 or "=" in body:
        return None
    if not _valid_length(len(body), len(joined) - len(body)) or not _looks_random(body):
        return None
    mime = hint or sniff_mime(_decoded_head(body))
    return Blob(start, stop, _size(len(body)), mime, "base64")


def _data_url(m: re.Match[str], hint: str | None) -> Blob | None:
    data = m.group("data")
    body = data.rstrip("=")
    if len(body) < MIN_DATA_URL or not _valid_length(len(body), len(data) - len(body)):
        return None
    mime = m.group("mime")
    if mime:
        mime = mime.lower()
    else:
        mime = hint or sniff_mime(_decoded_head(body)) or "text/plain"  # RFC 2397's default
    return Blob(m.start(), m.end(), _size(len(body)), mime, "data URL")


def blob_of(text: str, mime: str | None = None) -> Blob | None:
    """``text`` as a whole is binary data written as text (rules: module docstring): its
    :class:`Blob` (``start`` 0, ``end`` the text's length, trailing line breaks included);
    else ``None``. ``mime`` is the type the value's context states (:func:`mime_hint`),
    used when the text itself does not say.

    Costs one look at the first 1,024 characters for ordinary text, one pass for base64.
    """
    n = len(text)
    if n < MIN_DATA_URL:
        return None
    head = text[:5].lower()
    if head == "data:":
        m = _DATA_URL.match(text)
        if m is not None and m.end() == len(text.rstrip()):
            found = _data_url(m, mime)
            return None if found is None else Blob(0, n, found.size, found.mime, found.form)
        t = _DATA_URL_TEXT.match(text)
        if t is not None and n >= MIN_BASE64 and ";base64," not in text[: t.start("data")].lower():
            data = t.group("data")
            size = len(data.encode("utf-8", "surrogatepass")) - 2 * data.count("%")
            kind = t.group("mime")
            return Blob(0, n, size, kind.lower() if kind else "text/plain", "data URL")
        return None
    if n < MIN_BASE64 or _NOT_BASE64.search(text, 0, 1024):
        return None
    stripped = text.rstrip("\r\n")
    m = _RUN.fullmatch(stripped)
    if m is not None:
        blob = _bare(stripped, 0, len(stripped), mime)
    else:
        w = _WRAPPED.fullmatch(stripped)
        blob = _wrapped(stripped, 0, len(stripped), mime) if w is not None else None
        if blob is not None and blob.end != len(stripped):
            blob = None
    if blob is None:
        return None
    return Blob(0, n, blob.size, blob.mime, blob.form)


def has_base64_run(text: str) -> bool:
    """Whether ``text`` holds one unbroken run of at least ``MIN_BASE64`` base64
    characters whose start looks like encoded data (not hex, not words): the cheap
    test before :func:`find_blobs` for a short text looked at often, such as the start
    of a timeline summary (one regex pass, no decoding)."""
    return any(_looks_random(text[m.start() : m.start() + _SAMPLE]) for m in _RUN.finditer(text))


def find_blobs(text: str, start: int = 0, end: int | None = None) -> list[Blob]:
    """The blobs of ``text`` that begin in ``text[start:end]`` (the whole text by default),
    in order and never overlapping (a data URL's payload is part of the data URL); each
    is found in full even when it ends beyond ``end``. A run that began before ``start``
    is not reported. Linear in the window's length plus the blobs' lengths."""
    n = len(text)
    stop = n if end is None else min(end, n)
    if start >= stop:
        return []
    # a blob that begins in the window needs some text past its end to be recognized
    ext = min(n, stop + _WINDOW_SLACK)
    found: list[Blob] = []
    for pattern in (_DATA_URL, _RUN, _WRAPPED):
        for m in pattern.finditer(text, start, ext):
            if m.start() >= stop:
                break
            full = pattern.match(text, m.start()) if m.end() >= ext - 2 and ext < n else m
            if full is None:
                continue
            if pattern is _DATA_URL:
                blob = _data_url(full, None)
            elif pattern is _RUN:
                blob = _bare(text, full.start(), full.end(), None)
            else:
                blob = _wrapped(text, full.start(), full.end(), None)
            if blob is not None:
                found.append(blob)
    found.sort(key=lambda b: (b.start, -b.end))
    out: list[Blob] = []
    for b in found:
        if not out or b.start >= out[-1].end:
            out.append(b)
    return out


def invalid_unicode_of(value: Any) -> tuple[str, int] | None:
    """``(TEXT, first)`` when ``value`` is an ``$invalid_unicode`` tag, or a string that
    is exactly such a tag's JSON text (as some importers store message content): the
    text with U+FFFD in each bad place and the index of the first one; else ``None``."""
    if isinstance(value, str):
        if not _TAG_TEXT.match(value, 0, 40):
            return None
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if not is_tagged(value) or INVALID_UNICODE_TAG not in value:
        return None
    places = [i for key in ("surrogates", "bytes") for i, _ in value.get(key, ())]
    return value[INVALID_UNICODE_TAG], min(places)


def shown_value(value: Any, *, marked: bool = False) -> Any:
    """``value`` with every ``$invalid_unicode`` tag in it (and every string holding one's
    JSON text) replaced by its text, U+FFFD in each bad place; other values as they are
    (containers rebuilt only where something changed). ``marked``: the marker
    (:data:`core.analysis.safe_text.HIDDEN_MARK`) just before each text's first U+FFFD,
    as every place that shows recorded text marks what it could not show as recorded."""
    found = invalid_unicode_of(value)
    if found is not None:
        text, at = found
        return text[:at] + HIDDEN_MARK + text[at:] if marked and 0 <= at <= len(text) else text
    if isinstance(value, dict) and not is_tagged(value):
        out = {k: shown_value(v, marked=marked) for k, v in value.items()}
        return out if any(out[k] is not v for k, v in value.items()) else value
    if isinstance(value, list):
        items = [shown_value(v, marked=marked) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value
