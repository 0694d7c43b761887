"""The user-turn rule (docs/replay.md, "Replay states"; the seed documents: a replayed run
pauses on its own checkpointer, and replay never fabricates an answer from interrupt
records).

Before the checkpoint, and after it while the branch is aligned with the base, a person's
input is copied as recorded. Once the branch has diverged, every point where the agent
waits on a person — a recorded interrupt holding a person's input, or a new user message
the next request needs — is a ``user`` requirement: the recorded value is offered as the
default and used only when a user pins it (answer source ``user``, comparability at most
``partial``); a recorded interrupt that was skipped (waived, or never reached) never
leaves the replay ``full``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from core.record.canonical import model_key, tool_key
from core.record.recording import (
    ChatMessage,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)
from core.replay.branch import (
    MessagesIntervention,
    ModelResponseIntervention,
    Policy,
    ToolResultIntervention,
    new_branch,
)
from core.replay.dry_run import predict
from core.replay.engine import ReplayEngine, ReplayOutcome, tool_message
from core.replay.fixtures import Fixture, FixtureGateway, Requirement
from inspector.cli import main
from tests.builders import SAMPLES, strip

M = "m"
SYSTEM = ChatMessage(role="system", content="You book flights.")
ASK = ChatMessage(role="user", content="Book flight X.")
YES = ChatMessage(role="user", content="yes")


def _model(seq: int, messages: list[ChatMessage], reply: ChatMessage) -> ModelRecord:
    req = ModelRequest(messages=messages)
    return ModelRecord(seq=seq, key=model_key(M, req), model=M, request=req, response=ModelResponse(message=reply))


def _tool(seq: int, call: ToolCall, content: Any) -> ToolRecord:
    return ToolRecord(
        seq=seq,
        key=tool_key(call.name, call.arguments),
        tool=call.name,
        arguments=call.arguments,
        tool_call_id=call.id,
        result=ToolResult(content=content),
    )


def confirm_base() -> Recording:
    """``book`` answers that it needs confirmation, a person types "yes" at the console
    (an Inspect ``input`` interrupt at seq 2; the next request carries it), the agent
    confirms and finishes."""
    book = ToolCall(id="c1", name="book", arguments={"flight": "X"})
    confirm = ToolCall(id="c2", name="confirm", arguments={})
    a0 = ChatMessage(role="assistant", content="", tool_calls=[book])
    r1 = ToolResult(content="needs confirmation")
    a3 = ChatMessage(role="assistant", content="", tool_calls=[confirm])
    r4 = ToolResult(content="confirmed")
    h0 = [SYSTEM, ASK]
    h3 = [*h0, a0, tool_message("c1", "book", r1), YES]
    h5 = [*h3, a3, tool_message("c2", "confirm", r4)]
    records = [
        _model(0, h0, a0),
        _tool(1, book, r1.content),
        InterruptRecord(seq=2, value={"type": "input", "input": "yes"}),
        _model(3, h3, a3),
        _tool(4, confirm, r4.content),
        _model(5, h5, ChatMessage(role="assistant", content="Booked flight X.")),
    ]
    return Recording.loads(Recording(records=records, metadata={"task": "book"}).dumps())


def chat_base(*, trailing: bool = False) -> Recording:
    """A chat with a new user turn and no interrupt (tau-bench's shape): the agent asks,
    the customer answers in the next request. With ``trailing``, only one model call,
    then a person's input the run never answered."""
    hi = ChatMessage(role="user", content="Hi")
    a0 = ChatMessage(role="assistant", content="How can I help?")
    if trailing:
        records: list[Any] = [
            _model(0, [SYSTEM, hi], a0),
            InterruptRecord(seq=1, value={"type": "input", "input": "thanks"}),
        ]
    else:
        more = ChatMessage(role="user", content="Change my flight to Friday.")
        records = [
            _model(0, [SYSTEM, hi], a0),
            _model(1, [SYSTEM, hi, a0, more], ChatMessage(role="assistant", content="Done.")),
        ]
    return Recording.loads(Recording(records=records, metadata={}).dumps())


SCRIPT = {
    0: {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "book", "arguments": {"flight": "Y"}}],
        }
    },
    1: {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c2", "name": "confirm", "arguments": {}}],
        }
    },
    2: {"message": {"role": "assistant", "content": "Booked flight Y."}},
}


