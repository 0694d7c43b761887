"""Codex CLI rollouts (``--from codex``, core/importers/codex.py): the real rollout of
SOURCES.md #20 and the malformed sample of #21, detection against every other real
trace, the model-call rule, damaged input, and the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError, SourceImportError
from core.importers import IMPORTERS, detect, import_file, select_run
from core.importers._source import read_head
from core.importers.codex import CodexImporter
from core.record.io import load_recording
from core.record.recording import InterruptRecord, ModelRecord, ToolRecord
from inspector.cli import main
from tests.builders import ROOT

REAL = ROOT / "tests" / "data" / "real_traces"
ROLLOUT = REAL / "codex" / "codemie_gpt55_rollout.jsonl"
MALFORMED = REAL / "codex" / "daaain_malformed_rollout.jsonl"
SAMPLE = ROOT / "sample_recordings" / "codex-gpt55-context-setting.json"

OUTPUT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "web_search_call", "local_shell_call"}


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


SRC = lines_of(ROLLOUT)
ITEMS = [ln["payload"] for ln in SRC if ln["type"] == "response_item"]
EVENTS = [ln["payload"] for ln in SRC if ln["type"] == "event_msg"]


def expected_model_calls(lines: list[dict[str, Any]]) -> int:
    """The stated rule: one model call = the model's output items between two
    consecutive inputs (a user/developer/system message or a tool output)."""
    calls, open_ = 0, False
    for ln in lines:
        if ln["type"] != "response_item":
            continue
        p = ln["payload"]
        is_output = p["type"] in OUTPUT_ITEMS or (p["type"] == "message" and p["role"] == "assistant")
        if is_output and not open_:
            calls += 1
        open_ = is_output
    return calls


@pytest.fixture(scope="module")
def run():
    (r,) = import_file(ROLLOUT)
    return r


def models(rec) -> list[ModelRecord]:
    return [r for r in rec.records if isinstance(r, ModelRecord)]


def tools(rec) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


# -- detection ------------------------------------------------------------------------


def test_codex_files_are_detected_and_no_other_real_trace_is() -> None:
    assert detect(ROLLOUT) == "codex"
    assert detect(MALFORMED) == "codex"
    codex = CodexImporter()
    others = [p for p in REAL.rglob("*") if p.is_file() and p.parent.name != "codex" and p.name != "README.md"]
    assert others
    for p in others:
        assert codex.sniff(p, read_head(p)) is not None, p
    for p in (ROLLOUT, MALFORMED):
        for imp in IMPORTERS:
            if imp.name != "codex":
                assert imp.sniff(p, read_head(p)) is not None, (imp.name, p)


def test_sniff_refuses_other_jsonl_with_a_reason(tmp_path: Path) -> None:
    claude = tmp_path / "session.jsonl"
    claude.write_text(
        json.dumps({"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
        + "\n"
    )
    reason = CodexImporter().sniff(claude, claude.read_bytes())
    assert reason is not None and "'user'" in reason
    with pytest.raises(FormatError, match="not a Codex rollout") as ei:
        import_file(claude, "codex")
    assert str(claude) in str(ei.value)
    # a session_meta longer than the head (long base instructions) is still recognised
    assert CodexImporter().sniff(ROLLOUT, ROLLOUT.read_bytes()[:200]) is None
    assert CodexImporter().sniff(claude, b'[{"type": "session_meta"}]') is not None


# -- the real rollout (SOURCES.md #20) ------------------------------------------------


def test_tool_counts_by_name(run) -> None:
    got = Counter(t.tool for t in tools(run.recording))
    from_file = Counter(p["name"] for p in ITEMS if p["type"] in ("function_call", "custom_tool_call"))
    from_file["web_search"] = sum(p["type"] == "web_search_call" for p in ITEMS)
    assert got == from_file
    assert got == {"write_stdin": 54, "exec_command": 43, "update_plan": 2, "apply_patch": 3, "web_search": 3}


def test_every_call_is_paired_with_its_output(run) -> None:
    rec = run.recording
    asked: dict[str, int] = {}
    for r in rec.records:
        if isinstance(r, ModelRecord):
            for tc in r.response.message.tool_calls or []:
                asked[tc.id] = r.seq
    answered = [t for t in tools(rec)]
    assert sorted(t.tool_call_id for t in answered) == sorted(asked)
    for t in answered:
        assert asked[t.tool_call_id] < t.seq  # the model call comes before its tool call
    outputs = {
        p["call_id"]: p["output"] for p in ITEMS if p["type"] in ("function_call_output", "custom_tool_call_output")
    }
    calls = {p["call_id"] for p in ITEMS if p["type"] in ("function_call", "custom_tool_call")}
    assert calls == set(outputs)
    for t in answered:
        if t.tool == "web_search":
            assert t.result.content is None
        else:
            assert t.tool_call_id in outputs
    searches = {e["call_id"] for e in EVENTS if e["type"] == "web_search_end"}
    assert {t.tool_call_id for t in answered if t.tool == "web_search"} == searches
    assert not any("no recorded result" in w.message for w in run.warnings)


def test_exit_codes_become_errors_on_the_call_they_name(run) -> None:
    ends = {e["call_id"]: e["exit_code"] for e in EVENTS if e["type"] == "exec_command_end"}
    assert Counter(ends.values()) == {0: 39, 1: 3, 2: 1}
    errors = {t.tool_call_id: t.result.error.type for t in tools(run.recording) if t.result.error}
    assert errors == {cid: f"exit_code_{c}" for cid, c in ends.items() if c != 0}
    assert Counter(errors.values()) == {"exit_code_1": 3, "exit_code_2": 1}
    by_id = {t.tool_call_id: t for t in tools(run.recording)}
    for cid, code in ends.items():
        assert by_id[cid].tool == "exec_command"
        assert by_id[cid].meta["exec"]["exit_code"] == code


def test_model_user_turns_and_last_message(run) -> None:
    rec = run.recording
    assert {m.model for m in models(rec)} == {"gpt-5.5"}
    assert rec.metadata["model"] == "gpt-5.5"
    turns = [r.value["message"] for r in rec.records if isinstance(r, InterruptRecord)]
    assert turns == ["show tools", "let's update the defailt context compart to 90 in env var"]
    assert turns == [e["message"] for e in EVENTS if e["type"] == "user_message"]
    last = models(rec)[-1].response.message.text
    assert last.startswith("Implemented the default context compaction setting as `threshold: 0.9`")
    assert rec.metadata["codex"]["cli_version"] == "0.125.0"
    assert rec.metadata["codex"]["originator"] == "codex-tui"
    assert rec.metadata["codex"]["turn_context"]["approval_policy"] == "on-request"
    assert run.run_id == SRC[0]["payload"]["id"] == rec.metadata["source"]["run"]


def test_model_calls_follow_the_stated_rule(run) -> None:
    n = expected_model_calls(SRC)
    assert len(models(run.recording)) == n == 66
    assert n == sum(e["type"] == "token_count" for e in EVENTS)
    # each request is the history: it grows, and starts with the base instructions
    ms = models(run.recording)
    assert ms[0].request.messages[0].role == "system"
    assert ms[0].request.messages[0].content == SRC[0]["payload"]["base_instructions"]["text"]
    assert all(len(a.request.messages) < len(b.request.messages) for a, b in zip(ms, ms[1:]))


def test_token_sums_match_the_token_count_events(run) -> None:
    counts = [e["info"] for e in EVENTS if e["type"] == "token_count" and e.get("info")]
    last_in = sum(c["last_token_usage"]["input_tokens"] for c in counts)
    last_out = sum(c["last_token_usage"]["output_tokens"] for c in counts)
    total = counts[-1]["total_token_usage"]
    assert (last_in, last_out) == (total["input_tokens"], total["output_tokens"])
    ms = models(run.recording)
    assert sum(m.response.usage.input_tokens for m in ms) == last_in
    assert sum(m.response.usage.output_tokens for m in ms) == last_out
    totals = run.recording.metadata["usage_totals"]
    assert (totals["input_tokens"], totals["output_tokens"]) == (last_in, last_out)


def test_reasoning_is_thinking_with_encrypted_content_kept(run) -> None:
    parts = [
        p
        for m in models(run.recording)
        if isinstance(m.response.message.content, list)
        for p in m.response.message.content
        if p.get("type") == "thinking"
    ]
    encrypted = [p["encrypted_content"] for p in ITEMS if p["type"] == "reasoning"]
    assert [p["signature"] for p in parts] == encrypted and len(parts) == 25


def test_apply_patch_input_is_kept_raw(run) -> None:
    patches = [t for t in tools(run.recording) if t.tool == "apply_patch"]
    inputs = [p["input"] for p in ITEMS if p["type"] == "custom_tool_call"]
    assert [t.arguments for t in patches] == inputs
    calls = [
        tc for m in models(run.recording) for tc in m.response.message.tool_calls or [] if tc.name == "apply_patch"
    ]
    assert all(tc.raw_arguments for tc in calls)
    assert all(t.meta["patch"]["success"] is True and not t.result.error for t in patches)


def test_web_search_arguments_are_the_action(run) -> None:
    searches = [t for t in tools(run.recording) if t.tool == "web_search"]
    assert [t.arguments for t in searches] == [p["action"] for p in ITEMS if p["type"] == "web_search_call"]


def test_round_trips_through_save_and_load(run, tmp_path: Path) -> None:
    out = tmp_path / "codex.json"
    run.recording.save(out)
    back = load_recording(out, verify_keys=True)
    assert len(back.records) == len(run.recording.records) == 66 + 105 + 2


# -- the malformed sample (SOURCES.md #21) --------------------------------------------


def test_malformed_line_is_one_warning_and_lines_1_2_are_kept() -> None:
    (r,) = import_file(MALFORMED)
    assert [(w.place, w.code) for w in r.warnings] == [("line 3", "skipped")]
    assert "not a JSON line" in r.warnings[0].message
    meta = r.recording.metadata
    assert meta["codex"] == {
        "id": "66666666-6666-4666-8666-666666666666",
        "cwd": "/workspace/synthetic-project",
        "cli_version": "0.0.0-test",
    }
    (rec,) = r.recording.records
    assert isinstance(rec, InterruptRecord)
    assert rec.value == {"type": "user_message", "message": "Safe line before malformed input."}
    assert r.run_id == "66666666-6666-4666-8666-666666666666"


# -- damaged and odd input ------------------------------------------------------------


def test_no_readable_line_is_a_format_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_text("{not json\n{also not\n")
    with pytest.raises(FormatError, match="no line could be read") as ei:
        import_file(bad, "codex")
    assert str(bad) in str(ei.value) and "line 1" in str(ei.value)
    empty = tmp_path / "rollout-empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(FormatError, match="no JSON lines"):
        import_file(empty, "codex")


def _line(kind: str, payload: dict[str, Any], ts: str = "2026-01-01T00:00:00.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "rollout-x.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_synthetic_rollout_maps_changes_failures_and_unknown_types(tmp_path: Path) -> None:
    ctx = {"turn_id": "t1", "model": "m1", "approval_policy": "never", "sandbox_policy": {"type": "read-only"}}
    p = _write(
        tmp_path,
        [
            _line("session_meta", {"id": "s1", "cwd": "/w", "cli_version": "9"}),
            _line("turn_context", ctx),
            _line(
                "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
            ),
            _line("event_msg", {"type": "user_message", "message": "go"}),
            _line(
                "response_item",
                {"type": "function_call", "name": "shell", "arguments": '{"command": ["false"]}', "call_id": "c1"},
            ),
            _line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"input_tokens": 10, "output_tokens": 2},
                        "last_token_usage": {"input_tokens": 10, "output_tokens": 2},
                    },
                },
            ),
            _line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {  # a repeat: same totals
                        "total_token_usage": {"input_tokens": 10, "output_tokens": 2},
                        "last_token_usage": {"input_tokens": 10, "output_tokens": 2},
                    },
                },
            ),
            _line("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 1, "command": ["false"]}),
            _line(
                "response_item",
                {"type": "function_call_output", "call_id": "c1", "output": {"content": "failed", "success": False}},
            ),
            _line("turn_context", {**ctx, "turn_id": "t2", "model": "m2", "approval_policy": "on-request"}),
            _line(
                "response_item",
                {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "c2"},
            ),
            _line(
                "event_msg",
                {
                    "type": "patch_apply_end",
                    "call_id": "c2",
                    "success": False,
                    "stderr": "no file",
                    "changes": {"/w/a.txt": {"type": "update"}},
                },
            ),
            _line("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": "no file"}),
            _line("response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
            _line("event_msg", {"type": "mystery_event"}),
            _line("event_msg", {"type": "mystery_event"}),
            _line("event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
            _line(
                "compacted",
                {
                    "message": "summary",
                    "replacement_history": [
                        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
                    ],
                },
            ),
            _line(
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
            ),
            _line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"input_tokens": 25, "output_tokens": 5},
                        "last_token_usage": {"input_tokens": 15, "output_tokens": 3},
                    },
                },
            ),
        ],
    )
    (r,) = import_file(p)
    rec = r.recording
    kinds = [(x.kind, getattr(x, "tool", None) or getattr(x, "model", None)) for x in rec.records]
    assert kinds == [
        ("interrupt", None),
        ("model", "m1"),
        ("tool", "shell"),
        ("interrupt", None),
        ("model", "m2"),
        ("tool", "apply_patch"),
        ("interrupt", None),
        ("interrupt", None),
        ("model", "m2"),
    ]
    shell, patch = tools(rec)
    assert shell.result.error.type == "exit_code_1" and shell.result.content == "failed"
    assert patch.result.error.type == "patch_failed" and patch.meta["patch"]["files"] == {"/w/a.txt": "update"}
    change = rec.records[3].value
    assert change["type"] == "turn_context" and change["changed"] == {"model": "m2", "approval_policy": "on-request"}
    assert rec.records[6].value == {"type": "turn_aborted", "reason": "interrupted"}
    assert rec.records[7].value == {"type": "compacted", "message": "summary"}
    ms = models(rec)
    assert [(m.response.usage.input_tokens if m.response.usage else None) for m in ms] == [10, None, 15]
    assert [m.role for m in ms[2].request.messages] == ["user"]  # the replacement history
    warned = [w.message for w in r.warnings]
    assert any("2 event_msg 'mystery_event' lines skipped" in w for w in warned)
    assert any("1 response_item 'ghost_snapshot' line skipped" in w for w in warned)


# -- random damage never raises anything but FormatError ------------------------------

_DATA = ROLLOUT.read_bytes()
_SMALL = MALFORMED.read_bytes()


def _check(tmp: Path, data: bytes) -> None:
    p = tmp / "rollout-damaged.jsonl"
    p.write_bytes(data)
    try:
        import_file(p)
    except (FormatError, SourceImportError):
        pass
    try:
        import_file(p, fmt="codex")
    except FormatError:
        pass


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(big=st.booleans(), frac=st.floats(0.0, 1.0))
def test_random_truncation_raises_only_format_errors(tmp_path: Path, big: bool, frac: float) -> None:
    data = _DATA if big else _SMALL
    _check(tmp_path, data[: int(frac * len(data))])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    big=st.booleans(),
    edits=st.lists(st.tuples(st.floats(0.0, 1.0), st.binary(min_size=0, max_size=3)), min_size=1, max_size=6),
)
def test_random_corruption_raises_only_format_errors(
    tmp_path: Path, big: bool, edits: list[tuple[float, bytes]]
) -> None:
    data = bytearray(_DATA if big else _SMALL)
    for frac, new in edits:
        at = int(frac * (len(data) - 1))
        data[at : at + 1] = new
    _check(tmp_path, bytes(data))


# -- the CLI and the sample recording --------------------------------------------------


def test_cli_import_validate_info(tmp_path: Path, capsys) -> None:
    out = tmp_path / "codex.json"
    assert main(["import", str(ROLLOUT), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert "model 66" in cap.out and "tool 105" in cap.out
    assert "web search results are not in the rollout" in cap.err
    assert main(["validate", str(out)]) == 0
    assert main(["info", str(out)]) == 0
    assert "gpt-5.5" in capsys.readouterr().out


def test_sample_recording_is_a_fresh_import() -> None:
    saved = load_recording(SAMPLE, verify_keys=True)
    fresh = select_run(import_file(ROLLOUT), None, source=str(ROLLOUT)).recording
    assert [r.to_json_obj() for r in saved.records] == [r.to_json_obj() for r in fresh.records]
    assert saved.metadata["source"]["sha256"] == fresh.metadata["source"]["sha256"]
    fe = saved.first_error()
    assert fe is not None and fe.kind == "tool" and fe.result.error.type.startswith("exit_code_")


# -- review fixes: odd shapes, the model-call boundary, compaction, hostile content ---


def _usage_line(total: int, last: int) -> str:
    return _line(
        "event_msg",
        {
            "type": "token_count",
            "info": {
                "total_token_usage": {"input_tokens": total, "output_tokens": total},
                "last_token_usage": {"input_tokens": last, "output_tokens": last},
            },
        },
    )


_META = _line("session_meta", {"id": "s1"})
_CTX = _line("turn_context", {"turn_id": "t1", "model": "m1"})


def test_output_after_a_token_count_is_a_new_model_call(tmp_path: Path) -> None:
    # a token_count ends its model call: output items after it (no input between) are
    # the next call, and neither call's usage is lost
    assistant = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}
    p = _write(
        tmp_path,
        [
            _META,
            _CTX,
            _line("response_item", assistant),
            _usage_line(1, 1),
            _line("response_item", {**assistant, "content": [{"type": "output_text", "text": "b"}]}),
            _usage_line(3, 2),
        ],
    )
    (r,) = import_file(p)
    ms = models(r.recording)
    assert [m.response.message.text for m in ms] == ["a", "b"]
    assert [m.response.usage.input_tokens for m in ms] == [1, 2]
    assert sum(m.response.usage.output_tokens for m in ms) == r.recording.metadata["usage_totals"]["output_tokens"]


def test_odd_content_parts_and_reasoning_summary_are_kept_not_fatal(tmp_path: Path) -> None:
    # a content list holding a non-object, a reasoning summary that is not a list:
    # imported (the odd part kept as a json part), never "unexpected shape"
    p = _write(
        tmp_path,
        [
            _META,
            _CTX,
            _line("response_item", {"type": "message", "role": "user", "content": ["loose text"]}),
            _line("response_item", {"type": "reasoning", "summary": 5, "content": None}),
            _line("response_item", {"type": "message", "role": "assistant", "content": [7]}),
            _line("response_item", {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "c1"}),
            _line("response_item", {"type": "function_call_output", "call_id": "c1", "output": [None]}),
            _line(
                "compacted",
                {"message": "s", "replacement_history": [{"type": "reasoning", "summary": "x"}]},
            ),
        ],
    )
    (r,) = import_file(p, "codex")
    (m,) = models(r.recording)
    assert m.request.messages[-1].content == [{"type": "json", "json": "loose text"}]
    assert {"type": "json", "json": 7} in m.response.message.content
    (t,) = tools(r.recording)
    assert t.result.content == [{"type": "json", "json": None}]


def test_compacted_history_does_not_take_a_later_web_search_id(tmp_path: Path) -> None:
    search = {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}}
    p = _write(
        tmp_path,
        [
            _META,
            _CTX,
            _line("compacted", {"message": "s", "replacement_history": [search]}),
            _line("response_item", {"type": "message", "role": "user", "content": "go"}),
            _line("response_item", search),
            _line("event_msg", {"type": "web_search_end", "call_id": "ws_live", "query": "q"}),
        ],
    )
    (r,) = import_file(p)
    (t,) = tools(r.recording)
    assert t.tool == "web_search" and t.tool_call_id == "ws_live"


def test_zero_cached_tokens_are_kept_in_usage_totals(tmp_path: Path) -> None:
    total = {"input_tokens": 4, "output_tokens": 1, "cached_input_tokens": 0, "reasoning_output_tokens": 0}
    p = _write(
        tmp_path,
        [
            _META,
            _CTX,
            _line("response_item", {"type": "message", "role": "assistant", "content": "hi"}),
            _line(
                "event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": total}}
            ),
        ],
    )
    (r,) = import_file(p)
    ut = r.recording.metadata["usage_totals"]
    assert ut["cached_input_tokens"] == 0 and ut["reasoning_output_tokens"] == 0


def test_hostile_content_imports_redacted_and_round_trips(tmp_path: Path) -> None:
    from core.record.io import save_recording

    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    aws = "AKIAIOSFODNN7EXAMPLE"
    deep = "[" * 3000 + "]" * 3000
    lines = [
        _META,
        _CTX,
        _line("event_msg", {"type": "user_message", "message": f"[red]x[/] \x1b]0;pwn\x07 my key {secret}"}),
        _line(
            "response_item",
            {
                "type": "function_call",
                "name": "[red]x[/]\x1b]0;pwn\x07",
                "arguments": json.dumps(
                    {"cmd": f"OPENAI_API_KEY={secret} AWS_ACCESS_KEY_ID={aws}", "big": "x" * 5_000_000}
                ),
                "call_id": "c1",
            },
        ),
        '{"timestamp": "t", "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", '
        '"output": "n", "n": NaN, "huge": 123456789012345678901234}}',
        '{"timestamp": "t", "type": "response_item", "payload": {"type": "message", "role": "user", "content": '
        + deep
        + "}}",
    ]
    p = tmp_path / "rollout-hostile.jsonl"
    p.write_bytes(
        ("\n".join(lines) + "\n").encode() + b'{"timestamp": "t", "type": "event_msg", "payload": '
        b'{"type": "user_message", "message": "bad \xff\xfe bytes"}}\n'
    )
    (r,) = import_file(p)
    out = tmp_path / "hostile.json"
    save_recording(r.recording, out)
    text = out.read_text()
    assert secret not in text and aws not in text
    back = load_recording(out, verify_keys=True)
    assert len(back.records) == len(r.recording.records) == 4  # interrupts ×2, model, tool
    assert any(w.place == "line 6" for w in r.warnings)  # the over-deep line, named
