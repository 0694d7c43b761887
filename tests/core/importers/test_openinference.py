"""OpenInference spans (``--from openinference``): the two real any-agent dumps
(tests/data/real_traces/openinference, SOURCES.md #25 smolagents and #26 OpenAI Agents
SDK), an OTLP JSON file written here, detection against every other real trace, damage,
and the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.analysis.final_output import find_final_output
from core.errors import FormatError, SourceImportError
from core.importers import detect, import_file
from core.importers._source import TruncatedSourceError, read_head
from core.importers._spans import id_text, to_nanos, tree_order
from core.importers.openinference import KIND, OpenInferenceImporter
from core.record.io import load_recording
from core.record.recording import ModelRecord, ToolRecord
from inspector.cli import main
from tests.builders import TESTS

REAL = TESTS / "data" / "real_traces"
OI = REAL / "openinference"
SMOL = OI / "any-agent_SMOLAGENTS_trace.json"
OPENAI = OI / "any-agent_OPENAI_trace.json"
IMP = OpenInferenceImporter()
# SOURCES.md #25 / #26
SMOL_FINAL = "The current year in the America/New_York timezone is 2025, and the value has been written to a file."
OPENAI_FINAL = "The current year in the America/New_York timezone is 2025. I have written this value to a file."


def source(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def kinds_in_source(path: Path) -> Counter:
    return Counter(s["attributes"].get("openinference.span.kind") for s in source(path)["spans"])


def models(rec) -> list[ModelRecord]:
    return [r for r in rec.records if isinstance(r, ModelRecord)]


def tools(rec) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


def only_run(path: Path, fmt: str | None = None):
    (run,) = import_file(path, fmt)
    return run


# -- detection ---------------------------------------------------------------------------


def test_both_real_files_are_detected_as_openinference() -> None:
    assert detect(SMOL) == "openinference"
    assert detect(OPENAI) == "openinference"


def test_no_other_real_trace_is_taken_and_otel_files_stay_otel() -> None:
    others = [
        p
        for p in sorted(REAL.rglob("*"))
        if p.is_file() and p.parent != OI and p.name != "README.md" and p.suffix in (".json", ".jsonl")
    ]
    assert others
    for p in others:
        assert IMP.sniff(p, read_head(p)) is not None, p
    for p in sorted((TESTS / "data" / "otel").glob("*.json*")):
        assert IMP.sniff(p, read_head(p)) is not None
        assert detect(p) == "otel"


# -- SOURCES.md #25: smolagents --------------------------------------------------------


def test_smolagents_nested_llm_spans_are_one_model_call_each() -> None:
    spans = source(SMOL)["spans"]
    assert len(spans) == 14
    assert kinds_in_source(SMOL) == Counter({"LLM": 9, "TOOL": 3, "AGENT": 1, None: 1})
    run = only_run(SMOL)
    rec = run.recording
    ms = models(rec)
    assert len(ms) == 3  # not 9
    totals = sorted(
        {
            s["attributes"]["llm.token_count.total"]
            for s in spans
            if "llm.token_count.total" in s["attributes"] and s["attributes"].get("openinference.span.kind") == "LLM"
        }
    )
    assert totals == [330, 454, 558]
    assert [m.response.usage.input_tokens + m.response.usage.output_tokens for m in ms] == totals
    assert all(m.meta["nested_repeats"] == 2 for m in ms)
    agent = next(s for s in spans if s["attributes"].get("openinference.span.kind") == "AGENT")["attributes"]
    assert (agent["llm.token_count.prompt"], agent["llm.token_count.completion"]) == (1271, 71)
    assert sum(m.response.usage.input_tokens for m in ms) == 1271
    assert sum(m.response.usage.output_tokens for m in ms) == 71
    assert {m.model for m in ms} == {"gpt-4.1-mini"}
    assert any("nested LLM span(s) repeat" in w.message for w in run.warnings)
    # the outermost span of each chain stands for the call: the AGENT span is its parent
    assert all(m.meta["agent"] == "ToolCallingAgent.run" for m in ms)


def test_smolagents_tools_are_paired_with_the_calls_that_asked_for_them() -> None:
    rec = only_run(SMOL).recording
    ts = tools(rec)
    assert [t.tool for t in ts] == ["get_current_time", "write_file", "final_answer"]
    assert [t.arguments for t in ts] == [
        {"timezone": "America/New_York"},
        {"text": "2025"},
        {"answer": SMOL_FINAL},
    ]
    # cross-checked with the file: each TOOL span's input.value is smolagents' {"args": [], "kwargs": {...}}
    src_tools = [s["attributes"] for s in source(SMOL)["spans"] if s["attributes"].get(KIND) == "TOOL"]
    assert [(a["tool.name"], json.loads(a["input.value"])["kwargs"]) for a in src_tools] == [
        (t.tool, t.arguments) for t in ts
    ]
    assert [a.get("output.value") for a in src_tools] == [t.result.content for t in ts]
    for t in ts:
        asker = rec.records[t.seq - 1]
        assert isinstance(asker, ModelRecord)
        (call,) = asker.response.message.tool_calls
        assert (call.id, call.name, call.arguments) == (t.tool_call_id, t.tool, t.arguments)
        assert t.result.error is None
    assert "2025-05-19T21:16:10-04:00" in ts[0].result.content
    # the history the third call saw, as smolagents sent it (its own roles kept)
    roles = [m.role for m in models(rec)[2].request.messages]
    assert roles == ["system", "user", "assistant", "tool-call", "tool-response"] * 1 + [
        "assistant",
        "tool-call",
        "tool-response",
    ]


def test_smolagents_final_output_structure_and_root_span() -> None:
    rec = only_run(SMOL).recording
    assert rec.metadata["final_output"] == source(SMOL)["final_output"] == SMOL_FINAL
    for how in ("auto", "records"):
        assert find_final_output(rec, source=how).value == SMOL_FINAL
    spans = rec.metadata["spans"]
    root = next(s for s in spans if s["name"] == "agent_run")
    assert root["kind"] is None and root["parent"] is None and root["status"] == "unset"
    assert root["attributes"]["any_agent.run_id"] == "bf827231-b623-4536-99f2-1b9188c94f77"
    agent = next(s for s in spans if s["kind"] == "AGENT")
    assert agent["parent"] == root["id"] and agent["attributes"]["output.value"] == SMOL_FINAL
    assert len(spans) == 2
    # ids are hex: the decimal trace id of the file, as 32 hex digits
    tid = source(SMOL)["spans"][0]["context"]["trace_id"]
    assert rec.metadata["trace_id"] == format(tid, "032x") == rec.metadata["source"]["run"]


# -- SOURCES.md #26: OpenAI Agents SDK -------------------------------------------------


def test_openai_agents_calls_tokens_and_tools() -> None:
    spans = source(OPENAI)["spans"]
    assert len(spans) == 9
    assert kinds_in_source(OPENAI) == Counter({"LLM": 3, "TOOL": 2, "AGENT": 2, "CHAIN": 1, None: 1})
    llm = [s["attributes"] for s in spans if s["attributes"].get("openinference.span.kind") == "LLM"]
    assert not any("llm.token_count.total" in a for a in llm)
    rec = only_run(OPENAI).recording
    ms = models(rec)
    usage = [(m.response.usage.input_tokens, m.response.usage.output_tokens) for m in ms]
    assert usage == [(286, 18), (369, 15), (393, 25)]
    assert usage == [(a["llm.token_count.prompt"], a["llm.token_count.completion"]) for a in llm]
    assert (sum(u[0] for u in usage), sum(u[1] for u in usage)) == (1048, 58)
    assert [t.tool for t in tools(rec)] == ["get_current_time", "write_file"]
    assert [t.tool_call_id for t in tools(rec)] == [
        ms[0].response.message.tool_calls[0].id,
        ms[1].response.message.tool_calls[0].id,
    ]
    assert [r.kind for r in rec.records] == ["model", "tool", "model", "tool", "model"]
    # request history from llm.input_messages: the tool call with id, the tool result
    last = ms[2].request.messages
    assert [m.role for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert last[3].tool_call_id == ms[0].response.message.tool_calls[0].id
    assert last[4].tool_calls[0].name == "write_file"


def test_openai_agents_final_output_and_structure() -> None:
    rec = only_run(OPENAI).recording
    assert rec.metadata["final_output"] == source(OPENAI)["final_output"] == OPENAI_FINAL
    assert find_final_output(rec).value == OPENAI_FINAL
    got = find_final_output(rec, source="records")
    assert (got.value, got.how) == (OPENAI_FINAL, "the last model response")
    assert "final_output_rule" not in rec.metadata
    kinds = Counter(s["kind"] for s in rec.metadata["spans"])
    assert kinds == Counter({"AGENT": 2, "CHAIN": 1, None: 1})
    chain = next(s for s in rec.metadata["spans"] if s["kind"] == "CHAIN")
    assert chain["name"] == "mcp_tools"
    assert json.loads(chain["attributes"]["output.value"]) == ["get_current_time", "convert_time"]
    assert all(r.meta["path"] == ["agent_run", "Agent workflow", "any_agent"] for r in rec.records)


@pytest.mark.parametrize("path", [SMOL, OPENAI])
def test_real_files_save_load_and_keep_time_order(path: Path, tmp_path: Path) -> None:
    run = only_run(path)
    rec = run.recording
    assert rec.metadata["source"]["format"] == "openinference"
    assert rec.metadata["source"]["file"] == path.name
    assert not any(w.code == "big-integer" for w in run.warnings)  # ids and times are read, not warned
    assert not any("non-standard" in w.message for w in run.warnings)
    ats = [r.at for r in rec.records]
    assert all(ats) and ats == sorted(ats)
    assert all(r.duration_seconds and r.duration_seconds > 0 for r in rec.records)
    out = tmp_path / "rec.json"
    rec.save(out)
    back = load_recording(out, verify_keys=True)
    assert [r.to_json_obj() for r in back.records] == [orjson.loads(orjson.dumps(r.to_json_obj())) for r in rec.records]


# -- an OTLP file with OpenInference attributes ------------------------------------------


def kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def span(sid: str, parent: str, name: str, start: int, end: int, attrs: dict[str, Any], **extra: Any) -> dict:
    return {
        "traceId": "5B8EFFF798038103D269B633813FC60C",
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + end),
        "attributes": [kv(k, v) for k, v in attrs.items()],
        **extra,
    }


LLM1 = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o-mini",
    "llm.input_messages.0.message.role": "system",
    "llm.input_messages.0.message.content": "be brief",
    "llm.input_messages.1.message.role": "user",
    "llm.input_messages.1.message.contents.0.message_content.type": "text",
    "llm.input_messages.1.message.contents.0.message_content.text": "weather in Paris?",
    "llm.input_messages.1.message.contents.1.message_content.type": "image",
    "llm.input_messages.1.message.contents.1.message_content.image.image.url": "https://example.com/p.png",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
    "llm.tools.0.tool.json_schema": '{"type": "function", "function": {"name": "get_weather"}}',
    "llm.invocation_parameters": '{"temperature": 0, "stop": ["END"]}',
    "llm.token_count.prompt": 40,
    "llm.token_count.completion": 7,
    "llm.token_count.total": 47,
}


def otlp_doc() -> dict[str, Any]:
    llm2 = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "weather in Paris?",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "call_1",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.tool_call_id": "call_1",
        "llm.input_messages.2.message.content": "timeout",
        "llm.token_count.prompt": 60,
    }
    spans = [
        span("00000000000000a1", "", "agent", 0, 100, {"openinference.span.kind": "CHAIN", "input.value": "hi"}),
        # a tie with its parent: the parent first
        span("00000000000000b1", "00000000000000a1", "ChatCompletion", 0, 10, LLM1),
        span("00000000000000b2", "00000000000000b1", "ChatCompletion.inner", 1, 9, LLM1),  # repeats its parent
        span(
            "00000000000000c1",
            "00000000000000a1",
            "get_weather",
            11,
            20,
            {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Paris"}'},
            status={"code": 2, "message": "upstream timed out"},
            events=[
                {
                    "name": "exception",
                    "attributes": [kv("exception.type", "TimeoutError"), kv("exception.message", "x")],
                }
            ],
        ),
        span("00000000000000d1", "00000000000000a1", "retrieve", 21, 22, {"openinference.span.kind": "RETRIEVER"}),
        span(
            "00000000000000e1",
            "00000000000000a1",
            "ChatCompletion",
            30,
            40,
            llm2,
            status={"code": "STATUS_CODE_ERROR", "message": "rate limited"},
        ),
    ]
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [kv("service.name", "demo")]},
                "scopeSpans": [{"scope": {"name": "openinference.instrumentation.openai"}, "spans": spans[::-1]}],
            }
        ]
    }


def test_otlp_with_openinference_attributes(tmp_path: Path) -> None:
    p = tmp_path / "trace.json"
    p.write_text(json.dumps(otlp_doc()))
    assert detect(p) == "openinference"
    run = only_run(p)
    rec = run.recording
    assert run.run_id == "5b8efff798038103d269b633813fc60c"
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]
    m1, t, m2 = rec.records
    assert m1.meta["span"]["name"] == "ChatCompletion" and m1.meta["nested_repeats"] == 1
    assert m1.meta["path"] == ["agent"] and "agent" not in m1.meta  # a CHAIN, not an AGENT
    assert [m.role for m in m1.request.messages] == ["system", "user"]
    assert m1.request.messages[1].content == [
        {"type": "text", "text": "weather in Paris?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/p.png"}},
    ]
    assert m1.request.tools == [{"type": "function", "function": {"name": "get_weather"}}]
    assert m1.request.options == {"temperature": 0} and m1.request.stop == ["END"]
    assert (m1.response.usage.input_tokens, m1.response.usage.output_tokens) == (40, 7)
    (call,) = m1.response.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", {"city": "Paris"})
    assert (t.tool, t.tool_call_id, t.arguments) == ("get_weather", "call_1", {"city": "Paris"})
    assert (t.result.error.type, t.result.error.message) == ("TimeoutError", "upstream timed out")
    assert m2.error is not None and m2.error.message == "rate limited" and m2.response is None
    assert m2.request.messages[2].tool_call_id == "call_1"
    assert [s["kind"] for s in rec.metadata["spans"]] == ["CHAIN", "RETRIEVER"]
    assert any("1 RETRIEVER span(s) not mapped" in w.message for w in run.warnings)
    assert rec.session.created_at == "2023-11-14T22:13:20Z"


def test_otlp_with_both_conventions_goes_to_otel_unless_named(tmp_path: Path) -> None:
    doc = otlp_doc()
    sp = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    sp[-1]["attributes"] += [kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-4o-mini")]
    p = tmp_path / "both.json"
    p.write_text(json.dumps(doc))
    assert detect(p) == "otel"
    assert len(models(only_run(p, "openinference").recording)) == 2


def test_span_list_forms_ids_and_iso_times(tmp_path: Path) -> None:
    """A bare array of spans with hex ids and ISO times (Phoenix's span JSON shape, its
    attributes nested as objects)."""
    spans = [
        {
            "name": "tool",
            "context": {"trace_id": "abc", "span_id": "2"},
            "parent_id": "1",
            "span_kind": "TOOL",
            "start_time": "2025-01-01T00:00:02+00:00",
            "end_time": "2025-01-01T00:00:03+00:00",
            "status_code": "OK",
            "attributes": {"tool": {"name": "lookup"}, "input": {"value": '{"q": 1}'}, "output": {"value": "one"}},
        },
        {
            "name": "llm",
            "context": {"trace_id": "abc", "span_id": "1"},
            "parent_id": None,
            "start_time": "2025-01-01T00:00:00+00:00",
            "end_time": "2025-01-01T00:00:01+00:00",
            "attributes": {
                "openinference": {"span": {"kind": "LLM"}},
                "llm": {"model_name": "m", "token_count": {"prompt": 3, "completion": 2}},
                "input": {"value": "hello"},
                "output": {
                    "value": '{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "lookup", "arguments": "{\\"q\\": 1}"}}]}'
                },
            },
        },
    ]
    p = tmp_path / "spans.json"
    p.write_text(json.dumps(spans))
    assert detect(p) == "openinference"
    rec = only_run(p).recording
    m, t = rec.records
    assert m.request.messages[0].content == "hello" and m.at == "2025-01-01T00:00:00Z"
    assert (t.tool, t.arguments, t.result.content, t.tool_call_id) == ("lookup", {"q": 1}, "one", "c")


def test_shared_span_helpers() -> None:
    assert id_text(332664600250007774184390537644517853432, 32) == format(
        332664600250007774184390537644517853432, "032x"
    )
    assert id_text({"$bigint": "1169954857428287220"}) == format(1169954857428287220, "016x")
    assert id_text("5B8E") == "5b8e" and id_text(None) is None and id_text("") is None
    assert to_nanos("1747703769230551000") == 1747703769230551000
    assert to_nanos("1970-01-01T00:00:01Z") == 1_000_000_000
    assert to_nanos("nope") is None and to_nanos(True) is None
    items = [("c", 5, "b"), ("x", 5, None), ("b", 5, "a"), ("a", 5, None), ("z", 1, "c")]
    got = tree_order(items, lambda i: i[1], lambda i: i[0], lambda i: i[2])
    assert [i[0] for i in got] == ["z", "a", "b", "c", "x"]
    cyc = [("a", 0, "b"), ("b", 0, "a")]
    assert len(tree_order(cyc, lambda i: i[1], lambda i: i[0], lambda i: i[2])) == 2


# -- damage ------------------------------------------------------------------------------


def test_not_spans_and_no_calls_are_format_errors(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"openinference.span.kind": "LLM", "something": []}))
    with pytest.raises(FormatError, match="not OpenInference spans") as ei:
        import_file(p, "openinference")
    assert ei.value.path == "/spans"
    doc = source(OPENAI)
    doc["spans"] = [s for s in doc["spans"] if s["attributes"].get("openinference.span.kind") not in ("LLM", "TOOL")]
    p.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="no OpenInference LLM or TOOL span"):
        import_file(p)


def test_a_cut_span_list_recovers_the_complete_spans(tmp_path: Path) -> None:
    data = OPENAI.read_bytes()
    p = tmp_path / "cut.json"
    p.write_bytes(data[: data.index(b'"name": "write_file"')])
    with pytest.raises(TruncatedSourceError, match="truncated|ends early"):
        import_file(p)
    (run,) = import_file(p, recover=True)
    assert run.incomplete and run.recording.metadata["source"]["incomplete"] is True
    # the spans before the cut: CHAIN, LLM, TOOL, LLM; the second call's write_file is lost
    assert [r.kind for r in run.recording.records] == ["model", "tool", "model", "tool"]
    lost = run.recording.records[-1]
    assert lost.tool == "write_file" and lost.result.content is None
    assert any("has no recorded result" in w.message for w in run.warnings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.sampled_from([SMOL, OPENAI]),
    cut=st.floats(0.0, 1.0),
    flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), max_size=4),
    via=st.sampled_from([None, "openinference"]),
)
def test_truncation_and_corruption_raise_only_format_errors(tmp_path: Path, which, cut, flips, via) -> None:
    data = bytearray(which.read_bytes())
    data = data[: max(1, int(len(data) * cut))] if cut < 0.98 else data
    for pos, byte in flips:
        if data:
            data[min(len(data) - 1, int(pos * len(data)))] = byte
    p = tmp_path / "damaged.json"
    p.write_bytes(bytes(data))
    try:
        import_file(p, via)
    except FormatError:
        pass
    except SourceImportError:  # detection only: damage so early no format is recognised
        assert via is None
    try:  # the importer itself, without import_file's net for unexpected shapes
        IMP.load(p)
    except FormatError:
        pass


# -- CLI ---------------------------------------------------------------------------------


def test_cli_import_validate_and_info(tmp_path: Path, capsys) -> None:
    out = tmp_path / "smol.json"
    assert main(["import", str(SMOL), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert "model 3, tool 3" in cap.out
    assert "nested LLM span(s) repeat" in cap.err
    assert main(["validate", str(out)]) == 0
    capsys.readouterr()
    assert main(["info", str(out)]) == 0
    assert "gpt-4.1-mini" in capsys.readouterr().out
    assert main(["info", str(OPENAI)]) == 0
    assert "converted from openinference" in capsys.readouterr().err


# -- review fixes --------------------------------------------------------------------------


def rs(sid: int, kind: str | None, attrs: dict[str, Any], parent: int | None = None, **more: Any) -> dict[str, Any]:
    """A span in the ReadableSpan JSON form any-agent dumps."""
    return {
        "name": more.pop("name", f"span{sid}"),
        "context": {"trace_id": more.pop("trace", 1), "span_id": sid},
        "parent": {"span_id": parent},
        "start_time": 1_700_000_000_000_000_000 + sid,
        "end_time": 1_700_000_000_000_000_010 + sid,
        "status": {"status_code": "OK"},
        "attributes": {"openinference.span.kind": kind, **attrs} if kind else attrs,
        **more,
    }


CHAT = {
    "llm.model_name": "m",
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "hi",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "yo",
    "llm.token_count.prompt": 3,
    "llm.token_count.completion": 1,
}


def write(tmp_path: Path, doc: Any, name: str = "spans.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_an_image_part_whose_image_is_not_an_object_is_no_crash(tmp_path: Path) -> None:
    attrs = {
        **CHAT,
        "llm.input_messages.0.message.contents.0.message_content.type": "image",
        "llm.input_messages.0.message.contents.0.message_content.image.image": "not an object",
    }
    (run,) = IMP.load(write(tmp_path, {"spans": [rs(1, "LLM", attrs)]}))
    (m,) = models(run.recording)
    assert m.request.messages[0].content == [{"type": "image_url", "image_url": {"url": None}}]


def test_llm_spans_whose_parents_form_a_cycle_keep_one_model_call(tmp_path: Path) -> None:
    (run,) = IMP.load(write(tmp_path, {"spans": [rs(1, "LLM", CHAT, parent=2), rs(2, "LLM", CHAT, parent=1)]}))
    assert len(models(run.recording)) == 1


def test_big_integers_are_warned_except_in_ids_and_times(tmp_path: Path) -> None:
    attrs = {**CHAT, "llm.token_count.prompt": 2**60}
    spans = [
        rs(2**62, "LLM", attrs, trace=2**100),
        rs(2, "TOOL", {"tool.name": "t", "output.value": 2**64}, trace=2**100),
    ]
    (run,) = IMP.load(write(tmp_path, {"spans": spans}))
    big = sorted(w.place for w in run.warnings if w.code == "big-integer")
    assert big == ["/spans/0/attributes/llm.token_count.prompt", "/spans/1/attributes/output.value"]
    assert run.run_id == format(2**100, "032x")


def test_stop_sequences_and_odd_invocation_parameters_are_kept_or_warned(tmp_path: Path) -> None:
    spans = [
        rs(1, "LLM", {**CHAT, "llm.invocation_parameters": '{"stop": 5, "stop_sequences": ["END"]}'}),
        rs(2, "LLM", {**CHAT, "llm.invocation_parameters": "[1, 2]"}),
    ]
    run = only_run(write(tmp_path, {"spans": spans}))
    m1, m2 = models(run.recording)
    assert (m1.request.stop, m1.request.options) == (["END"], {"stop": 5})
    assert any(
        w.place == "spans[1].llm.invocation_parameters" and "not a JSON object; not mapped" in w.message
        for w in run.warnings
    )


def test_an_attribute_that_is_both_a_value_and_a_prefix_keeps_the_value(tmp_path: Path) -> None:
    base = {"llm.model_name": "m", "llm.input_messages.0.message.role": "user"}
    key, deeper = "llm.input_messages.0.message.content", "llm.input_messages.0.message.content.x"
    one = rs(1, "LLM", {**base, key: "b", deeper: "a"})
    two = rs(2, "LLM", {**base, deeper: "a", key: "b"}, trace=2)
    runs = import_file(write(tmp_path, {"spans": [one, two]}))
    assert [models(r.recording)[0].request.messages[0].content for r in runs] == ["b", "b"]


def test_names_with_invalid_unicode_are_text_not_python_reprs(tmp_path: Path) -> None:
    text = (
        '{"spans": [{"name": "\\ud800", "context": {"trace_id": 1, "span_id": 1}, "attributes": '
        '{"openinference.span.kind": "TOOL", "tool.name": "\\ud800", "output.value": "x"}}]}'
    )
    p = tmp_path / "s.json"
    p.write_text(text)
    (run,) = IMP.load(p)
    (t,) = tools(run.recording)
    assert t.tool == "\ufffd" and t.meta["span"]["name"] == "\ufffd"


def test_spans_that_make_no_run_are_warned(tmp_path: Path) -> None:
    spans = [rs(1, "LLM", CHAT), 5, rs(2, "CHAIN", {}, trace=9)]
    (run,) = IMP.load(write(tmp_path, {"spans": spans}))
    ws = [str(w) for w in run.warnings]
    assert "spans[1]: span is int, not an object; skipped" in ws
    assert f"trace {format(9, '032x')}: 1 span(s), none of kind LLM or TOOL; no run (skipped)" in ws


def test_otlp_bytes_values_become_text_and_export(tmp_path: Path) -> None:
    """An OTLP bytesValue is read as the text it holds (base64 as written when not UTF-8),
    never as Python bytes that no JSON writer takes."""
    tool = span(
        "00000000000000c1",
        "",
        "t",
        0,
        5,
        {"openinference.span.kind": "TOOL", "tool.name": "t"},
    )
    tool["attributes"] += [
        {"key": "input.value", "value": {"bytesValue": "eyJhIjogMX0="}},  # {"a": 1}
        {"key": "output.value", "value": {"bytesValue": "//79"}},  # not UTF-8
    ]
    p = write(tmp_path, {"resourceSpans": [{"scopeSpans": [{"spans": [tool]}]}]}, "bytes.json")
    (t,) = tools(only_run(p).recording)
    assert (t.arguments, t.result.content) == ({"a": 1}, "//79")
    for to in ("atif", "otlp"):
        out = tmp_path / f"out.{to}.json"
        assert main(["export", str(p), "--to", to, "-o", str(out)]) == 0
        assert json.loads(out.read_text())


def test_cli_otlp_export_writes_what_export_otlp_writes(tmp_path: Path) -> None:
    from core.importers.otel import export_otlp

    out = tmp_path / "smol.otlp.json"
    assert main(["export", str(SMOL), "--to", "otlp", "-o", str(out)]) == 0
    assert out.read_bytes() == export_otlp(only_run(SMOL).recording)


SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def test_hostile_content_imports_redacted_and_saves(tmp_path: Path) -> None:
    from core.record.io import save_recording

    mark = "[red]x[/] \x1b]0;pwn\x07"
    llm = {
        **CHAT,
        "llm.model_name": mark,
        "llm.input_messages.0.message.content": f"key={SECRET} {mark}",
        "llm.output_messages.0.message.content": "A" * 5_000_000,
        "llm.invocation_parameters": json.dumps({"api_key": SECRET, "seed": 2**64}),
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": mark,
    }
    tool = {"tool.name": mark, "input.value": json.dumps({"cmd": f"echo {AWS_KEY}"}), "output.value": SECRET}
    doc = {
        "spans": [
            rs(1, "LLM", llm, name=mark),
            rs(2, "TOOL", tool),
            rs(3, "AGENT", {"input.value": SECRET, "password": "hunter2hunter2"}),
            rs(4, "TOOL", {"tool.name": "t", "input.value": "[" * 3000 + "]" * 3000}),
        ],
        "final_output": f"done {SECRET}",
    }
    p = write(tmp_path, doc)
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps({"spans": [rs(1, "LLM", {**CHAT, "llm.token_count.prompt": 1.5})]}).replace("1.5", "NaN"))
    for src in (p, nan):
        (run,) = IMP.load(src)
        out = tmp_path / "rec.json"
        save_recording(run.recording, out)
        data = out.read_bytes()
        assert SECRET.encode() not in data and AWS_KEY.encode() not in data and b"hunter2hunter2" not in data
        load_recording(out, verify_keys=True)
    deep = write(tmp_path, {"spans": [rs(1, "TOOL", {"tool.name": "t", "x": json.loads("[" * 900 + "]" * 900)})]})
    deep.write_text(deep.read_text().replace("[" * 900, "[" * 5000).replace("]" * 900, "]" * 5000))
    with pytest.raises(FormatError, match="nested more than"):
        IMP.load(deep)


def test_a_nan_after_many_decimal_ids_is_still_warned(tmp_path: Path) -> None:
    """The real file's decimal ids and times fill the parser's list of non-standard values;
    a NaN in its last span is warned all the same."""
    doc = source(SMOL)
    doc["spans"][-1]["attributes"]["llm.token_count.prompt"] = 0.5
    p = tmp_path / "nan.json"
    p.write_text(json.dumps(doc).replace('"llm.token_count.prompt": 0.5', '"llm.token_count.prompt": NaN'))
    (run,) = import_file(p)
    [nan] = [w for w in run.warnings if "NaN" in w.message]
    assert nan.place == f"/spans/{len(doc['spans']) - 1}/attributes/llm.token_count.prompt"
    assert not any("more non-standard" in w.message for w in run.warnings)
