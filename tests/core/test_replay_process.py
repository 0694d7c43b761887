"""A replay attempt in a child process (:mod:`core.replay_process`): the same
outcome as in the calling process, progress relayed, errors raised again with their
kind, cancel (asked, and the caller gone), and a child that dies leaving the replay
``interrupted``, resumable.

Replays that must be *running* while a test looks are held at their first tool call by
:mod:`tests.inspector.held_executor` (a socket the test owns; no sleeps).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from core.errors import InspectorError
from core.examples.sample_agent import get_order
from core.record.recording import Recording, ToolResult
from core.replay.boundary import ExecutorChoice
from core.replay.branch import BranchDraft, Policy, ToolResultIntervention, resolve_branch
from core.replay.engine import ReplayProgress
from core.replay.replays import resume_replay
from core.replay_process import AttemptProcess, ReplayProcessError, run_attempt
from core.workspace import Workspace
from tests.builders import SAMPLES
from tests.inspector.held_executor import GATE_ENV, GO
from tests.inspector.held_executor import SPEC as HELD

SAMPLE_AGENT = ExecutorChoice("core.sample_agent:make_executor", "recording")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """The current folder is not on an executor's import path when a recording names it
    (:class:`~core.replay.boundary.ExecutorChoice`): the tests run elsewhere than the checkout."""
    monkeypatch.chdir(tmp_path)


def stored_branch(
    tmp_path: Path, sample: str, *, fixed: bool, executor: str | None = None, ws_name: str = "ws"
) -> tuple[Path, str]:
    """Workspace ``ws_name`` holding one branch of a copy of ``sample``: the fault fixed
    at ``metadata.fault.seq`` (``fixed``) or no intervention at seq 3, policy model live."""
    base_path = tmp_path / "base.json"
    if not base_path.exists():
        shutil.copy(SAMPLES / sample, base_path)
    if executor is not None:
        doc = json.loads(base_path.read_text())
        doc["metadata"]["executor"] = executor  # not sealed by the digest
        base_path.write_text(json.dumps(doc))
    base = Recording.load(base_path)
    seq = base.metadata["fault"]["seq"]
    interventions = [ToolResultIntervention(seq=seq, result=ToolResult(content=get_order("A1001")))] if fixed else []
    draft = BranchDraft(
        base_path=str(base_path),
        at=seq if fixed else 3,
        interventions=interventions,
        policy=Policy(model="live") if fixed else Policy(),
        branch_id="br-0123456789ab",
    )
    branch = resolve_branch(None, draft, base)
    ws_path = tmp_path / ws_name
    with Workspace.open(ws_path) as ws:
        ws.add_branch(branch, base, str(base_path))
    return ws_path, branch.id


class Gate:
    """The held executor's socket: :meth:`held` returns once the child is inside its
    first tool call, :meth:`release` lets it go on."""

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.path = tmp_path / "gate.sock"
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(1)
        self.server.settimeout(60)
        self.conn: socket.socket | None = None
        monkeypatch.setenv(GATE_ENV, str(self.path))

    def held(self) -> None:
        self.conn, _ = self.server.accept()

    def release(self) -> None:
        if self.conn is not None:
            with self.conn, contextlib.suppress(OSError):  # a killed child is gone
                self.conn.sendall(GO)
            self.conn = None
        self.server.close()
        if self.path.exists():
            self.path.unlink()


def wait_in_thread(child: AttemptProcess, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["record"] = child.wait(**kwargs)
        except BaseException as exc:  # noqa: BLE001 - looked at by the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_a_child_replay_stores_what_the_same_replay_stores_in_process(tmp_path):
    ws_a, branch_a = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True, ws_name="a")
    ws_b, branch_b = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True, ws_name="b")
    assert branch_a == branch_b  # same base, same interventions: same content address
    seen: list[ReplayProgress] = []
    child = AttemptProcess(ws_a, "start", "rp-child", branch_a, SAMPLE_AGENT, progress_interval=0.0)
    assert child.pid != os.getpid()
    in_child = child.wait(on_progress=seen.append)
    in_process = run_attempt(ws_b, "start", "rp-child", branch_b, SAMPLE_AGENT)

    assert in_child.status == in_process.status == "paused"  # the first unrecorded tool call
    assert in_child.pause is not None and in_process.pause is not None
    assert len(in_child.pause.requirement_ids) == len(in_process.pause.requirement_ids) == 1
    assert in_child.answers == in_process.answers and in_child.events_digest == in_process.events_digest
    # progress: started first, one per answered call (interval 0: none dropped), paused last
    assert seen[0].kind == "started" and seen[-1].kind == "paused"
    calls = [p for p in seen if p.kind == "call"]
    assert len(calls) == seen[-1].calls_answered > 0
    assert [p.calls_answered for p in calls] == list(range(1, len(calls) + 1))
    with Workspace.open(ws_a, create=False) as a, Workspace.open(ws_b, create=False) as b:
        assert a.get_replay("rp-child").status == "paused"
        assert a.replay_events("rp-child").digest == b.replay_events("rp-child").digest
        assert a.events_file("rp-child").read_bytes() == b.events_file("rp-child").read_bytes()
        assert a.check() == [] and b.check() == []


def test_an_error_raised_on_purpose_in_the_child_keeps_its_area_and_message(tmp_path):
    ws_path, _ = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True)
    child = AttemptProcess(ws_path, "start", "rp-x", "br-0000000000000000", SAMPLE_AGENT)
    with pytest.raises(ReplayProcessError) as caught:
        child.wait()
    in_process = pytest.raises(
        InspectorError, run_attempt, ws_path, "start", "rp-x", "br-0000000000000000", SAMPLE_AGENT
    )
    assert caught.value.inspector is True
    assert str(caught.value) == str(in_process.value)
    assert caught.value.title == in_process.value.title and caught.value.type == type(in_process.value).__name__
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.list_replays() == []  # nothing stored


def test_a_missing_workspace_is_named_and_nothing_is_created(tmp_path):
    missing = tmp_path / "no-such-ws"
    child = AttemptProcess(missing, "resume", "rp-x", "", None)
    with pytest.raises(ReplayProcessError) as caught:
        child.wait()
    assert caught.value.inspector is True and str(missing) in str(caught.value)
    assert not missing.exists()


def test_cancel_stops_the_child_between_two_calls_and_it_stores_that(tmp_path, monkeypatch):
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    child = AttemptProcess(ws_path, "start", "rp-c", branch_id, ExecutorChoice(HELD, "recording"))
    thread, out = wait_in_thread(child)
    try:
        gate.held()
        child.cancel()
        child.cancel()  # once is enough; twice is harmless
        assert child.cancelling.wait(30)  # taken in while the call is held
    finally:
        gate.release()
    thread.join(60)
    assert not thread.is_alive()
    record = out["record"]
    assert record.status == "failed" and record.error is not None and record.error.type == "Cancelled"
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.get_replay("rp-c").status == "failed"
        record, _ = resume_replay(ws, "rp-c", executor=ExecutorChoice(HELD, "recording"), events_file=True)
        assert record.status == "completed"  # resumable
        assert ws.check() == []


def test_the_callers_cancel_is_relayed(tmp_path, monkeypatch):
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    stop = threading.Event()
    child = AttemptProcess(ws_path, "start", "rp-r", branch_id, ExecutorChoice(HELD, "recording"))
    thread, out = wait_in_thread(child, cancel=stop.is_set)
    try:
        gate.held()
        stop.set()
        assert child.cancelling.wait(30)
    finally:
        gate.release()
    thread.join(60)
    assert out["record"].error.type == "Cancelled"


def test_the_caller_going_away_cancels_the_child(tmp_path, monkeypatch):
    """The child's standard input ends (its caller died): it stops between two calls."""
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    child = AttemptProcess(ws_path, "start", "rp-g", branch_id, ExecutorChoice(HELD, "recording"))
    thread, out = wait_in_thread(child)
    try:
        gate.held()
        child._proc.stdin.close()  # what the caller's death does
        assert child.cancelling.wait(30)
    finally:
        gate.release()
    thread.join(60)
    assert out["record"].status == "failed" and out["record"].error.type == "Cancelled"


