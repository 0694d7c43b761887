"""The skeleton decode of a memory-mapped v1/v2 file a chunk of records at a time
(core.record.skeleton._chunked) against the decode of the same bytes whole."""

from __future__ import annotations

import mmap
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.record import skeleton as sk_mod
from core.record.io import parse_json, recording_to_dict
from core.record.recording import Recording, SessionInfo
from core.record.skeleton import ChunkedRawRecords, Skeleton, skeleton
from inspector.loader import load_for_view
from tests.builders import SAMPLES, make_recording
from tests.core.record.test_skeleton import expected_columns, records


@contextmanager
def mapped(data: bytes, access: int = mmap.ACCESS_COPY) -> Iterator[mmap.mmap]:
    """``data`` written to a file and mapped (copy-on-write by default, as the app maps it)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "r.json"
        path.write_bytes(data)
        mode = "r+b" if access == mmap.ACCESS_WRITE else "rb"
        with open(path, mode) as fh, mmap.mmap(fh.fileno(), 0, access=access) as mm:
            yield mm
        assert path.read_bytes() == data  # a private map never writes the file


@contextmanager
def chunks_of(size: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Chunks of ``size`` bytes; yields what each chunked decode did ("chunked" or
    "whole" when it handed the document to the whole-document path)."""
    monkeypatch.setattr(sk_mod, "CHUNK_BYTES", size)
    seen: list[str] = []
    real = sk_mod._chunked

    def spy(data: mmap.mmap, source: str, first_records: int | None = None) -> Skeleton | None:
        got = real(data, source, first_records)
        seen.append("whole" if got is None else "chunked")
        return got

    monkeypatch.setattr(sk_mod, "_chunked", spy)
    yield seen


def same(a: Skeleton | None, b: Skeleton | None) -> None:
    assert a is not None and b is not None
    assert a.header == b.header
    assert a.columns == b.columns
    assert len(a.raw) == len(b.raw)
    assert list(a.raw) == list(b.raw)


def _doc_bytes(rec: Recording, version: int = 2, indent: bool = False, **extra: Any) -> bytes:
    doc = recording_to_dict(rec)
    doc["format_version"] = version
    records_ = doc.pop("records")
    doc.update(extra)
    doc["records"] = records_
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0)


# --------------------------------------------------------------------------- equal results


@settings(max_examples=60, deadline=None)
@given(
    recs=records(),
    version=st.sampled_from([1, 2]),
    indent=st.booleans(),
    size=st.sampled_from([1, 40, 300, 2000]),
)
def test_property_chunks_give_what_the_whole_decode_gives(recs, version, indent, size):
    if version == 1:
        recs = [r.model_copy(update={"meta": None}) for r in recs]
    rec = Recording(metadata={"task": "ünï"}, session=SessionInfo(producer="test"), records=recs)
    data = _doc_bytes(rec, version, indent)
    whole = skeleton(data, source="f.json")
    with pytest.MonkeyPatch.context() as mp, chunks_of(size, mp) as seen, mapped(data) as mm:
        same(skeleton(mm, source="f.json", copy_on_write=True), whole)
        assert mm[:] == data  # the brackets written for a chunk's decode were put back
        if len(data) > 2 * size and recs:
            assert seen == ["chunked"]


@pytest.mark.parametrize("path", sorted(SAMPLES.glob("*.json"))[:8], ids=lambda p: p.name)
def test_sample_files_in_chunks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    with chunks_of(512, monkeypatch) as seen, mapped(data) as mm:
        same(skeleton(mm, source=str(path), copy_on_write=True), skeleton(data, source=str(path)))
    assert seen == ["chunked"]


def _with_nested(n_nested: int) -> bytes:
    """A recording whose tool arguments hold arrays of objects opening as a record does
    (``{"seq":``), and whose strings and keys hold the separator's characters."""
    rec = make_recording()
    doc = orjson.loads(_doc_bytes(rec))
    for r in doc["records"]:
        if r["kind"] == "tool":
            r["arguments"] = {
                "items": [{"seq": k, "kind": "tool"} for k in range(n_nested)],
                '},{"seq":': '},{"seq":1,"kind":"model"}',
            }
    return orjson.dumps(doc)


