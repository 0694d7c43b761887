"""The answer chain of the replay engine: one ordered chain for model and tool calls.

Rules (SPEC "Replay engine"; docs/replay.md, "The engine's rules" 3-4 and "Answer sources
and progress"): every call is answered by the first source that can, in the order
intervention → recorded → fixture → drift (lenient) → live (a live policy with an
executor); with none, the replay pauses on a requirement. Each answer carries its source
and a short reason, kept per call in ``ReplayOutcome.reasons`` and, for every answer not
``recorded``, in the events' ``metadata.replay.answer_reasons`` (keyed like
``answer_sources``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.record.canonical import args_hash, model_key
from core.record.recording import ChatMessage, ModelRequest, ModelResponse, Recording, ToolResult
from core.replay.branch import ModelResponseIntervention, Policy, ToolResultIntervention, new_branch
from core.replay.engine import ANSWER_CHAIN, ReplayEngine, ReplayOutcome, ReplayProgress
from core.replay.fixtures import Fixture, FixtureGateway
from core.replay.replay_record import ANSWER_SOURCES
from tests.builders import MODEL, chat_recording

# chat_recording(1, attribution=False): 0 model (asks lookup item-0), 1 tool lookup, 2 model (final)

REASON_WORDS = {
    "intervention": "intervention",
    "recorded": "recorded answer for key sha256:",
    "fixture": "fixture fx-",
    "drift": "lenient drift: the base's answer at seq",
    "live": "answered live by the executor",
}


class OneCall:
    """An executor whose agent makes one model call then (``tool`` set) one tool call,
    and whose live answers are recognisable (``live``)."""

    def __init__(self, request: ModelRequest, tool: dict[str, Any] | None = None) -> None:
        self.request = request
        self.tool = tool

    def run(self, runtime: Any, task: Any) -> Any:
        response = runtime.call_model(MODEL, self.request)
        if self.tool is None:
            return response.message.text
        return runtime.call_tool("lookup", self.tool, "call_0").content

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content="live"))

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        return ToolResult(content="live")


def expected_source(enabled: dict[str, bool]) -> str | None:
    """The documented order: the first enabled source of the chain (``user`` answers only
    a person's turn, never a model or tool call)."""
    return next((s for s in ANSWER_CHAIN if enabled.get(s, False)), None)


def check_answer(out: ReplayOutcome, seq: int, want: str, progress: list[ReplayProgress]) -> None:
    """The call at ``seq`` was answered by ``want``; its source and reason are in the
    outcome, in the events' metadata (when not ``recorded``) and in its progress event."""
    assert out.sources[seq] == want
    reason = out.reasons[seq]
    assert REASON_WORDS[want] in reason, reason
    meta = Recording.loads(out.events.dumps()).metadata["replay"]
    if want == "recorded":
        assert str(seq) not in meta["answer_sources"] and str(seq) not in meta["answer_reasons"]
    else:
        assert meta["answer_sources"][str(seq)] == want
        assert meta["answer_reasons"][str(seq)] == reason
    assert set(meta["answer_reasons"]) == set(meta["answer_sources"])
    [event] = [p for p in progress if p.kind == "call" and p.current_seq == seq]
    assert (event.source, event.reason) == (want, reason)


def test_the_chain_is_the_documented_order() -> None:
    # model and tool calls: the first five; a person's turn after divergence: only "user"
    assert ANSWER_CHAIN == ("intervention", "recorded", "fixture", "drift", "live", "user")
    assert [f.__name__ for f in ReplayEngine._CHAIN] == [f"_from_{s}" for s in ANSWER_CHAIN]
    assert set(ANSWER_CHAIN) | {"policy"} == set(ANSWER_SOURCES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    intervention=st.booleans(),
    recorded=st.booleans(),
    fixture=st.booleans(),
    drift=st.booleans(),
    live=st.booleans(),
)
def test_property_tool_calls_take_the_first_source_that_answers(
    intervention: bool, recorded: bool, fixture: bool, drift: bool, live: bool
) -> None:
    base = chat_recording(1, attribution=False)
    args = {"q": "item-0"} if recorded else {"q": "something else"}
    ivs = [ToolResultIntervention(tool="lookup", result=ToolResult(content="iv"))] if intervention else []
    policy = Policy(drift="lenient" if drift else "strict", tool="live" if live else "recorded")
    branch = new_branch(base, "base.json", at=1, interventions=ivs, policy=policy)
    fixtures = [Fixture(kind="tool", name="lookup", args_hash=args_hash(args), output={"content": "fx"})]
    progress: list[ReplayProgress] = []
    out = ReplayEngine(
        base,
        branch,
        replay_id="rp-chain",
        fixtures=FixtureGateway(fixtures if fixture else []),
        executor=OneCall(base.records[0].request, args),
        on_progress=progress.append,
    ).run()
    enabled = {"intervention": intervention, "recorded": recorded, "fixture": fixture, "drift": drift, "live": live}
    want = expected_source(enabled)
    check_answer(out, 0, "recorded", progress)  # before the checkpoint
    assert "before the checkpoint" in out.reasons[0]
    if want is None:
        assert out.status == "paused" and out.requirement is not None and out.requirement.kind == "tool"
        assert progress[-1].kind == "paused" and progress[-1].requirement_id == out.requirement.id
        return
    assert out.status == "completed", out.error
    check_answer(out, 1, want, progress)
    content = {"intervention": "iv", "fixture": "fx", "live": "live"}.get(want, {"value": 0})
    assert out.output == content


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    intervention=st.booleans(),
    recorded=st.booleans(),
    fixture=st.booleans(),
    drift=st.booleans(),
    live=st.booleans(),
)
def test_property_model_calls_take_the_first_source_that_answers(
    intervention: bool, recorded: bool, fixture: bool, drift: bool, live: bool
) -> None:
    base = chat_recording(1, attribution=False)
    request = base.records[0].request
    if not recorded:
        extra = ChatMessage(role="user", content="and one more thing")
        request = request.model_copy(update={"messages": [*request.messages, extra]})

    def says(text: str) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content=text), finish_reason="stop")

    ivs = [ModelResponseIntervention(step=0, response=says("iv"))] if intervention else []
    policy = Policy(drift="lenient" if drift else "strict", model="live" if live else "recorded")
    branch = new_branch(base, "base.json", at=0, interventions=ivs, policy=policy)
    fixtures = [Fixture(kind="model", name=MODEL, args_hash=model_key(MODEL, request), output=says("fx").to_json_obj())]
    progress: list[ReplayProgress] = []
    out = ReplayEngine(
        base,
        branch,
        replay_id="rp-chain",
        fixtures=FixtureGateway(fixtures if fixture else []),
        executor=OneCall(request),
        on_progress=progress.append,
    ).run()
    enabled = {"intervention": intervention, "recorded": recorded, "fixture": fixture, "drift": drift, "live": live}
    want = expected_source(enabled)
    if want is None:
        assert out.status == "paused" and out.requirement is not None and out.requirement.kind == "model"
        assert progress[-1].kind == "paused"
        return
    assert out.status == "completed", out.error
    check_answer(out, 0, want, progress)
    text = {"intervention": "iv", "fixture": "fx", "live": "live"}.get(want, "")  # the base asked for a tool
    assert out.output == text


