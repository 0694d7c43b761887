"""Branches of real imported runs that continue (docs/replay.md, "Continuing an imported
run"): the provider executor answers the model calls the recording cannot, against a
scripted stand-in provider on 127.0.0.1; SWE-agent's text actions are parsed from the new
replies; tau-bench's customer speaks through ``user`` requirements or a live user
simulator; provider failures end the replay ``failed``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from core.record.recording import Recording, ToolResult
from core.replay.boundary import ExecutorChoice
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.replays import resume_replay, start_replay
from core.workspace import Workspace
from tests.builders import SAMPLES

from .upstream import Upstream

SWE = SAMPLES / "swe-agent-pydicom-1458.json"
TAU = SAMPLES / "tau-bench-airline-task0-trial0.json"
ACCEPTED = "File updated. Please review the changes and make sure they are correct.\n"
BOOKED = '{"reservation_id": "ZZZ999", "status": "booked"}'


def _copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copy(src, dst)
    return dst


def _start(ws: Workspace, path: Path, up: Upstream, *, at: int, result: str, **policy: Any) -> tuple[Any, Any]:
    base = Recording.load(path)
    branch = new_branch(
        base,
        str(path),
        at=at,
        interventions=[ToolResultIntervention(seq=at, result=ToolResult(content=result))],
        policy=Policy(model="live", **policy),
    )
    return start_replay(ws, str(path), branch, executor=ExecutorChoice(f"provider:openai@{up.openai_url}"), base=base)


def _sent(up: Upstream) -> list[dict[str, Any]]:
    return [body for kind, body in up.requests if kind == "openai.chat"]


# ---------------------------------------------------------------------- SWE-agent 0.x: text actions


def test_a_swe_agent_branch_goes_on_through_parsed_actions(tmp_path: Path, upstream: Upstream, capsys) -> None:
    path = _copy(SWE, tmp_path)
    upstream.script = [
        ("Let me check the edit.\n\n```\npython -c 'import pydicom; print(pydicom.__version__)'\n```", []),
        ("The version looks right. Let's submit.\n\n```\nsubmit\n```", []),
    ]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=11, result=ACCEPTED, live_model="gpt-4o")
        # the new reply's action was parsed into a tool call nobody recorded: a requirement
        assert rec.status == "paused", rec.error
        req = out.requirement
        assert (req.kind, req.name) == ("tool", "bash")
        assert req.arguments == {"command": "python -c 'import pydicom; print(pydicom.__version__)'"}
        # the request the provider got: the recorded history, then the accepted edit as
        # SWE-agent's observation message (state lines carried), for the swapped-in model
        [first] = _sent(upstream)
        assert first["model"] == "gpt-4o" and not first.get("stream")
        last = first["messages"][-1]
        assert last["role"] == "user" and last["content"].startswith(ACCEPTED)
        assert last["content"].endswith("(Current directory: /pydicom__pydicom)\nbash-$")
        ws.attach_fixture(req.id, {"content": "2.2.0\n"}, source="test")
        rec2, out2 = resume_replay(ws, rec.id)
    assert rec2.status == "completed", rec2.error
    assert rec2.comparability.level == "partial"
    assert len(_sent(upstream)) == 2  # the first live answer was reused by the resume
    events = {r.seq: r for r in out2.events.records}
    rows = [(events[s].kind, getattr(events[s], "tool", None), src) for s, src in sorted(out2.sources.items())]
    assert rows[:11] == [(events[s].kind, getattr(events[s], "tool", None), "recorded") for s in range(11)]
    assert rows[11:] == [
        ("tool", "edit", "intervention"),
        ("model", None, "live"),
        ("tool", "bash", "fixture"),
        ("model", None, "live"),
        ("tool", "submit", "recorded"),  # `submit` is recorded: its answer is the base's patch
    ]
    # the tool records made from parsed text say so, and the swap shows on every live call
    assert events[13].meta == {"action_parser": "swe_agent.thought_action"}
    for s in (12, 14):
        assert events[s].meta["live_model"] == "gpt-4o" and events[s].live_fallback
        assert "model swapped: unknown → gpt-4o (policy live_model)" in out2.reasons[s]
    assert out2.stop_reason == "final" and out2.output.startswith("\ndiff --git")  # submit ends SWE-agent's run
    # the swap is in the timeline's name column too
    from core.analysis.timeline import TimelineIndex

    names = TimelineIndex(out2.events).names
    assert names[12] == names[14] == "unknown → gpt-4o" and names[10] == "unknown"
    out2.events.save(tmp_path / "events.json")
    code, info = _cli(capsys, "info", tmp_path / "events.json")
    assert code == 0 and "models          unknown ×6, unknown → gpt-4o ×2" in info
    # the outcome line says the submitted patch is the base's recorded answer, not a new one
    from core.analysis.outcome import compare_outcomes

    lines = compare_outcomes(Recording.load(path), out2.events)["lines"]
    assert lines[1].endswith("the same as the base's — the recorded answer to the same call, not a new result")
    # the fixture's output came back to the model as SWE-agent's next observation message
    assert _sent(upstream)[1]["messages"][-1]["content"].startswith("2.2.0\n\n(Open file: ")


def test_an_unreadable_reply_gets_the_formats_format_error_turn(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(SWE, tmp_path)
    upstream.script = [("I am not sure what to do next.", []), ("Submitting.\n```\nsubmit\n```", [])]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=11, result=ACCEPTED, live_model="gpt-4o")
    assert rec.status == "completed", rec.error
    first, second = _sent(upstream)
    # the re-ask: the unreadable reply, then the format error naming the problem ...
    assert second["messages"][-2] == {"role": "assistant", "content": "I am not sure what to do next."}
    assert second["messages"][-1]["role"] == "user"
    assert "not formatted correctly (no fenced command block" in second["messages"][-1]["content"]
    assert second["messages"][:-2] == first["messages"]
    models = [r for r in out.events.records if r.kind == "model" and r.live_fallback]
    assert models[1].meta["format_error_turn"] == "no fenced command block (```…```) in the reply"
    assert "format_error_turn" not in models[0].meta
    assert "format-error turn" in out.reasons[models[1].seq]
    # ... and no tool call came of the unreadable reply
    assert [r.tool for r in out.events.records if r.kind == "tool" and r.seq > 11] == ["submit"]


def test_replies_unreadable_past_the_requeries_stop_the_run(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(SWE, tmp_path)
    upstream.script = [(f"thinking {i}", []) for i in range(6)]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=11, result=ACCEPTED, live_model="gpt-4o")
    assert rec.status == "completed" and out.stop_reason == "format_error"
    assert len(_sent(upstream)) == 4  # the reply and its three re-asks (SWE-agent's max_requeries)
    # the re-asks do not pile up: each carries only the latest unreadable reply
    assert all(len(b["messages"]) == len(_sent(upstream)[0]["messages"]) + 2 for b in _sent(upstream)[1:])


def test_an_unknown_model_without_live_model_is_a_clear_error(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(SWE, tmp_path)
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=11, result=ACCEPTED)
    assert rec.status == "failed" and "set the policy's live_model" in rec.error.message
    assert upstream.requests == []


# ---------------------------------------------------------------------- tau-bench: the customer's turns


def test_a_tau_bench_branch_asks_the_customer_then_goes_on(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(TAU, tmp_path)
    upstream.script = [("Your reservation ZZZ999 is booked. Anything else?", []), ("Have a nice flight!", [])]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=14, result=BOOKED)
        # the agent ended its turn: the customer's next message is a user requirement,
        # offering the next message the customer recorded
        assert rec.status == "paused" and out.requirement.kind == "user"
        assert out.requirement.default == "Yes, I confirm. Please go ahead with this payment."
        ws.decide_requirement(out.requirement.id, "satisfied", answer="No, that's all. Thanks!")
        rec, out = resume_replay(ws, rec.id)
        # the run went on with the answer; at the end, the customer's last words are offered
        assert rec.status == "paused" and out.requirement.kind == "user"
        assert _sent(upstream)[1]["messages"][-1] == {"role": "user", "content": "No, that's all. Thanks!"}
        assert out.requirement.default == "Thank you so much for your help! ###STOP###"
        ws.decide_requirement(out.requirement.id, "satisfied", answer=out.requirement.default)
        rec, out = resume_replay(ws, rec.id)
    # tau-bench's stop marker ends the conversation
    assert rec.status == "completed" and out.output == "Have a nice flight!"
    assert out.answers == {"recorded": 14, "intervention": 1, "live": 2, "user": 2}
    spoken = [r.value["input"] for r in out.events.records if r.kind == "interrupt"]
    assert spoken == ["No, that's all. Thanks!", "Thank you so much for your help! ###STOP###"]
    assert any(
        "answered by an answer a user pinned (answer source user): 1 authored, 1 the recorded answer pinned" in r
        for r in rec.comparability.reasons
    )


def test_a_live_user_simulator_plays_the_customer(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(TAU, tmp_path)
    upstream.script = [("Booked. Anything else?", []), ("No thanks. ###STOP###", [])]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=14, result=BOOKED, user_model="gpt-sim")
        assert rec.status == "completed", (rec.error, out.requirement)
        sim = _sent(upstream)[-1]
        # the simulator's request: the task's instruction, the conversation from the customer's side
        assert sim["model"] == "gpt-sim"
        assert "You are mia_li_3668" in sim["messages"][0]["content"]
        assert sim["messages"][-1] == {"role": "user", "content": "Booked. Anything else?"}
        [said] = [r for r in out.events.records if r.kind == "interrupt"]
        assert said.live_fallback and said.value["input"] == "No thanks. ###STOP###"
        assert said.value["simulated_by"]["model"] == "gpt-sim"
        assert out.sources[said.seq] == "live" and "user simulator gpt-sim" in out.reasons[said.seq]
        assert any("user simulator gpt-sim" in r for r in rec.comparability.reasons)


# ---------------------------------------------------------------------- provider failures


class _Failing(Upstream):
    """Answers every chat request with ``status`` (an HTML page when ``status`` is 200; as
    the stand-in does when it is 0)."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status

    async def chat(self, request):  # type: ignore[override]
        from aiohttp import web

        if self.status == 0:  # healthy again
            return await super().chat(request)
        self.requests.append(("openai.chat", await request.json()))
        if self.status == 200:
            return web.Response(body=b"<html>gateway</html>", content_type="text/html")
        return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=self.status)


