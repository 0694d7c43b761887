"""Builders of small base recordings for the engine tests (generic chat agent shape)."""

from __future__ import annotations

from typing import Any

from core.canonical import model_key, tool_key
from core.engine import tool_message
from core.recording import (
    ChatMessage,
    LifecycleRecord,
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

MODEL = "test-model"
TOOLS = [{"name": "lookup", "description": "look an item up",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]


def chat_recording(steps: int = 3, *, results: list[Any] | None = None, attribution: bool = True,
                   final: str = "done") -> Recording:
    """A run of the generic chat agent: ``steps`` model calls that each call ``lookup``
    with ``{"q": "item-k"}`` (result ``results[k]`` or ``{"value": k}``), then a final
    answer ``final``. With ``attribution``, lifecycle records open and close the run."""
    messages = [ChatMessage(role="system", content="You look things up."),
                ChatMessage(role="user", content="Look up the items.")]
    records: list[Any] = []
    seq = 0
    if attribution:
        records.append(LifecycleRecord(seq=seq, event="plugin.mount", details={"plugin": "t"}, run_id="run-1"))
        seq += 1
    for k in range(steps + 1):
        req = ModelRequest(messages=list(messages), tools=TOOLS, options={"temperature": 0.2})
        if k < steps:
            call = ToolCall(id=f"call_{k}", name="lookup", arguments={"q": f"item-{k}"})
            msg = ChatMessage(role="assistant", content="", tool_calls=[call])
            finish = "tool_calls"
        else:
            msg = ChatMessage(role="assistant", content=final)
            finish = "stop"
        resp = ModelResponse(message=msg, finish_reason=finish, usage=Usage(input_tokens=10 + k, output_tokens=5))
        records.append(ModelRecord(seq=seq, key=model_key(MODEL, req), model=MODEL, request=req, response=resp,
                                   run_id="run-1", duration_seconds=0.5))
        seq += 1
        messages.append(msg)
        if k < steps:
            content = results[k] if results is not None else {"value": k}
            result = ToolResult(content=content)
            records.append(ToolRecord(seq=seq, key=tool_key("lookup", call.arguments), tool="lookup",
                                      arguments=call.arguments, tool_call_id=call.id, result=result,
                                      run_id="run-1", duration_seconds=0.1))
            seq += 1
            messages.append(tool_message(call.id, "lookup", result))
    if attribution:
        records.append(LifecycleRecord(seq=seq, event="harness.shutdown", details={}, run_id="run-1"))
    rec = Recording(metadata={"task": "lookup"}, session=SessionInfo(mode="record"), records=records)
    return Recording.loads(rec.dumps())


def strip(record: Any) -> dict[str, Any]:
    """A record's JSON without the replay flags (``replayed``, ``live_fallback``)."""
    obj = record.to_json_obj()
    obj.pop("replayed", None)
    obj.pop("live_fallback", None)
    return obj