def drive(
    base: Recording, branch: Any, *, answer: str | None = None, waive: bool = False, replay_id: str = "rp-t"
) -> tuple[ReplayOutcome, list[Requirement]]:
    """Run the branch as a user would: attach the scripted model response or a tool result
    for each model or tool requirement and resume; a ``user`` requirement is answered
    with ``answer`` (the recorded default when ``answer`` is ``"<default>"``), waived with
    ``waive``, else the run stops there. Returns the last outcome and every requirement met."""
    fixtures: list[Fixture] = []
    decisions: dict[str, Requirement] = {}
    met: list[Requirement] = []
    for _ in range(20):
        out = ReplayEngine(
            base, branch, replay_id=replay_id, fixtures=FixtureGateway(fixtures), decisions=decisions
        ).run()
        req = out.requirement
        if out.status != "paused" or req is None:
            return out, met
        met.append(req)
        if req.kind == "model":
            fixtures.append(
                Fixture(
                    id=f"fx-{len(fixtures)}", kind="model", name=M, args_hash=req.args_hash, output=SCRIPT[req.step]
                )
            )
        elif req.kind == "tool":
            fixtures.append(
                Fixture(
                    id=f"fx-{len(fixtures)}",
                    kind="tool",
                    name=req.name,
                    args_hash=req.args_hash,
                    output={"content": "needs confirmation"},
                )
            )
        elif waive:
            decisions[req.id] = req.model_copy(update={"status": "waived"})
        elif answer is not None:
            text = req.default if answer == "<default>" else answer
            decisions[req.id] = req.model_copy(update={"status": "satisfied", "answer": text})
        else:
            return out, met
    raise AssertionError("the replay did not settle")


def ask_y() -> MessagesIntervention:
    return MessagesIntervention(op="replace", index=1, messages=[ChatMessage(role="user", content="Book flight Y.")])


# ---------------------------------------------------------------------- as recorded while aligned


def test_aligned_replays_copy_a_persons_input_as_recorded() -> None:
    base = confirm_base()
    for at in (0, 2, 3):
        out = ReplayEngine(base, new_branch(base, "b.json", at=at)).run()
        assert out.comparability.level == "full" and out.requirement is None
        assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    # a change after the interrupt: the interrupt is still before any difference
    iv = ToolResultIntervention(seq=4, result=ToolResult(content="confirmed twice"))
    out = ReplayEngine(base, new_branch(base, "b.json", at=4, interventions=[iv], policy=Policy(drift="lenient"))).run()
    assert out.status == "completed" and out.answers.get("user") is None
    [interrupt] = [r for r in out.events.records if r.kind == "interrupt"]
    assert interrupt.seq == 2 and interrupt.value == {"type": "input", "input": "yes"}
    assert out.sources[2] == "recorded"


# ---------------------------------------------------------------------- a user requirement once diverged


def test_a_recorded_interrupt_after_divergence_is_a_user_requirement() -> None:
    """The branch edits the first request; every call is answered by fixtures, so without
    the rule the replay would drop the "yes" and call itself ``full``."""
    base = confirm_base()
    branch = new_branch(base, "b.json", at=0, interventions=[ask_y()])
    out, met = drive(base, branch)
    assert out.status == "paused" and out.comparability.level == "none"
    req = out.requirement
    assert req is not None and req.kind == "user" and req.name == "user"
    assert req.default == "yes" and req.nearest is not None and req.nearest.seq == 2
    assert "waits on a person" in req.reason
    assert [r.kind for r in met] == ["model", "tool", "user"]
    # nothing is made up: no interrupt in the events, no model call after it
    assert [r.kind for r in out.events.records] == ["model", "tool"]


@pytest.mark.parametrize("answer", ["<default>", "yes, and a window seat"])
def test_a_pinned_answer_is_used_and_lowers_comparability(answer: str) -> None:
    base = confirm_base()
    branch = new_branch(base, "b.json", at=0, interventions=[ask_y()])
    out, _ = drive(base, branch, answer=answer)
    assert out.status == "completed", out.error
    assert out.comparability.level == "partial"
    assert any("answered by an answer a user pinned" in r for r in out.comparability.reasons)
    text = "yes" if answer == "<default>" else answer
    [interrupt] = [r for r in out.events.records if r.kind == "interrupt"]
    assert interrupt.value == {"type": "input", "input": text} and interrupt.replayed
    assert out.sources[interrupt.seq] == "user" and out.answers["user"] == 1
    how = "pinned the recorded answer" if answer == "<default>" else "authored this answer"
    assert how in out.reasons[interrupt.seq]
    meta = Recording.loads(out.events.dumps()).metadata["replay"]
    assert meta["answer_sources"][str(interrupt.seq)] == "user"
    # the next request hears the person, where the base's did
    nxt = next(r for r in out.events.records if isinstance(r, ModelRecord) and r.seq > interrupt.seq)
    assert nxt.request.messages[-1] == ChatMessage(role="user", content=text)
    # deterministic: the same decisions give the same events
    again, _ = drive(base, branch, answer=answer)
    assert again.events.dumps() == out.events.dumps()


