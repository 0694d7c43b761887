"""Fixtures of the proxy tests: a scripted upstream on 127.0.0.1, the agents' commands,
and record / replay helpers (the agents are real programs using the official SDKs)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.proxy.recorder import RecordResult, record_command
from core.record.recording import Recording
from core.replay.branch import Policy, new_branch
from core.replay.replays import resume_replay, start_replay
from core.workspace import Workspace

from .upstream import API_KEY, Upstream

AGENTS = Path(__file__).parent / "agents"

pytest.importorskip("openai")
pytest.importorskip("anthropic")


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    up = Upstream().start()
    yield up
    up.stop()


def agent(name: str, *args: str) -> list[str]:
    return [sys.executable, str(AGENTS / f"{name}.py"), *args]


def agent_env() -> dict[str, str]:
    env = dict(os.environ)
    for k in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"):
        env.pop(k, None)
    env["OPENAI_API_KEY"] = API_KEY
    env["ANTHROPIC_API_KEY"] = API_KEY
    return env


def record(argv: list[str], out: Path, up: Upstream, **kw: Any) -> RecordResult:
    return record_command(
        argv,
        out,
        upstream_openai=up.openai_url,
        upstream_anthropic=up.anthropic_url,
        env=kw.pop("env", agent_env()),
        echo=False,
        **kw,
    )


def replay(
    path: Path,
    ws_dir: Path,
    *,
    argv: list[str] | None = None,
    interventions: list[Any] | None = None,
    policy: Policy | None = None,
    at: int = 0,
) -> Any:
    from core.replay.boundary import ExecutorChoice

    base = Recording.load(path)
    spec = "cmd:" + shlex.join(argv) if argv else base.metadata["executor"]
    br = new_branch(base, str(path), at=at, interventions=interventions, policy=policy)
    ws = Workspace.open(ws_dir)
    record_, outcome = start_replay(ws, str(path), br, executor=ExecutorChoice(spec, "command line"), base=base)
    return ws, record_, outcome


def resume(ws: Workspace, replay_id: str) -> Any:
    return resume_replay(ws, replay_id)


def call_view(records: list[Any]) -> list[tuple[Any, ...]]:
    """What must be identical between a recording and its replay's events: each call's
    kind, key, name and answer."""
    out = []
    for r in records:
        if r.kind == "tool":
            out.append(("tool", r.key, r.tool, r.tool_call_id, r.result.to_json_obj()))
        elif r.kind == "model":
            out.append(("model", r.key, r.model, r.response.to_json_obj() if r.response else None, r.error))
    return out


def files_hold(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and needle.encode() in p.read_bytes():
            hits.append(p)
    return hits
