"""The replay session: modes, per-key cursors, fallbacks, the tool boundary, redaction."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import PolicyDenied, ReplayMismatch
from core.record.canonical import model_key, tool_key
from core.record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SnapshotRecord,
    ToolRecord,
    ToolResult,
)
from core.record.redaction import SecretRedactor, marker
from core.replay.boundary import AgentRuntime
from core.replay.session import (
    Harness,
    ReplayChatModel,
    ReplayedModelError,
    ReplayFallback,
    ReplayMode,
    ReplaySession,
    SpanRecorder,
)


class Counter:
    """A live tool that counts its calls and answers ``{"n": call number, "x": x}``."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x: int) -> dict:
        self.calls += 1
        return {"n": self.calls, "x": x}


class FakeClock:
    """Monotonic clock advancing by ``step`` seconds on every reading."""

    def __init__(self, step: float) -> None:
        self.t = 0.0
        self.step = step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def echo_model(request: ModelRequest) -> ModelResponse:
    last = request.messages[-1].text if request.messages else ""
    return ModelResponse(message=ChatMessage(role="assistant", content=f"echo: {last}"), finish_reason="stop")


def req(text: str, **options) -> ModelRequest:
    return ModelRequest(messages=[ChatMessage(role="user", content=text)], options=options)


def record_counter_calls(xs: list[int]) -> tuple[Recording, list[dict]]:
    session = ReplaySession(ReplayMode.RECORD, metadata={"dataset": "unit"})
    h = Harness(session, {"count": Counter()}, run_id="r-rec")
    out = [h.call_tool("count", {"x": x}, f"c{i}").content for i, x in enumerate(xs)]
    return session.recording, out


# ---------------------------------------------------------------------- modes


def test_harness_is_an_agent_runtime() -> None:
    assert isinstance(Harness(), AgentRuntime)


def test_live_mode_is_inert() -> None:
    session = ReplaySession(ReplayMode.LIVE)
    tool = Counter()
    h = Harness(session, {"count": tool}, models=[ReplayChatModel(session, echo_model, "m")])
    assert h.call_tool("count", {"x": 1}).content == {"n": 1, "x": 1}
    assert h.call_model("m", req("hi")).message.content == "echo: hi"
    h.interrupt({"why": "pause"})
    h.publish_generation("g1")
    assert tool.calls == 1
    assert session.recording.records == []
    assert session.events == []
    assert session.stats.live == 2 and session.stats.recorded == 0 and session.stats.replayed == 0


