"""Editing a branch interactively: drafts prefilled with the recorded values, and checks
that say where a problem is (the app's branch editor; no UI here).

An editor holds a branch being written as plain fields — a checkpoint, a list of
:class:`InterventionDraft` (one per intervention: its kind, its target, the JSON text of
its payload) and the policy fields — and asks this module, on every edit:

* :func:`new_draft` / :func:`prefill`: an intervention of a kind at a target, its
  payload **prefilled with the value it replaces** (:func:`recorded_value`): the tool
  call's result (``tool_result``), the model call's response (``model_response``), the
  message of the next model request it replaces (``messages``), that request's options
  (``options``);
* :func:`check_payload`: the payload text read exactly as an intervention file is
  (:func:`core.record.userjson.loads_user_json`: strict JSON, values with a canonical
  form, redacted) and validated by the intervention's own model;
* :func:`check_draft`: one intervention, built and validated against the base
  (:func:`core.replay.branch.validate_branch`) — a target of the wrong kind, before the
  checkpoint or missing, an index outside the request, an edit of provider-signed
  reasoning;
* :func:`check_branch`: the whole branch, resolved by
  :func:`core.replay.branch.resolve_branch` from a :class:`~core.replay.branch.BranchDraft`
  — exactly what ``branch new`` does with the same interventions, so the branch saved is
  the one the command line would store;
* :func:`preview`: :func:`check_branch` plus the dry run
  (:func:`core.replay.replays.dry_run`), for a live "what will answer each call" panel.

Every problem is a :class:`Problem`: one line in core's words, the form ``field`` it
belongs to, the JSON Pointer (RFC 6901) inside the intervention object (``/result/content``)
and, for malformed JSON, the line and column in the payload text.

Provider-signed reasoning blocks (:func:`core.replay.branch.signed_reasoning_parts`) cannot
be edited: a ``model_response`` draft keeps them apart as :class:`LockedPart` (shown
read-only) and puts them back, as recorded and where they were, when it is built.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import ValidationError

from ..analysis.safe_text import json_safe
from ..errors import BranchError, CanonicalizationError, FormatError, WorkspaceError
from ..record.canonical import canonical_json
from ..record.nesting import VALUE, check_values, dumps
from ..record.recording import ChatMessage, ModelRecord, Recording, ToolRecord
from ..record.redaction import SecretRedactor, redact
from ..record.userjson import loads_user_json
from .boundary import ExecutorChoice, choose_executor
from .branch import (
    _INTERVENTION,
    BaseRef,
    Branch,
    BranchDraft,
    Intervention,
    Policy,
    ResolvedBranch,
    _produced_by,
    _pydantic_reason,
    resolve_branch,
    signed_reasoning_parts,
    validate_branch,
)

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = [
    "ANSWER_MEANING",
    "DRIFT_MEANING",
    "KINDS",
    "KIND_MEANING",
    "PAYLOAD_FIELD",
    "SOURCE_MEANING",
    "BranchCheck",
    "DraftCheck",
    "InterventionDraft",
    "LockedPart",
    "Preview",
    "Problem",
    "check_branch",
    "check_draft",
    "check_payload",
    "default_policy",
    "describe_draft",
    "first_target",
    "initial_drafts",
    "known_tools",
    "new_branch_id",
    "new_draft",
    "next_request",
    "parse_checkpoint",
    "policy_from_fields",
    "prefill",
    "preview",
    "produced_by",
    "recorded_executor",
    "recorded_value",
    "to_json_text",
]

#: the intervention kinds, in the order an editor offers them
KINDS: tuple[str, ...] = ("tool_result", "model_response", "messages", "options", "tool_policy")

#: the member of an intervention that holds its JSON payload (``None``: no payload)
PAYLOAD_FIELD: dict[str, str | None] = {
    "tool_result": "result",
    "model_response": "response",
    "messages": "messages",
    "options": "options",
    "tool_policy": None,
}

#: one line per kind: what an intervention of that kind does
KIND_MEANING: dict[str, str] = {
    "tool_result": "the tool call answers this result instead of the recorded one",
    "model_response": "the model call answers this response instead of the recorded one",
    "messages": "edits the messages of the first model request made from the checkpoint",
    "options": "sets request options on every model request from the checkpoint on (null removes one)",
    "tool_policy": "from the checkpoint on, calls of the tool are denied or wait for an approval",
}

#: one line per model / tool source of a policy
SOURCE_MEANING: dict[str, str] = {
    "recorded": "recorded calls answer, then fixtures; a call the base never made pauses on a requirement",
    "fixture": "from the checkpoint on only interventions and fixtures answer; recorded calls are not reused",
    "live": "as recorded, then the executor answers what is left (needs an executor)",
}

#: one line per drift setting of a policy
DRIFT_MEANING: dict[str, str] = {
    "strict": "a call that differs from the base needs its own answer",
    "lenient": "a call that differs takes the base's answer at the same step (comparability partial)",
}

#: one line per dry-run answer (docs/replay.md, "Dry run")
ANSWER_MEANING: dict[str, str] = {
    "recorded": "the recording answers it",
    "intervention": "an intervention of this branch answers it",
    "fixture": "a fixture of the workspace answers it",
    "drift": "lenient drift: the base's answer at the same step stands in",
    "live": "the executor answers it live (its code runs, or a live model is asked)",
    "requirement": "nothing answers it: the replay pauses on a requirement",
    "fail": "nothing answers it and require_fixtures is off: the replay fails",
    "denied": "a tool_policy intervention denies it",
    "approval": "a tool_policy intervention makes it wait for an approval",
    "user": "a person's turn: the replay pauses on a user requirement",
    "unknown": "depends on answers the replay has not produced yet",
}

_DRAFT_SOURCE = "<base>"  # the base path the single-intervention checks name, stripped from messages


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """What is wrong, and where.

    ``message``: one line in core's words (no file name in front). ``field``: the form
    field it belongs to — ``payload`` (the JSON text), ``seq``, ``tool``, ``op``,
    ``index``, ``action``, ``reason``, ``note``, ``checkpoint``, ``label``, ``parent``,
    ``model``, ``tool_source``, ``drift``, ``max_steps``, ``temperature`` — or ``None``
    (the branch as a whole). ``pointer``: the JSON Pointer inside the intervention object
    (``/result/content/items/0``) or ``None``. ``line`` / ``column``: 1-based place in the
    payload text of malformed JSON, else ``None``."""

    message: str
    field: str | None = None
    pointer: str | None = None
    line: int | None = None
    column: int | None = None

    def describe(self) -> str:
        """One line: ``at /result/content: reason`` (the pointer first, when there is one
        the message does not already name; malformed JSON names its line and column instead)."""
        if self.pointer and self.pointer not in self.message and self.line is None:
            return f"at {self.pointer}: {self.message}"
        return self.message


# --------------------------------------------------------------------------- drafts


@dataclass(frozen=True)
class LockedPart:
    """A provider-signed reasoning block of a recorded response, kept as recorded:
    ``index`` in the message's ``content`` list and the block (``part``) itself."""

    index: int
    part: dict[str, Any]


