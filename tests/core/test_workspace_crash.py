"""Crash safety of the workspace (docs/replay.md, "The workspace"): ``replay``, ``replay
resume`` and ``sweep`` killed with SIGKILL at random moments and at every write point,
and writes that fail for want of space (ENOSPC simulated at each write point, real ones
through ``/dev/full``, and a small full tmpfs where one can be mounted).

After every trial the workspace opens and :meth:`Workspace.check` finds nothing wrong:
every replay is completed, paused or failed with its events and attempts, or
``interrupted`` (comparability ``none``, 0 steps, exit code 2) — never ``running``
without a process — each events file holds the stored events and no temporary file is
left. Resuming each interrupted replay completes it with a fresh replay's result.

The figures (trials, stuck, inconsistent) are printed: ``pytest -s`` shows them.

The kills run in a *zygote*: one subprocess imports the command line once, then forks a
child per trial that runs ``main([...])``; the zygote itself kills its child after the
trial's delay (so no pid is ever killed after it was reaped), and with ``kill_at`` the
child kills itself just before its k-th write event (a SQLite ``COMMIT`` — before or
after —, an ``fsync``, an ``os.replace`` — before or after).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import WorkspaceError
from core.record.canonical import tool_key
from core.record.recording import ModelRequest, ModelResponse, Recording, ToolRecord, ToolResult
from core.replay.branch import Branch, Policy, ToolResultIntervention, new_branch, save_branch
from core.replay.replay_record import Attempt
from core.replay.replays import resume_replay, start_replay
from core.workspace import EVENTS_DIR, FILE_NAME, Workspace
from tests.builders import ROOT

N_CALLS = 16
EXECUTOR = "tests.core.test_workspace_crash:make_executor"
STEP_DELAY = 0.005  # seconds before each call: spreads a replay over time, so kills land inside it


# --------------------------------------------------------------------------- a tiny agent


class TinyAgent:
    """An executor whose agent makes ``task.n`` tool calls ``add(i, prev)``, each on the
    previous result, thinking :data:`STEP_DELAY` before each; its live tool
    (``v = prev + i``) is the one the base was recorded with."""

    def run(self, runtime: Any, task: Any) -> Any:
        prev = 0
        for i in range(task["n"]):
            time.sleep(STEP_DELAY)
            r = runtime.call_tool("add", {"i": i, "prev": prev}, f"c{i}")
            if r.error is None and isinstance(r.content, dict):
                prev = r.content["v"]
        return prev

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        raise AssertionError("the tiny agent makes no model calls")

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        return ToolResult(content={"v": arguments["prev"] + arguments["i"]})


def make_executor() -> TinyAgent:
    return TinyAgent()


def tiny_base(n: int = N_CALLS) -> Recording:
    """The tiny agent's run: ``n`` tool calls, ``v`` the running sum of ``i``."""
    records = []
    prev = 0
    for i in range(n):
        args = {"i": i, "prev": prev}
        prev += i
        records.append(
            ToolRecord(
                seq=i,
                key=tool_key("add", args),
                tool="add",
                arguments=args,
                tool_call_id=f"c{i}",
                result=ToolResult(content={"v": prev}),
            )
        )
    return Recording.loads(Recording(records=records, metadata={"task": {"n": n}}).dumps())


def live_branch(base: Recording, path: Path) -> Branch:
    """Call 2 answers 999, so every later call differs from the base: the executor
    answers them live, and the replay completes (comparability partial)."""
    iv = ToolResultIntervention(seq=2, result=ToolResult(content={"v": 999}))
    return new_branch(base, str(path), at=2, interventions=[iv], policy=Policy(tool="live"), label="live")


def paused_branch(base: Recording, path: Path, label: str) -> Branch:
    """As :func:`live_branch` without live answers: the replay pauses on call 3 (a tool
    requirement); a fixture answering it as recorded lets it complete."""
    iv = ToolResultIntervention(seq=2, result=ToolResult(content={"v": 999}))
    return new_branch(base, str(path), at=2, interventions=[iv], policy=Policy(tool="recorded"), label=label)


