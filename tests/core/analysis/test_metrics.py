"""Metrics of runs and comparisons (polars frames)."""

from __future__ import annotations

import polars as pl
import pytest

from core.analysis.metrics import (
    COMPARISON_SCHEMA,
    RUN_SCHEMA,
    comparison_metrics,
    final_output,
    load_predicate,
    load_price_table,
    normalize_outcome,
    run_metrics,
    step_of,
    validate_price_table,
)
from core.errors import AnalysisError
from core.record.recording import Recording
from tests.builders import ROOT, TESTS, model, msg, recording, tool

DATA = TESTS / "data" / "analysis"


def known_run(**metadata) -> Recording:
    """2 model calls (10+20 in, 5+7 out tokens), 3 tool calls (one error), durations and
    timestamps 0.0 s → 2.5 s."""
    calls = [
        model(
            0,
            [msg("user", "go")],
            msg("assistant", None, tool_calls=[("c1", "a", {}), ("c2", "b", {})]),
            usage=(10, 5),
            duration=1.0,
        ),
        tool(1, "a", {}, "ra", call_id="c1", duration=0.25),
        tool(2, "b", {}, None, error="boom", call_id="c2", duration=0.5),
        tool(3, "c", {}, "rc", duration=0.25),
        model(4, [msg("user", "go")], "the answer", usage=(20, 7), duration=0.5),
    ]
    for r, at in zip(
        calls,
        [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:01Z",
            "2026-01-01T00:00:01.500Z",
            "2026-01-01T00:00:02Z",
            "2026-01-01T00:00:02.500Z",
        ],
    ):
        r.at = at
    return recording(*calls, metadata=metadata)


def test_run_metrics_known_numbers():
    df = run_metrics([("known", known_run(outcome=True))], prices={"m": {"input": 1.0, "output": 2.0}})
    assert df.schema == pl.Schema(RUN_SCHEMA)
    (row,) = df.to_dicts()
    assert row == {
        "run": "known",
        "records": 5,
        "steps": 2,
        "model_calls": 2,
        "tool_calls": 3,
        "tool_errors": 1,
        "model_errors": 0,
        "input_tokens": 30,
        "output_tokens": 12,
        "duration_seconds": 2.5,
        "wall_seconds": 2.5,
        "cost": pytest.approx((30 * 1.0 + 12 * 2.0) / 1e6),
        "outcome": "success",
        "outcome_source": "metadata",
        "final_output": "the answer",
    }


def test_cost_is_null_without_a_price_for_a_model():
    assert run_metrics([known_run()]).item(0, "cost") is None
    assert run_metrics([known_run()], prices={"other": {"input": 1, "output": 1}}).item(0, "cost") is None
    assert run_metrics([known_run()], prices={"*": {"input": 1e6, "output": 0}}).item(0, "cost") == 30.0


def test_unrecorded_tokens_and_durations_are_null_not_zero():
    """tau-bench / Who&When / SWE-agent record no usage nor durations: null, not 0."""
    rec = recording(model(0, [msg("user", "go")], "answer"), tool(1, "t", {}, "r"))
    row = run_metrics([rec]).row(0, named=True)
    assert row["input_tokens"] is None and row["output_tokens"] is None
    assert row["duration_seconds"] is None and row["cost"] is None
    # a recorded zero is still zero
    zero = recording(model(0, [msg("user", "go")], "answer", usage=(0, 0), duration=0.0))
    row = run_metrics([zero]).row(0, named=True)
    assert (row["input_tokens"], row["output_tokens"], row["duration_seconds"]) == (0, 0, 0.0)


