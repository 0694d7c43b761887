"""The workspace: a SQLite database holding recordings, branches, replays and their outputs.

Location: ``./.chassis-inspector/workspace.sqlite`` by default (``--workspace DIR`` puts
it in ``DIR/workspace.sqlite``). Stdlib :mod:`sqlite3` in WAL mode (readers never block
the writer; a killed process never leaves a half-applied transaction), a 30 s busy
timeout so two processes can use one workspace at once, and ``BEGIN IMMEDIATE`` for every
write so writers queue instead of failing mid-transaction.

Tables (schema version :data:`SCHEMA_VERSION`, upgraded by the ordered
:data:`MIGRATIONS`, each applied in its own transaction and recorded in ``meta``):

* ``recordings`` — base recordings by digest (path as first given, metadata, the
  document zlib-compressed, so a replay can be resumed after the file moved);
* ``branches`` — branch JSON, with base digest, parent, label, checkpoint;
* ``replays`` — the replay record JSON with its status;
* ``replay_events`` — each replay's events recording (zlib-compressed JSON);
* ``attempts`` — one row per start/resume;
* ``requirements`` — requirement JSON with status;
* ``fixtures`` — fixture JSON with scope, kind, name, args hash (insertion order kept);
* ``diffs``, ``metrics``, ``effects`` (migration 2) — generic JSON rows for comparison
  outputs, keyed by replay (diffs), subject (metrics) and base digest (effects).

Every replay's outputs (record, events, attempts, requirements) are written in one
transaction (:meth:`Workspace.save_replay_outputs`): a crash at any moment leaves either
the previous state or the new one.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from .errors import BranchError, FixtureError, FormatError, WorkspaceError
from .record.io import dumps_recording, recording_to_dict
from .record.recording import Recording
from .replay.branch import Branch, branch_from_dict
from .replay.engine import ReplayOutcome
from .replay.fixtures import Fixture, FixtureGateway, Requirement, parse_output, parse_scope
from .replay.replay_record import ReplayRecord

_M = TypeVar("_M", bound=BaseModel)

__all__ = ["DEFAULT_DIR", "FILE_NAME", "MIGRATIONS", "SCHEMA_VERSION", "NoWorkspace", "Workspace"]

DEFAULT_DIR = ".chassis-inspector"
FILE_NAME = "workspace.sqlite"

_V1 = """
CREATE TABLE recordings (
    digest TEXT PRIMARY KEY, path TEXT, metadata TEXT NOT NULL, records INTEGER NOT NULL,
    body BLOB NOT NULL, added_at TEXT NOT NULL);
