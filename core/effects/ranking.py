"""Effect ranking: which intervention or call explains a change of outcome (SPEC "Diffs, metrics, effects, audit": effect ranking).

Input: one :class:`Observation` per replay of **one base** — what the replay changed
(its intervention set and the base calls it targets) and what was observed (outcome,
final output, metric deltas, comparability, where its answers came from), as
:func:`core.effects.causal.observe` builds it. Output: ranked :class:`Effect` objects.

**Candidates.** Every distinct *intervention set* (the checkpoint and the interventions,
notes left out: two branches that change the same thing are one candidate), and every
*targeted call*: a base call ``seq`` that every intervention of a replay targets (a
tool result or model response at that seq, a tool-wide override of that one call...).
A replay whose interventions target several calls is evidence for its intervention set
only. When an intervention set has exactly the same replays as a call candidate the two
are one effect (the call's), listing the set in ``intervention_sets``.

**Per replay** (only *usable* replays count: status ``completed``, comparability not
``none``, both outcomes known):

* ``flip`` = 1 when the replay's outcome differs from the base's, else 0;
* ``reliability`` = level × 0.7^drift × 0.85^fixtures, where level is 1.0 for
  ``full`` and 0.8 for ``partial`` comparability (live answers, lenient drift or a
  step limit stand in for part of the run), ``drift`` is the number of calls answered by
  lenient drift (the base's answer to a different question) and ``fixtures`` the
  number of calls answered by authored fixtures (what a person wrote, not what
  happened). Constants: :data:`LEVEL_RELIABILITY`, :data:`DRIFT_FACTOR`,
  :data:`FIXTURE_FACTOR`.

**Per candidate** (repeated attempts — several replays of one candidate — give a mean
and a spread, the population standard deviation): ``effect`` = mean flip (``None``
when no replay is usable), ``spread``; ``reliability`` = Σ replay reliability / number
of replays (an unusable replay — paused, failed, no comparability, unknown outcome —
adds 0): how far the measurement stands on what the recording and the executor did,
whatever it measured; ``score`` = ``effect`` × ``reliability`` (``None`` with the
effect): the evidence that the candidate *changes the outcome*, which the ranking uses.
A candidate that changed nothing scores 0 however reliable its replays, so it never
ranks above, or looks surer than, one that changed the outcome; the rate of
final-output change; mean and spread of the metric deltas
(:data:`METRICS`). Sums use :func:`math.fsum`, which is exactly rounded and so
independent of the order of the replays: the ranking is a function of the *set* of
observations.

**Order** (best first), each key breaking the ties of the one before:

1. ``score`` (higher first; ``None`` last);
2. ``effect`` (higher first);
3. ``reliability`` (higher first);
4. final-output change rate (higher first);
5. mean absolute delta of ``tool_errors``, then ``steps``, then tokens (input +
   output) (higher first);
6. ``spread`` (lower first: consistent effects before erratic ones);
7. number of usable replays (more evidence first);
8. the earliest target ``seq`` (lower first: the earliest call whose change flips the
   outcome is the *decisive* one, as failure-attribution research defines it);
9. candidate kind (a call before an intervention set);
10. the effect ``id`` (text order), derived from the candidate alone.

Every effect links its evidence: replay ids, branch ids and diff ids (sorted).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DRIFT_FACTOR",
    "FIXTURE_FACTOR",
    "LEVEL_RELIABILITY",
    "METRICS",
    "Effect",
    "Observation",
    "Target",
    "effect_direction",
    "rank_effects",
    "replay_reliability",
]

#: reliability of a usable replay by comparability level
LEVEL_RELIABILITY = {"full": 1.0, "partial": 0.8}
#: factor per call answered by lenient drift
DRIFT_FACTOR = 0.7
#: factor per call answered by an authored fixture
FIXTURE_FACTOR = 0.85
#: metric deltas aggregated per effect (other − base)
METRICS = ("tool_errors", "steps", "model_calls", "tool_calls", "input_tokens", "output_tokens")

_KIND_ORDER = {"call": 0, "intervention_set": 1}


@dataclass(frozen=True)
class Target:
    """A base call an intervention targets: its ``seq``, ``kind`` (``tool`` | ``model``)
    and ``name`` (tool name or model identity)."""

    seq: int
    kind: str
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class Observation:
    """What one replay of the base changed and what was observed.

    ``intervention_set``: id of the checkpoint + interventions (``is-`` + 16 hex);
    ``targets``: base calls every intervention targets (empty when an intervention
    targets none, e.g. a tool policy on a tool the base never calls); ``description``:
    the interventions in words; ``status``: the replay's status; ``comparability``:
    ``full`` | ``partial`` | ``none`` with ``reasons``; ``outcome_base`` /
    ``outcome``: labels (``unknown`` when not known; a replay that did not finish has
    ``unknown``); ``final_output_changed``: ``None`` when not finished; ``deltas``:
    ``{metric: other − base}`` for :data:`METRICS` (missing = not measured);
    ``drift_uses`` / ``fixture_uses`` / ``live_uses``: calls answered by lenient drift,
    authored fixtures, the executor live; ``diff_ids``: ids of the stored diffs of this
    replay (evidence).
    """

    replay_id: str
    branch_id: str
    intervention_set: str
    targets: tuple[Target, ...]
    description: str
    status: str
    comparability: str
    outcome_base: str
    outcome: str
    final_output_changed: bool | None = None
    deltas: Mapping[str, float] = field(default_factory=dict)
    drift_uses: int = 0
    fixture_uses: int = 0
    live_uses: int = 0
    reasons: tuple[str, ...] = ()
    diff_ids: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Completed, comparable (``full``/``partial``), and both outcomes known."""
        return (
            self.status == "completed"
            and self.comparability in LEVEL_RELIABILITY
            and self.outcome != "unknown"
            and self.outcome_base != "unknown"
        )

    @property
    def finished(self) -> bool:
        """Completed and comparable, outcome known or not (metrics still count)."""
        return self.status == "completed" and self.comparability in LEVEL_RELIABILITY

    def to_json(self) -> dict[str, Any]:
        return {
            "replay_id": self.replay_id,
            "branch_id": self.branch_id,
            "intervention_set": self.intervention_set,
            "targets": [t.to_json() for t in self.targets],
            "description": self.description,
            "status": self.status,
            "comparability": self.comparability,
            "reasons": list(self.reasons),
            "outcome_base": self.outcome_base,
            "outcome": self.outcome,
            "final_output_changed": self.final_output_changed,
            "deltas": dict(self.deltas),
            "drift_uses": self.drift_uses,
            "fixture_uses": self.fixture_uses,
            "live_uses": self.live_uses,
            "diff_ids": list(self.diff_ids),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Observation:
        """Inverse of :meth:`to_json` (raises ``KeyError``/``TypeError`` on a bad shape)."""
        return cls(
            replay_id=d["replay_id"],
            branch_id=d["branch_id"],
            intervention_set=d["intervention_set"],
            targets=tuple(Target(t["seq"], t["kind"], t["name"]) for t in d["targets"]),
            description=d["description"],
            status=d["status"],
            comparability=d["comparability"],
            outcome_base=d["outcome_base"],
            outcome=d["outcome"],
            final_output_changed=d.get("final_output_changed"),
            deltas=dict(d.get("deltas") or {}),
            drift_uses=int(d.get("drift_uses", 0)),
            fixture_uses=int(d.get("fixture_uses", 0)),
            live_uses=int(d.get("live_uses", 0)),
            reasons=tuple(d.get("reasons") or ()),
            diff_ids=tuple(d.get("diff_ids") or ()),
        )


def replay_reliability(obs: Observation) -> float:
    """Confidence of one replay as evidence (module docstring): 0 when not usable, else
    ``LEVEL_RELIABILITY[level] × DRIFT_FACTOR**drift_uses × FIXTURE_FACTOR**fixture_uses``."""
    if not obs.usable:
        return 0.0
    return LEVEL_RELIABILITY[obs.comparability] * DRIFT_FACTOR**obs.drift_uses * FIXTURE_FACTOR**obs.fixture_uses


def effect_direction(base: str, observed: str) -> str:
    """``fixes`` (failure → success), ``breaks`` (success → failure), ``changes`` (any
    other change of label), ``none`` (same label)."""
    if base == observed:
        return "none"
    if base == "failure" and observed == "success":
        return "fixes"
    if base == "success" and observed == "failure":
        return "breaks"
    return "changes"


@dataclass
class Effect:
    """One ranked candidate (JSON shape in :meth:`to_json`, documented in docs/effects.md).

    ``kind``: ``call`` | ``intervention_set``; ``key``: ``call:<seq>`` or the set id;
    ``targets``; ``description``; ``effect`` (mean flip, ``None`` when no usable
    replay) and ``spread``; ``direction`` (the most frequent direction among usable
    replays, ties in the order fixes, breaks, changes, none); ``observed`` (``{outcome:
    count}``); ``reliability`` in [0, 1] with ``reliability_reasons``; ``score`` =
    effect × reliability (``None`` with the effect), what the ranking orders by;
    ``output_changed`` (rate, ``None`` when no finished replay); ``metrics`` (``{name:
    {"mean", "spread"}}``); ``replays`` / ``usable``; evidence ids; ``intervention_sets``
    merged into a call effect; ``rank`` (1-based, set by :func:`rank_effects`).
    """

    id: str
    kind: str
    key: str
    targets: list[Target]
    description: str
    outcome_base: str
    effect: float | None
    spread: float | None
    direction: str
    observed: dict[str, int]
    reliability: float
    reliability_reasons: list[str]
    score: float | None
    output_changed: float | None
    metrics: dict[str, dict[str, float]]
    replays: int
    usable: int
    replay_ids: list[str]
    branch_ids: list[str]
    diff_ids: list[str]
    intervention_sets: list[str] = field(default_factory=list)
    rank: int = 0

    @property
    def seq(self) -> int | None:
        """The earliest target seq (``None`` without targets)."""
        return min((t.seq for t in self.targets), default=None)

    def sort_key(self) -> tuple[Any, ...]:
        """The ranking key (module docstring, "Order")."""
        m = self.metrics
        tokens = m.get("input_tokens", {}).get("abs", 0.0) + m.get("output_tokens", {}).get("abs", 0.0)
        seq = self.seq
        return (
            -(self.score if self.score is not None else -1.0),
            -(self.effect if self.effect is not None else -1.0),
            -self.reliability,
            -(self.output_changed if self.output_changed is not None else -1.0),
            -m.get("tool_errors", {}).get("abs", 0.0),
            -m.get("steps", {}).get("abs", 0.0),
            -tokens,
            self.spread if self.spread is not None else math.inf,
            -self.usable,
            seq if seq is not None else math.inf,
            _KIND_ORDER[self.kind],
            self.id,
        )

    def summary(self) -> str:
        """One line: what was changed and what it did."""
        if self.effect is None:
            what = "no usable replay"
        else:
            obs = ", ".join(f"{k} ×{v}" for k, v in sorted(self.observed.items()))
            what = (
                f"outcome {self.outcome_base} → {obs} of {self.replays} replay(s) "
                f"(effect {self.effect:.2f} ± {self.spread:.2f}, {self.direction})"
            )
        if self.score is None:
            return f"{self.description}: {what}; reliability {self.reliability:.2f}"
        return f"{self.description}: {what}; score {self.score:.2f} (reliability {self.reliability:.2f})"

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "seq": self.seq,
            "targets": [t.to_json() for t in self.targets],
            "description": self.description,
            "outcome": {
                "base": self.outcome_base,
                "observed": dict(sorted(self.observed.items())),
                "effect": self.effect,
                "spread": self.spread,
                "direction": self.direction,
            },
            "score": self.score,
            "reliability": self.reliability,
            "reliability_reasons": list(self.reliability_reasons),
            "output_changed": self.output_changed,
            "metrics": self.metrics,
            "replays": self.replays,
            "usable": self.usable,
            "evidence": {"replay_ids": self.replay_ids, "branch_ids": self.branch_ids, "diff_ids": self.diff_ids},
            "intervention_sets": self.intervention_sets,
            "summary": self.summary(),
        }


