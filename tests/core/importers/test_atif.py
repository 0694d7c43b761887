"""ATIF (Harbor's Agent Trajectory Interchange Format): import of the real terminus-2
trajectories (SOURCES.md #22–24, facts counted from the files), references to other
trajectories (resolved beside the source, or listed as unresolved), versions, damage,
export of any recording and export → import keeping calls, keys and usage; the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError, SourceImportError
from core.importers import IMPORTERS, detect, import_file
from core.importers._source import TruncatedSourceError, read_head
from core.importers.atif import SCHEMA_VERSION, AtifImporter, recording_to_atif
from core.record.io import load_recording
from core.record.recording import InterruptRecord, ModelRecord, Recording, ToolRecord
from inspector.cli import main
from tests.builders import ROOT, TESTS

REAL = TESTS / "data" / "real_traces"
ATIF = REAL / "atif"
TIMEOUT = ATIF / "hello-world-timeout.trajectory.json"
SUMMARIZATION = ATIF / "hello-world-context-summarization.trajectory.json"
INVALID_JSON = ATIF / "hello-world-invalid-json.trajectory.json"
FILES = [TIMEOUT, SUMMARIZATION, INVALID_JSON]
SAMPLES = ROOT / "sample_recordings"
IMP = AtifImporter()


def source(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def only_run(path: Path) -> Recording:
    [run] = import_file(path)
    return run.recording


def models(rec: Recording) -> list[ModelRecord]:
    return [r for r in rec.records if isinstance(r, ModelRecord)]


def tools(rec: Recording) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


def source_calls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [tc for s in doc["steps"] for tc in s.get("tool_calls") or []]


def source_usage(doc: dict[str, Any]) -> tuple[int, int]:
    ms = [s["metrics"] for s in doc["steps"] if s["source"] == "agent" and "metrics" in s]
    return sum(m.get("prompt_tokens", 0) for m in ms), sum(m.get("completion_tokens", 0) for m in ms)


def usage(rec: Recording) -> tuple[int, int]:
    us = [m.response.usage for m in models(rec) if m.response is not None and m.response.usage is not None]
    return sum(u.input_tokens for u in us), sum(u.output_tokens for u in us)


# ------------------------------------------------------------------ the real files


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_real_file_is_detected_and_maps_every_step(path: Path) -> None:
    doc = source(path)
    assert detect(path) == "atif"
    rec = only_run(path)
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert len(models(rec)) == len(agent_steps)
    calls = source_calls(doc)
    assert [(t.tool, t.arguments, t.tool_call_id) for t in tools(rec)] == [
        (c["function_name"], c["arguments"], c["tool_call_id"]) for c in calls
    ]
    assert usage(rec) == source_usage(doc)
    for m, s in zip(models(rec), agent_steps):
        assert m.model == s["model_name"] == "gpt-4o"
        assert m.meta["step_id"] == s["step_id"]
        assert m.meta["cost_usd"] == s["metrics"]["cost_usd"]
        assert m.response.message.text == s["message"]  # the message; no logprobs, no token ids
        for k in ("logprobs", "prompt_token_ids", "completion_token_ids"):
            if k in s["metrics"]:
                assert m.meta["attribution"][k] == s["metrics"][k]
    fm = doc["final_metrics"]
    assert rec.metadata["final_metrics"] == fm
    assert rec.metadata["usage_totals"] == {
        "input_tokens": fm["total_prompt_tokens"],
        "output_tokens": fm["total_completion_tokens"],
        "cost": fm["total_cost_usd"],
        "source": "atif final_metrics",
    }
    assert rec.metadata["atif"]["schema_version"] == doc["schema_version"]
    assert rec.metadata["model"] == "openai/gpt-4o" and rec.metadata["agent"] == "terminus-2"
    assert rec.metadata["source"]["format"] == "atif"
    # the results carry no source_call_id: paired by position, said once per step
    paired = [w for w in rec.metadata["source"]["warnings"] if "paired by position" in w]
    assert len(paired) == len(calls)


def test_timeout_file_facts() -> None:
    """SOURCES.md #22: 4 steps (1 user, 3 agent), 3 bash_command calls, final_metrics
    982 / 145 / 0.0039050000000000005."""
    doc = source(TIMEOUT)
    assert doc["schema_version"] == "ATIF-v1.6"
    assert len(doc["steps"]) == 4
    rec = only_run(TIMEOUT)
    assert [r.kind for r in rec.records] == ["model", "tool"] * 3
    assert Counter(t.tool for t in tools(rec)) == {"bash_command": 3}
    assert [t.arguments["keystrokes"] for t in tools(rec)] == ["echo 'Hello, world!'\n", "sleep 5\n", "sleep 5\n"]
    assert "Hello, world!\n" in tools(rec)[0].result.content
    fm = rec.metadata["final_metrics"]
    assert (fm["total_prompt_tokens"], fm["total_completion_tokens"]) == (982, 145)
    assert fm["total_cost_usd"] == 0.0039050000000000005
    # per call: the first request is the user's prompt alone; later ones repeat the history
    first, second, _ = models(rec)
    assert [m.role for m in first.request.messages] == ["user"]
    assert [m.role for m in second.request.messages] == ["user", "assistant", "tool"]
    assert second.request.messages[1] == first.response.message
    tool_msg = second.request.messages[2]
    assert (tool_msg.tool_call_id, tool_msg.name) == ("call_0_1", "bash_command")
    assert len(first.meta["attribution"]["logprobs"]) == 55 == first.response.usage.output_tokens


def test_context_summarization_file_facts() -> None:
    """SOURCES.md #23: 10 steps (2 user, 7 agent, 1 system), 7 tool calls (bash_command
    5, mark_task_complete 2), the system step, 3 unresolved sub-trajectory refs,
    final_metrics 7802 / 1030."""
    doc = source(SUMMARIZATION)
    assert Counter(s["source"] for s in doc["steps"]) == {"agent": 7, "user": 2, "system": 1}
    rec = only_run(SUMMARIZATION)
    assert Counter(r.kind for r in rec.records) == {"model": 7, "tool": 7, "interrupt": 1}
    assert Counter(t.tool for t in tools(rec)) == {"bash_command": 5, "mark_task_complete": 2}
    [system] = [r for r in rec.records if isinstance(r, InterruptRecord)]
    assert system.value["type"] == "system_step" and system.value["step_id"] == 5
    assert system.value["message"] == "Performed context summarization and handoff to continue task."
    assert system.seq == 6  # after the third call's result, before the fourth model call
    refs = doc["steps"][4]["observation"]["results"][0]["subagent_trajectory_ref"]
    assert system.value["subagent_trajectory_ref"] == refs
    paths = [r["trajectory_path"] for r in refs]
    assert paths == [
        "trajectory.summarization-1-summary.json",
        "trajectory.summarization-1-questions.json",
        "trajectory.summarization-1-answers.json",
    ]
    unresolved = rec.metadata["unresolved_refs"]
    assert [u["trajectory_path"] for u in unresolved] == paths
    assert all(u["kind"] == "subagent" and u["step_id"] == 5 for u in unresolved)
    assert all(u["reason"] == "no such file beside the source" for u in unresolved)
    warned = [w for w in rec.metadata["source"]["warnings"] if "cannot be resolved" in w]
    assert [any(p in w for w in warned) for p in paths] == [True, True, True]
    assert rec.links is None  # nothing resolved
    fm = rec.metadata["final_metrics"]
    assert (fm["total_prompt_tokens"], fm["total_completion_tokens"]) == (7802, 1030)
    # the handoff: the next request holds the answers (step 6), not the system step's text
    after = models(rec)[3]
    assert after.request.messages[-1].role == "user"
    assert after.request.messages[-1].text.startswith("Here are the answers the other agent provided.")
    assert not any(m.role == "system" for m in after.request.messages)
    assert all("prompt_token_ids" in m.meta["attribution"] for m in models(rec))


def test_invalid_json_file_facts() -> None:
    """SOURCES.md #24: 5 steps (1 user, 4 agent, all with reasoning_content), step 2
    without tool calls whose observation is the harness's parse error, 3 tool calls,
    final_metrics 2417 / 200."""
    doc = source(INVALID_JSON)
    rec = only_run(INVALID_JSON)
    assert len(doc["steps"]) == 5 and len(models(rec)) == 4
    assert [t.tool for t in tools(rec)] == ["bash_command", "mark_task_complete", "mark_task_complete"]
    assert tools(rec)[0].arguments["keystrokes"] == "printf 'Hello, world!\\n' > hello.txt\n"
    assert tools(rec)[1].result.content.startswith("Current terminal state:")
    assert "Are you sure you want to mark the task as complete?" in tools(rec)[1].result.content
    for m, s in zip(models(rec), doc["steps"][1:]):
        parts = m.response.message.content
        assert parts[0] == {"type": "thinking", "thinking": s["reasoning_content"]}
        assert parts[1] == {"type": "text", "text": s["message"]}
    bad, retry = models(rec)[0], models(rec)[1]
    assert bad.response.message.tool_calls is None
    harness = doc["steps"][1]["observation"]["results"][0]["content"]
    assert harness.startswith("Previous response had parsing errors:\nERROR: Missing required fields: analysis, plan")
    assert bad.meta["harness_reply"] == [harness]
    # the harness's reply is what the model saw next: a user message after its response
    assert [m.role for m in retry.request.messages] == ["user", "assistant", "user"]
    assert retry.request.messages[-1].text == harness
    assert rec.records[1] is retry  # no tool record for the step without tool calls
    fm = rec.metadata["final_metrics"]
    assert (fm["total_prompt_tokens"], fm["total_completion_tokens"]) == (2417, 200)


def test_atif_files_and_other_formats_are_told_apart() -> None:
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file() and p.suffix in (".json", ".jsonl", ".yaml", ".traj")]
    for p in files:
        takers = [i.name for i in IMPORTERS if i.sniff(p, read_head(p)) is None]
        if p.parent.name == "atif":
            assert takers == ["atif"], p
        else:
            assert "atif" not in takers, p


# ------------------------------------------------------------------ references


def _traj(session: str, steps: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.7",
        "session_id": session,
        "agent": {"name": "test-agent", "version": "1", "model_name": "m-1"},
        "steps": steps,
        **more,
    }


def _agent(i: int, text: str, call: str | None = None) -> dict[str, Any]:
    s: dict[str, Any] = {"step_id": i, "source": "agent", "message": text, "metrics": {"prompt_tokens": 10 * i}}
    if call:
        s["tool_calls"] = [{"tool_call_id": call, "function_name": "bash", "arguments": {"cmd": text}}]
        s["observation"] = {"results": [{"source_call_id": call, "content": f"ran {text}"}]}
    return s


def test_references_beside_the_source_are_imported_as_linked_runs(tmp_path: Path) -> None:
    main_doc = _traj(
        "main",
        [
            {"step_id": 1, "source": "user", "message": "go"},
            _agent(2, "ls", "c1"),
            {
                "step_id": 3,
                "source": "system",
                "message": "delegated",
                "observation": {
                    "results": [
                        {
                            "subagent_trajectory_ref": [
                                {"session_id": "sub", "trajectory_path": "sub.json"},
                                {"session_id": "away", "trajectory_path": "../away.json"},
                                {"session_id": "gone", "trajectory_path": "gone.json"},
                            ]
                        }
                    ]
                },
            },
        ],
        continued_trajectory_ref="cont.json",
    )
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "main.json").write_text(json.dumps(main_doc))
    (folder / "sub.json").write_text(json.dumps(_traj("sub", [_agent(1, "pwd", "s1")])))
    (folder / "cont.json").write_text(json.dumps(_traj("main", [_agent(1, "done")])))
    (tmp_path / "away.json").write_text(json.dumps(_traj("away", [_agent(1, "x")])))
    runs = import_file(folder / "main.json")
    assert [r.run_id for r in runs] == ["main", "sub", "main~2"]
    main_rec, sub, cont = (r.recording for r in runs)
    [interrupt] = [r for r in main_rec.records if isinstance(r, InterruptRecord)]
    links = [(lk.rel, lk.target, lk.seq, lk.title) for lk in main_rec.links]
    assert links == [("sub-run", "sub", interrupt.seq, "sub.json"), ("next", "main~2", None, "cont.json")]
    assert [(lk.rel, lk.target) for lk in sub.links] == [("parent", "main")]
    assert [(lk.rel, lk.target) for lk in cont.links] == [("prev", "main")]
    assert [t.arguments for t in tools(sub)] == [{"cmd": "pwd"}]
    assert sub.metadata["source"]["file"] == "sub.json"
    reasons = {u["trajectory_path"]: u["reason"] for u in main_rec.metadata["unresolved_refs"]}
    assert reasons == {
        "../away.json": "its path leaves the source's folder",
        "gone.json": "no such file beside the source",
    }


def test_reference_cycles_and_embedded_trajectories(tmp_path: Path) -> None:
    a = _traj(
        "a",
        [_agent(1, "one")],
        continued_trajectory_ref="b.json",
        subagent_trajectories=[_traj("inner", [_agent(1, "emb", "e1")])],
    )
    a["steps"][0]["observation"] = {"results": [{"subagent_trajectory_ref": [{"session_id": "inner"}]}]}
    b = _traj("b", [_agent(1, "two")], continued_trajectory_ref="a.json")
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    runs = import_file(tmp_path / "a.json")
    assert [r.run_id for r in runs] == ["a", "inner", "b"]
    assert [t.arguments for t in tools(runs[1].recording)] == [{"cmd": "emb"}]
    [cycle] = runs[2].recording.metadata["unresolved_refs"]
    assert cycle["trajectory_path"] == "a.json" and "cycle" in cycle["reason"]


# ------------------------------------------------------------------ versions and damage


def test_newer_minor_version_is_read_with_a_warning_and_a_new_major_is_refused(tmp_path: Path) -> None:
    doc = source(TIMEOUT)
    doc["schema_version"] = "ATIF-v1.9"
    doc["steps"][1]["future_field"] = 1
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    [run] = import_file(p)
    ws = [str(w) for w in run.warnings]
    assert any("newer than ATIF-v1.7" in w for w in ws)
    assert "/steps/1: step field(s) future_field not mapped" in ws
    assert len(tools(run.recording)) == 3
    doc["schema_version"] = "ATIF-v2.0"
    p.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"/schema_version: .*major version 2 is not supported"):
        import_file(p, fmt="atif")


def test_bad_shapes_are_clear_errors_or_skipped_steps(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"schema_version": "ATIF-v1.7", "agent": {}, "steps": {}}))
    with pytest.raises(FormatError, match=r"t.json at /steps: 'steps' is missing or not an array"):
        import_file(p)
    p.write_text(json.dumps(_traj("s", [3, {"step_id": 2, "source": "robot", "message": "?"}, _agent(3, "a", "c")])))
    [run] = import_file(p)
    ws = [str(w) for w in run.warnings]
    assert "/steps/0: step is int, not an object; skipped" in ws
    assert any(w.startswith("/steps/1/source: step source 'robot'") for w in ws)
    assert [r.kind for r in run.recording.records] == ["interrupt", "model", "tool"]


def test_truncated_file_recovers_the_complete_steps(tmp_path: Path) -> None:
    data = TIMEOUT.read_bytes()
    cut = data.index(b'"step_id": 4')
    p = tmp_path / "cut.json"
    p.write_bytes(data[:cut])
    with pytest.raises(TruncatedSourceError, match="truncated"):
        import_file(p)
    [run] = import_file(p, recover=True)
    assert run.incomplete and len(models(run.recording)) == 2  # steps 1–3 complete


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(FILES), frac=st.floats(0.0, 1.0), flips=st.lists(st.integers(0, 255), max_size=4))
def test_damaged_files_raise_only_format_errors(tmp_path: Path, which: Path, frac: float, flips: list[int]) -> None:
    data = bytearray(which.read_bytes())
    if flips:  # corrupt a few bytes
        for n, byte in enumerate(flips):
            data[int(frac * (len(data) - 1) * (n + 1) / len(flips))] = byte
    else:  # cut
        data = data[: int(frac * len(data))]
    p = tmp_path / "damaged.json"
    p.write_bytes(bytes(data))
    for fmt in (None, "atif"):
        try:
            import_file(p, fmt=fmt)
        except (FormatError, SourceImportError):  # detection: no format recognised
            pass


# ------------------------------------------------------------------ export


def _exported(rec: Recording, tmp_path: Path, name: str = "out.json") -> tuple[dict[str, Any], Recording]:
    doc = recording_to_atif(rec)
    out = tmp_path / name
    out.write_bytes(orjson.dumps(doc))
    runs = IMP.load(out)
    return doc, runs[0].recording


def _check_valid_atif(doc: dict[str, Any]) -> None:
    assert doc["schema_version"] == SCHEMA_VERSION == "ATIF-v1.7"
    assert isinstance(doc["session_id"], str) and doc["session_id"]
    assert isinstance(doc["agent"]["name"], str) and isinstance(doc["agent"]["version"], str)
    assert [s["step_id"] for s in doc["steps"]] == list(range(1, len(doc["steps"]) + 1))
    for s in doc["steps"]:
        assert s["source"] in ("user", "agent", "system")
        assert isinstance(s["message"], (str, list))
        for tc in s.get("tool_calls", []):
            assert set(tc) == {"tool_call_id", "function_name", "arguments"} and isinstance(tc["arguments"], dict)
        for r in s.get("observation", {}).get("results", []):
            assert isinstance(r.get("content", ""), (str, list))
        for k in ("prompt_tokens", "completion_tokens"):
            assert isinstance(s.get("metrics", {}).get(k, 0), int)


def _same_calls(rec: Recording, back: Recording) -> None:
    """Same model, tool and interrupt records in the same order; equal tool keys,
    arguments and results; equal model keys, responses and usage."""
    kept = [r for r in rec.records if r.kind in ("model", "tool", "interrupt")]
    assert [r.kind for r in back.records] == [r.kind for r in kept]
    for a, b in zip(kept, back.records):
        if isinstance(a, ToolRecord):
            assert (b.tool, b.arguments, b.tool_call_id, b.key) == (a.tool, a.arguments, a.tool_call_id, a.key)
            assert b.result.to_json_obj() == a.result.to_json_obj()
        elif isinstance(a, ModelRecord):
            assert (b.model, b.key) == (a.model, a.key)
            assert b.request.to_json_obj() == a.request.to_json_obj()
            assert (b.response and b.response.to_json_obj()) == (a.response and a.response.to_json_obj())
        else:
            assert b.value == a.value


@pytest.mark.parametrize(
    "name",
    [
        "sample-agent-fault-tool-error.json",  # tool error, options, shared tool definitions
        "sample-agent-fault-wrong-tool.json",  # an approval interrupt between a call and its result
        "inspect-ai-tool-error-types.json",  # tool calls without a model call, without keys
        "tau-bench-airline-task0-trial0.json",  # a reused tool-call id (…~2)
        "vcr-anthropic-thinking-stream.json",  # thinking parts with signatures
    ],
)
def test_export_then_import_keeps_every_call_key_and_usage(name: str, tmp_path: Path) -> None:
    rec = load_recording(SAMPLES / name)
    doc, back = _exported(rec, tmp_path)
    _check_valid_atif(doc)
    _same_calls(rec, back)
    assert usage(back) == usage(rec)
    # the recording's metadata comes back; its provenance as exported_from
    assert back.metadata.get("exported_from") == rec.metadata.get("source")
    assert {k: v for k, v in back.metadata.items() if k in rec.metadata and k != "source"} == {
        k: v for k, v in rec.metadata.items() if k != "source"
    }


def test_sample_agent_export_reads_as_plain_atif(tmp_path: Path) -> None:
    """Without any extra.chassis (what another ATIF reader uses) the calls, their
    arguments, the history's roles and the usage are still there; only what ATIF has no
    field for (options, the tool error) is gone, so model keys differ."""
    rec = load_recording(SAMPLES / "sample-agent-fault-tool-error.json")
    doc = recording_to_atif(rec)
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent", "agent", "agent"]
    assert doc["agent"]["name"] == "sample-support-agent" and len(doc["agent"]["tool_definitions"]) == 6
    assert doc["steps"][4]["observation"]["results"][0]["content"].startswith("ERROR ServiceUnavailable")
    assert doc["final_metrics"]["total_prompt_tokens"] == usage(rec)[0]
    for s in doc["steps"]:
        s.get("extra", {}).pop("chassis", None)
        for r in s.get("observation", {}).get("results", []):
            r.get("extra", {}).pop("chassis", None)
    doc["extra"].pop("chassis")
    p = tmp_path / "plain.json"
    p.write_bytes(orjson.dumps(doc))
    [run] = IMP.load(p)
    back = run.recording
    assert [(t.tool, t.arguments, t.tool_call_id) for t in tools(back)] == [
        (t.tool, t.arguments, t.tool_call_id) for t in tools(rec)
    ]
    assert [[m.role for m in b.request.messages] for b in models(back)] == [
        [m.role for m in a.request.messages] for a in models(rec)
    ]
    assert usage(back) == usage(rec)
    assert [t.key for t in tools(back)] == [t.key for t in tools(rec)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_file_imported_exported_and_imported_again(path: Path, tmp_path: Path) -> None:
    """An ATIF file → recording → ATIF gives the file's steps back (results now name
    their call in source_call_id) and the same recording again."""
    rec = only_run(path)
    doc, back = _exported(rec, tmp_path)
    _check_valid_atif(doc)
    _same_calls(rec, back)
    assert [m.meta for m in models(back)] == [m.meta for m in models(rec)]
    orig = source(path)
    assert doc["final_metrics"] == orig["final_metrics"]
    assert doc["agent"] == orig["agent"] and doc["session_id"] == orig["session_id"]
    assert len(doc["steps"]) == len(orig["steps"])
    for s, o in zip(doc["steps"], orig["steps"]):
        for k, v in o.items():
            if k == "observation":
                for r, ro in zip(s[k]["results"], v["results"]):
                    assert {kk: vv for kk, vv in r.items() if kk not in ("source_call_id", "extra")} == ro
            else:
                assert s[k] == v, (o["step_id"], k)


# ------------------------------------------------------------------ CLI


def test_cli_import_validate_info_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.json"
    assert main(["import", str(INVALID_JSON), "-o", str(out)]) == 0
    cap = capsys.readouterr()
    assert "7 records (model 4, tool 3" in cap.out
    assert "paired by position" in cap.err
    assert main(["validate", str(out)]) == 0
    assert main(["info", str(out)]) == 0
    assert "gpt-4o" in capsys.readouterr().out
    exported = tmp_path / "back.atif.json"
    sample = SAMPLES / "sample-agent-fault-tool-error.json"
    assert main(["export", str(sample), "--to", "atif", "-o", str(exported)]) == 0
    assert f"wrote {exported}: 6 ATIF steps (4 agent steps, 3 tool calls, 3 tool results)" in capsys.readouterr().out
    doc = json.loads(exported.read_text())
    _check_valid_atif(doc)
    _same_calls(load_recording(sample), only_run(exported))
    # an importable source is exported too (converted in memory)
    again = tmp_path / "again.atif.json"
    assert main(["export", str(SUMMARIZATION), "--to", "atif", "-o", str(again)]) == 0
    assert "converted from atif" in capsys.readouterr().err


def test_sample_recording_is_the_import_of_the_real_file() -> None:
    rec = load_recording(SAMPLES / "atif-terminus-context-summarization.json", verify_keys=True)
    fresh = only_run(SUMMARIZATION)
    assert rec.metadata["source"]["sha256"] == fresh.metadata["source"]["sha256"]
    assert [r.to_json_obj() for r in rec.records] == [r.to_json_obj() for r in fresh.records]
    assert len(rec.metadata["unresolved_refs"]) == 3


# ------------------------------------------------------------------ review fixes


def test_a_referenced_trajectory_that_cannot_be_read_is_unresolved_not_fatal(tmp_path: Path) -> None:
    """A referenced file of another ATIF major version, or an embedded trajectory without
    steps, is listed in unresolved_refs with the reason; the referring run still imports."""
    ref_step = {
        "step_id": 2,
        "source": "system",
        "message": "delegated",
        "observation": {
            "results": [{"subagent_trajectory_ref": [{"trajectory_path": "v2.json"}, {"session_id": "emb"}]}]
        },
    }
    doc = _traj(
        "main",
        [_agent(1, "ls", "c1"), ref_step],
        subagent_trajectories=[{"schema_version": "ATIF-v1.7", "session_id": "emb"}],
    )
    (tmp_path / "main.json").write_text(json.dumps(doc))
    (tmp_path / "v2.json").write_text(json.dumps({**_traj("v2", [_agent(1, "x")]), "schema_version": "ATIF-v2.0"}))
    [run] = import_file(tmp_path / "main.json")
    reasons = [u["reason"] for u in run.recording.metadata["unresolved_refs"]]
    assert len(reasons) == 2
    assert "major version 2 is not supported" in reasons[0]
    assert "'steps' is missing or not an array" in reasons[1]
    assert len(tools(run.recording)) == 1


def test_an_embedded_trajectory_no_step_names_is_warned(tmp_path: Path) -> None:
    doc = _traj("main", [_agent(1, "ls", "c1")], subagent_trajectories=[_traj("orphan", [_agent(1, "x")])])
    p = tmp_path / "main.json"
    p.write_text(json.dumps(doc))
    [run] = import_file(p)
    assert any(
        w.place == "/subagent_trajectories/0" and "named by no subagent_trajectory_ref" in w.message
        for w in run.warnings
    )


def test_fields_atif_gives_to_agent_steps_are_warned_elsewhere(tmp_path: Path) -> None:
    user = {"step_id": 1, "source": "user", "message": "go", "metrics": {"prompt_tokens": 3}, "tool_calls": []}
    agent = {**_agent(2, "ls", "c1"), "reasoning_content": ["not", "text"]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(_traj("s", [user, agent])))
    [run] = import_file(p)
    ws = [str(w) for w in run.warnings]
    assert "/steps/0: field(s) metrics, tool_calls of a user step not mapped (ATIF gives them to agent steps)" in ws
    assert "/steps/1/reasoning_content: reasoning_content is list, not a string; skipped" in ws


def test_export_keeps_tool_arguments_that_differ_from_the_call(tmp_path: Path) -> None:
    """A tool record whose arguments are not its call's (an OpenInference TOOL span's
    input.value, a client's rewrite) comes back with its own arguments and key."""
    p = tmp_path / "t.json"
    p.write_text(json.dumps(_traj("s", [_agent(1, "ls", "c1")])))
    [run] = import_file(p)
    rec = run.recording
    [t] = tools(rec)
    t.arguments = {"cmd": "ls", "cwd": "/srv"}
    t.key = t.compute_key()
    doc, back = _exported(rec, tmp_path, "back.json")
    assert doc["steps"][0]["observation"]["results"][0]["extra"]["chassis"]["arguments"] == t.arguments
    _same_calls(rec, back)


SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def _hostile_files(tmp_path: Path) -> list[Path]:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    mark = "[red]x[/] \x1b]0;pwn\x07"
    docs: dict[str, Any] = {
        "markup": _traj(mark, [{"step_id": 1, "source": "user", "message": mark}, _agent(2, mark, mark)]),
        "secrets": _traj(
            "s",
            [
                {
                    **_agent(1, f"export OPENAI_API_KEY={SECRET}", "c1"),
                    "reasoning_content": f"use {AWS_KEY}",
                    "metrics": {"prompt_tokens": 1, "extra": {"note": SECRET}},
                }
            ],
            notes=f"key {SECRET}",
        ),
        "deep": _traj("s", [_agent(1, "x", "c1")]),
        "huge": _traj("s", [_agent(1, "A" * 5_000_000, "c1")]),
        "bigint": _traj(
            "s",
            [{**_agent(2**64, "x", "c1"), "metrics": {"prompt_tokens": 2**60, "cost_usd": 2**70}}],
            final_metrics={"total_prompt_tokens": 2**64},
        ),
    }
    docs["deep"]["steps"][0]["tool_calls"][0]["arguments"]["cmd"] = deep
    out = []
    for name, d in docs.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(d))
        out.append(p)
    nan = tmp_path / "nan.json"
    nan.write_text(
        json.dumps(_traj("s", [_agent(1, "x", "c1")])).replace('"prompt_tokens": 10', '"prompt_tokens": NaN')
    )
    bad_utf8 = tmp_path / "utf8.json"
    bad_utf8.write_bytes(json.dumps(_traj("s", [_agent(1, "ZZZ", "c1")])).encode().replace(b"ZZZ", b"\xff\xfe"))
    return [*out, nan, bad_utf8]


