"""Diffs and metrics of real replays: base vs the replay engine's events."""

from __future__ import annotations

from core.analysis.diff import trace_diff
from core.analysis.metrics import comparison_metrics
from core.record.recording import ChatMessage, ModelResponse, ToolResult
from core.replay.branch import ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from core.replay.fixtures import Fixture, FixtureGateway
from tests.builders import MODEL, chat_recording


def replay(base, at, interventions=(), **kw):
    br = new_branch(base, "base.json", at=at, interventions=list(interventions), policy=kw.pop("policy", None))
    return ReplayEngine(base, br, replay_id="rp-analysis", **kw).run()


def test_empty_branch_replay_is_identical_to_its_base():
    base = chat_recording(3)
    out = replay(base, at=3)
    d = trace_diff(base, out.events)
    assert d.identical and d.counts["same"] == 7
    row = comparison_metrics(base, out.events).row(0, named=True)
    assert row["divergence_base_seq"] is None and row["final_output_changed"] is False
    assert row["steps_delta"] == 0 and row["fixture_uses"] == 0


def test_override_and_fixture_replay_diverges_where_the_engine_says():
    base = chat_recording(3)
    final = ModelResponse(message=ChatMessage(role="assistant", content="value 99 is too big"), finish_reason="stop")
    gw = FixtureGateway([Fixture(kind="model", name=MODEL, output=final.to_json_obj())])
    out = replay(
        base, at=4, interventions=[ToolResultIntervention(seq=4, result=ToolResult(content={"value": 99}))], fixtures=gw
    )
    assert out.status == "completed"
    d = trace_diff(base, out.events)
    fd = d.first_divergence
    # same position as the engine's own first divergence
    assert (fd.base_seq, fd.replay_seq) == (out.first_divergence.base_seq, out.first_divergence.replay_seq) == (4, 4)
    assert fd.dimension == "tool result"
    row = comparison_metrics(base, out.events).row(0, named=True)
    assert row["fixture_uses"] == 1 and row["drift_uses"] == 0
    assert row["final_output_changed"] is True
    assert row["divergence_step"] == 1
