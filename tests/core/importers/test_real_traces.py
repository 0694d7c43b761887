"""Every real trace (tests/data/real_traces, copied from ../shared/real_traces) imports,
round-trips through save/load with full verification, and keeps the counts and key facts
that SOURCES.md gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from core.importers import detect, import_file
from core.record.io import load_recording
from core.record.recording import InterruptRecord, ModelRecord, ToolRecord
from tests.builders import TESTS

REAL = TESTS / "data" / "real_traces"
DATA = TESTS / "data" / "importers"

# file → (format, runs, model calls, tool calls) from SOURCES.md
EXPECTED = {
    "inspect_ai/2025-05-12T20-27-36-04-00_browser.json": ("inspect_ai", 1, 5, 4),
    "inspect_ai/log_message_deduplication.eval": ("inspect_ai", 1, 6, 5),
    "inspect_ai/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json": ("inspect_ai", 1, 2, 0),
    "inspect_ai/log_tool_call_error.json": ("inspect_ai", 1, 0, 11),
    "swe_agent/pydicom__pydicom-1458.traj": ("swe_agent", 1, 12, 12),
    "mini_swe_agent/sqlfluff__sqlfluff-2419.traj.json": ("mini_swe_agent", 1, 41, 41),
    "openhands/basic_gui_mode.json": ("openhands", 1, 4, 4),
    "openhands/wrong_initial_state.json": ("openhands", 1, 4, 4),
    "tau_bench/gpt-4o-airline.json": ("tau_bench", 200, 2454, 1164),
    "who_and_when/hand-crafted_1.json": ("who_and_when", 1, 21, 7),
    "who_and_when/algorithm-generated_77.json": ("who_and_when", 1, 5, 5),
}

_cache: dict[str, list] = {}


def runs_of(rel: str) -> list:
    if rel not in _cache:
        _cache[rel] = import_file(REAL / rel)
    return _cache[rel]


def kinds(rec) -> Counter:
    return Counter(r.kind for r in rec.records)


def tools(rec) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_detected_imported_and_counted(rel: str) -> None:
    fmt, n_runs, n_model, n_tool = EXPECTED[rel]
    assert detect(REAL / rel) == fmt
    runs = runs_of(rel)
    assert len(runs) == n_runs
    assert sum(kinds(r.recording)["model"] for r in runs) == n_model
    assert sum(kinds(r.recording)["tool"] for r in runs) == n_tool
    for r in runs:
        src = r.recording.metadata["source"]
        assert src["format"] == fmt
        assert src["file"] == Path(rel).name
        assert len(src["sha256"]) == 64
        assert src["run"] == r.run_id
        assert not r.incomplete
        assert all(rec.run_id == r.run_id for rec in r.recording.records)
        assert [rec.seq for rec in r.recording.records] == list(range(len(r.recording.records)))


@pytest.mark.parametrize("rel", sorted(k for k in EXPECTED if not k.startswith("tau_bench")))
def test_round_trips_through_save_and_load(rel: str, tmp_path: Path) -> None:
    (run,) = runs_of(rel)[:1]
    out = tmp_path / "rec.json"
    run.recording.save(out)
    back = load_recording(out, verify_keys=True)
    assert len(back.records) == len(run.recording.records)
    assert [r.to_json_obj() for r in back.records] == [
        orjson.loads(orjson.dumps(r.to_json_obj())) for r in run.recording.records
    ]
    assert back.metadata["source"]["sha256"] == run.recording.metadata["source"]["sha256"]


def test_tau_bench_every_run_round_trips(tmp_path: Path) -> None:
    for i, run in enumerate(runs_of("tau_bench/gpt-4o-airline.json")):
        out = tmp_path / f"{i}.json"
        run.recording.save(out)
        load_recording(out, verify_keys=True)


# -- Inspect AI ------------------------------------------------------------------------


def test_inspect_browser_attachments_resolved_and_scored() -> None:
    rec = runs_of("inspect_ai/2025-05-12T20-27-36-04-00_browser.json")[0].recording
    assert b"attachment://" not in orjson.dumps([r.to_json_obj() for r in rec.records])
    calls = [(t.tool, t.arguments) for t in tools(rec)]
    assert calls == [
        ("web_browser_go", {"url": "https://www.aisi.gov.uk/"}),
        ("web_browser_click", {"element_id": 151}),
        ("web_browser_click", {"element_id": 884}),
        ("web_browser_click", {"element_id": 903}),
    ]
    assert rec.first_error() is None
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert models[0].request.messages[0].text.startswith("Use the web browser tool to navigate")
    assert models[-1].response.message.text.count("\n\n") >= 1  # the two-paragraph summary
    assert models[0].response.usage is not None
    assert rec.metadata["scores"]["includes"]["value"] == "C"
    assert rec.metadata["outcome"] == "success"
    assert {s["name"] for s in rec.metadata["spans"]} >= {"generate", "use_tools", "includes"}


def test_inspect_eval_zip_message_pool_and_repeated_calls_not_collapsed() -> None:
    rec = runs_of("inspect_ai/log_message_deduplication.eval")[0].recording
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert [len(m.request.messages) for m in models] == [1, 3, 5, 7, 9, 11]
    ts = tools(rec)
    assert [t.arguments for t in ts] == [{"cmd": "ls"}] * 5
    assert len({t.key for t in ts}) == 1  # five identical calls, five records, one key
    assert len({t.tool_call_id for t in ts}) == 5
    assert rec.metadata["scores"]["closeness_log"]["value"] == 0.0


def test_inspect_input_event_is_an_interrupt() -> None:
    rec = runs_of("inspect_ai/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json")[0].recording
    first = rec.records[0]
    assert isinstance(first, InterruptRecord)
    assert first.value["type"] == "input"
    assert "Question Request" in first.value["input"]
    model = rec.records[1]
    assert isinstance(model, ModelRecord)
    assert "St. Paul" in model.request.messages[-1].text
    assert rec.metadata["outcome"] == "success"


def test_inspect_old_layout_maps_every_tool_error_type() -> None:
    run = runs_of("inspect_ai/log_tool_call_error.json")[0]
    rec = run.recording
    types = [t.result.error.type for t in tools(rec)]
    assert types == [
        "parsing",
        "timeout",
        "parsing",
        "unicode_decode",
        "permission",
        "file_not_found",
        "is_a_directory",
        "limit",
        "approval",
        "unknown",
        "output_limit",
    ]
    assert tools(rec)[-1].result.error.message == "The tool output limit of 10 MiB was exceeded."
    assert all(t.key is None for t in tools(rec))  # arguments not in the log: no key, never dropped
    assert [t.tool_call_id for t in tools(rec)] == [f"bash_{i}" for i in range(1, 12)]
    assert any("old layout" in str(w) for w in run.warnings)
    assert rec.first_error().seq == 0


# -- SWE-agent -------------------------------------------------------------------------


def test_swe_agent_three_rejected_edits_are_tool_errors() -> None:
    rec = runs_of("swe_agent/pydicom__pydicom-1458.traj")[0].recording
    ts = tools(rec)
    edits = [t for t in ts if t.tool == "edit"]
    rejected = [t for t in edits if t.is_error]
    assert len(rejected) == 3
    assert all(t.result.error.type == "edit_rejected" for t in rejected)
    assert all(t.arguments["command"].startswith("edit 287:295") for t in rejected)
    assert "E999 SyntaxError: unmatched" in rejected[0].result.error.message
    assert rec.first_error() is rejected[0]
    fixed = edits[-1]
    assert fixed.arguments["command"].startswith("edit 287:296") and not fixed.is_error
    assert [t.tool for t in ts][-1] == "submit"
    assert ts[2].tool == "bash" and ts[2].arguments == {"command": "python reproduce_bug.py"}
    assert rec.metadata["exit_status"] == "submitted"
    assert rec.metadata["model_stats"]["api_calls"] == 12


def test_swe_agent_function_calling_variant() -> None:
    (run,) = import_file(DATA / "swe_agent_function_calling.traj")
    rec = run.recording
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert {m.model for m in models} == {"claude-3-5-sonnet-20241022"}
    assert [len(m.request.messages) for m in models] == [2, 4, 6, 8]  # step query
    ts = tools(rec)
    assert [t.tool_call_id for t in ts] == ["toolu_01", "toolu_02", "toolu_03", "toolu_04"]
    assert ts[0].arguments == {"command": "view", "path": "/repo/counter.py"}
    assert rec.first_error() is ts[1] and ts[1].result.error.type == "syntax_error"
    assert ts[3].duration_seconds == 3.25


# -- mini-swe-agent --------------------------------------------------------------------


def test_mini_swe_agent_exit_role_kept_and_marked() -> None:
    run = runs_of("mini_swe_agent/sqlfluff__sqlfluff-2419.traj.json")[0]
    rec = run.recording
    assert {t.tool for t in tools(rec)} == {"bash"}
    last = rec.records[-1]
    assert isinstance(last, InterruptRecord)
    assert last.value["role"] == "exit" and last.value["unknown_role"] is True
    assert last.value["exit_status"] == "Submitted"
    submit = tools(rec)[-1]
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in submit.arguments["command"]
    assert submit.result.content.startswith("diff --git a/src/sqlfluff/rules/L060.py")
    assert any("'exit' is not a chat role" in str(w) for w in run.warnings)
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert {m.model for m in models} == {"deepseek-chat"}
    assert all(m.response.usage is not None for m in models)
    assert rec.metadata["exit_status"] == "Submitted"


# -- OpenHands -------------------------------------------------------------------------


def test_openhands_hung_command_and_agent_states() -> None:
    rec = runs_of("openhands/basic_gui_mode.json")[0].recording
    hung = rec.first_error()
    assert isinstance(hung, ToolRecord)
    assert hung.tool == "execute_bash" and "http.server 8000" in hung.arguments["command"]
    assert hung.result.error.type == "hung"
    assert "Serving HTTP on 0.0.0.0 port 8000" in hung.result.content
    assert hung.result.artifact == {"exit_code": -1}
    states = [
        r.value["state"] for r in rec.records if isinstance(r, InterruptRecord) and r.value["type"] == "agent_state"
    ]
    assert states == ["loading", "init", "running", "awaiting_user_input"]
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert {m.model for m in models} == {"claude-3-5-sonnet-20241022"}
    assert [t.tool for t in tools(rec)] == ["execute_bash", "str_replace_editor", "str_replace_editor", "execute_bash"]
    assert all(t.tool_call_id and t.tool_call_id.startswith("toolu_") for t in tools(rec))


def test_openhands_wrong_initial_state() -> None:
    rec = runs_of("openhands/wrong_initial_state.json")[0].recording
    assert [t.tool for t in tools(rec)] == ["str_replace_editor", "execute_bash", "str_replace_editor", "finish"]
    assert tools(rec)[1].arguments["command"] == "mv /workspace/game_2048.py /workspace/2048.py"
    assert rec.first_error() is None
    assert rec.metadata["task"] == "Please rename game_2048.py to 2048.py"


# -- tau-bench -------------------------------------------------------------------------


def test_tau_bench_runs_outcomes_and_expected_actions() -> None:
    runs = runs_of("tau_bench/gpt-4o-airline.json")
    assert all({"task_id", "trial", "reward", "outcome", "expected_actions"} <= set(r.recording.metadata) for r in runs)
    assert Counter(r.recording.metadata["outcome"] for r in runs) == {"success": 84, "failure": 116}
    assert Counter(r.recording.metadata["trial"] for r in runs) == {0: 50, 1: 50, 2: 50, 3: 50}
    first = runs[0].recording
    assert runs[0].run_id == "task0-trial0"
    assert first.metadata["reward"] == 0.0 and first.metadata["outcome"] == "failure"
    assert first.metadata["expected_actions"][0]["name"] == "book_reservation"
    names = Counter(t.tool for r in runs for t in tools(r.recording))
    assert names["get_reservation_details"] == 377
    assert names["search_direct_flight"] == 141
    assert names["get_user_details"] == 120
    assert names["update_reservation_flights"] == 104
    assert names["calculate"] == 96 and names["think"] == 92
    # the personal-detail replacement made upstream (SOURCES.md) stays in place
    blob = b"".join(
        orjson.dumps([m.to_json_obj() for m in rec.request.messages])
        for r in runs
        for rec in r.recording.records[-1:]
        if isinstance(rec, ModelRecord)
    )
    assert b"sophia_silva_7557@example.com" in blob
    assert b"gmail.com" not in blob


def test_tau_bench_reused_tool_call_ids_are_kept_unique_and_paired() -> None:
    rec = runs_of("tau_bench/gpt-4o-airline.json")[0].recording
    ts = tools(rec)
    ids = [t.tool_call_id for t in ts]
    assert len(set(ids)) == len(ids)
    assert "call_HGn16KZh9oNCruxsMJ4gYXan~2" in ids
    onestop = next(t for t in ts if t.tool == "search_onestop_flight")
    assert onestop.tool_call_id == "call_HGn16KZh9oNCruxsMJ4gYXan~2"
    assert onestop.result.content.startswith("[[")  # its own result, not the direct-flight search's


# -- Who&When --------------------------------------------------------------------------


def test_who_and_when_hand_crafted_annotation_points_at_the_record() -> None:
    rec = runs_of("who_and_when/hand-crafted_1.json")[0].recording
    assert len(rec.records) == 29
    ann = rec.metadata["annotation"]
    assert ann["mistake_agent"] == "WebSurfer"
    assert ann["mistake_step"] == 12 and ann["mistake_seq"] == 12
    assert ann["mistake_reason"].startswith("WebSurfer clicks on an irrelevant website")
    step = rec.records[12]
    assert isinstance(step, ToolRecord) and step.tool == "WebSurfer"
    assert "NY Jidokwan Taekwondo" in step.result.content and "台灣" in step.result.content
    assert step.arguments["instruction"].startswith("Please click on specific martial arts schools")
    assert isinstance(rec.records[0], InterruptRecord) and rec.records[0].value["type"] == "human"
    assert rec.metadata["ground_truth"] == "Renzo Gracie Jiu-Jitsu Wall Street"


def test_who_and_when_string_mistake_step() -> None:
    run = runs_of("who_and_when/algorithm-generated_77.json")[0]
    rec = run.recording
    ann = rec.metadata["annotation"]
    assert ann["mistake_step_raw"] == "0" and ann["mistake_step"] == 0 and ann["mistake_seq"] == 0
    assert ann["mistake_agent"] == "YouTubeDownload_Expert"
    first = rec.records[0]
    assert isinstance(first, ModelRecord) and first.model == "agent/YouTubeDownload_Expert"
    assert [t.tool for t in tools(rec)] == ["Computer_terminal"] * 5
    assert rec.first_error().seq == 7 and rec.first_error().result.error.type == "nonzero_exit"
    assert any("string '0'" in str(w) for w in run.warnings)
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert len(models[-1].request.messages) == 8  # the multi-agent history before step 8
    assert {m.name for m in models[-1].request.messages} >= {"YouTubeDownload_Expert", "Computer_terminal"}


def test_each_real_file_is_recognised_by_exactly_one_importer() -> None:
    from core.importers import IMPORTERS
    from core.importers._source import read_head

    files = [
        p
        for p in sorted(REAL.rglob("*"))
        if p.is_file()
        and p.suffix in (".json", ".eval", ".traj", ".yaml", ".jsonl")
        and not p.name.endswith(".meta.json")  # a Claude Code sub-agent's description, read with its session
    ]
    assert len(files) >= 27
    for p in files:
        takers = [i.name for i in IMPORTERS if i.sniff(p, read_head(p)) is None]
        assert len(takers) == 1, (p.name, takers)
