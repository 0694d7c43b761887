"""The replay engine on small bases built in the tests (generic chat loop, no executor)."""

from __future__ import annotations

import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import PolicyDenied
from core.record.canonical import args_hash, model_key
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolResult
from core.replay.branch import (
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    Policy,
    ToolPolicyIntervention,
    ToolResultIntervention,
    new_branch,
)
from core.replay.dry_run import predict
from core.replay.engine import ReplayEngine, ToolHooks
from core.replay.fixtures import Fixture, FixtureGateway
from core.replay.session import SpanRecorder
from tests.builders import MODEL, chat_recording, random_recording, strip

# chat_recording(3): 0 lifecycle, 1 model, 2 tool, 3 model, 4 tool, 5 model, 6 tool, 7 model(final), 8 lifecycle


def run(base, at=0, interventions=(), policy=None, **kw):
    br = new_branch(base, "base.json", at=at, interventions=list(interventions), policy=policy)
    return ReplayEngine(base, br, replay_id="rp-test", **kw).run()


def test_empty_branch_equals_base():
    base = chat_recording(3)
    out = run(base, at=3)
    assert out.status == "completed" and out.stop_reason == "final"
    assert out.comparability.level == "full" and out.comparability.reasons == []
    assert out.first_divergence is None
    assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    assert all(r.replayed for r in out.events.records)
    assert out.answers == {"recorded": 7}
    assert out.output == "done"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_no_intervention_equals_base(data):
    n = data.draw(st.integers(1, 6))
    base = random_recording(
        lambda a, b: data.draw(st.integers(a, b)),
        lambda: data.draw(st.booleans()),
        lambda xs: data.draw(st.sampled_from(xs)),
        n,
    )
    if not base.records:
        return
    at = data.draw(st.sampled_from([r.seq for r in base.records]))
    out = run(base, at=at)
    assert out.status == "completed"
    assert out.comparability.level == "full"
    assert out.first_divergence is None
    assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    again = Recording.loads(out.events.dumps())  # a valid recording
    assert again.session.mode == "replay"


def test_events_are_a_valid_recording_linking_base_and_branch():
    base = chat_recording(2)
    out = run(
        base,
        at=2,
        interventions=[ToolResultIntervention(seq=2, result=ToolResult(content=7))],
        policy=Policy(drift="lenient"),
    )
    again = Recording.loads(out.events.dumps())
    meta = again.metadata
    assert meta["replayed"] is True
    assert meta["replay"]["base"]["digest"] == base.digest
    assert meta["replay"]["branch"]["checkpoint"] == 2
    assert meta["replay"]["answer_sources"]["2"] == "intervention"
    assert meta["replay"]["stop_reason"] == "final"


def test_tool_result_override_diverges_at_k_lenient_drift():
    base = chat_recording(3)
    out = run(
        base,
        at=4,
        interventions=[ToolResultIntervention(seq=4, result=ToolResult(content={"value": 99}))],
        policy=Policy(drift="lenient"),
    )
    assert out.status == "completed"
    fd = out.first_divergence
    assert (fd.base_seq, fd.replay_seq, fd.dimension) == (4, 4, "tool result")
    ev = {r.seq: r for r in out.events.records}
    assert ev[4].result.content == {"value": 99}
    # downstream: the next request carries the overridden result; drift answers it
    nxt = ev[5]
    assert nxt.kind == "model"
    assert nxt.request.messages[-1].content == '{"value":99}'
    assert nxt.key != base.records[5].key
    assert out.sources[5] == "drift"
    # the base's step-2 answer asked for item-2 again: same call, answered from the recording
    assert out.sources[6] == "recorded"
    assert out.comparability.level == "partial"
    assert any("lenient drift" in r for r in out.comparability.reasons)


def test_tool_result_override_strict_pauses_on_model_requirement():
    base = chat_recording(3)
    out = run(base, at=4, interventions=[ToolResultIntervention(seq=4, result=ToolResult(content={"value": 99}))])
    assert out.status == "paused"
    req = out.requirement
    assert req.kind == "model" and req.name == MODEL
    assert req.nearest.seq == 5
    assert [d["path"] for d in req.nearest.diff] == ["/messages/5/content"]
    # events stop before the unanswered call
    assert [r.seq for r in out.events.records] == [0, 1, 2, 3, 4]