def test_a_child_that_dies_is_named_and_leaves_the_replay_interrupted(tmp_path, monkeypatch):
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    child = AttemptProcess(ws_path, "start", "rp-k", branch_id, ExecutorChoice(HELD, "recording"))
    thread, out = wait_in_thread(child)
    try:
        gate.held()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        gate.release()
    thread.join(60)
    error = out["error"]
    assert isinstance(error, ReplayProcessError) and error.inspector is False
    assert "exit status -9" in str(error)
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.get_replay("rp-k").status == "interrupted"
        record, _ = resume_replay(ws, "rp-k", executor=ExecutorChoice(HELD, "recording"), events_file=True)
        assert record.status == "completed"
        assert ws.check() == []


def noisy_executor():
    """An executor (spec ``tests.core.test_replay_process:noisy_executor``) that
    prints while loaded, and exits the process without a word in its first run when
    ``CHASSIS_TEST_DIE`` is set (leaving a ``sleep 60`` of its own behind with
    ``CHASSIS_TEST_GRANDCHILD``)."""
    from core.examples.sample_agent import make_executor

    print("noisy executor on stdout")
    print("noisy executor on stderr", file=sys.stderr)
    inner = make_executor()
    if os.environ.get("CHASSIS_TEST_GRANDCHILD"):
        os.system("sleep 60 &")  # noqa: S605, S607 - a process of the executor's, outliving it
    if os.environ.get("CHASSIS_TEST_DIE"):

        class Dying:
            def run(self, runtime, task):
                print("the last words of the executor", flush=True)
                os._exit(5)

            def __getattr__(self, name):
                return getattr(inner, name)

        return Dying()
    return inner


NOISY = ExecutorChoice("tests.core.test_replay_process:noisy_executor", "command line")


