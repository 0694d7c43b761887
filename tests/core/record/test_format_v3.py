"""Format version 3: the message pool, references, the record index; the same keys and
digest as the logical records; damage in the pool, the index or the trailer is a
FormatError naming the place; reading a record on demand."""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.record.canonical import canonical_hash
from core.record.indexed import INDEX_COLUMNS, IndexedFile, index_row, is_indexed, layout_index
from core.record.io import (
    dumps_recording,
    load_indexed,
    load_recording,
    loads_recording,
    recording_to_dict,
    records_digest,
    save_recording,
)
from core.record.migrate import MIGRATIONS
from core.record.recording import (
    FORMAT_VERSION,
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolRecord,
    ToolResult,
    Usage,
)
from inspector.cli import main
from tests.builders import DATA, SAMPLES, make_recording, random_recording

FORMAT = DATA / "format"


def _growing(n: int, big: int = 0) -> Recording:
    """A run whose requests repeat the growing history (each step a model call, then a
    tool call); ``big``: characters of every third tool result."""
    history = [ChatMessage(role="system", content="You are a careful agent."), ChatMessage(role="user", content="go")]
    records = []
    for i in range(n):
        call_id = f"call_{i}"
        answer = ChatMessage(
            role="assistant", content=f"step {i}", tool_calls=[{"id": call_id, "name": "bash", "arguments": {"i": i}}]
        )
        req = ModelRequest(messages=list(history), options={"temperature": 0.5})
        m = ModelRecord(
            seq=2 * i,
            model="gpt-test",
            request=req,
            response=ModelResponse(message=answer, usage=Usage(input_tokens=10 * i, output_tokens=3)),
            at=f"2026-01-01T00:00:{i % 60:02d}Z",
        )
        m.key = m.compute_key()
        content = ("x" * big + str(i)) if big and i % 3 == 0 else f"out {i}"
        t = ToolRecord(
            seq=2 * i + 1, tool="bash", arguments={"i": i}, tool_call_id=call_id, result=ToolResult(content=content)
        )
        t.key = t.compute_key()
        records.extend([m, t])
        history = [*history, answer, ChatMessage(role="tool", content=content, tool_call_id=call_id)]
    return Recording(metadata={"task": "grow"}, records=records)


def golden_growing() -> Recording:
    """The recording of ``tests/data/format/v3-growing-history.json``: a growing
    history (history nodes), two big tool results (pooled), an integral float (the
    index's ``floats``)."""
    rec = _growing(6, big=1100)
    t = ToolRecord(seq=12, tool="measure", arguments={"ratio": 2.0, "n": 2}, result=ToolResult(content={"total": 45.0}))
    t.key = t.compute_key()
    rec.records.append(t)
    return rec


def _plain_digest(rec: Recording) -> str:
    return canonical_hash([r.to_json_obj() for r in rec.records])


# --------------------------------------------------------------------------- layout


def test_current_version_is_3_and_the_chain_reaches_it():
    assert FORMAT_VERSION == 3
    assert sorted(MIGRATIONS) == [0, 1, 2]


