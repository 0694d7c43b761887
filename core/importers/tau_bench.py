"""tau-bench results (``sierra-research/tau-bench``): a JSON array of runs.

Each run has ``task_id``, ``trial``, ``reward``, ``info`` (the task with its expected
``actions``, ``reward_info``, ``user_cost``) and ``traj`` (OpenAI-style messages:
system policy, simulated-user turns as ``user`` messages, assistant turns with
``tool_calls``, ``tool`` results).

* each run → one recording, run id ``task<task_id>-trial<trial>``; every recording
  has ``metadata.task_id``, ``metadata.trial``, ``metadata.reward`` and
  ``metadata.outcome`` (``success`` when reward is 1, else ``failure``), so trials of
  one task can be compared; ``metadata.expected_actions`` holds the task's expected
  actions and ``metadata.task`` the rest of the task (instruction, user id);
* each assistant turn → a model record over every message before it (the simulated
  user's turns are messages, not calls: the file does not hold the user model's
  requests);
* each tool call → a tool record paired with its ``tool`` message by id; a result
  starting ``Error:`` (how tau-bench environments report a failed tool) → error type
  ``tool_error``;
* the simulated user's turns: ``metadata.user_turns`` = ``{"stop_marker": "###STOP###",
  "closing": <the user's last message>}`` — the marker tau-bench's user simulator says to
  end the conversation, and its last words (after the agent's last reply, so in no
  request) — which a replay offers once a branch reaches the end of the conversation
  (docs/replay.md, "Continuing an imported run");
* the agent model is not named in the file: it is taken from the file name
  (``historical_trajectories/<model>-<env>.json``), with a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.recording import ChatMessage, ErrorInfo
from ._build import JsonImporter, PendingCall, RunBuilder, id_text, openai_message
from ._source import SourceFile, Truncation, as_object
from .base import ImportedRun, Importer

_HEAD = re.compile(rb"^\s*\[\s*\{")
_ENVS = ("airline", "retail")
#: what tau-bench's simulated user says to end the conversation
STOP_MARKER = "###STOP###"


class TauBenchImporter(JsonImporter, Importer):
    """tau-bench result files (many runs per file)."""

    name = "tau_bench"
    description = "tau-bench results (JSON array of runs with task_id, reward, traj)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON array whose first object has ``task_id`` and ``reward`` (and
        ``traj`` or ``trial``)."""
        if not _HEAD.match(head):
            return "not a JSON array of objects"
        if (
            re.search(rb'"task_id"\s*:', head)
            and re.search(rb'"reward"\s*:', head)
            and (b'"traj"' in head or b'"trial"' in head)
        ):
            return None
        return "no tau-bench runs (task_id, reward, traj) near the start"

    def sniff_truncated(self, head: bytes) -> bool:
        """A cut-short array whose first object has ``task_id`` (its first key in
        tau-bench's results files)."""
        return bool(_HEAD.match(head)) and re.search(rb'"task_id"\s*:', head[:4096]) is not None

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, list):
            raise FormatError("not tau-bench results: expected a JSON array of runs", file=src.name, path="/")
        return self._runs(src, doc, False)

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        if not isinstance(partial.value, list):
            return []
        return self._runs(src, partial.value[: partial.complete_items()], True)

    def _runs(self, src: SourceFile, runs: list[Any], incomplete: bool) -> list[ImportedRun]:
        model = _model_from_name(src.path)
        out = []
        for i, run in enumerate(runs):
            if not isinstance(run, dict):
                raise FormatError(f"run {i} is not an object", file=src.name, path=f"/{i}")
            out.append(self._run(src, run, i, model, incomplete))
        return out

    def _run(
        self, src: SourceFile, run: dict[str, Any], index: int, model: str | None, incomplete: bool
    ) -> ImportedRun:
        task_id = run.get("task_id")
        trial = run.get("trial")
        run_id = f"task{id_text(task_id)}-trial{id_text(trial)}"
        b = RunBuilder(self.name, src, run_id, index)
        if model is None:
            b.warn("file name", "the agent model is not named in the file or its name; model records say 'unknown'")
        else:
            b.warn("file name", f"the agent model is not named in the file; {model!r} is taken from the file name")
        traj = run.get("traj")
        if not isinstance(traj, list):
            b.warn(f"[{index}].traj", "run has no traj array")
            traj = []
        transcript: list[ChatMessage] = []
        for j, m in enumerate(traj):
            p = f"[{index}].traj[{j}]"
            cm = openai_message(b, m, p)
            if cm.role == "assistant":
                b.unanswered(p)
                b.model(model=model or "unknown", messages=list(transcript), response=cm, place=p)
                for tc in cm.tool_calls or []:
                    b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), p))
            elif cm.role == "tool":
                call = b.pairer.take(cm.tool_call_id, cm.name, p)
                content = m.get("content") if isinstance(m, dict) else None
                error = None
                if isinstance(content, str) and content.startswith("Error:"):
                    error = ErrorInfo(type="tool_error", message=content[len("Error:") :].strip())
                if call is None:
                    b.warn(p, "tool result answers no pending call; kept without a key")
                    b.tool(
                        tool=cm.name or "unknown",
                        arguments={},
                        tool_call_id=cm.tool_call_id,
                        content=content,
                        error=error,
                        place=p,
                        identity_known=False,
                    )
                else:
                    b.tool(
                        tool=call.name,
                        arguments=call.arguments,
                        tool_call_id=call.id,
                        content=content,
                        error=error,
                        place=p,
                    )
            transcript.append(cm)
        b.unanswered(f"[{index}].traj")
        # the simulated customer's last words (after the agent's last reply, so in no
        # request): kept for the replay, which offers them when a branch reaches the end
        closing = None
        if transcript and transcript[-1].role == "user" and any(m.role == "assistant" for m in transcript):
            closing = transcript[-1].text
        info = as_object(run.get("info"))
        task = as_object(info.get("task"))
        reward = run.get("reward")
        meta: dict[str, Any] = {
            "benchmark": "tau-bench",
            "environment": _env_from_name(src.path),
            "task_id": task_id,
            "trial": trial,
            "reward": reward,
            "expected_actions": task.get("actions"),
            "expected_outputs": task.get("outputs"),
            "task": {k: v for k, v in task.items() if k not in ("actions", "outputs")},
            "reward_info": info.get("reward_info"),
            "user_cost": info.get("user_cost"),
        }
        meta["user_turns"] = {"stop_marker": STOP_MARKER, **({"closing": closing} if closing is not None else {})}
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            meta["outcome"] = "success" if reward >= 1.0 else "failure"
        return b.build({k: v for k, v in meta.items() if v is not None}, incomplete=incomplete)


def _model_from_name(path: Path) -> str | None:
    stem = name_text(path.name).rsplit(".", 1)[0]
    for env in _ENVS:
        if stem.endswith("-" + env) and len(stem) > len(env) + 1:
            return stem[: -len(env) - 1]
    return None


def _env_from_name(path: Path) -> str | None:
    stem = name_text(path.name).rsplit(".", 1)[0]
    for env in _ENVS:
        if stem.endswith("-" + env):
            return env
    return None
