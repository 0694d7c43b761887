"""Run information for the app: outcome, ground-truth annotations, planted faults,
import warnings — the structured metadata of a recording, read without any UI.

* the outcome comes from :func:`core.analysis.metrics.outcome_of`, so the app and
  ``chassis-inspector metrics`` always agree (``exit_status`` and other fields are
  shown as what they are, never as the outcome);
* :func:`marked_seqs` gives the records a recording's metadata points at: the
  Who&When annotation (``metadata.annotation.mistake_seq``, else ``mistake_step``)
  and the sample agent's planted fault (``metadata.fault.seq``) — records of the run
  only (:mod:`core.analysis.marks`, which the ``timeline`` command uses too);
* :func:`group_warnings` folds near-identical import warnings (same text once the
  indexes such as ``messages[3]`` are replaced by ``[*]``) into one line with a count;
* the source format, the notes and the import warnings of a converted file come from
  the :class:`core.importers.Opened` the loader got (:func:`opened_notes`,
  :func:`source_format`, :func:`warning_texts`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.analysis.marks import Mark, record_marks
from core.analysis.metrics import outcome_of
from core.importers.opened import Opened
from core.importers.opened import run_score as _core_run_score
from core.record.recording import Recording

#: metadata keys shown in their own section of the run-info view (not again in "other")
SECTION_KEYS = ("outcome", "outcome_reason", "annotation", "fault", "reward", "task", "expected_actions", "source")


def run_outcome(recording: Recording) -> tuple[str, str]:
    """``(outcome, source)`` as :func:`core.analysis.metrics.outcome_of` computes it (outcome is
    ``success``/``failure``/``unknown``...; source ``metadata`` or ``unknown``)."""
    return outcome_of(recording)


def run_error(recording: Recording) -> str | None:
    """The error that ended the run, as the source recorded it (``metadata.error``:
    Inspect AI's sample error is ``{message, traceback, ...}``, its ``message`` is
    taken; a string as is), or ``None``. Recorded text: shown as data."""
    err = recording.metadata.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        return msg if isinstance(msg, str) and msg else None
    return err if isinstance(err, str) and err else None


def run_score(recording: Recording) -> str | None:
    """The run's score as one short line (:func:`core.importers.run_score`: Inspect's
    scores, tau-bench's reward), or ``None``."""
    return _core_run_score(recording)


def marked_seqs(recording: Recording) -> list[Mark]:
    """The records the metadata marks, in seq order (:func:`core.analysis.marks.record_marks`:
    the annotated mistake step of a Who&When case and the planted fault of a sample-agent
    run, each only when it is a record of the run), so the app and the ``timeline``
    command show the same marks."""
    return record_marks(recording)


_INDEX = re.compile(r"\[\d+\]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")


def warning_group_key(text: str) -> str:
    """The text of a warning with list indexes (``[3]``) and bare numbers replaced, so
    warnings that differ only there group together."""
    return _NUMBER.sub("N", _INDEX.sub("[*]", text))


def group_warnings(warnings: list[str]) -> list[tuple[str, int]]:
    """Near-identical warnings folded: ``[(text, count)]`` in first-seen order; the text
    is the first warning of its group (or its pattern with ``[*]`` when the group has
    several)."""
    groups: dict[str, list[str]] = {}
    for w in warnings:
        groups.setdefault(warning_group_key(w), []).append(w)
    out = []
    for items in groups.values():
        out.append((items[0] if len(items) == 1 else _INDEX.sub("[*]", items[0]), len(items)))
    return out


def split_notices(notices: list[str]) -> tuple[list[str], list[str]]:
    """Split loader notices into ``(conversion notes, warnings)`` (a warning starts
    with ``warning:``; the prefix is removed)."""
    notes, warnings = [], []
    for n in notices:
        if n.startswith("warning:"):
            warnings.append(n[len("warning:") :].strip())
        else:
            notes.append(n)
    return notes, warnings


