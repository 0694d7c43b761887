"""Shapes of the LLM HTTP APIs the importers read: OpenAI chat completions, Anthropic
messages and Gemini ``generateContent`` — request bodies to chat messages (with the tool
results they carry), response bodies to one assistant message, and server-sent-event
streams reassembled into the response they stand for.

Used by :mod:`core.importers.vcr` (HTTP cassettes) and :mod:`core.importers.otel`.
Conventions (documented in ``docs/importers.md``):

* thinking / reasoning is a content part ``{"type": "thinking", "thinking": ...,
  "signature": ...}``, never mixed into the answer text;
* tool-call arguments that are not a JSON object are kept raw with
  ``ToolCall.raw_arguments = True`` (:func:`parse_args`);
* a Gemini ``functionCall`` without id gets ``id = ""`` (no id is invented);
* every value has passed through :mod:`core.record.jsonvalues` (NaN, invalid Unicode).

Sources: the public API references of OpenAI (Chat Completions, streaming chunks),
Anthropic (Messages, streaming events ``message_start`` … ``message_stop``) and Google
(Gemini ``GenerateContentResponse``); the WHATWG HTML event-stream format for SSE.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..errors import FormatError
from ..record.jsonvalues import BIGINT_TAG, decode_value, display_text, is_tagged, load_json_lenient
from ..record.recording import ChatMessage, ErrorInfo, ToolCall, Usage
from ._source import as_object
from .base import ImportWarning

__all__ = [
    "Warnings",
    "parse_args",
    "text_part",
    "as_content",
    "simplify_parts",
    "error_from_result",
    "parse_sse",
    "provider_of",
    "parse_request",
    "parse_response",
    "reassemble_stream",
    "CarriedResult",
    "ParsedRequest",
    "ParsedResponse",
    "gemini_model",
]

_ERROR_TEXT = re.compile(r"^\s*(?:(?:Error|ERROR|Exception)\b[^\n]*?:|Traceback \(most recent call last\))")


class Warnings(list[ImportWarning]):
    """A list of :class:`ImportWarning` with a ``add(place, message)`` shortcut."""

    def add(self, place: str, message: str) -> None:
        self.append(ImportWarning(place, message))

    def extend_values(self, items: Any) -> None:
        for w in items:
            self.append(ImportWarning(w.place, w.message))


def parse_args(raw: Any, place: str, warnings: Warnings) -> tuple[Any, bool]:
    """Tool-call arguments as an object when possible: ``(arguments, raw_flag)``.

    A dict is returned as is. A string is parsed as JSON (NaN and invalid Unicode
    tolerated); a JSON object is returned parsed. Anything else — an empty string,
    truncated JSON, a JSON string literal or array, a non-string non-object — is kept
    raw (the original string) with ``raw_flag = True`` and a warning.
    """
    if isinstance(raw, dict):
        return raw, False
    if isinstance(raw, str):
        if not raw.strip():
            warnings.add(place, "tool-call arguments are an empty string; kept raw (raw_arguments)")
            return raw, True
        try:
            value, vw = load_json_lenient(raw, place=place)
        except FormatError as exc:
            warnings.add(place, f"tool-call arguments are not valid JSON ({exc.reason}); kept raw (raw_arguments)")
            return raw, True
        if isinstance(value, dict) and not is_tagged(value):
            warnings.extend_values(vw)
            return value, False
        shown = decode_value(value) if is_tagged(value) else value  # a tag: what it stands for
        kind = "a JSON string literal" if isinstance(shown, str) else f"a JSON {type(shown).__name__}"
        warnings.add(place, f"tool-call arguments are {kind}, not an object; kept raw (raw_arguments)")
        return raw, True
    warnings.add(place, f"tool-call arguments are a {type(raw).__name__}, not an object; kept raw (raw_arguments)")
    return raw, True


def text_part(value: Any) -> dict[str, Any]:
    """A text content part; text with invalid Unicode (a tag) is shown as its display
    text and kept exactly under ``encoded``."""
    if is_tagged(value):
        return {"type": "text", "text": display_text(value), "encoded": value}
    return {"type": "text", "text": value}


def as_content(value: Any) -> str | list[Any] | None:
    """A message ``content`` from a source value: strings, lists and None as they are;
    a tagged invalid-Unicode text (or non-finite number) as one text part carrying the
    tag under ``encoded``; any other value — a ``{"$bigint": ...}`` integer included —
    as one ``json`` part."""
    if value is None or isinstance(value, (str, list)):
        return value
    if is_tagged(value) and BIGINT_TAG not in value:
        return [text_part(value)]
    return [{"type": "json", "json": value}]


def simplify_parts(parts: list[dict[str, Any]]) -> str | list[Any] | None:
    """Content from parts: ``None`` when empty, the text when it is one plain text part,
    else the list."""
    if not parts:
        return None
    if (
        len(parts) == 1
        and parts[0].get("type") == "text"
        and set(parts[0]) == {"type", "text"}
        and isinstance(parts[0]["text"], str)
    ):
        return parts[0]["text"]
    return parts


def error_from_result(content: Any, is_error: bool | None, place: str, warnings: Warnings) -> ErrorInfo | None:
    """The error of a tool result: explicit (``is_error``) or inferred from a result text
    that starts like an error message ("Error ...:", "Exception ...:", a traceback) —
    inferred errors are reported as warnings."""
    text = (
        display_text(content)
        if not isinstance(content, list)
        else "\n".join(display_text(p.get("text")) if isinstance(p, dict) and "text" in p else "" for p in content)
    )
    if is_error:
        return ErrorInfo(type="tool_error", message=text)
    if is_error is None and _ERROR_TEXT.match(text or ""):
        warnings.add(place, "tool result text reads as an error; recorded as error type 'tool_error' (inferred)")
        return ErrorInfo(type="tool_error", message=text)
    return None


def parse_sse(text: str) -> list[tuple[str, str]]:
    """Parse a server-sent-events stream into ``[(event, data), ...]``.

    Follows the WHATWG HTML "event stream interpretation": ``field: value`` lines, a
    blank line dispatches the event, several ``data`` lines are joined with ``\\n``,
    lines starting with ``:`` are comments, the event name defaults to ``message``.
    """
    events: list[tuple[str, str]] = []
    name = ""
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if data:
                events.append((name or "message", "\n".join(data)))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        fld, _, val = line.partition(":")
        if val.startswith(" "):
            val = val[1:]
        if fld == "event":
            name = val
        elif fld == "data":
            data.append(val)
    if data:
        events.append((name or "message", "\n".join(data)))
    return events


@dataclass
class CarriedResult:
    """A tool result carried by a request: its id and tool name as written (either may be
    missing), content, explicit error flag (Anthropic ``is_error``; ``None`` = not said),
    place in the source, and the call it answers *as that same request shows it*
    (``(id, name, arguments)``, found by id or by position), if any."""

    id: str | None
    name: str | None
    content: Any
    is_error: bool | None
    place: str
    call: tuple[str | None, str, Any] | None = None  # (id, name, arguments) of the call in this request


@dataclass
class ParsedRequest:
    """A request body as a model request: model name (``None`` when the body has none),
    messages, tool schemas, stop sequences, every other field as options, and the tool
    results the messages carry (in message order)."""

    model: str | None
    messages: list[ChatMessage]
    tools: list[Any]
    stop: list[str]
    options: dict[str, Any]
    results: list[CarriedResult]


@dataclass
class ParsedResponse:
    """A response body: the assistant message (``None`` when the call failed), finish
    reason, usage, the provider's response id and model, and the error, if any."""

    message: ChatMessage | None
    finish_reason: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    response_model: str | None = None
    error: ErrorInfo | None = None