def test_what_the_executor_prints_stays_out_of_the_callers_output(tmp_path, capfd):
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True)
    record = AttemptProcess(ws_path, "start", "rp-q", branch_id, NOISY).wait()
    assert record.status == "paused"
    captured = capfd.readouterr()
    assert "noisy executor" not in captured.out + captured.err


def test_a_child_that_exits_without_an_outcome_is_named_with_its_last_line(tmp_path, monkeypatch):
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True)
    monkeypatch.setenv("CHASSIS_TEST_DIE", "1")
    with pytest.raises(ReplayProcessError) as caught:
        AttemptProcess(ws_path, "start", "rp-d", branch_id, NOISY).wait()
    assert caught.value.inspector is False
    assert str(caught.value) == "the replay process ended with exit status 5: the last words of the executor"
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.get_replay("rp-d").status == "interrupted"
        assert ws.check() == []


def test_a_process_the_executor_left_behind_does_not_hold_the_caller(tmp_path, monkeypatch):
    """The answer pipe is not inherited by what the executor starts: a child that dies
    is seen at once, even with a process of its executor still alive."""
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True)
    monkeypatch.setenv("CHASSIS_TEST_DIE", "1")
    monkeypatch.setenv("CHASSIS_TEST_GRANDCHILD", "1")
    child = AttemptProcess(ws_path, "start", "rp-gc", branch_id, NOISY)
    thread, out = wait_in_thread(child)
    try:
        thread.join(30)  # the grandchild sleeps 60 s
        assert not thread.is_alive()
        assert isinstance(out["error"], ReplayProcessError) and "exit status 5" in str(out["error"])
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)  # the sleep, in the child's session


def test_a_call_stuck_after_the_cancel_is_killed_and_said_so(tmp_path, monkeypatch):
    import core.replay_process

    monkeypatch.setattr(core.replay_process, "CANCEL_GRACE", 0.5)
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    child = AttemptProcess(ws_path, "start", "rp-s", branch_id, ExecutorChoice(HELD, "recording"))
    thread, out = wait_in_thread(child)
    try:
        gate.held()  # and never let go: the call is stuck
        child.cancel()
        thread.join(30)
        assert not thread.is_alive()
    finally:
        gate.release()
    error = out["error"]
    assert isinstance(error, ReplayProcessError) and error.inspector is True and error.type == "Killed"
    assert "rp-s" in str(error) and "interrupted (resumable)" in str(error)
    with Workspace.open(ws_path, create=False) as ws:
        assert ws.get_replay("rp-s").status == "interrupted"
        assert ws.check() == []


def test_loading_the_base_after_a_cancel_is_never_cut_short(tmp_path, monkeypatch):
    """A grace shorter than the child's start: the cancel, sent at once, is taken in
    after the child has loaded everything; the replay stops after its first call."""
    import core.replay_process

    monkeypatch.setattr(core.replay_process, "CANCEL_GRACE", 0.3)  # the start takes longer
    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-corrupted-result.json", fixed=True)
    child = AttemptProcess(ws_path, "start", "rp-l", branch_id, SAMPLE_AGENT)
    child.cancel()
    record = child.wait()
    assert record.status == "failed" and record.error is not None and record.error.type == "Cancelled"


CALLER = """
import sys
sys.path[:0] = {path!r}
from core.replay.boundary import ExecutorChoice
from core.replay_process import AttemptProcess
child = AttemptProcess({ws!r}, "start", "rp-o", {branch!r}, ExecutorChoice({spec!r}, "recording"))
print(child.pid, flush=True)
child.wait()
"""


def test_a_caller_that_dies_cancels_the_child(tmp_path, monkeypatch):
    """The caller is killed while the child is inside a call: the child sees its input
    end and its pipe break, stops between two calls, stores ``failed``/``Cancelled`` and
    exits."""
    import subprocess

    ws_path, branch_id = stored_branch(tmp_path, "sample-agent-fault-tool-error.json", fixed=False, executor=HELD)
    gate = Gate(tmp_path, monkeypatch)
    code = CALLER.format(path=sys.path, ws=str(ws_path), branch=branch_id, spec=HELD)
    caller = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(caller.stdout.readline())
        pidfd = os.pidfd_open(child_pid)
        gate.held()
        caller.kill()
        caller.wait()
        # the child's input watcher needs its turn to see the end of input before the
        # held call returns; past it, the last calls take milliseconds (either outcome
        # below is consistent: what matters is that a broken pipe is never the outcome)
        time.sleep(0.5)
    finally:
        gate.release()
    try:
        ready, _, _ = select.select([pidfd], [], [], 30)  # the child's end
        assert ready, "the child outlived its caller"
    finally:
        os.close(pidfd)
    with Workspace.open(ws_path, create=False) as ws:
        record = ws.get_replay("rp-o")
        cancelled = record.status == "failed" and record.error is not None and record.error.type == "Cancelled"
        assert cancelled or record.status == "completed", record
        assert ws.check() == []
