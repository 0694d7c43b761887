"""CLI ``import`` and importable files given to ``info``/``timeline``/``validate``:
outputs, refusals, exit codes, one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.record.io import load_recording
from inspector.cli import main
from tests.builders import ROOT

REAL = ROOT / "tests" / "data" / "real_traces"
SWE = REAL / "swe_agent" / "pydicom__pydicom-1458.traj"
TAU = REAL / "tau_bench" / "gpt-4o-airline.json"
WHO = REAL / "who_and_when" / "algorithm-generated_77.json"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, cwd=ROOT)


def test_import_writes_a_valid_recording_and_prints_warnings(tmp_path: Path, capsys) -> None:
    out = tmp_path / "swe.json"
    assert main(["import", str(SWE), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert f"run pydicom__pydicom-1458 → {out}: 24 records (model 12, tool 12" in cap.out
    assert "warning: trajectory: actions are parsed from the model's text" in cap.err
    rec = load_recording(out, verify_keys=True)
    assert rec.metadata["source"]["format"] == "swe_agent"
    assert main(["validate", str(out)]) == 0


def test_import_refuses_to_overwrite_without_force(tmp_path: Path, capsys) -> None:
    out = tmp_path / "who.json"
    out.write_text("keep me")
    assert main(["import", str(WHO), "-o", str(out)]) == 2
    assert "exists; pass --force to overwrite" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main(["import", str(WHO), "-o", str(out), "--force"]) == 0
    assert load_recording(out).metadata["annotation"]["mistake_step"] == 0


def test_multi_run_source_needs_run_or_all(tmp_path: Path, capsys) -> None:
    assert main(["import", str(TAU), "-o", str(tmp_path / "x.json")]) == 2
    assert "holds 200 runs" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert main(["import", str(TAU), "--run", "task0-trial0", "-o", str(tmp_path / "a.json")]) == 0
    assert main(["import", str(TAU), "--run", "3", "-o", str(tmp_path / "b.json")]) == 0
    assert load_recording(tmp_path / "a.json").metadata["outcome"] == "failure"
    assert load_recording(tmp_path / "b.json").metadata["source"]["run"] == "task0-trial3"
    assert main(["import", str(TAU), "--run", "task99-trial9", "-o", str(tmp_path / "c.json")]) == 2
    assert "no run 'task99-trial9'" in capsys.readouterr().err


def test_import_all_into_a_directory(tmp_path: Path, capsys) -> None:
    d = tmp_path / "tau"
    assert main(["import", str(TAU), "--all", "-o", str(d), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["runs"]) == 200 and summary["format"] == "tau_bench"
    files = sorted(d.iterdir())
    assert len(files) == 200 and (d / "task0-trial0.json").exists()
    assert load_recording(d / "task49-trial3.json").metadata["trial"] == 3
    assert main(["import", str(TAU), "--all", "-o", str(d)]) == 2  # would overwrite
    assert "pass --force" in capsys.readouterr().err


def test_import_list(capsys) -> None:
    assert main(["import", str(TAU), "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runs"]
    assert rows[0]["run"] == "task0-trial0" and rows[0]["outcome"] == "failure"
    assert sum(r["counts"]["tool"] for r in rows) == 1164


def test_import_truncated_and_recover(tmp_path: Path, capsys) -> None:
    cut = tmp_path / "cut.eval"
    cut.write_bytes((REAL / "inspect_ai" / "log_message_deduplication.eval").read_bytes()[:7000])
    out = tmp_path / "out.json"
    assert main(["import", str(cut), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "truncated" in err and str(cut) in err and "--recover" in err
    assert not out.exists()
    assert main(["import", str(cut), "-o", str(out), "--recover"]) == 0
    assert "incomplete" in capsys.readouterr().out
    assert load_recording(out).metadata["source"]["incomplete"] is True


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    mystery = tmp_path / "mystery.json"
    mystery.write_text('{"hello": "world"}')
    for args in (
        ["import", str(mystery), "-o", str(tmp_path / "o.json")],
        ["info", str(mystery)],
        ["import", str(SWE), "--from", "nope", "-o", str(tmp_path / "o.json")],
    ):
        proc = run_cli(*args)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1
    proc = run_cli("info", str(mystery))
    assert "not a recognised agent-run format" in proc.stderr and "tau_bench:" in proc.stderr


def test_info_and_timeline_accept_importable_files(capsys) -> None:
    assert main(["info", str(SWE), "--json"]) == 0
    cap = capsys.readouterr()
    info = json.loads(cap.out)
    assert info["counts"]["tool"] == 12 and info["first_error"]["type"] == "edit_rejected"
    assert "notice: converted from swe_agent" in cap.err
    assert main(["timeline", str(WHO)]) == 0
    cap = capsys.readouterr()
    assert "Computer_terminal" in cap.out


def test_validate_stays_for_native_recordings(capsys) -> None:
    assert main(["validate", str(SWE)]) == 2
    assert "not a Chassis recording" in capsys.readouterr().err


OLD_INSPECT = REAL / "inspect_ai" / "log_tool_call_error.json"
ARGS_MISSING = "the tool call's arguments are not in the source"


def test_near_identical_warnings_are_grouped_with_a_count(tmp_path: Path, capsys) -> None:
    """An old-layout Inspect log warns once per tool call (11×): one line with a count,
    for import and for a file converted in memory; the stored list keeps them all."""
    out = tmp_path / "old.json"
    assert main(["import", str(OLD_INSPECT), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count(ARGS_MISSING) == 1
    assert f"warning: samples[0].messages[0..10] (11×): {ARGS_MISSING}" in err
    assert sum(ARGS_MISSING in w for w in load_recording(out).metadata["source"]["warnings"]) == 11
    assert main(["info", str(OLD_INSPECT)]) == 0
    err = capsys.readouterr().err
    assert err.count(ARGS_MISSING) == 1 and "(11×)" in err


def test_notices_of_a_converted_file_have_one_prefix(capsys) -> None:
    for f in (OLD_INSPECT, SWE):
        assert main(["info", str(f)]) == 0
        lines = capsys.readouterr().err.splitlines()
        assert lines and all(
            line.startswith(("chassis-inspector: notice: ", "chassis-inspector: warning: ")) for line in lines
        )
        assert not any("notice: warning:" in line or "warning: info:" in line for line in lines)


def test_truncated_known_format_is_reported_as_truncated(tmp_path: Path, capsys) -> None:
    """A tau-bench file cut so early that no run is complete (not even the keys the
    format is recognised by): 'truncated', naming the file — not 'not recognised'."""
    for n in (100, 2000):
        cut = tmp_path / f"tau-cut-{n}.json"
        cut.write_bytes(TAU.read_bytes()[:n])
        assert main(["info", str(cut)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(cut) in err and "truncated" in err
        assert "not a recognised" not in err
    other = tmp_path / "cut.json"
    other.write_text('{"a": [1, 2')
    assert main(["info", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"{other}: truncated JSON: the file ends early" in err and err.count("\n") == 1


def test_group_warnings_rules() -> None:
    from core.importers.base import ImportWarning as W
    from core.importers.base import group_warnings

    ws = [
        W("samples[0]", "old layout"),
        W("r[1]", "y"),
        W("r[5]", "y"),
        W("a[3].b[2]", "x 5"),
        W("a[4].b[7]", "x 6"),
        W("r[9]", "y"),
        W("q", "same"),
        W("q", "same"),
    ]
    assert group_warnings(ws) == [
        "samples[0]: old layout",
        "r[1,5,9] (3×): y",
        "a[3].b[2] … a[4].b[7] (2×): e.g. x 5",
        "q (2×): same",
    ]
    assert group_warnings([]) == []


def test_open_any_keeps_one_notice_per_warning_and_the_cli_folds_them() -> None:
    from core.importers import open_any
    from inspector.cli.common import opened_notices, opened_notices_each

    opened = open_any(OLD_INSPECT)
    notices = opened_notices_each(OLD_INSPECT, opened)
    assert sum(n.startswith("warning: ") for n in notices) == 12  # the app counts these
    grouped = [n.removeprefix("notice: ") for n in opened_notices(OLD_INSPECT, opened)]
    assert grouped[0].startswith("converted from inspect_ai")
    assert grouped[1:] == [
        (
            "warning: samples[0]: old layout: no events; calls reconstructed from the sample's messages "
            "(no timestamps, durations or usage)"
        ),
        f"warning: samples[0].messages[0..10] (11×): {ARGS_MISSING}; imported without a key: replay cannot match it",
    ]
