"""The skeleton decode of v1/v2 files (core.record.skeleton) against the plain path:
``index_row`` of every record of ``Recording.load``, and ``orjson.loads`` of the document."""

from __future__ import annotations

import gc
import json
import mmap
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.skeleton_bench import make_issue_shaped
from bench.synthetic import make_growing
from core.errors import FormatError
from core.record.canonical import model_key, tool_key
from core.record.indexed import INDEX_COLUMNS, index_row
from core.record.io import dumps_recording, loads_recording, parse_json, recording_to_dict
from core.record.recording import (
    LIFECYCLE_EVENTS,
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    SnapshotRecord,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from core.record.redaction import REDACTED, marker
from core.record.skeleton import (
    Skeleton,
    _columns,
    _raw_marker,
    _raw_marker_exact,
    _Record,
    _row_of_struct,
    row_of_object,
    skeleton,
)
from tests.builders import DATA, SAMPLES, make_recording

_RECORD_LIST = msgspec.json.Decoder(list[_Record])
FILES = sorted(SAMPLES.glob("*.json")) + [DATA / "format" / "v1.json", DATA / "format" / "v2-meta-links.json"]


def v2_bytes(rec: Recording, *, option: int = 0) -> bytes:
    """``rec`` as a version-2 document (the logical layout with ``format_version`` 2)."""
    doc = recording_to_dict(rec)
    doc["format_version"] = 2
    return orjson.dumps(doc, option=option)


def expected_columns(rec: Recording) -> dict[str, list[Any]]:
    rows = [index_row(r) for r in rec.records]
    return {name: [row[k] for row in rows] for k, name in enumerate(INDEX_COLUMNS)}


def decode(data: bytes, source: str = "f.json") -> Skeleton:
    sk = skeleton(data, source=source)
    assert sk is not None
    return sk


def check_against_plain_path(data: bytes, source: str = "f.json") -> Skeleton:
    """The skeleton of ``data`` equals the plain path's columns, header and records."""
    sk = decode(data, source)
    rec = loads_recording(data, source=source)
    assert sk.columns == expected_columns(rec)
    doc = orjson.loads(data)
    records = doc.pop("records")
    assert sk.header == doc
    assert len(sk.raw) == len(records)
    assert list(sk.raw) == records
    return sk


# --------------------------------------------------------------------------- real files


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sample_files(path: Path) -> None:
    data = path.read_bytes()
    assert orjson.loads(data)["format_version"] in (1, 2)
    sk = check_against_plain_path(data, str(path))
    # the loose row of the general path agrees with the validated one too
    rows = [index_row(r) for r in loads_recording(data).records]
    assert [row_of_object(r) for r in sk.raw] == rows


def test_samples_cover_the_statuses() -> None:
    """The sample files exercise more than 'ok' (otherwise the test above proves little)."""
    statuses = set()
    for path in FILES:
        statuses.update(decode(path.read_bytes()).columns["status"])
    assert {"ok", "error", "input"} <= statuses


@pytest.mark.parametrize("path", FILES[:6], ids=lambda p: p.name)
def test_sample_files_as_v2_layout_indented(path: Path) -> None:
    rec = Recording.load(path)
    check_against_plain_path(v2_bytes(rec, option=orjson.OPT_INDENT_2))


def test_mmap_input(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(v2_bytes(make_recording()))
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        sk = skeleton(mm, source=str(path))
        assert sk is not None
        assert sk.columns == expected_columns(make_recording())
        assert sk.raw[-1] == orjson.loads(path.read_bytes())["records"][-1]
        del sk


# --------------------------------------------------------------------------- generated


def test_synthetic_growing_history() -> None:
    rec = loads_recording(make_growing(300_000))
    check_against_plain_path(v2_bytes(rec))


def test_issue_shaped_history() -> None:
    check_against_plain_path(v2_bytes(make_issue_shaped(400_000)))


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_NAME = st.one_of(st.sampled_from(["bash", "gpt-x", "模型", "outil é", "🔧", ""]), _TEXT)
_AT = st.sampled_from(
    [None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456+02:00", "2026-03-04T05:06:07.5z", "2026-01-01 10:00:00Z"]
)
_MARKED = st.sampled_from(
    [
        "plain text",
        f"token {marker('jwt')} here",
        f"old {REDACTED}",
        "[REDACTED:Bad] not a marker",
        "[REDACTED",
        "naïve ünïcode",
    ]
)
_CONTENT = st.one_of(
    st.none(),
    _MARKED,
    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _MARKED}), max_size=2),
    st.dictionaries(_MARKED, _MARKED, max_size=2),
)
_ERROR = st.one_of(st.none(), st.builds(ErrorInfo, type=st.sampled_from(["timeout", "ValueError"]), message=_TEXT))
_META = st.one_of(
    st.none(),
    st.fixed_dictionaries({"live_model": st.one_of(_NAME, st.integers(0, 3))}),
    st.fixed_dictionaries({"source": _TEXT}),
)
_INTERRUPT = st.sampled_from(
    [
        None,
        "continue?",
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hi"},
        {"source": "human"},
        {"type": "user_message"},
        {"type": "approval"},
        [1, 2],
    ]
)
_DURATION = st.one_of(st.none(), st.floats(0, 100, allow_nan=False), st.integers(0, 100).map(float))


