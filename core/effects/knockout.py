"""Knockout analysis for the audit (SPEC "Diffs, metrics, effects, audit": knockout): what happens to the outcome when
one call of a run answers nothing.

:class:`ReplayKnockout` is the :class:`core.analysis.audit.KnockoutRunner` the audit uses when an
executor is wired (``chassis-inspector audit FILE --executor M:F``): for a call ``seq``
it makes a branch at that call whose intervention is the ``knockout`` answer of
:mod:`core.effects.sweep` (a tool call answers an error ``KnockedOut``; a model call answers an
empty assistant message without tool calls), replays it in memory through the replay
engine with the executor answering live what the recording cannot (policy
``model=live, tool=live``; ``model=live`` only for the provider executor, which runs no
tools), and reports the replay's outcome (the executor's evaluator's
``metadata.outcome``, or a predicate) and whether the final output changed — by the one
rule of :mod:`core.analysis.final_output` the audit and the diff use (the replay events
carry the base's declared rule: SWE-agent's submitted patch, OpenHands' ``finish``). Nothing
is stored; no call runs live before the knocked-out one.

A call whose knockout changes the outcome was *necessary* for it; one whose knockout
changes nothing was not (the agent recovered, or never used it).
"""

from __future__ import annotations

from typing import Any

from ..analysis.audit import KnockoutResult
from ..analysis.diff import output_diff
from ..analysis.metrics import Predicate, final_output, outcome_of
from ..errors import BranchError
from ..record.recording import Recording
from ..replay.branch import new_branch
from ..replay.engine import ReplayEngine
from .sweep import SweepError, _runs_tools, _Skip, candidate_intervention, sweep_policy

__all__ = ["ReplayKnockout", "knockout_runner"]


class ReplayKnockout:
    """Knocks calls out by replaying (see module docstring).

    Args:
        executor: a loaded :class:`core.replay.boundary.Executor`.
        executor_name: its ``module:function`` (recorded in the events).
        predicate: an outcome predicate (else the events' ``metadata.outcome``).
        live_model: the model live calls ask instead of the recorded one (policy
            ``live_model``; needed by the provider executor on an ``unknown``-model run).
    """

    def __init__(
        self,
        executor: Any,
        executor_name: str | None = None,
        *,
        predicate: Predicate | None = None,
        live_model: str | None = None,
    ) -> None:
        self.executor = executor
        self.executor_name = executor_name
        self.predicate = predicate
        self.live_model = live_model

    def knockout(self, recording: Recording, seq: int) -> KnockoutResult:
        """Replay ``recording`` with call ``seq`` knocked out; the
        :class:`~core.analysis.audit.KnockoutResult` has the replay's ``outcome`` (``unknown`` when
        it did not finish), ``final_output_changed``, and in ``detail`` the base outcome,
        the replay status and comparability."""
        base_outcome, _ = outcome_of(recording, self.predicate, label="base")
        try:
            iv = candidate_intervention(recording, seq, "knockout")
            policy = sweep_policy(True, runs_tools=_runs_tools(self.executor), live_model=self.live_model)
            branch = new_branch(
                recording, "<audit>", at=seq, interventions=[iv], policy=policy, label=f"knockout seq {seq}"
            )
        except (_Skip, BranchError) as exc:
            return KnockoutResult(seq, "unknown", False, f"not run: {exc}")
        out = ReplayEngine(
            recording, branch, replay_id=f"knockout-{seq}", executor=self.executor, executor_name=self.executor_name
        ).run()
        if out.status != "completed" or out.comparability.level == "none":
            why = out.error.message if out.error else "; ".join(out.comparability.reasons)
            return KnockoutResult(
                seq, "unknown", False, f"replay {out.status}, comparability {out.comparability.level}: {why}"
            )
        outcome, _ = outcome_of(out.events, self.predicate, label=f"knockout of seq {seq}")
        changed = output_diff(final_output(recording), final_output(out.events)).changed
        verdict = "outcome changed" if outcome != base_outcome else "outcome unchanged"
        return KnockoutResult(
            seq,
            outcome,
            changed,
            f"{verdict} ({base_outcome} → {outcome}); comparability {out.comparability.level}, {out.steps} step(s)",
            outcome_changed=outcome != base_outcome,
        )


def knockout_runner(
    spec: str,
    recording: Recording,
    *,
    predicate: Predicate | None = None,
    trust_executor: bool = False,
    live_model: str | None = None,
) -> ReplayKnockout:
    """A :class:`ReplayKnockout` for ``--executor SPEC`` (``recorded`` = the recording's
    ``metadata.executor``, run only with ``trust_executor``; ``module:function``; or a
    built-in ``provider:openai`` / ``provider:anthropic``, then only model calls go live,
    as ``live_model`` when given).
    Raises SweepError when the executor cannot be resolved, is not consented to, or
    cannot be loaded."""
    from ..replay.replays import resolve_executor

    try:
        executor, name = resolve_executor(spec, recording, trust_executor=trust_executor)
    except BranchError as exc:
        raise SweepError(str(exc)) from None
    return ReplayKnockout(executor, name, predicate=predicate, live_model=live_model)
