"""Bad inputs to the replay / workspace commands: one line on stderr naming the file,
the place and the reason, exit 2, no traceback, the workspace left as it was."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from inspector.cli import main
from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"


@pytest.fixture()
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "sample-agent-fault-corrupted-result.json", tmp_path / "base.json")
    return tmp_path


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args, expect: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert expect in err, err
    return err


def _replay_ok(capsys, *extra):
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json", *extra)
    assert code == 0, err
    return orjson.loads(out)


def _statuses(ws_dir: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(ws_dir / "workspace.sqlite")
    try:
        return conn.execute("SELECT id, status FROM replays ORDER BY rowid").fetchall()
    finally:
        conn.close()


def test_tampered_branch_with_a_stored_id_is_refused(cwd, capsys):
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")[0] == 0
    _replay_ok(capsys)
    doc = orjson.loads(Path("b.json").read_bytes())
    doc["label"] = "tampered"
    Path("b.json").write_bytes(orjson.dumps(doc))
    refused(
        capsys,
        "replay",
        "base.json",
        "--branch",
        "b.json",
        expect=f"branch {doc['id']} already exists in the workspace with different content",
    )
    _, out, _ = cli(capsys, "branch", "list", "--json")
    assert [b.get("label") for b in orjson.loads(out)] == [None]


@pytest.mark.parametrize(
    ("sql", "expect"),
    [
        ("UPDATE meta SET value='abc' WHERE key='schema_version'", "table meta, key schema_version: 'abc'"),
        ("DROP TABLE replays", "table(s) replays missing"),
        ("UPDATE replays SET record='not json'", "table replays, row rp-"),
        ("UPDATE replays SET record='[]'", "table replays, row rp-"),
        ("UPDATE replay_events SET body=X'0001'", "table replay_events, row rp-"),
    ],
)
def test_damaged_workspace_is_a_clean_error(cwd, capsys, sql, expect):
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")[0] == 0
    rec = _replay_ok(capsys)
    conn = sqlite3.connect(".chassis-inspector/workspace.sqlite")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute(sql)
    conn.commit()
    conn.close()
    cmd = ("replay", "resume", rec["id"]) if "replay_events" in sql else ("replay", "show", rec["id"])
    if "replay_events" in sql:
        conn = sqlite3.connect(".chassis-inspector/workspace.sqlite")
        conn.execute("UPDATE replays SET status='paused'")
        conn.execute("UPDATE replays SET record=json_set(record, '$.status', 'paused')")
        conn.commit()
        conn.close()
    err = refused(capsys, *cmd, expect=expect)
    assert "workspace.sqlite" in err


def test_damaged_requirement_body(cwd, capsys):
    conn_cmds = ("branch", "new", "base.json", "--at", 0, "-o", "b.json")
    assert cli(capsys, *conn_cmds)[0] == 0
    _replay_ok(capsys)
    conn = sqlite3.connect(".chassis-inspector/workspace.sqlite")
    conn.execute(
        "INSERT INTO requirements VALUES ('rq-1', (SELECT id FROM replays), 'open', 'tool', 't', "
        "'2026-01-01T00:00:00Z', '{\"bad\": 1}')"
    )
    conn.commit()
    conn.close()
    refused(capsys, "requirements", expect="table requirements, row rq-1")


def test_foreign_sqlite_file_is_not_adopted(cwd, capsys):
    Path("ws").mkdir()
    conn = sqlite3.connect("ws/workspace.sqlite")
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    refused(capsys, "replay", "list", "--workspace", "ws", expect="not a chassis-inspector workspace")
    conn = sqlite3.connect("ws/workspace.sqlite")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.close()
    assert tables == {"customers"}


_EXECUTORS = """
import os, signal
from core.examples.sample_agent import make_executor as _make

def raises():
    raise RuntimeError("factory exploded")

def needs_args(x):
    return _make()

