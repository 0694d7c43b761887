"""The committed JSON Schema matches the models."""

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


def test_saved_recordings_validate_against_the_schema(saved):
    import jsonschema
    import orjson

    schema = orjson.loads(SCHEMA_PATH.read_bytes())
    jsonschema.validate(orjson.loads(saved.read_bytes()), schema)
    bad = orjson.loads(saved.read_bytes())
    bad["records"][0]["kind"] = "telepathy"
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:  # pragma: no cover
        raise AssertionError("schema accepted an unknown record kind")