def provider_of(uri: str, body: Any) -> str | None:
    """``"openai"``, ``"anthropic"`` or ``"gemini"`` for a model-call URI (body shape as
    a fallback: Gemini ``contents``, ``messages`` to an Anthropic host), else ``None``."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        parts = None
    path = parts.path if parts else uri
    host = (parts.netloc if parts else "").lower()
    if path.endswith("/chat/completions"):
        return "openai"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.endswith("/messages") and ("anthropic" in host or "/v1/messages" in path):
        return "anthropic"
    if isinstance(body, dict):
        if "contents" in body:
            return "gemini"
        if "messages" in body and "anthropic" in host:
            return "anthropic"
    return None


def _usage(inp: Any, out: Any) -> Usage | None:
    if isinstance(inp, int) or isinstance(out, int):
        return Usage(input_tokens=inp if isinstance(inp, int) else 0, output_tokens=out if isinstance(out, int) else 0)
    return None


def _str_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str)]
    return []


class _Resolver:
    """Finds, for a tool result in a request, the call it answers in the same request:
    by id, else by position after the last assistant message's tool calls."""

    def __init__(self) -> None:
        self.by_id: dict[str, tuple[str | None, str, Any]] = {}
        self.last_calls: list[tuple[str | None, str, Any]] = []
        self.answered = 0

    def calls(self, calls: list[tuple[str | None, str, Any]]) -> None:
        for c in calls:
            if c[0]:
                self.by_id[c[0]] = c
        self.last_calls = calls
        self.answered = 0

    def resolve(self, rid: str | None, name: str | None) -> tuple[str | None, str, Any] | None:
        found = self.by_id.get(rid) if rid else None
        if found is None and self.answered < len(self.last_calls):
            cand = self.last_calls[self.answered]
            if name is None or cand[1] == name:
                found = cand
        self.answered += 1
        return found


# -- OpenAI chat completions ----------------------------------------------------------


def _openai_tool_calls(raw: Any, place: str, warnings: Warnings) -> list[ToolCall]:
    out = []
    for j, tc in enumerate(raw or []):
        if not isinstance(tc, dict):
            warnings.add(f"{place}.tool_calls[{j}]", "tool call is not an object; skipped")
            continue
        fn = tc.get("function") or {}
        args, is_raw = parse_args(fn.get("arguments", ""), f"{place}.tool_calls[{j}].function.arguments", warnings)
        out.append(
            ToolCall(
                id=tc.get("id") or "", name=fn.get("name") or "", arguments=args, raw_arguments=True if is_raw else None
            )
        )
    return out


def _thinking_part(text: Any, signature: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "thinking", "thinking": text}
    if signature:
        part["signature"] = signature
    return part


def _openai_request(body: dict[str, Any], place: str, warnings: Warnings) -> ParsedRequest:
    msgs: list[ChatMessage] = []
    results: list[CarriedResult] = []
    res = _Resolver()
    for i, m in enumerate(body.get("messages") or []):
        mp = f"{place}.messages[{i}]"
        if not isinstance(m, dict):
            warnings.add(mp, "message is not an object; skipped")
            continue
        role = m.get("role") or "user"
        calls = _openai_tool_calls(m.get("tool_calls"), mp, warnings) if m.get("tool_calls") else None
        content = as_content(m.get("content"))
        if m.get("reasoning_content"):
            parts = [_thinking_part(m["reasoning_content"])]
            if content:
                parts += [{"type": "text", "text": content}] if isinstance(content, str) else content
            content = parts
        msgs.append(
            ChatMessage(
                role=role,
                content=content,
                tool_calls=calls or None,
                tool_call_id=m.get("tool_call_id"),
                name=m.get("name"),
            )
        )
        if calls:
            res.calls([(c.id or None, c.name, c.arguments) for c in calls])
        if role in ("tool", "function"):
            rid = m.get("tool_call_id") or None
            call = res.resolve(rid, m.get("name"))
            results.append(
                CarriedResult(rid, m.get("name") or (call[1] if call else None), m.get("content"), None, mp, call)
            )
    tools = list(body.get("tools") or []) + list(body.get("functions") or [])
    options = {k: v for k, v in body.items() if k not in ("messages", "model", "tools", "functions", "stop")}
    return ParsedRequest(body.get("model"), msgs, tools, _str_list(body.get("stop")), options, results)


def _api_error(body: Any, type_keys: tuple[str, ...], *, is_error: bool) -> ParsedResponse | None:
    """The failed response for a body that is not an object, or that the provider marked
    as an error (``is_error``); its ``error.<first of type_keys>`` names the type.
    ``None`` for an ordinary body."""
    if not isinstance(body, dict):
        return ParsedResponse(
            None,
            error=ErrorInfo(type="bad_response", message=f"response body is not an object: {display_text(body)[:200]}"),
        )
    if not is_error:
        return None
    e = as_object(body.get("error"))
    etype = next((e[k] for k in type_keys if e.get(k)), None) or "api_error"
    return ParsedResponse(None, error=ErrorInfo(type=str(etype), message=display_text(e.get("message", ""))))


