"""OpenTelemetry GenAI semantic conventions: import of OTLP JSON traces, and export of
any recording to OTLP JSON (``--from otel``; ``chassis-inspector export --to otlp``).

Sources: the OpenTelemetry GenAI semantic conventions (``docs/gen-ai/gen-ai-spans.md``,
``gen-ai-agent-spans.md``, ``gen-ai-events.md``, the JSON schemas
``gen-ai-input-messages.json`` / ``gen-ai-output-messages.json`` and
``non-normative/examples-llm-calls.md`` of open-telemetry/semantic-conventions) and the
OTLP/JSON encoding of ``ExportTraceServiceRequest`` (opentelemetry-proto: ``resourceSpans``
→ ``scopeSpans`` → ``spans``; ids as hex strings, 64-bit integers as decimal strings,
``AnyValue`` as ``{"stringValue"|"intValue"|"doubleValue"|"boolValue"|"arrayValue"|
"kvlistValue"|"bytesValue": ...}``).

Export (:func:`export_otlp`): one trace per recording; a root ``invoke_agent`` span;
one client span ``chat {model}`` per model record (``gen_ai.operation.name=chat``,
``gen_ai.request.model``, ``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.definitions``, ``gen_ai.request.stop_sequences``, the numeric
``gen_ai.request.*`` options, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``,
``error.type`` and status ERROR on failure) and one ``execute_tool {name}`` span per
tool record (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``). What the conventions have
no attribute for is carried in ``chassis.*`` attributes (full request options, record
seq, tool error message, artifact, the record's ``meta``, the recording's metadata and session) so that an
export imports back with every call intact. Other record kinds become ``chassis.<kind>``
spans carrying the record as JSON.

Import (:class:`OtelImporter`): OTLP JSON (one document, a list of documents, or JSON
Lines as written by the collector's file exporter). One run per trace. Spans are read by
``gen_ai.operation.name`` (inferred from the attributes when missing): ``chat`` /
``text_completion`` / ``generate_content`` → model records; ``execute_tool`` → tool
records. Messages come from ``gen_ai.input.messages`` / ``gen_ai.output.messages``
(JSON strings or structured values), ``gen_ai.system_instructions``, the older per-message
span events (``gen_ai.system.message``, ``gen_ai.user.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``, before
semconv 1.37), the ``gen_ai.client.inference.operation.details`` event, and the indexed
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes some instrumentations
write. A trace with model spans but no tool spans gets its tool records recovered from
consecutive model calls (tool calls in one output, results in a later input), as for
cassettes. Reasoning parts become ``{"type": "thinking"}`` content parts.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import TypeAdapter

from .. import __version__
from ..errors import FormatError
from ..record.canonical import canonical_json
from ..record.jsonvalues import BIGINT_TAG, decode_value, display_text, encode_value, is_tagged, load_json_lenient
from ..record.nesting import dumps
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Record,
    Recording,
    SessionInfo,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from ..record.recording_redaction import redacted_copy
from ._llm_api import CarriedResult, Warnings, parse_args, simplify_parts, text_part
from ._source import read_source
from ._spans import (
    attributes,
    id_text,
    nanos_to_rfc3339,
    otlp_spans,
    read_documents,
    span_duration,
    tree_order,
)
from .base import ImportedRun, Importer
from .vcr import ToolPairer, finalize_recording

__all__ = ["OtelImporter", "export_otlp", "recording_to_otlp", "EXPORT_SCHEMA"]

EXPORT_SCHEMA = "chassis.otlp/1"
SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2
_RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)
_MODEL_OPS = ("chat", "text_completion", "generate_content")
_NUMERIC_OPTIONS = (
    "temperature",
    "max_tokens",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
    "seed",
)


# =========================================================================== AnyValue


def _any(v: Any) -> dict[str, Any]:
    """A JSON value as an OTLP ``AnyValue`` (OTLP/JSON mapping)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        if math.isnan(v):
            return {"doubleValue": "NaN"}
        if math.isinf(v):
            return {"doubleValue": "Infinity" if v > 0 else "-Infinity"}
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, (bytes, bytearray)):
        return {"bytesValue": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": _any(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def _kv(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": _any(value)}


def _json_text(value: Any) -> str:
    """Compact JSON of a recording value (tags kept as they are: they are JSON)."""
    return dumps(value).decode()


# =========================================================================== export


def _provider_guess(model: str, providers: list[str]) -> str | None:
    m = model.lower()
    if m.startswith(("gpt", "o1", "o3", "o4", "chatgpt", "text-davinci")):
        return "openai"
    if m.startswith("claude"):
        return "anthropic"
    if m.startswith("gemini"):
        return "gcp.gemini"
    if len(providers) == 1:
        return {"gemini": "gcp.gemini"}.get(providers[0], providers[0])
    return None


