"""Sweep on sample-agent runs with planted faults; causal records; workspace persistence."""

from __future__ import annotations

import orjson
import pytest

from core.effects.causal import (
    compare_replay,
    intervention_set_id,
    intervention_targets,
    workspace_effects,
)
from core.effects.sweep import SweepError, run_sweep, sweep_candidates
from core.errors import FixtureError
from core.examples.sample_agent import Fault, make_executor, record_run
from core.record.io import dumps_recording
from core.record.recording import ChatMessage, ErrorInfo, Recording, ToolResult
from core.replay.branch import (
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    Policy,
    ToolPolicyIntervention,
    ToolResultIntervention,
    new_branch,
)
from core.replay.engine import ReplayEngine
from core.workspace import Workspace
from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"
FAULTY = sorted((SAMPLES / "attribution").glob("*.json")) + sorted(SAMPLES.glob("sample-agent-fault-*.json"))
SUCCESS = SAMPLES / "sample-agent-success.json"


@pytest.mark.parametrize("path", FAULTY, ids=lambda p: p.name)
def test_sweep_finds_the_planted_fault_first(path):
    base = Recording.load(path)
    res = run_sweep(path, executor="recorded", trust_executor=True, base=base)
    best = res.effects[0]
    assert best.seq == base.metadata["fault"]["seq"]
    assert best.effect == 1.0 and best.direction == "fixes" and best.observed == {"success": 1}
    assert all(e.effect == 0.0 for e in res.effects[1:])
    # one replay per candidate call, every call a candidate
    calls = sweep_candidates(base, "all")
    assert len(res.replays) == len(calls) == len(res.effects) and not res.skipped
    doc = res.to_json()
    assert doc["effects"][0]["seq"] == base.metadata["fault"]["seq"]
    assert doc["outcome_base"] == "failure" and doc["executor"] == "core.sample_agent:make_executor"


def test_sweep_in_parallel_processes_ranks_the_same():
    path = SAMPLES / "attribution" / "sample-agent-support-002-wrong-tool-step1.json"
    one = run_sweep(path, executor="recorded", trust_executor=True)
    two = run_sweep(path, executor="recorded", trust_executor=True, jobs=2)

    def strip(e):  # branch ids are fresh per sweep
        d = e.to_json()
        del d["evidence"]["branch_ids"]
        return d

    assert [strip(e) for e in one.effects] == [strip(e) for e in two.effects]


def test_candidate_sets():
    base = Recording.load(SAMPLES / "sample-agent-fault-tool-error.json")
    all_ = sweep_candidates(base, "all")
    tools = sweep_candidates(base, "tools")
    errors = sweep_candidates(base, "errors")
    assert [c.kind for c in tools] == ["tool"] * len(tools) and len(tools) < len(all_)
    assert [(c.seq, c.name) for c in errors] == [(8, "check_refund_policy")]
    res = run_sweep(
        SAMPLES / "sample-agent-fault-tool-error.json",
        executor="recorded",
        trust_executor=True,
        candidates="errors",
        base=base,
    )
    assert [e.seq for e in res.effects] == [8]
    with pytest.raises(SweepError, match="--candidates must be one of errors, tools, all"):
        sweep_candidates(base, "some")


def test_sweep_errors():
    path = SAMPLES / "sample-agent-fault-tool-error.json"
    with pytest.raises(SweepError, match="resample needs an executor"):
        run_sweep(path, executor=None)
    with pytest.raises(SweepError, match="--strategy must be one of"):
        run_sweep(path, executor="recorded", trust_executor=True, strategy="guess")
    with pytest.raises(SweepError, match="--jobs must be at least 1"):
        run_sweep(path, executor="recorded", trust_executor=True, jobs=0)
    with pytest.raises(SweepError, match="cannot import 'no_such_module'"):
        run_sweep(path, executor="no_such_module:f")
    with pytest.raises(FixtureError, match="needs a fixture library"):
        run_sweep(path, executor="recorded", trust_executor=True, strategy="fixture")
    bare = SAMPLES / "tau-bench-airline-task0-trial0.json"
    with pytest.raises(SweepError, match="names no executor"):
        run_sweep(bare, executor="recorded", trust_executor=True)


