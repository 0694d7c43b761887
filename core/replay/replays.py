"""Running replays in a workspace: start, resume, dry run (SPEC "Replay engine").

:func:`start_replay` resolves the branch against the base once
(:func:`~core.replay.branch.resolve_branch`), creates the replay record (``queued``), marks
it ``running`` with a new attempt, runs :class:`~core.replay.engine.ReplayEngine`, and stores
every output in one transaction; :func:`resume_replay` runs a paused replay's branch again
with the workspace's current fixtures and decisions. Rules: ``docs/replay.md``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import BranchError, CanonicalizationError, InspectorError, WorkspaceError
from ..record.recording import Recording
from .boundary import Executor, ExecutorChoice, choose_executor, load_executor
from .branch import Branch, ResolvedBranch, resolve_branch
from .dry_run import predict
from .engine import ReplayEngine, ReplayOutcome, ReplayProgress, ToolHooks
from .fixtures import Fixture, FixtureGateway, load_fixture_file
from .replay_record import (
    Attempt,
    PauseInfo,
    ReplayErrorInfo,
    ReplayRecord,
)

if TYPE_CHECKING:
    from ..workspace import ReplayClaim, Workspace

__all__ = ["dry_run", "resolve_executor", "resume_replay", "start_replay"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resolve_executor(
    spec: str | ExecutorChoice | None, base: Recording, *, trust_executor: bool = False
) -> tuple[Executor | None, str | None]:
    """Resolve and load ``--executor``: ``None`` (none), ``recorded`` (the base's
    ``metadata.executor``: code named by a file, loaded only with ``trust_executor``,
    and never from the current folder), ``module:function`` (named by the user) or an
    :class:`~core.replay.boundary.ExecutorChoice` (see
    :func:`~core.replay.boundary.choose_executor`). Returns ``(executor, spec)``.

    Raises:
        BranchError: the reason, one line (``recorded`` without ``trust_executor``
            names the module and how to consent; nothing is imported then).
    """
    choice = choose_executor(spec, base, trust_recorded=trust_executor)
    if choice is None:
        return None, None
    try:
        return load_executor(choice), choice.spec
    except ValueError as exc:
        raise BranchError(str(exc)) from None


def _record_from_outcome(record: ReplayRecord, outcome: ReplayOutcome) -> ReplayRecord:
    record.status = outcome.status  # type: ignore[assignment]
    record.comparability = outcome.comparability
    record.first_divergence = outcome.first_divergence
    record.pause = PauseInfo(requirement_ids=[outcome.requirement.id]) if outcome.requirement else None
    record.error = outcome.error
    record.stop_reason = outcome.stop_reason
    record.steps = outcome.steps
    record.answers = outcome.answers
    record.fixture_uses = outcome.fixture_uses
    record.interventions_applied = outcome.interventions_applied
    record.output = outcome.output
    record.owner = None
    record.updated_at = _now()
    return record


def _fail_attempt(ws: Workspace, record: ReplayRecord, attempt: Attempt, exc: BaseException) -> bool:
    """Mark the attempt and the replay ``failed`` with ``exc`` as the error, and store it
    (best effort: the original error is what the caller reports). Returns whether it was
    stored; when not (e.g. the disk is full), the replay stays ``running`` in the
    workspace and reads as ``interrupted`` once this process releases its lock."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    err = ReplayErrorInfo(type=type(exc).__name__, message=message)
    # nothing this attempt computed is kept: its outcome was never stored (no events)
    record._clear_outcome(f"the replay failed: {message}")
    record.status, record.error, record.stop_reason = "failed", err, "error"
    record.owner = None
    record.updated_at = _now()
    attempt.ended_at, attempt.outcome = _now(), "failed"
    try:
        ws.save_replay_outputs(record, None, [])
    except Exception:  # noqa: BLE001 — the workspace itself failed: the caller reports exc
        return False
    return True