def _openai_response(body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    failed = _api_error(body, ("type", "code"), is_error=isinstance(body, dict) and isinstance(body.get("error"), dict))
    if failed is not None:
        return failed
    choices = body.get("choices") or []
    if not choices:
        return ParsedResponse(
            None, error=ErrorInfo(type="bad_response", message="response has no choices"), response_id=body.get("id")
        )
    if len(choices) > 1:
        warnings.add(f"{place}.choices", f"{len(choices)} choices; only the first is imported")
    ch = choices[0]
    m = ch.get("message") or {}
    calls = _openai_tool_calls(m.get("tool_calls"), f"{place}.choices[0].message", warnings)
    content = as_content(m.get("content"))
    thinking = m.get("reasoning_content") or (m.get("reasoning") if isinstance(m.get("reasoning"), str) else None)
    if thinking:
        parts = [_thinking_part(thinking)]
        if content:
            parts += [{"type": "text", "text": content}] if isinstance(content, str) else content
        content = parts
    if m.get("refusal"):
        warnings.add(f"{place}.choices[0].message.refusal", f"model refused: {display_text(m['refusal'])[:200]}")
    msg = ChatMessage(role=m.get("role") or "assistant", content=content, tool_calls=calls or None)
    u = as_object(body.get("usage"))
    usage = _usage(u.get("prompt_tokens", u.get("input_tokens")), u.get("completion_tokens", u.get("output_tokens")))
    return ParsedResponse(msg, ch.get("finish_reason"), usage, body.get("id"), body.get("model"))


def _json_events(events: list[tuple[str, str]], place: str, warnings: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """The stream events whose data is a JSON object, as ``(event name, object)``.

    ``[DONE]`` markers (OpenAI) are skipped silently; data that is not JSON is skipped
    with a warning naming the event; value warnings (NaN, invalid unicode) are kept.
    """
    for n, (name, data) in enumerate(events):
        if data.strip() == "[DONE]":
            continue
        try:
            obj, vw = load_json_lenient(data, place=f"{place}.events[{n}]")
        except FormatError as exc:
            warnings.add(f"{place}.events[{n}]", f"stream event {name!r} is not JSON ({exc.reason}); skipped")
            continue
        warnings.extend_values(vw)
        if isinstance(obj, dict):
            yield name, obj


def _openai_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble OpenAI chat-completion chunks into one chat.completion object."""
    out: dict[str, Any] = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict[str, Any]] = {}
    for _name, chunk in _json_events(events, place, warnings):
        if "error" in chunk:
            out["error"] = chunk["error"]
        for k in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(k) is not None:
                out[k] = chunk[k]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for c in chunk.get("choices") or []:
            idx = c.get("index", 0)
            st = choices.setdefault(
                idx, {"index": idx, "message": {"role": "assistant"}, "_text": [], "_think": [], "_calls": {}}
            )
            d = c.get("delta") or {}
            if d.get("role"):
                st["message"]["role"] = d["role"]
            if isinstance(d.get("content"), str):
                st["_text"].append(d["content"])
            for key in ("reasoning_content", "reasoning"):
                if isinstance(d.get(key), str):
                    st["_think"].append(d[key])
            for tc in d.get("tool_calls") or []:
                ti = tc.get("index", len(st["_calls"]))
                cur = st["_calls"].setdefault(
                    ti, {"id": "", "type": "function", "function": {"name": "", "arguments": []}}
                )
                if tc.get("id"):
                    cur["id"] = tc["id"]
                fn = tc.get("function") or {}
                if fn.get("name"):
                    cur["function"]["name"] += fn["name"]
                if isinstance(fn.get("arguments"), str):
                    cur["function"]["arguments"].append(fn["arguments"])
            if c.get("finish_reason"):
                st["finish_reason"] = c["finish_reason"]
    for idx in sorted(choices):
        st = choices[idx]
        msg = st["message"]
        msg["content"] = "".join(st["_text"]) if st["_text"] else None
        if st["_think"]:
            msg["reasoning_content"] = "".join(st["_think"])
        if st["_calls"]:
            msg["tool_calls"] = []
            for ti in sorted(st["_calls"]):
                cur = st["_calls"][ti]
                cur["function"]["arguments"] = "".join(cur["function"]["arguments"])
                msg["tool_calls"].append(cur)
        out["choices"].append({"index": idx, "message": msg, "finish_reason": st.get("finish_reason")})
    return out


# -- Anthropic messages ------------------------------------------------------------------


def _anthropic_blocks(content: Any, place: str, warnings: Warnings) -> tuple[list[Any], list[ToolCall]]:
    """Assistant content blocks → (parts, tool calls)."""
    if isinstance(content, str) or is_tagged(content):
        return [text_part(content)], []
    parts: list[Any] = []
    calls: list[ToolCall] = []
    for j, b in enumerate(content or []):
        if not isinstance(b, dict):
            parts.append(b)
            continue
        t = b.get("type")
        if t == "text":
            parts.append(text_part(b.get("text", "")))
        elif t == "thinking":
            parts.append(_thinking_part(b.get("thinking", ""), b.get("signature")))
        elif t == "tool_use":
            args, is_raw = parse_args(b.get("input", {}), f"{place}[{j}].input", warnings)
            calls.append(
                ToolCall(
                    id=b.get("id") or "",
                    name=b.get("name") or "",
                    arguments=args,
                    raw_arguments=True if is_raw else None,
                )
            )
        else:
            parts.append(b)
    return parts, calls


def _anthropic_request(body: dict[str, Any], place: str, warnings: Warnings) -> ParsedRequest:
    msgs: list[ChatMessage] = []
    results: list[CarriedResult] = []
    res = _Resolver()
    system = body.get("system")
    if system:
        msgs.append(ChatMessage(role="system", content=as_content(system)))
    for i, m in enumerate(body.get("messages") or []):
        mp = f"{place}.messages[{i}]"
        if not isinstance(m, dict):
            warnings.add(mp, "message is not an object; skipped")
            continue
        role = m.get("role") or "user"
        content = m.get("content")
        if role == "assistant":
            parts, calls = _anthropic_blocks(content, f"{mp}.content", warnings)
            msgs.append(ChatMessage(role="assistant", content=simplify_parts(parts), tool_calls=calls or None))
            res.calls([(c.id or None, c.name, c.arguments) for c in calls])
            continue
        if not isinstance(content, list):
            msgs.append(ChatMessage(role=role, content=as_content(content)))
            continue
        pending_parts: list[Any] = []
        for j, b in enumerate(content):
            if isinstance(b, dict) and b.get("type") == "tool_result":
                if pending_parts:
                    msgs.append(ChatMessage(role=role, content=simplify_parts(pending_parts)))
                    pending_parts = []
                rid = b.get("tool_use_id") or None
                rc = b.get("content")
                msgs.append(ChatMessage(role="tool", tool_call_id=rid, content=as_content(rc)))
                call = res.resolve(rid, None)
                is_err = b.get("is_error")
                results.append(
                    CarriedResult(
                        rid,
                        call[1] if call else None,
                        rc,
                        bool(is_err) if is_err is not None else None,
                        f"{mp}.content[{j}]",
                        call,
                    )
                )
            else:
                pending_parts.append(b)
        if pending_parts:
            msgs.append(ChatMessage(role=role, content=simplify_parts(pending_parts)))
    options = {k: v for k, v in body.items() if k not in ("messages", "model", "tools", "system", "stop_sequences")}
    return ParsedRequest(
        body.get("model"), msgs, list(body.get("tools") or []), _str_list(body.get("stop_sequences")), options, results
    )


def _anthropic_response(body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    failed = _api_error(
        body,
        ("type",),
        is_error=isinstance(body, dict) and (body.get("type") == "error" or isinstance(body.get("error"), dict)),
    )
    if failed is not None:
        return failed
    parts, calls = _anthropic_blocks(body.get("content"), f"{place}.content", warnings)
    msg = ChatMessage(role=body.get("role") or "assistant", content=simplify_parts(parts), tool_calls=calls or None)
    u = as_object(body.get("usage"))
    return ParsedResponse(
        msg,
        body.get("stop_reason"),
        _usage(u.get("input_tokens"), u.get("output_tokens")),
        body.get("id"),
        body.get("model"),
    )


def _anthropic_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble an Anthropic messages stream into one Message object."""
    msg: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    unknown: set[str] = set()
    for name, ev in _json_events(events, place, warnings):
        t = ev.get("type", name)
        if t == "message_start":
            start = ev.get("message") or {}
            msg.update({k: v for k, v in start.items() if k != "content"})
        elif t == "content_block_start":
            idx = ev.get("index", len(blocks))
            blk = dict(ev.get("content_block") or {})
            if blk.get("type") == "tool_use":
                json_parts[idx] = []
            blocks[idx] = blk
        elif t == "content_block_delta":
            idx = ev.get("index", 0)
            blk = blocks.setdefault(idx, {"type": "text", "text": ""})
            d = ev.get("delta") or {}
            dt = d.get("type")
            if dt == "text_delta":
                blk["text"] = blk.get("text", "") + d.get("text", "")
            elif dt == "thinking_delta":
                blk["thinking"] = blk.get("thinking", "") + d.get("thinking", "")
            elif dt == "signature_delta":
                blk["signature"] = blk.get("signature", "") + d.get("signature", "")
            elif dt == "input_json_delta":
                json_parts.setdefault(idx, []).append(d.get("partial_json", ""))
            elif dt == "citations_delta":
                blk.setdefault("citations", []).append(d.get("citation"))
            else:
                unknown.add(f"delta {dt}")
        elif t == "content_block_stop":
            pass
        elif t == "message_delta":
            d = ev.get("delta") or {}
            for k in ("stop_reason", "stop_sequence"):
                if k in d:
                    msg[k] = d[k]
            if ev.get("usage"):
                msg["usage"] = {**(msg.get("usage") or {}), **ev["usage"]}
        elif t in ("message_stop", "ping"):
            pass
        elif t == "error":
            msg["type"] = "error"
            msg["error"] = ev.get("error") or {}
        else:
            unknown.add(f"event {t}")
    for idx in sorted(blocks):
        blk = blocks[idx]
        if blk.get("type") == "tool_use" and idx in json_parts:
            joined = "".join(json_parts[idx])
            if joined or not blk.get("input"):
                blk["input"] = joined  # parsed (or kept raw) by parse_args
        msg["content"].append(blk)
    if unknown:
        warnings.add(place, f"stream had parts that were not mapped: {', '.join(sorted(unknown))}")
    return msg


# -- Gemini generateContent --------------------------------------------------------------


def _gemini_parts(
    parts: Any, place: str, warnings: Warnings
) -> tuple[list[Any], list[ToolCall], list[tuple[int, dict[str, Any]]]]:
    """Gemini parts → (content parts, tool calls, [(index, functionResponse)])."""
    out: list[Any] = []
    calls: list[ToolCall] = []
    responses: list[tuple[int, dict[str, Any]]] = []
    for j, p in enumerate(parts or []):
        if not isinstance(p, dict):
            out.append(p)
            continue
        fc = p.get("functionCall") or p.get("function_call")
        fr = p.get("functionResponse") or p.get("function_response")
        if fc is not None:
            args, is_raw = parse_args(fc.get("args", {}), f"{place}[{j}].functionCall.args", warnings)
            calls.append(
                ToolCall(
                    id=fc.get("id") or "",
                    name=fc.get("name") or "",
                    arguments=args,
                    raw_arguments=True if is_raw else None,
                )
            )
        elif fr is not None:
            responses.append((j, fr))
        elif "text" in p:
            if p.get("thought"):
                out.append(_thinking_part(p["text"], p.get("thoughtSignature")))
            else:
                out.append(text_part(p["text"]))
        else:
            out.append(p)
    return out, calls, responses


def gemini_model(uri: str) -> str | None:
    """The model name in a Gemini URI (``…/models/NAME:generateContent``), or ``None``."""
    m = re.search(r"models/([^/:?]+)", uri)
    return m.group(1) if m else None


def _gemini_request(body: dict[str, Any], uri: str, place: str, warnings: Warnings) -> ParsedRequest:
    msgs: list[ChatMessage] = []
    results: list[CarriedResult] = []
    res = _Resolver()
    si = body.get("systemInstruction") or body.get("system_instruction")
    if si:
        parts, _, _ = _gemini_parts(
            si.get("parts") if isinstance(si, dict) else [{"text": si}], f"{place}.systemInstruction", warnings
        )
        msgs.append(ChatMessage(role="system", content=simplify_parts(parts)))
    for i, c in enumerate(body.get("contents") or []):
        cp = f"{place}.contents[{i}]"
        if not isinstance(c, dict):
            warnings.add(cp, "content is not an object; skipped")
            continue
        role = {"model": "assistant", "user": "user", "function": "user"}.get(c.get("role") or "user", c.get("role"))
        parts, calls, responses = _gemini_parts(c.get("parts"), f"{cp}.parts", warnings)
        if calls:
            res.calls([(tc.id or None, tc.name, tc.arguments) for tc in calls])
        if parts or calls or not responses:
            msgs.append(ChatMessage(role=role, content=simplify_parts(parts), tool_calls=calls or None))
        for j, fr in responses:
            rid = fr.get("id") or None
            name = fr.get("name")
            msgs.append(ChatMessage(role="tool", tool_call_id=rid, name=name, content=as_content(fr.get("response"))))
            call = res.resolve(rid, name)
            results.append(
                CarriedResult(rid, name, fr.get("response"), None, f"{cp}.parts[{j}].functionResponse", call)
            )
    tools = body.get("tools") or []
    if isinstance(tools, dict):
        tools = [tools]
    gc = dict(body.get("generationConfig") or body.get("generation_config") or {})
    stop = _str_list(gc.pop("stopSequences", None) or gc.pop("stop_sequences", None))
    options = {
        k: v
        for k, v in body.items()
        if k
        not in (
            "contents",
            "systemInstruction",
            "system_instruction",
            "tools",
            "generationConfig",
            "generation_config",
            "model",
        )
    }
    if gc:
        options["generationConfig"] = gc
    if ":streamGenerateContent" in uri:
        options["stream"] = True
    return ParsedRequest(gemini_model(uri) or body.get("model"), msgs, list(tools), stop, options, results)


def _gemini_response(body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    failed = _api_error(
        body, ("status", "code"), is_error=isinstance(body, dict) and isinstance(body.get("error"), dict)
    )
    if failed is not None:
        return failed
    cands = body.get("candidates") or []
    if not cands:
        fb = body.get("promptFeedback")
        return ParsedResponse(
            None,
            error=ErrorInfo(type="no_candidates", message=display_text(fb) if fb else "response has no candidates"),
        )
    if len(cands) > 1:
        warnings.add(f"{place}.candidates", f"{len(cands)} candidates; only the first is imported")
    c = cands[0]
    parts, calls, _ = _gemini_parts(
        (c.get("content") or {}).get("parts"), f"{place}.candidates[0].content.parts", warnings
    )
    msg = ChatMessage(role="assistant", content=simplify_parts(parts), tool_calls=calls or None)
    u = as_object(body.get("usageMetadata"))
    out_tokens = u.get("candidatesTokenCount")
    if isinstance(u.get("thoughtsTokenCount"), int):
        out_tokens = (out_tokens or 0) + u["thoughtsTokenCount"]
    return ParsedResponse(
        msg,
        c.get("finishReason"),
        _usage(u.get("promptTokenCount"), out_tokens),
        body.get("responseId"),
        body.get("modelVersion"),
    )


def _gemini_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble Gemini streamGenerateContent (SSE) chunks into one response."""
    out: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    finish = None
    for _name, chunk in _json_events(events, place, warnings):
        if "error" in chunk:
            out["error"] = chunk["error"]
        for k in ("usageMetadata", "modelVersion", "responseId", "promptFeedback"):
            if k in chunk:
                out[k] = chunk[k]
        for c in (chunk.get("candidates") or [])[:1]:
            for p in (c.get("content") or {}).get("parts") or []:
                if (
                    isinstance(p, dict)
                    and "text" in p
                    and parts
                    and "text" in parts[-1]
                    and bool(parts[-1].get("thought")) == bool(p.get("thought"))
                    and isinstance(p["text"], str)
                    and isinstance(parts[-1]["text"], str)
                ):
                    parts[-1] = {**parts[-1], "text": parts[-1]["text"] + p["text"]}
                    if p.get("thoughtSignature"):
                        parts[-1]["thoughtSignature"] = p["thoughtSignature"]
                else:
                    parts.append(dict(p) if isinstance(p, dict) else p)
            if c.get("finishReason"):
                finish = c["finishReason"]
    if "error" not in out or parts:
        out["candidates"] = [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]
    return out


def parse_request(provider: str, body: dict[str, Any], uri: str, place: str, warnings: Warnings) -> ParsedRequest:
    """A request body of ``provider`` (``openai`` | ``anthropic`` | ``gemini``)."""
    if provider == "openai":
        return _openai_request(body, place, warnings)
    if provider == "anthropic":
        return _anthropic_request(body, place, warnings)
    return _gemini_request(body, uri, place, warnings)


def parse_response(provider: str, body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    """A (non-streamed, or reassembled) response body of ``provider``."""
    conv = {"openai": _openai_response, "anthropic": _anthropic_response, "gemini": _gemini_response}[provider]
    return conv(body, place, warnings)


def reassemble_stream(provider: str, events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """The response body a server-sent-event stream of ``provider`` stands for."""
    conv = {"openai": _openai_stream, "anthropic": _anthropic_stream, "gemini": _gemini_stream}[provider]
    return conv(events, place, warnings)


# -- OpenAI Responses ------------------------------------------------------------------

#: request fields that only shape the transport, never the answer (docs/proxy.md,
#: "Keys"): kept in a proxy record's ``meta.transport``, left out of the key, so a run
#: recorded streaming replays to a client that does not stream, and the reverse
TRANSPORT_FIELDS = ("stream", "stream_options", "user", "store", "metadata")


def split_transport(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(options without transport fields, the transport fields)`` (:data:`TRANSPORT_FIELDS`)."""
    kept = {k: v for k, v in options.items() if k not in TRANSPORT_FIELDS}
    transport = {k: options[k] for k in TRANSPORT_FIELDS if k in options}
    return kept, transport


def _responses_text_parts(content: Any, place: str) -> Any:
    """Responses content (a string, or parts ``input_text`` / ``output_text`` / others)
    as our content: text parts become ``{"type": "text", "text"}``, others kept."""
    if not isinstance(content, list):
        return as_content(content)
    parts: list[Any] = []
    for p in content:
        if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text") and "text" in p:
            parts.append(text_part(p["text"]))
        else:
            parts.append(p)
    return simplify_parts(parts)


def responses_items(items: Any, place: str, warnings: Warnings) -> tuple[list[ChatMessage], list[CarriedResult]]:
    """Responses ``input`` (a string or a list of items) as chat messages: ``message``
    items (or items with a ``role``) as messages, consecutive ``function_call`` items as
    one assistant message with tool calls (joined to a text-only assistant message just
    before them), ``function_call_output`` as ``tool`` messages (with the results they
    carry), ``reasoning`` as an assistant ``thinking`` part, other items kept as one
    ``json`` part of a ``user`` message."""
    if isinstance(items, str) or is_tagged(items):
        return [ChatMessage(role="user", content=as_content(items))], []
    msgs: list[ChatMessage] = []
    results: list[CarriedResult] = []
    res = _Resolver()
    pending: list[ToolCall] = []

    def parts_of(content: Any) -> list[Any]:
        if content is None:
            return []
        return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)

    def assistant(content: Any) -> None:
        """One assistant turn: reasoning, text and calls that follow each other are joined
        (as a response's output is read: :func:`_responses_response`)."""
        if msgs and msgs[-1].role == "assistant" and not msgs[-1].tool_calls:
            joined = simplify_parts(parts_of(msgs[-1].content) + parts_of(content))
            msgs[-1] = msgs[-1].model_copy(update={"content": joined})
        else:
            msgs.append(ChatMessage(role="assistant", content=content))

    def flush() -> None:
        nonlocal pending
        if not pending:
            return
        calls = list(pending)
        pending = []
        if msgs and msgs[-1].role == "assistant" and not msgs[-1].tool_calls:
            msgs[-1] = msgs[-1].model_copy(update={"tool_calls": calls})
        else:
            msgs.append(ChatMessage(role="assistant", content=None, tool_calls=calls))
        res.calls([(c.id or None, c.name, c.arguments) for c in calls])

    for i, it in enumerate(items if isinstance(items, list) else []):
        ip = f"{place}[{i}]"
        if not isinstance(it, dict):
            warnings.add(ip, "input item is not an object; skipped")
            continue
        t = it.get("type") or ("message" if "role" in it else None)
        if t == "function_call":
            args, is_raw = parse_args(it.get("arguments", ""), f"{ip}.arguments", warnings)
            pending.append(
                ToolCall(
                    id=it.get("call_id") or "",
                    name=it.get("name") or "",
                    arguments=args,
                    raw_arguments=True if is_raw else None,
                )
            )
            continue
        flush()
        if t == "message" and it.get("role") == "assistant":
            assistant(_responses_text_parts(it.get("content"), ip))
        elif t == "message":
            msgs.append(
                ChatMessage(role=it.get("role") or "user", content=_responses_text_parts(it.get("content"), ip))
            )
        elif t == "function_call_output":
            rid = it.get("call_id") or None
            call = res.resolve(rid, None)
            out = it.get("output")
            msgs.append(ChatMessage(role="tool", tool_call_id=rid, content=_responses_text_parts(out, ip)))
            results.append(CarriedResult(rid, call[1] if call else None, out, None, ip, call))
        elif t == "reasoning":
            text = "\n".join(
                s.get("text", "")
                for s in it.get("summary") or []
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            )
            assistant([_thinking_part(text, it.get("encrypted_content"))])
        else:
            msgs.append(ChatMessage(role=it.get("role") or "user", content=[{"type": "json", "json": it}]))
    flush()
    return msgs, results


def _responses_request(body: dict[str, Any], place: str, warnings: Warnings) -> ParsedRequest:
    """An OpenAI Responses request; ``previous_response_id`` is left in the options (the
    proxy resolves it into the history it stands for)."""
    msgs: list[ChatMessage] = []
    if body.get("instructions"):
        msgs.append(ChatMessage(role="system", content=as_content(body["instructions"])))
    more, results = responses_items(body.get("input"), f"{place}.input", warnings)
    options = {k: v for k, v in body.items() if k not in ("input", "instructions", "model", "tools", "stop")}
    return ParsedRequest(body.get("model"), msgs + more, list(body.get("tools") or []), [], options, results)


def _responses_response(body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    err = body.get("error") if isinstance(body, dict) else None
    failed = _api_error(body, ("type", "code"), is_error=isinstance(err, dict))
    if failed is not None:
        if isinstance(body, dict):
            failed.response_id = body.get("id")
        return failed
    msgs, _ = responses_items(body.get("output") or [], f"{place}.output", warnings)
    # the output is one assistant turn: its messages' parts and calls joined
    parts: list[Any] = []
    calls: list[ToolCall] = []
    for m in msgs:
        c = m.content
        if isinstance(c, str):
            parts.append({"type": "text", "text": c})
        elif isinstance(c, list):
            parts.extend(c)
        calls.extend(m.tool_calls or [])
    msg = ChatMessage(role="assistant", content=simplify_parts(parts), tool_calls=calls or None)
    u = as_object(body.get("usage"))
    status = body.get("status")
    finish = status
    if status == "incomplete" and isinstance(body.get("incomplete_details"), dict):
        finish = f"incomplete:{body['incomplete_details'].get('reason')}"
    return ParsedResponse(
        msg, finish, _usage(u.get("input_tokens"), u.get("output_tokens")), body.get("id"), body.get("model")
    )


def _responses_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """The response a Responses stream stands for: the ``response`` of its
    ``response.completed`` (or ``.incomplete`` / ``.failed``) event; without one, the
    output items of ``response.output_item.done`` events."""
    final: dict[str, Any] | None = None
    items: dict[int, Any] = {}
    started: dict[str, Any] = {}
    for name, ev in _json_events(events, place, warnings):
        t = ev.get("type", name)
        if t in ("response.completed", "response.incomplete", "response.failed") and isinstance(
            ev.get("response"), dict
        ):
            final = ev["response"]
        elif t in ("response.created", "response.in_progress") and isinstance(ev.get("response"), dict):
            started = ev["response"]
        elif t == "response.output_item.done" and isinstance(ev.get("item"), dict):
            items[ev.get("output_index", len(items))] = ev["item"]
        elif t == "error":
            return {"error": {k: v for k, v in ev.items() if k != "type"} or {"message": "stream error"}}
    if final is not None:
        return final
    warnings.add(place, "Responses stream ended without response.completed; output rebuilt from its items")
    return {**started, "status": "incomplete", "output": [items[k] for k in sorted(items)]}


def parse_responses_request(body: dict[str, Any], place: str, warnings: Warnings) -> ParsedRequest:
    """An OpenAI Responses request body (``input``, ``instructions``, ``tools``)."""
    return _responses_request(body, place, warnings)


def parse_responses_response(body: Any, place: str, warnings: Warnings) -> ParsedResponse:
    """An OpenAI Responses response body (``output`` items; ``status`` as finish reason)."""
    return _responses_response(body, place, warnings)


def reassemble_responses_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """The response body a Responses event stream stands for."""
    return _responses_stream(events, place, warnings)


# -- rendering: our response in the wire shape a client asked for ------------------------
#
# The other direction: a ModelResponse (recorded, an intervention, a fixture) as the body
# or server-sent-event stream of the endpoint the client called. The official SDKs parse
# these to the same message, tool calls and usage as the recorded call.


def _parts_of(message: ChatMessage) -> tuple[list[dict[str, Any]], str, list[dict[str, Any]]]:
    """``(thinking parts, answer text, other parts)`` of an assistant message."""
    c = message.content
    if c is None:
        return [], "", []
    if isinstance(c, str):
        return [], c, []
    thinking: list[dict[str, Any]] = []
    texts: list[str] = []
    other: list[dict[str, Any]] = []
    for p in c:
        if isinstance(p, dict) and p.get("type") == "thinking":
            thinking.append(p)
        elif isinstance(p, dict) and p.get("type") in (None, "text") and "text" in p:
            texts.append(display_text(p["text"]) if not isinstance(p["text"], str) else p["text"])
        elif isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict):
            other.append(p)
    return thinking, "".join(texts), other


def _args_text(tc: ToolCall, texts: dict[str, str] | None = None) -> str:
    """A tool call's arguments as the JSON text a wire format carries: the provider's own
    text when it was kept (``texts`` by call id), raw ones as kept, else compact JSON."""
    if texts and tc.id in texts:
        return texts[tc.id]
    if tc.raw_arguments and isinstance(tc.arguments, str):
        return tc.arguments
    return orjson.dumps(tc.arguments).decode()


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def _chunks(text: str, n: int = 2) -> list[str]:
    """``text`` in ``n`` pieces (a streamed answer arrives fragmented; clients join them)."""
    if len(text) < n:
        return [text] if text else []
    step = -(-len(text) // n)
    return [text[i : i + step] for i in range(0, len(text), step)]


@dataclass
class WireAnswer:
    """What the proxy renders: the response (or error), the model name, the response id
    and creation time to show (the recorded ones, or made up deterministically), usage."""

    model: str
    response_id: str
    created: int = 0
    message: ChatMessage | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    error: ErrorInfo | None = None
    http_status: int = 200
    #: tool-call arguments as the provider wrote them, by call id (an OpenAI answer's
    #: arguments are text; a replay gives the agent the very text it got)
    arguments_text: dict[str, str] = field(default_factory=dict)


def render_openai_chat(a: WireAnswer, *, stream: bool, include_usage: bool = False) -> list[bytes] | dict[str, Any]:
    """An OpenAI ``chat.completion`` body, or its ``chat.completion.chunk`` SSE stream
    (``data: [DONE]`` last; a usage chunk when ``stream_options.include_usage``)."""
    assert a.message is not None
    thinking, text, _ = _parts_of(a.message)
    calls = a.message.tool_calls or []
    finish = a.finish_reason or ("tool_calls" if calls else "stop")
    usage = a.usage or Usage()
    u = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    think_text = "".join(str(p.get("thinking") or "") for p in thinking)
    if not stream:
        msg: dict[str, Any] = {"role": "assistant", "content": text if (text or not calls) else None}
        if think_text:
            msg["reasoning_content"] = think_text
        if calls:
            msg["tool_calls"] = [
                {
                    "id": tc.id,
                    "type": "function",
                    "function": {"name": tc.name, "arguments": _args_text(tc, a.arguments_text)},
                }
                for tc in calls
            ]
        return {
            "id": a.response_id,
            "object": "chat.completion",
            "created": a.created,
            "model": a.model,
            "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
            "usage": u,
        }
    head = {"id": a.response_id, "object": "chat.completion.chunk", "created": a.created, "model": a.model}

    def chunk(delta: dict[str, Any], fin: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": fin, "logprobs": None}]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": piece}) for piece in _chunks(think_text)]
    out += [chunk({"content": piece}) for piece in _chunks(text)]
    for i, tc in enumerate(calls):
        pieces = _chunks(_args_text(tc, a.arguments_text)) or [""]
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": tc.id,
                            "type": "function",
                            "function": {"name": tc.name, "arguments": pieces[0]},
                        }
                    ]
                }
            )
        )
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces[1:]]
    out.append(chunk({}, finish))
    if include_usage:
        out.append(_sse({**head, "choices": [], "usage": u}))
    out.append(b"data: [DONE]\n\n")
    return out


