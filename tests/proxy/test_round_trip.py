"""Record → replay through the proxy with the official SDKs as the agent: identical
events, the agent's output unchanged, no request reaching the upstream, no secret on
disk; interventions change what the agent does next; requirements, attach, resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.record.recording import ModelResponse, Recording, ToolResult
from core.replay.branch import ModelResponseIntervention, Policy, ToolResultIntervention

from .conftest import agent, call_view, files_hold, record, replay, resume
from .upstream import API_KEY

CASES = [
    ("openai_agent", ()),
    ("openai_agent", ("--stream",)),
    ("openai_agent", ("--responses",)),
    ("openai_agent", ("--responses", "--stream")),
    ("openai_agent", ("--responses", "--chain")),
    ("openai_agent", ("--prompt", "parallel", "--stream")),
    ("anthropic_agent", ()),
    ("anthropic_agent", ("--stream",)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[" ".join((n, *a)) for n, a in CASES])
def test_record_then_replay_is_identical(tmp_path: Path, upstream, name, args) -> None:
    log = tmp_path / "tool.log"
    argv = agent(name, *args, "--log", str(log))
    res = record(argv, tmp_path / "run.json", upstream)
    assert res.exit_code == 0 and not res.incomplete
    rec = Recording.load(tmp_path / "run.json")
    kinds = [r.kind for r in rec.records]
    assert kinds.count("model") == 2 and kinds.count("tool") >= 1
    assert all((r.meta or {}).get("observed") for r in rec.records if r.kind == "tool")
    recorded_output = rec.metadata["final_output"]
    assert recorded_output.startswith("Answer: no note for")
    sent = upstream.model_requests()
    assert log.read_text().count("lookup") == kinds.count("tool")

    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", (record_.error, outcome.requirement)
    assert upstream.model_requests() == sent  # nothing reached the provider
    assert call_view(outcome.events.records) == call_view(rec.records)
    assert outcome.first_divergence is None
    assert outcome.output == recorded_output  # the agent printed the same answer
    assert record_.comparability.level == "partial"
    assert any("unmediated" in r for r in record_.comparability.reasons)
    # the agent's tools ran again (side effects)
    assert log.read_text().count("lookup") == 2 * kinds.count("tool")
    # credentials forwarded, never written
    assert upstream.auth and all(API_KEY in a for a in upstream.auth), upstream.auth
    assert files_hold(tmp_path, API_KEY) == []
    ws.close()


def test_stream_recorded_replays_to_a_client_that_does_not_stream(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent", "--stream"), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    assert rec.records[0].meta["transport"]["stream"] is True
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws", argv=agent("openai_agent"))
    assert record_.status == "completed"
    assert call_view(outcome.events.records) == call_view(rec.records)
    assert outcome.output == rec.metadata["final_output"]
    ws.close()


def test_non_stream_recorded_replays_to_a_streaming_client(tmp_path: Path, upstream) -> None:
    record(agent("anthropic_agent"), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws", argv=agent("anthropic_agent", "--stream"))
    assert record_.status == "completed"
    assert call_view(outcome.events.records) == call_view(rec.records)
    # thinking kept apart from the answer, signature kept
    first = rec.records[0].response.message.content
    assert first[0]["type"] == "thinking" and first[0]["signature"] == "sig1"
    ws.close()


def test_rate_limit_then_success_replays_the_same(tmp_path: Path) -> None:
    from .upstream import Upstream

    up = Upstream(rate_limit_first=True).start()
    try:
        record(agent("openai_agent", "--stream"), tmp_path / "run.json", up)
        rec = Recording.load(tmp_path / "run.json")
        assert rec.records[0].error is not None and rec.records[0].error.type == "http_429:rate_limit_error"
        assert rec.records[0].meta["http_status"] == 429
        assert rec.records[1].response is not None and rec.records[1].key == rec.records[0].key
        sent = up.model_requests()
        ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
        assert record_.status == "completed"
        assert call_view(outcome.events.records) == call_view(rec.records)
        assert up.model_requests() == sent
        ws.close()
    finally:
        up.stop()


def test_model_response_intervention_changes_what_the_agent_does(tmp_path: Path, upstream) -> None:
    log = tmp_path / "tool.log"
    record(agent("openai_agent", "--log", str(log)), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    # step 0 answers with a different tool call: the agent looks up "other" instead
    changed = ModelResponse.model_validate(
        {
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_x", "name": "lookup", "arguments": {"query": "other"}}],
            },
            "finish_reason": "tool_calls",
        }
    )
    ws, record_, outcome = replay(
        tmp_path / "run.json",
        tmp_path / "ws",
        interventions=[ModelResponseIntervention(step=0, response=changed)],
    )
    assert "lookup other" in log.read_text()  # the agent ran its own tool on the new answer
    assert record_.status == "paused"
    req = outcome.requirement
    assert req.kind == "model" and req.mismatch == "missing"
    # the nearest recorded request and the JSON Pointer paths that differ
    assert req.nearest is not None and req.nearest.seq == rec.records[2].seq
    paths = {d["path"] for d in req.nearest.diff}
    assert any(p.startswith("/messages/2") for p in paths), paths
    # the tool call the agent observed is an event, answered by the agent itself
    tools = [r for r in outcome.events.records if r.kind == "tool"]
    assert tools[0].arguments == {"query": "other"} and tools[0].meta == {"observed": True}
    # attach a model fixture and resume: completed, the agent prints the fixture's answer
    ws.attach_fixture(
        req.id,
        {"message": {"role": "assistant", "content": "Final from the fixture"}, "finish_reason": "stop"},
        source="test",
    )
    record2, outcome2 = resume(ws, record_.id)
    assert record2.status == "completed", record2.error
    assert outcome2.output.strip() == "Final from the fixture"
    assert outcome2.answers.get("fixture") == 1 and outcome2.answers.get("intervention") == 1
    # the resume re-ran the command from the start: its events equal a fresh replay's
    # of the same branch with the same (branch-scoped) fixture
    from core.replay.boundary import ExecutorChoice
    from core.replay.replays import start_replay

    branch = ws.get_branch(record_.branch_id)
    record3, outcome3 = start_replay(
        ws, str(tmp_path / "run.json"), branch, executor=ExecutorChoice(record_.executor), base=rec
    )
    assert record3.status == "completed"
    assert outcome3.events.dumps() == outcome2.events.dumps()
    assert log.read_text().count("lookup other") == 3  # the agent's tool ran on every run
    ws.close()


def test_tool_result_intervention_rewrites_what_the_model_sees(tmp_path: Path, upstream) -> None:
    log = tmp_path / "tool.log"
    record(agent("openai_agent", "--log", str(log)), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    tool_seq = next(r.seq for r in rec.records if r.kind == "tool")
    ws, record_, outcome = replay(
        tmp_path / "run.json",
        tmp_path / "ws",
        interventions=[ToolResultIntervention(seq=tool_seq, result=ToolResult(content="sunny, 21 C"))],
        at=tool_seq,
    )
    # the agent's own tool ran (its process got its own result) ...
    assert log.read_text().count("lookup weather") == 2
    # ... but the request matched and shown carries the override
    assert record_.status == "paused"
    req = outcome.requirement
    tool_msgs = [m for m in req.request["messages"] if m["role"] == "tool"]
    assert tool_msgs[-1]["content"] == "sunny, 21 C"
    assert any(d["path"] == "/messages/3/content" for d in req.nearest.diff)
    assert outcome.sources[tool_seq] == "intervention"
    ws.close()


def test_key_exclusions_match_past_a_timestamp(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent", "--stamp"), tmp_path / "run.json", upstream)
    # without exclusions: the new timestamp misses, and the explanation names the path
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "paused"
    assert [d["path"] for d in outcome.requirement.nearest.diff] == ["/messages/0/content"]
    ws.close()
    # excluded: served the recorded answers, comparability partial with the path listed
    pol = Policy(key_exclusions=["/messages/0/content"])
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws2", policy=pol)
    assert record_.status == "completed", outcome.requirement
    assert record_.comparability.level == "partial"
    assert any("/messages/0/content" in r for r in record_.comparability.reasons)
    assert outcome.events.metadata["replay"]["policy"]["key_exclusions"] == ["/messages/0/content"]
    # and each call served past the difference says so
    models = [r for r in outcome.events.records if r.kind == "model"]
    assert all(r.meta.get("matched_by_key_exclusions") is True for r in models)
    assert all(r.key == r.compute_key() for r in models)  # the events keep the full canonical keys
    ws.close()


def test_previous_response_id_the_recording_does_not_hold(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent", "--bogus-prev"), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    assert "resp_not_in_any_recording" in rec.records[0].meta["history_unresolved"]
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "paused"
    assert "previous_response_id 'resp_not_in_any_recording'" in outcome.requirement.reason
    ws.close()


def test_chained_responses_are_keyed_on_their_full_history(tmp_path: Path) -> None:
    from .upstream import Upstream

    for name, args in (("chain", ("--chain",)), ("full", ())):
        up = Upstream().start()  # a fresh one each: the same response and call ids
        try:
            record(agent("openai_agent", "--responses", *args), tmp_path / f"{name}.json", up)
        finally:
            up.stop()
    chain = Recording.load(tmp_path / "chain.json")
    full = Recording.load(tmp_path / "full.json")
    # the second request: by previous_response_id in one run, the whole input in the other
    assert chain.records[2].meta["transport"]["previous_response_id"] == "resp_up1"
    assert [m.role for m in chain.records[2].request.messages] == ["system", "user", "assistant", "tool"]
    assert chain.records[2].request == full.records[2].request
    assert chain.records[2].key == full.records[2].key


def test_live_policy_sends_misses_to_the_upstream_the_environment_names(tmp_path: Path, upstream, monkeypatch) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    sent = upstream.model_requests()
    monkeypatch.setenv("OPENAI_BASE_URL", upstream.openai_url)  # where the user's own calls go
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    ws, record_, outcome = replay(
        tmp_path / "run.json",
        tmp_path / "ws",
        argv=agent("openai_agent", "--prompt", "rain"),
        policy=Policy(model="live"),
    )
    assert record_.status == "completed", (record_.error, outcome.requirement)
    assert upstream.model_requests() == sent + 2  # both model calls missed and went live
    assert outcome.output.strip() == "Answer: no note for rain"
    assert outcome.answers == {"live": 3}  # two model calls live, one tool call observed
    models = [r for r in outcome.events.records if r.kind == "model"]
    assert all(r.live_fallback for r in models)
    assert any("answered live by the executor" in r for r in record_.comparability.reasons)
    assert upstream.auth[-1].endswith(API_KEY)  # the agent's credentials, forwarded
    assert files_hold(tmp_path, API_KEY) == []
    ws.close()


@pytest.mark.parametrize("name", ["openai_agent", "anthropic_agent"])
def test_a_recorded_server_error_and_its_retry_replay_as_recorded(tmp_path: Path, name: str) -> None:
    """The SDK retried a 500 while recording; in the replay it meets the recorded 500,
    retries the same way, and meets the recorded success — the agent's run is the same."""
    from .upstream import Upstream

    up = Upstream(fail_first=500).start()
    try:
        record(agent(name), tmp_path / "run.json", up)
        rec = Recording.load(tmp_path / "run.json")
        assert rec.records[0].meta["http_status"] == 500 and rec.records[1].key == rec.records[0].key
        ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
        assert record_.status == "completed", record_.error
        assert call_view(outcome.events.records) == call_view(rec.records)
        assert outcome.output == rec.metadata["final_output"]
        ws.close()
    finally:
        up.stop()