def test_the_writer_pools_each_message_once_and_indexes_every_record():
    rec = _growing(30, big=3000)
    data = dumps_recording(rec)
    assert is_indexed(data[:160])
    doc = orjson.loads(data)  # one JSON document
    assert doc["format_version"] == 3 and list(doc)[-1] == "index"
    pool = doc["pool"]
    distinct_bytes = {
        orjson.dumps(m.to_json_obj(), option=orjson.OPT_SORT_KEYS)
        for r in rec.records
        if type(r) is ModelRecord
        for m in (*r.request.messages, r.response.message)
    }
    big_results = {r.result.content for r in rec.records if type(r) is ToolRecord and len(str(r.result.content)) > 1024}
    nodes = {pid for pid, v in pool.items() if isinstance(v, dict) and set(v) == {"messages", "parent"}}
    assert len(nodes) == 30  # one history node per request: its parent's messages, then its new ones
    assert len(pool) == len(distinct_bytes) + len(big_results) + len(nodes)
    for pid, value in pool.items():  # ids are the hash of the value's canonical JSON
        assert canonical_hash(value)[7:].startswith(pid) and len(pid) == 16
    # a request's messages are a history node; each node lists only what is new
    models = [r for r in doc["records"] if r["kind"] == "model"]
    assert all(list(m["request"]["messages"]) == ["$history"] for m in models)
    last = pool[models[-1]["request"]["messages"]["$history"]]
    assert len(last["messages"]) == 2 and last["parent"] in nodes  # the answer and the tool result
    assert all(len(pool[n]["messages"]) <= 2 for n in nodes)
    index = doc["index"]["records"]
    for name, table in doc["index"]["strings"].items():  # coded columns: positions in a table
        index[name] = [table[c] for c in index[name]]
    calls: list = [None] * len(index["seq"])  # requested calls: flat ids and record positions
    for position, cid in zip(index["call_records"], index["call_ids"]):
        calls[position] = [*(calls[position] or []), cid]
    index["calls"] = calls
    assert index["seq"] == [r.seq for r in rec.records]
    assert [tuple(index[c][i] for c in INDEX_COLUMNS) for i in range(len(rec.records))] == [
        index_row(r) for r in rec.records
    ]
    # the byte ranges hold the records, one per line
    ends = [s - 2 for s in index["start"][1:]] + [doc["index"]["records_end"]]  # one record per line
    for i, (s, e) in enumerate(zip(index["start"], ends)):
        assert orjson.loads(data[s:e])["seq"] == rec.records[i].seq
        assert data[s - 1 : s] == b"\n"
    # much smaller than the logical document
    logical = orjson.dumps(recording_to_dict(rec))
    assert len(data) < 0.35 * len(logical)


def test_keys_and_digest_are_those_of_the_logical_records():
    rec = _growing(25, big=2000)
    data = dumps_recording(rec)
    back = loads_recording(data, verify_keys=True)
    assert back.digest == _plain_digest(rec) == records_digest([r.to_json_obj() for r in rec.records])
    assert back.records == rec.records
    assert [r.key for r in back.records] == [r.key for r in rec.records]
    for r in back.records:
        if type(r) is ModelRecord:
            assert r.key == canonical_hash({"kind": "model", "model": r.model, **r.request.identity()})


def test_loading_shares_one_message_object_per_pool_value():
    back = loads_recording(dumps_recording(_growing(10)))
    models = [r for r in back.records if type(r) is ModelRecord]
    assert models[5].request.messages[0] is models[9].request.messages[0]
    # an answer and the same message in the next request's history
    assert models[3].response.message is models[4].request.messages[-2]


@pytest.mark.parametrize("name", ["v1.json", "v2-meta-links.json"])
def test_older_versions_migrate_with_the_same_digest_and_keys(tmp_path, name):
    src = FORMAT / name
    old = orjson.loads(src.read_bytes())
    rec = load_recording(src, verify_keys=True)
    assert rec.format_version == 3 and rec.migrated_from == old["format_version"]
    assert rec.digest == old["digest"]
    out = tmp_path / "v3.json"
    assert main(["migrate", str(src), "-o", str(out)]) == 0
    migrated = load_recording(out, verify_keys=True)
    assert migrated.migrated_from is None and migrated.digest == old["digest"]
    assert [getattr(r, "key", None) for r in migrated.records] == [r.get("key") for r in old["records"]]
    assert [r.to_json_obj() for r in migrated.records] == old["records"]


