"""The deterministic sample agent: record, replay, planted faults, executor, samples."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from core.errors import PolicyDenied, ReplayMismatch
from core.examples import sample_agent as sa
from core.record.recording import ModelRecord, ModelRequest, Recording, ToolRecord, ToolResult
from core.replay.boundary import Executor, load_executor
from core.replay.session import Harness, ReplayChatModel, ReplayFallback, ReplayMode, ReplaySession
from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"
TIMING = {"at", "duration_seconds", "created_at"}


def strip_timing(value: Any) -> Any:
    """The document without wall-clock fields (they are measured, not deterministic)."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if k not in TIMING and k != "digest"}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def tool_records(rec: Recording) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


# ---------------------------------------------------------------------- record → replay


@pytest.mark.parametrize("task", sorted(sa.TASKS))
@pytest.mark.parametrize("fault", [None, *sa.FAULT_KINDS])
def test_record_then_replay_gives_identical_results_with_zero_live_calls(
    task: str, fault: str | None, tmp_path: Path
) -> None:
    f = sa.Fault(fault, 1 if task == "support-003" else None) if fault else None
    recorded = sa.record_run(task, f)
    path = tmp_path / "run.json"
    recorded.session.save(path)
    replayed = sa.replay_run(path)
    assert replayed.output == recorded.output
    assert replayed.live_calls == {"model": 0, "tool": 0}
    stats = replayed.session.stats
    counts = recorded.recording.counts_by_kind()
    assert stats.live == 0 and stats.live_fallback == 0
    assert stats.replayed == counts["tool"] + counts["model"]
    assert replayed.session.unconsumed() == []
    assert sa.evaluate(recorded.session.metadata["task"], replayed.output)[0] == recorded.outcome


def test_replayed_events_mirror_the_recorded_calls() -> None:
    recorded = sa.record_run()
    replayed = sa.replay_run(recorded.recording)
    calls = [r for r in recorded.recording.records if r.kind in ("tool", "model")]
    served = [r for r in replayed.session.events if r.kind in ("tool", "model")]
    assert [(r.kind, r.key) for r in served] == [(r.kind, r.key) for r in calls]
    assert all(r.replayed for r in served)
    for rec, srv in zip(calls, served):
        if rec.kind == "tool":
            assert srv.result == rec.result and srv.tool_call_id == rec.tool_call_id
        else:
            assert srv.response == rec.response
    # spans ran on every replayed tool call, tagged replayed
    tool_spans = [s for s in replayed.harness.tracer.spans if s.name == "tool.execute"]
    assert len(tool_spans) == len(tool_records(recorded.recording))
    assert all(s.attributes["replayed"] is True for s in tool_spans)


def test_replay_of_a_changed_agent_input_is_missing_not_misread() -> None:
    recorded = sa.record_run("support-001")
    other = dict(sa.TASKS["support-001"], message="Hi, my mug set from order A1001 arrived broken. ana@example.com")
    with pytest.raises(ReplayMismatch) as err:
        sa.replay_run(recorded.recording, task=other)
    assert err.value.kind == "model" and err.value.reason == "missing"
    assert err.value.recorded == recorded.recording.counts_by_kind()["model"]


def test_live_fallback_completes_a_changed_task_and_records_it() -> None:
    recorded = sa.record_run("support-001")
    other = dict(sa.TASKS["support-001"], message="Hi, my mug set from order A1001 arrived broken. ana@example.com")
    replayed = sa.replay_run(recorded.recording, fallback=ReplayFallback.LIVE, task=other)
    assert replayed.output["refund"]["sku"] == "MG-4"
    stats = replayed.session.stats
    assert stats.live_fallback > 0 and stats.replayed > 0  # lookup_customer and get_order replayed
    assert replayed.live_calls["model"] + replayed.live_calls["tool"] == stats.live_fallback
    assert all(r.live_fallback for r in replayed.session.recording.records[len(recorded.recording.records) :])


# ---------------------------------------------------------------------- outcomes and faults


