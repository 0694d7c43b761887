"""OpenInference spans (``--from openinference``): traces written by the OpenInference
instrumentors (Arize Phoenix; the OpenAI Agents SDK, smolagents, LiteLLM, LangChain, …).

Sources: the OpenInference semantic conventions (Arize-ai/openinference, ``spec/``:
``openinference.span.kind`` LLM / TOOL / AGENT / CHAIN / RETRIEVER / …; messages
flattened as ``llm.input_messages.<i>.message.role|content|contents.<j>.message_content.*|
tool_calls.<k>.tool_call.id|function.name|function.arguments|tool_call_id|name``, the same
under ``llm.output_messages``; ``llm.model_name``, ``llm.invocation_parameters`` (JSON),
``llm.tools.<i>.tool.json_schema``, ``llm.token_count.prompt|completion|total``;
``tool.name``, ``input.value``, ``output.value`` with their ``*.mime_type``), and the
files any-agent (mozilla-ai/any-agent, before its own instrumentation) dumped from
smolagents and the OpenAI Agents SDK.

Input: OTLP JSON (one ``ExportTraceServiceRequest``, a JSON array of them, or JSON Lines;
read by :mod:`._spans`, as the ``otel`` importer reads it) whose spans carry
``openinference.span.kind``, or a *span list*: ``{"spans": [...], "final_output": …}``
(any-agent's dump) or a bare JSON array of spans in the Python SDK's ``ReadableSpan``
JSON form (``context.trace_id``/``span_id`` as decimal integers or hex strings,
``parent.span_id`` or ``parent_id``, ``start_time``/``end_time`` in nanoseconds or ISO
8601, ``status.status_code``, ``attributes`` as a map; attributes nested as objects are
read as their dotted keys).

One run per trace (id: the trace id as hex); a trace with no LLM or TOOL span makes no
run, and an item of a span list that is not an object is skipped (both warned in every
run). Spans are taken by start time, a parent before its children on ties
(:func:`._spans.tree_order`).

* LLM span → model record: input messages → request (``input.value`` when the span has
  no ``llm.input_messages``: a list of chat messages, ``{"messages": [...]}``, or
  smolagents' ``{"args": [[messages]], "kwargs": …}``; plain text → one user message);
  output message 0 → response (tool-call arguments the flattened attributes lack are
  taken from ``output.value``, the chat message litellm returned; without output
  messages, ``output.value`` itself); ``llm.model_name``; prompt/completion token counts
  → usage (``total`` is not needed); ``llm.invocation_parameters`` → options (not a JSON object:
  warned; the first of ``stop`` / ``stop_sequences`` that is a text or a list of texts →
  stop, anything else stays an option); ``llm.tools`` → request tools; status ERROR → model error.
* **A nested LLM span that repeats its call is counted once**: smolagents wraps each
  model call in nested ``Model.__call__`` spans (``LiteLLMModel.__call__`` three deep)
  that carry the same attributes. An LLM span whose nearest LLM ancestor has the same
  model, token counts, input and output (every one of them that both spans carry; at
  least the token counts or the output) is that ancestor's call: the outermost span of
  such a chain is the model record (its time spans the whole call), attributes only the
  inner ones carry are added to it, and ``meta.nested_repeats`` counts the spans
  merged (one warning per run).
* TOOL span → tool record: ``tool.name`` (else the span name); ``input.value`` (a JSON
  object) → arguments — smolagents' wrapper ``{"args": [], "kwargs": {…}}`` gives its
  ``kwargs``; ``output.value`` → result content as written; status ERROR → result
  error. It is paired with the model call that asked for it by ``tool_call.id`` when
  the span has one, else by tool name (the oldest unanswered call of that name, with a
  warning: OpenInference TOOL spans carry no call id); a paired call lends its id, and
  its arguments when the span has none.
* AGENT, CHAIN and spans without a kind (the framework's own, e.g. any-agent's
  ``agent_run``) → structure: ``metadata.spans`` lists them (id, parent, name, kind,
  times, status, attributes), and each model and tool record's ``meta`` names its span
  (``span``: id, name, kind), its enclosing spans (``path``, outermost first) and its
  nearest AGENT span (``agent``). Other kinds (RETRIEVER, EMBEDDING, RERANKER,
  GUARDRAIL, EVALUATOR, PROMPT) are listed too and warned as not mapped.
* any-agent's ``final_output`` → ``metadata.final_output`` (the default final-output
  rule gives it). A run whose agent called smolagents' ``final_answer`` tool with an
  ``answer`` argument also declares that rule (:data:`SMOLAGENTS_FINAL_ANSWER`: the
  ``answer`` argument of the last ``final_answer`` call), so a branch of it is judged
  by its own final answer.

Detection: a ``.json``/``.jsonl``/``.otlp`` file with ``openinference.span.kind`` in its
first 64 KiB (or the kind nested as objects, or Phoenix's top-level ``span_kind``).
OTLP spans may carry both conventions (some instrumentations write ``gen_ai.*`` next to
OpenInference): when the head also has ``gen_ai.operation.name`` (required on every
GenAI span) the file is left to ``otel``; ``--from openinference`` still reads it by its
OpenInference attributes.

Errors: :class:`core.errors.FormatError` naming the file and the JSON Pointer (a
document that is neither OTLP nor a span list, no span of any trace with an LLM or
TOOL kind); a file cut short raises :class:`._source.TruncatedSourceError`, and the
complete spans of a span list before the damage are recoverable (``--recover``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..record.jsonvalues import BIGINT_TAG, display_text, is_tagged, load_json_lenient
from ..record.recording import ChatMessage, ErrorInfo
from ._build import (
    JsonImporter,
    PendingCall,
    RunBuilder,
    attach_value_warnings,
    openai_message,
    parse_arguments,
)
from ._build import id_text as value_text
from ._source import SourceFile, Truncation
from ._spans import attributes, id_text, nanos_to_rfc3339, otlp_spans, read_documents, to_nanos, tree_order
from .base import ImportedRun, Importer, ImportWarning

__all__ = ["OpenInferenceImporter", "SMOLAGENTS_FINAL_ANSWER"]

#: smolagents ends a run by calling its ``final_answer`` tool (``FinalAnswerTool``)
SMOLAGENTS_FINAL_ANSWER: dict[str, Any] = {
    "format": "openinference",
    "describe": "the answer argument of the last final_answer call (smolagents' FinalAnswerTool)",
    "takes": [{"tool": "final_answer", "take": "argument", "field": "answer"}],
}
KIND = "openinference.span.kind"
_STRUCTURE = ("AGENT", "CHAIN")
_KINDS = ("LLM", "TOOL", "AGENT", "CHAIN", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL", "EVALUATOR", "PROMPT")
# the span kind: a flat attribute, nested objects (Phoenix), or Phoenix's top-level span_kind
_HEAD_KIND = re.compile(
    rb'"openinference\.span\.kind"|"openinference"\s*:\s*\{\s*"span"\s*:\s*\{\s*"kind"'
    rb'|"span_kind"\s*:\s*"(?:LLM|TOOL|AGENT|CHAIN|RETRIEVER|EMBEDDING|RERANKER|GUARDRAIL|EVALUATOR|PROMPT)"'
)
_TOKENS = ("llm.token_count.prompt", "llm.token_count.completion", "llm.token_count.total")


#: fields of a span list that hold ids and times: an integer beyond 2**53 there is read
#: from its $bigint tag (:func:`._spans.id_text`, :func:`._spans.to_nanos`), not warned
_ID_TIME_FIELDS = frozenset({"trace_id", "span_id", "parent_id", "start_time", "end_time"})


def _odd_values(doc: Any, given: dict[str, str], limit: int = 50) -> list[ImportWarning]:
    """A warning for each tagged value in ``doc`` (``$nonfinite``, ``$invalid_unicode``,
    ``$bigint``; JSON Pointer; the parser's message for it when ``given`` has one),
    except a ``$bigint`` in one of :data:`_ID_TIME_FIELDS`; the first ``limit``, then a
    count."""
    out: list[ImportWarning] = []
    more = 0
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        ptr, v = stack.pop()
        if is_tagged(v):
            if BIGINT_TAG in v and ptr.rsplit("/", 1)[-1] in _ID_TIME_FIELDS:
                continue
            if len(out) < limit:
                tag = next(iter(v))
                shown = display_text(v)[:40]
                out.append(
                    ImportWarning(
                        ptr or "/", given.get(ptr) or f"non-standard value {shown!r} kept as {{{tag!r}: ...}}"
                    )
                )
            else:
                more += 1
        elif isinstance(v, dict):
            stack.extend((f"{ptr}/{str(k).replace('~', '~0').replace('/', '~1')}", x) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((f"{ptr}/{i}", x) for i, x in reversed(list(enumerate(v))))
    if more:
        out.append(ImportWarning("/", f"... and {more} more non-standard value(s)"))
    return out


def _name(v: Any) -> str:
    """A span or tool name as text: a tagged value (invalid Unicode) as its display
    text, ``""`` for null."""
    return "" if v is None else value_text(v)


@dataclass(eq=False)
class _Span:
    """One span, whatever its source form."""

    trace: str
    id: str | None
    parent: str | None
    name: str
    kind: str | None
    start: int  # ns since the epoch, 0 when unknown
    end: int
    status: str  # "ok" | "error" | "unset"
    message: str
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    place: str
    repeats: int = 0


# --------------------------------------------------------------------------- reading


def _flatten(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes nested as objects or arrays of objects (Phoenix's span JSON) as dotted
    keys (``{"llm": {"model_name": …}}`` → ``llm.model_name``); flat maps unchanged
    (keys as text)."""
    if not any(isinstance(v, dict) and not is_tagged(v) for v in attrs.values()):
        return attrs if all(isinstance(k, str) for k in attrs) else {str(k): v for k, v in attrs.items()}
    out: dict[str, Any] = {}

    def walk(prefix: str, v: Any, depth: int) -> None:
        if depth < 32 and isinstance(v, dict) and v and not is_tagged(v):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), x, depth + 1)
        elif depth < 32 and isinstance(v, list) and v and all(isinstance(x, dict) for x in v) and prefix:
            for i, x in enumerate(v):
                walk(f"{prefix}.{i}", x, depth + 1)
        else:
            out[prefix] = v

    for k, v in attrs.items():
        walk(str(k), v, 0)
    return out