def _part_out(p: Any) -> dict[str, Any]:
    """A content part of ours as a semconv message part."""
    if isinstance(p, str):
        return {"type": "text", "content": p, "chassis.bare": True}
    if not isinstance(p, dict):
        return {"type": "chassis.value", "value": p}
    t = p.get("type")
    if t == "text" and "text" in p:
        out = {"type": "text", "content": p["text"]}
        out.update({f"chassis.{k}": v for k, v in p.items() if k not in ("type", "text")})
        return out
    if t == "thinking":
        out = {"type": "reasoning", "content": p.get("thinking", "")}
        out.update({f"chassis.{k}": v for k, v in p.items() if k not in ("type", "thinking")})
        return out
    if isinstance(t, str) and t not in ("tool_call", "tool_call_response", "reasoning"):
        return dict(p)
    return {"type": "chassis.value", "value": p}


def _message_out(m: ChatMessage) -> dict[str, Any]:
    """A :class:`ChatMessage` as a semconv ``ChatMessage`` (role + parts)."""
    parts: list[dict[str, Any]] = []
    out: dict[str, Any] = {"role": m.role, "parts": parts}
    if m.role == "tool":
        parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.content})
    else:
        if isinstance(m.content, str):
            parts.append({"type": "text", "content": m.content})
        elif isinstance(m.content, list):
            out["chassis.content"] = "parts"
            parts.extend(_part_out(p) for p in m.content)
        if m.tool_call_id is not None:
            out["chassis.tool_call_id"] = m.tool_call_id
    for tc in m.tool_calls or []:
        part = {"type": "tool_call", "id": tc.id, "name": tc.name, "arguments": tc.arguments}
        if tc.raw_arguments:
            part["chassis.raw_arguments"] = True
        parts.append(part)
    if m.name is not None:
        out["name"] = m.name
    return out


def _hex(seed: bytes, n: int) -> str:
    return hashlib.sha256(seed).hexdigest()[:n]


