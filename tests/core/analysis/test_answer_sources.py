"""Answer sources and reasons per timeline row, from real replay events.

The replays run on the bundled sample-agent fault recording (``get_order`` returns the
order under another customer's id at the fault seq): a ``tool_result`` intervention at
the fault puts the honest order back, a branch-scoped model fixture answers the next
request, so the events hold ``recorded``, ``intervention`` and ``fixture`` answers; a
second replay denies the tool and lets lenient drift answer (``policy``, ``drift``), a
third answers the model live with the sample agent's executor (``live``).
"""

from __future__ import annotations

import shutil
import typing
from pathlib import Path

import orjson
import pytest

from core.analysis.timeline import ANSWER_SOURCES, UNKNOWN_SOURCE, ReplayAnswers, TimelineIndex
from core.analysis.timeline_text import CSV_FIELDS, SOURCE_SYMBOLS, rows_to_csv, source_label
from core.examples.sample_agent import get_order
from core.record.indexed import IndexedFile
from core.record.io import indexed_header, recording_from_dict
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolResult
from core.replay.branch import Policy, ToolPolicyIntervention, ToolResultIntervention, new_branch
from core.replay.engine import AnswerSource, ReplayEngine, ReplayOutcome
from core.replay.fixtures import Fixture
from core.replay.replays import resume_replay, start_replay
from core.workspace import Workspace
from tests.builders import ROOT

SAMPLE = ROOT / "sample_recordings" / "sample-agent-fault-corrupted-result.json"
#: fixed ids, so the events (and a snapshot of them) are the same at every run
BRANCH_ID = "br-answer-sources"
FIXTURE_ID = "fx-final-answer"
REPLAY_ID = "rp-answer-sources"
FINAL = ModelResponse(
    message=ChatMessage(role="assistant", content="I have refunded the blender of order A1001 (89.99)."),
    finish_reason="stop",
)


def fault_seq(base: Recording) -> int:
    return int(base.metadata["fault"]["seq"])


def honest_branch(base: Recording):
    """Checkpoint at the fault; the corrupted ``get_order`` result replaced by the honest one."""
    seq = fault_seq(base)
    return new_branch(
        base,
        "base.json",
        at=seq,
        interventions=[ToolResultIntervention(seq=seq, result=ToolResult(content=get_order("A1001")))],
        label="honest order",
        branch_id=BRANCH_ID,
    )


def final_fixture(base: Recording) -> Fixture:
    """A model-wide fixture of the branch: the final answer."""
    model = next(r.model for r in base.records if r.kind == "model")
    return Fixture(id=FIXTURE_ID, scope=f"branch:{BRANCH_ID}", kind="model", name=model, output=FINAL.to_json_obj())


def replay_with_sources(folder: Path) -> tuple[Path, ReplayOutcome]:
    """Run the honest-order replay in a workspace under ``folder`` (the base copied to
    ``folder/base.json``); return the events file the CLI would write
    (``WORKSPACE/replays/ID.json``) and the outcome."""
    shutil.copy(SAMPLE, folder / "base.json")
    base = Recording.load(folder / "base.json")
    with Workspace.open(folder / "ws") as ws:
        record, outcome = start_replay(
            ws,
            folder / "base.json",
            honest_branch(base),
            base=base,
            fixtures=[final_fixture(base)],
            replay_id=REPLAY_ID,
            events_file=True,
        )
        assert record.status == "completed", record
        return ws.events_file(record.id), outcome


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple[Path, ReplayOutcome]:
    return replay_with_sources(tmp_path_factory.mktemp("answers"))


@pytest.fixture(scope="module")
def index(replayed) -> TimelineIndex:
    return TimelineIndex(Recording.load(replayed[0]))


def test_the_sources_are_those_of_the_state_table():
    assert ANSWER_SOURCES == typing.get_args(AnswerSource)
    assert set(SOURCE_SYMBOLS) == {*ANSWER_SOURCES, UNKNOWN_SOURCE}
    # one symbol each, one cell wide, never a letter: the name is written beside it
    assert len(set(SOURCE_SYMBOLS.values())) == len(SOURCE_SYMBOLS)
    assert all(len(s) == 1 and not s.isalnum() for s in SOURCE_SYMBOLS.values())
    assert source_label("fixture") == "▣ fixture"


