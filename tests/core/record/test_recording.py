"""Recording model: round trip, FormatError cases, migration, atomic save."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.record.io import atomic_write_bytes, recording_to_dict
from core.record.migrate import migrate
from core.record.recording import ModelRecord, Recording, ToolRecord
from tests.builders import DATA, ROOT, make_recording


def _doc(saved: Path) -> dict:
    """The logical document of a saved recording (no pool, no index): edits to it are
    loaded through the whole-document path, the same checks as any damaged file."""
    return Recording.load(saved).to_dict()


def _write(tmp_path: Path, doc, name="bad.json") -> Path:
    p = tmp_path / name
    p.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return p


def test_round_trip_equal_and_digest_stable(tmp_path, recording):
    p1 = tmp_path / "a.json"
    d1 = recording.save(p1)
    loaded = Recording.load(p1)
    assert loaded.digest == d1
    assert loaded.records == make_recording().records
    assert loaded.metadata == recording.metadata
    p2 = tmp_path / "b.json"
    assert loaded.save(p2) == d1
    assert p1.read_bytes() == p2.read_bytes()


def test_loads_and_from_dict(saved):
    data = saved.read_bytes()
    a = Recording.loads(data)
    b = Recording.from_dict(orjson.loads(data))
    assert a.records == b.records and a.digest == b.digest


def test_counts_and_first_error(recording):
    assert recording.counts_by_kind() == {"tool": 1, "model": 2, "interrupt": 1, "snapshot": 1, "lifecycle": 1}
    fe = recording.first_error()
    assert isinstance(fe, ToolRecord) and fe.seq == 3


def test_save_is_atomic_when_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_bytes(b"old content")

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(target, b"new content")
    assert target.read_bytes() == b"old content"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left


def test_save_survives_kill_mid_write(tmp_path):
    """A process killed while saving leaves the previous file intact (never half-written)."""
    target = tmp_path / "r.json"
    make_recording().save(target)
    before = target.read_bytes()
    code = (
        "import os, sys\n"
        "from core.record.io import atomic_write_bytes\n"
        "import core.record.io as io\n"
        "real = os.fsync\n"
        "def slow(fd):\n"
        "    os.kill(os.getpid(), 9)\n"
        "os.fsync = slow\n"
        f"atomic_write_bytes({str(target)!r}, b'{{\"half\": ' * 1000)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT)
    assert proc.returncode == -9
    assert target.read_bytes() == before
    Recording.load(target)


# --------------------------------------------------------------------------- FormatError


def test_newer_version(tmp_path, saved):
    doc = _doc(saved)
    doc["format_version"] = 7
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert str(e.value) == f"{p} at /format_version: format version 7 is newer than this inspector supports (3)"


def test_malformed_json_has_line_and_column(tmp_path):
    p = _write(tmp_path, b'{\n  "format": "chassis.replay",\n  "format_version": 1,,\n}')
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.line == 3 and e.value.column is not None
    assert str(p) in str(e.value) and "malformed JSON" in str(e.value) and "line 3" in str(e.value)


def test_truncated_file(tmp_path, saved):
    data = saved.read_bytes()
    p = _write(tmp_path, data[: len(data) // 2])
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert "truncated" in str(e.value) and str(p) in str(e.value)


def test_empty_file(tmp_path):
    p = _write(tmp_path, b"")
    with pytest.raises(FormatError, match="file is empty"):
        Recording.load(p)


def test_digest_mismatch(tmp_path, saved):
    doc = _doc(saved)
    doc["records"][3]["result"]["content"] = "tampered"
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert "digest mismatch" in str(e.value) and "/digest" in str(e.value)


def test_unknown_record_kind(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][2]["kind"] = "telepathy"
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 2
    assert "unknown record kind 'telepathy'" in str(e.value)
    assert "record 2" in str(e.value) and e.value.path == "/records/2/kind"


def test_missing_required_field(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    del doc["records"][3]["tool"]
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 3 and e.value.path == "/records/3/tool"
    assert "missing required field 'tool'" in str(e.value)


def test_wrong_type(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][2]["response"]["usage"]["input_tokens"] = "many"
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 2
    assert e.value.path == "/records/2/response/usage/input_tokens"
    assert "'many'" in str(e.value)


def test_unknown_field_is_rejected_not_dropped(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][3]["reslt"] = {}
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError, match="unknown field 'reslt'"):
        Recording.load(p)


def test_non_increasing_seq(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][4]["seq"] = 3
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 4 and e.value.path == "/records/4/seq"
    assert "seq 3 does not increase (previous record has seq 3)" in str(e.value)


def test_duplicate_tool_call_id(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    dup = dict(doc["records"][3], seq=6)
    doc["records"].append(dup)
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 6
    assert "tool_call_id 'call_1' is answered twice (records 3 and 6)" in str(e.value)


def test_value_that_cannot_be_canonicalized(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][3]["arguments"] = {"path": "/tmp", "inode": 2**60}
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 3
    assert e.value.path == "/records/3/arguments/inode"
    assert "cannot be canonicalized" in str(e.value)


def test_key_mismatch(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][3]["arguments"] = {"path": "/etc"}
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.path == "/records/3/key" and "does not match the canonical key" in str(e.value)


def test_not_a_recording(tmp_path):
    p = _write(tmp_path, {"hello": "world"})
    with pytest.raises(FormatError, match="not a Chassis recording"):
        Recording.load(p)
    p2 = _write(tmp_path, [1, 2], name="list.json")
    with pytest.raises(FormatError, match="expected a JSON object"):
        Recording.load(p2)


def test_bad_timestamp(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][0]["at"] = "yesterday"
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError, match="not an RFC 3339 timestamp"):
        Recording.load(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        Recording.load(tmp_path / "nope.json")
    with pytest.raises(FormatError, match="is a directory"):
        Recording.load(tmp_path)


# --------------------------------------------------------------------------- migration


def test_legacy_migration():
    rec = Recording.load(DATA / "legacy" / "chassis-0.8.1-recording.json")
    assert rec.format_version == 3
    assert [r.kind for r in rec.records] == ["snapshot", "model", "tool", "interrupt", "lifecycle"]
    model = rec.records[1]
    assert isinstance(model, ModelRecord)
    assert model.request.stop == ["\n\nUser:", "END"]
    assert model.request.options == {"temperature": 0}
    assert model.request.tools == [{"name": "get_weather"}]
    assert model.response.message.tool_calls[0].arguments == {"city": "Oslo"}
    assert model.response.usage.input_tokens == 31 and model.response.usage.output_tokens == 9
    assert model.key == model.compute_key()  # legacy key replaced by the canonical one
    tool = rec.records[2]
    assert isinstance(tool, ToolRecord)
    assert tool.tool == "get_weather" and tool.tool_call_id == "call_1"
    assert tool.result.error.message == "HTTP 503 from weather service"
    assert tool.duration_seconds == 1.5
    assert tool.at == "2024-06-01T10:00:01Z"
    assert rec.metadata["migrated_from"] == "chassis 0.8.1"
    assert rec.metadata["dataset"] == "smoke"


def test_migration_is_pure_and_idempotent():
    raw = orjson.loads((DATA / "legacy" / "chassis-0.8.1-recording.json").read_bytes())
    snapshot = orjson.dumps(raw)
    once, original = migrate(raw)
    assert original == 0
    assert orjson.dumps(raw) == snapshot  # input untouched
    twice, v = migrate(once)
    assert v == 3 and twice == once


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["get_weather", "ls", "search"]),
            st.dictionaries(st.text(max_size=4), st.integers(-1000, 1000) | st.text(max_size=8), max_size=3),
            st.one_of(st.none(), st.text(max_size=10)),
        ),
        max_size=8,
    )
)
def test_migrated_legacy_tools_always_validate(calls):
    doc = {
        "chassis_version": "0.8.1",
        "interactions": [
            {"type": "tool", "name": n, "args": a, "output": "ok", "error": e, "timestamp": 1_700_000_000 + i}
            for i, (n, a, e) in enumerate(calls)
        ],
    }
    rec = Recording.from_dict(doc)
    assert [r.arguments for r in rec.records] == [a for _, a, _ in calls]
    again = Recording.from_dict(recording_to_dict(rec))
    assert again.records == rec.records


def test_repeated_history_messages_share_one_frozen_instance(saved):
    rec = Recording.load(saved)
    m1, m2 = rec.records[2], rec.records[4]
    assert m1.request.messages[0] is m2.request.messages[0]  # same system message, validated once
    with pytest.raises(pydantic.ValidationError):
        m1.request.messages[0].content = "changed"  # frozen: sharing is safe


def test_history_messages_with_one_content_but_other_calls_stay_distinct(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    history = doc["records"][4]["request"]["messages"]
    first_call, answer = history[2], history[3]
    assert first_call["content"] == "" and answer["tool_call_id"] == "call_1"
    second_call = {**first_call, "tool_calls": [{**first_call["tool_calls"][0], "id": "call_2"}]}
    history += [second_call, {**answer, "tool_call_id": "call_2"}, dict(first_call)]
    doc["records"][4].pop("key")  # recomputed on load
    rec = Recording.load(_write(tmp_path, doc))
    loaded = rec.records[4].request.messages
    assert [c.id for c in loaded[2].tool_calls] == ["call_1"]
    assert [c.id for c in loaded[4].tool_calls] == ["call_2"]
    assert [loaded[3].tool_call_id, loaded[5].tool_call_id] == ["call_1", "call_2"]
    assert loaded[6] is loaded[2]  # an equal message reuses the validated instance


def test_invalid_message_in_history_is_located(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][4]["request"]["messages"][1]["tool_call_id"] = 42
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 4
    assert e.value.path == "/records/4/request/messages/1/tool_call_id"


def test_strict_validation_recomputes_keys_even_with_a_valid_digest(tmp_path, saved):
    from core.record.io import records_digest

    doc = _doc(saved)
    doc["records"][3]["key"] = "sha256:" + "0" * 64
    doc["digest"] = records_digest(doc["records"])  # re-sealed by some other tool
    p = _write(tmp_path, doc)
    Recording.load(p)  # the digest vouches for the bytes ...
    with pytest.raises(FormatError, match="does not match the canonical key"):
        Recording.load(p, verify_keys=True)  # ... and `validate` checks every key


def test_records_digest_equals_reference_canonical_hash(saved):
    import hashlib

    import rfc8785

    from core.record.io import records_digest

    raw = _doc(saved)["records"]
    raw[2]["request"]["options"]["temperature"] = 0.7
    raw[2]["request"]["messages"][1]["content"] = "emoji \U0001f600 and \ue000 private use"
    raw[3]["arguments"]["\ue001key"] = 1e21
    assert records_digest(raw) == "sha256:" + hashlib.sha256(rfc8785.dumps(raw)).hexdigest()


def test_integer_beyond_64_bits_is_rejected_not_rounded(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    text = orjson.dumps(doc).decode().replace('"path":"/tmp"}', '"path":"/tmp","inode": 18446744073709551616}', 1)
    p = _write(tmp_path, text.encode())
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert "18446744073709551616" in str(e.value) and "safe range" in str(e.value)
    assert e.value.path.endswith("/arguments/inode")


@pytest.mark.parametrize(
    "where, value, reason",
    [
        ("seq", "3", "valid integer"),
        ("seq", False, "valid integer"),
        ("replayed", "yes", "valid boolean"),
        ("duration_seconds", "1.5", "valid number"),
        ("duration_seconds", -1.0, "greater than or equal to 0"),
        ("at", "2026-01-01T00:00:02", "no offset"),
        ("at", "2026-01-01", "no time of day"),
    ],
)
def test_wrong_types_are_not_coerced(tmp_path, saved, where, value, reason):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][3][where] = value
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.record == 3 and e.value.path == f"/records/3/{where}"
    assert reason in str(e.value)


def test_non_string_role_is_a_format_error(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][2]["request"]["messages"][0]["role"] = []
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.path == "/records/2/request/messages/0/role"


def test_negative_tokens_rejected(tmp_path, saved):
    doc = _doc(saved)
    doc.pop("digest")
    doc["records"][2]["response"]["usage"]["output_tokens"] = -5
    p = _write(tmp_path, doc)
    with pytest.raises(FormatError, match="greater than or equal to 0"):
        Recording.load(p)


@pytest.mark.parametrize("digest", [True, False])
def test_huge_integer_in_metadata_is_rejected_with_or_without_digest(tmp_path, saved, digest):
    doc = _doc(saved)
    if not digest:
        doc.pop("digest")
    text = orjson.dumps(doc).decode().replace('"metadata":{', '"metadata":{"x":12345678901234567890123,', 1)
    p = _write(tmp_path, text.encode())
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert e.value.path == "/metadata/x" and "12345678901234567890123" in str(e.value)


def test_saving_uncanonicalizable_metadata_fails_before_writing(tmp_path, recording):
    from core.errors import CanonicalizationError

    recording.metadata["n"] = 2**60
    p = tmp_path / "r.json"
    with pytest.raises(CanonicalizationError) as e:
        recording.save(p)
    assert e.value.path == "/metadata/n"
    assert not p.exists()
