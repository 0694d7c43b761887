"""A run's outcome beside its final output, and a branch's next to its base's.

A run's *outcome* is what its benchmark or evaluator said of it: ``metadata.outcome``
(``success`` / ``failure`` / …, with ``metadata.outcome_reason``; tau-bench's importer
derives it from the reward, which is kept in ``metadata.reward``). A replay's events have
one only when the executor evaluated its final output (``evaluate``); otherwise the
branch is *not evaluated* — never taken to have the base's outcome. The *final output*
is :func:`core.analysis.final_output.find_final_output`'s (the same rule for a base and
its replays). ``replay`` prints both side by side (docs/replay.md, "Reading a replay").
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
    """``{"base": RunOutcome, "branch": RunOutcome, "same_final_output": bool, "line": str}``
    — the branch's outcome next to its base's; ``line`` is the one-line text ``replay``
    prints: ``base failure (reward 0.0); final output "…" · branch not evaluated; final
    output "…" (differs from the base's)``."""
    b, r = run_outcome(base), run_outcome(events)
    same = b.final_output == r.final_output
    tail = ""
    if r.final_output is not None or b.final_output is not None:
        tail = " (same as the base's)" if same else " (differs from the base's)"
    return {
        "base": b,
        "branch": r,
        "same_final_output": same,
        "line": f"base {b.summary()} · branch {r.summary()}{tail}",
    }


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value, orjson.OPT_SORT_KEYS, default=str).decode()
    flat = " ".join(text.split())
    if len(flat) > PREVIEW:
        flat = flat[: PREVIEW - 1] + "…"
    return f"{orjson.dumps(flat).decode()} ({len(text):,} chars)"