@st.composite
def records(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = []
    seq = draw(st.integers(0, 3))
    for _ in range(draw(st.integers(0, 8))):
        common: dict[str, Any] = {
            "seq": seq,
            "at": draw(_AT),
            "run_id": draw(st.one_of(st.none(), _TEXT)),
            "replayed": draw(st.booleans()),
            "live_fallback": draw(st.booleans()),
            "meta": draw(_META),
        }
        kind = draw(st.sampled_from(["model", "tool", "interrupt", "snapshot", "lifecycle"]))
        if kind == "model":
            name = draw(_NAME)
            req = ModelRequest(messages=[ChatMessage(role="user", content=draw(_MARKED))])
            response = None
            if draw(st.booleans()):
                ids = draw(st.lists(_TEXT, max_size=2))
                response = ModelResponse(
                    message=ChatMessage(
                        role="assistant",
                        content=draw(
                            st.one_of(st.none(), _MARKED, st.lists(st.just({"type": "text", "text": REDACTED})))
                        ),
                        tool_calls=[ToolCall(id=i, name="t") for i in ids] if ids or draw(st.booleans()) else None,
                    ),
                    usage=draw(st.one_of(st.none(), st.builds(Usage, input_tokens=st.integers(0, 99)))),
                )
            out.append(
                ModelRecord(
                    **common,
                    model=name,
                    key=model_key(name, req),
                    request=req,
                    response=response,
                    error=draw(_ERROR),
                    duration_seconds=draw(_DURATION),
                )
            )
        elif kind == "tool":
            name = draw(_NAME)
            out.append(
                ToolRecord(
                    **common,
                    tool=name,
                    key=tool_key(name, {}),
                    tool_call_id=draw(st.one_of(st.none(), _TEXT)),
                    result=ToolResult(content=draw(_CONTENT), error=draw(_ERROR), redacted=draw(st.booleans())),
                    duration_seconds=draw(_DURATION),
                )
            )
        elif kind == "interrupt":
            out.append(InterruptRecord(**common, value=draw(_INTERRUPT)))
        elif kind == "snapshot":
            out.append(SnapshotRecord(**common, generation_id=draw(st.one_of(st.none(), st.just(""), _TEXT))))
        else:
            out.append(LifecycleRecord(**common, event=draw(st.sampled_from(LIFECYCLE_EVENTS))))
        seq += draw(st.integers(1, 3))
    return out


def _integral_durations(doc: dict[str, Any]) -> None:
    """Write integral durations as JSON integers (``3``, not ``3.0``), as other writers do."""
    for r in doc["records"]:
        d = r.get("duration_seconds")
        if type(d) is float and d.is_integer():
            r["duration_seconds"] = int(d)


@settings(max_examples=50, deadline=None)
@given(
    recs=records(),
    version=st.sampled_from([1, 2]),
    indent=st.booleans(),
    escape=st.booleans(),
    integral=st.booleans(),
)
def test_generated_recordings(recs: list[Any], version: int, indent: bool, escape: bool, integral: bool) -> None:
    if version == 1:  # no meta in version 1
        recs = [r.model_copy(update={"meta": None}) for r in recs]
    rec = Recording(metadata={"task": "ünï"}, session=SessionInfo(producer="test"), records=recs)
    doc = recording_to_dict(rec)
    doc["format_version"] = version
    if integral:
        _integral_durations(doc)
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if indent else 0)
    if escape:  # the same document, with a marker's "[" written as an escape
        data = data.replace(b"[REDACTED", b"\\u005bREDACTED")
    check_against_plain_path(data)


