"""The run order of a multi-run file: by sample id, then epoch, compared naturally; the
one order ``import --list``, ``import --run N``, ``open --run N`` and the app's run
picker use, so index N is the same run everywhere. Opening another run of an opened
file reuses the runs parsed once."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import SourceImportError
from core.importers import (
    ImportedRun,
    import_file,
    natural_key,
    open_any,
    order_runs,
    run_score,
    select_run,
)
from core.record.recording import Recording, SessionInfo
from inspector.cli import main
from tests.builders import TESTS

ADDER = TESTS / "data" / "importers" / "inspect-0.3.285" / "adder.json"
TAU = TESTS / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"

#: sample ids in file order: numbers out of order, a markup-looking string
SAMPLE_IDS: list[Any] = [10, 2, 1, 11, 3, "[red]x[/]"]


def write_inspect_log(path: Path, sample_ids: list[Any] = SAMPLE_IDS, epochs: tuple[int, ...] = (2, 1)) -> Path:
    """An Inspect AI log (from the real inspect-ai 0.3.285 one) with a sample per
    ``(epoch, id)``, epochs outermost in file order; sample 3 of epoch 1 is scored ``I``
    and has a sample error."""
    doc = json.loads(ADDER.read_text())
    base = doc["samples"]
    samples = []
    for epoch in epochs:
        for j, sid in enumerate(sample_ids):
            s = copy.deepcopy(base[j % 2])
            s["id"], s["epoch"] = sid, epoch
            if sid == 3 and epoch == 1:
                s["scores"] = {"includes": {"value": "I", "answer": "4", "explanation": "wrong"}}
                s["error"] = {
                    "message": "RuntimeError: the sandbox exited with code 137 while running add(x=1, y=2): "
                    "out of memory (limit 512 MiB); the sample was cancelled after 3 retries, "
                    "the last at 12:54:21 (see the traceback for the container's log)",
                    "traceback": "Traceback (most recent call last): ...",
                }
            samples.append(s)
    doc["samples"] = samples
    path.write_text(json.dumps(doc))
    return path


def _run(run_id: str, **metadata: Any) -> ImportedRun:
    rec = Recording(session=SessionInfo(mode="record", fallback="error"), metadata=metadata, records=[])
    return ImportedRun(run_id=run_id, recording=rec)


# ---------------------------------------------------------------------- the key


def test_natural_key_compares_numbers_as_numbers() -> None:
    ids = ["s10", "S2", "s1", "10", "2", "a", "s2b"]
    assert sorted(ids, key=natural_key) == ["2", "10", "a", "s1", "S2", "s2b", "s10"]
    assert natural_key(2) == natural_key("2") and natural_key(2) < natural_key(10)


def test_runs_sort_by_sample_then_epoch_and_the_rest_keep_file_order() -> None:
    runs = [
        _run("c"),
        _run("10_e2", sample_id=10, epoch=2),
        _run("2_e10", sample_id=2, epoch=10),
        _run("a"),
        _run("2_e2", sample_id=2, epoch=2),
        _run("10_e1", sample_id=10, epoch=1),
        _run("t1", task_id=1, trial=0),  # tau-bench's keys
    ]
    assert [r.run_id for r in order_runs(runs)] == ["t1", "2_e2", "2_e10", "10_e1", "10_e2", "c", "a"]
    assert order_runs(order_runs(runs)) == order_runs(runs)  # stable


def test_select_run_counts_indexes_in_run_order() -> None:
    runs = [_run("b", sample_id=2, epoch=1), _run("a", sample_id=1, epoch=1), _run("3", sample_id=3, epoch=1)]
    assert select_run(runs, None, source="x").run_id == "a"
    assert select_run(runs, 0, source="x").run_id == "a"
    assert select_run(runs, "1", source="x").run_id == "b"
    assert select_run(runs, -1, source="x").run_id == "3"
    # a str is an id first; an int is always an index
    assert select_run(runs, "3", source="x").run_id == "3"
    assert select_run(runs, 2, source="x").run_id == "3"
    with pytest.raises(SourceImportError, match=r"no run '7' \(runs: a, b, 3; or an index 0..2\)"):
        select_run(runs, "7", source="x")


def test_run_score_shapes() -> None:
    assert run_score(_run("i", scores={"includes": {"value": "C"}, "f1": {"value": 0.5}}).recording) == (
        "includes C, f1 0.5"
    )
    assert run_score(_run("t", reward=1.0).recording) == "reward 1.0"
    assert run_score(_run("s", score={"a": 1}).recording) == 'score {"a":1}'
    assert run_score(_run("n").recording) is None


# ---------------------------------------------------------------------- real files


def test_inspect_log_runs_in_natural_order(tmp_path: Path) -> None:
    src = write_inspect_log(tmp_path / "many.json")
    o = open_any(src)
    ids = [r.id for r in o.runs]
    assert ids == [
        "1_epoch_1",
        "1_epoch_2",
        "2_epoch_1",
        "2_epoch_2",
        "3_epoch_1",
        "3_epoch_2",
        "10_epoch_1",
        "10_epoch_2",
        "11_epoch_1",
        "11_epoch_2",
        "[red]x[/]_epoch_1",
        "[red]x[/]_epoch_2",
    ]
    assert [r.index for r in o.runs] == list(range(12))
    # file positions: epoch 2 first in the file
    assert o.runs[0].file_index == 8 and o.runs[1].file_index == 2
    assert o.run_id == "1_epoch_1" and o.run_index == 0
    failed = o.runs[4]
    assert (failed.sample_id, failed.epoch, failed.outcome, failed.score) == ("3", "1", "failure", "includes I")
    assert failed.records == 7 and failed.label == "failure · includes I · 7 records"
    assert o.runs[10].sample_id == "[red]x[/]"


def test_with_run_reuses_the_runs_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_inspect_log(tmp_path / "many.json")
    o = open_any(src)
    import core.importers as importers

    def no_second_parse(*args: object, **kwargs: object) -> list[ImportedRun]:
        raise AssertionError("the file was parsed again")

    monkeypatch.setattr(importers, "import_file", no_second_parse)
    src.unlink()  # not read again either
    o6 = o.with_run(6)
    assert o6.run_id == "10_epoch_1" and o6.run_index == 6 and o6.runs == o.runs
    assert o6.recording.metadata["source"]["index"] == o.runs[6].file_index
    assert o6.recording.digest is not None
    assert o.with_run("[red]x[/]_epoch_2").run_index == 11
    with pytest.raises(SourceImportError, match="no run 'nope'"):
        o.with_run("nope")
    monkeypatch.undo()
    native = open_any(TESTS / "data" / "analysis" / "sample-agent-success.json")
    with pytest.raises(SourceImportError, match="holds one run"):
        native.with_run(0)


def test_tau_bench_trials_of_a_task_are_together() -> None:
    o = open_any(TAU)
    assert [r.id for r in o.runs[:5]] == [
        "task0-trial0",
        "task0-trial1",
        "task0-trial2",
        "task0-trial3",
        "task1-trial0",
    ]
    assert o.runs[-1].id == "task49-trial3" and len(o.runs) == 200
    assert open_any(TAU, run=3).run_id == "task0-trial3"
    assert o.runs[5].score == "reward 1.0" and o.runs[5].outcome == "success"


def test_cli_list_and_run_use_the_same_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_inspect_log(tmp_path / "many.json")
    expected = [r.id for r in open_any(src).runs]
    assert main(["import", str(src), "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["index"], r["run"]) for r in rows] == list(enumerate(expected))
    assert main(["import", str(src), "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in listed] == [[str(i), rid] for i, rid in enumerate(expected)]
    for n in (0, 4, 6, 11):
        out = tmp_path / f"run{n}.json"
        assert main(["import", str(src), "--run", str(n), "-o", str(out)]) == 0
        capsys.readouterr()
        assert json.loads(out.read_text())["metadata"]["source"]["run"] == expected[n]
        assert open_any(src, run=n).run_id == expected[n]
    assert [r.run_id for r in order_runs(import_file(src))] == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="0123456789", min_size=1, max_size=6000), min_size=1, max_size=8),
    st.sampled_from(["", "s"]),
)
def test_natural_key_orders_numbers_of_any_length(digits, prefix) -> None:
    """Numbers of thousands of digits (beyond what int() reads from a string by
    default) order as numbers, leading zeros ignored."""
    import sys

    ids = [prefix + d for d in digits]
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # the reference order, for the test only
    try:
        expected = sorted(ids, key=lambda i: int(i.removeprefix("s")))
        got = [int(i.removeprefix("s")) for i in sorted(ids, key=natural_key)]
        assert got == [int(i.removeprefix("s")) for i in expected]
    finally:
        sys.set_int_max_str_digits(old)


def test_a_sample_id_of_5000_digits_lists(tmp_path, capsys) -> None:
    doc = json.loads(ADDER.read_text())
    doc["samples"][0]["id"] = "1" * 5000
    p = tmp_path / "x.json"
    p.write_text(json.dumps(doc))
    assert main(["import", "--list", str(p)]) == 0
    assert "1111111111" in capsys.readouterr().out
