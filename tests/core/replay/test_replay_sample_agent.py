"""The replay engine with the sample agent wired as executor (and without it)."""

from __future__ import annotations

import pytest

from core.errors import BranchError
from core.examples.sample_agent import (
    EXECUTOR_SPEC,
    SampleAgentExecutor,
    live_tool,
    scripted_model,
)
from core.record.recording import ModelRecord, Recording, ToolRecord
from core.replay.boundary import load_executor
from core.replay.branch import (
    ModelResponseIntervention,
    Policy,
    ToolPolicyIntervention,
    ToolResultIntervention,
    new_branch,
)
from core.replay.engine import ReplayEngine
from core.replay.replays import resolve_executor, resume_replay, start_replay
from core.workspace import Workspace
from tests.builders import ROOT, strip

SAMPLES = ROOT / "sample_recordings"
FAULTS = ["corrupted-result", "tool-error", "wrong-tool"]


def sample(name: str) -> Recording:
    return Recording.load(SAMPLES / f"sample-agent-{name}.json")


class CountingExecutor(SampleAgentExecutor):
    def __init__(self) -> None:
        self.live_models = 0
        self.live_tools = 0

    def live_model(self, model, request):
        self.live_models += 1
        return super().live_model(model, request)

    def live_tool(self, name, arguments):
        self.live_tools += 1
        return super().live_tool(name, arguments)


@pytest.mark.parametrize("name", ["success", *(f"fault-{f}" for f in FAULTS)])
@pytest.mark.parametrize("wired", [False, True])
def test_empty_branch_replays_the_sample_to_its_base(name, wired):
    base = sample(name)
    br = new_branch(base, "b", at=0)
    ex = CountingExecutor() if wired else None
    out = ReplayEngine(base, br, executor=ex).run()
    assert out.status == "completed" and out.comparability.level == "full" and out.first_divergence is None
    assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    if wired:
        assert ex.live_models == ex.live_tools == 0
        assert out.output == base.metadata["final_output"]
        assert out.events.metadata["outcome"] == base.metadata["outcome"]


def _fix(base: Recording):
    """The intervention that fixes the planted fault: the honest tool result, or the
    model response the scripted model would have given."""
    fault = base.metadata["fault"]
    rec = next(r for r in base.records if r.seq == fault["seq"])
    if isinstance(rec, ToolRecord):
        return ToolResultIntervention(seq=rec.seq, result=live_tool(rec.tool, rec.arguments))
    assert isinstance(rec, ModelRecord)
    return ModelResponseIntervention(seq=rec.seq, response=scripted_model(rec.request))


@pytest.mark.parametrize("fault", FAULTS)
def test_the_fix_of_the_bad_call_makes_the_sample_agent_succeed(fault):
    base = sample(f"fault-{fault}")
    assert base.metadata["outcome"] == "failure"
    seq = base.metadata["fault"]["seq"]
    br = new_branch(base, "b", at=seq, interventions=[_fix(base)], policy=Policy(model="live", tool="live"))
    ex = CountingExecutor()
    out = ReplayEngine(base, br, executor=ex, executor_name=EXECUTOR_SPEC).run()
    assert out.status == "completed", out.error
    assert out.events.metadata["outcome"] == "success", out.events.metadata.get("outcome_reason")
    assert out.output["refund"] is not None and out.output["confirmation_sent"] is True
    fd = out.first_divergence
    assert fd.base_seq == seq and fd.replay_seq == seq
    assert fd.dimension == ("response" if fault == "wrong-tool" else "tool result")
    assert out.sources[seq] == "intervention"
    assert ex.live_models > 0 and ex.live_tools > 0
    assert out.comparability.level == "partial"  # live answers are not reproducible from the base
    assert Recording.loads(out.events.dumps()).metadata["replay"]["executor"] == EXECUTOR_SPEC


def test_without_the_fix_the_live_replay_reproduces_the_failure():
    base = sample("fault-corrupted-result")
    br = new_branch(base, "b", at=0, policy=Policy(model="live", tool="live"))
    ex = CountingExecutor()
    out = ReplayEngine(base, br, executor=ex).run()
    assert out.events.metadata["outcome"] == "failure"
    assert ex.live_models == ex.live_tools == 0  # every call was recorded


