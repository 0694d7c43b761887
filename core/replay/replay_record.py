"""The replay record (SPEC "Replay engine": replay record) and the first-divergence comparison.

:class:`ReplayRecord` is what ``chassis-inspector replay --json`` prints and what the
workspace stores; its field names are a contract for scripts, documented in
``docs/replay.md``. :func:`first_divergence` compares the call records of a base and a
replay position by position.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .branch import Policy

__all__ = [
    "ANSWER_SOURCES",
    "LIVE_STATUSES",
    "Attempt",
    "Comparability",
    "FirstDivergence",
    "PauseInfo",
    "ReplayErrorInfo",
    "ReplayOwner",
    "ReplayRecord",
    "first_divergence",
]

#: where an answer came from; ``policy`` tags a denied call, ``user`` a person's turn a
#: user pinned (docs/replay.md, "Replay states")
ANSWER_SOURCES = ("recorded", "intervention", "fixture", "drift", "live", "policy", "user")

#: the statuses stored while a process works on a replay; read back as ``interrupted``
#: once that process is gone (docs/replay.md, "Replay states")
LIVE_STATUSES = ("queued", "running")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Comparability(_Model):
    """Whether the replay can be compared to its base: ``level`` ``full`` | ``partial`` |
    ``none`` and the ``reasons`` (human sentences) that lowered it."""

    level: Literal["full", "partial", "none"] = "full"
    reasons: list[str] = Field(default_factory=list)


class FirstDivergence(_Model):
    """The first call position where branch and base differ: the base record's
    ``base_seq`` and the replay event's ``replay_seq`` (either ``None`` when that side
    has no call there) and the ``dimension``: ``request``, ``response``,
    ``tool arguments``, ``tool result``, ``missing`` or ``extra`` — the vocabulary of
    :func:`core.analysis.diff.trace_diff`, so ``diff --json`` and replay records agree."""

    base_seq: int | None
    replay_seq: int | None
    dimension: str


class PauseInfo(_Model):
    """Why a replay is paused: the open ``requirement_ids``."""

    requirement_ids: list[str]


class ReplayErrorInfo(_Model):
    """Why a replay failed: ``type`` (error class or ``policy``) and ``message``."""

    type: str
    message: str


class ReplayOwner(_Model):
    """The process working on a queued or running replay, recorded so a reader can tell a
    live attempt from one whose process died (docs/replay.md, "The workspace": the
    replay lock comes first; this identity decides only where no lock can be probed).

    ``pid``; ``host`` (:func:`socket.gethostname`); ``boot_id`` (Linux
    ``/proc/sys/kernel/random/boot_id``, ``None`` elsewhere); ``started`` (the
    process's start time in clock ticks since boot, field 22 of ``/proc/PID/stat``
    (proc(5)), ``None`` elsewhere) — pid, boot and start time together name one process
    even after its pid is reused; ``since`` (RFC 3339, when it took the replay)."""

    pid: int
    host: str
    boot_id: str | None = None
    started: int | None = None
    since: str = Field(default_factory=_now)


class Attempt(_Model):
    """One start or resume of a replay: ``number`` (1-based), ``kind`` ``start`` |
    ``resume``, ``started_at`` / ``ended_at`` (RFC 3339), ``outcome`` (the status it
    ended in, ``running`` while it runs, ``interrupted`` when its process died first:
    ``ended_at`` then stays ``None``), ``live_durations`` (``{"SEQ": seconds}``: the
    time each executor call this attempt made took — wall-clock, so kept here and not in
    the replay events, which stay byte-identical across attempts)."""

    number: int
    kind: Literal["start", "resume"]
    started_at: str
    ended_at: str | None = None
    outcome: str = "running"
    live_durations: dict[str, float] = Field(default_factory=dict)


class ReplayRecord(_Model):
    """A replay (SPEC "Replay engine": replay record). Field names are a contract for scripts (see
    ``docs/replay.md``): ``status``, ``comparability.level``, ``comparability.reasons``,
    ``first_divergence.base_seq`` / ``.replay_seq`` / ``.dimension``,
    ``pause.requirement_ids``, ``error``.

    Other fields: ``id``, ``base_digest``, ``base_path``, ``branch_id``, ``policy``,
    ``executor`` (``module:function`` or ``None``), ``executor_origin`` (where its name
    came from: ``command line`` or ``recording``, consented to with ``--trust-executor``;
    a resume imports it by the same rule, docs/replay.md "Executors are code"), ``attempts``, ``stop_reason``
    (``final`` | ``max_steps`` | ``model_error`` | ``end_of_base`` | ``paused`` |
    ``error``), ``steps`` (model calls made), ``answers`` (count per source),
    ``fixture_uses`` (``[{seq, fixture_id}]``), ``interventions_applied`` (indexes),
    ``events_digest`` (of the stored events: while a later attempt runs, those of the
    last attempt that ended), ``output`` (the agent's final output), ``owner`` (the
    :class:`ReplayOwner` while ``queued`` or ``running``, else ``None``),
    ``created_at``, ``updated_at``.

    ``status`` ``interrupted`` is never stored: the workspace reads a ``queued`` or
    ``running`` replay whose process is gone as :meth:`interrupted`.
    """

    id: str
    base_digest: str
    base_path: str | None = None
    branch_id: str
    status: Literal["queued", "running", "paused", "completed", "failed", "interrupted"] = "queued"
    policy: Policy
    executor: str | None = None
    executor_origin: Literal["command line", "recording"] | None = None
    comparability: Comparability = Field(default_factory=Comparability)
    first_divergence: FirstDivergence | None = None
    pause: PauseInfo | None = None
    error: ReplayErrorInfo | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    stop_reason: str | None = None
    steps: int = 0
    answers: dict[str, int] = Field(default_factory=dict)
    fixture_uses: list[dict[str, Any]] = Field(default_factory=list)
    interventions_applied: list[int] = Field(default_factory=list)
    events_digest: str | None = None
    output: Any = None
    owner: ReplayOwner | None = None
    created_at: str = Field(default_factory=_now)
    updated_at: str = Field(default_factory=_now)

    def _clear_outcome(self, reason: str) -> None:
        """Forget what an attempt computed: comparability ``none`` with ``reason``, no
        divergence, pause, error, stop reason or output, 0 steps, no answers."""
        self.comparability = Comparability(level="none", reasons=[reason])
        self.first_divergence = None
        self.pause = None
        self.error = None
        self.stop_reason = None
        self.steps = 0
        self.answers = {}
        self.fixture_uses = []
        self.interventions_applied = []
        self.output = None

    def begin_attempt(self, attempt: Attempt, owner: ReplayOwner | None) -> None:
        """Mark the replay ``running`` for ``attempt`` (appended) by ``owner``. Until the
        attempt ends nothing is compared, so the record claims nothing: comparability
        ``none`` with a reason, 0 steps (docs/replay.md, "Replay states"). An earlier
        attempt still marked ``running`` (its process died) becomes ``interrupted``."""
        for a in self.attempts:
            if a.outcome == "running":
                a.outcome = "interrupted"
        self.attempts.append(attempt)
        self.status = "running"
        self.owner = owner
        self._clear_outcome(
            f"the replay is running (attempt {attempt.number}, since {attempt.started_at}): "
            "nothing is compared until the attempt ends"
        )
        self.updated_at = _now()

    def interrupted(self) -> ReplayRecord:
        """This ``queued`` or ``running`` replay as read once its process is gone: a copy
        with status ``interrupted``, its running attempt's outcome ``interrupted``,
        comparability ``none`` with the reason, and no outcome (0 steps) — resumable with
        ``replay resume`` (docs/replay.md, "Replay states"). The stored events, if any,
        are those of the last attempt that ended (``events_digest``)."""
        rec = self.model_copy(deep=True)
        who = (
            f"its process (pid {rec.owner.pid} on {rec.owner.host}, since {rec.owner.since})"
            if rec.owner is not None
            else "its process"
        )
        running = [a for a in rec.attempts if a.outcome == "running"]
        for a in running:
            a.outcome = "interrupted"
        when = f"during attempt {running[-1].number}" if running else "before its first attempt started"
        rec.status = "interrupted"
        rec._clear_outcome(
            f"the replay was interrupted: {who} ended {when}, before storing an outcome; "
            f"nothing was compared (resume it with: replay resume {rec.id})"
        )
        return rec

    def to_json_obj(self) -> dict[str, Any]:
        """JSON form with every field present (``null`` kept: scripts rely on the keys)."""
        return self.model_dump(mode="json")

    @property
    def exit_code(self) -> int:
        """CLI exit code, from the table of replay states in ``docs/replay.md``: 0
        completed and comparable (full or partial), 4 completed but not comparable
        (comparability ``none``), 3 paused on requirements, 2 failed or interrupted (and
        queued/running)."""
        if self.status == "completed" and self.comparability.level == "none":
            return 4
        return {"completed": 0, "paused": 3}.get(self.status, 2)

    @property
    def status_line(self) -> str:
        """The status as a person reads it: ``completed — not comparable: <reason>`` for a
        completed replay whose comparability is ``none`` (never plain success),
        ``interrupted — resumable: replay resume ID`` for an interrupted one, else the
        status itself."""
        if self.status == "completed" and self.comparability.level == "none":
            reason = "; ".join(self.comparability.reasons) or "no reason recorded"
            return f"completed — not comparable: {reason}"
        if self.status == "interrupted":
            return f"interrupted — resumable: replay resume {self.id}"
        return self.status


def _same(x: Any, y: Any) -> bool:
    return x is y or x == y


def _positional_equal(base_calls: list[Any], replay_calls: list[Any]) -> bool:
    """Fast check: same calls, same answers, position by position."""
    if len(base_calls) != len(replay_calls):
        return False
    for a, r in zip(base_calls, replay_calls):
        if a is r:
            continue
        if a.kind != r.kind or a.key != r.key or a.key is None:
            return False
        if a.kind == "tool":
            if not _same(a.result, r.result):
                return False
        elif not _same(a.response, r.response) or not _same(a.error, r.error):
            return False
    return True


def first_divergence(base_calls: list[Any], replay_calls: list[Any], *, complete: bool) -> FirstDivergence | None:
    """The first difference between the base's and the replay's call records, or ``None``.

    One definition for the whole product: the alignment of :func:`core.analysis.diff.trace_diff`
    (canonical keys, Myers), with its dimensions ``request``, ``response``,
    ``tool arguments``, ``tool result``, ``missing`` (a base call the replay did not make),
    ``extra`` (a call the base did not make). ``complete``: the replay finished; while it
    is paused, base calls it has not reached yet are not a divergence. Identical runs
    are recognised position by position without aligning.
    """
    if _positional_equal(base_calls, replay_calls):
        return None
    from ..analysis.diff import trace_diff

    fd = trace_diff(base_calls, replay_calls).first_divergence
    if fd is None:
        return None
    if not complete and fd.dimension == "missing" and fd.replay_seq is None:
        return None  # the replay has not got that far yet
    return FirstDivergence(base_seq=fd.base_seq, replay_seq=fd.replay_seq, dimension=fd.dimension)