@pytest.mark.parametrize("n_nested", [1, 3, 40])
def test_separators_inside_records_are_not_taken_for_record_boundaries(n_nested, monkeypatch):
    data = _with_nested(n_nested)
    assert data.count(b',{"seq":') > data.count(b'"kind":') // 2  # nested ones among them
    whole = skeleton(data, source="n.json")
    for size in (1, 64, 700):
        with chunks_of(size, monkeypatch) as seen, mapped(data) as mm:
            same(skeleton(mm, source="n.json", copy_on_write=True), whole)
        assert seen and seen[0] in ("chunked", "whole")
    # a few nested separators are skipped; many send the document to the whole decode
    assert seen == (["whole"] if n_nested > sk_mod._SPLIT_TRIES else ["chunked"])


def test_a_member_after_the_records_sends_the_document_whole(monkeypatch):
    doc = orjson.loads(_doc_bytes(make_recording()))
    doc["extra"] = [1, {"seq": 2}]  # after "records", ending in "]}" as the records would
    data = orjson.dumps(doc)
    with chunks_of(64, monkeypatch) as seen, mapped(data) as mm:
        got = skeleton(mm, source="x.json", copy_on_write=True)
        same(got, skeleton(data, source="x.json"))
        assert got is not None and got.header["extra"] == [1, {"seq": 2}]
        del got
    assert seen == ["whole"]


def test_a_nested_records_member_before_the_real_one(monkeypatch):
    data = _doc_bytes(make_recording(), metadata={"records": [{"seq": 1}], "n": '"records":['})
    with chunks_of(64, monkeypatch) as seen, mapped(data) as mm:
        same(skeleton(mm, source="m.json", copy_on_write=True), skeleton(data, source="m.json"))
    assert seen == ["chunked"]


@pytest.mark.parametrize("access", [mmap.ACCESS_READ, mmap.ACCESS_WRITE, mmap.ACCESS_COPY])
def test_a_map_not_said_to_be_copy_on_write_is_decoded_whole(access, monkeypatch):
    """Chunks write two bytes of the map each: only a private copy may be chunked, and
    only the caller knows how it mapped the file."""
    data = _doc_bytes(make_recording())
    with chunks_of(64, monkeypatch) as seen, mapped(data, access) as mm:
        same(skeleton(mm, source="r.json"), skeleton(data, source="r.json"))
    assert seen == []


def test_a_second_records_member_is_read_as_the_whole_decode_reads_it(monkeypatch):
    """JSON readers here take the last of two members of one name: a stale first
    ``records`` (with a record the timeline refuses) does not stop the file opening."""
    good = [_lifecycle(k) for k in range(30)]
    stale = [_lifecycle(0), {"seq": 1, "kind": "bogus"}] + [_lifecycle(k) for k in range(2, 30)]
    head = b'{"format":"chassis.replay","format_version":1,"metadata":{},'
    data = head + b'"records":' + orjson.dumps(stale) + b',"records":' + orjson.dumps(good) + b"}"
    whole = skeleton(data, source="d.json")
    assert whole is not None and whole.columns["kind"] == ["lifecycle"] * 30
    with chunks_of(64, monkeypatch) as seen, mapped(data) as mm:
        same(skeleton(mm, source="d.json", copy_on_write=True), whole)
    assert seen == ["whole"]


def test_a_key_ending_in_an_escaped_records_is_not_the_records_member(monkeypatch):
    records_ = [_lifecycle(k) for k in range(40)]
    data = b'{"format":"chassis.replay","format_version":2,"x\\"records":' + orjson.dumps(records_) + b"}"
    assert orjson.loads(data)['x"records'] == records_
    whole = skeleton(data, source="k.json")
    with chunks_of(64, monkeypatch), mapped(data) as mm:
        got = skeleton(mm, source="k.json", copy_on_write=True)
        same(got, whole)
        assert got is not None and len(got.raw) == 0 and got.header['x"records'] == records_
        del got


