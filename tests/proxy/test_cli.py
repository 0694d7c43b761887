"""``record`` and ``replay --executor cmd:…`` from the command line, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.record.recording import Recording

from .conftest import agent, agent_env, files_hold
from .upstream import API_KEY


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inspector", *args],
        cwd=cwd,
        env=env or agent_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_record_and_replay_from_the_command_line(tmp_path: Path, upstream) -> None:
    env = {**agent_env(), "OPENAI_BASE_URL": upstream.openai_url}  # the upstream the user had
    p = cli("record", "-o", "run.json", "--", *agent("openai_agent", "--stream"), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Answer: no note for weather"  # the agent's own output, as it printed it
    assert "recorded 2 model call(s) and 1 tool call(s) the agent ran itself to run.json" in p.stderr
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["executor"].startswith("cmd:") and "openai_agent.py --stream" in rec.metadata["executor"]
    assert rec.metadata["recorder"]["upstreams"]["openai"] == upstream.openai_url

    p = cli("branch", "new", "run.json", "--at", "0", "-o", "b.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    # the recording names code to run: refused without consent, nothing stored
    p = cli("replay", "run.json", "--branch", "b.json", "--executor", "recorded", cwd=tmp_path)
    assert p.returncode == 2 and "--trust-executor" in p.stderr
    p = cli("replay", "run.json", "--branch", "b.json", "--executor", "recorded", "--dry-run", cwd=tmp_path)
    assert p.returncode == 0 and "side effects included" in p.stdout
    sent = upstream.model_requests()
    p = cli(
        "replay", "run.json", "--branch", "b.json", "--executor", "recorded", "--trust-executor", "--json", cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("side effects included") == 1  # said once
    out = json.loads(p.stdout)
    assert out["status"] == "completed" and out["comparability"]["level"] == "partial"
    assert upstream.model_requests() == sent
    assert files_hold(tmp_path, API_KEY) == []


def test_record_exit_code_is_the_commands(tmp_path: Path, upstream) -> None:
    p = cli(
        "record", "-o", "run.json", "--upstream-openai", upstream.openai_url, "--",
        *agent("openai_agent", "--exit", "5"), cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 5
    assert "marked incomplete: the command exited with status 5" in p.stderr
    assert Recording.load(tmp_path / "run.json").metadata["incomplete"] is True


def test_record_refuses_to_overwrite_and_reports_bad_commands(tmp_path: Path, upstream) -> None:
    (tmp_path / "run.json").write_text("{}")
    p = cli("record", "-o", "run.json", "--", "true", cwd=tmp_path)
    assert p.returncode == 2 and "exists" in p.stderr and "Traceback" not in p.stderr
    p = cli("record", "-o", "new.json", "--", "no-such-command-xyz", cwd=tmp_path)
    assert p.returncode == 2 and "command not found: 'no-such-command-xyz'" in p.stderr
    assert not (tmp_path / "new.json").exists()
    p = cli("record", "-o", "new.json", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_ctrl_c_keeps_what_was_recorded(tmp_path: Path, upstream) -> None:
    """Ctrl-C while the agent runs: the agent gets it too, the recording is written with
    every call made so far, marked incomplete; the exit code is the agent's."""
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector", "record", "-o", "run.json", "--upstream-openai", upstream.openai_url,
         "--", *agent("openai_agent", "--hang")],
        cwd=tmp_path, env=agent_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # as from a terminal: a test worker may run with SIGINT ignored, which a child inherits
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "Answer: no note for weather"  # its calls are done; now it hangs
    proc.send_signal(signal.SIGINT)
    try:
        _out, err = proc.communicate(timeout=60)
    finally:  # never leave a record (and its agent) behind
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "marked incomplete: interrupted (Ctrl-C)" in err
    rec = Recording.load(tmp_path / "run.json")
    assert rec.metadata["incomplete"] is True
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]