@dataclass
class InterventionDraft:
    """One intervention as an editor holds it (every field plain, as typed).

    ``kind``: one of :data:`KINDS`. Targets: ``seq`` (``tool_result``, ``model_response``:
    a base record) or ``tool`` (``tool_result`` for every call of a tool, when
    ``tool_wide``; ``tool_policy``). ``op`` / ``index`` (``messages``), ``action`` /
    ``reason`` (``tool_policy``), ``note`` (any kind; empty: none). ``text``: the JSON
    text of the payload (:data:`PAYLOAD_FIELD`), without the ``locked`` signed reasoning
    blocks of a ``model_response``. ``edited``: the text was changed after it was
    prefilled (an editor then keeps it when the target changes)."""

    kind: str
    seq: int | None = None
    tool: str | None = None
    tool_wide: bool = False
    op: Literal["append", "replace", "remove"] = "replace"
    index: int | None = None
    action: Literal["deny", "require_approval"] = "deny"
    reason: str = ""
    note: str = ""
    text: str = ""
    locked: tuple[LockedPart, ...] = ()
    edited: bool = False


@dataclass(frozen=True)
class DraftCheck:
    """The result of :func:`check_draft`: the ``intervention`` built, or the first
    ``problem``."""

    intervention: Intervention | None
    problem: Problem | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class BranchCheck:
    """The result of :func:`check_branch`: the ``branch`` resolved against the base (or
    ``None``), and the problems — ``checkpoint``, one :class:`DraftCheck` per draft
    (``drafts``), the ``policy`` fields and the branch as a whole (``problem``)."""

    branch: ResolvedBranch | None
    checkpoint: Problem | None = None
    drafts: tuple[DraftCheck, ...] = ()
    policy: Problem | None = None
    problem: Problem | None = None

    @property
    def ok(self) -> bool:
        return self.branch is not None

    def first_problem(self) -> tuple[int | None, Problem] | None:
        """``(draft index or None, problem)`` of the first problem, in form order."""
        if self.checkpoint is not None:
            return None, self.checkpoint
        for i, d in enumerate(self.drafts):
            if d.problem is not None:
                return i, d.problem
        if self.policy is not None:
            return None, self.policy
        if self.problem is not None:
            return None, self.problem
        return None