def test_pages_of_decoded_chunks_are_given_back(monkeypatch):
    data = _doc_bytes(make_recording(), indent=True)
    marks: list[int] = []
    real = sk_mod.release_pages
    monkeypatch.setattr(sk_mod, "release_pages", lambda mm, released, at: marks.append(at) or real(mm, released, at))
    with chunks_of(256, monkeypatch), mapped(data) as mm:
        assert skeleton(mm, source="p.json", copy_on_write=True) is not None
    assert len(marks) > 3 and marks == sorted(marks) and marks[-1] < len(data)


def test_a_record_is_sliced_from_its_chunk_alone(monkeypatch):
    data = _doc_bytes(make_recording())
    records_ = orjson.loads(data)["records"]
    with chunks_of(64, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="c.json", copy_on_write=True)
        assert sk is not None
        raw = sk.raw
        assert isinstance(raw, ChunkedRawRecords) and len(raw._bounds) > 3
        assert raw[-1] == records_[-1]
        assert list(raw._chunks) == [len(raw._bounds) - 1]  # the last chunk's slices only
        assert bytes(raw.slice_of(0)) == orjson.dumps(records_[0])
        assert sorted(raw._chunks) == [0, len(raw._bounds) - 1]
        assert list(raw) == records_
        for k in (len(records_), -len(records_) - 1):
            with pytest.raises(IndexError):
                raw.slice_of(k)
        del sk, raw


def test_a_chunk_changed_after_the_paint_is_reported(monkeypatch):
    data = _doc_bytes(make_recording())
    with chunks_of(64, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="d.json", copy_on_write=True)
        assert sk is not None and isinstance(sk.raw, ChunkedRawRecords)
        start, end = sk.raw._bounds[2]
        mm[start] = ord("x")  # the chunk's first record no longer opens
        try:
            sk.raw[sk.raw._firsts[2]]
        except FormatError as exc:
            got = (exc.path, exc.reason)
        else:
            pytest.fail("no FormatError")
        mm[start] = data[start]
        del sk
    assert got[0].startswith("/records/") and got[1].startswith("the document changed")


# --------------------------------------------------------------------------- errors


def _records_doc(records_: list[Any]) -> bytes:
    return orjson.dumps({"format": "chassis.replay", "format_version": 1, "metadata": {}, "records": records_})


def _lifecycle(seq: int) -> dict[str, Any]:
    return {"seq": seq, "kind": "lifecycle", "event": "harness.shutdown"}


@pytest.mark.parametrize(
    ("bad", "path", "reason"),
    [
        ({"seq": 41, "kind": "thought"}, "/records/40/kind", "unknown record kind 'thought'"),
        ({"seq": 3, "kind": "lifecycle", "event": "x"}, "/records/40/seq", "seq 3 does not increase"),
        (7, "/records/40", "record is not a JSON object"),
    ],
)
def test_an_error_in_a_later_chunk_names_the_record_of_the_document(bad, path, reason, monkeypatch):
    data = _records_doc([_lifecycle(k) for k in range(40)] + [bad] + [_lifecycle(k) for k in range(50, 60)])
    with pytest.raises(FormatError) as plain:
        skeleton(data, source="e.json")
    with chunks_of(100, monkeypatch) as seen, mapped(data) as mm:
        try:  # (not pytest.raises: its traceback would keep the map's slices, and the map open)
            skeleton(mm, source="e.json", copy_on_write=True)
        except FormatError as exc:
            got = (exc.record, exc.path, exc.reason)
        else:
            pytest.fail("no FormatError")
    assert got[:2] == (plain.value.record, plain.value.path) == (40, path)
    assert got[2].startswith(reason)
    assert seen == ["whole"]  # the chunks gave way to the whole decode, which raised


