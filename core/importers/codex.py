"""Codex CLI rollouts (``--from codex``): ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

Source: the rollout Codex CLI writes for each session (``codex-rs`` ``RolloutItem``,
``ResponseItem`` in ``codex-rs/protocol/src/models.rs``), read as written by cli 0.125.0.
A rollout is JSON Lines, one ``{timestamp, type, payload}`` object a line; ``type`` is
``session_meta`` (the session: ``id``, ``cwd``, ``cli_version``, ``originator``,
``base_instructions`` …), ``turn_context`` (per turn: ``model``, ``approval_policy``,
``sandbox_policy``, ``cwd`` …), ``response_item`` (an OpenAI Responses item: ``message``,
``reasoning``, ``function_call``, ``function_call_output``, ``custom_tool_call``,
``custom_tool_call_output``, ``web_search_call``, ``local_shell_call`` …), ``event_msg``
(what the CLI showed: ``token_count``, ``exec_command_end``, ``patch_apply_end``,
``user_message`` …) or ``compacted`` (the history replaced by a summary).

One rollout is one run (run id = the session id). The mapping (docs/importers.md, "Codex
CLI"):

* **one model call = the model's output items between two consecutive inputs to it**.
  Output items: ``assistant`` messages, ``reasoning``, ``function_call``,
  ``custom_tool_call``, ``web_search_call``, ``local_shell_call``. Inputs: ``user`` /
  ``developer`` / ``system`` messages and ``function_call_output`` /
  ``custom_tool_call_output``. The call's ``token_count`` also ends it (Codex writes it
  once the response is complete): output items after it with no input between are the
  next call (never the case in the real rollout). The model record's request = every
  item before the call (``base_instructions`` first, as the system message), its
  response = one assistant message holding the output items in order (text parts,
  reasoning as ``thinking`` parts whose ``signature`` is the ``encrypted_content`` as
  written, tool calls);
* model = the ``model`` of the ``turn_context`` before the call; usage =
  ``last_token_usage`` (``input_tokens``, ``output_tokens``; the rest in
  ``meta.token_usage``) of the ``token_count`` event that follows its output (Codex writes
  one per model call; a repeat with the same ``total_token_usage`` is ignored), and
  ``metadata.usage_totals`` = the last ``total_token_usage``;
* ``function_call`` / ``custom_tool_call`` → tool records paired with their outputs by
  ``call_id``; a custom tool's ``input`` (``apply_patch``'s patch text) is not JSON: kept
  raw (``raw_arguments``); ``web_search_call`` → a ``web_search`` tool record (arguments =
  its ``action``; id from the matching ``web_search_end`` event) with no result: the search
  ran on the provider's side and its results are not in the rollout;
* ``exec_command_end`` → the tool record of the call it names: a non-zero ``exit_code``
  is error ``exit_code_<N>``; ``meta.exec`` keeps exit code, status, duration, command,
  cwd. ``patch_apply_end`` with ``success: false`` → error ``patch_failed``; ``meta.patch``
  lists the files changed;
* ``user_message`` events → interrupt records ``{"type": "user_message", "message"}`` (the
  human's turns; the request history takes them from their ``message`` items);
  ``turn_aborted`` → ``{"type": "turn_aborted", "reason"}``; a ``turn_context`` that
  changes the model, approval or sandbox policy, cwd or reasoning settings → ``{"type":
  "turn_context", "changed": {...}}``; ``compacted`` → ``{"type": "compacted",
  "message"}`` (its ``replacement_history``, when present, is the history from then on);
* ``agent_message`` / ``agent_reasoning`` events repeat response items: not imported twice;
  ``task_started`` / ``task_complete`` → ``metadata.codex.turns``; every other type →
  skipped, one warning per type with its count.

A line that is not JSON is a warning naming its line number (the rest is imported); a file
with no readable line, or with no Codex rollout line, is a :class:`~core.errors.FormatError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import FormatError, name_text
from ..record.jsonvalues import is_tagged
from ..record.recording import ChatMessage, ErrorInfo, ModelRecord, ToolCall, ToolRecord, Usage
from ._build import PendingCall, RunBuilder, parse_arguments, seconds_between, to_rfc3339
from ._jsonl import Line, read_jsonl
from ._llm_api import _thinking_part, simplify_parts, text_part
from ._source import SourceFile, as_object, read_source
from .base import ImportedRun, Importer

#: the top-level ``type`` of a rollout line (``RolloutItem``)
LINE_TYPES = ("session_meta", "turn_context", "response_item", "event_msg", "compacted")
#: response items the model writes (its output); every other known item is an input
OUTPUT_ITEMS = ("reasoning", "function_call", "custom_tool_call", "web_search_call", "local_shell_call")
#: response items that are inputs to the model besides non-assistant messages
INPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
#: event_msg types mapped elsewhere or repeating a response item (not warned)
_EVENTS_USED = (
    "token_count",
    "exec_command_end",
    "patch_apply_end",
    "web_search_end",
    "user_message",
    "turn_aborted",
    "task_started",
    "task_complete",
    "agent_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
)
#: turn_context fields whose change is an interrupt record
_POLICY_FIELDS = ("model", "approval_policy", "sandbox_policy", "cwd", "effort", "summary")
_HEAD = re.compile(
    rb'^\s*\{\s*"timestamp"\s*:\s*"[^"\n]*"\s*,\s*"type"\s*:\s*"(?:'
    + b"|".join(t.encode() for t in LINE_TYPES)
    + rb')"\s*,\s*"payload"\s*:\s*\{'
)


def _rollout_line(value: Any) -> bool:
    """Whether ``value`` is a rollout line: an object with a Codex ``type`` and an object
    ``payload``."""
    return isinstance(value, dict) and value.get("type") in LINE_TYPES and isinstance(value.get("payload"), dict)


def _text_parts(content: Any) -> list[Any]:
    """Responses message content (a string, or ``input_text`` / ``output_text`` parts and
    others) as our content parts: texts as ``{"type": "text", "text"}``, other objects
    kept, anything else (a string or number in the list, a non-list value) as one
    ``{"type": "json", "json": value}`` part. A list rather than
    :func:`._llm_api._responses_text_parts`' simplified content, since a model call's
    response joins the parts of several output items."""
    if content is None:
        return []
    if isinstance(content, str) or is_tagged(content):
        return [text_part(content)]
    if not isinstance(content, list):
        return [{"type": "json", "json": content}]
    out: list[Any] = []
    for p in content:
        if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text") and "text" in p:
            out.append(text_part(p["text"]))
        elif isinstance(p, dict):
            out.append(p)
        else:
            out.append({"type": "json", "json": p})
    return out


def _texts(value: Any) -> list[str]:
    """The ``text`` of each object of a reasoning item's ``summary`` / ``content`` list
    (anything else: none)."""
    if not isinstance(value, list):
        return []
    return [s["text"] for s in value if isinstance(s, dict) and isinstance(s.get("text"), str)]


def _count(v: Any) -> int | None:
    """A token count: a non-negative integer (not a bool), else ``None``."""
    return v if type(v) is int and v >= 0 else None


@dataclass
class _Spec:
    """One tool call of an open model call: what kind of item asked for it and where."""

    kind: str
    place: str
    at: str | None


@dataclass
class _OpenCall:
    """A model call being read: its output parts and tool calls so far."""

    place: str
    at: str | None
    start: str | None
    end: str | None = None
    parts: list[Any] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    specs: list[_Spec] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    token_usage: dict[str, Any] | None = None


class CodexImporter(Importer):
    """Codex CLI rollout files (one session = one run); see the module docstring."""

    name = "codex"
    description = "Codex CLI rollout (JSON Lines of {timestamp, type, payload}: session_meta, response_item, …)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept JSON Lines whose first line is ``{timestamp, type, payload}`` with a Codex
        line type (``session_meta`` first in a real rollout). Claude Code sessions (lines of
        ``type`` user/assistant/summary with ``uuid``/``sessionId``, no ``payload``) are
        refused."""
        body = head.lstrip()
        if not body.startswith(b"{"):
            return "not JSON Lines of objects"
        first = body.split(b"\n", 1)[0]
        try:
            value = orjson.loads(first)
        except orjson.JSONDecodeError:
            # a first line longer than the head (session_meta holds the base instructions)
            if _HEAD.match(first):
                return None
            return "first line is not a Codex rollout line ({timestamp, type, payload} JSON)"
        if _rollout_line(value):
            return None
        kind = value.get("type") if isinstance(value, dict) else None
        return (
            f"first line is not a Codex rollout line (type {kind!r}; expected one of "
            f"{', '.join(LINE_TYPES)} with an object payload)"
        )

    def load(self, path: Path) -> list[ImportedRun]:
        """Import the rollout as one run.

        Raises:
            core.errors.FormatError: no readable line, or no line is a Codex rollout line
                (names the file and, for the first damaged line, its number and reason).
        """
        src = read_source(path)
        good, bad = read_jsonl(src)
        if not good:
            if not bad:
                raise FormatError("not a Codex rollout: the file has no JSON lines", file=src.name)
            raise FormatError(
                f"not a Codex rollout: no line could be read (line {bad[0].number}: {bad[0].reason})", file=src.name
            )
        if not any(_rollout_line(ln.value) for ln in good):
            first = good[0]
            kind = first.value.get("type") if isinstance(first.value, dict) else type(first.value).__name__
            raise FormatError(
                f"not a Codex rollout: no line is {{timestamp, type, payload}} with a Codex type "
                f"(line {first.number} has type {kind!r})",
                file=src.name,
            )
        conv = _Conversion(self.name, src, good)
        for b in bad:
            conv.b.warn(f"line {b.number}", b.message)
        return [conv.run()]