# --------------------------------------------------------------------------- errors


def _doc(records: list[Any], **extra: Any) -> bytes:
    return orjson.dumps(
        {"format": "chassis.replay", "format_version": 1, "metadata": {}, "session": {}, **extra, "records": records}
    )


_LIFECYCLE = {"seq": 0, "kind": "lifecycle", "event": "harness.shutdown"}


@pytest.mark.parametrize(
    ("records", "record", "path", "reason"),
    [
        ([_LIFECYCLE, 3], 1, "/records/1", "record is not a JSON object"),
        ([_LIFECYCLE, ["x"]], 1, "/records/1", "record is not a JSON object"),
        ([{"seq": 0, "kind": "thought"}], 0, "/records/0/kind", "unknown record kind 'thought'"),
        ([{"seq": 0, "kind": ["model"]}], 0, "/records/0/kind", "unknown record kind ['model']"),
        ([{"seq": 0}], 0, "/records/0/kind", "unknown record kind None"),
        ([{"seq": "0", "kind": "lifecycle"}], 0, "/records/0/seq", "seq must be an integer"),
        ([{"seq": True, "kind": "lifecycle"}], 0, "/records/0/seq", "seq must be an integer"),
        ([{"kind": "lifecycle"}], 0, "/records/0/seq", "seq must be an integer"),
        ([_LIFECYCLE, dict(_LIFECYCLE)], 1, "/records/1/seq", "seq 0 does not increase (previous record has seq 0)"),
        # a record of another shape elsewhere sends the file to the general path: same checks
        (
            [{"seq": 0, "kind": "tool", "result": 5}, {"seq": 1, "kind": "x"}],
            1,
            "/records/1/kind",
            "unknown record kind 'x'",
        ),
    ],
)
def test_record_errors_name_the_place(records: list[Any], record: int, path: str, reason: str) -> None:
    with pytest.raises(FormatError) as err:
        skeleton(_doc(records), source="bad.json")
    assert err.value.file == "bad.json"
    assert err.value.record == record
    assert err.value.path == path
    assert err.value.reason.startswith(reason)


@pytest.mark.parametrize("cut", [1, 10, 200])
def test_truncated_json_is_reported_as_parse_json_does(cut: int) -> None:
    data = v2_bytes(make_recording())[:-cut]
    with pytest.raises(FormatError) as plain:
        parse_json(data, source="t.json")
    with pytest.raises(FormatError) as err:
        skeleton(data, source="t.json")
    assert str(err.value) == str(plain.value)
    assert err.value.line is not None and "truncated" in err.value.reason


@pytest.mark.parametrize("data", [b'{"format": "chassis.replay", "records": [1,]}', b"", b'{"a": 1} x', b"[1, 2"])
def test_malformed_json_is_reported_as_parse_json_does(data: bytes) -> None:
    with pytest.raises(FormatError) as plain:
        parse_json(data, source="m.json")
    with pytest.raises(FormatError) as err:
        skeleton(data, source="m.json")
    assert str(err.value) == str(plain.value)


def test_records_not_an_array() -> None:
    with pytest.raises(FormatError) as err:
        skeleton(_doc({"a": 1}), source="r.json")  # type: ignore[arg-type]
    assert err.value.path == "/records"


def test_no_records_member_is_an_empty_recording() -> None:
    data = orjson.dumps({"format": "chassis.replay", "format_version": 2, "metadata": {}})
    sk = decode(data)
    assert sk.columns == {name: [] for name in INDEX_COLUMNS}
    assert len(sk.raw) == 0
    assert sk.header == {"format": "chassis.replay", "format_version": 2, "metadata": {}}


@pytest.mark.parametrize(
    "data",
    [
        dumps_recording(make_recording()),  # version 3: the record index reads it
        orjson.dumps({"format": "chassis.replay", "format_version": 7, "records": []}),
        orjson.dumps({"format": "chassis.replay", "format_version": "2", "records": []}),
        orjson.dumps({"format": "other", "format_version": 2, "records": []}),
        orjson.dumps({"format_version": 2, "records": [3]}),
        orjson.dumps({"chassis_version": "0.8.1", "interactions": []}),
        orjson.dumps([{"format": "chassis.replay"}]),
    ],
)
def test_other_documents_are_left_to_the_whole_document_path(data: bytes) -> None:
    assert skeleton(data, source="o.json") is None


