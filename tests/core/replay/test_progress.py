"""Replay progress and cancellation (docs/replay.md, "Answer sources and progress").

Rules: ``on_progress`` receives ``started``, then one ``call`` event per answered call
(``calls_answered`` counts up by one, ``current_seq``/``source``/``reason`` match the
outcome), then exactly one last event, ``paused`` or ``finished``; ``on_event`` keeps
receiving ``(record, source)`` for every event; ``cancel`` is polled after each event and
stops the replay between two calls, which ends ``failed`` with error type ``Cancelled``
(the replay states table has no cancelled state).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.record.recording import ToolResult
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine, ReplayOutcome, ReplayProgress
from core.replay.replays import resume_replay, start_replay
from core.workspace import Workspace
from tests.builders import chat_recording, random_recording


def check_sequence(progress: list[ReplayProgress], out: ReplayOutcome) -> None:
    """The progress events of one run against its outcome."""
    kinds = [p.kind for p in progress]
    assert kinds[0] == "started" and progress[0].calls_answered == 0
    assert kinds[-1] in ("paused", "finished")
    assert set(kinds[1:-1]) <= {"call"}
    calls = progress[1:-1]
    assert [p.calls_answered for p in calls] == list(range(1, len(calls) + 1))
    assert progress[-1].calls_answered == len(calls) == sum(out.answers.values())
    events = [r for r in out.events.records if r.kind in ("tool", "model")]
    assert [p.current_seq for p in calls] == [r.seq for r in events]
    assert [p.call_kind for p in calls] == [r.kind for r in events]
    for p, r in zip(calls, events):
        assert p.call_name == (r.tool if r.kind == "tool" else r.model)
        assert (p.source, p.reason) == (out.sources[r.seq], out.reasons[r.seq])
    steps = [p.steps for p in progress]
    assert steps == sorted(steps) and steps[-1] == out.steps
    last = progress[-1]
    assert last.status == out.status and last.stop_reason == out.stop_reason and last.error == out.error
    if out.status == "paused":
        assert last.kind == "paused" and last.requirements == 1
        assert out.requirement is not None and last.requirement_id == out.requirement.id
    else:
        assert last.kind == "finished" and last.requirements == 0 and last.requirement_id is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_progress_arrives_in_order(data: Any) -> None:
    n = data.draw(st.integers(1, 6))
    base = random_recording(
        lambda a, b: data.draw(st.integers(a, b)),
        lambda: data.draw(st.booleans()),
        lambda xs: data.draw(st.sampled_from(xs)),
        n,
    )
    if not base.records:
        return
    tools = [r for r in base.records if r.kind == "tool"]
    ivs = []
    if tools and data.draw(st.booleans()):
        t = data.draw(st.sampled_from(tools))
        ivs = [ToolResultIntervention(seq=t.seq, result=ToolResult(content="changed"))]
        at = data.draw(st.sampled_from([r.seq for r in base.records if r.seq <= t.seq]))
    else:
        at = data.draw(st.sampled_from([r.seq for r in base.records]))
    policy = Policy(drift=data.draw(st.sampled_from(["strict", "lenient"])))
    progress: list[ReplayProgress] = []
    events: list[tuple[int, str]] = []
    out = ReplayEngine(
        base,
        new_branch(base, "base.json", at=at, interventions=ivs, policy=policy),
        on_progress=progress.append,
        on_event=lambda rec, src: events.append((rec.seq, src)),
    ).run()
    check_sequence(progress, out)
    # on_event (kept as it was): every event, attribution records included, in order
    assert events == [(r.seq, out.sources[r.seq]) for r in out.events.records]


def test_paused_replay_ends_with_paused() -> None:
    base = chat_recording(2)
    progress: list[ReplayProgress] = []
    out = ReplayEngine(
        base,
        new_branch(
            base, "base.json", at=2, interventions=[ToolResultIntervention(seq=2, result=ToolResult(content=1))]
        ),
        on_progress=progress.append,
    ).run()
    assert out.status == "paused"
    check_sequence(progress, out)
    assert progress[-1].status == "paused" and progress[-1].stop_reason == "paused"


def test_no_executor_failure_is_started_then_finished() -> None:
    base = chat_recording(1)
    progress: list[ReplayProgress] = []
    out = ReplayEngine(
        base, new_branch(base, "base.json", at=0, policy=Policy(model="live")), on_progress=progress.append
    ).run()
    assert [p.kind for p in progress] == ["started", "finished"]
    assert progress[-1].status == "failed" and progress[-1].error is not None
    assert progress[-1].error.type == "NoExecutor" == (out.error.type if out.error else None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(1, 4), stop_after=st.integers(1, 9))
def test_property_cancel_stops_between_calls(steps: int, stop_after: int) -> None:
    """A cancellation asked for after the k-th call stops the replay with exactly k
    calls answered and recorded, none of them half done."""
    base = chat_recording(steps)
    n_calls = sum(1 for r in base.records if r.kind in ("tool", "model"))
    progress: list[ReplayProgress] = []
    asked = {"cancel": False}

    def on_progress(p: ReplayProgress) -> None:
        progress.append(p)
        if p.kind == "call" and p.calls_answered == stop_after:
            asked["cancel"] = True

    out = ReplayEngine(
        base, new_branch(base, "base.json", at=0), on_progress=on_progress, cancel=lambda: asked["cancel"]
    ).run()
    check_sequence(progress, out)
    calls = [r for r in out.events.records if r.kind in ("tool", "model")]
    if stop_after >= n_calls:  # asked after the last call: only attribution is left
        assert len(calls) == n_calls
    else:
        assert len(calls) == stop_after == sum(out.answers.values())
    if out.status == "failed":
        assert out.error is not None and out.error.type == "Cancelled"
        assert progress[-1].kind == "finished" and progress[-1].status == "failed"
    else:  # the replay had finished before the cancellation was polled
        assert stop_after >= n_calls
    assert (out.status == "failed") == (stop_after <= n_calls)


def test_cancel_asked_while_copying_attribution_finishes_the_call_first() -> None:
    """The lifecycle record before the first model call is copied while that call is
    being answered: a cancellation asked then takes effect once the call is recorded."""
    base = chat_recording(2)  # 0 lifecycle, 1 model, ...
    asked = {"cancel": False}

    def on_event(rec: Any, source: str) -> None:
        if rec.kind == "lifecycle":
            asked["cancel"] = True

    out = ReplayEngine(
        base, new_branch(base, "base.json", at=0), on_event=on_event, cancel=lambda: asked["cancel"]
    ).run()
    assert out.status == "failed" and out.error is not None and out.error.type == "Cancelled"
    assert [r.kind for r in out.events.records] == ["lifecycle", "model"]
    assert out.answers == {"recorded": 1} and set(out.reasons) == {1}


def test_start_and_resume_pass_progress_through(tmp_path: Any) -> None:
    base = chat_recording(2)
    branch = new_branch(
        base, "base.json", at=2, interventions=[ToolResultIntervention(seq=2, result=ToolResult(content=1))]
    )
    started: list[ReplayProgress] = []
    resumed: list[ReplayProgress] = []
    with Workspace.open(tmp_path / "ws") as ws:
        record, out = start_replay(ws, "base.json", branch, base=base, on_progress=started.append)
        assert record.status == "paused"
        check_sequence(started, out)
        record, out = resume_replay(ws, record.id, on_progress=resumed.append)
        check_sequence(resumed, out)
        assert [p.kind for p in resumed][0] == "started"
