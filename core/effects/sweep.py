"""Sweep: counterfactual attribution over the calls of one run (SPEC "Diffs, metrics, effects, audit": sweep).

:func:`run_sweep` makes **one branch per candidate call** of a base recording, each with
one intervention that replaces that call's recorded answer, replays them all (in
parallel processes with ``jobs > 1``), compares each replay with the base
(:func:`core.effects.causal.compare_replay`) and ranks the candidates by their effect on the
outcome (:func:`core.effects.ranking.rank_effects`). The call whose change turns failure into
success ranks first: the *decisive error* of failure-attribution research.

**Candidates** (``candidates``): ``errors`` — tool calls whose result is an error and
model calls that failed; ``tools`` — every tool call; ``all`` (default) — every tool
and model call.

**Strategies** (``strategy``), what replaces the call's recorded answer:

* ``resample`` (default) — the executor answers the call again, live
  (``executor.live_tool(name, arguments)`` / ``executor.live_model(model, request)`` on
  the recorded call, which is exactly the call the branch makes: every earlier call is
  answered as recorded); needs an executor;
* ``knockout`` — a tool call answers an error (``KnockedOut``); a model call answers an
  empty assistant message with no tool call (the agent gets nothing to act on);
* ``fixture`` — the best fixture of the library for the call (scope project, exact
  args before tool-wide, as the fixture gateway chooses); a call without one is skipped.

The intervention is explicit (a ``tool_result`` or ``model_response`` at the call's
seq, noted ``sweep <strategy>``), the checkpoint is the call's seq, and the policy is
``model=live, tool=live`` with an executor (after the change the agent's own code
decides, and calls the recording cannot answer are answered live), else ``drift:
lenient`` (the generic chat loop; the base's answers stand in, which lowers the reliability).

A sweep with a workspace stores every branch, replay, diff and metric there and
refreshes the base's stored effects; without one everything stays in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.metrics import load_predicate, run_metrics_row
from ..errors import AnalysisError, BranchError, FixtureError
from ..record.io import dumps_recording, recording_digest
from ..record.nesting import ensure_recursion_limit
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    ModelResponse,
    Recording,
    ToolRecord,
    ToolResult,
)
from ..replay.boundary import ExecutorChoice, choose_executor, load_executor
from ..replay.branch import (
    BranchDraft,
    ModelResponseIntervention,
    Policy,
    ToolResultIntervention,
    resolve_branch,
)
from ..replay.fixtures import FixtureGateway, load_fixture_file
from .causal import compare_replay, workspace_effects
from .ranking import Effect, Observation, rank_effects

__all__ = [
    "CANDIDATE_SETS",
    "STRATEGIES",
    "Candidate",
    "SweepError",
    "SweepResult",
    "candidate_intervention",
    "fixture_from_json",
    "run_sweep",
    "sweep_candidates",
    "sweep_policy",
]

STRATEGIES = ("resample", "knockout", "fixture")
CANDIDATE_SETS = ("errors", "tools", "all")


class SweepError(AnalysisError):
    """A sweep cannot run: unknown strategy or candidate set, no executor for
    ``resample``, bad ``jobs`` / ``repeat``."""

    title = "sweep"


class _Skip(Exception):
    """A candidate that cannot be swept (the reason is the message)."""


@dataclass(frozen=True)
class Candidate:
    """A call of the base to sweep: ``seq``, ``kind`` (``tool`` | ``model``), ``name``
    (tool or model) and whether its recorded answer is an ``error``."""

    seq: int
    kind: str
    name: str
    error: bool

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "name": self.name, "error": self.error}


def sweep_candidates(base: Recording, which: str = "all") -> list[Candidate]:
    """The candidate calls of ``base`` in seq order (``which`` ∈ :data:`CANDIDATE_SETS`).

    Raises SweepError for another ``which``."""
    if which not in CANDIDATE_SETS:
        raise SweepError(f"--candidates must be one of {', '.join(CANDIDATE_SETS)}, not {which!r}")
    out = []
    for r in base.records:
        if isinstance(r, ToolRecord):
            c = Candidate(r.seq, "tool", r.tool, r.result.error is not None)
        elif isinstance(r, ModelRecord):
            c = Candidate(r.seq, "model", r.model, r.error is not None)
        else:
            continue
        if which == "errors" and not c.error:
            continue
        if which == "tools" and c.kind != "tool":
            continue
        out.append(c)
    return out


def candidate_intervention(
    base: Recording,
    seq: int,
    strategy: str,
    *,
    executor: Any = None,
    fixtures: FixtureGateway | None = None,
    live_model: str | None = None,
) -> Any:
    """The intervention replacing the recorded answer of base call ``seq`` under
    ``strategy`` (module docstring); ``live_model``: the model a resampled model call
    asks instead of the recorded one (needed when the recording's is ``unknown``).
    Raises ``_Skip`` (internal) with the reason when the call cannot be swept that way;
    SweepError for an unknown strategy."""
    if strategy not in STRATEGIES:
        raise SweepError(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    rec = next((r for r in base.records if r.seq == seq), None)
    if not isinstance(rec, (ToolRecord, ModelRecord)):
        raise _Skip(f"seq {seq} is not a tool or model call")
    note = f"sweep {strategy}"
    if isinstance(rec, ToolRecord):
        if strategy == "resample" and not _runs_tools(executor):
            raise _Skip(
                f"the provider executor runs no tools, so tool {rec.tool} cannot be resampled: "
                "sweep it with --strategy knockout or fixture"
            )
        if strategy == "resample":
            try:
                result = executor.live_tool(rec.tool, rec.arguments)
                if not isinstance(result, ToolResult):
                    result = ToolResult.model_validate(result)
            except Exception as exc:  # noqa: BLE001 — the user's executor: a failed resample skips the call
                raise _Skip(f"the executor could not resample tool {rec.tool}: {type(exc).__name__}: {exc}") from None
        elif strategy == "knockout":
            result = ToolResult(error=ErrorInfo(type="KnockedOut", message=f"{rec.tool} was knocked out (sweep)"))
        else:
            from ..record.canonical import args_hash

            fx = (fixtures or FixtureGateway()).match("tool", rec.tool, args_hash(rec.arguments))
            if fx is None:
                raise _Skip(f"no fixture for tool {rec.tool} with these arguments")
            result, note = fx.tool_result(), f"sweep fixture {fx.id}"
        return ToolResultIntervention(seq=seq, result=result, note=note)
    if strategy == "resample":
        model = live_model or rec.model
        if model == "unknown":
            raise _Skip("the recording does not name its model ('unknown'): give --live-model to resample it")
        try:
            response = executor.live_model(model, rec.request)
            if not isinstance(response, ModelResponse):
                response = ModelResponse.model_validate(response)
        except Exception as exc:  # noqa: BLE001 — the user's executor
            raise _Skip(f"the executor could not resample model {rec.model}: {type(exc).__name__}: {exc}") from None
    elif strategy == "knockout":
        response = ModelResponse(message=ChatMessage(role="assistant", content=""), finish_reason="stop")
    else:
        key = rec.key or rec.compute_key()
        fx = (fixtures or FixtureGateway()).match("model", rec.model, key)
        if fx is None:
            raise _Skip(f"no fixture for model {rec.model} with this request")
        response, note = fx.model_response(), f"sweep fixture {fx.id}"
    return ModelResponseIntervention(seq=seq, response=response, note=note)


def sweep_policy(executor_wired: bool, *, runs_tools: bool = True, live_model: str | None = None) -> Policy:
    """The policy of sweep branches: live model and tools with an executor (only live
    model calls, tools answered from the recording, for one that runs no tools — the
    provider executor — with ``live_model`` when given), else the generic loop with
    lenient drift."""
    if not executor_wired:
        return Policy(drift="lenient")
    if not runs_tools:
        return Policy(model="live", live_model=live_model)
    return Policy(model="live", tool="live", live_model=live_model)


def _runs_tools(executor: Any) -> bool:
    """Whether an executor answers tool calls (the provider executor does not)."""
    return executor is not None and getattr(executor, "runs_agent", True) is not False


# --------------------------------------------------------------------------- workers

_BASES: dict[str, Recording] = {}
_EXECUTORS: dict[ExecutorChoice, Any] = {}
_PREDICATES: dict[str, Any] = {}


MAX_REPEAT = 1000
"""Most replays per candidate a sweep accepts (``--repeat``): beyond it a typo, not a plan."""
MAX_JOBS = 64
"""Most worker processes a sweep starts (``--jobs``)."""


def _die_with_parent(parent_pid: int) -> None:
    """Make this worker process end when the sweeping process ends, even by SIGKILL
    (which runs no clean-up): on Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (prctl(2));
    everywhere a daemon thread that exits the worker once ``parent_pid`` is gone or the
    worker was re-parented."""
    import signal
    import sys
    import threading
    import time

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    first_ppid = os.getppid()
    if not _alive(parent_pid):  # the sweeping process died before the worker started
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != first_ppid or not _alive(parent_pid):
                os._exit(1)

    threading.Thread(target=watch, name="sweep-parent-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _init_worker(data: bytes, digest: str, path: str, parent_pid: int | None = None, quiet: bool = False) -> None:
    """Worker-process initializer: end with the sweeping process (``parent_pid``, see
    :func:`_die_with_parent`), raise its recursion limit for values nested up to the
    nesting limit (:func:`core.record.nesting.ensure_recursion_limit`), and parse the base
    once per process (not once per task). ``quiet``: the worker's standard output and
    error go to the null device — a worker of a full-screen caller (the app) would else
    write over its screen; its failures still come back as the task's exception."""
    if quiet:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    ensure_recursion_limit()
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    _BASES.clear()
    _BASES[digest] = Recording.loads(data, source=path, verify_keys=False)


def _base_of(task: dict[str, Any]) -> Recording:
    rec = _BASES.get(task["digest"])
    if rec is None:
        raise SweepError(f"{task['base_path']}: the sweep worker has no base recording")
    return rec


def _choice_of(task: dict[str, Any]) -> ExecutorChoice | None:
    spec = task["executor"]
    return ExecutorChoice(spec, task.get("executor_origin") or "recording") if spec is not None else None


def _executor_of(choice: ExecutorChoice | None) -> Any:
    if choice is None:
        return None
    if choice not in _EXECUTORS:
        try:
            _EXECUTORS[choice] = load_executor(choice)
        except ValueError as exc:
            raise SweepError(str(exc)) from None
    return _EXECUTORS[choice]


def _predicate_of(spec: str | None) -> Any:
    if spec is None:
        return None
    if spec not in _PREDICATES:
        _PREDICATES[spec] = load_predicate(spec)
    return _PREDICATES[spec]


def _run_candidate(task: dict[str, Any]) -> dict[str, Any]:
    """Worker: build the branch of one candidate, replay it, compare. Returns a JSON-able
    dict (``skipped`` reason, or ``replay`` summary + ``diffs`` + ``observation``)."""
    from ..replay.engine import ReplayEngine
    from ..replay.replays import start_replay

    base = _base_of(task)
    seq, attempt = task["seq"], task["attempt"]
    executor = _executor_of(_choice_of(task))
    predicate = _predicate_of(task["predicate"])
    ws = None
    if task["workspace"] is not None:
        from ..workspace import Workspace

        ws = Workspace.open(task["workspace"])
    try:
        fixtures = (
            ws.fixture_gateway() if ws is not None else FixtureGateway([fixture_from_json(f) for f in task["fixtures"]])
        )
        try:
            iv = candidate_intervention(
                base, seq, task["strategy"], executor=executor, fixtures=fixtures, live_model=task.get("live_model")
            )
            draft = BranchDraft(
                base_path=task["base_path"],
                at=seq,
                interventions=[iv],
                policy=sweep_policy(
                    executor is not None, runs_tools=_runs_tools(executor), live_model=task.get("live_model")
                ),
                label=f"sweep {task['strategy']} seq {seq}" + (f" #{attempt}" if task["repeat"] > 1 else ""),
            )
            # validated once here; start_replay and the engine run it as resolved. No
            # workspace: a sweep's branches are generated, their parent is not checked
            branch = resolve_branch(None, draft, base)
        except (_Skip, BranchError) as exc:
            return {"seq": seq, "attempt": attempt, "skipped": str(exc)}
        if ws is not None:
            record, outcome = start_replay(ws, task["base_path"], branch, executor=_choice_of(task), base=base)
        else:
            from ..replay.replay_record import ReplayRecord

            rid = f"rp-sweep-{seq}-{attempt}"
            outcome = ReplayEngine(
                base, branch, replay_id=rid, fixtures=fixtures, executor=executor, executor_name=task["executor"]
            ).run()
            record = ReplayRecord(
                id=rid,
                base_digest=task["digest"],
                base_path=task["base_path"],
                branch_id=branch.id,
                policy=branch.policy,
                status=outcome.status,
                executor=task["executor"],
                comparability=outcome.comparability,
                first_divergence=outcome.first_divergence,
                error=outcome.error,
                stop_reason=outcome.stop_reason,
                steps=outcome.steps,
                answers=outcome.answers,
                fixture_uses=outcome.fixture_uses,
                interventions_applied=outcome.interventions_applied,
                output=outcome.output,
            )
        events = outcome.events
        base_row = task.get("base_row") or run_metrics_row(base, "base", predicate=predicate)
        cmp = compare_replay(base, branch, record, events, predicate=predicate, base_row=base_row)
        cmp.causal["predicate"] = task["predicate"]
        if ws is not None:
            from .causal import store_comparison

            store_comparison(ws, cmp, events, predicate=predicate)
        return {
            "seq": seq,
            "attempt": attempt,
            "skipped": None,
            "replay": {
                "replay_id": record.id,
                "branch_id": branch.id,
                "status": record.status,
                "comparability": record.comparability.level,
                "outcome": cmp.observation.outcome,
                "label": cmp.causal["label"],
            },
            "observation": cmp.observation.to_json(),
        }
    finally:
        if ws is not None:
            ws.close()


def fixture_from_json(obj: Any) -> Any:
    """A :class:`core.replay.fixtures.Fixture` from its JSON form (for worker processes)."""
    from ..replay.fixtures import Fixture

    return Fixture.model_validate(obj)


# --------------------------------------------------------------------------- sweep


@dataclass
class SweepResult:
    """A finished sweep: ``base_path``, ``digest``, ``strategy``, ``candidates`` (the set
    name) and the candidate calls swept (``calls``), ``executor``, ``replays``
    (``[{seq, attempt, replay_id, branch_id, status, comparability, outcome, label}]``),
    ``skipped`` (``[{seq, reason}]``), ``observations`` and the ranked ``effects``;
    ``cancelled`` when it was stopped before every one of its ``planned`` replays ran
    (``effects`` then rank those that finished)."""

    base_path: str
    digest: str
    strategy: str
    candidates: str
    executor: str | None
    outcome_base: str
    calls: list[Candidate]
    replays: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    observations: list[Observation]
    effects: list[Effect] = field(default_factory=list)
    cancelled: bool = False
    planned: int = 0

    def to_json(self) -> dict[str, Any]:
        """The document ``sweep --json`` prints: ``effects`` best first (each with its
        ``seq``), then the context."""
        return {
            "base": self.base_path,
            "digest": self.digest,
            "strategy": self.strategy,
            "candidates": self.candidates,
            "executor": self.executor,
            "outcome_base": self.outcome_base,
            "effects": [e.to_json() for e in self.effects],
            "calls": [c.to_json() for c in self.calls],
            "replays": self.replays,
            "skipped": self.skipped,
            "cancelled": self.cancelled,
        }


def run_sweep(
    base_path: str | os.PathLike[str],
    *,
    executor: str | None,
    trust_executor: bool = False,
    candidates: str = "all",
    strategy: str = "resample",
    jobs: int = 1,
    repeat: int = 1,
    workspace: str | os.PathLike[str] | None = None,
    fixtures_path: str | os.PathLike[str] | None = None,
    predicate: str | None = None,
    base: Recording | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    processes: bool = False,
    live_model: str | None = None,
    ray_address: str | None = None,
) -> SweepResult:
    """Sweep the candidate calls of the base at ``base_path`` (module docstring).

    ``executor``: ``None``, ``recorded`` (the base's ``metadata.executor``: code named
    by a file, run only with ``trust_executor``) or ``module:function``; ``jobs``: worker processes (1 = in this process); ``repeat``:
    replays per candidate (a mean and a spread for executors that are not
    deterministic); ``workspace``: a workspace folder to store everything in, or
    ``None``; ``fixtures_path``: a fixture file (``replay --fixtures`` format) — the
    library of the ``fixture`` strategy, stored in the workspace with scope ``project``
    unless an entry names one; ``predicate``: an outcome predicate ``module:function``;
    ``base``: the recording when already loaded; ``on_result``: called with each
    candidate's result as it arrives (progress); ``cancel``: polled between results —
    once it returns true no further candidate starts, the running ones are stopped (a
    worker process still busy after :data:`CANCEL_GRACE` seconds is terminated: its
    replay stays in the workspace as its owner left it) and the result ranks what
    finished, with ``cancelled`` set; ``processes``: replay in worker processes even
    with ``jobs=1`` (started by ``spawn``, safe from a threaded caller such as the app,
    and the only way a stuck executor call can be stopped); ``live_model``: the model
    live calls ask instead of the recorded one (policy ``live_model``: with the provider
    executor on a recording whose model is ``unknown``, SWE-agent 0.x's);
    ``ray_address``: replay the candidates as Ray tasks on the cluster there instead of
    local processes (``local`` starts a Ray here; :func:`_run_on_ray`, which cancels
    and reports progress as the local pool does).

    Raises:
        SweepError: bad strategy / candidates / jobs / repeat, ``resample`` without an
            executor, ``recorded`` without ``trust_executor``, or an executor that
            cannot be loaded.
        FormatError: the base cannot be loaded. FixtureError: a bad fixture file.
        AnalysisError: the outcome predicate cannot be loaded or fails.
        RayError: ``ray_address`` given and Ray not installed or not reachable.
    """
    if strategy not in STRATEGIES:
        raise SweepError(f"--strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if jobs < 1:
        raise SweepError(f"--jobs must be at least 1, not {jobs}")
    if jobs > MAX_JOBS:
        raise SweepError(f"--jobs {jobs} is more than the {MAX_JOBS} worker processes a sweep allows")
    if repeat < 1:
        raise SweepError(f"--repeat must be at least 1, not {repeat}")
    if repeat > MAX_REPEAT:
        raise SweepError(f"--repeat {repeat} is more than the {MAX_REPEAT} replays per candidate a sweep allows")
    if ray_address is not None:
        from .ray_support import import_ray

        import_ray()  # without Ray, say how to install it before any work
    path = str(base_path)
    if base is None:
        base = Recording.load(path)
    calls = sweep_candidates(base, candidates)
    try:
        choice = choose_executor(executor, base, trust_recorded=trust_executor)
    except BranchError as exc:
        raise SweepError(str(exc)) from None
    spec = choice.spec if choice is not None else None
    if spec is None and strategy == "resample":
        raise SweepError(
            "--strategy resample needs an executor (--executor module:function or "
            "--executor recorded): it re-executes each call live"
        )
    _executor_of(choice)  # fail early, in this process, on a bad executor
    pred = _predicate_of(predicate)
    data = dumps_recording(base)
    digest = recording_digest(base)
    _BASES.clear()
    _BASES[digest] = base
    fixtures_json: list[Any] = []
    if fixtures_path is not None:
        fx = load_fixture_file(Path(fixtures_path), default_scope="project")
        if workspace is not None:
            from ..workspace import Workspace

            with Workspace.open(workspace) as ws:
                for f in fx:  # every scope checked before any fixture is stored
                    ws.check_scope(f.scope)
                for f in fx:
                    ws.put_fixture(f)
        fixtures_json = [f.to_json_obj() for f in fx]
    elif strategy == "fixture" and workspace is None:
        raise FixtureError("--strategy fixture needs a fixture library: --fixtures FILE or a workspace with fixtures")
    if workspace is not None:
        from ..workspace import Workspace

        with Workspace.open(workspace) as ws:
            ws.put_recording(base, path)
    base_row = run_metrics_row(base, "base", predicate=pred)
    tasks = [
        {
            "digest": digest,
            "base_path": path,
            "seq": c.seq,
            "attempt": n,
            "repeat": repeat,
            "strategy": strategy,
            "executor": spec,
            "executor_origin": choice.origin if choice is not None else None,
            "predicate": predicate,
            "workspace": str(workspace) if workspace is not None else None,
            "fixtures": fixtures_json,
            "base_row": base_row,
            "live_model": live_model,
        }
        for c in calls
        for n in range(1, repeat + 1)
    ]

    results: list[dict[str, Any]] = []
    cancelled = False
    if ray_address is not None:
        if tasks:
            cancelled = _run_on_ray(tasks, ray_address, jobs, (data, digest, path), results, on_result, cancel)
    elif not processes and (jobs == 1 or len(tasks) <= 1):
        for t in tasks:
            if cancel is not None and cancel():
                cancelled = True
                break
            r = _run_candidate(t)
            results.append(r)
            if on_result:
                on_result(r)
    elif tasks:
        cancelled = _run_in_pool(
            tasks, min(jobs, len(tasks)), (data, digest, path, os.getpid()), results, on_result, cancel, processes
        )
    results.sort(key=lambda r: (r["seq"], r["attempt"]))

    replays, skipped, observations = [], [], []
    for r in results:
        if r["skipped"] is not None:
            if r["attempt"] == 1:
                skipped.append({"seq": r["seq"], "reason": r["skipped"]})
            continue
        replays.append({"seq": r["seq"], "attempt": r["attempt"], **r["replay"]})
        observations.append(Observation.from_json(r["observation"]))
    effects = rank_effects(observations)
    if workspace is not None:
        from ..workspace import Workspace

        with Workspace.open(workspace) as ws:
            workspace_effects(ws, digest, predicate=pred, predicate_spec=predicate, base=base)
    return SweepResult(
        path,
        digest,
        strategy,
        candidates,
        spec,
        base_row["outcome"],
        calls,
        replays,
        skipped,
        observations,
        effects,
        cancelled=cancelled,
        planned=len(tasks),
    )


CANCEL_GRACE = 10.0
"""Seconds a cancelled sweep waits for its running replays before it terminates their
worker processes."""


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, which ``spawn`` needs, when the
    standard error stream has no file descriptor (a full-screen caller such as a Textual
    app replaces it with one whose ``fileno()`` is -1, and the tracker would pass that to
    its process: "bad value(s) in fds_to_keep"); the tracker then writes to the null
    device."""
    import sys
    from multiprocessing import resource_tracker

    try:
        ok = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (OSError, ValueError, AttributeError):
        ok = False
    if ok:
        return
    saved = sys.stderr
    with open(os.devnull, "w") as null:
        sys.stderr = null
        try:
            resource_tracker.ensure_running()
        finally:
            sys.stderr = saved


def _run_in_pool(
    tasks: list[dict[str, Any]],
    workers: int,
    initargs: tuple[Any, ...],
    results: list[dict[str, Any]],
    on_result: Callable[[dict[str, Any]], None] | None,
    cancel: Callable[[], bool] | None,
    spawn: bool,
) -> bool:
    """Run ``tasks`` in a pool of ``workers`` processes, appending each result to
    ``results`` as it arrives; returns whether ``cancel`` stopped the sweep (then
    pending tasks never start and workers still busy after :data:`CANCEL_GRACE` seconds
    are terminated)."""
    import multiprocessing
    import time
    from concurrent.futures import FIRST_COMPLETED, wait

    ctx = multiprocessing.get_context("spawn") if spawn else None
    if spawn:
        _start_resource_tracker()
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(*initargs, spawn)
    )
    cancelled = False
    try:
        pending = {pool.submit(_run_candidate, t) for t in tasks}
        deadline: float | None = None
        while pending:
            done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for f in done:
                if f.cancelled():
                    continue
                r = f.result()
                results.append(r)
                if on_result:
                    on_result(r)
            if not cancelled and cancel is not None and cancel():
                cancelled = True
                deadline = time.monotonic() + CANCEL_GRACE
                for f in pending:
                    f.cancel()
                pending = {f for f in pending if not f.cancelled()}
            if deadline is not None and pending and time.monotonic() > deadline:
                for proc in list(getattr(pool, "_processes", {}).values()):
                    proc.terminate()
                break
    finally:
        pool.shutdown(wait=not cancelled, cancel_futures=True)
    return cancelled


def _ray_candidate(base_ref: list[Any], digest: str, path: str, task: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: :func:`_run_candidate` of one task. The base recording's bytes are
    in Ray's object store once (``base_ref``: a list, so Ray does not fetch them for
    every task); a worker fetches and parses them the first time it needs that base
    (as :func:`_init_worker` does once per process) and keeps the parsed base."""
    ensure_recursion_limit()
    if digest not in _BASES:
        import ray

        data = ray.get(base_ref[0])
        _BASES.clear()
        _BASES[digest] = Recording.loads(data, source=path, verify_keys=False)
    return _run_candidate(task)


def _run_on_ray(
    tasks: list[dict[str, Any]],
    address: str,
    jobs: int,
    base: tuple[bytes, str, str],
    results: list[dict[str, Any]],
    on_result: Callable[[dict[str, Any]], None] | None,
    cancel: Callable[[], bool] | None,
) -> bool:
    """Run ``tasks`` as Ray tasks on the cluster at ``address``
    (:func:`core.effects.ray_support.ray_connection`; ``jobs`` > 1 sets the CPUs of a
    ``local`` one), appending each result to ``results`` as it arrives, as
    :func:`_run_in_pool` does: at most as many tasks in flight as the cluster has CPUs
    (or ``jobs``), so once ``cancel`` returns true no further candidate starts, and the
    running ones still busy after :data:`CANCEL_GRACE` seconds are cancelled (their
    workers killed). The workspace folder is passed as an absolute path: on a cluster it
    must be a folder every node sees. Returns whether the sweep was cancelled."""
    import time

    from .ray_support import ray_connection, unwrap

    data, digest, path = base
    with ray_connection(address, num_cpus=jobs if jobs > 1 else None) as ray:
        base_ref = ray.put(data)
        remote = ray.remote(_ray_candidate)
        window = max(jobs, int(ray.cluster_resources().get("CPU", 1)), 1)
        queue = [
            {**t, "workspace": os.path.abspath(t["workspace"])} if t["workspace"] is not None else t for t in tasks
        ]
        queue.reverse()  # popped from the end: in seq order
        running: list[Any] = []
        cancelled = False
        deadline: float | None = None
        try:
            while queue or running:
                while queue and len(running) < window:
                    running.append(remote.remote([base_ref], digest, path, queue.pop()))
                ready, running = ray.wait(running, num_returns=1, timeout=0.2)
                if ready and running:
                    more, running = ray.wait(running, num_returns=len(running), timeout=0)
                    ready += more
                for ref in ready:
                    try:
                        r = ray.get(ref)
                    except ray.exceptions.TaskCancelledError:
                        continue
                    except ray.exceptions.RayTaskError as exc:
                        raise unwrap(exc) from None
                    except ray.exceptions.RayError as exc:  # a worker or node lost, not the task's own error
                        raise SweepError(f"a Ray task failed: {' '.join(str(exc).split())}") from None
                    results.append(r)
                    if on_result:
                        on_result(r)
                if not cancelled and cancel is not None and cancel():
                    cancelled = True
                    queue.clear()
                    deadline = time.monotonic() + CANCEL_GRACE
                if deadline is not None and running and time.monotonic() > deadline:
                    break
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
    return cancelled
