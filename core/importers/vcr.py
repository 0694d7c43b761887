"""Importer for vcrpy cassettes of LLM HTTP APIs (``--from vcr``).

A cassette (YAML or JSON, vcrpy ``version: 1``) is a list of HTTP ``interactions``,
each a ``request`` {method, uri, headers, body} and a ``response`` {status, headers,
body {string}}. Two body styles are read: vcrpy's own (``body`` is a string, bytes, or
``{"string": ...}``) and pydantic-ai's (``parsed_body``, the JSON body already parsed
into YAML). Interactions with these APIs become model records:

* OpenAI chat completions (``…/chat/completions``, also OpenAI-compatible servers);
* Anthropic messages (``…/v1/messages``);
* Gemini ``…/models/NAME:generateContent`` and ``:streamGenerateContent``.

Other interactions are skipped with a warning; one cassette may mix providers.

Tool records are recovered from consecutive requests: a tool call in response *k* is
answered by a tool result in a later request (OpenAI ``role: tool`` message, Anthropic
``tool_result`` block, Gemini ``functionResponse`` part). Results are paired with calls
by id; when the id is empty or was rewritten (e.g. a Gemini ``functionCall`` without id
later replayed to OpenAI under a new id), by tool name and arguments, then by name, then
by position — each such pairing is reported as a warning. Results repeated in later
requests (chat history) are recognised and not imported twice. A tool record is placed
before the model call whose request first carried its result.

Server-sent-event streams (``text/event-stream`` bodies) are reassembled into one model
response: text deltas joined, tool-call argument fragments joined and parsed, and
thinking kept apart from the answer as a content part ``{"type": "thinking",
"thinking": ..., "signature": ...}``.

Every value goes through :mod:`core.jsonvalues` (NaN/Infinity, invalid Unicode); a body
that cannot be decoded is kept as an ``$invalid_unicode`` value with an explicit warning
and an ``undecodable_body`` error on the call, never as an empty string. Secrets are
redacted by default (header names containing key/token/secret/authorization/cookie,
sensitive query parameters, and ``sk-…``-style values everywhere). What maps to what is
documented in ``docs/importers.md`` ("vcrpy cassettes").
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import re
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import yaml

from ..canonical import model_key, tool_key
from ..errors import CanonicalizationError, FormatError
from ..io import redact_recording
from ..jsonvalues import (
    display_text,
    encode_bytes,
    encode_value,
    is_tagged,
    load_json_lenient,
)
from ..recording import (
    ChatMessage,
    ErrorInfo,
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
from ..redaction import REDACTED, SecretRedactor, is_sensitive_header, is_sensitive_name
from .base import ImportedRun, Importer, ImportWarning

__all__ = ["VcrImporter", "parse_sse", "finalize_recording", "Warnings"]

PRODUCER = "chassis-inspector import"
_ERROR_TEXT = re.compile(r"^\s*(?:(?:Error|ERROR|Exception)\b[^\n]*?:|Traceback \(most recent call last\))")


# --------------------------------------------------------------------------- helpers shared with otel


class Warnings(list):
    """A list of :class:`ImportWarning` with a ``add(place, message)`` shortcut."""

    def add(self, place: str, message: str) -> None:
        self.append(ImportWarning(place, message))

    def extend_values(self, items: Any) -> None:
        for w in items:
            self.append(ImportWarning(w.place, w.message))


def finalize_recording(
    records: list[Any],
    *,
    fmt: str,
    path: Path,
    data: bytes,
    run_id: str,
    metadata: dict[str, Any],
    warnings: Warnings,
    index: int = 0,
    created_at: str | None = None,
    keyless: set[int] | None = None,
    session: SessionInfo | None = None,
    stamp_run_id: bool = True,
) -> Recording:
    """Number records, stamp ``run_id``, compute canonical keys, redact, and wrap them
    in a recording.

    * A record whose identity cannot be canonicalized keeps ``key = None`` and gets a
      warning (replay cannot match it) — it is never dropped. Records listed in
      ``keyless`` (indices whose identity the source does not hold; the caller warned)
      get no key either.
    * Records without a ``run_id`` get ``run_id`` (unless ``stamp_run_id`` is false:
      a re-imported export keeps the records' own run ids, ``None`` included).
    * A ``tool_call_id`` used by more than one tool record is made unique with a ``~N``
      suffix (the loader rejects an id answered twice), with a warning.
    * Redaction is by field name plus ``SecretRedactor(patterns=True)`` (``sk-…``,
      ``sk-ant-…``, ...); tool results scrubbed are marked ``result.redacted``.
    * ``metadata.source`` = ``{format, file, sha256, run, index, redacted, warnings}``
      (the same shape as the other importers).
    """
    seen: dict[tuple[str | None, str], int] = {}
    for seq, r in enumerate(records):
        r.seq = seq
        if r.run_id is None and stamp_run_id:
            r.run_id = run_id
        if isinstance(r, ToolRecord) and r.tool_call_id:
            k = (r.run_id, r.tool_call_id)
            n = seen.get(k, 0) + 1
            seen[k] = n
            if n > 1:
                new_id = f"{r.tool_call_id}~{n}"
                warnings.add(f"record {seq}", f"tool_call_id {r.tool_call_id!r} is used by more than one call; recorded as {new_id!r}")
                r.tool_call_id = new_id
        if not isinstance(r, (ToolRecord, ModelRecord)):
            continue
        if keyless and seq in keyless:
            r.key = None
            continue
        try:
            r.key = r.compute_key()
        except CanonicalizationError as exc:
            r.key = None
            what = f"tool {r.tool!r}" if isinstance(r, ToolRecord) else f"model {r.model!r}"
            warnings.add(
                f"record {seq}",
                f"{what} call imported without a canonical key ({exc.reason} at {exc.path or '/'}); "
                "replay cannot match this call",
            )
    rec = Recording(
        metadata=dict(metadata),
        session=session or SessionInfo(mode="record", created_at=created_at, producer=f"{PRODUCER} --from {fmt}"),
        records=records,
    )
    changed = redact_recording(rec, SecretRedactor(patterns=True))
    if changed:
        warnings.add("redaction", f"secret-looking values or sensitive fields were redacted in {changed} record(s)")
    rec.metadata["source"] = {
        "format": fmt,
        "file": path.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "run": run_id,
        "index": index,
        "redacted": True,
        "warnings": [str(w) for w in warnings][:200],
    }
    return rec


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
            value, vw = load_json_lenient(raw.encode("utf-8", "surrogatepass"), place=place)
        except FormatError as exc:
            warnings.add(place, f"tool-call arguments are not valid JSON ({exc.reason}); kept raw (raw_arguments)")
            return raw, True
        if isinstance(value, dict) and not is_tagged(value):
            warnings.extend_values(vw)
            return value, False
        kind = "a JSON string literal" if isinstance(value, str) else f"a JSON {type(value).__name__}"
        warnings.add(place, f"tool-call arguments are {kind}, not an object; kept raw (raw_arguments)")
        return raw, True
    warnings.add(place, f"tool-call arguments are a {type(raw).__name__}, not an object; kept raw (raw_arguments)")
    return raw, True


def as_content(value: Any) -> str | list[Any] | None:
    """A message ``content`` from a source value: strings, lists and None as they are;
    a tagged invalid-Unicode text as one text part carrying the tag under ``encoded``;
    any other value as one ``json`` part."""
    if value is None or isinstance(value, (str, list)):
        return value
    if is_tagged(value):
        return [{"type": "text", "text": display_text(value), "encoded": value}]
    return [{"type": "json", "json": value}]


def simplify_parts(parts: list[dict[str, Any]]) -> str | list[Any] | None:
    """Content from parts: ``None`` when empty, the text when it is one plain text part,
    else the list."""
    if not parts:
        return None
    if len(parts) == 1 and parts[0].get("type") == "text" and set(parts[0]) == {"type", "text"} and isinstance(parts[0]["text"], str):
        return parts[0]["text"]
    return parts


def error_from_result(content: Any, is_error: bool | None, place: str, warnings: Warnings) -> ErrorInfo | None:
    """The error of a tool result: explicit (``is_error``) or inferred from a result text
    that starts like an error message ("Error ...:", "Exception ...:", a traceback) —
    inferred errors are reported as warnings."""
    text = display_text(content) if not isinstance(content, list) else "\n".join(
        display_text(p.get("text")) if isinstance(p, dict) and "text" in p else "" for p in content
    )
    if is_error:
        return ErrorInfo(type="tool_error", message=text)
    if is_error is None and _ERROR_TEXT.match(text or ""):
        warnings.add(place, "tool result text reads as an error; recorded as error type 'tool_error' (inferred)")
        return ErrorInfo(type="tool_error", message=text)
    return None


# --------------------------------------------------------------------------- YAML


class _CassetteLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML loader that also reads ``!!python/...`` tags of old cassettes as plain
    values, and leaves timestamps as strings."""


def _construct_python(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_CassetteLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_python)
_CassetteLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
)


