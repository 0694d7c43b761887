"""core.replay.editing: drafts prefilled with the recorded values, checks that name the
field and the JSON Pointer, and branches equal to what ``branch new`` builds."""

from __future__ import annotations

import dataclasses
import json

import pytest

from core.errors import BranchError
from core.record.recording import ModelRecord, Recording, ToolRecord
from core.replay import editing as E
from core.replay.branch import BranchDraft, InterventionFile, Policy, resolve_branch
from tests.builders import SAMPLES

CORRUPTED = SAMPLES / "sample-agent-fault-corrupted-result.json"
THINKING = SAMPLES / "vcr-anthropic-thinking-stream.json"


@pytest.fixture(scope="module")
def base() -> Recording:
    return Recording.load(CORRUPTED)


def _record(base: Recording, seq: int):
    return next(r for r in base.records if r.seq == seq)


def test_a_tool_record_starts_with_its_recorded_result(base):
    fault = base.metadata["fault"]["seq"]
    (draft,) = E.initial_drafts(base, fault)
    assert draft.kind == "tool_result" and draft.seq == fault and not draft.edited
    assert json.loads(draft.text) == _record(base, fault).result.to_json_obj()
    check = E.check_draft(base, fault, draft)
    assert check.ok and check.intervention.result == _record(base, fault).result


def test_recorded_values_of_every_kind(base):
    model = next(r for r in base.records if type(r) is ModelRecord and r.seq >= 6)
    assert E.recorded_value(base, "model_response", seq=model.seq) == model.response.to_json_obj()
    msgs = model.request.messages
    assert E.recorded_value(base, "messages", checkpoint=6, index=2) == [msgs[2].to_json_obj()]
    assert E.recorded_value(base, "messages", checkpoint=6) == [msgs[-1].to_json_obj()]  # the last by default
    assert E.recorded_value(base, "messages", checkpoint=6, op="append") == [{"role": "user", "content": ""}]
    assert E.recorded_value(base, "options", checkpoint=6) == model.request.options
    assert E.recorded_value(base, "tool_policy", checkpoint=6) is None
    first_get_order = next(r for r in base.records if type(r) is ToolRecord and r.tool == "get_order")
    assert E.recorded_value(base, "tool_result", tool="get_order", checkpoint=0) == first_get_order.result.to_json_obj()


@pytest.mark.parametrize(
    ("kind", "kwargs", "words"),
    [
        ("tool_result", {"seq": 7}, "seq 7 is a model call (scripted-support-v1), not a tool call"),
        ("model_response", {"seq": 6}, "seq 6 is a tool call (get_order), not a model call"),
        ("tool_result", {"seq": 999}, "no base record has seq 999"),
        ("messages", {"checkpoint": 6, "index": 99}, "index 99 is out of range"),
        ("tool_result", {"tool": "nope", "checkpoint": 0}, "no call of tool 'nope'"),
    ],
)
def test_recorded_value_refuses_a_target_that_has_none(base, kind, kwargs, words):
    with pytest.raises(BranchError, match=words.replace("(", r"\(").replace(")", r"\)")):
        E.recorded_value(base, kind, **kwargs)


def test_malformed_json_names_the_line_and_column(base):
    (draft,) = E.initial_drafts(base, 6)
    lines = draft.text.splitlines()
    i = next(n for n, text in enumerate(lines) if '"customer_id"' in text)
    lines[i] = lines[i].rstrip(",")
    bad = dataclasses.replace(draft, text="\n".join(lines), edited=True)
    problem = E.check_draft(base, 6, bad).problem
    assert problem is not None and problem.field == "payload" and problem.pointer == "/result"
    assert (problem.line, problem.column) == (i + 2, 5)
    assert problem.message.startswith(f"line {i + 2}, column 5: malformed JSON")


@pytest.mark.parametrize(
    ("text", "pointer", "words"),
    [
        ('{"content": {"total": 9007199254740993}}', "/result/content/total", "outside the I-JSON safe range"),
        ('{"content": 1, "error": {"type": 3}}', "/result/error/type", "valid string"),
        ('{"content": 1, "colour": "red"}', "/result/colour", "unknown field 'colour'"),
        ('{"content": NaN}', "/result", "not a JSON number"),
        ("", "/result", "result is empty"),
    ],
)
def test_payload_problems_carry_their_json_pointer(base, text, pointer, words):
    value, problem = E.check_payload("tool_result", text)
    assert value is None and problem is not None
    assert problem.pointer == pointer and words in problem.message
    assert problem.describe().startswith(f"at {pointer}: ") or pointer in problem.describe()