def test_shapes_are_left_to_verification() -> None:
    """Members of the wrong type never raise here; their rows are the loose ones."""
    recs = [
        {"seq": 0, "kind": "tool", "tool": "t", "result": 5, "duration_seconds": "slow"},
        {"seq": 1, "kind": "model", "model": 3, "response": "x", "error": None},
        {"seq": 2, "kind": "model", "model": "m", "response": {"message": {"tool_calls": "abc"}, "usage": [1]}},
        {"seq": 3, "kind": "model", "model": "m", "response": {"message": {"tool_calls": [1, {"id": "c"}]}}},
        {"seq": 4, "kind": "tool", "tool": "t", "result": {"error": None, "content": REDACTED}, "at": 5},
        {"seq": 5, "kind": "interrupt", "value": {"role": "user"}, "meta": [1]},
    ]
    sk = decode(_doc(recs))
    rows = [row_of_object(r) for r in recs]
    assert sk.columns == {name: [row[k] for row in rows] for k, name in enumerate(INDEX_COLUMNS)}
    assert sk.columns["status"] == ["ok", "ok", "ok", "ok", "redacted", "input"]
    assert sk.columns["calls"][3] == [None, "c"]


def test_another_top_level_member_is_kept_in_the_header() -> None:
    rec = make_recording()
    doc = recording_to_dict(rec)
    doc["format_version"] = 2
    doc["x-note"] = {"by": "a tool"}
    data = orjson.dumps(doc)
    sk = decode(data)
    assert sk.header["x-note"] == {"by": "a tool"}
    assert sk.columns == expected_columns(rec)
    assert list(sk.raw) == doc["records"]


def test_raw_records_are_parsed_on_access() -> None:
    rec = make_recording()
    data = v2_bytes(rec)
    records = orjson.loads(data)["records"]
    sk = decode(data)
    assert sk.raw[-1] == records[-1]
    assert sk.raw[1:3] == records[1:3]
    assert bytes(sk.raw.slice_of(0)) == orjson.dumps(records[0])
    assert sk.raw[0] is not sk.raw[0]  # not cached: the caller keeps what it validated
    with pytest.raises(IndexError):
        sk.raw[len(records)]


def test_bytes_orjson_cannot_read_in_a_skipped_payload_name_the_record() -> None:
    """msgspec skips a payload without decoding its strings: bytes that are not UTF-8
    there surface when the record is read, as a FormatError naming it."""
    data = v2_bytes(make_recording()).replace(b"You are terse.", b"You are \xff\xfe.", 1)
    sk = decode(data)
    bad = next(i for i, k in enumerate(sk.columns["kind"]) if k == "model")
    with pytest.raises(FormatError) as err:
        sk.raw[bad]
    assert err.value.record == bad
    assert err.value.path == f"/records/{bad}"


def test_bytes_that_are_not_utf8_in_a_value_the_timeline_reads_name_the_record() -> None:
    recs = [_LIFECYCLE, {"seq": 1, "kind": "tool", "tool": "t", "result": {"content": "XX"}}]
    data = _doc(recs).replace(b'"XX"', b'"\xff\xfe"')
    with pytest.raises(FormatError) as err:
        skeleton(data, source="u.json")
    assert (err.value.record, err.value.path) == (1, "/records/1")


def test_an_integer_beyond_64_bits_is_left_to_verification() -> None:
    recs = [{"seq": 0, "kind": "tool", "tool": "t", "result": {"content": ["XX", REDACTED]}}]
    data = _doc(recs).replace(b'"XX"', str(2**70).encode())
    sk = decode(data)
    assert sk.columns["status"] == ["redacted"]
    assert sk.raw[0]["result"]["content"] == [2**70, REDACTED]


# --------------------------------------------------------------------------- fast paths
# _columns inlines _row_of_struct and checks markers by a bytes search first
# (_raw_marker); each is compared with the plain function it replaces.


def _raw_of(value_json: bytes) -> msgspec.Raw:
    raw: msgspec.Raw = msgspec.json.decode(b'{"v":' + value_json + b"}", type=dict[str, msgspec.Raw])["v"]
    return raw


