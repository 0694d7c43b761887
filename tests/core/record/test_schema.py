"""The committed JSON Schema matches the models."""

import pytest

from core.record.schema import SCHEMA_PATH, render


def test_committed_schema_matches_models():
    assert SCHEMA_PATH.read_bytes() == render(), (
        "core/record/schema/recording.schema.json drifted from the pydantic models; "
        "run `python -m core.record.schema` and commit the result"
    )


def test_schema_names_every_record_kind():
    text = SCHEMA_PATH.read_text()
    for name in ("ToolRecord", "ModelRecord", "InterruptRecord", "SnapshotRecord", "LifecycleRecord"):
        assert name in text


def _schema() -> dict:
    import orjson

    return orjson.loads(SCHEMA_PATH.read_bytes())


def test_saved_recordings_validate_against_the_schema(saved):
    import jsonschema
    import orjson

    from core.record.recording import Recording

    schema = _schema()
    saved_doc = orjson.loads(saved.read_bytes())  # version 3: pool, references, index
    assert saved_doc["pool"] and saved_doc["index"]
    jsonschema.validate(saved_doc, schema)
    logical = Recording.load(saved).to_dict()  # no pool, no index
    assert "pool" not in logical
    jsonschema.validate(logical, schema)
    for doc in (saved_doc, logical):
        bad = orjson.loads(orjson.dumps(doc))
        bad["records"][0]["kind"] = "telepathy"
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_schema_checks_the_version_3_members(saved):
    import jsonschema
    import orjson

    schema = _schema()
    doc = orjson.loads(saved.read_bytes())
    i, model = next((i, r) for i, r in enumerate(doc["records"]) if r["kind"] == "model")
    assert set(model["request"]["messages"]) == {"$history"}  # a history node of the pool
    assert set(model["response"]["message"]) == {"$pool"}  # a reference
    for edit in (
        lambda d: d["records"][i]["request"].update(messages=[{"$pool": "not-an-id"}]),
        lambda d: d["records"][i]["request"].update(messages=[{"$pool": "0" * 16, "role": "user"}]),
        lambda d: d["records"][i]["request"].update(messages={"$history": "nope"}),
        lambda d: d["records"][i]["response"].update(message={"$pool": "0" * 16, "x": 1}),
        lambda d: d["pool"].update({"XYZ": 1}),
        lambda d: d.update(index_offset=-1),
        lambda d: d.update(index=[]),
    ):
        bad = orjson.loads(orjson.dumps(doc))
        edit(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
