"""Format version 2: per-record ``meta``, run-level ``links``, migration 1 → 2 (golden files).

The goldens are version-1 and version-2 documents; files are now written as version 3
(docs/format.md § "Version 3"), which keeps the records, keys and digest, so the tests
compare loaded records and digests with the goldens rather than saved bytes."""

from __future__ import annotations

import copy
import json

import jsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import CanonicalizationError, FormatError
from core.record.canonical import model_key, tool_key
from core.record.io import dumps_recording, recording_to_dict, records_digest, save_recording
from core.record.migrate import MIGRATIONS, migrate, migrate_1_to_2, migrate_2_to_3
from core.record.recording import FORMAT_VERSION, LINK_RELS, ModelRecord, Recording, RunLink, ToolRecord
from core.record.redaction import SecretRedactor, marker
from core.record.schema import SCHEMA_PATH
from inspector.cli import main
from tests.builders import DATA, make_recording

FORMAT = DATA / "format"
V1 = FORMAT / "v1.json"
V1_TO_V2 = FORMAT / "v1-migrated-to-v2.json"
V2 = FORMAT / "v2-meta-links.json"


def test_current_version_is_3():
    assert FORMAT_VERSION == 3
    assert sorted(MIGRATIONS) == [0, 1, 2]


# --------------------------------------------------------------------------- golden files


def test_v1_golden_loads_as_current_and_keeps_its_digest():
    raw = orjson.loads(V1.read_bytes())
    assert raw["format_version"] == 1
    rec = Recording.load(V1, verify_keys=True)
    assert rec.format_version == 3 and rec.migrated_from == 1
    assert rec.digest == raw["digest"]  # migration 1 → 2 leaves the sealed records as written
    assert [r.to_json_obj() for r in rec.records] == raw["records"]
    assert all(r.meta is None for r in rec.records) and rec.links is None


def test_migration_1_to_2_is_exactly_the_golden():
    expected = V1_TO_V2.read_bytes()
    raw = orjson.loads(V1.read_bytes())
    snapshot = orjson.dumps(raw)
    assert orjson.dumps(migrate_1_to_2(raw)) == expected
    assert orjson.dumps(raw) == snapshot  # pure: the input is untouched
    doc, original = migrate(raw)  # on to the current version: 2 → 3 changes only the version
    assert original == 1 and orjson.dumps(doc) == orjson.dumps(migrate_2_to_3(orjson.loads(expected)))
    assert orjson.dumps(raw) == snapshot
    # saved as version 3: the same records and digest as the golden
    golden = Recording.load(V1_TO_V2)
    again = Recording.loads(Recording.load(V1).dumps(), verify_keys=True)
    assert again.records == golden.records and again.digest == golden.digest == raw["digest"]
    assert again.metadata == golden.metadata and again.session == golden.session


def test_migrate_command_writes_the_golden_records(tmp_path, capsys):
    out = tmp_path / "v3.json"
    assert main(["migrate", str(V1), "-o", str(out)]) == 0
    assert f"{V1}: format version 1 → 3; wrote {out} (6 records)" in capsys.readouterr().out
    # the migrated file is current: it loads without migrating, with the golden's records and digest
    migrated = Recording.load(out, verify_keys=True)
    golden = Recording.load(V1_TO_V2)
    assert migrated.migrated_from is None and migrated.format_version == 3
    # a current file: nothing to migrate, and the message says so
    again = tmp_path / "again.json"
    assert main(["migrate", str(out), "-o", str(again)]) == 0
    assert f"{out}: already format version 3; rewrote it as {again} (6 records)" in capsys.readouterr().out
    assert migrated.digest == orjson.loads(V1.read_bytes())["digest"] == golden.digest
    assert migrated.records == golden.records and migrated.metadata == golden.metadata


def test_chain_legacy_to_v1_to_v2_to_v3():
    legacy = orjson.loads((DATA / "legacy" / "chassis-0.8.1-recording.json").read_bytes())
    v1 = MIGRATIONS[0](legacy)
    assert v1["format_version"] == 1
    v2 = MIGRATIONS[1](v1)
    assert v2["format_version"] == 2
    v3 = MIGRATIONS[2](v2)
    doc, original = migrate(legacy)
    assert original == 0 and doc == v3 and doc["format_version"] == 3
    rec = Recording.from_dict(legacy)
    assert rec.format_version == 3 and rec.migrated_from == 0 and rec.digest is None