def test_record_appends_tool_and_model_records_with_keys(tmp_path: Path) -> None:
    session = ReplaySession(ReplayMode.RECORD, metadata={"dataset": "smoke"})
    h = Harness(session, {"count": Counter()}, models=[ReplayChatModel(session, echo_model, "m")], run_id="r1")
    h.call_model("m", req("hi", temperature=0))
    h.call_tool("count", {"x": 7}, "call_1")
    recs = session.recording.records
    assert [r.kind for r in recs] == ["model", "tool"]
    assert [r.seq for r in recs] == [0, 1]
    assert recs[0].key == model_key("m", req("hi", temperature=0))
    assert recs[1].key == tool_key("count", {"x": 7})
    assert recs[1].tool_call_id == "call_1" and recs[1].run_id == "r1"
    assert session.stats.recorded == 2
    path = tmp_path / "rec.json"
    digest = session.save(path)
    loaded = Recording.load(path)
    assert loaded.digest == digest
    assert loaded.metadata == {"dataset": "smoke"}
    assert loaded.session.mode == "record" and loaded.session.producer.startswith("chassis-inspector ")
    assert [r.key for r in loaded.records] == [r.key for r in recs]


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    rec, _ = record_counter_calls([1, 2])
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    path = tmp_path / "out.json"
    path.write_bytes(b"old")
    session.save(path)
    assert Recording.load(path).counts_by_kind()["tool"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_unknown_mode_or_fallback_is_rejected() -> None:
    with pytest.raises(ValueError):
        ReplaySession("rewind")
    with pytest.raises(ValueError):
        ReplaySession("replay", fallback="maybe")


# ---------------------------------------------------------------------- cursors


def test_repeated_keys_replay_in_order_then_exhaust() -> None:
    rec, recorded = record_counter_calls([5, 5, 5])
    assert [o["n"] for o in recorded] == [1, 2, 3]
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    tool = Counter()
    h = Harness(session, {"count": tool})
    key = tool_key("count", {"x": 5})
    assert session.remaining("tool", key) == 3
    first = session.peek("tool", key)
    assert first is not None and first.result.content == {"n": 1, "x": 5}
    assert session.peek("tool", key) is first  # peek does not consume
    got = [h.call_tool("count", {"x": 5}, f"r{i}").content["n"] for i in range(3)]
    assert got == [1, 2, 3]
    assert not session.has_remaining("tool", key)
    assert session.peek("tool", key) is None
    with pytest.raises(ReplayMismatch) as err:
        h.call_tool("count", {"x": 5}, "r3")
    assert err.value.reason == "exhausted"
    assert err.value.kind == "tool" and err.value.key == key and err.value.recorded == 3
    assert "recorded 3 time(s)" in str(err.value)
    assert tool.calls == 0


def test_unseen_call_is_missing_with_recorded_count() -> None:
    rec, _ = record_counter_calls([1, 2])
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    h = Harness(session, {"count": Counter()})
    with pytest.raises(ReplayMismatch) as err:
        h.call_tool("count", {"x": 99})
    e = err.value
    assert (e.kind, e.reason, e.recorded) == ("tool", "missing", 2)
    assert e.key == tool_key("count", {"x": 99})
    assert "2 tool interaction(s) recorded" in str(e)


def test_keys_are_independent_cursors() -> None:
    rec, _ = record_counter_calls([1, 2, 1, 2])
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    h = Harness(session, {})
    assert h.call_tool("count", {"x": 2}).content["n"] == 2
    assert h.call_tool("count", {"x": 2}).content["n"] == 4
    assert h.call_tool("count", {"x": 1}).content["n"] == 1
    assert [r.seq for r in session.unconsumed()] == [2]
    session.rewind()
    assert len(session.unconsumed()) == 4


class NoScan(list):
    """A records list that refuses iteration: proves matching never scans the recording."""

    def __iter__(self):
        raise AssertionError("the recording was scanned")


def test_matching_uses_per_key_cursors_not_a_scan() -> None:
    rec, _ = record_counter_calls(list(range(50)) * 2)
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    session.recording.records = NoScan(session.recording.records)
    h = Harness(session, {})
    assert h.call_tool("count", {"x": 49}).content["n"] == 50
    assert h.call_tool("count", {"x": 49}).content["n"] == 100
    with pytest.raises(ReplayMismatch):
        h.call_tool("count", {"x": 49})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_property_any_repeated_keys_replay_in_recording_order(xs: list[int], rnd) -> None:
    rec, recorded = record_counter_calls(xs)
    per_key: dict[int, list[int]] = {}
    for x, out in zip(xs, recorded):
        per_key.setdefault(x, []).append(out["n"])
    calls = list(xs)
    rnd.shuffle(calls)  # interleave keys differently from the recording
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY)
    h = Harness(session, {})
    got: dict[int, list[int]] = {}
    for x in calls:
        got.setdefault(x, []).append(h.call_tool("count", {"x": x}).content["n"])
    assert got == per_key
    assert session.stats.live == 0 and session.stats.replayed == len(xs)
    with pytest.raises(ReplayMismatch) as err:
        h.call_tool("count", {"x": calls[0]})
    assert err.value.reason == "exhausted"


def test_model_calls_replay_in_order_and_exhaust() -> None:
    answers = iter(["first", "second"])

    def inner(request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content=next(answers)))

    session = ReplaySession(ReplayMode.RECORD)
    model = ReplayChatModel(session, inner, "gpt-example")
    assert [model(req("same")).message.content for _ in range(2)] == ["first", "second"]

    replay = ReplaySession.from_recording(session.recording, ReplayMode.REPLAY)
    model2 = ReplayChatModel(replay, None, "gpt-example")
    assert [model2(req("same")).message.content for _ in range(2)] == ["first", "second"]
    with pytest.raises(ReplayMismatch) as err:
        model2(req("same"))
    assert (err.value.kind, err.value.reason, err.value.recorded) == ("model", "exhausted", 2)
    with pytest.raises(ReplayMismatch) as err:
        model2(req("same", temperature=0.5))  # any option is part of the key
    assert err.value.reason == "missing"
    with pytest.raises(ReplayMismatch):
        ReplayChatModel(replay, None, "other-model")(req("same"))


