"""The replay engine: run a branch of a base recording and say how it compares.

Rules (SPEC "Replay engine" and the second seed document):

1. A replay record is created ``queued``, becomes ``running``, and ends ``completed``,
   ``paused`` (an open requirement) or ``failed`` (an error, or a live policy with no
   executor — checked before anything runs, never a network call).
2. Calls before the checkpoint are answered as recorded. From the checkpoint the agent
   loop is walked: by the wired executor's own code (``executor.run(engine, task)``; the
   engine is its :class:`~core.replay.boundary.AgentRuntime`), or, with no executor, by the
   *generic chat loop*: while the branch still equals the base it re-issues the base's
   calls; from the first divergence it rebuilds each model request's messages from the
   branch transcript (the previous request's messages + the branch's response + the
   branch's tool results, as :func:`tool_message` renders them), with the base's tools,
   stop sequences and options at the same step.
3. Every call is answered, in order, from: an intervention → an unconsumed recorded call
   with the same canonical key (per-key cursor) → a fixture → the base's answer at the
   same step when drift is ``lenient`` (comparability ``partial``) → the wired executor
   when the policy is ``live``. Each answer is tagged with its source: ``recorded``,
   ``intervention``, ``fixture``, ``drift``, ``live`` (``policy`` for a denied call).
   With policy ``fixture`` recorded calls do not answer from the checkpoint on.
4. No answer: a requirement is opened and the replay pauses (``require_fixtures``), or
   the replay fails with :class:`~core.errors.ReplayMismatch`. Never an implicit live call.
5. Authorization, approval and budget run on every tool call, answered from the recording
   or not, in the replay session's order (:class:`core.replay.session.Harness`): ``before`` hook
   → authorization (``tool_policy`` deny, ``authorize`` hook) → approval
   (``tool_policy`` require_approval — an approval requirement until approved — and the
   ``approve`` hook) → budget (``policy.max_tool_calls``) → a ``tool.execute`` span
   (tagged ``replayed`` and ``source``) → ``after`` hook. A denial raises
   :class:`~core.errors.PolicyDenied` to the agent exactly as live.
6. The loop ends on a final response (no tool calls), ``max_steps`` model calls (with no
   ``max_steps``, a safety net of 10 x the base's model calls + 100), or an error.

Outputs (:class:`ReplayOutcome`): the record's status, comparability, first divergence,
pause/error; the *replay events* — themselves a valid format-v1 recording
(``session.mode = replay``, every record ``replayed: true``, answers from the executor
``live_fallback: true``, ``metadata.replay`` linking base and branch and listing each
non-recorded answer's source); the requirement that paused it; fixture uses.

Determinism: the events hold no replay id and no wall-clock time — an answer the
executor gave live has ``duration_seconds: null`` in the events, its measured duration is
kept in :attr:`ReplayOutcome.live_durations` (and the replay record's attempt) — and a
resume re-runs the branch from the start with the same inputs (plus the live answers of
earlier attempts, reused so no side effect is repeated), so resuming after attaching
fixtures gives byte-identical events to a fresh replay with the same fixtures, provided
the executor answers the same thing to the same call (a deterministic executor, like the
sample agent's). The replay record lives in :mod:`core.replay.replay_record`, the dry run in
:mod:`core.replay.dry_run`, and running replays in a workspace (start, resume) in
:mod:`core.replay.replays`.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import (
    BranchError,
    CanonicalizationError,
    InspectorError,
    PolicyDenied,
    ReplayMismatch,
)
from ..record.canonical import args_hash as compute_args_hash
from ..record.canonical import model_key, tool_key
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    ToolRecord,
    ToolResult,
)
from .boundary import Executor
from .branch import (
    Branch,
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    ToolPolicyIntervention,
    ToolResultIntervention,
    validate_branch,
)
from .fixtures import (
    FixtureGateway,
    Requirement,
    nearest_model_call,
    nearest_tool_call,
)
from .replay_record import (
    ANSWER_SOURCES,
    Comparability,
    FirstDivergence,
    ReplayErrorInfo,
    first_divergence,
)

__all__ = [
    "ModelCallError",
    "ReplayEngine",
    "ReplayOutcome",
    "ToolHooks",
    "tool_message",
]

_ATTRIBUTION = ("interrupt", "snapshot", "lifecycle")


# =========================================================================== engine internals


class ModelCallError(InspectorError, RuntimeError):
    """A model call answered with an error (recorded, fixture or live): the agent sees
    this exception. ``error`` is the :class:`~core.record.recording.ErrorInfo`."""

    title = "model error"

    def __init__(self, model: str, error: ErrorInfo) -> None:
        self.model = model
        self.error = error
        super().__init__(f"model {model!r} failed: {error.type}: {error.message}")


class _Halt(BaseException):
    """Stops the agent loop from inside a runtime call (a BaseException, so an agent's
    ``except Exception`` cannot swallow it). ``reason``: ``paused`` | ``max_steps`` |
    ``failed``."""

    def __init__(
        self, reason: str, requirement: Requirement | None = None, error: ReplayErrorInfo | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.requirement = requirement
        self.error = error


@dataclass
class ToolHooks:
    """Optional tool-boundary hooks, as in :class:`core.replay.session.Harness`: ``before`` and
    ``after`` observers, ``authorize`` (raise :class:`PolicyDenied` or return ``False``
    to deny), ``approve`` (return ``False`` to deny). Each receives a
    :class:`core.replay.session.ToolInvocation`; ``after`` also the result."""

    before: Callable[[Any], Any] | None = None
    authorize: Callable[[Any], Any] | None = None
    approve: Callable[[Any], bool] | None = None
    after: Callable[[Any, ToolResult], Any] | None = None


def _take_call(open_calls: list[Any], record: ToolRecord) -> Any:
    """Remove and return the tool call of ``open_calls`` a tool record answers: same id,
    else (ids renamed by an importer) the first with the same name; ``None`` if none."""
    for i, tc in enumerate(open_calls):
        if record.tool_call_id is not None and tc.id == record.tool_call_id:
            return open_calls.pop(i)
    for i, tc in enumerate(open_calls):
        if tc.name == record.tool:
            return open_calls.pop(i)
    return None


def tool_message(tool_call_id: str | None, name: str, result: ToolResult) -> ChatMessage:
    """How the generic chat loop puts a tool result in the transcript: a ``tool`` message
    whose content is ``ERROR <type>: <message>`` for an error, the content itself when it
    is a string, else its JSON with sorted keys (the sample agent's rendering too)."""
    if result.error is not None:
        text = f"ERROR {result.error.type}: {result.error.message}"
    elif isinstance(result.content, str):
        text = result.content
    else:
        text = orjson.dumps(result.content, option=orjson.OPT_SORT_KEYS).decode()
    return ChatMessage(role="tool", content=text, tool_call_id=tool_call_id, name=name)


@dataclass
class ReplayOutcome:
    """What one engine run produced: ``status``, ``stop_reason``, ``comparability``,
    ``first_divergence``, ``error``, ``requirement`` (the one it paused on), ``events``
    (a :class:`Recording`), ``sources`` (``{seq: source}`` for every event record),
    ``fixture_uses``, ``answers`` (count per source), ``steps``, ``output``,
    ``interventions_applied``, ``live_durations`` (``{seq: seconds}`` measured around
    each executor call this run made — kept here, not in the events, whose live records
    carry ``duration_seconds: null``; answers reused from an earlier attempt are not
    measured again)."""

    status: str
    stop_reason: str
    comparability: Comparability
    first_divergence: FirstDivergence | None
    error: ReplayErrorInfo | None
    requirement: Requirement | None
    events: Recording
    sources: dict[int, str]
    fixture_uses: list[dict[str, Any]]
    answers: dict[str, int]
    steps: int
    output: Any
    interventions_applied: list[int]
    live_durations: dict[int, float] = field(default_factory=dict)


class ReplayEngine:
    """Runs one branch of one base recording (rules in the module docstring).

    Args:
        base: the base :class:`Recording` (verified).
        branch: the :class:`Branch` (validated against ``base`` here; BranchError).
        replay_id: the replay's id (requirement ids derive from it; not in the events).
        fixtures: a :class:`FixtureGateway` (fixtures already filtered or not: the gateway
            applies scopes with this branch and replay id).
        executor: a wired :class:`~core.replay.boundary.Executor`, or ``None``.
        executor_name: its ``module:function`` (stored in the events' metadata).
        decisions: earlier requirements of this replay by id (approvals, waivers).
        live_cache: answers obtained live by earlier attempts: records of a previous
            events recording with ``live_fallback`` set; reused before calling the
            executor so a resume never repeats a side effect.
        hooks: :class:`ToolHooks`.
        tracer: a :class:`core.replay.session.SpanRecorder` (or compatible); ``None`` = none.
        on_event: called with ``(record, source)`` after each event is produced (progress
            for a UI; keep it cheap).
        cancel: polled after each event; returning ``True`` stops the replay as
            ``failed`` with error type ``Cancelled``.

    Use :meth:`run` once.
    """

    def __init__(
        self,
        base: Recording,
        branch: Branch,
        *,
        replay_id: str = "replay",
        fixtures: FixtureGateway | None = None,
        executor: Executor | None = None,
        executor_name: str | None = None,
        decisions: dict[str, Requirement] | None = None,
        live_cache: Iterable[Any] = (),
        hooks: ToolHooks | None = None,
        tracer: Any = None,
        on_event: Callable[[Any, str], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> None:
        # indexing allocates a container per call: pause the cyclic GC (see run())
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            validate_branch(branch, base)
            self.base = base
            self.branch = branch
            self.policy = branch.policy
            self.replay_id = replay_id
            self.fixtures = fixtures or FixtureGateway()
            self.executor = executor
            self.executor_name = executor_name
            self.decisions = dict(decisions or {})
            self.hooks = hooks or ToolHooks()
            self.tracer = tracer
            self.on_event = on_event
            self.cancel = cancel
            n_models = sum(1 for r in base.records if type(r) is ModelRecord)
            #: most model calls this run may make: ``policy.max_steps``, or a safety net of
            #: 10 x the base's model calls + 100 (a model-wide fixture asking for tools
            #: again and again would otherwise loop forever)
            self.step_limit = branch.policy.max_steps if branch.policy.max_steps is not None else 10 * n_models + 100

            self.base_calls: list[Any] = [r for r in base.records if type(r) is ToolRecord or type(r) is ModelRecord]
            self.base_models: list[ModelRecord] = [r for r in self.base_calls if type(r) is ModelRecord]
            self.cp_pos = sum(1 for r in self.base_calls if r.seq < branch.checkpoint)
            self._cursors: dict[str, deque[int]] = {}
            for pos, r in enumerate(self.base_calls):
                self._cursors.setdefault(self._base_key(pos, r), deque()).append(pos)
            self._consumed = bytearray(len(self.base_calls))
            self._live_cache: dict[tuple[str, str], deque[Any]] = {}
            self._live_durations: dict[int, float] = {}  # seq -> seconds measured this run
            for r in live_cache:
                if getattr(r, "live_fallback", False) and getattr(r, "key", None):
                    self._live_cache.setdefault((r.kind, r.key), deque()).append(r)

            # interventions
            ivs = list(enumerate(branch.interventions))
            self._tool_seq_iv: dict[int, tuple[int, ToolResultIntervention]] = {}
            self._tool_name_iv: dict[str, list[tuple[int, ToolResultIntervention]]] = {}
            self._model_step_iv: dict[int, tuple[int, ModelResponseIntervention]] = {}
            self._messages_iv: list[tuple[int, MessagesIntervention]] = []
            self._options_iv: list[tuple[int, OptionsIntervention]] = []
            self._policy_iv: dict[str, tuple[int, ToolPolicyIntervention]] = {}
            base_pos_of_seq = {r.seq: i for i, r in enumerate(self.base_calls)}
            model_step_of_seq = {r.seq: i for i, r in enumerate(self.base_models)}
            for i, iv in ivs:
                if isinstance(iv, ToolResultIntervention):
                    if iv.seq is not None:
                        self._tool_seq_iv[base_pos_of_seq[iv.seq]] = (i, iv)
                    else:
                        assert iv.tool is not None  # the model validator requires seq or tool
                        self._tool_name_iv.setdefault(iv.tool, []).append((i, iv))
                elif isinstance(iv, ModelResponseIntervention):
                    if iv.step is not None:
                        step = iv.step
                    else:
                        assert iv.seq is not None  # the model validator requires exactly one of seq / step
                        step = model_step_of_seq[iv.seq]
                    self._model_step_iv[step] = (i, iv)
                elif isinstance(iv, MessagesIntervention):
                    self._messages_iv.append((i, iv))
                elif isinstance(iv, OptionsIntervention):
                    self._options_iv.append((i, iv))
                elif isinstance(iv, ToolPolicyIntervention):
                    self._policy_iv[iv.tool] = (i, iv)
            self._applied: set[int] = set()
            self._messages_done = False

            # run state
            self._pos = 0
            self._step = 0
            self._tool_calls = 0
            self._aligned = True
            self._next_base_attr = 0  # index into base.records of the next attribution candidate
            self._events: list[Any] = []
            self._sources: dict[int, str] = {}
            self._fixture_uses: list[dict[str, Any]] = []
            self._answers: dict[str, int] = dict.fromkeys(ANSWER_SOURCES, 0)
            self._drift_steps: list[int] = []
            self._used_call_ids: set[tuple[str | None, str]] = set()
            self._last_run_id: str | None = None
            self._last_generation_id: str | None = None
            self._ran = False
            self._rebuilt = False  # the generic loop left the base's calls (phase 2)
            self.last_request: ModelRequest | None = None
        finally:
            if was_enabled:
                gc.enable()

    # ------------------------------------------------------------------ keys and cursors

    def _base_key(self, pos: int, r: Any) -> str:
        if r.key is not None:
            key: str = r.key
            return key
        try:
            computed: str = r.compute_key()
            return computed
        except CanonicalizationError:
            return f"uncanonical:{pos}"

    def _peek(self, key: str) -> int | None:
        dq = self._cursors.get(key)
        if not dq:
            return None
        consumed = self._consumed
        while dq and consumed[dq[0]]:
            dq.popleft()
        return dq[0] if dq else None

    def _consume(self, pos: int) -> None:
        self._consumed[pos] = 1

    # ------------------------------------------------------------------ emission

    def _emit_attribution_until(self, seq_limit: int | None) -> None:
        """While aligned, copy base attribution records with seq below ``seq_limit``
        (``None``: all remaining)."""
        recs = self.base.records
        i = self._next_base_attr
        n = len(recs)
        while i < n:
            r = recs[i]
            if seq_limit is not None and r.seq >= seq_limit:
                break
            if r.kind in _ATTRIBUTION:
                self._append(r.model_copy(update={"replayed": True}), "recorded")
            i += 1
        self._next_base_attr = i

    def _skip_base_attr_through(self, seq: int) -> None:
        recs = self.base.records
        i = self._next_base_attr
        while i < len(recs) and recs[i].seq <= seq:
            i += 1
        self._next_base_attr = i

    def _next_seq(self) -> int:
        return self._events[-1].seq + 1 if self._events else 0

    def _append(self, rec: Any, source: str) -> None:
        self._events.append(rec)
        self._sources[rec.seq] = source
        if self.on_event is not None:
            self.on_event(rec, source)
        if self.cancel is not None and self.cancel():
            raise _Halt("failed", error=ReplayErrorInfo(type="Cancelled", message="the replay was cancelled"))
        if rec.run_id is not None:
            self._last_run_id = rec.run_id
        if rec.generation_id is not None:
            self._last_generation_id = rec.generation_id

    def _seq_for(self, pos: int, kind: str) -> tuple[int, Any]:
        """The seq of the event at call position ``pos`` and the base call it stands for
        (while aligned and of the same kind), copying attribution records before it."""
        if self._aligned and pos < len(self.base_calls) and self.base_calls[pos].kind == kind:
            b = self.base_calls[pos]
            self._emit_attribution_until(b.seq)
            self._skip_base_attr_through(b.seq)
            if not self._events or b.seq > self._events[-1].seq:
                return b.seq, b
            return self._next_seq(), b
        return self._next_seq(), None

    def _unique_call_id(self, run_id: str | None, tool_call_id: str | None, seq: int) -> str | None:
        if tool_call_id is None:
            return None
        k = (run_id, tool_call_id)
        if k in self._used_call_ids:
            tool_call_id = f"{tool_call_id}#{seq}"
            k = (run_id, tool_call_id)
        self._used_call_ids.add(k)
        return tool_call_id

    def _count(self, source: str) -> None:
        self._answers[source] += 1

    # ------------------------------------------------------------------ requirements

    def _requirement(
        self,
        kind: str,
        pos: int,
        name: str,
        key: str,
        *,
        arguments: Any = None,
        ahash: str | None = None,
        request: ModelRequest | None = None,
        reason: str,
    ) -> Requirement:
        rid = Requirement.make_id(self.replay_id, pos, kind, key)
        if kind == "model":
            req_json = request.identity() if request is not None else None
            nearest = nearest_model_call(self.base, name, req_json or {}, step=self._step - 1)
        else:
            req_json = None
            near = self.base_calls[pos].seq if pos < len(self.base_calls) else None
            nearest = nearest_tool_call(self.base, name, arguments, near_seq=near)
        return Requirement(
            id=rid,
            replay_id=self.replay_id,
            step=max(self._step - 1, 0),
            position=pos,
            kind=kind,
            name=name,
            arguments=arguments,
            args_hash=ahash or key,
            request=req_json,
            nearest=nearest,
            reason=reason,
        )

    def _no_answer(
        self,
        kind: str,
        pos: int,
        name: str,
        key: str,
        *,
        arguments: Any = None,
        ahash: str | None = None,
        request: ModelRequest | None = None,
    ) -> None:
        """Open a requirement (pause) or fail; never returns."""
        rid = Requirement.make_id(self.replay_id, pos, kind, key)
        prior = self.decisions.get(rid)
        if prior is not None and prior.status == "waived":
            raise _Halt(
                "failed",
                error=ReplayErrorInfo(
                    type="RequirementWaived",
                    message=f"requirement {rid} ({kind} {name}) was waived: the call has no answer",
                ),
            )
        if not self.policy.require_fixtures:
            recorded = sum(1 for r in self.base_calls if r.kind == kind)
            exc = ReplayMismatch(
                kind, key, recorded, "missing", f"{kind} {name!r} at call {pos}; require_fixtures is false"
            )
            raise _Halt("failed", error=ReplayErrorInfo(type="ReplayMismatch", message=str(exc)))
        what = "tool result" if kind == "tool" else "model response"
        req = self._requirement(
            kind,
            pos,
            name,
            key,
            arguments=arguments,
            ahash=ahash,
            request=request,
            reason=f"no recorded call, intervention or fixture answers this {kind} call: attach a {what} fixture",
        )
        raise _Halt("paused", requirement=req)

    # ------------------------------------------------------------------ request transforms

    def _transform(self, request: ModelRequest, pos: int) -> ModelRequest:
        if pos < self.cp_pos:
            return request
        changed = False
        messages = request.messages
        options = request.options
        if self._messages_iv and not self._messages_done:
            self._messages_done = True
            for i, iv in self._messages_iv:
                try:
                    messages = iv.apply(messages)
                except BranchError as exc:
                    raise _Halt(
                        "failed",
                        error=ReplayErrorInfo(type="BranchError", message=f"intervention {i} ({iv.describe()}): {exc}"),
                    ) from None
                self._applied.add(i)
            changed = True
        if self._options_iv or self.policy.temperature is not None:
            new_opts = dict(options)
            for i, opt_iv in self._options_iv:
                new_opts = opt_iv.apply(new_opts)
                self._applied.add(i)
            if self.policy.temperature is not None:
                new_opts["temperature"] = self.policy.temperature
            if new_opts != options:
                options = new_opts
                changed = True
        if not changed:
            return request
        return ModelRequest(messages=messages, tools=request.tools, stop=request.stop, options=options)

    # ------------------------------------------------------------------ AgentRuntime

    def call_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Answer one model call (the :class:`~core.replay.boundary.AgentRuntime` method).

        Raises:
            ModelCallError: the answer is a model error (recorded, fixture or live).
        """
        if not isinstance(request, ModelRequest):
            request = ModelRequest.model_validate(request)
        pos = self._pos
        if self._step >= self.step_limit:
            raise _Halt("max_steps")
        self._pos += 1
        step = self._step
        self._step += 1
        request = self._transform(request, pos)
        self.last_request = request
        base_here = self.base_calls[pos] if pos < len(self.base_calls) else None
        if type(base_here) is ModelRecord and request is base_here.request and base_here.model == model:
            key = self._base_key(pos, base_here)
        else:
            try:
                key = model_key(model, request)
            except CanonicalizationError as exc:
                raise _Halt(
                    "failed",
                    error=ReplayErrorInfo(type="CanonicalizationError", message=f"model request at step {step}: {exc}"),
                ) from None
        after = pos >= self.cp_pos
        response: ModelResponse | None = None
        error: ErrorInfo | None = None
        source = ""
        used_pos: int | None = None
        duration: float | None = None
        live_measured: float | None = None  # kept out of the events (determinism)
        at: str | None = None
        fixture_id: str | None = None

        rec_pos = self._peek(key)
        iv = self._model_step_iv.get(step) if after else None
        if iv is not None:
            idx, mi = iv
            response = mi.response.model_copy(deep=True)
            source = "intervention"
            self._applied.add(idx)
            if rec_pos is not None:
                self._consume(rec_pos)
        elif rec_pos is not None and (not after or self.policy.model != "fixture"):
            self._consume(rec_pos)
            r = self.base_calls[rec_pos]
            response, error, duration, at = r.response, r.error, r.duration_seconds, r.at
            source, used_pos = "recorded", rec_pos
        if not source:
            fx = self.fixtures.match("model", model, key, branch_id=self.branch.id, replay_id=self.replay_id)
            if fx is not None:
                response = fx.model_response()
                source, fixture_id = "fixture", fx.id
        if not source and self.policy.drift == "lenient" and step < len(self.base_models):
            b = self.base_models[step]
            response, error = b.response, b.error
            source = "drift"
            self._drift_steps.append(step)
        if not source and self.policy.model == "live" and self.executor is not None:
            cached = self._live_cache.get(("model", key))
            if cached:
                r = cached.popleft()
                response, error = r.response, r.error
            else:
                t0 = time.perf_counter()
                try:
                    response = self.executor.live_model(model, request)
                    if not isinstance(response, ModelResponse):
                        response = ModelResponse.model_validate(response)
                except Exception as exc:  # the live model failed: recorded as an error
                    error = ErrorInfo(type=type(exc).__name__, message=str(exc))
                live_measured = time.perf_counter() - t0
            source = "live"
        if not source:
            self._no_answer("model", pos, model, key, request=request)

        seq, b = self._seq_for(pos, "model")
        run_id = b.run_id if b is not None else self._last_run_id
        gen_id = b.generation_id if b is not None else self._last_generation_id
        if source == "recorded" and used_pos == pos and b is not None and b.seq == seq:
            rec = b.model_copy(update={"replayed": True})
            if request is not b.request:
                rec = rec.model_copy(update={"request": request, "key": key})
        else:
            rec = ModelRecord(
                seq=seq,
                at=at if source == "recorded" else None,
                run_id=run_id,
                generation_id=gen_id,
                replayed=True,
                live_fallback=source == "live",
                key=key,
                model=model,
                request=request,
                response=response,
                error=error,
                duration_seconds=duration,
            )
        if self.tracer is not None:
            with self.tracer.span(
                "model.call",
                {
                    "model": model,
                    "key": key,
                    "run_id": run_id,
                    "generation_id": gen_id,
                    "replayed": source != "live",
                    "source": source,
                    "step": step,
                },
            ):
                pass
        self._append(rec, source)
        self._count(source)
        if live_measured is not None:
            self._live_durations[seq] = live_measured
        if fixture_id:
            self._fixture_uses.append({"seq": seq, "fixture_id": fixture_id})
        # alignment: same call as the base at this position, with the base's answer
        if self._aligned:
            if (
                b is None
                or key != self._base_key(pos, b)
                or not (used_pos == pos or (rec.response == b.response and rec.error == b.error))
            ):
                self._aligned = False
        if error is not None or response is None:
            raise ModelCallError(model, error or ErrorInfo(type="NoResponse", message="no response"))
        return response

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        """Answer one tool call (the :class:`~core.replay.boundary.AgentRuntime` method).

        Raises:
            PolicyDenied: a ``tool_policy`` deny, a refused approval, the ``authorize``/
                ``approve`` hooks, or the ``max_tool_calls`` budget.
        """
        pos = self._pos
        self._pos += 1
        base_here = self.base_calls[pos] if pos < len(self.base_calls) else None
        if (
            base_here is not None
            and type(base_here) is ToolRecord
            and base_here.tool == name
            and base_here.arguments is arguments
        ):
            key = self._base_key(pos, base_here)
        else:
            try:
                key = tool_key(name, arguments)
            except CanonicalizationError as exc:
                raise _Halt(
                    "failed",
                    error=ReplayErrorInfo(type="CanonicalizationError", message=f"tool {name!r} arguments: {exc}"),
                ) from None
        after = pos >= self.cp_pos
        rec_pos = self._peek(key)

        # authorization, approval, budget: on every call, replayed or not
        denial = self._authorize(name, arguments, tool_call_id, key, pos, after, rec_pos is not None)
        if denial is not None:
            denied = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(denial)))
            self._emit_tool(pos, name, arguments, tool_call_id, key, denied, "policy", None, None, None)
            self._aligned = False
            raise denial

        result: ToolResult | None = None
        source = ""
        used_pos: int | None = None
        duration: float | None = None
        live_measured: float | None = None  # kept out of the events (determinism)
        at: str | None = None
        fixture_id: str | None = None
        if after:
            iv = None
            if rec_pos is not None and rec_pos in self._tool_seq_iv:
                iv = self._tool_seq_iv[rec_pos]
            elif name in self._tool_name_iv:
                try:
                    h = compute_args_hash(arguments)
                except CanonicalizationError:
                    h = None
                for cand in self._tool_name_iv[name]:
                    if cand[1].args_hash is None or cand[1].args_hash == h:
                        iv = cand
            if iv is not None:
                idx, ti = iv
                result = ti.result.model_copy(deep=True)
                source = "intervention"
                self._applied.add(idx)
                if rec_pos is not None:
                    self._consume(rec_pos)
        if not source and rec_pos is not None and (not after or self.policy.tool != "fixture"):
            self._consume(rec_pos)
            r = self.base_calls[rec_pos]
            result, duration, at = r.result, r.duration_seconds, r.at
            source, used_pos = "recorded", rec_pos
        ahash: str | None = None
        if not source:
            try:
                ahash = compute_args_hash(arguments)
            except CanonicalizationError:
                ahash = key
            fx = self.fixtures.match("tool", name, ahash, branch_id=self.branch.id, replay_id=self.replay_id)
            if fx is not None:
                result = fx.tool_result()
                source, fixture_id = "fixture", fx.id
        if not source and self.policy.drift == "lenient":
            b = self.base_calls[pos] if pos < len(self.base_calls) else None
            if b is not None and type(b) is ToolRecord and b.tool == name:
                result = b.result
                source = "drift"
                self._drift_steps.append(self._step)
        if not source and self.policy.tool == "live" and self.executor is not None:
            cached = self._live_cache.get(("tool", key))
            if cached:
                r = cached.popleft()
                result = r.result
            else:
                t0 = time.perf_counter()
                try:
                    result = self.executor.live_tool(name, arguments)
                    if not isinstance(result, ToolResult):
                        result = ToolResult.model_validate(result)
                except PolicyDenied:
                    raise
                except Exception as exc:
                    result = ToolResult(error=ErrorInfo(type=type(exc).__name__, message=str(exc)))
                live_measured = time.perf_counter() - t0
            source = "live"
        if not source:
            self._no_answer("tool", pos, name, key, arguments=arguments, ahash=ahash)

        rec = self._emit_tool(pos, name, arguments, tool_call_id, key, result, source, used_pos, duration, at)
        if live_measured is not None:
            self._live_durations[rec.seq] = live_measured
        if fixture_id:
            self._fixture_uses.append({"seq": rec.seq, "fixture_id": fixture_id})
        if self.hooks.after is not None:
            self.hooks.after(self._invocation(name, arguments, tool_call_id, key, pos, source == "recorded"), result)
        return result

    def _emit_tool(
        self,
        pos: int,
        name: str,
        arguments: Any,
        tool_call_id: str | None,
        key: str,
        result: ToolResult,
        source: str,
        used_pos: int | None,
        duration: float | None,
        at: str | None,
    ) -> ToolRecord:
        seq, b = self._seq_for(pos, "tool")
        run_id = b.run_id if b is not None else self._last_run_id
        gen_id = b.generation_id if b is not None else self._last_generation_id
        call_id = self._unique_call_id(run_id, tool_call_id, seq)
        span = None
        if self.tracer is not None:
            span = self.tracer.span(
                "tool.execute",
                {
                    "tool": name,
                    "tool_call_id": call_id,
                    "key": key,
                    "run_id": run_id,
                    "generation_id": gen_id,
                    "replayed": source != "live",
                    "source": source,
                },
            )
            span.__enter__()
        if (
            source == "recorded"
            and used_pos == pos
            and b is not None
            and b.seq == seq
            and b.tool_call_id == call_id
            and b.arguments is arguments
        ):
            rec = b.model_copy(update={"replayed": True})
        else:
            rec = ToolRecord(
                seq=seq,
                at=at if source == "recorded" else None,
                run_id=run_id,
                generation_id=gen_id,
                replayed=True,
                live_fallback=source == "live",
                key=key,
                tool=name,
                arguments=arguments,
                tool_call_id=call_id,
                result=result,
                duration_seconds=duration,
            )
        if span is not None:
            span.__exit__(None, None, None)
        self._append(rec, source)
        self._count(source)
        if self._aligned:
            if b is None or key != self._base_key(pos, b) or not (used_pos == pos or rec.result == b.result):
                self._aligned = False
        return rec

    def _invocation(
        self, name: str, arguments: Any, tool_call_id: str | None, key: str, pos: int, replayed: bool
    ) -> Any:
        from .session import ToolInvocation

        return ToolInvocation(
            tool=name,
            arguments=arguments,
            tool_call_id=tool_call_id,
            run_id=self._last_run_id,
            generation_id=self._last_generation_id,
            key=key,
            redacted_arguments=arguments,
            replayed=replayed,
            index=pos,
        )

    def _authorize(
        self, name: str, arguments: Any, tool_call_id: str | None, key: str, pos: int, after: bool, replayed: bool
    ) -> PolicyDenied | None:
        hooks = self.hooks
        inv = None
        if hooks.before or hooks.authorize or hooks.approve:
            inv = self._invocation(name, arguments, tool_call_id, key, pos, replayed)
        if hooks.before is not None:
            hooks.before(inv)
        pol = self._policy_iv.get(name) if after else None
        if pol is not None and pol[1].action == "deny":
            self._applied.add(pol[0])
            return PolicyDenied(name, pol[1].reason or f"denied by intervention {pol[0]} (tool_policy)")
        if hooks.authorize is not None:
            try:
                if hooks.authorize(inv) is False:
                    return PolicyDenied(name, "not authorized")
            except PolicyDenied as exc:
                return exc
        if pol is not None and pol[1].action == "require_approval":
            self._applied.add(pol[0])
            ahash = compute_args_hash(arguments)
            rid = Requirement.make_id(self.replay_id, pos, "approval", key)
            prior = self.decisions.get(rid)
            if prior is None or prior.status == "open":
                req = Requirement(
                    id=rid,
                    replay_id=self.replay_id,
                    step=max(self._step - 1, 0),
                    position=pos,
                    kind="approval",
                    name=name,
                    arguments=arguments,
                    args_hash=ahash,
                    nearest=nearest_tool_call(self.base, name, arguments),
                    reason=pol[1].reason or f"tool {name!r} requires approval (intervention {pol[0]})",
                )
                raise _Halt("paused", requirement=req)
            if prior.status == "waived":
                return PolicyDenied(name, f"approval refused (requirement {rid} waived)")
        if hooks.approve is not None and not hooks.approve(inv):
            return PolicyDenied(name, "approval refused")
        budget = self.policy.max_tool_calls
        if budget is not None and self._tool_calls >= budget:
            return PolicyDenied(name, f"budget exceeded: at most {budget} tool call(s) allowed")
        self._tool_calls += 1
        return None

    # ------------------------------------------------------------------ loops

    def _generic_loop(self) -> tuple[str, Any]:
        """The generic chat agent loop (no executor). Returns ``(stop_reason, output)``."""
        calls = self.base_calls
        n = len(calls)
        has_models = bool(self.base_models)
        i = 0
        last_request: ModelRequest | None = None
        last_response: ModelResponse | None = None
        tool_msgs: list[ChatMessage] = []
        unanswered: list[Any] = []  # tool calls of the last response not answered yet
        # phase 1: while aligned, re-issue the base's calls
        while i < n:
            r = calls[i]
            i += 1
            if type(r) is ModelRecord:
                try:
                    resp = self.call_model(r.model, r.request)
                except ModelCallError:
                    if self._aligned:
                        continue
                    return "model_error", None
                last_request, last_response = self.last_request, resp
                tool_msgs, unanswered = [], list(resp.message.tool_calls or [])
            else:
                try:
                    res = self.call_tool(r.tool, r.arguments, r.tool_call_id)
                except PolicyDenied as exc:
                    res = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(exc)))
                tc = _take_call(unanswered, r)
                tool_msgs.append(tool_message(tc.id if tc is not None else r.tool_call_id, r.tool, res))
            if not self._aligned and has_models:
                break
        else:
            if self._aligned:
                self._emit_attribution_until(None)
            out = last_response.message.text if last_response is not None else None
            return (
                "final" if last_response is not None and not last_response.message.tool_calls else "end_of_base"
            ), out
        # phase 2: rebuild requests from the branch transcript
        self._rebuilt = True
        if last_response is None:
            first = self.base_models[0]
            transcript = list(first.request.messages) + tool_msgs
            pending: list[Any] = []
            need_model = True
        else:
            transcript = list(last_request.messages) + [last_response.message] + tool_msgs
            pending = unanswered
            # tool results the model has not seen yet (the difference may be one of them)
            need_model = bool(last_response.message.tool_calls) or bool(tool_msgs)
        while True:
            for tc in pending:
                try:
                    res = self.call_tool(tc.name, tc.arguments, tc.id)
                except PolicyDenied as exc:
                    res = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(exc)))
                transcript.append(tool_message(tc.id, tc.name, res))
            if not need_model:
                return "final", last_response.message.text if last_response else None
            step = self._step
            b = self.base_models[step] if step < len(self.base_models) else self.base_models[-1]
            req = ModelRequest(
                messages=list(transcript), tools=b.request.tools, stop=b.request.stop, options=b.request.options
            )
            try:
                resp = self.call_model(b.model, req)
            except ModelCallError:
                return "model_error", None
            last_response = resp
            transcript = list(self.last_request.messages) + [resp.message]
            pending = list(resp.message.tool_calls or [])
            need_model = bool(pending)

    def _base_shape(self) -> list[str]:
        """What in the base the generic chat loop cannot model: tool calls no preceding
        model response lists (text actions), and calls after a response without tool
        calls (new user turns)."""
        unlinked = continued = 0
        open_calls: list[Any] = []
        after_final = False
        for r in self.base_calls:
            if type(r) is ModelRecord:
                if after_final:
                    continued += 1
                calls = r.response.message.tool_calls if r.response is not None else None
                open_calls = list(calls or [])
                after_final = r.response is not None and not calls
            else:
                if _take_call(open_calls, r) is None:
                    unlinked += 1
                after_final = False
        out = []
        if unlinked:
            out.append(f"{unlinked} tool call(s) are not listed in the model response before them")
        if continued:
            out.append(f"{continued} model call(s) follow a response without tool calls (new user turns)")
        return out

    def _executor_loop(self) -> tuple[str, Any]:
        task = self.base.metadata.get("task")
        output = self.executor.run(self, task)
        if self._aligned and self._pos == len(self.base_calls):
            self._emit_attribution_until(None)
        return "final", output

    # ------------------------------------------------------------------ run

    def run(self) -> ReplayOutcome:
        """Run the branch once; never raises for replay failures (they become a
        ``failed`` outcome with ``error``). Raises BranchError only for an invalid branch
        (checked in the constructor)."""
        if self._ran:
            raise RuntimeError("a ReplayEngine runs once; make a new one")
        self._ran = True
        # The run allocates a few long-lived objects per call (the events) next to a base
        # that may hold millions; the cyclic collector would rescan that heap again and
        # again (measured: 2-3x the run time). Nothing here creates garbage cycles that
        # must be reclaimed during the run, so collection waits until it ends.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if was_enabled:
                gc.enable()

    def _run(self) -> ReplayOutcome:
        status = "completed"
        error: ReplayErrorInfo | None = None
        requirement: Requirement | None = None
        output: Any = None
        stop_reason = "final"
        if self.policy.wants_live and self.executor is None:
            which = " and ".join(b for b in ("model", "tool") if getattr(self.policy, b) == "live")
            status, stop_reason = "failed", "error"
            error = ReplayErrorInfo(
                type="NoExecutor",
                message=f"policy {which}=live needs a wired executor (--executor module:function "
                f"or --executor recorded); none was given, so nothing ran",
            )
        else:
            try:
                if self.executor is not None:
                    stop_reason, output = self._executor_loop()
                else:
                    stop_reason, output = self._generic_loop()
            except _Halt as h:
                if h.reason == "paused":
                    status, stop_reason, requirement = "paused", "paused", h.requirement
                elif h.reason == "max_steps":
                    stop_reason = "max_steps"
                else:
                    status, stop_reason, error = "failed", "error", h.error
            except PolicyDenied as exc:
                status, stop_reason = "failed", "error"
                error = ReplayErrorInfo(type="PolicyDenied", message=str(exc))
            except ModelCallError as exc:
                stop_reason = "model_error"
                error = None
                output = {"error": exc.error.to_json_obj()}
            except InspectorError as exc:
                status, stop_reason = "failed", "error"
                error = ReplayErrorInfo(type=type(exc).__name__, message=str(exc))
            except Exception as exc:  # the executor's own code (or an unexpected bug) failed
                status, stop_reason = "failed", "error"
                who = "the executor raised" if self.executor is not None else "the engine raised"
                error = ReplayErrorInfo(type=type(exc).__name__, message=f"{who}: {exc}")
        events = self._events_recording(output, stop_reason)
        comparability = self._comparability(status, stop_reason, error, requirement)
        divergence = first_divergence(
            self.base_calls,
            [r for r in self._events if r.kind in ("tool", "model")],
            complete=status == "completed" and stop_reason != "max_steps",
        )
        return ReplayOutcome(
            status=status,
            stop_reason=stop_reason,
            comparability=comparability,
            first_divergence=divergence,
            error=error,
            requirement=requirement,
            events=events,
            sources=dict(self._sources),
            fixture_uses=list(self._fixture_uses),
            answers={k: v for k, v in self._answers.items() if v},
            steps=self._step,
            output=output,
            interventions_applied=sorted(self._applied),
            live_durations=dict(self._live_durations),
        )

    def _comparability(
        self, status: str, stop_reason: str, error: ReplayErrorInfo | None, requirement: Requirement | None
    ) -> Comparability:
        none: list[str] = []
        partial: list[str] = []
        if status == "failed":
            none.append(f"the replay failed: {error.message if error else 'unknown error'}")
        elif status == "paused":
            none.append(
                f"the replay is paused on requirement {requirement.id} "
                f"({requirement.kind} {requirement.name}); it has not finished"
            )
        else:
            for i, iv in enumerate(self.branch.interventions):
                if i not in self._applied:
                    none.append(
                        f"intervention {i} ({iv.describe()}) was never applied: the replay "
                        "never made the call it targets"
                    )
            if (
                self._rebuilt
                and stop_reason == "final"
                and sum(1 for r in self._events if r.kind in ("tool", "model")) < len(self.base_calls)
            ):
                shape = self._base_shape()
                if shape:
                    none.append(
                        "after the first difference the generic chat loop cannot follow this base's agent ("
                        + "; ".join(shape)
                        + "): it stopped at a response without tool calls where the base "
                        "went on; wire the agent as an executor to replay past this point"
                    )
            if stop_reason == "max_steps":
                which = (
                    "max_steps"
                    if self.policy.max_steps is not None
                    else (f"the engine's safety limit ({self.step_limit} model calls; set max_steps to choose)")
                )
                partial.append(f"stopped by {which} after {self._step} model call(s), before a final response")
        if self._drift_steps:
            steps = sorted(set(self._drift_steps))
            partial.append(
                f"lenient drift: the base's answer stood in for {len(self._drift_steps)} call(s) "
                f"that differ from the base (steps {', '.join(map(str, steps[:10]))}"
                f"{', ...' if len(steps) > 10 else ''})"
            )
        if self._answers.get("live"):
            partial.append(
                f"{self._answers['live']} call(s) answered live by the executor: not reproducible from the recording"
            )
        level = "none" if none else "partial" if partial else "full"
        return Comparability(level=level, reasons=none + partial)

    def _events_recording(self, output: Any, stop_reason: str) -> Recording:
        b = self.branch
        meta: dict[str, Any] = {
            "replayed": True,
            "replay": {
                "base": {"digest": self.base.digest, "path": b.base.path},
                "branch": {"id": b.id, "checkpoint": b.checkpoint, "label": b.label, "parent": b.parent},
                "policy": b.policy.model_dump(mode="json"),
                "executor": self.executor_name,
                "stop_reason": stop_reason,
                "answer_sources": {str(s): src for s, src in self._sources.items() if src != "recorded"},
                "fixture_uses": list(self._fixture_uses),
            },
        }
        for k in ("task", "executor", "agent", "model", "dataset"):
            if k in self.base.metadata:
                meta[k] = self.base.metadata[k]
        if output is not None:
            meta["final_output"] = output
            evaluate = getattr(self.executor, "evaluate", None) if self.executor is not None else None
            if callable(evaluate) and "task" in self.base.metadata:
                try:
                    outcome, reason = evaluate(self.base.metadata["task"], output)
                    meta["outcome"], meta["outcome_reason"] = outcome, reason
                except Exception:  # an evaluator is optional; its failure changes nothing
                    pass
        return Recording(
            metadata=meta,
            session=SessionInfo(
                mode="replay",
                fallback="live" if b.policy.wants_live else "error",
                producer=_producer() + " (replay engine)",
            ),
            records=list(self._events),
        )


def _producer() -> str:
    from .. import __version__

    return f"chassis-inspector {__version__}"
