"""Tool-call ids are settled once, at import, and every consumer pairs a result with its
call the same way (docs/importers.md, "tool-call ids").

Sources reuse ids (SWE-agent 1.x, tau-bench) and leave them empty (Gemini; a client may
invent one in the next request). The importer gives each call one id, unique in the run
(``ID~N`` for the N-th use of ``ID``, the client's id or ``~N`` for an empty one) and uses
it in the response that asked for the call, its tool record and every later request
message carrying it. Then the timeline's links (``l``, "answered by"), the transcript, the
audit's ``tool_call_id`` lineage, the keys the diff aligns by and the replay engine's
transcript all agree on which result answers which call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.analysis.audit import audit
from core.analysis.diff import trace_diff
from core.analysis.timeline import TimelineIndex, transcript_for
from core.importers import import_file, select_run
from core.record.io import load_recording
from core.record.recording import ModelRecord, Recording, ToolRecord, ToolResult
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from tests.builders import SAMPLES, TESTS

REAL = TESTS / "data" / "real_traces"


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _assistant(text: str, call: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": [call], "agent": "main", "message_type": "action"}


def _tool(cid: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "content": [{"type": "text", "text": text}], "tool_call_ids": [cid], "agent": "main"}


def swe_traj(tmp_path: Path, *, patch: str = "diff --git a/x.py b/x.py\n-a\n+b\n", rewrite_empty: bool = True) -> Path:
    """A SWE-agent 1.x trajectory: two function calls that both have id ``call_A``, a third
    call whose id is empty in the response (the client names it ``call_Z`` in the next
    request when ``rewrite_empty``), then ``submit``. Each step's ``query`` holds the
    exact messages sent, as SWE-agent 1.x writes them."""
    system = {"role": "system", "content": "You fix bugs.", "agent": "main"}
    task = {"role": "user", "content": "Fix x.py.", "agent": "main"}
    steps = [
        ("Look at the file.", _call("call_A", "bash", {"command": "cat x.py"}), "a = 1"),
        ("Look at the test.", _call("call_A", "bash", {"command": "cat test_x.py"}), "assert b"),
        ("Edit it.", _call("", "str_replace_editor", {"command": "str_replace", "path": "x.py"}), "edited"),
        ("Submit.", _call("call_S", "submit", {}), patch),
    ]
    history: list[dict[str, Any]] = [system, task]
    trajectory = []
    for text, call, result in steps:
        query = json.loads(json.dumps(history))
        if rewrite_empty:  # the client sent the empty id as call_Z
            for m in query:
                for c in m.get("tool_calls") or ():
                    if c["id"] == "":
                        c["id"] = "call_Z"
                if m.get("tool_call_ids") == [""]:
                    m["tool_call_ids"] = ["call_Z"]
        history.append(_assistant(text, call))
        history.append(_tool(call["id"], result))
        trajectory.append(
            {
                "action": f"{call['function']['name']} {call['function']['arguments']}",
                "observation": result,
                "response": text,
                "thought": text,
                "execution_time": 0.5,
                "state": {},
                "query": query,
                "extra_info": {},
            }
        )
    doc = {
        "trajectory": trajectory,
        "history": history,
        "info": {"exit_status": "submitted", "submission": patch, "swe_agent_version": "1.0.1"},
        "replay_config": json.dumps({"agent": {"model": {"name": "claude-x"}}}),
        "environment": "main",
    }
    p = tmp_path / "repo__x-1.traj"
    p.write_text(json.dumps(doc))
    return p


def calls(rec: Recording) -> tuple[list[ModelRecord], list[ToolRecord]]:
    return (
        [r for r in rec.records if isinstance(r, ModelRecord)],
        [r for r in rec.records if isinstance(r, ToolRecord)],
    )


def assert_pairing_is_consistent(rec: Recording) -> None:
    """Every consumer pairs each tool record with the same call: the response listing its
    id (timeline links both ways, the transcript, the audit's ``issued`` edge), and every
    later ``tool`` message carrying its id is its result (the audit's ``tool_call_id``
    edges; the keys the diff aligns by hold the same ids)."""
    models, tools = calls(rec)
    ids = [t.tool_call_id for t in tools]
    assert all(ids) and len(set(ids)) == len(ids), ids
    index = TimelineIndex(rec)
    pos = {r.seq: i for i, r in enumerate(rec.records)}
    rep = audit(rec)
    edges = {(e.source, e.target, e.via) for e in rep.edges}
    for t in tools:
        [issuer] = [m for m in models if any(c.id == t.tool_call_id for c in m.response.message.tool_calls or ())]
        assert index.linked(pos[t.seq]) == [pos[issuer.seq]]
        assert pos[t.seq] in index.linked(pos[issuer.seq])
        _, note = transcript_for(index, pos[t.seq])
        assert f"model call seq {issuer.seq} that requested it" in note
        assert (issuer.seq, t.seq, "issued") in edges
        readers = [m for m in models if any(msg.tool_call_id == t.tool_call_id for msg in m.request.messages)]
        for m in readers:
            assert m.seq > t.seq
            assert (t.seq, m.seq, "tool_call_id") in edges
            [carried] = [msg for msg in m.request.messages if msg.tool_call_id == t.tool_call_id]
            assert carried.text == (t.result.content if isinstance(t.result.content, str) else carried.text)


def test_swe_agent_reused_and_empty_ids_are_one_id_per_call_everywhere(tmp_path: Path) -> None:
    (run,) = import_file(swe_traj(tmp_path))
    rec = run.recording
    models, tools = calls(rec)
    assert [t.tool_call_id for t in tools] == ["call_A", "call_A~2", "call_Z", "call_S"]
    assert [[c.id for c in m.response.message.tool_calls or ()] for m in models] == [
        ["call_A"],
        ["call_A~2"],
        ["call_Z"],  # empty in the response: the id the client gave it in the next request
        ["call_S"],
    ]
    # the last request carries every call under its one id
    last = models[-1].request.messages
    assert [c.id for m in last if m.tool_calls for c in m.tool_calls] == ["call_A", "call_A~2", "call_Z"]
    assert [m.tool_call_id for m in last if m.role == "tool"] == ["call_A", "call_A~2", "call_Z"]
    assert_pairing_is_consistent(rec)
    rep = audit(rec)
    assert rep.unused() == [] and rep.final_seq == tools[-1].seq
    msgs = [str(w) for w in run.warnings]
    assert any("'call_A' is used by more than one call" in w and "'call_A~2'" in w for w in msgs)
    assert any("has no id; recorded as 'call_Z'" in w for w in msgs)
    # the ids stay valid through save and a verified load
    out = tmp_path / "rec.json"
    rec.save(out)
    assert [r.to_json_obj() for r in load_recording(out, verify_keys=True).records] == [
        r.to_json_obj() for r in rec.records
    ]


def test_an_empty_id_nobody_renames_gets_one(tmp_path: Path) -> None:
    (run,) = import_file(swe_traj(tmp_path, rewrite_empty=False))
    _, tools = calls(run.recording)
    assert [t.tool_call_id for t in tools] == ["call_A", "call_A~2", "~1", "call_S"]
    assert_pairing_is_consistent(run.recording)


def test_tau_bench_reused_ids_link_and_count_as_used() -> None:
    """tau-bench task 0 reuses two ids: seq 8 and 11 are the second uses. Their results
    reach the next requests under their own ids, so the audit traces them (they were
    reported "unused" when only the records were renamed)."""
    src = REAL / "tau_bench" / "gpt-4o-airline.json"
    rec = select_run(import_file(src), "task0-trial0", source=str(src)).recording
    assert_pairing_is_consistent(rec)
    rep = audit(rec)
    by_seq = {c.seq: c for c in rep.calls}
    for seq in (8, 11):
        assert by_seq[seq].status == "contributed" and "tool_call_id" in by_seq[seq].via, by_seq[seq]
    assert rep.unused() == []
    index = TimelineIndex(rec)
    assert index.linked(8) == [7] and index.linked(7) == [8]
    assert index.linked(11) == [10] and index.linked(10) == [11]


def test_the_bundled_tau_bench_sample_holds_the_same_ids() -> None:
    saved = load_recording(SAMPLES / "tau-bench-airline-task0-trial0.json", verify_keys=True)
    assert_pairing_is_consistent(saved)


def test_gemini_call_without_id_takes_the_id_the_client_gave_it() -> None:
    """pydantic-ai replays a Gemini call (no id) to OpenAI as ``pyd_ai_…``: the call, its
    record and both later requests use that id, and its result counts as used."""
    rec = import_file(REAL / "vcr_cassettes" / "pydantic-ai__test_openai__test_multiple_agent_tool_calls.yaml")[
        0
    ].recording
    assert_pairing_is_consistent(rec)
    rep = audit(rec)
    assert rep.unused() == []
    assert {c.seq: c.status for c in rep.calls}[1] == "contributed"


def test_diff_and_replay_pair_the_second_use_of_an_id_with_its_own_call(tmp_path: Path) -> None:
    """The diff aligns by canonical keys (request messages included) and the engine's
    generic loop rebuilds requests from tool records: with one id per call, a changed
    result of the *second* ``call_A`` shows up under ``call_A~2`` only."""
    (run,) = import_file(swe_traj(tmp_path))
    base = run.recording
    _, tools = calls(base)
    second = tools[1]
    # an unchanged branch replays to the base, every request recorded
    same = ReplayEngine(base, new_branch(base, "b.json", at=second.seq)).run()
    assert same.comparability.level == "full" and same.first_divergence is None
    assert trace_diff(base, same.events).identical
    # the same answer given as an intervention: the rebuilt requests are the base's own
    iv = ToolResultIntervention(seq=second.seq, result=second.result)
    again = ReplayEngine(base, new_branch(base, "b.json", at=second.seq, interventions=[iv])).run()
    assert again.status == "completed" and again.comparability.level == "full", again.comparability
    assert set(again.answers) == {"recorded", "intervention"}
    # a changed answer: the next request carries it under call_A~2, call_A keeps its own
    changed = ToolResultIntervention(seq=second.seq, result=ToolResult(content="assert c"))
    out = ReplayEngine(
        base,
        new_branch(base, "b.json", at=second.seq, interventions=[changed], policy=Policy(drift="lenient")),
    ).run()
    assert out.first_divergence is not None
    assert (out.first_divergence.base_seq, out.first_divergence.dimension) == (second.seq, "tool result")
    nxt = next(r for r in out.events.records if isinstance(r, ModelRecord) and r.seq > second.seq)
    results = {m.tool_call_id: m.text for m in nxt.request.messages if m.role == "tool"}
    assert results == {"call_A": "a = 1", "call_A~2": "assert c"}
    diff = trace_diff(base, out.events)
    assert diff.first_divergence is not None and diff.first_divergence.base_seq == second.seq


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(st.sampled_from(["c1", "c2", ""]), min_size=1, max_size=6))
def test_property_any_reused_or_empty_ids_pair_consistently(tmp_path: Path, ids: list[str]) -> None:
    """tau-bench-shaped runs whose calls reuse ids or leave them empty, one call per
    turn: every call gets one id used everywhere, and every consumer pairs alike."""
    traj: list[dict[str, Any]] = [{"role": "system", "content": "policy"}, {"role": "user", "content": "go"}]
    for k, cid in enumerate(ids):
        traj.append({"role": "assistant", "content": None, "tool_calls": [_call(cid, "lookup", {"q": k})]})
        traj.append({"role": "tool", "tool_call_id": cid, "name": "lookup", "content": f"result {k}"})
    traj.append({"role": "assistant", "content": "done"})
    run = {"task_id": 1, "trial": 0, "reward": 1.0, "info": {"task": {}}, "traj": traj}
    path = tmp_path / "ids-airline.json"
    path.write_text(json.dumps([run]))
    (imported,) = import_file(path, "tau_bench")
    rec = imported.recording
    assert_pairing_is_consistent(rec)
    _, tools = calls(rec)
    assert [t.result.content for t in tools] == [f"result {k}" for k in range(len(ids))]
    assert audit(rec).unused() == []


@pytest.mark.parametrize("name", ["tau-bench-airline-task0-trial0.json", "vcr-gemini-openai-mixed.json"])
def test_regenerated_samples_pair_consistently(name: str) -> None:
    assert_pairing_is_consistent(load_recording(SAMPLES / name, verify_keys=True))
