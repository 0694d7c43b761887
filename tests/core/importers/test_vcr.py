"""vcrpy cassette importer: the five real cassettes (facts from SOURCES.md) and every
importer robustness case (truncated or malformed input) that a cassette can carry."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest
import yaml

from core.errors import FormatError
from core.importers.vcr import VcrImporter, parse_sse
from core.record.jsonvalues import decode_value, display_text, invalid_unicode_bytes, is_tagged
from core.record.recording import ModelRecord, Recording, ToolRecord
from tests.builders import ROOT, TESTS

DATA = TESTS / "data" / "real_traces" / "vcr_cassettes"
ERROR_TOOL = DATA / "crewai__test_tools_emits_error_events.yaml"
ANTHROPIC_TOOL = DATA / "crewai__TestAnthropicNativeToolCalling.test_anthropic_agent_with_native_tool_calling.yaml"
PARALLEL = DATA / "pydantic-ai__test_anthropic__test_multiple_parallel_tool_calls.yaml"
MIXED = DATA / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.yaml"
THINKING = DATA / "pydantic-ai__test_anthropic__test_anthropic_model_thinking_part_stream.yaml"
ALL = [ERROR_TOOL, ANTHROPIC_TOOL, PARALLEL, MIXED, THINKING]

IMP = VcrImporter()


def load(path: Path):
    [run] = IMP.load(path)
    return run.recording, run.warnings


def models(rec: Recording) -> list[ModelRecord]:
    return [r for r in rec.records if isinstance(r, ModelRecord)]


def tools(rec: Recording) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


# ------------------------------------------------------------------ real cassettes


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name[:40])
def test_real_cassette_imports_validates_and_round_trips(path, tmp_path):
    assert IMP.sniff(path, path.read_bytes()[:65536]) is None
    rec, _ = load(path)
    # validates fully (keys recomputed, digest) and survives save/load unchanged
    out = tmp_path / "rec.json"
    rec.save(out)
    back = Recording.load(out)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    assert all(r.key is not None for r in rec.records)
    src = rec.metadata["source"]
    assert src["format"] == "vcr" and src["file"] == path.name and len(src["sha256"]) == 64
    assert [r.seq for r in rec.records] == list(range(len(rec.records)))


@pytest.mark.parametrize(
    "path,n_model,n_tool",
    [(ERROR_TOOL, 2, 1), (ANTHROPIC_TOOL, 2, 1), (PARALLEL, 2, 4), (MIXED, 4, 2), (THINKING, 1, 0)],
    ids=lambda v: v.name[:30] if isinstance(v, Path) else str(v),
)
def test_counts_match_sources(path, n_model, n_tool):
    rec, _ = load(path)
    assert len(models(rec)) == n_model
    assert len(tools(rec)) == n_tool


def test_tool_that_always_errors():
    rec, warnings = load(ERROR_TOOL)
    [t] = tools(rec)
    assert t.tool == "error_tool" and t.arguments == {}
    assert t.tool_call_id == "call_bbGKwTTphWFeN5VF9Is3Albc"
    assert t.result.content == "Error executing tool: Simulated tool error"
    assert t.result.error is not None and "Simulated tool error" in t.result.error.message
    assert rec.first_error() is t
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]
    m1, m2 = models(rec)
    assert m1.model == "gpt-4o-mini" and m1.response.finish_reason == "tool_calls"
    assert m1.response.message.tool_calls[0].id == t.tool_call_id
    assert m2.request.messages[-1].role == "tool"
    assert m2.response.message.content == "Error executing tool: Simulated tool error"
    assert m1.response.usage.input_tokens == 103 and m1.response.usage.output_tokens == 10
    assert any("inferred" in w.message for w in warnings)
    # secret headers: placeholders upstream, redacted by name here
    h = rec.metadata["http"][0]["request_headers"]
    assert h["authorization"] == "[REDACTED:authorization]"  # markers name the kind removed
    assert rec.metadata["http"][0]["response_headers"]["set-cookie"] == "[REDACTED:cookie]"
    assert rec.metadata["http"][1]["request_headers"]["cookie"] == "[REDACTED:cookie]"


def test_anthropic_native_tool_call():
    rec, _ = load(ANTHROPIC_TOOL)
    m1, m2 = models(rec)
    [t] = tools(rec)
    assert m1.model == "claude-3-5-haiku-20241022"
    assert m1.request.messages[0].role == "system"
    assert m1.request.stop == ["\nObservation:"]
    assert m1.response.message.content == "I'll help you calculate 15 * 8 using the calculator tool."
    assert m1.response.finish_reason == "tool_use"
    assert (t.tool, t.arguments, t.tool_call_id) == (
        "calculator",
        {"expression": "15 * 8"},
        "toolu_012QnA8xTpf27BLo6rkdvpoe",
    )
    assert t.result.content == "The result of 15 * 8 is 120" and t.result.error is None
    assert m2.response.message.content == "120" and m2.response.finish_reason == "end_turn"
    assert rec.metadata["http"][0]["request_headers"]["x-api-key"] == "[REDACTED:api-key]"
    assert rec.records[0].at == "2026-01-22T20:40:57Z"
    assert rec.records[0].duration_seconds == pytest.approx(1.6)


def test_four_parallel_tool_calls_paired_in_order():
    rec, warnings = load(PARALLEL)
    assert [r.kind for r in rec.records] == ["model", "tool", "tool", "tool", "tool", "model"]
    calls = models(rec)[0].response.message.tool_calls
    assert [c.arguments["name"] for c in calls] == ["Alice", "Bob", "Charlie", "Daisy"]
    ts = tools(rec)
    assert [t.tool_call_id for t in ts] == [c.id for c in calls]
    assert [t.arguments for t in ts] == [c.arguments for c in calls]
    assert [t.result.content for t in ts] == [
        "alice is bob's wife",
        "bob is alice's husband",
        "charlie is alice's son",
        "daisy is bob's daughter and charlie's younger sister",
    ]
    assert all(t.result.error is None for t in ts)  # is_error: false
    assert not [w for w in warnings if "paired by" in w.message]  # all by id
    assert "Daisy is the youngest" in models(rec)[1].response.message.text


def test_two_providers_in_one_cassette():
    rec, warnings = load(MIXED)
    assert rec.metadata["providers"] == ["gemini", "openai"]
    ms = models(rec)
    assert [m.model for m in ms] == ["gemini-2.0-flash-exp"] * 2 + ["gpt-4o-mini"] * 2
    gem_call = ms[0].response.message.tool_calls[0]
    oai_call = ms[2].response.message.tool_calls[0]
    # Gemini's call has no id; pydantic-ai gives it one in the OpenAI history: recorded under that id everywhere
    rewritten = "pyd_ai_504f8147f83f44f3a5f14d87bfd01bda"
    assert gem_call.id == rewritten and gem_call.name == "get_capital" and gem_call.arguments == {"country": "France"}
    assert oai_call.id == "call_SkEQ3ZGSJC8m6AvaIGNuuKdm" and oai_call.arguments == {"country": "England"}
    france, england = tools(rec)
    assert france.tool_call_id == rewritten and france.result.content == {"return_value": "Paris"}
    assert [m.tool_call_id for m in ms[1].request.messages if m.role == "tool"] == [rewritten]
    assert any("has no id; recorded as" in w.message and "a later request" in w.message for w in warnings)
    assert england.tool_call_id == "call_SkEQ3ZGSJC8m6AvaIGNuuKdm" and england.result.content == "London"
    # the France call reappears in the OpenAI history under a rewritten id: not imported twice
    assert [r.kind for r in rec.records] == ["model", "tool", "model", "model", "tool", "model"]
    assert ms[3].request.messages[2].tool_call_id == "pyd_ai_504f8147f83f44f3a5f14d87bfd01bda"
    assert any("no id" in w.message and "paired by" in w.message for w in warnings)
    assert ms[1].response.message.content == "The capital of France is Paris.\n"
    assert ms[3].response.message.content == "The capital of England is London."
    assert rec.metadata["http"][3]["request_headers"]["cookie"] == "[REDACTED:cookie]"


def test_streamed_thinking_reassembled_separate_from_text():
    rec, warnings = load(THINKING)
    [m] = rec.records
    assert m.model == "claude-sonnet-4-0"
    assert m.request.options["stream"] is True
    assert m.request.options["thinking"] == {"budget_tokens": 1024, "type": "enabled"}
    content = m.response.message.content
    assert [p["type"] for p in content] == ["thinking", "text"]
    thinking, text = content
    assert thinking["thinking"].startswith("This is a straightforward question about pedestrian safety.")
    assert thinking["signature"].startswith("EvMCCkYICxgCKkCHP2cSuEdc")
    assert text["text"].startswith("Here are the basic steps for safely crossing the street:")
    assert text["text"].endswith("Always prioritize safety over speed when crossing streets.")
    assert "pedestrian safety" not in text["text"]
    assert m.response.message.text == text["text"]  # the answer alone
    assert m.response.finish_reason == "end_turn"
    assert (m.response.usage.input_tokens, m.response.usage.output_tokens) == (43, 282)
    assert rec.metadata["http"][0]["stream"] is True
    assert rec.metadata["http"][0]["stream_events"] == 118
    assert not warnings  # nothing was lost


# ------------------------------------------------------------------ synthetic cassettes


def _inter(uri, req_body, resp_body, *, status=200, req_headers=None, resp_headers=None):
    return {
        "request": {
            "method": "POST",
            "uri": uri,
            "body": req_body,
            "headers": req_headers or {"content-type": ["application/json"]},
        },
        "response": {
            "status": {"code": status, "message": "OK"},
            "headers": resp_headers or {"Content-Type": ["application/json"]},
            "body": {"string": resp_body},
        },
    }


OPENAI = "https://api.openai.com/v1/chat/completions"


def _oai_resp(message, finish="stop"):
    return json.dumps(
        {
            "id": "chatcmpl-x",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3},
        }
    )


def _write(tmp_path, interactions, name="c.yaml"):
    p = tmp_path / name
    doc = {"interactions": interactions, "version": 1}
    p.write_text(yaml.safe_dump(doc, allow_unicode=False) if name.endswith(".yaml") else json.dumps(doc))
    return p


def _call(id_, name, args):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}


def _two_step(tmp_path, call, tool_msg, history_call=None, name="c.yaml", tool_content_raw=None):
    """Call 1 answers with ``call``; call 2's request carries ``tool_msg``."""
    user = {"role": "user", "content": "go"}
    r1 = json.dumps({"model": "gpt-4o-mini", "messages": [user]})
    r2_obj = {
        "model": "gpt-4o-mini",
        "messages": [user, {"role": "assistant", "content": None, "tool_calls": [history_call or call]}, tool_msg],
    }
    r2 = json.dumps(r2_obj)
    if tool_content_raw is not None:
        r2 = r2.replace('"@CONTENT@"', tool_content_raw)
    return _write(
        tmp_path,
        [
            _inter(OPENAI, r1, _oai_resp({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")),
            _inter(OPENAI, r2, _oai_resp({"role": "assistant", "content": "done"})),
        ],
        name,
    )


def test_json_cassette_format(tmp_path):
    p = _two_step(
        tmp_path, _call("c1", "f", '{"a": 1}'), {"role": "tool", "tool_call_id": "c1", "content": "ok"}, name="c.json"
    )
    rec, _ = load(p)
    [t] = tools(rec)
    assert (t.tool, t.arguments, t.tool_call_id, t.result.content) == ("f", {"a": 1}, "c1", "ok")


def test_nan_and_infinity_literals_in_bodies(tmp_path):
    p = _two_step(
        tmp_path,
        _call("c1", "f", '{"threshold": NaN, "cap": Infinity}'),
        {"role": "tool", "tool_call_id": "c1", "content": "@CONTENT@"},
        tool_content_raw="-Infinity",
    )
    rec, warnings = load(p)
    [t] = tools(rec)
    assert t.arguments == {"threshold": {"$nonfinite": "NaN"}, "cap": {"$nonfinite": "Infinity"}}
    assert t.result.content == {"$nonfinite": "-Infinity"}
    assert t.key is not None
    assert sum("non-standard number" in w.message for w in warnings) >= 3
    back = Recording.loads(rec.dumps())
    assert back.records[1].arguments == t.arguments  # NaN survived: not null
    assert display_text(back.records[1].arguments["threshold"]) == "NaN"
    # NaN vs NaN: importing again gives equal records and keys (no difference)
    rec2, _ = load(p)
    assert [r.to_json_obj() for r in rec2.records] == [r.to_json_obj() for r in rec.records]


def test_undecodable_body_is_an_explicit_warning_not_empty(tmp_path):
    inter = _inter(OPENAI, json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}), "")
    inter["response"]["body"]["string"] = b"\x89PNG\r\n\x1a\n\x00\xff\xfe garbage"
    inter["response"]["headers"] = {"Content-Type": ["image/png"]}
    rec, warnings = load(_write(tmp_path, [inter]))
    [m] = rec.records
    assert m.response is None
    assert m.error is not None and m.error.type == "undecodable_body"
    assert m.error.message  # never an empty string
    [w] = [w for w in warnings if "could not be decoded" in w.message]
    assert w.place == "interactions[0].response.body" and "image/png" in w.message
    Recording.loads(rec.dumps())


def test_gzip_body_is_decompressed(tmp_path):
    inter = _inter(OPENAI, json.dumps({"model": "m", "messages": []}), "")
    inter["response"]["body"]["string"] = gzip.compress(_oai_resp({"role": "assistant", "content": "zipped"}).encode())
    rec, _ = load(_write(tmp_path, [inter]))
    assert rec.records[0].response.message.content == "zipped"


@pytest.mark.parametrize(
    "raw,what",
    [('"just a string"', "string literal"), ('{"a": 1', "not valid JSON"), ("", "empty string"), ("[1, 2]", "list")],
)
def test_non_object_tool_arguments_kept_raw(tmp_path, raw, what):
    p = _two_step(tmp_path, _call("c1", "f", raw), {"role": "tool", "tool_call_id": "c1", "content": "ok"})
    rec, warnings = load(p)
    tc = models(rec)[0].response.message.tool_calls[0]
    assert tc.raw_arguments is True and tc.arguments == raw
    [t] = tools(rec)
    assert t.arguments == raw and t.tool_call_id == "c1"
    assert any(what in w.message and "kept raw" in w.message for w in warnings)
    back = Recording.loads(rec.dumps())
    assert back.records[0].response.message.tool_calls[0].raw_arguments is True


def test_empty_tool_call_ids_still_paired(tmp_path):
    p = _two_step(tmp_path, _call("", "lookup", '{"q": "x"}'), {"role": "tool", "tool_call_id": "", "content": "found"})
    rec, warnings = load(p)
    [t] = tools(rec)
    # no id on either side: the call gets one ("~1") in its response, its record and the next request
    assert (t.tool, t.arguments, t.result.content, t.tool_call_id) == ("lookup", {"q": "x"}, "found", "~1")
    m0, m1 = models(rec)
    assert m0.response.message.tool_calls[0].id == "~1"
    assert [m.tool_call_id for m in m1.request.messages if m.role == "tool"] == ["~1"]
    assert any("paired by" in w.message for w in warnings)


def test_rewritten_tool_call_ids_still_paired(tmp_path):
    p = _two_step(
        tmp_path,
        _call("call_A", "lookup", '{"q": "x"}'),
        {"role": "tool", "tool_call_id": "call_B", "content": "found"},
        history_call=_call("call_B", "lookup", '{"q": "x"}'),
    )
    rec, warnings = load(p)
    [t] = tools(rec)
    assert t.tool_call_id == "call_A" and t.result.content == "found"
    assert any("rewritten" in w.message for w in warnings)


def test_lone_surrogate_in_tool_output(tmp_path):
    p = _two_step(
        tmp_path,
        _call("c1", "cat", "{}"),
        {"role": "tool", "tool_call_id": "c1", "content": "@CONTENT@"},
        tool_content_raw='"bad \\ud83d here"',
    )
    rec, warnings = load(p)
    [t] = tools(rec)
    assert is_tagged(t.result.content)
    assert display_text(t.result.content) == "bad \ufffd here"
    assert decode_value(t.result.content) == "bad \ud83d here"
    assert any("invalid unicode" in w.message for w in warnings)
    back = Recording.loads(rec.dumps())
    assert back.records[1].result.content == t.result.content
    # the same text in the next request's messages is displayable too
    tool_msg = models(rec)[1].request.messages[-1]
    assert tool_msg.content[0]["text"] == "bad \ufffd here" and tool_msg.text == "bad \ufffd here"


def test_non_utf8_bytes_in_tool_output(tmp_path):
    p = _two_step(tmp_path, _call("c1", "cat", "{}"), {"role": "tool", "tool_call_id": "c1", "content": "@CONTENT@"})
    doc = yaml.safe_load(p.read_text())
    body = doc["interactions"][1]["request"]["body"].encode().replace(b'"@CONTENT@"', b'"caf\xe9 \xff"')
    doc["interactions"][1]["request"]["body"] = body  # bytes: written as !!binary like vcrpy does
    p.write_text(yaml.safe_dump(doc))
    rec, warnings = load(p)
    [t] = tools(rec)
    assert t.result.content == {"$invalid_unicode": "caf\ufffd \ufffd", "bytes": [[3, 0xE9], [5, 0xFF]]}
    assert invalid_unicode_bytes(t.result.content) == b"caf\xe9 \xff"
    assert any("not UTF-8" in w.message for w in warnings)
    assert Recording.loads(rec.dumps()).records[1].result.content == t.result.content


def test_uncanonicalizable_identity_kept_without_key(tmp_path):
    p = _two_step(
        tmp_path,
        _call("c1", "f", '{"id": 1152921504606846976}'),
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    )
    rec, warnings = load(p)
    [t] = tools(rec)
    # 2**60 has no RFC 8785 form: kept exactly as a tag, and the call has no key
    assert t.key is None and t.arguments == {"id": {"$bigint": "1152921504606846976"}}
    assert decode_value(t.arguments) == {"id": 2**60}
    assert display_text(t.arguments) == '{"id":1152921504606846976}'
    assert any("without a canonical key" in w.message and "replay cannot match" in w.message for w in warnings)
    assert any("$bigint" in w.message for w in warnings)
    assert len(rec.records) == 3  # never dropped
    m1, m2 = models(rec)
    assert m1.key is not None  # its request does not hold the integer
    assert m2.key is None  # its request history carries the call's arguments
    # the recording saves (its digest is canonical JSON), loads back and keeps 2**60
    out = tmp_path / "big.json"
    rec.save(out)
    back = Recording.load(out, verify_keys=True)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in rec.records]
    [bt] = tools(back)
    assert bt.key is None and decode_value(bt.arguments)["id"] == 2**60
    assert decode_value(models(back)[1].request.messages[1].tool_calls[0].arguments) == {"id": 2**60}


