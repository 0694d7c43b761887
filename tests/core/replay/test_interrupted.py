"""Interrupted replays (docs/replay.md, "Replay states"; "The workspace": the replay lock).

A replay whose process is gone — killed with SIGKILL, or left ``running`` by an older
version — reads as ``interrupted`` everywhere (``get_replay``, ``list_replays``, the
branch tree, ``replay show``, ``replay list``), with comparability ``none`` and a reason,
0 steps and exit code 2, and ``replay resume`` completes it with a fresh replay's result.
A replay whose process still runs reads ``running`` and claims nothing either, and cannot
be resumed meanwhile. A reused pid never keeps a replay ``running``: the kernel's lock
decides, and where it cannot, the owner's start time and boot do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from core.errors import WorkspaceError
from core.replay.branch import Branch, new_branch, save_branch
from core.replay.replay_record import Attempt, Comparability, ReplayOwner, ReplayRecord
from core.replay.replays import resume_replay, start_replay
from core.workspace import LOCKS_DIR, ReplayBusy, Workspace, _this_process
from inspector.cli import main
from tests.builders import ROOT, chat_recording


def cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path, Branch]:
    """A base of 6 model steps, a branch without interventions (a replay of it completes
    with comparability ``full``), saved beside a workspace folder."""
    base = chat_recording(6)
    bp = tmp_path / "base.json"
    base.save(bp)
    br = new_branch(base, str(bp), at=1, label="plain")
    save_branch(br, tmp_path / "b.json")
    return tmp_path / "ws", bp, br


_STALLED_RUNNER = textwrap.dedent(
    """
    import sys, time
    from core.record.recording import Recording
    from core.replay.branch import branch_from_dict
    from core.replay.replays import start_replay
    from core.workspace import Workspace
    import json

    folder, base_path, branch_path = sys.argv[1:4]
    base = Recording.load(base_path)
    branch = branch_from_dict(json.load(open(branch_path)), source=branch_path)
    calls = []

    def progress(p):
        calls.append(p)
        if len(calls) == 4:  # mid-run: say so, and stall until killed
            print("running", flush=True)
            time.sleep(60)

    with Workspace.open(folder) as ws:
        start_replay(ws, base_path, branch, base=base, on_progress=progress, events_file=True)
    """
)


def _stalled_replay(folder: Path, bp: Path, branch_file: Path) -> subprocess.Popen[str]:
    """A subprocess whose replay stalls mid-run (after its first calls): returns once it
    says ``running``."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _STALLED_RUNNER, str(folder), str(bp), str(branch_file)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "running", proc.stderr.read() if proc.stderr else ""
    return proc


def _only_replay(folder: Path) -> ReplayRecord:
    with Workspace.open(folder) as ws:
        [rec] = ws.list_replays()
        return rec


