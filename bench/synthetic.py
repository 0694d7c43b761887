"""Synthetic recordings for benchmarks: an agent loop whose chat history grows.

``make_growing(target_bytes)`` returns the bytes of a valid format-v1 recording of
alternating model and tool records; each model request carries the whole transcript so
far (as real recordings do), so size grows roughly quadratically with steps until the
history is capped (``window`` messages), like an agent with a context window.
"""

from __future__ import annotations

from core.record.canonical import model_key, tool_key
from core.record.io import dumps_recording
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)


def make_growing(target_bytes: int, *, window: int = 60, text: int = 400) -> bytes:
    """Bytes of a recording of about ``target_bytes`` (± one step)."""
    messages = [
        ChatMessage(role="system", content="You are a careful agent. " * 8),
        ChatMessage(role="user", content="Fix the failing test in the repository."),
    ]
    records = []
    seq = 0
    size = 0
    step = 0
    tools = [{"name": "bash", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
    while size < target_bytes:
        req = ModelRequest(
            messages=messages[:2] + messages[2:][-window:],
            tools=tools,
            options={"temperature": 0.0, "max_tokens": 1024},
        )
        call = ToolCall(id=f"call_{step}", name="bash", arguments={"cmd": f"pytest -k test_{step} -x"})
        msg = ChatMessage(
            role="assistant", content=f"Step {step}: let me run the test. " + "x" * (text // 4), tool_calls=[call]
        )
        rec = ModelRecord(
            seq=seq,
            at="2026-01-01T00:00:00Z",
            run_id="r",
            key=model_key("gpt-x", req),
            model="gpt-x",
            request=req,
            response=ModelResponse(
                message=msg, finish_reason="tool_calls", usage=Usage(input_tokens=100 * step, output_tokens=50)
            ),
            duration_seconds=1.25,
        )
        records.append(rec)
        seq += 1
        out = f"===== {step} passed, 0 failed =====\n" + ("log line with some text\n" * (text // 24))
        trec = ToolRecord(
            seq=seq,
            at="2026-01-01T00:00:01Z",
            run_id="r",
            key=tool_key("bash", call.arguments),
            tool="bash",
            arguments=call.arguments,
            tool_call_id=call.id,
            result=ToolResult(content=out),
            duration_seconds=0.5,
        )
        records.append(trec)
        seq += 1
        messages += [msg, ChatMessage(role="tool", content=out, tool_call_id=call.id)]
        size += len(rec.model_dump_json()) + len(trec.model_dump_json())
        step += 1
    return dumps_recording(Recording(session=SessionInfo(producer="bench"), records=records))