def _plain(value: Any) -> Any:
    """YAML-specific values to JSON: dates to ISO strings (bytes stay for jsonvalues)."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value


def _load_cassette(path: Path, data: bytes) -> Any:
    source = str(path)
    head = data.lstrip()[:1]
    if path.suffix.lower() == ".json" or head in (b"{", b"["):
        value, _ = load_json_lenient(data, source=source)
        return value
    try:
        return _plain(yaml.load(data, Loader=_CassetteLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        truncated = mark is not None and (
            mark.index >= len(data.rstrip()) - 1 or "end of stream" in problem or "unexpected end" in problem
        )
        reason = ("truncated YAML: the document ends early" if truncated else "malformed YAML") + f" ({problem})"
        raise FormatError(
            reason, file=source,
            line=(mark.line + 1) if mark else None, column=(mark.column + 1) if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise FormatError(f"malformed YAML ({exc})", file=source) from None


# --------------------------------------------------------------------------- HTTP bits


def _headers(h: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(h, dict):
        for k, v in h.items():
            vals = v if isinstance(v, list) else [v]
            out[str(k)] = [x if isinstance(x, str) else str(x) for x in vals]
    elif isinstance(h, list):  # [[name, value], ...]
        for item in h:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                out.setdefault(str(item[0]), []).append(str(item[1]))
    return out


def _header(h: dict[str, list[str]], name: str) -> str | None:
    low = name.lower()
    for k, v in h.items():
        if k.lower() == low and v:
            return v[0]
    return None


def _redact_headers(h: dict[str, list[str]]) -> tuple[dict[str, list[str]], int]:
    out, n = {}, 0
    for k, v in h.items():
        if is_sensitive_header(k):
            out[k] = REDACTED  # type: ignore[assignment]
            n += 1
        else:
            out[k] = v
    return out, n


_SENSITIVE_QUERY = {"key", "api_key", "apikey", "token", "access_token", "sig", "signature"}


def _redact_uri(uri: str) -> tuple[str, int]:
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri, 0
    if not parts.query:
        return uri, 0
    q = parse_qsl(parts.query, keep_blank_values=True)
    n = 0
    out = []
    for k, v in q:
        if k.lower() in _SENSITIVE_QUERY or is_sensitive_name(k):
            out.append((k, REDACTED))
            n += 1
        else:
            out.append((k, v))
    if not n:
        return uri, 0
    return urlunsplit(parts._replace(query=urlencode(out, safe="[]"))), n


def _duration(h: dict[str, list[str]]) -> float | None:
    for name in ("openai-processing-ms", "x-envoy-upstream-service-time"):
        v = _header(h, name)
        if v:
            try:
                return float(v) / 1000.0
            except ValueError:
                pass
    st = _header(h, "server-timing")
    if st:
        m = re.search(r"dur=([0-9.]+)", st)
        if m:
            return float(m.group(1)) / 1000.0
    return None


def _http_date(h: dict[str, list[str]]) -> str | None:
    v = _header(h, "date")
    if not v:
        return None
    try:
        dt = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return dt.isoformat().replace("+00:00", "Z")


@dataclass
class _Body:
    kind: str  # "json" | "sse" | "text" | "empty" | "undecodable"
    value: Any = None
    events: list[tuple[str, str]] = field(default_factory=list)


def _decode_body(msg: dict[str, Any], headers: dict[str, list[str]], place: str, warnings: Warnings) -> _Body:
    """Decode a request/response body (``parsed_body`` or ``body``)."""
    if "parsed_body" in msg:
        value, vw = encode_value(msg["parsed_body"], place=f"{place}.parsed_body")
        warnings.extend_values(vw)
        return _Body("json", value)
    body = msg.get("body")
    if isinstance(body, dict):
        if "string" in body:
            body = body["string"]
        elif "base64_string" in body:
            import base64

            try:
                body = base64.b64decode(body["base64_string"])
            except (ValueError, TypeError):
                warnings.add(f"{place}.body", "base64 body could not be decoded")
                return _Body("undecodable", body["base64_string"])
        else:
            value, vw = encode_value(body, place=f"{place}.body")
            warnings.extend_values(vw)
            return _Body("json", value)
    if body is None or body == "" or body == b"":
        return _Body("empty")
    bplace = f"{place}.body"
    ctype = (_header(headers, "content-type") or "").lower()
    cenc = (_header(headers, "content-encoding") or "").lower()
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        if raw[:2] == b"\x1f\x8b" or cenc in ("gzip", "deflate"):
            try:
                raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw)
            except (OSError, zlib.error, EOFError):
                pass
        text_or_tag = encode_bytes(raw)
        if isinstance(text_or_tag, str):
            body = text_or_tag
        else:
            # not UTF-8: it may still be JSON holding bytes that are not UTF-8 in strings
            try:
                value, vw = load_json_lenient(raw, source=bplace, place=bplace)
            except FormatError:
                warnings.add(
                    bplace,
                    f"body could not be decoded ({len(raw)} bytes, content-type {ctype or 'unknown'}, "
                    "not UTF-8 and not JSON); kept as invalid-unicode text",
                )
                return _Body("undecodable", text_or_tag)
            warnings.extend_values(vw)
            return _Body("json", value)
    if not isinstance(body, str):
        value, vw = encode_value(body, place=bplace)
        warnings.extend_values(vw)
        return _Body("json", value)
    stripped = body.lstrip()
    if "event-stream" in ctype or stripped.startswith(("event:", "data:")):
        return _Body("sse", events=parse_sse(body))
    try:
        value, vw = load_json_lenient(body.encode("utf-8", "surrogatepass"), source=bplace, place=bplace)
    except FormatError as exc:
        enc, vw = encode_value(body, place=bplace)
        warnings.extend_values(vw)
        warnings.add(bplace, f"body is not JSON ({exc.reason}); kept as text")
        return _Body("text", enc)
    warnings.extend_values(vw)
    return _Body("json", value)


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


# --------------------------------------------------------------------------- provider shapes


@dataclass
class _Result:
    """A tool result found in a request."""

    id: str | None
    name: str | None
    content: Any
    is_error: bool | None
    place: str
    call: tuple[str | None, str, Any] | None = None  # (id, name, arguments) of the call in this request


@dataclass
class _Req:
    model: str | None
    messages: list[ChatMessage]
    tools: list[Any]
    stop: list[str]
    options: dict[str, Any]
    results: list[_Result]


@dataclass
class _Resp:
    message: ChatMessage | None
    finish_reason: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    response_model: str | None = None
    error: ErrorInfo | None = None


def _provider_of(uri: str, body: Any) -> str | None:
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
        out.append(ToolCall(id=tc.get("id") or "", name=fn.get("name") or "", arguments=args, raw_arguments=True if is_raw else None))
    return out


def _thinking_part(text: Any, signature: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "thinking", "thinking": text}
    if signature:
        part["signature"] = signature
    return part


def _openai_request(body: dict[str, Any], place: str, warnings: Warnings) -> _Req:
    msgs: list[ChatMessage] = []
    results: list[_Result] = []
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
        msgs.append(ChatMessage(
            role=role, content=content, tool_calls=calls or None,
            tool_call_id=m.get("tool_call_id"), name=m.get("name"),
        ))
        if calls:
            res.calls([(c.id or None, c.name, c.arguments) for c in calls])
        if role in ("tool", "function"):
            rid = m.get("tool_call_id") or None
            call = res.resolve(rid, m.get("name"))
            results.append(_Result(rid, m.get("name") or (call[1] if call else None), m.get("content"), None, mp, call))
    tools = list(body.get("tools") or []) + list(body.get("functions") or [])
    options = {k: v for k, v in body.items() if k not in ("messages", "model", "tools", "functions", "stop")}
    return _Req(body.get("model"), msgs, tools, _str_list(body.get("stop")), options, results)


def _openai_response(body: Any, place: str, warnings: Warnings) -> _Resp:
    if not isinstance(body, dict):
        return _Resp(None, error=ErrorInfo(type="bad_response", message=f"response body is not an object: {display_text(body)[:200]}"))
    if isinstance(body.get("error"), dict):
        e = body["error"]
        return _Resp(None, error=ErrorInfo(type=str(e.get("type") or e.get("code") or "api_error"), message=display_text(e.get("message", ""))))
    choices = body.get("choices") or []
    if not choices:
        return _Resp(None, error=ErrorInfo(type="bad_response", message="response has no choices"), response_id=body.get("id"))
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
    u = body.get("usage") or {}
    usage = _usage(u.get("prompt_tokens", u.get("input_tokens")), u.get("completion_tokens", u.get("output_tokens")))
    return _Resp(msg, ch.get("finish_reason"), usage, body.get("id"), body.get("model"))


def _openai_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble OpenAI chat-completion chunks into one chat.completion object."""
    out: dict[str, Any] = {"object": "chat.completion", "choices": []}
    choices: dict[int, dict[str, Any]] = {}
    for n, (_name, data) in enumerate(events):
        if data.strip() == "[DONE]":
            continue
        try:
            chunk, vw = load_json_lenient(data.encode("utf-8", "surrogatepass"), place=f"{place}.events[{n}]")
        except FormatError as exc:
            warnings.add(f"{place}.events[{n}]", f"stream event is not JSON ({exc.reason}); skipped")
            continue
        warnings.extend_values(vw)
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            out["error"] = chunk["error"]
        for k in ("id", "model", "created", "system_fingerprint"):
            if chunk.get(k) is not None:
                out[k] = chunk[k]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for c in chunk.get("choices") or []:
            idx = c.get("index", 0)
            st = choices.setdefault(idx, {"index": idx, "message": {"role": "assistant"}, "_text": [], "_think": [], "_calls": {}})
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
                cur = st["_calls"].setdefault(ti, {"id": "", "type": "function", "function": {"name": "", "arguments": []}})
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
        return [{"type": "text", "text": content}], []
    parts: list[Any] = []
    calls: list[ToolCall] = []
    for j, b in enumerate(content or []):
        if not isinstance(b, dict):
            parts.append(b)
            continue
        t = b.get("type")
        if t == "text":
            parts.append({"type": "text", "text": b.get("text", "")})
        elif t == "thinking":
            parts.append(_thinking_part(b.get("thinking", ""), b.get("signature")))
        elif t == "tool_use":
            args, is_raw = parse_args(b.get("input", {}), f"{place}[{j}].input", warnings)
            calls.append(ToolCall(id=b.get("id") or "", name=b.get("name") or "", arguments=args, raw_arguments=True if is_raw else None))
        else:
            parts.append(b)
    return parts, calls