def _mean_spread(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = math.fsum(values) / n
    var = math.fsum((v - mean) ** 2 for v in values) / n
    return mean, math.sqrt(var)


def _effect_id(kind: str, key: str) -> str:
    return "ef-" + hashlib.sha256(f"{kind}\n{key}".encode()).hexdigest()[:12]


_DIRECTION_ORDER = ("fixes", "breaks", "changes", "none")


def _reliability_reasons(obs: list[Observation]) -> list[str]:
    n = len(obs)
    out: list[str] = []
    unusable = [o for o in obs if not o.usable]
    if unusable:
        why: dict[str, int] = {}
        for o in unusable:
            if o.status != "completed":
                w = f"replay {o.status}"
            elif o.comparability not in LEVEL_RELIABILITY:
                w = "comparability none"
            else:
                w = "outcome unknown"
            why[w] = why.get(w, 0) + 1
        out.append(
            f"{len(unusable)} of {n} replay(s) not usable as evidence ("
            + ", ".join(f"{w}: {c}" for w, c in sorted(why.items()))
            + ")"
        )
    partial = [o for o in obs if o.usable and o.comparability == "partial"]
    if partial:
        live = sum(1 for o in partial if o.live_uses)
        extra = f"; {live} with live executor answers, not reproducible from the recording" if live else ""
        out.append(
            f"{len(partial)} of {n} replay(s) only partially comparable (x{LEVEL_RELIABILITY['partial']}){extra}"
        )
    drift = sum(o.drift_uses for o in obs if o.usable)
    if drift:
        out.append(f"{drift} call(s) answered by lenient drift (x{DRIFT_FACTOR} each)")
    fixtures = sum(o.fixture_uses for o in obs if o.usable)
    if fixtures:
        out.append(f"{fixtures} call(s) answered by authored fixtures (x{FIXTURE_FACTOR} each)")
    return out


def _aggregate(kind: str, key: str, obs: list[Observation], targets: list[Target], description: str) -> Effect:
    usable = [o for o in obs if o.usable]
    finished = [o for o in obs if o.finished]
    base = obs[0].outcome_base
    effect = spread = None
    observed: dict[str, int] = {}
    direction = "none"
    if usable:
        effect, spread = _mean_spread([0.0 if o.outcome == o.outcome_base else 1.0 for o in usable])
        counts: dict[str, int] = {}
        for o in usable:
            observed[o.outcome] = observed.get(o.outcome, 0) + 1
            d = effect_direction(o.outcome_base, o.outcome)
            counts[d] = counts.get(d, 0) + 1
        direction = max(_DIRECTION_ORDER, key=lambda d: (counts.get(d, 0), -_DIRECTION_ORDER.index(d)))
    reliability = math.fsum(replay_reliability(o) for o in obs) / len(obs)
    changed = [o for o in finished if o.final_output_changed is not None]
    output_changed = (
        math.fsum(1.0 if o.final_output_changed else 0.0 for o in changed) / len(changed) if changed else None
    )
    metrics: dict[str, dict[str, float]] = {}
    for m in METRICS:
        vals = [float(o.deltas[m]) for o in finished if o.deltas.get(m) is not None]
        if vals:
            mean, sd = _mean_spread(vals)
            metrics[m] = {"mean": mean, "spread": sd, "abs": math.fsum(abs(v) for v in vals) / len(vals)}
    return Effect(
        id=_effect_id(kind, key),
        kind=kind,
        key=key,
        targets=targets,
        description=description,
        outcome_base=base,
        effect=effect,
        spread=spread,
        direction=direction,
        observed=observed,
        reliability=reliability,
        reliability_reasons=_reliability_reasons(obs),
        score=None if effect is None else effect * reliability,
        output_changed=output_changed,
        metrics=metrics,
        replays=len(obs),
        usable=len(usable),
        replay_ids=sorted(o.replay_id for o in obs),
        branch_ids=sorted({o.branch_id for o in obs}),
        diff_ids=sorted({d for o in obs for d in o.diff_ids}),
    )


def rank_effects(observations: Iterable[Observation]) -> list[Effect]:
    """Rank the candidates of one base's replays (rules in the module docstring);
    returns effects best first with ``rank`` set (1-based).

    The result depends only on the set of observations, not their order. Raises
    ``ValueError`` when the observations are of bases with different outcomes (they
    must all describe replays of one base) or two observations share a replay id.
    """
    obs = sorted(observations, key=lambda o: o.replay_id)
    if not obs:
        return []
    if len({o.outcome_base for o in obs}) > 1:
        raise ValueError(
            "observations of one base must agree on the base outcome: "
            + ", ".join(sorted({o.outcome_base for o in obs}))
        )
    for a, b in itertools.pairwise(obs):
        if a.replay_id == b.replay_id:
            raise ValueError(f"replay {a.replay_id} is observed twice")

    by_set: dict[str, list[Observation]] = {}
    by_call: dict[int, list[Observation]] = {}
    call_target: dict[int, Target] = {}
    for o in obs:
        by_set.setdefault(o.intervention_set, []).append(o)
        seqs = {t.seq for t in o.targets}
        if len(seqs) == 1:
            t = min(o.targets, key=lambda t: (t.kind, t.name))
            by_call.setdefault(t.seq, []).append(o)
            call_target.setdefault(t.seq, t)

    effects: list[Effect] = []
    call_replays: dict[tuple[str, ...], Effect] = {}
    for seq in sorted(by_call):
        group = by_call[seq]
        t = call_target[seq]
        descs = sorted({o.description for o in group})
        sets = {o.intervention_set for o in group}
        desc = f"call {seq} ({t.kind} {t.name})"
        if len(sets) > 1:
            desc += f": {len(sets)} intervention sets"
        else:
            desc += f": {descs[0]}" + (f" (+{len(descs) - 1} with other notes)" if len(descs) > 1 else "")
        e = _aggregate("call", f"call:{seq}", group, [t], desc)
        effects.append(e)
        call_replays[tuple(e.replay_ids)] = e
    for set_id in sorted(by_set):
        group = by_set[set_id]
        ids = tuple(sorted(o.replay_id for o in group))
        merged = call_replays.get(ids)
        if merged is not None:
            merged.intervention_sets.append(set_id)
            continue
        targets = sorted({t for o in group for t in o.targets}, key=lambda t: (t.seq, t.kind, t.name))
        desc = f"intervention set {set_id}: {group[0].description}"
        effects.append(_aggregate("intervention_set", set_id, group, targets, desc))
    for e in effects:
        e.intervention_sets.sort()
    effects.sort(key=Effect.sort_key)
    for i, e in enumerate(effects, 1):
        e.rank = i
    return effects
