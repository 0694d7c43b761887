"""Bad inputs to the replay / workspace commands: one line on stderr naming the file,
the place and the reason, exit 2, no traceback, the workspace left as it was."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from inspector.cli import main

SAMPLES = Path(__file__).resolve().parents[3] / "sample_recordings"


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
    refused(capsys, "replay", "base.json", "--branch", "b.json",
            expect=f"branch {doc['id']} already exists in the workspace with different content")
    code, out, _ = cli(capsys, "branch", "list", "--json")
    assert [b.get("label") for b in orjson.loads(out)] == [None]


@pytest.mark.parametrize(
    ("sql", "expect"),
    [("UPDATE meta SET value='abc' WHERE key='schema_version'", "table meta, key schema_version: 'abc'"),
     ("DROP TABLE replays", "table(s) replays missing"),
     ("UPDATE replays SET record='not json'", "table replays, row rp-"),
     ("UPDATE replays SET record='[]'", "table replays, row rp-"),
     ("UPDATE replay_events SET body=X'0001'", "table replay_events, row rp-")],
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
    conn.execute("INSERT INTO requirements VALUES ('rq-1', (SELECT id FROM replays), 'open', 'tool', 't', "
                 "'2026-01-01T00:00:00Z', '{\"bad\": 1}')")
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
