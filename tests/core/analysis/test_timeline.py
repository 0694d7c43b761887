"""core.analysis.timeline: rows, statuses, summaries, selection, search, errors, links, transcripts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.timeline import TimelineIndex, record_status, transcript_for
from core.analysis.timeline_text import format_duration, format_offset, one_line, record_summary, rows_to_csv
from core.record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    ModelResponse,
    Recording,
    ToolRecord,
    ToolResult,
)
from tests.builders import ROOT, UNIQUE_RESULT, build_recording


@pytest.fixture(scope="module")
def index() -> TimelineIndex:
    return TimelineIndex(build_recording())


def test_rows_columns(index):
    assert len(index) == 17
    row = index.row(7)
    assert (row.seq, row.kind, row.name, row.status, row.duration_seconds, row.tokens) == (
        7,
        "tool",
        "edit",
        "error",
        0.25,
        None,
    )
    assert row.offset_seconds == 9.0
    assert row.summary.startswith('{"path":"src/dates.py"') and "✗ EditRejected" in row.summary
    model = index.row(2)
    assert model.tokens == 500 + 60 and model.summary.startswith("Step 1:") and "→ bash(" in model.summary
    assert index.row(3).summary == "ls src ⇒ dates.py parser.py __init__.py"  # one string argument shown bare
    assert index.row(0).summary == "plugins: shell, editor · tools: bash, edit · capabilities: exec, fs.write"
    assert index.row(1).summary == "plugin=shell"
    assert index.row(8).status == "interrupted"


def test_header_summary(index):
    s = index.summary
    assert s.records == 17
    assert s.counts == {"tool": 6, "model": 7, "interrupt": 1, "snapshot": 1, "lifecycle": 2}
    assert (s.tokens_in, s.tokens_out, s.errors, s.outcome) == (6200, 405, 2, "resolved")
    assert s.span_seconds == 20.0


def test_status_precedence():
    base = {"seq": 0, "tool": "t", "arguments": {}}
    assert record_status(ToolRecord(**base)) == "ok"
    assert record_status(ToolRecord(**base, replayed=True)) == "replayed"
    assert record_status(ToolRecord(**base, replayed=True, live_fallback=True)) == "live-fallback"
    assert record_status(ToolRecord(**base, live_fallback=True, result=ToolResult(redacted=True))) == "redacted"
    assert record_status(ToolRecord(**base, result=ToolResult(redacted=True, error=ErrorInfo(type="x")))) == "error"
    assert record_status(InterruptRecord(seq=0, replayed=True)) == "interrupted"
    assert record_status(ModelRecord(seq=0, model="m", error=ErrorInfo(type="timeout"))) == "error"


def test_a_human_message_interrupt_is_input_not_interrupted():
    question = {"type": "human", "role": "human", "content": "Where can I take martial arts classes?"}
    rec = InterruptRecord(seq=0, value=question)
    assert record_status(rec) == "input"
    assert record_summary(rec).startswith("Where can I take martial arts classes?")
    assert (
        record_status(InterruptRecord(seq=0, value={"type": "user_message", "source": "user", "content": "hi"}))
        == "input"
    )
    for other in ({"type": "approval", "question": "ok?"}, {"type": "agent_state", "state": "init"}, "pause", None):
        assert record_status(InterruptRecord(seq=0, value=other)) == "interrupted"
    # the fast-open (raw) path agrees
    raw = [
        {"seq": 0, "kind": "interrupt", "value": question},
        {"seq": 1, "kind": "interrupt", "value": {"type": "approval"}},
    ]
    assert TimelineIndex.from_raw(Recording(), raw).statuses == ["input", "interrupted"]


def test_a_tool_call_given_an_instruction_leads_with_its_result():
    rec = ToolRecord(
        seq=0,
        tool="WebSurfer",
        arguments={"instruction": "Please search for martial arts schools " * 3},
        result=ToolResult(content="I typed 'martial arts' into the search box."),
    )
    out = record_summary(rec, 60)
    assert out.startswith("⇒ I typed 'martial arts' into the search box. ⇐ Please") and len(out) <= 60
    # ordinary arguments stay first
    assert (
        record_summary(ToolRecord(seq=0, tool="bash", arguments={"command": "ls"}, result=ToolResult(content="a.py")))
        == "ls ⇒ a.py"
    )


def test_summary_of_failed_and_empty_model_calls():
    assert (
        record_summary(ModelRecord(seq=0, model="m", error=ErrorInfo(type="timeout", message="after 30s")))
        == "✗ timeout: after 30s"
    )
    assert record_summary(ModelRecord(seq=0, model="m")) == "(no response)"
    resp = ModelResponse(message=ChatMessage(role="assistant", content=""))
    assert record_summary(ModelRecord(seq=0, model="m", response=resp)) == "(empty response)"


def test_one_line():
    assert one_line("a\n\n  b\tc") == "a b c"
    assert one_line({"k": [1, 2]}) == '{"k":[1,2]}'
    assert one_line("x" * 500, 10) == "x" * 9 + "…"
    assert one_line(None) == ""


def test_select_kinds_errors_grep(index):
    assert [index.kinds[p] for p in index.select(["tool"])] == ["tool"] * 6
    assert index.select(errors_only=True) == index.error_positions == [7, 12]
    assert index.select(["model"], errors_only=True) == []
    assert index.select(grep="PYTEST", kinds=["tool"]) == [12, 14]
    with pytest.raises(ValueError, match="unknown kind.*nope"):
        index.select(["nope"])


def test_search_finds_a_tool_result_at_its_call_and_the_model_call_that_reads_it(index):
    # one rule: a model call matches on its response and on the new (non-assistant)
    # messages of its request; history re-carried in later requests never matches
    assert index.search("zebra-QUARTZ") == [5, 6]
    assert UNIQUE_RESULT in index.record(5).result.content
    reader = index.record(6)
    assert reader.kind == "model" and any(UNIQUE_RESULT in m.text for m in reader.request.messages)
    later = [
        p
        for p in range(7, len(index))
        if index.kinds[p] == "model" and any(UNIQUE_RESULT in m.text for m in index.record(p).request.messages)
    ]
    assert later  # later requests carry it too, and are not matched
    # the system prompt is found at its first use only, not in every later request
    assert index.search("you are a software agent") == [2]
    assert index.search("") == []
    assert index.search("no such text at all") == []


def test_errors_navigation(index):
    assert index.next_error(-1) == 7
    assert index.next_error(7) == 12
    assert index.next_error(12) is None
    assert index.previous_error(12) == 7
    assert index.previous_error(7) is None


def test_seq_lookup():
    rec = build_recording()
    rec.records = rec.records[::2]  # seqs 0, 2, 4, ...
    idx = TimelineIndex(rec)
    assert idx.position_of_seq(4) == 2
    assert idx.position_of_seq(5) is None
    assert idx.nearest_position_of_seq(5) == 3
    assert idx.nearest_position_of_seq(10_000) == len(idx) - 1


def test_links_by_tool_call_id(index):
    assert index.linked(7) == [6]  # tool call_3 ← model seq 6
    assert index.linked(6) == [7]
    assert index.linked(0) == []


def test_transcripts(index):
    entries, note = transcript_for(index, 6)
    assert [e.message.role for e in entries] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert entries[-1].current and entries[-1].message.tool_calls[0].id == "call_3"
    entries, note = transcript_for(index, 7)
    assert entries[-1].current and entries[-1].message.role == "tool" and entries[-1].message.tool_call_id == "call_3"
    assert "EditRejected" in entries[-1].message.content
    assert "that requested it" in note
    assert transcript_for(index, 0) == ([], "a snapshot record has no chat transcript")


def test_transcript_without_tool_call_ids_uses_the_model_call_before():
    rec = build_recording()
    for r in rec.records:
        if isinstance(r, ToolRecord):
            r.tool_call_id = None
    idx = TimelineIndex(rec)
    entries, note = transcript_for(idx, 7)
    assert "just before it" in note and entries[-1].current
    assert entries[-2].message.role == "assistant"


def test_identity(index):
    ident = index.identity(7)
    assert ident["key"] == index.record(7).key and ident["args_hash"].startswith("sha256:")
    assert ident["tool_call_id"] == "call_3" and ident["run_id"] == "run-1"
    assert "args_hash" not in index.identity(6)


def test_csv_and_json(index):
    text = rows_to_csv(index.rows([8]))
    assert text.splitlines()[0] == "seq,offset_seconds,kind,name,summary,status,duration_seconds,tokens"
    assert text.splitlines()[1].startswith("8,10.0,interrupt,interrupt,")
    assert "position" not in index.row(0).to_json()


def test_formatting():
    assert format_offset(None) == "" and format_offset(3.14) == "+3.1s" and format_offset(125) == "+2m05s"
    assert format_offset(7300) == "+2h01m"
    assert format_duration(0.25) == "250ms" and format_duration(2.5) == "2.5s" and format_duration(192) == "3m12s"


def test_empty_recording():
    idx = TimelineIndex(Recording())
    assert len(idx) == 0 and idx.select() == [] and idx.search("x") == []
    assert idx.summary.span_seconds is None and idx.nearest_position_of_seq(3) is None


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["tool", "model"]), min_size=1, max_size=30),
    errors=st.lists(st.booleans(), min_size=30, max_size=30),
    words=st.lists(st.sampled_from(["alpha", "Beta", "gamma delta", "ÉPSILON", "zeta"]), min_size=30, max_size=30),
    query=st.sampled_from(["alpha", "beta", "a", "épsilon", "zeta", "gamma d", "missing"]),
    wanted=st.sets(st.sampled_from(["tool", "model"])),
    errors_only=st.booleans(),
)
def test_select_and_search_agree_with_a_plain_scan(kinds, errors, words, query, wanted, errors_only):
    records = []
    for i, kind in enumerate(kinds):
        if kind == "tool":
            records.append(
                ToolRecord(
                    seq=i,
                    tool="t",
                    arguments={"q": words[i]},
                    result=ToolResult(content=words[-i - 1], error=ErrorInfo(type="E") if errors[i] else None),
                )
            )
        else:
            records.append(
                ModelRecord(
                    seq=i,
                    model="m",
                    response=ModelResponse(message=ChatMessage(role="assistant", content=words[i])),
                    error=ErrorInfo(type="E") if errors[i] else None,
                )
            )
    idx = TimelineIndex(Recording(records=records))
    expected_search = []
    for i, r in enumerate(records):
        texts = [r.tool, words[i], words[-i - 1]] if isinstance(r, ToolRecord) else [r.model, words[i]]
        if any(query.lower() in t.lower() for t in texts) or (errors[i] and query.lower() in "e"):
            expected_search.append(i)
    assert idx.search(query) == expected_search
    expected = [i for i, r in enumerate(records) if r.kind in wanted and (not errors_only or errors[i])]
    assert idx.select(wanted, errors_only=errors_only) == expected


def test_interrupt_summary_is_readable() -> None:
    from core.analysis.timeline_text import interrupt_summary

    assert interrupt_summary({"type": "agent_state", "state": "loading"}) == "type=agent_state · state=loading"
    assert interrupt_summary({"question": "May I?", "step": 3}) == "May I? · step=3"
    assert interrupt_summary("stop here") == "stop here"
    assert interrupt_summary([1, 2]) == "[1,2]"


def test_search_rule_on_the_swe_agent_sample():
    """`/E999` on the default recording: each failed edit (11, 13, 15), the model call that
    reads its result (12, 14, 16), and the demonstration in the first prompt (0); never the
    later requests that merely re-carry those messages."""

    from core.record.io import load_recording

    path = ROOT / "sample_recordings" / "swe-agent-pydicom-1458.json"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    idx = TimelineIndex(load_recording(path))
    assert idx.search("E999") == [0, 11, 12, 13, 14, 15, 16]
