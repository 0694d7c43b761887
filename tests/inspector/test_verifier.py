"""A big version-3 run is verified in a process of its own (inspector.verifier): the same
answer as the in-process check, errors with their place, and a child that never outlives
the app. The record index is read lazily: what a first paint or ``info`` does not need is
not read, and a damaged column read later is reported, not raised into the timeline."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import orjson
import pytest

from core.errors import FormatError
from core.record.indexed import IndexedFile, RecordIndex, layout_index
from core.record.io import load_recording, save_recording
from inspector import verifier
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.cli.recording_cmds import indexed_summary
from inspector.loader import load_for_view
from inspector.screens.error import ErrorScreen
from tests.builders import SAMPLES

SAMPLE = SAMPLES / "sample-agent-fault-tool-error.json"


def _saved(tmp_path):
    rec = load_recording(SAMPLE)
    path = tmp_path / "run.json"
    save_recording(rec, path)
    return rec, path


def _lie_about_a_status(path, column: str = "status", was: bytes = b'"ok"', now: bytes = b'"in"') -> None:
    """Rename a value in the string table of an index column (same length: the ranges
    still hold): the first paint shows it, the verification refuses it."""
    data = path.read_bytes()
    head = b'"' + column.encode() + b'":['
    at = data.index(head, data.index(b'"strings":')) + len(head)
    assert data[at : at + len(was)] == was
    path.write_bytes(data[:at] + now + data[at + len(was) :])


def _relayout(path, change) -> None:
    """Apply ``change`` to the file's parsed index and write it back laid out by the
    writer's own ``layout_index`` at the same place (``index_length`` rewritten)."""
    data = path.read_bytes()
    doc = orjson.loads(data)
    change(doc["index"])
    start = int(re.search(rb'"index_offset":(\d+)', data)[1])
    index = layout_index(doc["index"], doc["index"]["records"], start)
    new = data[:start] + index + b"}\n"
    length = b'"index_length":' + str(len(index)).encode().ljust(20) + b","
    path.write_bytes(re.sub(rb'"index_length":\d+ *,', length, new, count=1))


def test_the_child_verifies_and_answers_the_digest(tmp_path):
    rec, path = _saved(tmp_path)
    assert verifier.verify_digest(path) == rec.digest


def test_the_child_reports_damage_with_its_place(tmp_path):
    _, path = _saved(tmp_path)
    _lie_about_a_status(path)
    with pytest.raises(FormatError) as info:
        verifier.verify_digest(path)
    err = info.value
    assert err.file == str(path) and err.record == 0 and err.path == "/index/records/status/0"
    assert "disagrees with record 0" in err.reason


def test_a_child_that_dies_without_an_answer_is_an_error(tmp_path, monkeypatch):
    _, path = _saved(tmp_path)
    monkeypatch.setattr(verifier.sys, "executable", "/bin/false")
    with pytest.raises(FormatError) as info:
        verifier.verify_digest(path)
    assert "ended without an answer (exit code 1" in info.value.reason and info.value.file == str(path)


def test_cancelling_kills_the_child(tmp_path, monkeypatch):
    _, path = _saved(tmp_path)
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        p = real(*args, **kwargs)
        started.append(p)
        return p

    monkeypatch.setattr(verifier.subprocess, "Popen", popen)
    with pytest.raises(verifier.VerificationCancelled):
        verifier.verify_digest(path, cancelled=lambda: True)
    (proc,) = started
    assert proc.returncode == -signal.SIGKILL  # killed and reaped, not left running


def test_the_child_ends_when_its_parent_closes_the_pipe(tmp_path):
    """The orphan guard of ``--watch-stdin``: standard input closed (the app ended) ends
    the child even while its work blocks — here on opening a FIFO nobody writes to."""
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "inspector.verifier", "--watch-stdin", str(fifo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=60) == 3


def test_a_file_replaced_after_it_was_opened_is_not_called_verified(tmp_path):
    """What is on screen was read from the file as it was opened; a valid file put at
    the same path since is not what the child's answer is about."""
    _, path = _saved(tmp_path)
    shown = IndexedFile.open(path)
    other = tmp_path / "other.json"
    save_recording(load_recording(SAMPLES / "sample-agent-success.json"), other)
    os.replace(other, path)
    with pytest.raises(FormatError) as info:
        verifier.verify_digest(path, identity=shown.identity, digest=shown.header()["digest"])
    assert "changed on disk" in info.value.reason and info.value.file == str(path)


def test_a_huge_error_message_neither_blocks_nor_floods(tmp_path):
    """A damaged index whose error quotes a 100,000-character name: the child's answer
    is read from a file (no pipe to fill) and its reason is cut."""
    _, path = _saved(tmp_path)
    _relayout(path, lambda ix: ix["strings"]["name"].__setitem__(0, "x" * 100_000))
    with pytest.raises(FormatError) as info:
        verifier.verify_digest(path)
    assert "disagrees with record" in info.value.reason and len(info.value.reason) < 400


