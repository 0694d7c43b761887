"""The importer contract: every source format is one module with one :class:`Importer`.

An importer turns a source file (Inspect AI log, SWE-agent trajectory, vcrpy cassette,
...) into one or more format-v1 :class:`~core.recording.Recording` objects, each with
its list of :class:`ImportWarning` (what could not be mapped, what was redacted or
approximated). Importers are plain classes with no UI; the registry and detection live
in :mod:`core.importers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..recording import Recording


@dataclass(frozen=True)
class ImportWarning:
    """Something an importer could not map exactly.

    ``place`` locates it in the *source* (e.g. ``samples[0].events[12]`` or
    ``interactions[3].response.body``); ``message`` says what happened.
    """

    place: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.message}"


@dataclass
class ImportedRun:
    """One run imported from a source: the recording, its id in the source, warnings."""

    run_id: str
    recording: Recording
    warnings: list[ImportWarning] = field(default_factory=list)
    incomplete: bool = False


class Importer:
    """Base class of importers.

    Subclasses set ``name`` (the ``--from`` value), ``description`` and implement
    :meth:`sniff` and :meth:`load`.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Return ``None`` when this importer recognises the file, else the reason it
        refuses (shown to the user when no importer accepts a file). ``head`` is the first
        64 KiB of the file."""
        raise NotImplementedError

    def load(self, path: Path) -> list[ImportedRun]:
        """Import every run of ``path``.

        Raises:
            core.errors.FormatError: the file is damaged or not of this format (names the
                file, the place and the reason; "truncated" for a file cut short).
        """
        raise NotImplementedError