@pytest.mark.parametrize(
    ("status", "expect"), [(500, "http_500"), (429, "http_429"), (200, "not JSON"), (None, "timed out")]
)
def test_provider_errors_end_the_replay_failed(tmp_path: Path, monkeypatch, status: int | None, expect: str) -> None:
    import core.proxy.provider as provider

    monkeypatch.setattr(provider.time, "sleep", lambda s: None)  # retries never wait in tests
    if status is None:
        up: Upstream = Upstream(delay=2.0).start()
        monkeypatch.setenv("CHASSIS_PROVIDER_TIMEOUT", "0.2")
    else:
        up = _Failing(status).start()
    path = _copy(TAU, tmp_path)
    try:
        with Workspace.open(tmp_path / "ws") as ws:
            rec, out = _start(ws, path, up, at=14, result=BOOKED)
            stored = ws.get_replay(rec.id)
    finally:
        up.stop()
    assert rec.status == "failed" and stored.status == "failed"
    assert expect in rec.error.message, rec.error.message
    assert "live model call at seq 15 (model step 10) failed" in rec.error.message
    # the failed call is in the events as the model error; nothing after it ran
    last = out.events.records[-1]
    assert last.kind == "model" and last.error is not None and last.live_fallback
    if status in (500, 429):
        assert len(up.requests) == 4  # the call and its three retries


