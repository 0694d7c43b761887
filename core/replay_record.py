"""The replay record (issue 5, point 9) and the first-divergence comparison.

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
    "Attempt",
    "Comparability",
    "FirstDivergence",
    "PauseInfo",
    "ReplayErrorInfo",
    "ReplayRecord",
    "first_divergence",
]

#: where an answer came from; ``policy`` tags a denied call
ANSWER_SOURCES = ("recorded", "intervention", "fixture", "drift", "live", "policy")


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
    has no call there) and the ``dimension``: ``kind`` (a model call against a tool call),
    ``tool_call`` (tool name or arguments), ``tool_result``, ``model_request``,
    ``model_response``, ``length`` (one side made more calls)."""

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


class Attempt(_Model):
    """One start or resume of a replay: ``number`` (1-based), ``kind`` ``start`` |
    ``resume``, ``started_at`` / ``ended_at`` (RFC 3339), ``outcome`` (the status it
    ended in, ``running`` while it runs)."""

    number: int
    kind: Literal["start", "resume"]
    started_at: str
    ended_at: str | None = None
    outcome: str = "running"


class ReplayRecord(_Model):
    """A replay (issue 5, point 9). Field names are a contract for scripts (see
    ``docs/replay.md``): ``status``, ``comparability.level``, ``comparability.reasons``,
    ``first_divergence.base_seq`` / ``.replay_seq`` / ``.dimension``,
    ``pause.requirement_ids``, ``error``.

    Other fields: ``id``, ``base_digest``, ``base_path``, ``branch_id``, ``policy``,
    ``executor`` (``module:function`` or ``None``), ``attempts``, ``stop_reason``
    (``final`` | ``max_steps`` | ``model_error`` | ``end_of_base`` | ``paused`` |
    ``error``), ``steps`` (model calls made), ``answers`` (count per source),
    ``fixture_uses`` (``[{seq, fixture_id}]``), ``interventions_applied`` (indexes),
    ``events_digest``, ``output`` (the agent's final output), ``created_at``,
    ``updated_at``.
    """

    id: str
    base_digest: str
    base_path: str | None = None
    branch_id: str
    status: Literal["queued", "running", "paused", "completed", "failed"] = "queued"
    policy: Policy
    executor: str | None = None
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
    created_at: str = Field(default_factory=_now)
    updated_at: str = Field(default_factory=_now)

    def to_json_obj(self) -> dict[str, Any]:
        """JSON form with every field present (``null`` kept: scripts rely on the keys)."""
        return self.model_dump(mode="json")

    @property
    def exit_code(self) -> int:
        """CLI exit code: 0 completed, 3 paused, 2 failed (and queued/running)."""
        return {"completed": 0, "paused": 3}.get(self.status, 2)


def _same(x: Any, y: Any) -> bool:
    return x is y or x == y


def first_divergence(base_calls: list[Any], replay_calls: list[Any], *, complete: bool) -> FirstDivergence | None:
    """Compare call records position by position (attribution records ignored); return
    the first difference (see :class:`FirstDivergence`) or ``None``. ``complete``: the
    replay finished, so a length difference counts."""
    n = min(len(base_calls), len(replay_calls))
    for i in range(n):
        a, r = base_calls[i], replay_calls[i]
        if a is r:
            continue
        if a.kind != r.kind:
            return FirstDivergence(base_seq=a.seq, replay_seq=r.seq, dimension="kind")
        same_key = a.key is not None and a.key == r.key
        if a.kind == "tool":
            if not same_key and (a.tool != r.tool or a.arguments != r.arguments):
                return FirstDivergence(base_seq=a.seq, replay_seq=r.seq, dimension="tool_call")
            if not _same(a.result, r.result):
                return FirstDivergence(base_seq=a.seq, replay_seq=r.seq, dimension="tool_result")
        else:
            if not same_key and (a.model != r.model or a.request != r.request):
                return FirstDivergence(base_seq=a.seq, replay_seq=r.seq, dimension="model_request")
            if not _same(a.response, r.response) or not _same(a.error, r.error):
                return FirstDivergence(base_seq=a.seq, replay_seq=r.seq, dimension="model_response")
    if complete and len(base_calls) != len(replay_calls):
        a = base_calls[n] if n < len(base_calls) else None
        r = replay_calls[n] if n < len(replay_calls) else None
        return FirstDivergence(base_seq=a.seq if a else None, replay_seq=r.seq if r else None, dimension="length")
    return None