def test_the_cli_entry_prints_one_json_line(tmp_path, capsys):
    rec, path = _saved(tmp_path)
    assert verifier.main([str(path)]) == 0
    assert orjson.loads(capsys.readouterr().out) == {
        "digest": rec.digest,
        "identity": list(IndexedFile.open(path).identity),
    }
    assert verifier.main([]) == 2


@pytest.mark.parametrize(
    ("column", "was", "now", "where"),
    [
        ("status", b'"ok"', b'"in"', "/index/records/status/0"),
        # a kind the timeline has no style for; reading the record refuses the range
        ("kind", b'"lifecycle"', b'"\\u001b[2J"', "/index/records/seq/0"),
    ],
)
async def test_a_big_damaged_run_paints_then_fails_its_verification_in_the_app(
    tmp_path, monkeypatch, column, was, now, where
):
    import inspector.loader as loader

    _, path = _saved(tmp_path)
    _lie_about_a_status(path, column, was, now)
    monkeypatch.setattr(loader, "KEEP_RECORDS", 5)  # verified by the child, nothing kept
    loaded = load_for_view(path, fast_open_bytes=0)
    assert loaded.whole is not None
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert where in app.screen.message and str(path) in app.screen.message
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 2


# --------------------------------------------------------------------------- lazy index


def test_info_reads_the_header_alone(tmp_path, monkeypatch):
    """``info`` on a version-3 file reads its header and summary: no column of the
    index, no record (the first error's details are in the summary)."""
    rec, path = _saved(tmp_path)

    def refuse(self, name):
        raise AssertionError(f"info read the index column {name!r}")

    monkeypatch.setattr(RecordIndex, "member", refuse)
    s = indexed_summary(path)
    assert s is not None and s["records"] == len(rec.records)
    first = rec.first_error()
    assert first is not None and s["first_error"]["seq"] == first.seq
    assert s["first_error"]["type"] == first.result.error.type


def test_a_malformed_summary_is_refused_by_info(tmp_path, capsys):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    at = data.index(b'"first_error":{') + len(b'"first_error":{')
    path.write_bytes(data[:at] + data[at:].replace(b'"kind":"tool"', b'"kind":"TOOL"', 1))
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "/summary/first_error" in err and str(path) in err


def test_a_damaged_link_column_leaves_the_timeline_without_links_until_verification(tmp_path):
    """The tool_call_id column is read when links are first needed: damaged, the
    timeline has no links (no exception in the UI) and the verification names it."""
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    at = data.index(b'"tool_call_id":[', data.index(b'"records":{')) + len(b'"tool_call_id":[')
    assert data[at : at + 5] == b"null,"
    path.write_bytes(data[:at] + b'"x"  ' + data[at + 5 :])  # same length, not JSON
    lazy = load_for_view(path, fast_open_bytes=0)
    assert len(lazy.index) > 0  # painted
    assert lazy.index.answered_by == {} and lazy.index.requested_by == {}
    with pytest.raises(FormatError) as info:
        assert lazy.verify is not None
        lazy.verify()
    assert info.value.path == "/index/records/tool_call_id"


async def test_an_unverified_index_with_a_hostile_kind_paints_as_data(tmp_path):
    """Before its verification, the timeline shows what the index says: a kind holding
    a terminal control sequence is drawn as marked text, unstyled, never as control."""
    from inspector.widgets.timeline_table import TimelineTable

    _, path = _saved(tmp_path)
    _lie_about_a_status(path, "kind", b'"lifecycle"', b'"\\u001b[2J"')
    loaded = load_for_view(path, fast_open_bytes=0)
    assert "\x1b[2J" in loaded.index.kinds
    loaded.verify = None  # shown as painted, before any verification
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(TimelineTable)
        text = "\n".join(table.render_line(y).text for y in range(len(loaded.index) + 1))
        assert "\x1b" not in text and "[2J" in text


@pytest.mark.parametrize(
    ("column", "value", "where"),
    [
        ("at", b'"x"', "/index/records/at"),
        ("duration", b"[1]", "/index/records/duration"),
        ("input_tokens", b"1.5", "/index/records/input_tokens"),
    ],
)
def test_a_column_of_the_wrong_type_is_refused_when_read(tmp_path, column, value, where):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    head = b'"' + column.encode() + b'":['
    at = data.index(head, data.index(b'"records":{')) + len(head)
    end = data.index(b",", at)
    old = data[at:end]
    assert len(value) <= len(old) or old == b"null"
    new = value.ljust(len(old)) if len(value) <= len(old) else value[: len(old)]
    path.write_bytes(data[:at] + new + data[end:])
    with pytest.raises(FormatError) as info:
        load_for_view(path, fast_open_bytes=0)
    assert info.value.path == where and str(path) in str(info.value)


