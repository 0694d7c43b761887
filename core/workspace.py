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

Beside the database, ``replays/REPLAY_ID.json`` holds each replay's events as a recording
file (:meth:`Workspace.write_events_file`; SPEC "Application": workspace). Reads return
typed values — :class:`~core.replay.branch.Branch`, :class:`~core.replay.replay_record.ReplayRecord`,
:class:`~core.replay.fixtures.Requirement`, :class:`~core.replay.fixtures.Fixture`,
:class:`StoredRecording`, and the :class:`BranchTree` of a base — so the command line and
the app share them. Storage knows no engine: an attempt's outputs come in as a record,
an events recording and requirements.

Every replay's outputs (record, events, attempts, requirements) are written in one
transaction (:meth:`Workspace.save_replay_outputs`): a crash at any moment leaves either
the previous state or the new one. The events file, when asked for, is written before
that transaction (files first, commit last). A process working on a replay holds its
lock, ``locks/REPLAY_ID.lock`` (:meth:`Workspace.claim_replay`; the comment "replay
locks" below): a ``queued``/``running`` replay whose process is gone reads as
``interrupted`` (:meth:`Workspace.get_replay`). Each open of a writable workspace
cleans up after killed writers (:meth:`Workspace._recover`); :meth:`Workspace.check`
lists what is inconsistent. Rules: docs/replay.md, "Replay states" and "The workspace".

Privacy (docs/format.md, "Redaction"): the database file — and so its ``-wal`` and
``-shm`` files, which SQLite creates with its mode — is readable by its owner only (0600,
as recordings are; a wider file left by an older version is narrowed on open), in a
folder created 0700, and so is ``replays/``. Everything stored is redacted: a base when it
is stored (:func:`core.record.recording_redaction.ensure_redacted`), a replay's events,
and every JSON body (branches, replay records, requirements, fixtures, diffs, metrics,
effects).
"""

from __future__ import annotations

import codecs
import errno
import gc
import json
import os
import re
import socket
import sqlite3
import stat
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from .errors import BranchError, FixtureError, FormatError, OutputError, WorkspaceError, invalid_text, printable
from .record.io import (
    atomic_write_bytes,
    dumps_recording,
    encode_recording,
    recording_digest,
)
from .record.nesting import dumps
from .record.recording import Recording
from .record.recording_redaction import ensure_redacted, redact_recording
from .record.redaction import SecretRedactor, redact
from .replay.branch import Branch, branch_from_dict
from .replay.fixtures import Fixture, FixtureGateway, Requirement, parse_output, parse_scope
from .replay.replay_record import LIVE_STATUSES, ReplayOwner, ReplayRecord

try:
    import fcntl as _fcntl
except ImportError:  # no flock(2) (Windows): a replay's recorded owner alone tells whether it runs
    _fcntl = None  # type: ignore[assignment]

_M = TypeVar("_M", bound=BaseModel)

__all__ = [
    "DEFAULT_DIR",
    "EVENTS_DIR",
    "FILE_NAME",
    "LOCKS_DIR",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BranchNode",
    "BranchTree",
    "HasEvents",
    "NoWorkspace",
    "ReplayBusy",
    "ReplayClaim",
    "ReplaySummary",
    "StoredRecording",
    "Workspace",
]

DEFAULT_DIR = ".chassis-inspector"
FILE_NAME = "workspace.sqlite"
#: the folder, beside the database, that holds each replay's events as ``REPLAY_ID.json``
EVENTS_DIR = "replays"

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
    """``obj`` redacted (docs/format.md, "Redaction": everything the workspace stores is)
    as JSON text."""
    obj, _ = redact(obj, SecretRedactor())
    try:
        return dumps(obj).decode()
    except TypeError as exc:  # orjson: "str is not valid UTF-8: surrogates not allowed"
        bad = invalid_text(obj)
        if bad is None:
            raise
        raise WorkspaceError(
            f"cannot store '{printable(bad)}': it is not valid UTF-8 text (bytes of another encoding, e.g. a file name)"
        ) from exc


def _private_files(path: Path) -> bool:
    """Make the database ``path`` readable by its owner only (mode 0600), as recordings
    are: created so when it does not exist (SQLite gives its ``-wal`` and ``-shm`` files
    the database file's mode), narrowed when an older version left it wider. Returns
    whether this call created the (empty) file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            try:
                if p.stat().st_mode & 0o077:
                    p.chmod(0o600)
            except OSError:  # gone, or not ours: SQLite reports what matters
                pass
    except OSError:  # cannot create it here: sqlite3.connect says why
        pass
    else:
        os.close(fd)
        return True
    return False


def _discard_new_database(path: Path, folder: Path | None) -> None:
    """Remove the database file ``path`` this process created but could not make a
    workspace of (a full disk: SQLite wrote nothing), with its ``-wal``/``-shm``/
    ``-journal`` files and ``folder`` when it was created too and is empty — so a failed
    creation leaves no 0-byte database behind. A file another process has meanwhile
    written to (its database or WAL is not empty) is kept."""
    side = [path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal")]
    try:
        if path.stat().st_size or any(p.exists() and p.stat().st_size for p in side[::2]):
            return
    except OSError:
        return
    for p in (path, *side):
        with suppress(OSError):
            p.unlink()
    if folder is not None:
        with suppress(OSError):
            folder.rmdir()


def _disk_full(exc: BaseException) -> bool:
    """Whether a SQLite or OS error says the disk is full (SQLITE_FULL, ENOSPC, EDQUOT)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "disk is full" in str(exc) or "No space left" in str(exc)


def _head_metadata(blob: Any) -> dict[str, Any] | None:
    """The ``metadata`` object at the start of a zlib-compressed events document written
    by :meth:`Workspace.save_replay_outputs` (``{"format":…,"format_version":…,
    "metadata":{…},…,"records":[…]}``), decompressing only as far as it reaches; ``None``
    when the document does not start that way or cannot be read so (the caller then
    reads it whole and reports what is wrong)."""
    if not isinstance(blob, bytes):
        return None
    inflate = zlib.decompressobj()
    utf8 = codecs.getincrementaldecoder("utf-8")()
    decoder = json.JSONDecoder()
    text, pending, want = "", blob, 1 << 14
    try:
        while True:
            text += utf8.decode(inflate.decompress(pending, want))
            pending = inflate.unconsumed_tail
            head = _EVENTS_HEAD.match(text)
            if head is not None:
                try:
                    meta, _ = decoder.raw_decode(text, head.end())
                except json.JSONDecodeError:
                    pass  # not all of it yet
                else:
                    return meta if isinstance(meta, dict) else None
            elif len(text) > 256:
                return None
            if not pending:
                return None
            want *= 2
    except (zlib.error, UnicodeDecodeError, ValueError, RecursionError):
        return None


# ---------------------------------------------------------------------------- replay locks
#
# A process holds an exclusive flock(2) on ``FOLDER/locks/REPLAY_ID.lock`` from before it
# stores a replay ``queued`` (or ``running``, for a resume) until that attempt's outcome
# is stored. The kernel drops the lock when the process ends, however it ends (SIGKILL
# included), and a pid reused later holds nothing: a ``queued``/``running`` replay whose
# lock file exists and is free is *interrupted*, whatever its recorded pid says. Only
# where no lock can be probed (the lock file is gone, or the file system has no
# flock(2)) does the recorded :class:`~core.replay.replay_record.ReplayOwner` decide:
# the same host and boot (``/proc/sys/kernel/random/boot_id``), a live pid and the same
# start time (``/proc/PID/stat``, field 22) — a reused pid has another start time.
# flock locks belong to the open file description, so a second open in the same process
# conflicts too (a reader in the app sees its own worker's replay as running), and
# closing a probe's descriptor never drops another's lock. SQLite's WAL mode needs a
# local file system anyway (https://www.sqlite.org/wal.html), where flock is reliable.

#: the folder, beside the database, holding one lock file per replay being worked on
LOCKS_DIR = "locks"

#: a temporary file :func:`core.record.io.atomic_write_bytes` leaves beside an events
#: file when its writer dies mid-write: ``.REPLAY_ID.json.XXXXXXXX.tmp`` (tempfile.mkstemp)
_EVENTS_TMP = re.compile(r"\.(?P<id>[A-Za-z0-9_-][A-Za-z0-9._-]{0,127})\.json\.[a-z0-9_]+\.tmp")
#: the write probe :func:`_cannot_write` creates and removes at once:
#: ``.workspace.sqlite.probe-PID-TID`` (one per thread: two threads opening at once must
#: not remove each other's probe); ``.workspace.sqlite.probe-PID`` from older versions
_WRITE_PROBE = re.compile(r"\." + re.escape(FILE_NAME) + r"\.probe-(?P<pid>[0-9]+)(?:-[0-9]+)?")
#: errors of a file system without flock(2): the replay then runs without a lock
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS}

_held: dict[str, int] = {}  # lock file path -> descriptor, of the locks this process holds
_held_guard = threading.Lock()


def _forget_held_locks_in_child() -> None:
    """After fork(2): the child shares the parent's lock descriptors (one open file
    description), which would keep a replay locked after the parent died; it closes its
    copies (the parent keeps its locks) and forgets them."""
    global _held_guard
    _held_guard = threading.Lock()
    for fd in _held.values():
        with suppress(OSError):
            os.close(fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_locks_in_child)


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _boot_id() -> str | None:
    """This boot's id (Linux ``/proc/sys/kernel/random/boot_id``), or ``None``."""
    text = _read_text("/proc/sys/kernel/random/boot_id")
    return text.strip() or None if text is not None else None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks since boot)`` of process ``pid`` from
    ``/proc/PID/stat`` (proc(5): fields 3 and 22), or ``None`` (no such process, no /proc)."""
    text = _read_text(f"/proc/{pid}/stat")
    if text is None:
        return None
    fields = text.rpartition(")")[2].split()  # the name (field 2) may hold spaces and ')'
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _this_process() -> ReplayOwner:
    """The :class:`ReplayOwner` identity of this process."""
    stat = _proc_stat(os.getpid())
    return ReplayOwner(
        pid=os.getpid(), host=socket.gethostname(), boot_id=_boot_id(), started=stat[1] if stat else None
    )


def _owner_alive(owner: ReplayOwner) -> bool:
    """Whether the process ``owner`` names still runs: on this host and boot (a
    workspace is local — SQLite WAL — so a process of another host or an earlier boot is
    not running it now), its pid alive and not a zombie, with the recorded start time
    (a reused pid has another) when one was recorded."""
    if owner.host != socket.gethostname() or owner.boot_id != _boot_id():
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    except OSError:
        return False
    stat = _proc_stat(owner.pid)
    if stat is not None and stat[0] in ("Z", "X"):
        return False
    if owner.started is not None:
        return stat is not None and stat[1] == owner.started
    return True


def _probe_lock(path: Path) -> str:
    """Whether a process holds the replay lock ``path``: ``held``, ``free`` (the file
    exists and nobody holds it: its holder is gone), ``absent`` (no lock file) or
    ``unknown`` (it cannot be probed: no flock(2) here). Takes a shared lock for an
    instant, so it never blocks and never drops another descriptor's lock."""
    if _fcntl is None:
        return "unknown"
    with _held_guard:
        if str(path) in _held:
            # this process holds it: never probe (where flock is emulated with POSIX
            # record locks, e.g. on NFS, closing the probe's descriptor would drop it)
            return "held"
    for _ in range(5):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return "absent"
        except OSError:
            return "unknown"
        try:
            try:
                _fcntl.flock(fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
            except BlockingIOError:
                return "held"
            except OSError:
                return "unknown"
            try:
                now = os.stat(path)
            except FileNotFoundError:
                return "absent"
            mine = os.fstat(fd)
            if (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino):
                return "free"
            # the file was replaced while we opened it: probe the new one
        finally:
            os.close(fd)
    return "unknown"


class ReplayBusy(WorkspaceError):
    """A replay cannot be claimed: another process (or thread) is running it
    (:meth:`Workspace.claim_replay`); the message names its recorded owner."""


class ReplayClaim:
    """The replay lock this process holds while it works on one replay (module
    comment "replay locks"): from :meth:`Workspace.claim_replay` until :meth:`release`
    (also on leaving a ``with`` block). ``owner`` is this process's identity, to record
    in the replay. On release the lock file is removed when the replay's stored status
    needs it no more (``settled``: an outcome is stored, or no replay is); a replay
    still stored ``queued``/``running`` keeps it, free, so readers see it
    ``interrupted``."""

    def __init__(
        self,
        replay_id: str,
        path: Path | None,
        fd: int | None,
        owner: ReplayOwner,
        settled: Callable[[], bool] = lambda: False,
    ) -> None:
        self.replay_id = replay_id
        self.path = path
        self.owner = owner
        self._settled = settled
        self._fd = fd

    @property
    def locked(self) -> bool:
        """Whether a lock is held (``False`` where the file system has no flock(2))."""
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file when settled (class docstring), then drop the lock.
        Idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with _held_guard:
            _held.pop(str(self.path), None)
        if self.path is not None and self._settled():
            with suppress(OSError):
                self.path.unlink()  # while still holding it: see _probe_lock's inode check
        with suppress(OSError):
            os.close(fd)

    def __enter__(self) -> ReplayClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _events_file_digest(path: Path) -> str | None:
    """The ``digest`` of an events file as the workspace writes it (``{"format":…,
    "format_version":…,"metadata":{…},"session":{…},["links":…,]"digest":"…",
    "records":[…]}``), read from its start without parsing the records; ``None`` when
    the file does not start that way (or cannot be read)."""
    decoder = json.JSONDecoder()
    want = 1 << 16
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device put there: never read
            os.close(fd)
            return None
        with open(fd, "rb") as fh:
            data = b""
            while True:
                chunk = fh.read(want - len(data))
                data += chunk
                found = _head_digest(decoder, data.decode("utf-8", errors="replace"))
                if found is not _MORE:
                    return found if isinstance(found, str) else None
                if not chunk:
                    return None
                want *= 2
    except (OSError, RecursionError):
        return None


_MORE = object()  # _head_digest: the text read so far ends too early


def _head_digest(decoder: json.JSONDecoder, text: str) -> object:
    """:func:`_events_file_digest` on the first part of a file: the digest, ``None``
    (not an events file as written here) or ``_MORE`` (read further)."""
    head = _EVENTS_HEAD.match(text)
    if head is None:
        return _MORE if len(text) < 256 else None
    try:
        _, pos = decoder.raw_decode(text, head.end())  # metadata
        for key in ("session", "links", "summary", "digest"):  # links and summary optional
            prefix = f',"{key}":'
            if len(text) < pos + len(prefix) + 1:
                return _MORE
            if not text.startswith(prefix, pos):
                if key in ("links", "summary"):
                    continue
                return None
            value, pos = decoder.raw_decode(text, pos + len(prefix))
            if key == "digest":
                return value if isinstance(value, str) else None
    except json.JSONDecodeError:
        return _MORE
    return None


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
        except UnicodeEncodeError:
            raise _not_text(self.ws_path, sql, params) from None

    def executemany(self, sql: str, params: Any, /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            raise WorkspaceError(f"{self.ws_path}: {_describe_sql(sql)}: {exc}") from None
        except UnicodeEncodeError:
            raise _not_text(self.ws_path, sql, list(params)) from None


def _not_text(ws_path: str, sql: str, params: Any) -> WorkspaceError:
    """The error for a statement whose parameters hold text that is not valid UTF-8
    (:func:`core.errors.invalid_text`: bytes of another encoding, from a file name or an
    argument): SQLite stores text as UTF-8, so it cannot be stored, nor is anything stored
    under it."""
    bad = invalid_text(params)
    shown = f"'{printable(bad)}'" if bad is not None else "a value"
    if sql.lstrip().upper().startswith("SELECT"):
        reason = f"nothing is stored under {shown}: it is not valid UTF-8 text (bytes of another encoding)"
    else:
        reason = f"cannot store {shown}: it is not valid UTF-8 text (bytes of another encoding, e.g. a file name)"
    return WorkspaceError(f"{ws_path}: {reason}")


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


class HasEvents(Protocol):
    """What :meth:`Workspace.save_replay_outputs` needs of an attempt's result (the
    engine's ``ReplayOutcome`` is one): its ``events`` recording."""

    @property
    def events(self) -> Recording: ...


@dataclass(frozen=True)
class StoredRecording:
    """A recording stored in the workspace (a base, by digest): ``digest``
    (``sha256:<hex>``), ``path`` as first given (or ``None``), ``records`` (count),
    ``added_at`` (RFC 3339), ``metadata`` (its free JSON object), ``replays`` (how many
    replays of it are stored)."""

    digest: str
    path: str | None
    records: int
    added_at: str
    metadata: dict[str, Any]
    replays: int


@dataclass(frozen=True)
class ReplaySummary:
    """One replay in a :class:`BranchTree`: ``id``, ``status`` (``queued``, ``running``,
    ``paused``, ``completed``, ``failed``, ``interrupted``), ``status_line`` (as ``replay show`` prints
    it: never plain success for a replay that cannot be compared), ``comparability``
    (``full``, ``partial``, ``none``), ``stop_reason``, ``outcome`` and
    ``outcome_reason`` (the events' ``metadata.outcome`` / ``outcome_reason``, set when
    an executor's evaluator judged the run; ``None`` otherwise or before the first
    attempt ends), ``steps``, ``created_at`` (RFC 3339). Rules: docs/replay.md, "Replay
    states"."""

    id: str
    status: str
    status_line: str
    comparability: str
    stop_reason: str | None
    outcome: str | None
    outcome_reason: str | None
    steps: int
    created_at: str


@dataclass(frozen=True)
class BranchNode:
    """One branch in a :class:`BranchTree`: ``id``, ``label``, ``checkpoint`` (the base
    seq it departs at), ``interventions`` (how many), ``parent`` (branch id or ``None``),
    ``base_digest`` and ``base_path`` of its own base (a branch of a replay's events has
    those events as its base), ``created_at``, its ``replays`` (oldest first) and its
    ``children`` (the branches whose parent it is, oldest first)."""

    id: str
    label: str | None
    checkpoint: int
    interventions: int
    parent: str | None
    base_digest: str
    base_path: str
    created_at: str
    replays: tuple[ReplaySummary, ...]
    children: tuple[BranchNode, ...]


@dataclass(frozen=True)
class BranchTree:
    """The branches of one base (SPEC glossary: branch; branches form a tree through
    ``parent``): ``base_digest``, ``base_path`` (as stored, or ``None`` when the base is
    not stored), and ``roots`` — the branches of this base whose parent is not a branch
    of it — each with its descendants, whatever their own base (replay events a child
    was branched from)."""

    base_digest: str
    base_path: str | None
    roots: tuple[BranchNode, ...]

    def walk(self) -> Iterator[tuple[int, BranchNode]]:
        """Every node depth first, parents before children, with its depth (roots 0)."""
        stack = [(0, n) for n in reversed(self.roots)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, c) for c in reversed(node.children))

    def __len__(self) -> int:
        return sum(1 for _ in self.walk())


#: the start of an events document as the workspace writes it (keys in this order; a
#: version-3 file has its fixed-width ``index_offset``/``index_length``/``header_end``
#: before ``metadata``)
_EVENTS_HEAD = re.compile(
    r'\{"format":"[^"\\]*","format_version":[0-9]+,'
    r'(?:"index_offset":[0-9]+ *,"index_length":[0-9]+ *,"header_end":[0-9]+ *,)?"metadata":'
)
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def _cannot_write(path: Path) -> bool:
    """Whether this process cannot write ``path`` or create files beside it (SQLite needs
    both: the journal and the WAL index live in the folder). ``os.access`` is not enough
    for root or for immutable files, so this tries: open for append, create a file.
    The probe is named after the process and the thread (``probe-PID-TID``): threads of
    one process opening the same workspace at once each use their own."""
    try:
        with open(path, "ab"):
            pass
        probe = path.parent / f".{path.name}.probe-{os.getpid()}-{threading.get_native_id()}"
        probe.touch()
        probe.unlink()
    except OSError:
        return True
    return False


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
        #: opened for reading only: the file or its folder cannot be written
        self.read_only = False
        #: replay id -> events digest of the events files this instance wrote
        self._files_written: dict[str, str] = {}

    # ------------------------------------------------------------------ open / close

    @classmethod
    def open(
        cls, folder: str | os.PathLike[str] | None = None, *, timeout: float = 30.0, create: bool = True
    ) -> Workspace:
        """Open (creating if needed) ``folder/workspace.sqlite`` (default folder
        ``./.chassis-inspector``) and bring its schema to :data:`SCHEMA_VERSION`.

        ``create=False`` is for commands that only read: a missing workspace is not
        created (no folder, no file) and :class:`NoWorkspace` is raised instead. A
        workspace whose file or folder cannot be written is opened read-only
        (:attr:`read_only`): listing works, writes raise :class:`WorkspaceError`.

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
        if (folder_p / FILE_NAME).is_file() and _cannot_write(folder_p / FILE_NAME):
            # a read-only mount or an immutable file: readable, and every write says why not
            return cls._open_read_only(folder_p / FILE_NAME, timeout)
        new_folder = not folder_p.is_dir()
        try:
            if new_folder:
                folder_p.mkdir(parents=True, exist_ok=True, mode=0o700)  # private: it holds runs
                folder_p.chmod(0o700)
        except OSError as exc:
            raise WorkspaceError(f"{folder_p}: cannot create the workspace folder: {exc.strerror}") from None
        path = folder_p / FILE_NAME
        created = _private_files(path)

        def cannot_create(exc: BaseException) -> WorkspaceError | None:
            # a database this call created but could not initialize (a full disk) is
            # removed: no 0-byte workspace is left behind, and the next open starts afresh
            if not created:
                return None
            _discard_new_database(path, folder_p if new_folder else None)
            if not _disk_full(exc):
                return None
            return WorkspaceError(
                f"{path}: cannot create the workspace: no space left on the device "
                "(SQLite: database or disk is full); nothing was stored"
            )

        try:
            conn = sqlite3.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False, factory=_Conn
            )
            conn.ws_path = str(path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
        except (sqlite3.DatabaseError, WorkspaceError) as exc:
            with suppress(NameError, sqlite3.Error):
                conn.close()
            full = cannot_create(exc)
            if full is not None:
                raise full from None
            if isinstance(exc, sqlite3.OperationalError):
                raise WorkspaceError(f"{path}: cannot open the workspace database ({exc})") from None
            detail = str(exc) if isinstance(exc, sqlite3.DatabaseError) else str(exc).rpartition(": ")[2]
            raise WorkspaceError(f"{path}: not a workspace database ({detail})") from None
        ws = cls(path, conn)
        try:
            ws._migrate()
        except (sqlite3.DatabaseError, WorkspaceError) as exc:
            conn.close()
            full = cannot_create(exc)
            if full is not None:
                raise full from None
            if isinstance(exc, sqlite3.DatabaseError):
                raise WorkspaceError(f"{path}: not a workspace database ({exc})") from None
            raise
        ws._recover()
        return ws

    @classmethod
    def _open_read_only(cls, path: Path, timeout: float) -> Workspace:
        """A workspace this process cannot write (a read-only mount, an immutable file or
        folder), opened for reading only (SQLite URI ``mode=ro``; ``immutable=1`` when not
        even the WAL index can be created, https://www.sqlite.org/uri.html). Its schema must
        already be current: an upgrade would have to write. Every write then fails with a
        :class:`WorkspaceError` saying the workspace cannot be written.

        Raises:
            WorkspaceError: not a workspace, or its schema is not the current one.
        """
        uri = "file:" + urllib.parse.quote(str(path.resolve()))
        last: Exception | None = None
        for params in ("mode=ro", "mode=ro&immutable=1"):
            conn = None
            try:
                conn = sqlite3.connect(
                    f"{uri}?{params}",
                    uri=True,
                    timeout=timeout,
                    isolation_level=None,
                    check_same_thread=False,
                    factory=_Conn,
                )
                conn.ws_path = str(path)
                row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            except (sqlite3.DatabaseError, WorkspaceError) as exc:
                if conn is not None:
                    conn.close()
                last = exc
                continue
            ws = cls(path, conn)
            ws.read_only = True
            version = ws._parse_version(row[0]) if row else 0
            if version != SCHEMA_VERSION:
                conn.close()
                raise WorkspaceError(
                    f"{path}: the workspace cannot be written and its schema version {version} is not this "
                    f"program's ({SCHEMA_VERSION}); open it where it can be written to upgrade it"
                )
            return ws
        raise WorkspaceError(f"{path}: cannot read the workspace database ({last})")

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def require_writable(self) -> None:
        """Check that the workspace can be written before work that would write it (a
        replay started elsewhere, say), so it fails at once rather than at its end.

        Raises:
            WorkspaceError: the workspace was opened read-only (:attr:`read_only`).
        """
        if self.read_only:
            raise WorkspaceError(f"{self.path}: the workspace cannot be written (its file or folder is read-only)")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``; rolled back on any error).

        Raises:
            WorkspaceError: the workspace was opened read-only, or the write failed.
        """
        self.require_writable()
        c = self._conn
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise WorkspaceError(f"{self.path}: cannot write: {exc}") from None
        try:
            yield c
        except BaseException:
            self._rollback()
            raise
        else:
            try:
                c.execute("COMMIT")
            except (sqlite3.OperationalError, WorkspaceError) as exc:  # _Conn turns SQLite's errors into ours
                self._rollback()
                reason = str(exc).rpartition(": ")[2] if isinstance(exc, WorkspaceError) else str(exc)
                raise WorkspaceError(f"{self.path}: cannot commit: {reason}") from None

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already (it does on some
        errors, e.g. a full disk: https://www.sqlite.org/lang_transaction.html), so the
        connection can write again; the error that led here is what the caller reports."""
        with suppress(sqlite3.Error, WorkspaceError):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

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
        """Integrity and consistency problems (empty when healthy), one sentence each:
        SQLite's ``integrity_check``; every finished replay (completed, paused, failed)
        has one attempt row per attempt in its record, its last attempt ended with its
        status and none is still ``running``; a completed or paused one has its events;
        stored events have the digest the record names; an events file
        (``replays/ID.json``) holds the stored events (while no process runs the
        replay); a ``queued``/``running`` replay whose process is gone (read as
        ``interrupted``) claims no comparability and no steps; and no temporary file of
        a writer that is gone is left in ``replays/``."""
        problems: list[str] = []
        res = [r[0] for r in self._conn.execute("PRAGMA integrity_check").fetchall()]
        if res != ["ok"]:
            problems.extend(res)
        rows = self._conn.execute(
            "SELECT r.id, r.status, r.record, e.digest, "
            "(SELECT COUNT(*) FROM attempts a WHERE a.replay_id = r.id) FROM replays r "
            "LEFT JOIN replay_events e ON e.replay_id = r.id"
        ).fetchall()
        for rid, status, record, events_digest, n_attempts in rows:
            rec = self._load(record, f"table replays, row {rid}, column record")
            if not isinstance(rec, dict):
                problems.append(f"replay {rid}: record is not a JSON object")
                continue
            has_events = events_digest is not None
            attempts = rec.get("attempts") or []
            if status in ("completed", "paused") and not has_events:
                problems.append(f"replay {rid} is {status} but has no events")
            if status == "failed" and not has_events and (rec.get("steps") or rec.get("answers")):
                problems.append(f"replay {rid} is failed without events but claims steps or answers")
            if status in ("completed", "paused", "failed"):
                if n_attempts != len(attempts):
                    problems.append(f"replay {rid}: {n_attempts} attempt row(s), record lists {len(attempts)}")
                outcomes = [a.get("outcome") for a in attempts if isinstance(a, dict)]
                if outcomes and outcomes[-1] != status:
                    problems.append(f"replay {rid} is {status} but its last attempt ended {outcomes[-1]}")
                if "running" in outcomes:
                    problems.append(f"replay {rid} is {status} but an attempt is still marked running")
            if has_events and rec.get("events_digest") != events_digest:
                problems.append(
                    f"replay {rid}: the record names events {rec.get('events_digest')}, the stored ones are {events_digest}"
                )
            if rec.get("status") != status:
                problems.append(f"replay {rid}: status column {status} != record {rec.get('status')}")
            live = False
            if status in LIVE_STATUSES:
                read = self._as_read(self._model(ReplayRecord, record, f"table replays, row {rid}, column record"))
                live = read.status in LIVE_STATUSES
                if read.status == "interrupted" and (read.comparability.level != "none" or read.steps):
                    problems.append(f"replay {rid} is interrupted but claims comparability {read.comparability.level}")
            out = self.events_file(rid) if _SAFE_ID.fullmatch(rid) else None
            if out is not None and not live and out.exists():
                if not has_events:
                    problems.append(f"replay {rid} has an events file ({out}) but no stored events")
                elif _events_file_digest(out) != events_digest:
                    problems.append(f"replay {rid}: its events file ({out}) does not hold the stored events")
        events_dir = self.path.parent / EVENTS_DIR
        if events_dir.is_dir():
            for entry in sorted(os.scandir(events_dir), key=lambda e: e.name):
                m = _EVENTS_TMP.fullmatch(entry.name)
                lock = self._lock_path(m["id"]) if m is not None else None
                if lock is not None and _probe_lock(lock) in ("free", "absent"):
                    problems.append(f"stale temporary file {entry.path} (its writer is gone)")
        return problems

    # ------------------------------------------------------------------ recordings

    def put_recording(self, rec: Recording, path: str | None = None) -> str:
        """Store a base recording under its digest (:func:`core.record.io.recording_digest`;
        no-op when already stored); return the digest. ``rec`` is redacted in place first
        (:func:`core.record.recording_redaction.ensure_redacted`; a recording this product
        saved is unchanged), as :func:`core.replay.branch.resolve_branch` redacts a base.

        Raises:
            CanonicalizationError: the recording holds a value without a canonical form.
        """
        digest = recording_digest(ensure_redacted(rec))
        if self._has_recording(digest):
            return digest
        row = self._recording_row(rec, digest, path)
        with self._tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO recordings(digest, path, metadata, records, body, added_at) "
                "VALUES (?,?,?,?,?,?)",
                row,
            )
        return digest

    def _has_recording(self, digest: str) -> bool:
        return self._conn.execute("SELECT 1 FROM recordings WHERE digest=?", (digest,)).fetchone() is not None

    def _recording_row(self, rec: Recording, digest: str, path: str | None) -> tuple[Any, ...]:
        with _gc_paused():
            body = zlib.compress(dumps_recording(rec), 1)  # rec was redacted: see put_recording
        return (digest, path, _json(rec.metadata), len(rec.records), body, _now())

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

    def list_recordings(self) -> list[StoredRecording]:
        """Every stored recording (without its body), in the order they were added."""
        rows = self._conn.execute(
            "SELECT r.digest, r.path, r.records, r.added_at, r.metadata, "
            "(SELECT COUNT(*) FROM replays p WHERE p.base_digest = r.digest) FROM recordings r ORDER BY r.rowid"
        ).fetchall()
        out = []
        for d, p, n, a, m, replays in rows:
            meta = self._load(m, f"table recordings, row {d}, column metadata")
            if not isinstance(meta, dict):
                raise WorkspaceError(
                    f"{self.path}: the workspace is damaged: table recordings, row {d}, column metadata: "
                    "not a JSON object"
                )
            out.append(StoredRecording(digest=d, path=p, records=n, added_at=a, metadata=meta, replays=replays))
        return out

    def recording_path(self, digest: str) -> str | None:
        """The path a stored recording was first given with (``None`` when it was given
        none, or is not stored)."""
        row = self._conn.execute("SELECT path FROM recordings WHERE digest=?", (digest,)).fetchone()
        return None if row is None else row[0]

    # ------------------------------------------------------------------ branches

    def put_branch(self, branch: Branch, *, base_digest: str | None = None) -> None:
        """Store a branch. Storing the same branch again is a no-op; a branch is
        immutable once stored (replays refer to it by id, and resuming one re-runs it).
        ``base_digest``: the digest its base is stored under, when known (default the
        branch's own ``base.digest``, empty for a base that had none). Its parent is not
        checked (see :meth:`add_branch`).

        Raises:
            WorkspaceError: a branch with this id is stored with different content.
        """
        if self._branch_stored(branch):
            return
        with self._tx() as c:
            self._insert_branch(c, branch, base_digest or branch.base.digest)

    def add_branch(self, branch: Branch, base: Recording, base_path: str | None = None) -> str:
        """Store a new branch and its base recording (what ``branch new`` stores; SPEC
        "Application"), in one transaction; return the base's digest. The branch is
        expected valid against ``base`` (:func:`core.replay.branch.resolve_branch`).

        Raises:
            WorkspaceError: ``branch.parent`` is not a branch of the workspace, or a
                branch with this id is stored with different content.
            CanonicalizationError: the base holds a value without a canonical form.
        """
        digest = recording_digest(ensure_redacted(base))
        row = None if self._has_recording(digest) else self._recording_row(base, digest, base_path)
        if branch.parent is not None and not self.has_branch(branch.parent):
            raise WorkspaceError(f"{self.path}: no branch {branch.parent!r} (the parent of branch {branch.id})")
        stored = self._branch_stored(branch)
        with self._tx() as c:
            if row is not None:
                c.execute(
                    "INSERT OR IGNORE INTO recordings(digest, path, metadata, records, body, added_at) "
                    "VALUES (?,?,?,?,?,?)",
                    row,
                )
            if not stored:
                self._insert_branch(c, branch, digest)
        return digest

    def _branch_stored(self, branch: Branch) -> bool:
        """``True`` when this very branch is stored; WorkspaceError when its id is stored
        with different content."""
        row = self._conn.execute("SELECT body FROM branches WHERE id=?", (branch.id,)).fetchone()
        if row is None:
            return False
        try:
            same = (
                branch_from_dict(self._load(row[0], f"table branches, row {branch.id}"), source="").to_json_obj()
                == redact(branch.to_json_obj())[0]  # stored redacted
            )
        except BranchError:
            same = False
        if same:
            return True
        raise WorkspaceError(
            f"{self.path}: branch {branch.id} already exists in the workspace with different content "
            "(a stored branch cannot change: give the new branch another id)"
        )

    def _insert_branch(self, c: sqlite3.Connection, branch: Branch, base_digest: str) -> None:
        c.execute(
            "INSERT OR REPLACE INTO branches(id, base_digest, parent_id, label, checkpoint, created_at, body) "
            "VALUES (?,?,?,?,?,?,?)",
            (
                branch.id,
                base_digest,
                branch.parent,
                branch.label,
                branch.checkpoint,
                branch.created_at,
                _json(branch.to_json_obj()),
            ),
        )

    def has_branch(self, branch_id: str) -> bool:
        """Whether a branch ``branch_id`` is stored."""
        return self._conn.execute("SELECT 1 FROM branches WHERE id=?", (branch_id,)).fetchone() is not None

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

    # ------------------------------------------------------------------ replay locks

    def _lock_path(self, replay_id: str) -> Path | None:
        """``FOLDER/locks/REPLAY_ID.lock`` (module comment "replay locks"); ``None`` for an
        id that cannot name a file (such a replay runs without a lock: its recorded owner
        decides)."""
        if not _SAFE_ID.fullmatch(replay_id):
            return None
        return self.path.parent / LOCKS_DIR / f"{replay_id}.lock"

    def claim_replay(self, replay_id: str, *, wait: float = 1.0) -> ReplayClaim:
        """Take the lock of replay ``replay_id`` for this process — before storing it
        ``queued`` or ``running`` — and return the :class:`ReplayClaim` (release it when
        the attempt's outcome is stored; use it as a context manager). ``wait``: seconds
        to retry while another descriptor holds it (a reader's probe holds it for an
        instant). On a file system without flock(2) the claim holds no lock and the
        replay's recorded owner (``claim.owner``) is what readers check.

        Raises:
            ReplayBusy: another process (or another thread of this one) is running the
                replay (naming its recorded owner).
            WorkspaceError: the workspace is read-only, or the lock file cannot be
                created (e.g. the disk is full).
        """
        owner = _this_process()
        if self.read_only:
            raise WorkspaceError(f"{self.path}: the workspace cannot be written (its file or folder is read-only)")
        path = self._lock_path(replay_id)
        if path is None or _fcntl is None:
            return self._claim_without_lock(replay_id, owner)
        try:
            if not path.parent.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                path.parent.chmod(0o700)
        except OSError as exc:
            raise WorkspaceError(f"{path.parent}: cannot create the replay lock folder: {exc.strerror}") from None
        deadline = time.monotonic() + wait
        while True:
            with _held_guard:
                mine = str(path) in _held
            if not mine:
                existed = path.exists()
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
                except OSError as exc:
                    raise WorkspaceError(f"{path}: cannot create the replay lock: {exc.strerror}") from None
                try:
                    _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                except OSError as exc:
                    os.close(fd)
                    if exc.errno in _NO_FLOCK:
                        if not existed:  # a lock file nobody can hold would only mislead
                            with suppress(OSError):
                                path.unlink()
                        return self._claim_without_lock(replay_id, owner)
                    raise WorkspaceError(f"{path}: cannot lock the replay: {exc.strerror}") from None
                else:
                    try:
                        now, held = os.stat(path), os.fstat(fd)
                        same = (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
                    except FileNotFoundError:
                        same = False
                    if same:
                        with _held_guard:
                            _held[str(path)] = fd
                        return ReplayClaim(replay_id, path, fd, owner, lambda: self._settled(replay_id))
                    os.close(fd)  # its holder removed the file as we took it: take the new one
                    continue
            if time.monotonic() >= deadline:
                raise ReplayBusy(self._busy_message(replay_id, mine))
            time.sleep(0.02)

    def _claim_without_lock(self, replay_id: str, owner: ReplayOwner) -> ReplayClaim:
        """A claim on a file system without flock(2): no lock is held, so the stored
        replay's recorded owner decides — a replay ``queued`` or ``running`` whose owner
        is alive (another process, or this one) is busy.

        Raises:
            ReplayBusy: the recorded owner still runs.
        """
        row = self._conn.execute("SELECT status, record FROM replays WHERE id=?", (replay_id,)).fetchone()
        if row is not None and row[0] in ("queued", "running"):
            stored = self._model(ReplayRecord, row[1], f"table replays, row {replay_id}, column record")
            if stored.owner is not None and _owner_alive(stored.owner):
                raise ReplayBusy(self._busy_message(replay_id, stored.owner.pid == os.getpid()))
        return ReplayClaim(replay_id, None, None, owner)

    def _busy_message(self, replay_id: str, mine: bool) -> str:
        row = self._conn.execute("SELECT record FROM replays WHERE id=?", (replay_id,)).fetchone()
        who = "another process"
        if mine:
            who = "this process (another thread)"
        elif row is not None:
            with suppress(WorkspaceError):
                owner = self._model(ReplayRecord, row[0], f"table replays, row {replay_id}, column record").owner
                if owner is not None:
                    who = f"another process (pid {owner.pid} on {owner.host}, since {owner.since})"
        return (
            f"{self.path}: replay {replay_id} is being run by {who}; wait for it to end "
            f"(replay show {replay_id}) — it can be resumed only once no process runs it"
        )

    def _process_gone(self, record: ReplayRecord) -> bool:
        """Whether the process that stored ``record`` ``queued``/``running`` is gone: its
        lock file exists and nobody holds it; or, where no lock can be probed, its
        recorded owner no longer runs (none recorded: gone)."""
        path = self._lock_path(record.id)
        state = _probe_lock(path) if path is not None else "unknown"
        if state == "held":
            return False
        if state == "free":
            return True
        return record.owner is None or not _owner_alive(record.owner)

    def _as_read(self, record: ReplayRecord) -> ReplayRecord:
        """``record`` as readers see it: a ``queued``/``running`` replay whose process is
        gone is :meth:`ReplayRecord.interrupted` (docs/replay.md, "Replay states"). The
        row is read again once the lock is found free, so a replay that ended meanwhile
        is shown as it ended."""
        if record.status not in LIVE_STATUSES or not self._process_gone(record):
            return record
        row = self._conn.execute("SELECT record FROM replays WHERE id=?", (record.id,)).fetchone()
        if row is not None:
            record = self._model(ReplayRecord, row[0], f"table replays, row {record.id}, column record")
        if record.status not in LIVE_STATUSES:
            return record
        return record.interrupted()

    # ------------------------------------------------------------------ recovery

    def _recover(self) -> None:
        """Clean up after processes killed mid-write, on every open of a writable
        workspace (best effort: nothing here fails the open). Removes our own temporary
        files whose writer is gone — ``replays/.ID.json.*.tmp`` whose replay lock nobody
        holds (every events file is written under its replay's lock), and write probes
        (``.workspace.sqlite.probe-PID-TID``) of a dead process or older than a minute; makes the events
        file of each interrupted replay agree with its stored events again (rewritten
        from them, or removed when it has none: a process killed between writing the
        file and committing left it ahead); and removes the free lock files of replays
        whose outcome is stored (or that were never stored)."""
        if self.read_only:
            return
        folder = self.path.parent
        with suppress(OSError, WorkspaceError):
            for entry in os.scandir(folder):
                m = _WRITE_PROBE.fullmatch(entry.name)
                if m is None or not entry.is_file(follow_symlinks=False):
                    continue
                dead = not _owner_alive(ReplayOwner(pid=int(m["pid"]), host=socket.gethostname(), boot_id=_boot_id()))
                if dead or time.time() - entry.stat(follow_symlinks=False).st_mtime > 60:
                    with suppress(OSError):
                        os.unlink(entry.path)
        events_dir = folder / EVENTS_DIR
        with suppress(OSError, WorkspaceError):
            if events_dir.is_dir():
                for entry in os.scandir(events_dir):
                    m = _EVENTS_TMP.fullmatch(entry.name)
                    if m is None or not entry.is_file(follow_symlinks=False):
                        continue
                    lock = self._lock_path(m["id"])
                    if lock is not None and _probe_lock(lock) in ("free", "absent"):
                        with suppress(OSError):
                            os.unlink(entry.path)
        with suppress(OSError, WorkspaceError):
            rows = self._conn.execute("SELECT id, record FROM replays WHERE status IN (?, ?)", LIVE_STATUSES).fetchall()
            for rid, body in rows:
                with suppress(OSError, WorkspaceError):
                    record = self._model(ReplayRecord, body, f"table replays, row {rid}, column record")
                    if self._process_gone(record):
                        self._reconcile_events_file(rid)
        locks_dir = folder / LOCKS_DIR
        with suppress(OSError, WorkspaceError):
            if locks_dir.is_dir():
                for entry in os.scandir(locks_dir):
                    rid = entry.name[: -len(".lock")] if entry.name.endswith(".lock") else None
                    if rid is None or not _SAFE_ID.fullmatch(rid):
                        continue
                    row = self._conn.execute("SELECT status FROM replays WHERE id=?", (rid,)).fetchone()
                    if row is not None and row[0] in LIVE_STATUSES:
                        continue  # evidence that the replay was interrupted: kept until resumed
                    with suppress(WorkspaceError):
                        self.claim_replay(rid, wait=0).release()  # removes it: settled

    def _reconcile_events_file(self, replay_id: str) -> None:
        """Make ``replays/REPLAY_ID.json`` of a replay whose process is gone agree with
        its stored events, under its lock (skipped while someone holds it): rewritten from
        them when its digest differs, removed when none are stored."""
        out = self.events_file(replay_id)
        if not out.exists():
            return
        row = self._conn.execute("SELECT digest FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        if row is not None and _events_file_digest(out) == row[0]:
            return
        try:
            claim = self.claim_replay(replay_id, wait=0)
        except WorkspaceError:
            return  # being resumed right now: that attempt writes the file
        with claim:
            self._align_events_file(replay_id)

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
        self,
        record: ReplayRecord,
        outcome: HasEvents | None,
        requirements: list[Requirement],
        *,
        events_file: bool = False,
    ) -> None:
        """Write everything one attempt produced in ONE transaction: the record, the
        events of ``outcome`` (replacing earlier ones; ``None`` keeps them), the attempts,
        and the requirements (a requirement met again is reopened). Sets
        ``record.events_digest``.

        ``events_file``: also write the events to :meth:`events_file` — files first,
        commit last (docs/replay.md, "The workspace"): the file is written (atomically)
        before the transaction, so a write that fails stores no outcome, and a commit
        that fails takes the new file back (the earlier events' file is restored, best
        effort). A process killed in between leaves its replay ``running`` — read as
        ``interrupted`` — and the next open puts the file back in line
        (:meth:`_recover`). The caller holds the replay's lock (:meth:`claim_replay`).

        Raises:
            CanonicalizationError: an event holds a value without a canonical form
                (nothing is written).
            OutputError: the events file cannot be written (e.g. no space left on the
                device); nothing is stored.
            WorkspaceError: the transaction failed (e.g. the disk is full); nothing is
                stored.
        """
        events_blob = None
        raw = None
        n_events = 0
        digest = None
        if outcome is not None:
            with _gc_paused():
                redact_recording(outcome.events)  # replay events are stored redacted
                encoded = encode_recording(outcome.events)
                digest = encoded.digest
                raw = encoded.data
                events_blob = zlib.compress(raw, 1)
                del encoded
            n_events = len(outcome.events.records)
        written = self.events_file(record.id) if events_file and raw is not None else None
        before = record.events_digest
        try:
            if written is not None and raw is not None:
                self._write_events_bytes(written, raw)  # files first ...
                raw = None
            if digest is not None:
                record.events_digest = digest
            self._save_outputs_tx(record, digest, n_events, events_blob, requirements)  # ... commit last
        except BaseException:
            record.events_digest = before  # the stored events did not change
            if written is not None:
                self._files_written.pop(record.id, None)
                self._align_events_file(record.id)  # take back events the database does not hold
            raise
        if written is not None and digest is not None:
            self._files_written[record.id] = digest

    def _write_events_bytes(self, out: Path, data: bytes) -> None:
        """Write an events file atomically into the private ``replays/`` folder.

        Raises:
            OutputError: it cannot be written (e.g. no space left on the device).
        """
        try:
            if not out.parent.is_dir():
                out.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # private, as the database
                out.parent.chmod(0o700)
            atomic_write_bytes(out, data)
        except OutputError:
            raise
        except OSError as exc:  # the folder, or its fsync after the rename
            raise OutputError(str(out), f"cannot write: {exc.strerror or exc}") from None

    def _align_events_file(self, replay_id: str) -> None:
        """Make ``replays/REPLAY_ID.json`` agree with the replay's stored events (best
        effort; the caller holds the replay's lock): a file holding other events is
        removed, and rewritten from the stored ones when there are any."""
        out = self.events_file(replay_id)
        try:
            row = self._conn.execute("SELECT digest FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        except WorkspaceError:
            return
        if out.exists() and (row is None or _events_file_digest(out) != row[0]):
            with suppress(OSError):
                out.unlink()
        if row is not None and not out.exists():
            with suppress(Exception):
                data = self.replay_events_bytes(replay_id)
                if data is not None:
                    self._write_events_bytes(out, data)

    def _save_outputs_tx(
        self,
        record: ReplayRecord,
        digest: str | None,
        n_events: int,
        events_blob: bytes | None,
        requirements: list[Requirement],
    ) -> None:
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
        """The replay record ``replay_id``; a ``queued``/``running`` one whose process is
        gone reads as ``interrupted`` (:meth:`ReplayRecord.interrupted`). Raises
        WorkspaceError if unknown."""
        row = self._conn.execute("SELECT record FROM replays WHERE id=?", (replay_id,)).fetchone()
        if row is None:
            raise WorkspaceError(f"{self.path}: no replay {replay_id!r}")
        return self._as_read(self._model(ReplayRecord, row[0], f"table replays, row {replay_id}, column record"))

    def list_replays(self, *, base_digest: str | None = None, branch_id: str | None = None) -> list[ReplayRecord]:
        """Replay records, oldest first, optionally of one base or one branch (read as
        :meth:`get_replay` reads them: ``interrupted`` once their process is gone)."""
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
            self._as_read(self._model(ReplayRecord, r[1], f"table replays, row {r[0]}, column record"))
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

    def count_replays(self, *, base_digest: str | None = None, branch_id: str | None = None) -> int:
        """How many replays are stored (of one base, of one branch)."""
        q = "SELECT COUNT(*) FROM replays"
        cond, args = [], []
        if base_digest is not None:
            cond.append("base_digest=?")
            args.append(base_digest)
        if branch_id is not None:
            cond.append("branch_id=?")
            args.append(branch_id)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        row = self._conn.execute(q, args).fetchone()
        return int(row[0]) if row else 0

    def events_file(self, replay_id: str) -> Path:
        """Where a replay's events are written as a recording file:
        ``FOLDER/replays/REPLAY_ID.json`` beside the database (it may not exist yet).

        Raises:
            WorkspaceError: ``replay_id`` cannot be a file name (``/``, a leading ``.``).
        """
        if not _SAFE_ID.fullmatch(replay_id):
            raise WorkspaceError(
                f"{self.path}: replay id {replay_id!r} cannot name an events file "
                "(letters, digits, '.', '_', '-'; no '/', not starting with '.')"
            )
        return self.path.parent / EVENTS_DIR / f"{replay_id}.json"

    def write_events_file(self, replay_id: str) -> Path | None:
        """Write a replay's events (as stored) to :meth:`events_file`, atomically, and
        return that path; ``None`` when the replay has no events yet.

        The file is written under the replay's lock (:meth:`claim_replay`), so another
        process's clean-up never takes its temporary file; while another process runs
        the replay the file is left to that attempt (the path is returned when the file
        exists). A file this instance has just written with the stored events
        (:meth:`save_replay_outputs` with ``events_file``) is not written again.

        Raises:
            OutputError: the file cannot be written. WorkspaceError: the stored events
                are damaged, the id cannot name a file, or the workspace is read-only.
        """
        row = self._conn.execute("SELECT digest FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        if row is None:
            return None
        out = self.events_file(replay_id)
        if self._files_written.get(replay_id) == row[0] and out.is_file():
            return out
        lock = self._lock_path(replay_id)
        with _held_guard:
            mine = lock is not None and str(lock) in _held
        claim = None
        if not mine:
            try:
                claim = self.claim_replay(replay_id, wait=0.2)
            except ReplayBusy:
                return out if out.is_file() else None
        try:
            data = self.replay_events_bytes(replay_id)
            if data is None:
                return None
            self._write_events_bytes(out, data)
            self._files_written[replay_id] = row[0]
        finally:
            if claim is not None:
                claim.release()
        return out

    def _settled(self, replay_id: str) -> bool:
        """Whether replay ``replay_id``'s stored status needs no lock file as evidence:
        stored with an outcome, or not stored at all (``False`` when it cannot be read)."""
        try:
            row = self._conn.execute("SELECT status FROM replays WHERE id=?", (replay_id,)).fetchone()
        except (WorkspaceError, sqlite3.Error):
            return False
        return row is None or row[0] not in LIVE_STATUSES

    def export_events(self, replay_id: str, output: str | os.PathLike[str]) -> Path:
        """Write a replay's events (a recording, as stored) to ``output`` atomically and
        return its path. Whether ``output`` may be overwritten is the caller's rule.

        Raises:
            WorkspaceError: no replay ``replay_id``, or it has no events yet (its first
                attempt has not ended), or the stored events are damaged.
            OutputError: ``output`` cannot be written.
        """
        data = self.replay_events_bytes(replay_id)
        if data is None:
            self.get_replay(replay_id)  # unknown id: WorkspaceError naming it
            raise WorkspaceError(f"{self.path}: replay {replay_id} has no events yet (its first attempt has not ended)")
        atomic_write_bytes(output, data)
        return Path(output)

    def replay_events_metadata(self, replay_id: str) -> dict[str, Any] | None:
        """The ``metadata`` object of a replay's events (outcome, final output, replay
        links; docs/replay.md, "Replay events"), read from the start of the stored
        document without parsing its records; ``None`` when the replay has no events yet.

        Raises:
            WorkspaceError: the stored events are damaged (table, row, reason).
        """
        row = self._conn.execute("SELECT body FROM replay_events WHERE replay_id=?", (replay_id,)).fetchone()
        if row is None:
            return None
        where = f"table replay_events, row {replay_id}"
        meta = _head_metadata(row[0])
        if meta is None:  # not the layout this module writes: read it all
            doc = self._load(self._unzip(row[0], where), where)
            meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not isinstance(meta, dict):
            raise WorkspaceError(f"{self.path}: the workspace is damaged: {where}: the events have no metadata object")
        return meta

    def branch_tree(self, base_digest: str) -> BranchTree:
        """The tree of branches of the base ``base_digest`` (SPEC glossary: branch,
        replay; what the app's side panel draws): the branches of that base whose parent
        is not one of them are the roots; each node holds its label, checkpoint, number
        of interventions and replays (status, comparability, outcome), and its children —
        the branches whose parent it is, including branches of its replays' events.
        An unknown digest gives a tree without roots.

        Raises:
            WorkspaceError: a stored row is damaged (table, row, reason).
        """
        rows = self._conn.execute(
            "SELECT id, base_digest, parent_id, body FROM branches ORDER BY created_at, rowid"
        ).fetchall()
        bodies = {bid: body for bid, _, _, body in rows}
        digests = {bid: digest for bid, digest, _, _ in rows}
        children: dict[str, list[str]] = {}
        for bid, _, parent, _ in rows:
            if parent is not None:
                children.setdefault(parent, []).append(bid)
        of_base = {bid: parent for bid, digest, parent, _ in rows if digest == base_digest}
        # oldest first, so a branch of this base whose parent descends from an older
        # root is drawn under that parent, not again as a root
        roots = [bid for bid, parent in of_base.items() if parent not in of_base]
        replays: dict[str, list[ReplayRecord]] = {}
        for record in self.list_replays():
            replays.setdefault(record.branch_id, []).append(record)
        seen: set[str] = set()

        def node(bid: str) -> BranchNode:
            seen.add(bid)
            where = f"table branches, row {bid}"
            br = branch_from_dict(self._load(bodies[bid], where), source=f"{self.path}: {where}")
            kids = [node(c) for c in children.get(bid, []) if c not in seen]
            return BranchNode(
                id=br.id,
                label=br.label,
                checkpoint=br.checkpoint,
                interventions=len(br.interventions),
                parent=br.parent,
                base_digest=digests[bid],
                base_path=br.base.path,
                created_at=br.created_at,
                replays=tuple(self._replay_summary(r) for r in replays.get(bid, [])),
                children=tuple(kids),
            )

        tree_roots = [node(r) for r in roots if r not in seen]
        tree_roots += [node(b) for b in of_base if b not in seen]  # a parent cycle (damaged rows): flat
        return BranchTree(base_digest=base_digest, base_path=self.recording_path(base_digest), roots=tuple(tree_roots))

    def _replay_summary(self, record: ReplayRecord) -> ReplaySummary:
        meta = self.replay_events_metadata(record.id) or {}
        outcome, reason = meta.get("outcome"), meta.get("outcome_reason")
        return ReplaySummary(
            id=record.id,
            status=record.status,
            status_line=record.status_line,
            comparability=record.comparability.level,
            stop_reason=record.stop_reason,
            outcome=outcome if isinstance(outcome, str) else None,
            outcome_reason=reason if isinstance(reason, str) else None,
            steps=record.steps,
            created_at=record.created_at,
        )

    # ------------------------------------------------------------------ fixtures

    def check_scope(self, scope: str, *, creating_replay: str | None = None, creating_branch: str | None = None) -> str:
        """``scope`` when it is valid here: ``project``, or ``branch:ID`` / ``replay:ID``
        naming a branch or replay of this workspace (``creating_replay`` /
        ``creating_branch``: ids of a replay or branch being created, which count as
        existing). A fixture scoped to something
        that does not exist would never apply, so it is refused.

        Raises:
            FixtureError: a malformed scope (:func:`~core.replay.fixtures.parse_scope`),
                or no such branch or replay (naming the workspace and the scope).
        """
        scope = parse_scope(scope)
        kind, _, ident = scope.partition(":")
        if kind == "branch" and ident != creating_branch and not self.has_branch(ident):
            raise FixtureError(
                f"scope {scope!r}: no branch {ident!r} in workspace {self.path} "
                "(see: chassis-inspector branch list); the fixture would never apply"
            )
        if kind == "replay" and ident != creating_replay:
            found = self._conn.execute("SELECT 1 FROM replays WHERE id=?", (ident,)).fetchone()
            if found is None:
                raise FixtureError(
                    f"scope {scope!r}: no replay {ident!r} in workspace {self.path} "
                    "(see: chassis-inspector replay list); the fixture would never apply"
                )
        return scope

    def put_fixture(self, fixture: Fixture, *, creating_replay: str | None = None) -> Fixture:
        """Store a fixture (later ones win ties in the gateway); return it.

        Raises:
            FixtureError: its scope names a branch or replay this workspace does not hold
                (:meth:`check_scope`; ``creating_replay`` is the replay being created),
                or its id is taken.
        """
        self.check_scope(fixture.scope, creating_replay=creating_replay)
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

    def get_fixture(self, fixture_id: str) -> Fixture:
        """The fixture ``fixture_id``. Raises FixtureError if unknown."""
        row = self._conn.execute("SELECT body FROM fixtures WHERE id=?", (fixture_id,)).fetchone()
        if row is None:
            raise FixtureError(f"no fixture {fixture_id!r} in {self.path}")
        return self._model(Fixture, row[0], f"table fixtures, row {fixture_id}")

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
        if req.kind == "user":
            raise FixtureError(
                f"requirement {req_id} is a person's turn, not a tool or model call: answer it with "
                f"'requirements --answer {req_id} TEXT' (or --approve {req_id} for the recorded answer, --waive to skip it)"
            )
        out = parse_output(output, req.kind, source=source)
        if scope is None:
            scope = f"branch:{self.get_replay(req.replay_id).branch_id}"
        scope = self.check_scope(scope)
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

    def decide_requirement(self, req_id: str, status: str, *, answer: str | None = None) -> Requirement:
        """Approve (``satisfied``) or waive (``waived``) a requirement. Raises FixtureError
        for an unknown id or status; approving a tool/model requirement needs a fixture
        (use :meth:`attach_fixture`).

        A ``user`` requirement (a person's turn after the branch diverged) is satisfied
        with ``answer`` — the text the person gives — or, without one, with the recorded
        value it offers (``default``): either way a pinned answer, answer source ``user``
        when the replay resumes. Waiving it skips the turn. ``answer`` on any other kind
        is a FixtureError."""
        if status not in ("satisfied", "waived", "open"):
            raise FixtureError(f"requirement status {status!r} must be open, satisfied or waived")
        req = self.get_requirement(req_id)
        if answer is not None and (req.kind != "user" or status != "satisfied"):
            raise FixtureError(
                f"requirement {req_id} is a {req.kind} requirement: only a person's turn (kind user) takes an answer"
            )
        if status == "satisfied" and req.kind not in ("approval", "user"):
            raise FixtureError(f"requirement {req_id} needs a {req.kind} fixture: use 'fixture attach {req_id} FILE'")
        update: dict[str, Any] = {"status": status}
        if req.kind == "user":
            if status == "satisfied":
                pinned = answer if answer is not None else req.default
                if pinned is None:
                    raise FixtureError(f"requirement {req_id} offers no recorded answer: give one with --answer")
                update["answer"] = pinned
            else:
                update["answer"] = None
        new = req.model_copy(update=update)
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

    def effects(self, base_digest: str, *, offset: int = 0, limit: int | None = None) -> list[Any]:
        """The ranked effects of a base, best first; ``offset`` / ``limit``: a slice of
        that order (ranks ``offset`` … ``offset + limit - 1``, 0-based), so a view can
        draw the best first and read the rest after."""
        return [
            self._load(b, f"table effects, base {base_digest}")
            for (b,) in self._conn.execute(
                "SELECT body FROM effects WHERE base_digest=? ORDER BY rank LIMIT ? OFFSET ?",
                (base_digest, -1 if limit is None else limit, offset),
            )
        ]
