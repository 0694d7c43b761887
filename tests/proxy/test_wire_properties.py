"""Properties of the proxy's wire formats (hypothesis): an answer rendered in any
endpoint's shape, streamed or not, reads back — with the same parser ``record`` uses — as
the same text, thinking, tool calls and usage; key exclusions ignore exactly the paths
they name."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from core.importers._llm_api import WireAnswer
from core.proxy.exchange import parse_proxy_response, render_answer
from core.record.recording import ChatMessage, ModelRequest, ToolCall, Usage
from core.replay.matching import excluded_model_key, remove_paths

ENDPOINTS = ["openai.chat", "openai.responses", "anthropic.messages"]

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**53) + 1, 2**53 - 1), text)
arguments = st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8), json_scalar, max_size=4)
calls = st.lists(
    st.builds(
        ToolCall,
        id=st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True),
        name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        arguments=arguments,
    ),
    max_size=3,
    unique_by=lambda c: c.id,
)


def _message(answer_text: str, thinking: str | None, signature: str | None, tool_calls: list[ToolCall]) -> ChatMessage:
    parts: list[Any] = []
    if thinking is not None:
        part: dict[str, Any] = {"type": "thinking", "thinking": thinking}
        if signature:
            part["signature"] = signature
        parts.append(part)
    if answer_text:
        parts.append({"type": "text", "text": answer_text})
    return ChatMessage(role="assistant", content=parts or None, tool_calls=tool_calls or None)


def _read(message: ChatMessage) -> tuple[str, list[tuple[str, str]], list[tuple[str, str, Any]]]:
    content = message.content
    thinking: list[tuple[str, str]] = []
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    for p in content if isinstance(content, list) else []:
        if p.get("type") == "thinking":
            thinking.append((p.get("thinking") or "", p.get("signature") or ""))
        elif p.get("type") == "text":
            texts.append(p["text"])
    return "".join(texts), thinking, [(c.id, c.name, c.arguments) for c in message.tool_calls or []]


@settings(max_examples=150, deadline=None)
@given(
    endpoint=st.sampled_from(ENDPOINTS),
    stream=st.booleans(),
    answer_text=text,
    thinking=st.one_of(st.none(), text),
    signature=st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9+/]{4,20}", fullmatch=True)),
    tool_calls=calls,
    usage=st.builds(Usage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6)),
)
def test_rendered_answers_read_back_the_same(endpoint, stream, answer_text, thinking, signature, tool_calls, usage):
    msg = _message(answer_text, thinking, signature, tool_calls)
    status, payload = render_answer(
        endpoint,
        WireAnswer(model="m", response_id="id-1", message=msg, usage=usage),
        stream=stream,
        include_usage=True,
    )
    assert status == 200
    if stream:
        assert isinstance(payload, list)
        body, ctype = b"".join(payload), "text/event-stream"
    else:
        body, ctype = orjson.dumps(payload), "application/json"
    back = parse_proxy_response(endpoint, 200, body, ctype).parsed
    assert back.error is None and back.message is not None
    got_text, got_thinking, got_calls = _read(back.message)
    want_text, want_thinking, want_calls = _read(msg)
    assert got_text == want_text
    assert got_calls == want_calls
    assert back.usage == usage
    if endpoint == "openai.chat":  # reasoning_content carries no signature, and nothing when empty
        want_thinking = [(t, "") for t, _ in want_thinking if t]
    assert got_thinking == want_thinking
    assert back.response_id == "id-1"


requests = st.builds(
    lambda system, user, temp: ModelRequest(
        messages=[ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)],
        options={"temperature": temp},
    ),
    text,
    text,
    st.sampled_from([0, 0.5, 1]),
)


@settings(max_examples=150, deadline=None)
@given(a=requests, b=requests)
def test_key_exclusions_ignore_exactly_the_paths_they_name(a: ModelRequest, b: ModelRequest) -> None:
    ex = ("/messages/0/content",)
    same_elsewhere = a.messages[1].content == b.messages[1].content and a.options == b.options
    assert (excluded_model_key("m", a, ex) == excluded_model_key("m", b, ex)) == same_elsewhere
    # the wildcard: every message's content
    assert excluded_model_key("m", a, ("/messages/*/content",)) == excluded_model_key(
        "m", b.model_copy(update={"options": a.options}), ("/messages/*/content",)
    )


def test_remove_paths_keeps_array_positions() -> None:
    doc = {"messages": [{"content": "a", "role": "user"}, {"content": "b", "role": "user"}]}
    assert remove_paths(doc, ["/messages/0"]) == {"messages": [{"$excluded": True}, {"content": "b", "role": "user"}]}
    assert remove_paths(doc, ["/messages/*/content"]) == {"messages": [{"role": "user"}, {"role": "user"}]}
    assert remove_paths(doc, ["/messages/7/content", "/nothing"]) == doc


word = st.text("abcdefghij klmnop", min_size=1, max_size=20)


@st.composite
def conversations(draw: Any) -> ModelRequest:
    """A request as an agent builds one: a system prompt, a user turn, then rounds of an
    assistant turn (text and/or tool calls) and the tool results it asked for."""
    msgs = [ChatMessage(role="system", content=draw(word)), ChatMessage(role="user", content=draw(word))]
    for r in range(draw(st.integers(0, 2))):
        n = draw(st.integers(0, 2))
        tcs = [
            ToolCall(
                id=f"call_{r}_{i}", name=draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True)), arguments=draw(arguments)
            )
            for i in range(n)
        ]
        text_part = draw(st.one_of(st.none(), word))
        if not tcs and text_part is None:
            text_part = "ok"
        msgs.append(ChatMessage(role="assistant", content=text_part, tool_calls=tcs or None))
        for tc in tcs:
            msgs.append(ChatMessage(role="tool", tool_call_id=tc.id, content=draw(word)))
        if not tcs:
            msgs.append(ChatMessage(role="user", content=draw(word)))
    return ModelRequest(
        messages=msgs,
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
        stop=draw(st.lists(word, max_size=2, unique=True)),
        options={"temperature": draw(st.sampled_from([0, 0.5])), "max_tokens": 64},
    )


def _view(req: ModelRequest) -> list[tuple[Any, ...]]:
    return [
        (m.role, m.text, [(c.id, c.name, c.arguments) for c in m.tool_calls or []], m.tool_call_id)
        for m in req.messages
    ]


@settings(max_examples=150, deadline=None)
@given(endpoint=st.sampled_from(ENDPOINTS), req=conversations())
def test_rendered_requests_read_back_the_same(endpoint: str, req: ModelRequest) -> None:
    """What the command executor sends live (the engine's request in the agent's wire
    format) is read back by the proxy's own parser as the same request."""
    from core.importers._llm_api import render_request
    from core.proxy.exchange import parse_proxy_request

    body = orjson.loads(orjson.dumps(render_request(endpoint, "m", req)))
    back = parse_proxy_request(endpoint, body, lambda _rid: None)
    assert back.model == "m"
    assert _view(back.request) == _view(req)
    assert back.request.options == req.options
    assert back.request.tools == req.tools
    if endpoint != "openai.responses":  # Responses has no stop sequences
        assert back.request.stop == req.stop
