"""Causal (labeled) comparison of a replay with its base (SPEC "Diffs, metrics, effects, audit": causal record).

For each replay, one record "interventions X at seq k → observed changes Y (outcome,
output, errors, steps)", labeled with the replay's comparability: :func:`compare_replay`
returns a :class:`ReplayComparison` holding that **causal record**, the trace diff, the
output diff, the comparison metrics (:func:`core.analysis.metrics.comparison_metrics`) and the
:class:`core.effects.ranking.Observation` the effect ranking consumes. Each part carries a diff
id (``df-<replay id>-<kind>``, kinds :data:`DIFF_KINDS`) — the evidence an effect links.

What the interventions *target* (:func:`intervention_targets`): a ``tool_result`` or
``model_response`` at a seq targets that base call; a ``model_response`` at a step
targets the base model call of that step; a tool-wide ``tool_result`` and a
``tool_policy`` target every base call of that tool (with those arguments, when given)
from the checkpoint on; ``messages`` and ``options`` target the first base model call at
or after the checkpoint (the request they edit first).

A replay that did not finish (paused, failed) or that is not comparable (comparability
``none``) has outcome ``unknown``: its record says "not observed" and it is not
evidence of an effect.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..analysis.diff import output_diff, trace_diff
from ..analysis.metrics import (
    Predicate,
    comparison_metrics,
    final_output,
    outcome_of,
    run_metrics_row,
)
from ..errors import CanonicalizationError
from ..record.canonical import args_hash as compute_args_hash
from ..record.canonical import canonical_json
from ..record.nesting import json_mode_dump
from ..record.recording import ModelRecord, Recording, ToolRecord
from ..replay.branch import (
    Branch,
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    ToolPolicyIntervention,
    ToolResultIntervention,
)
from .ranking import METRICS, Observation, Target

__all__ = [
    "DIFF_KINDS",
    "ReplayComparison",
    "compare_replay",
    "diff_id",
    "intervention_set_id",
    "intervention_targets",
]

#: the diffs stored per replay (workspace ``diffs`` table kinds)
DIFF_KINDS = ("trace", "output", "metric", "causal")

_FIELDS = ("outcome", "final_output", *METRICS)


def diff_id(replay_id: str, kind: str) -> str:
    """The id of a stored diff of a replay: ``df-<replay id>-<kind>``."""
    return f"df-{replay_id}-{kind}"


def intervention_set_id(branch: Branch) -> str:
    """``is-`` + 16 hex of the SHA-256 of the canonical JSON of the checkpoint and the
    interventions without their notes: branches that change the same thing share it."""
    doc = {
        "checkpoint": branch.checkpoint,
        "interventions": [json_mode_dump(iv.model_dump, exclude={"note"}) for iv in branch.interventions],
    }
    return "is-" + hashlib.sha256(canonical_json(doc)).hexdigest()[:16]


def _target(r: Any) -> Target:
    return Target(r.seq, r.kind, r.tool if isinstance(r, ToolRecord) else r.model)


def intervention_targets(base: Recording, branch: Branch, interventions: list[Any] | None = None) -> list[Target]:
    """The base calls the branch's interventions (or ``interventions``, of that
    branch) target (rules in the module docstring), sorted by seq, without repeats."""
    cp = branch.checkpoint
    calls = [r for r in base.records if isinstance(r, (ToolRecord, ModelRecord))]
    by_seq = {r.seq: r for r in calls}
    models = [r for r in calls if isinstance(r, ModelRecord)]
    out: dict[int, Target] = {}
    for iv in branch.interventions if interventions is None else interventions:
        hits: list[Any] = []
        if isinstance(iv, ToolResultIntervention):
            if iv.seq is not None:
                hits = [by_seq[iv.seq]] if iv.seq in by_seq else []
            else:
                want = iv.args_hash
                if want is None and iv.arguments is not None:
                    try:
                        want = compute_args_hash(iv.arguments)
                    except CanonicalizationError:
                        want = None
                for r in calls:
                    if isinstance(r, ToolRecord) and r.seq >= cp and r.tool == iv.tool:
                        if want is None:
                            hits.append(r)
                        else:
                            try:
                                if compute_args_hash(r.arguments) == want:
                                    hits.append(r)
                            except CanonicalizationError:
                                pass
        elif isinstance(iv, ModelResponseIntervention):
            if iv.seq is not None:
                hits = [by_seq[iv.seq]] if iv.seq in by_seq else []
            elif iv.step is not None and iv.step < len(models):
                hits = [models[iv.step]]
        elif isinstance(iv, (MessagesIntervention, OptionsIntervention)):
            first = next((r for r in models if r.seq >= cp), None)
            hits = [first] if first is not None else []
        elif isinstance(iv, ToolPolicyIntervention):
            hits = [r for r in calls if isinstance(r, ToolRecord) and r.seq >= cp and r.tool == iv.tool]
        for r in hits:
            out[r.seq] = _target(r)
    return [out[s] for s in sorted(out)]


@dataclass
class ReplayComparison:
    """Everything :func:`compare_replay` computed for one replay: ``causal`` (the
    causal record, JSON), ``trace`` / ``output`` / ``metric`` (JSON bodies, each with its
    ``id``) — ``None`` when the replay has no events — and the ``observation``."""

    replay_id: str
    causal: dict[str, Any]
    trace: dict[str, Any] | None
    output: dict[str, Any] | None
    metric: dict[str, Any] | None
    observation: Observation

    def diffs(self) -> dict[str, dict[str, Any]]:
        """``{kind: body}`` of the diffs to store (those that exist)."""
        out = {"causal": self.causal}
        for k in ("trace", "output", "metric"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


def _change_text(name: str, a: Any, b: Any) -> str:
    return f"{name} {a} → {b}"


def compare_replay(
    base: Recording,
    branch: Branch,
    replay: Any,
    events: Recording | None,
    *,
    predicate: Predicate | None = None,
    base_row: dict[str, Any] | None = None,
) -> ReplayComparison:
    """Compare one replay with its base and label it.

    ``replay`` is the :class:`core.replay.replay_record.ReplayRecord` (or anything with ``id``,
    ``status``, ``comparability``, ``first_divergence``, ``answers``,
    ``fixture_uses``); ``events`` its events recording (``None`` if it has none);
    ``predicate`` an outcome predicate (else ``metadata.outcome``); ``base_row`` the
    base's :func:`core.analysis.metrics.run_metrics_row` when already computed.

    The causal record (JSON): ``id``, ``replay_id``, ``branch_id``, ``checkpoint``,
    ``interventions`` (``[{index, kind, description, targets}]``), ``targets``,
    ``intervention_set``, ``status``, ``comparability`` ``{level, reasons}``,
    ``first_divergence``, ``changes`` (``outcome`` ``{base, replay, changed}``,
    ``final_output_changed``, and per metric ``{base, replay, delta}``), ``answers``,
    ``fixture_uses``, ``drift_uses``, ``live_uses``, ``observed`` (bool) and ``label``.

    Raises:
        AnalysisError: the predicate failed.
    """
    rid = replay.id
    if base_row is None:
        base_row = run_metrics_row(base, "base", predicate=predicate)
    outcome_base = base_row["outcome"]
    level = replay.comparability.level
    reasons = list(replay.comparability.reasons)
    answers = dict(replay.answers or {})
    fixture_uses = len(replay.fixture_uses or []) or answers.get("fixture", 0)
    drift_uses = answers.get("drift", 0)
    live_uses = answers.get("live", 0)
    targets = intervention_targets(base, branch)
    ivs: list[dict[str, Any]] = []
    for i, iv in enumerate(branch.interventions):
        text = iv.describe() + (f" ({iv.note})" if iv.note else "")
        ivs.append(
            {
                "index": i,
                "kind": iv.kind,
                "description": text,
                "targets": [t.seq for t in intervention_targets(base, branch, [iv])],
            }
        )
    description = "; ".join(x["description"] for x in ivs) or "no intervention"
    set_id = intervention_set_id(branch)

    observed = replay.status == "completed" and level != "none" and events is not None
    trace_body = output_body = metric_body = None
    changes: dict[str, Any] = {}
    outcome = "unknown"
    output_changed: bool | None = None
    deltas: dict[str, float] = {}
    if events is not None:
        trace = trace_diff(base, events)
        trace_body = {"id": diff_id(rid, "trace"), **trace.to_json(include_same=False)}
        od = output_diff(final_output(base), final_output(events))
        output_body = {"id": diff_id(rid, "output"), **od.to_json()}
        row = comparison_metrics(
            base,
            events,
            base_label="base",
            other_label=rid,
            predicate=predicate,
            trace=trace,
            fixture_uses=fixture_uses,
            drift_uses=drift_uses,
        ).to_dicts()[0]
        metric_body = {"id": diff_id(rid, "metric"), **row}
        if observed:
            other_outcome, _ = outcome_of(events, predicate, label=f"replay {rid}")
            outcome = other_outcome
            output_changed = od.changed
            other_row = run_metrics_row(events, rid, predicate=None)
            changes["outcome"] = {"base": outcome_base, "replay": outcome, "changed": outcome != outcome_base}
            changes["final_output_changed"] = od.changed
            for m in METRICS:
                a, b = base_row[m], other_row[m]
                changes[m] = {"base": a, "replay": b, "delta": None if a is None or b is None else b - a}
                if a is not None and b is not None:
                    deltas[m] = b - a

    if observed:
        parts = []
        oc = changes["outcome"]
        if oc["changed"]:
            parts.append(_change_text("outcome", oc["base"], oc["replay"]))
        elif oc["base"] != "unknown":
            parts.append(f"outcome unchanged ({oc['base']})")
        if output_changed:
            parts.append("final output changed")
        for m in ("tool_errors", "steps"):
            c = changes[m]
            if c["delta"]:
                parts.append(_change_text(m, c["base"], c["replay"]))
        effect_text = "; ".join(parts) or "no observed change"
    else:
        why = {
            "paused": "the replay is paused",
            "failed": "the replay failed",
            "interrupted": "the replay was interrupted (its process ended before it stored an outcome)",
        }.get(replay.status, f"the replay is {replay.status}")
        if replay.status == "completed":
            why = "the replay is not comparable with its base"
        effect_text = f"not observed: {why}"
    fd = replay.first_divergence
    fd_json = fd.model_dump(mode="json") if hasattr(fd, "model_dump") else fd
    label = f"{description} → {effect_text}  [comparability {level}]"

    diff_ids = [diff_id(rid, "causal")] + [b["id"] for b in (trace_body, output_body, metric_body) if b]
    obs = Observation(
        replay_id=rid,
        branch_id=branch.id,
        intervention_set=set_id,
        targets=tuple(targets),
        description=description,
        status=replay.status,
        comparability=level,
        outcome_base=outcome_base,
        outcome=outcome,
        final_output_changed=output_changed,
        deltas=deltas,
        drift_uses=drift_uses,
        fixture_uses=fixture_uses,
        live_uses=live_uses,
        reasons=tuple(reasons),
        diff_ids=tuple(sorted(diff_ids)),
    )
    causal = {
        "id": diff_id(rid, "causal"),
        "replay_id": rid,
        "branch_id": branch.id,
        "checkpoint": branch.checkpoint,
        "interventions": ivs,
        "targets": [t.to_json() for t in targets],
        "intervention_set": set_id,
        "status": replay.status,
        "comparability": {"level": level, "reasons": reasons},
        "first_divergence": fd_json,
        "observed": observed,
        "changes": changes,
        "answers": answers,
        "fixture_uses": fixture_uses,
        "drift_uses": drift_uses,
        "live_uses": live_uses,
        "label": label,
        "events_digest": getattr(replay, "events_digest", None),
        "observation": obs.to_json(),
    }
    return ReplayComparison(rid, causal, trace_body, output_body, metric_body, obs)


# --------------------------------------------------------------------------- workspace


def store_comparison(
    ws: Any, cmp: ReplayComparison, events: Recording | None, *, predicate: Predicate | None = None
) -> None:
    """Store a replay's diffs (``trace``, ``output``, ``metric``, ``causal``) and the
    run metrics of its events (subject: the replay id) in workspace ``ws``."""
    for kind, body in cmp.diffs().items():
        ws.put_diffs(cmp.replay_id, kind, [body])
    if events is not None:
        row = run_metrics_row(events, cmp.replay_id, predicate=predicate)
        ws.put_metrics(cmp.replay_id, {k: v for k, v in row.items() if k != "run"})


def workspace_effects(
    ws: Any,
    base_digest: str,
    *,
    predicate: Predicate | None = None,
    predicate_spec: str | None = None,
    base: Recording | None = None,
    refresh: bool = False,
) -> list[Any]:
    """Rank the effects of every replay of one base stored in workspace ``ws`` and
    store them (``effects`` table, list order = rank); returns the ranked
    :class:`core.effects.ranking.Effect` list.

    Each replay's comparison is reused from its stored ``causal`` diff when that was
    computed for the same events (``events_digest``) and the same outcome predicate
    (``predicate_spec``), else computed (:func:`compare_replay`) and stored
    (:func:`store_comparison`) — unless ``refresh`` forces recomputing all. Replays
    without an attempt outcome (``queued``, ``running``, ``interrupted``: docs/replay.md,
    "Replay states") are left out. The base's run metrics are stored under its digest.

    Raises:
        WorkspaceError: the base is not in the workspace. AnalysisError: the predicate
        failed.
    """
    from .ranking import rank_effects

    if base is None:
        base = ws.get_recording(base_digest)
    base_row = run_metrics_row(base, "base", predicate=predicate)
    ws.put_metrics(base_digest, {k: v for k, v in base_row.items() if k != "run"})
    observations: list[Observation] = []
    for record in ws.list_replays(base_digest=base_digest):
        if record.status in ("queued", "running", "interrupted"):
            continue  # no attempt outcome to compare (docs/replay.md, "Replay states")
        cached = ws.diffs(record.id, "causal")
        if cached and not refresh:
            body = cached[-1]["body"]
            if (
                body.get("events_digest") == record.events_digest
                and body.get("predicate") == predicate_spec
                and body.get("status") == record.status
                and "observation" in body
            ):
                observations.append(Observation.from_json(body["observation"]))
                continue
        branch = ws.get_branch(record.branch_id)
        events = ws.replay_events(record.id)
        cmp = compare_replay(base, branch, record, events, predicate=predicate, base_row=base_row)
        cmp.causal["predicate"] = predicate_spec
        store_comparison(ws, cmp, events, predicate=predicate)
        observations.append(cmp.observation)
    effects = rank_effects(observations)
    ws.put_effects(base_digest, [e.to_json() for e in effects])
    return effects
