"""Skeleton decode of a format-version 1 or 2 recording: the timeline columns without the payloads.

A version-1/2 file has no record index (docs/format.md), so its first paint needs one
pass over the document. Parsing it whole (``orjson.loads``) builds every chat message of
every model request — most of a file with a growing chat history — only to show a
timeline row per record. :func:`skeleton` instead decodes with msgspec
(https://jcristharif.com/msgspec/):

1. for the first paint, one C-level pass over the bytes: the header members kept as
   unparsed slices (:class:`msgspec.Raw`, parsed with orjson afterwards), every record
   decoded into a struct declaring only the fields the timeline reads (``seq``,
   ``kind``, ``at``, names, status inputs, tokens, durations, tool-call ids); requests,
   arguments, details and compositions are skipped unparsed; a tool result's or a
   response's ``content`` is kept as bytes and parsed to look for a redaction marker
   when it is a string, or when its bytes hold ``[REDACTED`` or a ``\\u00`` escape (one
   that could spell it);
2. on the first access to :class:`RawRecords`, one more pass that finds the byte slice
   of each record (a ``msgspec.Raw`` referencing the input buffer); a record is parsed
   (``orjson.loads`` of its slice) only when it is indexed.

A document the first-paint struct does not fit (another top-level member, a record or
a member of another shape) takes the general path: every top-level member kept, the
records sliced first and then decoded one by one.

Per record, the columns are written directly from the struct (no row tuple), a string
content is searched as bytes before it is parsed (:func:`_raw_marker`), and Python's
cyclic garbage collector is paused for the decode (:func:`_cyclic_gc_paused`: the decode
builds no cycles, and on a million small records the collector's full passes cost a
third of the time).

The columns are those of the version-3 record index (:data:`core.record.indexed.INDEX_COLUMNS`)
with the meaning :func:`core.record.indexed.index_row` gives them on a validated record;
for every file that loads, ``columns`` is ``[index_row(r) for r in records]`` transposed.

Checked here, as :meth:`core.analysis.timeline.TimelineIndex.from_raw` checks them: each
record is an object with a known ``kind`` and an integer ``seq`` that strictly increases.
Nothing else is: field types, keys, the digest and UTF-8 inside skipped strings (msgspec
does not decode what it skips) are the later verification's (``core.record.io``). A field
of the wrong shape never raises here: that record's row is computed from its parsed JSON
by :func:`row_of_object`, loosely.

Memory: the input buffer (referenced by the slices), one ``msgspec.Raw`` per record and
the columns; no tree of the document. Pass an ``mmap`` of the file rather than its
bytes: the decode reads the page cache in place, with no copy into the heap
(``bench/skeleton_bench.py``: faster than ``read()`` alone). Map it copy-on-write
(``mmap.ACCESS_COPY``), as the app does: a document of more than two
:data:`CHUNK_BYTES` whose ``records`` come last is then decoded a chunk of records at a
time (:func:`_chunked`), each chunk's pages given back once its columns are made, so
the first paint holds a chunk of the file rather than all of it (1 GB file: 23 MB at
first paint, was 1.01 GB). The file is never written. With ``first_records`` the
decode stops once it has that many records and returns the chunks left as
:attr:`Skeleton.rest` (:class:`SkeletonRest`), which a caller iterates after its first
paint (on a worker thread: the records already decoded stay readable meanwhile).
"""

from __future__ import annotations

import gc
import mmap
import re
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, cast, overload

import msgspec
import orjson

from ..errors import FormatError
from .indexed import INDEX_COLUMNS, epoch_seconds, interrupt_status
from .io import parse_json
from .reader import check_mapped_size, release_pages
from .recording import FORMAT_NAME, RECORD_KINDS
from .redaction import has_marker, holds_marker

#: the format versions :func:`skeleton` reads (version 3 has its own index: core.record.indexed)
SKELETON_VERSIONS: Final = (1, 2)

_NULL: Final = msgspec.Raw(b"null")
_KINDS: Final = frozenset(RECORD_KINDS)
_MARKER_OPEN = b"[REDACTED"
_MARKER_TEXT = "[REDACTED"
_ESCAPE = b"\\u00"  # an escaped ASCII character could spell a marker


# --------------------------------------------------------------------------- structs
# ``Any`` or ``Raw`` where the columns take any value; a type where a column holds only
# that type (names, ids, token counts, durations: the version-3 index's column types).
# A value of another type raises ValidationError and that record falls back to
# row_of_object, which reads it loosely. gc=False: decoded JSON holds no cycles.


class _Call(msgspec.Struct, gc=False):
    id: str | None = None


class _Message(msgspec.Struct, gc=False):
    content: msgspec.Raw = _NULL
    tool_calls: list[_Call] | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int | None = 0
    output_tokens: int | None = 0


class _Response(msgspec.Struct, gc=False):
    message: _Message | None = None
    usage: _Usage | None = None


class _Result(msgspec.Struct, gc=False):
    content: msgspec.Raw = _NULL
    error: msgspec.Raw = _NULL
    redacted: Any = False


class _Record(msgspec.Struct, gc=False):
    seq: Any = None
    kind: Any = None
    at: Any = None
    run_id: str | None = None
    generation_id: str | None = None
    replayed: Any = False
    live_fallback: Any = False
    meta: msgspec.Raw = _NULL
    # tool
    tool: str | None = None
    tool_call_id: str | None = None
    result: _Result | None = None
    duration_seconds: float | None = None
    # model
    model: str | None = None
    response: _Response | None = None
    error: msgspec.Raw = _NULL
    # interrupt, lifecycle
    value: msgspec.Raw = _NULL
    event: str | None = None


