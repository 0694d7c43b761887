"""Web mode: ``chassis-inspector serve`` on loopback, reached through the link it prints
(HTTP, aiohttp's WebSocket client, then a headless Chromium).

The browser tests use Debian's Chromium at /usr/bin/chromium through Playwright (never
a downloaded browser) and are skipped, with the reason, when that binary is absent;
``.ci/run`` installs it. Every request that does not go to the local server is blocked,
so the tests never fetch anything from outside.
"""

from __future__ import annotations

import asyncio
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.builders import ROOT, write_recording

CHROMIUM = Path("/usr/bin/chromium")
URL_LINE = re.compile(r"^serving (?P<name>\S+) on (?P<url>http://\S+/\?token=[A-Za-z0-9_-]{43,}) \(ctrl\+c to stop\)$")


def _free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


def _get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> object:
    """Poll ``condition`` until it returns something true; fail naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@dataclass
class Served:
    """A running ``serve``: its process, the link it printed and everything it wrote."""

    proc: subprocess.Popen[bytes]
    url: str
    first_line: str
    output: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def app_pids(self) -> list[int]:
        """The children of the server process (its app processes)."""
        pids: list[int] = []
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                pids += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
        return pids


def _start_serve(path: Path, *args: str, timeout: float = 30.0) -> Served:
    """Run ``chassis-inspector serve PATH ARGS…``; return once the printed link answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector", "serve", str(path), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    # the first line on stdout is the link (read with a deadline: a hung start fails the test)
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, remaining))
        if not ready:
            _stop(proc)
            pytest.fail(f"serve printed no link within {timeout} s")
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            err = proc.stderr.read().decode()
            proc.wait(timeout=10)
            pytest.fail(f"serve exited with {proc.returncode} before printing its link: {line!r} {err}")
        line += chunk
    first = line.decode().rstrip("\n")
    match = URL_LINE.match(first)
    if match is None:
        _stop(proc)
        pytest.fail(f"serve's first line is not the link: {first!r}")
    served = Served(proc, match["url"], first)

    def drain(stream) -> None:  # keep the pipes flowing; keep the text for failure messages
        for raw in iter(stream.readline, b""):
            served.output.append(raw.decode("utf-8", "replace"))

    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=drain, args=(stream,), daemon=True).start()

    def answers() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"serve exited with {proc.returncode}: {''.join(served.output)}")
        try:
            return _get(served.url, timeout=1)[0] == 200
        except OSError:
            return False

    wait_until(answers, max(1.0, deadline - time.monotonic()), f"serve to answer on {served.url}")
    return served


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with_group = True
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        with_group = False
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        if with_group:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


@pytest.fixture
def serve_cli(tmp_path) -> Iterator[Callable[..., Served]]:
    """``serve_cli(*args)`` runs ``serve`` on a built recording and a free loopback port."""
    started: list[Served] = []
    path = write_recording(tmp_path / "served-run.json")

    def start(*args: str) -> Served:
        if "--port" not in args:
            args = (*args, "--port", str(_free_port()))
        served = _start_serve(path, *args)
        started.append(served)
        return served

    yield start
    for served in started:
        _stop(served.proc)


@pytest.fixture
def served(serve_cli) -> Served:
    return serve_cli()


def test_serve_prints_one_line_with_the_token_link(served):
    assert URL_LINE.match(served.first_line)
    assert served.url.startswith("http://127.0.0.1:") and "/?token=" in served.url
    assert _get(served.base + "/")[0] == 403  # the bare address is refused…
    assert _get(served.url)[0] == 200  # …the printed link is not
    # the token is not written anywhere else: textual-serve's banner is gone, and the access
    # log shows the requests with the token blanked out
    wait_until(lambda: "token=…" in "".join(served.output), 10, "the access log of the requests")
    assert served.token not in "".join(served.output)


def test_serve_page_loads_on_loopback(served):
    status, body = _get(served.url)
    assert status == 200
    # the textual-serve bootstrap: the terminal element with its websocket, and the client script
    assert 'class="textual-terminal"' in body
    assert f'data-session-websocket-url="ws://{served.base[7:]}/ws/{served.token}"' in body
    assert "js/textual.js" in body
    assert "served-run.json" in body  # the page title names the recording
    # nothing on the page is fetched from another host (textual-serve's own template links
    # Google Fonts; we serve our copy without it)
    assert "googleapis" not in body and "fonts.g" not in body
    fetched = re.findall(r'(?:href|src)\s*=\s*"([^"]*)"|url\(\s*["\']?([^"\')]*)', body)
    urls = [u for pair in fetched for u in pair if u]
    assert urls, body[:500]  # the stylesheet and script links were found
    for u in urls:
        assert not re.match(r"(?i)^(https?:)?//", u) or u.startswith(served.base), u
    status, script = _get(served.base + "/static/js/textual.js")
    assert status == 200 and "xterm" in script
    status, listing = _get(served.base + "/static/")
    assert status != 200 and "Index of" not in listing


