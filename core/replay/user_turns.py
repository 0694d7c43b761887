"""Where a base run waited on a person: the user turns of the user-turn rule.

docs/replay.md, "Replay states", the user-turn rule (from the seed documents: a replayed
run pauses on its own checkpointer, and replay never fabricates an answer from interrupt
records): while a branch is aligned with its base everything is as recorded; once it has
diverged, every point where the agent waits on a person is a ``user`` requirement, the
recorded value offered as the default answer and used only when the user pins it.

A base's *user turn before model step s* (0-based count of model calls) is what a person
gave the agent between model call ``s - 1`` and model call ``s``:

* the **recorded interrupts holding a person's input** in that stretch — an interrupt
  whose value is a human/user message (:func:`core.analysis.timeline_text.interrupt_status`
  says ``input``: Inspect's ``input`` event, OpenHands' ``user_message``, Who&When's
  ``human`` step); approvals, agent-state changes and other interrupts are not;
* the **new user messages** of request ``s`` — ``user`` messages it holds more often than
  request ``s - 1`` did (the simulated customer's turn in tau-bench) — unless tool records
  without a ``tool_call_id`` sit in that stretch: then the agent acts in text and its
  observations come back as ``user`` messages (SWE-agent), which are not a person.

The turn's **default** is the recorded text: the new user messages' text (joined by a
blank line), else the interrupt's input (``input``, ``content``, ``text`` or ``message``
field), else its value as JSON. Turns are found lazily, one step at a time, so a long base
costs nothing until a replay diverges.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CanonicalizationError
from ..record.canonical import canonical_hash
from ..record.indexed import interrupt_status
from ..record.nesting import dumps
from ..record.recording import ChatMessage, InterruptRecord, ModelRecord, Recording, ToolRecord

__all__ = ["UserTurn", "UserTurns", "person_text"]

#: the shortest stop marker honoured (tau-bench's is ``###STOP###``)
MIN_MARKER = 4

#: fields of an interrupt value that hold what the person typed, in order of preference
TEXT_FIELDS = ("input", "content", "text", "message")


def person_text(value: Any) -> tuple[str | None, str]:
    """``(field, text)`` of what a person typed, from an interrupt's value: the first of
    :data:`TEXT_FIELDS` holding a string (``field`` ``None`` for a plain string value);
    else the value as JSON (``field`` ``None``)."""
    if isinstance(value, str):
        return None, value
    if isinstance(value, dict):
        for f in TEXT_FIELDS:
            if isinstance(value.get(f), str):
                return f, value[f]
    return None, dumps(value, orjson.OPT_SORT_KEYS, default=str).decode()


@dataclass(frozen=True)
class UserTurn:
    """A base's user turn before model step ``step``: the recorded ``interrupts`` (person
    input), whether the next request carried ``new user messages`` (``messages``: then
    the answer goes into the request), the ``default`` answer (the recorded text), a
    ``key`` identifying the turn (requirement ids derive from it) and ``base_seq`` (the
    first interrupt's seq, else the base model call's)."""

    step: int
    interrupts: tuple[InterruptRecord, ...]
    messages: tuple[ChatMessage, ...]
    default: str
    key: str
    base_seq: int | None


@dataclass
class UserTurns:
    """The user turns of one base, by model step (found on first use)."""

    base: Recording
    _models: list[ModelRecord] = field(default_factory=list)
    _interrupts: dict[int, list[InterruptRecord]] = field(default_factory=dict)
    _text_actions: set[int] = field(default_factory=set)  # steps s whose stretch holds a text action
    _cache: dict[int, UserTurn | None] = field(default_factory=dict)
    _conversation: bool | None = None

    def __post_init__(self) -> None:
        step = 0
        for r in self.base.records:
            t = type(r)
            if t is ModelRecord:
                self._models.append(r)  # type: ignore[arg-type]
                step += 1
            elif t is InterruptRecord:
                if interrupt_status(r.value) == "input":  # type: ignore[union-attr]
                    self._interrupts.setdefault(step, []).append(r)  # type: ignore[arg-type]
            elif t is ToolRecord and not r.tool_call_id:  # type: ignore[union-attr]
                self._text_actions.add(step)

    @property
    def person_interrupts(self) -> list[InterruptRecord]:
        """Every recorded interrupt holding a person's input, in record order."""
        return [r for step in sorted(self._interrupts) for r in self._interrupts[step]]

    def before(self, step: int) -> UserTurn | None:
        """The user turn before model step ``step`` (``step`` may be the number of model
        calls: what a person gave after the last one), or ``None``."""
        if step in self._cache:
            return self._cache[step]
        interrupts = tuple(self._interrupts.get(step, ()))
        messages: tuple[ChatMessage, ...] = ()
        if 0 < step < len(self._models) and step not in self._text_actions:
            messages = tuple(_new_user_messages(self._models[step - 1], self._models[step]))
        turn = None
        if interrupts or messages:
            if messages:
                default = "\n\n".join(m.text for m in messages)
            else:
                default = person_text(interrupts[0].value)[1]
            base_seq = interrupts[0].seq if interrupts else self._models[step].seq
            key = _turn_key(step, default)
            turn = UserTurn(step, interrupts, messages, default, key, base_seq)
        self._cache[step] = turn
        return turn

    @property
    def conversation(self) -> bool:
        """Whether the base is a conversation with a person who speaks in new ``user``
        messages (tau-bench's simulated customer, a multi-turn chat): then, once a branch
        has diverged, the person speaks after every turn the agent ends
        (:meth:`next_spoken`). A base whose person's input is recorded as interrupts
        (a console prompt between tool calls) is not: its turns are heard at their step."""
        if self._conversation is None:
            self._conversation = False
            if self._interrupts:  # a person who interjects at the console (Inspect's input): turns by step
                return False
            for s in range(1, len(self._models)):
                turn = self.before(s)
                if turn is not None and turn.messages:
                    self._conversation = True
                    break
        return self._conversation

    def next_spoken(self, from_step: int, used: set[int]) -> UserTurn | None:
        """The person's next turn in a conversation, from model step ``from_step`` on: the
        first base turn with new ``user`` messages at a step not in ``used``; when the
        base has none left and its importer says the person speaks to the end
        (``metadata.user_turns``: tau-bench), the *closing* turn after the last model call,
        whose default is the person's last words (``metadata.user_turns.closing``: the
        ``###STOP###`` message), else empty; otherwise ``None`` (the base's person said
        nothing more: the branch's run ends there too)."""
        for s in range(max(from_step, 1), len(self._models)):
            if s in used:
                continue
            turn = self.before(s)
            if turn is not None and turn.messages:
                return turn
        n = len(self._models)
        spec = self.base.metadata.get("user_turns")
        if not isinstance(spec, dict):
            return None
        closing = spec.get("closing")
        default = closing if isinstance(closing, str) else ""
        k = n
        while k in used:  # the closing turn was heard once already: a further one, still after the base
            k += 1
        return UserTurn(k, (), (), default, _turn_key(k, default), None)

    def stop_marker(self) -> str | None:
        """The text that ends the conversation when the person says it
        (``metadata.user_turns.stop_marker``: tau-bench's ``###STOP###``), or ``None``."""
        spec = self.base.metadata.get("user_turns")
        marker = spec.get("stop_marker") if isinstance(spec, dict) else None
        # metadata is not sealed: a marker of a letter or two would end every conversation
        return marker if isinstance(marker, str) and len(marker.strip()) >= MIN_MARKER else None

    def continues_with_person(self, step: int) -> bool:
        """Whether the base's next request after model step ``step - 1`` carried a
        person's new message (so a final response there is where the base waited)."""
        turn = self.before(step)
        return turn is not None and bool(turn.messages)