def test_the_first_problem_of_the_document_is_reported_not_the_first_chunk_s():
    records_ = [_lifecycle(0), {"seq": 1, "kind": "bogus"}] + [_lifecycle(k) for k in range(2, 60)]
    good = _records_doc(records_)
    at = good.index(b'{"seq":45')
    data = good[:at] + b'{"seq":45,,' + good[at + len(b'{"seq":45,') :]
    with pytest.raises(FormatError) as plain:
        skeleton(data, source="f.json")
    assert plain.value.line is not None  # malformed JSON: found before any record is read
    with pytest.MonkeyPatch.context() as mp, chunks_of(100, mp), mapped(data) as mm:
        try:
            skeleton(mm, source="f.json", copy_on_write=True)
        except FormatError as exc:
            got = str(exc)
        else:
            pytest.fail("no FormatError")
    assert got == str(plain.value)


def test_malformed_json_in_a_later_chunk_is_reported_as_parse_json_does(monkeypatch):
    good = _records_doc([_lifecycle(k) for k in range(60)])
    at = good.index(b'{"seq":45')
    data = good[:at] + b'{"seq":45,,' + good[at + len(b'{"seq":45,') :]
    with pytest.raises(FormatError) as plain:
        parse_json(data, source="j.json")
    with chunks_of(100, monkeypatch) as seen, mapped(data) as mm, pytest.raises(FormatError) as err:
        skeleton(mm, source="j.json", copy_on_write=True)
    assert str(err.value) == str(plain.value)
    assert seen == ["whole"]


# --------------------------------------------------------------------------- the app's open


def test_the_app_maps_the_file_copy_on_write_and_paints_from_chunks(tmp_path, monkeypatch):
    rec = make_recording()
    path = tmp_path / "run.json"
    data = _doc_bytes(rec)
    path.write_bytes(data)
    with chunks_of(128, monkeypatch) as seen:
        loaded = load_for_view(path, fast_open_bytes=0)
    assert seen == ["chunked"]
    want = expected_columns(rec)
    index = loaded.index
    assert (index.seqs, index.kinds, index.names, index.statuses) == (
        want["seq"],
        want["kind"],
        want["name"],
        want["status"],
    )
    assert loaded.verify is not None and loaded.verify().digest == orjson.loads(data)["digest"]
    assert path.read_bytes() == data


# --------------------------------------------------------------------------- fields of the wrong type


_ODD = [
    {"seq": 0, "kind": "model", "model": 5, "run_id": [1], "duration_seconds": "slow",
     "response": {"usage": {"input_tokens": "many", "output_tokens": [2]},
                  "message": {"role": "assistant", "content": "", "tool_calls": [{"id": 9}, {"id": "c1"}]}}},
    {"seq": 1, "kind": "tool", "tool": {"x": 1}, "tool_call_id": 7, "duration_seconds": True, "result": {}},
    {"seq": 2, "kind": "lifecycle", "event": 3, "at": 5},
    {"seq": 3, "kind": "snapshot", "generation_id": 4},
    {"seq": 4, "kind": "model", "model": "m", "response": {"usage": {"input_tokens": True}}},
]  # fmt: skip


