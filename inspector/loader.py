"""Loading a recording for viewing: the recording, its timeline index and any notices.

Goes through :func:`core.importers.open_any`, so files in other formats that the
importers accept are converted on the fly; the typed result (:class:`core.importers.Opened`:
source format, runs, warnings) is kept as ``LoadedRecording.opened`` and the app phrases
it (:mod:`inspector.runinfo`). A file of several runs is parsed once: the app's run
picker opens another run with :meth:`LoadedRecording.for_run`, from the runs already
imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from core.analysis.timeline import TimelineIndex
from core.errors import FormatError, SourceImportError
from core.importers import Opened, looks_native, open_any
from core.record.indexed import IndexedFile
from core.record.recording import FORMAT_NAME, FORMAT_VERSION, Recording
from core.record.skeleton import Skeleton, SkeletonRest

from .runinfo import opened_notes

#: format versions whose records are read as written by the fast-open path: version 2 is
#: version 1 plus optional fields, and version 3 (a document without a pool) is version 2,
#: so such a file migrates by its version number alone
NATIVE_VERSIONS = (1, 2, FORMAT_VERSION)

#: native recordings at least this big open from a raw index (first paint after the
#: JSON parse) and are verified in the background; smaller ones are verified first.
#: ``CHASSIS_INSPECTOR_FAST_OPEN_MB`` overrides it (0 = always, e.g. for tests).
FAST_OPEN_BYTES = int(float(os.environ.get("CHASSIS_INSPECTOR_FAST_OPEN_MB", "64")) * 1024 * 1024)

#: a version-3 run of at least this many records is verified without keeping its records
#: as objects (they would take several times the file's size): the timeline reads each
#: record from the file when it is shown, and what needs every record (a branch, a
#: replay, a comparison, an audit) reads them then (``LoadedRecording.whole``).
#: ``CHASSIS_INSPECTOR_KEEP_RECORDS`` overrides it.
KEEP_RECORDS = int(os.environ.get("CHASSIS_INSPECTOR_KEEP_RECORDS", "200000"))

#: a version-1/2 file of at least this many bytes (or :data:`KEEP_RECORDS` records) is
#: verified in a process of its own and its records are not kept as objects: parsing it
#: whole holds the interpreter (about 3 s a gigabyte) and several times its size in
#: memory. ``CHASSIS_INSPECTOR_KEEP_MB`` overrides it.
KEEP_BYTES = int(float(os.environ.get("CHASSIS_INSPECTOR_KEEP_MB", "256")) * 1024 * 1024)

#: a big version-1/2 file paints once this many records are decoded (a few chunks of the
#: file, :data:`core.record.skeleton.CHUNK_BYTES` each); the rest are decoded after the
#: first paint (``LoadedRecording.reading``) and their rows appended as they come
FIRST_RECORDS = 1_000


@dataclass
class LoadedRecording:
    """A recording ready to view: ``path`` it came from, the ``recording``, its timeline
    ``index``, ``notices`` (notes on the conversion, one line each; ``warning: ...``
    lines are accepted too) and ``opened``, what :func:`core.importers.open_any` said
    about the file (``None`` for an in-memory or fast-opened recording);
    ``run_requested``: the run was named (``open --run``), so the app opens it without
    the run picker."""

    path: Path
    recording: Recording
    index: TimelineIndex
    notices: list[str] = field(default_factory=list)
    #: for a fast-opened file: the full verification still to run (returns the verified
    #: recording or raises FormatError); ``None`` when the recording is verified
    verify: Callable[[], Recording] | None = None
    opened: Opened | None = None
    run_requested: bool = False
    #: for a run too big to hold in memory as objects (at least :data:`KEEP_RECORDS`
    #: records; for a v1/v2 file also :data:`KEEP_BYTES` bytes, set once it is verified):
    #: reads every record of the file (returns the whole recording or raises
    #: FormatError) for what needs them all — a branch, a replay, a comparison, an
    #: audit; ``None`` when ``recording`` holds every record (or will, once verified)
    whole: Callable[[], Recording] | None = None
    #: for a big version-1/2 file painted before all of it was decoded: the chunks left,
    #: each one's columns to append to ``index`` (``TimelineIndex.extend``) before
    #: ``verify`` runs; ``None`` once ``index`` has a row for every record
    reading: SkeletonRest | None = None

    @property
    def records_pending(self) -> bool:
        """Whether ``recording`` does not hold every record yet: still being read or
        verified, or a big run read from its file record by record (:attr:`whole`)."""
        return self.verify is not None or self.whole is not None or self.reading is not None

    @property
    def has_runs(self) -> bool:
        """Whether the file holds several runs (the app offers its run picker)."""
        return self.opened is not None and len(self.opened.runs) > 1

    @property
    def one_top_run(self) -> bool:
        """Whether the file holds one top-level run and only runs that belong to it
        (sub-agents, recorded alternative paths): the app opens that run, not the
        picker."""
        return self.opened is not None and sum(1 for r in self.opened.runs if r.parent is None) == 1

    def for_run(self, run: str | int) -> LoadedRecording:
        """The same file at another run (id, or index in run order), built from the runs
        imported when it was opened: the file is not parsed again.

        Raises:
            core.errors.SourceImportError: not a file of runs (native or in memory), or
                no such run.
        """
        if self.opened is None:
            raise SourceImportError(f"{self.path}: one recording; no run to pick")
        loaded = LoadedRecording.from_opened(self.opened.with_run(run), self.path)
        loaded.run_requested = True
        return loaded

    @classmethod
    def from_recording(
        cls,
        recording: Recording,
        path: Path | str = "<memory>",
        notices: list[str] | None = None,
        opened: Opened | None = None,
    ) -> LoadedRecording:
        """Wrap an in-memory recording (builds the index)."""
        return cls(Path(path), recording, TimelineIndex(recording), list(notices or []), opened=opened)

    @classmethod
    def from_opened(cls, opened: Opened, path: Path | str) -> LoadedRecording:
        """Wrap what :func:`core.importers.open_any` returned for ``path`` (builds the
        index; the notes are :func:`inspector.runinfo.opened_notes`)."""
        p = Path(path)
        return cls.from_recording(opened.recording, p, opened_notes(opened, p), opened)


def load_for_view(
    path: Path | str, *, run: str | int | None = None, fast_open_bytes: int | None = None
) -> LoadedRecording:
    """Load (and if needed convert) ``path`` and index it.

    ``run`` names one run of a multi-run file (id, or index in run order as
    ``import --list`` shows it); the app then opens it without the run picker. Without
    it, the first run in run order is loaded and a file of several runs opens on the
    picker.

    A native recording of at least ``fast_open_bytes`` (default
    :data:`FAST_OPEN_BYTES`) is *fast-opened*: a version-3 file from its header and
    record index alone (records read from their byte ranges when shown); an older one
    parsed, its header validated, its records checked for shape (known kind, increasing
    seq) and indexed raw. The full verification (every field, pool, index, digest, keys)
    is returned as ``verify`` for the app to run in a worker. Everything else is loaded
    and verified completely here.

    Raises:
        core.errors.FormatError: the file cannot be read, parsed or verified (for a
            fast-opened file: parsed, or its header and record shapes checked).
        core.errors.SourceImportError: no importer accepts it, no run ``run``, or
            ``run`` given for a Chassis recording (one run).
        core.errors.InspectorError: other load failures.
    """
    p = Path(path)
    threshold = FAST_OPEN_BYTES if fast_open_bytes is None else fast_open_bytes
    try:
        big = run is None and p.is_file() and p.stat().st_size >= threshold
    except OSError:
        big = False
    if big:
        fast = _indexed_open(p) or _skeleton_open(p) or _fast_open(p)
        if fast is not None:
            return fast
    opened = open_any(p, run)
    if run is not None and not opened.converted:
        raise SourceImportError(f"{p}: a Chassis recording is one run; --run picks a run of a multi-run file")
    loaded = LoadedRecording.from_opened(opened, p)
    loaded.run_requested = run is not None
    return loaded


class _LazyRecords(Sequence[dict[str, Any]]):
    """The records of a version-3 file, each read from its index range when asked for
    (references resolved): what the timeline shows before verification ends."""

    def __init__(self, f: IndexedFile) -> None:
        self._f = f

    def __len__(self) -> int:
        return len(self._f)

    def prefetch(self) -> None:
        """Read what the first record read needs and the first paint did not: the
        byte ranges and the integral floats of the index.

        Raises:
            FormatError: they are damaged.
        """
        _ = self._f.index.start
        _ = self._f.index.float_groups

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._f.raw_record(k) for k in range(*i.indices(len(self)))]
        return self._f.raw_record(i)


def _indexed_open(path: Path) -> LoadedRecording | None:
    """Open a version-3 file from its header and record index alone (the first paint
    reads nothing else); ``verify`` reads and checks every record in a worker. ``None``
    when the file is not laid out with an index (another version, or a version-3
    document rewritten by another tool): the caller opens it another way."""
    from core.record.indexed import INDEXED_VERSION, is_indexed
    from core.record.io import indexed_header, load_indexed
    from core.record.reader import read_input_head

    if not is_indexed(read_input_head(path, 160)):
        return None
    try:
        f = IndexedFile.open(path)
    except FormatError as exc:
        if exc.path != "/index_offset":
            raise
        return None  # the header's offsets are out of date (an edited file): read it whole
    shell, _ = indexed_header(f)
    assert INDEXED_VERSION == FORMAT_VERSION
    index = TimelineIndex.from_columns(shell, f.index.columns, _LazyRecords(f), source=str(path))
    keep = len(f) < KEEP_RECORDS

    def verify() -> Recording:
        if keep:
            return load_indexed(f, keep=True)
        # nothing to keep: the check runs in a process of its own (inspector.verifier)
        from .verifier import verify_digest

        checked = shell.model_copy()
        checked.digest = verify_digest(path, _worker_cancelled, identity=f.identity, digest=shell.digest)
        return checked

    def whole() -> Recording:
        return load_indexed(f)

    return LoadedRecording(path, shell, index, [], verify=verify, whole=None if keep else whole)


def _worker_cancelled() -> bool:
    """Whether the Textual worker running this thread was cancelled (the app is closing);
    ``False`` outside a worker."""
    from textual.worker import NoActiveWorker, get_current_worker

    try:
        return get_current_worker().is_cancelled
    except NoActiveWorker:
        return False


def skeleton_of(path: Path, *, first_records: int | None = None) -> tuple[Skeleton, tuple[int, int, int, int]] | None:
    """The skeleton decode of the version-1/2 file at ``path``
    (:func:`core.record.skeleton.skeleton` over a copy-on-write memory map: a big file a
    chunk of records at a time; ``first_records``: a progressive decode) and the
    identity of the file mapped (:func:`core.record.indexed.file_identity`); ``None``
    when it is not a version-1/2 recording (nor, by its first 4 KiB, a native one at
    all: :func:`core.importers.looks_native`) or cannot be mapped (the caller reads it
    another way).

    Raises:
        core.errors.InputFileError: not a regular file, or it cannot be opened.
        core.errors.FormatError: as :func:`core.record.skeleton.skeleton`.
    """
    import mmap

    from core.record.indexed import file_identity
    from core.record.reader import check_input
    from core.record.skeleton import skeleton

    check_input(path)  # a regular file (core.record.reader)
    if not looks_native(path):
        return None  # another format (JSON Lines...): the importers read it
    try:
        with open(path, "rb") as fh:
            identity = file_identity(os.fstat(fh.fileno()))
            try:  # copy-on-write: the skeleton decodes a big file's records a chunk at a time
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
                private = True
            except OSError:  # no memory to commit for a private map (strict overcommit)
                data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                private = False
    except (OSError, ValueError):
        return None
    skel = skeleton(data, source=str(path), copy_on_write=private, first_records=first_records)
    return None if skel is None else (skel, identity)


def _skeleton_open(path: Path) -> LoadedRecording | None:
    """Open a version-1/2 file from a skeleton decode (:mod:`core.record.skeleton`: the
    timeline's fields only, payloads skipped, over a copy-on-write memory map, a chunk of
    records at a time for a big file, which paints once :data:`FIRST_RECORDS` are decoded
    and leaves the rest as ``reading``); ``verify`` parses and checks the whole file in a
    worker — or, for a file of :data:`KEEP_RECORDS` records or :data:`KEEP_BYTES` bytes,
    in a process of its own (:mod:`inspector.verifier`), after which the records stay in
    the file (``whole`` reads them all when an action needs them). ``None`` when the file
    is not a version-1/2 recording (the caller opens it another way)."""
    from core.record.indexed import file_identity
    from core.record.io import load_recording, recording_from_dict

    source = str(path)
    opened = skeleton_of(path, first_records=FIRST_RECORDS)
    if opened is None:
        return None
    skel, identity = opened
    header = {k: v for k, v in skel.header.items() if k != "digest"}
    shell = recording_from_dict({**header, "records": []}, source=source)
    shell.digest = skel.header.get("digest")
    index = TimelineIndex.from_columns(shell, skel.columns, skel.raw, source=source)

    raw = skel.raw

    def unchanged() -> None:
        """Raise FormatError when the file at ``path`` is no longer the one mapped."""
        try:
            same = file_identity(os.stat(path)) == identity
        except OSError:
            same = False
        if not same:
            raise FormatError("the file changed on disk after it was opened: open it again", file=source)

    def whole() -> Recording:
        unchanged()
        recording = load_recording(path)
        unchanged()  # (not replaced while it was read)
        return recording

    def verify() -> Recording:
        # len(raw): every record is decoded by now (the rows may not be on screen yet)
        if len(raw) < KEEP_RECORDS and identity[2] < KEEP_BYTES:
            return whole()  # the file the rows were read from, or an error
        # a big file: checked in a process of its own (inspector.verifier), its records
        # read from the file as they are shown, and all of them when an action needs them
        from .verifier import verify_digest

        checked = shell.model_copy()
        checked.digest = verify_digest(path, _worker_cancelled, identity=identity, digest=shell.digest)
        loaded.whole = whole  # (before Verified is posted: InspectorApp._verified reads it)
        return checked

    loaded = LoadedRecording(path, shell, index, [], verify=verify, reading=skel.rest)
    return loaded


def _fast_open(path: Path) -> LoadedRecording | None:
    """The fast-open path of :func:`load_for_view`; ``None`` if the file is not a native
    format-v1/v2 recording (the caller then loads it the ordinary way)."""
    from core.record.io import parse_json, recording_from_dict
    from core.record.reader import read_input

    source = str(path)
    if not looks_native(path):
        return None  # another format: the importers read it
    data = read_input(path)  # regular files only: the check and the read are one open
    doc = parse_json(data, source=source)
    del data
    if not (
        isinstance(doc, dict)
        and doc.get("format") == FORMAT_NAME
        and doc.get("format_version") in NATIVE_VERSIONS
        and isinstance(doc.get("records"), list)
    ):
        return None
    header = {k: v for k, v in doc.items() if k not in ("records", "digest")}
    shell = recording_from_dict({**header, "records": []}, source=source)
    shell.digest = doc.get("digest")
    index = TimelineIndex.from_raw(shell, doc["records"], source=source)

    def verify() -> Recording:
        return recording_from_dict(doc, source=source)

    return LoadedRecording(path, shell, index, [], verify=verify)
