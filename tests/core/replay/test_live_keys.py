"""The replay engine's keys of live requests (core.replay.keys) against the plain path:
``redacted_model_key`` — ``canonical_hash({"kind": "model", "model", **identity})`` of
the redacted identity — for the agent's own objects, fresh copies of them, histories
that grow, fork, shrink and repeat, and values Python calls equal but JSON does not."""

from __future__ import annotations

import collections
import decimal
import enum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import CanonicalizationError
from core.record.canonical import canonical_hash, canonical_json
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)
from core.record.recording_redaction import redacted_model_key
from core.record.redaction import redact
from core.replay.branch import new_branch
from core.replay.engine import ReplayEngine
from core.replay.keys import LiveRequests, live_model_key, same_message, strict_equal
from tests.builders import strip
from tests.core.record.test_streamed_keys import histories, json_values, tails


def plain(model: str, request: ModelRequest) -> str:
    """The plain path, spelled out: the canonical hash of the redacted key object."""
    identity, _ = redact(request.identity())
    return canonical_hash({"kind": "model", "model": model, **identity})


def fresh(request: ModelRequest) -> ModelRequest:
    """The same request rebuilt from its JSON (new objects, as an HTTP client sends it)."""
    return ModelRequest.model_validate(request.to_json_obj())


def same_json(a: ModelRequest, b: ModelRequest) -> bool:
    return canonical_json(a.to_json_obj()) == canonical_json(b.to_json_obj())


@settings(max_examples=50, deadline=None)
@given(histories(), tails, st.data())
def test_prepared_keys_equal_the_plain_path(lists, tail, data):
    live = LiveRequests()
    recorded: ModelRequest | None = None
    for msgs in lists:
        req = ModelRequest(messages=msgs, **tail)
        sent = fresh(req) if data.draw(st.booleans(), label="fresh") else req
        hint = recorded if data.draw(st.booleans(), label="hint") else None
        out, key = live.prepare("m", sent, hint)
        assert key == plain("m", sent) == redacted_model_key("m", sent)
        assert live_model_key("m", sent) == key
        assert same_json(out, sent)  # messages shared, never changed
        recorded = req


@settings(max_examples=50, deadline=None)
@given(json_values, json_values)
def test_strict_equal_only_for_values_with_one_canonical_form(a, b):
    if strict_equal(a, b):
        assert canonical_json(a) == canonical_json(b)
    assert strict_equal(a, a)


class Mode(str, enum.Enum):
    FAST = "fast"


@pytest.mark.parametrize(
    "a, b",
    [
        (1, True),
        ({"x": 1}, {"x": True}),
        ([0], [False]),
        ({"x": None}, {"x": float("nan")}),
        (1, decimal.Decimal(1)),
        ({"x": 1}, collections.OrderedDict(x=1)),
        ([1], (1,)),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # same canonical form: a miss only costs time
    ],
)
def test_strict_equal_refuses_what_python_calls_equal(a, b):
    assert not strict_equal(a, b)


def test_tools_and_options_are_compared_as_canonicalized_not_as_saved():
    """A ``(str, Enum)`` member equals its value and orjson writes it so, but a request's
    options are canonicalized as they are (its ``str()``): the key follows that."""
    live = LiveRequests()
    msgs = [ChatMessage(role="user", content="go")]
    for options in ({"mode": "fast"}, {"mode": Mode.FAST}, {"mode": "fast"}):
        sent = ModelRequest(messages=msgs, options=options)
        assert live.prepare("m", sent)[1] == plain("m", sent)
    # in a message, the saved form (the enum's value) is what is hashed: one key
    a = ModelRequest(messages=[_asst({"mode": "fast"})])
    b = ModelRequest(messages=[_asst({"mode": Mode.FAST})])
    assert live.prepare("m", a)[1] == live.prepare("m", b)[1] == plain("m", b)