def test_every_call_has_its_source_and_the_engines_reason(index, replayed):
    _, outcome = replayed
    seq = fault_seq(Recording.load(SAMPLE))
    assert index.has_answer_sources
    by_seq = {index.seqs[p]: index.answer_source(p) for p in range(len(index))}
    calls = [p for p in range(len(index)) if index.kinds[p] in ("model", "tool")]
    assert {index.seqs[p]: by_seq[index.seqs[p]] for p in calls} == {
        3: "recorded",
        4: "recorded",
        5: "recorded",
        seq: "intervention",
        seq + 1: "fixture",
    }
    # separators answer nothing
    assert all(by_seq[index.seqs[p]] is None for p in range(len(index)) if index.kinds[p] in ("snapshot", "lifecycle"))
    # the reason of every call is the engine's own (stored, or made in its words for a
    # recorded one: these keys are recorded once, so the engine adds no "(n of m)")
    for p in calls:
        assert index.answer_reason(p) == outcome.reasons[index.seqs[p]]
    fx = index.position_of_seq(seq + 1)
    assert (
        index.answer_reason(fx)
        == f"fixture {FIXTURE_ID} (branch scope) answers any request to model 'scripted-support-v1' (model-wide)"
    )
    assert index.answer_reason(index.position_of_seq(3)).endswith(", before the checkpoint")
    assert index.source_counts() == {"recorded": 3, "intervention": 1, "fixture": 1}


def test_rows_json_and_csv_carry_source_and_reason(index):
    rows = {r.seq: r.to_json() for r in index.rows()}
    assert rows[6]["source"] == "intervention"
    assert rows[6]["reason"].startswith("intervention 0 (tool_result at seq 6)")
    assert rows[0]["source"] is None and rows[0]["reason"] is None  # a lifecycle record
    # every record is replayed: the status says ok (or error), the source says by what
    assert "replayed" in set(index.statuses) and {r["status"] for r in rows.values()} <= {"ok", "error"}
    text = rows_to_csv(index.rows(), sources=True)
    header, *lines = text.splitlines()
    assert header.split(",") == [*CSV_FIELDS, "source", "reason"]
    assert any(",fixture,fixture fx-final-answer (branch scope) answers any request" in ln for ln in lines)


def test_filter_by_source(index):
    fx = index.position_of_seq(7)
    iv = index.position_of_seq(6)
    assert index.select(sources=["fixture"]) == [fx]
    assert index.select(sources=["intervention", "fixture"]) == [iv, fx]
    assert index.select(["tool"], sources=["recorded"]) == [index.position_of_seq(4)]
    assert index.select(sources=["live"]) == []
    # every source: every row, separators included
    assert index.select(sources=[*ANSWER_SOURCES, UNKNOWN_SOURCE]) == list(range(len(index)))
    with pytest.raises(ValueError, match="unknown answer source.*known sources: recorded"):
        index.select(sources=["fixtures"])


def test_the_raw_index_of_a_fast_opened_file_gives_the_same_sources(replayed):
    path, _ = replayed
    verified = TimelineIndex(Recording.load(path))
    # as inspector.loader fast-opens a big version-3 file: the header and the record index,
    # each record read raw from its range
    f = IndexedFile.open(path)
    shell, _ = indexed_header(f)
    from_index = TimelineIndex.from_columns(
        shell, f.index.columns, [f.raw_record(i) for i in range(len(f))], source=str(path)
    )
    # ... and a whole document (a version-1/2 file, or a copy rewritten without its index):
    # the header validated, the records raw
    doc = Recording.load(path).to_dict()
    header = recording_from_dict({k: v for k, v in doc.items() if k not in ("records", "digest")} | {"records": []})
    from_raw = TimelineIndex.from_raw(header, doc["records"], source=str(path))
    for raw in (from_index, from_raw):
        assert len(raw) == len(verified)
        assert [raw.answer_source(p) for p in range(len(raw))] == [verified.answer_source(p) for p in range(len(raw))]
        assert [raw.answer_reason(p) for p in range(len(raw))] == [verified.answer_reason(p) for p in range(len(raw))]
    f.close()


def test_a_plain_recording_has_no_sources():
    index = TimelineIndex(Recording.load(SAMPLE))
    assert not index.has_answer_sources and index.answers is None
    assert index.answer_source(3) is None and index.answer_reason(3) is None
    assert index.source_counts() == {}
    assert "source" not in index.row(3).to_json() and "reason" not in index.row(3).to_json()
    assert rows_to_csv(index.rows([3])).splitlines()[0].split(",") == list(CSV_FIELDS)
    assert index.select(sources=["fixture"]) == list(range(len(index)))  # nothing to narrow


