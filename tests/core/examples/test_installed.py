"""A non-editable install ships the sample agent under the name recordings hold.

The bundled recordings name ``core.sample_agent:make_executor`` in ``metadata.executor``;
the agent lives in :mod:`core.examples.sample_agent` and the old name is a one-line
re-export. This builds the project's wheel offline (no build isolation, no index),
installs it into a scratch folder, and replays a bundled recording with the executor
the recording names, in a fresh interpreter whose ``core`` is the installed copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import ROOT, SAMPLES

CHECK = r"""
import json, sys
import core
from core.record.recording import Recording
from core.replay.engine import ReplayEngine
from core.replay.branch import new_branch
from core.replay.replays import resolve_executor

base_path = sys.argv[1]
base = Recording.load(base_path)
executor, spec = resolve_executor("recorded", base, trust_executor=True)
branch = new_branch(base, base_path, at=0, interventions=[])
outcome = ReplayEngine(base, branch, executor=executor).run()
schema = __import__("core.record.schema", fromlist=["SCHEMA_PATH"]).SCHEMA_PATH
print(json.dumps({
    "core": core.__file__,
    "spec": spec,
    "status": outcome.status,
    "comparability": outcome.comparability.level,
    "schema": schema.is_file(),
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built as a wheel and installed (not editable) into a scratch folder."""
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("core", "inspector"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--target", str(target), str(src)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return target


def test_recorded_executor_name_works_from_an_installed_wheel(installed: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    shutil.copy2(SAMPLES / "sample-agent-fault-tool-error.json", base)
    assert json.loads(base.read_text())["metadata"]["executor"] == "core.sample_agent:make_executor"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(installed)
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, str(base)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert Path(out["core"]).resolve().is_relative_to(installed.resolve()), out["core"]
    assert out["spec"] == "core.sample_agent:make_executor"
    assert out["schema"] is True
    # a branch without interventions replays the base identically with the wired agent
    assert (out["status"], out["comparability"]) == ("completed", "full")
