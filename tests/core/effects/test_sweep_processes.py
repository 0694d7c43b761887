"""Sweep worker processes end with the sweeping process, even when it is SIGKILLed;
absurd --repeat values are refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.effects.sweep import MAX_JOBS, MAX_REPEAT, SweepError, run_sweep
from inspector.cli import main
from tests.builders import ROOT

BASE = ROOT / "sample_recordings" / "sample-agent-fault-corrupted-result.json"

_SCRIPT = f"""
import sys, time
import core.effects.sweep as sw

def slow(task):
    time.sleep(120)
    return {{}}

sw._run_candidate = slow
sw.run_sweep({str(BASE)!r}, executor="recorded", trust_executor=True, jobs=2, workspace=None)
"""


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_die_with_a_sigkilled_sweep():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            workers = _children(p.pid)
            if len(workers) >= 2:
                break
            time.sleep(0.1)
        assert len(workers) >= 2, "the sweep did not start two workers"
        time.sleep(0.5)  # let the initializers run
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(_dead(w) for w in workers):
            time.sleep(0.1)
        assert all(_dead(w) for w in workers), "sweep workers outlived the killed sweep"
    finally:
        if p.poll() is None:
            p.kill()
        for w in workers:
            if not _dead(w):
                os.kill(w, signal.SIGKILL)


def test_absurd_repeat_is_refused(tmp_path, capsys):
    with pytest.raises(SweepError, match=f"--repeat {MAX_REPEAT + 1} is more than the {MAX_REPEAT}"):
        run_sweep(BASE, executor="recorded", trust_executor=True, repeat=MAX_REPEAT + 1, workspace=None)
    code = main(
        [
            "sweep",
            str(BASE),
            "--executor",
            "recorded",
            "--trust-executor",
            "--repeat",
            "10000000000",
            "--workspace",
            str(tmp_path / "ws"),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--repeat 10000000000 is more than" in err
    assert not (tmp_path / "ws").exists()


def test_absurd_jobs_is_refused():
    with pytest.raises(SweepError, match=f"--jobs {MAX_JOBS + 1} is more than the {MAX_JOBS}"):
        run_sweep(BASE, executor="recorded", trust_executor=True, jobs=MAX_JOBS + 1, workspace=None)


def test_a_cancelled_sweep_starts_no_further_candidate_and_ranks_what_finished():
    """``cancel`` is polled between results: after the first result it says stop, so
    one candidate ran, the rest never started, and the result says it was cancelled."""
    seen: list[int] = []
    res = run_sweep(
        BASE,
        executor="recorded",
        trust_executor=True,
        workspace=None,
        on_result=lambda r: seen.append(r["seq"]),
        cancel=lambda: bool(seen),
    )
    assert res.cancelled and res.to_json()["cancelled"] is True
    assert res.planned == len(res.calls) > 1
    assert len(seen) == 1 and len(res.replays) == 1
    assert [e.replays for e in res.effects] == [1]


def test_a_sweep_in_spawned_processes_ranks_like_one_in_process_and_can_be_cancelled():
    """``processes=True`` replays in ``spawn``-started workers even with one job (what
    the app uses): the same ranking as in process; cancelled at once, nothing finishes
    beyond what was already running and the pool is shut down."""
    here = run_sweep(BASE, executor="recorded", trust_executor=True, workspace=None)
    there = run_sweep(BASE, executor="recorded", trust_executor=True, workspace=None, processes=True)
    assert [(e.key, e.effect, e.direction) for e in there.effects] == [
        (e.key, e.effect, e.direction) for e in here.effects
    ]
    assert not there.cancelled
    stopped = run_sweep(
        BASE, executor="recorded", trust_executor=True, workspace=None, processes=True, cancel=lambda: True
    )
    assert stopped.cancelled
    assert len(stopped.replays) < len(here.replays)


def test_a_cancelled_sweep_terminates_a_worker_stuck_in_a_call(tmp_path, monkeypatch):
    """A replay held in a call (the held executor waits on a socket nobody answers)
    does not keep a cancelled sweep waiting: after the grace its worker is terminated
    and the sweep returns, cancelled, with no result from it."""
    import socket
    import threading

    import core.effects.sweep as sw
    from tests.inspector.held_executor import GATE_ENV, SPEC

    gate = tmp_path / "gate.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(gate))
    server.listen(8)
    server.settimeout(60)
    monkeypatch.setenv(GATE_ENV, str(gate))
    monkeypatch.setattr(sw, "CANCEL_GRACE", 0.5)
    stop = threading.Event()
    out: dict[str, object] = {}

    def sweep() -> None:
        out["res"] = run_sweep(BASE, executor=SPEC, workspace=None, processes=True, cancel=stop.is_set)

    t = threading.Thread(target=sweep)
    t.start()
    try:
        conn, _ = server.accept()  # a replay is held in its first tool call
        started = time.monotonic()
        stop.set()
        t.join(30)
        assert not t.is_alive()
        assert time.monotonic() - started < 15
        res = out["res"]
        assert res.cancelled and res.replays == []
        conn.close()
    finally:
        stop.set()
        server.close()
        t.join(60)
