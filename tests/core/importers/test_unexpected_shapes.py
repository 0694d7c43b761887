"""A file an importer recognises but whose inner shape is unexpected: one-line FormatError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import FormatError
from core.importers import import_file
from inspector.cli import main
from tests.builders import TESTS

DATA = TESTS / "data" / "real_traces"


def _damage_openhands(doc):
    for ev in doc:
        meta = ev.get("tool_call_metadata") if isinstance(ev, dict) else None
        if meta and isinstance(meta.get("model_response"), dict):
            meta["model_response"]["choices"] = True
            return doc
    raise AssertionError("no tool_call_metadata in the fixture")


def _damage_inspect(doc):
    doc["samples"][0] = 3.5
    return doc


@pytest.mark.parametrize(
    "src, damage",
    [
        ("openhands/wrong_initial_state.json", _damage_openhands),
        ("inspect_ai/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json", _damage_inspect),
    ],
)
def test_unexpected_shape_is_a_format_error(tmp_path, capsys, src, damage):
    doc = json.loads((DATA / src).read_text())
    bad = tmp_path / Path(src).name
    bad.write_text(json.dumps(damage(doc)))
    with pytest.raises(FormatError) as e:
        import_file(bad)
    assert str(bad) in str(e.value) and "unexpected shape" in str(e.value)
    assert main(["info", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_truncated_cassette_is_reported_and_recoverable(tmp_path, capsys):
    from core.importers._source import TruncatedSourceError

    src = DATA / "vcr_cassettes" / "pydantic-ai__test_anthropic__test_multiple_parallel_tool_calls.yaml"
    data = src.read_bytes()
    cut = tmp_path / "cut.yaml"
    cut.write_bytes(data[: int(len(data) * 0.9)])
    with pytest.raises(TruncatedSourceError) as e:
        import_file(cut)
    assert "truncated" in str(e.value) and str(cut) in str(e.value)
    runs = import_file(cut, recover=True)
    assert len(runs) == 1 and runs[0].incomplete
    assert main(["import", str(cut), "-o", str(tmp_path / "out.json")]) == 2
    assert "truncated" in capsys.readouterr().err
