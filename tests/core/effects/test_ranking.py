"""Effect ranking: ties, reliability penalties, scores, repeated attempts, order independence."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.effects.ranking import (
    DRIFT_FACTOR,
    FIXTURE_FACTOR,
    LEVEL_RELIABILITY,
    Observation,
    Target,
    effect_direction,
    rank_effects,
    replay_reliability,
)


def obs(
    rid,
    seq,
    outcome="success",
    *,
    base="failure",
    level="partial",
    status="completed",
    drift=0,
    fixtures=0,
    live=1,
    set_id=None,
    deltas=None,
    output_changed=None,
    targets=None,
):
    t = targets if targets is not None else (Target(seq, "tool", f"t{seq}"),)
    return Observation(
        replay_id=rid,
        branch_id=f"br-{rid}",
        intervention_set=set_id or f"is-{seq:04d}",
        targets=t,
        description=f"tool_result at seq {seq}",
        status=status,
        comparability=level,
        outcome_base=base,
        outcome=outcome,
        final_output_changed=(outcome != base) if output_changed is None else output_changed,
        deltas=deltas or {},
        drift_uses=drift,
        fixture_uses=fixtures,
        live_uses=live,
        diff_ids=(f"df-{rid}-causal",),
    )


def test_flip_ranks_first_and_links_evidence():
    effects = rank_effects([obs("r1", 4, "failure"), obs("r2", 8, "success"), obs("r3", 6, "failure")])
    assert [e.seq for e in effects] == [8, 4, 6]
    best = effects[0]
    assert best.rank == 1 and best.kind == "call" and best.effect == 1.0 and best.direction == "fixes"
    assert best.replay_ids == ["r2"] and best.branch_ids == ["br-r2"] and best.diff_ids == ["df-r2-causal"]
    assert best.intervention_sets == ["is-0008"]  # the set has the same replays: merged into the call
    assert [e.rank for e in effects] == [1, 2, 3]


def test_ties_break_on_earliest_seq_then_kind_then_id():
    # identical evidence except the target seq: the earlier call first
    a, b = obs("r1", 9, "success"), obs("r2", 5, "success")
    assert [e.seq for e in rank_effects([a, b])] == [5, 9]
    # a call candidate and a (multi-target) set candidate with equal figures: the call first
    multi = obs("r3", 5, "success", set_id="is-multi", targets=(Target(5, "tool", "t5"), Target(7, "tool", "t7")))
    ranked = rank_effects([multi, obs("r4", 5, "success", set_id="is-one")])
    assert [(e.kind, e.key) for e in ranked] == [("call", "call:5"), ("intervention_set", "is-multi")]
    # two multi-target sets with equal figures tie on every key but their id
    s1 = obs("r5", 3, "success", set_id="is-b", targets=(Target(3, "tool", "t"), Target(4, "tool", "u")))
    s2 = obs("r6", 3, "success", set_id="is-a", targets=(Target(3, "tool", "t"), Target(4, "tool", "u")))
    ranked = rank_effects([s1, s2])
    assert {e.key for e in ranked} == {"is-a", "is-b"}
    assert ranked[0].sort_key()[:-1] == ranked[1].sort_key()[:-1]  # tied on every key but the id
    assert [e.id for e in ranked] == sorted(e.id for e in ranked)


def test_ties_on_effect_break_on_reliability_then_output_then_metrics():
    full = obs("r1", 9, "success", level="full", live=0)
    partial = obs("r2", 3, "success")
    assert [e.seq for e in rank_effects([full, partial])] == [9, 3]  # reliability beats seq
    same_out = obs("r3", 2, "failure", output_changed=False)
    changed_out = obs("r4", 7, "failure", output_changed=True)
    assert [e.seq for e in rank_effects([same_out, changed_out])] == [7, 2]
    few = obs("r5", 2, "failure", output_changed=False, deltas={"tool_errors": 0, "steps": 1})
    many = obs("r6", 7, "failure", output_changed=False, deltas={"tool_errors": -1, "steps": 0})
    assert [e.seq for e in rank_effects([few, many])] == [7, 2]  # |tool_errors| before |steps|


def test_reliability_penalties():
    assert replay_reliability(obs("r", 1, level="full")) == 1.0
    assert replay_reliability(obs("r", 1, level="partial")) == LEVEL_RELIABILITY["partial"] == 0.8
    assert replay_reliability(obs("r", 1, level="full", drift=2)) == pytest.approx(DRIFT_FACTOR**2)
    assert replay_reliability(obs("r", 1, level="full", fixtures=3)) == pytest.approx(FIXTURE_FACTOR**3)
    assert replay_reliability(obs("r", 1, level="partial", drift=1, fixtures=1)) == pytest.approx(0.8 * 0.7 * 0.85)
    # not usable: paused, comparability none, unknown outcome → 0
    assert replay_reliability(obs("r", 1, status="paused", outcome="unknown", level="none")) == 0.0
    assert replay_reliability(obs("r", 1, level="none")) == 0.0
    assert replay_reliability(obs("r", 1, outcome="unknown")) == 0.0
    # a candidate's reliability averages over all its replays; unusable ones add 0
    (e,) = rank_effects(
        [
            obs("r1", 4, level="full", live=0),
            obs("r2", 4, level="full", live=0, drift=1),
            obs("r3", 4, status="paused", outcome="unknown", level="none"),
        ]
    )
    assert e.reliability == pytest.approx((1.0 + 0.7 + 0.0) / 3)
    assert e.replays == 3 and e.usable == 2
    text = " | ".join(e.reliability_reasons)
    assert "1 of 3 replay(s) not usable as evidence (replay paused: 1)" in text
    assert "1 call(s) answered by lenient drift (x0.7 each)" in text
    (f,) = rank_effects([obs("r1", 4, fixtures=2)])
    assert "2 call(s) answered by authored fixtures (x0.85 each)" in " | ".join(f.reliability_reasons)
    assert "live executor answers" in " | ".join(f.reliability_reasons)


def test_lower_reliability_ranks_below_an_equal_effect():
    fixture_backed = obs("r1", 2, "success", level="full", live=0, fixtures=2)
    drift_backed = obs("r2", 3, "success", level="full", live=0, drift=1)
    clean = obs("r3", 4, "success", level="full", live=0)
    assert [e.seq for e in rank_effects([fixture_backed, drift_backed, clean])] == [4, 2, 3]


def test_repeated_attempts_give_mean_and_spread():
    reps = [
        obs(f"r{i}", 6, out, deltas={"steps": s})
        for i, (out, s) in enumerate([("success", 2), ("success", 2), ("failure", 0), ("success", 4)])
    ]
    (e,) = rank_effects(reps)
    assert e.effect == 0.75 and e.spread == pytest.approx(math.sqrt(0.1875))
    assert e.observed == {"success": 3, "failure": 1} and e.direction == "fixes"
    assert e.metrics["steps"]["mean"] == 2.0 and e.metrics["steps"]["spread"] == pytest.approx(math.sqrt(2.0))
    assert e.replay_ids == ["r0", "r1", "r2", "r3"]


def test_no_usable_replay_and_unknown_base_outcome():
    (e,) = rank_effects([obs("r1", 3, "unknown", status="failed", level="none")])
    assert e.effect is None and e.spread is None and e.usable == 0 and e.reliability == 0.0
    assert "no usable replay" in e.summary()
    # base outcome unknown: ranked by the other metrics
    a = obs("r1", 3, "success", base="unknown", output_changed=False)
    b = obs("r2", 5, "success", base="unknown", output_changed=True)
    assert [x.seq for x in rank_effects([a, b])] == [5, 3]


def test_breaks_direction_and_bad_input():
    assert effect_direction("success", "failure") == "breaks"
    assert effect_direction("failure", "success") == "fixes"
    assert effect_direction("failure", "partial") == "changes"
    assert effect_direction("x", "x") == "none"
    assert rank_effects([]) == []
    with pytest.raises(ValueError, match="agree on the base outcome"):
        rank_effects([obs("r1", 1), obs("r2", 2, base="success")])
    with pytest.raises(ValueError, match="observed twice"):
        rank_effects([obs("r1", 1), obs("r1", 2)])


def test_observation_json_round_trip():
    o = obs("r1", 4, deltas={"steps": 2.0}, drift=1)
    assert Observation.from_json(o.to_json()) == o


_obs = st.builds(
    lambda seq, out, level, drift, fx, steps, tok, multi, status: obs(
        "",
        seq,
        out,
        level=level,
        drift=drift,
        fixtures=fx,
        status=status,
        deltas={"steps": steps, "input_tokens": tok},
        set_id=f"is-{seq}-{multi}",
        targets=(Target(seq, "tool", "t"),) + ((Target(seq + 1, "model", "m"),) if multi else ()),
    ),
    st.integers(0, 6),
    st.sampled_from(["success", "failure", "unknown"]),
    st.sampled_from(["full", "partial", "none"]),
    st.integers(0, 2),
    st.integers(0, 2),
    st.floats(-5, 5, allow_nan=False),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.booleans(),
    st.sampled_from(["completed", "completed", "paused", "failed"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_obs, min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_ranking_does_not_depend_on_input_order(items, rnd):
    items = [
        Observation(**{**o.__dict__, "replay_id": f"r{i:03d}", "branch_id": f"br-{i}"}) for i, o in enumerate(items)
    ]
    shuffled = list(items)
    rnd.shuffle(shuffled)
    first = [e.to_json() for e in rank_effects(items)]
    second = [e.to_json() for e in rank_effects(shuffled)]
    assert first == second
    assert [e["rank"] for e in first] == list(range(1, len(first) + 1))


def test_a_candidate_that_changed_nothing_never_looks_surer_than_a_cause():
    """The sweep of the sample's corrupted result: the fixing call stands on partly live
    answers (reliability 0.8), the calls that changed nothing on clean replays (1.0).
    Their measurements are reliable; their scores are 0, below the cause's 0.8."""
    cause = obs("r8", 8, "success")  # partial: 0.8
    nothing = [obs(f"r{s}", s, "failure", level="full", live=0) for s in (3, 4, 5, 6, 7, 9)]
    ranked = rank_effects([*nothing, cause])
    assert ranked[0].seq == 8 and ranked[0].score == pytest.approx(0.8) and ranked[0].reliability == 0.8
    for e in ranked[1:]:
        assert e.effect == 0.0 and e.reliability == 1.0 and e.score == 0.0
    assert ranked[0].to_json()["score"] == pytest.approx(0.8)
    assert "score 0.80 (reliability 0.80)" in ranked[0].summary()
    # a cause on weak evidence (two fixtures, a drift: 0.8 × 0.85² × 0.7 ≈ 0.40) still ranks first
    weak = obs("r2", 2, "success", fixtures=2, drift=1)
    ranked = rank_effects([*nothing, weak])
    assert ranked[0].seq == 2 and 0 < ranked[0].score < 0.5 and ranked[0].score > ranked[1].score


