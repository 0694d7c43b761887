"""Branch files, interventions and policies: parsing and validation against the base."""

from __future__ import annotations

import json

import orjson
import pytest

from core.errors import BranchError
from core.record.canonical import args_hash
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolResult
from core.replay.branch import (
    Branch,
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    Policy,
    ToolPolicyIntervention,
    ToolResultIntervention,
    load_branch,
    load_interventions,
    load_policy,
    new_branch,
    save_branch,
)
from tests.builders import chat_recording


@pytest.fixture()
def base() -> Recording:
    # seqs: 0 lifecycle, 1 model, 2 tool, 3 model, 4 tool, 5 model, 6 tool, 7 model, 8 lifecycle
    return chat_recording(3)


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_bytes(obj if isinstance(obj, bytes) else orjson.dumps(obj))
    return p


def test_intervention_file_one_object_or_list(tmp_path):
    one = _write(tmp_path, "one.json", {"kind": "tool_result", "seq": 4, "result": {"content": 1}})
    many = _write(
        tmp_path,
        "many.json",
        [
            {"kind": "tool_result", "seq": 4, "result": {"content": 1}},
            {"kind": "options", "options": {"temperature": 0}},
        ],
    )
    empty = _write(tmp_path, "empty.json", [])
    assert [type(i) for i in load_interventions(one)] == [ToolResultIntervention]
    assert [type(i) for i in load_interventions(many)] == [ToolResultIntervention, OptionsIntervention]
    assert load_interventions(empty) == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{", "bad.json: line 1, column 2: malformed JSON"),
        (orjson.dumps({"kind": "nope"}), "bad.json: intervention 0 at /: unknown intervention kind 'nope'"),
        (orjson.dumps({"seq": 1}), "bad.json: intervention 0 at /: intervention has no 'kind'"),
        (
            orjson.dumps([{"kind": "tool_result", "result": {}}]),
            "bad.json: intervention 0 at /: a tool_result intervention needs a target",
        ),
        (orjson.dumps([{"kind": "options", "options": {}}, 3]), "bad.json: intervention 0 at /: 'options' is empty"),
        (
            orjson.dumps([{"kind": "options", "options": {"t": 1}}, 3]),
            "bad.json: intervention 1: expected a JSON object, got int",
        ),
        (
            orjson.dumps({"kind": "tool_result", "seq": 2, "result": {"content": 1, "junk": 1}}),
            "bad.json: intervention 0 at /result/junk: unknown field 'junk'",
        ),
        (
            orjson.dumps({"kind": "messages", "op": "replace", "messages": [{"role": "user", "content": "x"}]}),
            "op 'replace' needs 'index'",
        ),
        (
            orjson.dumps(
                {
                    "kind": "model_response",
                    "seq": 1,
                    "step": 0,
                    "response": {"message": {"role": "assistant", "content": "x"}},
                }
            ),
            "needs exactly one target",
        ),
        (
            orjson.dumps({"kind": "tool_policy", "tool": "lookup", "action": "maybe"}),
            "bad.json: intervention 0 at /action:",
        ),
        (
            orjson.dumps(
                {"kind": "tool_result", "tool": "lookup", "arguments": {"q": 1}, "args_hash": "sha256:00", "result": {}}
            ),
            "does not match 'arguments'",
        ),
    ],
)
def test_invalid_intervention_files_give_clear_errors(tmp_path, content, expected):
    p = _write(tmp_path, "bad.json", content)
    with pytest.raises(BranchError) as err:
        load_interventions(p)
    assert expected in str(err.value)


def test_missing_intervention_file(tmp_path):
    with pytest.raises(BranchError, match=r"nope.json: no such intervention file"):
        load_interventions(tmp_path / "nope.json")


def test_invalid_policy_file(tmp_path):
    with pytest.raises(BranchError, match=r"pol.json: policy at /model: Input should be"):
        load_policy(_write(tmp_path, "pol.json", {"model": "sometimes"}))
    with pytest.raises(BranchError, match=r"pol.json: policy at /max_steps"):
        load_policy(_write(tmp_path, "pol.json", {"max_steps": 0}))
    with pytest.raises(BranchError, match=r"unknown field 'colour'"):
        load_policy(_write(tmp_path, "pol.json", {"colour": "red"}))
    assert load_policy(_write(tmp_path, "pol.json", {"drift": "lenient"})).drift == "lenient"


def test_invalid_branch_files(tmp_path, base):
    with pytest.raises(BranchError, match="b.json: a branch must be a JSON object"):
        load_branch(_write(tmp_path, "b.json", [1]))
    with pytest.raises(BranchError, match="not a branch file"):
        load_branch(_write(tmp_path, "b.json", {"format": "chassis.replay"}))
    with pytest.raises(BranchError, match=r"b.json: at /checkpoint: missing required field 'checkpoint'"):
        load_branch(
            _write(
                tmp_path,
                "b.json",
                {"id": "b", "base": {"path": "x", "digest": "d"}, "created_at": "2026-01-01T00:00:00Z"},
            )
        )
    bad_iv = {
        "id": "b",
        "base": {"path": "x", "digest": "d"},
        "checkpoint": 1,
        "created_at": "2026-01-01T00:00:00Z",
        "interventions": [{"kind": "tool_result", "result": {}}],
    }
    with pytest.raises(BranchError, match=r"b.json: at /interventions/0.*needs a target"):
        load_branch(_write(tmp_path, "b.json", bad_iv))