class _Paint(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A version-1/2 document read for the first paint: the header members unparsed, the
    records as :class:`_Record`. Any other member, or a record of another shape, fails
    the decode (ValidationError) and sends the document to the general path."""

    format: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    format_version: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    metadata: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    session: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    links: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    digest: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    records: list[_Record] = []


class _Slices(msgspec.Struct, gc=False):
    """The document's records as one slice each (the other members skipped)."""

    records: list[msgspec.Raw] = []


_HEADER_MEMBERS = ("format", "format_version", "metadata", "session", "links", "digest")
_PAINT = msgspec.json.Decoder(_Paint)
_SLICES_OF_DOCUMENT = msgspec.json.Decoder(_Slices)
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_SLICES = msgspec.json.Decoder(list[msgspec.Raw])
_RECORD = msgspec.json.Decoder(_Record)
_VALUE = msgspec.json.Decoder(msgspec.Raw)
_ANY = msgspec.json.Decoder()


def _parse(data: msgspec.Raw | memoryview) -> Any:
    """JSON value of ``data`` by orjson, or by msgspec when orjson cannot (an integer
    beyond 64 bits: verification decides about it).

    Raises:
        msgspec.DecodeError: not JSON (e.g. not UTF-8 inside a string msgspec skipped),
            or nested too deeply for the decoder.
    """
    view = data if isinstance(data, memoryview) else memoryview(data)
    try:
        return orjson.loads(view)
    except orjson.JSONDecodeError:
        try:
            return _ANY.decode(view)
        except RecursionError:  # nested deeper than the interpreter recurses
            raise msgspec.DecodeError("nested too deeply to read (the whole-file check says how deep)") from None


# --------------------------------------------------------------------------- result


class RawRecords(Sequence[dict[str, Any]]):
    """The records of a skeleton decode, parsed on access: ``raw[i]`` is
    ``orjson.loads`` of record ``i``'s bytes, parsed anew at each access (not cached: the
    caller keeps what it validated). ``slice_of(i)`` is the record's bytes, unparsed.

    The byte slices are found on the first access (one more msgspec pass over the
    document, which nothing parses), so the first paint does not wait for them.

    Raises (on access): FormatError naming the record when its bytes are not JSON (not
    UTF-8 inside a string the skeleton skipped). An integer beyond 64 bits, which orjson
    does not read, is parsed by msgspec."""

    def __init__(
        self,
        slices: list[msgspec.Raw] | Callable[[], list[msgspec.Raw]],
        n: int,
        source: str,
        mapped: mmap.mmap | None = None,
    ) -> None:
        self._slices: list[msgspec.Raw] | None = slices if isinstance(slices, list) else None
        self._find = slices
        self._n = n
        self._lock = threading.Lock()
        self.source = source
        #: the memory map the slices are read from (its file's size is checked first)
        self._mapped = mapped

    def __len__(self) -> int:
        return self._n

    def _all(self) -> list[msgspec.Raw]:
        slices = self._slices
        if slices is None:
            with self._lock:
                slices = self._slices
                if slices is None:
                    assert callable(self._find)
                    slices = self._find()
                    if len(slices) != self._n:  # not for bytes that stayed as they were
                        raise self._changed(len(slices), self._n)
                    self._slices = slices
        return slices

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        n = self._n
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError(f"record {i} out of range ({n} records)")
        check_mapped_size(self._mapped, self.source)
        try:
            value: dict[str, Any] = _parse(self._slice(k))
        except msgspec.DecodeError as exc:
            raise _inside(exc, self.source, k) from None
        return value

    def _slice(self, k: int) -> msgspec.Raw:
        return self._all()[k]

    def _changed(self, found: int, read: int) -> FormatError:
        return FormatError(
            f"the document changed: {found:,} records, {read:,} read before", file=self.source, path="/records"
        )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for k in range(self._n):
            yield self[k]

    def slice_of(self, i: int) -> memoryview:
        """The bytes of record ``i`` as written in the file (a view of the input)."""
        check_mapped_size(self._mapped, self.source)
        return memoryview(self._slice(i))


class ChunkedRawRecords(RawRecords):
    """:class:`RawRecords` of a document decoded a chunk at a time (:func:`_chunked`):
    the slices of a record's chunk are found when one of its records is first read (and
    kept), so reading one record of a big file reads a few megabytes of it, not all of
    it. ``bounds``: each chunk's first and end byte; ``firsts``: each chunk's first
    record."""

    def __init__(self, data: mmap.mmap, bounds: list[tuple[int, int]], firsts: list[int], n: int, source: str) -> None:
        super().__init__([], n, source, data)
        self._data = data
        self._bounds = bounds
        self._firsts = firsts
        self._chunks: dict[int, list[msgspec.Raw]] = {}
        #: records from ``_tail_from`` on come from a decode of the whole document
        self._tail: RawRecords | None = None
        self._tail_from = n

    def _slice(self, k: int) -> msgspec.Raw:
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError(f"record {k} out of range ({self._n} records)")
        if self._tail is not None and k >= self._tail_from:
            with self._lock:  # no chunk's brackets in the document while it is decoded
                return self._tail._slice(k)
        c = bisect_right(self._firsts, k) - 1
        slices = self._chunks.get(c)
        if slices is None:
            with self._lock:  # one chunk's brackets written at a time
                slices = self._chunks.get(c)
                if slices is None:
                    first = self._firsts[c]
                    count = (self._firsts[c + 1] if c + 1 < len(self._firsts) else self._tail_from) - first
                    start, end = self._bounds[c]
                    try:
                        with _bracketed(self._data, start, end) as view:
                            slices = _SLICES.decode(view)
                    except msgspec.DecodeError:
                        raise FormatError(
                            f"the document changed: records {first:,} to {first + count - 1:,} (bytes "
                            f"{start:,} to {end:,}) are no longer an array of records",
                            file=self.source,
                            path=f"/records/{first}",
                        ) from None
                    if len(slices) != count:
                        raise self._changed(first + len(slices), first + count)
                    self._chunks[c] = slices
        return slices[k - self._firsts[c]]

    def _all(self) -> list[msgspec.Raw]:
        return [self._slice(k) for k in range(self._n)]

    def _add_chunk(self, start: int, end: int, count: int) -> None:
        """The next chunk (bytes ``start`` to ``end``) holds the next ``count`` records;
        call with ``_lock`` held."""
        self._bounds.append((start, end))
        self._firsts.append(self._n)
        self._n += count
        self._tail_from = self._n

    def _continue_with(self, whole: RawRecords) -> None:
        """Records from the ones held on are ``whole``'s (a decode of the whole
        document); call with ``_lock`` held."""
        self._tail, self._tail_from = whole, self._n
        self._n = len(whole)


@dataclass
class Skeleton:
    """What the first paint of a version-1/2 file needs.

    ``header``: every top-level member except ``records``, as parsed JSON (``orjson``);
    ``columns``: each of :data:`core.record.indexed.INDEX_COLUMNS` → one entry per record;
    ``raw``: record ``i`` parsed on access (:class:`RawRecords`), ``len(raw)`` records
    (more as ``rest`` is iterated).
    """

    header: dict[str, Any]
    columns: dict[str, list[Any]]
    raw: RawRecords
    #: the records not decoded yet (a progressive decode: :func:`skeleton`'s
    #: ``first_records``), decoded by iterating it; ``None`` when ``columns`` holds them all
    rest: SkeletonRest | None = None


# --------------------------------------------------------------------------- decode


def skeleton(
    data: bytes | bytearray | memoryview | mmap.mmap,
    *,
    source: str,
    copy_on_write: bool = False,
    first_records: int | None = None,
) -> Skeleton | None:
    """The skeleton of the recording in ``data`` (the file's bytes), or ``None`` when
    the document is not a version-1/2 recording — not an object, ``format`` not
    ``"chassis.replay"``, ``format_version`` not 1 or 2 (the 0.8.1 layout, version 3,
    a newer one) — or is JSON only orjson reads: the caller then loads it by the
    whole-document path, which reports what is wrong with it.

    ``copy_on_write``: ``data`` is an mmap made with ``mmap.ACCESS_COPY`` (a private
    copy, never written to the file), so a big document may be decoded a chunk at a
    time (:func:`_chunked`), which writes two bytes of that copy per chunk and puts
    them back. Never pass it for a map that writes through to the file.

    ``first_records`` (with ``copy_on_write``): a progressive decode. Once that many
    records are decoded, the chunks left are returned as :attr:`Skeleton.rest`, for the
    caller to decode after its first paint (each one's columns appended to its own);
    a document decoded whole has no ``rest``. A problem in the records left is raised
    when ``rest`` reaches it.

    The slices in ``raw`` reference ``data``: keep it alive (and an mmap open) while
    they are used.

    Raises:
        FormatError: bytes that are not JSON (line and column, as
            :func:`core.record.io.parse_json` reports them); ``records`` not an array
            (``/records``); a record that is not an object, has an unknown ``kind`` or a
            ``seq`` that is not an integer or does not increase (file, record and JSON
            Pointer, as :meth:`core.analysis.timeline.TimelineIndex.from_raw`); a value
            the timeline reads (a content, ``meta``, an interrupt's value) that is not
            JSON, e.g. not UTF-8 (file, record, ``/records/<i>``).
    """
    with _cyclic_gc_paused():
        try:
            if copy_on_write and isinstance(data, mmap.mmap) and len(data) > 2 * CHUNK_BYTES:
                chunked = _chunked(data, source, first_records)
                if chunked is not None:
                    return chunked
            return _skeleton(data, source)
        except RecursionError:
            # nested deeper than msgspec recurses (thousands of levels): the whole-document
            # path reports the nesting limit (core.record.nesting)
            return None


_GC_LOCK = threading.Lock()
_gc_pauses = 0  # skeleton() calls running; the collector is re-enabled when the last ends
_gc_was_enabled = False


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (``gc.disable``) while a skeleton decode
    runs, and re-enable it after (when it was enabled before the first of concurrent
    decodes). The decode allocates one struct per record and, per model call, a list of
    tool-call ids; each allocation burst triggers collections whose full ones traverse
    everything allocated so far (1,000,000 small records: 8 full collections, ~1.4 s of
    4.3 s, ``docs/performance.md``). Nothing it builds holds a cycle, so nothing is left
    for the collector: reference counting frees it all as usual."""
    global _gc_pauses, _gc_was_enabled
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _skeleton(data: bytes | bytearray | memoryview | mmap.mmap, source: str) -> Skeleton | None:
    """:func:`skeleton`, the collector paused by the caller."""
    try:
        paint = _PAINT.decode(data)
    except msgspec.ValidationError:  # another member, something of another shape: the general path
        return _general(data, source)
    except msgspec.DecodeError:
        return _unreadable(data, source)
    members = {name: value for name in _HEADER_MEMBERS if (value := getattr(paint, name)) is not msgspec.UNSET}
    try:
        if _version(members) is None:
            return None
        header = {name: orjson.loads(memoryview(raw)) for name, raw in members.items()}
    except orjson.JSONDecodeError:
        return _unreadable(data, source)
    records: list[_Record | None] = paint.records  # type: ignore[assignment]
    del paint
    n = len(records)
    columns = _columns(records, [], source)
    mapped = data if isinstance(data, mmap.mmap) else None
    return Skeleton(header, columns, RawRecords(partial(_slices_of, data), n, source, mapped))


#: the biggest document whose full load a progressive decode runs to name the problem it
#: met further on (:meth:`SkeletonRest._raise_full_load_error`): a bigger one is several
#: times its size in memory, so the error then points to ``validate``, which reports it
FULL_LOAD_ERROR_BYTES = 256 << 20

#: bytes of the records array decoded at a time from a memory map (:func:`_chunked`)
CHUNK_BYTES = 4 << 20
#: later separators tried when a chunk's end turned out to lie inside a record
_SPLIT_TRIES: Final = 4
_RECORDS_MEMBER = re.compile(rb'"records"[ \t\r\n]*:[ \t\r\n]*\[')
_FIRST_MEMBER = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"[A-Za-z_][A-Za-z0-9_]*"[ \t\r\n]*:')
_WHITESPACE: Final = b" \t\r\n"
_CHUNK_OF_RECORDS = msgspec.json.Decoder(list[_Record])


def _chunked(data: mmap.mmap, source: str, first_records: int | None = None) -> Skeleton | None:
    """:func:`skeleton` of a document mapped copy-on-write (``mmap.ACCESS_COPY``) whose
    ``records`` array is its last member, decoded :data:`CHUNK_BYTES` at a time; each
    chunk's pages are given back (``MADV_DONTNEED``) once its columns are made, so the
    first paint's resident memory is a chunk and the columns, not the file.

    A chunk ends at a separator: a comma followed (after any whitespace) by the bytes
    that open the first record (``{"seq":`` in a compact file) — bytes that only occur
    outside strings, since an unescaped quote cannot be inside one. The separator may still lie inside a record (a
    nested object with the same first member). So the chunk is decoded as an array: its
    first and last bytes (the comma or bracket before it, the comma after it) are
    overwritten in the private copy with ``[`` and ``]`` and restored after. A chunk that
    starts between two records and decodes as an array of values ends between two
    records too, so every chunk after the first is known to start between two records.
    A chunk that does not decode is retried up to the next :data:`_SPLIT_TRIES`
    separators.

    ``first_records``: stop once that many records are decoded and leave the rest to
    :attr:`Skeleton.rest` (:class:`SkeletonRest`); ``None``: decode every chunk here.

    Returns ``None`` when the document is not of that shape, a chunk did not decode, or
    a record fails a check (an unknown kind, a seq that does not increase...): the
    caller then decodes it whole, which says what is wrong with it — the first problem
    of the whole document, e.g. malformed JSON further on, or a second ``records``
    member that replaces the first (as every JSON reader here takes the last).
    ``data`` must be a copy-on-write map (:func:`skeleton`'s ``copy_on_write``).
    """
    found = _records_member(data)
    if found is None:
        return None
    members, r0 = found
    try:
        if _version(members) is None:
            return None
        header = {name: orjson.loads(memoryview(raw)) for name, raw in members.items()}
    except orjson.JSONDecodeError:
        return None
    r1 = len(data) - 1  # the records' closing bracket: the document ends "]}"
    while r1 > r0 and data[r1] in _WHITESPACE:
        r1 -= 1
    if r1 <= r0 or data[r1] != 0x7D:  # "}"
        return None
    r1 -= 1
    while r1 > r0 and data[r1] in _WHITESPACE:
        r1 -= 1
    opening = _FIRST_MEMBER.match(data, r0, r1)
    if data[r1] != 0x5D or opening is None:  # "]"; an empty array, or one not of objects
        return None
    decoder = _ChunkDecoder(data, source, r0, r1, opening.group().lstrip(_WHITESPACE))
    cols: list[list[Any]] = [[] for _ in INDEX_COLUMNS]
    while not decoder.done and (first_records is None or len(cols[0]) < first_records):
        try:
            lists = decoder.step()
        except _ChunkFailed:
            return None  # the whole document's first problem is the one to report
        for col, part in zip(cols, lists):
            col += part
    rest = None if decoder.done else SkeletonRest(decoder)
    return Skeleton(header, dict(zip(INDEX_COLUMNS, cols)), decoder.raw, rest)


class _ChunkFailed(Exception):
    """A chunk of records did not decode as an array of records, or one of them failed
    a check (:func:`_chunked` then leaves the document to the whole decode)."""


class _ChunkDecoder:
    """The state of a chunked decode (:func:`_chunked`) between two chunks: the bytes
    of the records array (``r0``: after its ``[``; ``r1``: its ``]``), where the next
    chunk starts, the records decoded so far (``raw``, which grows with each chunk) and
    the last seq (checked to increase across chunks)."""

    def __init__(self, data: mmap.mmap, source: str, r0: int, r1: int, needle: bytes) -> None:
        self.data = data
        self.source = source
        self.r1 = r1
        self.needle = needle
        self.start = r0
        self.prev = -1
        self.released = 0
        self.done = False
        self.raw = ChunkedRawRecords(data, [], [], 0, source)

    @property
    def fraction(self) -> float:
        """The share of the document's bytes decoded so far, 0.0 to 1.0."""
        return 1.0 if self.done else self.start / max(1, len(self.data))

    def step(self) -> list[list[Any]]:
        """Decode the next chunk: its columns (lists in the order of
        :data:`INDEX_COLUMNS`), its records added to :attr:`raw`. The brackets are
        written and the pages given back under ``raw``'s lock, so a record read on
        another thread meanwhile (``raw[i]``) never sees a chunk half restored.

        Raises:
            _ChunkFailed: the chunk does not decode, or a record in it fails a check.
        """
        data, r1, needle, start = self.data, self.r1, self.needle, self.start
        raw = self.raw
        check_mapped_size(data, self.source)  # a file cut short since: an error, not SIGBUS
        with raw._lock:
            end = r1 if r1 - start <= CHUNK_BYTES else _separator(data, needle, start + CHUNK_BYTES, r1)
            end = r1 if end < 0 else end
            for _ in range(_SPLIT_TRIES + 1):
                got = _decode_chunk(data, start, end)
                if got is not None or end == r1:
                    break
                end = _separator(data, needle, end + 1, r1)
                end = r1 if end < 0 else end
            if got is None:
                raise _ChunkFailed
            base = len(raw)
            try:
                lists, self.prev = _column_lists(got[0], got[1], self.source, base, self.prev)
            except FormatError:
                raise _ChunkFailed from None
            del got
            raw._add_chunk(start, end, len(lists[0]))
            if end == r1:
                self.done = True
                self.start = r1
            else:
                self.start = end + 1
                self.released = release_pages(data, self.released, self.start)
        return lists


class SkeletonRest:
    """The records a progressive skeleton decode (:func:`skeleton`'s ``first_records``)
    left for later, decoded a chunk at a time by iterating: each item is the columns of
    the next chunk's records (each of :data:`INDEX_COLUMNS` → a list), which
    :attr:`Skeleton.raw` holds from then on. Meant for one worker thread; records
    already decoded may be read meanwhile on another (``raw[i]``).

    ``fraction``: the share of the file's bytes decoded so far (0.0 to 1.0).

    Raises (on iteration):
        FormatError: a record further on fails a check (an unknown kind, a seq that does
            not increase), or the bytes there are not JSON: the whole document is decoded
            again to report its first problem, as :func:`skeleton` would have.
    """

    def __init__(self, decoder: _ChunkDecoder) -> None:
        self._decoder = decoder

    @property
    def fraction(self) -> float:
        return self._decoder.fraction

    @property
    def done(self) -> bool:
        return self._decoder.done

    def __iter__(self) -> Iterator[dict[str, list[Any]]]:
        return self

    def __next__(self) -> dict[str, list[Any]]:
        decoder = self._decoder
        if decoder.done:
            raise StopIteration
        with _cyclic_gc_paused():
            try:
                return dict(zip(INDEX_COLUMNS, decoder.step()))
            except (_ChunkFailed, RecursionError):
                return self._whole()

    def _whole(self) -> dict[str, list[Any]]:
        """The columns of the records after those decoded, from a decode of the whole
        document, its records serving the rest of :attr:`Skeleton.raw` (a chunk that
        did not split at any separator tried) — once the records decoded so far are
        found to be its first ones, byte for byte.

        Raises:
            FormatError: the document's first problem (the whole decode's, or, for one
                it cannot read, the full load's: nesting, numbers...); or the records
                shown so far are not the document's (a second ``records`` member, which
                replaces the first, or a file changed on disk).
        """
        decoder = self._decoder
        raw = decoder.raw
        base = len(raw)
        decoder.done = True
        try:
            with raw._lock:  # (no chunk's brackets in the document meanwhile)
                whole = _skeleton(decoder.data, decoder.source)
                slices = None if whole is None else whole.raw._all()
        except RecursionError:
            whole = slices = None
        if whole is None or slices is None:
            self._raise_full_load_error(base)
        assert whole is not None and slices is not None
        if len(slices) < base or any(memoryview(raw._slice(k)) != memoryview(slices[k]) for k in range(base)):
            raise FormatError(
                f"the {base:,} records shown first are not the document's first records (it holds a second "
                "'records' member, which replaces the first, or it changed on disk): check it with "
                "'chassis-inspector validate'",
                file=decoder.source,
                path="/records",
            )
        with raw._lock:
            raw._continue_with(whole.raw)
        return {name: col[base:] for name, col in whole.columns.items()}

    def _raise_full_load_error(self, base: int) -> None:
        """Raise what a full load of the document says about it (the skeleton decode
        could not read it whole: nested too deeply, a number no float holds...), for a
        document of at most :data:`FULL_LOAD_ERROR_BYTES`; else say ``validate`` will.

        Raises:
            FormatError: always.
        """
        from .io import loads_recording

        decoder = self._decoder
        if len(decoder.data) <= FULL_LOAD_ERROR_BYTES:
            with decoder.raw._lock:
                data = bytes(decoder.data)
            loads_recording(data, source=decoder.source)
        raise FormatError(
            f"the records after record {base - 1:,} could not be read a chunk at a time; "
            "'chassis-inspector validate' reads the file whole",
            file=decoder.source,
            path=f"/records/{base}",
        )


def _separator(data: mmap.mmap, needle: bytes, start: int, stop: int) -> int:
    """The offset of the next comma in ``data[start:stop]`` followed by ``needle`` (the
    bytes that open the first record), with only whitespace between (``,{"seq":`` in a
    compact file, ``, {"seq":`` as Python's ``json.dumps`` writes it); -1 if none."""
    at = start
    while (k := data.find(needle, at, stop)) >= 0:
        j = k - 1
        while j >= start and data[j] in _WHITESPACE:
            j -= 1
        if j >= start and data[j] == 0x2C:  # ","
            return j
        at = k + 1
    return -1


def _records_member(data: mmap.mmap) -> tuple[dict[str, msgspec.Raw], int] | None:
    """The members before the document's ``records`` array (unparsed) and the offset
    just after its ``[``; ``None`` when the first few ``"records"`` in the bytes do not
    open it (another member of that name nested earlier, or no such member)."""
    at = 0
    for _ in range(8):
        at = data.find(b'"records"', at)
        if at < 0:
            return None
        m = _RECORDS_MEMBER.match(data, at)
        if m is not None:
            try:  # the bytes before it and an empty array: the header, if it is one
                members = _MEMBERS.decode(data[:at] + b'"records":[]}')
            except msgspec.DecodeError:
                members = None
            # the member is "records" itself (not a key ending in an escaped '\"records')
            if members is not None and "records" in members:
                del members["records"]
                return members, m.end()
        at += 1
    return None


def _decode_chunk(data: mmap.mmap, start: int, end: int) -> tuple[list[_Record | None], list[msgspec.Raw]] | None:
    """The records in ``data[start:end]`` (``data[start - 1]`` and ``data[end]`` are the
    bytes around them, briefly made ``[`` and ``]``): as structs, or, when one does not
    fit, each one that fits and the slices of all (``None`` entries are read from their
    slice). ``None`` when the bytes are not a sequence of JSON values."""
    try:
        with _bracketed(data, start, end) as view:
            try:
                # a list of structs, none missing (the slices are needed only for one that is)
                return cast("list[_Record | None]", _CHUNK_OF_RECORDS.decode(view)), []
            except msgspec.ValidationError:  # a record of another shape, or bytes cut short
                slices = _SLICES.decode(view)
    except (msgspec.DecodeError, RecursionError):  # RecursionError: nested thousands deep
        return None
    recs: list[_Record | None] = [None] * len(slices)
    for i, raw in enumerate(slices):
        try:
            recs[i] = _RECORD.decode(raw)
        except msgspec.ValidationError:
            pass  # row_of_object reads it
    return recs, slices


@contextmanager
def _bracketed(data: mmap.mmap, start: int, end: int) -> Iterator[memoryview]:
    """``data[start - 1 : end + 1]`` with its first and last bytes (the comma or bracket
    before a chunk of records, the comma or bracket after it) made ``[`` and ``]`` in the
    private copy while the view is used, and restored after (the slices and structs
    decoded from it reference bytes between the two)."""
    before, after = data[start - 1], data[end]
    data[start - 1], data[end] = 0x5B, 0x5D
    try:
        yield memoryview(data)[start - 1 : end + 1]
    finally:
        data[start - 1], data[end] = before, after


def _slices_of(data: bytes | bytearray | memoryview | mmap.mmap) -> list[msgspec.Raw]:
    return _SLICES_OF_DOCUMENT.decode(data).records


def _general(data: bytes | bytearray | memoryview | mmap.mmap, source: str) -> Skeleton | None:
    """:func:`skeleton` of a document the first-paint struct does not fit: every member
    kept, the records sliced first and then read one by one (a record of another shape
    read from its parsed JSON by :func:`row_of_object`)."""
    try:
        members = _MEMBERS.decode(data)
    except msgspec.ValidationError:  # not an object: but is it JSON?
        try:
            _VALUE.decode(data)
        except msgspec.DecodeError:
            return _unreadable(data, source)
        return None
    except msgspec.DecodeError:
        return _unreadable(data, source)
    records = members.pop("records", None)
    try:
        if _version(members) is None:
            return None
        header = {name: orjson.loads(memoryview(raw)) for name, raw in members.items()}
    except orjson.JSONDecodeError:
        return _unreadable(data, source)
    try:
        slices = [] if records is None else _SLICES.decode(records)
    except msgspec.ValidationError:
        raise FormatError("'records' must be an array of records", file=source, path="/records") from None
    recs: list[_Record | None] = [None] * len(slices)
    for i, s in enumerate(slices):
        try:
            recs[i] = _RECORD.decode(s)
        except msgspec.ValidationError:
            pass  # row_of_object reads it (or says it is not an object)
    mapped = data if isinstance(data, mmap.mmap) else None
    return Skeleton(header, _columns(recs, slices, source), RawRecords(slices, len(slices), source, mapped))


def _unreadable(data: bytes | bytearray | memoryview | mmap.mmap, source: str) -> Skeleton | None:
    """Raise the FormatError :func:`core.record.io.parse_json` raises for ``data`` (line
    and column); return ``None`` when orjson reads what msgspec did not (the
    whole-document path decides)."""
    parse_json(bytes(data), source=source)
    return None


def _version(members: dict[str, msgspec.Raw]) -> int | None:
    """The format version the header says, when it is one :func:`skeleton` reads.

    Raises:
        orjson.JSONDecodeError: ``format`` or ``format_version`` is JSON orjson cannot read.
    """
    fmt, ver = members.get("format"), members.get("format_version")
    if fmt is None or ver is None or orjson.loads(memoryview(fmt)) != FORMAT_NAME:
        return None
    version = orjson.loads(memoryview(ver))
    return version if type(version) is int and version in SKELETON_VERSIONS else None


def _columns(recs: list[_Record | None], slices: list[msgspec.Raw], source: str) -> dict[str, list[Any]]:
    """The index columns of the records ``recs`` (see the module docstring); a ``None``
    entry is read from its slice in ``slices``. Checks each record's kind and seq.

    Raises:
        FormatError: as :func:`skeleton`.
    """
    return dict(zip(INDEX_COLUMNS, _column_lists(recs, slices, source)[0]))


def _column_lists(
    recs: list[_Record | None], slices: list[msgspec.Raw], source: str, base: int = 0, prev: int = -1
) -> tuple[list[list[Any]], int]:
    """:func:`_columns` as lists in the order of :data:`INDEX_COLUMNS`, for records that
    begin at record ``base`` of the document after a record of seq ``prev``; and the
    last record's seq (``prev`` when there are none). Errors name ``base + i``."""
    n = len(recs)
    cols: list[list[Any]] = [[None] * n for _ in INDEX_COLUMNS]
    seqs, kinds, names, statuses, tins, touts, durations, ats, runs, call_ids, calls = cols
    for i, r in enumerate(recs):
        # the struct path is _row_of_struct inlined, writing the columns directly (one
        # call and one tuple less per record); test_skeleton checks the two agree
        if r is None:
            try:
                obj = _parse(slices[i])
            except msgspec.DecodeError as exc:
                raise _inside(exc, source, base + i) from None
            if type(obj) is not dict:
                raise FormatError(
                    "record is not a JSON object", file=source, record=base + i, path=f"/records/{base + i}"
                )
            kind, seq = obj.get("kind"), obj.get("seq")
            check_kind_and_seq(kind, seq, prev, source, base + i)
            (
                seqs[i],
                kinds[i],
                names[i],
                statuses[i],
                tins[i],
                touts[i],
                durations[i],
                ats[i],
                runs[i],
                call_ids[i],
                calls[i],
            ) = row_of_object(obj)
            assert type(seq) is int  # _check
            prev = seq
            continue
        kind = r.kind
        status = None
        try:
            if kind == "model":
                model = r.model
                if r.meta is not _NULL and _may_hold(r.meta, b"live_model"):
                    meta = _parse(r.meta)
                    swapped = meta.get("live_model") if type(meta) is dict else None
                    names[i] = f"{model} → {swapped}" if isinstance(swapped, str) else model
                else:
                    names[i] = model
                duration = r.duration_seconds
                durations[i] = float(duration) if type(duration) is int else duration
                if r.error is not _NULL and bytes(r.error) != b"null":
                    status = "error"
                resp = r.response
                if resp is not None:
                    usage = resp.usage
                    if usage is not None:
                        tins[i] = usage.input_tokens
                        touts[i] = usage.output_tokens
                    msg = resp.message
                    if msg is not None:
                        if msg.tool_calls:
                            calls[i] = [c.id for c in msg.tool_calls]
                        if status is None and _raw_marker(msg.content):
                            status = "redacted"
            elif kind == "tool":
                names[i] = r.tool
                duration = r.duration_seconds
                durations[i] = float(duration) if type(duration) is int else duration
                call_ids[i] = r.tool_call_id
                res = r.result
                if res is not None:
                    if res.error is not _NULL and bytes(res.error) != b"null":
                        status = "error"
                    elif res.redacted or _raw_marker(res.content):
                        status = "redacted"
            elif kind == "interrupt":
                names[i] = "interrupt"
                status = interrupt_status(None if r.value is _NULL else _parse(r.value))
            elif kind == "lifecycle":
                names[i] = r.event
            else:
                names[i] = r.generation_id or "snapshot"
        except msgspec.DecodeError as exc:
            raise _inside(exc, source, base + i) from None
        seq = r.seq
        if type(kind) is not str or kind not in _KINDS or type(seq) is not int or seq <= prev:
            check_kind_and_seq(kind, seq, prev, source, base + i)
        prev = seq
        seqs[i] = seq
        kinds[i] = kind
        if status is None:
            status = "live-fallback" if r.live_fallback else "replayed" if r.replayed else "ok"
        statuses[i] = status
        at = r.at
        if type(at) is str:
            ats[i] = epoch_seconds(at)
        runs[i] = r.run_id
    return cols, prev


def check_kind_and_seq(kind: Any, seq: Any, prev: int, source: str, i: int) -> None:
    """Check record ``i``'s ``kind`` and ``seq`` (``prev``: the previous record's seq).

    Raises:
        FormatError: an unknown kind, a seq that is not an integer or does not increase.
    """
    if type(kind) is not str or kind not in _KINDS:
        raise FormatError(
            f"unknown record kind {kind!r} (expected one of {', '.join(RECORD_KINDS)})",
            file=source,
            record=i,
            path=f"/records/{i}/kind",
        )
    if type(seq) is not int or seq <= prev:
        if type(seq) is not int:
            reason = "seq must be an integer"
        elif i == 0:
            reason = f"seq {seq} must be greater than or equal to 0"
        else:
            reason = f"seq {seq} does not increase (previous record has seq {prev})"
        raise FormatError(reason, file=source, record=i, path=f"/records/{i}/seq")


def _inside(exc: msgspec.DecodeError, source: str, i: int) -> FormatError:
    return FormatError(f"malformed JSON inside the record: {exc}", file=source, record=i, path=f"/records/{i}")


def _may_hold(raw: msgspec.Raw, needle: bytes) -> bool:
    """Whether the JSON text in ``raw`` could hold ``needle`` (ASCII) once parsed: it
    holds it as written, or holds an escaped ASCII character that could spell it."""
    data = bytes(raw)
    return needle in data or _ESCAPE in data


def _raw_marker(raw: msgspec.Raw) -> bool:
    """Whether the JSON value in ``raw`` holds a redaction marker (:func:`holds_marker`),
    as :func:`_raw_marker_exact` says, parsing only what could hold one.

    A string whose bytes are ASCII, hold no backslash (no escape, which could spell a
    marker or be one orjson rejects) and no ``[REDACTED`` holds no marker and is valid
    JSON as msgspec already checked it (msgspec checks a skipped string's characters and
    escapes, not its UTF-8): it is not parsed. Anything else is read exactly.

    Raises:
        msgspec.DecodeError: as :func:`_raw_marker_exact`.
    """
    if raw is _NULL:
        return False
    data = bytes(raw)
    if data[0] == 0x22:  # '"': a string (a slice is never empty)
        if data.isascii() and data.find(b"\\") < 0 and data.find(_MARKER_OPEN) < 0:
            return False
        return _raw_marker_exact(raw)
    if data.find(_MARKER_OPEN) < 0 and data.find(_ESCAPE) < 0:
        return False
    return holds_marker(_parse(raw))


def _raw_marker_exact(raw: msgspec.Raw) -> bool:
    """Whether the JSON value in ``raw`` holds a redaction marker (:func:`holds_marker`):
    a string is parsed; an array or object only when its bytes could spell a marker (an
    array or object is not parsed here either way, so its UTF-8 is left to verification).

    Raises:
        msgspec.DecodeError: a string that is not JSON (e.g. not UTF-8).
    """
    if raw is _NULL:
        return False
    view = memoryview(raw)
    if view[0] == 0x22:  # '"'
        text = _parse(view)
        return _MARKER_TEXT in text and has_marker(text)
    if not _may_hold(raw, _MARKER_OPEN):
        return False
    return holds_marker(_parse(view))


def _is_null(raw: msgspec.Raw) -> bool:
    return raw is _NULL or bytes(raw) == b"null"


def _duration(value: Any) -> Any:
    # a float field: a validated integer duration is a float (pydantic converts it); one
    # too big for a float is no duration (the verification refuses the file)
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return value


def _row_of_struct(r: _Record) -> tuple[Any, ...]:
    """The index row of a record decoded as :class:`_Record` (as :func:`index_row`), by
    the plain functions: the reference :func:`_columns` (which inlines this with the fast
    :func:`_raw_marker`) is tested against.

    Raises:
        msgspec.DecodeError: a value it parses is not JSON.
    """
    kind = r.kind
    tin = tout = calls = duration = call_id = None
    status = None
    if kind == "model":
        swapped = None
        if r.meta is not _NULL and _may_hold(r.meta, b"live_model"):
            meta = _parse(r.meta)
            swapped = meta.get("live_model") if type(meta) is dict else None
        name = f"{r.model} → {swapped}" if isinstance(swapped, str) else r.model
        duration = _duration(r.duration_seconds)
        resp = r.response
        if not _is_null(r.error):
            status = "error"
        if resp is not None:
            if resp.usage is not None:
                tin, tout = resp.usage.input_tokens, resp.usage.output_tokens
            msg = resp.message
            if msg is not None:
                if msg.tool_calls:
                    calls = [c.id for c in msg.tool_calls]
                if status is None and _raw_marker_exact(msg.content):
                    status = "redacted"
    elif kind == "tool":
        name = r.tool
        duration = _duration(r.duration_seconds)
        call_id = r.tool_call_id
        res = r.result
        if res is not None:
            if not _is_null(res.error):
                status = "error"
            elif res.redacted or _raw_marker_exact(res.content):
                status = "redacted"
    elif kind == "interrupt":
        name = "interrupt"
        status = interrupt_status(None if r.value is _NULL else _parse(r.value))
    elif kind == "lifecycle":
        name = r.event
    else:
        name = r.generation_id or "snapshot"
    if status is None:
        status = "live-fallback" if r.live_fallback else "replayed" if r.replayed else "ok"
    at = epoch_seconds(r.at) if type(r.at) is str else None
    return (r.seq, kind, name, status, tin, tout, duration, at, r.run_id, call_id, calls)


def _get(value: Any, key: str, default: Any = None) -> Any:
    return value.get(key, default) if type(value) is dict else default


def _json_text(value: Any) -> str:
    """``value`` as JSON text (msgspec writes integers beyond 64 bits, which orjson
    refuses), or ``str(value)`` when even that fails."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return str(value)


def row_of_object(r: dict[str, Any]) -> tuple[Any, ...]:
    """The index row of a record given as parsed JSON, as :func:`core.record.indexed.index_row`
    computes it on the validated record. Loose: a member of the wrong shape gives some
    value, never an exception (verification rejects such a record later)."""
    kind = r.get("kind")
    tin = tout = calls = duration = call_id = None
    status = None
    if kind == "model":
        swapped = _get(r.get("meta"), "live_model")
        model = r.get("model")
        name = f"{model} → {swapped}" if isinstance(swapped, str) else model
        duration = _duration(r.get("duration_seconds"))
        if r.get("error") is not None:
            status = "error"
        resp = r.get("response")
        if type(resp) is dict:
            usage = resp.get("usage")
            if type(usage) is dict:
                tin, tout = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
            msg = resp.get("message")
            tool_calls = _get(msg, "tool_calls")
            if tool_calls and type(tool_calls) is list:
                calls = [_get(c, "id") for c in tool_calls]
            if status is None and holds_marker(_get(msg, "content")):
                status = "redacted"
    elif kind == "tool":
        name = r.get("tool")
        duration = _duration(r.get("duration_seconds"))
        call_id = r.get("tool_call_id")
        res = r.get("result")
        if _get(res, "error") is not None:
            status = "error"
        elif _get(res, "redacted") or holds_marker(_get(res, "content")):
            status = "redacted"
    elif kind == "interrupt":
        name = "interrupt"
        status = interrupt_status(r.get("value"))
    elif kind == "lifecycle":
        name = r.get("event")
    else:
        name = r.get("generation_id") or "snapshot"
    if status is None:
        status = "live-fallback" if r.get("live_fallback") else "replayed" if r.get("replayed") else "ok"
    at = r.get("at")
    run = r.get("run_id")
    return (
        r.get("seq"),
        kind,
        name if name is None or type(name) is str else _json_text(name),
        status,
        tin if type(tin) is int else None,
        tout if type(tout) is int else None,
        duration if type(duration) is float or duration is None else None,
        epoch_seconds(at) if type(at) is str else None,
        run if type(run) is str else None,
        call_id if type(call_id) is str else None,
        None if calls is None else [c if type(c) is str else None for c in calls],
    )