def test_a_request_whose_tools_or_options_grew_in_place_keys_anew():
    live = LiveRequests()
    req = ModelRequest(messages=[ChatMessage(role="user", content="go")], tools=[{"name": "a"}], options={"t": 1})
    keys = [live.prepare("m", req)[1]]
    req.tools.append({"name": "b"})
    keys.append(live.prepare("m", req)[1])
    req.options["seed"] = 7
    keys.append(live.prepare("m", req)[1])
    assert keys[-1] == plain("m", req) and len(set(keys)) == 3


def _asst(args: Any) -> ChatMessage:
    return ChatMessage(role="assistant", content="", tool_calls=[ToolCall(id="c1", name="f", arguments=args)])


def test_a_fresh_message_equal_only_in_python_is_not_taken_for_the_recorded_one():
    recorded = ModelRequest(messages=[ChatMessage(role="user", content="go"), _asst({"n": 1})])
    sent = ModelRequest(messages=[ChatMessage(role="user", content="go"), _asst({"n": True})])
    assert recorded.messages == sent.messages  # pydantic calls them equal
    assert not same_message(recorded.messages[1], sent.messages[1])
    out, key = LiveRequests().prepare("m", sent, recorded)
    assert key == plain("m", sent) != plain("m", recorded)
    assert out is not recorded and out.messages[1].tool_calls[0].arguments == {"n": True}
    assert type(out.messages[1].tool_calls[0].arguments["n"]) is bool


def test_an_equal_fresh_request_is_the_recorded_one():
    recorded = ModelRequest(
        messages=[ChatMessage(role="user", content="go"), _asst({"n": 1.5})],
        tools=[{"name": "f"}],
        stop=["b", "a"],
        options={"temperature": 0},
    )
    out, key = LiveRequests().prepare("m", fresh(recorded), recorded)
    assert out is recorded and key == plain("m", recorded)


def test_fresh_messages_are_shared_with_those_seen_before():
    live = LiveRequests()
    history = [ChatMessage(role="system", content="s"), ChatMessage(role="user", content="u")]
    first, _ = live.prepare("m", ModelRequest(messages=history))
    again, _ = live.prepare("m", fresh(ModelRequest(messages=[*history, ChatMessage(role="user", content="v")])))
    assert again.messages[0] is history[0] and again.messages[1] is history[1]


def test_redacted_values_key_as_the_plain_path():
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
    req = ModelRequest(
        messages=[ChatMessage(role="user", content=f"my key is {secret}"), _asst({"api_key": secret})],
        options={"api_key": secret, "temperature": 0.2},
        stop=["x", f"Authorization: Bearer {secret}"],  # redaction changes a stop sequence
    )
    live = LiveRequests()
    for sent in (req, fresh(req), req):
        assert live.prepare("m", sent)[1] == plain("m", sent)
    assert live_model_key("m", req) == plain("m", req)


@pytest.mark.parametrize(
    "request_",
    [
        ModelRequest(messages=[ChatMessage(role="user", content="ok")], options={"t": float("nan")}),
        ModelRequest(messages=[ChatMessage(role="user", content=[{"type": "text", "n": 2**60}])]),
        ModelRequest(messages=[ChatMessage(role="user", content="bad \ud800")], options={"t": float("inf")}),
    ],
)
def test_values_without_a_canonical_form_raise_the_plain_error(request_):
    with pytest.raises(CanonicalizationError) as plain_err:
        redacted_model_key("m", request_)
    with pytest.raises(CanonicalizationError) as fast_err:
        LiveRequests().prepare("m", request_)
    assert str(fast_err.value) == str(plain_err.value)
    with pytest.raises(CanonicalizationError) as fast_err:
        live_model_key("m", request_)
    assert str(fast_err.value) == str(plain_err.value)


# --------------------------------------------------------------------------- the engine