def test_a_clean_run_succeeds_with_attribution_records() -> None:
    run = sa.record_run()
    meta = run.session.metadata
    assert (run.outcome, meta["outcome"]) == ("success", "success")
    assert "fault" not in meta
    assert meta["executor"] == sa.EXECUTOR_SPEC == "core.sample_agent:make_executor"
    assert meta["task"] == sa.TASKS[sa.DEFAULT_TASK]
    assert run.output["refund"] == {
        "refund_id": "R-A1001-BL-200",
        "order_id": "A1001",
        "sku": "BL-200",
        "amount": 89.99,
        "status": "issued",
    }
    counts = run.recording.counts_by_kind()
    assert counts["snapshot"] == 1 and counts["lifecycle"] == 6
    # the refund above the threshold paused on a supervisor-approval interrupt
    (interrupt,) = [r for r in run.recording.records if r.kind == "interrupt"]
    nxt = run.recording.records[interrupt.seq + 1]
    assert interrupt.value["tool"] == "issue_refund" and nxt.kind == "tool" and nxt.tool == "issue_refund"
    assert interrupt.value["tool_call_id"] == nxt.tool_call_id


def test_corrupted_result_fault() -> None:
    run = sa.record_run(fault=sa.Fault("corrupted-result", 1))
    fault = run.session.metadata["fault"]
    assert run.outcome == "failure" == run.session.metadata["outcome"]
    assert (fault["kind"], fault["step"], fault["tool"]) == ("corrupted-result", 1, "get_order")
    rec = run.recording.records[fault["seq"]]
    assert isinstance(rec, ToolRecord) and rec.tool == "get_order"
    honest = sa.live_tool(rec.tool, rec.arguments)
    assert rec.result.content != honest.content and rec.result.content["customer_id"] == "C-2002"
    # the agent read the bad data and changed course: no policy check, no refund
    assert [r.tool for r in tool_records(run.recording)] == ["lookup_customer", "get_order"]
    assert "not on your account" in run.output["reply"]


def test_tool_error_fault() -> None:
    run = sa.record_run(fault=sa.Fault("tool-error", 2))
    fault = run.session.metadata["fault"]
    rec = run.recording.records[fault["seq"]]
    assert isinstance(rec, ToolRecord) and rec.tool == "check_refund_policy" == fault["tool"]
    assert rec.result.error.type == "ServiceUnavailable" and run.recording.first_error() is rec
    assert run.outcome == "failure" and "escalated" in run.output["reply"]


def test_wrong_tool_fault() -> None:
    run = sa.record_run(fault=sa.Fault("wrong-tool", 3))
    fault = run.session.metadata["fault"]
    rec = run.recording.records[fault["seq"]]
    assert isinstance(rec, ModelRecord)
    assert rec.response.message.tool_calls[0].name == "cancel_order"
    assert sa.scripted_model(rec.request).message.tool_calls[0].name == "issue_refund"  # what was due
    assert run.output["cancelled"] is True and run.outcome == "failure"
    assert run.session.metadata["outcome_reason"] == "the order was cancelled instead of refunded"


@pytest.mark.parametrize("kind", sa.FAULT_KINDS)
@pytest.mark.parametrize("step", [0, 1, 2, 3, 4])
def test_every_fault_at_every_tool_step_fails_the_run(kind: str, step: int) -> None:
    run = sa.record_run(fault=sa.Fault(kind, step))
    assert run.outcome == "failure", (kind, step, run.output)
    assert run.recording.records[run.session.metadata["fault"]["seq"]].kind == (
        "model" if kind == "wrong-tool" else "tool"
    )


def test_unreachable_fault_step_is_a_clear_error() -> None:
    with pytest.raises(sa.SampleAgentError, match="never reached: the run made 6 model call"):
        sa.record_run(fault=sa.Fault("tool-error", 5))  # step 5 is the final answer
    with pytest.raises(sa.SampleAgentError, match="unknown fault kind 'oops'"):
        sa.Fault("oops", 1)
    with pytest.raises(sa.SampleAgentError, match=">= 0"):
        sa.Fault("tool-error", -1)
    with pytest.raises(sa.SampleAgentError, match="unknown task 'nope'"):
        sa.record_run("nope")


def test_fixing_the_bad_tool_result_makes_the_agent_succeed() -> None:
    """What the replay engine does with an intervention: the agent's own code decides."""
    run = sa.record_run(fault=sa.Fault("corrupted-result", 1))
    bad = run.recording.records[run.session.metadata["fault"]["seq"]]
    executor = sa.make_executor()
    session = ReplaySession.from_recording(run.recording, ReplayMode.REPLAY, ReplayFallback.LIVE)
    harness = Harness(session, sa.TOOLS, models=[ReplayChatModel(session, sa.scripted_model, sa.MODEL_NAME)])

    class Intervened:
        def call_model(self, model, request):
            return harness.call_model(model, request)

        def call_tool(self, name, arguments, tool_call_id=None):
            result = harness.call_tool(name, arguments, tool_call_id)
            if tool_call_id == bad.tool_call_id:
                return executor.live_tool(name, arguments)  # override the corrupted result
            return result

    output = executor.run(Intervened(), run.session.metadata["task"])
    assert sa.evaluate(run.session.metadata["task"], output) == ("success", "refunded 89.99 for BL-200 and confirmed")
    assert session.stats.replayed == 4 and session.stats.live_fallback > 0