@pytest.mark.parametrize("chunked", [False, True])
def test_fields_of_the_wrong_type_give_columns_the_timeline_can_show(chunked, monkeypatch):
    """The first paint shows such a file (verification refuses it afterwards): each
    column holds the types of the version-3 index's columns, nothing the table or the
    links would trip on."""
    from core.analysis.timeline import TimelineIndex
    from core.record.io import recording_from_dict

    good = [_lifecycle(k) for k in range(5, 40)]
    data = _records_doc(_ODD + good)
    with chunks_of(64 if chunked else 1 << 30, monkeypatch) as seen, mapped(data) as mm:
        sk = skeleton(mm, source="o.json", copy_on_write=True)
        assert sk is not None
        cols = sk.columns
        assert cols["name"][:5] == ["5", '{"x":1}', "3", "4", "m"]
        assert cols["input_tokens"][:5] == [None] * 5
        assert cols["output_tokens"][:5] == [None, None, None, None, 0]  # a missing count is 0
        assert cols["duration"][:2] == [None, None] and cols["run_id"][0] is None
        assert cols["tool_call_id"][1] is None and cols["calls"][0] == [None, "c1"]
        shell = recording_from_dict({"format": "chassis.replay", "format_version": 1, "records": []})
        index = TimelineIndex.from_columns(shell, cols, sk.raw, source="o.json")
        assert index.tokens[:5] == [None, None, None, None, 0] and len(index) == 40
        assert [row.name for row in index.rows(range(5))] == ["5", '{"x":1}', "3", "4", "m"]
        del sk, index
    assert seen == (["chunked"] if chunked else [])


def test_rows_that_could_not_be_read_read_again_once_verified(monkeypatch):
    """A chunk changed on disk after the paint makes its rows invalid; the verified
    recording (read before the change) then shows them as they are."""
    from core.analysis.timeline import INVALID_RECORD, TimelineIndex
    from core.record.io import loads_recording, recording_from_dict

    data = _doc_bytes(make_recording())
    verified = loads_recording(data)
    with chunks_of(64, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="v.json", copy_on_write=True)
        assert sk is not None and isinstance(sk.raw, ChunkedRawRecords)
        header = {k: v for k, v in sk.header.items() if k != "digest"}  # as the app's loader does
        shell = recording_from_dict({**header, "records": []})
        index = TimelineIndex.from_columns(shell, sk.columns, sk.raw, source="v.json")
        start, _ = sk.raw._bounds[2]
        k = sk.raw._firsts[2]
        mm[start] = ord("x")
        assert index.summary_of(k).startswith(INVALID_RECORD)
        mm[start] = data[start]
        index.adopt(verified)
        assert not index.summary_of(k).startswith(INVALID_RECORD)
        assert index.row(k).summary == index.summary_of(k)
        del sk, index


@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":"), (" ,\n ", " : ")])
def test_files_written_with_spaces_after_commas_are_chunked(separators, monkeypatch):
    """Python's json.dumps writes ``}, {"seq": 1``: the separator allows whitespace."""
    import json

    doc = orjson.loads(_doc_bytes(make_recording()))
    data = json.dumps(doc, separators=separators, ensure_ascii=False).encode()
    with chunks_of(64, monkeypatch) as seen, mapped(data) as mm:
        got = skeleton(mm, source="s.json", copy_on_write=True)
        same(got, skeleton(data, source="s.json"))
        assert got is not None and isinstance(got.raw, ChunkedRawRecords) and len(got.raw._bounds) > 3
        del got
    assert seen == ["chunked"]


_TRUNCATED = r"""
import os, sys
from pathlib import Path
from core.errors import FormatError
from core.record import skeleton as sk_mod
from core.record.indexed import IndexedFile
from inspector.loader import load_for_view

sk_mod.CHUNK_BYTES = 4096
path = Path(sys.argv[1])
if sys.argv[2] == "v1":
    view = load_for_view(path, fast_open_bytes=0)
    read = lambda i: view.index.record(i)
    n = len(view.index)
elif sys.argv[2] == "v1-reading":  # the records a progressive first paint left
    import inspector.loader as loader

    loader.FIRST_RECORDS = 10
    view = load_for_view(path, fast_open_bytes=0)
    assert view.reading is not None

    def read(i):
        if i:  # after the change: the chunks left are decoded now
            for columns in view.reading:
                view.index.extend(columns)
        return view.index.record(i)

    n = 400
elif sys.argv[2] == "v3-verify":  # the streamed verification of a big v3 run
    from core.record.io import load_indexed

    f = IndexedFile.open(path)
    read = lambda i: load_indexed(f, keep=False)
    n = len(f)
else:
    f = IndexedFile.open(path)
    read = f.raw_record
    n = len(f)
read(0)
if len(sys.argv) > 3:  # the path now names another, shorter file: the map is intact
    other = path.with_name("other.json")
    other.write_bytes(b"{}")
    os.replace(other, path)
else:
    os.truncate(path, os.path.getsize(path) // 2)
try:
    read(n - 1)
except FormatError as exc:
    print("refused:", exc)
else:
    print("read")
"""


