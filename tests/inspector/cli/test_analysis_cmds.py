"""CLI: diff, metrics, audit — JSON shapes, text output, one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.record.io import save_recording
from inspector.cli import main
from inspector.cli.analysis_cmds import changed_strings
from tests.builders import ROOT, TESTS, recording, tool
from tests.core.analysis.test_audit import run_with_unused_tool_result

DATA = TESTS / "data" / "analysis"
OK = str(DATA / "sample-agent-success.json")
FAULTY = str(DATA / "sample-agent-fault-corrupted-result.json")


def run_json(capsys, *args):
    assert main(list(args)) == 0
    return orjson.loads(capsys.readouterr().out)


def test_diff_json_of_identical_runs(capsys):
    doc = run_json(capsys, "diff", OK, OK, "--json")
    assert doc["first_divergence"] is None
    assert {o["op"] for o in doc["ops"]} == {"same"} and len(doc["ops"]) == 11
    assert doc["output_diff"]["changed"] is False and doc["tool_diffs"] == []


def test_diff_json_of_a_faulty_run(capsys):
    doc = run_json(capsys, "diff", OK, FAULTY, "--json")
    assert doc["first_divergence"] == {"base_seq": 6, "replay_seq": 6, "dimension": "tool result"}
    assert doc["counts"] == {"same": 3, "changed": 1, "removed": 7, "inserted": 1}
    assert doc["ops"][3] == {
        "op": "changed",
        "kind": "tool",
        "name": "get_order",
        "base_seq": 6,
        "other_seq": 6,
        "dimension": "tool result",
    }
    (td,) = doc["tool_diffs"]
    assert td["result"] == [{"op": "changed", "path": "/content/customer_id", "old": "C-1001", "new": "C-2002"}]
    assert doc["output_diff"]["mode"] == "json"


def test_diff_text(capsys):
    assert main(["diff", OK, FAULTY]) == 0
    out = capsys.readouterr().out
    assert "first divergence: tool result at base seq 6, other seq 6" in out
    assert "result changed /content/customer_id: C-1001 → C-2002" in out
    assert main(["diff", OK, OK]) == 0
    assert "first divergence: none (the runs are the same)" in capsys.readouterr().out


def test_metrics_json_csv_and_table(capsys):
    rows = run_json(capsys, "metrics", FAULTY, OK, "--json")
    assert [(r["run"], r["steps"], r["tool_calls"], r["outcome"]) for r in rows] == [
        (FAULTY, 3, 2, "failure"),
        (OK, 6, 5, "success"),
    ]
    assert main(["metrics", FAULTY, "--csv"]) == 0
    header, line = capsys.readouterr().out.strip().splitlines()
    assert header.startswith("run,records,steps,model_calls,tool_calls,tool_errors,")
    assert line.startswith(f"{FAULTY},12,3,3,2,0,")
    assert main(["metrics", FAULTY]) == 0
    assert "failure" in capsys.readouterr().out


def test_metrics_table_says_what_is_not_recorded_and_what_is_unknown(capsys):
    """tau-bench records no usage and no duration: those cells say ``not recorded``; no
    price and no recorded total give the cost, which says ``unknown`` (``-`` read as a
    figure); JSON keeps them null."""
    path = str(ROOT / "sample_recordings" / "tau-bench-airline-task0-trial0.json")
    assert main(["metrics", path]) == 0
    head, row = capsys.readouterr().out.splitlines()
    cells = dict(zip(head.split(), row.replace("not recorded", "not_recorded").split()))
    assert cells["input_tokens"] == cells["duration_seconds"] == "not_recorded"
    assert cells["cost"] == "unknown"
    assert main(["metrics", path, "--json"]) == 0
    got = orjson.loads(capsys.readouterr().out)
    got = got[0] if isinstance(got, list) else got
    assert got["cost"] is None and got["input_tokens"] is None


def test_metrics_compare_prices_and_outcome(capsys, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_bytes(orjson.dumps({"scripted-support-v1": {"input": 1e6, "output": 0}}))
    (row,) = run_json(
        capsys,
        "metrics",
        "--compare",
        OK,
        FAULTY,
        "--json",
        "--prices",
        str(prices),
        "--outcome",
        "tests.core.analysis.predicates:refund_issued",
    )
    assert row["divergence_base_seq"] == 6 and row["divergence_step"] == 1
    assert row["cost_delta"] == pytest.approx((76 + 90 + 139) - 881)
    assert (row["outcome_base"], row["outcome_other"], row["outcome_changed"]) == ("success", "failure", True)


def test_audit_json_and_text(capsys, tmp_path):
    f = tmp_path / "run.json"
    run_with_unused_tool_result().save(f)
    doc = run_json(capsys, "audit", str(f), "--json")
    assert doc["unused"] == [2] and doc["final_seq"] == 3 and doc["knockout"].startswith("not run")
    assert main(["audit", str(f)]) == 0
    out = capsys.readouterr().out
    assert "unused      its result never reached a later model request" in out
    assert "contributed 3, unused 1" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["metrics", OK, "--csv", "--json"], "--csv and --json cannot be used together"),
        (["metrics", OK, "--compare"], "--compare needs a base and at least one other recording"),
        (["metrics", OK, "--outcome", "nocolon"], "must be written module:function"),
        (["metrics", OK, "--prices", "/nonexistent/prices.json"], "no such price table"),
        (["diff", OK, "/nonexistent/x.json"], "/nonexistent/x.json"),
        (["audit", "/nonexistent/x.json"], "/nonexistent/x.json"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("chassis-inspector: ") and message in err


def test_malformed_recording_in_a_subprocess_has_no_traceback(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text('{"format": "chassis.replay", "format_version": 1, "records": [{"seq": 0, "kind": "to')
    for cmd in (["diff", OK, str(bad)], ["metrics", str(bad)], ["audit", str(bad)]):
        proc = subprocess.run(
            [sys.executable, "-m", "inspector", *cmd], capture_output=True, text=True, cwd=ROOT, check=False
        )
        assert proc.returncode == 2, cmd
        assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1 and str(bad) in proc.stderr


def test_audit_final_output_on_one_line_without_escapes(capsys, tmp_path):
    from tests.builders import model, msg, recording

    f = tmp_path / "run.json"
    recording(model(0, [msg("user", "hi")], "line one\nline two")).save(f)
    assert main(["audit", str(f)]) == 0
    out = capsys.readouterr().out
    assert "final output (seq 0): line one line two" in out and "\\n" not in out


def test_metrics_table_says_not_recorded(capsys, tmp_path):
    from tests.builders import model, msg, recording

    f = tmp_path / "run.json"
    recording(model(0, [msg("user", "hi")], "answer")).save(f)
    assert main(["metrics", str(f)]) == 0
    assert capsys.readouterr().out.splitlines()[1].count("not recorded") == 3
    (row,) = run_json(capsys, "metrics", str(f), "--json")
    assert row["input_tokens"] is None and row["duration_seconds"] is None


def test_audit_of_an_imported_who_and_when_run(capsys, tmp_path):
    """`import SRC -o OUT` then `audit OUT`: WebSurfer's steps (carried as assistant
    messages named WebSurfer) contribute and the final output is its last report."""
    src = TESTS / "data" / "real_traces" / "who_and_when" / "hand-crafted_1.json"
    out = tmp_path / "hc1.json"
    assert main(["import", str(src), "-o", str(out)]) == 0
    capsys.readouterr()
    doc = run_json(capsys, "audit", str(out), "--json")
    assert doc["unused"] == [] and doc["final_seq"] == 28 and 12 in doc["contributed"]
    assert main(["audit", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("final output (seq 28): I clicked the browser back button.")
    assert "Next speaker" not in text.splitlines()[0]


# --------------------------------------------------------------------------- diff of long strings

_text = st.text(alphabet=st.sampled_from("ab \n\r\t\x1b[]\u202e\x07é"), max_size=300)


@settings(max_examples=300, deadline=None)
@given(_text, _text, _text, _text)
def test_changed_strings_show_the_first_difference(prefix, a, b, suffix):
    """Both sides show the region from just before the first difference, escaped (no raw
    control character), within the width."""
    old, new = prefix + "X" + a + suffix, prefix + "Y" + b + suffix
    left, right, at = changed_strings(old, new, 38)
    assert at == len(prefix)
    for side in (left, right):
        assert len(side) <= 38
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c == "\u202e" for c in side)
    assert "X" in left and "Y" in right  # the first changed character is on the line


def test_cli_diff_of_long_strings_shows_the_changed_region(tmp_path, capsys):
    body = ("line of text\r\n" * 40) + "the value is {}\r\n" + ("tail\r\n" * 40)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_recording(recording(tool(0, "read", {"p": "x"}, body.format(41))), a)
    save_recording(recording(tool(0, "read", {"p": "x"}, body.format(42))), b)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if "result changed /content" in x]
    assert "value is 41" in line and "value is 42" in line
    assert "(from character 574 of 817 → 817)" in line
    assert "\r" not in out and "␍" in line


@pytest.mark.parametrize("filler", ["\u202e", "\u200d", "\x1b", "\n", "é"])
def test_the_first_difference_is_on_the_line_whatever_the_context_escapes_to(filler):
    left, right, at = changed_strings("A" * 50 + filler * 30 + "B", "A" * 50 + filler * 30 + "C")
    assert at == 80
    assert left.endswith("B") and right.endswith("C") and left[:-1] == right[:-1]
    assert len(left) <= 38 and left.count("⚠") <= 1