def test_a_waived_turn_is_skipped_and_never_full() -> None:
    base = confirm_base()
    branch = new_branch(base, "b.json", at=0, interventions=[ask_y()])
    out, _ = drive(base, branch, waive=True)
    assert out.status == "completed"
    assert out.comparability.level == "partial"
    assert any("skipped (seq 2): the user waived the turn" in r for r in out.comparability.reasons)
    assert not [r for r in out.events.records if r.kind == "interrupt"]
    nxt = [r for r in out.events.records if isinstance(r, ModelRecord)][1]
    assert all(m.content != "yes" for m in nxt.request.messages)


def test_a_new_user_message_after_a_final_response_is_a_user_turn() -> None:
    """tau-bench's shape: no interrupt, the customer's turn is the next request's new user
    message. A diverged branch pauses there instead of stopping; answered, it goes on."""
    base = chat_base()
    iv = ModelResponseIntervention(
        step=0, response=ModelResponse(message=ChatMessage(role="assistant", content="Hello!"))
    )
    branch = new_branch(base, "b.json", at=0, interventions=[iv], policy=Policy(drift="lenient"))
    out = ReplayEngine(base, branch, replay_id="rp-chat").run()
    assert out.status == "paused" and out.requirement is not None
    assert (out.requirement.kind, out.requirement.default) == ("user", "Change my flight to Friday.")
    req = out.requirement
    done = ReplayEngine(
        base,
        branch,
        replay_id="rp-chat",
        decisions={req.id: req.model_copy(update={"status": "satisfied", "answer": "Cancel it."})},
    ).run()
    assert done.status == "completed" and done.comparability.level == "partial"
    last = [r for r in done.events.records if isinstance(r, ModelRecord)][-1]
    assert last.request.messages[-2:] == [
        ChatMessage(role="assistant", content="Hello!"),
        ChatMessage(role="user", content="Cancel it."),
    ]
    assert not any("cannot follow" in r for r in done.comparability.reasons)


def test_a_recorded_interrupt_the_branch_never_reaches_is_skipped() -> None:
    base = chat_base(trailing=True)
    assert ReplayEngine(base, new_branch(base, "b.json", at=0)).run().comparability.level == "full"
    iv = ModelResponseIntervention(
        step=0, response=ModelResponse(message=ChatMessage(role="assistant", content="Bye."))
    )
    out = ReplayEngine(base, new_branch(base, "b.json", at=0, interventions=[iv])).run()
    assert out.status == "completed" and out.requirement is None
    assert out.comparability.level == "partial"
    assert any("skipped (seq 1)" in r and "did not reach" in r for r in out.comparability.reasons)


def test_require_fixtures_false_fails_instead_of_answering() -> None:
    base = confirm_base()
    branch = new_branch(
        base, "b.json", at=0, interventions=[ask_y()], policy=Policy(drift="lenient", require_fixtures=False)
    )
    out = ReplayEngine(base, branch).run()
    assert out.status == "failed" and out.error is not None and out.error.type == "ReplayMismatch"
    assert "a person's turn" in out.error.message


class ReplaysTheBase:
    """An executor whose agent makes the base's model and tool calls in order."""

    def __init__(self, base: Recording) -> None:
        self.base = base

    def run(self, runtime: Any, task: Any) -> Any:
        for r in self.base.records:
            if r.kind == "model":
                runtime.call_model(r.model, r.request)
            elif r.kind == "tool":
                runtime.call_tool(r.tool, r.arguments, r.tool_call_id)
        return "done"

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content="live"))

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        return ToolResult(content="live")


def test_with_an_executor_a_recorded_interrupt_after_divergence_is_a_user_requirement() -> None:
    base = confirm_base()
    iv = ToolResultIntervention(seq=1, result=ToolResult(content="needs a signature"))
    branch = new_branch(base, "b.json", at=1, interventions=[iv])
    out = ReplayEngine(base, branch, replay_id="rp-x", executor=ReplaysTheBase(base)).run()
    assert out.status == "paused" and out.requirement is not None and out.requirement.kind == "user"
    req = out.requirement
    done = ReplayEngine(
        base,
        branch,
        replay_id="rp-x",
        executor=ReplaysTheBase(base),
        decisions={req.id: req.model_copy(update={"status": "satisfied", "answer": "signed"})},
    ).run()
    assert done.status == "completed" and done.comparability.level == "partial"
    [interrupt] = [r for r in done.events.records if r.kind == "interrupt"]
    assert interrupt.value == {"type": "input", "input": "signed"} and done.sources[interrupt.seq] == "user"