def _status(raw: Any, top: dict[str, Any]) -> tuple[str, str]:
    """``("ok"|"error"|"unset", message)`` of an OTLP status (``code`` 0/1/2 or
    ``STATUS_CODE_*``), a ``ReadableSpan`` status (``status_code`` ``ok``/``error``/
    ``unset``, ``description``) or Phoenix's top-level ``status_code``/``status_message``."""
    st = raw if isinstance(raw, dict) else {}
    code = st.get("code", st.get("status_code", top.get("status_code")))
    msg = st.get("message", st.get("description", top.get("status_message")))
    text = str(code).upper() if code is not None else ""
    if code == 2 or text in ("ERROR", "STATUS_CODE_ERROR", "2"):
        state = "error"
    elif code == 1 or text in ("OK", "STATUS_CODE_OK", "1"):
        state = "ok"
    else:
        state = "unset"
    return state, msg if isinstance(msg, str) else ""


def _kind(attrs: dict[str, Any], sp: dict[str, Any]) -> str | None:
    k = attrs.get(KIND)
    if not isinstance(k, str):
        top = sp.get("span_kind")  # Phoenix's span JSON
        k = top if isinstance(top, str) and top.upper() in _KINDS else None
    return k.strip().upper() if isinstance(k, str) and k.strip() else None