def test_knockout_sweep_on_a_success_run_finds_necessary_calls():
    res = run_sweep(SUCCESS, executor="recorded", trust_executor=True, strategy="knockout", candidates="tools")
    assert res.outcome_base == "success"
    # every tool of the clean run is necessary: knocking any out breaks the outcome
    assert all(e.effect == 1.0 and e.direction == "breaks" for e in res.effects)
    assert [e.seq for e in res.effects] == sorted(e.seq for e in res.effects)  # tie → earliest first


def test_fixture_strategy_uses_the_library_and_skips_calls_without_fixture(tmp_path):
    path = SAMPLES / "sample-agent-fault-corrupted-result.json"
    base = Recording.load(path)
    fault = base.metadata["fault"]
    rec = next(r for r in base.records if r.seq == fault["seq"])
    good = make_executor().live_tool(rec.tool, rec.arguments)
    lib = tmp_path / "fixtures.json"
    lib.write_bytes(orjson.dumps([{"tool": rec.tool, "arguments": rec.arguments, "output": good.to_json_obj()}]))
    res = run_sweep(
        path, executor="recorded", trust_executor=True, strategy="fixture", fixtures_path=lib, candidates="tools"
    )
    assert [e.seq for e in res.effects] == [fault["seq"]] and res.effects[0].direction == "fixes"
    assert {s["seq"] for s in res.skipped} == {r.seq for r in sweep_candidates(base, "tools")} - {fault["seq"]}
    assert all(s["reason"].startswith("no fixture for tool") for s in res.skipped)


def test_sweep_in_a_workspace_stores_replays_diffs_metrics_and_effects(tmp_path):
    path = SAMPLES / "sample-agent-fault-wrong-tool.json"
    ws_dir = tmp_path / "ws"
    res = run_sweep(path, executor="recorded", trust_executor=True, workspace=ws_dir)
    with Workspace.open(ws_dir) as ws:
        digest = res.digest
        replays = ws.list_replays(base_digest=digest)
        assert len(replays) == len(res.replays)
        stored = ws.effects(digest)
        assert [e["seq"] for e in stored] == [e.seq for e in res.effects]
        best = stored[0]
        rid = best["evidence"]["replay_ids"][0]
        kinds = {d["kind"] for d in ws.diffs(rid)}
        assert kinds == {"trace", "output", "metric", "causal"}
        ids = {d["body"]["id"] for d in ws.diffs(rid)}
        assert ids == set(best["evidence"]["diff_ids"])
        causal = ws.diffs(rid, "causal")[0]["body"]
        assert "outcome failure → success" in causal["label"] and causal["comparability"]["level"] == "partial"
        assert ws.metrics(rid)["outcome"] == "success"
        assert ws.metrics(digest)["outcome"] == "failure"
        # recomputing reuses the stored comparisons and gives the same ranking
        again = workspace_effects(ws, digest)
        assert [e.to_json() for e in again] == stored
    # a second sweep: two attempts per call → mean and spread over both
    run_sweep(path, executor="recorded", trust_executor=True, workspace=ws_dir)
    with Workspace.open(ws_dir) as ws:
        both = ws.effects(res.digest)
        assert both[0]["replays"] == 2 and both[0]["outcome"]["effect"] == 1.0
        assert both[0]["seq"] == res.effects[0].seq