_MARKER_PARTS = st.sampled_from(
    ["[REDACTED]", "[REDACTED:jwt]", "[REDACTED", "REDACTED]", "[REDACTED:Bad]", "\\u005bREDACTED]", "é", "\\\\", "x"]
)
_TEXTS = st.lists(st.one_of(_MARKER_PARTS, st.text(max_size=8)), max_size=6).map("".join)


@settings(max_examples=50, deadline=None)
@given(
    value=st.one_of(
        _TEXTS,
        st.lists(_TEXTS, max_size=3),
        st.dictionaries(_TEXTS, _TEXTS, max_size=3),
        st.none(),
        st.integers(-(2**63), 2**63 - 1),
    ),
    escape=st.booleans(),
)
def test_raw_marker_fast_path_agrees_with_the_exact_check(value: Any, escape: bool) -> None:
    """Strings with and without markers, escapes (an escaped ``[`` spelling a marker,
    every non-ASCII character escaped when ``escape``) and non-ASCII text."""
    data = orjson.dumps(value)
    if escape:
        data = json.dumps(value, ensure_ascii=True).encode()
    raw = _raw_of(data)
    assert _raw_marker(raw) == _raw_marker_exact(raw)
    spelled = _raw_of(data.replace(b"[REDACTED", b"\\u005bREDACTED"))
    assert _raw_marker(spelled) == _raw_marker_exact(spelled)


def test_raw_marker_fast_path_still_rejects_bytes_that_are_not_utf8() -> None:
    raw = _raw_of(b'"ok \xff\xfe"')
    with pytest.raises(msgspec.DecodeError):
        _raw_marker_exact(raw)
    with pytest.raises(msgspec.DecodeError):
        _raw_marker(raw)


def _struct_rows(data: bytes) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The columns by the inlined loop, and by _row_of_struct (the plain path)."""
    records = _RECORD_LIST.decode(data)
    rows = [_row_of_struct(r) for r in records]
    plain = {name: [row[k] for row in rows] for k, name in enumerate(INDEX_COLUMNS)}
    return _columns(list(records), [], "f.json"), plain


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_inlined_columns_equal_the_plain_rows_on_sample_files(path: Path) -> None:
    records = orjson.dumps(orjson.loads(path.read_bytes()).get("records", []))
    fast, plain = _struct_rows(records)
    assert fast == plain


def test_inlined_columns_equal_the_plain_rows_on_every_kind() -> None:
    recs = [
        {"seq": 0, "kind": "snapshot", "at": "2026-01-01T00:00:00Z"},
        {"seq": 1, "kind": "lifecycle", "event": "run.start", "at": "2026-01-01T00:00:00.5+02:00"},
        {"seq": 2, "kind": "model", "model": "m", "meta": {"live_model": "n"}, "duration_seconds": 2},
        {"seq": 3, "kind": "model", "model": "m", "error": {"type": "x"}, "response": None},
        {
            "seq": 4,
            "kind": "model",
            "model": "m",
            "replayed": True,
            "response": {
                "message": {"content": "a [REDACTED:jwt] b", "tool_calls": [{"id": "c1"}, {"id": "c2"}]},
                "usage": {"input_tokens": 3, "output_tokens": 4},
            },
        },
        {"seq": 5, "kind": "tool", "tool": "t", "tool_call_id": "c1", "result": {"content": ["[REDACTED]"]}},
        {"seq": 6, "kind": "tool", "tool": "t", "result": {"content": "ok", "error": None}, "live_fallback": True},
        {"seq": 7, "kind": "tool", "tool": "t", "result": {"error": {"message": "boom"}}, "duration_seconds": 0.5},
        {"seq": 8, "kind": "interrupt", "value": {"action": "approve"}, "at": "not a time"},
    ]
    fast, plain = _struct_rows(orjson.dumps(recs))
    assert fast == plain
    assert fast["status"][4] == "redacted" and fast["status"][3] == "error"


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled: bool) -> None:
    """skeleton() pauses the cyclic collector while it decodes, and restores its state
    after a decode and after an error."""
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        decode(v2_bytes(make_recording()))
        assert gc.isenabled() is enabled
        with pytest.raises(FormatError):
            skeleton(b'{"format": "chassis.replay", "format_version": 2, "records": [{"kind": "x"}]}', source="f")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
