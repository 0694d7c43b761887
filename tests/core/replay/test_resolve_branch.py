"""resolve_branch: every branch spec (draft, file, stored id, document, JSON text, object)
is parsed, validated once against the base and returned as a ResolvedBranch the engine
and start_replay run without validating again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

import core
from core.errors import BranchError, WorkspaceError
from core.record.io import recording_digest
from core.record.recording import ChatMessage, ModelResponse, Recording, ToolCall, ToolResult
from core.replay import branch as branch_mod
from core.replay import dry_run as dry_run_mod
from core.replay import engine as engine_mod
from core.replay.branch import (
    Branch,
    BranchDraft,
    InterventionFile,
    ModelResponseIntervention,
    Policy,
    ResolvedBranch,
    ToolResultIntervention,
    new_branch,
    resolve_branch,
    save_branch,
)
from core.replay.engine import ReplayEngine
from core.replay.replays import resume_replay, start_replay
from core.workspace import Workspace
from inspector.cli import main
from tests.builders import SAMPLES, chat_recording


@pytest.fixture()
def base() -> Recording:
    return chat_recording(3)


def _iv(seq: int, content: Any = 1) -> dict[str, Any]:
    return {"kind": "tool_result", "seq": seq, "result": {"content": content}}


def _write(path: Path, obj: Any) -> Path:
    path.write_bytes(orjson.dumps(obj))
    return path


# --------------------------------------------------------------------------- specs


def test_a_draft_becomes_a_resolved_branch(base: Recording) -> None:
    draft = BranchDraft(base_path="base.json", at=2, interventions=[ToolResultIntervention(seq=2, result=ToolResult())])
    br = resolve_branch(None, draft, base)
    assert isinstance(br, ResolvedBranch) and isinstance(br, Branch)
    assert br.checkpoint == 2 and len(br.interventions) == 1 and br.id.startswith("br-")
    assert br.base.path == "base.json" and br.base.digest == base.digest
    assert br.base_digest == recording_digest(base) == base.digest
    assert br.source == "new branch of base.json"
    assert br.is_resolved_for(base) and not br.is_resolved_for(chat_recording(2))
    # its JSON is the branch's: a plain Branch reads it back equal
    assert Branch.model_validate(orjson.loads(br.dumps())).to_json_obj() == br.to_json_obj()


def test_the_curated_api_exports_the_services() -> None:
    assert core.resolve_branch is resolve_branch and core.ResolvedBranch is ResolvedBranch
    assert core.BranchDraft is BranchDraft and core.InterventionFile is InterventionFile
    assert core.recording_digest is recording_digest


def test_a_resolved_branch_is_frozen(base: Recording) -> None:
    br = resolve_branch(None, BranchDraft(base_path="base.json", at=0), base)
    with pytest.raises(ValidationError):
        br.checkpoint = 5  # type: ignore[misc]
    assert not new_branch(base, "base.json", at=0).is_resolved_for(base)  # a plain branch never says so


def test_a_branch_file(tmp_path: Path, base: Recording) -> None:
    save_branch(
        new_branch(base, "base.json", at=2, interventions=[ToolResultIntervention(seq=2, result=ToolResult())]),
        tmp_path / "b.json",
    )
    br = resolve_branch(None, str(tmp_path / "b.json"), base)
    assert br.source == str(tmp_path / "b.json") and br.checkpoint == 2
    assert resolve_branch(None, tmp_path / "b.json", base).id == br.id  # a path-like works too


def test_a_missing_branch_file_or_id(tmp_path: Path, base: Recording) -> None:
    with pytest.raises(BranchError, match=r"^missing\.json: no such branch file$"):
        resolve_branch(None, "missing.json", base)
    with pytest.raises(BranchError, match="br-x: no such branch file .and no workspace to look up a branch id in"):
        resolve_branch(None, "br-x", base)
    with Workspace.open(tmp_path / "ws") as ws:
        with pytest.raises(WorkspaceError, match="no branch 'br-x'"):
            resolve_branch(ws, "br-x", base)
    with pytest.raises(BranchError, match="no such branch file"):
        resolve_branch(None, "x" * 5000, base)  # a name the OS cannot look up is no file


def test_a_stored_branch_id(tmp_path: Path, base: Recording) -> None:
    stored = new_branch(base, "base.json", at=2)
    with Workspace.open(tmp_path / "ws") as ws:
        ws.add_branch(stored, base, "base.json")
        br = resolve_branch(ws, stored.id, base)
    assert br.to_json_obj() == stored.to_json_obj()
    assert br.source == f"branch {stored.id} of the workspace {tmp_path / 'ws' / 'workspace.sqlite'}"


def test_a_branch_document_and_branch_json_text(base: Recording) -> None:
    doc = new_branch(base, "base.json", at=2).to_json_obj()
    assert resolve_branch(None, doc, base).id == doc["id"]
    assert resolve_branch(None, orjson.dumps(doc), base).source == "<branch JSON>"
    with pytest.raises(BranchError, match=r"^<branch>: at /checkpoint: "):
        resolve_branch(None, {**doc, "checkpoint": "2"}, base)  # strict: no conversion
    with pytest.raises(BranchError, match=r"^<branch JSON>: .*malformed JSON"):
        resolve_branch(None, b"{", base)
    with pytest.raises(BranchError, match=r"^<branch>: branch br-.*checkpoint 99 is not the seq"):
        resolve_branch(None, {**doc, "checkpoint": 99}, base)


def test_a_branch_object_and_an_already_resolved_one(base: Recording) -> None:
    plain = new_branch(base, "base.json", at=2)
    br = resolve_branch(None, plain, base)
    assert br.source == f"branch {plain.id}"
    assert resolve_branch(None, br, base) is br  # resolved for this base: as is
    other = chat_recording(2)
    with pytest.raises(BranchError, match="does not match the recording given"):
        resolve_branch(None, br, other)  # another base: validated against it


# --------------------------------------------------------------------------- errors


def test_draft_errors_name_the_intervention_file_and_its_index(tmp_path: Path, base: Recording) -> None:
    ok = InterventionFile.read(_write(tmp_path / "ok.json", [_iv(4), _iv(6)]))
    late = InterventionFile.read(_write(tmp_path / "late.json", [_iv(6), _iv(2)]))
    draft = BranchDraft(base_path="base.json", at=4, interventions=[ok, late])
    with pytest.raises(BranchError) as err:
        resolve_branch(None, draft, base)
    assert str(err.value) == (
        f"{tmp_path / 'late.json'}: intervention 1 (tool_result at seq 2) against base.json: "
        "seq 2 is before the checkpoint 4"
    )
    # an intervention given as an object is named by its index in the branch
    loose = ToolResultIntervention(seq=2, result=ToolResult())
    with pytest.raises(BranchError, match=r"^intervention 3 \(tool_result at seq 2\) against base.json: seq 2"):
        resolve_branch(
            None, BranchDraft(base_path="base.json", at=4, interventions=[ok, late.interventions[0], loose]), base
        )


def test_intervention_file_read_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(BranchError, match=r"bad.json: intervention 0 at /: unknown intervention kind 'oops'"):
        InterventionFile.read(_write(tmp_path / "bad.json", {"kind": "oops"}))
    with pytest.raises(BranchError, match=r"none.json: no such intervention file"):
        InterventionFile.read(tmp_path / "none.json")


def test_checkpoint_and_digest_errors(tmp_path: Path, base: Recording) -> None:
    with pytest.raises(BranchError, match=r"checkpoint -1 is not the seq of a record of base.json"):
        resolve_branch(None, BranchDraft(base_path="base.json", at=-1), base)
    with pytest.raises(BranchError, match=r"^branch br-.*: checkpoint 99 is not the seq of a record of the base"):
        resolve_branch(None, BranchDraft(base_path="base.json", at=99), base)
    save_branch(new_branch(chat_recording(2), "other.json", at=0), tmp_path / "b.json")
    with pytest.raises(BranchError) as err:
        resolve_branch(None, str(tmp_path / "b.json"), base)
    assert str(err.value).startswith(f"{tmp_path / 'b.json'}: branch br-")
    assert f"does not match the recording given ({base.digest})" in str(err.value)


def test_the_parent_must_be_a_branch_of_the_workspace(tmp_path: Path, base: Recording) -> None:
    draft = BranchDraft(base_path="base.json", at=0, parent="br-nope")
    assert resolve_branch(None, draft, base).parent == "br-nope"  # no workspace: checked when stored
    with Workspace.open(tmp_path / "ws") as ws:
        with pytest.raises(
            BranchError, match=r"^new branch of base.json: parent 'br-nope' is not a branch of the workspace"
        ):
            resolve_branch(ws, draft, base)
        root = new_branch(base, "base.json", at=0)
        ws.add_branch(root, base)
        child = resolve_branch(ws, BranchDraft(base_path="base.json", at=2, parent=root.id), base)
        assert child.parent == root.id


# --------------------------------------------------------------------------- validated once


@pytest.fixture()
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of validate_branch, wherever the engine, the dry run or the branch
    module call it from."""
    calls: list[str] = []
    real = branch_mod.validate_branch

    def counting(branch: Branch, base: Recording, **kw: Any) -> None:
        calls.append(branch.id)
        real(branch, base, **kw)

    for module in (branch_mod, engine_mod, dry_run_mod):
        monkeypatch.setattr(module, "validate_branch", counting)
    return calls


