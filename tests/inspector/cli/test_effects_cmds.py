"""CLI: sweep and effects (JSON shapes, text, one-line errors with exit 2), audit --executor."""

from __future__ import annotations

import orjson
import pytest

from core.analysis.audit import audit
from core.effects.knockout import ReplayKnockout, knockout_runner
from core.effects.sweep import SweepError
from core.examples.sample_agent import make_executor
from core.record.recording import Recording
from inspector.cli import main
from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"
TOOL_ERROR = SAMPLES / "sample-agent-fault-tool-error.json"
SUCCESS = SAMPLES / "sample-agent-success.json"
EFFECT_KEYS = {
    "rank",
    "id",
    "kind",
    "key",
    "seq",
    "targets",
    "description",
    "outcome",
    "score",
    "reliability",
    "reliability_reasons",
    "output_changed",
    "metrics",
    "replays",
    "usable",
    "evidence",
    "intervention_sets",
    "summary",
}


def run_json(capsys, *args):
    assert main([str(a) for a in args]) == 0
    return orjson.loads(capsys.readouterr().out)


def fails(capsys, *args) -> str:
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_sweep_json_then_effects_json(capsys, tmp_path):
    ws = tmp_path / "ws"
    doc = run_json(
        capsys, "sweep", TOOL_ERROR, "--executor", "recorded", "--trust-executor", "--workspace", ws, "--json"
    )
    assert set(doc) == {
        "base",
        "digest",
        "strategy",
        "candidates",
        "executor",
        "outcome_base",
        "effects",
        "calls",
        "replays",
        "skipped",
        "cancelled",
    }
    assert doc["cancelled"] is False
    assert doc["strategy"] == "resample" and doc["candidates"] == "all"
    best = doc["effects"][0]
    assert set(best) == EFFECT_KEYS
    assert best["seq"] == 8 and best["rank"] == 1
    assert best["outcome"] == {
        "base": "failure",
        "observed": {"success": 1},
        "effect": 1.0,
        "spread": 0.0,
        "direction": "fixes",
    }
    assert set(best["evidence"]) == {"replay_ids", "branch_ids", "diff_ids"}
    assert [e["rank"] for e in doc["effects"]] == list(range(1, len(doc["effects"]) + 1))
    assert {r["replay_id"] for r in doc["replays"]} == {e["evidence"]["replay_ids"][0] for e in doc["effects"]}

    one = run_json(capsys, "effects", "--base", TOOL_ERROR, "--workspace", ws, "--json")
    assert set(one) == {"base", "digest", "outcome_base", "replays", "effects"}
    assert one["digest"] == doc["digest"] and one["replays"] == len(doc["replays"])
    assert [e["seq"] for e in one["effects"]] == [e["seq"] for e in doc["effects"]]
    every = run_json(capsys, "effects", "--workspace", ws, "--json")
    assert [b["digest"] for b in every["bases"]] == [doc["digest"]]
    assert main(["effects", "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "best: call 8 (tool check_refund_policy)" in out and "outcome failure → success ×1" in out


def test_sweep_text(capsys, tmp_path):
    assert (
        main(
            [
                "sweep",
                str(TOOL_ERROR),
                "--executor",
                "recorded",
                "--trust-executor",
                "--no-store",
                "--candidates",
                "tools",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"base      {TOOL_ERROR} (outcome failure)"
    assert "resample of 3 call(s) (tools)" in lines[1]
    assert lines[lines.index("") + 1].split() == [
        "rank",
        "seq",
        "score",
        "effect",
        "±",
        "rel",
        "direction",
        "replays",
        "candidate",
    ]
    row = next(line for line in lines if line.strip().startswith("1 "))
    assert row.split()[:7] == ["1", "8", "0.80", "1.00", "0.00", "0.80", "fixes"]
    # the calls that changed nothing: reliable measurements (1.00), score 0, ranked below
    others = [line.split() for line in lines if line.strip()[:1] in "23" and "sweep resample" in line]
    assert others and all(r[2] == "0.00" and r[3] == "0.00" and r[5] == "1.00" and r[6] == "none" for r in others)
    assert not (tmp_path / ".chassis-inspector").exists()


def test_cli_errors(capsys, tmp_path):
    ws = tmp_path / "ws"
    assert "resample needs an executor" in fails(capsys, "sweep", TOOL_ERROR, "--no-store")
    assert "--candidates must be one of" in fails(
        capsys, "sweep", TOOL_ERROR, "--executor", "recorded", "--trust-executor", "--candidates", "some", "--no-store"
    )
    assert "--strategy must be one of" in fails(
        capsys, "sweep", TOOL_ERROR, "--executor", "recorded", "--trust-executor", "--strategy", "x", "--no-store"
    )
    assert "no workspace at" in fails(capsys, "effects", "--base", SUCCESS, "--workspace", ws)
    from core.workspace import Workspace

    Workspace.open(ws).close()
    assert "no replay of this recording" in fails(capsys, "effects", "--base", SUCCESS, "--workspace", ws)
    missing = tmp_path / "nope.json"
    assert "nope.json" in fails(capsys, "sweep", missing, "--executor", "recorded", "--trust-executor")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert "bad.json" in fails(capsys, "sweep", bad, "--executor", "recorded", "--trust-executor", "--no-store")
    assert "cannot import" in fails(capsys, "audit", SUCCESS, "--executor", "nope:x")


def test_effects_of_an_empty_workspace(capsys, tmp_path):
    from core.workspace import Workspace

    assert run_json(capsys, "effects", "--workspace", tmp_path / "ws", "--json") == {"bases": []}
    assert main(["effects", "--workspace", str(tmp_path / "ws")]) == 0
    assert capsys.readouterr().out.startswith(f"no workspace at {tmp_path / 'ws'} (")
    assert not (tmp_path / "ws").exists()
    Workspace.open(tmp_path / "ws").close()
    assert main(["effects", "--workspace", str(tmp_path / "ws")]) == 0
    assert "no replays in the workspace" in capsys.readouterr().out


def test_audit_knockout_per_call(capsys):
    doc = run_json(capsys, "audit", SUCCESS, "--executor", "recorded", "--trust-executor", "--json")
    calls = {c["seq"]: c for c in doc["calls"]}
    final = doc["final_seq"]
    n = sum(1 for s in calls if s < final)
    assert doc["knockout"] == (
        f"run: each of the {n} call(s) before the final output was replayed with "
        f"that call knocked out; the outcome changed for {n}, the final output "
        f"changed for {n}"
    )
    assert calls[final]["knockout"] is None
    for seq, c in calls.items():
        if seq < final:
            assert c["knockout"]["seq"] == seq and c["knockout"]["outcome"] == "failure"
            assert c["knockout"]["final_output_changed"] is True and c["knockout"]["outcome_changed"] is True
            assert "outcome changed (success → failure)" in c["knockout"]["detail"]
    assert main(["audit", str(SUCCESS), "--executor", "recorded", "--trust-executor"]) == 0
    assert "knockout: failure (outcome changed" in capsys.readouterr().out


def test_knockout_runner_on_a_faulty_run():
    rec = Recording.load(TOOL_ERROR)
    runner = ReplayKnockout(make_executor(), "core.sample_agent:make_executor")
    # knocking out the failing call changes nothing: the run fails either way
    r = runner.knockout(rec, 8)
    assert r.outcome == "failure" and "outcome unchanged (failure → failure)" in r.detail
    assert runner.knockout(rec, 2).outcome == "unknown"  # seq 2 is not a call
    rep = audit(rec, knockout=runner)
    assert all(c.knockout is not None for c in rep.calls if c.seq < rep.final_seq)
    with pytest.raises(SweepError, match="names no executor"):
        knockout_runner("recorded", Recording.load(SAMPLES / "tau-bench-airline-task0-trial0.json"))


def test_effects_replay_prints_the_evidence(capsys, tmp_path):
    ws = tmp_path / "ws"
    doc = run_json(
        capsys,
        "sweep",
        TOOL_ERROR,
        "--executor",
        "recorded",
        "--trust-executor",
        "--candidates",
        "errors",
        "--workspace",
        ws,
        "--json",
    )
    best = doc["effects"][0]
    rid = best["evidence"]["replay_ids"][0]
    ev = run_json(capsys, "effects", "--replay", rid, "--workspace", ws, "--json")
    assert ev["replay_id"] == rid
    assert sorted(d["id"] for d in ev["diffs"]) == best["evidence"]["diff_ids"]
    causal = next(d for d in ev["diffs"] if d["id"].endswith("-causal"))
    assert causal["label"].startswith("tool_result at seq 8 (sweep resample) → outcome failure → success")
    assert main(["effects", "--replay", rid, "--workspace", str(ws)]) == 0
    out = capsys.readouterr().out
    assert f"df-{rid}-trace  ops same" in out and "first divergence tool result at base seq 8" in out
    assert "no replay 'nope'" in fails(capsys, "effects", "--replay", "nope", "--workspace", ws)


def test_sweep_with_no_candidate_calls(capsys):
    assert (
        main(
            [
                "sweep",
                str(SUCCESS),
                "--executor",
                "recorded",
                "--trust-executor",
                "--candidates",
                "errors",
                "--no-store",
            ]
        )
        == 0
    )
    assert "no candidate calls: the run has no call of the set 'errors'" in capsys.readouterr().out
    doc = run_json(
        capsys,
        "sweep",
        SUCCESS,
        "--executor",
        "recorded",
        "--trust-executor",
        "--candidates",
        "errors",
        "--no-store",
        "--json",
    )
    assert doc["effects"] == [] and doc["calls"] == [] and doc["replays"] == []


def test_parallel_sweep_in_a_workspace_stores_every_replay(capsys, tmp_path):
    from core.workspace import Workspace

    ws_dir = tmp_path / "ws"
    doc = run_json(
        capsys,
        "sweep",
        TOOL_ERROR,
        "--executor",
        "recorded",
        "--trust-executor",
        "--jobs",
        "2",
        "--workspace",
        ws_dir,
        "--json",
    )
    with Workspace.open(ws_dir) as ws:
        assert ws.check() == []
        stored = ws.list_replays(base_digest=doc["digest"])
        assert sorted(r.id for r in stored) == sorted(r["replay_id"] for r in doc["replays"])
        assert all(ws.diffs(r.id, "causal") for r in stored)
        assert [e["seq"] for e in ws.effects(doc["digest"])] == [e["seq"] for e in doc["effects"]]


def test_sweep_without_a_usable_replay_names_no_best(capsys, tmp_path):
    """A knockout sweep with no executor: every replay diverges at the knocked-out call
    and cannot answer what follows (comparability none) — nothing may be called best."""
    rec = Recording.load(TOOL_ERROR)
    rec.metadata.pop("executor", None)
    f = tmp_path / "no-executor.json"
    rec.save(f)
    assert main(["sweep", str(f), "--strategy", "knockout", "--candidates", "tools", "--no-store"]) == 0
    out = capsys.readouterr().out
    assert "best:" not in out
    assert "no best candidate: none of the" in out and "usable as evidence" in out
