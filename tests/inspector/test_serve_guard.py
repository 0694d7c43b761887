"""The served app's guard (inspector/serve.py): Host and Origin checks, the per-start token,
the session cap, reaping of app processes, ``/static/`` without a listing, IPv6 literals.

The servers run in the test's event loop on 127.0.0.1 (``[::1]`` for the IPv6 test) on a
free port, and start the real app (``python -m inspector open FILE``) for each WebSocket;
aiohttp's client plays the browser. Nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import WSMsgType, web

from inspector.serve import AccessRule, GuardedServer, ServeAddress, parse_authority
from tests.builders import write_recording

EVIL = "http://evil.example"


def _free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@contextlib.asynccontextmanager
async def running(server: GuardedServer) -> AsyncIterator[GuardedServer]:
    """``server`` listening in this event loop until the block ends (then shut down as
    ``serve`` shuts down: sockets closed, app processes reaped)."""
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    await web.TCPSite(runner, server.address.bind_host, server.address.port).start()
    try:
        yield server
    finally:
        await runner.cleanup()


def _app_argv(path: Path) -> list[str]:
    return [sys.executable, "-m", "inspector", "open", str(path)]


def _server(tmp_path: Path, host: str = "127.0.0.1", **kwargs: object) -> GuardedServer:
    path = write_recording(tmp_path / "served-run.json")
    bind = ServeAddress.parse(host, 0).bind_host
    address = ServeAddress.parse(host, _free_port(bind))
    return GuardedServer(_app_argv(path), address, title="test — served-run.json", **kwargs)  # type: ignore[arg-type]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[GuardedServer]:
    async with running(_server(tmp_path)) as s:
        yield s


def _origin(server: GuardedServer) -> str:
    return server.address.base_url


def _ws_url(server: GuardedServer, token: str | None = None) -> str:
    base = "ws" + server.address.base_url[4:]
    return f"{base}/ws/{server.token if token is None else token}?width=100&height=30"


async def _app_output(ws: aiohttp.ClientWebSocketResponse, needle: bytes, timeout: float = 45.0) -> bytes:
    """The app's output bytes, read until ``needle`` appears (or the deadline passes)."""
    seen = b""
    async with asyncio.timeout(timeout):
        while needle not in seen:
            msg = await ws.receive()
            if msg.type == WSMsgType.BINARY:
                seen += msg.data
            elif msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.ERROR):
                pytest.fail(f"socket closed before {needle!r}: {msg!r}; got {seen[-500:]!r}")
    return seen


async def _gone_within(pid: int, seconds: float) -> float:
    """Seconds until process ``pid`` no longer exists; fails after ``seconds``."""
    start = time.monotonic()
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() - start > seconds:
            pytest.fail(f"app process {pid} still alive {seconds} s after its socket closed")
        await asyncio.sleep(0.05)
    return time.monotonic() - start


async def _no_sessions(server: GuardedServer, timeout: float = 5.0) -> None:
    """Wait until every session has released its slot (its process reaped)."""
    async with asyncio.timeout(timeout):
        while server.sessions:
            await asyncio.sleep(0.02)


async def _wait_pids(server: GuardedServer, count: int, timeout: float = 10.0) -> list[int]:
    async with asyncio.timeout(timeout):
        while len(server.app_pids()) < count:
            await asyncio.sleep(0.02)
    return server.app_pids()


# ------------------------------------------------------------------ pure parts


@pytest.mark.parametrize(
    "value, expected",
    [
        ("127.0.0.1:8000", ("127.0.0.1", 8000)),
        ("LocalHost:8000", ("localhost", 8000)),
        ("[::1]:8000", ("[::1]", 8000)),
        ("[0:0::1]:8000", ("[::1]", 8000)),
        ("localhost", ("localhost", 80)),
        ("::1:8000", None),  # an IPv6 literal needs brackets
        ("evil.example:8000/x", None),
        ("user@127.0.0.1:8000", None),
        ("127.0.0.1:0", None),
        ("127.0.0.1:99999", None),
        ("127.0.0.1:8k", None),
        ("", None),
        ("[::1", None),
    ],
)
def test_parse_authority(value, expected):
    assert parse_authority(value) == expected


@pytest.mark.parametrize(
    "host, bind, url",
    [
        ("127.0.0.1", "127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1", "[::1]"),
        ("::1", "::1", "[::1]"),
        ("localhost", "localhost", "localhost"),
    ],
)
def test_serve_address_brackets(host, bind, url):
    address = ServeAddress.parse(host, 8000)
    assert (address.bind_host, address.url_host, address.base_url) == (bind, url, f"http://{url}:8000")


@pytest.mark.parametrize("host", ["[nope]", "[::1", "::1]", "", "fe80::1::2"])
def test_serve_address_refuses_bad_literals(host):
    with pytest.raises(ValueError):
        ServeAddress.parse(host, 8000)


