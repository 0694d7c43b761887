"""The app in a real terminal (a pseudo-terminal): it quits when the terminal goes away,
even when no hangup signal reaches it (as under ``make run``, where make gets it)."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from inspector.app import HANGUP_EXIT
from tests.builders import ROOT, SAMPLES

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    """What the app wrote to the terminal until ``needle`` showed (or ``timeout`` s)."""
    seen = b""
    end = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_the_app_quits_when_its_terminal_goes_away_without_a_hangup_signal():
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    env.pop("TEXTUAL", None)
    cli = Path(sys.executable).with_name("chassis-inspector")
    # a session of its own: the pseudo-terminal is not its controlling terminal, so closing
    # it sends no SIGHUP (as make keeps the hangup to itself)
    proc = subprocess.Popen(
        [str(cli), str(SAMPLES / "sample-agent-success.json")],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    try:
        shown = _read_until(master, b"sample-agent-success.json", 60)
        assert b"sample-agent-success.json" in shown, shown[-500:]
        os.close(master)  # the window closes
        master = -1
        code = proc.wait(timeout=30)  # (it ran on, spinning a core, before)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == HANGUP_EXIT