def pause_with_fixture(ws: Workspace, base: Recording, base_path: Path, label: str) -> tuple[str, Branch]:
    """A paused replay of a new branch with its requirement answered (branch scope): a
    resume — and a fresh replay of the branch — completes."""
    br = paused_branch(base, base_path, label)
    rec, _ = start_replay(ws, base_path, br, base=base, executor=EXECUTOR, events_file=True)
    assert rec.status == "paused"
    [req] = ws.requirements(open_only=True, replay_id=rec.id)
    ws.attach_fixture(req.id, {"content": {"v": 6}}, source="fx.json")  # call 3 as recorded: 3 + 3
    assert ws.write_events_file(rec.id) is not None
    return rec.id, br


# --------------------------------------------------------------------------- the zygote


def _zygote_main() -> None:  # pragma: no cover - runs in the subprocess
    """Read one JSON job per line — ``{"cwd", "args", "delay", "kill_at", "trace"}`` — fork
    a child that runs ``inspector.cli.main(args)``, kill it after ``delay`` seconds
    (``None``: let it end) and print ``{"killed", "status", "elapsed"}``."""
    import importlib

    from inspector.cli import main

    importlib.import_module("tests.core.test_workspace_crash")  # the executor's module, imported once
    for line in sys.stdin:
        job = json.loads(line)
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(job["cwd"])
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                _install_write_events(job.get("kill_at"), job.get("trace"), t0)
                code = main(job["args"])
            except BaseException:  # noqa: BLE001
                code = 99
            os._exit(code if isinstance(code, int) else 98)
        killed = False
        delay = job.get("delay")
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if delay is not None and time.monotonic() - t0 >= delay:
                os.kill(pid, signal.SIGKILL)  # our own child, not yet reaped: its pid is still its own
                _, status = os.waitpid(pid, 0)
                killed = os.WIFSIGNALED(status)
                break
            time.sleep(0.0005)
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"killed": killed, "status": code, "elapsed": time.monotonic() - t0}), flush=True)