def test_model_decisions_follow_tool_results() -> None:
    """Same transcript, one tool result changed → a different next call."""
    ok = sa.record_run()
    req = next(
        r.request
        for r in ok.recording.records
        if isinstance(r, ModelRecord)
        and r.response.message.tool_calls
        and r.response.message.tool_calls[0].name == "issue_refund"
    )
    assert sa.scripted_model(req).message.tool_calls[0].arguments["amount"] == 89.99

    def with_policy(edit) -> ModelRequest:
        msgs = [
            m.model_copy(update={"content": edit(m.content)}) if m.name == "check_refund_policy" else m
            for m in req.messages
        ]
        return req.model_copy(update={"messages": msgs})

    changed = with_policy(lambda c: c.replace("89.99", "24.5"))
    assert sa.scripted_model(changed).message.tool_calls[0].arguments["amount"] == 24.5
    refused = with_policy(lambda c: c.replace('"eligible":true', '"eligible":false'))
    final = sa.scripted_model(refused).message
    assert not final.tool_calls and "not eligible" in final.text


def test_not_eligible_task_succeeds_without_a_refund() -> None:
    run = sa.record_run("support-003")
    assert run.outcome == "success" and run.output["refund"] is None
    assert "not eligible" in run.output["reply"]


def test_small_refund_needs_no_approval() -> None:
    run = sa.record_run("support-002")
    assert run.outcome == "success" and run.recording.counts_by_kind()["interrupt"] == 0


def test_supervisor_denial_raises_live_and_in_replay() -> None:
    task = dict(sa.TASKS["support-001"], supervisor="deny")
    run = sa.record_run(task)
    assert run.outcome == "failure" and "approval refused" in run.reason
    assert run.output is None
    assert not any(r.kind == "tool" and r.tool == "issue_refund" for r in run.recording.records)
    clean = sa.record_run("support-001")
    with pytest.raises(PolicyDenied, match="approval refused"):
        sa.replay_run(clean.recording, task=task)  # recorded answer exists; still denied


def test_evaluate_judges_outputs() -> None:
    task = sa.TASKS["support-001"]
    good = sa.record_run().output
    assert sa.evaluate(task, good)[0] == "success"
    assert sa.evaluate(task, None) == ("failure", "the run produced no output")
    assert sa.evaluate(task, {**good, "stopped": "max_turns"})[0] == "failure"
    assert sa.evaluate(task, {**good, "confirmation_sent": False}) == (
        "failure",
        "refund issued but the customer was not told",
    )
    assert "wrong refund" in sa.evaluate(task, {**good, "refund": {**good["refund"], "amount": 114.49}})[1]
    assert "although none is due" in sa.evaluate(sa.TASKS["support-003"], good)[1]


def test_max_turns_stops_the_loop() -> None:
    runtime = Harness(
        ReplaySession("live"),
        sa.TOOLS,
        models=[ReplayChatModel(ReplaySession("live"), sa.scripted_model, sa.MODEL_NAME)],
    )
    out = sa.run_agent(runtime, "support-001", max_turns=2)
    assert out["stopped"] == "max_turns" and out["turns"] == 2
    assert sa.evaluate("support-001", out)[0] == "failure"


# ---------------------------------------------------------------------- executor


def test_make_executor_satisfies_the_executor_protocol() -> None:
    executor = load_executor(sa.EXECUTOR_SPEC)
    assert isinstance(executor, Executor) and isinstance(executor, sa.SampleAgentExecutor)
    assert executor.live_tool("get_order", {"order_id": "A1001"}).content["total"] == 114.49
    assert executor.live_tool("get_order", {"order_id": "Z9"}).error.type == "ToolFailure"
    assert executor.live_tool("nope", {}).error.type == "UnknownTool"
    recorded = sa.record_run()
    first = recorded.recording.records[3]
    assert isinstance(first, ModelRecord)
    assert executor.live_model(sa.MODEL_NAME, first.request) == first.response


