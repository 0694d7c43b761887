"""The importer contract: every source format is one module with one :class:`Importer`.

An importer turns a source file (Inspect AI log, SWE-agent trajectory, vcrpy cassette,
...) into one or more format-v1 :class:`~core.recording.Recording` objects, each with
its list of :class:`ImportWarning` (what could not be mapped, what was redacted or
approximated). Importers are plain classes with no UI; the registry and detection live
in :mod:`core.importers`.
"""

from __future__ import annotations

import re
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


_NUMBER = re.compile(r"\d+")


def _shape(text: str) -> tuple[str, list[str]]:
    """``text`` with every run of digits replaced by ``#``, and the digit runs."""
    return _NUMBER.sub("#", text), _NUMBER.findall(text)


def _places(places: list[str]) -> str:
    """One description of places that differ only in their numbers: the varying number
    as a range (``messages[0..10]``) or a short list, else ``FIRST … LAST``."""
    split = [_NUMBER.split(p) for p in places]
    nums = [_NUMBER.findall(p) for p in places]
    varying = [i for i in range(len(nums[0])) if len({n[i] for n in nums}) > 1]
    if len(varying) == 1:
        i = varying[0]
        vals = sorted({int(n[i]) for n in nums})
        if vals == list(range(vals[0], vals[-1] + 1)):
            shown = f"{vals[0]}..{vals[-1]}"
        elif len(vals) <= 6:
            shown = ",".join(map(str, vals))
        else:
            shown = f"{vals[0]},{vals[1]},…,{vals[-1]}"
        parts = split[0]
        out = parts[0]
        for j, num in enumerate(nums[0]):
            out += (shown if j == i else num) + parts[j + 1]
        return out
    return f"{places[0]} … {places[-1]}"


def group_warnings(warnings: list[ImportWarning]) -> list[str]:
    """Import warnings as lines for a person, near-identical ones grouped into one.

    Two warnings are near-identical when their place and their message are equal once
    every number is ignored (``samples[0].messages[3]`` and ``samples[0].messages[4]``,
    "the tool call's arguments are not in the source"). A group of ``n > 1`` is one line
    ``PLACES (n×): MESSAGE`` — ``PLACES`` names the varying index as a range or list
    (``samples[0].messages[0..10]``), ``MESSAGE`` is the first one's (prefixed ``e.g.``
    when the numbers in the messages differ). Groups keep the order of their first
    warning. Used by every importer's output (``import``, and the notices of a file
    converted in memory); ``metadata.source.warnings`` keeps each warning."""
    groups: dict[tuple[str, str], list[ImportWarning]] = {}
    for w in warnings:
        groups.setdefault((_shape(w.place)[0], _shape(w.message)[0]), []).append(w)
    lines: list[str] = []
    for members in groups.values():
        if len(members) == 1:
            lines.append(str(members[0]))
            continue
        msg = members[0].message
        if len({m.message for m in members}) > 1:
            msg = "e.g. " + msg
        places = [m.place for m in members]
        where = places[0] if len(set(places)) == 1 else _places(places)
        lines.append(f"{where} ({len(members)}×): {msg}")
    return lines


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

    def sniff_truncated(self, head: bytes) -> bool:
        """Whether ``head`` — a whole file that is JSON cut short, too short for
        :meth:`sniff` to decide — begins like this format (default: ``False``). Lets
        detection say "truncated" for a known format rather than "not recognised"."""
        return False

    def load(self, path: Path) -> list[ImportedRun]:
        """Import every run of ``path``.

        Raises:
            core.errors.FormatError: the file is damaged or not of this format (names the
                file, the place and the reason; "truncated" for a file cut short).
        """
        raise NotImplementedError
