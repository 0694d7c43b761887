"""Who&When failure-attribution cases (``mingyin1/Agents_Failure_Attribution``).

A case is ``{history, question, ground_truth, mistake_agent, mistake_step,
mistake_reason, ...}``; ``history`` is a multi-agent log of ``{content, role[,
name]}`` steps (Magentic-One or AutoGen/CaptainAgent) with no timestamps and no
structured calls.

One history step → exactly one record, so **record seq = history step index** and the
annotated ``mistake_step`` points straight at a record. Who a step is comes from its
``role`` and ``name`` as the dataset spells them (:func:`speaker`; agent names are
compared without case, spaces and underscores, so ``ComputerTerminal`` and
``Computer_terminal`` are one agent):

* ``human`` (or a ``user`` step with no agent name) → interrupt record ``{"type":
  "human", ...}``;
* a tool-like agent — Magentic-One's ``WebSurfer`` (browser), ``FileSurfer`` (file
  viewer) and ``ComputerTerminal`` (code execution), AutoGen/CaptainAgent's
  ``Computer_terminal`` — → tool record: tool = the agent as written, arguments =
  ``{"instruction": <the latest message addressed to it (``Orchestrator (-> NAME)``), else
  the step before it (the code it ran)>}``, result = the step's text. A terminal's exit
  code — ``exitcode: N`` (AutoGen) or ``POSIX exit code: N`` / ``The POSIX exit code was:
  N`` (Magentic-One) — other than 0 → error ``nonzero_exit``;
* every other step → model record: the orchestrator's ``Orchestrator (thought)``,
  ``Orchestrator (-> NAME)`` (an instruction to NAME) and ``Orchestrator (termination
  condition)``, Magentic-One's coder ``Assistant``, CaptainAgent's experts (any ``name``,
  e.g. ``YouTubeDownload_Expert``, whatever the ``role``): model = ``agent/<name>`` (the
  case does not say which LLM), request = every earlier step as a message (``human`` →
  ``user``, other roles kept when they are chat roles, else ``assistant``; ``name`` = the
  agent), response = the step as an ``assistant`` message (the agent wrote it, whatever
  role the log gives it).

The annotation is kept as ground truth in ``metadata.annotation``: ``mistake_agent``,
``mistake_step`` (an int; the source sometimes writes it as a string such as ``"0"`` —
the original is kept in ``mistake_step_raw``), ``mistake_reason``, ``mistake_seq``
(the record it designates; left out, with a warning, when the step is outside the
history).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.recording import STANDARD_ROLES, ChatMessage, ErrorInfo
from ._build import JsonImporter, RunBuilder, id_text
from ._source import SourceFile, Truncation, read_tail
from .base import ImportedRun, Importer

#: tool-like agents (their steps are tool executions), as :func:`agent_key` spells them
TOOL_AGENTS = {"websurfer": "WebSurfer", "filesurfer": "FileSurfer", "computerterminal": "ComputerTerminal"}
#: a terminal's exit code: AutoGen's "exitcode: 1 (execution failed)", Magentic-One's
#: "… exited with an error (POSIX exit code: 1)" / "… The POSIX exit code was: 0."
_EXIT = re.compile(r"^exitcode:\s*(-?\d+)|^The script ran[^\n]*?POSIX exit code(?: was)?:\s*(-?\d+)")
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]+")
_KEY_DROP = re.compile(r"[^a-z0-9]+")


def agent_key(name: str) -> str:
    """An agent name compared without case, spaces and punctuation: ``Computer_terminal``,
    ``ComputerTerminal`` and ``computer terminal`` are ``computerterminal``."""
    return _KEY_DROP.sub("", name.lower())


def speaker(role: str, name: str | None) -> tuple[str, str, str | None]:
    """Who a history step is: ``(kind, agent, addressee)``.

    ``kind`` is ``human`` (role ``human``, or ``user`` with no agent name), ``tool`` (a
    tool-like agent, :data:`TOOL_AGENTS`) or ``model`` (everyone else); ``agent`` the
    agent's name (the step's ``name``, else the role before any ``(…)`` — ``Orchestrator
    (thought)`` → ``Orchestrator``); ``addressee`` the agent an ``Orchestrator (-> NAME)``
    step instructs, else ``None``."""
    base = role.split(" (", 1)[0].strip()
    if agent_key(base) == "human" or (agent_key(base) == "user" and not name):
        return "human", base, None
    agent = name or base or "unknown"
    target = _addressee(role)
    kind = "tool" if agent_key(agent) in TOOL_AGENTS else "model"
    return kind, agent, target


def exit_code(text: str) -> int | None:
    """The exit code a terminal step reports at its start (:data:`_EXIT`), or ``None``."""
    m = _EXIT.match(text.lstrip()[:2000])
    if m is None:
        return None
    return int(m.group(1) if m.group(1) is not None else m.group(2))


class WhoAndWhenImporter(JsonImporter, Importer):
    """Who&When cases (hand-crafted and algorithm-generated)."""

    name = "who_and_when"
    description = "Who&When failure-attribution case (multi-agent history + annotated mistake)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON object with ``history`` and ``mistake_agent``/``mistake_step``
        (looked for at both ends of the file)."""
        if not head.lstrip().startswith(b"{"):
            return "not a JSON object"
        tail = read_tail(path)
        both = head + tail
        if b'"history"' in both and (b'"mistake_agent"' in both or b'"mistake_step"' in both):
            return None
        return "no history with mistake_agent/mistake_step"

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            raise FormatError("not a Who&When case: no 'history' array", file=src.name, path="/history")
        return [self._run(src, doc, False)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        doc = partial.value
        if isinstance(doc, dict) and isinstance(doc.get("history"), list):
            return [self._run(src, doc, True)]
        return []

    def _run(self, src: SourceFile, doc: dict[str, Any], incomplete: bool) -> ImportedRun:
        run_id = id_text(doc.get("question_ID") or name_text(src.path.name).rsplit(".", 1)[0])
        b = RunBuilder(self.name, src, run_id)
        b.warn(
            "history",
            "no timestamps and no structured calls: agent steps become model records "
            "(model = agent/<name>), tool-like agents become tool records",
        )
        transcript: list[ChatMessage] = []
        last_instruction: dict[str, str] = {}
        prev_text = ""
        for i, h in enumerate(doc["history"]):
            p = f"history[{i}]"
            if not isinstance(h, dict):
                b.warn(p, "step is not an object; kept as an interrupt record")
                b.interrupt({"type": "unparsed", "value": h}, place=p)
                transcript.append(b.message("user", str(h), place=p))
                continue
            role = str(h.get("role") or "")
            name = h.get("name") if isinstance(h.get("name"), str) and h.get("name") else None
            kind, agent, target = speaker(role, name)
            text = h.get("content")
            text = text if isinstance(text, str) else ("" if text is None else str(text))
            if target:
                last_instruction[agent_key(target)] = text
            msg_role = "user" if kind == "human" else (role if role in STANDARD_ROLES else "assistant")
            msg = b.message(msg_role, text, name=_NAME_OK.sub("_", agent)[:64] or None, place=p)
            if kind == "human":
                b.interrupt({"type": "human", "role": role, "content": text}, place=p)
            elif kind == "tool":
                instr = last_instruction.pop(agent_key(agent), prev_text)
                code = exit_code(text) if agent_key(agent) == "computerterminal" else None
                error = None
                if code is not None and code != 0:
                    first = text.splitlines()[0]
                    error = ErrorInfo(type="nonzero_exit", message=first)
                b.tool(
                    tool=agent, arguments={"instruction": instr}, tool_call_id=None, content=text, error=error, place=p
                )
            else:
                response = msg if msg.role == "assistant" else msg.model_copy(update={"role": "assistant"})
                b.model(model=f"agent/{agent}", messages=list(transcript), response=response, place=p)
            transcript.append(msg)
            prev_text = text
        meta = self._metadata(b, doc)
        return b.build(meta, incomplete=incomplete)

    def _metadata(self, b: RunBuilder, doc: dict[str, Any]) -> dict[str, Any]:
        raw_step = doc.get("mistake_step")
        step: int | None = None
        if isinstance(raw_step, int) and not isinstance(raw_step, bool):
            step = raw_step
        elif isinstance(raw_step, str) and raw_step.strip().lstrip("-").isdigit():
            step = int(raw_step.strip())
            b.warn("mistake_step", f"mistake_step is the string {raw_step!r}; read as the integer {step}")
        elif raw_step is not None:
            b.warn("mistake_step", f"mistake_step {raw_step!r} is not a step number; kept as written")
        n = len(doc["history"])
        annotation: dict[str, Any] = {
            "kind": "failure_attribution",
            "source": "Who&When ground truth",
            "mistake_agent": doc.get("mistake_agent"),
            "mistake_step": step,
            "mistake_step_raw": raw_step,
            "mistake_reason": doc.get("mistake_reason"),
        }
        if step is not None and 0 <= step < n:
            annotation["mistake_seq"] = step
        elif step is not None:
            b.warn("mistake_step", f"mistake_step {step} is outside the history (0..{n - 1})")
        meta: dict[str, Any] = {
            "benchmark": "Who&When",
            "question": doc.get("question"),
            "question_id": doc.get("question_ID"),
            "ground_truth": doc.get("ground_truth"),
            "level": doc.get("level"),
            "annotation": {k: v for k, v in annotation.items() if v is not None},
            "agents": sorted(
                {
                    speaker(str(h.get("role") or ""), h.get("name") if isinstance(h.get("name"), str) else None)[1]
                    for h in doc["history"]
                    if isinstance(h, dict)
                }
            ),
        }
        for k in ("is_correct", "is_corrected"):
            if k in doc:
                meta[k] = doc[k]
        if doc.get("is_correct") is False:
            meta["outcome"] = "failure"
        elif "ground_truth" in doc and "is_correct" not in doc:
            meta["outcome"] = "failure"  # every Who&When case is a failed run
        if isinstance(doc.get("system_prompt"), dict):
            meta["system_prompts"] = doc["system_prompt"]
        return {k: v for k, v in meta.items() if v is not None}


def _addressee(role: str) -> str | None:
    m = re.search(r"\(->\s*([^)]+)\)", role)
    return m.group(1).strip() if m else None
