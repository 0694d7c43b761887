"""Recordings built with the core API for the app tests (no hand-written JSON)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from core.io import save_recording
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

SYSTEM = "You are a software agent. Fix the failing test in the repository."
TASK = "The test test_parse_date fails with ValueError on '2024-02-30'. Make it raise a clear error instead."
UNIQUE_RESULT = "zebra-quartz-1458 appears exactly once in a tool result"

#: (tool, arguments, result content, error or None) for each step of the run
STEPS = [
    ("bash", {"command": "ls src"}, "dates.py\nparser.py\n__init__.py", None),
    (
        "bash",
        {"command": "cat src/dates.py"},
        "def parse_date(s):\n    y, m, d = s.split('-')\n    return date(int(y), int(m), int(d))\n" + UNIQUE_RESULT,
        None,
    ),
    (
        "edit",
        {"path": "src/dates.py", "old": "return date(", "new": "return safe_date("},
        None,
        ErrorInfo(type="EditRejected", message="edit would introduce a syntax error at line 3"),
    ),
    (
        "edit",
        {
            "path": "src/dates.py",
            "old": "return date(int(y), int(m), int(d))",
            "new": "try:\n    return date(int(y), int(m), int(d))\nexcept ValueError as e:\n    raise DateError(s) from e",
        },
        "edited src/dates.py",
        None,
    ),
    (
        "bash",
        {"command": "pytest -q tests/test_dates.py"},
        None,
        ErrorInfo(type="CommandFailed", message="exit status 1: 1 failed, 3 passed"),
    ),
    ("bash", {"command": "pytest -q tests/test_dates.py"}, "4 passed in 0.12s", None),
]


def build_recording(n_padding: int = 0) -> Recording:
    """A small but realistic run: snapshot + lifecycle, six model→tool steps (two tool
    errors), an interrupt, a final answer, shutdown. ``n_padding`` extra tool calls
    (ok) are appended before the end, for scrolling tests."""
    t0 = 1_767_225_600  # 2026-01-01T00:00:00Z
    seq = 0
    records = []

    def at(s: float) -> str:
        from datetime import datetime

        return datetime.fromtimestamp(t0 + s, tz=UTC).isoformat().replace("+00:00", "Z")

    records.append(
        SnapshotRecord(
            seq=seq,
            at=at(0),
            generation_id="gen-1",
            run_id="run-1",
            composition={
                "plugins": ["shell", "editor"],
                "tools": ["bash", "edit"],
                "capabilities": ["exec", "fs.write"],
            },
        )
    )
    seq += 1
    records.append(
        LifecycleRecord(seq=seq, at=at(0.1), event="plugin.mount", run_id="run-1", details={"plugin": "shell"})
    )
    seq += 1
    messages = [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=TASK)]
    tools = [{"name": "bash", "parameters": {"type": "object"}}, {"name": "edit", "parameters": {"type": "object"}}]
    clock = 1.0
    for i, (tool, args, content, error) in enumerate(STEPS):
        cid = f"call_{i + 1}"
        thought = f"Step {i + 1}: I will run {tool} to make progress on the date parsing bug."
        req = ModelRequest(messages=list(messages), tools=tools, options={"temperature": 0.0})
        resp = ModelResponse(
            message=ChatMessage(
                role="assistant", content=thought, tool_calls=[ToolCall(id=cid, name=tool, arguments=args)]
            ),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=500 + 120 * i, output_tokens=60 + i),
        )
        m = ModelRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            generation_id="gen-1",
            model="gpt-4o-2024-08-06",
            request=req,
            response=resp,
            duration_seconds=1.5 + i / 10,
        )
        m.key = m.compute_key()
        records.append(m)
        seq += 1
        clock += 2
        t = ToolRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            generation_id="gen-1",
            tool=tool,
            arguments=args,
            tool_call_id=cid,
            result=ToolResult(content=content, error=error),
            duration_seconds=0.25,
        )
        t.key = t.compute_key()
        records.append(t)
        seq += 1
        clock += 1
        messages = [
            *messages,
            resp.message,
            ChatMessage(
                role="tool",
                tool_call_id=cid,
                name=tool,
                content=content if error is None else f"ERROR {error.type}: {error.message}",
            ),
        ]
        if i == 2:
            records.append(
                InterruptRecord(seq=seq, at=at(clock), run_id="run-1", value={"reason": "approval required for edit"})
            )
            seq += 1
    for j in range(n_padding):
        args = {"command": f"echo padding {j}"}
        t = ToolRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            tool="bash",
            arguments=args,
            tool_call_id=f"pad_{j}",
            result=ToolResult(content=f"padding {j}"),
            duration_seconds=0.01,
        )
        t.key = t.compute_key()
        records.append(t)
        seq += 1
        clock += 0.5
    req = ModelRequest(messages=list(messages), tools=tools, options={"temperature": 0.0})
    final = ModelRecord(
        seq=seq,
        at=at(clock),
        run_id="run-1",
        generation_id="gen-1",
        model="gpt-4o-2024-08-06",
        request=req,
        response=ModelResponse(
            message=ChatMessage(role="assistant", content="The test passes now: parse_date raises DateError."),
            finish_reason="stop",
            usage=Usage(input_tokens=1400, output_tokens=30),
        ),
        duration_seconds=1.1,
    )
    final.key = final.compute_key()
    records.append(final)
    seq += 1
    records.append(
        LifecycleRecord(seq=seq, at=at(clock + 1), event="harness.shutdown", run_id="run-1", details={"reason": "done"})
    )
    return Recording(
        metadata={"dataset": "tests", "task": "date-parsing", "outcome": "resolved"},
        session=SessionInfo(mode="record", producer="tests/inspector/builders.py", created_at=at(0)),
        records=records,
    )


def write_recording(path: Path, n_padding: int = 0) -> Path:
    """Save :func:`build_recording` to ``path`` (the real save path: redaction, digest)."""
    save_recording(build_recording(n_padding), path)
    return path