def to_json_text(value: Any) -> str:
    """``value`` as indented JSON text for an editor (keys in their recorded order), with
    every control, bidi and invisible character written as a ``\\uXXXX`` escape
    (:func:`core.analysis.safe_text.json_safe`): the text reads back to the same value."""
    return json_safe(dumps(value, orjson.OPT_INDENT_2).decode())


def new_branch_id() -> str:
    """A new branch id: ``br-`` + 12 random hex digits (what ``branch new`` makes)."""
    return "br-" + uuid.uuid4().hex[:12]


def _records_by_seq(base: Recording) -> dict[int, Any]:
    return {r.seq: r for r in base.records}


def known_tools(base: Recording) -> list[str]:
    """The tool names the base uses or offers (the ones an intervention may name), sorted."""
    names: set[str] = set()
    for r in base.records:
        if type(r) is ToolRecord:
            names.add(r.tool)
        elif type(r) is ModelRecord:
            for t in r.request.tools:
                if isinstance(t, dict):
                    name = t.get("name") or (t.get("function") or {}).get("name")
                    if isinstance(name, str):
                        names.add(name)
            if r.response:
                names.update(tc.name for tc in r.response.message.tool_calls or [])
    return sorted(names)


def next_request(base: Recording, checkpoint: int) -> ModelRecord | None:
    """The first model call at or after ``checkpoint`` (the request a ``messages``
    intervention edits and ``options`` first apply to), or ``None``."""
    return next((r for r in base.records if type(r) is ModelRecord and r.seq >= checkpoint), None)


def first_target(base: Recording, kind: str, checkpoint: int, preferred: int | None = None) -> int | None:
    """The base seq a ``tool_result`` / ``model_response`` draft targets by default:
    ``preferred`` when it is a record of the right kind at or after ``checkpoint``, else
    the first such record at or after it (``None``: none; other kinds: ``None``)."""
    want = ToolRecord if kind == "tool_result" else ModelRecord if kind == "model_response" else None
    if want is None:
        return None
    by_seq = _records_by_seq(base)
    if preferred is not None and type(by_seq.get(preferred)) is want and preferred >= checkpoint:
        return preferred
    return next((r.seq for r in base.records if type(r) is want and r.seq >= checkpoint), None)


def _wrong_record(seq: int, record: Any, kind: str) -> str:
    what = {"tool": "a tool call", "model": "a model call"}.get(record.kind, f"a {record.kind} record")
    name = getattr(record, "tool", None) or getattr(record, "model", None)
    named = f" ({name})" if isinstance(name, str) else ""
    if kind == "tool_result":
        fix = " — for a model call use model_response" if record.kind == "model" else ""
        return f"seq {seq} is {what}{named}, not a tool call: a tool_result intervention replaces a tool call's result{fix}"
    fix = " — for a tool call use tool_result" if record.kind == "tool" else ""
    return (
        f"seq {seq} is {what}{named}, not a model call: a model_response intervention replaces a model's response{fix}"
    )