def _anthropic_request(body: dict[str, Any], place: str, warnings: Warnings) -> _Req:
    msgs: list[ChatMessage] = []
    results: list[_Result] = []
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
                results.append(_Result(rid, call[1] if call else None, rc, bool(is_err) if is_err is not None else None, f"{mp}.content[{j}]", call))
            else:
                pending_parts.append(b)
        if pending_parts:
            msgs.append(ChatMessage(role=role, content=simplify_parts(pending_parts)))
    options = {k: v for k, v in body.items() if k not in ("messages", "model", "tools", "system", "stop_sequences")}
    return _Req(body.get("model"), msgs, list(body.get("tools") or []), _str_list(body.get("stop_sequences")), options, results)


def _anthropic_response(body: Any, place: str, warnings: Warnings) -> _Resp:
    if not isinstance(body, dict):
        return _Resp(None, error=ErrorInfo(type="bad_response", message=f"response body is not an object: {display_text(body)[:200]}"))
    if body.get("type") == "error" or isinstance(body.get("error"), dict):
        e = body.get("error") or {}
        return _Resp(None, error=ErrorInfo(type=str(e.get("type") or "api_error"), message=display_text(e.get("message", ""))))
    parts, calls = _anthropic_blocks(body.get("content"), f"{place}.content", warnings)
    msg = ChatMessage(role=body.get("role") or "assistant", content=simplify_parts(parts), tool_calls=calls or None)
    u = body.get("usage") or {}
    return _Resp(msg, body.get("stop_reason"), _usage(u.get("input_tokens"), u.get("output_tokens")), body.get("id"), body.get("model"))