def test_an_agent_that_exits_otherwise_than_recorded_fails_the_replay(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws", argv=agent("openai_agent", "--exit", "3"))
    assert record_.status == "failed"
    assert record_.error.type == "CommandFailed"
    assert "exited with status 3 (the recorded run exited with 0)" in record_.error.message
    assert [r.kind for r in outcome.events.records] == ["model", "tool", "model"]  # its calls are kept
    ws.close()


def test_the_recorded_command_runs_where_it_was_recorded(tmp_path: Path, upstream, monkeypatch) -> None:
    import shutil
    import sys

    home = tmp_path / "agent-home"
    home.mkdir()
    shutil.copy(Path(__file__).parent / "agents" / "openai_agent.py", home / "agent.py")
    record([sys.executable, "agent.py"], tmp_path / "run.json", upstream, cwd=str(home))  # a relative path
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["recorder"]["cwd"] == str(home.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", record_.error
    ws.close()


def test_a_paused_replay_ends_what_the_command_started(tmp_path: Path, upstream) -> None:
    """``sh -c`` starts the agent as a grandchild: a pause ends the whole process group."""
    import shlex
    import subprocess
    import sys

    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    marker = f"--prompt rain-{tmp_path.name}"
    inner = (
        shlex.join([sys.executable, str(Path(__file__).parent / "agents" / "openai_agent.py")]) + f" {marker} --hang"
    )
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws", argv=["sh", "-c", inner + "; sleep 60"])
    assert record_.status == "paused"
    ws.close()
    ps = subprocess.run(["pgrep", "-f", f"rain-{tmp_path.name}"], capture_output=True, text=True)
    assert ps.stdout.strip() == "", ps.stdout