def test_v2_golden_loads_with_meta_and_links():
    rec = Recording.load(V2, verify_keys=True)
    assert rec.migrated_from == 2 and rec.format_version == 3
    assert {r.kind for r in rec.records if r.meta} == {"tool", "model", "interrupt", "snapshot", "lifecycle"}
    model = next(r for r in rec.records if isinstance(r, ModelRecord))
    assert model.meta == {
        "observed": False,
        "http_status": 200,
        "endpoint": "/v1/chat/completions",
        "action_parser": "tool_calls",
    }
    tool = next(r for r in rec.records if isinstance(r, ToolRecord))
    assert tool.meta["observed"] is True
    assert [(link.rel, link.target, link.seq) for link in rec.links] == [
        ("sub-run", "r1-explore", 3),
        ("forked-from", "base-run.json", 2),
        ("x-example.review", "urn:example:review:7", None),
    ]
    assert rec.links[2].rel not in LINK_RELS  # extension rels are kept as written
    assert rec.links[2].meta == {"reviewer": "ana"}


def test_v2_golden_round_trips_through_version_3(tmp_path):
    golden = orjson.loads(V2.read_bytes())
    rec = Recording.load(V2)
    # the logical document is the golden's, version aside: nothing is lost or added
    assert recording_to_dict(rec) == migrate_2_to_3(golden)
    out = tmp_path / "again.json"
    digest = save_recording(rec, out, indent=True)  # indent is accepted; v3 is one record per line
    assert out.read_bytes() == dumps_recording(rec) == dumps_recording(rec, indent=True)
    again = Recording.load(out, verify_keys=True)
    assert again.digest == digest == golden["digest"]
    assert again.records == rec.records and again.links == rec.links and again.metadata == rec.metadata
    assert recording_to_dict(again) == recording_to_dict(rec)
    assert save_recording(again, tmp_path / "third.json") == digest
    assert (tmp_path / "third.json").read_bytes() == out.read_bytes()  # stable bytes


