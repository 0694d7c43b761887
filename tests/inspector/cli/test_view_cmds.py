"""CLI: open (default verb), serve's address check, timeline (text, JSON, CSV, filters)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

import inspector.app
from core.analysis.timeline import TimelineIndex
from inspector import defaults
from inspector.cli import main
from inspector.cli.view_cmds import is_loopback
from tests.builders import ROOT, UNIQUE_RESULT


@pytest.fixture
def no_app(monkeypatch):
    """Record the apps the CLI would run instead of running them."""
    started: list = []

    def fake_run(self, *a, **k):
        started.append(self)

    monkeypatch.setattr(inspector.app.InspectorApp, "run", fake_run)
    return started


BAD_FILES = {
    "truncated": ('{"format": "chassis.replay", "format_version": 1, "records": [', "truncated JSON"),
    "future": (
        '{"format": "chassis.replay", "format_version": 9, "records": []}',
        "newer than this inspector supports",
    ),
    "seq": (
        (
            '{"format": "chassis.replay", "format_version": 1, "records": ['
            '{"kind": "interrupt", "seq": 1}, {"kind": "interrupt", "seq": 1}]}'
        ),
        "does not increase",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_open_bad_file_prints_the_format_error_and_never_starts_the_app(case, tmp_path, capsys, no_app):
    content, reason = BAD_FILES[case]
    bad = tmp_path / f"{case}.json"
    bad.write_text(content)
    assert main(["open", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"chassis-inspector: {bad}")
    assert reason in err and "Traceback" not in err
    assert no_app == []
    # the bare form routes to open too
    assert main([str(bad)]) == 2
    assert no_app == []


def test_open_missing_file(tmp_path, capsys, no_app):
    assert main([str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert no_app == []


def test_open_runs_the_app_on_the_file(built_path, no_app):
    assert main([str(built_path)]) == 0
    assert main(["open", str(built_path)]) == 0
    assert len(no_app) == 2
    assert no_app[0].loaded.path == built_path
    assert len(no_app[0].loaded.index) == 17


def test_no_argument_opens_the_default_recording(no_app):
    assert main([]) == 0
    assert no_app[0].loaded.path == defaults.default_recording_path()
    assert no_app[0].loaded.path.parent == ROOT / "sample_recordings"


def test_default_recording_prefers_the_named_file_then_the_first_json(tmp_path):
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "a.json").write_text("{}")
    assert defaults.default_recording_path(tmp_path) == tmp_path / "a.json"
    (tmp_path / defaults.DEFAULT_RECORDING).write_text("{}")
    assert defaults.default_recording_path(tmp_path) == tmp_path / defaults.DEFAULT_RECORDING


def test_default_recording_missing_is_a_clear_error(tmp_path):
    from core.errors import FormatError

    with pytest.raises(FormatError, match="no bundled recording found"):
        defaults.default_recording_path(tmp_path)


def test_python_dash_m_inspector_works(built_path):
    out = subprocess.run(
        [sys.executable, "-m", "inspector", "timeline", str(built_path), "--errors"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\n") == 3  # header + two errors


@pytest.mark.parametrize(
    "host,ok",
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("127.0.0.2", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host, ok):
    assert is_loopback(host) is ok


def test_serve_refuses_a_public_address_without_the_flag(built_path, capsys):
    assert main(["serve", str(built_path), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "not a loopback address" in err and "--public" in err


def test_serve_checks_the_file_before_serving(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(BAD_FILES["truncated"][0])
    assert main(["serve", str(bad)]) == 2
    assert "truncated JSON" in capsys.readouterr().err


def test_timeline_text_shows_every_row(built_path, capsys):
    assert main(["timeline", str(built_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["seq", "time", "kind", "name"]
    assert len(lines) == 18
    assert "✗ EditRejected" in lines[8]


def test_timeline_text_shows_a_marked_step_that_failed_as_both(capsys):
    """A planted fault that failed reads ``✗ ⚑ fault`` (the mark alone hid the error),
    as in the app's table; a marked step that did not fail reads ``⚑ LABEL``."""
    from tests.builders import SAMPLES

    assert main(["timeline", str(SAMPLES / "sample-agent-fault-tool-error.json")]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] == ["8"])
    assert line.split()[4:7] == ["✗", "⚑", "fault"]


def test_timeline_json_matches_the_index(built_path, built, capsys):
    assert main(["timeline", str(built_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [r.to_json() for r in TimelineIndex(built.recording).rows()]
    assert rows[7] | {"summary": None} == {
        "seq": 7,
        "offset_seconds": 9.0,
        "kind": "tool",
        "name": "edit",
        "summary": None,
        "status": "error",
        "duration_seconds": 0.25,
        "tokens": None,
    }


def test_timeline_filters(built_path, capsys):
    assert main(["timeline", str(built_path), "--kind", "tool", "--errors", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["seq"], r["status"]) for r in rows] == [(7, "error"), (12, "error")]
    assert main(["timeline", str(built_path), "-k", "model", "-k", "interrupt", "--json"]) == 0
    assert {r["kind"] for r in json.loads(capsys.readouterr().out)} == {"model", "interrupt"}
    assert main(["timeline", str(built_path), "--grep", UNIQUE_RESULT.upper()[:12], "--json"]) == 0
    # the tool result, and the model call that reads it; not the later requests
    assert [r["seq"] for r in json.loads(capsys.readouterr().out)] == [5, 6]


def test_timeline_csv(built_path, capsys):
    assert main(["timeline", str(built_path), "--csv", "--kind", "interrupt"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows == [
        {
            "seq": "8",
            "offset_seconds": "10.0",
            "kind": "interrupt",
            "name": "interrupt",
            "summary": "approval required for edit",
            "status": "interrupted",
            "duration_seconds": "",
            "tokens": "",
        }
    ]


def test_timeline_bad_options(built_path, capsys):
    assert main(["timeline", str(built_path), "--json", "--csv"]) == 2
    assert "cannot be used together" in capsys.readouterr().err
    assert main(["timeline", str(built_path), "--kind", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_timeline_no_match_says_so(built_path, capsys):
    assert main(["timeline", str(built_path), "--grep", "no-such-text-anywhere"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    assert "no record matches" in captured.err


def test_serve_public_warns_and_serves_the_app_command(built_path, capsys, monkeypatch):
    import textual_serve.server

    served = []
    monkeypatch.setattr(textual_serve.server.Server, "serve", lambda self, debug=False: served.append(self))
    assert main(["serve", str(built_path), "--host", "0.0.0.0", "--port", "8123", "--public"]) == 0
    captured = capsys.readouterr()
    assert "warning: serving on 0.0.0.0:8123" in captured.err
    (server,) = served
    assert (server.host, server.port) == ("0.0.0.0", 8123)
    # the app runs on the file, with the workspace (absolute: the app process's folder may differ)
    assert f"-m inspector open {built_path.resolve()} --workspace " in server.command
    assert server.command.split("--workspace ")[1].startswith("/")


def test_open_with_a_bad_keymap_exits_2(built_path, tmp_path, capsys, monkeypatch, no_app):
    bad = tmp_path / "keys.json"
    bad.write_text('{"nope": "x"}')
    monkeypatch.setenv("CHASSIS_INSPECTOR_KEYMAP", str(bad))
    assert main([str(built_path)]) == 2
    assert "unknown binding id 'nope'" in capsys.readouterr().err
    assert no_app == []