def _install_write_events(kill_at: int | None, trace: str | None, t0: float) -> None:  # pragma: no cover
    """Number the write events of this process (``commit`` and ``committed`` around each
    SQLite COMMIT, ``fsync``, ``replace`` and ``replaced`` around each rename); append
    each to ``trace`` with its time since the fork (``t0``, monotonic); SIGKILL this
    process at event number ``kill_at``."""
    import core.workspace as w

    count = [0]

    def event(name: str) -> None:
        if trace is not None:
            with open(trace, "a") as fh:
                fh.write(f"{name} {time.monotonic() - t0:.4f}\n")
        if kill_at is not None and count[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        count[0] += 1

    execute = w._Conn.execute

    def traced_execute(self: Any, sql: str, params: Any = (), /) -> Any:
        if sql == "COMMIT":
            event("commit")
            out = execute(self, sql, params)
            event("committed")
            return out
        return execute(self, sql, params)

    w._Conn.execute = traced_execute  # type: ignore[method-assign]
    fsync, replace = os.fsync, os.replace

    def traced_fsync(fd: int) -> None:
        event("fsync")
        fsync(fd)

    def traced_replace(src: Any, dst: Any, **kw: Any) -> None:
        event("replace")
        replace(src, dst, **kw)
        event("replaced")

    os.fsync = traced_fsync
    os.replace = traced_replace  # type: ignore[assignment]


class Zygote:
    """The test's handle on the zygote subprocess."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.core.test_workspace_crash"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self,
        cwd: Path,
        args: list[str],
        *,
        delay: float | None = None,
        kill_at: int | None = None,
        trace: Path | None = None,
    ) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        job = {
            "cwd": str(cwd),
            "args": args,
            "delay": delay,
            "kill_at": kill_at,
            "trace": str(trace) if trace else None,
        }
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the zygote died"
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    z = Zygote()
    yield z
    z.close()


# --------------------------------------------------------------------------- checks


class Tally:
    """Figures of a series of trials."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.trials = self.killed = self.stuck = self.inconsistent = self.interrupted = 0
        self.problems: list[str] = []

    def line(self) -> str:
        return (
            f"{self.name}: {self.trials} trials, {self.killed} killed mid-run, {self.interrupted} interrupted replays "
            f"left, {self.stuck} stuck (queued/running with no process), {self.inconsistent} inconsistent"
        )


def inspect_workspace(folder: Path, tally: Tally) -> list[str]:
    """Open the workspace (its recovery runs), check it, and count. Returns the ids of
    the interrupted replays."""
    with Workspace.open(folder) as ws:
        problems = ws.check()
        records = ws.list_replays()
        events_dir = folder / EVENTS_DIR
        temps = sorted(p.name for p in events_dir.glob(".*.tmp")) if events_dir.is_dir() else []
        problems += [f"temporary file left: {t}" for t in temps]
        for r in records:
            if r.status in ("queued", "running"):
                tally.stuck += 1
                problems.append(f"replay {r.id} is {r.status} with no process")
            if r.status in ("completed", "paused"):
                if ws.replay_events(r.id) is None:
                    problems.append(f"replay {r.id} is {r.status} without events")
            if r.status == "interrupted":
                if r.comparability.level != "none" or r.steps != 0 or r.exit_code != 2:
                    problems.append(f"replay {r.id} is interrupted but claims {r.comparability.level}, {r.steps} steps")
                if not r.comparability.reasons or "interrupted" not in r.comparability.reasons[0]:
                    problems.append(f"replay {r.id} is interrupted without saying so: {r.comparability.reasons}")
        interrupted = [r.id for r in records if r.status == "interrupted"]
    if problems:
        tally.inconsistent += 1
        tally.problems += problems
    return interrupted


def outcome_of(ws: Workspace, rid: str) -> tuple[Any, ...]:
    r = ws.get_replay(rid)
    return (
        r.status,
        r.comparability,
        r.first_divergence,
        r.steps,
        r.answers,
        r.output,
        ws.replay_events_bytes(rid),
    )


def resume_all(folder: Path, rids: list[str], reference: dict[str, tuple[Any, ...]], branch_of: dict[str, str]) -> int:
    """``replay resume`` (the command, in this process) every interrupted replay: each
    completes, with the result of a fresh replay of its branch. Returns how many."""
    from inspector.cli import main

    for rid in rids:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main(["replay", "resume", rid, "--workspace", str(folder), "--json"])
        assert code == 0, rid
        assert json.loads(out.getvalue())["status"] == "completed"
        with Workspace.open(folder) as ws:
            assert ws.check() == []
            got = outcome_of(ws, rid)
            rec = ws.get_replay(rid)
            assert rec.status == "completed" and rec.attempts[-1].outcome == "completed"
            assert all(a.outcome != "running" for a in rec.attempts)
            assert ws.events_file(rid).read_bytes() == ws.replay_events_bytes(rid)
        assert got == reference[branch_of[rid]], rid
    return len(rids)


def fresh_reference(folder: Path, base: Recording, base_path: Path, br: Branch) -> tuple[Any, ...]:
    with Workspace.open(folder) as ws:
        rec, _ = start_replay(ws, base_path, br, base=base, executor=EXECUTOR)
        return outcome_of(ws, rec.id)


# --------------------------------------------------------------------------- kills at random moments


def test_replays_killed_at_random_moments(tmp_path: Path, zygote: Zygote) -> None:
    """≥ 30 ``replay`` and ``replay resume`` runs killed after a random delay: the
    workspace always checks clean, nothing is stuck, and each interrupted replay resumes
    to a fresh replay's result."""
    rng = random.Random(20260101)
    base = tiny_base()
    bp = tmp_path / "base.json"
    base.save(bp)
    ws_dir = tmp_path / "ws"
    live = live_branch(base, bp)
    save_branch(live, tmp_path / "live.json")
    run_args = ["replay", str(bp), "--branch", "live.json", "--executor", EXECUTOR, "--workspace", str(ws_dir)]
    first = zygote.run(tmp_path, run_args)  # creates the workspace, stores base and branch
    assert first["status"] == 0 and not first["killed"]
    # calibrate: the times of a run's writes, from its first commit after opening the
    # workspace (the replay stored queued) to its last; and the same for a resume
    windows = {}
    with Workspace.open(ws_dir) as ws:
        calib_id, _ = pause_with_fixture(ws, base, bp, "calibration")
    for kind, args in (("replay", run_args), ("resume", ["replay", "resume", calib_id, "--workspace", str(ws_dir)])):
        events = _trace(zygote, tmp_path, args, tmp_path / f"trace-{kind}")
        windows[kind] = (events[2][1], events[-1][1])  # [0:2]: the open's migration check

    tally = Tally("random kills")
    branch_of: dict[str, str] = {}
    paused: dict[str, Branch] = {}
    landed: dict[str, int] = {}  # where the kills landed, by what they left
    for trial in range(36):
        rid = None
        if trial % 3 == 2:  # a resume of a paused replay whose requirement was answered
            with Workspace.open(ws_dir) as ws:
                rid, br = pause_with_fixture(ws, base, bp, f"p{trial}")
            paused[rid] = br
            args = ["replay", "resume", rid, "--workspace", str(ws_dir)]
        else:
            args = run_args
        with Workspace.open(ws_dir) as ws:
            before = {r.id for r in ws.list_replays()}
        lo, hi = windows["resume" if rid else "replay"]
        # half the kills anywhere in the run, half while it writes its replay
        delay = rng.uniform(0.0, hi * 1.1) if trial % 2 else rng.uniform(lo * 0.95, hi * 1.02)
        res = zygote.run(tmp_path, args, delay=delay)
        tally.trials += 1
        tally.killed += res["killed"]
        if not res["killed"]:
            assert res["status"] == 0, res
        inspect_workspace(ws_dir, tally)
        with Workspace.open(ws_dir) as ws:
            new = [r for r in ws.list_replays() if r.id not in before or r.id == rid]
        what = ("resume: " if rid else "replay: ") + (",".join(r.status for r in new) or "not stored yet")
        landed[what] = landed.get(what, 0) + 1
    with Workspace.open(ws_dir) as ws:
        for r in ws.list_replays():
            branch_of[r.id] = r.branch_id
    left = inspect_workspace(ws_dir, tally)
    tally.interrupted = len(left)
    print("\n" + tally.line())
    print(f"random kills: what each trial left: {dict(sorted(landed.items()))}")
    assert tally.inconsistent == 0 and tally.stuck == 0, tally.problems[:10]
    assert tally.killed >= 10  # the delays do land inside the runs

    reference = {live.id: fresh_reference(ws_dir, base, bp, live)}
    for br in paused.values():
        reference[br.id] = fresh_reference(ws_dir, base, bp, br)
    resumed = resume_all(ws_dir, left, reference, branch_of)
    print(f"random kills: {resumed} interrupted replays resumed, each equal to a fresh replay")


# --------------------------------------------------------------------------- kills at every write point


def _trace(zygote: Zygote, cwd: Path, args: list[str], trace: Path) -> list[tuple[str, float]]:
    """The write events of one run of ``args``, with their times since the fork."""
    res = zygote.run(cwd, args, trace=trace)
    assert res["status"] == 0, res
    return [(name, float(t)) for name, t in (line.split() for line in trace.read_text().splitlines())]


def test_replays_killed_at_every_write_point(tmp_path: Path, zygote: Zygote) -> None:
    """A fresh workspace's first ``replay`` and a paused replay's ``replay resume``,
    each killed just before every one of its write events (a COMMIT and just after it,
    an fsync, a rename and just after it): consistent every time, interrupted ones
    resume to a fresh replay's result."""
    base = tiny_base()
    bp = tmp_path / "base.json"
    base.save(bp)
    live = live_branch(base, bp)
    save_branch(live, tmp_path / "live.json")
    # templates: an empty folder (the run creates the workspace) and a paused replay
    template = tmp_path / "template"
    with Workspace.open(template) as ws:
        paused_id, paused_br = pause_with_fixture(ws, base, bp, "kill-points")
    reference = {
        live.id: fresh_reference(_copy(template, tmp_path / "ref"), base, bp, live),
        paused_br.id: fresh_reference(_copy(template, tmp_path / "ref2"), base, bp, paused_br),
    }

    def run_args(ws_dir: Path) -> list[str]:
        return ["replay", str(bp), "--branch", "live.json", "--executor", EXECUTOR, "--workspace", str(ws_dir)]

    def resume_args(ws_dir: Path) -> list[str]:
        return ["replay", "resume", paused_id, "--workspace", str(ws_dir)]

    tally = Tally("kill points")
    for name, make_args, start in (("replay", run_args, None), ("resume", resume_args, template)):
        probe = tmp_path / f"probe-{name}"
        events = [e for e, _ in _trace(zygote, tmp_path, make_args(_fresh(probe, start)), tmp_path / f"trace-{name}")]
        assert events.count("commit") >= 3 and "replace" in events, events
        for k, event in enumerate(events):
            ws_dir = _fresh(tmp_path / f"{name}-{k}", start)
            res = zygote.run(tmp_path, make_args(ws_dir), kill_at=k)
            assert res["killed"] is False and res["status"] == -signal.SIGKILL, (event, res)
            tally.trials += 1
            tally.killed += 1
            if not (ws_dir / FILE_NAME).exists():
                continue  # killed before the workspace was created: nothing to check
            left = inspect_workspace(ws_dir, tally)
            tally.interrupted += len(left)
            with Workspace.open(ws_dir) as ws:
                branch_of = {r.id: r.branch_id for r in ws.list_replays()}
            resume_all(ws_dir, left, reference, branch_of)
    print("\n" + tally.line())
    assert tally.inconsistent == 0 and tally.stuck == 0, tally.problems[:10]
    assert tally.interrupted >= 4


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _fresh(dst: Path, template: Path | None) -> Path:
    if template is None:
        return dst
    return _copy(template, dst)


# --------------------------------------------------------------------------- a killed sweep


def test_a_killed_sweep_leaves_its_replays_interrupted_not_running(tmp_path: Path, zygote: Zygote) -> None:
    """``sweep`` (one and two worker processes) killed mid-way: its workers end with it,
    their replays read ``interrupted`` (never ``running`` with comparability ``full``)."""
    base = tiny_base(10)
    bp = tmp_path / "base.json"
    base.save(bp)
    ws_dir = tmp_path / "ws"
    args = ["sweep", str(bp), "--executor", EXECUTOR, "--strategy", "knockout", "--workspace", str(ws_dir)]
    full = zygote.run(tmp_path, args)
    assert full["status"] == 0, full
    span = full["elapsed"]
    rng = random.Random(7)
    tally = Tally("sweep kills")
    for trial in range(6):
        jobs = ["--jobs", "2"] if trial % 2 else []
        res = zygote.run(tmp_path, args + jobs, delay=rng.uniform(span * 0.3, span * 0.9))
        tally.trials += 1
        tally.killed += res["killed"]
        deadline = time.monotonic() + 10
        while True:  # the workers end with the sweep (PR_SET_PDEATHSIG): give them a moment
            with Workspace.open(ws_dir) as ws:
                if all(r.status not in ("queued", "running") for r in ws.list_replays()):
                    break
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        inspect_workspace(ws_dir, tally)
    with Workspace.open(ws_dir) as ws:
        tally.interrupted = sum(r.status == "interrupted" for r in ws.list_replays())
        assert all(r.comparability.level == "none" for r in ws.list_replays() if r.status == "interrupted")
    print("\n" + tally.line())
    assert tally.inconsistent == 0 and tally.stuck == 0, tally.problems[:10]


# --------------------------------------------------------------------------- what a kill leaves in the folder


def test_stale_temporary_files_are_removed_on_open_only_when_ours_and_their_writer_is_gone(tmp_path: Path) -> None:
    """``replays/.ID.json.*.tmp`` (the atomic writer's temporary file) is removed on the
    next open when no process holds replay ID's lock; one whose writer holds it, and any
    file of another pattern, stays. ``check`` names a stale one meanwhile."""
    folder = tmp_path / "ws"
    with Workspace.open(folder) as ws, Workspace.open(folder) as writer:
        events = folder / EVENTS_DIR
        events.mkdir(mode=0o700)
        dead = events / ".rp-dead.json.a1b2c3d4.tmp"
        dead.write_bytes(b"x" * 1024)  # a writer killed mid-write: its replay's lock is free
        busy = events / ".rp-busy.json.e5f6g7h8.tmp"
        busy.write_bytes(b"y")
        others = [events / "notes.tmp", events / ".rp-x.json.tmp", events / "rp-keep.json", tmp_path / "ws" / "x.tmp"]
        for o in others:
            o.write_bytes(b"z")
        probe = folder / ".workspace.sqlite.probe-999999999"  # a write probe of a dead pid
        probe.touch()
        with writer.claim_replay("rp-busy"):  # a writer at work on rp-busy
            assert any("stale temporary file" in p and "rp-dead" in p for p in ws.check())
            assert not any("rp-busy" in p for p in ws.check())
            Workspace.open(folder).close()  # the next open cleans up
            assert not dead.exists() and not probe.exists()
            assert busy.exists() and all(o.exists() for o in others)
        Workspace.open(folder).close()
        assert not busy.exists() and all(o.exists() for o in others)


def test_threads_opening_at_once_never_take_the_workspace_for_read_only(tmp_path: Path) -> None:
    """Each opening thread probes with a file of its own (``probe-PID-TID``): one thread
    never removes another's probe and so never makes it think the folder is read-only.
    An old-style probe of a dead pid (``probe-PID``) is still cleaned up."""
    import threading

    folder = tmp_path / "ws"
    Workspace.open(folder).close()
    old = folder / ".workspace.sqlite.probe-999999999"
    old.touch()
    start = threading.Barrier(8)
    seen: list[bool] = []
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            start.wait()
            for _ in range(25):
                with Workspace.open(folder, create=False) as ws:
                    seen.append(ws.read_only)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(seen) == 200 and not any(seen)
    assert not old.exists()
    assert not [p.name for p in folder.iterdir() if ".probe-" in p.name]


def test_an_events_file_ahead_of_the_database_is_put_back_on_open(tmp_path: Path) -> None:
    """Killed between writing a resume's events file and committing: the file holds
    events the database does not. The next open rewrites it from the stored events (or
    removes it when none are stored); ``check`` names the disagreement until then."""
    base = tiny_base(6)
    bp = tmp_path / "base.json"
    base.save(bp)
    folder = tmp_path / "ws"
    with Workspace.open(folder) as ws:
        rid, _ = pause_with_fixture(ws, base, bp, "ahead")
        stored = ws.replay_events_bytes(rid)
        rec = ws.get_replay(rid)
        with ws.claim_replay(rid) as claim:  # a resume starts ...
            rec.begin_attempt(Attempt(number=2, kind="resume", started_at=rec.updated_at), claim.owner)
            ws.save_replay_state(rec)
            ahead = tiny_base(3).dumps()  # ... writes other events, and dies before committing
            ws.events_file(rid).write_bytes(ahead)
        _, orphan_events = start_replay(ws, bp, paused_branch(base, bp, "orphan"), base=base, executor=EXECUTOR)
        orphan = ws.list_replays()[-1].id
        # a replay killed before its first outputs, whose file was written
        ws._conn.execute("DELETE FROM replay_events WHERE replay_id=?", (orphan,))
        ws._conn.execute("UPDATE replays SET status='running' WHERE id=?", (orphan,))
        body = json.loads(ws._conn.execute("SELECT record FROM replays WHERE id=?", (orphan,)).fetchone()[0])
        body.update(status="running", events_digest=None)
        ws._conn.execute("UPDATE replays SET record=? WHERE id=?", (json.dumps(body), orphan))
        ws.events_file(orphan).write_bytes(orphan_events.events.dumps())
        problems = ws.check()
        assert any(rid in p and "does not hold the stored events" in p for p in problems), problems
        assert any(orphan in p and "no stored events" in p for p in problems), problems
    with Workspace.open(folder) as ws:
        assert ws.check() == []
        assert ws.get_replay(rid).status == "interrupted" and ws.events_file(rid).read_bytes() == stored
        assert ws.get_replay(orphan).status == "interrupted" and not ws.events_file(orphan).exists()
        done, _ = resume_replay(ws, rid, events_file=True)
        assert done.status == "completed" and ws.events_file(rid).read_bytes() == ws.replay_events_bytes(rid)


# --------------------------------------------------------------------------- no space left


class DiskFull:
    """Make writes fail with "no space left" (``OSError(ENOSPC)`` for files, SQLite's
    "database or disk is full" — as :class:`core.workspace._Conn` reports it — for the
    database) at the ``at``-th write point (``once=False``: and every one after it),
    counting SQLite write statements (INSERT, UPDATE, DELETE, COMMIT), file fsyncs and
    renames."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: int | None, *, once: bool = True) -> None:
        import core.workspace as w

        self.at, self.once, self.count, self.points = at, once, 0, []
        execute = w._Conn.execute
        fsync, replace = os.fsync, os.replace

        def hit(name: str) -> bool:
            n = self.count
            self.count += 1
            self.points.append(name)
            return self.at is not None and (n == self.at or (not self.once and n > self.at))

        def full_execute(conn: Any, sql: str, params: Any = (), /) -> Any:
            verb = sql.split(None, 1)[0].upper() if sql.strip() else ""
            if verb in ("INSERT", "UPDATE", "DELETE", "COMMIT") and hit(f"sql {verb}"):
                # what _Conn.execute makes of SQLite's SQLITE_FULL
                raise WorkspaceError(f"{conn.ws_path}: {w._describe_sql(sql)}: database or disk is full")
            return execute(conn, sql, params)

        def full_fsync(fd: int) -> None:
            if hit("fsync"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fsync(fd)

        def full_replace(src: Any, dst: Any, **kw: Any) -> None:
            if hit("replace"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            replace(src, dst, **kw)

        monkeypatch.setattr(w._Conn, "execute", full_execute)
        monkeypatch.setattr(os, "fsync", full_fsync)
        monkeypatch.setattr(os, "replace", full_replace)


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    from inspector.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_failed_write_is_clean(ws_dir: Path, code: int, err: str) -> str:
    """After a run whose write failed: exit 2 with one line on stderr, and a workspace
    (when one was made) that checks clean, whose replays are failed, interrupted or —
    with every output — completed/paused; no temporary file. Returns what is stored:
    ``no workspace``, ``no replay`` or the replay's status."""
    assert code in (0, 2, 3), err
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err, err
    if not (ws_dir / FILE_NAME).exists():
        return "no workspace"
    with Workspace.open(ws_dir) as ws:
        assert ws.check() == []
        records = ws.list_replays()
        for r in records:
            assert r.status in ("completed", "paused", "failed", "interrupted"), r.status
            if r.status in ("completed", "paused"):
                assert ws.replay_events(r.id) is not None
                assert ws.events_file(r.id).read_bytes() == ws.replay_events_bytes(r.id)
            else:
                assert r.comparability.level == "none" and r.steps == 0
    events_dir = ws_dir / EVENTS_DIR
    assert not list(events_dir.glob(".*.tmp")) if events_dir.is_dir() else True
    return ",".join(r.status for r in records) or "no replay"


@pytest.mark.parametrize("once", [True, False], ids=["one-failed-write", "disk-stays-full"])
def test_no_space_at_each_write_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], once: bool
) -> None:
    """``replay`` with ENOSPC at each write point in turn (the first only, or every one
    from there on): exit 2 and one line, or success; never a replay stored paused or
    completed without its events, never an events file the database does not hold."""
    base = tiny_base(6)
    bp = tmp_path / "base.json"
    base.save(bp)
    br = paused_branch(base, bp, "enospc")
    save_branch(br, tmp_path / "b.json")
    monkeypatch.chdir(tmp_path)
    counter = DiskFull(monkeypatch, None)
    code, _, err = _cli(
        capsys, "replay", bp, "--branch", "b.json", "--executor", EXECUTOR, "--workspace", tmp_path / "count"
    )
    assert code == 3, err
    n_points = counter.count
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert n_points >= 8
    failed = 0
    stored: dict[str, int] = {}
    for at in range(n_points):
        ws_dir = tmp_path / f"ws-{at}"
        disk = DiskFull(monkeypatch, at, once=once)
        code, _, err = _cli(capsys, "replay", bp, "--branch", "b.json", "--executor", EXECUTOR, "--workspace", ws_dir)
        monkeypatch.undo()
        monkeypatch.chdir(tmp_path)
        failed += code == 2
        assert code in (2, 3), (at, disk.points[at], err)
        if code == 2:
            assert "disk is full" in err or "No space left" in err or "no space left" in err, err
        what = _assert_failed_write_is_clean(ws_dir, code, err)
        stored[what] = stored.get(what, 0) + 1
    print(
        f"\nno space ({'once' if once else 'from then on'}): {n_points} write points, {failed} runs exited 2; "
        f"left stored: {stored}"
    )
    assert failed >= n_points - 2