class _Conversion:
    """One rollout → one run (see the module docstring)."""

    def __init__(self, fmt: str, src: SourceFile, lines: list[Line]) -> None:
        self.src = src
        self.lines = list(lines)
        self.number = 0  # the line being read
        meta_line = next(
            (ln for ln in lines if _rollout_line(ln.value) and ln.value["type"] == "session_meta"),
            None,
        )
        self.session: dict[str, Any] = dict(meta_line.value["payload"]) if meta_line else {}
        sid = self.session.get("id")
        run_id = sid if isinstance(sid, str) and sid else name_text(src.path.name).split(".", 1)[0]
        self.b = RunBuilder(fmt, src, run_id)
        self.history: list[ChatMessage] = []
        self.open: _OpenCall | None = None
        self.last_model: ModelRecord | None = None
        self.last_item_at: str | None = None
        self.model: str | None = None
        self.model_warned = False
        self.turn_id: str | None = None
        self.context: dict[str, Any] | None = None
        self.first_context: dict[str, Any] | None = None
        self.first_model: str | None = None
        self.task: str | None = None
        self.turns: dict[str, dict[str, Any]] = {}
        self.last_total: Any = None
        self.skipped: dict[str, list[int]] = {}
        self.more_sessions: list[dict[str, Any]] = []
        # events that complete a tool record, by the call id they name
        self.exec_end: dict[str, dict[str, Any]] = {}
        self.patch_end: dict[str, dict[str, Any]] = {}
        self.search_end: list[dict[str, Any]] = []
        self.assistant_texts: set[str] = set()
        for ln in lines:
            if not _rollout_line(ln.value):
                continue
            p = ln.value["payload"]
            cid = p.get("call_id")
            if ln.value["type"] == "event_msg":
                if p.get("type") == "exec_command_end" and isinstance(cid, str):
                    self.exec_end.setdefault(cid, p)
                elif p.get("type") == "patch_apply_end" and isinstance(cid, str):
                    self.patch_end.setdefault(cid, p)
                elif p.get("type") == "web_search_end":
                    self.search_end.append(p)
            elif ln.value["type"] == "response_item" and p.get("type") == "message" and p.get("role") == "assistant":
                for part in _text_parts(p.get("content")):
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        self.assistant_texts.add(part["text"].strip())

    # -- the pass over the lines ------------------------------------------------------

    def run(self) -> ImportedRun:
        b = self.b
        instructions = self.session.get("base_instructions")
        text = instructions.get("text") if isinstance(instructions, dict) else instructions
        if isinstance(text, str) and text:
            self.history.append(b.message("system", text, place="session_meta.base_instructions"))
        seen_meta = False
        for ln in self.lines:
            self.number = ln.number
            place = f"line {ln.number}"
            v = ln.value
            if not isinstance(v, dict):
                b.warn(place, f"not a rollout line (a JSON {type(v).__name__}, not an object); skipped")
                continue
            kind = v.get("type")
            payload = v.get("payload")
            if kind not in LINE_TYPES or not isinstance(payload, dict):
                self._skip(f"top-level {kind!r}" if isinstance(kind, str) else "untyped", ln.number)
                continue
            at = b.time(v.get("timestamp"))
            if kind == "session_meta":
                if seen_meta:
                    self.more_sessions.append({k: x for k, x in payload.items() if k != "base_instructions"})
                seen_meta = True
            elif kind == "turn_context":
                self._turn_context(payload, at, place)
            elif kind == "response_item":
                self._item(payload, at, place)
            elif kind == "event_msg":
                self._event(payload, at, place)
            else:  # compacted
                self._compacted(payload, at, place)
        self._close()
        b.unanswered("end of file")
        for what, nums in self.skipped.items():
            where = f"line {nums[0]}" if len(nums) == 1 else f"lines {nums[0]}…{nums[-1]}"
            b.warn(where, f"{len(nums)} {what} line{'s' if len(nums) != 1 else ''} skipped (not mapped)")
        if self.more_sessions:
            b.warn("session_meta", f"{len(self.more_sessions)} further session_meta line(s): kept in metadata.codex")
        created, _ = to_rfc3339(self.session.get("timestamp"))
        return b.build(self._metadata(), created_at=created)

    def _skip(self, what: str, number: int) -> None:
        self.skipped.setdefault(what, []).append(number)

    def _metadata(self) -> dict[str, Any]:
        codex: dict[str, Any] = {k: x for k, x in self.session.items() if k != "base_instructions"}
        if self.first_context is not None:
            codex["turn_context"] = self.first_context
        if self.turns:
            codex["turns"] = list(self.turns.values())
        if self.more_sessions:
            codex["more_session_meta"] = self.more_sessions
        meta: dict[str, Any] = {"agent": "codex", "codex": codex}
        if self.first_model:
            meta["model"] = self.first_model
        if self.task is not None:
            meta["task"] = self.task
        total = as_object(self.last_total)
        inp, out = _count(total.get("input_tokens")), _count(total.get("output_tokens"))
        if inp is not None and out is not None:
            meta["usage_totals"] = {
                "input_tokens": inp,
                "output_tokens": out,
                **{
                    k: total[k]
                    for k in ("cached_input_tokens", "reasoning_output_tokens")
                    if _count(total.get(k)) is not None
                },
                "source": "codex token_count total_token_usage",
            }
        return meta

    # -- turn_context, compaction -----------------------------------------------------

    def _turn_context(self, p: dict[str, Any], at: str | None, place: str) -> None:
        self._close()
        tid = p.get("turn_id")
        self.turn_id = tid if isinstance(tid, str) else None
        model = p.get("model")
        if isinstance(model, str) and model:
            self.model = model
            if self.first_model is None:
                self.first_model = model
            if self.turn_id:
                self.turns.setdefault(self.turn_id, {"turn_id": self.turn_id})["model"] = model
        ctx = {k: x for k, x in p.items() if k != "turn_id"}
        if self.context is None:
            self.first_context = ctx
        else:
            changed = {k: ctx.get(k) for k in _POLICY_FIELDS if ctx.get(k) != self.context.get(k)}
            if changed:
                self.b.interrupt(
                    {"type": "turn_context", "turn_id": self.turn_id, "changed": changed}, at=at, place=place
                )
        self.context = ctx

    def _compacted(self, p: dict[str, Any], at: str | None, place: str) -> None:
        self._close()
        b = self.b
        b.interrupt({"type": "compacted", "message": p.get("message")}, at=at, place=place)
        repl = p.get("replacement_history")
        if not isinstance(repl, list):
            b.warn(
                place,
                "the history was compacted and the rollout does not hold what replaced it; later requests "
                "keep the earlier history (approximate)",
            )
            return
        system = [m for m in self.history[:1] if m.role == "system"]
        self.history = system
        for i, item in enumerate(repl):
            ip = f"{place}.replacement_history[{i}]"
            if not isinstance(item, dict):
                b.warn(ip, "history item is not an object; skipped")
                continue
            t = item.get("type")
            if t == "message":
                self.history.append(b.message(str(item.get("role") or "user"), self._content(item), place=ip))
            elif t in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
                tc, _ = self._tool_call(item, ip, live=False)
                self.history.append(b.message("assistant", None, tool_calls=[tc], place=ip))
            elif t in INPUT_ITEMS:
                cid = item.get("call_id")
                content, _, _ = self._output_content(item.get("output"), t == "custom_tool_call_output")
                self.history.append(
                    b.message("tool", content, tool_call_id=cid if isinstance(cid, str) else None, place=ip)
                )
            elif t == "reasoning":
                self.history.append(b.message("assistant", [self._thinking(item)], place=ip))
            else:
                self._skip(f"replacement_history item {t!r}", self.number)

    # -- response items ---------------------------------------------------------------

    def _content(self, item: dict[str, Any]) -> Any:
        return simplify_parts(_text_parts(item.get("content")))

    def _item(self, p: dict[str, Any], at: str | None, place: str) -> None:
        t = p.get("type")
        if t == "message" and p.get("role") == "assistant":
            call = self._open(at, place)
            call.parts.extend(_text_parts(p.get("content")))
            if isinstance(p.get("phase"), str):
                call.phases.append(p["phase"])
        elif t == "reasoning":
            self._open(at, place).parts.append(self._thinking(p))
        elif t in OUTPUT_ITEMS:
            tc, kind = self._tool_call(p, place)
            call = self._open(at, place)
            call.calls.append(tc)
            call.specs.append(_Spec(kind, place, at))
        elif t == "message":
            self._close()
            role = p.get("role")
            self.history.append(
                self.b.message(role if isinstance(role, str) else "user", self._content(p), place=place)
            )
        elif t in INPUT_ITEMS:
            self._close()
            self._output(p, t == "custom_tool_call_output", at, place)
        else:
            self._skip(f"response_item {t!r}", self.number)
            return
        self.last_item_at = at or self.last_item_at

    def _thinking(self, p: dict[str, Any]) -> dict[str, Any]:
        texts = _texts(p.get("summary")) + _texts(p.get("content"))
        return _thinking_part("\n\n".join(texts), p.get("encrypted_content"))

    def _tool_call(self, p: dict[str, Any], place: str, *, live: bool = True) -> tuple[ToolCall, str]:
        """The tool call an output item stands for, and its kind (the item type).
        ``live=False`` (an item of a compacted history, already answered): a web search
        takes no ``web_search_end`` event, which belong to the searches still to come."""
        t = str(p.get("type"))
        cid = p.get("call_id")
        if t == "function_call":
            return self.b.tool_call(cid, p.get("name"), p.get("arguments"), place), t
        if t == "custom_tool_call":
            raw = p.get("input")
            args, is_raw = parse_arguments(raw if raw is not None else "")
            if is_raw:
                self.b.warn(
                    place,
                    f"the input of custom tool {p.get('name')!r} is free text, not JSON arguments; kept raw",
                )
            return ToolCall.model_construct(
                id=cid if isinstance(cid, str) else "",
                name=str(p.get("name") or ""),
                arguments=args,
                raw_arguments=True if is_raw else None,
            ), t
        if t == "web_search_call":
            action = p.get("action")
            end = self._search_end(action) if live else None
            sid = end.get("call_id") if end else p.get("id")
            args = action if isinstance(action, dict) else {"action": action}
            return ToolCall.model_construct(
                id=sid if isinstance(sid, str) else "", name="web_search", arguments=args, raw_arguments=None
            ), t
        # local_shell_call: the action (command, working directory, …) as the arguments
        action = p.get("action")
        cid = cid if isinstance(cid, str) and cid else p.get("id")
        return ToolCall.model_construct(
            id=cid if isinstance(cid, str) else "",
            name="local_shell",
            arguments=action if isinstance(action, dict) else {"action": action},
            raw_arguments=None,
        ), t

    def _search_end(self, action: Any) -> dict[str, Any] | None:
        """The ``web_search_end`` event of a web search: the first unused one with the same
        action, else with the same query, else the oldest unused one."""
        query = action.get("query") if isinstance(action, dict) else None
        for test in (
            lambda e: e.get("action") == action,
            lambda e: query is not None and e.get("query") == query,
            lambda e: True,
        ):
            for i, e in enumerate(self.search_end):
                if test(e):
                    return self.search_end.pop(i)
        return None

    def _open(self, at: str | None, place: str) -> _OpenCall:
        """The model call an output item belongs to: the open one, unless its
        ``token_count`` was read (Codex writes it when the call's response is complete;
        output after it, with no input between, is the next call's)."""
        if self.open is not None and self.open.usage is not None:
            self._close()
        if self.open is None:
            self.open = _OpenCall(place=place, at=at, start=self.last_item_at)
        self.open.end = at or self.open.end
        return self.open

    def _close(self) -> None:
        """Write the open model call (if any): the model record, then a web search's tool
        record; its other tool calls wait for their outputs."""
        call, self.open = self.open, None
        if call is None:
            return
        b = self.b
        if self.model is None and not self.model_warned:
            b.warn(call.place, "no turn_context names the model before this call; model records say 'unknown'")
            self.model_warned = True
        msg = b.message("assistant", simplify_parts(call.parts), tool_calls=call.calls or None, place=call.place)
        rec = b.model(
            model=self.model or "unknown",
            messages=list(self.history),
            response=msg,
            usage=call.usage,
            at=call.at,
            duration=seconds_between(call.start, call.end),
            place=call.place,
        )
        meta: dict[str, Any] = {}
        if self.turn_id:
            meta["turn_id"] = self.turn_id
        if call.phases:
            meta["phase"] = call.phases[0] if len(set(call.phases)) == 1 else call.phases
        if call.token_usage is not None:
            meta["token_usage"] = call.token_usage
        if meta:
            rec.meta = b.scrub(meta, call.place)
        self.history.append(msg)
        self.last_model = rec
        for tc, spec in zip(msg.tool_calls or [], call.specs):
            if spec.kind == "web_search_call":
                b.warn(
                    spec.place,
                    "web search results are not in the rollout (the search ran on the provider's side); "
                    "recorded with no result",
                )
                b.tool(
                    tool=tc.name, arguments=tc.arguments, tool_call_id=tc.id, content=None, at=spec.at, place=spec.place
                )
            else:
                b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), spec.place, at=spec.at))

    # -- tool outputs -----------------------------------------------------------------

    def _output_content(self, out: Any, custom: bool) -> tuple[Any, ErrorInfo | None, float | None]:
        """A tool output as ``(content, error, duration)``: a string as written (a custom
        tool's JSON text ``{"output", "metadata": {exit_code, duration_seconds}}`` gives
        the duration and a non-zero exit code), content items as parts, the older
        ``{content, success}`` object (``success: false`` → error ``tool_error``)."""
        if isinstance(out, str):
            if custom and out.startswith("{"):
                try:
                    parsed = orjson.loads(out)
                except orjson.JSONDecodeError:
                    parsed = None
                md = as_object(as_object(parsed).get("metadata"))
                dur = md.get("duration_seconds")
                code = md.get("exit_code")
                err = None
                if type(code) is int and code != 0:
                    err = ErrorInfo.model_construct(type=f"exit_code_{code}", message=f"exited with code {code}")
                return out, err, dur if isinstance(dur, (int, float)) and not isinstance(dur, bool) else None
            return out, None, None
        if isinstance(out, list) or is_tagged(out):
            return simplify_parts(_text_parts(out)), None, None
        if isinstance(out, dict) and "content" in out:
            err = None
            if out.get("success") is False:
                text = out["content"] if isinstance(out["content"], str) else ""
                err = ErrorInfo.model_construct(type="tool_error", message=text[:500])
            return simplify_parts(_text_parts(out["content"])), err, None
        return (None if out is None else simplify_parts(_text_parts(out))), None, None

    def _output(self, p: dict[str, Any], custom: bool, at: str | None, place: str) -> None:
        b = self.b
        raw_id = p.get("call_id")
        cid = raw_id if isinstance(raw_id, str) and raw_id else None
        pc = b.pairer.take(cid, None, place)
        content, error, duration = self._output_content(p.get("output"), custom)
        self.history.append(b.message("tool", content, tool_call_id=cid, name=pc.name if pc else None, place=place))
        meta: dict[str, Any] = {}
        ex = self.exec_end.get(cid or "")
        if ex is not None:
            error = self._exec_end(ex, meta) or error
        pa = self.patch_end.get(cid or "")
        if pa is not None:
            error = self._patch_end(pa, meta) or error
        if pc is None:
            b.warn(place, f"tool output {cid or '(no call_id)'} answers no recorded call; kept without a key")
            rec: ToolRecord = b.tool(
                tool="unknown",
                arguments={},
                tool_call_id=cid,
                content=content,
                error=error,
                at=at,
                place=place,
                identity_known=False,
            )
        else:
            rec = b.tool(
                tool=pc.name,
                arguments=pc.arguments,
                tool_call_id=pc.id or cid,
                content=content,
                error=error,
                at=pc.at,
                duration=duration if duration is not None else seconds_between(pc.at, at),
                place=place,
            )
        if meta:
            rec.meta = b.scrub(meta, place)

    def _exec_end(self, ev: dict[str, Any], meta: dict[str, Any]) -> ErrorInfo | None:
        """``exec_command_end`` → ``meta.exec`` and, for a non-zero exit code, the error."""
        code = ev.get("exit_code")
        info: dict[str, Any] = {
            k: ev[k] for k in ("exit_code", "status", "command", "cwd", "process_id", "source") if k in ev
        }
        d = as_object(ev.get("duration"))
        secs, nanos = d.get("secs"), d.get("nanos")
        if type(secs) is int and type(nanos) is int:
            info["duration_seconds"] = secs + nanos / 1e9
        meta["exec"] = info
        if type(code) is int and code != 0:
            cmd = ev.get("command")
            shown = cmd[-1] if isinstance(cmd, list) and cmd and isinstance(cmd[-1], str) else None
            return ErrorInfo.model_construct(
                type=f"exit_code_{code}", message=f"exited with code {code}" + (f": {shown}" if shown else "")
            )
        return None

    def _patch_end(self, ev: dict[str, Any], meta: dict[str, Any]) -> ErrorInfo | None:
        """``patch_apply_end`` → ``meta.patch`` (success, the files and how each changed)
        and, when it failed, error ``patch_failed``."""
        changes = as_object(ev.get("changes"))
        files = {str(k): as_object(v).get("type") for k, v in changes.items()}
        meta["patch"] = {"success": ev.get("success"), "files": files}
        if ev.get("success") is False:
            text = ev.get("stderr") or ev.get("stdout") or "the patch was not applied"
            return ErrorInfo.model_construct(type="patch_failed", message=str(text)[:500])
        return None

    # -- events -----------------------------------------------------------------------

    def _event(self, p: dict[str, Any], at: str | None, place: str) -> None:
        t = p.get("type")
        b = self.b
        if t == "token_count":
            self._token_count(p, at, place)
        elif t == "user_message":
            self._close()
            msg = p.get("message")
            value: dict[str, Any] = {"type": "user_message", "message": msg}
            for k in ("images", "local_images"):
                if p.get(k):
                    value[k] = p[k]
            b.interrupt(value, at=at, place=place)
            if self.task is None and isinstance(msg, str):
                self.task = msg
            self.last_item_at = at or self.last_item_at
        elif t == "turn_aborted":
            self._close()
            b.interrupt({"type": "turn_aborted", "reason": p.get("reason")}, at=at, place=place)
        elif t in ("task_started", "task_complete"):
            tid = p.get("turn_id")
            key = tid if isinstance(tid, str) else f"~{len(self.turns)}"
            turn = self.turns.setdefault(key, {"turn_id": tid})
            if t == "task_started":
                turn["started_at"] = at
                if "model_context_window" in p:
                    turn["model_context_window"] = p["model_context_window"]
            else:
                turn["completed_at"] = at
                for k in ("duration_ms", "time_to_first_token_ms"):
                    if k in p:
                        turn[k] = p[k]
        elif t == "agent_message":
            msg = p.get("message")
            if isinstance(msg, str) and msg.strip() not in self.assistant_texts:
                b.warn(place, "agent message not among the rollout's assistant messages; skipped")
        elif t in _EVENTS_USED:
            return  # read in the first pass (exec/patch/web search ends) or a repeat of an item
        else:
            self._skip(f"event_msg {t!r}", self.number)

    def _token_count(self, p: dict[str, Any], at: str | None, place: str) -> None:
        info = p.get("info")
        if not isinstance(info, dict):
            return  # rate limits only: no usage
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            return  # the same totals again: no new model call
        self.last_total = total
        last = as_object(info.get("last_token_usage"))
        inp, out = _count(last.get("input_tokens")), _count(last.get("output_tokens"))
        usage = (inp, out) if inp is not None and out is not None else None
        if usage is None:
            self.b.warn(place, "token_count without input/output token counts in last_token_usage; no usage")
            return
        if self.open is not None and self.open.usage is not None:
            self._close()  # a second count for one call: the call is complete, this count is no one's
        if self.open is not None:
            self.open.usage = usage
            self.open.token_usage = last
            self.open.end = at or self.open.end
        elif (
            self.last_model is not None
            and self.last_model.response is not None
            and (self.last_model.response.usage is None)
        ):
            self.last_model.response.usage = Usage.model_construct(input_tokens=usage[0], output_tokens=usage[1])
            self.last_model.meta = {**(self.last_model.meta or {}), "token_usage": self.b.scrub(last, place)}
        else:
            self.b.warn(place, "token_count follows no model call without usage; its usage is not attached")
