"""SWE-agent trajectories (``.traj``, ``SWE-agent/SWE-agent``), both variants.

* **thought/action/observation** (SWE-agent 0.x): the model's reply is text; the
  action is parsed from it. Each non-demo ``assistant`` message of ``history`` → a
  model record whose request is every ``history`` message before it; the matching
  ``trajectory`` step's ``action`` → a tool record: tool = the first word when it is
  one of the interface commands listed in the system prompt (``open``, ``edit``,
  ``submit``, ...), else ``bash``; arguments = ``{"command": <action text>}``;
  result = the step's ``observation``; ``meta.action_parser`` names the parser
  (``swe_agent.thought_action``, :mod:`core.importers.actions`) and
  ``metadata.action_parser`` holds its settings (the interface commands), so a branch
  can parse a new reply the same way.
* **function calling** (SWE-agent 1.x, ``sweagent/types.py``): assistant history
  items carry OpenAI-style ``tool_calls``; ``tool`` items answer them through
  ``tool_call_ids``. A step's ``query`` (the exact messages sent) is the request when
  present; ``execution_time`` is the tool duration.

Observations SWE-agent writes when it refuses or aborts an action are tool errors
(so "jump to first error" lands on them): ``edit_rejected`` ("Your proposed edit has
introduced new syntax error(s)"), ``syntax_error`` (bash syntax check), ``timeout``,
``blocked``. ``info`` (exit status, submission, model stats) → metadata, and the model
stats' run totals (tokens sent/received, total cost) also → ``metadata.usage_totals``
(SWE-agent records no per-call usage; :mod:`core.analysis.metrics` reports these totals); the file
name's stem is the instance id (SWE-agent names files ``<instance_id>.traj``).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.recording import ChatMessage, ErrorInfo
from ._build import JsonImporter, PendingCall, RunBuilder, openai_message
from ._source import SourceFile, Truncation, as_array, as_object
from .actions import ActionFormatError, ParsedAction, SweAgentThoughtAction
from .base import ImportedRun, Importer

_COMMANDS = re.compile(r"^(\w+):\n\s+docstring:", re.M)
_REFUSALS = [
    (re.compile(r"^Your proposed edit has introduced new syntax error\(s\)"), "edit_rejected"),
    (re.compile(r"^Your bash command contained syntax errors and was NOT executed"), "syntax_error"),
    (re.compile(r"was cancelled because it took more than \d+ seconds|^EXECUTION TIMED OUT"), "timeout"),
    (re.compile(r"^Operation '.*' is not supported by this environment"), "blocked"),
]
_ERR_LINE = re.compile(r"^- (E\d+ .*)$", re.M)

#: SWE-agent's final output: the patch its ``submit`` command returns (0.x text action or
#: 1.x function call alike); a run that never submitted has none (core.analysis.final_output)
FINAL_OUTPUT_RULE: dict[str, Any] = {
    "format": "swe_agent",
    "describe": "the result of the last `submit` call: the patch SWE-agent submits",
    "takes": [{"tool": "submit", "take": "result"}],
}


def refusal(observation: Any) -> ErrorInfo | None:
    """The tool error an observation stands for, or ``None`` (see module docstring)."""
    if not isinstance(observation, str):
        return None
    text = observation.lstrip()
    for pat, typ in _REFUSALS:
        if pat.search(text):
            first = text.splitlines()[0] if text else ""
            details = _ERR_LINE.findall(text)
            msg = first + ("" if not details else " " + "; ".join(details))
            return ErrorInfo(type=typ, message=msg)
    return None


def usage_totals_from_model_stats(stats: Any) -> dict[str, Any] | None:
    """SWE-agent's ``info.model_stats`` (``tokens_sent``, ``tokens_received``,
    ``total_cost`` in USD) as the run totals ``metadata.usage_totals`` that
    :func:`core.analysis.metrics.run_metrics_row` uses when no model call recorded its usage:
    ``{"input_tokens", "output_tokens", "cost", "source": "swe_agent model_stats"}``
    (a key is left out when the trajectory lacks it or it is not a number; ``None`` when
    none is there). SWE-agent records the totals per run, not per call."""
    if not isinstance(stats, dict):
        return None

    def num(k: str, kind: type) -> Any:
        v = stats.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        return kind(v)

    out: dict[str, Any] = {}
    for src, dst, kind in (
        ("tokens_sent", "input_tokens", int),
        ("tokens_received", "output_tokens", int),
        ("total_cost", "cost", float),
    ):
        v = num(src, kind)
        if v is not None:
            out[dst] = v
    if not out:
        return None
    out["source"] = "swe_agent model_stats"
    return out


class SweAgentImporter(JsonImporter, Importer):
    """SWE-agent ``.traj`` files (text-parsed actions or function calling)."""

    name = "swe_agent"
    description = "SWE-agent trajectory (.traj)"
    final_output_rule = FINAL_OUTPUT_RULE

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON object with a ``"trajectory"`` array of action/observation steps."""
        h = head.lstrip()
        if not h.startswith(b"{"):
            return "not a JSON object"
        if b'"trajectory_format"' in head:
            return "a mini-swe-agent trajectory (has trajectory_format)"
        if re.search(rb'"trajectory"\s*:\s*\[', head) and (
            (b'"action"' in head and b'"observation"' in head) or re.search(rb'"trajectory"\s*:\s*\[\s*\]', head)
        ):
            return None
        return 'no "trajectory" array of action/observation steps near the start'

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
            raise FormatError("not a SWE-agent trajectory: no 'trajectory' array", file=src.name, path="/trajectory")
        return [self._run(src, doc, incomplete=False)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        doc = partial.value
        if not isinstance(doc, dict) or not isinstance(doc.get("trajectory"), list):
            return []
        doc.setdefault("history", [])
        return [self._run(src, doc, incomplete=True)]

    def _run(self, src: SourceFile, doc: dict[str, Any], incomplete: bool) -> ImportedRun:
        run_id = name_text(src.path.name).split(".")[0] or "run"
        b = RunBuilder(self.name, src, run_id)
        history = as_array(doc.get("history"))
        steps = [s for s in doc["trajectory"] if isinstance(s, dict)]
        info = as_object(doc.get("info"))
        model = _model_name(doc)
        if model == "unknown":
            b.warn(
                "replay_config.agent.model.name",
                "absent: the model's identity is not recorded in the trajectory; model records say 'unknown'",
            )
        commands = set()
        for m in history:
            if isinstance(m, dict) and m.get("role") == "system" and isinstance(m.get("content"), str):
                commands.update(_COMMANDS.findall(m["content"]))
        conv_cache: dict[int, ChatMessage] = {}

        def conv(j: int, m: Any) -> ChatMessage:
            if j not in conv_cache:
                conv_cache[j] = self._message(b, m, f"history[{j}]")
            return conv_cache[j]

        assistants = [
            j
            for j, m in enumerate(history)
            if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
        ]
        if history and len(assistants) != len(steps):
            b.warn(
                "history",
                f"{len(assistants)} model replies in history but {len(steps)} trajectory steps; paired in order",
            )
        if not history:
            b.warn("history", "no history: model requests are not known; tool calls imported from the steps only")
        text_parsed = False
        for k in range(max(len(assistants), len(steps))):
            step = steps[k] if k < len(steps) else {}
            sp = f"trajectory[{k}]"
            if k < len(assistants):
                j = assistants[k]
                query = step.get("query")
                if isinstance(query, list) and query and all(isinstance(q, dict) for q in query):
                    request = [self._message(b, q, f"{sp}.query[{n}]") for n, q in enumerate(query)]
                else:
                    request = [conv(n, history[n]) for n in range(j)]
                response = conv(j, history[j])
                b.model(model=model, messages=request, response=response, place=f"history[{j}]")
                calls = response.tool_calls or []
            else:
                j = None
                calls = []
            if calls:
                self._function_calls(b, history, j, calls, step, sp)
            elif step.get("action") or (j is not None and history[j].get("action")):
                text_parsed = True
                action = step.get("action")
                if not isinstance(action, str):
                    if j is None:  # a step after the last model reply, its action not text
                        raise TypeError(f"{sp}.action is a {type(action).__name__}, not a string")
                    action = history[j].get("action")
                self._text_action(b, str(action), step, commands, sp)
        if text_parsed:
            b.warn(
                "trajectory",
                "actions are parsed from the model's text (no structured tool calls); "
                "tool records carry no tool_call_id",
            )
        meta: dict[str, Any] = {"instance_id": run_id, "agent": "swe-agent"}
        for key in ("exit_status", "submission", "model_stats", "swe_agent_version", "edited_files30"):
            if info.get(key) is not None:
                meta[key] = info[key]
        if doc.get("environment") is not None:
            meta["environment"] = doc["environment"]
        totals = usage_totals_from_model_stats(info.get("model_stats"))
        if totals is not None:
            meta["usage_totals"] = totals
        meta["final_output_rule"] = copy.deepcopy(FINAL_OUTPUT_RULE)
        if text_parsed:
            parser = SweAgentThoughtAction(commands=tuple(sorted(commands)))
            mismatch = _parser_mismatch(b, parser)
            if mismatch is None:
                meta["action_parser"] = parser.settings()
            else:  # another parse_function: a replay must not read new replies by this rule
                b.warn(
                    "trajectory",
                    f"the actions are not SWE-agent's thought/action format ({mismatch}); a branch "
                    "of this run cannot parse new replies",
                )
                for r in b.records:
                    if r.kind == "tool" and r.meta and r.meta.get("action_parser") == parser.name:
                        r.meta = None
        return b.build(meta, incomplete=incomplete)

    def _message(self, b: RunBuilder, m: Any, place: str) -> ChatMessage:
        if isinstance(m, dict) and m.get("role") == "tool" and not m.get("tool_call_id"):
            ids = m.get("tool_call_ids")
            if isinstance(ids, list) and ids:
                m = {**m, "tool_call_id": ids[0]}
        return openai_message(b, m, place)

    def _text_action(self, b: RunBuilder, action: str, step: dict[str, Any], commands: set[str], place: str) -> None:
        text = action.strip("\n")
        first = text.split(None, 1)[0] if text.strip() else ""
        tool = first if first in commands else "bash"
        obs = step.get("observation")
        rec = b.tool(
            tool=tool,
            arguments={"command": text},
            tool_call_id=None,
            content=obs,
            error=refusal(obs),
            duration=step.get("execution_time"),
            place=place,
        )
        rec.meta = {"action_parser": SweAgentThoughtAction.name}

    def _function_calls(
        self, b: RunBuilder, history: list[Any], j: int | None, calls: list[Any], step: dict[str, Any], place: str
    ) -> None:
        for tc in calls:
            b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), place))
        n = (j or 0) + 1
        while n < len(history) and isinstance(history[n], dict) and history[n].get("role") != "assistant":
            m = history[n]
            if m.get("role") == "tool" and b.pairer.pending:
                ids = m.get("tool_call_ids") or ([m["tool_call_id"]] if m.get("tool_call_id") else [])
                call = b.pairer.take(ids[0] if ids else None, None, f"history[{n}]")
                if call is not None:
                    content = m.get("content")
                    b.tool(
                        tool=call.name,
                        arguments=call.arguments,
                        tool_call_id=call.id,
                        content=content,
                        error=refusal(_text(content)),
                        duration=step.get("execution_time"),
                        place=f"history[{n}]",
                    )
            n += 1
        pending = b.pairer.drain()
        if len(pending) == 1 and step.get("observation") is not None:
            c = pending[0]
            obs = step.get("observation")
            b.tool(
                tool=c.name,
                arguments=c.arguments,
                tool_call_id=c.id,
                content=obs,
                error=refusal(obs),
                duration=step.get("execution_time"),
                place=place,
            )
        else:
            for c in pending:
                b.pairer.add(c)
            b.unanswered(place)