def test_repeated_keys_say_which_recorded_answer_they_took() -> None:
    # the same tool call three times in the base: answered in recording order, 1 of 3 ...
    from tests.builders import recording, tool

    base = recording(*(tool(i, "ping", {}, f"pong-{i}") for i in range(3)))
    for r in base.records:
        r.key = r.compute_key()
    out = ReplayEngine(base, new_branch(base, "base.json", at=0)).run()
    assert out.status == "completed"
    assert [out.reasons[s][-8:] for s in (0, 1, 2)] == ["(1 of 3)", "(2 of 3)", "(3 of 3)"]
    assert all(out.reasons[s].startswith("recorded answer for key sha256:") for s in (0, 1, 2))


def test_reasons_name_the_intervention_the_fixture_and_the_drifted_base_call() -> None:
    from core.record.recording import ToolCall

    base = chat_recording(3)  # 0 lifecycle, 1 model, 2 tool, 3 model, 4 tool, 5 model, ...
    other = ToolCall(id="call_x", name="lookup", arguments={"q": "other"})
    asks_other = ModelResponse(
        message=ChatMessage(role="assistant", content="", tool_calls=[other]), finish_reason="tool_calls"
    )
    fx = Fixture(kind="tool", name="lookup", args_hash=None, output={"content": "any"}, scope="project")
    out = ReplayEngine(
        base,
        new_branch(
            base,
            "base.json",
            at=3,
            interventions=[ModelResponseIntervention(seq=3, response=asks_other)],
            policy=Policy(drift="lenient"),
        ),
        fixtures=FixtureGateway([fx]),
    ).run()
    assert [out.sources[s] for s in (1, 2, 3, 4, 5)] == ["recorded", "recorded", "intervention", "fixture", "drift"]
    assert out.reasons[3] == "intervention 0 (model_response at seq 3) answers model step 1"
    assert out.reasons[4] == f"fixture {fx.id} (project scope) answers any call of tool 'lookup' (tool-wide)"
    assert out.reasons[5] == (
        "lenient drift: the base's answer at seq 5 (model step 2) stands in for a request that differs"
    )
    # every call event has a reason, attribution records none
    calls = {r.seq for r in out.events.records if r.kind in ("tool", "model")}
    assert set(out.reasons) == calls