def render_anthropic(a: WireAnswer, *, stream: bool) -> list[bytes] | dict[str, Any]:
    """An Anthropic ``message`` body, or its event stream (``message_start`` …
    ``message_stop``; thinking, text and ``tool_use`` blocks with fragmented JSON)."""
    assert a.message is not None
    thinking, text, other = _parts_of(a.message)
    calls = a.message.tool_calls or []
    usage = a.usage or Usage()
    blocks: list[dict[str, Any]] = []
    for p in thinking:
        b = {"type": "thinking", "thinking": p.get("thinking") or ""}
        b["signature"] = p.get("signature") or ""
        blocks.append(b)
    if text or not calls:
        blocks.append({"type": "text", "text": text})
    blocks.extend(o for o in other if o.get("type") not in ("json",))
    for tc in calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": tc.id,
                "name": tc.name,
                "input": tc.arguments if isinstance(tc.arguments, dict) else {},
            }
        )
    stop = a.finish_reason or ("tool_use" if calls else "end_turn")
    body = {
        "id": a.response_id,
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }
    if not stream:
        return body
    start = {
        **body,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": 0},
    }
    out = [_sse({"type": "message_start", "message": start}, "message_start")]
    for i, b in enumerate(blocks):
        t = b["type"]
        if t == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _chunks(b["text"])]
        elif t == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _chunks(b["thinking"])]
            if b.get("signature"):
                deltas.append({"type": "signature_delta", "signature": b["signature"]})
        elif t == "tool_use":
            empty = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in _chunks(orjson.dumps(b["input"]).decode())
            ]
        else:
            empty, deltas = b, []
        out.append(_sse({"type": "content_block_start", "index": i, "content_block": empty}, "content_block_start"))
        out += [_sse({"type": "content_block_delta", "index": i, "delta": d}, "content_block_delta") for d in deltas]
        out.append(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage.output_tokens},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def responses_output(a: WireAnswer) -> list[dict[str, Any]]:
    """The ``output`` items of a Responses answer (reasoning, message, function calls)."""
    assert a.message is not None
    thinking, text, _ = _parts_of(a.message)
    items: list[dict[str, Any]] = []
    for i, p in enumerate(thinking):
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{a.response_id[-12:]}_{i}",
            "summary": [{"type": "summary_text", "text": p.get("thinking") or ""}],
        }
        if p.get("signature"):
            item["encrypted_content"] = p["signature"]
        items.append(item)
    if text or not a.message.tool_calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{a.response_id[-12:]}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for i, tc in enumerate(a.message.tool_calls or []):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{a.response_id[-12:]}_{i}",
                "call_id": tc.id,
                "name": tc.name,
                "arguments": _args_text(tc, a.arguments_text),
                "status": "completed",
            }
        )
    return items