def test_model_fixture_answers_the_divergent_request():
    base = chat_recording(3)
    final = ModelResponse(message=ChatMessage(role="assistant", content="value 99 is too big"), finish_reason="stop")
    gw = FixtureGateway([Fixture(kind="model", name=MODEL, output=final.to_json_obj())])
    out = run(
        base, at=4, interventions=[ToolResultIntervention(seq=4, result=ToolResult(content={"value": 99}))], fixtures=gw
    )
    assert out.status == "completed" and out.output == "value 99 is too big"
    assert out.answers == {"recorded": 3, "intervention": 1, "fixture": 1}
    assert out.comparability.level == "full"
    assert [r.kind for r in out.events.records] == ["lifecycle", "model", "tool", "model", "tool", "model"]
    assert out.fixture_uses == [{"seq": 5, "fixture_id": gw.match("model", MODEL, None).id}]


def test_tool_result_by_name_and_args_hash_applies_to_every_matching_call():
    base = chat_recording(3)
    iv = ToolResultIntervention(tool="lookup", args_hash=args_hash({"q": "item-2"}), result=ToolResult(content="x"))
    out = run(base, at=1, interventions=[iv], policy=Policy(drift="lenient"))
    changed = [r.seq for r in out.events.records if r.kind == "tool" and r.result.content == "x"]
    assert changed == [6]
    assert out.interventions_applied == [0]


def test_model_response_intervention_ends_early():
    base = chat_recording(3)
    early = ModelResponse(message=ChatMessage(role="assistant", content="stop here"), finish_reason="stop")
    out = run(base, at=3, interventions=[ModelResponseIntervention(seq=3, response=early)])
    assert out.status == "completed" and out.output == "stop here"
    assert out.first_divergence.dimension == "response" and out.first_divergence.base_seq == 3
    assert [r.seq for r in out.events.records] == [0, 1, 2, 3]
    assert out.comparability.level == "full"


def test_model_response_by_step_new_tool_call_needs_fixture():
    base = chat_recording(2)
    from core.record.recording import ToolCall

    resp = ModelResponse(
        message=ChatMessage(
            role="assistant", content="", tool_calls=[ToolCall(id="call_x", name="lookup", arguments={"q": "other"})]
        )
    )
    out = run(base, at=1, interventions=[ModelResponseIntervention(step=1, response=resp)])
    assert out.status == "paused"
    req = out.requirement
    assert req.kind == "tool" and req.name == "lookup" and req.arguments == {"q": "other"}
    assert req.args_hash == args_hash({"q": "other"})
    # nearest recorded call of that tool, with the argument diff
    assert req.nearest.name == "lookup"
    assert req.nearest.diff == [{"path": "/q", "op": "changed", "base": req.nearest.arguments["q"], "branch": "other"}]


def test_messages_intervention_changes_next_request():
    base = chat_recording(2)
    iv = MessagesIntervention(op="append", messages=[ChatMessage(role="user", content="be brief")])
    out = run(base, at=3, interventions=[iv], policy=Policy(drift="lenient"))
    ev = {r.seq: r for r in out.events.records}
    assert ev[3].request.messages[-1].content == "be brief"
    assert out.first_divergence.dimension == "request" and out.first_divergence.base_seq == 3
    assert out.sources[3] == "drift"
    assert out.interventions_applied == [0]


def test_options_and_temperature_from_checkpoint_on():
    base = chat_recording(2)
    out = run(
        base,
        at=3,
        interventions=[OptionsIntervention(options={"tool_choice": "none"})],
        policy=Policy(drift="lenient", temperature=0.9),
    )
    models = [r for r in out.events.records if r.kind == "model"]
    assert models[0].request.options == {"temperature": 0.2}  # before the checkpoint
    for m in models[1:]:
        assert m.request.options == {"temperature": 0.9, "tool_choice": "none"}
        assert m.key == model_key(MODEL, m.request)


def test_missing_tool_fixture_pauses_with_one_requirement_and_nearest_call():
    base = chat_recording(3)
    out = run(base, at=2, policy=Policy(tool="fixture"))
    assert out.status == "paused"
    req = out.requirement
    assert req.kind == "tool" and req.name == "lookup" and req.arguments == {"q": "item-0"}
    assert req.status == "open" and req.replay_id == "rp-test"
    assert req.nearest.seq == 2 and req.nearest.diff == []
    assert req.nearest.output == {"content": {"value": 0}, "redacted": False}
    assert out.comparability.level == "none"


