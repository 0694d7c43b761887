"""Tool results overridden by a ``tool_result`` intervention, written into a request body
before it is matched or sent: the model sees the override in this request and in every
later one that repeats the history (the agent's own process keeps what it got).

A result is rendered as the engine's generic chat loop renders one
(:func:`core.replay.engine.tool_message`): the content when it is a string, else its JSON;
an error as ``ERROR <type>: <message>`` (Anthropic: ``is_error: true`` as well).
"""

from __future__ import annotations

from typing import Any

from ..record.recording import ToolResult

__all__ = ["rewrite_tool_results", "result_text"]


def result_text(result: ToolResult) -> str:
    """The text a tool message carries for ``result``
    (:meth:`~core.record.recording.ToolResult.message_text`)."""
    return result.message_text()


def rewrite_tool_results(endpoint: str, body: dict[str, Any], overrides: dict[str, ToolResult]) -> dict[str, Any]:
    """``body`` with the tool results whose call id is in ``overrides`` replaced (a new
    object), or ``body`` itself when it carries none of them."""
    changed = False
    if endpoint == "openai.chat":
        msgs = []
        for m in body.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") in overrides:
                m = {**m, "content": result_text(overrides[m["tool_call_id"]])}
                changed = True
            msgs.append(m)
        return {**body, "messages": msgs} if changed else body
    if endpoint == "openai.responses":
        items = body.get("input")
        if not isinstance(items, list):
            return body
        out = []
        for it in items:
            if isinstance(it, dict) and it.get("type") == "function_call_output" and it.get("call_id") in overrides:
                it = {**it, "output": result_text(overrides[it["call_id"]])}
                changed = True
            out.append(it)
        return {**body, "input": out} if changed else body
    msgs = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            blocks = []
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in overrides:
                    res = overrides[b["tool_use_id"]]
                    b = {**b, "content": result_text(res)}
                    if res.error is not None:
                        b["is_error"] = True
                    else:
                        b.pop("is_error", None)
                    changed = True
                blocks.append(b)
            m = {**m, "content": blocks}
        msgs.append(m)
    return {**body, "messages": msgs} if changed else body
