"""The workspace's typed services: branches with their base, stored recordings, events
files and export, events metadata without the records, the branch tree of a base,
fixtures by id — and one recording digest for the whole package."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import zlib
from pathlib import Path

import orjson
import pytest

from core.errors import FixtureError, WorkspaceError
from core.record.io import recording_digest, recording_to_dict, records_digest
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolCall, ToolResult
from core.replay.branch import (
    BranchDraft,
    ModelResponseIntervention,
    Policy,
    ToolResultIntervention,
    new_branch,
    resolve_branch,
)
from core.replay.fixtures import Fixture
from core.replay.replays import start_replay
from core.workspace import (
    EVENTS_DIR,
    BranchNode,
    BranchTree,
    ReplaySummary,
    StoredRecording,
    Workspace,
    _head_metadata,
)
from tests.builders import ROOT, SAMPLES, chat_recording


@pytest.fixture()
def ws(tmp_path: Path):
    with Workspace.open(tmp_path / "ws") as w:
        yield w


def _paused_branch(base: Recording):
    call = ToolCall(id="call_new", name="lookup", arguments={"q": "new"})
    response = ModelResponse(message=ChatMessage(role="assistant", content="", tool_calls=[call]))
    return new_branch(base, "base.json", at=3, interventions=[ModelResponseIntervention(step=1, response=response)])


# --------------------------------------------------------------------------- one digest


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.json")))
def test_recording_digest_is_the_stored_one_for_every_sample(name: str) -> None:
    raw = orjson.loads((SAMPLES / name).read_bytes())
    if "digest" not in raw:
        pytest.skip("no digest in this file")
    rec = Recording.load(SAMPLES / name)
    assert recording_digest(rec) == raw["digest"]
    # computed again from the records, as saving does, it is the same value
    assert recording_to_dict(rec)["digest"] == raw["digest"]
    assert recording_digest(rec.model_copy(update={"digest": None})) == raw["digest"]


def test_recording_digest_of_a_recording_without_one() -> None:
    rec = chat_recording(2)
    raw = [r.to_json_obj() for r in rec.records]
    unsealed = rec.model_copy(update={"digest": None})
    assert recording_digest(unsealed) == records_digest(raw) == rec.digest
    assert recording_digest(unsealed) == orjson.loads(unsealed.dumps())["digest"]


def test_put_recording_stores_under_recording_digest(ws: Workspace) -> None:
    rec = chat_recording(2).model_copy(update={"digest": None})
    assert ws.put_recording(rec, "base.json") == recording_digest(rec)
    assert ws.get_recording(recording_digest(rec)).digest == recording_digest(rec)


def test_storage_does_not_import_the_engine() -> None:
    code = "import sys, core.workspace; print('core.replay.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_save_replay_outputs_takes_anything_with_events(ws: Workspace) -> None:
    base = chat_recording(2)
    record, outcome = start_replay(ws, "base.json", new_branch(base, "base.json", at=0), base=base)

    @dataclasses.dataclass
    class Outputs:
        events: Recording

    ws.save_replay_outputs(record, Outputs(outcome.events), [])
    assert ws.replay_events_bytes(record.id) is not None and record.events_digest == recording_digest(outcome.events)


# --------------------------------------------------------------------------- branches


def test_add_branch_stores_branch_and_base(ws: Workspace) -> None:
    base = chat_recording(2).model_copy(update={"digest": None})
    br = new_branch(base, "base.json", at=2, label="first")
    assert br.base.digest == ""  # the base had no digest: the branch names none
    digest = ws.add_branch(br, base, "base.json")
    assert digest == recording_digest(base)
    assert ws.has_branch(br.id) and not ws.has_branch("br-nope")
    assert ws.get_branch(br.id).to_json_obj() == br.to_json_obj()
    assert [b.id for b in ws.list_branches(digest)] == [br.id]  # found under the stored digest
    assert ws.add_branch(br, base) == digest  # the same branch again: a no-op
    [stored] = ws.list_recordings()
    assert stored == StoredRecording(
        digest=digest,
        path="base.json",
        records=len(base.records),
        added_at=stored.added_at,
        metadata=base.metadata,
        replays=0,
    )


def test_add_branch_refuses_an_unknown_parent_and_stores_nothing(ws: Workspace) -> None:
    base = chat_recording(2)
    br = new_branch(base, "base.json", at=2, parent="br-gone")
    with pytest.raises(WorkspaceError, match=rf"{ws.path}: no branch 'br-gone' \(the parent of branch {br.id}\)"):
        ws.add_branch(br, base)
    assert ws.list_branches() == [] and ws.list_recordings() == []


def test_add_branch_refuses_a_changed_branch(ws: Workspace) -> None:
    base = chat_recording(2)
    br = new_branch(base, "base.json", at=2)
    ws.add_branch(br, base)
    with pytest.raises(WorkspaceError, match="already exists in the workspace with different content"):
        ws.add_branch(br.model_copy(update={"label": "changed"}), base)


# --------------------------------------------------------------------------- replays and events


def test_counts_and_recordings_with_replays(ws: Workspace) -> None:
    base = chat_recording(2)
    br = new_branch(base, "base.json", at=0)
    start_replay(ws, "base.json", br, base=base)
    start_replay(ws, "base.json", br, base=base)
    assert ws.count_replays() == 2 and ws.count_replays(base_digest=base.digest) == 2
    assert ws.count_replays(branch_id=br.id) == 2 and ws.count_replays(branch_id="br-other") == 0
    assert [(r.digest, r.replays) for r in ws.list_recordings()] == [(base.digest, 2)]


def test_events_file_export_and_errors(ws: Workspace, tmp_path: Path) -> None:
    base = chat_recording(2)
    record, outcome = start_replay(ws, "base.json", new_branch(base, "base.json", at=0), base=base)
    assert ws.events_file(record.id) == ws.path.parent / EVENTS_DIR / f"{record.id}.json"
    assert not ws.events_file(record.id).exists()
    written = ws.write_events_file(record.id)
    assert written == ws.events_file(record.id) and written.read_bytes() == ws.replay_events_bytes(record.id)
    out = ws.export_events(record.id, tmp_path / "out" / "events.json")
    assert Recording.load(out).digest == record.events_digest == recording_digest(outcome.events)
    with pytest.raises(WorkspaceError, match=r"no replay 'rp-nope'"):
        ws.export_events("rp-nope", tmp_path / "x.json")
    with pytest.raises(WorkspaceError, match=r"replay id '\.\./evil' cannot name an events file"):
        ws.events_file("../evil")


def test_a_replay_without_events_yet(ws: Workspace, tmp_path: Path) -> None:
    from core.replay.replay_record import ReplayRecord

    base = chat_recording(2)
    br = new_branch(base, "base.json", at=0)
    ws.add_branch(br, base)
    ws.create_replay(ReplayRecord(id="rp-new", base_digest=base.digest, branch_id=br.id, policy=br.policy))
    assert ws.write_events_file("rp-new") is None and ws.replay_events_metadata("rp-new") is None
    with pytest.raises(WorkspaceError, match=r"replay rp-new has no events yet"):
        ws.export_events("rp-new", tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_events_metadata_is_read_without_the_records(ws: Workspace) -> None:
    base = chat_recording(3)
    record, outcome = start_replay(ws, "base.json", new_branch(base, "base.json", at=0), base=base)
    full = orjson.loads(ws.replay_events_bytes(record.id))["metadata"]
    assert ws.replay_events_metadata(record.id) == full == outcome.events.metadata
    assert full["replay"]["branch"]["id"] == record.branch_id


@pytest.mark.parametrize("size", [10, 40_000, 300_000])
def test_head_metadata_reads_large_headers_and_refuses_other_layouts(size: int) -> None:
    meta = {"final_output": "é" * size, "outcome": "success", "n": [1, 2.5, None, True]}
    doc = {"format": "chassis.replay", "format_version": 3, "metadata": meta, "records": [{"x": "y" * 1000}]}
    assert _head_metadata(zlib.compress(orjson.dumps(doc), 1)) == meta
    other = {"metadata": meta, "format": "chassis.replay", "records": []}
    assert _head_metadata(zlib.compress(orjson.dumps(other))) is None
    assert _head_metadata(zlib.compress(orjson.dumps(doc))[:50]) is None  # cut short: the caller reads it whole
    assert _head_metadata(b"not zlib") is None


def test_events_metadata_falls_back_to_reading_it_all_and_names_damage(ws: Workspace) -> None:
    base = chat_recording(2)
    record, _ = start_replay(ws, "base.json", new_branch(base, "base.json", at=0), base=base)
    other = {"metadata": {"outcome": "success"}, "format": "chassis.replay", "records": []}
    ws._conn.execute(
        "UPDATE replay_events SET body=? WHERE replay_id=?", (zlib.compress(orjson.dumps(other)), record.id)
    )
    assert ws.replay_events_metadata(record.id) == {"outcome": "success"}
    ws._conn.execute("UPDATE replay_events SET body=? WHERE replay_id=?", (b"garbage", record.id))
    with pytest.raises(WorkspaceError, match=rf"table replay_events, row {record.id}: not zlib data"):
        ws.replay_events_metadata(record.id)
    ws._conn.execute("UPDATE replay_events SET body=? WHERE replay_id=?", (zlib.compress(b"[1]"), record.id))
    with pytest.raises(WorkspaceError, match="the events have no metadata object"):
        ws.replay_events_metadata(record.id)


# --------------------------------------------------------------------------- fixtures


def test_get_fixture(ws: Workspace) -> None:
    fx = ws.put_fixture(Fixture(scope="project", kind="tool", name="lookup", output={"content": 1}))
    assert ws.get_fixture(fx.id) == fx
    with pytest.raises(FixtureError, match=rf"no fixture 'fx-nope' in {ws.path}"):
        ws.get_fixture("fx-nope")


# --------------------------------------------------------------------------- the branch tree


def test_branch_tree_of_a_base(ws: Workspace) -> None:
    base = chat_recording(3)
    fix = ToolResultIntervention(seq=4, result=ToolResult(content={"value": "fixed"}))
    root = new_branch(base, "base.json", at=4, interventions=[fix], policy=Policy(drift="lenient"), label="fixed")
    record, outcome = start_replay(ws, "base.json", root, base=base)
    paused, _ = start_replay(ws, "base.json", _paused_branch(base), base=base)
    # a branch of the first replay's events grows the tree below its branch
    events = Recording.loads(outcome.events.dumps())
    child = resolve_branch(ws, BranchDraft(base_path="events.json", at=events.records[-1].seq), events)
    assert child.parent == root.id
    ws.add_branch(child, events, "events.json")
    grandchild = new_branch(events, "events.json", at=0, parent=child.id, label="deeper")
    ws.add_branch(grandchild, events)
    # an unrelated base's branch is not in the tree
    other = chat_recording(1)
    ws.add_branch(new_branch(other, "other.json", at=0), other)

    tree = ws.branch_tree(base.digest)
    assert isinstance(tree, BranchTree) and tree.base_digest == base.digest and tree.base_path == "base.json"
    assert [(depth, n.id) for depth, n in tree.walk()] == [
        (0, root.id),
        (1, child.id),
        (2, grandchild.id),
        (0, paused.branch_id),
    ]
    assert len(tree) == 4
    top = tree.roots[0]
    assert isinstance(top, BranchNode)
    assert (top.label, top.checkpoint, top.interventions, top.parent) == ("fixed", 4, 1, None)
    assert top.base_digest == base.digest and top.base_path == "base.json"
    [summary] = top.replays
    assert summary == ReplaySummary(
        id=record.id,
        status="completed",
        status_line="completed",
        comparability=record.comparability.level,
        stop_reason=record.stop_reason,
        outcome=None,
        outcome_reason=None,
        steps=record.steps,
        created_at=record.created_at,
    )
    mid = top.children[0]
    assert mid.base_digest == events.digest and mid.base_path == "events.json" and mid.replays == ()
    assert mid.children[0].label == "deeper"
    [p] = tree.roots[1].replays
    assert (p.status, p.comparability) == ("paused", "none")
    # the tree of the events recording starts at the branches made from it
    assert [n.id for _, n in ws.branch_tree(events.digest).walk()] == [child.id, grandchild.id]
    assert ws.branch_tree("sha256:unknown") == BranchTree(base_digest="sha256:unknown", base_path=None, roots=())


def test_branch_tree_shows_the_outcome_an_evaluator_gave(tmp_path: Path) -> None:
    base = Recording.load(SAMPLES / "sample-agent-success.json")
    with Workspace.open(tmp_path / "ws") as ws:
        br = resolve_branch(ws, BranchDraft(base_path="base.json", at=3), base)
        record, _ = start_replay(ws, "base.json", br, base=base, executor="recorded", trust_executor=True)
        [node] = ws.branch_tree(base.digest).roots
    [summary] = node.replays
    assert (summary.id, summary.status, summary.outcome) == (record.id, "completed", "success")
    assert summary.outcome_reason
