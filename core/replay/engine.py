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
3. Every call, model or tool, goes through one *answer chain* (:data:`ANSWER_CHAIN`, one
   method per source, :meth:`ReplayEngine._answer`): an intervention → an unconsumed
   recorded call with the same canonical key (per-key cursor) → a fixture → the base's
   answer at the same step when drift is ``lenient`` (comparability ``partial``) → the
   wired executor when the policy is ``live``; the first source that answers wins. Each
   answer carries its source — ``recorded``, ``intervention``, ``fixture``, ``drift``,
   ``live`` (``policy`` for a denied call; docs/replay.md "Replay states": answer
   sources) — and a short reason (``fixture fx-… (branch scope) matched the call's
   arguments hash``), kept
   per call in :attr:`ReplayOutcome.reasons` and, for every answer not ``recorded``, in
   the events' ``metadata.replay.answer_reasons`` next to ``answer_sources``. With policy
   ``fixture`` recorded calls do not answer from the checkpoint on.
4. No answer: a requirement is opened and the replay pauses (``require_fixtures``), or
   the replay fails with :class:`~core.errors.ReplayMismatch`. Never an implicit live call.
5. Authorization, approval and budget run on every tool call, answered from the recording
   or not, through the replay session's own gate (:class:`core.replay.gate.ToolGate`, the
   one :class:`core.replay.session.Harness` uses): ``before`` hook
   → authorization (``tool_policy`` deny, ``authorize`` hook) → approval
   (``tool_policy`` require_approval — an approval requirement until approved — and the
   ``approve`` hook) → budget (``policy.max_tool_calls``) → a ``tool.execute`` span
   (tagged ``replayed`` and ``source``) → ``after`` hook. A denial raises
   :class:`~core.errors.PolicyDenied` to the agent exactly as live.
6. The loop ends on a final response (no tool calls), ``max_steps`` model calls (with no
   ``max_steps``, a safety net of 10 x the base's model calls + 100), or an error.
7. Progress and cancellation: ``on_progress`` receives :class:`ReplayProgress` events —
   ``started``, one ``call`` per answered call (``calls_answered`` never decreases),
   then ``paused`` or ``finished``; ``on_event`` receives ``(record, source)`` per event.
   ``cancel`` is polled after each event and stops the replay between two calls, as
   ``failed`` with error type ``Cancelled`` (docs/replay.md, "Answer sources and
   progress").
8. The user-turn rule (docs/replay.md, "Replay states"; the seed documents: a replayed
   run pauses on its own checkpointer, and replay never fabricates an answer from
   interrupt records): while the branch is aligned with the base, a person's input is
   copied as recorded; once it has diverged, each point where the base's agent waited on
   a person (:mod:`core.replay.user_turns`) is a ``user`` call that only a pinned answer
   (source ``user``) answers — else a ``user`` requirement offering the recorded value.
   A pinned answer or a skipped recorded input keeps comparability below ``full``.

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
from typing import Any, ClassVar, Literal, NoReturn

import orjson

from ..errors import (
    BranchError,
    CanonicalizationError,
    InspectorError,
    PolicyDenied,
    ReplayMismatch,
)
from ..importers.actions import ActionFormatError, observed_text, parser_for
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    ToolRecord,
    ToolResult,
)
from ..record.recording_redaction import redacted_args_hash, redacted_tool_key
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
    NearestCall,
    Requirement,
    nearest_model_call,
    nearest_tool_call,
)
from .gate import ToolGate, ToolHooks, ToolInvocation
from .keys import LiveRequests, live_model_key
from .matching import excluded_model_key
from .replay_record import (
    ANSWER_SOURCES,
    Comparability,
    FirstDivergence,
    ReplayErrorInfo,
    first_divergence,
)
from .user_turns import UserTurn, UserTurns, person_text

__all__ = [
    "ANSWER_CHAIN",
    "AnswerSource",
    "ModelCallError",
    "ProgressKind",
    "ReplayEngine",
    "ReplayOutcome",
    "ReplayProgress",
    "ToolHooks",
    "tool_message",
]

_ATTRIBUTION = ("interrupt", "snapshot", "lifecycle")

#: where an answer came from (docs/replay.md, "Replay states": answer sources); ``policy``
#: tags a denied call, ``user`` an answer a person pinned for a person's turn
AnswerSource = Literal["recorded", "intervention", "fixture", "drift", "live", "policy", "user"]

#: the answer chain (SPEC "Replay engine"): the sources asked, in this order, for every
#: call that passed the tool gate; the first that answers wins. Model and tool calls are
#: answered by the first five; a person's turn after the branch diverged (the user-turn
#: rule, docs/replay.md "Replay states") only by ``user`` — a pinned answer
ANSWER_CHAIN: tuple[AnswerSource, ...] = ("intervention", "recorded", "fixture", "drift", "live", "user")

#: the kinds of :class:`ReplayProgress` event, in the order a replay sends them:
#: ``started``, then one ``call`` per answered call, then ``paused`` or ``finished``
ProgressKind = Literal["started", "call", "paused", "finished"]


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


@dataclass(frozen=True, slots=True)
class ReplayProgress:
    """One progress event of a replay, for a progress bar (the ``on_progress`` callback
    of :class:`ReplayEngine`).

    A replay sends ``started`` (nothing answered yet), one ``call`` per answered model or
    tool call (denied calls included, source ``policy``), and last either ``paused`` (an
    open requirement) or ``finished`` (status ``completed`` or ``failed`` — a cancelled
    replay is ``failed`` with error type ``Cancelled``).

    Fields: ``kind`` (:data:`ProgressKind`); ``calls_answered`` (calls answered so far,
    never decreasing); ``base_calls`` (the base's number of calls: a progress bar's scale,
    which a branch may overrun or stop short of); ``steps`` (model calls made so far);
    for ``call``: ``current_seq`` (the event's seq), ``call_kind`` (``model`` | ``tool`` |
    ``user``: a person's turn answered by a pinned answer),
    ``call_name`` (model or tool name), ``source`` (:data:`AnswerSource`) and ``reason``
    (a short sentence: why that source answered); for ``paused``: ``requirements`` (open
    requirements, 1) and ``requirement_id``; for ``paused`` and ``finished``: ``status``,
    ``stop_reason`` and ``error`` (:class:`~core.replay.replay_record.ReplayErrorInfo` or
    ``None``).
    """

    kind: ProgressKind
    calls_answered: int
    base_calls: int
    steps: int = 0
    current_seq: int | None = None
    call_kind: Literal["model", "tool", "user"] | None = None
    call_name: str | None = None
    source: AnswerSource | None = None
    reason: str | None = None
    requirements: int = 0
    requirement_id: str | None = None
    status: Literal["paused", "completed", "failed"] | None = None
    stop_reason: str | None = None
    error: ReplayErrorInfo | None = None


@dataclass(frozen=True, slots=True)
class _Action:
    """A tool call an action parser read from a reply's text (no id)."""

    id: None
    name: str
    arguments: Any


@dataclass(slots=True)
class _Call:
    """One call on its way through the tool gate and the answer chain: ``kind``,
    ``name`` (model or tool), canonical ``key``, call position ``pos``, model ``step``
    (a tool call: model calls made before it), ``after`` (at or after the checkpoint),
    ``rec_pos`` (the next unconsumed recorded call with this key, peeked), and the
    model ``request`` or the tool's ``arguments`` and ``tool_call_id``. A person's turn
    (kind ``user``, name ``user``) carries the base's ``turn``; its key is the turn's."""

    kind: Literal["model", "tool", "user"]
    name: str
    key: str
    pos: int
    step: int
    after: bool
    rec_pos: int | None
    request: ModelRequest | None = None
    arguments: Any = None
    tool_call_id: str | None = None
    turn: UserTurn | None = None
    record_key: str | None = None  # the event's canonical key when matching used another (key exclusions)
    _hash: str | None = None
    _hashed: bool = False

    def args_hash(self) -> str | None:
        """The tool arguments' args hash, ``None`` when they have no canonical form."""
        if not self._hashed:
            self._hashed = True
            try:
                self._hash = redacted_args_hash(self.arguments)  # as fixtures read from a file are
            except CanonicalizationError:
                self._hash = None
        return self._hash

    def fixture_hash(self) -> str:
        """What fixtures and requirements match a tool call by: its args hash, or its
        key when the arguments have no canonical form."""
        h = self.args_hash()
        return h if h is not None else self.key


@dataclass(slots=True)
class _Answer:
    """An answer from one source of the chain: ``source``, ``reason``, the model
    ``response``/``error`` or the tool ``result``, and where it came from (``used_pos``:
    the base call consumed; ``duration``/``at`` of a recorded answer; ``fixture_id``;
    ``live_measured``: seconds an executor call took, kept out of the events; ``text``:
    a person's answer)."""

    source: AnswerSource
    reason: str
    response: ModelResponse | None = None
    error: ErrorInfo | None = None
    result: ToolResult | None = None
    used_pos: int | None = None
    duration: float | None = None
    at: str | None = None
    fixture_id: str | None = None
    live_measured: float | None = None
    text: str | None = None


