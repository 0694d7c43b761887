"""The SQLite workspace: schema and migrations, one transaction per replay, crash safety,
two processes at once, attach + resume, and resume == fresh replay (property)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FixtureError, WorkspaceError
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolCall
from core.replay.branch import ModelResponseIntervention, Policy, new_branch
from core.replay.fixtures import Fixture
from core.replay.replays import resume_replay, start_replay
from core.workspace import MIGRATIONS, SCHEMA_VERSION, Workspace
from tests.builders import ROOT, chat_recording


def _paused_branch(base, path, args=({"q": "new"},)):
    calls = [ToolCall(id=f"call_n{i}", name="lookup", arguments=a) for i, a in enumerate(args)]
    resp = ModelResponse(message=ChatMessage(role="assistant", content="", tool_calls=calls))
    return new_branch(base, str(path), at=3, interventions=[ModelResponseIntervention(step=1, response=resp)])


def test_open_creates_default_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Workspace.open() as ws:
        assert ws.path == Path(".chassis-inspector") / "workspace.sqlite"
        assert ws.schema_version == SCHEMA_VERSION
        mode = ws._conn.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        assert ws.check() == []


def test_migration_from_version_1(tmp_path):
    db = tmp_path / "workspace.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.executescript(MIGRATIONS[0][2])
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.commit()
    conn.close()
    with Workspace.open(tmp_path) as ws:
        assert ws.schema_version == SCHEMA_VERSION == 2
        ws.put_metrics("s", {"steps": 3, "outcome": "success"})
        assert ws.metrics("s") == {"steps": 3.0, "outcome": "success"}


def test_newer_schema_and_garbage_are_refused(tmp_path):
    with Workspace.open(tmp_path) as ws:
        ws._conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(WorkspaceError, match="schema version 99 is newer"):
        Workspace.open(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "workspace.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(WorkspaceError, match="not a workspace database"):
        Workspace.open(bad)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(WorkspaceError, match="must be a folder"):
        Workspace.open(f)


def test_replay_outputs_stored_and_events_openable(tmp_path):
    base = chat_recording(2)
    bp = tmp_path / "base.json"
    base.save(bp)
    br = new_branch(base, str(bp), at=1)
    with Workspace.open(tmp_path / "ws") as ws:
        record, _ = start_replay(ws, bp, br)
        assert record.status == "completed"
        stored = ws.get_replay(record.id)
        assert stored == record
        assert [a["outcome"] for a in ws.attempts(record.id)] == ["completed"]
        events = ws.replay_events(record.id)
        assert events.digest == record.events_digest
        assert Recording.loads(ws.replay_events_bytes(record.id)).metadata["replayed"] is True
        assert ws.get_branch(br.id) == br
        assert ws.get_recording(base.digest).digest == base.digest
        assert ws.list_replays(base_digest=base.digest)[0].id == record.id
        assert ws.check() == []


def test_attach_and_resume_completes(tmp_path):
    base = chat_recording(3)
    bp = tmp_path / "base.json"
    base.save(bp)
    br = _paused_branch(base, bp)
    with Workspace.open(tmp_path / "ws") as ws:
        rec, _ = start_replay(ws, bp, br)
        assert rec.status == "paused" and rec.exit_code == 3
        [req] = ws.requirements(open_only=True)
        assert rec.pause.requirement_ids == [req.id]
        assert req.kind == "tool" and req.arguments == {"q": "new"} and req.nearest is not None
        with pytest.raises(FixtureError, match="tool fixture output"):
            ws.attach_fixture(req.id, {"weird": 1}, source="x.json")
        fx = ws.attach_fixture(req.id, {"content": {"value": 42}}, source="fx.json")
        assert fx.scope == f"branch:{br.id}"
        assert ws.get_requirement(req.id).status == "satisfied"
        # the next model request is new too: a model requirement
        rec, _ = resume_replay(ws, rec.id)
        assert rec.status == "paused"
        [req2] = ws.requirements(open_only=True)
        assert req2.kind == "model"
        ws.attach_fixture(req2.id, {"message": {"role": "assistant", "content": "42 it is"}}, source="m.json")
        rec, out = resume_replay(ws, rec.id)
        assert rec.status == "completed" and rec.exit_code == 0
        assert out.output == "42 it is"
        assert [a.kind for a in rec.attempts] == ["start", "resume", "resume"]
        assert [a.outcome for a in rec.attempts] == ["paused", "paused", "completed"]
        assert ws.requirements(open_only=True) == []
        with pytest.raises(WorkspaceError, match="already completed"):
            resume_replay(ws, rec.id)
        assert ws.check() == []


def test_waived_requirement_fails_on_resume(tmp_path):
    base = chat_recording(2)
    bp = tmp_path / "base.json"
    base.save(bp)
    with Workspace.open(tmp_path / "ws") as ws:
        rec, _ = start_replay(ws, bp, _paused_branch(base, bp))
        [req] = ws.requirements(open_only=True)
        with pytest.raises(FixtureError, match="needs a tool fixture"):
            ws.decide_requirement(req.id, "satisfied")
        ws.decide_requirement(req.id, "waived")
        rec, _ = resume_replay(ws, rec.id)
        assert rec.status == "failed" and rec.error.type == "RequirementWaived"


def test_unknown_ids(tmp_path):
    with Workspace.open(tmp_path) as ws:
        with pytest.raises(WorkspaceError, match="no replay 'x'"):
            ws.get_replay("x")
        with pytest.raises(WorkspaceError, match="no branch 'x'"):
            ws.get_branch("x")
        with pytest.raises(FixtureError, match="no requirement 'x'"):
            ws.get_requirement("x")
        ws.put_fixture(Fixture(id="fx-1", name="t", output={"content": 1}))
        with pytest.raises(FixtureError, match="already exists"):
            ws.put_fixture(Fixture(id="fx-1", name="t", output={"content": 1}))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.integers(1, 4),
    new_args=st.lists(st.sampled_from(["a", "b", "item-0", "item-1", "c"]), min_size=1, max_size=3, unique=True),
    contents=st.lists(st.integers(0, 9), min_size=6, max_size=6),
    lenient=st.booleans(),
)
def test_property_resume_equals_fresh_replay(steps, new_args, contents, lenient):
    """Resuming after attaching fixtures gives byte-identical events to a fresh replay of
    the same branch with the same fixtures present."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = chat_recording(steps)
        bp = tmp / "base.json"
        base.save(bp)
        br = _paused_branch(base, bp, [{"q": a} for a in new_args])
        if lenient:
            br = br.model_copy(update={"policy": Policy(drift="lenient")})
        with Workspace.open(tmp / "ws") as ws:
            rec, _ = start_replay(ws, bp, br)
            attached = []
            i = 0
            while rec.status == "paused":
                [req] = ws.requirements(open_only=True, replay_id=rec.id)
                if req.kind == "tool":
                    out = {"content": {"value": contents[i % len(contents)]}}
                else:
                    out = {"message": {"role": "assistant", "content": f"final {i}"}}
                attached.append(ws.attach_fixture(req.id, out, source=f"f{i}.json"))
                rec, _ = resume_replay(ws, rec.id)
                i += 1
                assert i < 10
            assert rec.status == "completed"
            resumed = ws.replay_events_bytes(rec.id)
            # a fresh replay in the same workspace (the branch-scoped fixtures are present)
            fresh, _ = start_replay(ws, bp, br)
            assert fresh.status == "completed"
            assert ws.replay_events_bytes(fresh.id) == resumed
            assert fresh.comparability == rec.comparability
            assert fresh.first_divergence == rec.first_divergence
        # and in a new workspace holding the same fixtures as project fixtures
        with Workspace.open(tmp / "ws2") as ws2:
            for fx in attached:
                ws2.put_fixture(fx.model_copy(update={"scope": "project"}))
            other, _ = start_replay(ws2, bp, br)
            # the same events; only the reasons name the fixtures' other scope (compared as
            # logical documents: a text edit shifts a version-3 file's byte index)
            logical = _logical(resumed)
            moved = logical.replace(b"(branch scope)", b"(project scope)")
            assert (moved != logical) == bool(attached)
            assert _logical(ws2.replay_events_bytes(other.id)) == moved