def _nanos(at: str | None) -> int | None:
    if not at:
        return None
    try:
        dt = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def recording_to_otlp(rec: Recording, *, service_name: str = "chassis-inspector") -> dict[str, Any]:
    """The recording as an OTLP/JSON ``ExportTraceServiceRequest`` (a dict).

    One trace (id derived from the records' canonical hash, so exports are
    reproducible); a root ``invoke_agent`` span holding the recording's metadata and
    session (``chassis.metadata``, ``chassis.session``); one child span per record in
    ``seq`` order. Span times come from ``at`` and ``duration_seconds``; records without
    ``at`` get a synthetic time 1 µs after the previous record (``chassis.synthetic_time``);
    start times never decrease, so the spans' time order is the records' order (the exact
    ``at`` text is kept in ``chassis.at``).

    What is exported is redacted (docs/format.md, "Redaction"; a copy: ``rec`` is
    untouched), as everything the product writes.

    Raises:
        CanonicalizationError: a record holds a value with no JSON form (cannot happen
            for a validated recording).
    """
    rec = redacted_copy(rec)
    records_json = [r.to_json_obj() for r in rec.records]
    digest = hashlib.sha256(canonical_json(records_json)).hexdigest()
    trace_id = digest[:32]
    root_id = _hex(f"{digest}/root".encode(), 16)
    providers = list(rec.metadata.get("providers") or []) if isinstance(rec.metadata.get("providers"), list) else []
    run = None
    src = rec.metadata.get("source")
    if isinstance(src, dict) and isinstance(src.get("run"), str):
        run = src["run"]
    run = run or next((r.run_id for r in rec.records if r.run_id), None) or digest[:12]

    base = _nanos(rec.session.created_at) or next((_nanos(r.at) for r in rec.records if _nanos(r.at)), None) or 0
    spans: list[dict[str, Any]] = []
    cursor = base
    last_end = base
    for r in rec.records:
        start = _nanos(r.at)
        synthetic = start is None
        if start is None:
            start = cursor + 1_000
        # span start times never go backwards, so readers that order spans by time
        # (every tracing UI) see the records in seq order; exact ``at`` is chassis.at
        start = max(start, cursor)
        dur = getattr(r, "duration_seconds", None)
        end = start + (int(dur * 1_000_000_000) if isinstance(dur, (int, float)) and dur >= 0 else 0)
        cursor = start
        last_end = max(last_end, end)
        attrs: list[dict[str, Any]] = [_kv("chassis.seq", r.seq)]
        if r.at is not None:
            attrs.append(_kv("chassis.at", r.at))
        if isinstance(dur, (int, float)):
            attrs.append(_kv("chassis.duration_seconds", float(dur)))
        if synthetic:
            attrs.append(_kv("chassis.synthetic_time", True))
        for f in ("run_id", "generation_id"):
            v = getattr(r, f)
            if v is not None:
                attrs.append(_kv(f"chassis.{f}", v))
        for f in ("replayed", "live_fallback"):
            if getattr(r, f):
                attrs.append(_kv(f"chassis.{f}", True))
        if isinstance(r, (ToolRecord, ModelRecord)) and r.key is not None:
            attrs.append(_kv("chassis.key", r.key))
        if r.meta is not None and isinstance(r, (ToolRecord, ModelRecord)):
            attrs.append(_kv("chassis.meta", _json_text(r.meta)))
        status: dict[str, Any] = {}
        if isinstance(r, ModelRecord):
            name = f"chat {r.model}"
            kind = SPAN_KIND_CLIENT
            attrs += [_kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", r.model)]
            prov = _provider_guess(r.model, providers)
            if prov:
                attrs.append(_kv("gen_ai.provider.name", prov))
            attrs.append(_kv("gen_ai.input.messages", _json_text([_message_out(m) for m in r.request.messages])))
            if r.request.tools:
                attrs.append(_kv("gen_ai.tool.definitions", _json_text(r.request.tools)))
            if r.request.stop:
                attrs.append(_kv("gen_ai.request.stop_sequences", list(r.request.stop)))
            for opt in _NUMERIC_OPTIONS:
                v = r.request.options.get(opt)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    attrs.append(_kv(f"gen_ai.request.{opt}", v))
            if r.request.options:
                attrs.append(_kv("chassis.request.options", _json_text(r.request.options)))
            if r.response is not None:
                out = _message_out(r.response.message)
                if r.response.finish_reason is not None:
                    out["finish_reason"] = r.response.finish_reason
                    attrs.append(_kv("gen_ai.response.finish_reasons", [r.response.finish_reason]))
                attrs.append(_kv("gen_ai.output.messages", _json_text([out])))
                if r.response.usage is not None:
                    attrs.append(_kv("gen_ai.usage.input_tokens", r.response.usage.input_tokens))
                    attrs.append(_kv("gen_ai.usage.output_tokens", r.response.usage.output_tokens))
            if r.error is not None:
                attrs.append(_kv("error.type", r.error.type))
                status = {"code": STATUS_ERROR, "message": r.error.message}
        elif isinstance(r, ToolRecord):
            name = f"execute_tool {r.tool}"
            kind = SPAN_KIND_INTERNAL
            attrs += [
                _kv("gen_ai.operation.name", "execute_tool"),
                _kv("gen_ai.tool.name", r.tool),
                _kv("gen_ai.tool.type", "function"),
                _kv("gen_ai.tool.call.arguments", _json_text(r.arguments)),
                _kv("gen_ai.tool.call.result", _json_text(r.result.content)),
            ]
            if r.tool_call_id is not None:
                attrs.append(_kv("gen_ai.tool.call.id", r.tool_call_id))
            if not isinstance(r.arguments, dict):
                attrs.append(_kv("chassis.tool.raw_arguments", True))
            if r.result.artifact is not None:
                attrs.append(_kv("chassis.tool.artifact", _json_text(r.result.artifact)))
            if r.result.redacted:
                attrs.append(_kv("chassis.tool.redacted", True))
            if r.result.error is not None:
                attrs.append(_kv("error.type", r.result.error.type))
                status = {"code": STATUS_ERROR, "message": r.result.error.message}
        else:
            name = f"chassis.{r.kind}"
            kind = SPAN_KIND_INTERNAL
            attrs.append(_kv("chassis.record", _json_text(r.to_json_obj())))
        span = {
            "traceId": trace_id,
            "spanId": _hex(f"{digest}/{r.seq}".encode(), 16),
            "parentSpanId": root_id,
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": attrs,
        }
        if status:
            span["status"] = status
        spans.append(span)
    root = {
        "traceId": trace_id,
        "spanId": root_id,
        "name": f"invoke_agent {run}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(base),
        "endTimeUnixNano": str(max(last_end, base)),
        "attributes": [
            _kv("gen_ai.operation.name", "invoke_agent"),
            _kv("gen_ai.agent.name", run),
            _kv("chassis.run", run),
            _kv("chassis.metadata", _json_text(rec.metadata)),
            _kv("chassis.session", _json_text(rec.session.to_json_obj())),
        ],
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        _kv("service.name", service_name),
                        _kv("chassis.export", EXPORT_SCHEMA),
                        _kv("chassis.format_version", rec.format_version),
                    ]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "chassis-inspector", "version": __version__},
                        "spans": [root, *spans],
                    }
                ],
            }
        ]
    }


def export_otlp(rec: Recording, *, indent: bool = True) -> bytes:
    """:func:`recording_to_otlp` serialized as JSON bytes."""
    return dumps(recording_to_otlp(rec), orjson.OPT_INDENT_2 if indent else 0)