def _run_attempt(
    ws: Workspace,
    record: ReplayRecord,
    base: Recording,
    branch: ResolvedBranch,
    *,
    kind: Literal["start", "resume"],
    executor: Executor | None,
    executor_name: str | None,
    live_cache: Iterable[Any] = (),
    hooks: ToolHooks | None = None,
    claim: ReplayClaim,
    events_file: bool = False,
    **engine_kw: Any,
) -> tuple[ReplayRecord, ReplayOutcome]:
    """Run one attempt while this process holds the replay's lock (``claim``,
    :meth:`~core.workspace.Workspace.claim_replay`). The replay is ``running`` (with its
    executor and owner named, claiming no comparability) while it runs, and ends
    ``completed``, ``paused`` or ``failed`` — on ANY exception the attempt is ended and
    the replay stored as ``failed`` with the error before it propagates (an error that
    is not an :class:`~core.errors.InspectorError` is re-raised as a BranchError
    ``replay RID failed: TYPE: MESSAGE``). Only a process killed mid-attempt (or a
    workspace that cannot store even the failure) leaves it ``running``: readers then
    see it ``interrupted``. ``events_file``: write ``replays/ID.json`` before the
    outputs are committed (:meth:`~core.workspace.Workspace.save_replay_outputs`)."""
    attempt = Attempt(number=len(record.attempts) + 1, kind=kind, started_at=_now())
    record.begin_attempt(attempt, claim.owner)
    record.executor = executor_name
    try:
        ws.save_replay_state(record)
        decisions = {r.id: r for r in ws.requirements(replay_id=record.id)}
        engine = ReplayEngine(
            base,
            branch,
            replay_id=record.id,
            fixtures=ws.fixture_gateway(),
            executor=executor,
            executor_name=executor_name,
            decisions=decisions,
            live_cache=live_cache,
            hooks=hooks,
            **engine_kw,
        )
        outcome = engine.run()
        _record_from_outcome(record, outcome)
        attempt.ended_at, attempt.outcome = _now(), outcome.status
        attempt.live_durations = {str(k): v for k, v in sorted(outcome.live_durations.items())}
        reqs = [outcome.requirement] if outcome.requirement else []
        ws.save_replay_outputs(record, outcome, reqs, events_file=events_file)
    except CanonicalizationError as exc:  # a stored value without a canonical form
        _fail_attempt(ws, record, attempt, exc)
        raise BranchError(f"replay {record.id} (branch {branch.id}, workspace {ws.path}) failed: {exc}") from None
    except InspectorError as exc:
        _fail_attempt(ws, record, attempt, exc)
        raise
    except Exception as exc:  # any failure ends the attempt as failed
        _fail_attempt(ws, record, attempt, exc)
        message = record.error.message if record.error is not None else str(exc)
        raise BranchError(f"replay {record.id} failed: {type(exc).__name__}: {message}") from exc
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: record, then let it through
        _fail_attempt(ws, record, attempt, exc)
        raise
    return record, outcome


