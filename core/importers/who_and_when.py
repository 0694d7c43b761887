"""Who&When failure-attribution cases (``mingyin1/Agents_Failure_Attribution``).

A case is ``{history, question, ground_truth, mistake_agent, mistake_step,
mistake_reason, ...}``; ``history`` is a multi-agent log of ``{content, role[,
name]}`` steps (Magentic-One or AutoGen/CaptainAgent) with no timestamps and no
structured calls.

One history step → exactly one record, so **record seq = history step index** and the
annotated ``mistake_step`` points straight at a record:

* a human step (role ``human``) → interrupt record ``{"type": "human", ...}``;
* a tool-like agent step — ``WebSurfer`` (Magentic-One's browser) or
  ``Computer_terminal`` (code execution) — → tool record: tool = the agent,
  arguments = ``{"instruction": <the latest message addressed to it / before it>}``,
  result = the step's text; ``exitcode: N`` with N ≠ 0 → error ``nonzero_exit``;
* every other agent step (orchestrator thoughts and instructions, experts) → model
  record: model = ``agent/<name>`` (the case does not say which LLM), request = every
  earlier step as a message (``human`` → ``user``, other roles kept when they are chat
  roles, else ``assistant``; ``name`` = the agent), response = the step as an
  ``assistant`` message (the agent wrote it, whatever role the log gives it).

The annotation is kept as ground truth in ``metadata.annotation``: ``mistake_agent``,
``mistake_step`` (an int; the source sometimes writes it as a string such as ``"0"`` —
the original is kept in ``mistake_step_raw``), ``mistake_reason``, ``mistake_seq``
(the record it designates).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..record.recording import STANDARD_ROLES, ChatMessage, ErrorInfo
from ._build import JsonImporter, RunBuilder, id_text
from ._source import SourceFile, Truncation, read_tail
from .base import ImportedRun, Importer

TOOL_AGENTS = ("WebSurfer", "Computer_terminal")
_EXIT = re.compile(r"^exitcode:\s*(-?\d+)")
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]+")


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
        run_id = id_text(doc.get("question_ID") or src.path.name.rsplit(".", 1)[0])
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
            agent = str(h.get("name") or _agent_of(role) or "unknown")
            text = h.get("content")
            text = text if isinstance(text, str) else ("" if text is None else str(text))
            target = _addressee(role)
            if target:
                last_instruction[target] = text
            msg_role = "user" if role == "human" else (role if role in STANDARD_ROLES else "assistant")
            msg = b.message(msg_role, text, name=_NAME_OK.sub("_", agent)[:64] or None, place=p)
            if role == "human":
                b.interrupt({"type": "human", "role": role, "content": text}, place=p)
            elif agent in TOOL_AGENTS:
                instr = last_instruction.pop(agent, prev_text)
                m = _EXIT.match(text)
                error = None
                if m and int(m.group(1)) != 0:
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
                    str(h.get("name") or _agent_of(str(h.get("role") or "")) or "unknown")
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


def _agent_of(role: str) -> str:
    """``"Orchestrator (-> WebSurfer)"`` → ``"Orchestrator"``; ``"WebSurfer"`` → itself."""
    return role.split(" (", 1)[0].strip()


def _addressee(role: str) -> str | None:
    m = re.search(r"\(->\s*([^)]+)\)", role)
    return m.group(1).strip() if m else None