def test_round_trips_v3_to_v2_to_v3():
    rec = make_recording()
    v3 = dumps_recording(rec)
    logical = recording_to_dict(loads_recording(v3))
    as_v2 = {**logical, "format_version": 2}
    back = Recording.from_dict(as_v2, verify_keys=True)
    assert back.migrated_from == 2 and back.records == rec.records and back.digest == logical["digest"]
    assert dumps_recording(back) == v3


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_v2_and_its_v3_encoding_agree(data):
    n = data.draw(st.integers(1, 6))
    rec = random_recording(
        lambda lo, hi: data.draw(st.integers(lo, hi)),
        lambda: data.draw(st.booleans()),
        lambda xs: data.draw(st.sampled_from(xs)),
        n,
    )
    v2_doc = {**recording_to_dict(rec), "format_version": 2}
    from_v2 = Recording.from_dict(v2_doc, verify_keys=True)
    v3 = dumps_recording(from_v2)
    from_v3 = loads_recording(v3, verify_keys=True)
    assert from_v3.digest == from_v2.digest == v2_doc["digest"]
    assert [getattr(r, "key", None) for r in from_v3.records] == [getattr(r, "key", None) for r in from_v2.records]
    assert from_v3.records == from_v2.records
    # and the whole-document path (a v3 file rewritten by another JSON tool) agrees
    reformatted = orjson.dumps(orjson.loads(v3), option=orjson.OPT_INDENT_2)
    assert not is_indexed(reformatted[:160])
    assert loads_recording(reformatted, verify_keys=True).records == from_v2.records


@settings(max_examples=40, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["$pool", "a", "content", "role"]), inner, max_size=3)
        ),
        max_leaves=12,
    )
)
def test_property_content_shaped_like_a_reference_is_read_back_as_recorded(value):
    """Recorded content that looks like ``{"$pool": …}`` is pooled by the writer, so a
    reader resolves it to itself."""
    t = ToolRecord(
        seq=0, tool="t", arguments={"x": value, "y": {"$pool": "0123456789abcdef"}}, result=ToolResult(content=value)
    )
    t.key = t.compute_key()
    rec = Recording(records=[t])
    back = loads_recording(dumps_recording(rec), verify_keys=True)
    assert back.records[0].arguments == {"x": value, "y": {"$pool": "0123456789abcdef"}}
    assert back.records[0].result.content == value
    assert back.digest == _plain_digest(rec)


def test_a_v2_document_with_reference_shaped_content_is_read_literally():
    t = ToolRecord(seq=0, tool="t", arguments={"$pool": "0123456789abcdef"}, result=ToolResult(content="ok"))
    t.key = t.compute_key()
    doc = {**recording_to_dict(Recording(records=[t])), "format_version": 2}
    back = Recording.from_dict(doc, verify_keys=True)
    assert back.records[0].arguments == {"$pool": "0123456789abcdef"}


def test_every_sample_recording_round_trips_with_its_digest():
    for path in sorted(SAMPLES.glob("*.json")):
        rec = load_recording(path)
        data = dumps_recording(rec)
        back = loads_recording(data, source=str(path), verify_keys=True)
        assert back.digest == rec.digest == _plain_digest(rec), path.name
        assert back.records == rec.records, path.name


# --------------------------------------------------------------------------- golden files


def test_the_writer_writes_the_v3_golden_exactly():
    """The layout is stable: a change to these bytes is a format change (docs/format.md)."""
    golden = (FORMAT / "v3-growing-history.json").read_bytes()
    rec = golden_growing()
    assert dumps_recording(rec) == golden
    back = loads_recording(golden, verify_keys=True)
    assert back.records == rec.records and back.digest == _plain_digest(rec)
    assert type(back.records[-1].arguments["ratio"]) is float and type(back.records[-1].arguments["n"]) is int
    doc = orjson.loads(golden)
    assert doc["index"]["records"]["floats"]["records"] == [[["/arguments/ratio", "/result/content/total"], [12]]]
    assert sum(1 for v in doc["pool"].values() if isinstance(v, dict) and "parent" in v) == 6


def test_migrating_the_v2_golden_writes_the_v3_golden(tmp_path):
    out = tmp_path / "v3.json"
    assert main(["migrate", str(FORMAT / "v2-meta-links.json"), "-o", str(out)]) == 0
    assert out.read_bytes() == (FORMAT / "v2-migrated-to-v3.json").read_bytes()
    old = orjson.loads((FORMAT / "v2-meta-links.json").read_bytes())
    rec = load_recording(out, verify_keys=True)
    assert rec.digest == old["digest"] and [r.to_json_obj() for r in rec.records] == old["records"]
    assert rec.links is not None and len(rec.links) == len(old["links"])


