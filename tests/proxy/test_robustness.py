"""The proxy under bad conditions: each a clear outcome, nothing lost, no secret on disk.

Malformed bodies, unknown endpoints, a client leaving mid-stream, an upstream that does
not answer, parallel requests, a command that fails or never exits; and the guards: no
token, a browser Origin, a foreign Host."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from core.proxy.process import CommandError
from core.proxy.recorder import Recorder
from core.proxy.server import ProxyServer
from core.record.recording import Recording

from .conftest import agent, call_view, files_hold, record, replay
from .upstream import API_KEY, Upstream


def _post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, {"raw": data.decode()}


@pytest.fixture
def recorder_proxy(upstream):
    rec = Recorder({"openai": upstream.openai_url, "anthropic": upstream.anthropic_url}, timeout=2.0)
    server = ProxyServer(rec.handle).start()
    yield rec, server
    server.stop()


def test_requests_without_the_token_or_from_a_browser_are_refused(recorder_proxy, upstream) -> None:
    rec, server = recorder_proxy
    body = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}).encode()
    good = f"/{server.token}/openai/v1/chat/completions"
    status, _ = _post(server.port, "/openai/v1/chat/completions", body)
    assert status == 403
    status, _ = _post(server.port, "/wrong-token/openai/v1/chat/completions", body)
    assert status == 403
    status, err = _post(server.port, good, body, {"Origin": "http://evil.example"})
    assert status == 403 and "Origin" in err["error"]["message"]
    status, err = _post(server.port, good, body, {"Host": "evil.example"})
    assert status == 403 and "Host" in err["error"]["message"]
    assert upstream.model_requests() == 0 and rec.exchanges == []
    status, _ = _post(server.port, good, body)
    assert status == 200 and upstream.model_requests() == 1 and len(rec.exchanges) == 1


def test_malformed_body_and_unknown_endpoint_are_forwarded_and_listed(recorder_proxy, upstream) -> None:
    rec, server = recorder_proxy
    status, _ = _post(server.port, f"/{server.token}/openai/v1/chat/completions", b"{not json")
    assert status >= 400  # the upstream's own answer to a bad body
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", f"/{server.token}/openai/v1/models")
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read())["data"][0]["id"] == "gpt-test"
    reasons = [(u["path"], u["reason"]) for u in rec.unrecorded]
    assert reasons[0][0] == "/chat/completions" and "not JSON" in reasons[0][1]
    assert reasons[1][0] == "/models" and "not a model call" in reasons[1][1]
    assert rec.exchanges == []


def test_upstream_timeout_is_a_model_error(tmp_path: Path) -> None:
    slow = Upstream(delay=5.0).start()
    try:
        rec = Recorder({"openai": slow.openai_url, "anthropic": slow.anthropic_url}, timeout=0.5)
        server = ProxyServer(rec.handle).start()
        body = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}).encode()
        status, err = _post(server.port, f"/{server.token}/openai/v1/chat/completions", body)
        server.stop()
        assert status == 504 and err["error"]["type"] == "upstream_timeout"
        (ex,) = rec.exchanges
        assert ex.model.error is not None and ex.model.error.type == "upstream_timeout"
        assert ex.model.response is None
    finally:
        slow.stop()


def test_unreachable_upstream_is_a_model_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    rec = Recorder({"openai": f"http://127.0.0.1:{port}/v1", "anthropic": f"http://127.0.0.1:{port}"})
    server = ProxyServer(rec.handle).start()
    body = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}).encode()
    status, err = _post(server.port, f"/{server.token}/openai/v1/chat/completions", body)
    server.stop()
    assert status == 502 and err["error"]["type"] == "upstream_unreachable"
    assert rec.exchanges[0].model.error.type == "upstream_unreachable"


def test_client_leaving_mid_stream_keeps_the_whole_answer(tmp_path: Path, upstream) -> None:
    res = record(agent("openai_agent", "--disconnect"), tmp_path / "run.json", upstream)
    assert res.exit_code == 0
    rec = Recording.load(tmp_path / "run.json")
    (m,) = rec.records
    assert m.response is not None and m.response.message.tool_calls[0].arguments == {"query": "weather"}
    assert m.meta.get("client_disconnected") is True or m.meta["streamed"] is True


def test_parallel_requests_are_matched_by_key(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent", "--threads"), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    answers = {r.request.messages[-1].content: r.response.message.tool_calls[0].arguments for r in rec.records}
    assert answers == {"first question": {"query": "first question"}, "second question": {"query": "second question"}}
    for i in range(3):  # whatever order they arrive in, each gets its own answer
        ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / f"ws{i}")
        assert record_.status == "completed"
        assert sorted(map(str, call_view(outcome.events.records))) == sorted(map(str, call_view(rec.records)))
        assert outcome.output.strip() == rec.metadata["final_output"].strip()
        ws.close()


def test_command_exiting_non_zero_keeps_its_status(tmp_path: Path, upstream) -> None:
    res = record(agent("openai_agent", "--exit", "3"), tmp_path / "run.json", upstream)
    assert res.exit_code == 3 and res.incomplete
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["incomplete"] is True
    assert rec.metadata["recorder"]["exit_code"] == 3
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]  # nothing lost


def test_command_that_never_exits_is_ended_and_kept_incomplete(tmp_path: Path, upstream) -> None:
    res = record(agent("openai_agent", "--hang"), tmp_path / "run.json", upstream, timeout=8.0)
    assert res.incomplete and "--timeout" in (res.reason or "")
    assert res.exit_code in (128 + 15, 128 + 9)
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["incomplete"] is True and len(rec.records) == 3
    assert files_hold(tmp_path, API_KEY) == []


def test_command_not_found_writes_nothing(tmp_path: Path, upstream) -> None:
    with pytest.raises(CommandError, match="command not found"):
        record(["no-such-agent-command-xyz"], tmp_path / "run.json", upstream)
    assert not (tmp_path / "run.json").exists()


def test_secret_in_a_prompt_is_redacted_and_still_matches(tmp_path: Path, upstream) -> None:
    secret = "sk-proj-" + "Zx9" * 16
    record(agent("openai_agent", "--prompt", f"my key is {secret}"), tmp_path / "run.json", upstream)
    assert files_hold(tmp_path, secret) == [] and files_hold(tmp_path, API_KEY) == []
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", outcome.requirement
    assert files_hold(tmp_path, secret) == []
    ws.close()


def test_replay_answers_bad_requests_clearly(tmp_path: Path, upstream) -> None:
    """In replay, a body that is not JSON and an endpoint that is not recorded get an
    error the client can read, and the replay goes on."""
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys, json, urllib.request, urllib.error\n"
        "base = os.environ['OPENAI_BASE_URL']\n"
        "def post(path, data):\n"
        "    req = urllib.request.Request(base + path, data=data, headers={'Content-Type': 'application/json'})\n"
        "    try:\n"
        "        return urllib.request.urlopen(req).status, ''\n"
        "    except urllib.error.HTTPError as e:\n"
        "        return e.code, json.loads(e.read())['error']['message']\n"
        "print(post('/chat/completions', b'{oops'))\n"
        "print(post('/embeddings', b'{}'))\n"
    )
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws", argv=[sys.executable, str(script)])
    assert record_.status == "completed"
    lines = outcome.output.strip().splitlines()
    assert lines[0].startswith("(400") and "not JSON" in lines[0]
    assert lines[1].startswith("(404") and "not a model call the proxy replays" in lines[1]
    ws.close()


def test_paused_replay_ends_the_command_and_says_why(tmp_path: Path, upstream) -> None:
    record(agent("openai_agent"), tmp_path / "run.json", upstream)
    ws, record_, outcome = replay(
        tmp_path / "run.json", tmp_path / "ws", argv=agent("openai_agent", "--prompt", "rain")
    )
    assert record_.status == "paused"
    run = outcome.events.metadata["replay"]["executor_run"]
    assert run["exit_code"] != 0  # the agent saw the error and stopped
    assert "chassis-inspector replay paused" in run.get("stderr_tail", "")
    assert outcome.requirement.id in run.get("stderr_tail", "")
    ws.close()


def test_server_thread_stops(upstream) -> None:
    rec = Recorder({"openai": upstream.openai_url, "anthropic": upstream.anthropic_url})
    server = ProxyServer(rec.handle).start()
    server.stop()
    assert not any(t.name == "chassis-proxy" and t.is_alive() for t in threading.enumerate())