def test_inner_may_be_none_only_in_replay() -> None:
    with pytest.raises(ValueError, match="only in replay"):
        ReplayChatModel(ReplaySession(ReplayMode.RECORD), None, "m")
    ReplayChatModel(ReplaySession(ReplayMode.REPLAY), None, "m")


def test_model_errors_are_recorded_and_replayed_as_errors() -> None:
    def broken(request: ModelRequest) -> ModelResponse:
        raise TimeoutError("provider timed out")

    session = ReplaySession(ReplayMode.RECORD)
    with pytest.raises(TimeoutError):
        ReplayChatModel(session, broken, "m")(req("x"))
    (rec,) = session.recording.records
    assert rec.error == ErrorInfo(type="TimeoutError", message="provider timed out")
    assert rec.response is None
    replay = ReplaySession.from_recording(session.recording, ReplayMode.REPLAY)
    with pytest.raises(ReplayedModelError) as err:
        ReplayChatModel(replay, None, "m")(req("x"))
    assert err.value.error.type == "TimeoutError"


# ---------------------------------------------------------------------- fallbacks


def test_live_fallback_runs_and_is_recorded_as_such(tmp_path: Path) -> None:
    rec, _ = record_counter_calls([1])
    session = ReplaySession.from_recording(rec, ReplayMode.REPLAY, ReplayFallback.LIVE)
    tool = Counter()
    h = Harness(session, {"count": tool}, run_id="r-rep")
    assert h.call_tool("count", {"x": 1}).content == {"n": 1, "x": 1}  # replayed
    assert tool.calls == 0
    assert h.call_tool("count", {"x": 2}, "c9").content == {"n": 1, "x": 2}  # live
    assert tool.calls == 1
    assert session.stats.live_fallback == 1 and session.stats.live == 1 and session.stats.replayed == 1
    appended = session.recording.records[-1]
    assert isinstance(appended, ToolRecord) and appended.live_fallback and not appended.replayed
    assert appended.seq == 1 and appended.tool_call_id == "c9" and appended.run_id == "r-rep"
    assert [e.live_fallback for e in session.events] == [False, True]
    assert [e.replayed for e in session.events] == [True, False]
    path = tmp_path / "with-fallback.json"
    session.save(path)
    raw = orjson.loads(path.read_bytes())
    assert raw["records"][-1]["live_fallback"] is True
    # the saved fallback now answers a strict replay
    again = ReplaySession.load(path)
    assert Harness(again, {}).call_tool("count", {"x": 2}).content == {"n": 1, "x": 2}


def test_live_fallback_span_and_model_fallback() -> None:
    session = ReplaySession(ReplayMode.REPLAY, ReplayFallback.LIVE)
    h = Harness(session, {"count": Counter()}, models=[ReplayChatModel(session, echo_model, "m")])
    h.call_tool("count", {"x": 3})
    span = h.tracer.spans[-1]
    assert span.attributes["replayed"] is False and span.attributes["live_fallback"] is True
    assert h.call_model("m", req("yo")).message.content == "echo: yo"
    assert session.recording.records[-1].kind == "model" and session.recording.records[-1].live_fallback
    assert session.stats.live_fallback == 2


def test_live_fallback_without_a_live_implementation_raises() -> None:
    session = ReplaySession(ReplayMode.REPLAY, ReplayFallback.LIVE)
    with pytest.raises(ReplayMismatch, match="no inner model") as err:
        ReplayChatModel(session, None, "m")(req("x"))
    assert err.value.reason == "missing"
    with pytest.raises(ReplayMismatch, match="cannot run here"):
        Harness(session, {}).call_tool("unregistered", {})


def test_error_fallback_is_the_default() -> None:
    assert ReplaySession(ReplayMode.REPLAY).fallback is ReplayFallback.ERROR


# ---------------------------------------------------------------------- the boundary


