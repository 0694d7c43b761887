"""CLI: batch — the table, the output files, bad files (exit 2), recorded names shown as
data, --jobs and --ray-address, and what --ray-address says without Ray."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

from core.analysis.batch import SECTIONS
from core.effects.batch import run_batch
from core.effects.ray_support import RAY_INSTALL
from core.record.io import load_recording, save_recording
from inspector.cli import main
from tests.builders import DATA, SAMPLES

RUNS = ["sample-agent-success.json", "sample-agent-fault-corrupted-result.json"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "runs"
    d.mkdir()
    for name in RUNS:
        shutil.copy(SAMPLES / name, d / name)
    shutil.copy(DATA / "importers" / "inspect-0.3.285" / "adder.json", d / "adder.json")
    return d


def test_table_lists_every_run(folder: Path, capsys) -> None:
    assert main(["batch", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    assert header[:4] == ["file", "run", "records", "model_calls"] and "outcome" in header
    frame = run_batch(folder).frame
    assert len(out) == 1 + frame.height
    for line, row in zip(out[1:], frame.to_dicts()):
        assert line.startswith(row["file"]) and row["outcome"] in line.split()


def test_sections_choose_the_columns(folder: Path, capsys) -> None:
    assert main(["batch", str(folder), "--audit", "--effects"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert "final_seq" in header and "replayed" in header and "model_calls" not in header


def test_a_bad_file_is_listed_with_its_error_and_exit_2(folder: Path, capsys) -> None:
    (folder / "bad.json").write_text('{"format": "chassis-inspector/recording", "records": [')
    assert main(["batch", str(folder)]) == 2
    cap = capsys.readouterr()
    (line,) = [x for x in cap.out.splitlines() if x.startswith("bad.json")]
    (row,) = [r for r in run_batch(folder).frame.to_dicts() if r["file"] == "bad.json"]
    assert line.endswith(row["error"]) and str((folder / "bad.json").resolve()) in line
    assert "1 of 4 file(s) could not be read" in cap.err and "Traceback" not in cap.err


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".json"])
def test_output_file_reads_back_as_the_frame(folder: Path, tmp_path: Path, capsys, ext: str) -> None:
    (folder / "bad.json").write_text("nope")
    out = tmp_path / f"frame{ext}"
    args = ["batch", str(folder), "--metrics", "--effects", "--audit", "-o", str(out)]
    assert main(args) == 2
    expected = run_batch(folder, sections=SECTIONS).frame
    assert f"{expected.height} row(s) from 4 file(s) written to {out}" in capsys.readouterr().out
    read = {".csv": pl.read_csv, ".json": pl.read_json}
    back = pl.read_parquet(out) if ext == ".parquet" else read[ext](out, schema=expected.schema)
    assert back.equals(expected)
    # an existing output is kept without --force
    assert main(args) == 2
    assert "pass --force" in capsys.readouterr().err
    assert main([*args, "--force"]) == 2


def test_output_extension_is_checked_before_any_work(folder: Path, tmp_path: Path, capsys) -> None:
    assert main(["batch", str(folder), "-o", str(tmp_path / "out.txt")]) == 2
    err = capsys.readouterr().err
    assert "must end in .csv, .parquet, .json" in err and not (tmp_path / "out.txt").exists()


def test_recorded_names_are_shown_as_data(folder: Path, tmp_path: Path, capsys) -> None:
    rec = load_recording(folder / RUNS[0])
    rec.metadata["outcome"] = "ok\x1b[2J\x1b]0;owned\x07"
    save_recording(rec, folder / "evil\x1b[31m.json")
    assert main(["batch", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "evil" in out and "owned" in out


def test_jobs_give_the_same_table(folder: Path, capsys) -> None:
    assert main(["batch", str(folder), "--audit"]) == 0
    one = capsys.readouterr().out
    assert main(["batch", str(folder), "--audit", "--jobs", "2"]) == 0
    assert capsys.readouterr().out == one


def test_usage_errors_are_one_line(folder: Path, capsys) -> None:
    assert main(["batch", str(folder / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["batch", str(folder), "--glob", "*.yaml"]) == 2
    assert "no file matches '*.yaml'" in capsys.readouterr().err
    assert main(["batch", str(folder), "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err


def test_ray_address_without_ray_says_how_to_install_it(folder: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    assert main(["batch", str(folder), "--ray-address", "local"]) == 2
    err = capsys.readouterr().err
    assert RAY_INSTALL in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    base = folder / RUNS[1]
    assert main(["sweep", str(base), "--strategy", "knockout", "--no-store", "--ray-address", "local"]) == 2
    err = capsys.readouterr().err
    assert RAY_INSTALL in err and "Traceback" not in err


def test_ray_address_local_gives_the_same_table(folder: Path, capsys) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install '.[ray]')")
    assert main(["batch", str(folder), "--audit", "--metrics"]) == 0
    plain = capsys.readouterr().out
    assert main(["batch", str(folder), "--audit", "--metrics", "--ray-address", "local", "--jobs", "2"]) == 0
    assert capsys.readouterr().out == plain
    import ray

    assert not ray.is_initialized()  # the Ray the command started is shut down
