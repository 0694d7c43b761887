"""The final output per format: each importer declares its rule, and the audit, the diff,
the metrics and knockout all use it (core.analysis.final_output).

SWE-agent's output is the patch its ``submit`` call returns, mini-swe-agent's the result
of the command that echoes its submit marker, OpenHands' the message of its ``finish``
call. A run that never submitted has none; two runs that submitted different patches
have different final outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.analysis.audit import audit
from core.analysis.diff import output_diff
from core.analysis.final_output import final_output, find_final_output
from core.analysis.metrics import comparison_metrics, run_metrics_row
from core.effects.knockout import ReplayKnockout
from core.importers import import_file
from core.record.recording import ChatMessage, ModelRequest, ModelResponse, Recording, ToolRecord, ToolResult
from core.replay.branch import ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from inspector.cli import main
from tests.builders import TESTS
from tests.core.importers.test_call_ids import swe_traj

REAL = TESTS / "data" / "real_traces"
PATCH_A = "diff --git a/x.py b/x.py\n-a\n+b\n"
PATCH_B = "diff --git a/x.py b/x.py\n-a\n+c\n"


def imported(path: Path) -> Recording:
    (run,) = import_file(path)
    return run.recording


def mini_traj(tmp_path: Path, submission: str | None = None) -> Path:
    """The real mini-swe-agent trajectory, its submission (the exit message) replaced."""
    doc = json.loads((REAL / "mini_swe_agent" / "sqlfluff__sqlfluff-2419.traj.json").read_text())
    if submission is not None:
        exit_msg = next(m for m in doc["messages"] if m.get("role") == "exit")
        exit_msg["content"] = submission
    p = tmp_path / f"mini-{abs(hash(submission))}.traj.json"
    p.write_text(json.dumps(doc))
    return p


def openhands_events(tmp_path: Path, message: str | None = None) -> Path:
    """The real OpenHands stream ending in ``finish``, the finishing response's text replaced."""
    doc = json.loads((REAL / "openhands" / "wrong_initial_state.json").read_text())
    if message is not None:
        for ev in doc:
            tcm = ev.get("tool_call_metadata") or {}
            if tcm.get("function_name") == "finish":
                tcm["model_response"]["choices"][0]["message"]["content"] = message
    p = tmp_path / f"oh-{abs(hash(message))}.json"
    p.write_text(json.dumps(doc))
    return p


# ---------------------------------------------------------------------- each format's rule


def test_swe_agent_function_calling_submit_is_the_final_output(tmp_path: Path) -> None:
    rec = imported(swe_traj(tmp_path, patch=PATCH_A))
    submit = [r for r in rec.records if isinstance(r, ToolRecord)][-1]
    assert submit.tool == "submit"
    found = find_final_output(rec)
    assert (found.seq, found.value) == (submit.seq, PATCH_A)
    rep = audit(rec)
    assert rep.final_seq == submit.seq and rep.final_output == PATCH_A
    assert {c.seq: c.status for c in rep.calls}[submit.seq] == "final"
    assert run_metrics_row(rec)["final_output"] == PATCH_A


def test_swe_agent_text_actions_submit_the_same_way() -> None:
    rec = imported(REAL / "swe_agent" / "pydicom__pydicom-1458.traj")
    found = find_final_output(rec)
    assert found.seq == 23 and found.value.lstrip().startswith("diff --git a/pydicom/pixel_data_handlers")
    assert audit(rec).final_seq == 23
    assert run_metrics_row(rec)["final_output"] == found.value


def test_mini_swe_agent_submit_command_is_the_final_output() -> None:
    rec = imported(REAL / "mini_swe_agent" / "sqlfluff__sqlfluff-2419.traj.json")
    found = find_final_output(rec)
    submit = {r.seq: r for r in rec.records}[found.seq]
    assert isinstance(submit, ToolRecord) and "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in submit.arguments["command"]
    assert found.value.startswith("diff --git a/src/sqlfluff/rules/L060.py")
    rep = audit(rec)
    assert rep.final_seq == found.seq == 81 and rep.unused() == []


def test_openhands_finish_is_the_final_output() -> None:
    rec = imported(REAL / "openhands" / "wrong_initial_state.json")
    found = find_final_output(rec)
    finish = {r.seq: r for r in rec.records}[found.seq]
    assert isinstance(finish, ToolRecord) and finish.tool == "finish"
    assert found.value.startswith("The file has been successfully renamed from `game_2048.py` to `2048.py`")
    rep = audit(rec)
    assert rep.final_seq == finish.seq and rep.unused() == []