#: one source of the answer chain: ``(engine, call) -> answer``, or ``None`` to pass it on
_ChainStep = Callable[["ReplayEngine", _Call], "_Answer | None"]


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


def _path_step(path: str, token: str | int) -> str:
    if isinstance(token, int):
        return f"{path}[{token}]"
    if token.isidentifier() and token.isascii():
        return f"{path}.{token}" if path else token
    return f"{path}[{orjson.dumps(token).decode()}]"


def first_difference(a: Any, b: Any) -> str | None:
    """The path of the first place where two JSON values differ, depth first in ``a``'s
    key order, as ``messages[7].content`` (members by name, items by index, names that
    are not identifiers quoted: ``meta["x-y"]``; ``$`` for the values themselves), or
    ``None`` when they are equal. Types count (``1`` differs from ``true`` and ``1.0``
    equals ``1`` as in JSON); a key present on one side only, or a length, is a difference
    at the container (``messages`` when one list is longer). Iterative: any depth."""
    stack: list[tuple[str, Any, Any]] = [("", a, b)]
    while stack:
        path, x, y = stack.pop()
        tx, ty = type(x), type(y)
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return path or "$"
            stack.extend((_path_step(path, k), x[k], y[k]) for k in reversed(list(x)))
        elif isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            if len(x) != len(y):
                return path or "$"
            stack.extend((_path_step(path, i), x[i], y[i]) for i in reversed(range(len(x))))
        elif (tx is bool) != (ty is bool) or x != y:  # a container against anything else is unequal
            return path or "$"
    return None


def tool_message(tool_call_id: str | None, name: str, result: ToolResult) -> ChatMessage:
    """How the generic chat loop puts a tool result in the transcript: a ``tool`` message
    whose content is ``ERROR <type>: <message>`` for an error, the content itself when it
    is a string, else its JSON with sorted keys (the sample agent's rendering too;
    :meth:`~core.record.recording.ToolResult.message_text`)."""
    return ChatMessage(role="tool", content=result.message_text(), tool_call_id=tool_call_id, name=name)


@dataclass
class ReplayOutcome:
    """What one engine run produced: ``status``, ``stop_reason``, ``comparability``,
    ``first_divergence``, ``error``, ``requirement`` (the one it paused on), ``events``
    (a :class:`Recording`), ``sources`` (``{seq: source}`` for every event record),
    ``fixture_uses``, ``answers`` (count per source), ``steps``, ``output``,
    ``interventions_applied``, ``live_durations`` (``{seq: seconds}`` measured around
    each executor call this run made — kept here, not in the events, whose live records
    carry ``duration_seconds: null``; answers reused from an earlier attempt are not
    measured again), ``reasons`` (``{seq: reason}`` for every call event: a short
    sentence saying why its source answered, e.g. ``fixture fx-… (project scope) matched
    the call's arguments hash``)."""

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
    reasons: dict[int, str] = field(default_factory=dict)