def test_live_model_recorded_tools_pause_then_complete_reusing_live_answers(tmp_path):
    base = sample("fault-corrupted-result")
    bp = tmp_path / "base.json"
    base.save(bp)
    seq = base.metadata["fault"]["seq"]
    br = new_branch(base, str(bp), at=seq, interventions=[_fix(base)], policy=Policy(model="live"))
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = start_replay(ws, bp, br, executor=EXECUTOR_SPEC)
        assert rec.status == "paused"
        first_live = out.answers["live"]
        tools_attached = []
        while rec.status == "paused":
            [req] = ws.requirements(open_only=True, replay_id=rec.id)
            assert req.kind == "tool"
            ws.attach_fixture(req.id, live_tool(req.name, req.arguments).to_json_obj(), source="honest.json")
            tools_attached.append(req.name)
            rec, out = resume_replay(ws, rec.id)  # the executor recorded on the replay is reused
        assert rec.status == "completed"
        assert tools_attached == ["check_refund_policy", "issue_refund", "send_message"]
        assert out.events.metadata["outcome"] == "success"
        assert out.answers["fixture"] == 3 and out.answers["live"] >= first_live
        # live answers of earlier attempts were reused, not asked again
        events = ws.replay_events(rec.id)
        assert sum(1 for r in events.records if r.live_fallback) == out.answers["live"]


def test_resume_does_not_repeat_live_calls():
    base = sample("fault-corrupted-result")
    seq = base.metadata["fault"]["seq"]
    br = new_branch(base, "b", at=seq, interventions=[_fix(base)], policy=Policy(model="live"))
    ex1 = CountingExecutor()
    first = ReplayEngine(base, br, replay_id="r", executor=ex1).run()
    assert first.status == "paused" and ex1.live_models == 1
    ex2 = CountingExecutor()
    again = ReplayEngine(
        base, br, replay_id="r", executor=ex2, live_cache=[r for r in first.events.records if r.live_fallback]
    ).run()
    assert again.status == "paused" and ex2.live_models == 0
    assert again.events.dumps() == first.events.dumps()


def test_denied_tool_raises_in_the_agent_as_live():
    base = sample("success")
    refund_seq = next(r.seq for r in base.records if isinstance(r, ToolRecord) and r.tool == "issue_refund")
    br = new_branch(
        base,
        "b",
        at=refund_seq,
        interventions=[ToolPolicyIntervention(tool="issue_refund", action="deny", reason="refunds frozen")],
    )
    out = ReplayEngine(base, br, executor=SampleAgentExecutor()).run()
    assert out.status == "failed"
    assert out.error.type == "PolicyDenied" and "refunds frozen" in out.error.message
    denied = {r.seq: r for r in out.events.records}[refund_seq]
    assert denied.result.error.type == "PolicyDenied"


def test_max_steps_with_executor():
    base = sample("success")
    br = new_branch(base, "b", at=0, policy=Policy(max_steps=2))
    out = ReplayEngine(base, br, executor=SampleAgentExecutor()).run()
    assert out.status == "completed" and out.stop_reason == "max_steps" and out.steps == 2


def test_executor_recorded_uses_metadata_and_is_never_implicit():
    base = sample("success")
    ex, name = resolve_executor("recorded", base, trust_executor=True)
    assert name == EXECUTOR_SPEC and isinstance(ex, SampleAgentExecutor)
    assert resolve_executor(None, base) == (None, None)
    # a live policy with no executor named fails at once even though the base names one
    br = new_branch(base, "b", at=0, policy=Policy(model="live"))
    out = ReplayEngine(base, br).run()
    assert out.status == "failed" and out.error.type == "NoExecutor"
    plain = base.model_copy(update={"metadata": {}})
    with pytest.raises(BranchError, match="names no executor"):
        resolve_executor("recorded", plain, trust_executor=True)
    with pytest.raises(BranchError, match="cannot import"):
        resolve_executor("no_such_module_xyz:make", base)
    assert load_executor(EXECUTOR_SPEC) is not None