def test_run_totals_from_metadata_when_no_call_recorded_usage():
    totals = {"input_tokens": 122612, "output_tokens": 1369, "cost": 1.26719, "source": "swe_agent model_stats"}
    rec = recording(model(0, [msg("user", "go")], "answer"), metadata={"usage_totals": totals})
    row = run_metrics([rec]).row(0, named=True)
    assert (row["input_tokens"], row["output_tokens"], row["cost"]) == (122612, 1369, 1.26719)
    # per-call usage wins over the totals; a price table prices tokens, not the recorded cost
    assert run_metrics([known_run(usage_totals=totals)]).item(0, "input_tokens") == 30
    assert run_metrics([rec], prices={"*": {"input": 1, "output": 1}}).item(0, "cost") is None
    bad = recording(model(0, [msg("user", "go")], "a"), metadata={"usage_totals": {"input_tokens": "x"}})
    assert run_metrics([bad]).item(0, "input_tokens") is None


def test_swe_agent_model_stats_become_usage_totals():
    from core.importers.swe_agent import usage_totals_from_model_stats

    rec = Recording.load(ROOT / "sample_recordings" / "swe-agent-pydicom-1458.json")
    assert rec.metadata["usage_totals"] == {
        "input_tokens": 122612,
        "output_tokens": 1369,
        "cost": 1.26719,
        "source": "swe_agent model_stats",
    }
    row = run_metrics([rec]).row(0, named=True)
    assert (row["input_tokens"], row["output_tokens"], row["duration_seconds"]) == (122612, 1369, None)
    assert usage_totals_from_model_stats({"tokens_sent": True, "api_calls": 3}) is None
    assert usage_totals_from_model_stats(None) is None


def test_metrics_on_a_sample_recording():
    rec = Recording.load(DATA / "sample-agent-fault-corrupted-result.json")
    row = run_metrics([("s", rec)]).row(0, named=True)
    # counted by hand from the file: 3 model calls, 2 tool calls (lookup_customer, get_order)
    assert {
        k: row[k]
        for k in (
            "records",
            "steps",
            "model_calls",
            "tool_calls",
            "tool_errors",
            "input_tokens",
            "output_tokens",
            "outcome",
            "outcome_source",
        )
    } == {
        "records": 12,
        "steps": 3,
        "model_calls": 3,
        "tool_calls": 2,
        "tool_errors": 0,
        "input_tokens": 76 + 90 + 139,
        "output_tokens": 33 + 30 + 26,
        "outcome": "failure",
        "outcome_source": "metadata",
    }
    assert '"refund":null' in row["final_output"]


def test_comparison_of_sample_runs():
    base = Recording.load(DATA / "sample-agent-success.json")
    faulty = Recording.load(DATA / "sample-agent-fault-corrupted-result.json")
    df = comparison_metrics(base, faulty, base_label="ok", other_label="faulty", fixture_uses=2)
    assert df.schema == pl.Schema(COMPARISON_SCHEMA)
    row = df.row(0, named=True)
    assert row["divergence_base_seq"] == faulty.metadata["fault"]["seq"] == 6
    assert row["divergence_dimension"] == "tool result"
    assert row["divergence_step"] == 1
    assert row["outcome_base"] == "success" and row["outcome_other"] == "failure" and row["outcome_changed"]
    assert row["final_output_changed"] is True
    assert row["model_calls_delta"] == 3 - 6 and row["tool_calls_delta"] == 2 - 5
    assert row["fixture_uses"] == 2 and row["drift_uses"] == 0


def test_comparison_of_a_run_with_itself():
    row = comparison_metrics(known_run(), known_run()).row(0, named=True)
    assert row["divergence_base_seq"] is None and row["divergence_step"] is None
    assert row["final_output_changed"] is False and row["outcome_changed"] is False
    assert row["steps_delta"] == 0 and row["input_tokens_delta"] == 0 and row["cost_delta"] is None