def test_an_exact_fixture_and_a_drifted_tool_call_say_so() -> None:
    base = chat_recording(1, attribution=False)
    args = {"q": "something else"}
    fx = Fixture(kind="tool", name="lookup", args_hash=args_hash(args), output={"content": "fx"})
    for fixtures, policy, want in (
        ([fx], Policy(), f"fixture {fx.id} (project scope) matched the call's arguments hash"),
        (
            [],
            Policy(drift="lenient"),
            "lenient drift: the base's answer at seq 1 (the call of tool 'lookup' at this position) "
            "stands in for a call that differs",
        ),
        (
            [],
            Policy(tool="live"),  # where the live call first differs from the base's
            "answered live by the executor (live_tool): the arguments differ from the base at q",
        ),
        (
            [Fixture(scope="branch:br-x", kind="tool", name="lookup", output={"content": "fx"})],
            Policy(),
            "fixture fx-? (branch scope) answers any call of tool 'lookup' (tool-wide)",
        ),
    ):
        if fixtures and fixtures[0].scope != "project":
            want = want.replace("fx-?", fixtures[0].id)
        out = ReplayEngine(
            base,
            new_branch(base, "base.json", at=1, policy=policy, branch_id="br-x"),
            fixtures=FixtureGateway(fixtures),
            executor=OneCall(base.records[0].request, args),
        ).run()
        assert out.reasons[1] == want


def test_a_denied_call_says_why() -> None:
    from core.replay.branch import ToolPolicyIntervention

    base = chat_recording(2)
    out = ReplayEngine(
        base,
        new_branch(
            base,
            "base.json",
            at=2,
            interventions=[ToolPolicyIntervention(tool="lookup", action="deny", reason="read-only")],
            policy=Policy(drift="lenient"),
        ),
    ).run()
    assert out.sources[2] == "policy"
    assert out.reasons[2] == "the tool gate denied the call: read-only"
    assert out.events.metadata["replay"]["answer_reasons"]["2"] == out.reasons[2]


def test_events_keep_answer_sources_as_before() -> None:
    """``answer_sources`` is unchanged by the reasons (backward compatible): one entry per
    answer not ``recorded``; ``answer_reasons`` has the same keys."""
    base = chat_recording(3)
    out = ReplayEngine(base, new_branch(base, "base.json", at=3)).run()
    meta = out.events.metadata["replay"]
    assert meta["answer_sources"] == {} and meta["answer_reasons"] == {}
    assert list(meta)[:7] == ["base", "branch", "policy", "executor", "stop_reason", "answer_sources", "answer_reasons"]


def test_first_difference_names_the_first_differing_place() -> None:
    from core.replay.engine import first_difference

    msgs = [{"role": "user", "content": "a"}] * 8
    changed = [*msgs[:7], {"role": "user", "content": "b"}]
    assert first_difference({"messages": msgs}, {"messages": changed}) == "messages[7].content"
    assert first_difference({"messages": msgs}, {"messages": msgs[:7]}) == "messages"
    assert first_difference({"a": 1}, {"a": True}) == "a"  # a boolean is not a number
    assert first_difference({"a": 1}, {"a": 1.0}) is None  # as in JSON
    assert first_difference({"x-y": [1]}, {"x-y": [2]}) == '["x-y"][0]'
    assert first_difference({"a": {}}, {"a": []}) == "a"
    assert first_difference({"a": 1}, {"b": 1}) == "$"
    assert first_difference("same", "same") is None
    deep: object = 0
    other: object = 1
    for _ in range(5000):  # iterative: no recursion limit
        deep, other = [deep], [other]
    assert first_difference(deep, other) == "[0]" * 5000