def test_a_live_replay_reads_running_claims_nothing_and_cannot_be_resumed(setup, capsys) -> None:
    folder, bp, _ = setup
    proc = _stalled_replay(folder, bp, bp.parent / "b.json")
    try:
        rec = _only_replay(folder)
        assert rec.status == "running" and rec.exit_code == 2
        assert rec.comparability.level == "none" and "running" in rec.comparability.reasons[0]
        assert rec.steps == 0 and rec.answers == {} and rec.first_divergence is None
        assert rec.owner is not None and rec.owner.pid == proc.pid
        with Workspace.open(folder) as ws:
            assert ws.check() == []
            with pytest.raises(ReplayBusy, match=rf"being run by another process \(pid {proc.pid} "):
                resume_replay(ws, rec.id)
        code, out, err = cli(capsys, "replay", "resume", rec.id, "--workspace", folder)
        assert code == 2 and err.count("\n") == 1 and f"pid {proc.pid}" in err, err
        assert _only_replay(folder).status == "running"  # the refused resume changed nothing
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_a_killed_replay_reads_interrupted_everywhere_and_resumes(setup, capsys) -> None:
    folder, bp, br = setup
    proc = _stalled_replay(folder, bp, bp.parent / "b.json")
    proc.kill()  # SIGKILL: no clean-up runs
    proc.wait()
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]

    with Workspace.open(folder) as ws:
        assert ws.check() == []
        rec = ws.get_replay(ws.list_replays()[0].id)
        rid = rec.id
        assert rec.status == "interrupted" and rec.exit_code == 2
        assert rec.status_line == f"interrupted — resumable: replay resume {rid}"
        assert rec.comparability == Comparability(level="none", reasons=rec.comparability.reasons)
        [reason] = rec.comparability.reasons
        assert reason.startswith("the replay was interrupted: its process (pid ") and "during attempt 1" in reason
        assert f"replay resume {rid}" in reason
        assert rec.steps == 0 and rec.answers == {} and rec.output is None and rec.stop_reason is None
        assert [(a.outcome, a.ended_at) for a in rec.attempts] == [("interrupted", None)]
        assert ws.replay_events(rid) is None and not ws.events_file(rid).exists()
        [node] = ws.branch_tree(rec.base_digest).roots
        [summary] = node.replays
        assert (summary.status, summary.comparability, summary.steps) == ("interrupted", "none", 0)
        assert summary.status_line == rec.status_line
        assert (folder / LOCKS_DIR / f"{rid}.lock").exists()  # the evidence stays until resumed

    code, out, _ = cli(capsys, "replay", "show", rid, "--workspace", folder)
    assert code == 0
    assert f"status          interrupted — resumable: replay resume {rid}\n" in out
    assert "comparability   none\n  - the replay was interrupted" in out and "steps           0\n" in out
    code, out, _ = cli(capsys, "replay", "show", rid, "--workspace", folder, "--json")
    shown = json.loads(out)
    assert shown["status"] == "interrupted" and shown["comparability"]["level"] == "none" and shown["steps"] == 0
    code, out, _ = cli(capsys, "replay", "list", "--workspace", folder)
    assert out.split()[:3] == [rid, "interrupted", "none"]

    code, out, err = cli(capsys, "replay", "resume", rid, "--workspace", folder, "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["status"] == "completed" and resumed["comparability"]["level"] == "full"
    assert [(a["kind"], a["outcome"]) for a in resumed["attempts"]] == [
        ("start", "interrupted"),
        ("resume", "completed"),
    ]
    assert resumed["owner"] is None
    with Workspace.open(folder) as ws:
        assert ws.check() == []
        assert [a["outcome"] for a in ws.attempts(rid)] == ["interrupted", "completed"]
        assert not (folder / LOCKS_DIR / f"{rid}.lock").exists()
        assert ws.events_file(rid).read_bytes() == ws.replay_events_bytes(rid)
        fresh, _ = start_replay(ws, bp, br)
        assert ws.replay_events_bytes(fresh.id) == ws.replay_events_bytes(rid)
        assert fresh.comparability == ws.get_replay(rid).comparability and fresh.steps == resumed["steps"]


def _running_row(ws: Workspace, br: Branch, bp: Path, rid: str, *, owner: ReplayOwner | None, **fields: Any) -> None:
    """Store replay ``rid`` as an attempt's start stores it, by ``owner`` — without any
    process holding its lock."""
    base = chat_recording(6)
    ws.add_branch(br, base, str(bp))
    rec = ReplayRecord(id=rid, base_digest=base.digest, base_path=str(bp), branch_id=br.id, policy=br.policy)
    ws.create_replay(rec)
    rec.attempts.append(Attempt(number=1, kind="start", started_at=rec.created_at))
    rec.status, rec.owner = "running", owner
    for k, v in fields.items():
        setattr(rec, k, v)
    ws.save_replay_state(rec)


def test_a_replay_an_older_version_left_running_reads_interrupted(setup) -> None:
    """The rows the issue found: ``running`` forever, claiming comparability ``full``
    with 0 steps (no owner, no lock file), or with a reason saying "paused"."""
    folder, bp, br = setup
    with Workspace.open(folder) as ws:
        _running_row(ws, br, bp, "rp-old-full", owner=None)
        stale = Comparability(level="none", reasons=["the replay is paused on requirement req-1 (tool x)"])
        _running_row(ws, br, bp, "rp-old-stale", owner=None, comparability=stale, steps=3)
        for rid in ("rp-old-full", "rp-old-stale"):
            rec = ws.get_replay(rid)
            assert rec.status == "interrupted" and rec.comparability.level == "none" and rec.steps == 0
            assert "paused" not in rec.comparability.reasons[0] and "interrupted" in rec.comparability.reasons[0]
        assert ws.check() == []
        done, _ = resume_replay(ws, "rp-old-full")
        assert done.status == "completed" and [a.outcome for a in done.attempts] == ["interrupted", "completed"]


def test_a_reused_pid_never_keeps_a_replay_running(setup) -> None:
    """The lock decides: its file exists and is free → interrupted, even when the pid
    recorded as the owner is alive (reused). Without a lock file (removed, or no
    flock(2)) the owner's identity does: same host, boot, pid and start time."""
    folder, bp, br = setup
    me = _this_process()
    with Workspace.open(folder) as ws:
        locks = folder / LOCKS_DIR
        locks.mkdir(mode=0o700)
        (locks / "rp-reused.lock").touch()  # left by the dead owner; no one holds it
        _running_row(ws, br, bp, "rp-reused", owner=me)  # "its" pid: alive — this very process
        assert ws.get_replay("rp-reused").status == "interrupted"
        # no lock file: the recorded identity decides
        _running_row(ws, br, bp, "rp-me", owner=me)
        assert ws.get_replay("rp-me").status == "running"
        if me.started is not None:
            reused = me.model_copy(update={"started": me.started + 1})  # same pid, another process
            _running_row(ws, br, bp, "rp-other-start", owner=reused)
            assert ws.get_replay("rp-other-start").status == "interrupted"
        if me.boot_id is not None:
            _running_row(ws, br, bp, "rp-other-boot", owner=me.model_copy(update={"boot_id": "earlier-boot"}))
            assert ws.get_replay("rp-other-boot").status == "interrupted"
        _running_row(ws, br, bp, "rp-other-host", owner=me.model_copy(update={"host": me.host + "-elsewhere"}))
        assert ws.get_replay("rp-other-host").status == "interrupted"
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        gone = ReplayOwner(pid=int(dead.stdout), host=me.host, boot_id=me.boot_id, started=None)
        _running_row(ws, br, bp, "rp-dead-pid", owner=gone)
        assert ws.get_replay("rp-dead-pid").status == "interrupted"


def test_a_claim_in_this_process_reads_running_and_blocks_a_second(setup) -> None:
    """A replay run by a worker thread of this process (the app) reads ``running`` from
    another connection, and a second claim (a resume from the app) is refused at once."""
    folder, bp, br = setup
    with Workspace.open(folder) as ws, Workspace.open(folder) as other:
        with ws.claim_replay("rp-here") as claim:
            _running_row(ws, br, bp, "rp-here", owner=claim.owner)
            assert other.get_replay("rp-here").status == "running"
            t0 = time.monotonic()
            with pytest.raises(ReplayBusy, match="this process"):
                other.claim_replay("rp-here", wait=0.1)
            assert time.monotonic() - t0 < 1
        assert other.get_replay("rp-here").status == "interrupted"  # released, still stored running


_FORKING_OWNER = textwrap.dedent(
    """
    import os, sys, time
    from core.replay.replay_record import ReplayRecord
    from core.replay.branch import Policy
    from core.workspace import Workspace

    folder, flag = sys.argv[1:3]
    ws = Workspace.open(folder)
    claim = ws.claim_replay("rp-forked")
    ws.create_replay(ReplayRecord(id="rp-forked", base_digest="sha256:x", branch_id="br-x", policy=Policy(),
                                  status="running", owner=claim.owner))
    if os.fork() == 0:  # a child (an executor's helper, a sweep worker) outlives its parent
        open(flag + ".child", "w").close()  # past fork(): its at-fork handlers have run
        parent = os.getppid()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            if os.getppid() != parent and os.path.exists(flag):
                break
            time.sleep(0.02)
        os._exit(0)
    t0 = time.monotonic()
    while not os.path.exists(flag + ".child") and time.monotonic() - t0 < 20:
        time.sleep(0.01)  # the child is past fork() (under load it may not have run yet)
    print("forked", flush=True)
    time.sleep(60)
    """
)


def test_a_forked_child_does_not_keep_its_parents_replay_running(tmp_path: Path) -> None:
    """fork(2) shares the lock's open file description with the child; the child drops
    its copy, so once the parent is killed the replay reads ``interrupted`` while the
    child still runs."""
    folder, flag = tmp_path / "ws", tmp_path / "probed"
    proc = subprocess.Popen(
        [sys.executable, "-c", _FORKING_OWNER, str(folder), str(flag)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "forked", proc.stderr
        with Workspace.open(folder) as ws:
            assert ws.get_replay("rp-forked").status == "running"
        proc.kill()
        proc.wait()
        with Workspace.open(folder) as ws:
            assert ws.get_replay("rp-forked").status == "interrupted"  # the child lives on, lockless
    finally:
        flag.touch()  # the child may end now
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_resume_of_a_completed_replay_is_refused_and_leaves_no_lock(setup) -> None:
    folder, bp, br = setup
    with Workspace.open(folder) as ws:
        rec, _ = start_replay(ws, bp, br)
        assert rec.owner is None and rec.attempts[-1].outcome == "completed"
        with pytest.raises(WorkspaceError, match="already completed"):
            resume_replay(ws, rec.id)
        with pytest.raises(WorkspaceError, match="no replay 'rp-nope'"):
            resume_replay(ws, "rp-nope")
    assert list((folder / LOCKS_DIR).iterdir()) == []


def test_without_flock_the_owner_decides_and_no_lock_file_is_left(setup, monkeypatch) -> None:
    """On a file system without flock(2) (NFS without locks, some FUSE mounts): no lock
    file is left behind, a replay whose recorded owner is alive is busy, and a finished
    replay claims again."""
    import errno

    import core.workspace as workspace

    class NoFlock:
        LOCK_EX, LOCK_SH, LOCK_NB, LOCK_UN = 2, 1, 4, 8

        @staticmethod
        def flock(fd: int, op: int) -> None:
            raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(workspace, "_fcntl", NoFlock)
    folder, bp, br = setup
    with Workspace.open(folder) as ws:
        record, _ = start_replay(ws, bp, br)
        assert record.status == "completed"
        assert not list((folder / LOCKS_DIR).glob("*.lock"))  # none was left
        with ws.claim_replay("rp-live") as claim:
            _running_row(ws, br, bp, "rp-live", owner=claim.owner)
            with pytest.raises(ReplayBusy):
                ws.claim_replay("rp-live", wait=0.05)  # its owner (this process) runs it
        assert not (folder / LOCKS_DIR / "rp-live.lock").exists()
        dead = ReplayOwner(pid=2**22 + 7, host=claim.owner.host, boot_id=claim.owner.boot_id, started=1)
        _running_row(ws, br, bp, "rp-dead", owner=dead)
        assert ws.get_replay("rp-dead").status == "interrupted"
        ws.claim_replay("rp-dead").release()  # its owner is gone: it may be resumed