def test_fixture_policy_answers_from_fixtures():
    base = chat_recording(1)
    gw = FixtureGateway([Fixture(kind="tool", name="lookup", output={"content": {"value": 0}})])
    out = run(base, at=2, policy=Policy(tool="fixture"), fixtures=gw)
    assert out.status == "completed" and out.sources[2] == "fixture"
    assert out.events.records[2].result == base.records[2].result
    assert out.events.records[2].duration_seconds is None  # a fixture took no recorded time
    assert out.first_divergence is None and out.comparability.level == "full"


def test_require_fixtures_false_fails_instead_of_pausing():
    base = chat_recording(2)
    out = run(base, at=2, policy=Policy(tool="fixture", require_fixtures=False))
    assert out.status == "failed" and out.requirement is None
    assert out.error.type == "ReplayMismatch" and "missing" in out.error.message


def test_live_policy_without_executor_fails_fast_with_no_network(monkeypatch):
    def no_net(*a, **k):
        raise AssertionError("network used")

    monkeypatch.setattr(socket.socket, "connect", no_net)
    monkeypatch.setattr(socket, "create_connection", no_net)
    base = chat_recording(2)
    for pol in (Policy(model="live"), Policy(tool="live")):
        out = run(base, at=2, policy=pol)
        assert out.status == "failed"
        assert out.error.type == "NoExecutor" and "executor" in out.error.message
        assert out.events.records == [] and out.steps == 0


def test_denied_tool_is_denied_in_replay():
    base = chat_recording(3)
    spans = SpanRecorder()
    out = run(
        base,
        at=4,
        interventions=[ToolPolicyIntervention(tool="lookup", action="deny", reason="read-only")],
        policy=Policy(drift="lenient"),
        tracer=spans,
    )
    ev = {r.seq: r for r in out.events.records}
    assert ev[2].result.error is None  # before the checkpoint: answered as recorded
    assert ev[4].result.error.type == "PolicyDenied" and "read-only" in ev[4].result.error.message
    assert out.sources[4] == "policy"
    assert out.first_divergence.base_seq == 4 and out.first_divergence.dimension == "tool result"
    denied = [s for s in spans.spans if s.attributes["source"] == "policy"]
    assert len(denied) >= 1
    assert [s.attributes["source"] for s in spans.spans if s.name == "model.call"][:2] == ["recorded", "recorded"]
    assert all(s.attributes["replayed"] for s in spans.spans)


def test_authorization_runs_on_every_replayed_call():
    base = chat_recording(3)
    seen = []

    def authorize(inv):
        seen.append((inv.tool, inv.replayed))
        if inv.arguments == {"q": "item-1"}:
            raise PolicyDenied(inv.tool, "item-1 is off limits")

    out = run(base, at=1, hooks=ToolHooks(authorize=authorize), policy=Policy(drift="lenient"))
    assert seen[:2] == [("lookup", True), ("lookup", True)]
    ev = {r.seq: r for r in out.events.records}
    assert ev[4].result.error.type == "PolicyDenied" and "off limits" in ev[4].result.error.message


def test_budget_denies_over_budget_calls():
    base = chat_recording(3)
    out = run(base, at=1, policy=Policy(max_tool_calls=1, drift="lenient"))
    tools = [r for r in out.events.records if r.kind == "tool"]
    assert tools[0].result.error is None
    assert tools[1].result.error.type == "PolicyDenied" and "budget" in tools[1].result.error.message


def test_require_approval_pauses_then_approved_or_waived():
    base = chat_recording(2)
    br = new_branch(base, "b", at=4, interventions=[ToolPolicyIntervention(tool="lookup", action="require_approval")])
    out = ReplayEngine(base, br, replay_id="rp1").run()
    assert out.status == "paused" and out.requirement.kind == "approval"
    req = out.requirement
    approved = ReplayEngine(
        base, br, replay_id="rp1", decisions={req.id: req.model_copy(update={"status": "satisfied"})}
    ).run()
    assert approved.status == "completed"
    assert [strip(r) for r in approved.events.records] == [strip(r) for r in base.records]
    w = ReplayEngine(
        base,
        br.model_copy(update={"policy": Policy(drift="lenient")}),
        replay_id="rp1",
        decisions={req.id: req.model_copy(update={"status": "waived"})},
    ).run()
    assert w.status == "completed"
    assert {r.seq: r for r in w.events.records}[4].result.error.type == "PolicyDenied"