def test_an_intervention_of_the_wrong_kind_for_the_record_is_refused_at_seq(base):
    draft = E.new_draft(base, "model_response", 6)
    assert draft.seq == 7  # the first model call from the checkpoint
    wrong = dataclasses.replace(draft, seq=6)
    problem = E.check_draft(base, 6, wrong).problem
    assert problem is not None and problem.field == "seq" and problem.pointer == "/seq"
    assert "seq 6 is a tool call (get_order), not a model call" in problem.message
    assert "use tool_result" in problem.message


def test_a_target_before_the_checkpoint_is_refused(base):
    (draft,) = E.initial_drafts(base, 6)
    problem = E.check_draft(base, 7, draft).problem
    assert problem is not None and problem.field == "seq" and "before the checkpoint 7" in problem.message


def test_other_kinds_build_and_validate(base):
    for kind in E.KINDS:
        draft = E.new_draft(base, kind, 6, seq=6)
        check = E.check_draft(base, 6, draft)
        assert check.ok, (kind, check.problem)
        assert check.intervention.kind == kind
    remove = dataclasses.replace(E.new_draft(base, "messages", 6), op="remove", index=0)
    assert E.check_draft(base, 6, remove).ok
    out_of_range = dataclasses.replace(E.new_draft(base, "messages", 6), index=40)
    problem = E.check_draft(base, 6, out_of_range).problem
    assert problem is not None and problem.field == "index" and "out of range" in problem.message
    unknown_tool = dataclasses.replace(E.new_draft(base, "tool_policy", 6, seq=6), tool="rm_rf")
    problem = E.check_draft(base, 6, unknown_tool).problem
    assert problem is not None and problem.field == "tool" and "never uses or offers" in problem.message
    empty_options = dataclasses.replace(E.new_draft(base, "options", 6), text="{}")
    problem = E.check_draft(base, 6, empty_options).problem
    assert problem is not None and problem.pointer == "/options" and "empty" in problem.message


def test_a_kind_change_to_a_target_of_another_kind_gets_the_kinds_template(base):
    (draft,) = E.initial_drafts(base, 6)
    moved = E.prefill(base, dataclasses.replace(draft, kind="model_response"), 6)  # seq 6 is a tool call
    assert json.loads(moved.text) == {"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
    edited = dataclasses.replace(draft, kind="model_response", text="[1]", edited=True)
    assert E.prefill(base, edited, 6).text == "[1]"  # an edited text is kept


def test_control_and_bidi_characters_are_escaped_in_the_text():
    text = E.to_json_text({"a": "x\x1b[2J\u202e\x7f"})
    assert "\x1b" not in text and "\u202e" not in text and "\x7f" not in text
    assert json.loads(text) == {"a": "x\x1b[2J\u202e\x7f"}


def test_signed_reasoning_blocks_are_kept_apart_and_put_back():
    base = Recording.load(THINKING)
    model = next(r for r in base.records if type(r) is ModelRecord)
    (draft,) = E.initial_drafts(base, model.seq)
    assert draft.kind == "model_response" and len(draft.locked) == 1
    assert "signature" not in draft.text  # the editable text has no signed block
    check = E.check_draft(base, model.seq, draft)
    assert check.ok, check.problem
    assert check.intervention.response.message.content == model.response.message.content
    # content made a string: the blocks have nowhere to go
    value = json.loads(draft.text)
    value["message"]["content"] = "just text"
    flat = dataclasses.replace(draft, text=json.dumps(value), edited=True)
    problem = E.check_draft(base, model.seq, flat).problem
    assert problem is not None and problem.pointer == "/response/message/content"
    assert "provider-signed reasoning" in problem.message
    # a signed block typed in by hand is refused by core's own rule
    forged = json.loads(draft.text)
    forged["message"]["content"].append({"type": "thinking", "thinking": "x", "signature": "forged"})
    problem = E.check_draft(base, model.seq, dataclasses.replace(draft, text=json.dumps(forged))).problem
    assert problem is not None and "provider-signed reasoning" in problem.message and problem.field == "payload"


def test_the_branch_equals_the_one_branch_new_builds(base, tmp_path):
    (draft,) = E.initial_drafts(base, 6)
    value = json.loads(draft.text)
    value["content"]["customer_id"] = "C-1001"
    draft = dataclasses.replace(draft, text=json.dumps(value), note="the right customer", edited=True)
    check = E.check_branch(
        base,
        "base.json",
        checkpoint="6",
        drafts=[draft],
        policy=E.policy_from_fields(model="live", tool="recorded", drift="strict"),
        label="right customer",
        branch_id="br-fixed",
    )
    assert check.ok and check.first_problem() is None
    iv = tmp_path / "iv.json"
    iv.write_text(json.dumps({"kind": "tool_result", "seq": 6, "result": value, "note": "the right customer"}))
    cli = resolve_branch(
        None,
        BranchDraft(
            base_path="base.json",
            at=6,
            interventions=[InterventionFile.read(iv)],
            policy=Policy(model="live"),
            label="right customer",
            branch_id="br-fixed",
        ),
        base,
    )
    ours, theirs = check.branch.to_json_obj(), cli.to_json_obj()
    ours.pop("created_at"), theirs.pop("created_at")
    assert ours == theirs


def test_branch_problems_are_attributed(base):
    (draft,) = E.initial_drafts(base, 6)
    bad = dataclasses.replace(draft, text="{", edited=True)
    check = E.check_branch(base, "b.json", checkpoint="6", drafts=[draft, bad], policy=Policy())
    assert not check.ok and check.drafts[0].ok and not check.drafts[1].ok
    assert check.first_problem()[0] == 1
    check = E.check_branch(base, "b.json", checkpoint="x", drafts=[draft], policy=Policy())
    assert check.checkpoint is not None and check.checkpoint.field == "checkpoint"
    check = E.check_branch(base, "b.json", checkpoint="500", drafts=[draft], policy=Policy())
    assert check.checkpoint is not None and "no base record has seq 500" in check.checkpoint.message
    check = E.check_branch(base, "b.json", checkpoint="6", drafts=[draft], policy=Policy(), parent="a/b")
    assert check.problem is not None and check.problem.field == "parent"


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"max_steps": "abc"}, "max_steps", "whole number"),
        ({"max_steps": "0"}, "max_steps", "greater than or equal to 1"),
        ({"temperature": "hot"}, "temperature", "number"),
        ({"temperature": "inf"}, "temperature", "finite"),
        ({"temperature": "-1"}, "temperature", "greater than or equal to 0"),
        ({"model": "psychic"}, "model", "Input should be"),
    ],
)
def test_policy_fields_are_checked_strictly(fields, field, words):
    args = {"model": "recorded", "tool": "recorded", "drift": "strict", **fields}
    policy, problem = E.policy_from_fields(**args)
    assert policy is None and problem is not None and problem.field == field and words in problem.message