def test_the_printed_link_drives_the_app_and_a_stopped_server_leaves_no_app(served):
    """aiohttp's client opens the page's socket, reads app output, and the server's
    SIGTERM (not the process group's) reaps the app process."""
    aiohttp = pytest.importorskip("aiohttp")

    async def session() -> list[int]:
        async with aiohttp.ClientSession() as http:
            async with http.get(served.url) as resp:
                page = await resp.text()
            (ws_url,) = re.findall(r'data-session-websocket-url="([^"]+)"', page)
            async with http.ws_connect(ws_url + "?width=100&height=30", origin=served.base) as ws:
                seen = b""
                async with asyncio.timeout(45):
                    while b"served-run.json" not in seen:
                        msg = await ws.receive()
                        assert msg.type == aiohttp.WSMsgType.BINARY, msg
                        seen += msg.data
                pids = served.app_pids()
                assert len(pids) == 1, pids
                served.proc.send_signal(signal.SIGTERM)  # the server only: it must reap its app
                msg = await asyncio.wait_for(ws.receive(), 10)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), msg
                return pids

    (pid,) = asyncio.run(session())
    served.proc.wait(timeout=15)
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 5, f"app process {pid} to be gone")


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1 cannot be bound)")
def test_serve_on_a_bracketed_ipv6_loopback(serve_cli):
    port = _free_port("::1")
    served = serve_cli("--host", "[::1]", "--port", str(port))
    assert served.url.startswith(f"http://[::1]:{port}/?token=")
    status, body = _get(served.url)
    assert status == 200 and f"ws://[::1]:{port}/ws/" in body


# ------------------------------------------------------------------ the browser


def _browser(playwright):
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    )


def _local_only(page, served: Served) -> None:
    """Nothing leaves the machine: only the local server is reachable."""
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(served.base) else route.abort())


needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium; .ci/run does it)",
)


@pytest.mark.browser
@needs_chromium
def test_browser_renders_the_timeline(served, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    frames: list[str] = []

    def text_has(*needles: str) -> bool:
        text = "".join(frames)
        return all(n in text for n in needles)

    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            _local_only(page, served)
            with page.expect_websocket() as opened:
                page.goto(served.url, wait_until="domcontentloaded")  # the link serve printed
            ws = opened.value
            assert ws.url.startswith(f"ws://{served.base[7:]}/ws/{served.token}?width=")
            ws.on(
                "framereceived",
                lambda payload: frames.append(
                    payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                ),
            )
            # the app's first frames carry the timeline text: header, kinds, a tool name (the
            # sync API delivers events only inside its calls: none is missed between the two)
            wanted = ("served-run.json", "17 records", "harness.shutdown")
            if not text_has(*wanted):
                ws.wait_for_event("framereceived", predicate=lambda _: text_has(*wanted), timeout=45000)
            text = "".join(frames)
            assert "served-run.json" in text and "17 records" in text, text[-2000:]
            assert "harness.shutdown" in text  # the last timeline row was painted
            # the page switched from the intro to the terminal (first byte received)
            page.wait_for_function("document.body.classList.contains('-first-byte')", timeout=15000)
            shot = tmp_path / "browser.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()


@pytest.mark.browser
@needs_chromium
def test_browser_shows_why_a_session_beyond_the_cap_was_refused(serve_cli):
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    served = serve_cli("--max-sessions", "1")
    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            first = browser.new_page()
            _local_only(first, served)
            first.goto(served.url, wait_until="domcontentloaded")
            first.wait_for_function("document.body.classList.contains('-first-byte')", timeout=45000)
            second = browser.new_page()
            _local_only(second, served)
            second.goto(served.url, wait_until="domcontentloaded")
            second.wait_for_function("document.body.classList.contains('-closed')", timeout=15000)
            message = second.locator(".closed-dialog .message").inner_text()
            assert "Too many sessions: 1 of 1" in message and "--max-sessions" in message
            assert len(served.app_pids()) == 1
            # the page without the token is refused with a page saying what to do
            third = browser.new_page()
            _local_only(third, served)
            response = third.goto(served.base + "/")
            assert response is not None and response.status == 403
            assert "open the link `chassis-inspector serve` printed" in third.inner_text("body").lower()
        finally:
            browser.close()
