"""Exhaustion is not absence (the seed document: ``ReplayMismatch`` distinguishes
``reason="exhausted"`` — the key's records were consumed — from ``"missing"`` — none
were ever recorded).

A third identical call after two recorded answers opens a requirement that says the key's
two recorded answers were used by earlier calls (``mismatch: exhausted``,
``recorded_answers: 2``), and ``requirements`` prints that instead of "differs at no
difference"; with ``require_fixtures: false`` the failure's reason is ``exhausted``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.record.canonical import model_key, tool_key
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)
from core.replay.branch import Policy, new_branch
from core.replay.engine import ReplayEngine
from inspector.cli import main

M = "m"


def twice_base() -> Recording:
    """Two model calls that each look ``x`` up (one key, recorded twice), then a final
    answer; ``metadata.task`` says how often the executor's agent looks it up."""
    msgs = [ChatMessage(role="user", content="look x up")]
    records: list[Any] = []
    seq = 0
    for k in range(2):
        call = ToolCall(id=f"c{k}", name="lookup", arguments={"q": "x"})
        req = ModelRequest(messages=list(msgs))
        reply = ChatMessage(role="assistant", content="", tool_calls=[call])
        records.append(
            ModelRecord(seq=seq, key=model_key(M, req), model=M, request=req, response=ModelResponse(message=reply))
        )
        records.append(
            ToolRecord(
                seq=seq + 1,
                key=tool_key("lookup", call.arguments),
                tool="lookup",
                arguments=call.arguments,
                tool_call_id=call.id,
                result=ToolResult(content=f"x is {k}"),
            )
        )
        seq += 2
        msgs += [reply, ChatMessage(role="tool", content=f"x is {k}", tool_call_id=call.id)]
    req = ModelRequest(messages=list(msgs))
    records.append(
        ModelRecord(
            seq=seq,
            key=model_key(M, req),
            model=M,
            request=req,
            response=ModelResponse(message=ChatMessage(role="assistant", content="done")),
        )
    )
    rec = Recording(records=records, metadata={"task": {"lookups": ["x", "x", "x"]}, "executor": EXECUTOR})
    return Recording.loads(rec.dumps())


EXECUTOR = "tests.core.replay.test_exhausted:make_executor"


class LooksUp:
    """An executor whose agent only calls ``lookup`` for each query of its task."""

    def run(self, runtime: Any, task: Any) -> Any:
        return [runtime.call_tool("lookup", {"q": q}, f"call-{i}").content for i, q in enumerate(task["lookups"])]

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        raise AssertionError("no live model call expected")

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        raise AssertionError("no live tool call expected")


def make_executor() -> LooksUp:
    return LooksUp()


def test_a_third_identical_call_is_exhausted_not_missing() -> None:
    base = twice_base()
    out = ReplayEngine(base, new_branch(base, "b.json", at=0), replay_id="rp-ex", executor=LooksUp()).run()
    assert out.status == "paused"
    req = out.requirement
    assert req is not None and req.kind == "tool" and req.name == "lookup"
    assert (req.mismatch, req.recorded_answers) == ("exhausted", 2)
    assert "the key's 2 recorded answers were used by earlier calls" in req.reason and "exhausted" in req.reason
    assert list(out.sources.values()) == ["recorded", "recorded"]  # the two recorded answers, then none


def test_a_call_never_recorded_is_missing() -> None:
    base = twice_base()
    base.metadata["task"] = {"lookups": ["x", "y"]}
    out = ReplayEngine(base, new_branch(base, "b.json", at=0), replay_id="rp-mi", executor=LooksUp()).run()
    req = out.requirement
    assert req is not None and (req.mismatch, req.recorded_answers) == ("missing", None)
    assert "no recorded call" in req.reason


def test_without_require_fixtures_the_failure_says_exhausted() -> None:
    base = twice_base()
    branch = new_branch(base, "b.json", at=0, policy=Policy(require_fixtures=False))
    out = ReplayEngine(base, branch, executor=LooksUp()).run()
    assert out.status == "failed" and out.error is not None and out.error.type == "ReplayMismatch"
    assert ": exhausted (the key's 2 recorded answers were used by earlier calls" in out.error.message


@pytest.fixture()
def cwd(tmp_path: Path, monkeypatch: Any) -> Path:
    monkeypatch.chdir(tmp_path)
    twice_base().save(tmp_path / "base.json")
    return tmp_path


def test_requirements_command_says_the_recorded_answers_were_used(cwd: Path, capsys: Any) -> None:
    assert main(["branch", "new", "base.json", "--at", "0", "-o", "b.json"]) == 0
    assert main(["replay", "base.json", "--branch", "b.json", "--executor", EXECUTOR]) == 3
    capsys.readouterr()
    assert main(["requirements", "--open"]) == 0
    out = capsys.readouterr().out
    assert "recorded answers: 2, all used by earlier calls of the replay (exhausted)" in out
    assert "no difference" not in out and "differs at" not in out
    assert "nearest recorded call: seq 1 lookup; the same call" in out
    assert main(["requirements", "--open", "--json"]) == 0
    [req] = json.loads(capsys.readouterr().out)
    assert (req["mismatch"], req["recorded_answers"]) == ("exhausted", 2)
