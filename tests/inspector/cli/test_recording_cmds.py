"""CLI: validate, info, migrate — exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import orjson
import pytest

from core.record.recording import Recording
from inspector.cli import main
from tests.builders import DATA, ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, cwd=ROOT)


def test_validate_ok_and_bad(saved, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "chassis.replay", "format_version": 7, "records": []}')
    assert main(["validate", str(saved)]) == 0
    assert "ok (format version 3, 6 records" in capsys.readouterr().out
    assert main(["validate", str(saved), str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        err.strip()
        == f"chassis-inspector: {bad} at /format_version: format version 7 is newer than this inspector supports (3)"
    )


def test_validate_subprocess_has_no_traceback(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text('{"format": "chassis.replay", "format_version": 1, "records": [{"seq": 0, "kind": "to')
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "truncated" in proc.stderr and str(bad) in proc.stderr


@pytest.mark.parametrize(
    ("path", "described"),
    [
        (DATA / "importers" / "inspect-0.3.285" / "adder.eval", "an Inspect AI eval log (.json or .eval zip)"),
        (DATA / "importers" / "inspect-0.3.285" / "adder.json", "an Inspect AI eval log (.json or .eval zip)"),
    ],
)
def test_validate_on_another_format_says_what_it_is_and_suggests_import(path, described, capsys):
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path}: not a Chassis recording: it looks like {described}, format inspect_ai" in err
    assert f"convert it with: chassis-inspector import {path} -o OUT" in err
    assert "malformed JSON" not in err and "surrogates" not in err


def test_info_text_and_json(saved, capsys):
    assert main(["info", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "format          chassis.replay version 3" in out
    assert "records         6  (tool 1, model 2, interrupt 1, snapshot 1, lifecycle 1)" in out
    assert "first error     seq 3 tool ls: PermissionError: permission denied" in out
    assert main(["info", "--json", str(saved)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["counts"] == {"tool": 1, "model": 2, "interrupt": 1, "snapshot": 1, "lifecycle": 1}
    assert info["models"] == {"m": 2} and info["tools"] == {"ls": 1}
    assert info["run_ids"] == ["r1"]
    assert info["tokens"] == {"input": 60, "output": 12}
    assert info["first_error"]["seq"] == 3 and info["first_error"]["type"] == "PermissionError"


def test_info_missing_file(capsys, tmp_path):
    assert main(["info", str(tmp_path / "none.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_migrate(tmp_path, capsys):
    out = tmp_path / "new.json"
    assert main(["migrate", str(DATA / "legacy" / "chassis-0.8.1-recording.json"), "-o", str(out)]) == 0
    assert "format version 0 → 3" in capsys.readouterr().out
    rec = Recording.load(out)
    assert rec.format_version == 3 and len(rec.records) == 5
    assert orjson.loads(out.read_bytes())["format_version"] == 3
    # refuses to overwrite without --force
    assert main(["migrate", str(DATA / "legacy" / "chassis-0.8.1-recording.json"), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["migrate", str(DATA / "legacy" / "chassis-0.8.1-recording.json"), "-o", str(out), "--force"]) == 0


def test_migrate_bad_input_leaves_no_output(tmp_path, capsys):
    src = tmp_path / "old.json"
    src.write_text('{"chassis_version": "0.8.1", "interactions": [{"type": "warp"}]}')
    out = tmp_path / "new.json"
    assert main(["migrate", str(src), "-o", str(out)]) == 2
    assert "unknown record kind 'warp'" in capsys.readouterr().err
    assert not out.exists()


def test_usage_error_exit_code(capsys):
    assert main(["info"]) == 2


def test_usage_errors_are_one_line(capsys, saved):
    assert main(["timeline", str(saved), "--kind", "foo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("chassis-inspector timeline: invalid value for '--kind'")
    assert "Value error" not in err
    assert main(["diff"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "chassis-inspector diff: missing argument 'base' (see 'chassis-inspector diff --help')"


def test_info_on_legacy_file_says_it_was_migrated(capsys):
    legacy = DATA / "legacy" / "chassis-0.8.1-recording.json"
    assert main(["info", str(legacy)]) == 0
    out = capsys.readouterr().out
    assert "version 0 (read as version 3 in memory;" in out
    assert "digest          none" in out
    assert main(["validate", str(legacy)]) == 0
    assert "ok (format version 0, migrates to 3; 5 records)" in capsys.readouterr().out


def test_info_without_usage_says_tokens_not_recorded(tmp_path, capsys):
    from tests.builders import make_recording

    rec = make_recording()
    for r in rec.records:
        if r.kind == "model":
            r.response = r.response.model_copy(update={"usage": None})
    p = tmp_path / "nousage.json"
    rec.save(p)
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "tokens          not recorded" in out
    assert main(["info", "--json", str(p)]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] is None


def test_info_metadata_layout(tmp_path, capsys):
    from tests.builders import make_recording

    rec = make_recording()
    rec.metadata = {"a_rather_long_metadata_key": "value", "patch": "\ndiff --git a/x b/x\n+line"}
    p = tmp_path / "meta.json"
    rec.save(p)
    assert main(["info", str(p)]) == 0
    out = capsys.readouterr().out
    assert "  a_rather_long_metadata_key  value" in out
    assert "  patch" in out and "diff --git a/x b/x ⏎ +line" in out


def test_output_safety_across_commands(tmp_path, saved, capsys):
    """Outputs never replace an input, an existing file without --force, a device or a folder."""
    a_file = tmp_path / "plain"
    a_file.write_text("x")
    cases = [
        (["migrate", str(saved), "-o", str(saved), "--force"], "is the input"),
        (["migrate", str(saved), "-o", str(a_file / "x.json")], "is a file, not a folder"),
        (["migrate", str(saved), "-o", str(tmp_path)], "is a directory"),
        (["migrate", str(saved), "-o", "/dev/null", "--force"], "not a regular file"),
        (["export", str(saved), "-o", str(a_file)], "exists; pass --force"),
        (["export", str(saved), "-o", str(saved), "--force"], "is the input"),
        (
            ["branch", "new", str(saved), "--at", "2", "-o", str(saved), "--workspace", str(tmp_path / "ws")],
            "is the input",
        ),
    ]
    for args, reason in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert reason in err and err.count("\n") == 1 and "Traceback" not in err, (args, err)
    assert a_file.read_text() == "x"
    assert not (tmp_path / "ws").exists()  # a refused branch leaves no workspace behind
    Recording.load(saved)


def test_atomic_write_reports_write_failures(tmp_path, monkeypatch):
    import os

    from core.errors import OutputError
    from core.record.io import atomic_write_bytes

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "out.json"
    try:
        atomic_write_bytes(target, b"{}")
    except OutputError as exc:
        assert "No space left on device" in str(exc) and str(target) in str(exc)
    else:  # pragma: no cover
        raise AssertionError("no OutputError")
    assert list(tmp_path.iterdir()) == []


def test_info_uses_source_run_totals_when_no_call_has_usage(capsys):
    swe = ROOT / "sample_recordings" / "swe-agent-pydicom-1458.json"
    assert main(["info", str(swe)]) == 0
    assert "tokens          input 122612, output 1369 (run totals from the source" in capsys.readouterr().out
