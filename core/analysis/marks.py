"""Records a recording's metadata marks: the annotated mistake step of a failure-attribution
case (Who&When ground truth) and the planted fault of a sample-agent run.

The app's timeline (``⚑ mistake`` in the status column, the header, ``m`` to jump) and the
``timeline`` command show the same marks, from :func:`record_marks`. A mark names a record
the recording holds: an annotation pointing outside the run (a ``mistake_step`` past the
last step — the importer warns about it) marks nothing, so no row or header ever shows a
step that is not there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..record.jsonvalues import display_text
from ..record.recording import Recording
from .placeholders import shown_value


def _text(value: Any) -> str:
    """A metadata value as the text of a mark: a string as it is, an invalid-Unicode
    tag as its text (U+FFFD in each bad place), anything else as compact JSON."""
    if value is None or value == "":
        return ""
    value = shown_value(value)
    return value if isinstance(value, str) else display_text(value)


__all__ = ["Mark", "record_marks"]


@dataclass(frozen=True)
class Mark:
    """A record the metadata points at: ``seq``, a short ``label`` (``mistake`` or
    ``fault``) and the ``reason`` text to show."""

    seq: int
    label: str
    reason: str


def _seq(value: Any, seqs: set[int]) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value in seqs else None


def record_marks(recording: Recording) -> list[Mark]:
    """The records the metadata marks, in seq order: ``annotation.mistake_seq`` (else an
    integer ``annotation.mistake_step``) and ``fault.seq`` — each only when it is the seq
    of a record of ``recording``; anything else (not an integer, outside the run) marks
    nothing."""
    md = recording.metadata if isinstance(recording.metadata, dict) else {}
    seqs = {r.seq for r in recording.records}
    out: list[Mark] = []
    ann = md.get("annotation")
    if isinstance(ann, dict):
        seq = _seq(ann.get("mistake_seq"), seqs)
        if seq is None and "mistake_seq" not in ann:
            seq = _seq(ann.get("mistake_step"), seqs)
        if seq is not None:
            who = ann.get("mistake_agent")
            reason = _text(ann.get("mistake_reason"))
            out.append(Mark(seq, "mistake", (f"{who}: " if who else "") + reason))
    fault = md.get("fault")
    if isinstance(fault, dict):
        seq = _seq(fault.get("seq"), seqs)
        if seq is not None:
            kind = fault.get("kind")
            out.append(Mark(seq, "fault", (f"{kind}: " if kind else "") + _text(fault.get("description"))))
    return sorted(out, key=lambda m: m.seq)
