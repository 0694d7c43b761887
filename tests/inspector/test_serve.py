"""Web mode: serve the app on loopback and load it (HTTP, then a headless Chromium).

The browser test uses Debian's Chromium at /usr/bin/chromium through Playwright (never
a downloaded browser) and is skipped, with the reason, when that binary is absent;
``.ci/run`` installs it. Every request that does not go to the local server is blocked,
so the test never fetches anything from outside.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.builders import ROOT, write_recording

CHROMIUM = Path("/usr/bin/chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode("utf-8", "replace")


@pytest.fixture
def served(tmp_path):
    """Run ``chassis-inspector serve FILE`` on a free loopback port; yield its URL."""
    path = write_recording(tmp_path / "served-run.json")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector", "serve", str(path), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"serve exited with {proc.returncode}: {out}")
        try:
            _get(url, timeout=1)
            break
        except OSError as exc:
            last = exc
            time.sleep(0.2)
    else:
        os.killpg(proc.pid, signal.SIGTERM)
        pytest.fail(f"serve did not answer on {url}: {last}")
    try:
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def test_serve_page_loads_on_loopback(served):
    status, body = _get(served)
    assert status == 200
    # the textual-serve bootstrap: the terminal element with its websocket, and the client script
    assert 'class="textual-terminal"' in body
    assert "data-session-websocket-url" in body and "/ws" in body
    assert "js/textual.js" in body
    assert "served-run.json" in body  # the page title names the recording
    # nothing on the page is fetched from another host (textual-serve's own template links
    # Google Fonts; we serve our copy without it)
    assert "googleapis" not in body and "fonts.g" not in body
    fetched = re.findall(r'(?:href|src)\s*=\s*"([^"]*)"|url\(\s*["\']?([^"\')]*)', body)
    urls = [u for pair in fetched for u in pair if u]
    assert urls, body[:500]  # the stylesheet and script links were found
    for u in urls:
        assert not re.match(r"(?i)^(https?:)?//", u) or u.startswith(served), u
    status, script = _get(served + "/static/js/textual.js")
    assert status == 200 and "xterm" in script


@pytest.mark.browser
@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium (apt-get install chromium; .ci/run does it)",
)
def test_browser_renders_the_timeline(served, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    frames: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # nothing leaves the machine: only the local server is reachable
            page.route(
                "**/*", lambda route: route.continue_() if route.request.url.startswith(served) else route.abort()
            )

            def on_ws(ws):
                ws.on(
                    "framereceived",
                    lambda payload: frames.append(
                        payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                    ),
                )

            page.on("websocket", on_ws)
            page.goto(served, wait_until="domcontentloaded")
            # the app's first frames carry the timeline text: header, kinds, a tool name
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline:
                text = "".join(frames)
                if all(s in text for s in ("served-run.json", "17 records", "harness.shutdown")):
                    break
                page.wait_for_timeout(250)
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
