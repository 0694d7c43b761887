"""The agent's own process: started with the proxy's environment, its output kept, and
ended cleanly (terminate, then kill) on a timeout, a Ctrl-C or a paused replay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

from ..errors import InspectorError

__all__ = ["AgentProcess", "CommandError", "OUTPUT_LIMIT"]

#: bytes of the agent's standard output kept as the run's final output (the last ones)
OUTPUT_LIMIT = 1_000_000
#: seconds a process is given to exit after SIGTERM before SIGKILL
KILL_GRACE = 5.0


class CommandError(InspectorError, RuntimeError):
    """The agent's command could not be started (not found, not executable)."""

    title = "command error"


class _Tail:
    """The last ``limit`` bytes written, and whether earlier ones were dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        while self.size > self.limit and len(self.parts) > 1:
            first = self.parts.pop(0)
            self.size -= len(first)
            self.dropped += len(first)
        if self.size > self.limit:
            cut = self.size - self.limit
            self.parts[0] = self.parts[0][cut:]
            self.size -= cut
            self.dropped += cut

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")


def _pump(src: IO[bytes], tail: _Tail, echo: Any) -> None:
    while True:
        chunk = src.read1(65536) if hasattr(src, "read1") else src.read(65536)
        if not chunk:
            break
        tail.add(chunk)
        if echo is not None:
            try:
                echo.write(chunk)
                echo.flush()
            except (OSError, ValueError):  # our own output is gone: keep recording
                echo = None


class AgentProcess:
    """Run ``argv`` with ``env``: standard output kept (last :data:`OUTPUT_LIMIT` bytes)
    and, with ``echo``, copied to our standard output as it comes; standard error copied
    to ours with ``echo``, else kept (last 64 KB); standard input ours with ``echo``
    (an interactive agent), else empty.

    Raises:
        CommandError: the command cannot be started (the message names it and why).
    """

    def __init__(self, argv: list[str], env: dict[str, str], *, echo: bool, cwd: str | None = None) -> None:
        if not argv:
            raise CommandError("no command to run: give it after '--' (record -o RUN.json -- python agent.py)")
        self.argv = argv
        self.stdout = _Tail(OUTPUT_LIMIT)
        self.stderr = _Tail(65536)
        #: a replay's command (no terminal) runs in a process group of its own, so ending
        #: it ends what it started (``sh -c …``, ``npm start``, ``uv run …``); a recorded
        #: one stays in ours: it is the terminal's, and Ctrl-C reaches it as usual
        self.own_group = not echo
        try:
            self.proc = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=None if echo else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None if echo else subprocess.PIPE,
                start_new_session=self.own_group,
            )
        except FileNotFoundError:
            raise CommandError(f"command not found: {argv[0]!r}") from None
        except PermissionError:
            raise CommandError(f"command not executable: {argv[0]!r}") from None
        except OSError as exc:
            raise CommandError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
        out_echo = getattr(sys.stdout, "buffer", None) if echo else None
        assert self.proc.stdout is not None
        self._threads = [threading.Thread(target=_pump, args=(self.proc.stdout, self.stdout, out_echo), daemon=True)]
        if self.proc.stderr is not None:
            self._threads.append(
                threading.Thread(target=_pump, args=(self.proc.stderr, self.stderr, None), daemon=True)
            )
        for t in self._threads:
            t.start()
        self.started = time.monotonic()
        self.killed: str | None = None  # why we ended it: "timeout", "interrupted", "paused", "cancelled"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code, or ``None`` if still running after ``timeout`` seconds (``None``:
        no limit). Waits in short slices: a Ctrl-C is delivered to whichever thread the
        system picks, and only a main thread that wakes up raises KeyboardInterrupt."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            try:
                return self.proc.wait(max(left, 0.0))
            except subprocess.TimeoutExpired:
                if deadline is not None and time.monotonic() >= deadline:
                    return None

    def interrupt(self) -> None:
        """Send SIGINT (what Ctrl-C sends), if it still runs."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGINT)
            except OSError:
                pass

    def end(self, why: str, grace: float = KILL_GRACE) -> int:
        """Terminate the process (SIGTERM, then SIGKILL after ``grace`` seconds); return
        its exit code. ``why`` is kept in :attr:`killed`."""
        if self.proc.poll() is None:
            self.killed = self.killed or why
            self._signal(signal.SIGTERM)
            if self.wait(grace) is None:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        elif self.own_group:
            self._signal(signal.SIGKILL)  # what it started and left behind
        return self.finish()

    def _signal(self, sig: int) -> None:
        try:
            if self.own_group:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
        except (OSError, ProcessLookupError):
            pass

    def finish(self) -> int:
        """Wait for the output to be read to its end; return the exit code."""
        code = self.wait()
        assert code is not None
        for t in self._threads:
            t.join(5.0)
        return code

    @property
    def exit_status(self) -> int:
        """The exit code as a shell gives it: 128 + N for a process ended by signal N."""
        code = self.proc.returncode
        if code is None:
            return -1
        return 128 - code if code < 0 else code

    def output_text(self) -> str:
        """The agent's standard output (the last :data:`OUTPUT_LIMIT` bytes, UTF-8 with
        replacement characters)."""
        return self.stdout.text()

    def error_tail(self, lines: int = 5) -> str:
        """The last ``lines`` lines of the standard error kept (replay), one string."""
        text = self.stderr.text().strip()
        return "\n".join(text.splitlines()[-lines:])


def environment() -> dict[str, str]:
    """A copy of this process's environment."""
    return dict(os.environ)