def test_branch_roundtrip(tmp_path, base):
    br = new_branch(
        base,
        "base.json",
        at=4,
        label="fix",
        interventions=[
            ToolResultIntervention(seq=4, result=ToolResult(content={"value": 9})),
            ToolPolicyIntervention(tool="lookup", action="deny"),
        ],
        policy=Policy(drift="lenient", max_steps=5),
    )
    save_branch(br, tmp_path / "b.json")
    again = load_branch(tmp_path / "b.json")
    assert again == br
    assert again.base.digest == base.digest


@pytest.mark.parametrize(
    ("at", "iv", "expected"),
    [
        (4, ToolResultIntervention(seq=99, result=ToolResult()), "no base record has seq 99"),
        (4, ToolResultIntervention(seq=2, result=ToolResult()), "seq 2 is before the checkpoint 4"),
        (4, ToolResultIntervention(seq=5, result=ToolResult()), "base record 5 is a model record, not a tool call"),
        (4, ToolResultIntervention(tool="search", result=ToolResult()), "never uses or offers a tool named 'search'"),
        (
            4,
            ModelResponseIntervention(seq=4, response=ModelResponse(message=ChatMessage(role="assistant"))),
            "base record 4 is a tool record, not a model call",
        ),
        (
            4,
            ModelResponseIntervention(seq=3, response=ModelResponse(message=ChatMessage(role="assistant"))),
            "seq 3 is before the checkpoint 4",
        ),
        (
            4,
            ModelResponseIntervention(step=9, response=ModelResponse(message=ChatMessage(role="assistant"))),
            "the base has 4 model call(s)",
        ),
        (
            4,
            ModelResponseIntervention(step=0, response=ModelResponse(message=ChatMessage(role="assistant"))),
            "step 0 (seq 1) is before the checkpoint 4",
        ),
        (4, MessagesIntervention(op="remove", index=12), "index 12 is out of range (request has 6 messages)"),
        (
            8,
            MessagesIntervention(op="append", messages=[ChatMessage(role="user", content="x")]),
            "no model request at or after the checkpoint 8",
        ),
        (8, OptionsIntervention(options={"temperature": 1}), "no model request at or after the checkpoint 8"),
        (4, ToolPolicyIntervention(tool="rm", action="deny"), "never uses or offers a tool named 'rm'"),
    ],
)
def test_targets_validated_against_base(base, at, iv, expected):
    with pytest.raises(BranchError) as err:
        new_branch(base, "base.json", at=at, interventions=[iv])
    assert expected in str(err.value)
    assert "intervention 0" in str(err.value) and "base.json" in str(err.value)


def test_checkpoint_must_be_a_seq(base):
    with pytest.raises(BranchError, match=r"checkpoint 42 is not the seq of a record of the base .*base.json"):
        new_branch(base, "base.json", at=42)


def test_digest_mismatch(base):
    br = new_branch(base, "base.json", at=1)
    other = chat_recording(2)
    from core.replay.branch import validate_branch

    with pytest.raises(BranchError, match="does not match the recording given"):
        validate_branch(br, other)


def test_tool_targets_by_name_and_args(base):
    iv = ToolResultIntervention(tool="lookup", arguments={"q": "item-1"}, result=ToolResult(content=1))
    assert iv.args_hash == args_hash({"q": "item-1"})
    new_branch(base, "b", at=1, interventions=[iv])


def _signed_base() -> Recording:
    base = chat_recording(1)
    d = base.to_dict()  # the logical document: records hold their messages (no pool refs)
    d.pop("digest")
    signed = [
        {"type": "thinking", "thinking": "I should look it up", "signature": "sig-abc"},
        {"type": "text", "text": ""},
    ]
    d["records"][1]["response"]["message"]["content"] = signed
    d["records"][3]["request"]["messages"][2]["content"] = signed
    rec = Recording.from_dict(d, verify_keys=False)
    for r in rec.records:
        if r.kind in ("tool", "model"):
            r.key = r.compute_key()
    return Recording.loads(rec.dumps())


