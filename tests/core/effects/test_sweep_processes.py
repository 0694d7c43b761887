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