def _anthropic_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble an Anthropic messages stream into one Message object."""
    msg: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
    blocks: dict[int, dict[str, Any]] = {}
    json_parts: dict[int, list[str]] = {}
    unknown: set[str] = set()
    for n, (name, data) in enumerate(events):
        try:
            ev, vw = load_json_lenient(data.encode("utf-8", "surrogatepass"), place=f"{place}.events[{n}]")
        except FormatError as exc:
            warnings.add(f"{place}.events[{n}]", f"stream event {name!r} is not JSON ({exc.reason}); skipped")
            continue
        warnings.extend_values(vw)
        if not isinstance(ev, dict):
            continue
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


def _gemini_parts(parts: Any, place: str, warnings: Warnings) -> tuple[list[Any], list[ToolCall], list[tuple[int, dict[str, Any]]]]:
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
            calls.append(ToolCall(id=fc.get("id") or "", name=fc.get("name") or "", arguments=args, raw_arguments=True if is_raw else None))
        elif fr is not None:
            responses.append((j, fr))
        elif "text" in p:
            if p.get("thought"):
                out.append(_thinking_part(p["text"], p.get("thoughtSignature")))
            else:
                out.append({"type": "text", "text": p["text"]})
        else:
            out.append(p)
    return out, calls, responses


def _gemini_model(uri: str) -> str | None:
    m = re.search(r"models/([^/:?]+)", uri)
    return m.group(1) if m else None


def _gemini_request(body: dict[str, Any], uri: str, place: str, warnings: Warnings) -> _Req:
    msgs: list[ChatMessage] = []
    results: list[_Result] = []
    res = _Resolver()
    si = body.get("systemInstruction") or body.get("system_instruction")
    if si:
        parts, _, _ = _gemini_parts(si.get("parts") if isinstance(si, dict) else [{"text": si}], f"{place}.systemInstruction", warnings)
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
            results.append(_Result(rid, name, fr.get("response"), None, f"{cp}.parts[{j}].functionResponse", call))
    tools = body.get("tools") or []
    if isinstance(tools, dict):
        tools = [tools]
    gc = dict(body.get("generationConfig") or body.get("generation_config") or {})
    stop = _str_list(gc.pop("stopSequences", None) or gc.pop("stop_sequences", None))
    options = {k: v for k, v in body.items() if k not in ("contents", "systemInstruction", "system_instruction", "tools", "generationConfig", "generation_config", "model")}
    if gc:
        options["generationConfig"] = gc
    if ":streamGenerateContent" in uri:
        options["stream"] = True
    return _Req(_gemini_model(uri) or body.get("model"), msgs, list(tools), stop, options, results)


def _gemini_response(body: Any, place: str, warnings: Warnings) -> _Resp:
    if not isinstance(body, dict):
        return _Resp(None, error=ErrorInfo(type="bad_response", message=f"response body is not an object: {display_text(body)[:200]}"))
    if isinstance(body.get("error"), dict):
        e = body["error"]
        return _Resp(None, error=ErrorInfo(type=str(e.get("status") or e.get("code") or "api_error"), message=display_text(e.get("message", ""))))
    cands = body.get("candidates") or []
    if not cands:
        fb = body.get("promptFeedback")
        return _Resp(None, error=ErrorInfo(type="no_candidates", message=display_text(fb) if fb else "response has no candidates"))
    if len(cands) > 1:
        warnings.add(f"{place}.candidates", f"{len(cands)} candidates; only the first is imported")
    c = cands[0]
    parts, calls, _ = _gemini_parts((c.get("content") or {}).get("parts"), f"{place}.candidates[0].content.parts", warnings)
    msg = ChatMessage(role="assistant", content=simplify_parts(parts), tool_calls=calls or None)
    u = body.get("usageMetadata") or {}
    out_tokens = u.get("candidatesTokenCount")
    if isinstance(u.get("thoughtsTokenCount"), int):
        out_tokens = (out_tokens or 0) + u["thoughtsTokenCount"]
    return _Resp(msg, c.get("finishReason"), _usage(u.get("promptTokenCount"), out_tokens), body.get("responseId"), body.get("modelVersion"))


def _gemini_stream(events: list[tuple[str, str]], place: str, warnings: Warnings) -> Any:
    """Reassemble Gemini streamGenerateContent (SSE) chunks into one response."""
    out: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    finish = None
    for n, (_name, data) in enumerate(events):
        try:
            chunk, vw = load_json_lenient(data.encode("utf-8", "surrogatepass"), place=f"{place}.events[{n}]")
        except FormatError as exc:
            warnings.add(f"{place}.events[{n}]", f"stream event is not JSON ({exc.reason}); skipped")
            continue
        warnings.extend_values(vw)
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            out["error"] = chunk["error"]
        for k in ("usageMetadata", "modelVersion", "responseId", "promptFeedback"):
            if k in chunk:
                out[k] = chunk[k]
        for c in (chunk.get("candidates") or [])[:1]:
            for p in (c.get("content") or {}).get("parts") or []:
                if (
                    isinstance(p, dict) and "text" in p and parts and "text" in parts[-1]
                    and bool(parts[-1].get("thought")) == bool(p.get("thought"))
                    and isinstance(p["text"], str) and isinstance(parts[-1]["text"], str)
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


# --------------------------------------------------------------------------- the importer


@dataclass
class _Pending:
    id: str | None
    name: str
    arguments: Any
    model_seq: int


class VcrImporter(Importer):
    """vcrpy cassettes (YAML or JSON) of OpenAI / Anthropic / Gemini HTTP calls."""

    name = "vcr"
    description = "vcrpy cassette (YAML/JSON) of OpenAI chat completions, Anthropic messages or Gemini generateContent calls"

    def sniff(self, path: Path, head: bytes) -> str | None:
        if path.suffix.lower() not in (".yaml", ".yml", ".json"):
            return "not a .yaml, .yml or .json file"
        text = head.decode("utf-8", "replace")
        if "interactions" not in text:
            return "no 'interactions' list (not a vcrpy cassette)"
        if "request" not in text or "uri" not in text:
            return "'interactions' has no request with a uri (not a vcrpy cassette)"
        return None

    def load(self, path: Path) -> list[ImportedRun]:
        path = Path(path)
        source = str(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise FormatError("no such file", file=source) from None
        except OSError as exc:
            raise FormatError(f"cannot read file: {exc.strerror}", file=source) from None
        doc = _load_cassette(path, data)
        if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
            raise FormatError("not a vcrpy cassette: no 'interactions' list", file=source, path="/interactions")
        warnings = Warnings()
        records, metadata, created = self._convert(doc["interactions"], warnings, source)
        rec = finalize_recording(
            records, fmt="vcr", path=path, data=data, run_id=path.stem, metadata=metadata,
            warnings=warnings, created_at=created,
        )
        return [ImportedRun(run_id=path.stem, recording=rec, warnings=list(warnings))]

    # -- conversion --------------------------------------------------------------------

    def _convert(self, interactions: list[Any], warnings: Warnings, source: str) -> tuple[list[Any], dict[str, Any], str | None]:
        records: list[Any] = []
        http: list[dict[str, Any]] = []
        providers: list[str] = []
        pending: list[_Pending] = []
        emitted: list[ToolRecord] = []
        redacted_headers = 0
        created: str | None = None
        for i, inter in enumerate(interactions):
            place = f"interactions[{i}]"
            if not isinstance(inter, dict) or not isinstance(inter.get("request"), dict):
                warnings.add(place, "interaction has no request; skipped")
                continue
            req_msg = inter["request"]
            resp_msg = inter.get("response") if isinstance(inter.get("response"), dict) else {}
            uri = str(req_msg.get("uri") or "")
            req_h = _headers(req_msg.get("headers"))
            resp_h = _headers(resp_msg.get("headers"))
            req_body = _decode_body(req_msg, req_h, f"{place}.request", warnings)
            provider = _provider_of(uri, req_body.value)
            safe_uri, nq = _redact_uri(uri)
            rh, n1 = _redact_headers(req_h)
            sh, n2 = _redact_headers(resp_h)
            redacted_headers += n1 + n2 + nq
            status = (resp_msg.get("status") or {}).get("code") if isinstance(resp_msg.get("status"), dict) else resp_msg.get("status")
            entry: dict[str, Any] = {
                "interaction": i, "method": req_msg.get("method"), "uri": safe_uri, "status": status,
                "provider": provider, "request_headers": rh, "response_headers": sh,
            }
            http.append(entry)
            if provider is None:
                warnings.add(place, f"{req_msg.get('method', '?')} {safe_uri} is not an OpenAI, Anthropic or Gemini model call; skipped")
                continue
            if provider not in providers:
                providers.append(provider)
            at = _http_date(resp_h)
            created = created or at

            # request
            if req_body.kind != "json" or not isinstance(req_body.value, dict):
                warnings.add(f"{place}.request.body", f"request body is {req_body.kind}, not a JSON object; request kept raw in options")
                req = _Req(_gemini_model(uri) if provider == "gemini" else None, [], [], [], {"raw_body": req_body.value}, [])
            elif provider == "openai":
                req = _openai_request(req_body.value, f"{place}.request.body", warnings)
            elif provider == "anthropic":
                req = _anthropic_request(req_body.value, f"{place}.request.body", warnings)
            else:
                req = _gemini_request(req_body.value, uri, f"{place}.request.body", warnings)

            # tool results carried by this request
            for r in req.results:
                tr = self._pair(r, pending, emitted, warnings)
                if tr is not None:
                    records.append(tr)
                    emitted.append(tr)

            # response
            resp, stream, stream_events = self._response(provider, resp_msg, resp_h, status, f"{place}.response", warnings)
            entry["stream"] = stream
            if stream:
                entry["stream_events"] = stream_events
            if resp.response_id:
                entry["response_id"] = resp.response_id
            if resp.response_model:
                entry["response_model"] = resp.response_model
            model = req.model or resp.response_model
            if not model:
                warnings.add(place, "no model name in the request, URI or response; recorded as 'unknown'")
                model = "unknown"
            mr = ModelRecord(
                seq=len(records), at=at, model=model,
                request=ModelRequest(messages=req.messages, tools=req.tools, stop=req.stop, options=req.options),
                response=ModelResponse(message=resp.message, finish_reason=resp.finish_reason, usage=resp.usage) if resp.message else None,
                duration_seconds=_duration(resp_h),
                error=resp.error,
            )
            entry["seq"] = len(records)
            records.append(mr)
            if resp.message and resp.message.tool_calls:
                for tc in resp.message.tool_calls:
                    pending.append(_Pending(tc.id or None, tc.name, tc.arguments, mr.seq))
        for p in pending:
            warnings.add(
                f"record {p.model_seq}",
                f"tool call {p.name!r} (id {p.id or 'none'}) has no result in any later request of the cassette; no tool record",
            )
        # seq numbers in 'http' entries are final only after finalize (same order, so same numbers)
        meta = {"providers": providers, "http": http, "redaction": {"headers_and_query_params": redacted_headers}}
        return records, meta, created

    def _response(self, provider: str, msg: dict[str, Any], headers: dict[str, list[str]], status: Any, place: str, warnings: Warnings) -> tuple[_Resp, bool, int]:
        body = _decode_body(msg, headers, place, warnings) if msg else _Body("empty")
        stream = body.kind == "sse"
        value = body.value
        if stream:
            value = {"openai": _openai_stream, "anthropic": _anthropic_stream, "gemini": _gemini_stream}[provider](body.events, f"{place}.body", warnings)
        elif body.kind == "empty":
            warnings.add(place, "response has no body")
            return _Resp(None, error=ErrorInfo(type="empty_response", message=f"HTTP {status}: no response body")), False, 0
        elif body.kind == "undecodable":
            return _Resp(None, error=ErrorInfo(type="undecodable_body", message=f"HTTP {status}: response body could not be decoded: {display_text(value)[:200]}")), False, 0
        elif body.kind == "text":
            return _Resp(None, error=ErrorInfo(type=f"http_{status}" if isinstance(status, int) and status >= 400 else "bad_response", message=display_text(value)[:2000])), False, 0
        conv = {"openai": _openai_response, "anthropic": _anthropic_response, "gemini": _gemini_response}[provider]
        resp = conv(value, f"{place}.body", warnings)
        if isinstance(status, int) and status >= 400 and resp.error is None:
            resp.error = ErrorInfo(type=f"http_{status}", message=display_text(value)[:2000])
        elif isinstance(status, int) and status >= 400 and resp.error is not None and not resp.error.type.startswith("http_"):
            resp.error = ErrorInfo(type=f"http_{status}:{resp.error.type}", message=resp.error.message)
        return resp, stream, len(body.events)

    def _pair(self, r: _Result, pending: list[_Pending], emitted: list[ToolRecord], warnings: Warnings) -> ToolRecord | None:
        taken: _Pending | None = None
        how = "id"
        if r.id:
            taken = next((p for p in pending if p.id == r.id), None)
            if taken is None and any(e.tool_call_id == r.id for e in emitted):
                return None  # chat history: already imported
        if taken is None and r.call is not None:
            _cid, cname, cargs = r.call
            taken = next((p for p in pending if p.name == cname and p.arguments == cargs), None)
            how = "tool name and arguments"
            if taken is None and any(e.tool == cname and e.arguments == cargs for e in emitted):
                return None  # history, possibly under a rewritten id
        if taken is None and r.name:
            taken = next((p for p in pending if p.name == r.name), None)
            how = "tool name"
        if taken is None and not r.id and not r.name and pending:
            taken = pending[0]
            how = "position"
        if taken is None:
            name = (r.call[1] if r.call else None) or r.name or "unknown"
            args = r.call[2] if r.call else {}
            warnings.add(r.place, f"tool result for {name!r} (id {r.id or 'none'}) answers no call seen in an earlier response; imported on its own")
            return ToolRecord(seq=0, tool=name, arguments=args, tool_call_id=r.id,
                              result=ToolResult(content=r.content, error=error_from_result(r.content, r.is_error, r.place, warnings)))
        pending.remove(taken)
        if how != "id":
            if r.id and taken.id and r.id != taken.id:
                warnings.add(r.place, f"tool call id rewritten ({taken.id!r} in the response, {r.id!r} here); paired by {how}")
            elif not (r.id and taken.id):
                warnings.add(r.place, f"tool call {taken.name!r} has no id on {'both sides' if not r.id and not taken.id else 'one side'}; paired by {how}")
        return ToolRecord(
            seq=0, tool=taken.name, arguments=taken.arguments,
            tool_call_id=taken.id or r.id,
            result=ToolResult(content=r.content, error=error_from_result(r.content, r.is_error, r.place, warnings)),
        )