def render_responses(a: WireAnswer, *, stream: bool) -> list[bytes] | dict[str, Any]:
    """An OpenAI Responses ``response`` body, or its event stream (``response.created``,
    output items with text and argument deltas, ``response.completed``)."""
    usage = a.usage or Usage()
    items = responses_output(a)
    fin = a.finish_reason or "completed"
    status = "incomplete" if fin.startswith("incomplete") else "completed"
    body: dict[str, Any] = {
        "id": a.response_id,
        "object": "response",
        "created_at": a.created,
        "status": status,
        "model": a.model,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    if status == "incomplete":  # as recorded: "incomplete:max_output_tokens"
        body["incomplete_details"] = {"reason": fin.partition(":")[2] or None}
    if not stream:
        return body
    seq = 0

    def ev(obj: dict[str, Any]) -> bytes:
        nonlocal seq
        obj["sequence_number"] = seq
        seq += 1
        return _sse(obj, obj["type"])

    out = [ev({"type": "response.created", "response": {**body, "status": "in_progress", "output": []}})]
    for i, item in enumerate(items):
        t = item["type"]
        if t == "message":
            out.append(ev({"type": "response.output_item.added", "output_index": i, "item": {**item, "content": []}}))
            part = item["content"][0]
            out.append(
                ev(
                    {
                        "type": "response.content_part.added",
                        "item_id": item["id"],
                        "output_index": i,
                        "content_index": 0,
                        "part": {**part, "text": ""},
                    }
                )
            )
            for piece in _chunks(part["text"]):
                out.append(
                    ev(
                        {
                            "type": "response.output_text.delta",
                            "item_id": item["id"],
                            "output_index": i,
                            "content_index": 0,
                            "delta": piece,
                        }
                    )
                )
            out.append(
                ev(
                    {
                        "type": "response.output_text.done",
                        "item_id": item["id"],
                        "output_index": i,
                        "content_index": 0,
                        "text": part["text"],
                    }
                )
            )
            out.append(
                ev(
                    {
                        "type": "response.content_part.done",
                        "item_id": item["id"],
                        "output_index": i,
                        "content_index": 0,
                        "part": part,
                    }
                )
            )
        elif t == "function_call":
            out.append(ev({"type": "response.output_item.added", "output_index": i, "item": {**item, "arguments": ""}}))
            for piece in _chunks(item["arguments"]):
                out.append(
                    ev(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": item["id"],
                            "output_index": i,
                            "delta": piece,
                        }
                    )
                )
            out.append(
                ev(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item["id"],
                        "output_index": i,
                        "arguments": item["arguments"],
                    }
                )
            )
        else:
            out.append(ev({"type": "response.output_item.added", "output_index": i, "item": item}))
        out.append(ev({"type": "response.output_item.done", "output_index": i, "item": item}))
    out.append(ev({"type": f"response.{status}", "response": body}))
    return out