# ---------------------------------------------------------------------- the command line


def _cli(capsys, *args: object) -> tuple[int, str]:
    from inspector.cli import main

    code = main([str(a) for a in args])
    cap = capsys.readouterr()
    return code, cap.out + cap.err  # stdout, then what was said on stderr


def test_replay_prints_the_branchs_outcome_next_to_the_bases(tmp_path: Path, upstream: Upstream, capsys, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    path = _copy(TAU, tmp_path)
    Path("iv.json").write_text(json.dumps({"kind": "tool_result", "seq": 14, "result": {"content": BOOKED}}))
    Path("pol.json").write_text(json.dumps({"model": "live", "user_model": "gpt-sim"}))
    code, _ = _cli(capsys, "branch", "new", path, "--at", 14, "--intervention", "iv.json", "--policy", "pol.json")
    assert code == 0
    [branch] = Workspace.open(tmp_path / ".chassis-inspector").list_branches()
    upstream.script = [("Booked as ZZZ999.", []), ("Thanks! ###STOP###", [])]
    code, out = _cli(
        capsys, "replay", path, "--branch", branch.id, "--executor", f"provider:openai@{upstream.openai_url}"
    )
    assert code == 0, out
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("outcome "))
    # the base failed (reward 0); nothing evaluates the branch, and its final output differs
    assert lines[at].startswith('outcome         base:   failure (reward 0.0); final output "Your flight from New York')
    assert lines[at + 1] == (
        '                branch: not evaluated; final output "Booked as ZZZ999." (17 chars), differs from the base\'s'
    )
    assert "user_model=gpt-sim" in out
    upstream.script = [("Booked as ZZZ999.", []), ("Thanks! ###STOP###", [])]
    code, out = _cli(
        capsys, "replay", path, "--branch", branch.id, "--executor", f"provider:openai@{upstream.openai_url}", "--json"
    )
    doc = json.loads(out)
    assert doc["outcome"]["base"]["outcome"] == "failure" and doc["outcome"]["branch"]["outcome"] is None
    assert doc["outcome"]["same_final_output"] is False