def test_big_integer_beyond_64_bits_in_a_tool_result_is_exact(tmp_path):
    big = 2**70  # orjson alone would read it as a float
    p = _two_step(
        tmp_path,
        _call("c1", "f", '{"a": 1}'),
        {"role": "tool", "tool_call_id": "c1", "content": "@CONTENT@"},
        tool_content_raw=str(big),
    )
    rec, warnings = load(p)
    [t] = tools(rec)
    m1, m2 = models(rec)
    assert t.key is not None  # its arguments hold no big integer
    assert t.result.content == {"$bigint": str(big)} and decode_value(t.result.content) == big
    assert m2.request.messages[-1].content == [{"type": "json", "json": {"$bigint": str(big)}}]
    assert m2.key is None and m1.key is not None
    assert any("$bigint" in w.message for w in warnings)
    out = tmp_path / "r.json"
    rec.save(out)
    back = Recording.load(out, verify_keys=True)
    assert decode_value(models(back)[1].request.messages[-1].content) == [{"type": "json", "json": big}]


def test_cli_import_of_a_cassette_holding_a_big_integer(tmp_path):
    from inspector.cli import main

    big = 2**60
    p = _two_step(
        tmp_path, _call("c1", "f", f'{{"id": {big}}}'), {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    )
    out = tmp_path / "out.json"
    assert main(["import", str(p), "-o", str(out), "--from", "vcr"]) == 0
    back = Recording.load(out, verify_keys=True)
    [t] = tools(back)
    assert t.key is None and decode_value(t.arguments) == {"id": big}
    assert main(["validate", str(out)]) == 0


def test_openai_stream_with_tool_call_fragments(tmp_path):
    chunks = [
        {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]},
        {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {"content": "check."}}]},
        {
            "id": "c",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        },
        {
            "id": "c",
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"loc'}}]}}],
        },
        {
            "id": "c",
            "model": "gpt-4o",
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'ation": "Paris"}'}}]}}
            ],
        },
        {"id": "c", "model": "gpt-4o", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "c", "model": "gpt-4o", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    inter = _inter(
        OPENAI,
        json.dumps({"model": "gpt-4o", "stream": True, "messages": [{"role": "user", "content": "weather?"}]}),
        body,
        resp_headers={"content-type": ["text/event-stream"]},
    )
    rec, _ = load(_write(tmp_path, [inter]))
    [m] = rec.records
    msg = m.response.message
    assert msg.content == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [("call_1", "get_weather", {"location": "Paris"})]
    assert m.response.finish_reason == "tool_calls" and m.response.usage.output_tokens == 4


def test_anthropic_stream_tool_use_fragments(tmp_path):
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg",
                    "model": "claude",
                    "role": "assistant",
                    "content": [],
                    "usage": {"input_tokens": 7, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"expr'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": 'ession": "2+2"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    body = "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events)
    inter = _inter(
        "https://api.anthropic.com/v1/messages",
        json.dumps(
            {"model": "claude", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "2+2"}]}
        ),
        body,
    )
    rec, _ = load(_write(tmp_path, [inter]))
    m = rec.records[0]
    assert [(c.id, c.name, c.arguments) for c in m.response.message.tool_calls] == [
        ("toolu_1", "calc", {"expression": "2+2"})
    ]
    assert m.response.finish_reason == "tool_use" and m.response.usage.output_tokens == 20


