"""File names, ids and outputs a hostile user (or an unlucky system) gives the commands:
names and ids that are not UTF-8, a file name over 255 bytes, standard output on a full
disk. Each is one line on stderr naming the file (or the value), the place and the
reason, exit 2 — never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from inspector.cli import main
from tests.builders import ROOT, make_recording

SAMPLES = ROOT / "sample_recordings"
NOT_UTF8 = os.fsdecode(b"non\xffutf8.json")  # what Python makes of the bytes: 'non\udcffutf8.json'
LONG = "a" * 300 + ".json"  # a file name component over 255 bytes (ENAMETOOLONG)


@pytest.fixture()
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "sample-agent-fault-corrupted-result.json", tmp_path / "base.json")
    (tmp_path / "none.json").write_text("[]")
    return tmp_path


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args, expect: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert expect in err, err
    return err


# -- names and ids that are not UTF-8 -------------------------------------------------


@pytest.mark.parametrize("command", ["info", "timeline", "audit", "validate"])
def test_a_file_name_that_is_not_utf8_is_read_and_shown_escaped(cwd, capsys, command):
    shutil.copy(cwd / "base.json", cwd / NOT_UTF8)
    code, out, err = cli(capsys, command, NOT_UTF8)
    assert code == 0, err
    assert "Traceback" not in err
    out.encode("utf-8")  # printable: the stand-in, never the lone surrogate
    err.encode("utf-8")


@pytest.mark.parametrize(
    "command",
    [
        ["metrics"],
        ["metrics", "--json"],
        ["audit", "--json"],
        ["info", "--json"],
        ["diff", "--json", "@"],
        ["export", "--to", "otlp", "-o", "spans.json"],
        ["import", "-o", "imported.json"],
    ],
)
@pytest.mark.parametrize("source", ["recording", "swe_agent"])
def test_a_name_that_is_not_utf8_never_breaks_a_table_json_or_import(cwd, capsys, command, source):
    """The name reaches polars tables, JSON output and the imported run's
    ``metadata.source.file``: each holds it escaped (``\\xff``), never a traceback."""
    head, *rest = command
    args = [head, NOT_UTF8, *(NOT_UTF8 if a == "@" else a for a in rest)]
    if source == "recording":
        shutil.copy(cwd / "base.json", cwd / NOT_UTF8)
        if head == "import":  # a recording is not imported: said in one line, the name escaped
            refused(capsys, *args, expect="already a Chassis recording")
            return
    else:
        shutil.copy(
            ROOT / "tests" / "data" / "real_traces" / "swe_agent" / "pydicom__pydicom-1458.traj", cwd / NOT_UTF8
        )
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    assert "Traceback" not in err
    out.encode("utf-8")
    err.encode("utf-8")
    if command == ["import", "-o", "imported.json"]:
        meta = orjson.loads((cwd / "imported.json").read_bytes())["metadata"]
        assert meta["source"]["file"] == "non\\xffutf8.json"
    if "--json" in command and head in ("audit", "info"):
        assert "non\\\\xffutf8.json" in out  # the JSON string holds a backslash: escaped once more


def test_a_missing_file_whose_name_is_not_utf8(cwd, capsys):
    refused(capsys, "info", os.fsdecode(b"no\xffne.json"), expect="no\\udcffne.json: no such file")


def test_a_branch_of_a_base_whose_name_is_not_utf8_is_refused(cwd, capsys):
    shutil.copy(cwd / "base.json", cwd / NOT_UTF8)
    err = refused(
        capsys, "branch", "new", NOT_UTF8, "--at", 0, "--intervention", "none.json", "-o", "b.json",
        expect="the base's path 'non\\udcffutf8.json' is not valid UTF-8 text",
    )  # fmt: skip
    assert not (cwd / "b.json").exists() and "new branch of non\\udcffutf8.json" in err
    label = os.fsdecode(b"x\xff")
    refused(
        capsys, "branch", "new", "base.json", "--at", 0, "--intervention", "none.json", "--label", label,
        expect="the label 'x\\udcff' is not valid UTF-8 text",
    )  # fmt: skip


@pytest.mark.parametrize(
    "args, expect",
    [
        (["replay", "show", os.fsdecode(b"rp\xff")], "nothing is stored under 'rp\\udcff'"),
        (["requirements", "--approve", os.fsdecode(b"rq\xff")], "nothing is stored under 'rq\\udcff'"),
        (["replay", "base.json", "--branch", os.fsdecode(b"br\xff")], "nothing is stored under 'br\\udcff'"),
        (
            ["fixture", "add", "--tool", os.fsdecode(b"t\xff"), "--output", "out.json", "--any"],
            "cannot store 't\\udcff'",
        ),
        (
            ["fixture", "add", "--tool", "t", "--output", "out.json", "--any", "--scope", os.fsdecode(b"branch:b\xff")],
            "scope 'branch:b\\udcff': 'b\\udcff' is not a branch id",
        ),
    ],
)
def test_ids_that_are_not_utf8_are_one_line_errors(cwd, capsys, args, expect):
    (cwd / "out.json").write_bytes(orjson.dumps({"content": "ok"}))
    code, _, err = cli(capsys, "branch", "new", "base.json", "--at", 0, "--intervention", "none.json")
    assert code == 0, err  # a workspace exists
    refused(capsys, *args, expect=expect)


# -- a file name over 255 bytes ---------------------------------------------------------


@pytest.mark.parametrize("command", ["info", "timeline", "audit", "validate", "import"])
def test_an_input_name_over_255_bytes(cwd, capsys, command):
    extra = ["-o", "out.json"] if command == "import" else []
    err = refused(capsys, command, LONG, *extra, expect="File name too long")
    assert LONG in err


@pytest.mark.parametrize(
    "args",
    [
        ["migrate", "base.json", "-o", LONG],
        ["import", str(ROOT / "tests" / "data" / "importers" / "swe_agent_function_calling.traj"), "-o", LONG],
        ["branch", "new", "base.json", "--at", 0, "--intervention", "none.json", "-o", LONG],
    ],
)
def test_an_output_name_over_255_bytes(cwd, capsys, args):
    err = refused(capsys, *args, expect="File name too long")
    assert LONG in err


# -- standard output on a full disk ---------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    "args", [["info"], ["info", "--json"], ["timeline"], ["audit"], ["validate"], ["diff", "{base}"]]
)
def test_stdout_on_a_full_disk(tmp_path, args):
    base = tmp_path / "base.json"
    make_recording().save(base)
    argv = [a.format(base=base) for a in args] + [str(base)]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "inspector", *argv], stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT
        )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "chassis-inspector: cannot write the output: No space left on device\n"
