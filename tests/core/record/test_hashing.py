"""The recording digest hashed on a second thread (core.record.hashing) gives the digest
hashlib gives, stops its worker and restores the switch interval however the load ends."""

from __future__ import annotations

import hashlib
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.record import hashing
from core.record.hashing import BackgroundSha256
from core.record.io import load_recording, save_recording
from tests.core.record.test_format_v3 import _growing

SMALL_BATCH = 64  # bytes: every few parts make a batch, so the worker is exercised


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "chassis-digest"]


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.binary(max_size=300), max_size=40),
    grouped=st.booleans(),
    threaded=st.booleans(),
)
def test_property_the_digest_is_that_of_the_parts_in_order(parts, grouped, threaded):
    expected = hashlib.sha256(b"[" + b"".join(parts)).hexdigest()
    saved = hashing.BATCH
    hashing.BATCH = SMALL_BATCH  # type: ignore[misc]
    try:
        with BackgroundSha256(b"[", threaded=threaded) as h:
            if grouped:
                for k in range(0, len(parts), 3):
                    h.update_many(parts[k : k + 3])
            else:
                for p in parts:
                    h.update(p)
            got = h.hexdigest()
    finally:
        hashing.BATCH = saved  # type: ignore[misc]
    assert got == expected
    assert not _workers()


def test_a_long_stream_is_hashed_on_a_worker_with_a_short_switch_interval():
    before = sys.getswitchinterval()
    seen: list[float] = []
    chunk = bytes(range(256)) * 2048  # 512 KiB
    with BackgroundSha256(threaded=True) as h:
        for _ in range(5):
            h.update(chunk)
            seen.append(sys.getswitchinterval())
            if _workers():
                seen.append(-1.0)
        got = h.hexdigest()
    assert got == hashlib.sha256(chunk * 5).hexdigest()
    assert -1.0 in seen, "no worker ran for a stream of several batches"
    assert min(s for s in seen if s > 0) <= hashing.SWITCH_INTERVAL
    assert sys.getswitchinterval() == before and not _workers()


def test_two_hashers_at_once_restore_the_interval_when_the_last_stops():
    before = sys.getswitchinterval()
    chunk = b"x" * (hashing.BATCH + 1)
    a, b = BackgroundSha256(threaded=True), BackgroundSha256(threaded=True)
    a.update(chunk)
    b.update(chunk)
    a.close()
    assert sys.getswitchinterval() <= hashing.SWITCH_INTERVAL  # b's worker still runs
    assert b.hexdigest() == hashlib.sha256(chunk).hexdigest()
    assert sys.getswitchinterval() == before and not _workers()


def test_a_single_cpu_hashes_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(hashing, "_cpus", lambda: 1)
    h = BackgroundSha256()
    h.update(b"y" * (hashing.BATCH * 2))
    assert not _workers()
    assert h.hexdigest() == hashlib.sha256(b"y" * (hashing.BATCH * 2)).hexdigest()


def _saved_growing(tmp_path, monkeypatch):
    monkeypatch.setattr(hashing, "BATCH", 256)
    path = tmp_path / "grow.json"
    rec = _growing(30, big=500)
    save_recording(rec, path)
    return rec, path


def test_a_load_hashed_in_batches_gives_the_saved_digest(tmp_path, monkeypatch):
    rec, path = _saved_growing(tmp_path, monkeypatch)
    before = sys.getswitchinterval()
    loaded = load_recording(path)
    assert loaded.digest == rec.digest and len(loaded.records) == len(rec.records)
    assert sys.getswitchinterval() == before and not _workers()


def test_a_load_that_fails_half_way_stops_its_worker(tmp_path, monkeypatch):
    rec, path = _saved_growing(tmp_path, monkeypatch)
    data = path.read_bytes()
    # the last tool record names another tool (same length: the ranges still hold), so
    # the load stops at it, after the worker hashed the batches before it
    at = data.rindex(b'"tool":"bash"')
    path.write_bytes(data[:at] + b'"tool":"bask"' + data[at + len(b'"tool":"bash"') :])
    handed: list[int] = []
    real = BackgroundSha256._hand
    monkeypatch.setattr(BackgroundSha256, "_hand", lambda self, batch: (handed.append(len(batch)), real(self, batch)))
    before = sys.getswitchinterval()
    with pytest.raises(FormatError) as info:
        load_recording(path)
    assert info.value.record == len(rec.records) - 1 and "disagrees with record" in info.value.reason
    assert handed, "the worker was never given a batch"
    assert sys.getswitchinterval() == before and not _workers()


class _Failing:
    """A hash object whose update fails on the second batch (a worker out of memory)."""

    def __init__(self) -> None:
        self.calls = 0

    def update(self, data: bytes) -> None:
        self.calls += 1
        if self.calls == 2:
            raise MemoryError("no memory for the batch")


def test_a_worker_that_fails_raises_in_the_caller_and_never_blocks_it():
    before = sys.getswitchinterval()
    h = BackgroundSha256(threaded=True)
    h._h = _Failing()  # type: ignore[assignment]
    chunk = b"z" * hashing.BATCH
    with pytest.raises(MemoryError):
        with h:
            for _ in range(40):  # far more batches than the queue holds: no deadlock
                h.update(chunk)
            h.hexdigest()
    assert sys.getswitchinterval() == before and not _workers()


def test_no_thread_to_be_had_hashes_on_the_calling_thread(monkeypatch):
    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    before = sys.getswitchinterval()
    chunk = b"w" * (hashing.BATCH + 7)
    with BackgroundSha256(threaded=True) as h:
        h.update(chunk)
        h.update(chunk)
        got = h.hexdigest()
    assert got == hashlib.sha256(chunk * 2).hexdigest()
    assert sys.getswitchinterval() == before