def test_max_steps_stops_the_loop():
    base = chat_recording(5)
    out = run(base, at=1, policy=Policy(max_steps=2))
    assert out.status == "completed" and out.stop_reason == "max_steps"
    assert out.steps == 2
    assert sum(1 for r in out.events.records if r.kind == "model") == 2
    assert out.comparability.level == "partial"
    assert any("max_steps" in r for r in out.comparability.reasons)


def test_unapplied_intervention_is_reported_not_ignored():
    base = chat_recording(3)
    early = ModelResponse(message=ChatMessage(role="assistant", content="done early"), finish_reason="stop")
    out = run(
        base,
        at=3,
        interventions=[
            ModelResponseIntervention(seq=3, response=early),
            ToolResultIntervention(seq=6, result=ToolResult(content="never used")),
        ],
    )
    assert out.status == "completed"
    assert out.comparability.level == "none"
    assert any("intervention 1" in r and "never applied" in r for r in out.comparability.reasons)


def test_recorded_model_error_is_replayed():
    from core.record.recording import ErrorInfo, ModelRecord

    base = chat_recording(1)
    d = base.to_dict()
    d.pop("digest")
    rec = Recording.from_dict(d)
    last = rec.records[3]
    rec.records[3] = ModelRecord(
        seq=last.seq,
        key=last.key,
        model=last.model,
        request=last.request,
        error=ErrorInfo(type="timeout", message="slow"),
    )
    rec = Recording.loads(rec.dumps())
    out = run(rec, at=1)
    assert out.status == "completed"
    assert out.events.records[3].error.type == "timeout"


def test_engine_runs_once():
    base = chat_recording(1)
    eng = ReplayEngine(base, new_branch(base, "b", at=1))
    eng.run()
    with pytest.raises(RuntimeError):
        eng.run()


def test_a_dry_run_of_the_recorded_value_as_intervention_stays_on_the_base_path():
    """An intervention that gives the call its recorded result changes nothing after it:
    the dry run predicts recorded answers, as the replay gives them."""
    base = chat_recording(3)
    rec4 = next(r for r in base.records if r.seq == 4)
    same = new_branch(base, "b", at=4, interventions=[ToolResultIntervention(seq=4, result=rec4.result)])
    answers = [x["answer"] for x in predict(base, same)["predictions"]]
    assert answers[3] == "intervention" and set(answers[:3] + answers[4:]) == {"recorded"}
    out = ReplayEngine(base, same).run()
    assert out.status == "completed" and out.answers.get("recorded") == len(answers) - 1


def test_dry_run_predictions():
    base = chat_recording(3)
    br = new_branch(base, "b", at=4, interventions=[ToolResultIntervention(seq=4, result=ToolResult(content=1))])
    p = predict(base, br)
    answers = [(x["base_seq"], x["answer"]) for x in p["predictions"]]
    assert answers[:4] == [(1, "recorded"), (2, "recorded"), (3, "recorded"), (4, "intervention")]
    assert answers[4] == (5, "requirement")
    lenient = br.model_copy(update={"policy": Policy(drift="lenient")})
    p2 = predict(base, lenient)
    assert [a for _, a in [(x["base_seq"], x["answer"]) for x in p2["predictions"]]][4:] == [
        "drift",
        "recorded",
        "drift",
    ]
    live = br.model_copy(update={"policy": Policy(model="live")})
    assert predict(base, live)["status"] == "failed"
    p3 = predict(base, live, executor_wired=True)
    assert p3["predictions"][4]["answer"] == "live" and p3["predictions"][5]["answer"] == "unknown"
    # and the real run agrees with the prediction where it is known
    out = ReplayEngine(base, lenient).run()
    assert [out.sources[s] for s in (1, 2, 3, 4, 5, 6, 7)] == [
        "recorded",
        "recorded",
        "recorded",
        "intervention",
        "drift",
        "recorded",
        "drift",
    ]


def test_progress_and_cancel():
    base = chat_recording(3)
    seen = []
    out = run(base, at=1, on_event=lambda rec, src: seen.append((rec.seq, src)))
    assert seen == [(r.seq, "recorded") for r in base.records]
    assert out.status == "completed"
    polls = []

    def cancel():
        polls.append(1)
        return len(polls) >= 4

    out = run(base, at=1, cancel=cancel)
    assert out.status == "failed" and out.error.type == "Cancelled"
    assert len(out.events.records) == 4


