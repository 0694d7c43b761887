"""Recorded text never drives the terminal: every command shows control, bidi and
invisible characters as visible stand-ins, marks the line, and keeps --json lossless.

The property test puts random strings with control functions (C0, C1, ESC and OSC
sequences), bidi controls and zero-width characters in every string field of two
recordings and runs info, timeline, audit, diff and metrics in every output format:
nothing but ``\\n`` (and ``\\t`` inside CSV cells) of those classes reaches stdout or
stderr.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.analysis.safe_text import HIDDEN_MARK
from core.record.io import save_recording
from core.record.recording import Recording
from inspector.cli import main
from inspector.cli.safe_output import SafeTextStream, protected_output
from tests.builders import model, msg, recording, tool
from tests.hostile import (
    CLEAR,
    CLIPBOARD,
    HOSTILE,
    MARKUP_TOOL,
    MARKUP_TOOL_2,
    TITLE,
    hostile_recording,
    hostile_text,
    recording_of,
    unsafe_in,
)


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def commands(a: Path, b: Path) -> list[tuple[list[str], bool]]:
    """(arguments, output is CSV) of every read command on ``a`` (and ``b`` for diff)."""
    out: list[tuple[list[str], bool]] = []
    for cmd in ("info", "timeline", "audit", "metrics"):
        out += [([cmd, str(a)], False), ([cmd, str(a), "--json"], False)]
    out += [(["timeline", str(a), "--csv"], True), (["metrics", str(a), "--csv"], True)]
    out += [(["metrics", str(a), str(b), "--compare"], False), (["timeline", str(a), "--errors"], False)]
    out += [(["diff", str(a), str(b)], False), (["diff", str(a), str(b), "--json"], False)]
    out += [(["diff", str(a), str(b), "--all-kinds"], False)]
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_command_prints_a_control_bidi_or_invisible_character(data, capsys):
    def text() -> str:
        return data.draw(hostile_text())

    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
        save_recording(recording_of(text), a)
        save_recording(recording_of(text), b)
        capsys.readouterr()
        for args, is_csv in commands(a, b):
            code, out, err = run(capsys, *args)
            assert code == 0, (args, err)
            assert unsafe_in(out, allow_tab=is_csv) == [], args
            assert unsafe_in(err) == [], args
            if "--json" in args:
                orjson.loads(out)  # still JSON


def test_timeline_shows_escape_sequences_and_marks_the_row(tmp_path, capsys):
    path = tmp_path / "h.json"
    save_recording(hostile_recording(), path)
    code, out, _ = run(capsys, "timeline", path)
    assert code == 0
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    rows = out.splitlines()[1:]
    assert len(rows) == 8  # one line per record: no newline of a field splits a row
    assert all(HIDDEN_MARK in row for row in rows if "interrupt" not in row.split()[1:2])
    assert "␛[2J␛[H" in out and "␛]0;pwned␇" in out and "␛]52;" in out
    assert "\\x9b31m" in out and "\\u202e" in out and "\\u200b" in out
    # markup-looking names are text, as they were recorded
    assert MARKUP_TOOL in out and MARKUP_TOOL_2 in out


@pytest.mark.parametrize("command", ["info", "audit"])
def test_info_and_audit_show_names_and_values_escaped(command, tmp_path, capsys):
    path = tmp_path / "h.json"
    save_recording(hostile_recording(), path)
    code, out, err = run(capsys, command, path)
    assert code == 0, err
    assert unsafe_in(out) == [] and HIDDEN_MARK in out
    assert MARKUP_TOOL in out and MARKUP_TOOL_2 in out
    if command == "info":
        assert "producer=x⚠␛[2J␛[H␛]0;pwned␇" in out
        assert "run ids         x⚠␛[2J" in out


def test_diff_never_cuts_an_escape_sequence_raw(tmp_path, capsys):
    """A value cut at the column width (38 characters per side of a change) with an OSC
    sequence across the cut: escaped first, so the cut leaves no raw ESC that would make
    the terminal swallow everything after it."""
    osc = "\x1b]0;" + "t" * 60 + "\x07"
    a = recording(tool(0, "t", {}, "r" * 30 + osc + "tail"), model(1, [msg("user", "u")], "same"))
    b = recording(tool(0, "t", {}, "other"), model(1, [msg("user", "u")], "same"))
    save_recording(a, tmp_path / "a.json")
    save_recording(b, tmp_path / "b.json")
    code, out, _ = run(capsys, "diff", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 0
    change = next(line for line in out.splitlines() if "result changed /content" in line)
    assert unsafe_in(out) == []
    assert change.endswith("→ other")
    assert "r" * 30 + "⚠␛]0;tt" in change and "…" in change


def test_diff_of_final_outputs_escapes_every_line(tmp_path, capsys):
    a = recording(model(0, [msg("user", "u")], "one\n" + CLEAR + "two\nthree"))
    b = recording(model(0, [msg("user", "u")], "one\n" + TITLE + "two\nfour"))
    save_recording(a, tmp_path / "a.json")
    save_recording(b, tmp_path / "b.json")
    code, out, _ = run(capsys, "diff", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 0 and unsafe_in(out) == []
    assert "⚠␛[2J␛[Htwo" in out and "⚠␛]0;pwned␇two" in out


def test_json_keeps_the_exact_values_with_every_hidden_character_escaped(tmp_path, capsys):
    rec = hostile_recording()
    path = tmp_path / "h.json"
    save_recording(rec, path)
    code, out, _ = run(capsys, "timeline", path, "--json")
    assert code == 0
    assert unsafe_in(out) == []
    assert "\\u009b" in out and "\\u202e" in out and "\\u200b" in out  # written as JSON escapes
    rows = orjson.loads(out)
    assert [r["name"] for r in rows][:3] == [rec.records[0].model, MARKUP_TOOL, MARKUP_TOOL_2]
    code, out, _ = run(capsys, "info", path, "--json")
    info = orjson.loads(out)
    assert info["session"]["producer"] == "x" + HOSTILE  # lossless


def test_csv_cells_show_stand_ins_without_a_marker(tmp_path, capsys):
    path = tmp_path / "h.json"
    save_recording(hostile_recording(), path)
    code, out, _ = run(capsys, "timeline", path, "--csv")
    assert code == 0 and unsafe_in(out, allow_tab=True) == []
    assert HIDDEN_MARK not in out and "␛[2J" in out
    code, out, _ = run(capsys, "metrics", path, "--csv")
    assert code == 0 and unsafe_in(out, allow_tab=True) == [] and HIDDEN_MARK not in out


def test_a_newline_in_a_name_cannot_forge_a_row(tmp_path, capsys):
    forged = "ls\n  9  +0.0s tool      fake                   ok"
    path = tmp_path / "n.json"
    save_recording(recording(tool(0, forged, {}, "ok")), path)
    for cmd in ("timeline", "info", "audit"):
        code, out, _ = run(capsys, cmd, path)
        assert code == 0
        assert not any(line.startswith("  9  +0.0s") for line in out.splitlines()), cmd
        assert ("ls\\n  9" if cmd == "audit" else "ls⚠␊  9") in out, cmd


def test_export_to_stdout_escapes_bidi_and_c1_characters(tmp_path, capsys):
    path = tmp_path / "h.json"
    save_recording(hostile_recording(), path)
    code, out, err = run(capsys, "export", path)
    assert code == 0, err
    assert unsafe_in(out) == []
    orjson.loads(out)


def test_import_list_and_its_errors_escape_run_ids(tmp_path, capsys):
    src = tmp_path / "tau.json"
    src.write_bytes(
        orjson.dumps(
            [
                {
                    "task_id": "a" + TITLE + "\u202e",
                    "reward": 0,
                    "trial": 0,
                    "traj": [{"role": "user", "content": "hi"}],
                },
                {"task_id": 2, "reward": 1, "trial": 0, "traj": [{"role": "user", "content": CLEAR}]},
            ]
        )
    )
    code, out, err = run(capsys, "import", src, "--list")
    assert code == 0 and unsafe_in(out + err) == []
    assert "taska⚠␛]0;pwned␇\\u202e-trial0" in out
    code, out, err = run(capsys, "import", src, "-o", tmp_path / "x.json")
    assert code == 2 and unsafe_in(out + err) == [] and "taska⚠␛]0;pwned␇" in err


def test_replay_and_requirements_print_no_hidden_character(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_recording(hostile_recording(), tmp_path / "h.json")
    steps = [
        ["branch", "new", "h.json", "--at", "2", "-o", "b.json"],
        ["branch", "list"],
        ["replay", "h.json", "--branch", "b.json", "--dry-run"],
        ["replay", "h.json", "--branch", "b.json"],
        ["replay", "list"],
        ["requirements"],
    ]
    for args in steps:
        code, out, err = run(capsys, *args)
        assert unsafe_in(out) == [] and unsafe_in(err) == [], (args, out, err)


def test_error_messages_that_quote_recorded_text_are_escaped(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "chassis.replay", "format_version": 2, "records": [{"kind": "\\u001b]0;x\\u0007\\u202e", "seq": 0}]}'
    )
    for cmd in ("info", "timeline", "serve"):
        code, out, err = run(capsys, cmd, bad)
        assert code == 2
        assert unsafe_in(err) == [] and err.count("\n") == 1, cmd


def test_an_error_quoting_raw_recorded_text_is_escaped_in_every_command(tmp_path, capsys, monkeypatch):
    """Errors raised with recorded text in their message, even one not quoted with
    ``!r``: printed escaped, on one line — also by ``serve``, which runs unfiltered."""
    from core.errors import FormatError
    from inspector.cli import recording_cmds, view_cmds

    def fail(*args, **kwargs):
        raise FormatError("unknown tool " + MARKUP_TOOL + TITLE + CLEAR, file="x.json")

    monkeypatch.setattr(recording_cmds, "load_any", fail)
    monkeypatch.setattr(view_cmds, "_load", fail)
    for cmd in ("info", "timeline", "serve"):
        code, out, err = run(capsys, cmd, tmp_path / "x.json")
        assert code == 2, (cmd, err)
        assert unsafe_in(err) == [] and err.count("\n") == 1, (cmd, err)
        assert f"unknown tool {MARKUP_TOOL}⚠␛]0;pwned␇␛[2J" in err, (cmd, err)


def test_empty_runs_are_reported_not_crashed(tmp_path, capsys):
    path = tmp_path / "empty.json"
    save_recording(Recording(records=[], metadata={"outcome": "failure"}), path)
    other = tmp_path / "one.json"
    save_recording(recording(tool(0, "ls", {}, "ok")), other)
    code, out, err = run(capsys, "info", path)
    assert code == 0 and "records         0" in out
    code, out, err = run(capsys, "timeline", path)
    assert code == 0 and out.count("\n") == 1 and "the recording has no records" in err
    code, out, err = run(capsys, "audit", path)
    assert code == 0 and "no final output (the recording has no records)" in out
    for args in (["metrics", path], ["diff", path, other], ["diff", other, path], ["timeline", path, "--json"]):
        code, out, err = run(capsys, *args)
        assert code == 0, (args, err)


# ---------------------------------------------------------------------- the stream itself


def test_the_stream_marks_each_line_once_before_its_first_hidden_character():
    raw = io.StringIO()
    s = SafeTextStream(raw)
    s.write("ok ")
    s.write("a\x1b[2Jb\x07 and \x1b]0;t")
    s.write("\x07\nclean\n\u202ex\ty\n")
    assert raw.getvalue() == f"ok a{HIDDEN_MARK}␛[2Jb␇ and ␛]0;t␇\nclean\n{HIDDEN_MARK}\\u202ex␉y\n"


def test_the_stream_has_no_way_around_it():
    s = SafeTextStream(io.StringIO())
    with pytest.raises(TypeError):
        s.write(b"\x1b[2J")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        _ = s.buffer


def test_protected_output_wraps_once_and_restores(capsys):
    import sys

    before = sys.stdout
    with protected_output():
        assert isinstance(sys.stdout, SafeTextStream) and isinstance(sys.stderr, SafeTextStream)
        inner = sys.stdout
        with protected_output():
            assert sys.stdout is inner
        print("x" + CLIPBOARD)
    assert sys.stdout is before
    assert capsys.readouterr().out == f"x{HIDDEN_MARK}␛]52;c;ZWNobyBoaQ==␛\\\n"


def test_diff_of_keys_that_are_digits_only_to_unicode(tmp_path, capsys):
    """A key such as ``³`` (a digit to ``str.isdigit``, not to ``int``) once crashed the
    ordering of payload changes; found by the property test above."""
    a = recording(tool(0, "t", {"³": "x", "1": "y"}, "r"))
    b = recording(tool(0, "t", {"٣": "x", "2": "y"}, "r"))
    save_recording(a, tmp_path / "a.json")
    save_recording(b, tmp_path / "b.json")
    code, out, err = run(capsys, "diff", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 0, err
    assert "arguments removed /³" in out
