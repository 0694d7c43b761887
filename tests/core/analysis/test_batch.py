"""Batch rows against the plain per-run paths (metrics, audit, answer sources), bad files
as rows, the three output formats read back, and every engine (this process, worker
processes, a local Ray) giving the same frame."""

from __future__ import annotations

import io
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from core.analysis.audit import audit
from core.analysis.batch import (
    AUDIT_SCHEMA,
    METRICS_SCHEMA,
    SECTIONS,
    audit_summary,
    batch_frame,
    batch_schema,
    effects_summary,
    frame_bytes,
    output_format,
    write_frame,
)
from core.analysis.metrics import answer_source_counts, run_metrics_row
from core.effects.batch import batch_files, run_batch
from core.errors import AnalysisError, InspectorError
from core.examples.sample_agent import Fault, record_run
from core.importers import open_any
from core.record.recording import RECORD_KINDS, ToolResult
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from tests.builders import DATA, SAMPLES

MULTI_RUN = DATA / "importers" / "inspect-0.3.285" / "adder.json"  # 4 runs (Inspect AI)
NATIVE = [
    SAMPLES / "sample-agent-success.json",
    SAMPLES / "sample-agent-fault-tool-error.json",
    SAMPLES / "swe-agent-pydicom-1458.json",
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Native recordings (one in a subfolder), a multi-run Inspect AI log and a
    SWE-agent trajectory that the default glob leaves out."""
    d = tmp_path / "runs"
    (d / "sub").mkdir(parents=True)
    for p in NATIVE[:2]:
        shutil.copy(p, d / p.name)
    shutil.copy(NATIVE[2], d / "sub" / NATIVE[2].name)
    shutil.copy(MULTI_RUN, d / "adder.json")
    shutil.copy(DATA / "importers" / "swe_agent_function_calling.traj", d / "run.traj")
    return d


def _plain_runs(path: Path) -> list[tuple[str | None, object]]:
    """Every run of a file as the other commands open it: ``open_any``, then
    ``with_run`` for each run of a converted file."""
    opened = open_any(path)
    if not opened.converted:
        return [(None, opened.recording)]
    return [(ref.id, opened.with_run(ref.id).recording) for ref in opened.runs]


def test_rows_equal_the_plain_per_run_metrics_and_counts(folder: Path) -> None:
    res = run_batch(folder, sections=SECTIONS)
    assert res.ok and res.files == 4
    rows = res.frame.to_dicts()
    expected = []
    for p in batch_files(folder):
        name = p.relative_to(folder).as_posix()
        for run, rec in _plain_runs(p):
            expected.append((name, run, rec))
    assert [(r["file"], r["run"]) for r in rows] == [(n, run) for n, run, _ in expected]
    assert len({r["run"] for r in rows if r["file"] == "adder.json"}) == 4
    for row, (name, run, rec) in zip(rows, expected):
        plain = run_metrics_row(rec, name)
        assert {k: row[k] for k in METRICS_SCHEMA} == {k: plain[k] for k in METRICS_SCHEMA}
        assert row["records"] == len(rec.records)
        kinds = Counter(r.kind for r in rec.records)
        assert {k: row[f"records_{k}"] for k in RECORD_KINDS} == {k: kinds.get(k, 0) for k in RECORD_KINDS}
        rep = audit(rec)
        assert row["final_seq"] == rep.final_seq
        assert row["calls_contributed"] == len(rep.contributed()) and row["calls_unused"] == len(rep.unused())
        assert row["replayed"] is False and row["answers_live"] is None
        assert row["error"] is None and row["format"] == ("chassis" if run is None else "inspect_ai")


def test_glob_picks_the_files(folder: Path) -> None:
    res = run_batch(folder, pattern="*.traj")
    (row,) = res.frame.to_dicts()
    ((_, rec),) = _plain_runs(folder / "run.traj")
    assert row["file"] == "run.traj" and row["format"] == "swe_agent" and row["records"] == len(rec.records)
    assert row["model_calls"] == run_metrics_row(rec)["model_calls"]
    with pytest.raises(AnalysisError, match="no file matches"):
        run_batch(folder, pattern="*.nothing")
    with pytest.raises(AnalysisError, match="not a folder"):
        run_batch(folder / "adder.json")


def test_a_bad_file_is_a_row_with_its_error_and_the_rest_is_computed(folder: Path) -> None:
    bad = folder / "sub" / "broken.json"
    data = (SAMPLES / "sample-agent-success.json").read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    (folder / "empty.json").write_bytes(b"")
    res = run_batch(folder)
    assert not res.ok and res.failed == ["empty.json", "sub/broken.json"]
    by_file = {r["file"]: r for r in res.frame.to_dicts()}
    for name in res.failed:
        with pytest.raises(InspectorError) as exc:
            open_any(str((folder / name).resolve()))
        row = by_file[name]
        assert row["error"] == str(exc.value) and str((folder / name).resolve()) in row["error"]
        assert row["records"] is None and row["model_calls"] is None and row["run"] is None
    good = [r for r in res.frame.to_dicts() if r["error"] is None]
    assert len(good) == 3 + 4 and all(r["records"] is not None for r in good)


def test_a_failing_predicate_is_an_error_row_per_run(folder: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "batch_pred.py").write_text(
        "def judge(rec):\n    if rec.metadata.get('outcome') == 'failure':\n        raise RuntimeError('no')\n"
        "    return True\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run_batch(folder, predicate="batch_pred:judge")
    rows = res.frame.to_dicts()
    failing = [r for r in rows if r["error"] is not None]
    assert [r["file"] for r in failing] == ["sample-agent-fault-tool-error.json"]
    assert "outcome predicate failed" in failing[0]["error"] and "RuntimeError: no" in failing[0]["error"]
    assert {r["outcome"] for r in rows if r["error"] is None} == {"success"}
    with pytest.raises(AnalysisError, match="cannot import"):
        run_batch(folder, predicate="no_such_module_here:judge")


def test_effects_summary_of_replay_events_and_of_a_plain_run() -> None:
    base = record_run("support-001", Fault("tool-error", 2)).recording
    seq = base.metadata["fault"]["seq"]
    branch = new_branch(
        base,
        "base.json",
        at=seq,
        interventions=[ToolResultIntervention(seq=seq, result=ToolResult(content={"eligible": True}))],
        policy=Policy(drift="lenient"),
    )
    events = ReplayEngine(base, branch).run().events
    s = effects_summary(events)
    counts = answer_source_counts(events)
    assert s["replayed"] is True and s["replay_base_digest"] == base.digest
    assert s["replay_stop_reason"] == events.metadata["replay"]["stop_reason"]
    assert s["answers_intervention"] == counts.get("intervention", 0) == 1
    assert s["answers_drift"] == counts.get("drift", 0)
    plain = effects_summary(base)
    assert plain["replayed"] is False and plain["answers_intervention"] is None


def test_audit_summary_counts_the_report() -> None:
    rec = open_any(SAMPLES / "sample-agent-fault-corrupted-result.json").recording
    rep = audit(rec)
    s = audit_summary(rec)
    assert set(s) == set(AUDIT_SCHEMA)
    assert s["lineage_edges"] == len(rep.edges) and s["calls_unknown"] == len(rep.unknown())
    assert s["redactions"] == len(rep.redactions)


def _sample_frame(folder: Path) -> pl.DataFrame:
    (folder / "bad.json").write_text('{"x": ')
    return run_batch(folder, sections=SECTIONS).frame


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".json"])
def test_outputs_read_back_equal_the_frame(folder: Path, tmp_path: Path, ext: str) -> None:
    df = _sample_frame(folder)
    assert df["error"].null_count() < df.height  # an error row, with its nulls, is in it
    out = tmp_path / f"out{ext}"
    assert write_frame(df, out) == ext[1:]
    if ext == ".csv":
        back = pl.read_csv(out, schema=df.schema)
    elif ext == ".json":
        back = pl.read_json(out, schema=df.schema)
    else:
        back = pl.read_parquet(out)
    assert back.schema == df.schema and back.equals(df)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")]


def test_output_format_and_schema_errors(tmp_path: Path) -> None:
    assert output_format("A.PARQUET") == "parquet"
    with pytest.raises(AnalysisError, match=r"\.csv, \.parquet, \.json"):
        output_format(tmp_path / "out.xlsx")
    with pytest.raises(AnalysisError, match="unknown batch section"):
        batch_schema(["metrics", "vibes"])
    with pytest.raises(AnalysisError, match="unknown output format"):
        frame_bytes(batch_frame([]), "xml")
    empty = batch_frame([], ["audit"])
    assert empty.height == 0 and list(empty.schema) == list(batch_schema(["audit"]))


def test_worker_processes_give_the_same_frame(folder: Path) -> None:
    (folder / "bad.json").write_bytes(b"\x00\x01")
    one = run_batch(folder, sections=SECTIONS)
    arrived: list[str] = []
    two = run_batch(folder, sections=SECTIONS, jobs=2, on_file=lambda name, rows: arrived.append(name))
    assert two.frame.equals(one.frame) and two.failed == one.failed == ["bad.json"]
    assert sorted(arrived) == sorted({r["file"] for r in one.frame.to_dicts()})
    with pytest.raises(AnalysisError, match="--jobs"):
        run_batch(folder, jobs=0)


# --------------------------------------------------------------------------- Ray


def _ray_children() -> list[int]:
    """Processes started by this one whose command line names Ray."""
    me = os.getpid()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == me and b"ray" in cmd:
            out.append(int(d.name))
    return out


@pytest.fixture
def local_ray():
    """A local Ray for one test (2 CPUs, no dashboard), shut down afterwards; the test
    checks that it left no Ray process behind."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install '.[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        if Path("/proc/self/stat").exists():
            deadline = time.monotonic() + 15
            while _ray_children() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _ray_children(), "Ray processes outlived ray.shutdown()"


def test_ray_gives_the_same_frame(folder: Path, local_ray) -> None:
    bad = folder / "bad.json"
    bad.write_text("[1, 2")
    plain = run_batch(folder, sections=SECTIONS)
    on_ray = run_batch(folder, sections=SECTIONS, ray_address="local")
    assert on_ray.frame.equals(plain.frame) and on_ray.failed == plain.failed == ["bad.json"]
    assert local_ray.is_initialized()  # a Ray the caller started is used, not shut down
    # the frame written from the Ray path reads back the same too
    buf = frame_bytes(on_ray.frame, "parquet")
    assert pl.read_parquet(io.BytesIO(buf)).equals(plain.frame)