async def test_an_unverified_index_with_a_hostile_status_shows_it_as_data_in_the_detail_pane(tmp_path):
    from rich.console import Console

    from inspector.widgets.detail_pane import DetailPane

    _, path = _saved(tmp_path)
    _relayout(path, lambda ix: ix["strings"]["status"].__setitem__(0, "\x1b]0;pwned\x07\x1b[2J"))
    loaded = load_for_view(path, fast_open_bytes=0)
    assert any("\x1b" in st for st in loaded.index.statuses)
    loaded.verify = None
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(DetailPane)
        text = pane._identity_text(loaded.index, 0)
        console = Console(width=200, color_system=None)
        with console.capture() as cap:
            console.print(text)
        assert "\x1b" not in cap.get()


@pytest.mark.parametrize("member", ["tokens", "first_error", "name"])
def test_a_summary_missing_a_member_is_refused_by_info(tmp_path, capsys, member):
    _, path = _saved(tmp_path)
    data = path.read_bytes()
    end = data.index(b',"digest":')
    start = data.index(b'"summary":') + len(b'"summary":')
    summary = orjson.loads(data[start:end])
    if member == "name":
        del summary["first_error"]["name"]
        where = "/summary/first_error"
    else:
        del summary[member]
        where = f"/summary/{member}"
    new = orjson.dumps(summary)
    assert len(new) < end - start
    # padded with spaces (JSON whitespace): the offsets still hold, info reads the header
    path.write_bytes(data[:start] + new.ljust(end - start) + data[end:])
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert where in err and str(path) in err and "Traceback" not in err


async def test_the_columns_the_first_paint_left_are_read_ahead_after_it(tmp_path):
    """What a keypress would otherwise pay for (the links' columns, the records' byte
    ranges) is read in a worker once the first frame is drawn."""
    _, path = _saved(tmp_path)
    loaded = load_for_view(path, fast_open_bytes=0)
    index = loaded.index
    read = index._link_columns._read
    assert "tool_call_id" not in read and "calls" not in read  # the first paint does not read them
    loaded.verify = None
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert {"run_id", "tool_call_id", "calls"} <= set(read)
        assert index._raw._f.index._ranges is not None


async def test_the_columns_read_ahead_are_kept_out_of_the_cyclic_collectors_reach(tmp_path, monkeypatch):
    """Once the columns are read and the maps of links built, they are frozen with the
    other long-lived objects: a full collection would otherwise walk every item of a
    million-item column or map."""
    import gc

    import inspector.app as app_module

    _, path = _saved(tmp_path)
    loaded = load_for_view(path, fast_open_bytes=0)
    loaded.verify = None
    index = loaded.index
    frozen_after_links: list[bool] = []

    def keep() -> None:
        frozen_after_links.append(index._link_columns is None)  # the maps are built
        gc.freeze()

    monkeypatch.setattr(app_module, "keep_long_lived", keep)
    app = InspectorApp(loaded)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            await app.workers.wait_for_complete()
            assert frozen_after_links == [False, True]  # at mount, then after the read-ahead
            maps = index.answered_by
            assert maps and gc.is_tracked(maps)
            assert not any(o is maps for o in gc.get_objects())  # frozen: not in any generation
    finally:
        gc.unfreeze()


def test_the_console_script_sets_the_frame_rate_unless_the_user_did(monkeypatch):
    """``TEXTUAL_FPS`` (Textual's own setting, read once at its import) defaults to the
    app's FRAMES_PER_SECOND; a value the user set is kept."""
    from inspector import FRAMES_PER_SECOND

    monkeypatch.delenv("TEXTUAL_FPS", raising=False)
    assert main(["--help"]) == 0
    assert os.environ["TEXTUAL_FPS"] == str(FRAMES_PER_SECOND) == "120"
    monkeypatch.setenv("TEXTUAL_FPS", "30")
    assert main(["--help"]) == 0
    assert os.environ["TEXTUAL_FPS"] == "30"
    # a fresh app process draws at that rate
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from inspector import set_frame_rate; set_frame_rate(); import textual.constants as c; print(c.MAX_FPS)",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"},
    )
    assert out.stdout.strip() == "120"


def test_a_folder_the_app_was_started_in_cannot_shadow_the_child_s_modules(tmp_path, monkeypatch):
    """The child runs ``python -P``: a ``core`` package in the current directory is not
    imported in place of the app's own."""
    _, path = _saved(tmp_path)
    cwd = tmp_path / "cwd"
    (cwd / "core").mkdir(parents=True)
    (cwd / "core" / "__init__.py").write_text("raise SystemExit('shadowed core imported from cwd')\n")
    monkeypatch.chdir(cwd)
    assert verifier.verify_digest(path) == load_recording(path).digest