def test_one_replay_validates_its_branch_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], validations: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "sample-agent-fault-corrupted-result.json", "base.json")
    _write(tmp_path / "a.json", [])
    _write(tmp_path / "b.json", [])
    assert (
        main(
            [
                "branch",
                "new",
                "base.json",
                "--at",
                "3",
                "--intervention",
                "a.json",
                "--intervention",
                "b.json",
                "-o",
                "br.json",
            ]
        )
        == 0
    )
    assert len(validations) == 1  # branch new: one branch, one validation, whatever the files
    validations.clear()
    assert main(["replay", "base.json", "--branch", "br.json"]) == 0, capsys.readouterr().err
    assert len(validations) == 1  # the CLI, start_replay and the engine share one resolution
    validations.clear()
    branch_id = orjson.loads(Path("br.json").read_bytes())["id"]
    assert main(["replay", "base.json", "--branch", branch_id]) == 0
    assert len(validations) == 1
    validations.clear()
    assert main(["replay", "base.json", "--branch", "br.json", "--dry-run"]) == 0, capsys.readouterr().err
    assert len(validations) == 1  # the dry run takes the resolved branch too


def test_start_replay_and_the_engine_take_a_resolved_branch(
    tmp_path: Path, base: Recording, validations: list[str]
) -> None:
    plain = new_branch(base, "base.json", at=2, policy=Policy(drift="lenient"))
    validations.clear()
    with Workspace.open(tmp_path / "ws") as ws:
        start_replay(ws, "base.json", plain, base=base)  # a plain branch: resolved once
        assert len(validations) == 1
        resolved = resolve_branch(ws, plain, base)
        validations.clear()
        start_replay(ws, "base.json", resolved, base=base)
        ReplayEngine(base, resolved).run()
        assert validations == []
    ReplayEngine(base, plain).run()
    assert validations == [plain.id]  # a plain branch is still validated by the engine
    with pytest.raises(BranchError):  # and a resolved branch of another base is not trusted
        ReplayEngine(chat_recording(2), resolved)


def test_resume_validates_the_stored_branch_once(tmp_path: Path, base: Recording, validations: list[str]) -> None:
    call = ToolCall(id="call_new", name="lookup", arguments={"q": "new"})
    response = ModelResponse(message=ChatMessage(role="assistant", content="", tool_calls=[call]))
    paused = new_branch(base, "base.json", at=3, interventions=[ModelResponseIntervention(step=1, response=response)])
    with Workspace.open(tmp_path / "ws") as ws:
        record, _ = start_replay(ws, "base.json", paused, base=base)
        assert record.status == "paused"
        validations.clear()
        record, _ = resume_replay(ws, record.id)
        assert record.status == "paused" and len(validations) == 1
