"""A run's outcome beside its final output, and a branch's next to its base's.

A run's *outcome* is what its benchmark or evaluator said of it: ``metadata.outcome``
(``success`` / ``failure`` / …, with ``metadata.outcome_reason``; tau-bench's importer
derives it from the reward, which is kept in ``metadata.reward``). A replay's events have
one only when the executor evaluated its final output (``evaluate``); otherwise the
branch is *not evaluated* — never taken to have the base's outcome. The *final output*
is :func:`core.analysis.final_output.find_final_output`'s (the same rule for a base and
its replays). ``replay`` prints both side by side (docs/replay.md, "The outcome line").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..record.nesting import dumps
from ..record.recording import Recording
from .final_output import find_final_output

__all__ = ["RunOutcome", "compare_outcomes", "run_outcome"]

#: characters of the final output shown in the one-line summary
PREVIEW = 60


@dataclass(frozen=True)
class RunOutcome:
    """``outcome`` (``None``: not evaluated), ``reason`` (the evaluator's words, or the
    reward), ``final_output`` (``None``: none) and ``final_seq`` (the call that produced it)."""

    outcome: str | None
    reason: str | None
    final_output: Any
    final_seq: int | None

    def summary(self) -> str:
        """``failure (reward 0.0); final output "Your flight…"`` in one line."""
        head = self.outcome if self.outcome is not None else "not evaluated"
        if self.reason:
            head += f" ({self.reason})"
        if self.final_output is None:
            return head + "; no final output"
        return head + f"; final output {_preview(self.final_output)}"

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "final_output": self.final_output,
            "final_seq": self.final_seq,
        }


def run_outcome(rec: Recording) -> RunOutcome:
    """The outcome and final output of one recording (rules: module docstring)."""
    meta = rec.metadata if isinstance(rec.metadata, dict) else {}
    outcome = meta.get("outcome")
    reason = meta.get("outcome_reason")
    if not isinstance(reason, str) and isinstance(meta.get("reward"), (int, float)):
        reason = f"reward {meta['reward']}"
    found = find_final_output(rec)
    return RunOutcome(
        outcome if isinstance(outcome, str) else None,
        reason if isinstance(reason, str) else None,
        found.value,
        found.seq,
    )


def compare_outcomes(base: Recording, events: Recording) -> dict[str, Any]:
    """``{"base": RunOutcome, "branch": RunOutcome, "same_final_output": bool, "lines":
    [str, str]}`` — the branch's outcome next to its base's; ``lines`` are what ``replay``
    prints: ``base:   failure (reward 0.0); final output "…" (1,234 chars)`` and
    ``branch: not evaluated; final output "…" (56 chars), differs from the base's`` — and,
    when the branch's final call was answered from the recording after an earlier change
    (SWE-agent's ``submit`` asked again: the base's patch), says so."""
    b, r = run_outcome(base), run_outcome(events)
    same = b.final_output == r.final_output
    tail = ""
    if r.final_output is not None or b.final_output is not None:
        tail = ", the same as the base's" if same else ", differs from the base's"
    if _recorded_after_change(events, r.final_seq):
        # SWE-agent's `submit` asked again after a different path: same key, the base's answer
        tail += " — the recorded answer to the same call, not a new result"
    return {
        "base": b,
        "branch": r,
        "same_final_output": same,
        "lines": [f"base:   {b.summary()}", f"branch: {r.summary()}{tail}"],
    }


def _recorded_after_change(events: Recording, seq: int | None) -> bool:
    """Whether a replay's final call (``seq``) was answered from the recording although
    the branch had already changed something before it (``metadata.replay.answer_sources``
    lists every answer that was not recorded)."""
    replay = events.metadata.get("replay") if isinstance(events.metadata, dict) else None
    if seq is None or not isinstance(replay, dict):
        return False
    sources = replay.get("answer_sources")
    if not isinstance(sources, dict) or str(seq) in sources:
        return False
    return any(k.isdigit() and int(k) < seq for k in sources)


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value, orjson.OPT_SORT_KEYS, default=str).decode()
    flat = " ".join(text.split())
    if len(flat) > PREVIEW:
        flat = flat[: PREVIEW - 1] + "…"
    return f"{orjson.dumps(flat).decode()} ({len(text):,} chars)"