def render_error(endpoint: str, error: ErrorInfo) -> dict[str, Any]:
    """An error body in the shape of ``endpoint``'s API (``anthropic.messages``: ``{"type":
    "error", "error": {type, message}}``; OpenAI: ``{"error": {message, type, code}}``)."""
    if endpoint.startswith("anthropic"):
        return {"type": "error", "error": {"type": error.type, "message": error.message}}
    return {"error": {"message": error.message, "type": error.type, "code": None, "param": None}}


# -- rendering requests: our model request as the body of an endpoint ---------------------


def _text_of(content: Any) -> str:
    """The text parts of a content value, joined (thinking and other parts left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out = []
    for p in content:
        if isinstance(p, dict) and p.get("type") in (None, "text") and "text" in p:
            out.append(p["text"] if isinstance(p["text"], str) else display_text(p["text"]))
        elif isinstance(p, str):
            out.append(p)
    return "".join(out)


def _wire_content(content: Any) -> Any:
    """A message's content for a request body: a string as it is, our parts with the
    ``thinking`` ones left out (a request carries them only in Anthropic's form)."""
    if content is None or isinstance(content, str):
        return content
    kept = [p for p in content if not (isinstance(p, dict) and p.get("type") == "thinking")]
    if all(isinstance(p, dict) and p.get("type") == "text" and set(p) <= {"type", "text"} for p in kept):
        return "".join(p["text"] for p in kept) if kept else None
    return kept


def render_openai_chat_request(model: str, request: Any) -> dict[str, Any]:
    """A Chat Completions request body for ``request`` (a :class:`ModelRequest`): its
    messages (tool calls with JSON-text arguments), tools, stop sequences, and every option
    as a top-level field."""
    msgs: list[dict[str, Any]] = []
    for m in request.messages:
        out: dict[str, Any] = {"role": m.role, "content": _wire_content(m.content)}
        if m.tool_calls:
            out["tool_calls"] = [
                {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": _args_text(tc)}}
                for tc in m.tool_calls
            ]
        if m.tool_call_id is not None:
            out["tool_call_id"] = m.tool_call_id
        if m.name is not None:
            out["name"] = m.name
        msgs.append(out)
    body: dict[str, Any] = {"model": model, "messages": msgs, **request.options}
    if request.tools:
        body["tools"] = list(request.tools)
    if request.stop:
        body["stop"] = list(request.stop)
    return body


def render_anthropic_request(model: str, request: Any) -> dict[str, Any]:
    """A Messages request body: leading ``system`` messages as ``system``; assistant
    messages as blocks (thinking with its signature, text, ``tool_use``); consecutive
    ``tool`` messages as one user message of ``tool_result`` blocks; stop sequences as
    ``stop_sequences``; every option as a top-level field."""
    system: list[str] = []
    msgs: list[dict[str, Any]] = []
    for m in request.messages:
        if m.role == "system" and not msgs:
            system.append(_text_of(m.content))
            continue
        if m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                "content": _wire_content(m.content) or "",
            }
            if (
                msgs
                and msgs[-1]["role"] == "user"
                and isinstance(msgs[-1]["content"], list)
                and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in msgs[-1]["content"])
            ):
                msgs[-1]["content"].append(block)
            else:
                msgs.append({"role": "user", "content": [block]})
            continue
        if m.role == "assistant":
            blocks: list[dict[str, Any]] = []
            parts = (
                m.content
                if isinstance(m.content, list)
                else ([{"type": "text", "text": m.content}] if m.content else [])
            )
            for p in parts:
                if isinstance(p, dict) and p.get("type") == "thinking":
                    blocks.append(
                        {"type": "thinking", "thinking": p.get("thinking") or "", "signature": p.get("signature") or ""}
                    )
                elif isinstance(p, dict) and p.get("type") == "text":
                    blocks.append({"type": "text", "text": p.get("text") or ""})
                elif isinstance(p, dict):
                    blocks.append(p)
            for tc in m.tool_calls or []:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": tc.id,
                        "name": tc.name,
                        "input": tc.arguments if isinstance(tc.arguments, dict) else {},
                    }
                )
            msgs.append({"role": "assistant", "content": blocks})
            continue
        msgs.append({"role": "user" if m.role == "system" else m.role, "content": _wire_content(m.content) or ""})
    body: dict[str, Any] = {"model": model, "messages": msgs, **request.options}
    if system:
        body["system"] = "\n\n".join(system)
    if request.tools:
        body["tools"] = list(request.tools)
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    return body