def source_warnings(recording: Recording) -> list[str]:
    """Warnings an importer stored in the recording (``metadata.source.warnings``)."""
    src = recording.metadata.get("source")
    if isinstance(src, dict) and isinstance(src.get("warnings"), list):
        return [str(w) for w in src["warnings"]]
    return []


def recorder_notes(recording: Recording) -> list[str]:
    """The notes on a recording made by ``record`` (docs/proxy.md): incomplete, and why
    (the command crashed, timed out or was interrupted); requests forwarded, not recorded."""
    rec = recording.metadata.get("recorder")
    if not isinstance(rec, dict):
        return []
    notes = []
    if recording.metadata.get("incomplete") is True:
        reason = rec.get("reason")
        notes.append("this recording is incomplete" + (f": {reason}" if isinstance(reason, str) else ""))
    unrecorded = rec.get("unrecorded")
    if isinstance(unrecorded, list) and unrecorded:
        notes.append(f"{len(unrecorded)} request(s) were forwarded but not recorded (metadata.recorder.unrecorded)")
    return notes


def opened_notes(opened: Opened, path: Path) -> list[str]:
    """The app's notes on the file at ``path`` converted in memory (none for a native
    recording): converted from which format (and how to save it), which run among how
    many (its index in run order, as ``--run`` takes it; ``p`` opens the run picker),
    incomplete."""
    if not opened.converted:
        return recorder_notes(opened.recording)
    several = len(opened.runs) > 1
    run = f" --run {opened.run_index}" if several else ""
    notes = [
        f"converted from {opened.source_format} ({path.name}) in memory; "
        f"save it with: chassis-inspector import {path}{run} -o OUT"
    ]
    if several:
        notes.append(
            f"{path.name} holds {len(opened.runs)} runs; showing run {opened.run_id!r} "
            f"({opened.run_index} of 0..{len(opened.runs) - 1}); p: pick another run"
        )
    if opened.incomplete:
        notes.append("this run is incomplete (the source was cut short)")
    return notes


def warning_texts(recording: Recording, notices: list[str], opened: Opened | None = None) -> list[str]:
    """The import warnings to list, one ``PLACE: MESSAGE`` per warning raised: those of
    ``opened`` (:attr:`core.importers.Opened.all_warnings`), else the ``warning:``
    notices, else the ones stored in the recording (:func:`source_warnings`)."""
    if opened is not None and opened.all_warnings:
        return [str(w) for w in opened.all_warnings]
    return split_notices(notices)[1] or source_warnings(recording)


def source_format(recording: Recording, opened: Opened | None = None) -> str | None:
    """The format a recording was converted from: ``opened.source_format``, else
    ``metadata.source.format``; ``None`` for a native recording."""
    if opened is not None:
        return opened.source_format if opened.converted else None
    src = recording.metadata.get("source")
    if isinstance(src, dict) and src.get("format"):
        return str(src["format"])
    return None


def open_notice(recording: Recording, notices: list[str], key: str = "i", opened: Opened | None = None) -> str | None:
    """The one notice shown when a file opens: ``converted from X with N warnings —
    press i`` (or without the count; the first note when the format is not known);
    ``None`` when there is nothing to say. ``N`` counts every warning raised
    (:attr:`core.importers.Opened.warning_count`, else the ``warning:`` notices)."""
    notes, warnings = split_notices(notices)
    n = opened.warning_count if opened is not None else len(warnings)
    if not notes and not n:
        return None
    fmt = source_format(recording, opened)
    converted = opened.converted if opened is not None else any(x.startswith("converted") for x in notes)
    head = f"converted from {fmt}" if converted and fmt else (notes[0] if notes else "opened")
    if n:
        return f"{head} with {n} warning{'s' if n != 1 else ''} — press {key} for run info"
    return f"{head} — press {key} for run info"


def other_metadata(recording: Recording) -> dict[str, Any]:
    """The metadata not shown in a section of its own (see :data:`SECTION_KEYS`)."""
    return {k: v for k, v in recording.metadata.items() if k not in SECTION_KEYS}
