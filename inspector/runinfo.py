"""Run information for the app: outcome, ground-truth annotations, planted faults,
import warnings — the structured metadata of a recording, read without any UI.

* the outcome comes from :func:`core.metrics.outcome_of`, so the app and
  ``chassis-inspector metrics`` always agree (``exit_status`` and other fields are
  shown as what they are, never as the outcome);
* :func:`marked_seqs` gives the records a recording's metadata points at: the
  Who&When annotation (``metadata.annotation.mistake_seq``, else ``mistake_step``)
  and the sample agent's planted fault (``metadata.fault.seq``);
* :func:`group_warnings` folds near-identical import warnings (same text once the
  indexes such as ``messages[3]`` are replaced by ``[*]``) into one line with a count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.metrics import outcome_of
from core.recording import Recording

#: metadata keys shown in their own section of the run-info view (not again in "other")
SECTION_KEYS = ("outcome", "outcome_reason", "annotation", "fault", "reward", "task",
                "expected_actions", "source")


@dataclass(frozen=True)
class Mark:
    """A record the metadata points at: ``seq``, a short ``label`` (``mistake`` or
    ``fault``) and the ``reason`` text to show."""

    seq: int
    label: str
    reason: str


def run_outcome(recording: Recording) -> tuple[str, str]:
    """``(outcome, source)`` as :func:`core.metrics.outcome_of` computes it (outcome is
    ``success``/``failure``/``unknown``...; source ``metadata`` or ``unknown``)."""
    return outcome_of(recording)


def marked_seqs(recording: Recording) -> list[Mark]:
    """The records the metadata marks, in seq order: the annotated mistake step of a
    Who&When case (``annotation.mistake_seq``, else an integer ``mistake_step``) and
    the planted fault of a sample-agent run (``fault.seq``). Values that are not
    integers are ignored."""
    md = recording.metadata
    out: list[Mark] = []
    ann = md.get("annotation")
    if isinstance(ann, dict):
        seq = ann.get("mistake_seq", ann.get("mistake_step"))
        if isinstance(seq, int) and not isinstance(seq, bool):
            who = ann.get("mistake_agent")
            reason = str(ann.get("mistake_reason") or "")
            out.append(Mark(seq, "mistake", (f"{who}: " if who else "") + reason))
    fault = md.get("fault")
    if isinstance(fault, dict):
        seq = fault.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            kind = fault.get("kind")
            out.append(Mark(seq, "fault", (f"{kind}: " if kind else "") + str(fault.get("description") or "")))
    return sorted(out, key=lambda m: m.seq)


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
            warnings.append(n[len("warning:"):].strip())
        else:
            notes.append(n)
    return notes, warnings


def source_warnings(recording: Recording) -> list[str]:
    """Warnings an importer stored in the recording (``metadata.source.warnings``)."""
    src = recording.metadata.get("source")
    if isinstance(src, dict) and isinstance(src.get("warnings"), list):
        return [str(w) for w in src["warnings"]]
    return []


def source_format(recording: Recording, notices: list[str]) -> str | None:
    """The format a recording was converted from: ``metadata.source.format``, else
    parsed from a "converted from X" notice; ``None`` for a native recording."""
    src = recording.metadata.get("source")
    if isinstance(src, dict) and src.get("format"):
        return str(src["format"])
    for n in notices:
        m = re.match(r"converted from (\S+)", n)
        if m:
            return m.group(1)
    return None


def open_notice(recording: Recording, notices: list[str], key: str = "i") -> str | None:
    """The one notice shown when a file opens: ``converted from X with N warnings —
    press i`` (or without the count); ``None`` when there is nothing to say."""
    notes, warnings = split_notices(notices)
    if not notes and not warnings:
        return None
    fmt = source_format(recording, notices) or "another format"
    converted = any(n.startswith("converted") for n in notes)
    head = f"converted from {fmt}" if converted else (notes[0] if notes else "opened")
    if warnings:
        n = len(warnings)
        return f"{head} with {n} warning{'s' if n != 1 else ''} — press {key} for run info"
    return f"{head} — press {key} for run info"


def other_metadata(recording: Recording) -> dict[str, Any]:
    """The metadata not shown in a section of its own (see :data:`SECTION_KEYS`)."""
    return {k: v for k, v in recording.metadata.items() if k not in SECTION_KEYS}