def _events(raw: Any) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for e in raw if isinstance(raw, list) else []:
        if isinstance(e, dict):
            out.append((_name(e.get("name")), _flatten(attributes(e.get("attributes")))))
    return out


def _from_otlp(sp: dict[str, Any], place: str) -> _Span:
    attrs = _flatten(attributes(sp.get("attributes")))
    state, msg = _status(sp.get("status"), {})
    start = to_nanos(sp.get("startTimeUnixNano", sp.get("start_time_unix_nano"))) or 0
    end = to_nanos(sp.get("endTimeUnixNano", sp.get("end_time_unix_nano"))) or 0
    return _Span(
        trace=id_text(sp.get("traceId", sp.get("trace_id")), 32) or "no-trace",
        id=id_text(sp.get("spanId", sp.get("span_id"))),
        parent=id_text(sp.get("parentSpanId", sp.get("parent_span_id"))),
        name=_name(sp.get("name")),
        kind=_kind(attrs, sp),
        start=start,
        end=end,
        status=state,
        message=msg,
        attrs=attrs,
        events=_events(sp.get("events")),
        place=place,
    )


def _from_readable(sp: dict[str, Any], place: str) -> _Span:
    """A span in the Python SDK's ``ReadableSpan.to_json`` form (or Phoenix's)."""
    raw_ctx = sp.get("context")
    ctx: dict[str, Any] = raw_ctx if isinstance(raw_ctx, dict) else {}
    par = sp.get("parent")
    parent = par.get("span_id") if isinstance(par, dict) else sp.get("parent_id", par)
    attrs = _flatten(attributes(sp.get("attributes")))
    state, msg = _status(sp.get("status"), sp)
    return _Span(
        trace=id_text(ctx.get("trace_id", sp.get("trace_id")), 32) or "no-trace",
        id=id_text(ctx.get("span_id", sp.get("span_id"))),
        parent=id_text(parent),
        name=_name(sp.get("name")),
        kind=_kind(attrs, sp),
        start=to_nanos(sp.get("start_time")) or 0,
        end=to_nanos(sp.get("end_time")) or 0,
        status=state,
        message=msg,
        attrs=attrs,
        events=_events(sp.get("events")),
        place=place,
    )


