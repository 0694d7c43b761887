"""The importer contract: every source format is one module with one :class:`Importer`.

An importer turns a source file (Inspect AI log, SWE-agent trajectory, vcrpy cassette,
...) into one or more format-v1 :class:`~core.record.recording.Recording` objects, each with
its list of :class:`ImportWarning` (what could not be mapped, what was redacted or
approximated). Importers are plain classes with no UI; the registry and detection live
in :mod:`core.importers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..record.recording import Recording

#: Stable codes of import warnings, from the message an importer wrote: the first
#: ``(code, words)`` whose words occur in the message wins; anything else is
#: ``unmapped``. A frontend may key on the code (filtering, icons, counts); the message
#: is the text for a person.
WARNING_CODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("truncated", ("ends early", "cut short")),
    ("redacted", ("redacted",)),
    ("timestamp-assumed-utc", ("no UTC offset",)),
    ("usage-dropped", ("token usage",)),
    ("big-integer", ("$bigint", "2**53")),
    ("call-id-renamed", ("is used by more than one call", "has no id; recorded as")),
    ("arguments-raw", ("arguments",)),
    ("call-without-result", ("has no recorded result", "has no observation")),
    ("result-without-call", ("answers no",)),
    ("paired-by-position", ("paired by position",)),
    ("extra-choices", ("only the first",)),
    ("unknown-value", ("'unknown'",)),
    ("not-mapped", ("not mapped",)),
    ("skipped", ("skipped", "ignored")),
    ("kept-raw", ("kept raw", "kept as text", "stored as JSON text", "kept as written")),
)


def warning_code(message: str) -> str:
    """The stable code of a warning message (see :data:`WARNING_CODES`)."""
    for code, words in WARNING_CODES:
        if any(w in message for w in words):
            return code
    return "unmapped"


@dataclass(frozen=True)
class ImportWarning:
    """Something an importer could not map exactly.

    ``place`` locates it in the *source* (e.g. ``samples[0].events[12]`` or
    ``interactions[3].response.body``; ``None`` or ``""`` when it concerns the file as
    a whole); ``message`` says what happened, in plain words (no command names);
    ``code`` is a short stable slug (:func:`warning_code` of the message unless given);
    ``count`` is how many near-identical warnings this one stands for (1 as an importer
    raises it; more once folded by :func:`fold_warnings`, ``place`` then naming them
    all).
    """

    place: str | None
    message: str
    code: str = ""
    count: int = 1

    def __post_init__(self) -> None:
        if not self.code:
            object.__setattr__(self, "code", warning_code(self.message))

    def __str__(self) -> str:
        return f"{self.place or ''}: {self.message}"


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


def fold_warnings(warnings: list[ImportWarning]) -> list[ImportWarning]:
    """Near-identical warnings folded into one each, in the order of their first.

    Two warnings are near-identical when their place and their message are equal once
    every number is ignored (``samples[0].messages[3]`` and ``samples[0].messages[4]``,
    "the tool call's arguments are not in the source"). A group of ``n > 1`` becomes one
    warning with ``count`` ``n``, the first one's ``code``, a ``place`` naming the
    varying index as a range or list (``samples[0].messages[0..10]``, else
    ``FIRST … LAST``) and the first one's ``message`` (prefixed ``e.g.`` when the
    numbers in the messages differ). Counts already folded add up."""
    groups: dict[tuple[str, str], list[ImportWarning]] = {}
    for w in warnings:
        groups.setdefault((_shape(w.place or "")[0], _shape(w.message)[0]), []).append(w)
    out: list[ImportWarning] = []
    for members in groups.values():
        if len(members) == 1:
            out.append(members[0])
            continue
        msg = members[0].message
        if len({m.message for m in members}) > 1:
            msg = "e.g. " + msg
        places = [m.place or "" for m in members]
        where = places[0] if len(set(places)) == 1 else _places(places)
        out.append(ImportWarning(where or None, msg, members[0].code, sum(m.count for m in members)))
    return out


def warning_line(w: ImportWarning) -> str:
    """One warning as a line for a person: ``PLACE: MESSAGE``, or ``PLACES (n×): MESSAGE``
    for a folded one."""
    if w.count > 1:
        return f"{w.place or ''} ({w.count}×): {w.message}"
    return str(w)


def group_warnings(warnings: list[ImportWarning]) -> list[str]:
    """Import warnings as lines for a person, near-identical ones grouped into one:
    :func:`warning_line` of each of :func:`fold_warnings`. Used by every importer's
    output (``import``, and the notices of a file converted in memory);
    ``metadata.source.warnings`` keeps each warning."""
    return [warning_line(w) for w in fold_warnings(warnings)]


@dataclass
class ImportedRun:
    """One run imported from a source: the recording, its id in the source, warnings.

    ``parent``: the id of the run of the same source this one belongs to — a sub-agent's
    run, or a recorded alternative path of a session — else ``None`` (a top-level run).
    ``forks``: the recorded alternative paths that leave this run
    (:class:`core.importers.claude_code.RecordedFork`: each names its run, the last
    record both share and the prompts where they part); data only — storing them as
    branches is the workspace's (:mod:`core.recorded_forks`).
    """

    run_id: str
    recording: Recording
    warnings: list[ImportWarning] = field(default_factory=list)
    incomplete: bool = False
    parent: str | None = None
    forks: list[Any] = field(default_factory=list)


class Importer:
    """Base class of importers.

    Subclasses set ``name`` (the ``--from`` value), ``description`` and implement
    :meth:`sniff` and :meth:`load`. A format whose agent states its final output in a
    call of its own (SWE-agent's ``submit``, OpenHands' ``finish``) declares that rule in
    ``final_output_rule`` (the shape :mod:`core.analysis.final_output` reads); the
    importer stores it in every run's ``metadata.final_output_rule``, so the audit, the
    diff, the metrics and knockout all find the same final output. ``None``: the default
    rule (the last model response).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    final_output_rule: ClassVar[dict[str, Any] | None] = None

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
