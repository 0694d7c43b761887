"""Loading a recording for viewing: the recording, its timeline index and any notices.

Goes through :func:`core.importers.open_any`, so files in other formats that the
importers accept are converted on the fly; the typed result (:class:`core.importers.Opened`:
source format, runs, warnings) is kept as ``LoadedRecording.opened`` and the app phrases
it (:mod:`inspector.runinfo`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.analysis.timeline import TimelineIndex
from core.errors import FormatError
from core.importers import Opened, open_any
from core.record.recording import FORMAT_NAME, FORMAT_VERSION, Recording

from .runinfo import opened_notes

#: format versions whose records are read as written by the fast-open path: version 2 is
#: version 1 plus optional fields, so a v1 file migrates by its version number alone
NATIVE_VERSIONS = (1, FORMAT_VERSION)

#: native recordings at least this big open from a raw index (first paint after the
#: JSON parse) and are verified in the background; smaller ones are verified first.
#: ``CHASSIS_INSPECTOR_FAST_OPEN_MB`` overrides it (0 = always, e.g. for tests).
FAST_OPEN_BYTES = int(float(os.environ.get("CHASSIS_INSPECTOR_FAST_OPEN_MB", "64")) * 1024 * 1024)


@dataclass
class LoadedRecording:
    """A recording ready to view: ``path`` it came from, the ``recording``, its timeline
    ``index``, ``notices`` (notes on the conversion, one line each; ``warning: ...``
    lines are accepted too) and ``opened``, what :func:`core.importers.open_any` said
    about the file (``None`` for an in-memory or fast-opened recording)."""

    path: Path
    recording: Recording
    index: TimelineIndex
    notices: list[str] = field(default_factory=list)
    #: for a fast-opened file: the full verification still to run (returns the verified
    #: recording or raises FormatError); ``None`` when the recording is verified
    verify: Callable[[], Recording] | None = None
    opened: Opened | None = None

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


def load_for_view(path: Path | str, *, fast_open_bytes: int | None = None) -> LoadedRecording:
    """Load (and if needed convert) ``path`` and index it.

    A native (format v1 or v2) recording of at least ``fast_open_bytes`` (default
    :data:`FAST_OPEN_BYTES`) is *fast-opened*: parsed with orjson, its header validated,
    its records checked for shape (known kind, increasing seq) and indexed raw; the full
    verification (every field, digest, keys) is returned as ``verify`` for the app to run
    in a worker. Everything else is loaded and verified completely here.

    Raises:
        core.errors.FormatError: the file cannot be read, parsed or verified (for a
            fast-opened file: parsed, or its header and record shapes checked).
        core.errors.InspectorError: other load failures (e.g. no importer accepts it).
    """
    p = Path(path)
    threshold = FAST_OPEN_BYTES if fast_open_bytes is None else fast_open_bytes
    try:
        big = p.is_file() and p.stat().st_size >= threshold
    except OSError:
        big = False
    if big:
        fast = _fast_open(p)
        if fast is not None:
            return fast
    return LoadedRecording.from_opened(open_any(p), p)


def _fast_open(path: Path) -> LoadedRecording | None:
    """The fast-open path of :func:`load_for_view`; ``None`` if the file is not a native
    format-v1/v2 recording (the caller then loads it the ordinary way)."""
    from core.record.io import parse_json, recording_from_dict

    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read file: {exc.strerror}", file=source) from None
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