def test_loopback_names_are_equivalent_but_other_ports_and_names_are_not():
    rule = AccessRule(ServeAddress.parse("127.0.0.1", 8000), "t", "c")
    for ok in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000"):
        assert rule.authority_allowed(parse_authority(ok)), ok
    for bad in ("127.0.0.1:8001", "evil.example:8000", "127.0.0.1", "[::2]:8000"):
        assert not rule.authority_allowed(parse_authority(bad)), bad
    # a wildcard address takes any IP literal on its port, but never a name it does not own
    wild = AccessRule(ServeAddress.parse("0.0.0.0", 8000), "t", "c")
    assert wild.authority_allowed(("192.0.2.7", 8000)) and wild.authority_allowed(("[2001:db8::1]", 8000))
    assert not wild.authority_allowed(("evil.example", 8000)) and not wild.authority_allowed(("192.0.2.7", 1))


def test_token_is_long_and_new_each_start(tmp_path):
    a, b = _server(tmp_path), _server(tmp_path)
    assert a.token != b.token and len(a.token) >= 43  # token_urlsafe(32)
    assert a.url == f"{a.address.base_url}/?token={a.token}"
    with pytest.raises(ValueError, match="at least 1"):
        _server(tmp_path, max_sessions=0)


# ------------------------------------------------------------------ refusals


async def test_forged_origin_is_refused(server):
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url, headers={"Origin": EVIL, "Accept": "text/html"}) as resp:
            assert resp.status == 403
            body = await resp.text()
        assert "Cross-origin request refused" in body and "evil.example" in body
        assert "open the link `chassis-inspector serve` printed" in body.lower()
        for origin in (EVIL, "null", f"https://127.0.0.1:{server.address.port}", "http://127.0.0.1:1"):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(_ws_url(server), origin=origin)
            assert refused.value.status == 403, origin
    assert server.app_pids() == []  # no app process was started for any of them


async def test_rebinding_host_is_refused(server):
    port = server.address.port
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url, headers={"Host": f"evil.example:{port}"}) as resp:
            assert resp.status == 403
            text = await resp.text()
        assert text.startswith("Wrong host:") and "DNS rebinding" in text and "evil.example" in text
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(_ws_url(server), headers={"Host": f"evil.example:{port}"})
        assert refused.value.status == 403
        # the equivalent loopback names on the same port are the same server
        async with http.get(server.url, headers={"Host": f"localhost:{port}"}) as resp:
            assert resp.status == 200
    assert server.app_pids() == []


@pytest.mark.parametrize("token", [None, "wrong", ""])
async def test_missing_or_wrong_token_is_refused(server, token):
    base = server.address.base_url
    query = "" if token is None else f"?token={token}"
    why = "Wrong access token" if token else "Access token missing"
    async with aiohttp.ClientSession() as http:
        for path in ("/", "/ws", "/download/some-key"):
            async with http.get(base + path + query, headers={"Accept": "text/html"}) as resp:
                assert resp.status == 403, path
                body = await resp.text()
                assert resp.content_type == "text/html" and why in body, (path, body)
                assert server.token not in body
        ws_token = "wrong" if token else ""
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(_ws_url(server, ws_token) if ws_token else f"ws{base[4:]}/ws")
        assert refused.value.status == 403
        # a token for another start of the server (same shape) is wrong too
        async with http.get(f"{base}/?token={'x' * len(server.token)}") as resp:
            assert resp.status == 403
    assert server.app_pids() == []


async def test_static_files_are_served_without_a_listing(server):
    base = server.address.base_url
    async with aiohttp.ClientSession() as http:
        for path in ("/static/", "/static/js/", "/static/css"):
            async with http.get(base + path) as resp:
                body = await resp.text()
                assert resp.status in (403, 404), path
                assert "Index of" not in body and "textual.js" not in body
        async with http.get(base + "/static/js/textual.js") as resp:  # scripts need no token
            assert resp.status == 200 and "xterm" in await resp.text()
        async with http.get(base + "/static/../templates/app_index.html") as resp:
            assert resp.status in (403, 404)


# ------------------------------------------------------------------ the right token


async def test_right_token_serves_the_page_and_the_app(server):
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url) as resp:
            assert resp.status == 200
            page = await resp.text()
            assert resp.headers["Cache-Control"] == "no-store"
        assert "served-run.json" in page
        (ws_url,) = re.findall(r'data-session-websocket-url="([^"]+)"', page)
        assert ws_url == f"ws://127.0.0.1:{server.address.port}/ws/{server.token}"
        # textual.js appends its own query to that URL, exactly so
        async with http.ws_connect(ws_url + "?width=120&height=40", origin=_origin(server)) as ws:
            out = await _app_output(ws, b"served-run.json")
            assert b"\x1b[" in out  # terminal output of the running app
            (pid,) = server.app_pids()
            await ws.send_json(["stdin", "j"])  # keystrokes go through
            await ws.send_json(["ping", "x"])
            async with asyncio.timeout(10):
                while True:
                    msg = await ws.receive()
                    if msg.type == WSMsgType.TEXT and msg.json() == ["pong", "x"]:
                        break
        await _gone_within(pid, 5.0)