# --------------------------------------------------------------------------- reading on demand


def test_indexed_file_reads_header_index_and_one_record(tmp_path):
    rec = _growing(12)
    path = tmp_path / "run.json"
    save_recording(rec, path)
    f = IndexedFile.open(path)
    try:
        header = f.header()
        assert header["metadata"] == {"task": "grow"} and header["digest"] == rec.digest
        assert len(f) == len(rec.records)
        raw = f.raw_record(6)
        assert ModelRecord.model_validate(raw) == rec.records[6]
        full = load_indexed(f, keep=False)
        assert full.records == [] and full.digest == rec.digest
    finally:
        f.close()


def test_info_reads_the_index_and_says_what_a_full_load_says(tmp_path, capsys):
    rec = make_recording()
    path = tmp_path / "run.json"
    save_recording(rec, path)
    assert main(["info", str(path), "--json"]) == 0
    from_index = orjson.loads(capsys.readouterr().out)
    from inspector.cli.recording_cmds import recording_summary

    assert from_index == {"file": str(path), **orjson.loads(orjson.dumps(recording_summary(load_recording(path))))}


# --------------------------------------------------------------------------- damage


def _saved(tmp_path) -> tuple[bytes, dict]:
    rec = _growing(8, big=1500)
    data = dumps_recording(rec)
    return data, orjson.loads(data)


def _patch_index(data: bytes, doc: dict, change) -> bytes:
    """``data`` with its index replaced by ``change(index)`` (laid out by the writer's
    own ``layout_index``, the header's fixed-width offsets rewritten to match)."""
    m = re.match(
        rb'\{"format":"chassis\.replay","format_version":3,"index_offset":(\d+) *,"index_length":(\d+) *,', data
    )
    assert m is not None
    start = int(m[1])
    index = doc["index"]
    change(index)
    new = layout_index(index, index["records"], start)
    head = data[:start] + new + b"}\n"
    fixed = re.sub(
        rb'"index_length":\d+ *,', b'"index_length":' + str(len(new)).encode().ljust(20) + b",", head, count=1
    )
    return fixed


def _error(data: bytes) -> FormatError:
    with pytest.raises(FormatError) as info:
        loads_recording(data, source="run.json")
    return info.value


def test_stale_offsets_are_read_through_the_whole_document(tmp_path):
    """A file edited by hand (an outcome label added to the metadata, say) moves the
    index away from where the header says: it is read as a whole document, verified by
    its digest, without the index."""
    data, doc = _saved(tmp_path)
    rec = loads_recording(data)
    edited = data.replace(b'"metadata":{"task":"grow"}', b'"metadata":{"outcome":"failure","task":"grow"}', 1)
    assert edited != data
    back = loads_recording(edited, source="run.json", verify_keys=True)
    assert back.records == rec.records and back.digest == rec.digest
    assert back.metadata == {"outcome": "failure", "task": "grow"}
    moved = re.sub(rb'"index_offset":\d+ *,', b'"index_offset":' + b"99999999".ljust(20) + b",", data, count=1)
    assert loads_recording(moved).records == rec.records
    # a compact rewrite by another JSON tool (no padding) is a whole document too
    compact = orjson.dumps(orjson.loads(data))
    assert not is_indexed(compact[:160]) and loads_recording(compact).records == rec.records


def test_offsets_inside_the_file_that_miss_the_index(tmp_path):
    data, _ = _saved(tmp_path)
    with pytest.raises(FormatError) as info:
        IndexedFile(
            re.sub(rb'"index_offset":\d+ *,', b'"index_offset":' + b"200".ljust(20) + b",", data, count=1), "run.json"
        )
    assert info.value.path == "/index_offset" and "not where index_offset says" in info.value.reason


def test_bytes_after_the_index_are_refused(tmp_path):
    data, _ = _saved(tmp_path)
    err = _error(data.rstrip() + b' {"x":1}')
    assert err.path == "/index" and "last member" in err.reason


