"""What :func:`core.importers.open_any` returns: a recording opened from any file, with
where it came from, the runs the file holds and the import warnings — typed, with no
wording of any frontend (the CLI and the app each phrase it their own way)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..record.recording import Recording
from .base import ImportWarning


@dataclass(frozen=True)
class RunRef:
    """One run (sample, trajectory, cassette) of a source file, for a run picker:
    ``id`` as ``open_any(path, run=ID)`` takes it, ``index`` its position in the file
    (also accepted as ``run``), ``label`` a short summary (outcome when the source
    records one, and the number of records)."""

    id: str
    index: int
    label: str


@dataclass(frozen=True)
class Opened:
    """A recording opened by :func:`core.importers.open_any`.

    * ``recording`` — the recording (converted in memory when the file is not native);
    * ``source_format`` — ``"chassis"`` (:data:`core.importers.NATIVE`) for a native
      recording, else the name of the importer that converted it;
    * ``run_id`` — the id of the run shown (``None`` for a native recording);
    * ``runs`` — every run the file holds, in file order (empty for a native
      recording: it is one run, nothing to pick);
    * ``incomplete`` — the source was cut short and this run was recovered from the
      part before the damage (only with ``open_any(..., recover=True)``);
    * ``warnings`` — the import warnings, near-identical ones folded into one with a
      ``count`` (:func:`core.importers.base.fold_warnings`);
    * ``all_warnings`` — every warning as raised, in order, each ``count`` 1 (what
      ``metadata.source.warnings`` stores, without its cap).
    """

    recording: Recording
    source_format: str
    run_id: str | None = None
    runs: list[RunRef] = field(default_factory=list)
    incomplete: bool = False
    warnings: list[ImportWarning] = field(default_factory=list)
    all_warnings: list[ImportWarning] = field(default_factory=list)

    @property
    def converted(self) -> bool:
        """Whether the file was converted from another format (not a native recording)."""
        return self.source_format != "chassis"

    @property
    def run_index(self) -> int | None:
        """Position of the run shown among :attr:`runs` (``None`` for a native recording)."""
        for r in self.runs:
            if r.id == self.run_id:
                return r.index
        return None

    @property
    def warning_count(self) -> int:
        """How many warnings were raised (the folded ones counted each)."""
        return sum(w.count for w in self.warnings)