async def test_a_valid_visit_sets_a_strict_cookie_that_later_requests_may_use(server):
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for an IP address
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.get(server.url) as resp:
            assert resp.status == 200
            cookie = resp.cookies[f"chassis-inspector-{server.address.port}"]
        assert cookie.value == server.token
        assert cookie["httponly"] is True and cookie["samesite"] == "Strict" and cookie["path"] == "/"
        # a reload without the query, the bare socket and downloads pass with the cookie alone
        async with http.get(server.address.base_url + "/") as resp:
            assert resp.status == 200
        async with http.get(server.address.base_url + "/download/unknown-key") as resp:
            assert resp.status == 404  # past the guard: the key is simply not there
        async with http.ws_connect(f"ws{server.address.base_url[4:]}/ws", origin=_origin(server)) as ws:
            await _app_output(ws, b"served-run.json")
    jar.clear()
    async with aiohttp.ClientSession() as http, http.get(server.address.base_url + "/") as resp:
        assert resp.status == 403


# ------------------------------------------------------------------ sessions and reaping


async def test_sessions_beyond_the_cap_are_refused(tmp_path):
    async with running(_server(tmp_path, max_sessions=2)) as server, aiohttp.ClientSession() as http:
        first = await http.ws_connect(_ws_url(server), origin=_origin(server))
        (first_pid,) = await _wait_pids(server, 1)
        second = await http.ws_connect(_ws_url(server), origin=_origin(server))
        pids = await _wait_pids(server, 2)
        third = await http.ws_connect(_ws_url(server), origin=_origin(server))
        msg = await asyncio.wait_for(third.receive(), 10)
        assert msg.type == WSMsgType.CLOSE and msg.data == 1013  # try again later
        assert "Too many sessions: 2 of 2" in msg.extra and "--max-sessions" in msg.extra
        assert len(msg.extra.encode()) <= 123
        assert sorted(server.app_pids()) == sorted(pids)  # no third app process
        # closing one frees its slot once its process is reaped; a reload waits for that
        await first.close()
        fourth = await http.ws_connect(_ws_url(server), origin=_origin(server))
        await _app_output(fourth, b"served-run.json")
        assert len(server.app_pids()) == 2 and first_pid not in server.app_pids()
        for ws in (second, fourth):
            await ws.close()
        for pid in pids:
            await _gone_within(pid, 6.0)


async def test_the_app_process_is_gone_soon_after_its_socket_closes(server):
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(_ws_url(server), origin=_origin(server))
        await _app_output(ws, b"served-run.json")
        (pid,) = server.app_pids()
        await ws.close()
        seconds = await _gone_within(pid, 5.0)
    print(f"app process {pid} gone {seconds:.2f} s after its socket closed")
    await _no_sessions(server)


STUBBORN_APP = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ignores SIGTERM and textual-serve's quit
    sys.stdout.write("__GANGLION__\\n")
    sys.stdout.flush()
    payload = b"stubborn-app-ready"
    sys.stdout.buffer.write(b"D" + len(payload).to_bytes(4, "big") + payload)
    sys.stdout.flush()
    while True:
        time.sleep(60)
    """
)


async def test_an_app_that_ignores_quit_and_sigterm_is_killed(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(STUBBORN_APP)
    address = ServeAddress.parse("127.0.0.1", _free_port())
    server = GuardedServer([sys.executable, str(script)], address, quit_grace=0.5, term_grace=0.5)
    async with running(server), aiohttp.ClientSession() as http:
        ws = await http.ws_connect(_ws_url(server), origin=_origin(server))
        await _app_output(ws, b"stubborn-app-ready", timeout=20)
        (pid,) = server.app_pids()
        session = next(iter(server.sessions))
        await ws.close()
        seconds = await _gone_within(pid, 4.0)
        assert session.service is not None and session.service._process is not None
        await _no_sessions(server)
        assert session.service._process.returncode == -9  # SIGTERM was ignored; SIGKILL ended it
    print(f"stubborn app process {pid} killed {seconds:.2f} s after its socket closed")


async def test_stopping_the_server_reaps_every_app_process(tmp_path):
    server = _server(tmp_path)
    async with aiohttp.ClientSession() as http:
        async with running(server):
            sockets = [await http.ws_connect(_ws_url(server), origin=_origin(server)) for _ in range(2)]
            pids = await _wait_pids(server, 2)
        for pid in pids:
            await _gone_within(pid, 1.0)  # shutdown itself waited for them
        for ws in sockets:
            msg = await asyncio.wait_for(ws.receive(), 5)
            assert msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
            await ws.close()


# ------------------------------------------------------------------ IPv6


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1 cannot be bound)")
async def test_bracketed_ipv6_loopback_works(tmp_path):
    async with running(_server(tmp_path, host="[::1]")) as server, aiohttp.ClientSession() as http:
        port = server.address.port
        assert server.url.startswith(f"http://[::1]:{port}/?token=")
        async with http.get(server.url) as resp:
            assert resp.status == 200
            page = await resp.text()
        assert f'data-session-websocket-url="ws://[::1]:{port}/ws/{server.token}"' in page
        async with http.get(server.url, headers={"Host": f"evil.example:{port}"}) as resp:
            assert resp.status == 403
        async with http.ws_connect(_ws_url(server), origin=f"http://[::1]:{port}") as ws:
            await _app_output(ws, b"served-run.json")