def test_outcome_sources():
    assert run_metrics([known_run()]).row(0, named=True)["outcome"] == "unknown"
    assert normalize_outcome({"status": False}) == "failure"
    assert normalize_outcome(" timeout ") == "timeout"
    assert normalize_outcome(3) == "unknown"
    rec = Recording.load(DATA / "sample-agent-success.json")
    pred = load_predicate("tests.core.analysis.predicates:refund_issued")
    row = run_metrics([rec], predicate=pred).row(0, named=True)
    assert (row["outcome"], row["outcome_source"]) == ("success", "predicate")
    row = run_metrics([known_run(outcome="success")], predicate=pred).row(0, named=True)
    assert (row["outcome"], row["outcome_source"]) == ("unknown", "unknown")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "must be written module:function"),
        ("no_such_module_xyz:f", "cannot import"),
        ("tests.core.analysis.predicates:missing", "no callable 'missing'"),
        ("tests.core.analysis.predicates:not_callable", "no callable 'not_callable'"),
    ],
)
def test_bad_predicate_specs(spec, message):
    with pytest.raises(AnalysisError, match=message):
        load_predicate(spec)


def test_a_failing_predicate_names_the_run():
    with pytest.raises(AnalysisError, match="failed on my-run: RuntimeError: predicate bug"):
        run_metrics([("my-run", known_run())], predicate=load_predicate("tests.core.analysis.predicates:broken"))


def test_price_table_errors(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text("{bad")
    with pytest.raises(AnalysisError, match=r"prices.json: line 1, column 2: malformed JSON"):
        load_price_table(p)
    with pytest.raises(AnalysisError, match="no such price table"):
        load_price_table(tmp_path / "missing.json")
    with pytest.raises(AnalysisError, match=r"at /m/input: price must be a number >= 0"):
        validate_price_table({"m": {"input": -1}})
    with pytest.raises(AnalysisError, match="unknown field"):
        validate_price_table({"m": {"input": 1, "currency": "EUR"}})
    with pytest.raises(AnalysisError, match="a price table is a JSON object"):
        validate_price_table([1])
    p.write_text('{"m": {"input": 2.5, "output": 10}}')
    assert load_price_table(p) == {"m": {"input": 2.5, "output": 10.0}}


def test_final_output_sources():
    rec = known_run(final_output={"answer": 1})
    assert final_output(rec) == {"answer": 1}
    assert final_output(rec, source="transcript") == "the answer"
    assert final_output(known_run(), source="metadata") is None
    ends_on_tool_call = recording(model(0, [msg("user", "x")], msg("assistant", None, tool_calls=[("c", "t", {})])))
    assert final_output(ends_on_tool_call) is None
    with pytest.raises(ValueError):
        final_output(rec, source="guess")


def test_step_of():
    rec = known_run()
    assert [step_of(rec, s) for s in range(5)] == [0, 0, 0, 0, 1]
    assert step_of(rec, None) == 2
    tools_only = recording(tool(0, "a"), tool(1, "b"))
    assert [step_of(tools_only, 0), step_of(tools_only, 1)] == [0, 1]


def test_fixture_and_drift_uses_from_replay_metadata():
    replay = known_run()
    replay.metadata["replay"] = {"answer_sources": {"1": "fixture", "3": "fixture", "4": "drift", "2": "intervention"}}
    row = comparison_metrics(known_run(), replay).row(0, named=True)
    assert (row["fixture_uses"], row["drift_uses"]) == (2, 1)
    row = comparison_metrics(known_run(), replay, fixture_uses=0, drift_uses=5).row(0, named=True)
    assert (row["fixture_uses"], row["drift_uses"]) == (0, 5)
    with pytest.raises(ValueError):
        comparison_metrics(known_run(), replay, fixture_uses=-1)


@pytest.mark.parametrize(
    "fault, dimension",
    [
        ("corrupted-result", "tool result"),
        ("tool-error", "tool result"),
        ("wrong-tool", "response"),
    ],
)
def test_each_faulty_sample_diverges_at_its_planted_fault(fault, dimension):
    base = Recording.load(DATA / "sample-agent-success.json")
    faulty = Recording.load(DATA / f"sample-agent-fault-{fault}.json")
    row = comparison_metrics(base, faulty).row(0, named=True)
    assert row["divergence_base_seq"] == faulty.metadata["fault"]["seq"]
    assert row["divergence_dimension"] == dimension
    assert row["outcome_changed"] and row["final_output_changed"]
