"""OpenHands event streams (``All-Hands-AI/OpenHands``): a JSON array of events.

Each event has ``id``, ``timestamp``, ``source`` (``user``/``agent``/``environment``)
and either ``action`` (with ``args``) or ``observation`` (with ``content``,
``extras`` and ``cause`` = the id of the action it answers). Agent actions carry
``tool_call_metadata``: the tool call id, the function name and the full model
response (repeated on every action of a multi-call response and on observations).

* each distinct ``model_response`` (by its ``id``) → one model record at its first
  action: response message, tool calls, usage, finish reason, model name. The stream
  does not store the request, so the request messages are **rebuilt** from the
  stream (user messages, earlier model responses, observations as ``tool`` messages)
  and marked approximate with a warning;
* each action with ``tool_call_metadata`` → a tool record: tool = function name,
  arguments = the call's arguments in the model response (the action's ``args``
  when missing), result = the observation whose ``cause`` is the action (else the one
  with the same tool call id). ``extras.metadata.exit_code`` -1 means the command did
  not return (OpenHands gave up waiting): error type ``hung``; another non-zero exit
  code → ``nonzero_exit``; an ``error`` observation → ``error``;
* agent state changes (``agent_state_changed`` observations) → interrupt records
  ``{"type": "agent_state", "state": …}``. They are not lifecycle records: a
  lifecycle event is one of the harness events of the recording format
  (``plugin.mount`` … ``harness.shutdown``) and none of them means "agent state";
  ``change_agent_state`` actions are requests for the same change and are not
  duplicated;
* user messages → interrupt records ``{"type": "user_message"}`` (and in rebuilt
  requests); agent ``message``/``finish`` without a tool call → interrupt records
  ``{"type": "agent_message"}``; ``null`` observations are skipped.

The final output (:data:`FINAL_OUTPUT_RULE`, in ``metadata.final_output_rule``) is what the
agent said when it called ``finish``: the call's ``message`` argument, else the text of
the response that called it, else (a ``finish`` without a tool call) the finish message.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.recording import ChatMessage, ErrorInfo
from ._build import JsonImporter, RunBuilder, json_text, openai_message, parse_arguments, usage_pair
from ._source import SourceFile, Truncation, as_array, as_object
from .base import ImportedRun, Importer

_HEAD = re.compile(rb"^\s*\[\s*\{")

#: OpenHands' final output: the message of its last ``finish`` (core.analysis.final_output)
FINAL_OUTPUT_RULE: dict[str, Any] = {
    "format": "openhands",
    "describe": "the message of the last `finish` call (OpenHands' final answer)",
    "takes": [
        {"tool": "finish", "take": "argument", "field": "message"},
        {"tool": "finish", "take": "response"},
        {"interrupt": {"type": "agent_message", "action": "finish"}, "take": "field", "field": "content"},
    ],
}


class OpenHandsImporter(JsonImporter, Importer):
    """OpenHands event-stream JSON (list of action/observation events)."""

    name = "openhands"
    description = "OpenHands event stream (JSON array of actions and observations)"
    final_output_rule = FINAL_OUTPUT_RULE

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON array whose first object has ``source`` and ``action`` or
        ``observation``."""
        if not _HEAD.match(head):
            return "not a JSON array of objects"
        if re.search(rb'"source"\s*:\s*"(?:agent|user|environment)"', head) and re.search(
            rb'"(?:action|observation)"\s*:\s*"', head
        ):
            return None
        return "no OpenHands events (objects with source and action/observation) near the start"

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, list):
            raise FormatError("not an OpenHands event stream: expected a JSON array", file=src.name, path="/")
        return [self._run(src, doc, False)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        doc = partial.value
        if not isinstance(doc, list):
            return []
        return [self._run(src, doc[: partial.complete_items()], True)]

    def _run(self, src: SourceFile, events: list[Any], incomplete: bool) -> ImportedRun:
        run_id = name_text(src.path.name).rsplit(".", 1)[0] or "run"
        b = RunBuilder(self.name, src, run_id)
        by_cause: dict[Any, tuple[int, dict[str, Any]]] = {}
        by_call: dict[str, tuple[int, dict[str, Any]]] = {}
        for i, ev in enumerate(events):
            if isinstance(ev, dict) and "observation" in ev:
                if ev.get("cause") is not None:
                    by_cause.setdefault(ev["cause"], (i, ev))
                tcm = ev.get("tool_call_metadata")
                if isinstance(tcm, dict) and tcm.get("tool_call_id"):
                    by_call.setdefault(str(tcm["tool_call_id"]), (i, ev))
        transcript: list[ChatMessage] = []
        seen_responses: set[str] = set()
        used_obs: set[int] = set()
        models: set[str] = set()
        rebuilt = False
        for i, ev in enumerate(events):
            p = f"[{i}]"
            if not isinstance(ev, dict):
                b.warn(p, "event is not an object; skipped")
                continue
            at = b.time(ev.get("timestamp"))
            if "action" in ev:
                action = ev.get("action")
                args = as_object(ev.get("args"))
                tcm = ev.get("tool_call_metadata") if isinstance(ev.get("tool_call_metadata"), dict) else None
                if tcm is not None:
                    resp = as_object(tcm.get("model_response"))
                    rid = str(resp.get("id") or f"event-{i}")
                    if rid not in seen_responses:
                        seen_responses.add(rid)
                        rebuilt = True
                        msg = self._response_message(b, resp, p)
                        model = str(resp.get("model") or "unknown")
                        models.add(model)
                        choices = as_array(resp.get("choices"))
                        finish = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else None
                        b.model(
                            model=model,
                            messages=list(transcript),
                            response=msg,
                            at=at,
                            finish_reason=finish if isinstance(finish, str) else None,
                            usage=usage_pair(resp.get("usage")),
                            place=f"{p}.tool_call_metadata.model_response",
                        )
                        transcript.append(msg)
                    self._tool(b, ev, tcm, resp, by_cause, by_call, used_obs, transcript, p, at)
                elif action == "message":
                    text = args.get("content", ev.get("message"))
                    typ = "user_message" if ev.get("source") == "user" else "agent_message"
                    b.interrupt({"type": typ, "source": ev.get("source"), "content": text}, at=at, place=p)
                    transcript.append(b.message("user" if typ == "user_message" else "assistant", text, place=p))
                elif action == "finish":
                    b.interrupt(
                        {
                            "type": "agent_message",
                            "source": ev.get("source"),
                            "action": "finish",
                            "content": args.get("thought") or ev.get("message"),
                        },
                        at=at,
                        place=p,
                    )
                elif action == "change_agent_state":
                    continue
                else:
                    b.warn(p, f"action {action!r} has no tool call metadata; not mapped")
            elif "observation" in ev:
                obs = ev.get("observation")
                if obs == "agent_state_changed":
                    extras = as_object(ev.get("extras"))
                    b.interrupt(
                        {"type": "agent_state", "state": extras.get("agent_state"), "event_id": ev.get("id")},
                        at=at,
                        place=p,
                    )
                elif obs == "null":
                    continue
                elif i not in used_obs and ev.get("cause") is None:
                    b.warn(p, f"observation {obs!r} answers no action; not mapped")
            else:
                b.warn(p, "event is neither an action nor an observation; skipped")
        if rebuilt:
            b.warn(
                "requests",
                "OpenHands does not store model requests: request messages are rebuilt from the "
                "event stream (approximate; keys will not match the original calls)",
            )
        for i, ev in enumerate(events):
            if (
                isinstance(ev, dict)
                and "observation" in ev
                and ev.get("cause") is not None
                and i not in used_obs
                and ev.get("observation") not in ("null", "agent_state_changed")
            ):
                b.warn(
                    f"[{i}]",
                    f"observation {ev.get('observation')!r} answers action {ev.get('cause')}, "
                    "which is not a tool call; not mapped",
                )
        first_user = next(
            (e for e in events if isinstance(e, dict) and e.get("source") == "user" and e.get("action") == "message"),
            None,
        )
        meta: dict[str, Any] = {"agent": "openhands", "models": sorted(models)}
        if first_user is not None:
            a = as_object(first_user.get("args"))
            meta["task"] = a.get("content", first_user.get("message"))
        start = next((e.get("timestamp") for e in events if isinstance(e, dict) and e.get("timestamp")), None)
        meta["final_output_rule"] = copy.deepcopy(FINAL_OUTPUT_RULE)
        return b.build(meta, created_at=b.time(start), incomplete=incomplete)

    def _response_message(self, b: RunBuilder, resp: dict[str, Any], p: str) -> ChatMessage:
        choices = as_array(resp.get("choices"))
        m = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        if not isinstance(m, dict):
            b.warn(p, "model response has no message")
            m = {"role": "assistant", "content": None}
        return openai_message(b, {**m, "role": m.get("role") or "assistant"}, f"{p}.model_response.message")

    def _tool(
        self,
        b: RunBuilder,
        ev: dict[str, Any],
        tcm: dict[str, Any],
        resp: dict[str, Any],
        by_cause: dict[Any, Any],
        by_call: dict[str, Any],
        used: set[int],
        transcript: list[ChatMessage],
        p: str,
        at: str | None,
    ) -> None:
        call_id = str(tcm.get("tool_call_id") or "")
        name = str(tcm.get("function_name") or ev.get("action") or "unknown")
        arguments: Any = None
        for ch in resp.get("choices") or []:
            msg = ch.get("message") if isinstance(ch, dict) else None
            for tc in (msg or {}).get("tool_calls") or []:
                if isinstance(tc, dict) and tc.get("id") == call_id:
                    fn = as_object(tc.get("function"))
                    arguments, raw = parse_arguments(fn.get("arguments"))
                    if raw:
                        b.warn(p, "tool-call arguments are not a JSON object; kept raw")
        if arguments is None:
            args = as_object(ev.get("args"))
            arguments = {k: v for k, v in args.items() if k not in ("thought",)}
            b.warn(p, f"call {call_id or '(no id)'} not found in its model response; arguments taken from the action")
        hit = by_cause.get(ev.get("id"))
        if hit is None and call_id:
            hit = by_call.get(call_id)
            if hit is not None:
                b.warn(p, "observation found by tool call id (its cause does not name this action)")
        content = None
        error = None
        artifact = None
        obs_at = at
        duration = None
        if hit is None:
            if name != "finish":
                b.warn(p, f"action {ev.get('id')} ({name}) has no observation")
        else:
            j, obs = hit
            used.add(j)
            content = obs.get("content")
            extras = as_object(obs.get("extras"))
            meta = as_object(extras.get("metadata"))
            code = meta.get("exit_code", extras.get("exit_code"))
            if isinstance(code, int) and not isinstance(code, bool):
                artifact = {"exit_code": code}
                if code == -1:
                    suffix = str(meta.get("suffix") or "").strip()
                    error = ErrorInfo(
                        type="hung",
                        message="the command did not return (exit code -1)" + (f": {suffix}" if suffix else ""),
                    )
                elif code != 0:
                    error = ErrorInfo(type="nonzero_exit", message=f"exit code {code}")
            if obs.get("observation") == "error":
                error = ErrorInfo(type="error", message=str(content or obs.get("message") or ""))
            obs_at = b.time(obs.get("timestamp")) or at
            t0, t1 = _parse(at), _parse(obs_at)
            if t0 is not None and t1 is not None and t1 >= t0:
                duration = (t1 - t0).total_seconds()
            transcript.append(
                b.message(
                    "tool",
                    content if isinstance(content, (str, list)) or content is None else json_text(content),
                    tool_call_id=call_id or None,
                    name=name,
                    place=f"[{j}]",
                )
            )
        b.tool(
            tool=name,
            arguments=arguments,
            tool_call_id=call_id or None,
            content=content,
            error=error,
            artifact=artifact,
            at=at,
            duration=duration,
            place=p,
        )


def _parse(ts: str | None) -> Any:
    if ts is None:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