def test_the_dry_run_estimates_the_live_calls_and_their_cost(tmp_path: Path, capsys, monkeypatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    path = _copy(SWE, tmp_path)
    Path("iv.json").write_text(json.dumps({"kind": "tool_result", "seq": 11, "result": {"content": ACCEPTED}}))
    Path("pol.json").write_text(json.dumps({"model": "live", "live_model": "gpt-4o"}))
    Path("prices.json").write_text(json.dumps({"gpt-4o": {"input": 2.5, "output": 10.0}}))
    assert _cli(capsys, "branch", "new", path, "--at", 11, "--intervention", "iv.json", "--policy", "pol.json")[0] == 0
    [branch] = Workspace.open(tmp_path / ".chassis-inspector").list_branches()
    args = ("replay", path, "--branch", branch.id, "--executor", "provider:openai@http://127.0.0.1:9/v1", "--dry-run")
    code, out = _cli(capsys, *args, "--prices", "prices.json", "--json")
    assert code == 0
    est = json.loads(out)["live_cost"]
    [call] = est["calls"]
    base = Recording.load(path)
    model12 = next(r for r in base.records if r.seq == 12)
    chars = sum(len(m.text) for m in model12.request.messages)
    # SWE-agent records no per-call usage: characters / 4, said so; priced as the live model
    assert call == {
        "position": 12,
        "base_seq": 12,
        "model": "gpt-4o",
        "input_tokens": -(-chars // 4),
        "output_tokens": -(-len(model12.response.message.text) // 4),
        "how": "characters / 4",
        "cost": pytest.approx((-(-chars // 4) * 2.5 + -(-len(model12.response.message.text) // 4) * 10.0) / 1e6),
    }
    assert est["estimate"] is True and est["rest_of_base"]["calls"] == 5
    code, out = _cli(capsys, *args, "--prices", "prices.json")
    assert "live model calls (an estimate): 1," in out and "(characters / 4), cost 0.0" in out
    assert "if the branch runs as long as the base: 5 more model call(s)" in out
    # recorded usage is used where there is one (tau-bench's gpt-4o calls have none either;
    # the sample agent's do): no prices → the cost is not guessed
    code, out = _cli(capsys, *args)
    assert "cost: give --prices" in out and "sending to http://127.0.0.1:9/v1" in out
    # --prices is for the dry run only
    code, out = _cli(capsys, *args[:-1], "--prices", "prices.json")
    assert code == 2 and "use it with --dry-run" in out
    # and a missing live_model on this unknown-model run is said before anything runs
    Path("pol2.json").write_text(json.dumps({"model": "live"}))
    assert _cli(capsys, "branch", "new", path, "--at", 11, "--intervention", "iv.json", "--policy", "pol2.json")[0] == 0
    other = next(b for b in Workspace.open(tmp_path / ".chassis-inspector").list_branches() if b.id != branch.id)
    args2 = ("replay", path, "--branch", other.id, "--executor", "provider:openai@http://127.0.0.1:9/v1", "--dry-run")
    code, out = _cli(capsys, *args2)
    assert code == 2 and "set the policy's live_model" in out


def test_sweep_and_audit_run_with_the_provider_executor_on_an_imported_run(
    tmp_path: Path, upstream: Upstream, capsys
) -> None:
    import json

    from core.effects.sweep import run_sweep

    path = _copy(SWE, tmp_path)
    spec = f"provider:openai@{upstream.openai_url}"
    upstream.script = [("Submitting.\n```\nsubmit\n```", []) for _ in range(3)]
    res = run_sweep(path, executor=spec, candidates="errors", strategy="knockout", live_model="gpt-4o")
    assert [r["seq"] for r in res.replays] == [11, 13, 15] and not res.skipped
    assert all(r["status"] == "completed" for r in res.replays), res.replays
    assert [b["model"] for k, b in upstream.requests] == ["gpt-4o"] * 3  # one live call per knocked-out edit
    # resampling a tool call needs an executor that runs tools: skipped, with the reason
    res = run_sweep(path, executor=spec, candidates="errors", strategy="resample", live_model="gpt-4o")
    assert len(res.skipped) == 3 and "runs no tools" in res.skipped[0]["reason"]
    # the audit's knockouts replay through the provider too
    upstream.script = [("Submitting.\n```\nsubmit\n```", []) for _ in range(30)]
    code, out = _cli(capsys, "audit", path, "--executor", spec, "--live-model", "gpt-4o", "--json")
    assert code == 0
    calls = json.loads(out)["calls"]
    knocked = [c for c in calls if c.get("knockout")]
    assert knocked and all("not run" not in c["knockout"]["detail"] for c in knocked)
    assert len(upstream.requests) > 3


def test_a_multi_agent_who_and_when_branch_is_not_continued_and_says_why(
    tmp_path: Path, upstream: Upstream, capsys, monkeypatch
) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    path = _copy(SAMPLES / "who-and-when-hand-crafted-1.json", tmp_path)
    Path("iv.json").write_text(json.dumps({"kind": "tool_result", "seq": 4, "result": {"content": "no results"}}))
    Path("pol.json").write_text(json.dumps({"model": "live", "live_model": "gpt-4o"}))
    assert _cli(capsys, "branch", "new", path, "--at", 4, "--intervention", "iv.json", "--policy", "pol.json")[0] == 0
    [branch] = Workspace.open(tmp_path / ".chassis-inspector").list_branches()
    upstream.script = [("We are done.", [])]
    code, out = _cli(
        capsys, "replay", path, "--branch", branch.id, "--executor", f"provider:openai@{upstream.openai_url}"
    )
    assert code == 4  # completed, not comparable
    status = next(x for x in out.splitlines() if x.startswith("status "))
    assert status.startswith("status          completed — not comparable: ")
    assert "a multi-agent log (2 agents speak in turn: Orchestrator, WebSurfer); nothing in it says" in status
    assert "so it is not continued" in status


# ---------------------------------------------------------------------- what the review found


def test_the_customers_turns_are_offered_from_where_the_branch_left_the_base(tmp_path: Path, upstream: Upstream):
    # a branch at the one-stop search (seq 8) whose agent first calculates (recorded at
    # seq 11), then asks: the customer's next recorded message is the one after seq 8
    path = _copy(TAU, tmp_path)
    upstream.script = [(None, [("calculate", {"expression": "152 + 103"})]), ("Which flight would you like?", [])]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=8, result='[{"flight_number": "HAT136"}]')
    assert rec.status == "paused" and out.requirement.kind == "user"
    assert out.requirement.default == "I'll go with the first option, Flight HAT136."
    assert out.sources[out.events.records[-1].seq] == "live"  # the question, asked live


def test_a_replay_failed_on_a_provider_outage_resumes_once_it_is_over(tmp_path: Path, monkeypatch) -> None:
    import core.proxy.provider as provider

    monkeypatch.setattr(provider.time, "sleep", lambda s: None)
    up = _Failing(503).start()
    path = _copy(SWE, tmp_path)
    try:
        with Workspace.open(tmp_path / "ws") as ws:
            rec, _ = _start(ws, path, up, at=11, result=ACCEPTED, live_model="gpt-4o")
            assert rec.status == "failed" and len(up.requests) == 4
            up.status = 0  # the outage is over: answers come from the script again
            up.script = [("Submitting.\n```\nsubmit\n```", [])]
            rec2, out2 = resume_replay(ws, rec.id)
    finally:
        up.stop()
    assert rec2.status == "completed", rec2.error
    assert len(up.requests) == 5  # the failed call was asked again, not reused
    # the events carry what a branch of them needs to continue too
    assert out2.events.metadata["action_parser"]["name"] == "swe_agent.thought_action"


def test_policies_the_provider_cannot_serve_fail_before_anything_runs(tmp_path: Path, upstream: Upstream) -> None:
    from core.proxy.provider import ProviderExecutor
    from core.replay.engine import ReplayEngine

    base = Recording.load(TAU)
    iv = [ToolResultIntervention(seq=14, result=ToolResult(content=BOOKED))]
    branch = new_branch(base, str(TAU), at=14, interventions=iv, policy=Policy(model="live", tool="live"))
    out = ReplayEngine(base, branch, executor=ProviderExecutor("openai", upstream.openai_url)).run()
    assert out.status == "failed" and "runs no tools, so the policy's tool source cannot be live" in out.error.message
    assert out.events.records == [] and upstream.requests == []

    class OwnAgent:  # an executor that runs its own agent loop
        def run(self, runtime, task):  # pragma: no cover - never reached
            raise AssertionError

    branch = new_branch(base, str(TAU), at=14, interventions=iv, policy=Policy(model="live", user_model="sim"))
    out = ReplayEngine(base, branch, executor=OwnAgent()).run()
    assert out.status == "failed" and "user_model needs an executor that only answers calls" in out.error.message


def test_the_live_view_sees_the_parser_and_format_error_marks(tmp_path: Path, upstream: Upstream) -> None:
    from core.proxy.provider import ProviderExecutor
    from core.replay.engine import ReplayEngine

    base = Recording.load(SWE)
    upstream.script = [("hmm", []), ("Run it.\n```\npython reproduce_bug.py\n```", []), ("```\nsubmit\n```", [])]
    iv = [ToolResultIntervention(seq=11, result=ToolResult(content=ACCEPTED))]
    branch = new_branch(base, str(SWE), at=11, interventions=iv, policy=Policy(model="live", live_model="m"))
    seen: list[tuple[Any, str]] = []
    out = ReplayEngine(
        base,
        branch,
        executor=ProviderExecutor("openai", upstream.openai_url),
        on_event=lambda r, s: seen.append((r, s)),
    ).run()
    assert out.status == "completed", out.error
    live = [r for r, s in seen if r.kind == "model" and s == "live"]
    assert "format_error_turn" in live[1].meta  # as reported, not only as stored
    tools = [r for r, s in seen if r.kind == "tool" and r.seq > 11]
    assert tools and all(r.meta and r.meta.get("action_parser") == "swe_agent.thought_action" for r in tools)
    assert [e.meta for e in out.events.records if e.kind == "tool" and e.seq > 11] == [r.meta for r in tools]


def test_a_parser_the_bases_tool_records_do_not_name_is_not_trusted(tmp_path: Path, upstream: Upstream) -> None:
    from core.proxy.provider import ProviderExecutor
    from core.replay.engine import ReplayEngine

    base = Recording.load(TAU)
    base.metadata["action_parser"] = {"name": "swe_agent.thought_action", "commands": []}  # not sealed: anyone can
    upstream.script = [("All booked, goodbye.", [])]
    iv = [ToolResultIntervention(seq=14, result=ToolResult(content=BOOKED))]
    branch = new_branch(base, str(TAU), at=14, interventions=iv, policy=Policy(model="live"))
    out = ReplayEngine(base, branch, executor=ProviderExecutor("openai", upstream.openai_url)).run()
    # a final text answer stays one (no format-error re-ask): the customer is asked next
    assert out.status == "paused" and out.requirement.kind == "user" and len(upstream.requests) == 1


def test_hostile_observations_and_markers_are_cheap_and_harmless() -> None:
    from core.importers.actions import SweAgentThoughtAction
    from core.record.recording import ChatMessage
    from core.replay.user_turns import UserTurns

    hostile = "(Open file: x" * 40_000  # 520 KB on one line: a quadratic search would take minutes
    msg = ChatMessage(role="user", content=hostile + "\n(Open file: a.py)\n(Current directory: /r)\nbash-$")
    made = SweAgentThoughtAction().observation(ToolResult(content="ok"), [msg])
    assert made.text == "ok\n(Open file: a.py)\n(Current directory: /r)\nbash-$"
    base = Recording.load(TAU)
    for marker, honoured in (("###STOP###", True), ("x", False), ("   ", False), (7, False)):
        base.metadata["user_turns"] = {"stop_marker": marker}
        assert (UserTurns(base).stop_marker() is not None) is honoured


def test_a_user_simulator_that_says_nothing_ends_the_conversation(tmp_path: Path, upstream: Upstream) -> None:
    path = _copy(TAU, tmp_path)
    upstream.script = [("Booked. Anything else?", []), (None, [("lookup", {"q": "x"})])]  # no text from the simulator
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = _start(ws, path, upstream, at=14, result=BOOKED, user_model="gpt-sim")
    assert rec.status == "completed" and out.stop_reason == "final", (rec.error, out.requirement)
    assert out.output == "Booked. Anything else?" and len(upstream.requests) == 2


class _Hostile(Upstream):
    """A provider that misbehaves: ``redirect`` (301 to another origin), ``drip`` (a valid
    answer one byte every 0.2 s), ``huge`` (a body beyond the cap), ``bad_id`` (a tool call
    whose id is a number)."""

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode
        self.auths: list[str] = []

    async def chat(self, request):  # type: ignore[override]
        import asyncio
        import json

        from aiohttp import web

        self.auths.append(request.headers.get("Authorization", ""))
        if request.path.startswith("/elsewhere"):
            return web.json_response({"error": {"message": "you followed", "type": "x"}}, status=400)
        self.requests.append(("openai.chat", await request.json()))
        ok = {
            "id": "c1",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        }
        if self.mode == "redirect":
            raise web.HTTPMovedPermanently(location=f"http://localhost:{self.port}/elsewhere/v1/chat/completions")
        if self.mode == "bad_id":
            ok["choices"][0]["message"]["tool_calls"] = [
                {"id": 1, "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ]
            return web.json_response(ok)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        if self.mode == "huge":
            chunk = b" " * (1024 * 1024)
            for _ in range(70):  # 70 MiB of whitespace, then the answer: larger than the cap
                await resp.write(chunk)
            await resp.write(json.dumps(ok).encode())
        else:  # drip
            for b in json.dumps(ok).encode():
                await resp.write(bytes([b]))
                await asyncio.sleep(0.2)
        await resp.write_eof()
        return resp


@pytest.mark.parametrize(
    ("mode", "expect"),
    [
        ("redirect", "redirects are not followed (the API key would be sent there)"),
        ("drip", "timed out: the whole answer did not come within 1 s"),
        ("huge", "the answer is larger than 64 MiB"),
        ("bad_id", "malformed answer (HTTP 200): id: Input should be a valid string"),
    ],
)
def test_a_hostile_provider_fails_the_replay_cleanly(tmp_path: Path, monkeypatch, mode: str, expect: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-KEEPMEHERE-0123456789abcdef")
    monkeypatch.setenv("CHASSIS_PROVIDER_TIMEOUT", "1")
    up = _Hostile(mode).start()
    path = _copy(TAU, tmp_path)
    try:
        with Workspace.open(tmp_path / "ws") as ws:
            rec, _ = _start(ws, path, up, at=14, result=BOOKED)
    finally:
        up.stop()
    assert rec.status == "failed" and expect in rec.error.message, rec.error.message
    # the key went only where it was sent: never to the redirect's target
    assert len(up.auths) == 1 and up.auths[0].endswith("KEEPMEHERE-0123456789abcdef")


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_a_bad_provider_timeout_is_named_before_anything_is_stored(tmp_path, capsys, monkeypatch, value) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHASSIS_PROVIDER_TIMEOUT", value)
    path = _copy(TAU, tmp_path)
    Path("b.json").write_text(
        json.dumps(
            {
                "base": {"path": str(path)},
                "checkpoint": 14,
                "interventions": [{"kind": "tool_result", "seq": 14, "result": {"content": BOOKED}}],
                "policy": {"model": "live"},
            }
        )
    )
    code, out = _cli(
        capsys, "replay", path, "--branch", "b.json", "--executor", "provider:openai@http://127.0.0.1:9/v1"
    )
    assert code == 2 and "CHASSIS_PROVIDER_TIMEOUT must be a number of seconds greater than 0" in out
    assert not (tmp_path / ".chassis-inspector").exists()


def test_retry_waits_are_capped(tmp_path: Path) -> None:
    from core.proxy.provider import MAX_WAIT, ProviderExecutor
    from core.replay.engine import ReplayEngine

    waits: list[float] = []

    class SlowDown(_Failing):
        async def chat(self, request):  # type: ignore[override]
            from aiohttp import web

            self.requests.append(("openai.chat", await request.json()))
            return web.json_response(
                {"error": {"message": "later", "type": "x"}}, status=503, headers={"retry-after": "99999"}
            )

    up = SlowDown(503).start()
    base = Recording.load(TAU)
    iv = [ToolResultIntervention(seq=14, result=ToolResult(content=BOOKED))]
    branch = new_branch(base, str(TAU), at=14, interventions=iv, policy=Policy(model="live"))
    try:
        out = ReplayEngine(base, branch, executor=ProviderExecutor("openai", up.openai_url, sleep=waits.append)).run()
    finally:
        up.stop()
    assert out.status == "failed" and waits == [MAX_WAIT] * 3


def test_fixture_attach_answers_the_customers_turn(tmp_path: Path, upstream: Upstream, capsys, monkeypatch) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    path = _copy(TAU, tmp_path)
    upstream.script = [("Booked. Anything else?", []), ("Bye!", [])]
    with Workspace.open(tmp_path / ".chassis-inspector") as ws:
        rec, out = _start(ws, path, upstream, at=14, result=BOOKED)
    req = out.requirement
    Path("said.json").write_text(json.dumps({"content": "No, thanks. ###STOP###"}))
    code, said = _cli(capsys, "fixture", "attach", req.id, "said.json")
    assert code == 0 and f"answer pinned for {req.id} (a person's turn)" in said
    code, said = _cli(capsys, "replay", "resume", rec.id)
    assert code == 0, said
    # the stop marker in the pinned message ended the conversation
    assert "completed (final)" in said and "answers         recorded 14, intervention 1, live 1, user 1" in said


def test_a_branch_policy_may_name_the_provider_executor(tmp_path: Path, upstream: Upstream, capsys, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    path = _copy(TAU, tmp_path)
    Path("iv.json").write_text(json.dumps({"kind": "tool_result", "seq": 14, "result": {"content": BOOKED}}))
    policy = {"model": "live", "executor": f"provider:openai@{upstream.openai_url}", "user_model": "sim"}
    Path("pol.json").write_text(json.dumps(policy))
    assert _cli(capsys, "branch", "new", path, "--at", 14, "--intervention", "iv.json", "--policy", "pol.json")[0] == 0
    [branch] = Workspace.open(tmp_path / ".chassis-inspector").list_branches()
    upstream.script = [("Booked.", []), ("Thanks ###STOP###", [])]
    # built in, so no --trust-executor: no code of the branch file's runs
    code, out = _cli(capsys, "replay", path, "--branch", branch.id)
    assert code == 0, out
    assert f"executor        provider:openai@{upstream.openai_url}" in out and len(upstream.requests) == 2
