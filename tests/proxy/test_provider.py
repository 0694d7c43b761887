"""The provider executor: a branch continues with a live model (an OpenAI- or
Anthropic-compatible endpoint, here the stand-in on 127.0.0.1) while every tool answer
stays offline; model swaps, unknown models, retries with an injected sleep, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.proxy.provider import ProviderError, ProviderExecutor, parse_provider_spec
from core.record.recording import Recording, ToolResult
from core.replay.boundary import ExecutorChoice
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from core.replay.replays import start_replay
from core.workspace import Workspace

from .conftest import agent, files_hold, record
from .upstream import API_KEY, Upstream


def _branch(base: Recording, path: Path, **policy):
    tool_seq = next(r.seq for r in base.records if r.kind == "tool")
    return new_branch(
        base,
        str(path),
        at=tool_seq,
        interventions=[ToolResultIntervention(seq=tool_seq, result=ToolResult(content="sunny, 21 C"))],
        policy=Policy(model="live", **policy),
    )


@pytest.mark.parametrize("name", ["openai_agent", "anthropic_agent"])
def test_a_branch_continues_with_the_live_model(tmp_path: Path, upstream, monkeypatch, name: str) -> None:
    record(agent(name), tmp_path / "run.json", upstream)
    base = Recording.load(tmp_path / "run.json")
    provider = "anthropic" if name.startswith("anthropic") else "openai"
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", API_KEY)
    url = upstream.anthropic_url if provider == "anthropic" else upstream.openai_url
    sent = upstream.model_requests()
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = start_replay(
            ws, str(tmp_path / "run.json"), _branch(base, tmp_path / "run.json"),
            executor=ExecutorChoice(f"provider:{provider}@{url}"), base=base,
        )  # fmt: skip
    assert rec.status == "completed", (rec.error, out.requirement)
    assert upstream.model_requests() == sent + 1  # the one call after the change went live
    kind, body = upstream.requests[-1]
    assert kind == f"{provider}.{'messages' if provider == 'anthropic' else 'chat'}"
    assert not body.get("stream")
    shown = str(body["messages"])
    assert "sunny, 21 C" in shown  # the rebuilt request carries the intervention
    assert out.output == "Answer: sunny, 21 C"
    assert out.answers == {"recorded": 1, "intervention": 1, "live": 1}
    assert any("answered live" in r for r in rec.comparability.reasons)
    assert files_hold(tmp_path, API_KEY) == []  # the key is sent, never stored


def test_live_model_swaps_the_model_and_says_so(tmp_path: Path, upstream, monkeypatch) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    base = Recording.load(tmp_path / "run.json")
    with Workspace.open(tmp_path / "ws") as ws:
        rec, out = start_replay(
            ws, str(tmp_path / "run.json"), _branch(base, tmp_path / "run.json", live_model="gpt-other"),
            executor=ExecutorChoice(f"provider:openai@{upstream.openai_url}"), base=base,
        )  # fmt: skip
    assert rec.status == "completed"
    assert upstream.requests[-1][1]["model"] == "gpt-other"
    live_seq = next(s for s, src in out.sources.items() if src == "live")
    assert "model swapped: gpt-test → gpt-other" in out.reasons[live_seq]


def test_an_unknown_model_needs_live_model(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    base = Recording.load(tmp_path / "run.json")
    for r in base.records:  # as SWE-agent 0.x files are: no model named
        if r.kind == "model":
            r.model = "unknown"
            r.key = r.compute_key()
    branch = _branch(base, tmp_path / "run.json")
    sent = upstream.model_requests()
    out = ReplayEngine(base, branch, executor=ProviderExecutor("openai", upstream.openai_url)).run()
    assert out.status == "failed"
    assert "set the policy's live_model" in out.error.message and "nothing ran" in out.error.message
    assert out.events.records == [] and upstream.model_requests() == sent  # checked before anything ran


def test_retries_on_429_and_5xx_with_an_injected_sleep(tmp_path: Path) -> None:
    waits: list[float] = []
    up = Upstream(fail_first=503).start()
    try:
        record(agent("openai_agent"), tmp_path / "run.json", up)  # the SDK retried the 503
        base = Recording.load(tmp_path / "run.json")
        up.fail_first, up._n = 500, 0  # the next live call fails once more
        ex = ProviderExecutor("openai", up.openai_url, sleep=waits.append)
        out = ReplayEngine(base, _branch(base, tmp_path / "run.json"), executor=ex).run()
        assert out.status == "completed", out.error
        assert ex.calls == 2 and waits == [0.5]  # one retry, after the first backoff, no real wait
    finally:
        up.stop()


def test_a_provider_error_fails_the_replay_and_is_the_calls_model_error(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    base = Recording.load(tmp_path / "run.json")
    waits: list[float] = []

    # every request fails: after RETRIES retries, the call's error is the provider's
    class Always500(Upstream):
        async def chat(self, request):  # type: ignore[override]
            from aiohttp import web

            self.requests.append(("openai.chat", await request.json()))
            return web.json_response({"error": {"message": "down", "type": "server_error"}}, status=500)

    bad = Always500().start()
    try:
        ex = ProviderExecutor("openai", bad.openai_url, sleep=waits.append)
        out = ReplayEngine(base, _branch(base, tmp_path / "run.json"), executor=ex).run()
    finally:
        bad.stop()
    assert ex.calls == 4 and waits == [0.5, 1.0, 2.0]
    assert out.status == "failed" and out.stop_reason == "error"
    assert "live model call at seq 2 (model step 1) failed" in out.error.message and "http_500" in out.error.message
    live = [r for r in out.events.records if r.kind == "model" and r.live_fallback]
    assert live and live[0].error.type == "ProviderError" and "http_500" in live[0].error.message


def test_provider_never_runs_a_tool() -> None:
    with pytest.raises(ProviderError, match="runs no tools"):
        ProviderExecutor("openai", "http://127.0.0.1:1/v1").live_tool("lookup", {})


def test_provider_specs() -> None:
    assert parse_provider_spec("provider:openai") == ("openai", None)
    assert parse_provider_spec("provider:anthropic@http://h:1") == ("anthropic", "http://h:1")
    with pytest.raises(ValueError, match="unknown provider 'gemini'"):
        parse_provider_spec("provider:gemini")
    with pytest.raises(ValueError, match="must be"):
        Policy(executor="nonsense")
    assert Policy(executor="provider:openai").executor == "provider:openai"
