"""Executors are code: one named by a recording runs only with consent, never from the
current folder; a dry run never imports one (docs/replay.md, "Executors are code").

Each case runs ``python -m inspector`` in a folder holding the recording and a module
``beside_it.py`` that the recording names in ``metadata.executor``. Importing that
module writes a marker file, so "imported" is observed, not assumed; with
``python -m`` the current folder is on ``sys.path[0]``, the way a module beside a
downloaded recording used to run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import BranchError
from core.record.recording import Recording
from core.replay.boundary import ExecutorChoice, choose_executor, load_executor
from tests.builders import ROOT, SAMPLES

BASE = SAMPLES / "sample-agent-fault-corrupted-result.json"

MODULE = """
import pathlib
pathlib.Path("IMPORTED").write_text("beside_it was imported")
from core.sample_agent import make_executor as make
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    doc = json.loads(BASE.read_text())
    doc["metadata"]["executor"] = "beside_it:make"  # metadata is outside the digest
    (tmp_path / "base.json").write_text(json.dumps(doc))
    (tmp_path / "beside_it.py").write_text(MODULE)
    return tmp_path


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def branch(folder: Path) -> None:
    proc = run(folder, "branch", "new", "base.json", "--at", "0", "-o", "b.json")
    assert proc.returncode == 0, proc.stderr


REFUSED = [
    ["replay", "base.json", "--branch", "b.json", "--executor", "recorded"],
    ["sweep", "base.json", "--executor", "recorded", "--candidates", "errors"],
    ["audit", "base.json", "--executor", "recorded"],
]


@pytest.mark.parametrize("args", REFUSED, ids=["replay", "sweep", "audit"])
def test_an_executor_named_by_the_recording_needs_consent(folder: Path, args: list[str]) -> None:
    branch(folder)
    stored = [run(folder, what, "list", "--json").stdout for what in ("branch", "replay")]
    proc = run(folder, *args)
    assert proc.returncode == 2
    assert "the recording names the executor 'beside_it:make'" in proc.stderr
    assert "--trust-executor" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (folder / "IMPORTED").exists()
    assert [run(folder, what, "list", "--json").stdout for what in ("branch", "replay")] == stored  # nothing stored
    assert json.loads(stored[1]) == []


@pytest.mark.parametrize("args", REFUSED, ids=["replay", "sweep", "audit"])
def test_with_consent_it_is_still_never_taken_from_the_current_folder(folder: Path, args: list[str]) -> None:
    branch(folder)
    proc = run(folder, *args, "--trust-executor")
    assert proc.returncode == 2
    assert "cannot import 'beside_it'" in proc.stderr
    assert not (folder / "IMPORTED").exists()


@pytest.mark.parametrize("executor", ["recorded", "beside_it:make"])
def test_a_dry_run_never_imports_an_executor(folder: Path, executor: str) -> None:
    branch(folder)
    proc = run(folder, "replay", "base.json", "--branch", "b.json", "--dry-run", "--executor", executor)
    assert proc.returncode == 0, proc.stderr
    assert "not imported by a dry run" in proc.stdout
    assert ("runs it only with --trust-executor" in proc.stdout) == (executor == "recorded")
    assert not (folder / "IMPORTED").exists()