def _spans_of(doc: Any, source: str) -> tuple[list[_Span], dict[str, Any], list[ImportWarning]]:
    """The spans of a parsed document, what the document says about the run
    (any-agent's ``final_output``) and a warning for each item of a span list that is
    not an object (skipped).

    Raises:
        FormatError: neither OTLP JSON nor a span list (the JSON Pointer).
    """
    docs = doc if isinstance(doc, list) else [doc]
    if docs and all(isinstance(d, dict) and ("resourceSpans" in d or "resource_spans" in d) for d in docs):
        return [_from_otlp(sp, place) for sp, _res, place in otlp_spans(docs, source)], {}, []
    extra: dict[str, Any] = {}
    if isinstance(doc, dict):
        spans = doc.get("spans")
        if not isinstance(spans, list):
            raise FormatError(
                "not OpenInference spans: expected OTLP JSON (resourceSpans) or a span list "
                "({spans: [...]} or a JSON array of spans)",
                file=source,
                path="/spans",
            )
        if "final_output" in doc:
            extra["final_output"] = doc["final_output"]
        prefix = "spans"
    elif isinstance(doc, list):
        spans, prefix = doc, ""
    else:
        raise FormatError("not OpenInference spans: the document is not an object or an array", file=source, path="")
    out = [_from_readable(sp, f"{prefix}[{k}]") for k, sp in enumerate(spans) if isinstance(sp, dict)]
    if not out:
        raise FormatError("the span list holds no span objects", file=source, path=f"/{prefix}")
    skipped = [
        ImportWarning(f"{prefix}[{k}]", f"span is {type(sp).__name__}, not an object; skipped")
        for k, sp in enumerate(spans)
        if not isinstance(sp, dict)
    ]
    return out, extra, skipped


# --------------------------------------------------------------------------- values


def _json(v: Any) -> Any:
    """A JSON text parsed (non-standard values tagged), else ``v`` as it is."""
    if isinstance(v, str) and v.strip()[:1] in ("{", "["):
        try:
            return load_json_lenient(v, place="")[0]
        except FormatError:
            return v
    return v


def _unflatten(attrs: dict[str, Any], prefix: str) -> dict[Any, Any]:
    """``prefix.<rest>`` attributes as a tree: dotted segments → nested maps, digit
    segments → int keys (``llm.input_messages.0.message.role`` under ``llm.input_messages``
    → ``{0: {"message": {"role": …}}}``). A key that is both a value and a prefix keeps
    the value."""
    root: dict[Any, Any] = {}
    pre = prefix + "."
    for k, v in attrs.items():
        if not k.startswith(pre):
            continue
        node = root
        parts: list[Any] = [int(p) if p.isdigit() else p for p in k[len(pre) :].split(".")]
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                break
            node = nxt
        else:
            node[parts[-1]] = v
    return root


def _indexed(node: Any) -> list[Any]:
    """The values of a tree node's int keys, in index order."""
    if not isinstance(node, dict):
        return []
    return [node[k] for k in sorted(k for k in node if isinstance(k, int))]


