"""Logs written by a current inspect-ai (0.3.285): zstd ``.eval`` entries and the
``events_data.messages`` pool of JSON logs.

The files in ``tests/data/importers/inspect-0.3.285/`` were written by the real
``inspect-ai`` 0.3.285 package running ``make_logs.py`` there (Inspect's mock model, a
tool, two samples × two epochs): ``python make_logs.py eval`` and ``python make_logs.py
json`` in a virtual environment with ``pip install inspect-ai==0.3.285``.
"""

from __future__ import annotations

import zipfile as stdlib_zipfile
from pathlib import Path

import pytest

from core.importers import import_file
from core.importers._source import ZIP_ZSTANDARD
from core.record.recording import ModelRecord, ToolRecord
from tests.builders import DATA

LOGS = DATA / "importers" / "inspect-0.3.285"


def by_id(path: Path, **kw):
    return {r.run_id: r for r in import_file(path, **kw)}


def test_the_eval_log_really_uses_zstd_entries():
    with pytest.raises(NotImplementedError):
        # what Python 3.11's zipfile does with them — the crash users saw
        stdlib_zipfile.ZipFile(LOGS / "adder.eval").read("header.json")
    from core.importers._source import zipfile

    methods = {i.compress_type for i in zipfile.ZipFile(LOGS / "adder.eval").infolist()}
    assert methods == {ZIP_ZSTANDARD}


@pytest.mark.parametrize("name", ["adder.eval", "adder.json"])
def test_current_logs_import_every_sample_with_its_messages(name):
    runs = by_id(LOGS / name)
    assert sorted(runs) == ["s1_epoch_1", "s1_epoch_2", "s2_epoch_1", "s2_epoch_2"]
    for run in runs.values():
        assert not any("message pool" in w.message for w in run.warnings), run.warnings
        models = [r for r in run.recording.records if isinstance(r, ModelRecord)]
        assert models, run.run_id
        first = models[0].request.messages
        assert [m.role for m in first] == ["system", "user"]
        assert first[0].text == "You add numbers."
        # every later request carries the whole transcript so far
        for earlier, later in zip(models, models[1:]):
            assert len(later.request.messages) > len(earlier.request.messages)
    s1 = runs["s1_epoch_1"].recording.records
    assert [type(r).__name__ for r in s1] == ["ModelRecord", "ToolRecord"] * 3 + ["ModelRecord"]
    tools = [r for r in s1 if isinstance(r, ToolRecord)]
    assert all(t.tool == "add" and t.arguments == {"x": 1, "y": 2} for t in tools)
    last = s1[-1]
    assert isinstance(last, ModelRecord) and last.response is not None
    assert last.response.message.text == "The answer is 3."
    assert [m.role for m in last.request.messages] == ["system", "user"] + ["assistant", "tool"] * 3


def test_json_and_eval_logs_of_the_same_task_give_the_same_requests():
    a = by_id(LOGS / "adder.eval")
    b = by_id(LOGS / "adder.json")
    for run_id in a:
        texts_a = [
            [m.text for m in r.request.messages] for r in a[run_id].recording.records if isinstance(r, ModelRecord)
        ]
        texts_b = [
            [m.text for m in r.request.messages] for r in b[run_id].recording.records if isinstance(r, ModelRecord)
        ]
        # the two logs are two runs of the mock model: same prompts, same first request
        assert texts_a[0] == texts_b[0]


def test_a_truncated_zstd_eval_recovers_the_complete_samples(tmp_path):
    data = (LOGS / "adder.eval").read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(data[: len(data) * 2 // 3])
    runs = import_file(cut, recover=True)
    assert runs and all(r.incomplete for r in runs)
    for run in runs:
        assert any(isinstance(r, ModelRecord) for r in run.recording.records)
