"""Streamed model keys (``ModelRequest.key_for`` / ``model_key_of``) against the plain
computation: ``canonical_hash({"kind": "model", "model": …, **request.identity()})``.

Histories grow, fork (a shared prefix, then other messages), shrink and repeat; the
prefix chains are per thread, so threads hashing the same histories at once must agree.
"""

from __future__ import annotations

import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.record.canonical import canonical_hash, model_key_of, model_key_tail
from core.record.recording import ChatMessage, ModelRequest, ToolCall, message_canonical

SAFE_INT = 2**53 - 1

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE_INT, max_value=SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
texts = st.text(max_size=40) | st.sampled_from(["", "ok", "é\u2028\U0001f600", "\ue000 key order"])
parts = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url", "input_audio"])},
    optional={"text": texts, "detail": json_values, "score": st.floats(allow_nan=False, allow_infinity=False)},
)
tool_calls = st.builds(
    ToolCall,
    id=st.text(min_size=1, max_size=8),
    name=st.sampled_from(["fetch", "search", "ß"]),
    arguments=st.dictionaries(st.text(max_size=6), json_values, max_size=4) | json_values,
)
messages = st.builds(
    ChatMessage,
    role=st.sampled_from(["system", "user", "assistant", "tool", "exit"]),
    content=st.none() | texts | st.lists(parts | texts, max_size=3),
    tool_calls=st.none() | st.lists(tool_calls, min_size=1, max_size=2),
    tool_call_id=st.none() | st.text(max_size=8),
    name=st.none() | st.text(max_size=8),
)
tails = st.fixed_dictionaries(
    {
        "tools": st.lists(st.dictionaries(st.text(max_size=6), json_values, max_size=3), max_size=2),
        "stop": st.lists(st.text(max_size=4), max_size=3),
        "options": st.dictionaries(
            st.sampled_from(["temperature", "top_p", "seed", "tool_choice", "response_format"]), json_values, max_size=3
        ),
    }
)


@st.composite
def histories(draw: Any) -> list[list[ChatMessage]]:
    """Message lists in the order a run sends them: a history grows, forks (a shared
    prefix, then other messages), shrinks (a prefix sent again) and repeats; some
    messages are fresh objects equal to earlier ones."""
    pool = draw(st.lists(messages, min_size=1, max_size=8))
    out: list[list[ChatMessage]] = []
    current: list[ChatMessage] = []
    for _ in range(draw(st.integers(1, 8))):
        move = draw(st.sampled_from(["grow", "grow", "fork", "shrink", "repeat", "copy"]))
        if move == "grow" or not current:
            current = current + draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        elif move == "fork":
            cut = draw(st.integers(0, len(current)))
            current = current[:cut] + draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        elif move == "shrink":
            current = current[: draw(st.integers(0, len(current)))]
        elif move == "copy":  # the same content in new objects
            current = [ChatMessage.model_validate(m.to_json_obj()) for m in current]
        out.append(list(current))
    return out


def plain_key(model: str, request: ModelRequest) -> str:
    return canonical_hash({"kind": "model", "model": model, **request.identity()})


@settings(max_examples=50, deadline=None)
@given(histories(), tails, st.sampled_from(["gpt-x", "modèle", ""]))
def test_streamed_key_equals_the_plain_canonical_hash(lists, tail, model):
    for msgs in lists:
        req = ModelRequest(messages=msgs, **tail)
        assert req.key_for(model) == plain_key(model, req)


@settings(max_examples=30, deadline=None)
@given(histories(), tails)
def test_threads_hashing_the_same_histories_agree_with_the_plain_hash(lists, tail):
    requests = [ModelRequest(messages=msgs, **tail) for msgs in lists]
    expected = [plain_key("m", r) for r in requests]
    results: dict[int, list[str]] = {}

    def work(i: int) -> None:
        order = requests if i % 2 == 0 else requests[::-1]
        keys = [r.key_for("m") for r in order]
        results[i] = keys if i % 2 == 0 else keys[::-1]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(keys == expected for keys in results.values())


@settings(max_examples=30, deadline=None)
@given(histories(), tails)
def test_a_precomputed_tail_gives_the_same_key(lists, tail):
    t = model_key_tail("m", tail["tools"], tail["stop"], tail["options"])
    for msgs in lists:
        req = ModelRequest(messages=msgs, **tail)
        parts = [message_canonical(m) for m in msgs]
        assert model_key_of("m", parts, None, [], None, tail=t) == plain_key("m", req)


def test_messages_equal_in_python_but_not_in_json_key_apart():
    """``True == 1`` and ``1 == 1.0`` in Python: the keys follow the JSON (``true`` ≠ ``1``)."""
    a = ChatMessage(role="assistant", tool_calls=[ToolCall(id="c", name="f", arguments={"x": 1})])
    b = ChatMessage(role="assistant", tool_calls=[ToolCall(id="c", name="f", arguments={"x": True})])
    assert a == b  # pydantic's equality cannot tell them apart
    ka = ModelRequest(messages=[a]).key_for("m")
    kb = ModelRequest(messages=[b]).key_for("m")
    assert ka != kb
    assert ka == plain_key("m", ModelRequest(messages=[a]))
    assert kb == plain_key("m", ModelRequest(messages=[b]))