def _change_while_open(tmp_path: Path, version: str, *how: str) -> tuple[Path, str]:
    """Open a 400-record run (``version``: v1, v3, v3-verify) in a child process, change
    its file (truncate it, or with ``"replace"`` put another file at its path), read its
    last record; the path and what the child printed (a SIGBUS would end the child, not
    the test run)."""
    import subprocess
    import sys

    from core.record.io import save_recording
    from tests.core.record.test_format_v3 import _growing

    rec = _growing(200, big=300)
    path = tmp_path / f"run-{version}.json"
    if version.startswith("v1"):
        path.write_bytes(_doc_bytes(rec, version=1))
    else:
        save_recording(rec, path)
    done = subprocess.run(
        [sys.executable, "-c", _TRUNCATED, str(path), version, *how],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return path, done.stdout


@pytest.mark.parametrize("version", ["v1", "v1-reading", "v3", "v3-verify"])
def test_a_file_truncated_while_open_is_refused_not_a_crash(version, tmp_path):
    """Reading a mapped page past the end of a truncated file kills the process
    (SIGBUS): the file's size is checked before a record is read from the map."""
    path, out = _change_while_open(tmp_path, version)
    assert "refused:" in out and "the file changed on disk" in out, out
    assert str(path) in out


@pytest.mark.parametrize("version", ["v1", "v3"])
def test_a_file_replaced_at_its_path_is_still_read_from_the_map(version, tmp_path):
    """An editor or an atomic write puts a new file at the path: the map still holds the
    file that was opened, and its records read as they were."""
    _, out = _change_while_open(tmp_path, version, "replace")
    assert out.strip() == "read", out


def test_a_name_that_is_a_huge_integer_is_shown_as_its_digits():
    """A name written as an integer of hundreds of digits (orjson reads it as infinity,
    msgspec as an int orjson cannot write): the first paint shows its digits."""
    big = "1" + "0" * 400
    data = (
        b'{"format":"chassis.replay","format_version":1,"records":[{"seq":0,"kind":"tool","tool":'
        + big.encode()
        + b'},{"seq":1,"kind":"lifecycle","event":["x",'
        + big.encode()
        + b"]}]}"
    )
    sk = skeleton(data, source="big.json")
    assert sk is not None and sk.columns["name"] == [big, f'["x",{big}]']


async def test_rows_that_could_not_be_read_are_drawn_again_once_verified(tmp_path, monkeypatch):
    import threading

    from core.record.io import load_recording
    from inspector.app import InspectorApp
    from inspector.widgets.timeline_table import TimelineTable

    monkeypatch.setattr(sk_mod, "CHUNK_BYTES", 64)
    path = tmp_path / "v.json"
    data = _doc_bytes(make_recording())
    path.write_bytes(data)
    loaded = load_for_view(path, fast_open_bytes=0)
    raw = loaded.index._raw
    assert isinstance(raw, ChunkedRawRecords)
    start, _ = raw._bounds[2]
    k = raw._firsts[2]
    raw._data[start] = ord("x")  # the chunk no longer decodes (in the private map)
    gate = threading.Event()

    def verify():
        gate.wait(30)
        return load_recording(path)

    loaded.verify = verify
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(3):
            await pilot.pause()
        table = app.screen.query_one(TimelineTable)
        assert "invalid record" in table.render_line(1 + k).text
        raw._data[start] = data[start]
        gate.set()
        await app.workers.wait_for_complete()
        for _ in range(3):
            await pilot.pause()
        assert "invalid record" not in table.render_line(1 + k).text
