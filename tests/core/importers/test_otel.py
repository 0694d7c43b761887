"""OpenTelemetry GenAI: import of hand-written OTLP files (written from the published
semantic conventions and examples), export of any recording, and export → import
preserving every call; plus the ``export`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.errors import FormatError
from core.importers.otel import OtelImporter, export_otlp, recording_to_otlp
from core.importers.vcr import VcrImporter
from core.record.jsonvalues import decode_value, load_json_lenient
from core.record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from inspector.cli import main
from tests.builders import ROOT, TESTS

HERE = TESTS / "data"
OTEL = HERE / "otel"
CASSETTES = sorted((HERE / "real_traces" / "vcr_cassettes").glob("*.yaml"))
IMP = OtelImporter()


def runs(path: Path):
    return IMP.load(path)


def attr(span, key):
    for kv in span["attributes"]:
        if kv["key"] == key:
            v = kv["value"]
            return next(iter(v.values()))
    return None


# ------------------------------------------------------------------ import of semconv files


def test_semconv_tool_call_example():
    [run] = runs(OTEL / "semconv-tool-calls.json")
    rec = run.recording
    assert run.run_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert [r.kind for r in rec.records] == ["model", "tool", "tool", "model"]
    m1, weather, forecast, m2 = rec.records
    assert m1.model == "gpt-4" and m1.request.messages[0].role == "system"
    assert m1.request.messages[0].content == "You are a weather bot."
    assert m1.request.options == {"max_tokens": 200, "top_p": 1.0}
    assert m1.request.tools[0]["name"] == "get_weather"
    [tc] = m1.response.message.tool_calls
    assert (tc.id, tc.name, tc.arguments) == ("call_VSPygqKTWdrhaFErNvMV18Yl", "get_weather", {"location": "Paris"})
    assert m1.response.finish_reason == "tool_call"
    assert (m1.response.usage.input_tokens, m1.response.usage.output_tokens) == (47, 17)
    assert m1.at == "2025-05-13T00:10:00.010000Z" and m1.duration_seconds == pytest.approx(0.89)
    assert (weather.tool, weather.arguments, weather.tool_call_id) == (
        "get_weather",
        {"location": "Paris"},
        "call_VSPygqKTWdrhaFErNvMV18Yl",
    )
    assert weather.result.content == "rainy, 57°F" and weather.key is not None
    assert forecast.result.error == ErrorInfo(type="TimeoutError", message="forecast service unavailable")
    assert forecast.key is None  # arguments not recorded → no key, never dropped
    assert rec.first_error() is forecast
    assert m2.request.messages[-1].role == "tool" and m2.request.messages[-1].content == "rainy, 57°F"
    assert m2.request.messages[-1].tool_call_id == "call_VSPygqKTWdrhaFErNvMV18Yl"
    thinking, text = m2.response.message.content
    assert thinking == {"type": "thinking", "thinking": "The tool said rainy and 57°F; report that."}
    assert m2.response.message.text == "The weather in Paris is currently rainy with a temperature of 57°F."
    msgs = [w.message for w in run.warnings]
    assert any("no gen_ai.tool.call.arguments" in m for m in msgs)
    assert any("non-GenAI" in m for m in msgs)
    assert rec.metadata["source"]["format"] == "otel"
    Recording.loads(rec.dumps())


def test_legacy_per_message_events_and_recovered_tool():
    [run] = runs(OTEL / "semconv-legacy-events.json")
    rec = run.recording
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]
    m1, t, m2 = rec.records
    assert [m.role for m in m1.request.messages] == ["system", "user"]
    assert m1.response.message.tool_calls[0].arguments == {"a": 6, "b": 7}
    assert (m1.response.usage.input_tokens, m1.response.usage.output_tokens) == (30, 12)
    assert m1.request.options == {"temperature": 0.2}
    assert (t.tool, t.arguments, t.tool_call_id, t.result.content) == ("multiply", {"a": 6, "b": 7}, "call_mul", "42")
    assert m2.response.message.content == "6 times 7 is 42." and m2.response.finish_reason == "stop"
    assert any("recovered" in w.message for w in run.warnings)
    Recording.loads(rec.dumps())


def test_collector_json_lines_two_traces_and_nan_double():
    a, b = runs(OTEL / "semconv-collector.jsonl")
    assert (a.run_id, b.run_id) == ("a" * 32, "b" * 32)
    assert a.recording.records[0].response.message.content == "first answer"
    assert b.recording.records[0].request.options["temperature"] == {"$nonfinite": "NaN"}
    assert any("non-standard number" in w.message for w in b.warnings)
    assert a.recording.records[0].key != b.recording.records[0].key
    Recording.loads(b.recording.dumps())


def test_sniff():
    for f in OTEL.iterdir():
        assert IMP.sniff(f, f.read_bytes()[:65536]) is None
    assert "resourceSpans" in IMP.sniff(CASSETTES[0].with_suffix(".json"), b'{"interactions": []}')
    assert IMP.sniff(Path("x.yaml"), b"resourceSpans") is not None


def test_damaged_files_are_format_errors(tmp_path):
    text = (OTEL / "semconv-tool-calls.json").read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(FormatError) as exc:
        IMP.load(cut)
    assert "cut.json" in str(exc.value) and "truncated" in str(exc.value)
    lines = (OTEL / "semconv-collector.jsonl").read_text().splitlines()
    cutl = tmp_path / "cut.jsonl"
    cutl.write_text(lines[0] + "\n" + lines[1][:50])
    with pytest.raises(FormatError, match="truncated JSON Lines"):
        IMP.load(cutl)
    empty = tmp_path / "empty.json"
    empty.write_text('{"resourceSpans": []}')
    with pytest.raises(FormatError, match="no spans"):
        IMP.load(empty)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(FormatError, match="no 'resourceSpans'"):
        IMP.load(other)


# ------------------------------------------------------------------ export


def _roundtrip(rec: Recording, tmp_path: Path) -> Recording:
    out = tmp_path / "otlp.json"
    out.write_bytes(export_otlp(rec))
    [run] = IMP.load(out)
    return run.recording


@pytest.mark.parametrize("path", CASSETTES, ids=lambda p: p.name[:40])
def test_export_then_import_preserves_every_call(path, tmp_path):
    [src] = VcrImporter().load(path)
    rec = src.recording
    back = _roundtrip(rec, tmp_path)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    assert back.session == rec.session
    assert back.metadata["exported_from"] == rec.metadata["source"]
    assert back.metadata["http"] == rec.metadata["http"]


def test_export_is_semconv_shaped_and_deterministic():
    [src] = VcrImporter().load(next(p for p in CASSETTES if "error_events" in p.name))
    rec = src.recording
    doc = recording_to_otlp(rec)
    assert export_otlp(rec) == export_otlp(rec)
    [rs] = doc["resourceSpans"]
    assert attr({"attributes": rs["resource"]["attributes"]}, "service.name") == "chassis-inspector"
    root, chat1, tool, chat2 = rs["scopeSpans"][0]["spans"]
    assert len(root["traceId"]) == 32 and len(root["spanId"]) == 16
    assert all(s["traceId"] == root["traceId"] for s in (chat1, tool, chat2))
    assert all(s["parentSpanId"] == root["spanId"] for s in (chat1, tool, chat2))
    assert attr(root, "gen_ai.operation.name") == "invoke_agent"
    assert chat1["name"] == "chat gpt-4o-mini" and chat1["kind"] == 3
    assert attr(chat1, "gen_ai.operation.name") == "chat"
    assert attr(chat1, "gen_ai.provider.name") == "openai"
    assert attr(chat1, "gen_ai.request.model") == "gpt-4o-mini"
    inp = json.loads(attr(chat1, "gen_ai.input.messages"))
    assert [m["role"] for m in inp] == ["system", "user"]
    assert all(p["type"] == "text" and isinstance(p["content"], str) for m in inp for p in m["parts"])
    out = json.loads(attr(chat1, "gen_ai.output.messages"))
    assert out[0]["parts"] == [
        {"type": "tool_call", "id": "call_bbGKwTTphWFeN5VF9Is3Albc", "name": "error_tool", "arguments": {}}
    ]
    assert out[0]["finish_reason"] == "tool_calls"
    assert attr(chat1, "gen_ai.usage.input_tokens") == "103"
    assert tool["name"] == "execute_tool error_tool"
    assert attr(tool, "gen_ai.tool.call.id") == "call_bbGKwTTphWFeN5VF9Is3Albc"
    assert json.loads(attr(tool, "gen_ai.tool.call.arguments")) == {}
    assert json.loads(attr(tool, "gen_ai.tool.call.result")) == "Error executing tool: Simulated tool error"
    assert tool["status"]["code"] == 2 and attr(tool, "error.type") == "tool_error"
    inp2 = json.loads(attr(chat2, "gen_ai.input.messages"))
    assert inp2[-1] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_bbGKwTTphWFeN5VF9Is3Albc",
                "response": "Error executing tool: Simulated tool error",
            }
        ],
        "name": "error_tool",
    }
    assert int(chat2["startTimeUnixNano"]) >= int(chat1["endTimeUnixNano"])


@pytest.mark.parametrize("path", CASSETTES, ids=lambda p: p.name[:40])
def test_standard_attributes_alone_preserve_every_call(path, tmp_path):
    """Strip every chassis.* attribute (what a third-party backend might drop): each
    model and tool call still comes back with its arguments and results."""
    [src] = VcrImporter().load(path)
    rec = src.recording
    doc = recording_to_otlp(rec)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                s["attributes"] = [kv for kv in s["attributes"] if not kv["key"].startswith("chassis.")]
    out = tmp_path / "plain.json"
    out.write_bytes(orjson.dumps(doc))
    [run] = IMP.load(out)
    back = run.recording
    assert [r.kind for r in back.records] == [r.kind for r in rec.records]
    for a, b in zip(rec.records, back.records):
        if isinstance(a, ToolRecord):
            assert (b.tool, b.arguments, b.tool_call_id, b.result.content) == (
                a.tool,
                a.arguments,
                a.tool_call_id,
                a.result.content,
            )
            assert (b.result.error is None) == (a.result.error is None)
        else:
            assert b.model == a.model
            assert [(m.role, m.text, m.tool_calls, m.tool_call_id) for m in b.request.messages] == [
                (m.role, m.text, m.tool_calls, m.tool_call_id) for m in a.request.messages
            ]
            assert b.response.message.text == a.response.message.text
            assert b.response.message.tool_calls == a.response.message.tool_calls
            assert b.response.finish_reason == a.response.finish_reason
            assert b.response.usage == a.response.usage


def test_export_round_trip_of_odd_values(tmp_path):
    nan = {"$nonfinite": "NaN"}
    bad = {"$invalid_unicode": "x\ufffdy", "surrogates": [[1, 0xD800]]}
    raw = '{"a": 1'
    records = [
        ModelRecord(
            seq=0,
            model="local-model",
            at="2025-01-01T00:00:00.123456+02:00",
            request=ModelRequest(
                messages=[
                    ChatMessage(role="user", content=[{"type": "text", "text": "hi"}]),
                    ChatMessage(role="developer", content="be brief", name="ops"),
                ],
                stop=["b", "a"],
                options={"temperature": nan, "seed": 3},
            ),
            response=ModelResponse(
                message=ChatMessage(
                    role="assistant", tool_calls=[ToolCall(id="", name="f", arguments=raw, raw_arguments=True)]
                ),
                finish_reason="tool_calls",
                usage=Usage(input_tokens=1, output_tokens=2),
            ),
            duration_seconds=0.3333333,
        ),
        ToolRecord(
            seq=1,
            tool="f",
            arguments=raw,
            tool_call_id=None,
            result=ToolResult(
                content=bad, artifact={"score": nan}, error=ErrorInfo(type="ValueError", message="bad"), redacted=True
            ),
        ),
        InterruptRecord(seq=2, value={"question": "continue?"}),
        ModelRecord(seq=3, model="local-model", error=ErrorInfo(type="timeout", message="no answer")),
    ]
    rec = Recording(metadata={"outcome": "failed"}, records=records)
    for r in rec.records:
        if r.kind in ("tool", "model"):
            r.key = r.compute_key()
    back = _roundtrip(rec, tmp_path)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    assert back.metadata["outcome"] == "failed"


# ------------------------------------------------------------------ integers beyond ±(2**53-1)


def _otlp_with_big_integers(tmp_path: Path) -> Path:
    """The semconv tool-call example with 2**60 in a tool call's arguments (a JSON
    number), 2**70 as max_tokens and 2**60 output tokens (OTLP intValue strings)."""
    doc = json.loads((OTEL / "semconv-tool-calls.json").read_text())
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for kv in span["attributes"]:
            if kv["key"] == "gen_ai.tool.call.arguments" and span["name"] == "execute_tool get_weather":
                kv["value"] = {"stringValue": '{"location": "Paris", "id": 1152921504606846976}'}
            elif kv["key"] == "gen_ai.request.max_tokens":
                kv["value"] = {"intValue": str(2**70)}
            elif kv["key"] == "gen_ai.usage.output_tokens":
                kv["value"] = {"intValue": str(2**60)}
    p = tmp_path / "big.otlp.json"
    p.write_text(json.dumps(doc))
    return p


def test_big_integers_import_tagged_keyless_and_the_recording_saves(tmp_path):
    [run] = runs(_otlp_with_big_integers(tmp_path))
    rec = run.recording
    m1, weather, _forecast, m2 = rec.records
    assert weather.arguments == {"location": "Paris", "id": {"$bigint": "1152921504606846976"}}
    assert decode_value(weather.arguments)["id"] == 2**60
    assert m1.request.options["max_tokens"] == {"$bigint": str(2**70)}
    # identities that held such an integer get no key (replay cannot match them)
    assert weather.key is None and m1.key is None and m2.key is None
    assert m1.response.usage is None  # a token count beyond 2**53 is not a count
    msgs = [w.message for w in run.warnings]
    assert sum("$bigint" in m for m in msgs) >= 3
    assert any("token usage" in m and "dropped" in m for m in msgs)
    out = tmp_path / "rec.json"
    rec.save(out)
    back = Recording.load(out, verify_keys=True)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    assert decode_value(back.records[0].request.options)["max_tokens"] == 2**70
    # and an OTLP export of it imports back unchanged (the tags travel as JSON)
    again = _roundtrip(back, tmp_path)
    assert [r.to_json_obj() for r in again.records] == [r.to_json_obj() for r in back.records]


def test_cli_import_of_otlp_holding_big_integers_end_to_end(tmp_path):
    src = _otlp_with_big_integers(tmp_path)
    out = tmp_path / "out.json"
    root = ROOT
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", "import", str(src), "-o", str(out)],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "$bigint" in proc.stderr
    back = Recording.load(out, verify_keys=True)
    weather = back.records[1]
    assert weather.key is None and decode_value(weather.arguments) == {"location": "Paris", "id": 2**60}
    assert str(2**60) in out.read_text()  # the exact digits, not a rounded float
    assert back.metadata["source"]["format"] == "otel"
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", "validate", str(out)], capture_output=True, text=True, cwd=root, check=False
    )
    assert proc.returncode == 0, proc.stderr


# ------------------------------------------------------------------ CLI


def test_cli_export_writes_otlp_that_imports_back(tmp_path, capsys):
    cassette = next(p for p in CASSETTES if "parallel" in p.name)
    out = tmp_path / "out.json"
    assert main(["export", str(cassette), "--to", "otlp", "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "wrote" in stdout and "7 spans" in stdout and "2 model calls, 4 tool calls" in stdout
    [run] = IMP.load(out)
    assert [r.kind for r in run.recording.records] == ["model"] + ["tool"] * 4 + ["model"]


def test_cli_export_native_recording_json_summary_and_stdout(tmp_path, capsys):
    [src] = VcrImporter().load(CASSETTES[0])
    native = tmp_path / "rec.json"
    src.recording.save(native)
    out = tmp_path / "o.json"
    assert main(["export", str(native), "-o", str(out), "--json", "--compact"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"output": str(out), "format": "otlp", "traces": 1, "spans": 4, "model_spans": 2, "tool_spans": 1}
    assert main(["export", str(native)]) == 0
    doc, _ = load_json_lenient(capsys.readouterr().out.encode())
    assert "resourceSpans" in doc


@pytest.mark.parametrize(
    "args,expect",
    [
        (["--to", "parquet"], "unknown export format 'parquet'"),
        (["-o", "{dir}"], "is a directory"),
    ],
)
def test_cli_export_errors_are_one_line_exit_2(tmp_path, capsys, args, expect):
    args = [a.replace("{dir}", str(tmp_path)) for a in args]
    assert main(["export", str(CASSETTES[0]), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert expect in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_cli_export_missing_file(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nope.json"), "-o", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "Traceback" not in err


def _doc(spans):
    return {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]
    }


def _span(attrs, name="chat m", start=1_000_000_000, end=2_000_000_000, **extra):
    from core.importers.otel import _any

    return {
        "traceId": "c" * 32,
        "spanId": "d" * 16,
        "name": name,
        "kind": 3,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": _any(v)} for k, v in attrs.items()],
        **extra,
    }


def test_structured_message_attributes(tmp_path):
    """gen_ai.input/output.messages as structured AnyValues (kvlist/array), not JSON text."""
    p = tmp_path / "structured.json"
    p.write_text(
        json.dumps(
            _doc(
                [
                    _span(
                        {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.request.model": "m",
                            "gen_ai.input.messages": [
                                {"role": "user", "parts": [{"type": "text", "content": "hello"}]}
                            ],
                            "gen_ai.output.messages": [
                                {
                                    "role": "assistant",
                                    "finish_reason": "stop",
                                    "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": {"x": 1}}],
                                }
                            ],
                        }
                    )
                ]
            )
        )
    )
    [run] = IMP.load(p)
    m = run.recording.records[0]
    assert m.request.messages[0].content == "hello"
    assert [(c.id, c.name, c.arguments) for c in m.response.message.tool_calls] == [("c1", "f", {"x": 1})]
    assert m.response.finish_reason == "stop" and m.duration_seconds == 1.0


def test_indexed_prompt_and_completion_attributes(tmp_path):
    p = tmp_path / "indexed.json"
    p.write_text(
        json.dumps(
            _doc(
                [
                    _span(
                        {
                            "gen_ai.system": "openai",
                            "gen_ai.request.model": "gpt-4o",
                            "gen_ai.prompt.0.role": "system",
                            "gen_ai.prompt.0.content": "be terse",
                            "gen_ai.prompt.1.role": "user",
                            "gen_ai.prompt.1.content": "sum 2 and 3",
                            "gen_ai.completion.0.role": "assistant",
                            "gen_ai.completion.0.finish_reason": "tool_calls",
                            "gen_ai.completion.0.tool_calls.0.id": "call_1",
                            "gen_ai.completion.0.tool_calls.0.name": "add",
                            "gen_ai.completion.0.tool_calls.0.arguments": '{"a": 2, "b": 3}',
                            "gen_ai.usage.prompt_tokens": 12,
                            "gen_ai.usage.completion_tokens": 7,
                        }
                    )
                ]
            )
        )
    )
    [run] = IMP.load(p)
    m = run.recording.records[0]
    assert [(x.role, x.content) for x in m.request.messages] == [("system", "be terse"), ("user", "sum 2 and 3")]
    assert m.response.message.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert m.response.finish_reason == "tool_calls" and m.response.usage == Usage(input_tokens=12, output_tokens=7)


def test_invalid_unicode_in_otlp_attributes(tmp_path):
    """A lone surrogate escaped inside the attribute's JSON text, and one written
    unescaped in the OTLP document itself: both load, tagged, with a warning."""
    inner = '[{"role": "user", "parts": [{"type": "text", "content": "a\\ud800b"}]}]'  # escape inside the JSON text
    result = '"out \\udfff"'
    doc = _doc(
        [
            _span(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.input.messages": inner,
                    "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]',
                }
            ),
            _span(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "cat",
                    "gen_ai.tool.call.arguments": "{}",
                    "gen_ai.tool.call.result": result,
                },
                name="execute_tool cat",
                start=3_000_000_000,
                end=3_000_000_000,
            ),
        ]
    )
    # json.dumps escapes again, so the document holds "\\ud800" (two levels); the third
    # span's JSON text carries the surrogate itself, escaped once by the document only
    raw_inner = '[{"role": "user", "parts": [{"type": "text", "content": "x\ud83dy"}]}]'
    third = _span(
        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.input.messages": raw_inner},
        start=4_000_000_000,
        end=4_000_000_001,
    )
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(third)
    text = json.dumps(doc)
    p = tmp_path / "surrogates.json"
    p.write_text(text)
    [run] = IMP.load(p)
    m1, t, m3 = run.recording.records
    part = m1.request.messages[0].content
    assert part == [
        {"type": "text", "text": "a\ufffdb", "encoded": {"$invalid_unicode": "a\ufffdb", "surrogates": [[1, 0xD800]]}}
    ]
    assert m1.request.messages[0].text == "a\ufffdb"
    assert t.result.content == {"$invalid_unicode": "out \ufffd", "surrogates": [[4, 0xDFFF]]}
    assert m3.request.messages[0].text == "x\ufffdy"
    assert any("invalid unicode" in w.message for w in run.warnings)
    back = Recording.loads(run.recording.dumps())
    assert back.records[1].result.content == t.result.content


SAMPLES = sorted((ROOT / "sample_recordings").glob("*.json"))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_every_sample_recording_survives_export_and_import(sample, tmp_path):
    """Export of *any* recording (every format family's sample) imports back exactly."""
    rec = Recording.load(sample)
    back = _roundtrip(rec, tmp_path)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    assert back.session == rec.session