def test_the_score_weighs_the_effect_by_its_reliability():
    # effect 1.0 on evidence of reliability 0.49 (drift twice) against 0.75 on clean replays
    sure = [obs(f"a{i}", 6, out, level="full", live=0) for i, out in enumerate(["success"] * 3 + ["failure"])]
    shaky = obs("b", 3, "success", level="full", live=0, drift=2)
    ranked = rank_effects([*sure, shaky])
    assert [e.seq for e in ranked] == [6, 3]
    assert ranked[0].score == pytest.approx(0.75) and ranked[1].score == pytest.approx(0.49)
    assert ranked[1].effect > ranked[0].effect  # the higher effect, on weaker evidence, comes second


@settings(max_examples=200, deadline=None)
@given(st.lists(_obs, min_size=1, max_size=25))
def test_no_candidate_without_an_effect_ranks_above_one_with_a_score(items):
    items = [
        Observation(**{**o.__dict__, "replay_id": f"r{i:03d}", "branch_id": f"br-{i}"}) for i, o in enumerate(items)
    ]
    ranked = rank_effects(items)
    for e in ranked:
        if e.effect is None:
            assert e.score is None
        else:
            assert e.score == pytest.approx(e.effect * e.reliability) and 0.0 <= e.score <= 1.0
    scores = [e.score if e.score is not None else -1.0 for e in ranked]
    assert scores == sorted(scores, reverse=True)  # the score decides first
    causes = [i for i, e in enumerate(ranked) if e.score]
    idle = [i for i, e in enumerate(ranked) if not e.score]
    assert not causes or not idle or max(causes) < min(idle)