def _turn_key(step: int, default: str) -> str:
    """The turn's key: the canonical hash of ``{kind: "user", step, default}`` (a default
    without a canonical form, e.g. a lone surrogate, is hashed as its escaped text)."""
    try:
        return canonical_hash({"kind": "user", "step": step, "default": default})
    except CanonicalizationError:
        text = default.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        return canonical_hash({"kind": "user", "step": step, "default": text})


def _msg_key(m: ChatMessage) -> bytes:
    obj = m.to_json_obj()
    try:
        return dumps(obj, orjson.OPT_SORT_KEYS)
    except TypeError:  # a value orjson cannot write (a lone surrogate): compare its repr
        return repr(obj).encode("utf-8", "backslashreplace")


def _new_user_messages(prev: ModelRecord, cur: ModelRecord) -> list[ChatMessage]:
    """``user`` messages of ``cur``'s request beyond those of ``prev``'s (as a multiset:
    a history trimmed at the front adds nothing), in order."""
    before = Counter(_msg_key(m) for m in prev.request.messages if m.role == "user")
    seen: Counter[bytes] = Counter()
    out: list[ChatMessage] = []
    for m in cur.request.messages:
        if m.role != "user":
            continue
        k = _msg_key(m)
        seen[k] += 1
        if seen[k] > before.get(k, 0):
            out.append(m)
    return out