def test_a_damaged_index_column(tmp_path):
    data, doc = _saved(tmp_path)
    err = _error(_patch_index(data, doc, lambda ix: ix["records"]["status"].pop()))
    assert err.path == "/index/records/status" and "must be an array of" in err.reason


def test_an_index_row_that_disagrees_with_its_record(tmp_path):
    data, doc = _saved(tmp_path)

    def lie(ix):
        table = ix["strings"]["status"]
        if "error" not in table:
            table.append("error")
        ix["records"]["status"][3] = table.index("error")

    err = _error(_patch_index(data, doc, lie))
    assert err.record == 3 and err.path == "/index/records/status/3" and "disagrees with record 3" in err.reason


def test_an_index_range_that_points_at_another_record(tmp_path):
    data, doc = _saved(tmp_path)

    def swap(ix):
        r = ix["records"]
        r["seq"][4] = 999  # the range of record 4 said to hold another seq

    err = _error(_patch_index(data, doc, swap))
    assert err.record == 4 and err.path == "/index/records/seq/4"


def test_an_index_range_out_of_order(tmp_path):
    data, doc = _saved(tmp_path)

    def shuffle(ix):
        r = ix["records"]
        r["start"][2], r["start"][3] = r["start"][3], r["start"][2]

    err = _error(_patch_index(data, doc, shuffle))
    assert err.path.startswith("/index/records/start/")


def test_a_summary_that_disagrees_with_the_index(tmp_path):
    data, _ = _saved(tmp_path)
    at = data.index(b'"summary":{"counts":{"tool":') + len(b'"summary":{"counts":{"tool":')
    digit = data[at : at + 1]
    assert digit.isdigit()
    other = b"9" if digit != b"9" else b"8"  # same length: the offsets still hold
    err = _error(data[:at] + other + data[at + 1 :])
    assert err.path == "/summary" and "summary disagrees" in err.reason


def test_a_damaged_pool_value(tmp_path):
    data, doc = _saved(tmp_path)
    pid = next(iter(doc["pool"]))
    value = orjson.dumps(doc["pool"][pid], option=orjson.OPT_SORT_KEYS)
    assert value in data
    # same length, so the index's ranges still hold: a flipped letter
    damaged = value.replace(b"careful", b"carefuL") if b"careful" in value else value[:-2] + b"X" + value[-1:]
    err = _error(data.replace(value, damaged, 1))
    assert err.path == f"/pool/{pid}" and "does not hash to its id" in err.reason


def test_a_reference_to_a_missing_pool_value(tmp_path):
    data, doc = _saved(tmp_path)
    ref = re.search(rb'\{"\$pool":"([0-9a-f]{16})"\}', data[data.index(b'"records":[') :])
    assert ref is not None
    err = _error(data.replace(ref[0], b'{"$pool":"' + b"0" * 16 + b'"}'))
    assert "the pool does not hold" in err.reason and err.path.startswith("/records/")


def test_a_history_node_that_loops_is_refused():
    t = _growing(3)
    data = dumps_recording(t)
    doc = orjson.loads(data)
    node = doc["records"][-2]["request"]["messages"]["$history"]
    doc["pool"][node]["parent"] = node  # a loop (the pool is then also damaged)
    with pytest.raises(FormatError) as info:
        Recording.from_dict(doc, source="run.json")
    assert info.value.path.startswith("/pool/")


def test_numbers_keep_their_type_through_a_save():
    """Canonical JSON writes 45.0 as 45; a recording keeps what was recorded (an agent
    that prints a tool result must print it the same after a save), while keys and the
    digest stay those of the canonical form."""
    t = ToolRecord(
        seq=0, tool="t", arguments={"x": 1.0, "y": 1e21}, result=ToolResult(content={"total": 45.0, "pad": "z" * 2000})
    )
    t.key = t.compute_key()
    m = ModelRecord(
        seq=1,
        model="m",
        request=ModelRequest(
            messages=[ChatMessage(role="user", content=[{"type": "score", "value": 2.0}])], options={"temperature": 1.0}
        ),
        response=ModelResponse(message=ChatMessage(role="assistant", content=[{"type": "x", "v": 3.0}])),
    )
    m.key = m.compute_key()
    rec = Recording(records=[t, m])
    back = loads_recording(dumps_recording(rec), verify_keys=True)
    a, b = back.records
    assert type(a.arguments["x"]) is float and type(a.result.content["total"]) is float
    assert type(b.request.options["temperature"]) is float
    assert type(b.request.messages[0].content[0]["value"]) is float
    assert type(b.response.message.content[0]["v"]) is float
    assert back.digest == _plain_digest(rec) and [r.key for r in back.records] == [t.key, m.key]