def _message_dict(node: Any) -> dict[str, Any] | None:
    """A flattened OpenInference message (``message.*`` tree) as an OpenAI-style chat
    message dict (role, content, tool_calls, tool_call_id, name)."""
    m = node.get("message") if isinstance(node, dict) else None
    if not isinstance(m, dict):
        return None
    d: dict[str, Any] = {"role": m.get("role")}
    if "contents" in m:
        parts: list[Any] = []
        for c in _indexed(m.get("contents")):
            mc = c.get("message_content") if isinstance(c, dict) else None
            if not isinstance(mc, dict):
                continue
            t = mc.get("type")
            if t == "text" or (t is None and "text" in mc):
                parts.append({"type": "text", "text": mc.get("text", "")})
            elif t == "image":
                img = mc.get("image")
                inner = img.get("image") if isinstance(img, dict) else None
                url = inner.get("url") if isinstance(inner, dict) else None
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": str(t or "unknown"), **{k: v for k, v in mc.items() if k != "type"}})
        d["content"] = parts
    elif "content" in m:
        d["content"] = m.get("content")
    calls = []
    for tc in _indexed(m.get("tool_calls")):
        c = tc.get("tool_call") if isinstance(tc, dict) else None
        if not isinstance(c, dict):
            continue
        raw_fn = c.get("function")
        fn: dict[Any, Any] = raw_fn if isinstance(raw_fn, dict) else {}
        call: dict[str, Any] = {"id": c.get("id"), "function": {"name": fn.get("name")}}
        if "arguments" in fn:
            call["function"]["arguments"] = fn["arguments"]
        calls.append(call)
    if "function_call_name" in m:  # the older single function call
        calls.append(
            {
                "id": None,
                "function": {"name": m.get("function_call_name"), "arguments": m.get("function_call_arguments_json")},
            }
        )
    if calls:
        d["tool_calls"] = calls
    for k in ("tool_call_id", "name"):
        if k in m:
            d[k] = m[k]
    return d


def _value_messages(v: Any) -> list[Any] | None:
    """Chat messages held by an ``input.value``: a list of messages, ``{"messages": […]}``
    or smolagents' ``Model.__call__`` arguments ``{"args": [[messages], …], …}``."""
    v = _json(v)

    def msgs(x: Any) -> bool:
        return isinstance(x, list) and bool(x) and all(isinstance(m, dict) and "role" in m for m in x)

    if msgs(v):
        return list(v)
    if isinstance(v, dict):
        if msgs(v.get("messages")):
            return list(v["messages"])
        args = v.get("args")
        if isinstance(args, list) and args and msgs(args[0]):
            return list(args[0])
    return None


def _out_message(v: Any) -> dict[str, Any] | None:
    """The chat message an ``output.value`` holds (a message, or a list whose first item
    is one, or a chat completion's ``choices[0].message``)."""
    v = _json(v)
    if isinstance(v, list) and v:
        v = v[0]
    if isinstance(v, dict) and isinstance(v.get("choices"), list) and v["choices"]:
        first = v["choices"][0]
        v = first.get("message") if isinstance(first, dict) else None
    if isinstance(v, dict) and ("role" in v or "tool_calls" in v or "content" in v):
        return v
    return None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# --------------------------------------------------------------------------- repeats


def _signature(s: _Span) -> dict[str, Any]:
    a = s.attrs
    sig: dict[str, Any] = {k: a[k] for k in (*_TOKENS, "llm.model_name") if k in a}
    inp = {k: v for k, v in a.items() if k.startswith("llm.input_messages.")}
    out = {k: v for k, v in a.items() if k.startswith("llm.output_messages.")}
    if inp or "input.value" in a:
        sig["in"] = inp or a["input.value"]
    if out or "output.value" in a:
        sig["out"] = out or a["output.value"]
    return sig


def _same_call(inner: _Span, outer: _Span) -> bool:
    """Whether LLM span ``inner`` repeats the call of its LLM ancestor ``outer``: every
    one of model, token counts, input and output that both carry is equal, and they
    share at least the token counts or the output."""
    a, b = _signature(inner), _signature(outer)
    shared = set(a) & set(b)
    if not (shared & {*_TOKENS, "out"}):
        return False
    return all(a[k] == b[k] for k in shared)


# --------------------------------------------------------------------------- importer