def test_signed_reasoning_blocks_cannot_be_edited():
    base = _signed_base()
    forged = ModelResponse(
        message=ChatMessage(
            role="assistant", content=[{"type": "thinking", "thinking": "something else", "signature": "sig-abc"}]
        )
    )
    with pytest.raises(BranchError, match="provider-signed reasoning blocks"):
        new_branch(base, "b", at=1, interventions=[ModelResponseIntervention(seq=1, response=forged)])
    dropped = ModelResponse(message=ChatMessage(role="assistant", content="plain"))
    with pytest.raises(BranchError, match="refused"):
        new_branch(base, "b", at=1, interventions=[ModelResponseIntervention(seq=1, response=dropped)])
    # the request at seq 3 carries the signed assistant message at index 2
    with pytest.raises(BranchError, match="holds provider-signed reasoning blocks"):
        new_branch(base, "b", at=3, interventions=[MessagesIntervention(op="remove", index=2)])
    with pytest.raises(BranchError, match="may not carry provider-signed"):
        new_branch(
            base,
            "b",
            at=3,
            interventions=[
                MessagesIntervention(
                    op="append",
                    messages=[ChatMessage(role="assistant", content=[{"type": "reasoning", "encrypted_content": "x"}])],
                )
            ],
        )
    # keeping the blocks exactly as recorded is fine
    kept = ModelResponse(
        message=ChatMessage(
            role="assistant",
            content=[
                {"type": "thinking", "thinking": "I should look it up", "signature": "sig-abc"},
                {"type": "text", "text": "changed text"},
            ],
        )
    )
    new_branch(base, "b", at=1, interventions=[ModelResponseIntervention(seq=1, response=kept)])


def test_messages_apply():
    msgs = [ChatMessage(role="user", content=str(i)) for i in range(3)]
    new = ChatMessage(role="user", content="n")
    assert [m.content for m in MessagesIntervention(op="append", messages=[new]).apply(msgs)] == ["0", "1", "2", "n"]
    assert [m.content for m in MessagesIntervention(op="replace", index=-1, messages=[new]).apply(msgs)] == [
        "0",
        "1",
        "n",
    ]
    assert [m.content for m in MessagesIntervention(op="remove", index=0).apply(msgs)] == ["1", "2"]


def test_options_apply_and_remove():
    iv = OptionsIntervention(options={"temperature": 1.0, "tool_choice": None})
    assert iv.apply({"temperature": 0.2, "tool_choice": "auto", "x": 1}) == {"temperature": 1.0, "x": 1}


def test_branch_model_schema_fields():
    assert set(Branch.model_fields) >= {
        "id",
        "base",
        "checkpoint",
        "label",
        "parent",
        "interventions",
        "policy",
        "created_at",
    }
    assert set(Policy.model_fields) >= {"model", "tool", "drift", "max_steps", "temperature", "require_fixtures"}
    assert Policy().require_fixtures is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # wrong types are refused, not converted (strict validation)
        ('{"kind": "tool_result", "seq": true, "result": {"content": 1}}', "intervention 0 at /seq"),
        ('{"kind": "tool_result", "seq": "8", "result": {"content": 1}}', "intervention 0 at /seq"),
        # values without a canonical form are refused when the file is read, with the path
        (
            '{"kind": "tool_result", "seq": 4, "result": {"content": 9007199254740993}}',
            "at /result/content: integer 9007199254740993 is outside the I-JSON safe range",
        ),
        (
            '{"kind": "tool_result", "seq": 4, "result": {"content": 100000000000000000000000000}}',
            "at /result/content: integer 100000000000000000000000000 is outside",
        ),
    ],
)
def test_intervention_values_read_exactly_and_strictly(tmp_path, text, expected):
    p = tmp_path / "iv.json"
    p.write_text(text)
    with pytest.raises(BranchError) as err:
        load_interventions(p)
    assert str(err.value).startswith(f"{p}: ") and expected in str(err.value)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"require_fixtures": "no"}, "policy at /require_fixtures"),
        ({"max_steps": "5"}, "policy at /max_steps"),
        ({"max_steps": 2**70}, "at /max_steps: integer 1180591620717411303424 is outside"),
    ],
)
def test_policy_types_strict(tmp_path, obj, expected):
    p = tmp_path / "pol.json"
    p.write_text(json.dumps(obj))
    with pytest.raises(BranchError) as err:
        load_policy(p)
    assert str(err.value).startswith(f"{p}: ") and expected in str(err.value)


_GOOD = {"id": "br-1", "base": {"path": "x", "digest": "d"}, "checkpoint": 1, "created_at": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"id": "../../etc/passwd"}, "id '../../etc/passwd' is not a branch id"),
        ({"parent": "br-1"}, "cannot be its own parent"),
        ({"parent": "a/b"}, "parent 'a/b' is not a branch id"),
        ({"created_at": "yesterday"}, "created_at 'yesterday' is not an RFC 3339 date-time"),
        ({"checkpoint": True}, "at /checkpoint"),
    ],
)
def test_branch_file_identity_validated(tmp_path, change, expected):
    p = _write(tmp_path, "b.json", {**_GOOD, **change})
    with pytest.raises(BranchError) as err:
        load_branch(p)
    assert str(err.value).startswith(f"{p}: ") and expected in str(err.value)
    assert load_branch(_write(tmp_path, "ok.json", _GOOD)).id == "br-1"


def test_negative_checkpoint_is_a_branch_error(base):
    with pytest.raises(BranchError, match=r"checkpoint -1 is not the seq of a record of base.json"):
        new_branch(base, "base.json", at=-1)