def test_a_run_that_never_submitted_has_no_final_output(tmp_path: Path) -> None:
    rec = imported(swe_traj(tmp_path))
    cut = Recording(metadata=rec.metadata, records=[r for r in rec.records if getattr(r, "tool", "") != "submit"])
    found = find_final_output(cut)
    assert found.value is None and found.seq is None and "never called `submit`" in found.missing
    rep = audit(cut)
    assert rep.final_seq is None and "never called `submit`" in rep.calls[0].reason
    # the last response is not taken instead
    assert final_output(cut) is None


# ---------------------------------------------------------------------- one rule for every consumer


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: (swe_traj(tmp, patch=PATCH_A), swe_traj(tmp / "b", patch=PATCH_B)),
        lambda tmp: (mini_traj(tmp), mini_traj(tmp, "diff --git a/other.py b/other.py\n+changed\n")),
        lambda tmp: (openhands_events(tmp), openhands_events(tmp, "I renamed nothing.")),
    ],
    ids=["swe_agent-submit", "mini_swe_agent-submit-command", "openhands-finish"],
)
def test_diff_and_metrics_see_a_different_submission(tmp_path: Path, make: Any, capsys: Any) -> None:
    (tmp_path / "b").mkdir()
    a_path, b_path = make(tmp_path)
    a, b = imported(a_path), imported(b_path)
    assert final_output(a) is not None and final_output(b) is not None
    assert output_diff(final_output(a), final_output(b)).changed
    assert comparison_metrics(a, b)["final_output_changed"][0] is True
    assert comparison_metrics(a, a)["final_output_changed"][0] is False
    assert main(["diff", str(a_path), str(b_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["output_diff"]["changed"] is True
    assert main(["diff", str(a_path), str(b_path)]) == 0
    text = capsys.readouterr().out
    assert "final output (text diff):" in text and "final output: same" not in text


def test_audit_command_prints_the_submission(tmp_path: Path, capsys: Any) -> None:
    p = swe_traj(tmp_path, patch=PATCH_A)
    assert main(["audit", str(p)]) == 0
    assert "final output (seq 7): diff --git a/x.py b/x.py -a +b" in capsys.readouterr().out


# ---------------------------------------------------------------------- replays and knockout


def test_replay_events_are_judged_by_the_base_rule(tmp_path: Path) -> None:
    base = imported(swe_traj(tmp_path, patch=PATCH_A))
    submit = [r for r in base.records if isinstance(r, ToolRecord)][-1]
    same = ReplayEngine(base, new_branch(base, "b.json", at=submit.seq)).run()
    assert same.events.metadata["final_output_rule"] == base.metadata["final_output_rule"]
    assert final_output(same.events) == PATCH_A
    assert not output_diff(final_output(base), final_output(same.events)).changed
    iv = ToolResultIntervention(seq=submit.seq, result=ToolResult(content=PATCH_B))
    other = ReplayEngine(base, new_branch(base, "b.json", at=submit.seq, interventions=[iv])).run()
    assert final_output(other.events) == PATCH_B
    assert comparison_metrics(base, other.events)["final_output_changed"][0] is True


class ReplaysTheBase:
    """An executor whose agent makes the base's calls in order (its answers ignored) and
    answers anything unrecorded live with a marker."""

    def __init__(self, base: Recording) -> None:
        self.base = base

    def run(self, runtime: Any, task: Any) -> Any:
        for r in self.base.records:
            if r.kind == "model":
                runtime.call_model(r.model, r.request)
            elif r.kind == "tool":
                runtime.call_tool(r.tool, r.arguments, r.tool_call_id)
        return None

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=ChatMessage(role="assistant", content="live"))

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        return ToolResult(content="live")


def test_knockout_uses_the_same_rule(tmp_path: Path) -> None:
    """Knocking out ``submit`` removes the submission (the final output changed);
    knocking out an earlier call the agent does not depend on leaves it."""
    base = imported(swe_traj(tmp_path, patch=PATCH_A))
    tools = [r for r in base.records if isinstance(r, ToolRecord)]
    runner = ReplayKnockout(ReplaysTheBase(base), "tests:replays_the_base")
    first = runner.knockout(base, tools[0].seq)
    assert "comparability full" in first.detail and first.final_output_changed is False, first.detail
    last = runner.knockout(base, tools[-1].seq)
    assert "comparability full" in last.detail and last.final_output_changed is True, last.detail