def test_goldens_validate_against_the_committed_schema():
    schema = orjson.loads(SCHEMA_PATH.read_bytes())  # the current version's: goldens migrated to it
    for path in (V1_TO_V2, V2):
        jsonschema.validate(migrate(orjson.loads(path.read_bytes()))[0], schema)
        jsonschema.validate(orjson.loads(Recording.load(path).dumps()), schema)  # saved as version 3
    with pytest.raises(jsonschema.ValidationError):  # the schema is the current version's
        jsonschema.validate(orjson.loads(V2.read_bytes()), schema)
    bad = migrate(orjson.loads(V2.read_bytes()))[0]
    bad["records"][0]["meta"] = [1]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    bad = migrate(orjson.loads(V2.read_bytes()))[0]
    del bad["links"][0]["target"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_info_and_validate_print_the_version(capsys):
    assert main(["validate", str(V1), str(V2)]) == 0
    out = capsys.readouterr().out
    assert f"{V1}: ok (format version 1, migrates to 3; 6 records)" in out
    assert f"{V2}: ok (format version 2, migrates to 3; 6 records)" in out
    assert main(["info", str(V1)]) == 0
    assert "format          chassis.replay version 1 (read as version 3 in memory;" in capsys.readouterr().out
    assert main(["info", str(V2), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format_version"] == 3 and info["migrated_from"] == 2


# --------------------------------------------------------------------------- keys, digest


def test_meta_and_links_are_not_part_of_any_key():
    plain = {r.seq: r for r in Recording.load(V1).records}
    rec = Recording.load(V2, verify_keys=True)
    for r in rec.records:
        if isinstance(r, ToolRecord):
            assert r.key == tool_key(r.tool, r.arguments) == plain[r.seq].key
        elif isinstance(r, ModelRecord):
            assert r.key == model_key(r.model, r.request) == plain[r.seq].key
        if isinstance(r, (ToolRecord, ModelRecord)):
            assert r.model_copy(update={"meta": {"anything": [1, 2]}}).compute_key() == r.key


def test_digest_seals_meta_but_not_links(tmp_path):
    doc = orjson.loads(V2.read_bytes())
    doc["links"][0]["title"] = "renamed"
    assert Recording.from_dict(doc).links[0].title == "renamed"  # header, like metadata
    doc = orjson.loads(V2.read_bytes())
    doc["records"][2]["meta"]["http_status"] = 500
    with pytest.raises(FormatError, match="digest mismatch"):
        Recording.from_dict(doc, source="run.json")


# --------------------------------------------------------------------------- redaction


def test_secrets_in_meta_and_links_are_redacted_on_save(tmp_path):
    rec = make_recording()
    rec.records[3].meta = {"api_key": "sk-live-0123456789", "upstream": "token=hunter2-secret-value"}
    rec.records[2].meta = {"headers": [["Authorization", "Bearer abc"], ["Accept", "json"]]}
    rec.links = [
        RunLink(rel="source", target="https://x.invalid/run?sig=hunter2-secret-value", meta={"password": "pw1234"})
    ]
    key_before = rec.records[3].key
    out = tmp_path / "r.json"
    save_recording(rec, out, redactor=SecretRedactor(secrets=["hunter2-secret-value"]))
    text = out.read_text()
    for secret in ("sk-live-0123456789", "hunter2-secret-value", "Bearer abc", "pw1234"):
        assert secret not in text
    loaded = Recording.load(out, verify_keys=True)
    # markers name the kind removed (docs/format.md, "Redaction")
    assert loaded.records[3].meta == {"api_key": marker("api-key"), "upstream": f"token={marker('token')}"}
    assert loaded.records[2].meta == {"headers": [["Authorization", marker("authorization")], ["Accept", "json"]]}
    assert loaded.links[0].target == f"https://x.invalid/run?sig={marker('signature')}"
    assert loaded.links[0].meta == {"password": marker("password")}
    # scrubbing meta is not scrubbing the result, and never changes the key
    assert loaded.records[3].result.redacted is False
    assert loaded.records[3].key == key_before


# --------------------------------------------------------------------------- bad input


def _v2_doc() -> dict:
    doc = orjson.loads(V2.read_bytes())
    del doc["digest"]
    return doc


def _set_record_meta(value):
    def f(doc):
        doc["records"][2]["meta"] = value

    return f


def _set_links(value):
    def f(doc):
        doc["links"] = value

    return f


def _edit_link(**changes):
    def f(doc):
        for k, v in changes.items():
            if v is ...:
                del doc["links"][1][k]
            else:
                doc["links"][1][k] = v

    return f


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _set_record_meta([1, 2]),
            "at record 2, /records/2/meta: meta must be a JSON object, found an array (got [1, 2])",
        ),
        (_set_record_meta("x"), "at record 2, /records/2/meta: meta must be a JSON object, found a string (got 'x')"),
        (
            _set_links({"rel": "fork"}),
            "at /links: links must be a JSON array of link objects, found an object (got {'rel': 'fork'})",
        ),
        (_set_links([7]), "at /links/0: a link must be a JSON object, found an integer (got 7)"),
        (_edit_link(rel=...), "at /links/1/rel: missing required field 'rel'"),
        (_edit_link(target=...), "at /links/1/target: missing required field 'target'"),
        (_edit_link(target=""), "at /links/1/target: String should have at least 1 character (got '')"),
        (
            _edit_link(rel="Forked From"),
            "at /links/1/rel: rel 'Forked From' is not a link relation token (RFC 8288 reg-rel-type: a lowercase "
            "letter, then lowercase letters, digits, '.' or '-') (got 'Forked From')",
        ),
        (_edit_link(meta=3), "at /links/1/meta: meta must be a JSON object, found an integer (got 3)"),
        (_edit_link(href="x"), "at /links/1/href: unknown field 'href'"),
        (_edit_link(seq=-1), "at /links/1/seq: Input should be greater than or equal to 0 (got -1)"),
        (
            _set_record_meta({"inode": 2**60}),
            "at record 2, /records/2/meta/inode: value cannot be canonicalized: integer 1152921504606846976 "
            "is outside the I-JSON safe range ±(2**53-1)",
        ),
        (
            _edit_link(meta={"n": 2**60}),
            "at /links/1/meta/n: value cannot be canonicalized: integer 1152921504606846976 "
            "is outside the I-JSON safe range ±(2**53-1)",
        ),
    ],
)
def test_bad_meta_and_links_are_format_errors(tmp_path, edit, message):
    doc = _v2_doc()
    edit(doc)
    p = tmp_path / "run.json"
    p.write_bytes(orjson.dumps(doc))
    with pytest.raises(FormatError) as e:
        Recording.load(p)
    assert str(e.value) == f"{p} {message}"


