"""One model-API exchange as the proxy sees it: which endpoint, the request in our
canonical shape, the answer in the wire shape the client asked for.

Endpoints (docs/proxy.md, "What is recorded"):

* ``openai.chat`` — ``POST {OPENAI_BASE_URL}/chat/completions``;
* ``openai.responses`` — ``POST {OPENAI_BASE_URL}/responses``; a request continuing by
  ``previous_response_id`` is keyed on its full history: the history of the response it
  names (that response's request messages and its answer), then its own input;
* ``anthropic.messages`` — ``POST {ANTHROPIC_BASE_URL}/v1/messages``.

Transport-only fields (:data:`core.importers._llm_api.TRANSPORT_FIELDS`: ``stream``,
``stream_options``, ``user``, ``store``, ``metadata``, and ``previous_response_id``,
which the history replaces) go to the record's ``meta.transport`` and never into the
key. Shapes of the wire formats: :mod:`core.importers._llm_api` (both directions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..importers._llm_api import (
    CarriedResult,
    ParsedResponse,
    Warnings,
    WireAnswer,
    parse_request,
    parse_response,
    parse_responses_request,
    parse_responses_response,
    parse_sse,
    reassemble_responses_stream,
    reassemble_stream,
    render_anthropic,
    render_error,
    render_openai_chat,
    render_responses,
    split_transport,
)
from ..record.recording import ChatMessage, ErrorInfo, ModelRequest, ModelResponse

__all__ = [
    "ENDPOINTS",
    "Endpoint",
    "ProxyRequest",
    "endpoint_of",
    "parse_proxy_request",
    "parse_proxy_response",
    "render_answer",
    "answer_id",
]

#: ``(provider, path below the provider's base URL) -> endpoint name``
ENDPOINTS: dict[tuple[str, str], str] = {
    ("openai", "/chat/completions"): "openai.chat",
    ("openai", "/responses"): "openai.responses",
    ("anthropic", "/v1/messages"): "anthropic.messages",
}

Endpoint = str


def endpoint_of(provider: str, method: str, path: str) -> Endpoint | None:
    """The recorded endpoint a request goes to (``POST`` only), or ``None``."""
    if method.upper() != "POST":
        return None
    return ENDPOINTS.get((provider, path.rstrip("/")))


@dataclass
class ProxyRequest:
    """A parsed request: ``model`` (``"unknown"`` when the body names none), the
    ``request`` (messages, tools, normalized stop, options that change the answer),
    ``transport`` fields, the tool ``results`` its messages carry, whether the client
    asked to ``stream`` (and for a usage chunk), ``previous_response_id`` and, when the
    id could not be resolved, ``unresolved`` (the reason)."""

    endpoint: Endpoint
    model: str
    request: ModelRequest
    transport: dict[str, Any]
    results: list[CarriedResult]
    stream: bool
    include_usage: bool = False
    previous_response_id: str | None = None
    unresolved: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: the request's first message is its Responses ``instructions``
    instructions: bool = False

    def history(self, request: ModelRequest | None = None) -> list[ChatMessage]:
        """What a Responses id answering this request stands for, before the answer: the
        messages (of ``request``, default this one's) without the instructions — a
        continued response does not carry instructions over."""
        msgs = list((request or self.request).messages)
        return msgs[1:] if self.instructions and msgs and msgs[0].role == "system" else msgs


def parse_proxy_request(
    endpoint: Endpoint, body: dict[str, Any], history: Callable[[str], list[ChatMessage] | None]
) -> ProxyRequest:
    """Parse a request body of ``endpoint``. ``history(response_id)`` gives the full
    messages a Responses id stands for (its request's messages + its answer), ``None``
    when the id is not known (then ``unresolved`` says so and the history is left out)."""
    w = Warnings()
    if endpoint == "openai.responses":
        parsed = parse_responses_request(body, "body", w)
    else:
        parsed = parse_request(endpoint.split(".", 1)[0], body, "", "body", w)
    options, transport = split_transport(parsed.options)
    prev = options.pop("previous_response_id", None)
    has_instructions = endpoint == "openai.responses" and bool(body.get("instructions"))
    messages = list(parsed.messages)
    unresolved = None
    if prev is not None:
        transport["previous_response_id"] = prev
        past = history(str(prev)) if isinstance(prev, str) else None
        if past is None:
            unresolved = (
                f"previous_response_id {prev!r} names a response this recording does not hold: "
                "its history cannot be rebuilt, so the request cannot be matched"
            )
        else:
            # the full history: this request's instructions (they replace the earlier
            # ones: a continued response does not carry instructions over), then what the
            # earlier response stood for, then this input — the messages a client sending
            # the whole input would send
            head = messages[:1] if has_instructions else []
            messages = head + list(past) + messages[len(head) :]
    so = body.get("stream_options")
    return ProxyRequest(
        endpoint=endpoint,
        model=str(parsed.model) if parsed.model else "unknown",
        request=ModelRequest(messages=messages, tools=parsed.tools, stop=parsed.stop, options=options),
        transport=transport,
        results=parsed.results,
        stream=bool(body.get("stream")),
        include_usage=isinstance(so, dict) and bool(so.get("include_usage")),
        previous_response_id=prev if isinstance(prev, str) else None,
        unresolved=unresolved,
        warnings=[str(x) for x in w],
        instructions=has_instructions,
    )


def created_of(value: Any) -> int | None:
    """The provider's creation time of an answer body (``created`` / ``created_at``, Unix
    seconds), or ``None``."""
    if isinstance(value, dict):
        v = value.get("created", value.get("created_at"))
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def arguments_texts(endpoint: Endpoint, value: Any) -> dict[str, str]:
    """``{tool call id: its arguments as the provider wrote them}`` for the tool calls of an
    OpenAI answer body whose arguments text is not the compact JSON a replay would write
    (``{"query": "x"}`` with a space, keys in another order…), so a replayed answer gives
    the agent the very text it got (Anthropic sends arguments as an object: none)."""
    out: dict[str, str] = {}
    if not isinstance(value, dict):
        return out
    raw: list[tuple[Any, Any]] = []
    if endpoint == "openai.chat":
        for ch in (value.get("choices") or [])[:1]:
            msg = ch.get("message") if isinstance(ch, dict) else None
            for tc in (msg or {}).get("tool_calls") or []:
                if isinstance(tc, dict):
                    raw.append((tc.get("id"), (tc.get("function") or {}).get("arguments")))
    elif endpoint == "openai.responses":
        for it in value.get("output") or []:
            if isinstance(it, dict) and it.get("type") == "function_call":
                raw.append((it.get("call_id"), it.get("arguments")))
    for cid, text in raw:
        if not isinstance(cid, str) or not isinstance(text, str):
            continue
        try:
            compact = orjson.dumps(orjson.loads(text)).decode()
        except orjson.JSONDecodeError:
            continue  # kept raw by the parser already (raw_arguments)
        if compact != text:
            out[cid] = text
    return out


@dataclass
class UpstreamAnswer:
    """An upstream answer read back: the ``parsed`` response, whether it was ``streamed``,
    its ``created`` time, and the tool calls' ``arguments_text`` (:func:`arguments_texts`)."""

    parsed: ParsedResponse
    streamed: bool
    created: int | None = None
    arguments_text: dict[str, str] = field(default_factory=dict)


def parse_proxy_response(endpoint: Endpoint, status: int, body: bytes, content_type: str) -> UpstreamAnswer:
    """The response (:class:`UpstreamAnswer`) of an upstream answer: an event
    stream reassembled, a JSON body parsed, an HTTP error (status ≥ 400) as a model error
    ``http_<status>`` (the provider's error type kept: ``http_429:rate_limit_error``)."""
    w = Warnings()
    provider = endpoint.split(".", 1)[0]
    text = body.decode("utf-8", "replace")
    streamed = "text/event-stream" in content_type.lower()
    value: Any
    if streamed:
        events = parse_sse(text)
        value = (
            reassemble_responses_stream(events, "body", w)
            if endpoint == "openai.responses"
            else reassemble_stream(provider, events, "body", w)
        )
    else:
        try:
            value = orjson.loads(body) if body.strip() else None
        except orjson.JSONDecodeError:
            value = None
        if value is None:
            kind = f"http_{status}" if status >= 400 else "bad_response"
            what = "no body" if not body.strip() else f"a body that is not JSON: {text[:200]}"
            return UpstreamAnswer(
                ParsedResponse(None, error=ErrorInfo(type=kind, message=f"HTTP {status}: {what}")), streamed
            )
    resp = (
        parse_responses_response(value, "body", w)
        if endpoint == "openai.responses"
        else parse_response(provider, value, "body", w)
    )
    if status >= 400:
        if resp.error is None:
            resp.error = ErrorInfo(type=f"http_{status}", message=text[:2000])
            resp.message = None
        elif not resp.error.type.startswith("http_"):
            resp.error = ErrorInfo(type=f"http_{status}:{resp.error.type}", message=resp.error.message)
    return UpstreamAnswer(resp, streamed, created_of(value), arguments_texts(endpoint, value))


def answer_id(endpoint: Endpoint, key: str, step: int) -> str:
    """A response id for an answer nobody recorded (an intervention, a fixture): made from
    the request key and the step, so a resume shows the agent the same id as a fresh
    replay; prefixed as the provider's ids are (``chatcmpl-``, ``resp_``, ``msg_``)."""
    h = hashlib.sha256(f"{key}|{step}".encode()).hexdigest()[:24]
    prefix = {"openai.chat": "chatcmpl-", "openai.responses": "resp_", "anthropic.messages": "msg_"}[endpoint]
    return f"{prefix}chassis{h}"


#: the status the agent saw for the proxy's own errors of the upstream while recording
_PROXY_ERROR_STATUS = {"upstream_timeout": 504, "upstream_unreachable": 502, "upstream_stream_broken": 502}


def http_status_of(error: ErrorInfo, recorded: Any = None) -> int:
    """The HTTP status an error is answered with: the one recorded (``meta.http_status``
    when it is an error status), else the one in its type (``http_429…``), the one the
    proxy answered (``upstream_timeout`` 504, ``upstream_unreachable`` 502), else 500."""
    if isinstance(recorded, int) and not isinstance(recorded, bool) and 400 <= recorded <= 599:
        return recorded
    t = error.type
    if t.startswith("http_"):
        digits = t[5:8]
        if digits.isdigit():
            return int(digits)
    return _PROXY_ERROR_STATUS.get(t, 500)


def render_answer(
    endpoint: Endpoint,
    answer: WireAnswer,
    *,
    stream: bool,
    include_usage: bool = False,
) -> tuple[int, list[bytes] | dict[str, Any]]:
    """``(HTTP status, body)``: a JSON object, or the SSE chunks of a stream. An error
    is a JSON error body in the endpoint's shape (never a stream)."""
    if answer.error is not None or answer.message is None:
        err = answer.error or ErrorInfo(type="no_response", message="the recorded call has no response")
        return answer.http_status if answer.http_status >= 400 else http_status_of(err), render_error(endpoint, err)
    if endpoint == "openai.chat":
        return 200, render_openai_chat(answer, stream=stream, include_usage=include_usage)
    if endpoint == "openai.responses":
        return 200, render_responses(answer, stream=stream)
    return 200, render_anthropic(answer, stream=stream)


def model_response(parsed: ParsedResponse) -> ModelResponse | None:
    """Our :class:`ModelResponse` of a parsed upstream answer (``None`` for an error)."""
    if parsed.message is None:
        return None
    return ModelResponse(message=parsed.message, finish_reason=parsed.finish_reason, usage=parsed.usage)
