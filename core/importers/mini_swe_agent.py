"""mini-swe-agent trajectories (``.traj.json``, ``SWE-agent/mini-swe-agent``).

The file holds ``info`` (model stats, config, ``mini_version``, exit status,
submission), ``messages`` (OpenAI-style chat: system, user, assistant with
``tool_calls`` or text actions, ``tool`` results with ``extra.returncode``) and
``trajectory_format``.

* each ``assistant`` message → a model record over every message before it; its
  ``extra.response`` gives model name, usage and finish reason;
* each tool call → a tool record paired with its ``tool`` message (by id, else by
  position); a non-zero ``returncode`` → error ``nonzero_exit``, an
  ``exception_info`` → error ``exception``;
* a message whose role is not a chat role (mini-swe-agent's final ``exit`` message)
  is kept with its role as written: inside later requests if any, and always as an
  interrupt record ``{"type": "message", "role": "exit", "unknown_role": true, ...}``
  with a warning. When the run ends with a call that has no ``tool`` result and an
  ``exit`` message follows, the exit message's content is that call's result
  (mini-swe-agent ends the run from inside the submitting command).
* text actions without ``tool_calls`` (``extra.actions``) are imported as ``bash``
  tool records.

The final output (:data:`FINAL_OUTPUT_RULE`, in ``metadata.final_output_rule``) is the
submission: the result of the last command that echoes mini-swe-agent's submit marker
(``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``; ``MINI_SWE_AGENT_FINAL_OUTPUT`` in older
versions) — mini-swe-agent ends the run when a command's output starts with it.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.recording import STANDARD_ROLES, ChatMessage, ErrorInfo
from ._build import JsonImporter, PendingCall, RunBuilder, id_text, openai_message, usage_pair
from ._source import SourceFile, Truncation, as_array, as_object, read_tail
from .base import ImportedRun, Importer

#: mini-swe-agent's final output: what the submitting command returned (the submission)
FINAL_OUTPUT_RULE: dict[str, Any] = {
    "format": "mini_swe_agent",
    "describe": "the result of the last command that echoes the submit marker (COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)",
    "takes": [
        {
            "tool": "bash",
            "command": r"\b(COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT)\b",
            "take": "result",
        }
    ],
}


class MiniSweAgentImporter(JsonImporter, Importer):
    """mini-swe-agent ``.traj.json`` files."""

    name = "mini_swe_agent"
    description = "mini-swe-agent trajectory (.traj.json)"
    final_output_rule = FINAL_OUTPUT_RULE

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON object with ``trajectory_format: "mini-swe-agent…"`` (at either
        end of the file) or ``mini_version`` and ``messages`` near the start."""
        if not head.lstrip().startswith(b"{"):
            return "not a JSON object"
        pat = re.compile(rb'"trajectory_format"\s*:\s*"mini-swe-agent')
        if pat.search(head) or pat.search(read_tail(path)):
            return None
        if b'"mini_version"' in head and b'"messages"' in head:
            return None
        return 'no "trajectory_format": "mini-swe-agent…" and no mini_version'

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise FormatError("not a mini-swe-agent trajectory: no 'messages' array", file=src.name, path="/messages")
        return [self._run(src, doc, False)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        doc = partial.value
        if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            return [self._run(src, doc, True)]
        return []

    def _run(self, src: SourceFile, doc: dict[str, Any], incomplete: bool) -> ImportedRun:
        run_id = id_text(doc.get("instance_id") or name_text(src.path.name).split(".")[0] or "run")
        b = RunBuilder(self.name, src, run_id)
        info = as_object(doc.get("info"))
        msgs = doc["messages"]
        default_model = _config_model(info)
        converted: list[ChatMessage] = []
        for j, m in enumerate(msgs):
            p = f"messages[{j}]"
            cm = openai_message(b, m, p)
            m = m if isinstance(m, dict) else {}
            extra = as_object(m.get("extra"))
            at = b.time(extra.get("timestamp"))
            role = cm.role
            if role == "assistant":
                b.unanswered(p)
                resp = as_object(extra.get("response"))
                model = resp.get("model") if isinstance(resp.get("model"), str) else default_model
                choices = as_array(resp.get("choices"))
                finish = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else None
                b.model(
                    model=model or "unknown",
                    messages=list(converted),
                    response=cm,
                    at=at,
                    finish_reason=finish if isinstance(finish, str) else None,
                    usage=usage_pair(resp.get("usage")),
                    place=p,
                )
                if cm.tool_calls:
                    for tc in cm.tool_calls:
                        b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), p, at))
                else:
                    for k, act in enumerate(extra.get("actions") or []):
                        if isinstance(act, dict) and isinstance(act.get("command"), str):
                            b.pairer.add(
                                PendingCall(
                                    str(act.get("tool_call_id") or ""),
                                    "bash",
                                    {"command": act["command"]},
                                    False,
                                    f"{p}.extra.actions[{k}]",
                                    at,
                                )
                            )
            elif role == "tool":
                call = b.pairer.take(cm.tool_call_id, None, p)
                if call is None:
                    b.warn(p, "tool result answers no pending call; kept as a tool record without a key")
                    b.tool(
                        tool="unknown",
                        arguments={},
                        tool_call_id=cm.tool_call_id,
                        content=m.get("content"),
                        at=at,
                        place=p,
                        identity_known=False,
                    )
                else:
                    b.tool(
                        tool=call.name,
                        arguments=call.arguments,
                        tool_call_id=call.id or None,
                        content=m.get("content"),
                        error=_tool_error(extra),
                        at=at,
                        place=p,
                        artifact=_artifact(extra),
                    )
            elif role not in STANDARD_ROLES:
                b.warn(
                    p,
                    f"message role {role!r} is not a chat role; kept as written and marked "
                    "(interrupt record with unknown_role)",
                )
                pend = b.pairer.pending
                if role == "exit" and len(pend) == 1:
                    c = b.pairer.drain()[0]
                    b.warn(
                        p,
                        f"call {c.id or '(no id)'} has no tool result; the exit message's content is taken "
                        "as its result",
                    )
                    b.tool(
                        tool=c.name,
                        arguments=c.arguments,
                        tool_call_id=c.id or None,
                        content=m.get("content"),
                        at=at,
                        place=p,
                        artifact={"from_role": role},
                    )
                value: dict[str, Any] = {
                    "type": "message",
                    "role": role,
                    "unknown_role": True,
                    "content": m.get("content"),
                }
                for key in ("exit_status", "submission"):
                    if extra.get(key) is not None:
                        value[key] = extra[key]
                b.interrupt(value, at=at, place=p)
            converted.append(cm)
        b.unanswered("messages")
        meta: dict[str, Any] = {
            "instance_id": run_id,
            "agent": "mini-swe-agent",
            "trajectory_format": doc.get("trajectory_format"),
        }
        for key in ("exit_status", "submission", "model_stats", "mini_version"):
            if info.get(key) is not None:
                meta[key] = info[key]
        if isinstance(info.get("config"), dict):
            meta["config"] = info["config"]
        meta["final_output_rule"] = copy.deepcopy(FINAL_OUTPUT_RULE)
        return b.build({k: v for k, v in meta.items() if v is not None}, incomplete=incomplete)


def _tool_error(extra: dict[str, Any]) -> ErrorInfo | None:
    if extra.get("exception_info"):
        return ErrorInfo(type="exception", message=str(extra["exception_info"]))
    rc = extra.get("returncode")
    if isinstance(rc, int) and not isinstance(rc, bool) and rc != 0:
        return ErrorInfo(type="nonzero_exit", message=f"exit code {rc}")
    return None


def _artifact(extra: dict[str, Any]) -> Any:
    out = {k: extra[k] for k in ("returncode",) if k in extra}
    return out or None


def _config_model(info: dict[str, Any]) -> str | None:
    cfg = as_object(info.get("config"))
    model = as_object(cfg.get("model"))
    name = model.get("model_name")
    return name if isinstance(name, str) else None
