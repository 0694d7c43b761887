"""Branches: a checkpoint, typed interventions and a policy, validated against a base.

A *branch* (SPEC glossary) departs from a *base run* at a *checkpoint* (a base ``seq``)
and carries explicit *interventions* plus a *policy*. Branches form a tree through
``parent``. This module only knows shapes, loading and validation; the replay engine
(:mod:`core.replay.engine`) applies them.

Interventions are a discriminated union on ``kind`` (rules from SPEC "Replay engine": interventions):

* ``tool_result``    — override the result of a tool call, targeted by ``seq`` (one
  call) or by ``tool`` (+ optional ``args_hash``; every matching call from the
  checkpoint on);
* ``model_response`` — override a model response, targeted by ``seq`` or ``step`` (the
  0-based index of the model call in the run);
* ``messages``       — ``append``, ``replace`` or ``remove`` messages in the next model
  request made from the checkpoint;
* ``options``        — set request options (temperature, tool choice, ...) on every model
  request from the checkpoint on (a ``null`` value removes the option);
* ``tool_policy``    — ``deny`` a tool, or ``require_approval`` for it, from the
  checkpoint on.

Validation (:func:`validate_branch`) raises :class:`~core.errors.BranchError` naming the
intervention (its index), the target and the reason: a target that does not exist in the
base, or lies before the checkpoint, and any edit of provider-signed reasoning blocks
(providers verify their signature, so an edited block would be a forgery the provider
rejects — the engine refuses rather than replaying something no provider would accept).

Resolving (:func:`resolve_branch`) is the one way in for the command line and the app: a
new branch (:class:`BranchDraft`), a branch file, a stored branch id or a branch document
is parsed, validated against the base once (digest included), and returned as a
:class:`ResolvedBranch`, which the engine runs without validating it again.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import BranchError, CanonicalizationError, invalid_text, printable
from ..record.canonical import args_hash as compute_args_hash
from ..record.io import atomic_write_bytes, recording_digest
from ..record.nesting import VALUE, Each, Pattern, dumps, json_mode_dump
from ..record.reader import USER_JSON_LIMIT, read_input
from ..record.recording import (
    ChatMessage,
    ModelRecord,
    ModelResponse,
    Recording,
    ToolRecord,
    ToolResult,
)
from ..record.recording_redaction import ensure_redacted
from ..record.redaction import redact
from ..record.userjson import loads_user_json

if TYPE_CHECKING:
    from ..workspace import Workspace

__all__ = [
    "BaseRef",
    "Branch",
    "BranchDraft",
    "BranchSpec",
    "Intervention",
    "InterventionFile",
    "MessagesIntervention",
    "ModelResponseIntervention",
    "OptionsIntervention",
    "Policy",
    "ResolvedBranch",
    "ToolPolicyIntervention",
    "ToolResultIntervention",
    "branch_from_dict",
    "load_branch",
    "load_interventions",
    "load_policy",
    "new_branch",
    "parse_interventions",
    "resolve_branch",
    "save_branch",
    "signed_reasoning_parts",
    "validate_branch",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json_obj(self) -> dict[str, Any]:
        """JSON-ready dict (``None`` fields omitted), at any depth up to the nesting limit
        (:func:`core.record.nesting.json_mode_dump`)."""
        out: dict[str, Any] = json_mode_dump(self.model_dump, exclude_none=True)
        return out


# --------------------------------------------------------------------------- interventions


class ToolResultIntervention(_Model):
    """Override a tool call's result.

    Target either ``seq`` (the base tool record at that seq; applied to the replay's call
    at the same position when it is the same call) or ``tool`` with an optional
    ``args_hash`` (``sha256:...`` of the canonical arguments, see
    :func:`core.record.canonical.args_hash`) or ``arguments`` (hashed for you): every matching
    call from the checkpoint on. ``result`` is the new :class:`ToolResult`.
    """

    kind: Literal["tool_result"] = "tool_result"
    seq: int | None = Field(default=None, ge=0)
    tool: str | None = None
    args_hash: str | None = None
    arguments: Any = None
    result: ToolResult
    note: str | None = None

    @model_validator(mode="after")
    def _target(self) -> ToolResultIntervention:
        if self.seq is None and self.tool is None:
            raise ValueError("a tool_result intervention needs a target: 'seq' or 'tool'")
        if self.seq is not None and self.tool is not None:
            raise ValueError("give either 'seq' or 'tool' (+ 'args_hash'), not both")
        if self.arguments is not None:
            if self.tool is None:
                raise ValueError("'arguments' targets need 'tool'")
            try:
                h = compute_args_hash(self.arguments)
            except CanonicalizationError as exc:
                raise ValueError(f"'arguments' cannot be canonicalized: {exc}") from None
            if self.args_hash is not None and self.args_hash != h:
                raise ValueError(f"'args_hash' {self.args_hash} does not match 'arguments' ({h})")
            self.args_hash = h
            self.arguments = None
        return self

    def describe(self) -> str:
        """Short human description of the target."""
        if self.seq is not None:
            return f"tool_result at seq {self.seq}"
        return f"tool_result for {self.tool}" + (f" {self.args_hash[:19]}…" if self.args_hash else " (every call)")


class ModelResponseIntervention(_Model):
    """Override a model response, targeted by ``seq`` (a base model record) or ``step``
    (the 0-based index of the model call in the run). ``response`` is the new
    :class:`ModelResponse`."""

    kind: Literal["model_response"] = "model_response"
    seq: int | None = Field(default=None, ge=0)
    step: int | None = Field(default=None, ge=0)
    response: ModelResponse
    note: str | None = None

    @model_validator(mode="after")
    def _target(self) -> ModelResponseIntervention:
        if (self.seq is None) == (self.step is None):
            raise ValueError("a model_response intervention needs exactly one target: 'seq' or 'step'")
        return self

    def describe(self) -> str:
        return f"model_response at seq {self.seq}" if self.seq is not None else f"model_response at step {self.step}"


class MessagesIntervention(_Model):
    """Edit the messages of the next model request made from the checkpoint.

    ``op`` is ``append`` (add ``messages`` at the end), ``replace`` (replace the message
    at ``index`` by ``messages``) or ``remove`` (drop the message at ``index``).
    ``index`` counts from 0; negative values count from the end, as in Python.
    """

    kind: Literal["messages"] = "messages"
    op: Literal["append", "replace", "remove"]
    index: int | None = None
    messages: list[ChatMessage] = Field(default_factory=list)
    note: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> MessagesIntervention:
        if self.op in ("replace", "remove") and self.index is None:
            raise ValueError(f"op {self.op!r} needs 'index'")
        if self.op in ("append", "replace") and not self.messages:
            raise ValueError(f"op {self.op!r} needs at least one message in 'messages'")
        if self.op == "remove" and self.messages:
            raise ValueError("op 'remove' takes no 'messages'")
        return self

    def apply(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """Return a new message list with this edit applied. Raises BranchError if
        ``index`` is out of range."""
        out = list(messages)
        if self.op == "append":
            return out + list(self.messages)
        n = len(out)
        idx = self.index if self.index is not None else 0
        if not -n <= idx < n:
            raise BranchError(f"messages {self.op}: index {idx} is out of range (request has {n} messages)")
        if self.op == "replace":
            idx %= n
            return out[:idx] + list(self.messages) + out[idx + 1 :]
        del out[idx]
        return out

    def describe(self) -> str:
        return f"messages {self.op}" + (f" at index {self.index}" if self.index is not None else "")


class OptionsIntervention(_Model):
    """Set request options on every model request from the checkpoint on; a ``null``
    value removes the option (e.g. ``{"temperature": 0, "tool_choice": "none"}``)."""

    kind: Literal["options"] = "options"
    options: dict[str, Any]
    note: str | None = None

    @model_validator(mode="after")
    def _nonempty(self) -> OptionsIntervention:
        if not self.options:
            raise ValueError("'options' is empty")
        try:
            compute_args_hash(self.options)
        except CanonicalizationError as exc:
            raise ValueError(f"'options' cannot be canonicalized: {exc}") from None
        return self

    def apply(self, options: dict[str, Any]) -> dict[str, Any]:
        """Return ``options`` with this intervention's values set (``None`` removes)."""
        out = dict(options)
        for k, v in self.options.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out

    def describe(self) -> str:
        return "options " + ", ".join(sorted(self.options))


