"""Claude Code sessions: the real files of SOURCES.md entries 17–19 (main line, rewind
fork, sub-agents), a project folder, a compaction chain written from the documented
shape, damaged files, and the recorded fork stored in a workspace."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError, SourceImportError
from core.importers import detect, import_file, open_any
from core.record.io import load_recording, save_recording
from core.record.recording import InterruptRecord, ModelRecord, ToolRecord
from core.recorded_forks import store_recorded_forks
from core.workspace import Workspace
from inspector.cli import main
from tests.builders import TESTS

CC = TESTS / "data" / "real_traces" / "claude_code"
SOUND = CC / "jssoundrecorder_sonnet45.jsonl"
REWIND = CC / "rewind_fork_opus46.jsonl"
TEAM_DIR = CC / "teammates_subagents"
TEAM = TEAM_DIR / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _kinds(rec) -> Counter:
    return Counter(r.kind for r in rec.records)


def test_detected_and_every_real_session_round_trips(tmp_path: Path) -> None:
    for f in (SOUND, REWIND, TEAM):
        assert detect(f) == "claude_code"
        for i, run in enumerate(import_file(f)):
            out = tmp_path / f"{f.stem}-{i}.json"
            save_recording(run.recording, out)
            back = load_recording(out, verify_keys=True)
            assert len(back.records) == len(run.recording.records)


def test_a_session_gives_its_calls_tools_errors_and_rejections() -> None:
    src = _lines(SOUND)
    (run,) = import_file(SOUND)
    rec = run.recording
    # one model call per distinct message id of the assistant lines (SOURCES.md: 36)
    ids = {ln["message"]["id"] for ln in src if ln["type"] == "assistant"}
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert len(models) == len(ids) == 36
    assert {m.model for m in models} == {"claude-sonnet-4-5-20250929"}
    thinking = sum(
        1
        for m in models
        for p in (m.response.message.content if isinstance(m.response.message.content, list) else [])
        if isinstance(p, dict) and p.get("type") == "thinking"
    )
    assert thinking == 36
    tools = [r for r in rec.records if isinstance(r, ToolRecord)]
    assert Counter(t.tool for t in tools) == {
        "Edit": 18,
        "TodoWrite": 15,
        "Bash": 13,
        "Read": 11,
        "Write": 5,
        "Grep": 3,
        "Glob": 2,
        "BashOutput": 2,
        "KillShell": 2,
    }
    errors = [t for t in tools if t.result.error is not None]
    assert len(errors) == 6
    rejected = [t for t in errors if t.result.error.type == "rejected_by_user"]
    assert Counter(t.tool for t in rejected) == {"Bash": 3, "Edit": 1}
    others = {t.tool: t.result.error.message for t in errors if t not in rejected}
    assert "is not running, so cannot be killed" in others["KillShell"]
    assert "String to replace not found in file." in others["Edit"]
    # each rejection is also an interrupt, right after its tool record
    seqs = {r.seq: r for r in rec.records}
    for t in rejected:
        nxt = seqs[t.seq + 1]
        assert isinstance(nxt, InterruptRecord) and nxt.value["type"] == "tool_rejected"
    interrupted = [r for r in rec.records if isinstance(r, InterruptRecord) and r.value.get("type") == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0].value["message"].startswith("[Request interrupted by user")
    assert models[-1].response.message.text.startswith("Perfect! The AudioWorklet migration is complete.")
    # every tool call answered by id, and a model call comes before its tools
    assert all(t.tool_call_id for t in tools)
    asked = {tc.id: m.seq for m in models for tc in (m.response.message.tool_calls or [])}
    assert all(asked[t.tool_call_id] < t.seq for t in tools)
    # usage: what the model read (input + cache) from the last line of each response, and
    # the largest output figure among its lines
    out_by_id: dict[str, int] = {}
    for ln in src:
        if ln["type"] == "assistant":
            mid = ln["message"]["id"]
            out_by_id[mid] = max(out_by_id.get(mid, 0), ln["message"]["usage"]["output_tokens"])
    want_out = sum(out_by_id.values())
    assert sum(m.response.usage.output_tokens for m in models) == want_out
    # the queue operations are listed as skipped, once
    assert any("12 queue-operation line(s) skipped" in w.message for w in run.warnings)
    assert rec.metadata["model"] == "claude-sonnet-4-5-20250929"
    assert rec.metadata["cli_version"] == "2.0.42"


def test_the_rewind_fork_is_one_recorded_alternative_at_the_documented_point() -> None:
    main_run, alt = import_file(REWIND)
    assert main_run.parent is None and alt.parent == main_run.run_id
    assert len(main_run.forks) == 1
    fork = main_run.forks[0]
    assert fork.run_id == alt.run_id
    # the documented fork point: line 16 (stop_hook_summary eb84e3ee) has two user children;
    # the main line is the newer one ("I actually don't like…", ending with /exit)
    assert fork.prompt.text.startswith("I very much like this idea")
    assert fork.base_prompt.text.startswith("I actually don't like much this idea")
    at = main_run.recording.records[fork.checkpoint]
    assert isinstance(at, InterruptRecord) and at.value["content"].startswith("I actually don't like")
    alt_at = alt.recording.records[fork.checkpoint]
    assert alt_at.value["content"].startswith("I very much like this idea")
    # the shared prefix is identical in both runs
    for a, b in zip(main_run.recording.records[: fork.checkpoint], alt.recording.records[: fork.checkpoint]):
        assert a.kind == b.kind and getattr(a, "key", None) == getattr(b, "key", None)
    # 9 model calls in the file: 3 shared, then 3 on each path
    assert _kinds(main_run.recording)["model"] == 6 and _kinds(alt.recording)["model"] == 6
    links = {(lk.rel, lk.target, lk.seq) for lk in main_run.recording.links}
    assert ("fork", alt.run_id, fork.checkpoint) in links
    assert [(lk.rel, lk.target) for lk in alt.recording.links] == [("forked-from", main_run.run_id)]


def test_the_fork_is_stored_as_a_branch_and_its_replay_and_the_diff_shows_both_prompts(tmp_path: Path, capsys) -> None:
    ws_dir = tmp_path / "ws"
    assert main(["import", str(REWIND), "--workspace", str(ws_dir)]) == 0
    err = capsys.readouterr().err
    assert "stored: branch rewind-" in err
    with Workspace.open(ws_dir) as ws:
        (branch,) = ws.list_branches()
        (replay,) = ws.list_replays()
        assert replay.status == "completed" and replay.comparability.level == "partial"
        assert replay.answers == {"recorded": 8}
        assert branch.checkpoint == import_file(REWIND)[0].forks[0].checkpoint
        (iv,) = branch.interventions
        assert iv.kind == "messages" and iv.messages[0].text.startswith("I very much like this idea")
        events = ws.events_file(replay.id)
        # a second import stores nothing new
        again = store_recorded_forks(ws, import_file(REWIND), str(REWIND))
        assert [f.created for f in again] == [False]
        assert len(ws.list_branches()) == 1
    assert main(["diff", str(REWIND), str(events), "--json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert doc["first_divergence"]["dimension"] == "request"
    assert "I very much like this idea" in out and "I actually don't like much this idea" in out


def test_sub_agents_are_nested_runs_linked_from_their_calls() -> None:
    runs = import_file(TEAM)
    main_run = runs[0]
    rec = main_run.recording
    assert _kinds(rec)["model"] == 17 and _kinds(rec)["tool"] == 40
    tools = [r for r in rec.records if isinstance(r, ToolRecord)]
    assert Counter(t.tool for t in tools) == {
        "TaskUpdate": 12,
        "Bash": 9,
        "TaskCreate": 6,
        "Agent": 6,
        "ToolSearch": 3,
        "SendMessage": 3,
        "TaskList": 1,
    }
    assert not any(t.result.error for t in tools)
    models = [r for r in rec.records if isinstance(r, ModelRecord)]
    assert models[-1].response.message.text.startswith("Experiment complete. All six tasks done.")
    assert {m.model for m in models} == {"claude-opus-4-7"}
    agents = [t for t in tools if t.tool == "Agent"]
    subs = {r.run_id: r for r in runs if r.run_id.startswith("agent-")}
    assert len(subs) == 6
    on_disk = {p.stem for p in (TEAM_DIR / TEAM.stem / "subagents").glob("agent-*.jsonl")}
    assert set(subs) == on_disk
    for call in agents:
        sub = subs[call.meta["sub_run"]]
        assert sub.parent == main_run.run_id
        assert sub.recording.links[0].rel == "parent" and sub.recording.links[0].seq == call.seq
        assert sub.recording.metadata["agent"]["agentType"] == "general-purpose"
        assert all(r.run_id == sub.run_id for r in sub.recording.records)
        assert sub.recording.metadata["source"]["run"] == sub.run_id  # what the header names
    sub_links = [lk for lk in rec.links if lk.rel == "sub-run"]
    assert sorted(lk.target for lk in sub_links) == sorted(subs)
    total = Counter()
    for sub in subs.values():
        total += _kinds(sub.recording)
    assert total["model"] == 66 and total["tool"] == 77
    failed = [
        r.result.error.message
        for sub in subs.values()
        for r in sub.recording.records
        if isinstance(r, ToolRecord) and r.result.error
    ]
    assert len(failed) == 3
    assert sorted(m.split("status code ")[-1][:3] for m in failed) == ["403", "404", "504"]
    # --run selects a sub-agent; the file opens on its main run
    assert open_any(TEAM).run_id == main_run.run_id
    one = next(iter(subs))
    assert open_any(TEAM, run=one).run_id == one


def test_a_missing_sub_agent_file_is_a_warning_and_the_call_stays(tmp_path: Path) -> None:
    f = tmp_path / TEAM.name
    shutil.copy(TEAM, f)  # without its subagents folder
    runs = import_file(f)
    assert len(runs) == 1
    msgs = [w.message for w in runs[0].warnings]
    assert sum("is not beside the session" in m for m in msgs) == 6
    assert sum(1 for r in runs[0].recording.records if r.kind == "tool" and r.tool == "Agent") == 6


def test_a_project_folder_lists_its_sessions(tmp_path: Path, capsys) -> None:
    proj = tmp_path / "-Users-me-project"
    proj.mkdir()
    shutil.copy(SOUND, proj / SOUND.name)
    shutil.copy(REWIND, proj / REWIND.name)
    (proj / "notes.txt").write_text("not a session")
    assert detect(proj) == "claude_code"
    runs = import_file(proj)
    tops = [r for r in runs if r.parent is None]
    assert len(tops) == 2
    assert main(["import", str(proj), "--list"]) == 0
    out = capsys.readouterr().out
    assert "7acd37a8-2745-4b58-a8a9-46164b22ad9e" in out and "03eb5929-52b3-4b13-ada3-b93ae35806b8" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FormatError):
        detect(empty)


def _line(**kw) -> str:
    base = {"isSidechain": False, "sessionId": "s-compact", "version": "2.1.0", "cwd": "/p", "userType": "external"}
    return json.dumps({**base, **kw})


def test_a_compaction_keeps_the_chain_and_shows_the_summary_as_what_it_is(tmp_path: Path) -> None:
    # the documented shape (no real sample under 2 MB exists): a compact_boundary system
    # line has no parentUuid and names the last line before it in logicalParentUuid; the
    # next user line (isCompactSummary) is the summary the model sees from then on
    def asst(uid, parent, mid, text, t):
        return _line(
            type="assistant",
            uuid=uid,
            parentUuid=parent,
            timestamp=t,
            message={
                "id": mid,
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 5, "output_tokens": 2},
            },
        )

    lines = [
        _line(
            type="user",
            uuid="u1",
            parentUuid=None,
            timestamp="2026-01-01T00:00:00Z",
            message={"role": "user", "content": "first task"},
        ),
        asst("a1", "u1", "m1", "done one", "2026-01-01T00:00:01Z"),
        _line(
            type="system",
            subtype="compact_boundary",
            uuid="c1",
            parentUuid=None,
            logicalParentUuid="a1",
            timestamp="2026-01-01T00:00:02Z",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 150000},
        ),
        _line(
            type="user",
            uuid="s1",
            parentUuid="c1",
            isCompactSummary=True,
            timestamp="2026-01-01T00:00:03Z",
            message={
                "role": "user",
                "content": "This session is being continued from a previous conversation. Summary: task one done.",
            },
        ),
        _line(
            type="user",
            uuid="u2",
            parentUuid="s1",
            timestamp="2026-01-01T00:00:04Z",
            message={"role": "user", "content": "second task"},
        ),
        asst("a2", "u2", "m2", "done two", "2026-01-01T00:00:05Z"),
    ]
    f = tmp_path / "s-compact.jsonl"
    f.write_text("\n".join(lines) + "\n")
    (run,) = import_file(f)
    recs = run.recording.records
    shape = [(r.kind, r.value.get("type") or r.value.get("content") if r.kind == "interrupt" else None) for r in recs]
    assert shape == [
        ("interrupt", "first task"),
        ("model", None),
        ("interrupt", "compaction_boundary"),
        ("interrupt", "compaction"),
        ("interrupt", "second task"),
        ("model", None),
    ]
    assert recs[2].value["trigger"] == "auto" and recs[3].value["summary"].startswith("This session is being continued")
    # after the compaction the model sees the summary, not the history before it
    assert [m.text for m in recs[5].request.messages] == [
        "This session is being continued from a previous conversation. Summary: task one done.",
        "second task",
    ]
    assert recs[1].request.messages[0].text == "first task"


def test_damaged_lines_are_warnings_naming_their_line(tmp_path: Path) -> None:
    text = REWIND.read_text().splitlines()
    text[2] = "{not json"
    f = tmp_path / "damaged.jsonl"
    f.write_text("\n".join(text) + "\n")
    runs = import_file(f)
    msgs = [str(w) for w in runs[0].warnings]
    assert any(m.startswith("line 3: not a JSON line") for m in msgs)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(SOUND.read_bytes()[:-200])
    (run,) = import_file(cut)
    assert any("the last line is cut short" in w.message for w in run.warnings)
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text('{"sessionId": "x", "type": "user"\n')
    with pytest.raises(FormatError) as e:
        import_file(nothing, "claude_code")
    assert "nothing.jsonl" in str(e.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.sampled_from([SOUND, REWIND, TEAM]),
    cut=st.floats(min_value=0.0, max_value=1.0),
    corrupt=st.lists(st.tuples(st.floats(0, 1), st.binary(min_size=1, max_size=8)), max_size=4),
)
def test_truncation_and_corruption_never_raise_anything_but_format_error(tmp_path: Path, which, cut, corrupt) -> None:
    data = bytearray(which.read_bytes())
    for where, junk in corrupt:
        i = int(where * (len(data) - 1))
        data[i : i + len(junk)] = junk
    data = data[: max(1, int(len(data) * cut))]
    f = tmp_path / "fuzz.jsonl"
    f.write_bytes(bytes(data))
    for fmt in (None, "claude_code"):
        try:
            runs = import_file(f, fmt)
        except (FormatError, SourceImportError):  # detection may refuse a file cut to nothing
            continue
        for r in runs:
            assert r.recording.records is not None


def test_an_unknown_file_names_every_format_tried_the_new_ones_included(tmp_path: Path) -> None:
    f = tmp_path / "mystery.json"
    f.write_text('{"hello": "world"}\n')
    with pytest.raises(SourceImportError) as e:
        detect(f)
    for name in ("claude_code", "codex", "atif", "openinference", "langfuse"):
        assert f"{name}: " in str(e.value), name
    jsonl = tmp_path / "mystery.jsonl"
    jsonl.write_text('{"a": 1}\n{"b": 2}\n')
    with pytest.raises(SourceImportError) as e:
        detect(jsonl)
    assert "claude_code: no Claude Code session line" in str(e.value)


def hostile_session(folder: Path) -> Path:
    """The rewind session with its session id and the rewound prompt made of markup and
    terminal control codes."""
    from tests.hostile import HOSTILE, MARKUP_TOOL

    lines = []
    for ln in _lines(REWIND):
        if "sessionId" in ln:
            ln["sessionId"] = f"{MARKUP_TOOL}{HOSTILE}"
        msg = ln.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("content"), str) and msg["content"].startswith("I very much"):
            msg["content"] = f"[bold]{HOSTILE}[/bold] I very much like this"
        lines.append(json.dumps(ln))
    f = folder / "hostile.jsonl"
    f.write_text("\n".join(lines) + "\n")
    return f


def test_hostile_prompts_and_session_ids_stay_text(tmp_path: Path, capsys) -> None:
    from tests.hostile import unsafe_in

    f = hostile_session(tmp_path)
    ws_dir = tmp_path / "ws"
    assert main(["import", str(f), "--list", "--workspace", str(ws_dir)]) == 0
    cap = capsys.readouterr()
    assert "stored: branch rewind-" in cap.err and "[bold]" in cap.err
    for text in (cap.out, cap.err):
        assert unsafe_in(text) == [], text
    with Workspace.open(ws_dir) as ws:
        (branch,) = ws.list_branches()
        assert branch.label.startswith("rewind: [bold]\x1b[2J")  # stored as recorded; shown escaped