def test_no_space_through_dev_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The events file's temporary file on ``/dev/full`` (a real ENOSPC from write(2)):
    ``replay`` exits 2 with one line, the replay is stored ``failed`` (no outcome, no
    events), nothing is left in ``replays/``."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    import core.record.io as io_mod

    base = tiny_base(6)
    bp = tmp_path / "base.json"
    base.save(bp)
    save_branch(paused_branch(base, bp, "devfull"), tmp_path / "b.json")
    monkeypatch.chdir(tmp_path)
    real_mkstemp = io_mod.tempfile.mkstemp

    def mkstemp_on_dev_full(*a: Any, **kw: Any) -> tuple[int, str]:
        fd, name = real_mkstemp(*a, **kw)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(io_mod.tempfile, "mkstemp", mkstemp_on_dev_full)
    code, out, err = _cli(
        capsys, "replay", bp, "--branch", "b.json", "--executor", EXECUTOR, "--workspace", tmp_path / "ws"
    )
    monkeypatch.undo()
    assert code == 2 and "No space left on device" in err and err.count("\n") == 1, err
    with Workspace.open(tmp_path / "ws") as ws:
        assert ws.check() == []
        [r] = ws.list_replays()
        assert r.status == "failed" and ws.replay_events(r.id) is None
        assert "No space left" in (r.error.message if r.error else "")
    assert [p.name for p in (tmp_path / "ws" / EVENTS_DIR).iterdir()] == []