def test_executor_runs_the_recorded_task_from_metadata() -> None:
    recorded = sa.record_run("support-002")
    session = ReplaySession.from_recording(recorded.recording)
    harness = Harness(session, {}, models=[ReplayChatModel(session, None, sa.MODEL_NAME)])
    out = sa.make_executor().run(harness, recorded.recording.metadata["task"])
    assert out == recorded.output and session.stats.live == 0


def test_tools_are_deterministic_and_use_no_clock_randomness_or_network() -> None:
    tree = ast.parse(Path(sa.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not imported & {"time", "random", "datetime", "socket", "urllib", "http", "requests", "uuid", "os"}
    for name, args in [
        ("lookup_customer", {"email": "ana@example.com"}),
        ("send_message", {"customer_id": "C-1001", "text": "hi"}),
        ("issue_refund", {"order_id": "A1001", "sku": "BL-200", "amount": 10}),
    ]:
        assert sa.live_tool(name, args) == sa.live_tool(name, args)
    assert (
        sa.live_tool("issue_refund", {"order_id": "A1001", "sku": "BL-200", "amount": 500}).error.type == "ToolFailure"
    )


def test_recording_twice_gives_the_same_recording_but_timing() -> None:
    a = sa.record_run(fault=sa.Fault("wrong-tool")).recording.to_dict()
    b = sa.record_run(fault=sa.Fault("wrong-tool")).recording.to_dict()
    assert strip_timing(a) == strip_timing(b)


# ---------------------------------------------------------------------- committed samples


def test_committed_samples_are_current_and_valid(tmp_path: Path) -> None:
    from inspector.cli import main as cli_main

    written = sa.write_samples(tmp_path)
    assert sorted(p.name for p in written) == sorted(sa.SAMPLE_FILES.values())
    for fresh in written:
        committed = SAMPLES / fresh.name
        assert committed.exists(), f"{committed} missing: run python -m core.examples.sample_agent samples"
        assert strip_timing(Recording.load(committed).to_dict()) == strip_timing(Recording.load(fresh).to_dict()), (
            f"{committed.name} is stale: run python -m core.examples.sample_agent samples"
        )
    assert cli_main(["validate", *map(str, sorted(SAMPLES.glob("sample-agent-*.json")))]) == 0


def test_committed_samples_explain_themselves() -> None:
    interrupts = 0
    for path in sorted(SAMPLES.glob("sample-agent-*.json")):
        rec = Recording.load(path)
        counts = rec.counts_by_kind()
        assert counts["snapshot"] >= 1 and counts["lifecycle"] >= 1, path.name
        interrupts += counts["interrupt"]
        meta = rec.metadata
        assert meta["executor"] == sa.EXECUTOR_SPEC and meta["task"]["task_id"] == sa.DEFAULT_TASK
        if path.name == "sample-agent-success.json":
            assert meta["outcome"] == "success" and "fault" not in meta
        else:
            kind = path.name.removeprefix("sample-agent-fault-").removesuffix(".json")
            assert meta["outcome"] == "failure" and meta["fault"]["kind"] == kind
            assert set(meta["fault"]) >= {"seq", "kind", "description"}
        replayed = sa.replay_run(path)
        assert replayed.live_calls == {"model": 0, "tool": 0}
        assert sa.evaluate(meta["task"], replayed.output)[0] == meta["outcome"]
    assert interrupts >= 1


# ---------------------------------------------------------------------- command line


def test_cli_record_and_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f.json"
    assert sa.main(["record", "--fault", "tool-error", "--step", "1", "-o", str(out)]) == 0
    assert "failure" in capsys.readouterr().out
    meta = Recording.load(out).metadata
    assert meta["fault"]["tool"] == "get_order"
    assert sa.main(["replay", str(out)]) == 0
    assert '"live_calls"' in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["record", "--fault", "bogus", "-o", "x.json"], "unknown fault kind 'bogus'"),
        (["record", "--fault", "wrong-tool", "--step", "9", "-o", "x.json"], "never reached"),
        (["record", "--step", "1", "-o", "x.json"], "--step needs --fault"),
        (["record", "--task", "nope", "-o", "x.json"], "unknown task 'nope'"),
        (["replay", "missing.json"], "missing.json: no such file"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert sa.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "x.json").exists()


def test_tool_result_rendering_is_what_the_model_reads() -> None:
    assert sa._tool_text(ToolResult(content={"b": 1, "a": 2})) == '{"a":2,"b":1}'
    assert sa._tool_text(ToolResult(error={"type": "E", "message": "m"})) == "ERROR E: m"