def recorded_value(
    base: Recording,
    kind: str,
    *,
    seq: int | None = None,
    checkpoint: int = 0,
    tool: str | None = None,
    op: str = "replace",
    index: int | None = None,
) -> Any:
    """The recorded value an intervention of ``kind`` would replace (a JSON value):

    * ``tool_result``: the result of the tool record ``seq`` (or, with ``tool``, of the
      first call of that tool at or after ``checkpoint``) — ``{content, artifact, error,
      redacted}`` without its empty members;
    * ``model_response``: the response of the model record ``seq`` (a template
      ``{"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}`` when
      the call recorded none);
    * ``messages``: from the first model request at or after ``checkpoint``, the list
      holding the message at ``index`` (``replace``, ``remove``), or a template of one
      ``user`` message (``append``);
    * ``options``: that request's options (``{"temperature": 0}`` when it sets none);
    * ``tool_policy``: ``None`` (no payload).

    Raises:
        BranchError: no base record has ``seq``, it is of another kind, the tool has no
            call from the checkpoint, there is no model request at or after the
            checkpoint, or ``index`` is outside it.
    """
    if kind == "tool_result":
        if tool is not None and seq is None:
            call = next(
                (r for r in base.records if type(r) is ToolRecord and r.tool == tool and r.seq >= checkpoint), None
            )
            if call is None:
                raise BranchError(f"the base has no call of tool {tool!r} at or after seq {checkpoint}")
            return call.result.to_json_obj()
        record = _records_by_seq(base).get(seq) if seq is not None else None
        if record is None:
            raise BranchError(f"no base record has seq {seq}")
        if type(record) is not ToolRecord:
            raise BranchError(_wrong_record(seq or 0, record, kind))
        return record.result.to_json_obj()
    if kind == "model_response":
        record = _records_by_seq(base).get(seq) if seq is not None else None
        if record is None:
            raise BranchError(f"no base record has seq {seq}")
        if type(record) is not ModelRecord:
            raise BranchError(_wrong_record(seq or 0, record, kind))
        if record.response is None:
            return {"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
        return record.response.to_json_obj()
    if kind in ("messages", "options"):
        request = next_request(base, checkpoint)
        if request is None:
            raise BranchError(f"no model request at or after the checkpoint {checkpoint}")
        if kind == "options":
            return dict(request.request.options) or {"temperature": 0}
        if op == "append":
            return [{"role": "user", "content": ""}]
        msgs = request.request.messages
        i = len(msgs) - 1 if index is None else index
        if not -len(msgs) <= i < len(msgs):
            raise BranchError(f"index {i} is out of range: the request at seq {request.seq} has {len(msgs)} message(s)")
        return [msgs[i].to_json_obj()]
    return None


def _split_locked(value: Any) -> tuple[Any, tuple[LockedPart, ...]]:
    """A response with its signed reasoning blocks taken out of ``message.content``."""
    if not isinstance(value, dict) or not isinstance(value.get("message"), dict):
        return value, ()
    content = value["message"].get("content")
    if not isinstance(content, list):
        return value, ()
    signed = signed_reasoning_parts(ChatMessage.model_validate(value["message"]))
    if not signed:
        return value, ()
    locked = tuple(LockedPart(i, p) for i, p in enumerate(content) if any(p is s for s in signed))
    keep = [p for i, p in enumerate(content) if i not in {lp.index for lp in locked}]
    return {**value, "message": {**value["message"], "content": keep}}, locked


def _join_locked(value: Any, locked: Sequence[LockedPart], pointer: str) -> tuple[Any, Problem | None]:
    """``value`` (an edited response) with the ``locked`` blocks put back where they were."""
    if not locked:
        return value, None
    content = value.get("message", {}).get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return value, Problem(
            f"message.content must stay a list: it holds {len(locked)} provider-signed reasoning block(s), "
            "kept as recorded",
            field="payload",
            pointer=f"{pointer}/message/content",
        )
    out = list(content)
    for lp in sorted(locked, key=lambda p: p.index):
        out.insert(min(lp.index, len(out)), lp.part)
    return {**value, "message": {**value["message"], "content": out}}, None


#: the payload of each kind when there is no recorded value to start from
_TEMPLATES: dict[str, Any] = {
    "tool_result": {"content": None},
    "model_response": {"message": {"role": "assistant", "content": ""}, "finish_reason": "stop"},
    "messages": [{"role": "user", "content": ""}],
    "options": {"temperature": 0},
}


def prefill(base: Recording, draft: InterventionDraft, checkpoint: int) -> InterventionDraft:
    """``draft`` with its payload text set to the recorded value of its target
    (:func:`recorded_value`; signed reasoning blocks set apart in ``locked``) and
    ``edited`` cleared. A target that has no recorded value leaves the text as it is."""
    try:
        value = recorded_value(
            base,
            draft.kind,
            seq=None if draft.tool_wide else draft.seq,
            checkpoint=checkpoint,
            tool=draft.tool if draft.tool_wide else None,
            op=draft.op,
            index=draft.index,
        )
    except BranchError:
        # no recorded value there (a target of another kind, say): an edited text stays,
        # else the kind's template, so the text always fits the kind
        if draft.edited and draft.text:
            return draft
        template = _TEMPLATES.get(draft.kind)
        return replace(draft, text="" if template is None else to_json_text(template), locked=(), edited=False)
    locked: tuple[LockedPart, ...] = ()
    if draft.kind == "model_response":
        value, locked = _split_locked(value)
    text = "" if value is None else to_json_text(value)
    return replace(draft, text=text, locked=locked, edited=False)


def new_draft(base: Recording, kind: str, checkpoint: int, *, seq: int | None = None) -> InterventionDraft:
    """A new draft of ``kind`` at ``checkpoint``, prefilled (:func:`prefill`).

    Its target: for ``tool_result`` / ``model_response`` the record :func:`first_target`
    picks (``seq`` when it fits); for ``messages`` the last message of the next model
    request (op ``replace``); for ``tool_policy`` the tool of record ``seq`` when it is a
    tool call, else the first tool the base knows (action ``deny``)."""
    if kind not in KINDS:
        raise BranchError(f"unknown intervention kind {kind!r} (expected one of {', '.join(KINDS)})")
    draft = InterventionDraft(kind=kind)
    if kind in ("tool_result", "model_response"):
        draft.seq = first_target(base, kind, checkpoint, seq)
    elif kind == "messages":
        request = next_request(base, checkpoint)
        draft.index = len(request.request.messages) - 1 if request is not None and request.request.messages else 0
    elif kind == "tool_policy":
        record = _records_by_seq(base).get(seq) if seq is not None else None
        tools = known_tools(base)
        draft.tool = record.tool if type(record) is ToolRecord else (tools[0] if tools else None)
    return prefill(base, draft, checkpoint)


def initial_drafts(base: Recording, seq: int) -> list[InterventionDraft]:
    """The interventions an editor opened on record ``seq`` starts with: the tool call's
    result (a tool record) or the model call's response (a model record), prefilled with
    the recorded value; none for any other record."""
    record = _records_by_seq(base).get(seq)
    if type(record) is ToolRecord:
        return [new_draft(base, "tool_result", seq, seq=seq)]
    if type(record) is ModelRecord:
        return [new_draft(base, "model_response", seq, seq=seq)]
    return []


def describe_draft(draft: InterventionDraft) -> str:
    """One line naming a draft, as a list shows it (``tool_result at seq 6``)."""
    k = draft.kind
    if k in ("tool_result", "model_response"):
        if k == "tool_result" and draft.tool_wide:
            return f"tool_result for every {draft.tool or '?'} call"
        return f"{k} at seq {'?' if draft.seq is None else draft.seq}"
    if k == "messages":
        return f"messages {draft.op}" + ("" if draft.op == "append" else f" at index {draft.index}")
    if k == "options":
        try:
            obj = json.loads(draft.text)
        except ValueError:
            obj = None
        keys = ", ".join(sorted(obj)) if isinstance(obj, dict) else ""
        return "options" + (f" {keys}" if keys else "")
    return f"tool_policy {draft.action} {draft.tool or '?'}"


# --------------------------------------------------------------------------- checks


def _locate(text: str, pointer: str) -> tuple[str | None, int | None, int | None]:
    """Where the text a reader refused goes wrong: ``(JSON Pointer, line, column)``."""
    try:
        obj = json.loads(text, parse_constant=lambda name: None)
    except json.JSONDecodeError as exc:
        return None, exc.lineno, exc.colno
    except (ValueError, RecursionError):
        return None, None, None
    try:
        check_values(obj, VALUE, source="")
    except FormatError as exc:
        return pointer + (exc.path or ""), None, None
    obj, _ = redact(obj, SecretRedactor())
    try:
        canonical_json(obj)
    except CanonicalizationError as exc:
        return pointer + (exc.path or ""), None, None
    return None, None, None


def check_payload(kind: str, text: str) -> tuple[Any, Problem | None]:
    """Read the payload text of an intervention of ``kind`` exactly as an intervention
    file is read (strict JSON, values with a canonical form, redacted), then check its
    shape with the intervention's own model. Returns ``(value, None)`` or ``(None,
    problem)``; the problem's pointer starts with the payload's member (``/result``)."""
    member = PAYLOAD_FIELD.get(kind)
    if member is None:
        return None, None
    pointer = f"/{member}"
    source = f"{member} JSON"
    if not text.strip():
        return None, Problem(f"{member} is empty: write a JSON value", field="payload", pointer=pointer)
    try:
        value = loads_user_json(text, source, BranchError)
    except BranchError as exc:
        where, line, column = _locate(text, pointer)
        message = str(exc).removeprefix(f"{source}: ")
        if where is not None:
            message = message.split(": ", 1)[1] if message.startswith("at /") and ": " in message else message
        return None, Problem(message, field="payload", pointer=where or pointer, line=line, column=column)
    shape = _shape_of(kind, value)
    if shape is not None:
        return None, shape
    return value, None


def _shape_of(kind: str, value: Any) -> Problem | None:
    """The first problem of ``value`` as the payload of ``kind`` (by the model itself)."""
    member = PAYLOAD_FIELD[kind]
    if member is None:
        return None
    stub: dict[str, Any] = {"kind": kind, member: value}
    if kind in ("tool_result", "model_response"):
        stub["seq"] = 0
    elif kind == "messages":
        stub["op"] = "append"
    try:
        _INTERVENTION.validate_python(stub, strict=True)
    except ValidationError as exc:
        pointer, reason = _pydantic_reason(exc)
        if kind == "messages" and not value and pointer == "/":
            return None  # an empty list is the op's business, checked with the draft
        if pointer == "/":  # the model's own rule on the payload (e.g. 'options' is empty)
            pointer = f"/{member}"
        return Problem(reason, field="payload", pointer=pointer)
    return None


_FIELD_OF_POINTER = {
    "seq": "seq",
    "step": "seq",
    "tool": "tool",
    "args_hash": "tool",
    "op": "op",
    "index": "index",
    "action": "action",
    "reason": "reason",
    "note": "note",
}


def _field_of(pointer: str, kind: str) -> str | None:
    head = pointer.strip("/").split("/", 1)[0]
    if head and head == PAYLOAD_FIELD.get(kind):
        return "payload"
    return _FIELD_OF_POINTER.get(head)


def _intervention_object(draft: InterventionDraft, payload: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": draft.kind}
    if draft.kind == "tool_result":
        if draft.tool_wide:
            obj["tool"] = draft.tool
        else:
            obj["seq"] = draft.seq
        obj["result"] = payload
    elif draft.kind == "model_response":
        obj["seq"] = draft.seq
        obj["response"] = payload
    elif draft.kind == "messages":
        obj["op"] = draft.op
        if draft.op != "append":
            obj["index"] = draft.index
        if draft.op != "remove":
            obj["messages"] = payload
    elif draft.kind == "options":
        obj["options"] = payload
    else:
        obj["tool"] = draft.tool
        obj["action"] = draft.action
        if draft.reason:
            obj["reason"] = draft.reason
    if draft.note:
        obj["note"] = draft.note
    return obj


def _scratch_branch(checkpoint: int, interventions: list[Any]) -> Branch:
    return Branch(
        id="br-draft",
        base=BaseRef(path=_DRAFT_SOURCE, digest=""),
        checkpoint=checkpoint,
        interventions=interventions,
        created_at="2000-01-01T00:00:00Z",
    )


def _target_problem(base: Recording, checkpoint: int, draft: InterventionDraft) -> Problem | None:
    """A ``seq`` target that is missing, of the wrong kind or before the checkpoint, in
    the editor's words (the field ``seq``)."""
    if draft.kind not in ("tool_result", "model_response") or (draft.kind == "tool_result" and draft.tool_wide):
        return None
    if draft.seq is None:
        return Problem("give the seq of the base record it replaces", field="seq", pointer="/seq")
    record = _records_by_seq(base).get(draft.seq)
    if record is None:
        return Problem(f"no base record has seq {draft.seq}", field="seq", pointer="/seq")
    want = ToolRecord if draft.kind == "tool_result" else ModelRecord
    if type(record) is not want:
        return Problem(_wrong_record(draft.seq, record, draft.kind), field="seq", pointer="/seq")
    if draft.seq < checkpoint:
        return Problem(f"seq {draft.seq} is before the checkpoint {checkpoint}", field="seq", pointer="/seq")
    return None


def check_draft(base: Recording, checkpoint: int, draft: InterventionDraft) -> DraftCheck:
    """Build the intervention of ``draft`` and validate it against ``base`` at
    ``checkpoint`` (:func:`core.replay.branch.validate_branch`, this one intervention).
    The first problem is returned with its field and JSON Pointer."""
    payload: Any = None
    member = PAYLOAD_FIELD.get(draft.kind)
    if draft.kind not in KINDS:
        return DraftCheck(None, Problem(f"unknown intervention kind {draft.kind!r}", field="kind", pointer="/kind"))
    target = _target_problem(base, checkpoint, draft)
    if target is not None:
        return DraftCheck(None, target)
    if member is not None and not (draft.kind == "messages" and draft.op == "remove"):
        payload, problem = check_payload(draft.kind, draft.text)
        if problem is not None:
            return DraftCheck(None, problem)
        if draft.kind == "model_response":
            payload, problem = _join_locked(payload, draft.locked, "/response")
            if problem is not None:
                return DraftCheck(None, problem)
    obj = _intervention_object(draft, payload)
    try:
        intervention = _INTERVENTION.validate_python(obj, strict=True)
    except ValidationError as exc:
        pointer, reason = _pydantic_reason(exc)
        return DraftCheck(None, Problem(reason, field=_field_of(pointer, draft.kind), pointer=pointer))
    try:
        validate_branch(_scratch_branch(checkpoint, [intervention]), base)
    except BranchError as exc:
        message = str(exc)
        prefix = f"intervention 0 ({intervention.describe()}) against {_DRAFT_SOURCE}: "
        message = message.removeprefix(prefix)
        if "provider-signed" in message:
            fld = "payload" if draft.kind == "model_response" else "index"
        elif draft.kind == "messages":
            fld = "index"
        elif draft.kind in ("tool_policy",) or draft.tool_wide:
            fld = "tool"
        else:
            fld = "seq"
        return DraftCheck(None, Problem(message, field=fld))
    return DraftCheck(intervention)


def parse_checkpoint(text: str, base: Recording) -> tuple[int | None, Problem | None]:
    """The checkpoint typed (a base seq) or the problem (field ``checkpoint``)."""
    raw = text.strip()
    try:
        seq = int(raw)
    except ValueError:
        return None, Problem("the checkpoint is the seq of a base record: a whole number", field="checkpoint")
    if seq not in _records_by_seq(base):
        seqs = [r.seq for r in base.records]
        span = f"seqs run {seqs[0]}..{seqs[-1]}" if seqs else "it has no records"
        return None, Problem(f"no base record has seq {seq} ({span})", field="checkpoint")
    return seq, None


def _int_field(text: str, name: str, label: str) -> tuple[int | None, Problem | None]:
    raw = text.strip()
    if not raw:
        return None, None
    try:
        return int(raw), None
    except ValueError:
        return None, Problem(f"{label} is a whole number (empty: none)", field=name)


def policy_from_fields(
    *,
    model: str,
    tool: str,
    drift: str,
    max_steps: str = "",
    temperature: str = "",
    require_fixtures: bool = True,
    live_model: str = "",
    user_model: str = "",
) -> tuple[Policy | None, Problem | None]:
    """A :class:`~core.replay.branch.Policy` from form fields (``max_steps``,
    ``temperature``, ``live_model`` and ``user_model`` as typed; empty: none), validated
    strictly as a policy file is. Returns ``(policy, None)`` or ``(None, problem)`` (field
    ``model``, ``tool_source``, ``drift``, ``max_steps``, ``temperature``, ``live_model`` or
    ``user_model``)."""
    steps, problem = _int_field(max_steps, "max_steps", "max steps")
    if problem is not None:
        return None, problem
    temp: float | None = None
    if temperature.strip():
        try:
            temp = float(temperature.strip())
        except ValueError:
            return None, Problem("temperature is a number ≥ 0 (empty: as recorded)", field="temperature")
        if not math.isfinite(temp):
            return None, Problem("temperature must be a finite number", field="temperature")
    obj: dict[str, Any] = {"model": model, "tool": tool, "drift": drift, "require_fixtures": require_fixtures}
    if steps is not None:
        obj["max_steps"] = steps
    if temp is not None:
        obj["temperature"] = temp
    for field_name, value in (("live_model", live_model), ("user_model", user_model)):
        if value.strip():
            obj[field_name] = value.strip()
    try:
        return Policy.model_validate(obj, strict=True), None
    except ValidationError as exc:
        pointer, reason = _pydantic_reason(exc)
        name = pointer.strip("/") or None
        return None, Problem(reason, field={"tool": "tool_source"}.get(name or "", name), pointer=pointer)


def recorded_executor(base: Recording) -> ExecutorChoice | None:
    """The executor the base names (``metadata.executor``, written ``module:function``)
    as an :class:`~core.replay.boundary.ExecutorChoice` of origin ``recording`` —
    nothing imported; ``None`` when it names none (or not in that form). Running it
    needs the user's consent (docs/replay.md, "Executors are code")."""
    try:
        return choose_executor("recorded", base, trust_recorded=True)
    except BranchError:
        return None


def default_policy(base: Recording) -> Policy:
    """The policy a new branch starts with: when the base names a wired executor
    (``module:function``), its new model calls answered live by it (``model: live``,
    tools offline); otherwise — no executor, or the command executor of a recording made
    by ``record``, whose live model is a paid provider — recorded answers, with
    requirements for what the recording cannot answer (docs/proxy.md)."""
    named = recorded_executor(base)
    return Policy(model="live") if named is not None and not named.spec.startswith("cmd:") else Policy()


def produced_by(base: Recording) -> str | None:
    """The id of the branch whose replay produced ``base`` (replay events name it in
    ``metadata.replay.branch.id``) — a new branch's parent by default — or ``None``."""
    return _produced_by(base)


def check_branch(
    base: Recording,
    base_path: str,
    *,
    checkpoint: str | int,
    drafts: Sequence[InterventionDraft],
    policy: Policy | tuple[Policy | None, Problem | None],
    label: str = "",
    parent: str = "",
    branch_id: str | None = None,
    workspace: Workspace | None = None,
) -> BranchCheck:
    """Check every field and, when all are fine, resolve the branch exactly as ``branch
    new`` does (:func:`core.replay.branch.resolve_branch` of a
    :class:`~core.replay.branch.BranchDraft`; with ``workspace``, its parent must be a
    branch there). ``checkpoint`` as typed or a seq; ``policy`` a Policy or what
    :func:`policy_from_fields` returned; empty ``label`` / ``parent``: none (the parent
    then defaults to :func:`produced_by`)."""
    if isinstance(checkpoint, int):
        cp, cp_problem = parse_checkpoint(str(checkpoint), base)
    else:
        cp, cp_problem = parse_checkpoint(checkpoint, base)
    pol, pol_problem = policy if isinstance(policy, tuple) else (policy, None)
    checks = tuple(check_draft(base, cp, d) for d in drafts) if cp is not None else ()
    if cp is None or pol is None or any(not c.ok for c in checks):
        return BranchCheck(None, checkpoint=cp_problem, drafts=checks, policy=pol_problem)
    draft = BranchDraft(
        base_path=base_path,
        at=cp,
        interventions=[c.intervention for c in checks],
        policy=pol,
        label=label or None,
        parent=parent.strip() or None,
        branch_id=branch_id,
    )
    try:
        branch = resolve_branch(workspace, draft, base)
    except (BranchError, WorkspaceError, CanonicalizationError) as exc:
        message = str(exc).removeprefix(f"new branch of {base_path}: ")
        fld = "parent" if "parent" in message else "label" if "label" in message else None
        return BranchCheck(None, drafts=checks, problem=Problem(message, field=fld))
    return BranchCheck(branch, drafts=checks)


# --------------------------------------------------------------------------- preview


@dataclass(frozen=True)
class Preview:
    """:func:`preview`'s result: the ``check``; the dry run (``{"status", "reason",
    "predictions", "counts"}``, see :func:`core.replay.dry_run.predict`) when the branch
    is valid, else ``None``; ``workspace_note``: why the workspace's fixtures were not
    used (none there, or it cannot be read), else ``None``."""

    check: BranchCheck
    dry_run: dict[str, Any] | None = None
    workspace_note: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def preview(
    base: Recording,
    base_path: str,
    *,
    checkpoint: str | int,
    drafts: Sequence[InterventionDraft],
    policy: Policy | tuple[Policy | None, Problem | None],
    label: str = "",
    parent: str = "",
    branch_id: str | None = None,
    executor_wired: bool = False,
    workspace: Workspace | None = None,
    workspace_note: str | None = None,
    observed_tools: bool = False,
    answers_only: bool = False,
) -> Preview:
    """:func:`check_branch`, then, for a valid branch, the dry run with the workspace's
    fixtures (:func:`core.replay.replays.dry_run`; ``executor_wired``: an executor
    would be wired — none is imported; ``observed_tools``: it is a command executor;
    ``answers_only``: it only answers calls, the provider executor — then the dry run
    also estimates the live calls' tokens, ``dry_run["live_cost"]``). Nothing is stored."""
    from .replays import dry_run

    check = check_branch(
        base,
        base_path,
        checkpoint=checkpoint,
        drafts=drafts,
        policy=policy,
        label=label,
        parent=parent,
        branch_id=branch_id,
        workspace=workspace,
    )
    if check.branch is None:
        return Preview(check, workspace_note=workspace_note)
    result = dry_run(
        workspace,
        base,
        check.branch,
        executor_wired=executor_wired,
        observed_tools=observed_tools,
        answers_only=answers_only,
    )
    if any(p["kind"] == "model" and p["answer"] == "live" for p in result.get("predictions", [])):
        from .dry_run import estimate_live_cost

        result["live_cost"] = estimate_live_cost(base, check.branch, result)
    return Preview(check, result, workspace_note, dict(result.get("counts", {})))
