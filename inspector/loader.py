"""Loading a recording for viewing: the recording, its timeline index and any notices.

Goes through :func:`inspector.cli.common.load_any` so files in other formats that the
importers accept are converted on the fly; whatever the importers warn about becomes a
notice shown in the app.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.recording import Recording
from core.timeline import TimelineIndex


@dataclass
class LoadedRecording:
    """A recording ready to view: ``path`` it came from, the ``recording``, its timeline
    ``index`` and ``notices`` (import conversions and warnings, one line each)."""

    path: Path
    recording: Recording
    index: TimelineIndex
    notices: list[str] = field(default_factory=list)

    @classmethod
    def from_recording(cls, recording: Recording, path: Path | str = "<memory>", notices: list[str] | None = None) -> "LoadedRecording":
        """Wrap an in-memory recording (builds the index)."""
        return cls(Path(path), recording, TimelineIndex(recording), list(notices or []))


def _split_result(result: Any) -> tuple[Recording, list[str]]:
    """Accept ``Recording`` or ``(Recording, warnings...)`` from ``load_any``."""
    if isinstance(result, Recording):
        return result, []
    if isinstance(result, tuple) and result and isinstance(result[0], Recording):
        notices: list[str] = []
        for extra in result[1:]:
            if isinstance(extra, str):
                notices.append(extra)
            elif isinstance(extra, (list, tuple)):
                notices.extend(str(w) for w in extra)
            elif extra is not None:
                notices.append(str(extra))
        return result[0], notices
    rec = getattr(result, "recording", None)
    if isinstance(rec, Recording):
        warnings = getattr(result, "warnings", None) or []
        notices = [str(w) for w in warnings]
        note = getattr(result, "notice", None)
        if note:
            notices.insert(0, str(note))
        return rec, notices
    raise TypeError(f"load_any returned {type(result).__name__}, not a Recording")


def load_for_view(path: Path | str) -> LoadedRecording:
    """Load (and if needed convert) ``path`` and index it.

    Raises:
        core.errors.FormatError: the file cannot be read, parsed or verified.
        core.errors.InspectorError: other load failures (e.g. no importer accepts it).
    """
    from inspector.cli.common import load_any

    rec, notices = _split_result(load_any(Path(path), with_notices=True))
    return LoadedRecording(Path(path), rec, TimelineIndex(rec), notices)