def test_an_executor_the_user_names_is_found_in_the_current_folder(folder: Path) -> None:
    branch(folder)
    proc = run(folder, "replay", "base.json", "--branch", "b.json", "--executor", "beside_it:make", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (folder / "IMPORTED").exists()
    assert json.loads(proc.stdout)["executor"] == "beside_it:make"


def test_a_trusted_installed_executor_runs(folder: Path) -> None:
    doc = json.loads((folder / "base.json").read_text())
    doc["metadata"]["executor"] = "core.sample_agent:make_executor"
    (folder / "base.json").write_text(json.dumps(doc))
    branch(folder)
    proc = run(folder, "replay", "base.json", "--branch", "b.json", "--executor", "recorded", "--trust-executor")
    assert proc.returncode == 0, proc.stderr
    assert "executor        core.sample_agent:make_executor" in proc.stdout


def test_choose_executor_imports_nothing_and_names_the_origin() -> None:
    base = Recording.load(BASE)
    assert choose_executor(None, base) is None
    assert choose_executor("m:f", base) == ExecutorChoice("m:f", "command line")
    assert choose_executor("recorded", base, trust_recorded=True) == ExecutorChoice(
        "core.sample_agent:make_executor", "recording"
    )
    with pytest.raises(BranchError, match="add --trust-executor"):
        choose_executor("recorded", base)
    with pytest.raises(BranchError, match="must be written module:function"):
        choose_executor("nocolon", base)
    base.metadata["executor"] = "nocolon"
    with pytest.raises(BranchError, match="metadata.executor 'nocolon' must be written module:function"):
        choose_executor("recorded", base, trust_recorded=True)


def test_load_executor_path_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The current folder is searched for an executor the user names, never for one a
    recording names, and ``sys.path`` is left as it was either way."""
    (tmp_path / "cwd_exec.py").write_text("from core.sample_agent import make_executor as make\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))] + [""])
    before = list(sys.path)
    with pytest.raises(ValueError, match="cannot import 'cwd_exec'"):
        load_executor(ExecutorChoice("cwd_exec:make", "recording"))
    assert sys.path == before
    assert load_executor(ExecutorChoice("cwd_exec:make", "command line")) is not None
    assert sys.path == before
    sys.modules.pop("cwd_exec", None)


def test_a_resume_imports_the_executor_by_the_rule_it_started_with(tmp_path: Path, monkeypatch) -> None:
    """The origin is stored with the replay: a resume of a replay whose executor came from
    the recording imports it again without the current folder and needs no new consent;
    one the user named is found as named."""
    import core.replay.replays as replays
    from core.examples.sample_agent import get_order
    from inspector.cli import main

    seen: list[ExecutorChoice] = []
    real = replays.load_executor

    def spy(choice):
        seen.append(choice)
        return real(choice)

    monkeypatch.setattr(replays, "load_executor", spy)
    monkeypatch.chdir(tmp_path)
    base = json.loads(BASE.read_text())
    seq = base["metadata"]["fault"]["seq"]
    (tmp_path / "base.json").write_text(json.dumps(base))
    fix = {"kind": "tool_result", "seq": seq, "result": {"content": get_order("A1001")}}
    (tmp_path / "fix.json").write_text(json.dumps(fix))
    (tmp_path / "policy.json").write_text(json.dumps({"model": "live"}))
    args = ["branch", "new", "base.json", "--at", str(seq), "--intervention", "fix.json", "--policy", "policy.json"]
    assert main([*args, "-o", "b.json"]) == 0
    ids = []
    for executor in (["--executor", "recorded", "--trust-executor"], ["--executor", "core.sample_agent:make_executor"]):
        assert main(["replay", "base.json", "--branch", "b.json", *executor, "--json"]) == 3  # paused
    from core.workspace import Workspace

    with Workspace.open(tmp_path / ".chassis-inspector", create=False) as ws:
        ids = [r.id for r in ws.list_replays()]
        assert [ws.get_replay(i).executor_origin for i in ids] == ["recording", "command line"]
    seen.clear()
    for rid in ids:
        assert main(["replay", "resume", rid, "--json"]) == 3  # no --trust-executor needed again
    assert [(c.spec, c.origin) for c in seen] == [
        ("core.sample_agent:make_executor", "recording"),
        ("core.sample_agent:make_executor", "command line"),
    ]


def test_never_from_the_current_folder_reached_through_a_link(folder: Path, tmp_path: Path) -> None:
    """``PYTHONPATH=$PWD`` in a folder reached through a symbolic link names the current
    folder by another path: it is still taken off the import path."""
    branch(folder)
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(folder, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{link}"}
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", *REFUSED[0], "--trust-executor"],
        cwd=link,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "cannot import 'beside_it'" in proc.stderr
    assert not (folder / "IMPORTED").exists()