CREATE TABLE branches (
    id TEXT PRIMARY KEY, base_digest TEXT NOT NULL, parent_id TEXT, label TEXT,
    checkpoint INTEGER NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX branches_base ON branches(base_digest);
CREATE TABLE replays (
    id TEXT PRIMARY KEY, branch_id TEXT NOT NULL, base_digest TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX replays_base ON replays(base_digest);
CREATE INDEX replays_branch ON replays(branch_id);
CREATE TABLE replay_events (
    replay_id TEXT PRIMARY KEY REFERENCES replays(id) ON DELETE CASCADE,
    digest TEXT NOT NULL, records INTEGER NOT NULL, body BLOB NOT NULL);
CREATE TABLE attempts (
    replay_id TEXT NOT NULL REFERENCES replays(id) ON DELETE CASCADE, number INTEGER NOT NULL,
    kind TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL,
    PRIMARY KEY (replay_id, number));
CREATE TABLE requirements (
    id TEXT PRIMARY KEY, replay_id TEXT NOT NULL REFERENCES replays(id) ON DELETE CASCADE,
    status TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, created_at TEXT NOT NULL,
    body TEXT NOT NULL);
CREATE INDEX requirements_status ON requirements(status);
CREATE TABLE fixtures (
    n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, scope TEXT NOT NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, args_hash TEXT, created_at TEXT NOT NULL,
    body TEXT NOT NULL);
"""

_V2 = """
CREATE TABLE diffs (
    n INTEGER PRIMARY KEY AUTOINCREMENT, replay_id TEXT NOT NULL, kind TEXT NOT NULL,
    body TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX diffs_replay ON diffs(replay_id, kind);
CREATE TABLE metrics (
    subject TEXT NOT NULL, name TEXT NOT NULL, value REAL, body TEXT,
    created_at TEXT NOT NULL, PRIMARY KEY (subject, name));
CREATE TABLE effects (
    n INTEGER PRIMARY KEY AUTOINCREMENT, base_digest TEXT NOT NULL, rank INTEGER NOT NULL,
    body TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX effects_base ON effects(base_digest, rank);
"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "recordings, branches, replays, replay events, attempts, requirements, fixtures", _V1),
    (2, "diffs, metrics and effects", _V2),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while serializing many records: it would rescan the
    growing heap again and again (no cycles are created here)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _json(obj: Any) -> str:
    return orjson.dumps(obj).decode()


class NoWorkspace(WorkspaceError):
    """A read-only command found no workspace at ``path`` (nothing was stored there yet).
    The message reads ``no workspace at PATH (…)``; list commands print it and exit 0,
    commands that need a stored id fail with it (exit 2)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"no workspace at {path} (nothing stored yet: sweep, replay and branch new create it;"
            " --workspace DIR points elsewhere)"
        )


class _Conn(sqlite3.Connection):
    """A connection whose SQL errors (other than constraint violations, which callers
    turn into their own messages) become :class:`WorkspaceError` naming the workspace
    file, the statement's table and SQLite's reason — a damaged workspace (a dropped
    table, a foreign database) never surfaces as a traceback."""

    ws_path: str = "<workspace>"

    def execute(self, sql: str, params: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise WorkspaceError(f"{self.ws_path}: {_describe_sql(sql)}: {exc}") from None

    def executemany(self, sql: str, params: Any, /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise WorkspaceError(f"{self.ws_path}: {_describe_sql(sql)}: {exc}") from None


def _describe_sql(sql: str) -> str:
    words = sql.split()
    table = next((words[i + 1] for i, w in enumerate(words[:-1]) if w.upper() in ("FROM", "INTO", "UPDATE")), None)
    verb = words[0].upper() if words else "SQL"
    if verb in ("SELECT",):
        return f"cannot read table {table}" if table else "cannot read"
    if verb in ("INSERT", "UPDATE", "DELETE"):
        return f"cannot write table {table}" if table else "cannot write"
    return "database error"


_TABLES = (
    "meta",
    "recordings",
    "branches",
    "replays",
    "replay_events",
    "attempts",
    "requirements",
    "fixtures",
    "diffs",
    "metrics",
    "effects",
)


class Workspace:
    """An open workspace database.

    Open with :meth:`open` (creates the folder and file, applies migrations); use as a
    context manager or call :meth:`close`. Methods raise :class:`WorkspaceError` naming
    the file and the reason (locked past the timeout, not a database, newer schema,
    unknown id).
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    # ------------------------------------------------------------------ open / close

    @classmethod
    def open(
        cls, folder: str | os.PathLike[str] | None = None, *, timeout: float = 30.0, create: bool = True
    ) -> Workspace:
        """Open (creating if needed) ``folder/workspace.sqlite`` (default folder
        ``./.chassis-inspector``) and bring its schema to :data:`SCHEMA_VERSION`.

        ``create=False`` is for commands that only read: a missing workspace is not
        created (no folder, no file) and :class:`NoWorkspace` is raised instead.

        Raises:
            NoWorkspace: ``create=False`` and there is no ``folder/workspace.sqlite``.
            WorkspaceError: the folder cannot be created, the file is not a SQLite
                database, or its schema is newer than this program knows.
        """
        folder_p = Path(folder) if folder is not None else Path(DEFAULT_DIR)
        if folder_p.exists() and not folder_p.is_dir():
            raise WorkspaceError(f"{folder_p}: the workspace must be a folder, and this is a file")
        if not create and not (folder_p / FILE_NAME).is_file():
            raise NoWorkspace(folder_p)
        try:
            folder_p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"{folder_p}: cannot create the workspace folder: {exc.strerror}") from None
        path = folder_p / FILE_NAME
        try:
            conn = sqlite3.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False, factory=_Conn
            )
            conn.ws_path = str(path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.OperationalError as exc:
            raise WorkspaceError(f"{path}: cannot open the workspace database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise WorkspaceError(f"{path}: not a workspace database ({exc})") from None
        except WorkspaceError as exc:
            raise WorkspaceError(f"{path}: not a workspace database ({str(exc).rpartition(': ')[2]})") from None
        ws = cls(path, conn)
        try:
            ws._migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise WorkspaceError(f"{path}: not a workspace database ({exc})") from None
        except WorkspaceError:
            conn.close()
            raise
        return ws

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``; rolled back on any error)."""
        c = self._conn
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise WorkspaceError(f"{self.path}: cannot write: {exc}") from None
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        else:
            try:
                c.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                c.execute("ROLLBACK")
                raise WorkspaceError(f"{self.path}: cannot commit: {exc}") from None

    def _migrate(self) -> None:
        c = self._conn
        with self._tx():
            tables = {
                r[0]
                for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")
                if not r[0].startswith("sqlite_")
            }
            row = None
            if "meta" in tables:
                try:
                    row = c.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                except WorkspaceError:
                    row = None
            if row is None and tables:
                shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                raise WorkspaceError(
                    f"{self.path}: not a chassis-inspector workspace (a SQLite database with tables "
                    f"{shown} and no workspace schema version in table meta); refusing to use it"
                )
            c.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            version = self._parse_version(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise WorkspaceError(
                    f"{self.path}: schema version {version} is newer than this program's "
                    f"({SCHEMA_VERSION}); upgrade chassis-inspector"
                )
            for number, description, script in MIGRATIONS:
                if number <= version:
                    continue
                for stmt in script.split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(number),))
                c.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                    (f"migration.{number}", f"{_now()} {description}"),
                )
            present = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            missing = [t for t in _TABLES if t not in present]
            if missing:
                raise WorkspaceError(
                    f"{self.path}: the workspace is damaged: table(s) {', '.join(missing)} missing "
                    f"(schema version {version})"
                )

    def _parse_version(self, value: Any) -> int:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise WorkspaceError(
                f"{self.path}: the workspace is damaged: table meta, key schema_version: "
                f"{value!r} is not a schema version number"
            ) from None

    def _load(self, text: Any, where: str) -> Any:
        """Parse a stored JSON column; WorkspaceError naming the file, ``where`` (table
        and row) and the reason when it is damaged."""
        try:
            return orjson.loads(text)
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise WorkspaceError(f"{self.path}: the workspace is damaged: {where}: not JSON ({exc})") from None

    def _model(self, cls: type[_M], text: Any, where: str) -> _M:
        """Parse and validate a stored JSON row as ``cls`` (WorkspaceError if damaged)."""
        obj = self._load(text, where)
        try:
            return cls.model_validate(obj)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = "/" + "/".join(str(p) for p in err.get("loc", ()))
            raise WorkspaceError(
                f"{self.path}: the workspace is damaged: {where}: at {loc}: {err.get('msg', 'invalid value')}"
            ) from None

    def _unzip(self, blob: Any, where: str) -> bytes:
        try:
            return zlib.decompress(blob)
        except (zlib.error, TypeError) as exc:
            raise WorkspaceError(f"{self.path}: the workspace is damaged: {where}: not zlib data ({exc})") from None

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return self._parse_version(row[0]) if row else 0

    def check(self) -> list[str]:
        """Integrity and consistency problems (empty when healthy): SQLite's
        ``integrity_check``, and every finished replay (completed, paused, failed) has
        its events and one attempt row per attempt in its record."""
        problems: list[str] = []
        res = [r[0] for r in self._conn.execute("PRAGMA integrity_check").fetchall()]
        if res != ["ok"]:
            problems.extend(res)
        rows = self._conn.execute(
            "SELECT r.id, r.status, r.record, e.replay_id IS NOT NULL, "
            "(SELECT COUNT(*) FROM attempts a WHERE a.replay_id = r.id) FROM replays r "
            "LEFT JOIN replay_events e ON e.replay_id = r.id"
        ).fetchall()
        for rid, status, record, has_events, n_attempts in rows:
            rec = self._load(record, f"table replays, row {rid}, column record")
            if not isinstance(rec, dict):
                problems.append(f"replay {rid}: record is not a JSON object")
                continue
            if status in ("completed", "paused") and not has_events:
                problems.append(f"replay {rid} is {status} but has no events")
            if status in ("completed", "paused", "failed") and n_attempts != len(rec.get("attempts", [])):
                problems.append(
                    f"replay {rid}: {n_attempts} attempt row(s), record lists {len(rec.get('attempts', []))}"
                )
            if rec.get("status") != status:
                problems.append(f"replay {rid}: status column {status} != record {rec.get('status')}")
        return problems

    # ------------------------------------------------------------------ recordings

    def put_recording(self, rec: Recording, path: str | None = None) -> str:
        """Store a base recording by digest (no-op when already stored); return the digest."""
        data = dumps_recording(rec)
        digest = rec.digest or orjson.loads(data)["digest"]
        row = self._conn.execute("SELECT 1 FROM recordings WHERE digest=?", (digest,)).fetchone()
        if row:
            return digest
        body = zlib.compress(data, 1)
        with self._tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO recordings(digest, path, metadata, records, body, added_at) "
                "VALUES (?,?,?,?,?,?)",
                (digest, path, _json(rec.metadata), len(rec.records), body, _now()),
            )
        return digest

    def get_recording(self, digest: str) -> Recording:
        """The stored recording with ``digest``. Raises WorkspaceError if unknown."""
        row = self._conn.execute("SELECT body, path FROM recordings WHERE digest=?", (digest,)).fetchone()
        if row is None:
            raise WorkspaceError(f"{self.path}: no recording with digest {digest}")
        try:
            return Recording.loads(
                zlib.decompress(row[0]), source=f"workspace recording {row[1] or digest}", verify_keys=False
            )
        except (FormatError, zlib.error, TypeError) as exc:
            raise WorkspaceError(f"{self.path}: stored recording {digest} is damaged: {exc}") from None

    def list_recordings(self) -> list[dict[str, Any]]:
        """``[{digest, path, records, added_at, metadata}]`` in insertion order."""
        rows = self._conn.execute(
            "SELECT digest, path, records, added_at, metadata FROM recordings ORDER BY rowid"
        ).fetchall()
        return [
            {
                "digest": d,
                "path": p,
                "records": n,
                "added_at": a,
                "metadata": self._load(m, f"table recordings, row {d}, column metadata"),
            }
            for d, p, n, a, m in rows
        ]

    # ------------------------------------------------------------------ branches

    def put_branch(self, branch: Branch) -> None:
        """Store a branch. Storing the same branch again is a no-op; a branch is
        immutable once stored (replays refer to it by id, and resuming one re-runs it).

        Raises:
            WorkspaceError: a branch with this id is stored with different content.
        """
        row = self._conn.execute("SELECT body FROM branches WHERE id=?", (branch.id,)).fetchone()
        if row is not None:
            try:
                same = (
                    branch_from_dict(self._load(row[0], f"table branches, row {branch.id}"), source="").to_json_obj()
                    == branch.to_json_obj()
                )
            except BranchError:
                same = False
            if same:
                return
            raise WorkspaceError(
                f"{self.path}: branch {branch.id} already exists in the workspace with different content "
                "(a stored branch cannot change: give the new branch another id)"
            )
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO branches(id, base_digest, parent_id, label, checkpoint, created_at, body) "
                "VALUES (?,?,?,?,?,?,?)",
                (
                    branch.id,
                    branch.base.digest,
                    branch.parent,
                    branch.label,
                    branch.checkpoint,
                    branch.created_at,
                    branch.dumps().decode(),
                ),
            )

    def get_branch(self, branch_id: str) -> Branch:
        """The branch ``branch_id``. Raises WorkspaceError if unknown."""
        row = self._conn.execute("SELECT body FROM branches WHERE id=?", (branch_id,)).fetchone()
        if row is None:
            raise WorkspaceError(f"{self.path}: no branch {branch_id!r}")
        return branch_from_dict(
            self._load(row[0], f"table branches, row {branch_id}"),
            source=f"{self.path}: table branches, row {branch_id}",
        )

    def list_branches(self, base_digest: str | None = None) -> list[Branch]:
        """Branches (of one base when ``base_digest`` is given), oldest first."""
        if base_digest is None:
            rows = self._conn.execute("SELECT id, body FROM branches ORDER BY created_at, rowid").fetchall()
        else:
            rows = self._conn.execute(
                "SELECT id, body FROM branches WHERE base_digest=? ORDER BY created_at, rowid", (base_digest,)
            ).fetchall()
        return [
            branch_from_dict(self._load(b, f"table branches, row {i}"), source=f"{self.path}: table branches, row {i}")
            for i, b in rows
        ]

    # ------------------------------------------------------------------ replays

    def create_replay(self, record: ReplayRecord) -> None:
        """Insert a new replay record (status ``queued``). Raises WorkspaceError if the id
        exists."""
        try:
            with self._tx() as c:
                c.execute(
                    "INSERT INTO replays(id, branch_id, base_digest, status, created_at, updated_at, record) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        record.id,
                        record.branch_id,
                        record.base_digest,
                        record.status,
                        record.created_at,
                        record.updated_at,
                        _json(record.to_json_obj()),
                    ),
                )
        except sqlite3.IntegrityError:
            raise WorkspaceError(f"{self.path}: replay {record.id} already exists") from None

    def save_replay_state(self, record: ReplayRecord) -> None:
        """Update the record row only (e.g. ``running`` at the start of an attempt)."""
        with self._tx() as c:
            c.execute(
                "UPDATE replays SET status=?, updated_at=?, record=? WHERE id=?",
                (record.status, record.updated_at, _json(record.to_json_obj()), record.id),
            )

    def save_replay_outputs(
        self, record: ReplayRecord, outcome: ReplayOutcome | None, requirements: list[Requirement]
    ) -> None:
        """Write everything one attempt produced in ONE transaction: the record, the
        events (replacing earlier ones), the attempts, and the requirements (a requirement
        met again is reopened)."""
        events_blob = None
        n_events = 0
        digest = None
        if outcome is not None:
            with _gc_paused():
                doc = recording_to_dict(outcome.events)
                digest = doc["digest"]
                record.events_digest = digest
                events_blob = zlib.compress(orjson.dumps(doc), 1)
                del doc
            n_events = len(outcome.events.records)
        with self._tx() as c:
            c.execute(
                "UPDATE replays SET status=?, updated_at=?, record=? WHERE id=?",
                (record.status, record.updated_at, _json(record.to_json_obj()), record.id),
            )
            if events_blob is not None:
                c.execute(
                    "INSERT OR REPLACE INTO replay_events(replay_id, digest, records, body) VALUES (?,?,?,?)",
                    (record.id, digest, n_events, events_blob),
                )
            c.execute("DELETE FROM attempts WHERE replay_id=?", (record.id,))
            c.executemany(
                "INSERT INTO attempts(replay_id, number, kind, started_at, ended_at, outcome) VALUES (?,?,?,?,?,?)",
                [(record.id, a.number, a.kind, a.started_at, a.ended_at, a.outcome) for a in record.attempts],
            )
            for req in requirements:
                req = req.model_copy(update={"status": "open", "fixture_id": None})
                c.execute(
                    "INSERT OR REPLACE INTO requirements(id, replay_id, status, kind, name, created_at, body) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (req.id, req.replay_id, req.status, req.kind, req.name, req.created_at, _json(req.to_json_obj())),
                )

    def get_replay(self, replay_id: str) -> ReplayRecord:
        """The replay record ``replay_id``. Raises WorkspaceError if unknown."""
        row = self._conn.execute("SELECT record FROM replays WHERE id=?", (replay_id,)).fetchone()
        if row is None:
            raise WorkspaceError(f"{self.path}: no replay {replay_id!r}")
        return self._model(ReplayRecord, row[0], f"table replays, row {replay_id}, column record")

    def list_replays(self, *, base_digest: str | None = None, branch_id: str | None = None) -> list[ReplayRecord]:
        """Replay records, oldest first, optionally of one base or one branch."""
        q = "SELECT record FROM replays"
        args: list[Any] = []
        cond = []
        if base_digest is not None:
            cond.append("base_digest=?")
            args.append(base_digest)
        if branch_id is not None:
            cond.append("branch_id=?")
            args.append(branch_id)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q = q.replace("SELECT record", "SELECT id, record") + " ORDER BY created_at, rowid"
        return [
            self._model(ReplayRecord, r[1], f"table replays, row {r[0]}, column record")
            for r in self._conn.execute(q, args).fetchall()
        ]

    def replay_events(self, replay_id: str) -> Recording | None:
        """The events recording of a replay (``None`` before its first attempt ends)."""
        row = self._conn.execute("SELECT body FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        if row is None:
            return None
        where = f"table replay_events, row {replay_id}"
        try:
            return Recording.loads(self._unzip(row[0], where), source=f"{self.path}: {where}", verify_keys=False)
        except FormatError as exc:
            raise WorkspaceError(f"{self.path}: the workspace is damaged: {where}: {exc}") from None

    def replay_events_bytes(self, replay_id: str) -> bytes | None:
        """The events recording of a replay as saved JSON bytes (or ``None``)."""
        row = self._conn.execute("SELECT body FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        return self._unzip(row[0], f"table replay_events, row {replay_id}") if row else None

    def attempts(self, replay_id: str) -> list[dict[str, Any]]:
        """Attempt rows of a replay: ``[{number, kind, started_at, ended_at, outcome}]``."""
        rows = self._conn.execute(
            "SELECT number, kind, started_at, ended_at, outcome FROM attempts WHERE replay_id=? ORDER BY number",
            (replay_id,),
        ).fetchall()
        return [dict(zip(("number", "kind", "started_at", "ended_at", "outcome"), r)) for r in rows]

    # ------------------------------------------------------------------ fixtures

    def put_fixture(self, fixture: Fixture) -> Fixture:
        """Store a fixture (later ones win ties in the gateway); return it."""
        with self._tx() as c:
            self._insert_fixture(c, fixture)
        return fixture

    def _insert_fixture(self, c: sqlite3.Connection, f: Fixture) -> None:
        try:
            c.execute(
                "INSERT INTO fixtures(id, scope, kind, name, args_hash, created_at, body) VALUES (?,?,?,?,?,?,?)",
                (f.id, f.scope, f.kind, f.name, f.args_hash, f.created_at, _json(f.to_json_obj())),
            )
        except sqlite3.IntegrityError:
            raise FixtureError(f"a fixture with id {f.id!r} already exists") from None

    def fixtures(self) -> list[Fixture]:
        """Every fixture, in insertion order."""
        rows = self._conn.execute("SELECT id, body FROM fixtures ORDER BY n").fetchall()
        return [self._model(Fixture, r[1], f"table fixtures, row {r[0]}") for r in rows]

    def fixture_gateway(self) -> FixtureGateway:
        """A :class:`FixtureGateway` over every stored fixture (scopes applied at match)."""
        return FixtureGateway(self.fixtures())

    # ------------------------------------------------------------------ requirements

    def requirements(self, *, open_only: bool = False, replay_id: str | None = None) -> list[Requirement]:
        """Requirements, oldest first; only ``open`` ones with ``open_only``; of one
        replay with ``replay_id``."""
        q = "SELECT id, body FROM requirements"
        cond, args = [], []
        if open_only:
            cond.append("status='open'")
        if replay_id is not None:
            cond.append("replay_id=?")
            args.append(replay_id)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q += " ORDER BY created_at, rowid"
        return [
            self._model(Requirement, r[1], f"table requirements, row {r[0]}")
            for r in self._conn.execute(q, args).fetchall()
        ]

    def get_requirement(self, req_id: str) -> Requirement:
        """The requirement ``req_id``. Raises FixtureError if unknown."""
        row = self._conn.execute("SELECT body FROM requirements WHERE id=?", (req_id,)).fetchone()
        if row is None:
            raise FixtureError(f"no requirement {req_id!r} in {self.path}")
        return self._model(Requirement, row[0], f"table requirements, row {req_id}")

    def _put_requirement(self, c: sqlite3.Connection, req: Requirement) -> None:
        c.execute("UPDATE requirements SET status=?, body=? WHERE id=?", (req.status, _json(req.to_json_obj()), req.id))

    def attach_fixture(self, req_id: str, output: Any, *, source: str, scope: str | None = None) -> Fixture:
        """Answer requirement ``req_id`` with ``output`` (a tool result or model response
        object): create a fixture matching the requirement's call exactly (scope default
        ``branch:<the replay's branch>``) and mark the requirement satisfied — in one
        transaction.

        Raises:
            FixtureError: unknown requirement, an approval requirement (approve it
                instead), an output of the wrong shape, or a bad scope.
        """
        req = self.get_requirement(req_id)
        if req.kind == "approval":
            raise FixtureError(
                f"requirement {req_id} asks for an approval, not a fixture: use "
                f"'requirements --approve {req_id}' (or --waive)"
            )
        out = parse_output(output, req.kind, source=source)
        if scope is None:
            scope = f"branch:{self.get_replay(req.replay_id).branch_id}"
        scope = parse_scope(scope)
        fx = Fixture(
            scope=scope,
            kind=req.kind,
            name=req.name,
            args_hash=req.args_hash,
            arguments=req.arguments,
            output=out,
            source=f"{source} (requirement {req_id})",
        )
        with self._tx() as c:
            self._insert_fixture(c, fx)
            self._put_requirement(c, req.model_copy(update={"status": "satisfied", "fixture_id": fx.id}))
        return fx

    def decide_requirement(self, req_id: str, status: str) -> Requirement:
        """Approve (``satisfied``) or waive (``waived``) a requirement. Raises FixtureError
        for an unknown id or status; approving a tool/model requirement needs a fixture
        (use :meth:`attach_fixture`)."""
        if status not in ("satisfied", "waived", "open"):
            raise FixtureError(f"requirement status {status!r} must be open, satisfied or waived")
        req = self.get_requirement(req_id)
        if status == "satisfied" and req.kind != "approval":
            raise FixtureError(f"requirement {req_id} needs a {req.kind} fixture: use 'fixture attach {req_id} FILE'")
        new = req.model_copy(update={"status": status})
        with self._tx() as c:
            self._put_requirement(c, new)
        return new

    # ------------------------------------------------------------------ diffs, metrics, effects

    def put_diffs(self, replay_id: str, kind: str, bodies: list[Any]) -> None:
        """Replace the diffs of ``kind`` (trace, tool, state, output, metric, causal) of a
        replay with ``bodies`` (JSON values), in one transaction."""
        now = _now()
        with self._tx() as c:
            c.execute("DELETE FROM diffs WHERE replay_id=? AND kind=?", (replay_id, kind))
            c.executemany(
                "INSERT INTO diffs(replay_id, kind, body, created_at) VALUES (?,?,?,?)",
                [(replay_id, kind, _json(b), now) for b in bodies],
            )

    def diffs(self, replay_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """``[{kind, body}]`` of a replay, in insertion order."""
        q = "SELECT kind, body FROM diffs WHERE replay_id=?"
        args: list[Any] = [replay_id]
        if kind is not None:
            q += " AND kind=?"
            args.append(kind)
        return [
            {"kind": k, "body": self._load(b, f"table diffs, replay {replay_id}")}
            for k, b in self._conn.execute(q + " ORDER BY n", args)
        ]

    def put_metrics(self, subject: str, metrics: dict[str, Any]) -> None:
        """Store metrics of a subject (a recording digest or a replay id): numbers go in
        ``value``, anything else in ``body`` as JSON. One transaction."""
        now = _now()
        rows = []
        for name, v in metrics.items():
            num = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            rows.append((subject, name, num, None if num is not None else _json(v), now))
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO metrics(subject, name, value, body, created_at) VALUES (?,?,?,?,?)", rows
            )

    def metrics(self, subject: str) -> dict[str, Any]:
        """The metrics of a subject as ``{name: value}``."""
        out: dict[str, Any] = {}
        for name, value, body in self._conn.execute(
            "SELECT name, value, body FROM metrics WHERE subject=?", (subject,)
        ):
            out[name] = value if body is None else self._load(body, f"table metrics, row {subject}/{name}")
        return out

    def put_effects(self, base_digest: str, effects: list[Any]) -> None:
        """Replace the ranked effects of a base (list order = rank), in one transaction."""
        now = _now()
        with self._tx() as c:
            c.execute("DELETE FROM effects WHERE base_digest=?", (base_digest,))
            c.executemany(
                "INSERT INTO effects(base_digest, rank, body, created_at) VALUES (?,?,?,?)",
                [(base_digest, i, _json(e), now) for i, e in enumerate(effects)],
            )

    def effects(self, base_digest: str) -> list[Any]:
        """The ranked effects of a base."""
        return [
            self._load(b, f"table effects, base {base_digest}")
            for (b,) in self._conn.execute("SELECT body FROM effects WHERE base_digest=? ORDER BY rank", (base_digest,))
        ]
