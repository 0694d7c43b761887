"""Every file the product is given is read by one reader: regular files only, user JSON
files up to a size limit (core.record.reader).

A FIFO given to any command or option used to hang it forever, and ``/dev/zero`` grew
memory until the kernel killed the process. Each case below runs in one child process
(a hang fails the test on the timeout, instead of hanging the suite) and must exit 2
with one line naming the file and what it is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from core.examples.sample_agent import get_order
from core.record.reader import USER_JSON_LIMIT, InputFileError, read_input
from tests.builders import ROOT, SAMPLES

BASE = "sample-agent-fault-corrupted-result.json"

#: every command and option that reads a file; ``{F}`` is where the bad input goes.
#: ``req`` stands for the id of an open requirement set up first.
CASES: list[tuple[str, list[str]]] = [
    ("info", ["info", "{F}"]),
    ("info --json", ["info", "{F}", "--json"]),
    ("open", ["open", "{F}"]),
    ("FILE (open)", ["{F}"]),
    ("serve", ["serve", "{F}", "--port", "1"]),
    ("validate", ["validate", "{F}"]),
    ("timeline", ["timeline", "{F}"]),
    ("diff BASE", ["diff", "{F}", "base.json"]),
    ("diff OTHER", ["diff", "base.json", "{F}"]),
    ("import", ["import", "{F}", "-o", "out.json"]),
    ("import --list", ["import", "{F}", "--list"]),
    ("export", ["export", "{F}", "--to", "otlp", "-o", "otlp.json"]),
    ("migrate", ["migrate", "{F}", "-o", "migrated.json"]),
    ("audit", ["audit", "{F}"]),
    ("metrics", ["metrics", "{F}"]),
    ("metrics --prices", ["metrics", "base.json", "--prices", "{F}"]),
    ("branch new --intervention", ["branch", "new", "base.json", "--at", "0", "--intervention", "{F}"]),
    ("branch new --policy", ["branch", "new", "base.json", "--at", "0", "--policy", "{F}"]),
    ("branch new BASE", ["branch", "new", "{F}", "--at", "0"]),
    ("replay BASE", ["replay", "{F}", "--branch", "b.json"]),
    ("replay --branch", ["replay", "base.json", "--branch", "{F}"]),
    ("replay --fixtures", ["replay", "base.json", "--branch", "b.json", "--fixtures", "{F}"]),
    ("fixture add --output", ["fixture", "add", "--tool", "t", "--any", "--output", "{F}"]),
    ("fixture add --args-json @", ["fixture", "add", "--tool", "t", "--args-json", "@{F}", "--output", "out1.json"]),
    ("fixture attach", ["fixture", "attach", "{REQ}", "{F}"]),
    ("sweep", ["sweep", "{F}"]),
    ("effects --base", ["effects", "--base", "{F}"]),
    ("keymap (CHASSIS_INSPECTOR_KEYMAP)", ["open", "base.json"]),
]

_DRIVER = textwrap.dedent(
    """
    import json, os, sys
    from inspector.cli import main

    cases, bad, req = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    results = []
    for name, args in cases:
        args = [a.replace("{F}", bad).replace("{REQ}", req) for a in args]
        if name.startswith("keymap"):
            os.environ["CHASSIS_INSPECTOR_KEYMAP"] = bad
        else:
            os.environ.pop("CHASSIS_INSPECTOR_KEYMAP", None)
        err_r, err_w = os.pipe()
        saved = os.dup(2)
        os.dup2(err_w, 2)
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(err_w)
        err = os.read(err_r, 1 << 16).decode(errors="replace")
        os.close(err_r)
        results.append([name, code, err])
        print(json.dumps([name, code]), file=sys.stdout, flush=True)
    print("RESULTS " + json.dumps(results), flush=True)
    """
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with a base, a branch file, fixture outputs, a paused replay (an open
    requirement) in the default workspace, a FIFO and a link to /dev/zero."""
    from inspector.cli import main

    d = tmp_path_factory.mktemp("inputs")
    shutil.copy(SAMPLES / BASE, d / "base.json")
    (d / "out1.json").write_text('{"content": "ok"}')
    os.mkfifo(d / "fifo")
    cwd = os.getcwd()
    os.chdir(d)
    try:
        base = json.loads((d / "base.json").read_text())
        seq = base["metadata"]["fault"]["seq"]
        fix = {"kind": "tool_result", "seq": seq, "result": {"content": get_order("A1001")}}
        (d / "fix.json").write_text(json.dumps(fix))
        (d / "policy.json").write_text(json.dumps({"model": "live"}))
        assert main(["branch", "new", "base.json", "--at", "0", "-o", "b.json"]) == 0
        assert (
            main(
                [
                    "branch",
                    "new",
                    "base.json",
                    "--at",
                    str(seq),
                    "--intervention",
                    "fix.json",
                    "--policy",
                    "policy.json",
                ]
                + ["-o", "paused.json"]
            )
            == 0
        )
        assert (
            main(["replay", "base.json", "--branch", "paused.json", "--executor", "recorded", "--trust-executor"]) == 3
        )
    finally:
        os.chdir(cwd)
    return d


def _open_requirement(folder) -> str:
    from core.workspace import Workspace

    with Workspace.open(folder / ".chassis-inspector", create=False) as ws:
        [req] = ws.requirements(open_only=True)
    return req.id


@pytest.mark.parametrize("bad", ["fifo", "/dev/zero"])
def test_no_command_reads_a_file_that_is_not_regular(folder, bad):
    """Every case exits 2 at once with one line naming the file and its kind; the whole
    run is one child process, so a hang fails on the timeout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CHASSIS_INSPECTOR_KEYMAP", None)
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(CASES), bad, _open_requirement(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULTS ")]
    assert lines, f"the driver stopped: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    results = json.loads(lines[0].removeprefix("RESULTS "))
    kind = "a named pipe (FIFO)" if bad == "fifo" else "a character device"
    assert len(results) == len(CASES) >= 22
    for name, code, err in results:
        assert code == 2, (name, code, err)
        assert "Traceback" not in err, (name, err)
        assert f"{bad}: is {kind}, not a regular file" in err, (name, err)
        assert len(err.strip().splitlines()) == 1, (name, err)


def test_user_json_size_limit(tmp_path, capsys):
    """User JSON files stop at USER_JSON_LIMIT (checked on the size before reading: a
    sparse file costs nothing); recordings have no limit."""
    from inspector.cli import main

    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(USER_JSON_LIMIT + 1)
    with pytest.raises(InputFileError, match=r"is 64\.0 MiB; a file may be at most 64 MiB"):
        read_input(big, limit=USER_JSON_LIMIT)
    (tmp_path / "ok.json").write_text("[]")
    assert read_input(tmp_path / "ok.json", limit=USER_JSON_LIMIT) == b"[]"
    shutil.copy(SAMPLES / BASE, tmp_path / "base.json")
    os.chdir(tmp_path)
    code = main(["branch", "new", "base.json", "--at", "0", "--intervention", str(big)])
    err = capsys.readouterr().err
    assert code == 2
    assert "big.json: is 64.0 MiB; an intervention file may be at most 64 MiB" in err