def test_causal_record_of_a_replay():
    base = record_run("support-001", Fault("tool-error", 2)).recording
    base = Recording.loads(dumps_recording(base))
    seq = base.metadata["fault"]["seq"]
    fixed = ToolResult(
        content={"order_id": "A1001", "sku": "BL-200", "eligible": True, "max_refund": 89.99, "rule": "ok"}
    )
    branch = new_branch(
        base,
        "base.json",
        at=seq,
        interventions=[ToolResultIntervention(seq=seq, result=fixed, note="policy service up")],
        policy=Policy(model="live", tool="live"),
    )
    out = ReplayEngine(base, branch, executor=make_executor(), executor_name="x").run()
    rec = type(
        "R",
        (),
        {
            "id": "rp-1",
            "status": out.status,
            "comparability": out.comparability,
            "first_divergence": out.first_divergence,
            "answers": out.answers,
            "fixture_uses": out.fixture_uses,
            "events_digest": None,
        },
    )()
    cmp = compare_replay(base, branch, rec, out.events)
    c = cmp.causal
    assert c["label"].startswith(f"tool_result at seq {seq} (policy service up) → outcome failure → success")
    assert "tool_errors 1 → 0" in c["label"] and c["label"].endswith("[comparability partial]")
    assert c["changes"]["outcome"] == {"base": "failure", "replay": "success", "changed": True}
    assert c["changes"]["tool_errors"]["delta"] == -1 and c["changes"]["final_output_changed"] is True
    assert c["targets"] == [{"seq": seq, "kind": "tool", "name": "check_refund_policy"}]
    assert c["first_divergence"]["base_seq"] == seq
    assert cmp.observation.outcome == "success" and cmp.observation.live_uses > 0
    assert cmp.trace["id"] == "df-rp-1-trace" and cmp.metric["outcome_changed"] is True
    # a paused replay is "not observed" and carries no outcome
    strict = new_branch(base, "base.json", at=seq, interventions=[ToolResultIntervention(seq=seq, result=fixed)])
    out2 = ReplayEngine(base, strict).run()
    rec2 = type(
        "R",
        (),
        {
            "id": "rp-2",
            "status": out2.status,
            "comparability": out2.comparability,
            "first_divergence": out2.first_divergence,
            "answers": out2.answers,
            "fixture_uses": out2.fixture_uses,
        },
    )()
    c2 = compare_replay(base, strict, rec2, out2.events)
    assert out2.status == "paused" and "not observed: the replay is paused" in c2.causal["label"]
    assert c2.observation.outcome == "unknown" and not c2.observation.usable


def test_intervention_targets_and_set_ids():
    base = Recording.load(SUCCESS)
    err = ToolResult(error=ErrorInfo(type="X", message="x"))
    b1 = new_branch(base, "b", at=6, interventions=[ToolResultIntervention(seq=6, result=err, note="one")])
    b2 = new_branch(base, "b", at=6, interventions=[ToolResultIntervention(seq=6, result=err, note="two")])
    assert intervention_set_id(b1) == intervention_set_id(b2)  # notes do not matter
    assert [t.seq for t in intervention_targets(base, b1)] == [6]
    wide = new_branch(base, "b", at=3, interventions=[ToolResultIntervention(tool="get_order", result=err)])
    assert [(t.seq, t.name) for t in intervention_targets(base, wide)] == [(6, "get_order")]
    step = new_branch(
        base,
        "b",
        at=5,
        interventions=[
            ModelResponseIntervention(step=2, response={"message": {"role": "assistant", "content": "done"}})
        ],
    )
    assert [(t.seq, t.kind) for t in intervention_targets(base, step)] == [(7, "model")]
    msgs = new_branch(
        base,
        "b",
        at=6,
        interventions=[
            MessagesIntervention(op="append", messages=[ChatMessage(role="user", content="hi")]),
            OptionsIntervention(options={"temperature": 1}),
        ],
    )
    assert [t.seq for t in intervention_targets(base, msgs)] == [7]
    deny = new_branch(base, "b", at=3, interventions=[ToolPolicyIntervention(tool="issue_refund", action="deny")])
    assert [t.name for t in intervention_targets(base, deny)] == ["issue_refund"]
    assert intervention_set_id(b1) != intervention_set_id(wide)
