"""Shared fixtures: small recordings built with the core API."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.canonical import model_key, tool_key
from core.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    SnapshotRecord,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)

DATA = Path(__file__).parent / "data"


def make_recording() -> Recording:
    """A small two-step run with one tool error, one snapshot, one lifecycle, one interrupt."""
    msgs = [ChatMessage(role="system", content="You are terse."), ChatMessage(role="user", content="List /tmp")]
    req1 = ModelRequest(messages=msgs, tools=[{"name": "ls"}], stop=["END"], options={"temperature": 0})
    call = ToolCall(id="call_1", name="ls", arguments={"path": "/tmp"})
    resp1 = ModelResponse(
        message=ChatMessage(role="assistant", content="", tool_calls=[call]),
        finish_reason="tool_calls",
        usage=Usage(input_tokens=20, output_tokens=5),
    )
    req2 = ModelRequest(
        messages=[*msgs, resp1.message, ChatMessage(role="tool", content="permission denied", tool_call_id="call_1")],
        tools=[{"name": "ls"}],
        stop=["END"],
        options={"temperature": 0},
    )
    resp2 = ModelResponse(
        message=ChatMessage(role="assistant", content="I cannot list /tmp."),
        finish_reason="stop",
        usage=Usage(input_tokens=40, output_tokens=7),
    )
    records = [
        SnapshotRecord(
            seq=0,
            at="2026-01-01T00:00:00Z",
            generation_id="g1",
            composition={"plugins": ["fs"], "tools": ["ls"], "capabilities": ["MODEL"]},
        ),
        LifecycleRecord(seq=1, at="2026-01-01T00:00:00Z", event="generation.publish", details={"generation": "g1"}),
        ModelRecord(
            seq=2,
            at="2026-01-01T00:00:01Z",
            run_id="r1",
            key=model_key("m", req1),
            model="m",
            request=req1,
            response=resp1,
            duration_seconds=0.5,
        ),
        ToolRecord(
            seq=3,
            at="2026-01-01T00:00:02Z",
            run_id="r1",
            key=tool_key("ls", {"path": "/tmp"}),
            tool="ls",
            arguments={"path": "/tmp"},
            tool_call_id="call_1",
            result=ToolResult(
                content="permission denied", error=ErrorInfo(type="PermissionError", message="permission denied")
            ),
            duration_seconds=0.01,
        ),
        ModelRecord(
            seq=4,
            at="2026-01-01T00:00:03Z",
            run_id="r1",
            key=model_key("m", req2),
            model="m",
            request=req2,
            response=resp2,
            duration_seconds=0.7,
        ),
        InterruptRecord(seq=5, at="2026-01-01T00:00:04Z", run_id="r1", value={"reason": "confirm"}),
    ]
    return Recording(
        metadata={"dataset": "unit", "outcome": "failure"},
        session=SessionInfo(mode="record", producer="tests"),
        records=records,
    )


@pytest.fixture
def recording() -> Recording:
    return make_recording()


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "rec.json"
    make_recording().save(path)
    return path