def test_gemini_stream_with_thought_parts(tmp_path):
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Thinking about", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": " it.", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Answer: "}]}}]},
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "42"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "thoughtsTokenCount": 5},
            "modelVersion": "gemini-2.5-pro",
        },
    ]
    body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=AIzaSyDUMMYDUMMYDUMMY"
    rec, _ = load(
        _write(tmp_path, [_inter(uri, json.dumps({"contents": [{"role": "user", "parts": [{"text": "q"}]}]}), body)])
    )
    m = rec.records[0]
    assert m.model == "gemini-2.5-pro"
    assert m.response.message.content == [
        {"type": "thinking", "thinking": "Thinking about it."},
        {"type": "text", "text": "Answer: 42"},
    ]
    assert m.response.usage.output_tokens == 7
    assert "AIzaSy" not in rec.metadata["http"][0]["uri"]  # API key in the query string redacted


def test_secret_values_redacted_in_bodies_and_tool_results(tmp_path):
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"
    p = _two_step(
        tmp_path,
        _call("c1", "env", "{}"),
        {"role": "tool", "tool_call_id": "c1", "content": f"OPENAI_API_KEY={secret}"},
    )
    doc = yaml.safe_load(p.read_text())
    doc["interactions"][0]["request"]["headers"]["Authorization"] = [f"Bearer {secret}"]
    p.write_text(yaml.safe_dump(doc))
    rec, warnings = load(p)
    data = rec.dumps()
    assert secret.encode() not in data
    [t] = tools(rec)
    assert t.result.redacted is True and "[REDACTED:openai-key]" in t.result.content
    assert rec.metadata["http"][0]["request_headers"]["Authorization"] == "[REDACTED:authorization]"
    assert any("redacted" in w.message for w in warnings)
    assert Recording.loads(data).records[1].key == t.key