def boundary_log(log: list[str]) -> dict:
    class LoggingTracer(SpanRecorder):
        def span(self, name, attributes=None):
            log.append(f"span:{name}:replayed={attributes['replayed']}")
            return super().span(name, attributes)

    return dict(
        before=lambda inv: log.append(f"before:{inv.tool}"),
        authorize=lambda inv: log.append("authorize"),
        approve=lambda inv: log.append("approve") or True,
        after=lambda inv, res: log.append(f"after:{res.content['n']}"),
        tracer=LoggingTracer(),
    )


def test_boundary_order_is_the_same_live_and_replayed() -> None:
    rec_log: list[str] = []
    session = ReplaySession(ReplayMode.RECORD)
    Harness(session, {"count": Counter()}, **boundary_log(rec_log)).call_tool("count", {"x": 1})
    rep_log: list[str] = []
    replay = ReplaySession.from_recording(session.recording, ReplayMode.REPLAY)
    h = Harness(replay, {}, **boundary_log(rep_log))
    h.call_tool("count", {"x": 1})
    expected = ["before:count", "authorize", "approve", "span:tool.execute:replayed={}", "after:1"]
    assert rec_log == [e.format(False) for e in expected]
    assert rep_log == [e.format(True) for e in expected]
    (span,) = h.tracer.spans
    assert span.name == "tool.execute" and span.attributes["replayed"] is True and span.status == "ok"


def test_after_hook_sees_the_served_record() -> None:
    rec, _ = record_counter_calls([4])
    seen = []
    h = Harness(ReplaySession.from_recording(rec), {}, after=lambda inv, res: seen.append((inv, res)), run_id="r-new")
    h.call_tool("count", {"x": 4}, "fresh-id")
    inv, res = seen[0]
    assert inv.replayed and inv.record.replayed and inv.record.tool_call_id == "fresh-id"
    assert inv.record.run_id == "r-new" and res.content == {"n": 1, "x": 4}


def deny_delete(inv) -> None:
    if inv.tool == "delete":
        raise PolicyDenied(inv.tool, "deletes are not authorized")


def test_denied_tool_raises_in_replay_exactly_as_live() -> None:
    tools = {"delete": lambda path: {"deleted": path}}
    # recorded without the policy, so a recorded answer exists
    session = ReplaySession(ReplayMode.RECORD)
    Harness(session, tools).call_tool("delete", {"path": "/a"}, "c1")

    live = Harness(ReplaySession(ReplayMode.RECORD), tools, authorize=deny_delete)
    with pytest.raises(PolicyDenied) as live_err:
        live.call_tool("delete", {"path": "/a"}, "c1")
    assert live.session.recording.records == []  # a denied call is not recorded

    replay = ReplaySession.from_recording(session.recording, ReplayMode.REPLAY)
    h = Harness(replay, {}, authorize=deny_delete)
    with pytest.raises(PolicyDenied) as replay_err:
        h.call_tool("delete", {"path": "/a"}, "c1")
    assert str(replay_err.value) == str(live_err.value)
    assert (replay_err.value.tool, replay_err.value.reason) == ("delete", "deletes are not authorized")
    assert replay.has_remaining("tool", tool_key("delete", {"path": "/a"}))  # not consumed
    assert h.tracer.spans == []  # denied before the span


def test_approval_refused_and_budget_deny_in_replay_as_live() -> None:
    rec, _ = record_counter_calls([1, 2, 3])
    for mode in ("live", "replay"):
        session = ReplaySession.from_recording(rec, mode)
        with pytest.raises(PolicyDenied, match="approval refused"):
            Harness(session, {"count": Counter()}, approve=lambda inv: False).call_tool("count", {"x": 1})
        h = Harness(session, {"count": Counter()}, max_tool_calls=2)
        h.call_tool("count", {"x": 1})
        h.call_tool("count", {"x": 2})
        with pytest.raises(PolicyDenied, match="budget exceeded: at most 2"):
            h.call_tool("count", {"x": 3})
        assert h.tool_calls == 2


def test_authorize_returning_false_is_a_denial() -> None:
    with pytest.raises(PolicyDenied, match="not authorized"):
        Harness(ReplaySession("live"), {"t": lambda: 1}, authorize=lambda inv: False).call_tool("t", {})


