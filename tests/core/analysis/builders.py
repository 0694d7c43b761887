"""Small hand-made recordings for the analysis tests (built with the core models)."""

from __future__ import annotations

from typing import Any

from core.recording import (
    ChatMessage,
    ErrorInfo,
    LifecycleRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SnapshotRecord,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)


def tool(
    seq: int,
    name: str,
    args: Any = None,
    content: Any = "ok",
    *,
    error: str | None = None,
    call_id: str | None = None,
    duration: float | None = None,
    redacted: bool = False,
) -> ToolRecord:
    r = ToolRecord(
        seq=seq,
        tool=name,
        arguments=args if args is not None else {},
        tool_call_id=call_id,
        result=ToolResult(
            content=content, error=ErrorInfo(type="ToolError", message=error) if error else None, redacted=redacted
        ),
        duration_seconds=duration,
    )
    r.key = r.compute_key()
    return r


def msg(
    role: str,
    content: Any = None,
    *,
    tool_calls: list[tuple[str, str, dict]] | None = None,
    tool_call_id: str | None = None,
) -> ChatMessage:
    return ChatMessage(
        role=role,
        content=content,
        tool_call_id=tool_call_id,
        tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in tool_calls] if tool_calls else None,
    )


def model(
    seq: int,
    messages: list[ChatMessage],
    reply: ChatMessage | str | None = "done",
    *,
    name: str = "m",
    usage: tuple[int, int] | None = None,
    duration: float | None = None,
    error: str | None = None,
    finish: str = "stop",
) -> ModelRecord:
    if isinstance(reply, str):
        reply = msg("assistant", reply)
    r = ModelRecord(
        seq=seq,
        model=name,
        request=ModelRequest(messages=messages),
        response=ModelResponse(
            message=reply,
            finish_reason=finish,
            usage=Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None,
        )
        if reply is not None
        else None,
        error=ErrorInfo(type="ModelError", message=error) if error else None,
        duration_seconds=duration,
    )
    r.key = r.compute_key()
    return r


def lifecycle(seq: int, event: str = "plugin.mount") -> LifecycleRecord:
    return LifecycleRecord(seq=seq, event=event)


def snapshot(seq: int, generation: str | None, composition: dict) -> SnapshotRecord:
    return SnapshotRecord(seq=seq, generation_id=generation, composition=composition)


def recording(*records: Any, metadata: dict | None = None) -> Recording:
    return Recording(records=list(records), metadata=metadata or {})


def stream(spec: str, *, results: dict[str, Any] | None = None) -> Recording:
    """A run of tool calls from letters: ``"ABC"`` → tools A, B, C (args ``{}``) whose
    result is the letter, or ``results[letter]``; seqs 0, 1, 2..."""
    results = results or {}
    return recording(*(tool(i, ch, {}, results.get(ch, ch)) for i, ch in enumerate(spec)))