def test_safety_limit_stops_a_fixture_loop():
    from core.record.recording import ToolCall

    base = chat_recording(1)
    again = ModelResponse(
        message=ChatMessage(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="call_again", name="lookup", arguments={"q": "item-0"})],
        )
    )
    gw = FixtureGateway(
        [
            Fixture(kind="model", name=MODEL, output=again.to_json_obj()),
            Fixture(kind="tool", name="lookup", output={"content": "same again"}),
        ]
    )
    out = run(
        base,
        at=2,
        interventions=[ToolResultIntervention(seq=2, result=ToolResult(content="other"))],
        fixtures=gw,
        policy=Policy(drift="strict"),
    )
    assert out.status == "completed" and out.stop_reason == "max_steps"
    assert out.steps == 10 * 2 + 100
    assert any("safety limit" in r for r in out.comparability.reasons)
    assert Recording.loads(out.events.dumps())  # repeated tool_call_ids were made unique


def test_branching_a_replay_grows_the_tree():
    base = chat_recording(2)
    br = new_branch(
        base,
        "base.json",
        at=2,
        interventions=[ToolResultIntervention(seq=2, result=ToolResult(content=5))],
        policy=Policy(drift="lenient"),
    )
    events = ReplayEngine(base, br).run().events
    events = Recording.loads(events.dumps())
    child = new_branch(events, "events.json", at=events.records[-1].seq)
    assert child.parent == br.id
    out = ReplayEngine(events, child).run()
    assert out.comparability.level == "full"
    assert [strip(r) for r in out.events.records] == [strip(r) for r in events.records]


def _text_action_base() -> Recording:
    """chat_recording(3) with the tool calls removed from the model responses: the tool
    records are then 'text actions' the generic loop cannot derive."""
    base = chat_recording(3)
    d = base.to_dict()
    d.pop("digest")
    for r in d["records"]:
        if r["kind"] == "model":
            r["response"]["message"].pop("tool_calls", None)
    return Recording.from_dict(d)


def test_generic_loop_reports_what_it_cannot_follow():
    base = _text_action_base()
    out = run(
        base,
        at=4,
        interventions=[ToolResultIntervention(seq=4, result=ToolResult(content="x"))],
        policy=Policy(drift="lenient"),
    )
    assert out.status == "completed"
    assert out.comparability.level == "none"
    assert any(
        "cannot follow this base's agent" in r and "not listed in the model response" in r
        for r in out.comparability.reasons
    )
    # the changed tool result still reaches the next model request
    assert {r.seq: r for r in out.events.records}[5].request.messages[-1].content == "x"
    # an unchanged branch of the same base is still the base
    same = run(base, at=4)
    assert same.comparability.level == "full"
    assert [strip(r) for r in same.events.records] == [strip(r) for r in base.records]


def test_renamed_tool_call_ids_still_pair_with_their_calls():
    base = chat_recording(2)
    d = base.to_dict()
    d.pop("digest")
    for r in d["records"]:
        if r["kind"] == "tool":
            r["tool_call_id"] += "~2"  # as an importer does to keep ids unique
    base = Recording.from_dict(d)
    out = run(
        base,
        at=2,
        interventions=[ToolResultIntervention(seq=2, result=ToolResult(content="y"))],
        policy=Policy(drift="lenient"),
    )
    assert out.status == "completed" and out.comparability.level == "partial"
    calls = [r for r in out.events.records if r.kind in ("tool", "model")]
    assert [r.kind for r in calls] == ["model", "tool", "model", "tool", "model"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_any_tool_override_gives_a_valid_replay(data):
    n = data.draw(st.integers(1, 6))
    base = random_recording(
        lambda a, b: data.draw(st.integers(a, b)),
        lambda: data.draw(st.booleans()),
        lambda xs: data.draw(st.sampled_from(xs)),
        n,
    )
    tools = [r for r in base.records if r.kind == "tool"]
    if not tools:
        return
    t = data.draw(st.sampled_from(tools))
    at = data.draw(st.sampled_from([r.seq for r in base.records if r.seq <= t.seq]))
    for pol in (Policy(), Policy(drift="lenient")):
        out = run(
            base, at=at, interventions=[ToolResultIntervention(seq=t.seq, result=ToolResult(content="zz"))], policy=pol
        )
        assert out.status in ("completed", "paused"), out.error
        assert out.first_divergence is not None and out.first_divergence.base_seq <= t.seq
        Recording.loads(out.events.dumps())