def test_policy_fields_that_fit():
    policy, problem = E.policy_from_fields(
        model="fixture", tool="live", drift="lenient", max_steps="5", temperature="0.5"
    )
    assert problem is None and policy == Policy(
        model="fixture", tool="live", drift="lenient", max_steps=5, temperature=0.5
    )


def test_the_default_policy_uses_the_executor_the_recording_names(base):
    offer = E.recorded_executor(base)
    assert offer is not None and offer.spec == base.metadata["executor"] and offer.origin == "recording"
    assert E.default_policy(base) == Policy(model="live")
    plain = base.model_copy(update={"metadata": {}})
    assert E.recorded_executor(plain) is None and E.default_policy(plain) == Policy()


def test_replay_events_name_the_parent(base):
    events = base.model_copy(update={"metadata": {**base.metadata, "replay": {"branch": {"id": "br-parent"}}}})
    assert E.produced_by(events) == "br-parent" and E.produced_by(base) is None


def test_preview_runs_the_dry_run(base):
    drafts = E.initial_drafts(base, 6)
    # prefilled with the recorded value: nothing after it changes
    same = E.preview(base, "b.json", checkpoint=6, drafts=drafts, policy=Policy(), executor_wired=False)
    by_seq = {p["base_seq"]: p["answer"] for p in same.dry_run["predictions"]}
    assert by_seq.pop(6) == "intervention" and set(by_seq.values()) == {"recorded"}
    drafts = [dataclasses.replace(drafts[0], text='{"content": "another result"}')]
    result = E.preview(base, "b.json", checkpoint=6, drafts=drafts, policy=Policy(), executor_wired=False)
    by_seq = {p["base_seq"]: p["answer"] for p in result.dry_run["predictions"]}
    assert by_seq[6] == "intervention" and by_seq[7] == "requirement"
    assert result.counts == {"recorded": 3, "intervention": 1, "requirement": 1}
    live = E.preview(base, "b.json", checkpoint=6, drafts=drafts, policy=Policy(model="live"), executor_wired=True)
    assert live.counts == {"recorded": 3, "intervention": 1, "live": 1, "unknown": 1}
    broken = E.preview(base, "b.json", checkpoint=6, drafts=[dataclasses.replace(drafts[0], text="{")], policy=Policy())
    assert broken.dry_run is None and not broken.check.ok


def test_describe_draft(base):
    assert E.describe_draft(E.initial_drafts(base, 6)[0]) == "tool_result at seq 6"
    assert E.describe_draft(E.new_draft(base, "messages", 6)).startswith("messages replace at index ")
    assert E.describe_draft(E.new_draft(base, "options", 6)) == "options temperature, tool_choice"
    assert E.describe_draft(E.new_draft(base, "tool_policy", 6, seq=6)) == "tool_policy deny get_order"
    with pytest.raises(BranchError, match="unknown intervention kind"):
        E.new_draft(base, "teleport", 6)
