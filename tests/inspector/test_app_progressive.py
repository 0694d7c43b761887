"""A big version-1/2 file in the app: the timeline paints from its first records, the rest
are read in the background (LoadedRecording.reading) and their rows appended — the
cursor, the filter and the search follow — before the verification runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.text import Text

import inspector.loader as loader
from core.errors import FormatError
from core.record import skeleton as sk_mod
from core.record.recording import Recording
from inspector.app import InspectorApp
from inspector.loader import LoadedRecording, load_for_view
from inspector.widgets.recording_header import RecordingHeader
from inspector.widgets.timeline_table import TimelineTable
from tests.builders import recording, tool
from tests.core.record.test_skeleton_chunks import _doc_bytes

N = 120


def _run() -> Recording:
    """``N`` tool calls; every tenth names ``needle``, every seventh (from 3) failed."""
    return recording(
        *[
            tool(
                k,
                "bash",
                {"cmd": f"step {k}" + (" needle" if k % 10 == 0 else "")},
                error="boom" if k % 7 == 3 else None,
            )
            for k in range(N)
        ]
    )


class Gated:
    """A ``reading`` that decodes nothing until ``gate`` is set (the test acts first)."""

    def __init__(self, rest: Any, gate: threading.Event) -> None:
        self._rest = rest
        self._gate = gate

    @property
    def fraction(self) -> float:
        return float(self._rest.fraction)

    def __iter__(self) -> Iterator[dict[str, list[Any]]]:
        self._gate.wait(30)
        yield from self._rest


def _opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gate: threading.Event) -> LoadedRecording:
    monkeypatch.setattr(sk_mod, "CHUNK_BYTES", 512)
    monkeypatch.setattr(loader, "FIRST_RECORDS", 5)
    path = tmp_path / "big-v1.json"
    path.write_bytes(_doc_bytes(_run(), version=1))
    loaded = load_for_view(path, fast_open_bytes=0)
    assert loaded.reading is not None and loaded.records_pending
    loaded.reading = Gated(loaded.reading, gate)  # type: ignore[assignment]
    return loaded


def header(app: InspectorApp) -> str:
    r = app.screen.query_one(RecordingHeader).render()
    return r.plain if isinstance(r, Text) else str(r)


async def _settle(app: InspectorApp, pilot: Any) -> None:
    await app.workers.wait_for_complete()
    for _ in range(3):
        await pilot.pause()


async def test_the_timeline_paints_first_then_grows_with_the_cursor_and_search_kept(tmp_path, monkeypatch):
    gate = threading.Event()
    loaded = _opened(tmp_path, monkeypatch, gate)
    first = len(loaded.index)
    assert 5 <= first < N
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(TimelineTable)
        assert len(table.view) == first
        assert f"{first:,} records so far" in header(app) and "reading the file…" in header(app)
        assert "verifying" not in header(app)  # it starts once every record is read
        await pilot.press("down", "down", "down")
        here = table.cursor_position
        screen: Any = app.screen
        screen.start_search("needle")
        assert screen._search_job is not None
        await screen._search_job.wait()
        await pilot.pause()
        before = list(screen.matches)
        assert before == [k for k in range(first) if k % 10 == 0]
        assert table.cursor_position == 0  # the search went to its first match

        await pilot.press("down")
        here = table.cursor_position
        gate.set()
        await _settle(app, pilot)
        assert loaded.reading is None and loaded.verify is None and loaded.index.verified
        assert len(loaded.index) == len(table.view) == N
        assert table.cursor_position == here  # the rows grew under the cursor
        assert f"{N:,} records" in header(app) and "so far" not in header(app)
        # the search ran again over every record, and did not move the cursor
        assert screen.matches == [k for k in range(N) if k % 10 == 0]
        assert table.cursor_position == here
        assert "invalid record" not in table.render_line(1 + N - 1).text


async def test_a_filter_set_while_reading_keeps_the_rows_read_after(tmp_path, monkeypatch):
    gate = threading.Event()
    loaded = _opened(tmp_path, monkeypatch, gate)
    first = len(loaded.index)
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("x")  # errors only
        table = app.screen.query_one(TimelineTable)
        assert list(table.view) == [k for k in range(first) if k % 7 == 3]
        gate.set()
        await _settle(app, pilot)
        assert list(table.view) == [k for k in range(N) if k % 7 == 3]
        assert f"errors {len(table.view)}" in header(app)


async def test_a_bad_record_after_the_first_paint_shows_the_error_and_exits_2(tmp_path, monkeypatch):
    monkeypatch.setattr(sk_mod, "CHUNK_BYTES", 512)
    monkeypatch.setattr(loader, "FIRST_RECORDS", 5)
    data = _doc_bytes(_run(), version=1)
    at = data.index(b'{"seq":100,')
    bad = data[:at] + b'{"seq":10,' + data[at + len(b'{"seq":100,') :]  # seq 10 again: does not increase
    path = tmp_path / "bad-v1.json"
    path.write_bytes(bad)
    loaded = load_for_view(path, fast_open_bytes=0)
    assert loaded.reading is not None
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(app, pilot)
        assert app.load_error is not None
        assert app.load_error.path == "/records/100/seq" and "does not increase" in str(app.load_error)
        assert loaded.reading is None
        await pilot.press("enter")
    assert app.return_code == 2


# --------------------------------------------------------------------------- verified in a child


def _big_v1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes | None = None) -> Path:
    """A v1 file the loader takes for big (``KEEP_BYTES`` 0): verified in a child."""
    monkeypatch.setattr(loader, "KEEP_BYTES", 0)
    path = tmp_path / "big-v1.json"
    path.write_bytes(_doc_bytes(_run(), version=1) if data is None else data)
    return path


def test_a_big_v1_file_is_verified_in_a_child_and_its_records_stay_in_the_file(tmp_path, monkeypatch):
    from core.record.io import load_recording
    from inspector import verifier

    path = _big_v1(tmp_path, monkeypatch)
    loaded = load_for_view(path, fast_open_bytes=0)
    assert loaded.whole is None and loaded.verify is not None
    children: list[Path] = []
    real = verifier.verify_digest

    def spy(p: Path, *args: Any, **kwargs: Any) -> str:
        children.append(p)
        return real(p, *args, **kwargs)

    monkeypatch.setattr(verifier, "verify_digest", spy)
    checked = loaded.verify()
    assert children == [path]
    assert checked.records == [] and checked.digest == load_recording(path).digest
    assert loaded.whole is not None  # what needs every record reads them then
    assert [r.seq for r in loaded.whole().records] == list(range(N))


def test_a_tampered_big_v1_file_fails_its_verification_in_the_child(tmp_path, monkeypatch):
    data = _doc_bytes(_run(), version=1).replace(b'"cmd":"step 7"', b'"cmd":"step 8"', 1)
    path = _big_v1(tmp_path, monkeypatch, data)
    loaded = load_for_view(path, fast_open_bytes=0)
    with pytest.raises(FormatError) as err:
        loaded.verify()
    assert err.value.file == str(path) and "digest mismatch" in err.value.reason
    assert loaded.whole is None


def test_a_big_v1_file_replaced_after_it_was_opened_is_not_called_verified(tmp_path, monkeypatch):
    path = _big_v1(tmp_path, monkeypatch)
    loaded = load_for_view(path, fast_open_bytes=0)
    other = tmp_path / "other.json"
    other.write_bytes(_doc_bytes(_run(), version=1))
    other.replace(path)  # an atomic save of the same run: another file at the path
    with pytest.raises(FormatError, match="changed on disk"):
        loaded.verify()


async def test_a_big_v1_file_reads_every_record_when_a_branch_needs_them(tmp_path, monkeypatch):
    from inspector.screens.branch_editor import BranchEditorScreen

    path = _big_v1(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)  # the workspace a branch goes to
    loaded = load_for_view(path, fast_open_bytes=0)
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(app, pilot)
        assert loaded.verify is None and app.load_error is None
        assert loaded.recording.records == [] and loaded.recording.digest  # verified, nothing kept
        assert not loaded.index.verified and loaded.whole is not None
        await pilot.press("B")
        await _settle(app, pilot)
        assert loaded.whole is None and len(loaded.recording.records) == N and loaded.index.verified
        assert isinstance(app.screen, BranchEditorScreen)


def test_a_big_v1_file_saved_without_a_digest_is_verified_in_the_child(tmp_path, monkeypatch):
    doc = orjson.loads(_doc_bytes(_run(), version=1))
    del doc["digest"]
    path = _big_v1(tmp_path, monkeypatch, orjson.dumps(doc))
    loaded = load_for_view(path, fast_open_bytes=0)
    assert loaded.recording.digest is None
    checked = loaded.verify()  # the child answers {"digest": null}: no digest to check
    assert checked.digest is None and checked.records == [] and loaded.whole is not None


def test_the_verifying_child_exits_cleanly_while_it_watches_its_input(tmp_path, monkeypatch):
    """The child's stdin watcher reads the descriptor itself: a daemon thread blocked in
    a buffered read made every child abort at shutdown (exit -6), garbling its errors."""
    import subprocess
    import sys

    path = _big_v1(tmp_path, monkeypatch)
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.verifier", "--watch-stdin", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.readline()  # the answer; stdin is still open
        proc.wait(timeout=60)
        err = proc.stderr.read()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()[-500:]
    assert orjson.loads(out)["digest"].startswith("sha256:") and b"Fatal" not in err


async def test_a_search_running_when_the_last_rows_come_still_moves_the_cursor(tmp_path, monkeypatch):
    """The search the user started over the rows read so far is run again over every
    row: its result goes to the first match from where the user started it."""
    from core.analysis.timeline import TimelineIndex

    reading_gate, search_gate, searching = threading.Event(), threading.Event(), threading.Event()
    loaded = _opened(tmp_path, monkeypatch, reading_gate)
    real = TimelineIndex.search
    calls: list[int] = []

    def slow_first(self: TimelineIndex, text: str) -> list[int]:
        calls.append(len(self))
        if len(calls) == 1:
            searching.set()
            search_gate.wait(30)  # the user's search is still running when the rows come
        return real(self, text)

    monkeypatch.setattr(TimelineIndex, "search", slow_first)
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(TimelineTable)
        screen: Any = app.screen
        await pilot.press("down", "down", "down")
        assert table.cursor_position == 3
        screen.start_search("needle")
        await asyncio.get_running_loop().run_in_executor(None, searching.wait, 30)  # it runs
        reading_gate.set()
        while app.loaded.reading is not None:  # the last rows reach the screen
            await pilot.pause()
        search_gate.set()  # (the first search's worker was cancelled: its result is dropped)
        await _settle(app, pilot)
        assert calls[0] < N and calls[-1] == N  # searched again over every row
        assert screen.matches == [k for k in range(N) if k % 10 == 0]
        assert table.cursor_position == 10  # the first match from row 3, where it began


async def test_what_is_not_found_while_reading_says_so(tmp_path, monkeypatch):
    gate = threading.Event()
    loaded = _opened(tmp_path, monkeypatch, gate)
    app = InspectorApp(loaded)
    notes: list[str] = []
    real_notify = app.notify
    monkeypatch.setattr(app, "notify", lambda message, **kw: notes.append(message) or real_notify(message, **kw))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("g")
        await pilot.pause()
        await pilot.press(*"100", "enter")
        await pilot.pause()
        assert any(n.startswith("seq 100 is not read yet (reading the file… ") for n in notes), notes
        gate.set()
        await _settle(app, pilot)


async def test_a_file_replaced_while_it_is_read_is_refused_not_a_crash(tmp_path, monkeypatch):
    gate = threading.Event()
    loaded = _opened(tmp_path, monkeypatch, gate)
    other = tmp_path / "other.json"
    other.write_bytes(_doc_bytes(recording(tool(0, "bash", {"cmd": "x"})), version=1))
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        other.replace(loaded.path)  # an atomic save of another run at the path
        gate.set()
        await _settle(app, pilot)
        assert app.load_error is not None and "changed on disk" in str(app.load_error)
        await pilot.press("enter")
    assert app.return_code == 2


class Failing:
    """A ``reading`` whose decoder fails with something that is not a FormatError."""

    fraction = 0.5

    def __iter__(self) -> Iterator[dict[str, list[Any]]]:
        raise RecursionError("maximum recursion depth exceeded while deserializing an object")


async def test_a_read_that_fails_after_the_first_paint_is_never_shown_as_the_whole_file(tmp_path, monkeypatch):
    loaded = _opened(tmp_path, monkeypatch, threading.Event())
    loaded.reading = Failing()  # type: ignore[assignment]
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(app, pilot)
        assert app.load_error is not None
        assert "reading the records after the first paint failed (RecursionError" in str(app.load_error)
        assert str(loaded.path) in str(app.load_error)
        await pilot.press("enter")
    assert app.return_code == 2