def test_http_error_status_is_a_model_error(tmp_path):
    body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    inter = _inter(
        "https://api.anthropic.com/v1/messages",
        json.dumps({"model": "claude", "max_tokens": 5, "messages": []}),
        body,
        status=529,
    )
    rec, _ = load(_write(tmp_path, [inter]))
    m = rec.records[0]
    assert m.response is None and m.error.type == "http_529:overloaded_error" and m.error.message == "Overloaded"


def test_unrelated_interactions_skipped_with_warning(tmp_path):
    inter = {
        "request": {"method": "GET", "uri": "https://example.com/health", "body": None, "headers": {}},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "ok"}},
    }
    p = _two_step(tmp_path, _call("c1", "f", "{}"), {"role": "tool", "tool_call_id": "c1", "content": "ok"})
    doc = yaml.safe_load(p.read_text())
    doc["interactions"].insert(0, inter)
    p.write_text(yaml.safe_dump(doc))
    rec, warnings = load(p)
    assert len(rec.records) == 3
    assert any(w.place == "interactions[0]" and "skipped" in w.message for w in warnings)


def test_unanswered_tool_call_is_warned(tmp_path):
    inter = _inter(
        OPENAI,
        json.dumps({"model": "m", "messages": []}),
        _oai_resp({"role": "assistant", "tool_calls": [_call("c9", "f", "{}")]}, "tool_calls"),
    )
    rec, warnings = load(_write(tmp_path, [inter]))
    assert len(rec.records) == 1
    assert any("no result in any later request" in w.message for w in warnings)