def _parser_mismatch(b: RunBuilder, parser: SweAgentThoughtAction) -> str | None:
    """Why ``parser`` does not read the run's recorded replies into the recorded text
    actions (the first reply it misreads), or ``None`` when it reads every one."""
    records = b.records
    for i, r in enumerate(records):
        if r.kind != "model" or i + 1 >= len(records):
            continue
        nxt = records[i + 1]
        if nxt.kind != "tool" or not (nxt.meta or {}).get("action_parser"):
            continue
        text = r.response.message.text if r.response is not None else ""
        try:
            parsed = parser.parse(text)
        except ActionFormatError as exc:
            return f"the reply at seq {r.seq}: {exc}"
        if parsed != [ParsedAction(nxt.tool, nxt.arguments)]:
            return f"the reply at seq {r.seq} reads as another action than the recorded one"
    return None


def _text(content: Any) -> Any:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


def _model_name(doc: dict[str, Any]) -> str:
    rc = doc.get("replay_config")
    if isinstance(rc, str):
        try:
            import orjson

            rc = orjson.loads(rc)
        except ValueError:
            rc = None
    if isinstance(rc, dict):
        agent = as_object(rc.get("agent"))
        model = as_object(agent.get("model"))
        name = model.get("name")
        if isinstance(name, str):
            return name
    return "unknown"
