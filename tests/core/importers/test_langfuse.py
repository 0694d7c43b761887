"""Langfuse trace exports (``--from langfuse``): the real export (SOURCES.md #27) imports
with its facts, hostile variants built here import with warnings or fail with a
FormatError naming the place, detection takes Langfuse files only, and damaged copies
never raise anything but FormatError."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.analysis.final_output import final_output
from core.errors import FormatError, SourceImportError
from core.importers import IMPORTERS, detect, import_file
from core.importers._source import TruncatedSourceError, read_head
from core.importers.langfuse import LangfuseImporter
from core.record.io import load_recording
from core.record.recording import InterruptRecord, ModelRecord, Recording, ToolRecord
from tests.builders import ROOT

REAL = ROOT / "tests" / "data" / "real_traces"
FILE = REAL / "langfuse" / "claude-agent-2025-12-22.trace.json"
SAMPLE = ROOT / "sample_recordings" / "langfuse-weather-agent.json"
SOURCE = json.loads(FILE.read_text())


def _import(path: Path, fmt: str | None = None) -> Recording:
    (run,) = import_file(path, fmt)
    return run.recording


@pytest.fixture(scope="module")
def real() -> Any:
    (run,) = import_file(FILE)
    return run


def models(rec: Recording) -> list[ModelRecord]:
    return [r for r in rec.records if isinstance(r, ModelRecord)]


def tools(rec: Recording) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


def counts(rec: Recording) -> dict[str, int]:
    return {k: n for k, n in rec.counts_by_kind().items() if n}


def messages(run: Any) -> list[str]:
    return [w.message for w in run.warnings]


# -- the real export (SOURCES.md #27) -----------------------------------------------------


def test_real_export_is_detected_and_counted(real: Any) -> None:
    assert detect(FILE) == "langfuse"
    rec = real.recording
    by_type = Counter(o["type"] for o in SOURCE["observations"])
    assert by_type == {"GENERATION": 4, "TOOL": 2, "SPAN": 1}
    # trace.observations repeats the same 7: read once, not twice
    assert {o["id"] for o in SOURCE["trace"]["observations"]} == {o["id"] for o in SOURCE["observations"]}
    assert counts(rec) == {"model": by_type["GENERATION"], "tool": by_type["TOOL"]}
    assert real.run_id == SOURCE["trace"]["id"] == "097f1d8982fa909b8cffb14a166ec272"
    assert {r.model for r in models(rec)} == {"claude-sonnet-4-5-20250929"}
    assert rec.metadata["source"]["format"] == "langfuse"
    assert rec.session.created_at == SOURCE["trace"]["timestamp"] == "2025-12-22T10:46:15.528Z"


def test_real_export_usage_and_cost(real: Any) -> None:
    rec = real.recording
    gens = [o for o in SOURCE["observations"] if o["type"] == "GENERATION"]
    totals = sorted(o["usageDetails"]["total"] for o in gens)
    assert totals == [48, 58, 61, 99] and sum(totals) == 266
    used = [r.response.usage for r in models(rec) if r.response and r.response.usage]
    assert len(used) == 4
    assert sum(u.input_tokens + u.output_tokens for u in used) == 266
    assert sum(u.input_tokens for u in used) == sum(o["usageDetails"]["input"] for o in gens)
    cost = sum(o["costDetails"]["total"] for o in gens)
    assert cost == pytest.approx(0.003582)
    ut = rec.metadata["usage_totals"]
    assert ut["cost"] == pytest.approx(0.003582) and ut["input_tokens"] + ut["output_tokens"] == 266
    assert sum(r.meta["langfuse"]["cost"]["total"] for r in models(rec)) == pytest.approx(0.003582)


def test_real_export_tool_calls_are_paired_with_the_calls_that_asked(real: Any) -> None:
    rec = real.recording
    ts = tools(rec)
    assert [t.tool for t in ts] == ["mcp__weather__get_weather"] * 2
    assert [t.arguments for t in ts] == [{"city": "Berlin"}, {"city": "New York"}]
    assert [t.result.content for t in ts] == ["Weather in Berlin: Cloudy, 59°F", "Weather in New York: Sunny, 75°F"]
    assert all(t.result.error is None for t in ts)
    asked = {tc.id: (tc.name, tc.arguments, r.seq) for r in models(rec) for tc in (r.response.message.tool_calls or [])}
    assert len(asked) == 2
    for t in ts:
        name, args, seq = asked[t.tool_call_id]
        assert (name, args) == (t.tool, t.arguments) and seq < t.seq  # the model call comes first
        assert t.key is not None
    # no id in the source's TOOL observations: paired by name and input, and said so
    assert sum("carries no tool-call id" in m for m in messages(real)) == 2


def test_real_export_order_and_the_child_that_starts_before_its_parent(real: Any) -> None:
    rec = real.recording
    starts = [r.at for r in rec.records]
    assert starts == sorted(starts)
    root = next(o for o in SOURCE["observations"] if o["parentObservationId"] is None)
    first = next(o for o in SOURCE["observations"] if o["startTime"] < root["startTime"])
    assert first["parentObservationId"] == root["id"]  # the child 1 ms before its parent
    assert rec.records[0].meta["langfuse"]["id"] == first["id"]
    assert rec.records[0].meta["langfuse"]["path"] == ["claude.conversation"]
    (span,) = rec.metadata["spans"]
    assert span["id"] == root["id"] == "805dc5dff9e33e32" and span["type"] == "SPAN"
    assert (span["seq_from"], span["seq_to"]) == (0, len(rec.records) - 1)
    assert "input" not in span and "output" not in span  # they repeat the trace's
    assert all(r.duration_seconds is not None for r in rec.records)


def test_real_export_scores_outcome_task_and_final_output(real: Any) -> None:
    rec = real.recording
    md = rec.metadata
    src_scores = SOURCE["trace"]["scores"]
    assert [s["name"] for s in md["scores"]] == [s["name"] for s in src_scores]  # all kept
    correctness = next(s for s in src_scores if s["name"] == "correctness")
    assert correctness["value"] == 0 and correctness["dataType"] == "NUMERIC"
    assert md["outcome"] == "failure" and md["outcome_reason"] == "correctness = 0 (EVAL)"
    assert md["task"]["prompt"] == "What's the weather like in Berlin and New York?"  # decoded twice
    assert md["final_output"].startswith("Great! Here's the current weather for both cities:")
    last = models(rec)[-1].response.message.text
    assert last.startswith("Great! Here's the current weather for both cities:")
    assert final_output(rec) == md["final_output"] == last
    assert md["trace"]["latency_seconds"] == 7.36


def test_real_export_saves_and_loads(tmp_path: Path, real: Any) -> None:
    out = tmp_path / "lf.json"
    real.recording.save(out)
    back = load_recording(out, verify_keys=True)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in real.recording.records]


def test_sample_recording_matches_a_fresh_import(real: Any) -> None:
    saved = load_recording(SAMPLE, verify_keys=True)
    assert [r.to_json_obj() for r in saved.records] == [r.to_json_obj() for r in real.recording.records]
    assert saved.metadata["source"]["sha256"] == real.recording.metadata["source"]["sha256"]
    assert saved.metadata.get("outcome") == "failure"


# -- hostile documents built here ----------------------------------------------------------


def obs(oid: str, otype: str | None, start: str, **kw: Any) -> dict[str, Any]:
    o: dict[str, Any] = {
        "id": oid,
        "traceId": "t1",
        "name": kw.pop("name", oid),
        "startTime": f"2025-01-01T00:00:{start}Z",
        "endTime": kw.pop("end", None),
        "parentObservationId": kw.pop("parent", "root"),
        "level": kw.pop("level", "DEFAULT"),
        "statusMessage": kw.pop("status", None),
        **kw,
    }
    if otype is not None:
        o["type"] = otype
    return o


def doc(*observations: dict[str, Any], **trace: Any) -> dict[str, Any]:
    root = obs("root", "AGENT", "00.000", parent=None, name="agent")
    return {
        "trace": {"id": "t1", "name": "t", "timestamp": "2025-01-01T00:00:00Z", **trace},
        "observations": [root, *observations],
    }


def write(tmp_path: Path, d: Any, name: str = "x.trace.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return p


def gen(oid: str, start: str, output: Any, **kw: Any) -> dict[str, Any]:
    model = kw.pop("model", "m1")
    return obs(oid, "GENERATION", start, model=model, input=kw.pop("input", json.dumps("hi")), output=output, **kw)


def test_hostile_input_bad_json_no_type_and_dangling_parent(tmp_path: Path) -> None:
    d = doc(
        gen("g1", "01.000", json.dumps({"role": "assistant", "content": "ok"}), input='{"messages": [oops'),
        obs("x1", None, "02.000"),
        gen("g2", "03.000", "done", parent="nobody"),
    )
    (run,) = import_file(write(tmp_path, d))
    rec = run.recording
    g1, g2 = models(rec)
    assert g1.request.messages[0].content == '{"messages": [oops'  # kept as text
    assert g1.response.message.text == "ok"
    assert g2.response.message.text == "done" and g2.meta["langfuse"]["parent_id"] == "nobody"
    assert "path" not in g2.meta["langfuse"]  # read as a root
    ms = messages(run)
    assert any("not valid JSON; kept as text" in m for m in ms)
    assert any("observations skipped: no type ×1" in m for m in ms)
    assert any("'nobody' names no observation" in m for m in ms)
    codes = {w.code for w in run.warnings}
    assert {"kept-raw", "skipped"} <= codes


def test_event_unknown_types_errors_and_structure(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "tu1", "name": "search", "input": {"q": 1}}]}
    d = doc(
        obs("ch", "CHAIN", "00.500", name="chain"),
        gen("g1", "01.000", json.dumps(call), parent="ch", end="2025-01-01T00:00:01.500Z"),
        obs("t1x", "TOOL", "02.000", name="search", input={"q": 1}, output="boom", level="ERROR", status="it broke"),
        obs("ev", "EVENT", "02.500", input="note"),
        obs("rt", "RETRIEVER", "02.600"),
        obs("zz", "WIDGET", "02.700"),
        gen("g2", "03.000", None, level="ERROR", status="rate limited"),
    )
    (run,) = import_file(write(tmp_path, d))
    rec = run.recording
    kinds = [r.kind for r in rec.records]
    assert kinds == ["model", "tool", "interrupt", "model"]
    g1 = rec.records[0]
    assert g1.duration_seconds == pytest.approx(0.5)
    assert g1.meta["langfuse"]["path"] == ["agent", "chain"]
    t = rec.records[1]
    assert t.tool_call_id == "tu1" and t.arguments == {"q": 1}
    assert t.result.error.type == "tool_error" and t.result.error.message == "it broke"
    ev = rec.records[2]
    assert isinstance(ev, InterruptRecord) and ev.value["type"] == "event" and ev.value["input"] == "note"
    g2 = rec.records[3]
    assert g2.error.type == "model_error" and g2.error.message == "rate limited" and g2.response is None
    spans = {s["id"]: s for s in rec.metadata["spans"]}
    assert set(spans) == {"root", "ch", "rt"}
    assert (spans["ch"]["seq_from"], spans["ch"]["seq_to"]) == (0, 0)
    assert (spans["root"]["seq_from"], spans["root"]["seq_to"]) == (0, 3)
    ms = messages(run)
    assert any("kept as spans in metadata: RETRIEVER ×1" in m for m in ms)
    assert any("observations skipped: type 'WIDGET' ×1" in m for m in ms)
    assert rec.first_error().seq == 1


def test_duplicates_and_openai_shapes(tmp_path: Path) -> None:
    out = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}],
    }
    g = gen(
        "g1",
        "01.000",
        json.dumps(out),
        input=json.dumps([{"role": "system", "content": "be brief"}, {"role": "user", "content": "add"}]),
        modelParameters={"temperature": 0},
        usageDetails={"input": 7, "output": 3, "total": 10},
    )
    tool = obs("t", "TOOL", "02.000", name="add", input=json.dumps({"a": 1}), output=json.dumps(2))
    d = doc(g, tool, g)  # g again under its own id: read once
    d["trace"]["observations"] = [dict(g, input=None, output=None)]
    (run,) = import_file(write(tmp_path, d))
    rec = run.recording
    assert counts(rec) == {"model": 1, "tool": 1}
    (m,) = models(rec)
    assert [x.role for x in m.request.messages] == ["system", "user"]
    assert m.request.options == {"temperature": 0}
    assert (m.response.usage.input_tokens, m.response.usage.output_tokens) == (7, 3)
    (t,) = tools(rec)
    assert (t.tool_call_id, t.result.content) == ("c1", "2")  # only objects, arrays, strings are decoded
    assert any("repeat an earlier id" in x for x in messages(run))


def test_unanswered_call_and_orphan_tool(tmp_path: Path) -> None:
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ask", "input": {}}]}
    d = doc(
        obs("t0", "TOOL", "00.500", name="early", input="not json", output="x"),
        gen("g1", "01.000", json.dumps(call)),
    )
    (run,) = import_file(write(tmp_path, d))
    rec = run.recording
    assert [r.kind for r in rec.records] == ["tool", "model", "tool"]
    assert rec.records[0].arguments == "not json" and rec.records[0].tool_call_id is None
    assert rec.records[2].tool_call_id == "a" and rec.records[2].result.content is None
    ms = messages(run)
    assert any("answers no tool call" in m for m in ms)
    assert any("has no recorded result" in m for m in ms)


@pytest.mark.parametrize(
    ("scores", "outcome"),
    [
        ([{"name": "success", "value": 1, "dataType": "BOOLEAN", "stringValue": "True"}], "success"),
        ([{"name": "Task-Success", "value": 0, "dataType": "BOOLEAN"}], "failure"),
        ([{"name": "correctness", "value": 0.5, "dataType": "NUMERIC"}], None),
        ([{"name": "helpfulness", "value": 1, "dataType": "NUMERIC"}], None),
        ([{"name": "passed", "value": "yes", "dataType": "CATEGORICAL", "stringValue": "yes"}], None),
        ([{"name": "correctness", "value": 1}, {"name": "success", "value": 0}], None),
    ],
)
def test_outcome_rule(tmp_path: Path, scores: list[dict[str, Any]], outcome: str | None) -> None:
    (run,) = import_file(write(tmp_path, doc(gen("g", "01.000", "x"), scores=scores)))
    md = run.recording.metadata
    assert md.get("outcome") == outcome
    assert len(md["scores"]) == len(scores)
    if len(scores) == 2:
        assert any("outcome scores disagree" in m for m in messages(run))


def test_bare_trace_object_and_bare_list(tmp_path: Path) -> None:
    d = doc(gen("g", "01.000", "x"))
    bare = {**d["trace"], "observations": d["observations"]}
    assert counts(_import(write(tmp_path, bare, "bare.json"))) == {"model": 1}
    listed = [*d["observations"], {**gen("h", "02.000", "y"), "traceId": "t2", "parentObservationId": None}]
    p = write(tmp_path, listed, "list.json")
    assert detect(p) == "langfuse"
    runs = import_file(p)
    assert [r.run_id for r in runs] == ["t1", "t2"]


def test_secrets_are_redacted(tmp_path: Path) -> None:
    key = "sk-ant-" + "a1B2c3D4" * 5
    d = doc(gen("g", "01.000", f"your key is {key}", input=json.dumps(f"use {key}")))
    rec = _import(write(tmp_path, d))
    assert key not in json.dumps(rec.to_json_obj())


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ('{"trace": 3, "observations": []}', "/trace"),
        ('{"trace": {"id": "t"}, "observations": {"a": 1}}', "/observations"),
        ('{"observations": 5, "parentObservationId": null}', "/observations"),
        ('"just text"', "/"),
    ],
)
def test_wrong_shapes_are_format_errors(tmp_path: Path, content: str, where: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(FormatError) as ei:
        import_file(p, "langfuse")
    assert ei.value.path == where and str(p) in str(ei.value)


def test_truncated_export_recovers_the_observations_before_the_damage(tmp_path: Path) -> None:
    data = FILE.read_bytes()
    cut = data.rindex(b'"id": "f411dab686a064b1"')  # inside the last top-level observation
    p = tmp_path / "cut.trace.json"
    p.write_bytes(data[:cut])
    with pytest.raises(TruncatedSourceError, match="truncated|ends early"):
        import_file(p)
    (run,) = import_file(p, recover=True)
    assert run.incomplete
    # the Berlin TOOL is cut from the top-level list; its lighter copy under
    # trace.observations (no input, no output) is still read
    assert counts(run.recording) == {"model": 4, "tool": 2}
    berlin = next(t for t in tools(run.recording) if t.meta["langfuse"]["id"] == "f411dab686a064b1")
    assert berlin.result.content is None and berlin.arguments == {"city": "Berlin"}


# -- detection --------------------------------------------------------------------------


def test_detection_takes_langfuse_files_only() -> None:
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file() and p.suffix in (".json", ".jsonl", ".traj", ".eval")]
    assert FILE in files
    lf = LangfuseImporter()
    for p in files:
        takes = lf.sniff(p, read_head(p)) is None
        assert takes == (p == FILE), p
    takers = [i.name for i in IMPORTERS if i.sniff(FILE, read_head(FILE)) is None]
    assert takers == ["langfuse"]


@pytest.mark.parametrize(
    "other",
    [
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"parentObservationId": "x"}]}]}], "observations": []},
        {"spans": [{"name": "a", "parent": None, "context": {"trace_id": 1}}]},
        {"schema_version": "ATIF-v1.2", "steps": [], "observations": []},
        {"version": 2, "eval": {"task": "t"}, "samples": []},
        [{"task_id": 1, "reward": 1, "traj": []}],
    ],
)
def test_sniff_refuses_other_formats_with_a_reason(tmp_path: Path, other: Any) -> None:
    p = write(tmp_path, other, "other.json")
    reason = LangfuseImporter().sniff(p, read_head(p))
    assert isinstance(reason, str) and reason


# -- damage never raises anything but FormatError ---------------------------------------

DATA = FILE.read_bytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cut=st.integers(1, len(DATA) - 1),
    flips=st.lists(st.tuples(st.integers(0, len(DATA) - 1), st.integers(0, 255)), max_size=4),
    truncate=st.booleans(),
)
def test_damaged_copies_raise_only_format_errors(tmp_path: Path, cut: int, flips: list, truncate: bool) -> None:
    data = bytearray(DATA[:cut] if truncate else DATA)
    for pos, byte in flips:
        if pos < len(data):
            data[pos] = byte
    p = tmp_path / "damaged.trace.json"
    p.write_bytes(bytes(data))
    for fmt in (None, "langfuse"):
        try:
            runs = import_file(p, fmt)
        except (FormatError, SourceImportError):  # TruncatedSourceError is a FormatError
            continue
        for r in runs:
            assert isinstance(r.recording, Recording)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.integers(0, DATA.count(b"\n")), junk=st.sampled_from([b"", b"{", b'"', b"]]", b"null,", b"\xff\xfe"]))
def test_corrupted_lines_raise_only_format_errors(tmp_path: Path, line: int, junk: bytes) -> None:
    lines = DATA.split(b"\n")
    lines[line] = junk
    p = tmp_path / "lines.trace.json"
    p.write_bytes(b"\n".join(lines))
    for fmt in (None, "langfuse"):
        try:
            import_file(p, fmt)
        except (FormatError, SourceImportError):
            continue


# -- the CLI ----------------------------------------------------------------------------


def test_cli_import_validate_info(tmp_path: Path) -> None:
    out = tmp_path / "lf.json"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True, text=True, cwd=ROOT)

    proc = cli("import", str(FILE), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "(langfuse)" in proc.stdout and "model 4, tool 2" in proc.stdout
    assert "Traceback" not in proc.stderr
    proc = cli("validate", str(out))
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
    proc = cli("info", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "claude-sonnet-4-5-20250929 ×4" in proc.stdout and "mcp__weather__get_weather ×2" in proc.stdout
    assert "failure" in proc.stdout


# -- review fixes ------------------------------------------------------------------------


def test_token_counts_that_are_not_counts_keep_the_recording_saveable(tmp_path: Path) -> None:
    # 1e308 tokens is a float no integer count can be: not summed, not a usage, warned;
    # costs that overflow to infinity are not summed either
    huge = {"input": 1e308, "output": 1e308, "total": 1e308}
    d = doc(
        gen("g1", "01.000", "a", usageDetails=huge, costDetails={"total": 1e308}),
        gen("g2", "02.000", "b", usageDetails=huge, costDetails={"total": 1e308}),
        gen("g3", "03.000", "c", usageDetails={"input": 5, "output": 1.5}),
    )
    (run,) = import_file(write(tmp_path, d))
    rec = run.recording
    out = tmp_path / "saved.json"
    rec.save(out)
    load_recording(out, verify_keys=True)
    g1, g2, g3 = models(rec)
    assert g1.response.usage is None and g2.response.usage is None
    assert (g3.response.usage.input_tokens, g3.response.usage.output_tokens) == (5, 0)
    ut = rec.metadata["usage_totals"]
    assert (ut["input_tokens"], ut["output_tokens"]) == (5, 0) and "cost" not in ut
    ms = messages(run)
    assert sum("not a token count" in m for m in ms) == 5
    assert any("costDetails.total" in m and "not finite" in m for m in ms)


def test_tool_metadata_is_decoded_once(tmp_path: Path) -> None:
    d = doc(obs("t", "TOOL", "01.000", name="x", input="{}", output="y", metadata="{not json"))
    (run,) = import_file(write(tmp_path, d))
    assert sum("looks like JSON but is not valid JSON" in m for m in messages(run)) == 1
    (t,) = tools(run.recording)
    assert t.meta["langfuse"]["metadata"] == "{not json"


def test_a_parent_cycle_of_several_observations_is_warned(tmp_path: Path) -> None:
    d = doc(
        obs("a", "SPAN", "01.000", parent="b"),
        obs("b", "SPAN", "01.100", parent="a"),
        gen("g", "02.000", "x", parent="a"),
    )
    (run,) = import_file(write(tmp_path, d))
    assert any("cycle" in m for m in messages(run))
    (g,) = models(run.recording)
    assert g.meta["langfuse"]["path"] == ["b", "a"]  # cut where the cycle closes


def test_bare_trace_object_places_are_its_own_pointers(tmp_path: Path) -> None:
    d = doc(gen("g", "01.000", "x"), input="{oops", metadata="[oops", scores=[7])
    bare = {**d["trace"], "observations": d["observations"]}
    (run,) = import_file(write(tmp_path, bare, "bare.json"))
    places = {w.place for w in run.warnings}
    assert {"/input", "/metadata", "/scores/0"} <= places
    assert not any(p and p.startswith("/trace/") for p in places)
    (run,) = import_file(write(tmp_path, d, "wrapped.json"))
    assert {"/trace/input", "/trace/metadata", "/trace/scores/0"} <= {w.place for w in run.warnings}


def test_hostile_content_imports_redacted_and_round_trips(tmp_path: Path) -> None:
    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
    aws = "AKIAIOSFODNN7EXAMPLE"
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "sh", "input": {"k": secret}}]}
    d = doc(
        gen(
            "g",
            "01.000",
            json.dumps(call),
            model="[red]x[/]\x1b]0;pwn\x07",
            input=json.dumps([{"role": "user", "content": f"key {secret} id {aws} " + "z" * 5_000_000}]),
            level="ERROR",
            status=f"refused {secret}",
        ),
        obs("t", "TOOL", "02.000", name="sh", input=json.dumps({"k": secret}), output="[bold]ok[/]\x1b[2J"),
        obs("d", "SPAN", "03.000", input="[" * 3000 + "]" * 3000),
        input=json.dumps({"prompt": secret}),
    )
    text = json.dumps(d)
    p = tmp_path / "hostile.trace.json"
    p.write_bytes(text.encode()[:-1] + b', "extra": NaN, "bad": "\xff\xfe", "n": 123456789012345678901234}')
    (run,) = import_file(p)
    out = tmp_path / "hostile.json"
    run.recording.save(out)
    saved = out.read_text()
    assert secret not in saved and aws not in saved
    back = load_recording(out, verify_keys=True)
    assert [r.kind for r in back.records] == ["model", "tool"]
    assert back.records[0].model == "[red]x[/]\x1b]0;pwn\x07"  # data, kept as written