def test_truncated_yaml_is_a_format_error_naming_the_file(tmp_path):
    text = ERROR_TOOL.read_text()
    p = tmp_path / "cut.yaml"
    p.write_text(text[: text.index("Simulated tool") + 5])  # cut inside a quoted body
    with pytest.raises(FormatError) as exc:
        IMP.load(p)
    assert "cut.yaml" in str(exc.value) and "truncated" in str(exc.value)


def test_not_a_cassette(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("hello: world\n")
    assert IMP.sniff(p, p.read_bytes()) is not None
    with pytest.raises(FormatError, match="no 'interactions' list"):
        IMP.load(p)
    q = tmp_path / "x.txt"
    q.write_text("interactions: []")
    assert "not a .yaml" in IMP.sniff(q, q.read_bytes())


def test_parse_sse_follows_the_event_stream_rules():
    text = ": comment\nevent: a\ndata: 1\ndata: 2\n\ndata:3\r\n\r\nevent: b\ndata: {}\n"
    assert parse_sse(text) == [("a", "1\n2"), ("message", "3"), ("b", "{}")]


def test_cassette_bodies_are_not_mutated_by_orjson_dump(tmp_path):
    # the imported recording is strict JSON (orjson can write every value)
    for path in ALL:
        rec, _ = load(path)
        orjson.loads(rec.dumps())


SAMPLES = ROOT / "sample_recordings"


@pytest.mark.parametrize(
    "sample,cassette",
    [
        ("vcr-crewai-tool-error.json", ERROR_TOOL),
        ("vcr-anthropic-parallel-tools.json", PARALLEL),
        ("vcr-anthropic-thinking-stream.json", THINKING),
        ("vcr-gemini-openai-mixed.json", MIXED),
    ],
)
def test_sample_recordings_match_a_fresh_import(sample, cassette):
    saved = Recording.load(SAMPLES / sample)
    rec, _ = load(cassette)
    assert [r.to_json_obj() for r in saved.records] == [r.to_json_obj() for r in rec.records]


def test_old_vcrpy_python_tags_are_read_safely(tmp_path):
    p = tmp_path / "old.yaml"
    p.write_text(
        "interactions:\n"
        "- request:\n"
        '    body: !!python/unicode \'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}\'\n'
        "    headers: {}\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
        "  response:\n"
        '    body: {string: !!python/unicode \'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}\'}\n'
        "    headers: {}\n    status: {code: 200, message: OK}\n"
        "version: 1\n"
    )
    rec, warnings = load(p)
    assert rec.records[0].response.message.content == "hello" and not warnings