def test_a_workspace_created_on_a_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite cannot write the new database (simulated "database or disk is full"): a
    one-line error, no 0-byte database and no folder left; the next open works."""
    import core.workspace as w

    execute = w._Conn.execute

    def full(conn: Any, sql: str, params: Any = (), /) -> Any:
        if sql.startswith(("PRAGMA journal_mode", "CREATE", "INSERT", "BEGIN")):
            raise sqlite3.OperationalError("database or disk is full")
        return execute(conn, sql, params)

    monkeypatch.setattr(w._Conn, "execute", full)
    folder = tmp_path / "ws"
    with pytest.raises(WorkspaceError) as err:
        Workspace.open(folder)
    assert "no space left" in str(err.value) and "\n" not in str(err.value)
    assert not folder.exists()
    monkeypatch.undo()
    with Workspace.open(folder) as ws:
        assert ws.check() == [] and ws.schema_version >= 2


# --------------------------------------------------------------------------- a real full file system


@pytest.fixture()
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at ``tmp_path/fs`` (needs CAP_SYS_ADMIN: skipped without)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    try:
        res = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=256", "tmpfs", str(mnt)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("cannot mount a tmpfs here")
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)


def _fill(folder: Path, leave: int) -> Path:
    """Fill the file system of ``folder`` but ``leave`` bytes; returns the filler file."""
    filler = folder / "filler"
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as fh:
        size = max(0, free - leave)
        chunk = b"\0" * (1 << 16)
        while size > 0:
            try:
                fh.write(chunk[: min(size, len(chunk))])
                fh.flush()
            except OSError:
                break
            size -= min(size, len(chunk))
    return filler


def test_a_real_full_file_system(small_tmpfs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a 1 MiB tmpfs filled to leave 0 … 512 KiB: ``replay`` succeeds or exits 2 with
    one line; after space is freed the workspace checks clean (no replay stored paused
    or completed without events, no temporary file); a workspace created on the full
    disk leaves no 0-byte database."""
    base = tiny_base(40)
    exits: dict[int, str] = {}
    for leave in (0, 4096, 16384, 40960, 65536, 98304, 131072, 196608, 262144, 524288):
        root = small_tmpfs / f"run-{leave}"
        root.mkdir()
        bp = root / "base.json"
        base.save(bp)
        save_branch(paused_branch(base, bp, f"full-{leave}"), root / "b.json")
        filler = _fill(small_tmpfs, leave)
        try:
            code, _, err = _cli(
                capsys, "replay", bp, "--branch", root / "b.json", "--executor", EXECUTOR, "--workspace", root / "ws"
            )
        finally:
            filler.unlink()
        assert code in (2, 3), (leave, err)
        exits[leave] = f"exit {code}: {_assert_failed_write_is_clean(root / 'ws', code, err)}"
        if code == 2:
            assert "space" in err or "disk is full" in err, err
            if leave == 0 and (root / "ws").exists():
                assert not (root / "ws" / FILE_NAME).exists() or (root / "ws" / FILE_NAME).stat().st_size > 0
        shutil.rmtree(root)
    print(f"\nfull tmpfs: exit codes by free bytes {exits}")
    assert exits[0].startswith("exit 2") and exits[524288] == "exit 3: paused"
    # a workspace created on the full disk
    filler = _fill(small_tmpfs, 0)
    try:
        with pytest.raises(WorkspaceError) as err:
            Workspace.open(small_tmpfs / "new-ws")
        assert "\n" not in str(err.value)
        left = small_tmpfs / "new-ws" / FILE_NAME
        assert not left.exists(), "a 0-byte database was left behind"
    finally:
        filler.unlink()
    with Workspace.open(small_tmpfs / "new-ws") as ws:
        assert ws.check() == []


if __name__ == "__main__":  # the zygote (see the module docstring)
    _zygote_main()