def _logical(saved: bytes | None) -> bytes:
    """A saved events file as its logical document (every pool reference resolved)."""
    assert saved is not None
    return orjson.dumps(Recording.loads(saved).to_dict())


def _worker(folder: Path, n: int, steps: int, tag: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.core.ws_worker", str(folder), str(n), str(steps), tag, *extra],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_kill_inside_the_output_transaction_leaves_no_half_written_replay(tmp_path):
    folder = tmp_path / "ws"
    proc = _worker(folder, 5, 10, "t", "2")  # the third replay stalls inside its transaction
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        lines.append(line)
        if line.startswith("in-tx"):
            break
    stalled = line.split()[1]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert sum(1 for x in lines if x.startswith("done")) == 2
    with Workspace.open(folder) as ws:
        assert ws.check() == []
        rec = ws.get_replay(stalled)
        # the record update, events and attempts of that transaction are all gone
        assert rec.status == "interrupted" and ws.replay_events(stalled) is None
        assert [a["outcome"] for a in ws.attempts(stalled)] == []
        done = [r for r in ws.list_replays() if r.id != stalled]
        assert len(done) == 2 and all(ws.replay_events(r.id) is not None for r in done)
        # and the interrupted replay can simply be run again
        again, _ = resume_replay(ws, stalled)
        assert again.status in ("completed", "paused") and ws.check() == []


def test_workspace_survives_a_writer_killed_mid_write(tmp_path):
    folder = tmp_path / "ws"
    delays = [0.05, 0.2, 0.45]
    for round_, delay in enumerate(delays):
        proc = _worker(folder, 1000, 40, f"k{round_}")
        line = proc.stdout.readline()  # at least one replay finished: writes are under way
        assert line.startswith("done"), proc.stderr.read()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
    with Workspace.open(folder) as ws:
        assert ws.check() == []
        replays = ws.list_replays()
        assert len(replays) >= len(delays)
        finished = [r for r in replays if r.status in ("completed", "paused", "failed")]
        assert finished
        for r in finished:
            events = ws.replay_events(r.id)
            assert events is not None and events.digest == r.events_digest
            assert len(ws.attempts(r.id)) == len(r.attempts)
        # a killed attempt leaves at most its own replay 'running' with no outputs
        running = [r for r in replays if r.status in ("queued", "running", "interrupted")]
        assert len(running) <= len(delays)
        for r in running:
            assert ws.replay_events(r.id) is None


def test_two_processes_at_once(tmp_path):
    folder = tmp_path / "ws"
    Workspace.open(folder).close()
    procs = [_worker(folder, 6, 5, tag) for tag in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.count("done") == 6
    with Workspace.open(folder) as ws:
        assert ws.check() == []
        replays = ws.list_replays()
        assert len(replays) == 12
        assert sorted({r.status for r in replays}) == ["completed", "paused"]
        assert len(ws.fixtures()) == 12
        assert len(ws.list_branches()) == 12


def test_in_memory_base_without_digest_can_be_resumed(tmp_path):
    base = chat_recording(2)
    mem = Recording(metadata=base.metadata, records=base.records)  # never saved: no digest
    assert mem.digest is None
    br = _paused_branch(mem, "memory")
    with Workspace.open(tmp_path) as ws:
        rec, _ = start_replay(ws, "memory", br, base=mem)
        assert rec.status == "paused" and rec.base_digest == base.digest
        [req] = ws.requirements(open_only=True)
        ws.attach_fixture(req.id, {"content": 1}, source="x")
        rec, _ = resume_replay(ws, rec.id)
        assert rec.status == "paused" and len(rec.attempts) == 2


def test_resume_equals_fresh_replay_with_live_executor_answers(tmp_path):
    """docs/replay.md's worked example: the sample agent's executor answers 3 calls live.
    Their measured durations stay out of the events (kept in the attempts), so the
    resumed replay's events are byte-identical to a fresh replay with the fixtures."""
    from core.record.recording import ToolResult
    from core.replay.branch import ToolResultIntervention

    src = ROOT / "sample_recordings" / "sample-agent-fault-tool-error.json"
    base = Recording.load(src)
    bp = tmp_path / "base.json"
    base.save(bp)
    fix = ToolResultIntervention(
        kind="tool_result",
        seq=8,
        result=ToolResult(
            content={
                "order_id": "A1001",
                "sku": "BL-200",
                "eligible": True,
                "max_refund": 89.99,
                "rule": "delivered items reported damaged are refunded in full",
            }
        ),
    )
    br = new_branch(
        base, str(bp), at=8, interventions=[fix], policy=Policy(model="live", tool="recorded", drift="strict")
    )
    answers = [
        {
            "content": {
                "refund_id": "RF-A1001-BL-200",
                "order_id": "A1001",
                "sku": "BL-200",
                "amount": 89.99,
                "status": "issued",
            }
        },
        {"content": {"delivered": True, "message_id": "M-1", "customer_id": "C-1001"}},
    ]
    with Workspace.open(tmp_path / "ws") as ws:
        rec, _ = start_replay(ws, bp, br, executor="recorded", trust_executor=True)
        for out in answers:
            assert rec.status == "paused"
            [req] = ws.requirements(open_only=True, replay_id=rec.id)
            ws.attach_fixture(req.id, out, source="answer.json")
            rec, _ = resume_replay(ws, rec.id)
        assert rec.status == "completed" and rec.answers.get("live") == 3
        resumed = ws.replay_events_bytes(rec.id)
        live = [r for r in Recording.loads(resumed).records if r.live_fallback]
        assert len(live) == 3 and all(r.duration_seconds is None for r in live)
        # measured durations: in the attempts (each attempt measures only the calls it made)
        measured = {s for a in rec.attempts for s in a.live_durations}
        assert measured == {str(r.seq) for r in live}
        assert all(v >= 0 for a in rec.attempts for v in a.live_durations.values())
        fresh, _ = start_replay(ws, bp, br, executor="recorded", trust_executor=True)
        assert fresh.status == "completed"
        assert ws.replay_events_bytes(fresh.id) == resumed
        assert set(fresh.attempts[0].live_durations) == measured