def render_responses_request(model: str, request: Any) -> dict[str, Any]:
    """A Responses request body carrying the whole history as ``input`` (never a
    ``previous_response_id``): a leading system message as ``instructions``, messages
    as message items, tool calls as ``function_call`` items, tool results as
    ``function_call_output`` items; every option as a top-level field."""
    items: list[dict[str, Any]] = []
    messages = list(request.messages)
    body: dict[str, Any] = {"model": model}
    if messages and messages[0].role == "system":
        body["instructions"] = _text_of(messages[0].content)
        messages = messages[1:]
    for m in messages:
        if m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id or "", "output": _text_of(m.content)}
            )
            continue
        text = _text_of(m.content)
        if m.role == "assistant":
            if text:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
                )
            for tc in m.tool_calls or []:
                items.append({"type": "function_call", "call_id": tc.id, "name": tc.name, "arguments": _args_text(tc)})
            continue
        items.append({"role": m.role, "content": text})
    body["input"] = items
    body.update(request.options)
    if request.tools:
        body["tools"] = list(request.tools)
    return body


def render_request(endpoint: str, model: str, request: Any) -> dict[str, Any]:
    """A request body of ``endpoint`` (``openai.chat`` | ``openai.responses`` |
    ``anthropic.messages``) for ``request``, not streamed."""
    if endpoint == "openai.chat":
        return render_openai_chat_request(model, request)
    if endpoint == "openai.responses":
        return render_responses_request(model, request)
    return render_anthropic_request(model, request)