def test_tool_exceptions_become_recorded_error_results() -> None:
    def explode(x: int) -> None:
        raise ValueError(f"bad x {x}")

    session = ReplaySession(ReplayMode.RECORD)
    h = Harness(session, {"explode": explode})
    res = h.call_tool("explode", {"x": 3})
    assert res.error == ErrorInfo(type="ValueError", message="bad x 3") and res.content is None
    assert session.recording.records[0].result.error.type == "ValueError"
    assert h.tracer.spans[0].attributes["error"] == "ValueError"
    unknown = h.call_tool("nope", {})
    assert unknown.error.type == "UnknownTool"
    replay = Harness(ReplaySession.from_recording(session.recording), {})
    assert replay.call_tool("explode", {"x": 3}).error == res.error


def test_historical_and_fresh_fields_of_a_replayed_result() -> None:
    recorded_result = ToolResult(
        content={"rows": 3},
        artifact={"file": "out.csv"},
        error=ErrorInfo(type="Partial", message="1 row skipped"),
        redacted=True,
    )
    session = ReplaySession(ReplayMode.RECORD, clock=FakeClock(5.0))
    h = Harness(session, {"query": lambda sql: recorded_result}, run_id="r-rec", generation_id="g-rec")
    h.call_tool("query", {"sql": "select"}, "call-rec")
    rec = session.recording.records[0]
    assert rec.duration_seconds == 5.0

    replay = ReplaySession.from_recording(session.recording, clock=FakeClock(0.25))
    hr = Harness(replay, {}, run_id="r-rep", generation_id="g-rep")
    got = hr.call_tool("query", {"sql": "select"}, "call-rep")
    # historical: the semantic outcome, exactly as recorded
    assert got == recorded_result
    (served,) = replay.events
    assert served.result == rec.result
    # fresh: attribution from the call being served
    assert served.tool_call_id == "call-rep" and served.run_id == "r-rep"
    assert served.generation_id == "g-rep" and served.duration_seconds == 0.25
    assert served.replayed is True and served.live_fallback is False
    assert served.key == rec.key and served.arguments == rec.arguments
    # the source recording is untouched
    assert replay.recording.records[0].tool_call_id == "call-rec"


# ---------------------------------------------------------------------- redaction


SECRET = "s3cr3t-value-123"


def test_redaction_scrubs_and_keys_match_between_record_and_replay(tmp_path: Path) -> None:
    redactor = SecretRedactor([SECRET])

    def search(query: str, api_key: str) -> dict:
        return {"hits": [f"found {query}"], "api_key": api_key}

    def model(request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content=f"I saw {request.messages[-1].text}"))

    args = {"query": f"docs for {SECRET}", "api_key": "k-live-9999"}
    request = ModelRequest(
        messages=[ChatMessage(role="user", content=f"my key is {SECRET}")], options={"api_key": "opt-key-1234"}
    )

    session = ReplaySession(ReplayMode.RECORD, redactor=redactor)
    h = Harness(session, {"search": search}, models=[ReplayChatModel(session, model, "m")])
    live_model = h.call_model("m", request)
    live_tool = h.call_tool("search", args, "c1")
    assert SECRET in live_tool.content["hits"][0] and SECRET in live_model.message.content  # the agent sees real values
    mrec, trec = session.recording.records
    # markers name the kind removed (docs/format.md, "Redaction")
    S, A = marker("secret"), marker("api-key")
    assert trec.arguments == {"query": f"docs for {S}", "api_key": A}
    assert trec.key == tool_key("search", trec.arguments)
    assert trec.result.redacted is True and trec.result.content["hits"] == [f"found docs for {S}"]
    assert trec.result.content["api_key"] == A
    assert mrec.request.messages[0].content == f"my key is {S}"
    assert mrec.request.options == {"api_key": A}
    assert mrec.key == model_key("m", mrec.request)
    assert mrec.response.message.content == f"I saw my key is {S}"
    path = tmp_path / "redacted.json"
    session.save(path)
    data = path.read_bytes()
    assert SECRET.encode() not in data and b"k-live-9999" not in data and b"opt-key-1234" not in data

    replay = ReplaySession.load(path, redactor=redactor)
    hr = Harness(replay, {}, models=[ReplayChatModel(replay, None, "m")])
    # the agent makes the same raw calls: keys are computed on redacted values in both modes
    assert hr.call_model("m", request).message.content == f"I saw my key is {S}"
    got = hr.call_tool("search", args, "c1")
    assert got.redacted is True and got.content["hits"] == [f"found docs for {S}"]
    assert replay.stats.replayed == 2 and replay.stats.live == 0


