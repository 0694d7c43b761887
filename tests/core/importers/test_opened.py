"""``core.importers.open_any`` returns a typed :class:`Opened`: the recording, its source
format, the run shown and every run of the file, incomplete, and typed warnings with no
command-line wording (each frontend phrases them)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from core.importers import NATIVE, ImportWarning, Opened, RunRef, TruncatedSourceError, open_any
from tests.builders import TESTS

DATA = TESTS / "data"
REAL = DATA / "real_traces"
NATIVE_FILE = DATA / "analysis" / "sample-agent-success.json"
INSPECT = REAL / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json"
OLD_INSPECT = REAL / "inspect_ai" / "log_tool_call_error.json"
TAU = REAL / "tau_bench" / "gpt-4o-airline.json"


def _no_cli_wording(ws: list[ImportWarning]) -> None:
    for w in ws:
        assert "chassis-inspector" not in w.message and "--" not in w.message, w
        assert w.code and w.code == w.code.lower() and " " not in w.code


def test_native_recording() -> None:
    o = open_any(NATIVE_FILE)
    assert isinstance(o, Opened) and o.source_format == NATIVE == "chassis" and not o.converted
    assert o.run_id is None and o.runs == [] and o.warnings == [] and not o.incomplete
    assert len(o.recording.records) > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.run_id = "x"  # type: ignore[misc]


def test_inspect_multi_sample_file_lists_its_runs(tmp_path: Path) -> None:
    doc = json.loads(INSPECT.read_text())
    second = json.loads(json.dumps(doc["samples"][0]))
    second["epoch"] = 2
    doc["samples"].append(second)
    two = tmp_path / "two.json"
    two.write_text(json.dumps(doc))
    o = open_any(two)
    assert o.source_format == "inspect_ai" and o.converted
    assert [(r.id, r.index) for r in o.runs] == [("1_epoch_1", 0), ("1_epoch_2", 1)]
    assert all(isinstance(r, RunRef) and "records" in r.label for r in o.runs)
    assert o.run_id == "1_epoch_1" and o.run_index == 0
    o2 = open_any(two, run=1)
    assert o2.run_id == "1_epoch_2" and o2.run_index == 1 and o2.runs == o.runs


def test_warnings_are_typed_and_folded_without_cli_wording() -> None:
    o = open_any(OLD_INSPECT)
    assert o.warning_count == len(o.all_warnings) == 12
    assert [w.count for w in o.warnings] == [1, 11]
    folded = o.warnings[1]
    assert folded.place == "samples[0].messages[0..10]" and folded.code == "arguments-raw"
    assert folded.message.startswith("the tool call's arguments are not in the source")
    assert all(w.count == 1 for w in o.all_warnings)
    _no_cli_wording(o.all_warnings + o.warnings)
    t = open_any(TAU, run="task3-trial2")
    assert len(t.runs) == 200 and t.run_id == "task3-trial2"
    _no_cli_wording(t.all_warnings)


def test_truncated_file_is_incomplete_with_a_warning(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    data = TAU.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TruncatedSourceError):
        open_any(cut)
    o = open_any(cut, recover=True)
    assert o.incomplete and o.source_format == "tau_bench" and 0 < len(o.runs) < 200
    first = o.warnings[0]
    assert first.code == "truncated" and first.place is None and first.count == 1
    assert "ends early" in first.message and "marked incomplete" in first.message
    _no_cli_wording(o.all_warnings)