class OpenInferenceImporter(JsonImporter, Importer):
    """OpenInference spans: OTLP JSON or a span list (module docstring)."""

    name = "openinference"
    array_of_runs = False  # a bare span list: its spans make the runs (one per trace)
    description = "OpenInference spans (openinference.span.kind): OTLP JSON or a span list such as any-agent's dump"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a ``.json``/``.jsonl``/``.otlp`` file with ``openinference.span.kind`` in
        its head (or the kind nested as objects, or Phoenix's ``span_kind``), unless it is OTLP whose head also has ``gen_ai.operation.name`` (left to
        ``otel``)."""
        if path.suffix.lower() not in (".json", ".jsonl", ".otlp"):
            return "not a .json, .jsonl or .otlp file"
        if not _HEAD_KIND.search(head):
            return "no 'openinference.span.kind' attribute (not OpenInference spans)"
        if (b"resourceSpans" in head or b"resource_spans" in head) and b"gen_ai.operation.name" in head:
            return "OTLP spans that also carry gen_ai.operation.name (read by otel)"
        return None

    def sniff_truncated(self, head: bytes) -> bool:
        return bool(_HEAD_KIND.search(head))

    def parse_otherwise(self, src: SourceFile, error: FormatError) -> Any:
        """OTLP as JSON Lines (the collector's file exporter); else the parser's error."""
        return read_documents(src.data, src.name)

    def value_warnings(self, doc: Any, warnings: list[Any]) -> list[Any]:
        """Every non-standard value of the document (NaN, invalid Unicode, integers beyond
        2**53), except the integers of ids and times (:func:`_odd_values`). The
        document is walked again because the parser stops listing after its first
        warnings, and a span list's ids and times alone pass that number."""
        return _odd_values(doc, {str(w.place): str(w.message) for w in warnings})

    def convert(self, src: SourceFile, doc: Any, *, incomplete: bool = False) -> list[ImportedRun]:
        spans, extra, skipped = _spans_of(doc, src.name)
        runs = self._runs(src, spans, extra, incomplete)
        if skipped:
            attach_value_warnings(runs, skipped, by_index=False)
        return runs

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        """The complete spans of a span list cut short, as incomplete runs."""
        v = partial.value
        if isinstance(v, dict) and isinstance(v.get("spans"), list):
            op = partial.open_path
            n = op[1] if len(op) > 1 and op[0] == "spans" and isinstance(op[1], int) else len(v["spans"])
            v = {"spans": v["spans"][:n]}
            if not v["spans"]:
                return []
        elif isinstance(v, list):
            v = v[: partial.complete_items()]
            if not v or not all(isinstance(d, dict) and "resourceSpans" not in d for d in v):
                return []
        else:
            return []
        return self.convert(src, v, incomplete=True)

    def _runs(self, src: SourceFile, spans: list[_Span], extra: dict[str, Any], incomplete: bool) -> list[ImportedRun]:
        traces: dict[str, list[_Span]] = {}
        for s in spans:
            traces.setdefault(s.trace, []).append(s)
        runs = []
        without: list[ImportWarning] = []
        for index, (tid, items) in enumerate(traces.items()):
            if not any(s.kind in ("LLM", "TOOL") for s in items):
                without.append(
                    ImportWarning(f"trace {tid}", f"{len(items)} span(s), none of kind LLM or TOOL; no run (skipped)")
                )
                continue
            runs.append(self._trace(src, tid, items, extra, index, incomplete))
        if not runs:
            raise FormatError("no OpenInference LLM or TOOL span (openinference.span.kind) in any trace", file=src.name)
        if without:  # said in every run: they belong to none
            attach_value_warnings(runs, without, by_index=False)
        return runs

    # -- one trace --------------------------------------------------------------------

    def _trace(
        self, src: SourceFile, tid: str, items: list[_Span], extra: dict[str, Any], index: int, incomplete: bool
    ) -> ImportedRun:
        b = RunBuilder(self.name, src, tid, index)
        by_id: dict[str, _Span] = {}
        for s in items:
            if s.id is not None:
                by_id.setdefault(s.id, s)

        def ancestors(s: _Span) -> list[_Span]:
            out: list[_Span] = []
            seen = {id(s)}
            p = by_id.get(s.parent) if s.parent is not None else None
            while p is not None and id(p) not in seen:
                out.append(p)
                seen.add(id(p))
                p = by_id.get(p.parent) if p.parent is not None else None
            return out

        # nested LLM spans repeating one call: the outermost stands for the chain
        rep: dict[int, _Span] = {}
        for s in items:
            if s.kind != "LLM":
                continue
            top = s
            chain = [s]
            while True:
                outer = next((a for a in ancestors(top) if a.kind == "LLM"), None)
                if outer is None or any(outer is c for c in chain) or not _same_call(top, outer):
                    break
                chain.append(outer)
                top = outer
            rep[id(s)] = top
        for s in items:  # LLM spans whose parents form a cycle: keep the one another points to
            top = rep.get(id(s), s)
            if rep.get(id(top), top) is not top:
                rep[id(s)] = s
        merged = 0
        for s in items:
            top = rep.get(id(s), s)
            if top is not s:
                merged += 1
                top.repeats += 1
                for k, v in s.attrs.items():
                    top.attrs.setdefault(k, v)
        if merged:
            b.warn(
                f"trace {tid}",
                f"{merged} nested LLM span(s) repeat the model call of an enclosing LLM span (same model, "
                "token counts, input and output); each call is counted once",
            )

        ordered = tree_order(items, lambda s: s.start, lambda s: s.id, lambda s: s.parent)
        structure: list[dict[str, Any]] = []
        skipped: dict[str, int] = {}
        for s in ordered:
            if s.kind == "LLM" and rep.get(id(s), s) is not s:
                continue
            anc = ancestors(s)
            meta: dict[str, Any] = {"span": {"id": s.id, "name": s.name, "kind": s.kind}}
            if anc:
                meta["path"] = [a.name for a in reversed(anc)]
            agent = next((a.name for a in anc if a.kind == "AGENT"), None)
            if agent is not None:
                meta["agent"] = agent
            if s.kind == "LLM":
                self._model(b, s, meta)
            elif s.kind == "TOOL":
                self._tool(b, s, meta)
            else:
                entry: dict[str, Any] = {
                    "id": s.id,
                    "parent": s.parent,
                    "name": s.name,
                    "kind": s.kind,
                    "start": nanos_to_rfc3339(s.start),
                    "end": nanos_to_rfc3339(s.end),
                    "status": s.status,
                    "attributes": s.attrs,
                }
                structure.append(entry)
                if s.kind is not None and s.kind not in _STRUCTURE:
                    skipped[s.kind] = skipped.get(s.kind, 0) + 1
        b.unanswered(f"trace {tid}")
        for kind, n in skipped.items():
            b.warn(f"trace {tid}", f"{n} {kind} span(s) not mapped (no model or tool call); listed in metadata.spans")
        metadata: dict[str, Any] = {"trace_id": tid, "spans": structure}
        metadata.update(extra)
        if any(
            r.kind == "tool" and r.tool == "final_answer" and isinstance(r.arguments, dict) and "answer" in r.arguments
            for r in b.records
        ):
            metadata["final_output_rule"] = copy.deepcopy(SMOLAGENTS_FINAL_ANSWER)
        starts = [s.start for s in items if s.start > 0]
        return b.build(metadata, created_at=nanos_to_rfc3339(min(starts)) if starts else None, incomplete=incomplete)

    # -- records ----------------------------------------------------------------------

    @staticmethod
    def _timing(s: _Span) -> tuple[str | None, float | None]:
        at = nanos_to_rfc3339(s.start) if s.start else None
        dur = (s.end - s.start) / 1e9 if s.start and s.end > s.start else None
        return at, dur

    @staticmethod
    def _error(s: _Span) -> ErrorInfo | None:
        if s.status != "error":
            return None
        etype, msg = None, s.message
        for name, ea in s.events:
            if name == "exception":
                etype = etype or ea.get("exception.type")
                msg = msg or ea.get("exception.message") or ""
        return ErrorInfo(type=str(etype or "error"), message=str(msg or ""))

    def _model(self, b: RunBuilder, s: _Span, meta: dict[str, Any]) -> None:
        a, place = s.attrs, s.place
        messages: list[ChatMessage] = []
        inp = _unflatten(a, "llm.input_messages")
        if inp:
            for n, node in enumerate(_indexed(inp)):
                d = _message_dict(node)
                if d is None:
                    b.warn(f"{place}.llm.input_messages.{n}", "input message has no message.* attributes; skipped")
                    continue
                messages.append(openai_message(b, d, f"{place}.llm.input_messages.{n}"))
        elif "input.value" in a:
            vm = _value_messages(a["input.value"])
            if vm is not None:
                for n, d in enumerate(vm):
                    messages.append(openai_message(b, d, f"{place}.input.value[{n}]"))
            elif isinstance(a["input.value"], str):
                messages.append(b.message("user", a["input.value"], place=f"{place}.input.value"))
        if not messages:
            b.warn(place, "LLM span has no input messages (content capture off?); request recorded empty")
        response: ChatMessage | None = None
        outs = [o for o in map(_message_dict, _indexed(_unflatten(a, "llm.output_messages"))) if o is not None]
        from_value = _out_message(a.get("output.value"))
        if len(outs) > 1:
            b.warn(f"{place}.llm.output_messages", f"{len(outs)} output messages (choices); only the first is imported")
        if outs:
            out = outs[0]
            if out.get("tool_calls") and from_value is not None:
                self._fill_arguments(out["tool_calls"], from_value.get("tool_calls"))
            response = openai_message(
                b, {**out, "role": out.get("role") or "assistant"}, f"{place}.llm.output_messages.0"
            )
        elif from_value is not None:
            response = openai_message(
                b, {**from_value, "role": from_value.get("role") or "assistant"}, f"{place}.output.value"
            )
        elif isinstance(a.get("output.value"), str):
            response = b.message("assistant", a["output.value"], place=f"{place}.output.value")
        error = self._error(s)
        model = a.get("llm.model_name")
        if not isinstance(model, str) or not model:
            b.warn(place, "LLM span has no llm.model_name; recorded as 'unknown'")
            model = "unknown"
        pt, ct = _int(a.get("llm.token_count.prompt")), _int(a.get("llm.token_count.completion"))
        usage = (pt or 0, ct or 0) if pt is not None or ct is not None else None
        raw_options = a.get("llm.invocation_parameters")
        options = _json(raw_options)
        if isinstance(options, dict) and not is_tagged(options):
            options = dict(options)
        else:
            if raw_options is not None:
                b.warn(f"{place}.llm.invocation_parameters", "invocation parameters are not a JSON object; not mapped")
            options = {}
        stop = None
        for k in ("stop", "stop_sequences"):  # the first that is text or a list of texts; else it stays an option
            v = options.get(k)
            if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                stop = options.pop(k)
                break
        tools = []
        for n, t in enumerate(_indexed(_unflatten(a, "llm.tools"))):
            schema = (
                t.get("tool", {}).get("json_schema")
                if isinstance(t, dict) and isinstance(t.get("tool"), dict)
                else None
            )
            if schema is not None:
                tools.append(_json(schema))
            else:
                b.warn(f"{place}.llm.tools.{n}", "tool definition has no tool.json_schema; skipped")
        if response is None and error is None:
            b.warn(place, "LLM span has no output messages (content capture off?); response not recorded")
        at, dur = self._timing(s)
        rec = b.model(
            model=model,
            messages=messages,
            response=response,
            tools=tools,
            options=options,
            stop=stop,
            usage=usage,
            at=at,
            duration=dur,
            error=error,
            place=place,
        )
        if s.repeats:
            meta["nested_repeats"] = s.repeats
        cost = {k[len("cost_") :]: a[k] for k in ("cost_prompt", "cost_completion") if k in a}
        if cost:
            meta["cost"] = cost
        rec.meta = b.scrub(meta, place)
        if response is not None:
            for tc in response.tool_calls or []:
                b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), place, at))

    @staticmethod
    def _fill_arguments(calls: list[dict[str, Any]], full: Any) -> None:
        """Give each flattened tool call without ``function.arguments`` those of the same
        call (same id, else same position) in the message ``output.value`` holds."""
        full = full if isinstance(full, list) else []
        by_id = {c["id"]: c for c in full if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"]}
        for n, c in enumerate(calls):
            fn = c["function"]
            if "arguments" in fn:
                continue
            cid = c.get("id")
            src = (by_id.get(cid) if isinstance(cid, str) else None) or (
                full[n] if n < len(full) and isinstance(full[n], dict) else None
            )
            sfn = src.get("function") if isinstance(src, dict) else None
            if isinstance(sfn, dict) and "arguments" in sfn:
                fn["arguments"] = sfn["arguments"]

    def _tool(self, b: RunBuilder, s: _Span, meta: dict[str, Any]) -> None:
        a, place = s.attrs, s.place
        name = a.get("tool.name")
        if is_tagged(name):
            name = _name(name)
        if not isinstance(name, str) or not name:
            name = s.name or "unknown"
        own_id = a.get("tool_call.id", a.get("tool.call_id"))
        own_id = own_id if isinstance(own_id, str) and own_id else None
        call = b.pairer.take(own_id, name, place)
        known = True
        if "input.value" in a:
            raw = a["input.value"]
            v = _json(raw)
            if isinstance(v, dict) and isinstance(v.get("kwargs"), dict) and v.get("args") in ([], None):
                v = v["kwargs"]  # smolagents' Tool.__call__(*args, **kwargs)
            if isinstance(v, dict) and not is_tagged(v):
                args: Any = v
            else:
                args, is_raw = parse_arguments(raw)
                if is_raw:
                    b.warn(f"{place}.input.value", "tool input is not a JSON object; kept raw as the arguments")
        elif call is not None:
            args = call.arguments
        else:
            args, known = {}, False
        content = a.get("output.value")
        at, dur = self._timing(s)
        rec = b.tool(
            tool=name,
            arguments=args,
            tool_call_id=own_id or (call.id if call is not None else None),
            content=content,
            error=self._error(s),
            at=at,
            duration=dur,
            place=place,
            identity_known=known,
        )
        rec.meta = b.scrub(meta, place)