class ReplayEngine:
    """Runs one branch of one base recording (rules in the module docstring).

    Args:
        base: the base :class:`Recording` (verified).
        branch: the :class:`Branch` (validated against ``base`` here unless it is a
            :class:`~core.replay.branch.ResolvedBranch` of ``base``; BranchError).
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
        on_event: called with ``(record, source)`` for each event (call records once the
            call is done, attribution records as they are copied); keep it cheap.
        on_progress: called with a :class:`ReplayProgress` — ``started``, one ``call``
            per answered call, then ``paused`` or ``finished`` (for a progress bar).
        cancel: polled after each event; returning ``True`` stops the replay between
            two calls (the call in progress is finished and recorded first) as
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
        on_progress: Callable[[ReplayProgress], None] | None = None,
    ) -> None:
        # indexing allocates a container per call: pause the cyclic GC (see run())
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            if not branch.is_resolved_for(base):  # a ResolvedBranch was validated once, by resolve_branch
                validate_branch(branch, base)
            self.base = base
            self.branch = branch
            self.policy = branch.policy
            self.replay_id = replay_id
            self.fixtures = fixtures or FixtureGateway()
            self.executor = executor
            self.executor_name = executor_name
            #: the executor runs the agent's loop (``executor.run``); one that only answers
            #: calls live (``runs_agent = False``: the provider executor) leaves the loop to
            #: the generic chat loop
            self._runs_agent = executor is not None and getattr(executor, "runs_agent", True)
            self.decisions = dict(decisions or {})
            self.hooks = hooks or ToolHooks()
            self.tracer = tracer
            self.on_event = on_event
            self.cancel = cancel
            self.on_progress = on_progress
            #: whether a finished call is reported or polled (on_event, on_progress, cancel)
            self._reporting = on_event is not None or on_progress is not None or cancel is not None
            n_models = sum(1 for r in base.records if type(r) is ModelRecord)
            #: most model calls this run may make: ``policy.max_steps``, or a safety net of
            #: 10 x the base's model calls + 100 (a model-wide fixture asking for tools
            #: again and again would otherwise loop forever)
            self.step_limit = branch.policy.max_steps if branch.policy.max_steps is not None else 10 * n_models + 100

            self.base_calls: list[Any] = [r for r in base.records if type(r) is ToolRecord or type(r) is ModelRecord]
            self.base_models: list[ModelRecord] = [r for r in self.base_calls if type(r) is ModelRecord]
            self.cp_pos = sum(1 for r in self.base_calls if r.seq < branch.checkpoint)
            #: request paths matching ignores (policy ``key_exclusions``): model calls are
            #: matched on :func:`core.replay.matching.excluded_model_key` when there are any
            self._exclusions = tuple(branch.policy.key_exclusions or ())
            self._match_keys: dict[int, str] = {}
            if self._exclusions:
                for pos, r in enumerate(self.base_calls):
                    if type(r) is ModelRecord:
                        self._match_keys[pos] = excluded_model_key(r.model, r.request, self._exclusions)
            self._cursors: dict[str, deque[int]] = {}
            for pos, r in enumerate(self.base_calls):
                self._cursors.setdefault(self._base_key(pos, r), deque()).append(pos)
            #: how often each repeated key was recorded (for "recorded answer … (2 of 3)", and
            #: to tell an exhausted key from a missing one)
            self._key_repeats = {k: len(dq) for k, dq in self._cursors.items() if len(dq) > 1}
            #: where the base waited on a person (the user-turn rule), by model step
            self._turns = UserTurns(base)
            #: how the base's agent read actions from model text (None: tool calls)
            self._parser_problem: str | None = None
            try:
                self._parser = parser_for(base.metadata)
            except ValueError as exc:  # a parser of a newer version: the loop cannot read text actions
                self._parser, self._parser_problem = None, str(exc)
            if self._parser is not None and not any(
                type(r) is ToolRecord and (r.meta or {}).get("action_parser") == self._parser.name
                for r in self.base_calls
            ):
                # metadata is not sealed by the digest: a parser no tool record of the base
                # was made by is not trusted to read the replies of a tool-calling agent
                self._parser = None
            self._consumed = bytearray(len(self.base_calls))
            self._live_cache: dict[tuple[str, str], deque[Any]] = {}
            self._live_durations: dict[int, float] = {}  # seq -> seconds measured this run
            retry_failed = getattr(executor, "errors_end_replay", False)
            for r in live_cache:
                if getattr(r, "live_fallback", False) and getattr(r, "key", None):
                    if retry_failed and getattr(r, "error", None) is not None:
                        continue  # it ended that attempt: a resume asks again (the outage may be over)
                    self._live_cache.setdefault((r.kind, r.key), deque()).append(r)
                elif type(r) is InterruptRecord and r.live_fallback and isinstance(r.value, dict):
                    sim = r.value.get("simulated_by")  # a person's turn a user simulator answered
                    if (
                        isinstance(sim, dict)
                        and isinstance(sim.get("turn"), str)
                        and isinstance(sim.get("request"), str)
                    ):
                        _, text = person_text(r.value)
                        self._live_cache.setdefault(("user", sim["turn"] + sim["request"]), deque()).append(text)

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
            self._gate = ToolGate(self.hooks, max_tool_calls=branch.policy.max_tool_calls)
            self._aligned = True
            self._next_base_attr = 0  # index into base.records of the next attribution candidate
            self._events: list[Any] = []
            self._sources: dict[int, str] = {}
            self._reasons: dict[int, str] = {}  # seq -> why its source answered (call events)
            self._chains: dict[str, tuple[_ChainStep, ...]] = {}  # per call kind: the sources that may answer
            self._cancel_requested = False
            self._fixture_uses: list[dict[str, Any]] = []
            self._answers: dict[str, int] = dict.fromkeys(ANSWER_SOURCES, 0)
            self._drift_steps: list[int] = []
            self._used_call_ids: set[tuple[str | None, str]] = set()
            self._last_run_id: str | None = None
            self._last_generation_id: str | None = None
            self._ran = False
            self._rebuilt = False  # the generic loop left the base's calls (phase 2)
            self._user_steps: set[int] = set()  # model steps whose person's turn was handled
            self._user_answered: list[UserTurn] = []  # turns answered by a pinned answer
            self._user_waived: list[UserTurn] = []  # turns the user waived (skipped)
            self._user_simulated: list[UserTurn] = []  # turns the live user simulator answered
            self._user_authored = 0  # pinned answers that differ from the recorded one
            self._transcript_now: list[ChatMessage] = []  # the generic loop's transcript (for the simulator)
            self._conv_from: int | None = None  # a conversation's next person's turn is searched from here
            #: (reason to add, meta to add) for the next call event, set by the generic loop
            self._pending_note: tuple[str, dict[str, Any]] | None = None
            self._copied_interrupts: set[int] = set()  # base interrupt seqs copied as recorded
            self.last_request: ModelRequest | None = None
            self._observed = 0  # tool results the executor's agent observed (ran itself)
            self._miss_reason: str | None = None  # why the current model call cannot match
            #: the agent's requests: messages seen before shared, keys computed once per message
            self._live_requests = LiveRequests()
        finally:
            if was_enabled:
                gc.enable()

    # ------------------------------------------------------------------ keys and cursors

    def _base_key(self, pos: int, r: Any) -> str:
        if self._match_keys:
            mk = self._match_keys.get(pos)
            if mk is not None:
                return mk
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
        (``None``: all remaining, after the last call). Each is reported to ``on_event``
        and ``cancel`` is polled; inside a call (``seq_limit`` set) a cancellation takes
        effect once the call is done, so it always stops the replay between calls."""
        recs = self.base.records
        i = self._next_base_attr
        n = len(recs)
        while i < n:
            r = recs[i]
            if seq_limit is not None and r.seq >= seq_limit:
                break
            if r.kind in _ATTRIBUTION:
                if r.kind == "interrupt":
                    self._copied_interrupts.add(r.seq)
                rec = r.model_copy(update={"replayed": True})
                self._append(rec, "recorded")
                if self.on_event is not None:
                    self.on_event(rec, "recorded")
                self._poll_cancel()
            i += 1
        self._next_base_attr = i
        if seq_limit is None and self._cancel_requested:
            raise _Halt("failed", error=ReplayErrorInfo(type="Cancelled", message="the replay was cancelled"))

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
        mismatch: str | None = None,
        recorded_answers: int | None = None,
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
            mismatch=mismatch,
            recorded_answers=recorded_answers,
        )

    def _no_answer(self, call: _Call) -> NoReturn:
        """No source of the chain answered ``call``: open a requirement (pause), or fail
        (``require_fixtures`` false, or the requirement was waived); never returns."""
        kind, pos, name, key = call.kind, call.pos, call.name, call.key
        if kind == "user":
            self._no_user_answer(call)
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
        # the seed document's ReplayMismatch reasons: "exhausted" when the key was recorded
        # and earlier calls used every answer, "missing" when it never was
        times = self._key_repeats.get(key, 1 if key in self._cursors else 0)
        mismatch = "exhausted" if times and self._peek(key) is None else "missing"
        if not self.policy.require_fixtures:
            recorded = sum(1 for r in self.base_calls if r.kind == kind)
            detail = f"{kind} {name!r} at call {pos}; require_fixtures is false"
            if mismatch == "exhausted":
                detail = f"the key's {_answers_text(times)} used by earlier calls; " + detail
            exc = ReplayMismatch(kind, key, recorded, mismatch, detail)
            raise _Halt("failed", error=ReplayErrorInfo(type="ReplayMismatch", message=str(exc)))
        what = "tool result" if kind == "tool" else "model response"
        if mismatch == "exhausted":
            reason = (
                f"this {kind} call was recorded, but the key's {_answers_text(times)} used by earlier calls "
                f"of the replay (exhausted): attach a {what} fixture"
            )
        elif kind == "model" and self._miss_reason is not None:
            reason = f"{self._miss_reason}: attach a model response fixture"
        else:
            reason = f"no recorded call, intervention or fixture answers this {kind} call: attach a {what} fixture"
        req = self._requirement(
            kind,
            pos,
            name,
            key,
            arguments=call.arguments,
            ahash=call.fixture_hash() if kind == "tool" else None,
            request=call.request,
            reason=reason,
            mismatch=mismatch,
            recorded_answers=times if mismatch == "exhausted" else None,
        )
        raise _Halt("paused", requirement=req)

    def _no_user_answer(self, call: _Call) -> NoReturn:
        """A person's turn after the branch diverged that nobody answered: a ``user``
        requirement offering the recorded value (pause), or a failure when
        ``require_fixtures`` is false — never the recorded value unasked."""
        turn = call.turn
        assert turn is not None  # a user call always carries its turn
        if turn.interrupts:
            where = f"the base recorded a person's input at seq {turn.base_seq}"
        elif turn.base_seq is not None:
            where = f"the base's request at seq {turn.base_seq} carried the person's next message, offered here"
        elif turn.default:
            where = "the base's conversation ended here; the person's last words are offered"
        else:
            where = "the base recorded nothing more from the person: answer to go on, or waive to end the conversation"
        if not self.policy.require_fixtures:
            exc = ReplayMismatch(
                "user",
                call.key,
                len(self._turns.person_interrupts),
                "missing",
                f"a person's turn before model step {call.step} ({where}); require_fixtures is false",
            )
            raise _Halt("failed", error=ReplayErrorInfo(type="ReplayMismatch", message=str(exc)))
        req = Requirement(
            id=Requirement.make_id(self.replay_id, call.pos, "user", call.key),
            replay_id=self.replay_id,
            step=call.step,
            position=call.pos,
            kind="user",
            name="user",
            args_hash=call.key,
            nearest=NearestCall(
                seq=turn.base_seq if turn.base_seq is not None else -1, name="user", output=turn.default
            ),
            default=turn.default,
            reason=(
                f"the branch has diverged from the base and here the agent waits on a person ({where}): "
                "pin the recorded answer or author one"
            ),
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

    def call_model(self, model: str, request: ModelRequest, *, miss_reason: str | None = None) -> ModelResponse:
        """Answer one model call (the :class:`~core.replay.boundary.AgentRuntime` method)
        through the answer chain (:data:`ANSWER_CHAIN`). ``miss_reason``: why the request
        cannot match a recorded call (the proxy: a ``previous_response_id`` the recording
        does not hold); the requirement opened when nothing else answers gives it.

        Raises:
            ModelCallError: the answer is a model error (recorded, fixture or live).
        """
        self._miss_reason = miss_reason
        if not isinstance(request, ModelRequest):
            request = ModelRequest.model_validate(request)
        if self._runs_agent and self._pos >= self.cp_pos:
            # the executor's agent builds its own requests: a recorded person's input
            # after the branch diverged is a user turn, recorded as an interrupt event
            self._user_turn(self._step)
        pos = self._pos
        if self._step >= self.step_limit:
            raise _Halt("max_steps")
        self._pos += 1
        step = self._step
        self._step += 1
        request = self._transform(request, pos)
        self.last_request = request
        base_here = self.base_calls[pos] if pos < len(self.base_calls) else None
        record_key: str | None = None
        if type(base_here) is ModelRecord and request is base_here.request and base_here.model == model:
            key = self._base_key(pos, base_here)
            if self._exclusions:
                record_key = base_here.key
        else:
            try:
                # keys are computed on redacted values (redacted_model_key), each message
                # once; messages equal to ones seen before are shared (core.replay.keys)
                request, key = self._live_requests.prepare(
                    model, request, base_here.request if type(base_here) is ModelRecord else None
                )
                if self._exclusions:
                    record_key, key = key, excluded_model_key(model, request, self._exclusions)
            except CanonicalizationError as exc:
                raise _Halt(
                    "failed",
                    error=ReplayErrorInfo(type="CanonicalizationError", message=f"model request at step {step}: {exc}"),
                ) from None
        self.last_request = request
        if miss_reason is not None:
            key = "unresolved:" + key  # no recorded call, fixture or cursor holds it
        call = _Call("model", model, key, pos, step, pos >= self.cp_pos, self._peek(key), request=request)
        call.record_key = record_key
        answer = self._answer(call)
        rec = self._emit(call, answer)
        if self._reporting:
            self._call_done(rec, call, answer)
        if answer.error is not None or answer.response is None:
            err = answer.error or ErrorInfo(type="NoResponse", message="no response")
            if answer.source == "live" and getattr(self.executor, "errors_end_replay", False):
                # a provider that failed after its retries: the branch cannot go on, and a
                # model error the base never had is not a result to compare (recorded in the events)
                raise _Halt(
                    "failed",
                    error=ReplayErrorInfo(
                        type=err.type,
                        message=f"the live model call at seq {rec.seq} (model step {step}) failed: {err.message} "
                        "(nothing after it ran)",
                    ),
                )
            raise ModelCallError(model, err)
        return answer.response

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        """Answer one tool call (the :class:`~core.replay.boundary.AgentRuntime` method):
        the tool gate (:class:`~core.replay.gate.ToolGate`), then the answer chain.

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
            call = self._tool_call(name, arguments, tool_call_id, pos, self._base_key(pos, base_here))
        else:
            call = self._tool_call(name, arguments, tool_call_id, pos, None)
        after = call.after

        # the tool gate, on every call, answered from the recording or not
        pol = self._policy_iv.get(name) if after else None
        denial = self._gate.admit(
            name,
            lambda: self._invocation(call, replayed=call.rec_pos is not None),
            deny=None if pol is None else lambda: self._policy_deny(call, pol),
            approval=None if pol is None else lambda: self._policy_approval(call, pol),
        )
        if denial is not None:
            denied = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(denial)))
            answer = _Answer("policy", f"the tool gate denied the call: {denial.reason}", result=denied)
            rec = self._emit(call, answer)
            self._aligned = False
            self._call_done(rec, call, answer)
            raise denial

        answer = self._answer(call)
        rec = self._emit(call, answer)
        result = answer.result
        assert result is not None  # every tool answer carries a result
        if self.hooks.after is not None:
            self._gate.after(lambda: self._invocation(call, replayed=answer.source == "recorded"), result)
        if self._reporting:
            self._call_done(rec, call, answer)
        return result

    def _tool_call(self, name: str, arguments: Any, tool_call_id: str | None, pos: int, key: str | None) -> _Call:
        """The :class:`_Call` of a tool call at call position ``pos``; ``key`` when known
        (the base's at this position), else computed on the redacted arguments.

        Raises:
            _Halt: the arguments have no canonical form (the replay fails).
        """
        if key is None:
            try:
                key = redacted_tool_key(name, arguments)  # keys are computed on redacted values
            except CanonicalizationError as exc:
                raise _Halt(
                    "failed",
                    error=ReplayErrorInfo(type="CanonicalizationError", message=f"tool {name!r} arguments: {exc}"),
                ) from None
        after = pos >= self.cp_pos
        return _Call(
            "tool", name, key, pos, self._step, after, self._peek(key), arguments=arguments, tool_call_id=tool_call_id
        )

    def observe_tool(self, name: str, arguments: Any, tool_call_id: str | None, result: ToolResult) -> ToolResult:
        """Record a tool call the executor's agent ran itself (a command executor: the
        tool ran inside the agent's process, unmediated — docs/proxy.md) and return the
        result the model should see: a ``tool_result`` intervention targeting the call
        (by the base record it stands for, or by tool name and args hash) overrides it
        (the agent's own process keeps what it got); otherwise the observed ``result``,
        answer source ``live``, ``meta.observed`` on the event. The recorded call with the
        same key is consumed, so the calls after it stay aligned. The tool gate does not
        run: a call that already happened cannot be denied.
        """
        pos = self._pos
        self._pos += 1
        call = self._tool_call(name, arguments, tool_call_id, pos, None)
        answer = self._from_intervention(call) if self._tool_seq_iv or self._tool_name_iv else None
        if answer is None:
            b = self.base_calls[call.rec_pos] if call.rec_pos is not None else None
            if b is not None and type(b) is ToolRecord:
                # equal but for the redacted flag (the agent got the recorded, scrubbed
                # arguments, so its own result holds the marker where the recorded one
                # had the secret): the recorded result, flag and all
                same = b.result == result or b.result.model_copy(update={"redacted": False}) == result.model_copy(
                    update={"redacted": False}
                )
                if same:
                    result = b.result
                how = (
                    f"equal to the recorded result at seq {b.seq}"
                    if same
                    else f"different from the recorded result at seq {b.seq}"
                )
                self._consume(call.rec_pos)  # type: ignore[arg-type]
            else:
                how = "no recorded call has these arguments"
            answer = _Answer(
                "live",
                f"observed: the agent ran tool {name!r} itself (unmediated); {how}",
                result=result,
                used_pos=call.rec_pos,
            )
            self._observed += 1
        rec = self._emit(call, answer)
        if answer.source == "live":
            # observed, not an executor's live answer: nothing a resume could reuse
            rec.meta = {**(rec.meta or {}), "observed": True}
            rec.live_fallback = False
        if self._reporting:
            self._call_done(rec, call, answer)
        assert answer.result is not None
        return answer.result

    @property
    def last_event(self) -> Any:
        """The event appended last (a call's record once :meth:`call_model` returned or
        raised :class:`ModelCallError`), or ``None``."""
        return self._events[-1] if self._events else None

    # ------------------------------------------------------------------ the answer chain

    def _answer(self, call: _Call) -> _Answer:
        """The first source of :data:`ANSWER_CHAIN` that answers ``call``; none: a
        requirement (pause) or a failure (:meth:`_no_answer`, which raises)."""
        chain = self._chains.get(call.kind)
        if chain is None:
            chain = self._chains[call.kind] = tuple(
                step for source, step in zip(ANSWER_CHAIN, self._CHAIN) if self._may_answer(source, call.kind)
            )
        for step in chain:
            answer = step(self, call)
            if answer is not None:
                return answer
        self._no_answer(call)

    def _may_answer(self, source: AnswerSource, kind: str) -> bool:
        """Whether ``source`` can answer any ``kind`` call of this replay at all; the
        others are left out of that kind's chain (the order of the rest is unchanged).
        A person's turn is answered only by ``user``, and ``user`` answers nothing else."""
        if kind == "user" or source == "user":
            return kind == "user" and source == "user"
        if source == "intervention":
            return bool(self._model_step_iv) if kind == "model" else bool(self._tool_seq_iv or self._tool_name_iv)
        if source == "drift":
            return self.policy.drift == "lenient"
        if source == "live":
            return (self.policy.model if kind == "model" else self.policy.tool) == "live" and self.executor is not None
        return True

    def _from_intervention(self, call: _Call) -> _Answer | None:
        """An intervention targeting this call (from the checkpoint on): a model call by
        its step, a tool call by the base record it would consume (``seq``) or by tool
        name (and args hash). It also consumes the recorded answer it replaces."""
        if not call.after:
            return None
        answer: _Answer
        if call.kind == "model":
            found_m = self._model_step_iv.get(call.step)
            if found_m is None:
                return None
            idx, mi = found_m
            answer = _Answer(
                "intervention",
                f"intervention {idx} ({mi.describe()}) answers model step {call.step}",
                response=mi.response.model_copy(deep=True),
            )
        else:
            found_t: tuple[int, ToolResultIntervention] | None = None
            if call.rec_pos is not None and call.rec_pos in self._tool_seq_iv:
                found_t = self._tool_seq_iv[call.rec_pos]
            elif call.name in self._tool_name_iv:
                h = call.args_hash()
                for cand in self._tool_name_iv[call.name]:
                    if cand[1].args_hash is None or cand[1].args_hash == h:
                        found_t = cand
            if found_t is None:
                return None
            idx, ti = found_t
            answer = _Answer(
                "intervention",
                f"intervention {idx} ({ti.describe()}) answers this call of tool {call.name!r}",
                result=ti.result.model_copy(deep=True),
            )
        self._applied.add(idx)
        if call.rec_pos is not None:
            self._consume(call.rec_pos)
        return answer

    def _from_recorded(self, call: _Call) -> _Answer | None:
        """The next unconsumed recorded call with the same canonical key (per-key cursor,
        repeated keys in recording order); not from the checkpoint on under policy
        ``fixture``."""
        rec_pos = call.rec_pos
        if rec_pos is None:
            return None
        key = call.key
        if call.after and (self.policy.model if call.kind == "model" else self.policy.tool) == "fixture":
            return None
        # (this is the hot path of a replay: positional arguments, no helper calls)
        reason = "recorded answer for key " + (key if len(key) <= 16 else key[:15] + "…")
        total = self._key_repeats.get(key)
        if total is not None:
            reason += f" ({total - len(self._cursors[key]) + 1} of {total})"
        if not call.after:
            reason += ", before the checkpoint"
        self._consumed[rec_pos] = 1
        r = self.base_calls[rec_pos]
        if type(r) is ModelRecord:  # _Answer(source, reason, response, error, result, used_pos, duration, at)
            return _Answer("recorded", reason, r.response, r.error, None, rec_pos, r.duration_seconds, r.at)
        return _Answer("recorded", reason, None, None, r.result, rec_pos, r.duration_seconds, r.at)

    def _from_fixture(self, call: _Call) -> _Answer | None:
        """The fixture gateway's best fixture for the call (scope, then exact over
        tool-wide, then the one added last; :class:`~core.replay.fixtures.FixtureGateway`)."""
        match_hash = call.key if call.kind == "model" else call.fixture_hash()
        fx = self.fixtures.match(call.kind, call.name, match_hash, branch_id=self.branch.id, replay_id=self.replay_id)
        if fx is None:
            return None
        scope = f"{fx.scope_kind} scope"
        if fx.args_hash is not None:
            what = "request key" if call.kind == "model" else "arguments hash"
            reason = f"fixture {fx.id} ({scope}) matched the call's {what}"
        elif call.kind == "model":
            reason = f"fixture {fx.id} ({scope}) answers any request to model {call.name!r} (model-wide)"
        else:
            reason = f"fixture {fx.id} ({scope}) answers any call of tool {call.name!r} (tool-wide)"
        if call.kind == "model":
            return _Answer("fixture", reason, response=fx.model_response(), fixture_id=fx.id)
        return _Answer("fixture", reason, result=fx.tool_result(), fixture_id=fx.id)

    def _from_drift(self, call: _Call) -> _Answer | None:
        """With ``drift: lenient``: the base's answer at the same step (a model call) or
        at the same call position with the same tool name (a tool call)."""
        if self.policy.drift != "lenient":
            return None
        if call.kind == "model":
            if call.step >= len(self.base_models):
                return None
            bm = self.base_models[call.step]
            self._drift_steps.append(call.step)
            return _Answer(
                "drift",
                f"lenient drift: the base's answer at seq {bm.seq} (model step {call.step}) "
                "stands in for a request that differs",
                response=bm.response,
                error=bm.error,
            )
        b = self.base_calls[call.pos] if call.pos < len(self.base_calls) else None
        if b is None or type(b) is not ToolRecord or b.tool != call.name:
            return None
        self._drift_steps.append(call.step)
        return _Answer(
            "drift",
            f"lenient drift: the base's answer at seq {b.seq} (the call of tool {call.name!r} at this position) "
            "stands in for a call that differs",
            result=b.result,
        )

    def _from_live(self, call: _Call) -> _Answer | None:
        """With a ``live`` policy for the call's kind and a wired executor: the answer an
        earlier attempt got live (reused, so a resume repeats no side effect), else the
        executor's ``live_model`` / ``live_tool``, timed (kept out of the events)."""
        mode = self.policy.model if call.kind == "model" else self.policy.tool
        executor = self.executor
        if mode != "live" or executor is None:
            return None
        # one reason whether reused or asked now: the events of a resume equal a fresh run's
        reason = (
            f"answered live by the executor ({'live_model' if call.kind == 'model' else 'live_tool'}): "
            + self._difference_from_base(call)
        )
        if call.kind == "model" and self.policy.live_model and self.policy.live_model != call.name:
            reason += f"; model swapped: {call.name} → {self.policy.live_model} (policy live_model)"
        cached = self._live_cache.get((call.kind, call.key))
        if cached:
            r = cached.popleft()
            if call.kind == "model":
                return _Answer("live", reason, response=r.response, error=r.error)
            return _Answer("live", reason, result=r.result)
        t0 = time.perf_counter()
        if call.kind == "model":
            assert call.request is not None  # a model call always has its request
            response: ModelResponse | None = None
            error: ErrorInfo | None = None
            try:
                out = executor.live_model(self._live_model_name(call.name), call.request)
                response = out if isinstance(out, ModelResponse) else ModelResponse.model_validate(out)
            except Exception as exc:  # the live model failed: recorded as an error
                error = ErrorInfo(type=type(exc).__name__, message=str(exc))
            return _Answer("live", reason, response=response, error=error, live_measured=time.perf_counter() - t0)
        try:
            res = executor.live_tool(call.name, call.arguments)
            result = res if isinstance(res, ToolResult) else ToolResult.model_validate(res)
        except PolicyDenied:
            raise
        except Exception as exc:
            result = ToolResult(error=ErrorInfo(type=type(exc).__name__, message=str(exc)))
        return _Answer("live", reason, result=result, live_measured=time.perf_counter() - t0)

    def _live_model_name(self, recorded: str) -> str:
        """The model a live call asks: the policy's ``live_model`` (a swap), else the
        recorded one — which must be known.

        Raises:
            _Halt: the recording does not name its model (``unknown``) and the policy
                names none (failed, with a clear reason).
        """
        if self.policy.live_model:
            return self.policy.live_model
        if recorded == "unknown":
            raise _Halt(
                "failed",
                error=ReplayErrorInfo(
                    type="BranchError",
                    message="the recording does not name its model ('unknown'), so a live call cannot ask it: "
                    "set the policy's live_model (the model to continue with)",
                ),
            )
        return recorded

    def _from_user(self, call: _Call) -> _Answer | None:
        """A person's turn after the branch diverged: the answer a user pinned on its
        ``user`` requirement (``requirements --answer`` / ``--approve``: the recorded value
        or an authored one), else the live user simulator when the policy names one
        (:meth:`_from_user_simulator`) — never the recorded value unless pinned."""
        rid = Requirement.make_id(self.replay_id, call.pos, "user", call.key)
        prior = self.decisions.get(rid)
        if prior is None or prior.status != "satisfied" or prior.answer is None:
            return self._from_user_simulator(call)
        assert call.turn is not None  # a user call always carries its turn
        authored = prior.answer != call.turn.default
        self._user_authored += authored
        how = "the user authored this answer" if authored else "the user pinned the recorded answer"
        return _Answer("user", f"{how} (the person's turn before model step {call.step})", text=prior.answer)

    def _from_user_simulator(self, call: _Call) -> _Answer | None:
        """A person's turn answered by a live user-simulator model (policy ``user_model``;
        tau-bench's design: a model plays the person from the task's instruction): the
        answer an earlier attempt got (reused, so a resume gives the same events), else
        the executor's ``live_model`` asked the simulator request :meth:`_user_turn` built."""
        model = self.policy.user_model
        executor = self.executor
        if not model or executor is None or call.request is None or not hasattr(executor, "live_model"):
            return None
        if len(self._user_simulated) >= self.step_limit:
            # a simulator that never says the stop marker: as many person's turns as model calls at most
            raise _Halt("max_steps")
        reason = f"answered live by the user simulator {model} (policy user_model): a model playing the person"
        cached = self._live_cache.get(("user", call.key + self._simulator_key(model, call.request)))
        if cached:
            return _Answer("live", reason, text=cached.popleft())
        t0 = time.perf_counter()
        try:
            out = executor.live_model(model, call.request)
            resp = out if isinstance(out, ModelResponse) else ModelResponse.model_validate(out)
        except Exception as exc:  # the simulator failed: the branch cannot go on
            raise _Halt(
                "failed",
                error=ReplayErrorInfo(
                    type=type(exc).__name__,
                    message=f"the user simulator {model} failed at the person's turn before model step "
                    f"{call.step}: {exc}",
                ),
            ) from None
        return _Answer("live", reason, text=resp.message.text, live_measured=time.perf_counter() - t0)

    @staticmethod
    def _simulator_key(model: str, request: ModelRequest) -> str:
        """What identifies a simulator's answer for reuse on a resume: the canonical key of
        its request (the conversation it was shown), with the turn's key beside it."""
        try:
            return live_model_key(model, request)
        except CanonicalizationError:
            return "uncanonical"

    def _simulator_request(self, transcript: list[ChatMessage]) -> ModelRequest:
        """The request a user-simulator model gets at a person's turn: a system prompt
        holding the person's instruction (the base's ``metadata.task.instruction`` —
        tau-bench's — else its first ``user`` message) and the conversation so far seen
        from the person's side (the agent's words as ``user`` messages, the person's as
        ``assistant``; tool traffic and system prompts left out), opening with the agent's
        greeting when the person spoke first."""
        task = self.base.metadata.get("task")
        instruction = task.get("instruction") if isinstance(task, dict) else None
        if not isinstance(instruction, str) or not instruction.strip():
            first = next((m for m in transcript if m.role == "user"), None)
            instruction = first.text if first is not None else "(no instruction recorded)"
        marker = self._turns.stop_marker() or "###STOP###"
        system = (
            "You play the person (the user, the customer) in a conversation with an AI agent. Write only your "
            "next message to the agent, one at a time and in your own words. Give only what the agent asks for, "
            "and invent nothing beyond your instruction. When your goal is reached, or the conversation should "
            f"end, reply with {marker} alone.\n\nYour instruction:\n{instruction}"
        )
        flipped: list[ChatMessage] = [ChatMessage(role="system", content=system)]
        for m in transcript:
            if m.role == "assistant" and m.text.strip():
                flipped.append(ChatMessage(role="user", content=m.text))
            elif m.role == "user":
                flipped.append(ChatMessage(role="assistant", content=m.text))
        if len(flipped) > 1 and flipped[1].role == "assistant":
            flipped.insert(1, ChatMessage(role="user", content="Hi! How can I help you today?"))
        return ModelRequest(messages=flipped)

    def _difference_from_base(self, call: _Call) -> str:
        """Where a call answered live first differs from the base's call at the same
        place (the model request at the same step; the same tool's arguments at the same
        call position), as a JSON path: ``the request differs from the base at
        messages[7].content``. Deterministic, so a resume's reasons equal a fresh run's."""
        if call.kind == "model":
            if call.request is None or call.step >= len(self.base_models):
                return "no base call at this step"
            base_req = self.base_models[call.step].request
            here = call.request.model_dump(mode="json", exclude_none=True)
            there = base_req.model_dump(mode="json", exclude_none=True)
            at = first_difference(here, there)
            return "the request equals the base's" if at is None else f"the request differs from the base at {at}"
        b = self.base_calls[call.pos] if call.pos < len(self.base_calls) else None
        if b is None or type(b) is not ToolRecord or b.tool != call.name:
            return "no base call of this tool at this position"
        at = first_difference(call.arguments, b.arguments)
        return "the arguments equal the base's" if at is None else f"the arguments differ from the base at {at}"

    #: the answer chain, in the order of :data:`ANSWER_CHAIN` (a new source: one method here)
    _CHAIN: ClassVar[tuple[_ChainStep, ...]] = (
        _from_intervention,
        _from_recorded,
        _from_fixture,
        _from_drift,
        _from_live,
        _from_user,
    )

    # ------------------------------------------------------------------ events of calls

    def _emit(self, call: _Call, answer: _Answer) -> ToolRecord | ModelRecord:
        """Append the event of an answered call (its seq, attribution, span) and do the
        bookkeeping: source count, reason, live duration, fixture use, alignment."""
        pos = call.pos
        seq, b = self._seq_for(pos, call.kind)
        run_id = b.run_id if b is not None else self._last_run_id
        gen_id = b.generation_id if b is not None else self._last_generation_id
        source = answer.source
        rec: ToolRecord | ModelRecord
        if call.kind == "model":
            rec = self._model_event(call, answer, seq, b, run_id, gen_id)
        else:
            rec = self._tool_event(call, answer, seq, b, run_id, gen_id)
        note = self._pending_note
        if note is not None:  # what the loop knows of this call (a parsed action, a format-error turn)
            self._pending_note = None
            extra, meta = note
            rec = rec.model_copy(update={"meta": {**(rec.meta or {}), **meta}})
            if extra:
                answer.reason = f"{answer.reason}; {extra}" if answer.reason else extra
        self._append(rec, source)
        self._answers[source] += 1
        self._reasons[seq] = answer.reason
        if answer.live_measured is not None:
            self._live_durations[seq] = answer.live_measured
        if answer.fixture_id:
            self._fixture_uses.append({"seq": seq, "fixture_id": answer.fixture_id})
        # alignment: same call as the base at this position, with the base's answer
        if self._aligned:
            if b is None or call.key != self._base_key(pos, b):
                self._aligned = False
            elif answer.used_pos != pos:
                if isinstance(rec, ModelRecord):
                    same = rec.response == b.response and rec.error == b.error
                else:
                    same = rec.result == b.result
                if not same:
                    self._aligned = False
        return rec

    def _model_event(
        self, call: _Call, answer: _Answer, seq: int, b: Any, run_id: str | None, gen_id: str | None
    ) -> ModelRecord:
        source = answer.source
        request = call.request
        rec: ModelRecord
        if source == "recorded" and answer.used_pos == call.pos and b is not None and b.seq == seq:
            if request is b.request:
                rec = b.model_copy(update={"replayed": True})
            else:
                rec = b.model_copy(update={"replayed": True, "request": request, "key": call.record_key or call.key})
                if call.record_key is not None and call.record_key != b.key:
                    # served past a difference the policy's key exclusions ignore: said per call
                    rec.meta = {**(b.meta or {}), "matched_by_key_exclusions": True}
        else:
            rec = ModelRecord(
                seq=seq,
                at=answer.at if source == "recorded" else None,
                run_id=run_id,
                generation_id=gen_id,
                replayed=True,
                live_fallback=source == "live",
                key=call.record_key or call.key.removeprefix("unresolved:"),
                model=call.name,
                request=request,
                response=answer.response,
                error=answer.error,
                duration_seconds=answer.duration,
                # how the recorded answer was observed (format v2 meta: its response id…)
                meta=self.base_calls[answer.used_pos].meta
                if source == "recorded" and answer.used_pos is not None
                else None,
            )
            if source == "live" and self.policy.live_model and self.policy.live_model != call.name:
                # the model that answered, when the policy swapped it (the key stays the call's)
                rec.meta = {**(rec.meta or {}), "live_model": self.policy.live_model}
            if (
                source == "recorded"
                and answer.used_pos is not None
                and call.record_key is not None
                and call.record_key != self.base_calls[answer.used_pos].key
            ):
                rec.meta = {**(rec.meta or {}), "matched_by_key_exclusions": True}
        if self.tracer is not None:
            with self.tracer.span(
                "model.call",
                {
                    "model": call.name,
                    "key": call.key,
                    "run_id": run_id,
                    "generation_id": gen_id,
                    "replayed": source != "live",
                    "source": source,
                    "step": call.step,
                },
            ):
                pass
        return rec

    def _tool_event(
        self, call: _Call, answer: _Answer, seq: int, b: Any, run_id: str | None, gen_id: str | None
    ) -> ToolRecord:
        source = answer.source
        call_id = self._unique_call_id(run_id, call.tool_call_id, seq)
        span = None
        if self.tracer is not None:
            span = self.tracer.span(
                "tool.execute",
                {
                    "tool": call.name,
                    "tool_call_id": call_id,
                    "key": call.key,
                    "run_id": run_id,
                    "generation_id": gen_id,
                    "replayed": source != "live",
                    "source": source,
                },
            )
            span.__enter__()
        rec: ToolRecord
        if (
            source == "recorded"
            and answer.used_pos == call.pos
            and b is not None
            and b.seq == seq
            and b.tool_call_id == call_id
            and b.arguments is call.arguments
        ):
            rec = b.model_copy(update={"replayed": True})
        else:
            rec = ToolRecord(
                seq=seq,
                at=answer.at if source == "recorded" else None,
                run_id=run_id,
                generation_id=gen_id,
                replayed=True,
                live_fallback=source == "live",
                key=call.key,
                tool=call.name,
                arguments=call.arguments,
                tool_call_id=call_id,
                result=answer.result,
                duration_seconds=answer.duration,
                meta=self.base_calls[answer.used_pos].meta
                if source == "recorded" and answer.used_pos is not None
                else None,
            )
        if span is not None:
            span.__exit__(None, None, None)
        return rec

    # ------------------------------------------------------------------ a person's turn

    def _user_turn(self, step: int, *, ended: bool = False, turn: UserTurn | None = None) -> list[ChatMessage]:
        """The user-turn rule (docs/replay.md, "Replay states") before model step ``step``.

        While the branch is aligned with the base nothing happens here (a recorded
        interrupt is copied as recorded with the calls around it). Once it has diverged,
        the base's user turn at this step (:class:`~core.replay.user_turns.UserTurns`) goes
        through the answer chain as a ``user`` call: a pinned answer (source ``user``)
        becomes an interrupt event; none pauses the replay on a ``user`` requirement
        offering the recorded value; a waived one skips the turn. Returns the messages
        the next request gets: the answer as a ``user`` message when the base's next
        request carried a person's new message or the branch's agent had ended its turn
        (``ended``: a chat agent hears a person in a user message), else none.
        """
        if turn is None:
            if self._aligned or step in self._user_steps:
                return []
            turn = self._turns.before(step)
            if turn is None or (self._runs_agent and not turn.interrupts):
                return []
        self._user_steps.add(turn.step)
        call = _Call("user", "user", turn.key, self._pos, step, True, None, turn=turn)
        prior = self.decisions.get(Requirement.make_id(self.replay_id, call.pos, "user", call.key))
        if prior is not None and prior.status == "waived":
            self._user_waived.append(turn)
            return []
        if self.policy.user_model and self.executor is not None and hasattr(self.executor, "live_model"):
            call.request = self._simulator_request(self._transcript_now)
        answer = self._answer(call)
        text = answer.text or ""
        seq = self._next_seq()
        if turn.interrupts:
            recorded = turn.interrupts[0].value
            field_name, _ = person_text(recorded)
            if isinstance(recorded, dict):
                value: Any = {**recorded, (field_name or "input"): text}
            else:
                value = text
        else:
            value = {"type": "input", "role": "user", "input": text}
        simulated = answer.source == "live"
        if simulated and isinstance(value, dict):
            assert call.request is not None and self.policy.user_model  # the simulator answered it
            value["simulated_by"] = {
                "model": self.policy.user_model,
                "turn": turn.key,
                "request": self._simulator_key(self.policy.user_model, call.request),
            }
        rec = InterruptRecord(
            seq=seq,
            run_id=self._last_run_id,
            generation_id=self._last_generation_id,
            replayed=True,
            live_fallback=simulated,
            value=value,
        )
        self._append(rec, answer.source)
        self._answers[answer.source] += 1
        self._reasons[seq] = answer.reason
        (self._user_simulated if simulated else self._user_answered).append(turn)
        if self._reporting:
            self._call_done(rec, call, answer)
        return [ChatMessage(role="user", content=text)] if (turn.messages or ended) else []

    def _call_done(self, rec: Any, call: _Call, answer: _Answer) -> None:
        """A call is finished: report it (``on_event``, ``on_progress``), then poll
        ``cancel`` — so a cancellation always stops the replay between two calls."""
        if self.on_event is not None:
            self.on_event(rec, answer.source)
        if self.on_progress is not None:
            self.on_progress(
                ReplayProgress(
                    kind="call",
                    calls_answered=sum(self._answers.values()),
                    base_calls=len(self.base_calls),
                    steps=self._step,
                    current_seq=rec.seq,
                    call_kind=call.kind,
                    call_name=call.name,
                    source=answer.source,
                    reason=answer.reason,
                )
            )
        self._poll_cancel()
        if self._cancel_requested:
            raise _Halt("failed", error=ReplayErrorInfo(type="Cancelled", message="the replay was cancelled"))

    def check_cancel(self) -> None:
        """For an executor waiting between calls (the command executor, while its agent
        runs its own tools): stop the replay now if ``cancel`` asks for it (as between
        two calls: ``failed`` with error type ``Cancelled``)."""
        self._poll_cancel()
        if self._cancel_requested:
            raise _Halt("failed", error=ReplayErrorInfo(type="Cancelled", message="the replay was cancelled"))

    def _poll_cancel(self) -> None:
        if not self._cancel_requested and self.cancel is not None and self.cancel():
            self._cancel_requested = True

    # ------------------------------------------------------------------ the tool gate's engine rules

    def _invocation(self, call: _Call, *, replayed: bool) -> ToolInvocation:
        return ToolInvocation(
            tool=call.name,
            arguments=call.arguments,
            tool_call_id=call.tool_call_id,
            run_id=self._last_run_id,
            generation_id=self._last_generation_id,
            key=call.key,
            redacted_arguments=call.arguments,
            replayed=replayed,
            index=call.pos,
        )

    def _policy_deny(self, call: _Call, pol: tuple[int, ToolPolicyIntervention]) -> PolicyDenied | None:
        """Authorization step: a ``tool_policy`` deny intervention."""
        idx, iv = pol
        if iv.action != "deny":
            return None
        self._applied.add(idx)
        return PolicyDenied(call.name, iv.reason or f"denied by intervention {idx} (tool_policy)")

    def _policy_approval(self, call: _Call, pol: tuple[int, ToolPolicyIntervention]) -> PolicyDenied | None:
        """Approval step: a ``tool_policy`` require_approval intervention — pauses on an
        approval requirement until it is approved; a waived one is a denial."""
        idx, iv = pol
        if iv.action != "require_approval":
            return None
        self._applied.add(idx)
        name, arguments, pos = call.name, call.arguments, call.pos
        ahash = redacted_args_hash(arguments)
        rid = Requirement.make_id(self.replay_id, pos, "approval", call.key)
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
                reason=iv.reason or f"tool {name!r} requires approval (intervention {idx})",
            )
            raise _Halt("paused", requirement=req)
        if prior.status == "waived":
            return PolicyDenied(name, f"approval refused (requirement {rid} waived)")
        return None

    # ------------------------------------------------------------------ loops

    def _generic_loop(self) -> tuple[str, Any]:
        """The generic chat agent loop (no executor, or one that only answers calls: the
        provider executor). Returns ``(stop_reason, output)``.

        With an action parser (:func:`core.importers.actions.parser_for`: an agent that
        acts in text), a reply without tool calls is parsed for its action, tool results
        come back as the parser's observation messages, an unreadable reply is followed by
        the format's own format-error turn (at most ``max_requeries`` in a row, then the
        loop stops with ``format_error``), and an action that ends the agent's run
        (``submit``) ends the loop with its result as the output."""
        calls = self.base_calls
        n = len(calls)
        has_models = bool(self.base_models)
        parser = self._parser
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
                tool_msgs, unanswered = [], self._actions_of(resp)
            else:
                try:
                    res = self.call_tool(r.tool, r.arguments, r.tool_call_id)
                except PolicyDenied as exc:
                    res = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(exc)))
                tc = _take_call(unanswered, r)
                if parser is not None and not r.tool_call_id:
                    seen = list(last_request.messages) if last_request is not None else []
                    if last_response is not None:
                        seen.append(last_response.message)
                    tool_msgs.append(parser.observation(res, seen + tool_msgs))
                else:
                    tool_msgs.append(tool_message(tc.id if tc is not None else r.tool_call_id, r.tool, res))
                if parser is not None and parser.ends_run(r.tool) and not self._aligned:
                    return "final", observed_text(res)
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
        # a conversation's person's turns are offered in order from where the branch left the base
        self._conv_from = self._step
        transient: list[ChatMessage] = []  # a format-error turn: sent once, not kept
        format_errors, format_why = 0, ""
        if last_response is None:
            first = self.base_models[0]
            transcript = list(first.request.messages) + tool_msgs
            pending: list[Any] = []
            need_model = True
        else:
            assert last_request is not None  # set together with last_response
            transcript = list(last_request.messages) + [last_response.message] + tool_msgs
            pending = unanswered
            # tool results the model has not seen yet (the difference may be one of them)
            need_model = bool(pending) or bool(tool_msgs)
            if parser is not None and not pending and not tool_msgs:
                why = self._format_error_of(last_response)
                if why is not None:  # the changed reply holds no action the agent can read
                    transcript.pop()
                    transient = [last_response.message, parser.format_error(why)]
                    format_errors, format_why, need_model = 1, why, True
        while True:
            for tc in pending:
                if parser is not None and tc.id is None:
                    self._pending_note = ("", {"action_parser": parser.name})
                try:
                    res = self.call_tool(tc.name, tc.arguments, tc.id)
                except PolicyDenied as exc:
                    res = ToolResult(error=ErrorInfo(type="PolicyDenied", message=str(exc)))
                finally:
                    self._pending_note = None
                if parser is not None and tc.id is None:
                    transcript.append(parser.observation(res, transcript))
                else:
                    transcript.append(tool_message(tc.id, tc.name, res))
                if parser is not None and parser.ends_run(tc.name):
                    return "final", observed_text(res)
            step = self._step
            self._transcript_now = transcript
            if not need_model:
                # the branch's agent ended its turn: what the person says next (the
                # user-turn rule) — answered, the loop goes on with their message
                heard = self._person_speaks(step)
                if heard is None:
                    return "final", last_response.message.text if last_response else None
                transcript.extend(heard)
            elif not transient and not self._turns.conversation:
                transcript.extend(self._user_turn(step))
            b = self.base_models[step] if step < len(self.base_models) else self.base_models[-1]
            req = ModelRequest(
                messages=list(transcript) + transient,
                tools=b.request.tools,
                stop=b.request.stop,
                options=b.request.options,
            )
            if transient:
                assert parser is not None  # only the parser's loop makes format-error turns
                self._pending_note = (
                    f"format-error turn: the previous reply had no action the {parser.name} parser could read "
                    f"({format_why}); the agent re-asks the model, as it would have, without keeping that reply",
                    {"format_error_turn": format_why},
                )
            try:
                resp = self.call_model(b.model, req)
            except ModelCallError:
                return "model_error", None
            finally:
                self._pending_note = None
            last_response = resp
            made = self.last_request
            assert made is not None  # call_model sets it before answering
            kept = list(made.messages)
            if transient:
                del kept[len(kept) - len(transient) :]  # the unreadable reply is not kept
            pending = self._actions_of(resp)
            if parser is not None and not pending:
                why = self._format_error_of(resp)
                if why is not None:
                    format_errors += 1
                    if format_errors > parser.max_requeries:
                        return "format_error", None
                    transcript = kept
                    transient = [resp.message, parser.format_error(why)]
                    format_why, need_model = why, True
                    continue
            format_errors, transient = 0, []
            transcript = kept + [resp.message]
            need_model = bool(pending)

    def _person_speaks(self, step: int) -> list[ChatMessage] | None:
        """After the branch's agent ended its turn (a reply without tool calls): the
        person's next message, or ``None`` when the run ends there.

        In a conversation (:attr:`UserTurns.conversation`: tau-bench, multi-turn chats)
        the person speaks after every agent turn: the base's next unheard turn is offered
        (:meth:`UserTurns.next_spoken`, in order from where the branch diverged; the
        closing turn once the base has none left, when its importer kept one); none
        left, a waived turn, or an answer holding
        the conversation's stop marker (``###STOP###``), ends it. Otherwise the base's own
        turn at this step, if any, is heard (the user-turn rule)."""
        if self._turns.conversation:
            turn = self._turns.next_spoken(self._conv_from if self._conv_from is not None else step, self._user_steps)
            if turn is None:
                return None
            heard = self._user_turn(step, ended=True, turn=turn)
            self._conv_from = turn.step + 1
            if not heard:
                return None
            marker = self._turns.stop_marker()
            if marker and marker in heard[0].text:
                return None
            if not heard[0].text.strip() and self._user_simulated and self._user_simulated[-1] is turn:
                return None  # the simulator said nothing: the person has nothing more to say
            return heard
        if step >= len(self.base_models) or self._turns.before(step) is None:
            return None
        return self._user_turn(step, ended=True) or None

    def _actions_of(self, resp: ModelResponse) -> list[Any]:
        """The tool calls a reply asks for: its structured ``tool_calls``, else (with an
        action parser) the actions parsed from its text (``id`` ``None``); a reply the
        parser cannot read asks for none."""
        calls = list(resp.message.tool_calls or [])
        if calls or self._parser is None:
            return calls
        try:
            return [_Action(None, a.tool, a.arguments) for a in self._parser.parse(resp.message.text)]
        except ActionFormatError:
            return []

    def _format_error_of(self, resp: ModelResponse) -> str | None:
        """Why the action parser cannot read ``resp`` (``None``: it can, or no parser)."""
        if self._parser is None or resp.message.tool_calls:
            return None
        try:
            self._parser.parse(resp.message.text)
        except ActionFormatError as exc:
            return str(exc)
        return None

    def _models_before_cp(self) -> int:
        """How many base model calls come before the checkpoint."""
        return sum(1 for r in self.base_calls[: self.cp_pos] if type(r) is ModelRecord)

    def _policy_problem(self) -> str | None:
        """What makes this policy impossible with this executor, checked before anything
        runs (``None``: nothing): with an executor that only answers calls (the provider
        executor), live tool calls (it runs no tools) and a live model call of a recording
        whose model is ``unknown`` without ``live_model``; ``user_model`` with an executor
        that runs its own agent (that agent builds its own requests, so the simulator
        would see no conversation)."""
        if self.executor is None:
            return None
        if self.policy.user_model and self._runs_agent:
            return (
                "the policy's user_model needs an executor that only answers calls (provider:openai or "
                "provider:anthropic): an executor running its own agent builds its own requests"
            )
        if self._runs_agent:
            return None
        if self.policy.tool == "live":
            return (
                "the provider executor runs no tools, so the policy's tool source cannot be live "
                "(use recorded or fixture: tool calls answer from the recording, fixtures or requirements)"
            )
        later = self.base_models[self._models_before_cp() :] or self.base_models[-1:]
        if self.policy.model == "live" and not self.policy.live_model and any(m.model == "unknown" for m in later):
            return (
                "the recording does not name its model ('unknown'), so a live call cannot ask it: "
                "set the policy's live_model (the model to continue with)"
            )
        return None

    def _base_shape(self) -> list[str]:
        """What in the base the generic chat loop cannot model: tool calls no preceding
        model response lists (text actions), and calls after a response without tool
        calls with no person's turn between (a person's turn is a ``user`` requirement the
        loop goes on from)."""
        unlinked = continued = 0
        open_calls: list[Any] = []
        after_final = False
        step = 0
        for r in self.base_calls:
            if type(r) is ModelRecord:
                if after_final and self._turns.before(step) is None:
                    continued += 1
                step += 1
                calls = r.response.message.tool_calls if r.response is not None else None
                open_calls = list(calls or [])
                after_final = r.response is not None and not calls
            else:
                parsed = self._parser is not None and (r.meta or {}).get("action_parser") == self._parser.name
                if _take_call(open_calls, r) is None and not parsed:
                    unlinked += 1
                after_final = False
        out = []
        source = self.base.metadata.get("source")
        if isinstance(source, dict) and source.get("format") == "who_and_when":
            # Who&When's importer: model agent/NAME for a speaking agent, tool NAME for a tool-like one
            names = {m.model.removeprefix("agent/") for m in self.base_models}
            names |= {r.tool for r in self.base_calls if type(r) is ToolRecord}
            shown = ", ".join(sorted(names)[:4]) + (", …" if len(names) > 4 else "")
            out.append(
                f"a multi-agent log ({len(names)} agents speak in turn: {shown}); nothing in it says which "
                "speaks next or what each one's model was asked, so it is not continued"
            )
        if unlinked:
            out.append(
                f"{unlinked} tool call(s) are not listed in the model response before them"
                + (f"; {self._parser_problem}" if self._parser_problem else "")
            )
        if continued:
            out.append(f"{continued} model call(s) follow a response without tool calls, with no person's turn between")
        return out

    def _executor_loop(self) -> tuple[str, Any]:
        task = self.base.metadata.get("task")
        executor = self.executor
        assert executor is not None  # _run only takes this loop with an executor
        output = executor.run(self, task)
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
        self._reporting = self.on_event is not None or self.on_progress is not None or self.cancel is not None
        if self.on_progress is not None:
            self.on_progress(ReplayProgress(kind="started", calls_answered=0, base_calls=len(self.base_calls)))
        problem = self._policy_problem()
        if problem is not None:
            status, stop_reason = "failed", "error"
            error = ReplayErrorInfo(type="BranchError", message=problem + "; nothing ran")
        elif self.policy.wants_live and self.executor is None:
            which = " and ".join(
                [f"{b}=live" for b in ("model", "tool") if getattr(self.policy, b) == "live"]
                + (["user_model"] if self.policy.user_model else [])
            )
            status, stop_reason = "failed", "error"
            error = ReplayErrorInfo(
                type="NoExecutor",
                message=f"policy {which} needs a wired executor (--executor module:function, provider:openai "
                f"or recorded); none was given, so nothing ran",
            )
        else:
            try:
                if self._runs_agent:
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
        if self.on_progress is not None:
            self.on_progress(
                ReplayProgress(
                    kind="paused" if status == "paused" else "finished",
                    calls_answered=sum(self._answers.values()),
                    base_calls=len(self.base_calls),
                    steps=self._step,
                    requirements=1 if requirement is not None else 0,
                    requirement_id=requirement.id if requirement is not None else None,
                    status="paused" if status == "paused" else "failed" if status == "failed" else "completed",
                    stop_reason=stop_reason,
                    error=error,
                )
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
            reasons=dict(self._reasons),
        )

    def _comparability(
        self, status: str, stop_reason: str, error: ReplayErrorInfo | None, requirement: Requirement | None
    ) -> Comparability:
        none: list[str] = []
        partial: list[str] = []
        if status == "failed":
            none.append(f"the replay failed: {error.message if error else 'unknown error'}")
        elif status == "paused" and requirement is not None:
            what = "a person's turn" if requirement.kind == "user" else f"{requirement.kind} {requirement.name}"
            none.append(f"the replay is paused on requirement {requirement.id} ({what}); it has not finished")
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
        live = self._answers.get("live", 0) - self._observed - len(self._user_simulated)
        if live:
            partial.append(f"{live} call(s) answered live by the executor: not reproducible from the recording")
        if self._observed or getattr(self.executor, "unmediated_tools", False):
            partial.append(
                f"tools ran inside the agent's own process, unmediated (command executor): {self._observed} tool "
                "result(s) were observed from its requests, not answered from the recording; its side effects happened"
            )
        if self._exclusions:
            partial.append(
                "model calls were matched ignoring the policy's key exclusions ("
                + ", ".join(self._exclusions)
                + "): a request that differs only there was served the recorded answer"
            )
        if self._user_answered:
            n = len(self._user_answered)
            authored = self._user_authored
            which = (
                "authored"
                if authored == n
                else "the recorded answer, pinned"
                if authored == 0
                else f"{authored} authored, {n - authored} the recorded answer pinned"
            )
            partial.append(
                f"{n} person's turn(s) after the branch diverged answered by an answer a user pinned "
                f"(answer source user): {which}, not reproduced from the recording"
            )
        if self._user_simulated:
            partial.append(
                f"{len(self._user_simulated)} person's turn(s) answered live by the user simulator "
                f"{self.policy.user_model} (policy user_model): a model playing the person, not reproducible "
                "from the recording"
            )
        if status == "completed":
            answered = {r.seq for t in self._user_answered + self._user_simulated for r in t.interrupts}
            waived = {r.seq for t in self._user_waived for r in t.interrupts}
            skipped = [
                r.seq
                for r in self._turns.person_interrupts
                if r.seq not in self._copied_interrupts and r.seq not in answered
            ]
            if skipped:
                why = (
                    "the user waived the turn"
                    if all(s in waived for s in skipped)
                    else "the branch diverged before them and the replay did not reach them"
                    if not waived
                    else "waived, or not reached after the branch diverged"
                )
                partial.append(
                    f"{len(skipped)} recorded person's input(s) skipped (seq {', '.join(map(str, skipped[:10]))}"
                    f"{', ...' if len(skipped) > 10 else ''}): {why}"
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
                "policy": b.policy.model_dump(mode="json", exclude_none=True),
                "executor": self.executor_name,
                "stop_reason": stop_reason,
                "answer_sources": {str(s): src for s, src in self._sources.items() if src != "recorded"},
                "answer_reasons": {str(s): self._reasons[s] for s, src in self._sources.items() if src != "recorded"},
                "fixture_uses": list(self._fixture_uses),
            },
        }
        run_info = getattr(self.executor, "run_metadata", None) if self.executor is not None else None
        if callable(run_info):
            try:
                meta["replay"]["executor_run"] = run_info()
            except Exception:  # noqa: BLE001 — what an executor says of its run is optional
                pass
        # the base's final-output rule (core.analysis.final_output) judges the replay alike
        for k in ("task", "executor", "agent", "model", "dataset", "final_output_rule", "action_parser", "user_turns"):
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


def _answers_text(n: int) -> str:
    """``"1 recorded answer was"`` / ``"2 recorded answers were"``."""
    return f"{n} recorded answer was" if n == 1 else f"{n} recorded answers were"


def _producer() -> str:
    from .. import __version__

    return f"chassis-inspector {__version__}"
