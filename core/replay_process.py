"""One replay attempt in a child process, for a program that must stay responsive while
a replay runs (the app: a key must be answered within a frame or two).

CPython runs one thread at a time. A replay of a 100,000-call base keeps the interpreter
busy for many seconds (matching, redacting, serializing, hashing and storing its events),
and an interactive thread of the same process would wait for its turn at every step. Run
in a child process instead, the replay has a core of its own and the caller's threads are
never slowed by it.

:func:`run_attempt` is the attempt itself, in the calling process:
:func:`core.replay.replays.start_replay` of a stored branch, or
:func:`~core.replay.replays.resume_replay`, with the events file written as the command
line writes it (``replays/ID.json``). :func:`run_attempt_in_process` runs the same call in
a fresh interpreter (``sys.executable``, the caller's import path, ``-P``: the current
folder is not put on the path — an executor the user named is still searched there, as
:class:`~core.replay.boundary.ExecutorChoice` says) and, on the caller's thread, relays
its progress to ``on_progress`` and the caller's ``cancel`` to it.

The child's process holds the replay's lock while it works (the workspace's state table,
docs/replay.md "The workspace"): a child killed at any moment leaves the replay
``interrupted``, resumable. A cancel stops the replay between two calls (stored
``failed``/``Cancelled``); a child whose executor call has not returned
:data:`CANCEL_GRACE` seconds after it is killed (its whole session: what the executor
started too) — loading the base and storing the outcome are never cut short. The caller
going away (its end of the child's standard input and of the answer pipe closed) counts
as a cancel, and the child then exits by itself (status 3) under the same rule. What
the executor prints goes to a temporary file, never to the caller's terminal; its last
line names a child that died without a word. The answer pipe is never inherited by what
the executor starts.

Protocol (internal; both ends are this module): the job goes in as one JSON line on the
child's standard input; ``cancel`` lines follow. The child answers on a pipe of its own
(:class:`multiprocessing.connection.Connection` framing, pickled tuples): ``("progress",
ReplayProgress)`` — every kind but ``call`` at once, ``call`` at most every
``progress_interval`` seconds —, ``("cancelling",)`` once a cancel is taken in, then
``("done", ReplayRecord)`` or ``("error", type name, title, message,
is_inspector_error)``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

from .errors import InspectorError
from .record.nesting import ensure_recursion_limit
from .record.recording import Recording
from .replay.boundary import ExecutorChoice
from .replay.engine import ReplayProgress
from .replay.replay_record import ReplayRecord
from .replay.replays import resume_replay, start_replay
from .workspace import Workspace

__all__ = ["AttemptKind", "AttemptProcess", "ReplayProcessError", "run_attempt", "run_attempt_in_process"]

AttemptKind = Literal["start", "resume"]

#: seconds a cancelled child has to store its outcome before it is killed (it stops
#: between two calls; an executor stuck inside a call never gets there)
CANCEL_GRACE = 10.0

#: seconds between two looks at the caller's ``cancel`` while no message arrives
POLL = 0.05


class ReplayProcessError(InspectorError):
    """An error raised in the replay's child process, raised again in the caller.

    ``title`` is the original error's area (``workspace``, ``branch``, ...), ``type`` its
    class name, ``str()`` its one-line message; ``inspector`` says whether it was an
    :class:`~core.errors.InspectorError` (an error raised on purpose) or something
    unexpected (a bug, or the child dying)."""

    def __init__(self, message: str, *, title: str = "replay", type: str = "", inspector: bool = True) -> None:  # noqa: A002
        super().__init__(message)
        self.title = title
        self.type = type
        self.inspector = inspector


def run_attempt(
    workspace: Path,
    kind: AttemptKind,
    replay_id: str,
    branch_id: str,
    executor: ExecutorChoice | None,
    *,
    bases: dict[str, Recording] | None = None,
    on_progress: Callable[[ReplayProgress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> ReplayRecord:
    """One attempt of replay ``replay_id``, on this thread, with its own workspace
    connection: ``start`` stores and runs a new replay of branch ``branch_id`` (its base
    from ``bases`` — digest → recording already in memory — else the stored copy);
    ``resume`` resumes the stored replay (``branch_id`` unused). The events file is
    written as the command line writes it. Returns the replay record stored.

    Raises:
        InspectorError: what the core raises (no workspace, a read-only or damaged one,
            a branch that no longer validates, an executor that cannot be loaded, a
            replay another process runs).
    """
    with Workspace.open(workspace, create=False) as ws:
        if kind == "resume":
            record, _ = resume_replay(
                ws, replay_id, executor=executor, on_progress=on_progress, cancel=cancel, events_file=True
            )
            return record
        branch = ws.get_branch(branch_id)
        base = (bases or {}).get(branch.base.digest)
        if base is None:
            base = ws.get_recording(branch.base.digest)
        path = ws.recording_path(branch.base.digest) or branch.base.path
        record, _ = start_replay(
            ws,
            path,
            branch,
            base=base,
            executor=executor,
            replay_id=replay_id,
            on_progress=on_progress,
            cancel=cancel,
            events_file=True,
        )
        return record


def run_attempt_in_process(
    workspace: Path,
    kind: AttemptKind,
    replay_id: str,
    branch_id: str,
    executor: ExecutorChoice | None,
    *,
    on_progress: Callable[[ReplayProgress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    progress_interval: float = 0.1,
) -> ReplayRecord:
    """:func:`run_attempt` in a child process: :class:`AttemptProcess` started, then
    :meth:`~AttemptProcess.wait`-ed for on this thread.

    Raises:
        ReplayProcessError: see :meth:`AttemptProcess.wait`.
    """
    child = AttemptProcess(workspace, kind, replay_id, branch_id, executor, progress_interval=progress_interval)
    return child.wait(on_progress=on_progress, cancel=cancel)


class AttemptProcess:
    """One attempt of replay ``replay_id`` (:func:`run_attempt`'s arguments) running in a
    child process, started by the constructor (see the module docstring).
    :meth:`wait` relays its progress and returns its outcome; :meth:`cancel` (any
    thread) asks it to stop between two calls.

    Raises:
        ReplayProcessError: the child process cannot be started.
    """

    def __init__(
        self,
        workspace: Path,
        kind: AttemptKind,
        replay_id: str,
        branch_id: str,
        executor: ExecutorChoice | None,
        *,
        progress_interval: float = 0.1,
    ) -> None:
        job = {
            "workspace": os.fspath(workspace),
            "kind": kind,
            "replay_id": replay_id,
            "branch_id": branch_id,
            "executor": None if executor is None else [executor.spec, executor.origin],
            "progress_interval": progress_interval,
            "sys_path": [os.fspath(p) for p in sys.path if isinstance(p, (str, os.PathLike))],
        }
        self.replay_id = replay_id
        self._lock = threading.Lock()
        self._cancel_sent: float | None = None
        #: set once the child has taken the cancel in (it stops at the end of the call
        #: it is in, unless that call was its last); seen while :meth:`wait` relays
        self.cancelling = threading.Event()
        #: what the child is doing, from its progress: ``loading`` (the base, the
        #: executor), ``calling`` (the engine answering calls), ``storing`` (the outcome)
        self.phase: Literal["loading", "calling", "storing"] = "loading"
        self._heard = time.monotonic()  # the child's last message
        self._killed_after_cancel = False
        self._output = tempfile.TemporaryFile()
        read_fd = write_fd = -1
        try:
            read_fd, write_fd = os.pipe()
            self._proc = subprocess.Popen(  # noqa: S603 — this interpreter, this module
                [sys.executable, "-P", "-c", _BOOT, str(write_fd)],
                stdin=subprocess.PIPE,
                stdout=self._output,
                stderr=self._output,
                pass_fds=(write_fd,),
                start_new_session=True,  # the terminal's Ctrl-C is the caller's, not the replay's
                close_fds=True,
            )
        except BaseException as exc:
            if read_fd >= 0:
                os.close(read_fd)
            self._output.close()
            if isinstance(exc, (OSError, subprocess.SubprocessError)):
                raise ReplayProcessError(f"cannot start the replay process: {exc}", type=type(exc).__name__) from None
            raise
        finally:
            if write_fd >= 0:
                os.close(write_fd)
        self._conn = Connection(read_fd, writable=False)
        self._send(json.dumps(job).encode() + b"\n")

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._proc.pid

    def _send(self, data: bytes) -> None:
        stdin = self._proc.stdin
        if stdin is None:
            return
        with self._lock:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):  # the child has ended (or its input is closed)
                pass

    def cancel(self) -> None:
        """Ask the child to stop between two calls (once; from any thread; at once: the
        replay stores ``failed``/``Cancelled``). A child whose executor call has not
        returned :data:`CANCEL_GRACE` seconds after the cancel is killed (the replay is
        left ``interrupted``); loading the base and storing the outcome are never cut
        short."""
        with self._lock:
            if self._cancel_sent is not None:
                return
            self._cancel_sent = time.monotonic()
        self._send(b"cancel\n")

    def _kill(self) -> None:
        """SIGKILL the child's whole session (what its executor started too)."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    def wait(
        self,
        on_progress: Callable[[ReplayProgress], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> ReplayRecord:
        """Relay the child's progress to ``on_progress`` (on this thread) and return the
        replay record it stored; ``cancel`` is looked at every :data:`POLL` seconds
        (true: :meth:`cancel`). The child has ended when this returns or raises.

        Raises:
            ReplayProcessError: the child raised (``inspector`` false for an unexpected
                error), was killed because its executor did not stop after a cancel
                (type ``Killed``), or ended without an outcome (its exit status and last
                output line).
        """
        answered = False
        try:
            record = self._relay(on_progress, cancel)
            answered = True
            return record
        except ReplayProcessError:
            answered = True
            raise
        finally:
            if not answered:
                # left early (``on_progress`` raised): the child is told to stop, and
                # its messages are read until it has stored that (a closed pipe would
                # make its next message fail)
                self.cancel()
                with contextlib.suppress(Exception):
                    self._relay(None, None)
            self._conn.close()
            if self._proc.stdin is not None:
                with self._lock:
                    self._proc.stdin.close()
            try:
                self._proc.wait(timeout=CANCEL_GRACE)
            except subprocess.TimeoutExpired:
                self._kill()
                self._proc.wait()
            self._output.close()

    def _stuck_after_cancel(self) -> bool:
        """Whether the child is inside an executor call that has not returned
        :data:`CANCEL_GRACE` seconds after the cancel (nor sent anything since)."""
        sent = self._cancel_sent
        if sent is None or self.phase != "calling":
            return False
        return time.monotonic() - max(sent, self._heard) > CANCEL_GRACE

    def _relay(
        self, on_progress: Callable[[ReplayProgress], None] | None, cancel: Callable[[], bool] | None
    ) -> ReplayRecord:
        while True:
            if cancel is not None and self._cancel_sent is None and cancel():
                self.cancel()
            if not self._killed_after_cancel and self._stuck_after_cancel():
                self._killed_after_cancel = True
                self._kill()
            try:
                if not self._conn.poll(POLL):
                    if self._proc.poll() is not None:
                        break  # ended, and nothing left to read (a grandchild may hold the pipe)
                    continue
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            self._heard = time.monotonic()
            if message[0] == "progress":
                progress: ReplayProgress = message[1]
                if progress.kind == "started":
                    self.phase = "calling"
                elif progress.kind in ("paused", "finished"):
                    self.phase = "storing"
                if on_progress is not None:
                    on_progress(progress)
            elif message[0] == "cancelling":
                self.cancelling.set()
            elif message[0] == "done":
                record: ReplayRecord = message[1]
                return record
            elif message[0] == "error":
                _, type_name, title, text, inspector = message
                raise ReplayProcessError(text, title=title, type=type_name, inspector=inspector)
        code = self._proc.wait()
        if self._killed_after_cancel:
            raise ReplayProcessError(
                f"replay {self.replay_id}: its executor's call had not returned {CANCEL_GRACE:g} s after the "
                "cancel, so its process was killed; the replay is left interrupted (resumable)",
                type="Killed",
            )
        last = _last_line(self._output)
        raise ReplayProcessError(
            f"the replay process ended with exit status {code}{': ' + last if last else ''}",
            type="Exit",
            inspector=False,
        )


def _last_line(output: Any, tail: int = 4096) -> str:
    """The last non-blank line among the final ``tail`` bytes of file ``output`` (at
    most 300 characters), else ``""``."""
    output.seek(0, os.SEEK_END)
    size = output.tell()
    output.seek(max(0, size - tail))
    lines = [ln for ln in output.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else ""


#: the child's first words: the caller's import path, then this module's entry point
_BOOT = (
    "import json, sys; job = json.loads(sys.stdin.readline()); sys.path[:] = job['sys_path']; "
    "from core.replay_process import child_main; child_main(job, int(sys.argv[1]))"
)


def child_main(job: dict[str, Any], fd: int) -> None:
    """The child's side (see the module docstring): run the attempt on a thread with the
    nesting limit's stack, answer on pipe ``fd``, and exit."""
    os.set_inheritable(fd, False)  # never passed on to what the executor starts
    ensure_recursion_limit()
    conn = Connection(fd, readable=False)
    cancelled = threading.Event()
    sending = threading.Lock()
    pipe_open = [True]
    #: the engine's phase (as the caller tracks it) and the time of its last call
    phase = ["loading"]
    beat = [time.monotonic()]

    def send(message: tuple[Any, ...]) -> None:
        with sending:
            if not pipe_open[0]:
                return
            try:
                conn.send(message)
            except OSError:  # the caller is gone: nobody reads; stop between two calls
                pipe_open[0] = False
                cancelled.set()

    def watchdog(since: float) -> None:
        """The caller is gone, so nobody would kill a child whose executor is stuck in
        a call: exit (status 3) when a call has not returned :data:`CANCEL_GRACE`
        seconds after that; loading and storing are never cut short."""
        while True:
            time.sleep(0.5)
            if phase[0] == "calling" and time.monotonic() - max(since, beat[0]) > CANCEL_GRACE:
                os._exit(3)

    def watch_stdin() -> None:  # "cancel" lines, then the end of input (the caller gone)
        for line in sys.stdin:
            if line.strip() == "cancel" and not cancelled.is_set():
                cancelled.set()
                send(("cancelling",))
        if not cancelled.is_set():
            cancelled.set()
            send(("cancelling",))
        threading.Thread(target=watchdog, args=(time.monotonic(),), name="replay-watchdog", daemon=True).start()

    threading.Thread(target=watch_stdin, name="replay-cancel", daemon=True).start()
    interval = float(job.get("progress_interval", 0.1))
    sent = [0.0]

    def progress(p: ReplayProgress) -> None:
        now = time.monotonic()
        beat[0] = now
        if p.kind == "started":
            phase[0] = "calling"
        elif p.kind in ("paused", "finished"):
            phase[0] = "storing"
        if p.kind != "call" or now - sent[0] >= interval:
            sent[0] = now
            send(("progress", p))

    spec = job.get("executor")
    executor = ExecutorChoice(spec[0], spec[1]) if spec else None
    answer: list[tuple[Any, ...]] = []

    def work() -> None:
        try:
            record = run_attempt(
                Path(job["workspace"]),
                job["kind"],
                job["replay_id"],
                job["branch_id"],
                executor,
                on_progress=progress,
                cancel=cancelled.is_set,
            )
            answer.append(("done", record))
        except InspectorError as exc:
            answer.append(("error", type(exc).__name__, exc.title, str(exc), True))
        except BaseException as exc:  # noqa: BLE001 — said to the caller, who shows it
            text = " ".join(str(exc).split())[:500]
            answer.append(("error", type(exc).__name__, "replay", f"{type(exc).__name__}: {text}", False))

    worker = threading.Thread(target=work, name="replay")
    worker.start()
    worker.join()
    send(answer[0])
    with contextlib.suppress(OSError):
        conn.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the stdin watcher is blocked reading: do not wait for it