def _growing_base(steps: int) -> Recording:
    """A run whose requests repeat a growing history (the messages shared, as loaded)."""
    history = [ChatMessage(role="system", content="You help."), ChatMessage(role="user", content="Fetch 3 things.")]
    records: list[Any] = []
    tools = [{"name": "fetch", "parameters": {"type": "object"}}]
    for k in range(steps):
        req = ModelRequest(messages=list(history), tools=tools, options={"temperature": 0.5})
        call = ToolCall(id=f"c{k}", name="fetch", arguments={"id": k, "exact": k % 2 == 0, "w": 1.0})
        msg = ChatMessage(role="assistant", content=f"step {k}", tool_calls=[call])
        records.append(
            ModelRecord(
                seq=len(records),
                key=req.key_for("m"),
                model="m",
                request=req,
                response=ModelResponse(message=msg, finish_reason="tool_calls"),
            )
        )
        result = ToolResult(content=f"thing {k} " + "é" * k)
        records.append(
            ToolRecord(
                seq=len(records),
                key=None,
                tool="fetch",
                arguments=call.arguments,
                tool_call_id=call.id,
                result=result,
            )
        )
        records[-1].key = records[-1].compute_key()
        history += [msg, ChatMessage(role="tool", content=result.content, tool_call_id=call.id, name="fetch")]
    return Recording(metadata={}, records=records)


class _RebuildingAgent:
    """An executor whose agent keeps its history as JSON and validates it anew for each
    call (what the model-API proxy hands the engine)."""

    def __init__(self, base: Recording) -> None:
        self.base = base

    def run(self, runtime: Any, task: Any) -> Any:
        first = self.base.records[0]
        history = [m.to_json_obj() for m in first.request.messages]
        resp = None
        for r in self.base.records:
            if r.kind == "model":
                req = ModelRequest.model_validate(
                    {"messages": history, "tools": r.request.tools, "options": dict(r.request.options)}
                )
                resp = runtime.call_model("m", req)
                history.append(resp.message.to_json_obj())
            else:
                tc = resp.message.tool_calls[0]
                res = runtime.call_tool(tc.name, tc.arguments, tc.id)
                history.append({"role": "tool", "content": res.content, "tool_call_id": tc.id, "name": tc.name})
        return "done"

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        raise AssertionError("nothing is answered live")

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        raise AssertionError("nothing is answered live")


def test_an_agent_rebuilding_its_history_replays_to_the_base_sharing_its_messages():
    base = _growing_base(6)
    out = ReplayEngine(base, new_branch(base, "b.json", at=0), executor=_RebuildingAgent(base)).run()
    assert out.status == "completed" and out.comparability.level == "full" and out.first_divergence is None
    assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    for ev, b in zip(out.events.records, base.records):
        if ev.kind == "model":
            assert ev.request is b.request  # equal content: the recorded request itself


def test_a_rebuilt_history_that_differs_only_in_json_types_does_not_match():
    """The agent sends ``True`` where the recording has ``1``: Python calls the requests
    equal, their keys differ, so the call is not answered from the recording."""
    base = _growing_base(3)

    class Agent(_RebuildingAgent):
        def run(self, runtime: Any, task: Any) -> Any:
            first = self.base.records[0]
            req = ModelRequest.model_validate(first.request.to_json_obj())
            req = req.model_copy(update={"options": {"temperature": 0.5, "n": True}})
            runtime.call_model("m", req)
            return "done"

    # the recorded options say n=1: Python equal to True, not the same JSON
    first = base.records[0]
    first.request = first.request.model_copy(update={"options": {"temperature": 0.5, "n": 1}})
    first.key = first.compute_key()
    out = ReplayEngine(base, new_branch(base, "b.json", at=0), executor=Agent(base)).run()
    assert out.status == "paused" and out.answers == {}
    req = out.requirement
    assert req is not None and req.kind == "model" and req.mismatch == "missing"
    sent = ModelRequest.model_validate(req.request)
    assert req.args_hash == plain("m", sent) != first.key
    assert req.nearest.diff == [{"path": "/options/n", "op": "changed", "base": 1, "branch": True}]