# =========================================================================== import


def _parse_jsonish(v: Any, place: str, warnings: Warnings) -> Any:
    """An attribute that the conventions allow as a JSON string or a structured value.

    A JSON text that held a lone surrogate *unescaped* was tagged when the OTLP document
    was read; it is decoded and parsed here (the tag moves to the string inside).
    """
    if is_tagged(v) and "$invalid_unicode" in v:
        text = decode_value(v)
        if text.strip()[:1] in ("[", "{", '"'):
            try:
                value, vw = load_json_lenient(text, place=place)
            except FormatError:
                return v
            warnings.extend_values(vw)
            return value
        return v
    if isinstance(v, str):
        s = v.strip()
        if (
            s[:1] in ("[", "{", '"')
            or s in ("null", "true", "false")
            or re.fullmatch(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|NaN|-?Infinity", s or "x")
        ):
            try:
                value, vw = load_json_lenient(v, place=place)
            except FormatError:
                return v
            warnings.extend_values(vw)
            return value
        return v
    return v


def _part_in(p: Any) -> Any:
    """A semconv part (not tool_call / tool_call_response) as a content part of ours."""
    if not isinstance(p, dict):
        return p
    t = p.get("type")
    extras = {k[len("chassis.") :]: v for k, v in p.items() if isinstance(k, str) and k.startswith("chassis.")}
    if t == "text":
        if extras.pop("bare", False):
            return p.get("content")
        if "encoded" in extras:  # our own export: exact
            return {"type": "text", "text": p.get("content", ""), **extras}
        return {**text_part(p.get("content", "")), **extras}
    if t in ("reasoning", "thinking"):
        return {"type": "thinking", "thinking": p.get("content", p.get("thinking", "")), **extras}
    if t == "chassis.value":
        return p.get("value")
    return p


def _message_in(m: Any, place: str, warnings: Warnings) -> ChatMessage | None:
    """A semconv ``ChatMessage`` / ``OutputMessage`` as ours."""
    if not isinstance(m, dict):
        warnings.add(place, "message is not an object; skipped")
        return None
    role = m.get("role") or "user"
    parts = m.get("parts")
    if parts is None and "content" in m:  # older/other shapes: {role, content}
        parts = [{"type": "text", "content": m["content"]}] if isinstance(m["content"], str) else (m["content"] or [])
    content_parts: list[Any] = []
    calls: list[ToolCall] = []
    tool_call_id = m.get("chassis.tool_call_id")
    response_content: Any = None
    has_response = False
    for j, p in enumerate(parts or []):
        t = p.get("type") if isinstance(p, dict) else None
        if t == "tool_call":
            raw = p.get("arguments")
            if p.get("chassis.raw_arguments"):
                args, is_raw = raw, True
            else:
                args, is_raw = parse_args(raw if raw is not None else {}, f"{place}.parts[{j}].arguments", warnings)
            calls.append(
                ToolCall(
                    id=p.get("id") or "",
                    name=p.get("name") or "",
                    arguments=args,
                    raw_arguments=True if is_raw else None,
                )
            )
        elif t == "tool_call_response":
            has_response = True
            tool_call_id = p.get("id")
            response_content = p.get("response")
        else:
            content_parts.append(_part_in(p))
    if role == "tool" and has_response:
        content: Any = response_content
        if content is not None and not isinstance(content, (str, list)):
            content = (
                [{"type": "json", "json": content}]
                if not is_tagged(content) or BIGINT_TAG in content
                else [{"type": "text", "text": display_text(content), "encoded": content}]
            )
    elif m.get("chassis.content") == "parts":
        content = content_parts
    elif len(content_parts) == 1 and isinstance(content_parts[0], str):
        content = content_parts[0]
    elif (
        len(content_parts) == 1
        and isinstance(content_parts[0], dict)
        and set(content_parts[0]) == {"type", "text"}
        and isinstance(content_parts[0]["text"], str)
    ):
        content = content_parts[0]["text"]
    else:
        content = simplify_parts([p if isinstance(p, dict) else {"type": "text", "text": p} for p in content_parts])
    return ChatMessage(
        role=role, content=content, tool_calls=calls or None, tool_call_id=tool_call_id, name=m.get("name")
    )


_LEGACY_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _legacy_event_message(name: str, a: dict[str, Any], place: str, warnings: Warnings) -> ChatMessage | None:
    """A pre-1.37 per-message event (attributes ``content``, ``tool_calls``, ``id``,
    or a JSON ``body``/``event.body``) as a chat message."""
    body = a.get("body", a.get("event.body", a.get("gen_ai.event.content")))
    body = _parse_jsonish(body, place, warnings) if body is not None else {}
    if not isinstance(body, dict):
        body = {"content": body}
    merged = {**body, **{k: v for k, v in a.items() if k in ("content", "tool_calls", "id", "role")}}
    role = merged.get("role") or _LEGACY_EVENT_ROLES.get(name, "user")
    content = (
        _parse_jsonish(merged.get("content"), place, warnings)
        if not isinstance(merged.get("content"), str)
        else merged.get("content")
    )
    calls = []
    for j, tc in enumerate(_parse_jsonish(merged.get("tool_calls"), place, warnings) or []):
        if isinstance(tc, dict):
            fn = tc.get("function") or {}
            args, is_raw = parse_args(fn.get("arguments", {}), f"{place}.tool_calls[{j}]", warnings)
            calls.append(
                ToolCall(
                    id=tc.get("id") or "",
                    name=fn.get("name") or "",
                    arguments=args,
                    raw_arguments=True if is_raw else None,
                )
            )
    if content is not None and not isinstance(content, (str, list)):
        content = [{"type": "json", "json": content}]
    return ChatMessage(
        role=role, content=content, tool_calls=calls or None, tool_call_id=merged.get("id") if role == "tool" else None
    )


def _indexed(a: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.field`` attributes (e.g. ``gen_ai.prompt.0.role``) as a list of dicts."""
    rows: dict[int, dict[str, Any]] = {}
    pat = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)$")
    for k, v in a.items():
        m = pat.match(k)
        if m:
            rows.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [rows[i] for i in sorted(rows)]


def _indexed_message(row: dict[str, Any], place: str, warnings: Warnings) -> ChatMessage:
    calls = []
    for tc in _indexed(row, "tool_calls"):
        args, is_raw = parse_args(tc.get("arguments", {}), f"{place}.tool_calls", warnings)
        calls.append(
            ToolCall(
                id=tc.get("id") or "", name=tc.get("name") or "", arguments=args, raw_arguments=True if is_raw else None
            )
        )
    return ChatMessage(
        role=row.get("role") or "user",
        content=row.get("content"),
        tool_calls=calls or None,
        tool_call_id=row.get("tool_call_id"),
    )


def _operation(a: dict[str, Any], span_name: str) -> str | None:
    op = a.get("gen_ai.operation.name")
    if isinstance(op, str):
        return op
    if "gen_ai.tool.name" in a or span_name.startswith("execute_tool"):
        return "execute_tool"
    if any(k in a for k in ("gen_ai.request.model", "gen_ai.input.messages", "gen_ai.prompt.0.role", "gen_ai.prompt")):
        return "chat"
    return None


class OtelImporter(Importer):
    """OTLP JSON traces following the OpenTelemetry GenAI semantic conventions."""

    name = "otel"
    description = "OpenTelemetry OTLP JSON traces with GenAI semantic-convention (gen_ai.*) spans"

    def sniff(self, path: Path, head: bytes) -> str | None:
        if path.suffix.lower() not in (".json", ".jsonl", ".otlp"):
            return "not a .json, .jsonl or .otlp file"
        if b"resourceSpans" not in head and b"resource_spans" not in head:
            return "no 'resourceSpans' (not an OTLP JSON trace export)"
        return None

    def load(self, path: Path) -> list[ImportedRun]:
        path = Path(path)
        source = str(path)
        data = read_source(path).data
        spans = otlp_spans(read_documents(data, source), source)
        traces: dict[str, list[tuple[dict[str, Any], dict[str, Any], str]]] = {}
        for item in spans:
            tid = str(item[0].get("traceId", item[0].get("trace_id", "")) or "no-trace")
            traces.setdefault(tid, []).append(item)
        runs = []
        for index, (tid, items) in enumerate(traces.items()):
            run = self._trace(tid, items, path, data, index)
            if run is not None:
                runs.append(run)
        if not runs:
            raise FormatError("no GenAI spans (gen_ai.operation.name chat / execute_tool) in any trace", file=source)
        return runs

    # -- one trace ------------------------------------------------------------------------

    def _trace(
        self, tid: str, items: list[tuple[dict[str, Any], dict[str, Any], str]], path: Path, data: bytes, index: int
    ) -> ImportedRun | None:
        warnings = Warnings()
        decorated = []
        for sp, _res, place in items:
            a = attributes(sp.get("attributes"))
            seq = a.get("chassis.seq")
            try:
                start = int(sp.get("startTimeUnixNano", sp.get("start_time_unix_nano", 0)) or 0)
            except (TypeError, ValueError):
                start = 0
            decorated.append((seq if isinstance(seq, int) else None, start, place, sp, a))
        if all(
            d[0] is not None for d in decorated if _operation(d[4], d[3].get("name", "")) not in ("invoke_agent", None)
        ):
            decorated.sort(key=lambda d: (d[0] if d[0] is not None else -1, d[1]))
        else:  # by start time, a parent before its children on ties (file order otherwise)
            decorated = tree_order(
                decorated,
                lambda d: d[1],
                lambda d: id_text(d[3].get("spanId", d[3].get("span_id"))),
                lambda d: id_text(d[3].get("parentSpanId", d[3].get("parent_span_id"))),
            )
        records: list[Any] = []
        keyless: set[int] = set()
        metadata: dict[str, Any] = {}
        session: SessionInfo | None = None
        run_id = tid
        skipped: dict[str, int] = {}
        own_export = any("chassis.seq" in d[4] for d in decorated)
        has_tool_spans = any(_operation(d[4], d[3].get("name", "")) == "execute_tool" for d in decorated)
        for _seq, _start, place, sp, a in decorated:
            name = sp.get("name", "")
            op = _operation(a, name)
            if "chassis.metadata" in a:
                meta = _parse_jsonish(a["chassis.metadata"], place, warnings)
                if isinstance(meta, dict):
                    metadata = {k: v for k, v in meta.items() if k != "source"}
                    if "source" in meta:
                        metadata["exported_from"] = meta["source"]
                if isinstance(a.get("chassis.run"), str):
                    run_id = a["chassis.run"]
                sess = _parse_jsonish(a.get("chassis.session"), place, warnings)
                if isinstance(sess, dict):
                    try:
                        session = SessionInfo.model_validate(sess)
                    except ValueError:
                        warnings.add(place, "chassis.session is not a valid session; ignored")
            rec: Record | None = None
            if op in _MODEL_OPS:
                rec = self._model(sp, a, place, warnings)
            elif op == "execute_tool":
                rec, known = self._tool(sp, a, place, warnings)
                if not known:
                    keyless.add(len(records))
            elif name.startswith("chassis.") and "chassis.record" in a:
                raw = _parse_jsonish(a["chassis.record"], place, warnings)
                try:
                    rec = _RECORD_ADAPTER.validate_python(raw)
                except ValueError as exc:
                    warnings.add(place, f"chassis.record is not a valid record ({str(exc).splitlines()[0]}); skipped")
            elif op in ("invoke_agent", "create_agent", "invoke_workflow"):
                continue
            else:
                label = op or "non-GenAI"
                skipped[label] = skipped.get(label, 0) + 1
                continue
            if rec is None:
                continue
            for f in ("run_id", "generation_id"):
                if isinstance(a.get(f"chassis.{f}"), str):
                    setattr(rec, f, a[f"chassis.{f}"])
            for f in ("replayed", "live_fallback"):
                if a.get(f"chassis.{f}") is True:
                    setattr(rec, f, True)
            if "chassis.meta" in a and rec.kind in ("tool", "model"):
                m = _parse_jsonish(a["chassis.meta"], place, warnings)
                if isinstance(m, dict):
                    rec.meta = m
                else:
                    warnings.add(place, "chassis.meta is not a JSON object; ignored")
            if isinstance(a.get("chassis.at"), str):
                rec.at = a["chassis.at"]
            elif rec.at is None and not a.get("chassis.synthetic_time"):
                rec.at = nanos_to_rfc3339(sp.get("startTimeUnixNano", sp.get("start_time_unix_nano")))
            if rec.kind in ("tool", "model"):
                if isinstance(a.get("chassis.duration_seconds"), (int, float)):
                    rec.duration_seconds = float(a["chassis.duration_seconds"])
                elif "chassis.seq" in a:
                    rec.duration_seconds = None
            if own_export and isinstance(rec, (ToolRecord, ModelRecord)) and "chassis.key" not in a:
                keyless.add(len(records))  # it had no key when exported: keep it so
            records.append(rec)
        for label, n in skipped.items():
            warnings.add(f"trace {tid}", f"{n} span(s) of operation {label!r} not mapped (no model or tool call)")
        if not records:
            return None
        if not has_tool_spans:
            records = self._recover_tools(records, warnings)
        recording = finalize_recording(
            records,
            fmt="otel",
            path=path,
            data=data,
            run_id=run_id,
            metadata=metadata,
            warnings=warnings,
            index=index,
            keyless=keyless,
            session=session,
            stamp_run_id=not own_export,
            unify_call_ids=not own_export,
        )
        return ImportedRun(run_id=run_id, recording=recording, warnings=list(warnings))

    def _model(self, sp: dict[str, Any], a: dict[str, Any], place: str, warnings: Warnings) -> ModelRecord:
        messages: list[ChatMessage] = []
        output: ChatMessage | None = None
        finish = None
        si = a.get("gen_ai.system_instructions")
        if si is not None:
            parts = _parse_jsonish(si, f"{place}.gen_ai.system_instructions", warnings)
            m = _message_in(
                {"role": "system", "parts": parts if isinstance(parts, list) else [{"type": "text", "content": parts}]},
                place,
                warnings,
            )
            if m:
                messages.append(m)
        inp = a.get("gen_ai.input.messages")
        outp = a.get("gen_ai.output.messages")
        events = [
            (e.get("name", ""), attributes(e.get("attributes")), n)
            for n, e in enumerate(sp.get("events") or [])
            if isinstance(e, dict)
        ]
        for ename, ea, _n in events:
            if ename == "gen_ai.client.inference.operation.details":
                inp = inp if inp is not None else ea.get("gen_ai.input.messages")
                outp = outp if outp is not None else ea.get("gen_ai.output.messages")
                for k, v in ea.items():
                    a.setdefault(k, v)
        if inp is not None:
            val = _parse_jsonish(inp, f"{place}.gen_ai.input.messages", warnings)
            for n, m in enumerate(val if isinstance(val, list) else []):
                cm = _message_in(m, f"{place}.gen_ai.input.messages[{n}]", warnings)
                if cm:
                    messages.append(cm)
        if outp is not None:
            val = _parse_jsonish(outp, f"{place}.gen_ai.output.messages", warnings)
            val = val if isinstance(val, list) else []
            if len(val) > 1:
                warnings.add(
                    f"{place}.gen_ai.output.messages",
                    f"{len(val)} output messages (choices); only the first is imported",
                )
            if val:
                output = _message_in(val[0], f"{place}.gen_ai.output.messages[0]", warnings)
                if isinstance(val[0], dict):
                    finish = val[0].get("finish_reason")
        if inp is None and outp is None:
            for ename, ea, n in events:
                ep = f"{place}.events[{n}]"
                if ename in _LEGACY_EVENT_ROLES:
                    m = _legacy_event_message(ename, ea, ep, warnings)
                    if m:
                        messages.append(m)
                elif ename == "gen_ai.choice" and output is None:
                    body = _parse_jsonish(ea.get("body", ea.get("event.body")), ep, warnings)
                    body = body if isinstance(body, dict) else {}
                    msg = (
                        body.get("message")
                        if isinstance(body.get("message"), dict)
                        else {k: v for k, v in ea.items() if k in ("content", "tool_calls", "role")}
                    )
                    output = (
                        _legacy_event_message("gen_ai.assistant.message", {"body": msg}, ep, warnings) if msg else None
                    )
                    finish = body.get("finish_reason", ea.get("finish_reason"))
        if inp is None and outp is None and not messages:
            for row in _indexed(a, "gen_ai.prompt"):
                messages.append(_indexed_message(row, f"{place}.gen_ai.prompt", warnings))
            comps = _indexed(a, "gen_ai.completion")
            if comps:
                output = _indexed_message(
                    {**comps[0], "role": comps[0].get("role") or "assistant"}, f"{place}.gen_ai.completion", warnings
                )
                finish = comps[0].get("finish_reason")
        if finish is None:
            fr = a.get("gen_ai.response.finish_reasons")
            if isinstance(fr, list) and fr:
                finish = fr[0]
        tools = (
            _parse_jsonish(a.get("gen_ai.tool.definitions"), place, warnings)
            if a.get("gen_ai.tool.definitions") is not None
            else []
        )
        if not isinstance(tools, list):
            tools = [tools]
        stop = a.get("gen_ai.request.stop_sequences") or []
        stop = (
            [s for s in stop if isinstance(s, str)]
            if isinstance(stop, list)
            else ([stop] if isinstance(stop, str) else [])
        )
        if "chassis.request.options" in a:
            options = _parse_jsonish(a["chassis.request.options"], place, warnings)
            options = options if isinstance(options, dict) else {}
        else:
            options = {
                k[len("gen_ai.request.") :]: v
                for k, v in a.items()
                if k.startswith("gen_ai.request.")
                and k not in ("gen_ai.request.model", "gen_ai.request.stop_sequences")
            }
            options, vw = encode_value(options, place=f"{place}.gen_ai.request.*")
            warnings.extend_values(vw)
        model = a.get("gen_ai.request.model") or a.get("gen_ai.response.model")
        if not isinstance(model, str) or not model:
            warnings.add(place, "span has no gen_ai.request.model; recorded as 'unknown'")
            model = "unknown"
        inp_t = a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))
        out_t = a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))
        usage = (
            Usage(
                input_tokens=inp_t if isinstance(inp_t, int) else 0,
                output_tokens=out_t if isinstance(out_t, int) else 0,
            )
            if isinstance(inp_t, int) or isinstance(out_t, int)
            else None
        )
        error = _span_error(sp, a)
        if output is None and error is None and (outp is not None or a.get("gen_ai.response.finish_reasons")):
            output = ChatMessage(role="assistant")
        response = ModelResponse(message=output, finish_reason=finish, usage=usage) if output is not None else None
        if response is None and error is None:
            warnings.add(place, "model span carries no output messages (content capture off?); response not recorded")
        return ModelRecord(
            seq=0,
            model=model,
            request=ModelRequest(messages=messages, tools=tools, stop=stop, options=options),
            response=response,
            duration_seconds=span_duration(sp),
            error=error,
        )

    def _tool(self, sp: dict[str, Any], a: dict[str, Any], place: str, warnings: Warnings) -> tuple[ToolRecord, bool]:
        name = a.get("gen_ai.tool.name")
        if not isinstance(name, str) or not name:
            sn = sp.get("name", "")
            name = sn[len("execute_tool ") :] if sn.startswith("execute_tool ") else (sn or "unknown")
        known = "gen_ai.tool.call.arguments" in a
        if known:
            raw = a["gen_ai.tool.call.arguments"]
            aplace = f"{place}.gen_ai.tool.call.arguments"
            if isinstance(raw, str):
                # a JSON text (semconv); its value may itself be a string of arguments
                try:
                    value, vw = load_json_lenient(raw, place=aplace)
                except FormatError:
                    args, _raw = parse_args(raw, aplace, warnings)
                else:
                    warnings.extend_values(vw)
                    if isinstance(value, dict) or a.get("chassis.tool.raw_arguments") is True:
                        args = value
                    else:
                        args, _raw = parse_args(value, aplace, warnings)
            else:
                args = raw
        else:
            args = {}
            warnings.add(
                place,
                f"tool span {name!r} has no gen_ai.tool.call.arguments; imported without a key: replay cannot match it",
            )
        content = (
            _parse_jsonish(a["gen_ai.tool.call.result"], f"{place}.gen_ai.tool.call.result", warnings)
            if "gen_ai.tool.call.result" in a
            else None
        )
        artifact = _parse_jsonish(a["chassis.tool.artifact"], place, warnings) if "chassis.tool.artifact" in a else None
        err = _span_error(sp, a)
        tcid = a.get("gen_ai.tool.call.id")
        return ToolRecord(
            seq=0,
            tool=name,
            arguments=args,
            tool_call_id=tcid if isinstance(tcid, str) and tcid else None,
            result=ToolResult(
                content=content, artifact=artifact, error=err, redacted=a.get("chassis.tool.redacted") is True
            ),
            duration_seconds=span_duration(sp),
        ), known

    def _recover_tools(self, records: list[Any], warnings: Warnings) -> list[Any]:
        """Tool records from consecutive model calls (no execute_tool spans in the trace)."""
        out: list[Any] = []
        pairer = ToolPairer(warnings)
        for r in records:
            if isinstance(r, ModelRecord):
                by_id: dict[str, tuple[str | None, str, Any]] = {}
                last: list[tuple[str | None, str, Any]] = []
                answered = 0
                for n, m in enumerate(r.request.messages):
                    if m.tool_calls:
                        last = [(c.id or None, c.name, c.arguments) for c in m.tool_calls]
                        by_id.update({c.id: (c.id, c.name, c.arguments) for c in m.tool_calls if c.id})
                        answered = 0
                    if m.role == "tool":
                        call = by_id.get(m.tool_call_id or "") or (last[answered] if answered < len(last) else None)
                        answered += 1
                        res = CarriedResult(
                            m.tool_call_id,
                            m.name or (call[1] if call else None),
                            m.content,
                            None,
                            f"model call messages[{n}]",
                            call,
                        )
                        tr = pairer.answer(res)
                        if tr is not None:
                            out.append(tr)
                out.append(r)
                if r.response and r.response.message.tool_calls:
                    for tc in r.response.message.tool_calls:
                        pairer.open(tc.id, tc.name, tc.arguments, len(out) - 1)
            else:
                out.append(r)
        if pairer.made:
            warnings.add(
                "/",
                f"{len(pairer.made)} tool record(s) recovered from the messages of consecutive model calls (the trace has no execute_tool spans)",
            )
        return out


def _span_error(sp: dict[str, Any], a: dict[str, Any]) -> ErrorInfo | None:
    status = sp.get("status") or {}
    code = status.get("code")
    is_err = code in (STATUS_ERROR, "STATUS_CODE_ERROR", "ERROR") or "error.type" in a
    if not is_err:
        return None
    msg = status.get("message") or ""
    etype = a.get("error.type")
    for e in sp.get("events") or []:
        if isinstance(e, dict) and e.get("name") in ("exception", "gen_ai.execute_tool.exception"):
            ea = attributes(e.get("attributes"))
            etype = etype or ea.get("exception.type")
            msg = msg or ea.get("exception.message") or ""
    return ErrorInfo(type=str(etype or "error"), message=str(msg))