def start_replay(
    ws: Workspace,
    base_path: str | Path,
    branch: Branch | ResolvedBranch,
    *,
    executor: str | ExecutorChoice | None = None,
    trust_executor: bool = False,
    fixtures: list[Fixture] | None = None,
    fixtures_path: str | Path | None = None,
    base: Recording | None = None,
    hooks: ToolHooks | None = None,
    replay_id: str | None = None,
    on_event: Callable[[Any, str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    on_progress: Callable[[ReplayProgress], None] | None = None,
    events_file: bool = False,
) -> tuple[ReplayRecord, ReplayOutcome]:
    """Create a replay of ``branch`` in workspace ``ws``, run it, store every output in
    one transaction, and return ``(record, outcome)``.

    The process holds the replay's lock (:meth:`~core.workspace.Workspace.claim_replay`)
    from before the replay is stored until its outcome is: killed at any moment, it
    leaves the replay ``interrupted`` (resumable with :func:`resume_replay`), never
    ``running`` for good. ``events_file``: also write the events to ``replays/ID.json``
    beside the database (:meth:`~core.workspace.Workspace.events_file`; what the
    command line does), before the outputs are committed — files first, commit last.

    ``branch``: a :class:`~core.replay.branch.ResolvedBranch` of ``base`` runs as it is; a
    plain :class:`Branch` is resolved first (:func:`~core.replay.branch.resolve_branch`:
    validated against the base once, its parent a branch of ``ws``). ``on_event`` /
    ``cancel`` / ``on_progress``: see :class:`ReplayEngine` (progress and cancellation
    for a UI worker).
    ``fixtures`` are stored first as they are; ``fixtures_path`` (``--fixtures FILE``,
    see :func:`core.replay.fixtures.load_fixture_file`) too, its entries without a
    ``scope`` scoped to this replay. ``executor`` is ``None``, ``recorded`` (the base's
    ``metadata.executor``, run only with ``trust_executor``: an executor is code that
    runs), ``module:function`` or an :class:`~core.replay.boundary.ExecutorChoice`
    (:func:`resolve_executor`).

    Raises:
        FormatError: the base cannot be loaded. BranchError: the branch is invalid
        against the base, or the executor cannot be loaded (checked before anything is
        stored: no replay is created), or the attempt failed unexpectedly (the replay is
        stored as ``failed`` first). FixtureError: the fixtures file is invalid.
        OutputError: the events file cannot be written (the replay is stored as
        ``failed``). WorkspaceError: the workspace cannot be written (e.g. the disk is
        full: the replay is ``failed`` or, when not even that can be stored,
        ``interrupted``).
    """
    if base is None:
        base = Recording.load(base_path)
    resolved = resolve_branch(ws, branch, base)  # as is when already resolved for this base
    # resolved before anything is stored: a bad --executor leaves no replay behind
    choice = choose_executor(executor, base, trust_recorded=trust_executor, policy_executor=resolved.policy.executor)
    executor_obj, executor_name = resolve_executor(choice, base)
    rid = replay_id or "rp-" + uuid.uuid4().hex[:12]
    extra = list(fixtures or [])
    if fixtures_path is not None:  # read before anything is stored: a bad file changes nothing
        extra += load_fixture_file(Path(fixtures_path), default_scope=f"replay:{rid}")
    for f in extra:  # every scope checked before anything is stored
        ws.check_scope(f.scope, creating_replay=rid, creating_branch=resolved.id)
    digest = ws.put_recording(base, str(base_path))
    ws.put_branch(resolved, base_digest=digest)
    for f in extra:
        ws.put_fixture(f, creating_replay=rid)
    record = ReplayRecord(
        id=rid,
        base_digest=digest,
        base_path=str(base_path),
        branch_id=resolved.id,
        policy=resolved.policy,
        executor=executor_name,  # known from the start: a replay killed while queued resumes with it
        executor_origin=choice.origin if choice is not None else None,
        status="queued",
    )
    with ws.claim_replay(rid) as claim:  # before the replay is stored: a reader can tell it runs
        record.owner = claim.owner
        ws.create_replay(record)
        return _run_attempt(
            ws,
            record,
            base,
            resolved,
            kind="start",
            executor=executor_obj,
            executor_name=executor_name,
            hooks=hooks,
            on_event=on_event,
            cancel=cancel,
            on_progress=on_progress,
            claim=claim,
            events_file=events_file,
        )


def resume_replay(
    ws: Workspace,
    replay_id: str,
    *,
    executor: str | ExecutorChoice | None = None,
    trust_executor: bool = False,
    hooks: ToolHooks | None = None,
    on_event: Callable[[Any, str], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    on_progress: Callable[[ReplayProgress], None] | None = None,
    events_file: bool = False,
) -> tuple[ReplayRecord, ReplayOutcome]:
    """Resume a paused, failed or interrupted replay: re-run its branch from the start
    with the workspace's current fixtures and requirement decisions, reusing earlier
    live answers; a new attempt is appended (``start`` when the replay never began one).
    ``executor`` defaults to the one the replay was started with (``recorded`` needs
    ``trust_executor``, as in :func:`start_replay`). The replay's lock is
    taken first, so a replay another process is still running is refused, and one
    whose process died (``interrupted``) is simply run again. ``events_file``: as
    :func:`start_replay`.

    Raises:
        ReplayBusy: another process (or thread) is running the replay
            (:class:`core.workspace.ReplayBusy`, a WorkspaceError).
        WorkspaceError: unknown replay id, or the replay already completed.
        BranchError: the stored branch no longer validates against the stored base.
    """
    ws.get_replay(replay_id)  # an unknown id: WorkspaceError, before any lock file is made
    with ws.claim_replay(replay_id) as claim:
        record = ws.get_replay(replay_id)  # read again under the lock
        if record.status == "completed":
            raise WorkspaceError(f"replay {replay_id} is already completed; start a new replay instead")
        base = ws.get_recording(record.base_digest)
        branch = resolve_branch(None, ws.get_branch(record.branch_id), base)  # stored: its parent was checked then
        prev = ws.replay_events(replay_id)
        live = [r for r in prev.records if r.live_fallback] if prev is not None else []
        record.error = None
        record.pause = None
        # the executor the replay started with was chosen (and, from a file, consented to) then
        if executor is not None:
            choice = choose_executor(executor, base, trust_recorded=trust_executor)
        elif not record.executor and branch.policy.executor:
            choice = choose_executor(None, base, trust_recorded=trust_executor, policy_executor=branch.policy.executor)
        elif record.executor:
            # a replay stored before origins were recorded: treated as named by a file
            choice = ExecutorChoice(record.executor, record.executor_origin or "recording")
        else:
            choice = None
        executor_obj, executor_name = resolve_executor(choice, base)
        record.executor_origin = choice.origin if choice is not None else None
        return _run_attempt(
            ws,
            record,
            base,
            branch,
            kind="resume" if record.attempts else "start",
            executor=executor_obj,
            executor_name=executor_name,
            live_cache=live,
            hooks=hooks,
            on_event=on_event,
            cancel=cancel,
            on_progress=on_progress,
            claim=claim,
            events_file=events_file,
        )


def dry_run(
    ws: Workspace | None,
    base: Recording,
    branch: Branch,
    *,
    executor_wired: bool,
    observed_tools: bool = False,
    answers_only: bool = False,
) -> dict[str, Any]:
    """:func:`predict` with the workspace's fixtures (or none): ``{"status", "reason",
    "predictions", "counts"}``, nothing stored. ``observed_tools``: the executor is a
    command executor (its agent runs its own tools); ``answers_only``: it only answers
    calls (the provider executor). Raises BranchError for a branch
    invalid against ``base``."""
    gw = ws.fixture_gateway() if ws is not None else FixtureGateway()
    return predict(
        base,
        branch,
        fixtures=gw,
        executor_wired=executor_wired,
        observed_tools=observed_tools,
        answers_only=answers_only,
    )