class ToolPolicyIntervention(_Model):
    """``deny`` a tool, or ``require_approval`` before each call of it, from the
    checkpoint on. Denied calls raise :class:`~core.errors.PolicyDenied` exactly as live."""

    kind: Literal["tool_policy"] = "tool_policy"
    tool: str
    action: Literal["deny", "require_approval"]
    reason: str | None = None
    note: str | None = None

    def describe(self) -> str:
        return f"tool_policy {self.action} {self.tool}"


Intervention = Annotated[
    ToolResultIntervention
    | ModelResponseIntervention
    | MessagesIntervention
    | OptionsIntervention
    | ToolPolicyIntervention,
    Field(discriminator="kind"),
]
_INTERVENTION = TypeAdapter(Intervention)
_KINDS = ("tool_result", "model_response", "messages", "options", "tool_policy")
_INTERVENTIONS = TypeAdapter(list[Intervention])

# --------------------------------------------------------------------------- policy


class Policy(_Model):
    """Where a replay's answers may come from, and its limits (SPEC "Replay engine": policies).

    * ``model`` / ``tool``: ``recorded`` (recorded calls, then fixtures), ``fixture``
      (from the checkpoint on, only interventions and fixtures answer — recorded calls
      are not reused), ``live`` (as ``recorded``, then the wired executor answers what
      is left);
    * ``drift``: ``strict`` (a call that differs from the base needs an answer) or
      ``lenient`` (it takes the base's answer at the same step; comparability becomes
      ``partial``);
    * ``max_steps``: most model calls the replay may make (``None``: no limit);
    * ``temperature``: when set, the temperature option of every model request from the
      checkpoint on;
    * ``require_fixtures``: a divergent call with no answer opens a requirement and
      pauses (``True``, default) or fails the replay (``False``);
    * ``max_tool_calls``: the tool-call budget (``None``: no limit); the call over budget
      is denied (:class:`~core.errors.PolicyDenied`), as in :class:`core.replay.session.Harness`;
    * ``executor``: the executor the branch runs with when none is named on the command
      line — ``module:function`` (wired code), ``cmd:CMD ARGS…`` (the agent's own command
      through the model-API proxy, docs/proxy.md); being written in a file, it runs only
      with the user's consent (``--trust-executor``, or a confirmation in the app), as
      the recording's ``metadata.executor`` does;
    * ``live_model``: the model a live model call asks (``model: live``) instead of the
      recorded one — "what would model Y have done from here?"; required when the
      recording's model is ``unknown``; each such call's reason names the swap;
    * ``user_model``: a live *user-simulator* model (tau-bench's design) that answers
      the person's turns after the branch diverged, through the live executor's
      ``live_model`` (the provider executor), from the base's task instruction; each
      such turn is an interrupt event marked ``simulated_by`` (answer source ``live``);
      without it those turns are ``user`` requirements;
    * ``key_exclusions``: JSON Pointers into a model request that matching ignores
      (``/messages/0/content``; ``*`` = any one segment; :mod:`core.replay.matching`);
      a replay matched with them is at most ``partial``, and lists them.
    """

    model: Literal["recorded", "fixture", "live"] = "recorded"
    tool: Literal["recorded", "fixture", "live"] = "recorded"
    drift: Literal["strict", "lenient"] = "strict"
    max_steps: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0)
    require_fixtures: bool = True
    max_tool_calls: int | None = Field(default=None, ge=0)
    executor: str | None = None
    key_exclusions: list[str] | None = None
    live_model: str | None = Field(default=None, min_length=1)
    user_model: str | None = Field(default=None, min_length=1)

    @field_validator("key_exclusions")
    @classmethod
    def _pointers(cls, v: list[str] | None) -> list[str] | None:
        from .matching import check_exclusion

        return None if not v else [check_exclusion(p) for p in v]

    @field_validator("executor")
    @classmethod
    def _executor_spec(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("cmd:"):
            if not v[4:].strip():
                raise ValueError("executor 'cmd:' names no command (write cmd:CMD ARGS…)")
            return v
        if v.startswith("provider:"):
            from ..proxy.provider import parse_provider_spec

            parse_provider_spec(v)
            return v
        mod, sep, fn = v.partition(":")
        if not sep or not mod or not fn:
            raise ValueError(f"executor {v!r} must be written module:function or cmd:CMD ARGS…")
        return v

    @property
    def wants_live(self) -> bool:
        """True when either boundary, or a person's turn (``user_model``), may be
        answered by an executor."""
        return self.model == "live" or self.tool == "live" or self.user_model is not None


# --------------------------------------------------------------------------- branch


_BRANCH_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


class BaseRef(_Model):
    """The base run of a branch: ``path`` as given and the recording ``digest``."""

    path: str
    digest: str


class Branch(_Model):
    """A branch: ``id``, ``base`` (path + digest), ``checkpoint`` (base seq), ``label``,
    ``parent`` (branch id or ``None``), ``interventions``, ``policy``, ``created_at``
    (RFC 3339). Saved as JSON (:func:`save_branch`) and in the workspace."""

    format: Literal["chassis.branch"] = "chassis.branch"
    id: str
    base: BaseRef
    checkpoint: int = Field(ge=0)
    label: str | None = None
    parent: str | None = None
    interventions: list[Intervention] = Field(default_factory=list)
    policy: Policy = Field(default_factory=Policy)
    created_at: str

    @model_validator(mode="after")
    def _identity(self) -> Branch:
        for name, value in (("id", self.id), ("parent", self.parent)):
            if value is not None and not _BRANCH_ID.fullmatch(value):
                raise ValueError(
                    f"{name} {value!r} is not a branch id (letters, digits, '.', '_', '-'; "
                    "no '/', at most 128 characters, not starting with '.')"
                )
        if self.parent is not None and self.parent == self.id:
            raise ValueError(f"branch {self.id} cannot be its own parent")
        try:
            when = datetime.fromisoformat(self.created_at)
        except ValueError:
            when = None
        if when is None or when.tzinfo is None or "T" not in self.created_at:
            raise ValueError(f"created_at {self.created_at!r} is not an RFC 3339 date-time (e.g. 2026-01-31T12:00:00Z)")
        return self

    def dumps(self) -> bytes:
        """The branch as indented JSON bytes."""
        return dumps(self.to_json_obj(), orjson.OPT_INDENT_2) + b"\n"

    def is_resolved_for(self, base: Recording) -> bool:
        """Whether this branch was already validated against ``base``: ``False`` for a
        plain branch; a :class:`ResolvedBranch` says whether ``base`` is the recording it
        was resolved with (same digest). The engine validates a branch only when not."""
        return False


class ResolvedBranch(Branch):
    """A branch parsed and validated once against one base (:func:`resolve_branch`).

    It is a :class:`Branch` (every function taking a branch takes it; its JSON is the
    branch's), frozen, plus ``base_digest`` — the digest of the base it was validated
    against (:func:`core.record.io.recording_digest`, the one the workspace stores that
    base under) — and ``source``, where it came from (a file path, ``branch ID of the
    workspace PATH``, ``new branch of PATH``, ``<branch JSON>``) for messages. The replay
    engine and :func:`core.replay.replays.start_replay` run it without validating it
    again. A changed copy (``model_copy(update=...)``) is not re-validated: resolve the
    change instead.
    """

    model_config = ConfigDict(frozen=True)

    _base_digest: str = PrivateAttr(default="")
    _source: str = PrivateAttr(default="")

    @classmethod
    def _of(cls, branch: Branch, *, base_digest: str, source: str) -> ResolvedBranch:
        fields = {name: getattr(branch, name) for name in Branch.model_fields}
        fields["interventions"] = list(branch.interventions)
        out = cls.model_construct(_fields_set=set(branch.model_fields_set), **fields)
        out._base_digest = base_digest
        out._source = source
        return out

    @property
    def base_digest(self) -> str:
        """``sha256:<hex>`` of the base this branch was validated against."""
        return self._base_digest

    @property
    def source(self) -> str:
        """Where the branch came from, as messages name it."""
        return self._source

    def is_resolved_for(self, base: Recording) -> bool:
        """``True`` when ``base`` is the recording this branch was validated against
        (its digest, computed when the recording has none, is :attr:`base_digest`)."""
        return recording_digest(base) == self._base_digest


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _pydantic_reason(exc: ValidationError) -> tuple[str, str]:
    """``(JSON Pointer, reason)`` of the first pydantic error, in our words."""
    err = exc.errors(include_url=False)[0]
    raw_loc = list(err.get("loc", ()))
    if raw_loc and raw_loc[0] in _KINDS:
        raw_loc = raw_loc[1:]
    path = "/" + "/".join(str(p) for p in raw_loc) if raw_loc else "/"
    typ = err.get("type")
    if typ == "union_tag_invalid":
        ctx = err.get("ctx", {})
        reason = f"unknown intervention kind {ctx.get('tag')!r} (expected one of {ctx.get('expected_tags')})"
    elif typ == "union_tag_not_found":
        reason = "intervention has no 'kind'"
    elif typ == "missing":
        reason = f"missing required field {raw_loc[-1]!r}" if raw_loc else "missing field"
    elif typ == "extra_forbidden":
        reason = f"unknown field {raw_loc[-1]!r}"
    else:
        reason = err.get("msg", "invalid value")
        reason = reason.removeprefix("Value error, ")
    return path, reason


#: a branch file's own structure: each intervention (and every other member) is one JSON
#: value for the nesting limit (core.record.nesting.MAX_DEPTH), as in its intervention file
BRANCH_VALUES: Pattern = {"interventions": Each(VALUE)}


def _read_json(path: Path, what: str) -> Any:
    data = read_input(path, what=f"{what} file", limit=USER_JSON_LIMIT, error=BranchError)
    return loads_user_json(data, str(path), BranchError, values=BRANCH_VALUES if what == "branch" else VALUE)


def parse_interventions(obj: Any, *, source: str = "<interventions>") -> list[Any]:
    """Parse one intervention object or a JSON list of them. Raises BranchError naming
    ``source``, the JSON Pointer and the reason."""
    items = obj if isinstance(obj, list) else [obj]
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise BranchError(f"{source}: intervention {i}: expected a JSON object, got {type(item).__name__}")
        try:
            out.append(_INTERVENTION.validate_python(item, strict=True))
        except ValidationError as exc:
            path, reason = _pydantic_reason(exc)
            raise BranchError(f"{source}: intervention {i} at {path}: {reason}") from None
    return out


def load_interventions(path: Path) -> list[Any]:
    """Read an intervention file (one object or a list; ``[]`` is valid)."""
    return parse_interventions(_read_json(path, "intervention"), source=str(path))


def load_policy(path: Path) -> Policy:
    """Read a policy JSON file. Raises BranchError naming the file, field and reason."""
    obj = _read_json(path, "policy")
    if not isinstance(obj, dict):
        raise BranchError(f"{path}: a policy must be a JSON object")
    try:
        return Policy.model_validate(obj, strict=True)
    except ValidationError as exc:
        where, reason = _pydantic_reason(exc)
        raise BranchError(f"{path}: policy at {where}: {reason}") from None


def branch_from_dict(obj: Any, *, source: str = "<branch>") -> Branch:
    """Validate a parsed branch document. Raises BranchError (file, JSON Pointer, reason)."""
    if not isinstance(obj, dict):
        raise BranchError(f"{source}: a branch must be a JSON object")
    if obj.get("format", "chassis.branch") != "chassis.branch":
        raise BranchError(f"{source}: not a branch file (format {obj.get('format')!r})")
    try:
        return Branch.model_validate(obj, strict=True)
    except ValidationError as exc:
        where, reason = _pydantic_reason(exc)
        raise BranchError(f"{source}: at {where}: {reason}") from None


def load_branch(path: Path) -> Branch:
    """Read a branch JSON file (shape only; see :func:`validate_branch`)."""
    return branch_from_dict(_read_json(path, "branch"), source=str(path))


def save_branch(branch: Branch, path: Path) -> None:
    """Write the branch JSON atomically, redacted (docs/format.md, "Redaction")."""
    atomic_write_bytes(path, _redacted_branch(branch, str(path)).dumps())


# --------------------------------------------------------------------------- validation

_REASONING_TYPES = {"thinking", "redacted_thinking", "reasoning"}
_SIGNATURE_FIELDS = ("signature", "encrypted_content", "data", "thought_signature")


def signed_reasoning_parts(message: ChatMessage | None) -> list[Any]:
    """The provider-signed reasoning blocks of a message: content parts whose ``type``
    is ``thinking``, ``redacted_thinking`` or ``reasoning`` and that carry a signature
    (``signature``, ``encrypted_content``, ``data`` or ``thought_signature``)."""
    if message is None or not isinstance(message.content, list):
        return []
    out = []
    for part in message.content:
        if isinstance(part, dict) and part.get("type") in _REASONING_TYPES:
            if any(part.get(f) for f in _SIGNATURE_FIELDS):
                out.append(part)
    return out


def _base_index(base: Recording) -> tuple[dict[int, Any], list[ModelRecord]]:
    by_seq = {r.seq: r for r in base.records}
    models = [r for r in base.records if type(r) is ModelRecord]
    return by_seq, models


def validate_branch(
    branch: Branch, base: Recording, *, sources: Sequence[tuple[str, int] | None] | None = None
) -> None:
    """Check the branch against its base (SPEC "Replay engine": interventions); raise
    :class:`BranchError` on the first problem, naming the intervention index, its target
    and the reason.

    Rules: the branch's base digest, when it has one, must be the base's; the checkpoint
    must be the seq of a base record; ``seq`` targets must exist, be of the right kind and
    not lie before the checkpoint; ``step`` targets must be a model call of the base at or
    after the checkpoint; ``tool`` targets must name a tool the base knows; ``messages``
    needs a model request at or after the checkpoint and an index inside it; signed
    reasoning blocks may not be edited.

    ``sources``: for each intervention, ``(file, index in that file)`` — or ``None`` — so
    an error names the file the intervention was read from and its index there
    (``fix.json: intervention 0 (...) against base.json: ...``) instead of its index in
    the branch. Every intervention is checked against the base alone, so checking the
    whole branch once finds the same first problem as checking each file by itself.
    """
    if branch.base.digest and base.digest and branch.base.digest != base.digest:
        raise BranchError(
            f"branch {branch.id}: base digest {branch.base.digest} does not match the recording given ({base.digest})"
        )
    by_seq, models = _base_index(base)
    if branch.checkpoint not in by_seq:
        last = base.records[-1].seq if base.records else None
        raise BranchError(
            f"branch {branch.id}: checkpoint {branch.checkpoint} is not the seq of a record of the base "
            f"{branch.base.path} "
            + (f"(seqs run {base.records[0].seq}..{last})" if last is not None else "(it has no records)")
        )
    cp = branch.checkpoint
    after_models = [m for m in models if m.seq >= cp]
    first_step_after = len(models) - len(after_models)
    known_tools: set[str] = set()
    for r in base.records:
        if type(r) is ToolRecord:
            known_tools.add(r.tool)
        elif type(r) is ModelRecord:
            for t in r.request.tools:
                if isinstance(t, dict):
                    name = t.get("name") or (t.get("function") or {}).get("name")
                    if isinstance(name, str):
                        known_tools.add(name)
            if r.response:
                for tc in r.response.message.tool_calls or []:
                    known_tools.add(tc.name)

    for i, iv in enumerate(branch.interventions):
        src = sources[i] if sources is not None and i < len(sources) else None
        where = (
            f"{src[0]}: intervention {src[1]} ({iv.describe()}) against {branch.base.path}"
            if src is not None
            else f"intervention {i} ({iv.describe()}) against {branch.base.path}"
        )
        if isinstance(iv, ToolResultIntervention):
            if iv.seq is not None:
                target = by_seq.get(iv.seq)
                if target is None:
                    raise BranchError(f"{where}: no base record has seq {iv.seq}")
                if type(target) is not ToolRecord:
                    raise BranchError(f"{where}: base record {iv.seq} is a {target.kind} record, not a tool call")
                if iv.seq < cp:
                    raise BranchError(f"{where}: seq {iv.seq} is before the checkpoint {cp}")
            elif iv.tool not in known_tools:
                raise BranchError(f"{where}: the base never uses or offers a tool named {iv.tool!r}")
        elif isinstance(iv, ModelResponseIntervention):
            if iv.seq is not None:
                target = by_seq.get(iv.seq)
                if target is None:
                    raise BranchError(f"{where}: no base record has seq {iv.seq}")
                if type(target) is not ModelRecord:
                    raise BranchError(f"{where}: base record {iv.seq} is a {target.kind} record, not a model call")
                if iv.seq < cp:
                    raise BranchError(f"{where}: seq {iv.seq} is before the checkpoint {cp}")
            else:
                assert iv.step is not None  # the model validator requires exactly one of seq / step
                if iv.step >= len(models):
                    raise BranchError(f"{where}: the base has {len(models)} model call(s) (steps 0..{len(models) - 1})")
                if iv.step < first_step_after:
                    raise BranchError(
                        f"{where}: step {iv.step} (seq {models[iv.step].seq}) is before the checkpoint {cp}"
                    )
                target = models[iv.step]
            old = signed_reasoning_parts(target.response.message if target.response else None)
            new = signed_reasoning_parts(iv.response.message)
            if new != old and (old or new):
                raise BranchError(
                    f"{where}: refused: it edits provider-signed reasoning blocks; the provider "
                    "verifies their signature, so an edited block cannot be replayed honestly "
                    "(keep the blocks exactly as recorded, or intervene on a later step)"
                )
        elif isinstance(iv, MessagesIntervention):
            if not after_models:
                raise BranchError(f"{where}: no model request at or after the checkpoint {cp}")
            nxt = after_models[0].request.messages
            try:
                iv.apply(nxt)  # raises on an index the request does not have
            except BranchError as exc:
                raise BranchError(f"{where}: {exc} at seq {after_models[0].seq}") from None
            if iv.op in ("replace", "remove"):
                assert iv.index is not None  # the model validator requires index for replace / remove
                victim = nxt[iv.index]
                if signed_reasoning_parts(victim):
                    raise BranchError(
                        f"{where}: refused: message {iv.index} of the request at seq "
                        f"{after_models[0].seq} holds provider-signed reasoning blocks, which "
                        "cannot be edited or removed honestly"
                    )
            for m in iv.messages:
                if signed_reasoning_parts(m):
                    raise BranchError(f"{where}: refused: new messages may not carry provider-signed reasoning blocks")
        elif isinstance(iv, OptionsIntervention):
            if not after_models:
                raise BranchError(f"{where}: no model request at or after the checkpoint {cp}")
        elif isinstance(iv, ToolPolicyIntervention):
            if iv.tool not in known_tools:
                raise BranchError(f"{where}: the base never uses or offers a tool named {iv.tool!r}")


def _produced_by(base: Recording) -> str | None:
    """The id of the branch whose replay produced ``base`` (``metadata.replay.branch.id``
    of replay events), or ``None``."""
    replay = base.metadata.get("replay")
    produced_by = replay.get("branch") if isinstance(replay, dict) else None
    if isinstance(produced_by, dict) and isinstance(produced_by.get("id"), str):
        return str(produced_by["id"])
    return None


def _build_branch(
    base: Recording,
    base_path: str,
    *,
    at: int,
    interventions: Sequence[Any],
    policy: Policy | None,
    label: str | None,
    parent: str | None,
    branch_id: str | None,
) -> Branch:
    """The branch :func:`new_branch` describes, shaped but not yet validated against ``base``."""
    if parent is None:
        parent = _produced_by(base)
    for what, text in (("the base's path", base_path), ("the label", label), ("the parent", parent)):
        if invalid_text(text) is not None:
            raise BranchError(
                f"new branch of {printable(base_path)}: {what} '{printable(str(text))}' is not valid UTF-8 text "
                "(bytes of another encoding, e.g. a file name): a branch stores it as text"
            )
    if at < 0:
        raise BranchError(f"checkpoint {at} is not the seq of a record of {base_path} (seqs are >= 0)")
    try:
        return Branch(
            id=branch_id or "br-" + uuid.uuid4().hex[:12],
            base=BaseRef(path=str(base_path), digest=base.digest or ""),
            checkpoint=at,
            label=label,
            parent=parent,
            interventions=list(interventions),
            policy=policy or Policy(),
            created_at=_now(),
        )
    except ValidationError as exc:
        where, reason = _pydantic_reason(exc)
        raise BranchError(f"new branch of {base_path}: at {where}: {reason}") from None


def new_branch(
    base: Recording,
    base_path: str,
    *,
    at: int,
    interventions: list[Any] | None = None,
    policy: Policy | None = None,
    label: str | None = None,
    parent: str | None = None,
    branch_id: str | None = None,
) -> Branch:
    """Create and validate a branch of ``base`` at checkpoint ``at``.

    When ``base`` is itself the events of a replay (``metadata.replay.branch.id``) and no
    ``parent`` is given, the parent is the branch that produced it — so branching a
    replay grows the tree.

    Raises:
        BranchError: the checkpoint or an intervention is invalid against ``base``.
    """
    branch = _build_branch(
        base,
        base_path,
        at=at,
        interventions=interventions or [],
        policy=policy,
        label=label,
        parent=parent,
        branch_id=branch_id,
    )
    validate_branch(branch, base)
    return branch


# --------------------------------------------------------------------------- resolving


@dataclass(frozen=True)
class InterventionFile:
    """The interventions read from one file (one object or a JSON list; ``[]`` is valid):
    ``path`` as given and the parsed ``interventions``. In a :class:`BranchDraft`,
    validation errors name ``path`` and the index inside the file."""

    path: str
    interventions: tuple[Any, ...]

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> InterventionFile:
        """Read and parse an intervention file (strict user JSON, see
        :func:`load_interventions`). Raises BranchError naming the file, the JSON Pointer
        and the reason."""
        return cls(str(path), tuple(load_interventions(Path(path))))


@dataclass(frozen=True)
class BranchDraft:
    """A branch to create (what ``branch new`` takes), for :func:`resolve_branch`.

    ``base_path``: the base recording's path as the branch will name it; ``at``: the
    checkpoint (a base seq); ``interventions``: intervention objects and
    :class:`InterventionFile` groups, in order; ``policy``, ``label``, ``parent`` (a branch
    id; by default the branch that produced the base, when the base is replay events),
    ``branch_id`` (default ``br-`` + 12 random hex digits). Built and validated by
    :func:`resolve_branch`, once.
    """

    base_path: str
    at: int
    interventions: Sequence[Any] = ()
    policy: Policy | None = None
    label: str | None = None
    parent: str | None = None
    branch_id: str | None = None


#: what :func:`resolve_branch` accepts: a :class:`Branch` (a :class:`ResolvedBranch` of
#: the same base comes back as is), a :class:`BranchDraft`, a parsed branch document
#: (a mapping), branch JSON text (bytes), or a branch file path / stored branch id (str)
BranchSpec: TypeAlias = Branch | BranchDraft | Mapping[str, Any] | bytes | str | os.PathLike[str]


def _is_file(p: Path) -> bool:
    try:
        return p.exists()
    except OSError:  # a name the OS cannot even look up (too long, say) is no file
        return False


def _draft_branch(draft: BranchDraft, base: Recording) -> tuple[Branch, list[tuple[str, int] | None]]:
    """The branch of a draft and, per intervention, the file and index it came from."""
    flat: list[Any] = []
    sources: list[tuple[str, int] | None] = []
    for item in draft.interventions:
        if isinstance(item, InterventionFile):
            flat.extend(item.interventions)
            sources.extend((item.path, j) for j in range(len(item.interventions)))
        else:
            flat.append(item)
            sources.append(None)
    branch = _build_branch(
        base,
        draft.base_path,
        at=draft.at,
        interventions=flat,
        policy=draft.policy,
        label=draft.label,
        parent=draft.parent,
        branch_id=draft.branch_id,
    )
    return branch, sources


def _redacted_branch(branch: Branch, source: str) -> Branch:
    """``branch`` redacted (docs/format.md, "Redaction"): interventions built in code are
    redacted like those read from a file, so the branch a replay runs is the one stored."""
    red, changed = redact(branch.to_json_obj())
    return branch_from_dict(red, source=source) if changed else branch


def resolve_branch(
    workspace: Workspace | None,
    spec: BranchSpec,
    base: Recording,
) -> ResolvedBranch:
    """Parse a branch, validate it against ``base`` once (digest included), and return
    it as a :class:`ResolvedBranch` the engine runs without validating again (SPEC
    "Replay engine": branch, interventions; "Application": ``branch new``, ``replay
    --branch``).

    ``spec`` (see :data:`BranchSpec`):

    * a :class:`BranchDraft` — a new branch (checkpoint, interventions, policy, label,
      parent); an invalid intervention read from an :class:`InterventionFile` is named by
      that file and its index there;
    * a branch file path (``str`` or path-like) — read strictly (errors name the file);
      a ``str`` that is no file and does not end in ``.json`` is a branch id stored in
      ``workspace``;
    * a parsed branch document (mapping) or branch JSON text (bytes);
    * a :class:`Branch` (a :class:`ResolvedBranch` already resolved for ``base`` is
      returned as is).

    ``workspace`` (or ``None``): where stored ids are looked up and where ``parent`` must
    be a branch (a stored branch's own parent is not checked again). With ``None``,
    ``parent`` is not checked — :meth:`core.workspace.Workspace.add_branch` checks it
    when the branch is stored.

    Redaction (docs/format.md, "Redaction"): ``base`` is redacted in place first
    (:func:`core.record.recording_redaction.ensure_redacted`; a recording this product
    saved is unchanged) and the branch is redacted before it is validated, so the digest
    the branch names, the base the workspace stores and the branch the replay runs are
    the redacted ones.

    Raises:
        BranchError: the file cannot be read or is not a branch (file, JSON Pointer,
            reason), the parent is not a branch of the workspace, a stored id was given
            without a workspace, or the branch is invalid against ``base`` — wrong base
            digest, checkpoint or intervention (its index and target; the file it came
            from). WorkspaceError: the stored branch id is unknown, or the workspace is
            damaged.
        CanonicalizationError: ``base`` has no digest and holds a value without a
            canonical form.
    """
    ensure_redacted(base)  # a base written elsewhere is redacted before anything names its digest
    if isinstance(spec, Branch) and spec.is_resolved_for(base):
        assert isinstance(spec, ResolvedBranch)  # only a resolved branch says it is
        return spec
    sources: list[tuple[str, int] | None] | None = None
    prefix: str | None = None  # put before validation errors, naming where the branch came from
    check_parent = workspace is not None
    if isinstance(spec, BranchDraft):
        branch, sources = _draft_branch(spec, base)
        source = f"new branch of {spec.base_path}"
    elif isinstance(spec, Branch):
        branch, source = spec, f"branch {spec.id}"
    elif isinstance(spec, Mapping):
        source = prefix = "<branch>"
        branch = branch_from_dict(dict(spec), source=source)
    elif isinstance(spec, (bytes, bytearray)):
        source = prefix = "<branch JSON>"
        branch = branch_from_dict(
            loads_user_json(bytes(spec), source, BranchError, values=BRANCH_VALUES), source=source
        )
    else:
        path = Path(spec)
        if _is_file(path):
            branch = load_branch(path)
            source = prefix = str(spec)
        elif isinstance(spec, str) and not spec.endswith(".json") and workspace is not None:
            branch = workspace.get_branch(spec)
            source = f"branch {spec} of the workspace {workspace.path}"
            check_parent = False  # stored: its parent was checked then
        elif isinstance(spec, str) and not spec.endswith(".json"):
            raise BranchError(f"{spec}: no such branch file (and no workspace to look up a branch id in)")
        else:
            raise BranchError(f"{spec}: no such branch file")
    branch = _redacted_branch(branch, prefix or source)
    if check_parent and workspace is not None and branch.parent is not None:
        if not workspace.has_branch(branch.parent):
            raise BranchError(
                f"{prefix or source}: parent {branch.parent!r} is not a branch of the workspace {workspace.path}"
            )
    try:
        validate_branch(branch, base, sources=sources)
    except BranchError as exc:
        if prefix is None:
            raise
        raise BranchError(f"{prefix}: {exc}") from None
    return ResolvedBranch._of(branch, base_digest=recording_digest(base), source=source)
