"""Action parsers: how agents that act in text turn a model's reply into tool calls.

Some agents do not use a provider's tool calling: the model writes its action in its
reply and the agent parses it (SWE-agent 0.x: a thought, then one command in a fenced
block). Their importers parse the recorded actions and mark every tool record so made
with the parser's name (``meta.action_parser``), and the recording's metadata says how
to run the parser again (``metadata.action_parser``: ``{"name": ..., <its settings>}``).
The replay engine's generic chat loop uses the same parser on a *new* model reply, so a
branch of such a run goes on (docs/replay.md, "Continuing an imported run"):

* :meth:`ActionParser.parse` — the reply's text → the tool calls it asks for, or
  :class:`ActionFormatError` when the agent could not have read it;
* :meth:`ActionParser.observation` — a tool's answer (:func:`observed_text`) → the message the agent would have
  sent the model next (text agents send observations as ``user`` messages);
* :meth:`ActionParser.format_error` — the agent's own turn after a reply it cannot read
  (SWE-agent re-asks the model, up to :attr:`ActionParser.max_requeries` times, without
  keeping the unreadable reply in its history);
* :meth:`ActionParser.ends_run` — an action after which the agent stops (SWE-agent's
  ``submit``).

:func:`parser_for` builds the parser a recording names; :data:`PARSERS` lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..record.recording import ChatMessage, ToolResult

__all__ = [
    "ActionFormatError",
    "ActionParser",
    "PARSERS",
    "ParsedAction",
    "SweAgentThoughtAction",
    "observed_text",
    "parser_for",
]


class ActionFormatError(ValueError):
    """A reply the agent's parser cannot read; the message says why (``no fenced command
    block``)."""


@dataclass(frozen=True)
class ParsedAction:
    """One tool call parsed from a reply: ``tool`` name and JSON ``arguments``."""

    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ActionParser:
    """The interface every action parser implements (see the module docstring)."""

    name: str = ""
    #: how many unreadable replies in a row the agent re-asks for before it gives up
    max_requeries: int = 3

    def parse(self, text: str) -> list[ParsedAction]:  # pragma: no cover - abstract
        raise NotImplementedError

    def observation(self, result: ToolResult, transcript: Sequence[ChatMessage]) -> ChatMessage:  # pragma: no cover
        raise NotImplementedError

    def format_error(self, reason: str) -> ChatMessage:  # pragma: no cover - abstract
        raise NotImplementedError

    def ends_run(self, tool: str) -> bool:
        return False

    def settings(self) -> dict[str, Any]:
        """What :func:`parser_for` needs to build this parser again (``metadata.action_parser``)."""
        return {"name": self.name}


def observed_text(result: ToolResult) -> str:
    """What a text agent saw of a tool's answer: the output when there is text (a refusal
    such as SWE-agent's rejected edit is an error whose text *is* the output), else the
    error as ``ERROR <type>: <message>``, else the content as JSON
    (:meth:`~core.record.recording.ToolResult.message_text`)."""
    if isinstance(result.content, str):
        return result.content
    return result.message_text()


# SWE-agent 0.x ThoughtActionParser: the action is the last top-level fenced block; an
# opening fence may name a language (```bash), a closing one names none.
_FENCE = re.compile(r"^```(\S*)\s*\n|^```\s*$", re.M)
#: SWE-agent's state lines after each observation (its next_step_template)
_STATE = re.compile(r"\n?(\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n[^\n]*\$)\s*$")
_NO_OUTPUT = "Your command ran successfully and did not produce any output."
#: characters at the end of a message searched for the state lines
STATE_TAIL = 4096


@dataclass(frozen=True)
class SweAgentThoughtAction(ActionParser):
    """SWE-agent 0.x's thought/action format (``parse_function: ThoughtActionParser``).

    * parse: the command is the text inside the last fenced block not nested in another
      (SWE-agent's rule); tool = its first word when that is one of the interface
      ``commands`` (listed in the system prompt: ``open``, ``edit``, ``submit``…), else
      ``bash``; arguments ``{"command": <the block, without its leading/trailing newlines>}``
      — the same tool records the importer makes from the trajectory's ``action``.
    * observation: SWE-agent's next-step message — the output (or its no-output
      sentence), then the state lines (open file, working directory, prompt) carried
      from the last observation in the transcript: the environment's state command does
      not run in a replay, so a state the branch changed is not shown.
    * format error: a ``user`` message naming the problem and the expected format; the
      unreadable reply is not kept (SWE-agent's requery).
    * ``submit`` ends the run.
    """

    name: str = "swe_agent.thought_action"
    commands: tuple[str, ...] = ()

    def parse(self, text: str) -> list[ParsedAction]:
        if not isinstance(text, str) or not text.strip():
            raise ActionFormatError("the reply is empty")
        stack: list[re.Match[str]] = []
        last: tuple[re.Match[str], re.Match[str]] | None = None
        for m in _FENCE.finditer(text):
            if stack and not m.group(1):
                start = stack.pop()
                if not stack:
                    last = (start, m)
            elif m.group(1) is not None:
                stack.append(m)
        if last is None:
            raise ActionFormatError("no fenced command block (```…```) in the reply")
        command = text[last[0].end() : last[1].start()].strip("\n")
        if not command.strip():
            raise ActionFormatError("the fenced command block is empty")
        first = command.split(None, 1)[0]
        tool = first if first in self.commands else "bash"
        return [ParsedAction(tool, {"command": command})]

    def observation(self, result: ToolResult, transcript: Sequence[ChatMessage]) -> ChatMessage:
        result_text = observed_text(result)
        state = ""
        for m in reversed(transcript):
            if m.role == "user":
                # the state lines end the message: only its last lines are searched (a
                # hostile output full of "(Open file: " costs nothing)
                found = _STATE.search("\n".join(m.text[-STATE_TAIL:].rsplit("\n", 3)[-3:]))
                if found:
                    state = found.group(1)
                    break
        body = result_text if result_text.strip() else _NO_OUTPUT
        if state:
            body = body + "\n" + state
        return ChatMessage(role="user", content=body)

    def format_error(self, reason: str) -> ChatMessage:
        return ChatMessage(
            role="user",
            content=(
                f"Your output was not formatted correctly ({reason}). Always include one discussion and "
                "exactly one command, the command in a fenced block:\n"
                "DISCUSSION\nWhat you plan to do in this step.\n\n```\nthe command to run\n```"
            ),
        )

    def ends_run(self, tool: str) -> bool:
        return tool == "submit"

    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "commands": list(self.commands)}


def _swe_agent(settings: dict[str, Any]) -> ActionParser:
    cmds = settings.get("commands", [])
    if not isinstance(cmds, list) or not all(isinstance(c, str) and c for c in cmds):
        raise ValueError("metadata.action_parser.commands is not a list of command names")
    return SweAgentThoughtAction(commands=tuple(cmds))


#: parser name → builder from ``metadata.action_parser``
PARSERS: dict[str, Callable[[dict[str, Any]], ActionParser]] = {"swe_agent.thought_action": _swe_agent}


def parser_for(metadata: dict[str, Any]) -> ActionParser | None:
    """The action parser a recording's ``metadata.action_parser`` names, or ``None`` (the
    recording's agent uses structured tool calls, or names no parser).

    Raises:
        ValueError: the metadata names a parser this version does not have (the message
            lists those it has), or is malformed (not an object with a ``name``; SWE-agent's
            ``commands`` not a list of names).
    """
    spec = metadata.get("action_parser")
    if spec is None:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ValueError('metadata.action_parser is not {"name": PARSER, …}: the replies cannot be parsed')
    name = spec["name"]
    build = PARSERS.get(name)
    if build is None:
        shown = name if len(name) <= 60 else name[:59] + "…"
        raise ValueError(f"unknown action parser {shown!r} (known: {', '.join(sorted(PARSERS))})")
    return build(spec)