def test_without_the_redactor_a_scrubbed_call_does_not_match() -> None:
    redactor = SecretRedactor([SECRET])
    session = ReplaySession(ReplayMode.RECORD, redactor=redactor)
    Harness(session, {"search": lambda query: 1}).call_tool("search", {"query": SECRET})
    replay = ReplaySession.from_recording(session.recording)  # no redactor: raw key
    with pytest.raises(ReplayMismatch) as err:
        Harness(replay, {}).call_tool("search", {"query": SECRET})
    assert err.value.reason == "missing"


# ---------------------------------------------------------------------- attribution records


def test_attribution_records_are_written_in_order_and_never_answer() -> None:
    session = ReplaySession(ReplayMode.RECORD)
    h = Harness(session, {"count": Counter()}, run_id="r1")
    h.mount_plugin("fs")
    h.publish_generation("g1", {"plugins": ["fs"], "tools": ["count"], "capabilities": ["MODEL"]})
    h.call_tool("count", {"x": 1})
    h.interrupt({"tool": "count", "arguments": {"x": 2}, "result": {"n": 9}})
    h.retire_generation()
    h.unmount_plugin("fs")
    h.shutdown()
    kinds = [(r.kind, getattr(r, "event", None)) for r in session.recording.records]
    assert kinds == [
        ("lifecycle", "plugin.mount"),
        ("lifecycle", "generation.publish"),
        ("snapshot", None),
        ("tool", None),
        ("interrupt", None),
        ("lifecycle", "generation.draining"),
        ("lifecycle", "generation.retired"),
        ("lifecycle", "plugin.unmount"),
        ("lifecycle", "harness.shutdown"),
    ]
    snap = session.recording.records[2]
    assert isinstance(snap, SnapshotRecord) and snap.generation_id == "g1"
    tool_rec = session.recording.records[3]
    assert tool_rec.generation_id == "g1"  # the published generation is stamped on calls

    replay = ReplaySession.from_recording(session.recording)
    assert replay.recorded_count("tool") == 1
    hr = Harness(replay, {})
    with pytest.raises(ReplayMismatch) as err:  # the interrupt's value does not answer
        hr.call_tool("count", {"x": 2})
    assert err.value.reason == "missing"
    hr.interrupt({"again": True})
    assert [e.kind for e in replay.events] == ["interrupt"]
    assert len(replay.recording.records) == 9  # replay never writes into its source


def test_a_recording_of_only_attribution_records_answers_nothing() -> None:
    rec = Recording(
        records=[
            InterruptRecord(seq=0, value={"tool": "count", "result": {"n": 1}}),
            SnapshotRecord(seq=1, generation_id="g", composition={"tools": ["count"]}),
            LifecycleRecord(seq=2, event="generation.publish", details={"generation": "g"}),
        ]
    )
    session = ReplaySession.from_recording(rec)
    assert session.recorded_count("tool") == 0 and session.recorded_count("model") == 0
    with pytest.raises(ReplayMismatch) as err:
        Harness(session, {}).call_tool("count", {"x": 1})
    assert (err.value.reason, err.value.recorded) == ("missing", 0)


def test_events_recording_is_a_valid_recording(tmp_path: Path) -> None:
    rec, _ = record_counter_calls([1, 1])
    replay = ReplaySession.from_recording(rec)
    h = Harness(replay, {}, run_id="r2")
    h.call_tool("count", {"x": 1}, "a")
    h.interrupt("pause")
    h.call_tool("count", {"x": 1}, "b")
    events = replay.events_recording({"replay_of": "unit"})
    assert [r.seq for r in events.records] == [0, 1, 2]
    path = tmp_path / "events.json"
    events.save(path)
    assert Recording.load(path).records[0].replayed is True