def test_content_shaped_like_a_history_reference_is_read_as_recorded():
    t = ToolRecord(
        seq=0, tool="t", arguments={"$history": "0123456789abcdef"}, result=ToolResult(content={"$history": "ab" * 8})
    )
    t.key = t.compute_key()
    back = loads_recording(dumps_recording(Recording(records=[t])), verify_keys=True)
    assert back.records[0].arguments == {"$history": "0123456789abcdef"}
    assert back.records[0].result.content == {"$history": "ab" * 8}


def test_a_changed_record_breaks_the_digest(tmp_path):
    data, doc = _saved(tmp_path)
    bad = data.replace(b'"tool":"bash"', b'"tool":"bosh"', 1)
    err = _error(bad)
    assert err.path in ("/digest", "/index/records/name/1")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_property_any_damage_is_a_format_error_or_an_equal_recording(data):
    """A flipped byte anywhere — header, pool, records, index, trailer — is refused with
    a FormatError, or (a change the format does not seal: the header's metadata, the
    offsets' padding) still reads back the same records."""
    rec = _growing(5, big=1200)
    good = dumps_recording(rec)
    pos = data.draw(st.integers(0, len(good) - 1))
    byte = data.draw(st.integers(0, 255))
    bad = good[:pos] + bytes([byte]) + good[pos + 1 :]
    try:
        back = loads_recording(bad, source="run.json")
    except FormatError as exc:
        assert exc.file == "run.json"
        return
    assert back.records == rec.records


def _epoch_reference(at: str | None) -> float | None:
    """The index's ``at`` column as it was computed before (every ``Z`` replaced first)."""
    from datetime import datetime

    if not at:
        return None
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00").replace("z", "+00:00")).timestamp()
    except ValueError:
        return None


_STAMPS = st.datetimes(timezones=st.one_of(st.none(), st.timezones()), allow_imaginary=False).map(
    lambda d: d.isoformat()
)


@settings(max_examples=300, deadline=None)
@given(
    at=st.one_of(
        _STAMPS,
        _STAMPS.map(lambda s: s.replace("+00:00", "Z")),
        _STAMPS.map(lambda s: s.replace("+00:00", "z")),
        st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01 10:00:00z", "2026-13-01T00:00:00Z", "Z", "", "now"]),
        st.text(alphabet="0123456789-:TZz+. ", max_size=30),
    )
)
def test_property_epoch_seconds_reads_what_it_read_before(at):
    from core.record.indexed import epoch_seconds

    try:
        want: object = _epoch_reference(at)
    except (OverflowError, OSError) as exc:  # a date the platform cannot convert
        want = type(exc)
    try:
        got: object = epoch_seconds(at)
    except (OverflowError, OSError) as exc:
        got = type(exc)
    assert got == want


def test_a_full_load_leaves_no_garbage_cycle_for_its_gc_freeze_to_keep(tmp_path):
    """A load ends with ``gc.freeze()`` (core.record.io.gc_paused): a reference cycle
    left as garbage then stays forever, with all it reaches — here the record index,
    whose columns view pointed back at it, and through it the file's bytes (a quarter of
    the memory a 1 GB recording's load kept)."""
    import gc

    path = tmp_path / "g.json"
    save_recording(_growing(40, big=200), path)
    gc.unfreeze()
    gc.collect()
    rec = load_recording(path)
    gc.unfreeze()
    assert gc.collect() == 0  # nothing the load made is unreachable garbage
    assert len(rec.records) == 80