def test_the_dry_run_predicts_the_user_turn() -> None:
    base = confirm_base()
    iv = ToolResultIntervention(seq=1, result=ToolResult(content="needs a signature"))
    result = predict(base, new_branch(base, "b.json", at=1, interventions=[iv], policy=Policy(drift="lenient")))
    last = result["predictions"][-1]
    assert (last["kind"], last["answer"], last["base_seq"]) == ("user", "user", 2)
    assert "'yes'" in last["detail"] and result["counts"]["user"] == 1


def test_a_real_tau_bench_branch_pauses_on_the_customers_next_turn() -> None:
    base = Recording.load(SAMPLES / "tau-bench-airline-task5-trial0.json")
    first_tool = next(r for r in base.records if isinstance(r, ToolRecord))
    iv = ToolResultIntervention(seq=first_tool.seq, result=ToolResult(content="Error: the service is down"))
    branch = new_branch(base, "b.json", at=first_tool.seq, interventions=[iv], policy=Policy(drift="lenient"))
    out = ReplayEngine(base, branch, replay_id="rp-tau").run()
    assert out.status == "paused" and out.requirement is not None and out.requirement.kind == "user"
    step = out.requirement.step
    models = [r for r in base.records if isinstance(r, ModelRecord)]
    recorded = models[step].request.messages[-1]
    assert recorded.role == "user" and out.requirement.default == recorded.text


# ---------------------------------------------------------------------- the command line


@pytest.fixture()
def cwd(tmp_path: Path, monkeypatch: Any) -> Path:
    monkeypatch.chdir(tmp_path)
    confirm_base().save(tmp_path / "base.json")
    (tmp_path / "iv.json").write_bytes(orjson.dumps(ask_y().model_dump(mode="json", exclude_none=True)))
    (tmp_path / "pol.json").write_bytes(orjson.dumps({"drift": "lenient"}))
    return tmp_path


def cli(capsys: Any, *args: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("how", ["--answer", "--approve"])
def test_cli_answers_a_user_requirement_and_resumes(cwd: Path, capsys: Any, how: str) -> None:
    code, _, err = cli(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        0,
        "--intervention",
        "iv.json",
        "--policy",
        "pol.json",
        "-o",
        "b.json",
    )
    assert code == 0, err
    code, out, _ = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json")
    assert code == 3
    record = json.loads(out)
    [rid] = record["pause"]["requirement_ids"]
    code, out, _ = cli(capsys, "requirements", "--open")
    assert code == 0
    assert f"{rid}  open      user" in out and "a person's turn before model step 1" in out
    assert 'recorded answer (seq 2), offered: "yes"' in out
    assert f"requirements --answer {rid} TEXT" in out
    # a fixture file answers a person's turn only with their message (a policy is none)
    shutil.copy(cwd / "pol.json", cwd / "out.json")
    code, _, err = cli(capsys, "fixture", "attach", rid, "out.json")
    assert code == 2 and f"requirements --answer {rid} TEXT" in err and "out.json" in err
    if how == "--answer":
        code, out, err = cli(capsys, "requirements", "--answer", rid, "yes, book it")
        text = "yes, book it"
        assert "satisfied with an authored answer" in out
    else:
        code, out, err = cli(capsys, "requirements", "--approve", rid)
        text = "yes"
        assert "satisfied with the recorded answer" in out
    assert code == 0, err
    code, out, err = cli(capsys, "replay", "resume", record["id"], "--json")
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["status"] == "completed" and resumed["comparability"]["level"] == "partial"
    assert resumed["answers"]["user"] == 1
    events = Recording.load(resumed["events_file"])
    [interrupt] = [r for r in events.records if r.kind == "interrupt"]
    assert interrupt.value["input"] == text
    code, out, _ = cli(capsys, "requirements", "--json")
    [req] = [r for r in json.loads(out) if r["id"] == rid]
    assert req["status"] == "satisfied" and req["answer"] == text and req["default"] == "yes"


def test_cli_answer_refuses_other_kinds(cwd: Path, capsys: Any) -> None:
    base = confirm_base()
    iv = ToolResultIntervention(seq=4, result=ToolResult(content="other"))  # after the person's input
    (cwd / "iv2.json").write_bytes(orjson.dumps(iv.model_dump(mode="json", exclude_none=True)))
    cli(capsys, "branch", "new", "base.json", "--at", 4, "--intervention", "iv2.json", "-o", "b2.json")
    code, out, _ = cli(capsys, "replay", "base.json", "--branch", "b2.json", "--json")
    assert code == 3
    [rid] = json.loads(out)["pause"]["requirement_ids"]
    code, out, _ = cli(capsys, "requirements", "--json")
    assert [r["kind"] for r in json.loads(out) if r["id"] == rid] == ["model"]
    code, _, err = cli(capsys, "requirements", "--answer", rid, "text")
    assert code == 2 and "only a person's turn" in err
    assert base.records[4].kind == "tool"
