"""SHA-256 of a long stream of byte strings, hashed on a second thread.

A full load of a version-3 file hashes the logical bytes of every record to check the
recording digest (SPEC "Format": the digest is defined on the logical records, whatever
the encoding): 98 MB of logical bytes for a 14.5 MB file with a growing chat history,
about a quarter of the load's time. ``hashlib`` releases the GIL while it hashes a
buffer of 2 KiB or more, so a second thread can hash one batch while the loader parses
and validates the records of the next (``docs/performance.md``, "Loading a version-3
file: the digest hashed on a second thread").

:class:`BackgroundSha256` collects the strings given to :meth:`~BackgroundSha256.update`
into batches of :data:`BATCH` bytes, joins each batch (one copy) and hands it to a
worker thread that hashes the batches in order: the digest is that of the strings
concatenated, as ``hashlib.sha256`` would compute it. The thread starts with the first
full batch (a small stream is hashed on the calling thread, at no extra cost) and only
when the process may run on more than one CPU.

Between two batches the worker waits for the GIL, which a busy loader gives up only
every *switch interval* (``sys.getswitchinterval()``, 5 ms by default): longer than it
takes to hash a batch. While a worker runs, the interval is lowered to
:data:`SWITCH_INTERVAL` and restored when the last worker stops (concurrent loads share
one lowering).

Memory: at most :data:`QUEUED` batches wait for the worker (the caller blocks when it is
that far ahead), plus the one it hashes and the strings being collected. A batch is at
least :data:`BATCH` bytes: the strings collected until they reach it, joined (one copy),
so a single string of several megabytes makes a batch of its size.

When the worker fails (say, out of memory), the next batch handed on or
:meth:`BackgroundSha256.hexdigest` raises what it raised; if no thread can be started,
the stream is hashed on the calling thread.
"""

from __future__ import annotations

import hashlib
import os
import queue
import sys
import threading
from types import TracebackType
from typing import Final

#: bytes collected before a batch is handed to the worker
BATCH: Final = 1 << 20
#: batches that may wait for the worker before :meth:`BackgroundSha256.update` blocks
QUEUED: Final = 2
#: the thread switch interval (seconds) while a worker hashes
SWITCH_INTERVAL: Final = 0.0005

_LOCK = threading.Lock()
_workers = 0  # workers running; the interval is restored when the last stops
_saved_interval = 0.005


def _cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class BackgroundSha256:
    """SHA-256 of the byte strings passed to :meth:`update`, in order, hashed on a worker
    thread in batches (see the module docstring). Use it as a context manager, or call
    :meth:`close`, so the worker stops when the caller raises.

    ``threaded=False`` hashes on the calling thread (the same digest).
    """

    def __init__(self, data: bytes = b"", *, threaded: bool | None = None) -> None:
        self._h = hashlib.sha256(data)
        self._pending: list[bytes] = []
        self._size = 0
        self._threaded = _cpus() > 1 if threaded is None else threaded
        self._queue: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None  # what the worker raised

    def update(self, data: bytes) -> None:
        """Append ``data`` to the stream."""
        self._pending.append(data)
        self._size += len(data)
        if self._size >= BATCH:
            self._flush()

    def update_many(self, parts: list[bytes]) -> None:
        """Append each of ``parts`` to the stream, in order."""
        self._pending += parts
        self._size += sum(map(len, parts))
        if self._size >= BATCH:
            self._flush()

    def _flush(self) -> None:
        """Hand the collected strings on as one batch."""
        batch = b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if self._threaded:
            self._hand(batch)
        else:
            self._h.update(batch)

    def _hand(self, batch: bytes) -> None:
        if self._failed is not None:
            raise self._failed
        q = self._queue
        if q is None:
            q = queue.Queue(QUEUED)
            thread = threading.Thread(target=self._work, args=(q,), name="chassis-digest", daemon=True)
            _lower_interval()
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: hash here, as on one CPU
                _restore_interval()
                self._threaded = False
                self._h.update(batch)
                return
            self._queue, self._thread = q, thread
        q.put(batch)

    def _work(self, q: queue.Queue[bytes | None]) -> None:
        update = self._h.update
        while (batch := q.get()) is not None:
            if self._failed is None:
                try:
                    update(batch)
                except BaseException as exc:  # kept for the caller; the queue is still drained
                    self._failed = exc

    def _stop(self) -> None:
        """Let the worker hash what it was given, then stop it (once); re-raise what the
        worker raised."""
        thread, q = self._thread, self._queue
        if thread is not None and q is not None:
            self._thread = self._queue = None
            try:
                q.put(None)
                thread.join()
            finally:  # even when interrupted while waiting: the interval is given back
                _restore_interval()
        if self._failed is not None:
            raise self._failed

    def hexdigest(self) -> str:
        """The digest of the whole stream, as lowercase hex (waits for the worker). The
        stream ends here: nothing may be added after."""
        self._stop()
        self._h.update(b"".join(self._pending))
        self._pending.clear()
        return self._h.hexdigest()

    def close(self) -> None:
        """Stop the worker (after it hashed what it was given); safe to call twice. Raises
        nothing: a caller that is leaving on an error keeps its own."""
        try:
            self._stop()
        except Exception:
            pass

    def __enter__(self) -> BackgroundSha256:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _lower_interval() -> None:
    global _workers, _saved_interval
    with _LOCK:
        if _workers == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, SWITCH_INTERVAL))
        _workers += 1


def _restore_interval() -> None:
    global _workers
    with _LOCK:
        _workers -= 1
        if _workers == 0:
            sys.setswitchinterval(_saved_interval)