def test_hostile_content_imports_redacted_and_saves(tmp_path: Path) -> None:
    from core.record.io import save_recording

    for p in _hostile_files(tmp_path):
        try:
            runs = IMP.load(p)
        except FormatError:
            assert p.stem == "deep"  # nested past the limit: a clear error
            continue
        assert p.stem != "deep"
        for run in runs:
            out = tmp_path / f"{p.stem}.rec.json"
            save_recording(run.recording, out)
            data = out.read_bytes()
            assert SECRET.encode() not in data and AWS_KEY.encode() not in data, p.stem
            load_recording(out, verify_keys=True)
            exported = orjson.dumps(recording_to_atif(run.recording))
            assert SECRET.encode() not in exported and AWS_KEY.encode() not in exported


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(FILES), frac=st.floats(0.0, 1.0), flips=st.lists(st.integers(0, 255), max_size=4))
def test_damaged_files_raise_only_format_errors_from_the_importer_itself(
    tmp_path: Path, which: Path, frac: float, flips: list[int]
) -> None:
    """As above, without import_file's net for unexpected shapes."""
    data = bytearray(which.read_bytes())
    for n, byte in enumerate(flips):
        data[int(frac * (len(data) - 1) * (n + 1) / len(flips))] = byte
    if not flips:
        data = data[: int(frac * len(data))]
    p = tmp_path / "damaged.json"
    p.write_bytes(bytes(data))
    try:
        IMP.load(p)
    except FormatError:
        pass


def test_export_of_an_agent_acting_in_text_counts_its_tool_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SWE-agent writes its actions in its replies (no structured calls): the export's
    summary counts the results, so "0 tool calls" is not read as "no tools ran"."""
    exported = tmp_path / "swe.atif.json"
    assert main(["export", str(SAMPLES / "swe-agent-pydicom-1458.json"), "--to", "atif", "-o", str(exported)]) == 0
    assert "(12 agent steps, 0 tool calls, 12 tool results)" in capsys.readouterr().out
    doc = json.loads(exported.read_text())
    assert sum(len((s.get("observation") or {}).get("results") or []) for s in doc["steps"]) == 12