def killer():
    ex = _make()
    if os.environ.get("KILL_ME") == "1":
        real = ex.run
        def run(runtime, task):
            os.kill(os.getpid(), signal.SIGKILL)
            return real(runtime, task)
        ex.run = run
    return ex
"""


@pytest.fixture()
def live_branch(cwd, capsys, monkeypatch):
    (cwd / "bad_executors.py").write_text(_EXECUTORS)
    monkeypatch.syspath_prepend(str(cwd))
    Path("pol.json").write_text('{"model": "live", "tool": "live"}')
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "--policy", "pol.json", "-o", "b.json")[0] == 0
    return cwd


@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        ("nocolon", "'nocolon' must be written module:function"),
        ("nomod_xyz:fn", "cannot import 'nomod_xyz'"),
        ("os:getcwd", "returned str, not an Executor"),
        ("bad_executors:raises", "calling raises() failed: RuntimeError: factory exploded"),
        ("bad_executors:needs_args", "calling needs_args() failed: TypeError"),
    ],
)
def test_bad_executor_leaves_no_replay(live_branch, capsys, spec, expect):
    refused(capsys, "replay", "base.json", "--branch", "b.json", "--executor", spec, expect=expect)
    code, out, _ = cli(capsys, "replay", "list", "--json")
    assert code == 0 and orjson.loads(out) == []


def test_unexpected_engine_failure_marks_the_replay_failed(cwd, capsys, monkeypatch):
    from core.replay.engine import ReplayEngine

    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")[0] == 0

    def boom(self):
        raise RuntimeError("engine bug")

    monkeypatch.setattr(ReplayEngine, "run", boom)
    refused(capsys, "replay", "base.json", "--branch", "b.json", expect="failed: RuntimeError: engine bug")
    [(rid, status)] = _statuses(cwd / ".chassis-inspector")
    assert status == "failed"
    _, out, _ = cli(capsys, "replay", "show", rid, "--json")
    rec = orjson.loads(out)
    assert rec["error"] == {"type": "RuntimeError", "message": "engine bug"}
    assert [a["outcome"] for a in rec["attempts"]] == ["failed"] and rec["attempts"][0]["ended_at"]


def test_failed_replay_prints_the_reason_on_stderr(cwd, capsys):
    Path("pol.json").write_text('{"tool": "live"}')
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "--policy", "pol.json", "-o", "b.json")[0] == 0
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json")
    assert code == 2 and orjson.loads(out)["status"] == "failed"
    assert err.count("\n") == 1 and "failed: NoExecutor" in err


def test_resume_after_sigkill_uses_the_executor_the_replay_started_with(live_branch):
    import os
    import subprocess
    import sys

    root = ROOT
    env = {**os.environ, "PYTHONPATH": f"{live_branch}{os.pathsep}{root}", "KILL_ME": "1"}
    main_ = ["-c", "import sys; from inspector.cli import main; sys.exit(main(sys.argv[1:]))"]
    cmd = [sys.executable, *main_, "replay", "base.json", "--branch", "b.json", "--executor", "bad_executors:killer"]
    p = subprocess.run(cmd, cwd=live_branch, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert p.returncode == -9, p.stderr
    [(rid, status)] = _statuses(live_branch / ".chassis-inspector")
    assert status == "running"
    env["KILL_ME"] = "0"
    p = subprocess.run(
        [sys.executable, *main_, "replay", "resume", rid, "--json"],
        cwd=live_branch,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "NoExecutor" not in p.stdout + p.stderr
    rec = orjson.loads(p.stdout)
    assert rec["executor"] == "bad_executors:killer"
    assert rec["status"] != "running" and len(rec["attempts"]) == 2


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"checkpoint": 99999}, "b2.json: branch br-edit: checkpoint 99999 is not the seq of a record of the base"),
        ({"parent": "br-unknown"}, "b2.json: parent 'br-unknown' is not a branch of the workspace"),
        ({"id": "../../etc/passwd"}, "b2.json: at /: id '../../etc/passwd' is not a branch id"),
        ({"created_at": "yesterday"}, "b2.json: at /: created_at 'yesterday' is not an RFC 3339"),
    ],
)
def test_branch_file_errors_name_the_branch_file(cwd, capsys, change, expect):
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")[0] == 0
    doc = {**orjson.loads(Path("b.json").read_bytes()), "id": "br-edit", **change}
    Path("b2.json").write_bytes(orjson.dumps(doc))
    refused(capsys, "replay", "base.json", "--branch", "b2.json", expect=expect)
    assert cli(capsys, "replay", "list", "--json")[1].strip() == "[]"


def test_negative_checkpoint_and_undecodable_args_file(cwd, capsys):
    refused(capsys, "branch", "new", "base.json", "--at", -1, expect="checkpoint -1 is not the seq of a record")
    Path("out.json").write_text('{"content": 1}')
    Path("garbage.bin").write_bytes(b"\xff\xfe\x00\x81garbage")
    refused(
        capsys,
        "fixture",
        "add",
        "--tool",
        "t",
        "--args-json",
        "@garbage.bin",
        "--output",
        "out.json",
        expect="garbage.bin: line 1, column 1: not UTF-8 text (byte 0xff at byte offset 0)",
    )
    refused(
        capsys,
        "fixture",
        "add",
        "--tool",
        "t",
        "--args-json",
        '{"n": 100000000000000000000000000}',
        "--output",
        "out.json",
        expect="--args-json: at /n: integer 100000000000000000000000000 is outside",
    )
    Path("big.json").write_text('{"content": 9007199254740993}')
    refused(
        capsys,
        "fixture",
        "add",
        "--tool",
        "t",
        "--any",
        "--output",
        "big.json",
        expect="big.json: at /content: integer 9007199254740993 is outside",
    )
    Path("iv.json").write_text('{"kind": "tool_result", "seq": 4, "result": {"content": 9007199254740993}}')
    refused(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        0,
        "--intervention",
        "iv.json",
        expect="iv.json: at /result/content: integer 9007199254740993",
    )


def test_value_without_canonical_form_in_the_workspace_fails_the_replay(cwd, capsys, monkeypatch):
    from core.errors import CanonicalizationError
    from core.replay.engine import ReplayEngine

    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")[0] == 0

    def bad(self):
        raise CanonicalizationError("integer 9007199254740993 is outside the I-JSON safe range", "/result/content")

    monkeypatch.setattr(ReplayEngine, "run", bad)
    refused(capsys, "replay", "base.json", "--branch", "b.json", expect="(branch br-")
    [(rid, status)] = _statuses(cwd / ".chassis-inspector")
    assert status == "failed"
    # a resume that fails again ends its attempt too: nothing is ever left running
    refused(capsys, "replay", "resume", rid, expect=f"replay {rid} (branch")
    _, out, _ = cli(capsys, "replay", "show", rid, "--json")
    assert [a["outcome"] for a in orjson.loads(out)["attempts"]] == ["failed", "failed"]


def test_bad_fixtures_file_leaves_the_workspace_unchanged(cwd, capsys):
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json", "--workspace", "other")[0] == 0
    Path("fx.json").write_text('[{"tool": "t", "any": true, "output": {"content": 9007199254740993}}]')
    refused(
        capsys,
        "replay",
        "base.json",
        "--branch",
        "b.json",
        "--fixtures",
        "fx.json",
        expect="fx.json: at /0/output/content: integer 9007199254740993",
    )
    conn = sqlite3.connect(".chassis-inspector/workspace.sqlite")
    try:
        assert [
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("replays", "branches", "recordings", "fixtures")
        ] == [0, 0, 0, 0]
    finally:
        conn.close()


def test_bad_branch_new_creates_no_workspace(cwd, capsys):
    refused(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        99999,
        "--workspace",
        "ws",
        expect="checkpoint 99999 is not the seq of a record",
    )
    refused(capsys, "fixture", "attach", "rq-x", "base.json", "--workspace", "ws", expect="no workspace at ws")
    assert not Path("ws").exists()
