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
TOOLS = [
    {
        "name": "lookup",
        "description": "look an item up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


def chat_recording(
    steps: int = 3, *, results: list[Any] | None = None, attribution: bool = True, final: str = "done"
) -> Recording:
    """A run of the generic chat agent: ``steps`` model calls that each call ``lookup``
    with ``{"q": "item-k"}`` (result ``results[k]`` or ``{"value": k}``), then a final
    answer ``final``. With ``attribution``, lifecycle records open and close the run."""
    messages = [
        ChatMessage(role="system", content="You look things up."),
        ChatMessage(role="user", content="Look up the items."),
    ]
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
        records.append(
            ModelRecord(
                seq=seq,
                key=model_key(MODEL, req),
                model=MODEL,
                request=req,
                response=resp,
                run_id="run-1",
                duration_seconds=0.5,
            )
        )
        seq += 1
        messages.append(msg)
        if k < steps:
            content = results[k] if results is not None else {"value": k}
            result = ToolResult(content=content)
            records.append(
                ToolRecord(
                    seq=seq,
                    key=tool_key("lookup", call.arguments),
                    tool="lookup",
                    arguments=call.arguments,
                    tool_call_id=call.id,
                    result=result,
                    run_id="run-1",
                    duration_seconds=0.1,
                )
            )
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


def random_recording(draw_ints: Any, draw_bool: Any, draw_choice: Any, n_steps: int) -> Recording:
    """A base of arbitrary shape (not necessarily the generic loop's): steps of one model
    call and 0..3 tool calls with repeated keys, tool errors, model errors, attribution
    records anywhere; request messages are arbitrary. ``draw_*`` come from hypothesis."""
    from core.recording import ErrorInfo, InterruptRecord, SnapshotRecord

    records: list[Any] = []
    seq = 0
    call_n = 0
    for step in range(n_steps):
        if draw_bool():
            records.append(InterruptRecord(seq=seq, value={"step": step}))
            seq += draw_ints(1, 3)
        msgs = [ChatMessage(role="user", content=f"u{draw_ints(0, 3)}")]
        req = ModelRequest(messages=msgs, tools=TOOLS, options={"temperature": draw_choice([0, 0.5])})
        if draw_bool() and step > 0 and draw_bool():
            records.append(
                ModelRecord(
                    seq=seq,
                    key=model_key(MODEL, req),
                    model=MODEL,
                    request=req,
                    error=ErrorInfo(type="timeout", message="slow"),
                    run_id="r",
                )
            )
            seq += 1
            continue
        n_tools = draw_ints(0, 3)
        calls = []
        for _ in range(n_tools):
            name = draw_choice(["lookup", "search"])
            calls.append(ToolCall(id=f"c{call_n}", name=name, arguments={"q": draw_ints(0, 2)}))
            call_n += 1
        msg = ChatMessage(role="assistant", content="" if calls else "final", tool_calls=calls or None)
        records.append(
            ModelRecord(
                seq=seq,
                key=model_key(MODEL, req),
                model=MODEL,
                request=req,
                response=ModelResponse(message=msg),
                run_id="r",
            )
        )
        seq += 1
        for c in calls:
            err = draw_bool() and draw_bool()
            result = (
                ToolResult(error=ErrorInfo(type="E", message="bad")) if err else ToolResult(content=draw_ints(0, 5))
            )
            records.append(
                ToolRecord(
                    seq=seq,
                    key=tool_key(c.name, c.arguments),
                    tool=c.name,
                    arguments=c.arguments,
                    tool_call_id=c.id,
                    result=result,
                    run_id="r",
                )
            )
            seq += 1
        if draw_bool():
            records.append(SnapshotRecord(seq=seq, composition={"tools": ["lookup"]}))
            seq += 1
    rec = Recording(metadata={}, records=records)
    return Recording.loads(rec.dumps())