def test_policy_and_drift_answers():
    base = Recording.load(SAMPLE)
    seq = fault_seq(base)
    branch = new_branch(
        base,
        "base.json",
        at=seq,
        interventions=[ToolPolicyIntervention(tool="get_order", action="deny", reason="read-only")],
        policy=Policy(drift="lenient"),
    )
    out = ReplayEngine(base, branch, replay_id="rp-policy").run()
    index = TimelineIndex(out.events)
    assert index.answer_source(index.position_of_seq(seq)) == "policy"
    assert index.answer_reason(index.position_of_seq(seq)) == "the tool gate denied the call: read-only"
    assert index.answer_source(index.position_of_seq(seq + 1)) == "drift"
    assert index.answer_reason(index.position_of_seq(seq + 1)).startswith("lenient drift: the base's answer at seq")


def test_live_answers(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "base.json")
    base = Recording.load(tmp_path / "base.json")
    seq = fault_seq(base)
    branch = new_branch(
        base,
        "base.json",
        at=seq,
        interventions=[ToolResultIntervention(seq=seq, result=ToolResult(content=get_order("A1001")))],
        policy=Policy(model="live"),
    )
    with Workspace.open(tmp_path / "ws") as ws:
        _, out = start_replay(ws, tmp_path / "base.json", branch, base=base, executor="recorded", trust_executor=True)
    index = TimelineIndex(out.events)
    live = [p for p in range(len(index)) if index.answer_source(p) == "live"]
    assert live and all(index.kinds[p] == "model" for p in live)
    # the intervention changed the tool result the next request carries: its message
    assert index.answer_reason(live[0]) == (
        "answered live by the executor (live_model): the request differs from the base at messages[5].content"
    )


def test_hostile_or_old_metadata_is_shown_never_trusted():
    base = Recording.load(SAMPLE)
    meta = {
        "replay": {
            "branch": {"checkpoint": "6"},  # not an integer: no "before the checkpoint"
            "answer_sources": {"3": "fixture", "4": "[red]oracle[/red]", "x": "live", "-5": "live", "6": 7},
            "answer_reasons": {"4": "because", "5": {"not": "text"}},
        }
    }
    index = TimelineIndex(base.model_copy(update={"metadata": meta}))
    assert index.answers == ReplayAnswers(
        sources={3: "fixture", 4: UNKNOWN_SOURCE, 6: UNKNOWN_SOURCE},
        reasons={4: "because"},
        unknown={4: "[red]oracle[/red]", 6: "7"},
        checkpoint=None,
    )
    assert index.answer_source(index.position_of_seq(4)) == UNKNOWN_SOURCE
    assert index.answer_reason(index.position_of_seq(4)) == (
        "metadata.replay.answer_sources names an unknown answer source: [red]oracle[/red] (because)"
    )
    # older events without reasons: the source is named, and that no reason is stored
    assert (
        index.answer_reason(index.position_of_seq(3)) == "answered by a fixture (these replay events store no reason)"
    )
    assert index.answer_reason(index.position_of_seq(5)).startswith("recorded answer for key sha256:")
    assert "before the checkpoint" not in index.answer_reason(index.position_of_seq(5))
    # not an object: not a replay's events
    assert not TimelineIndex(
        base.model_copy(update={"metadata": {"replay": {"answer_sources": []}}})
    ).has_answer_sources


def test_a_resumed_replay_equals_a_fresh_one_reasons_included(tmp_path):
    """Paused on the model call after the intervention, the fixture attached, resumed:
    the events (answer sources and reasons included) are the bytes of a fresh replay
    with the fixture present from the start."""
    shutil.copy(SAMPLE, tmp_path / "base.json")
    base = Recording.load(tmp_path / "base.json")
    with Workspace.open(tmp_path / "resumed") as ws:
        record, _ = start_replay(ws, tmp_path / "base.json", honest_branch(base), base=base, events_file=True)
        assert record.status == "paused"
        ws.put_fixture(final_fixture(base))
        record, resumed = resume_replay(ws, record.id, events_file=True)
        assert record.status == "completed"
        resumed_bytes = ws.events_file(record.id).read_bytes()
    fresh_path, fresh = replay_with_sources(tmp_path)
    assert resumed.reasons == fresh.reasons
    assert resumed_bytes == fresh_path.read_bytes()
    meta = orjson.loads(resumed_bytes)["metadata"]["replay"]
    assert meta["answer_reasons"] == {str(s): fresh.reasons[s] for s in (6, 7)}
