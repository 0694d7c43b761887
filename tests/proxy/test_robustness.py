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
    assert outcome.first_divergence is None  # the observed tool result, scrubbed alike, equals the recorded
    assert files_hold(tmp_path, secret) == []
    ws.close()


def test_a_key_of_no_known_shape_is_scrubbed_because_it_was_a_header(tmp_path: Path, upstream, monkeypatch) -> None:
    """An API key no shape rule knows (32 hex digits: Azure, Mistral, a gateway's) is sent
    as a header; the agent also puts it in a prompt. Learned from the header, it is
    scrubbed from the recording and from everything a replay stores, and the replay matches."""
    from .conftest import agent_env

    key = "3f2a8c1d9e4b7a6f5c0d1e2f3a4b5c6d"
    env = {**agent_env(), "OPENAI_API_KEY": key}
    record(agent("openai_agent", "--prompt", f"debug: key {key}"), tmp_path / "run.json", upstream, env=env)
    assert files_hold(tmp_path, key) == []
    monkeypatch.setenv("OPENAI_API_KEY", key)  # the replay's agent sends it again
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", outcome.requirement
    assert outcome.first_divergence is None
    ws.close()
    assert files_hold(tmp_path, key) == []


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


class _BreakingUpstream:
    """An upstream that starts a stream, sends one chunk, then drops the connection
    (``drop``) or stops sending (``hang``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def chat(self, request):
        import asyncio

        from aiohttp import web

        await request.read()
        r = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await r.prepare(request)
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hel"}, "finish_reason": None}],
        }
        await r.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        if self.mode == "drop":
            request.transport.close()
            return r
        await asyncio.sleep(30)
        return r

    def start(self) -> _BreakingUpstream:
        import asyncio

        from aiohttp import web

        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self.chat)
            runner = web.AppRunner(app)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(10)
        return self


@pytest.mark.parametrize("mode", ["drop", "hang"])
def test_upstream_breaking_mid_stream_keeps_the_partial_answer(tmp_path: Path, mode: str) -> None:
    up = _BreakingUpstream(mode).start()
    rec = Recorder({"openai": f"http://127.0.0.1:{up.port}/v1", "anthropic": "http://127.0.0.1:1"}, timeout=1.5)
    server = ProxyServer(rec.handle).start()
    body = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    conn.request("POST", f"/{server.token}/openai/v1/chat/completions", body=body)
    r = conn.getresponse()
    assert r.status == 200  # the stream had begun: the agent keeps what it got
    try:
        got = r.read()
    except http.client.IncompleteRead as exc:
        got = exc.partial
    assert b'"hel"' in got
    server.stop()
    (ex,) = rec.exchanges
    assert ex.model.error is not None and ex.model.error.type == "upstream_stream_broken"
    assert ex.model.response is not None and ex.model.response.message.content == "hel"
    assert ex.model.meta["http_status"] == 200


def _poster(tmp_path: Path, bodies: list[str], path: str = "/chat/completions") -> list[str]:
    """An agent that posts raw request bodies (JSON text) to its OPENAI_BASE_URL and
    prints each status."""
    script = tmp_path / "poster.py"
    script.write_text(
        "import os, sys, json, urllib.request, urllib.error\n"
        "base = os.environ['OPENAI_BASE_URL']\n"
        f"bodies = {bodies!r}\n"
        "for b in bodies:\n"
        f"    req = urllib.request.Request(base + {path!r}, data=b.encode(), headers={{'Content-Type': 'application/json'}})\n"
        "    try:\n"
        "        print(urllib.request.urlopen(req).status)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print(e.code)\n"
    )
    return [sys.executable, str(script)]


def test_a_call_too_deep_for_the_format_costs_no_other_call(tmp_path: Path, upstream) -> None:
    ok = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
    deep_args = "[" * 1005 + "]" * 1005
    deep = '{"model": "gpt-test", "messages": [{"role": "user", "content": "x"}], "x_extra": ' + deep_args + "}"
    res = record(_poster(tmp_path, [ok, deep, ok]), tmp_path / "run.json", upstream)
    assert res.exit_code == 0
    rec = Recording.load(tmp_path / "run.json")
    assert [r.kind for r in rec.records] == ["model", "model"]  # the two others are kept
    reasons = [u["reason"] for u in rec.metadata["recorder"]["unrecorded"]]
    assert any("nested" in r for r in reasons), reasons


def test_an_answer_the_parser_cannot_read_still_reaches_the_agent(tmp_path: Path) -> None:
    class OddUpstream(Upstream):
        async def chat(self, request):
            from aiohttp import web

            await request.json()
            self.requests.append(("openai.chat", {}))
            return web.json_response(
                {"id": "x", "choices": [{"message": {"role": "assistant", "content": "hi"}}], "usage": "n/a"}
            )

    up = OddUpstream().start()
    try:
        ok = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        res = record(_poster(tmp_path, [ok]), tmp_path / "run.json", up)
        assert res.exit_code == 0
        assert res.recording.metadata["final_output"].strip() == "200"  # the agent got the upstream's answer
        (m,) = res.recording.records
        assert m.response is not None and m.response.message.content == "hi"
    finally:
        up.stop()


def test_an_upstream_url_with_a_query_keeps_its_path_and_its_secret(tmp_path: Path, upstream) -> None:
    ok = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
    from core.proxy.recorder import record_command

    from .conftest import agent_env

    res = record_command(
        _poster(tmp_path, [ok]),
        tmp_path / "run.json",
        upstream_openai=upstream.openai_url + "?k=s3cr3tvalue42",
        env=agent_env(),
        echo=False,
    )
    assert res.recording.metadata["final_output"].strip() == "200"
    assert upstream.model_requests() == 1
    assert res.recording.metadata["recorder"]["upstreams"]["openai"].endswith("/v1 (query not stored)")
    assert files_hold(tmp_path, "s3cr3tvalue42") == []


def test_dot_segments_are_refused(recorder_proxy, upstream) -> None:
    rec, server = recorder_proxy
    for path in ("/openai/v1/../../admin", "/openai/v1/%2e%2e/admin", "/anthropic/./v1/messages"):
        status, err = _post(server.port, f"/{server.token}{path}", b"{}")
        assert status == 400 and "segments" in err["error"]["message"], path
    assert upstream.requests == []


def test_integers_beyond_64_bits_are_kept_exactly(tmp_path: Path, upstream) -> None:
    body = (
        '{"model": "gpt-test", "seed": 123456789012345678901234567890, "messages": [{"role": "user", "content": "hi"}]}'
    )
    record(_poster(tmp_path, [body]), tmp_path / "run.json", upstream)
    rec = Recording.load(tmp_path / "run.json")
    assert rec.records[0].request.options["seed"] == {"$bigint": "123456789012345678901234567890"}
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", outcome.requirement  # keyed alike in the replay
    ws.close()


def test_sigterm_keeps_what_was_recorded_and_ends_the_agent(tmp_path: Path, upstream) -> None:
    import signal
    import subprocess

    from .conftest import agent_env

    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector", "record", "-o", "run.json", "--upstream-openai", upstream.openai_url,
         "--", *agent("openai_agent", "--hang")],
        cwd=tmp_path, env=agent_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "Answer: no note for weather"
    proc.send_signal(signal.SIGTERM)
    try:
        _out, err = proc.communicate(timeout=60)
    finally:  # never leave a record (and its agent) behind
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "marked incomplete: ended by SIGTERM" in err, err
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["incomplete"] is True and [r.kind for r in rec.records] == ["model", "tool", "model"]
    ps = subprocess.run(["pgrep", "-f", "openai_agent.py --hang"], capture_output=True, text=True)
    assert str(proc.pid) not in ps.stdout


def test_control_codes_in_what_record_prints_are_shown_not_run(tmp_path: Path, upstream) -> None:
    import subprocess

    from .conftest import agent_env

    evil = "c1\x1b[2J\x1b]0;pwned\x07"
    body = json.dumps(
        {
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": evil, "content": "x"}],
        }
    )
    p = subprocess.run(
        [sys.executable, "-m", "inspector", "record", "-o", "run.json", "--upstream-openai", upstream.openai_url,
         "--", *_poster(tmp_path, [body])],
        cwd=tmp_path, env=agent_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr
    assert "answers no call" in p.stderr and "␛" in p.stderr
