"""The workspace is private and stores only redacted values (docs/format.md, "Redaction")."""

from __future__ import annotations

import os
import sqlite3
import stat
import zlib
from pathlib import Path

from core.record.recording import ToolRecord
from core.record.redaction import marker
from core.replay.branch import BranchDraft, resolve_branch
from core.replay.fixtures import Fixture
from core.replay.replays import start_replay
from core.workspace import EVENTS_DIR, FILE_NAME, Workspace
from tests.builders import make_recording

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQ"


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_database_is_0600_and_its_folders_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        folder = tmp_path / "ws"
        rec = make_recording()
        with Workspace.open(folder) as ws:
            record, _ = start_replay(
                ws, "base.json", resolve_branch(None, BranchDraft("base.json", at=0), rec), base=rec
            )
            events = ws.write_events_file(record.id)
            db = folder / FILE_NAME
            assert _mode(folder) == 0o700
            assert _mode(db) == 0o600
            for suffix in ("-wal", "-shm"):
                side = db.with_name(FILE_NAME + suffix)
                assert side.exists() and _mode(side) == 0o600, suffix
            assert events is not None and _mode(events) == 0o600
            assert _mode(folder / EVENTS_DIR) == 0o700
    finally:
        os.umask(old)


def test_a_database_left_readable_by_others_is_narrowed(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    Workspace.open(folder).close()
    db = folder / FILE_NAME
    db.chmod(0o644)
    Workspace.open(folder).close()
    assert _mode(db) == 0o600


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    Workspace.open(folder).close()
    assert _mode(folder) == 0o755  # the user's own folder is not changed
    assert _mode(folder / FILE_NAME) == 0o600


def _rows(db: Path) -> str:
    conn = sqlite3.connect(db)
    out = []
    for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
        for row in conn.execute(f'SELECT * FROM "{t}"'):
            for v in row:
                out.append(zlib.decompress(v).decode() if isinstance(v, bytes) else str(v))
    conn.close()
    return "\n".join(out)


def test_values_built_in_code_are_stored_redacted(tmp_path: Path) -> None:
    rec = make_recording()
    tool = next(r for r in rec.records if isinstance(r, ToolRecord))
    tool.result.content = f"key {SECRET}"  # a base written elsewhere, never redacted
    rec.digest = None
    with Workspace.open(tmp_path / "ws") as ws:
        digest = ws.put_recording(rec, "base.json")
        ws.put_fixture(Fixture(name="t", output={"content": f"pay {SECRET}"}, arguments={"password": "hunter22x"}))
        ws.put_metrics(digest, {"note": f"seen {SECRET}"})
        assert ws.get_recording(digest).records[tool.seq].result.content == f"key {marker('stripe-key')}"
    text = _rows(tmp_path / "ws" / FILE_NAME)
    assert SECRET not in text and "hunter22x" not in text
    assert marker("stripe-key") in text and marker("password") in text