def test_null_meta_and_links_mean_absent():
    doc = _v2_doc()
    doc["links"] = None
    doc["records"][0]["meta"] = None
    rec = Recording.from_dict(doc)
    assert rec.links is None and rec.records[0].meta is None
    saved = recording_to_dict(rec)
    assert "links" not in saved and "meta" not in saved["records"][0]


def test_saving_uncanonicalizable_meta_or_links_fails_before_writing(tmp_path):
    out = tmp_path / "r.json"
    for value, reason in ((2**60, "outside the I-JSON safe range"), (float("nan"), "not a JSON number")):
        rec = make_recording()
        rec.records[1].meta = {"inode": value}
        with pytest.raises(CanonicalizationError, match=reason) as e:
            save_recording(rec, out)
        assert e.value.path == "/1/meta/inode" and not out.exists()
    rec = make_recording()
    rec.links = [RunLink(rel="fork", target="t", meta={"x": float("inf")})]
    with pytest.raises(CanonicalizationError) as e:
        save_recording(rec, out)
    assert e.value.path == "/links/0/meta/x" and not out.exists()


# --------------------------------------------------------------------------- property

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_args = st.dictionaries(st.text(max_size=5), _json, max_size=3)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.text(max_size=12)}
)


_value = _json.filter(lambda v: v is not None)  # a null field is omitted when saved


@st.composite
def _v1_documents(draw):
    """A v1 document in saved form (so saving it again writes the same records)."""
    records = []
    seq = -1
    for kind in draw(st.lists(st.sampled_from(["tool", "model", "interrupt", "snapshot", "lifecycle"]), max_size=8)):
        seq += draw(st.integers(1, 3))
        base = {"seq": seq, "kind": kind, "replayed": draw(st.booleans()), "live_fallback": False}
        if draw(st.booleans()):
            base["run_id"] = draw(st.sampled_from(["r1", "r2"]))
        if kind == "tool":
            name, args = draw(st.sampled_from(["ls", "search", "get_weather"])), draw(_args)
            rec = {
                **base,
                "key": tool_key(name, args),
                "tool": name,
                "arguments": args,
                "result": {"content": draw(_value), "redacted": False},
            }
        elif kind == "model":
            request = {
                "messages": draw(st.lists(_message, max_size=3)),
                "tools": [],
                "stop": [],
                "options": draw(_args),
            }
            rec = {**base, "key": model_key("m", request), "model": "m", "request": request}
        elif kind == "interrupt":
            rec = {**base, "value": draw(_value)}
        elif kind == "snapshot":
            rec = {**base, "composition": draw(_args)}
        else:
            rec = {**base, "event": "generation.publish", "details": draw(_args)}
        records.append(rec)
    doc = {
        "format": "chassis.replay",
        "format_version": 1,
        "metadata": draw(_args),
        "session": {"mode": "record", "fallback": "error"},
        "records": records,
    }
    if draw(st.booleans()):
        doc["digest"] = records_digest(records)
    return doc


@settings(max_examples=80, deadline=None)
@given(_v1_documents())
def test_migrating_any_v1_recording_keeps_every_key_and_content(v1):
    before = copy.deepcopy(v1)
    rec = Recording.from_dict(v1, verify_keys=True)
    assert v1 == before  # migration is pure
    assert rec.format_version == 3 and rec.migrated_from == 1
    dumped = rec.to_dict()  # the logical document (no pool, no index)
    assert dumped["format_version"] == 3
    assert dumped["records"] == v1["records"]  # every record, its key included, as written
    assert [r.get("key") for r in dumped["records"]] == [r.get("key") for r in v1["records"]]
    assert dumped["digest"] == records_digest(v1["records"]) == v1.get("digest", dumped["digest"])
    rest = {k: v for k, v in dumped.items() if k not in ("format_version", "digest")}
    assert rest == {k: v for k, v in v1.items() if k not in ("format_version", "digest")}
    again = Recording.from_dict(dumped, verify_keys=True)
    assert again.migrated_from is None and again.digest == dumped["digest"]
    saved = Recording.loads(rec.dumps(), verify_keys=True)  # the version-3 bytes
    assert saved.records == rec.records and saved.digest == dumped["digest"]
