"""The replay session: record a Python agent's boundary interactions, and replay them.

Rules implemented here come from SPEC "Replay session" and the first seed
(``seeds/000_*``): what is recorded, how calls are matched, what a replayed call still
runs, and which fields of a replayed result are historical or fresh.

Three pieces:

* :class:`ReplaySession` — the record/replay object. Mode ``live`` is inert (calls run,
  nothing is recorded or replayed); ``record`` appends every boundary interaction to
  :attr:`ReplaySession.recording`; ``replay`` answers each call from a matching record
  and executes nothing. Matching is by kind and canonical key (:mod:`core.record.canonical`),
  per key with a cursor: a ``dict`` from ``(kind, key)`` to the positions of its records
  plus one cursor per key — O(1) per call, never a scan of the recording. Repeated keys
  are answered in recording order; once a key's records are consumed the call is
  *exhausted*, and a key never recorded is *missing*. An unanswered call follows the
  :class:`ReplayFallback`: ``error`` raises :class:`~core.errors.ReplayMismatch`,
  ``live`` runs the call for real and appends its record with ``live_fallback: true``.
* :class:`Harness` — the tool boundary, and the :class:`~core.replay.boundary.AgentRuntime` an
  agent calls. Every tool call, live or replayed, runs in this order: ``before`` hook →
  authorization → approval → budget → a ``tool.execute`` span (attribute ``replayed``)
  around the answer (live execution or the recorded result) → ``after`` hook. A denial
  raises :class:`~core.errors.PolicyDenied` in replay exactly as it would live.
* :class:`ReplayChatModel` — the opt-in model boundary: wraps a model so its calls are
  recorded and replayed (``inner`` may be ``None`` in replay).

Only tool and model records answer calls. Interrupt, snapshot and lifecycle records are
written for attribution (:meth:`ReplaySession.record_interrupt`,
:meth:`ReplaySession.record_snapshot`, :meth:`ReplaySession.record_lifecycle`) and are
never consulted when answering.

Privacy: the session's :class:`~core.record.redaction.SecretRedactor` (and redaction by field
name) is applied to tool arguments and model requests *before* their keys are computed,
in record and in replay alike, so keys are computed on redacted values and match between
the two modes; results and responses are redacted before they are stored.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, cast

from ..errors import InspectorError, PolicyDenied, ReplayMismatch
from ..record.canonical import model_key, tool_key
from ..record.io import save_recording
from ..record.recording import (
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    SnapshotRecord,
    ToolRecord,
    ToolResult,
)
from ..record.redaction import SecretRedactor, redact
from .gate import ToolGate, ToolInvocation

__all__ = [
    "ReplayMode",
    "ReplayFallback",
    "ReplaySession",
    "SessionStats",
    "Harness",
    "ToolInvocation",
    "run_tool_function",
    "ReplayChatModel",
    "ReplayedModelError",
    "Span",
    "SpanRecorder",
    "producer",
]

ANSWERING_KINDS = ("tool", "model")


class ReplayMode(str, Enum):
    """Mode of a :class:`ReplaySession` (seed "Modes").

    ``LIVE``: inert — calls run for real, nothing is recorded or replayed.
    ``RECORD``: calls run for real and every boundary interaction is appended.
    ``REPLAY``: a matching record answers each call; nothing is executed.
    """

    LIVE = "live"
    RECORD = "record"
    REPLAY = "replay"


class ReplayFallback(str, Enum):
    """What an unanswered call does in replay (SPEC glossary "fallback").

    ``ERROR`` (default): raise :class:`~core.errors.ReplayMismatch`.
    ``LIVE``: run the call for real and append its record with ``live_fallback: true``.
    """

    ERROR = "error"
    LIVE = "live"


class ReplayedModelError(InspectorError, RuntimeError):
    """A replayed model call whose record holds an error: the recorded failure, re-raised.

    ``error`` is the recorded :class:`~core.record.recording.ErrorInfo` (``type``, ``message``).
    In record mode the inner model's own exception propagates; in replay this stands in
    for it, since nothing is executed.
    """

    title = "model error"

    def __init__(self, model: str, error: ErrorInfo) -> None:
        self.model = model
        self.error = error
        super().__init__(f"model {model!r} failed (recorded): {error.type}: {error.message}")


@dataclass
class SessionStats:
    """Counters of one session (all are numbers of calls).

    ``recorded``: records appended in record mode (tool and model calls only);
    ``replayed``: calls answered from the recording; ``live``: calls executed for real
    (in any mode, fallbacks included); ``live_fallback``: replay-mode calls that had no
    recorded answer and ran live under :attr:`ReplayFallback.LIVE`.
    """

    recorded: int = 0
    replayed: int = 0
    live: int = 0
    live_fallback: int = 0


def producer() -> str:
    """``chassis-inspector <package version>``: the ``session.producer`` of recordings."""
    from .. import __version__

    return f"chassis-inspector {__version__}"


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error_info(exc: BaseException) -> ErrorInfo:
    return ErrorInfo(type=type(exc).__name__, message=str(exc))


class ReplaySession:
    """Record/replay of one agent run's boundary interactions.

    Args:
        mode: a :class:`ReplayMode` (or its string value).
        fallback: a :class:`ReplayFallback` (default ``ERROR``); only used in replay.
        metadata: free JSON object stored in the recording's ``metadata`` (e.g. dataset,
            task, outcome). Mutable later through :attr:`metadata`.
        redactor: scrubs known secret values from arguments, requests, results and
            responses before keying and storing (redaction by field name and by shape
            always applies; default a new :class:`~core.record.redaction.SecretRedactor`,
            which learns every secret removed and scrubs it from later calls).
        recording: the recording to replay from (or to continue recording into);
            default an empty one. :meth:`load` and :meth:`from_recording` fill it.
        clock: monotonic seconds used to measure ``duration_seconds`` (default
            :func:`time.perf_counter`).
        now: RFC 3339 timestamp used for ``at`` and ``created_at`` (default UTC now).

    Raises:
        ValueError: an unknown mode or fallback.

    Attributes:
        recording: the :class:`~core.record.recording.Recording` — records appended in record
            mode; in replay mode the source, plus any live-fallback records appended at
            its end (never used to answer within the same session).
        events: what this session did, in order, as records with their own ``seq``:
            in record mode the recording's records; in replay mode every served record
            (the recorded answer with fresh attribution, ``replayed: true``), every live
            fallback (``live_fallback: true``) and every attribution record written
            during the replay; in live mode nothing.
        stats: :class:`SessionStats`.
    """

    def __init__(
        self,
        mode: ReplayMode | str,
        fallback: ReplayFallback | str = ReplayFallback.ERROR,
        metadata: Mapping[str, Any] | None = None,
        redactor: SecretRedactor | None = None,
        *,
        recording: Recording | None = None,
        clock: Callable[[], float] | None = None,
        now: Callable[[], str] | None = None,
    ) -> None:
        self.mode = ReplayMode(mode)
        self.fallback = ReplayFallback(fallback)
        # one redactor for the run: what it removes is scrubbed everywhere after (propagation)
        self.redactor = redactor if redactor is not None else SecretRedactor()
        self.clock = clock or time.perf_counter
        self.now = now or _utc_now
        if recording is None:
            recording = Recording(
                session=SessionInfo(
                    mode=self.mode.value,
                    fallback=self.fallback.value,
                    created_at=self.now(),
                    producer=producer(),
                )
            )
        self.recording = recording
        if metadata:
            self.recording.metadata.update(dict(metadata))
        self.stats = SessionStats()
        self._replay_events: list[Any] = []
        self._lock = threading.RLock()
        self._positions: dict[tuple[str, str], list[int]] = {}
        self._cursors: dict[tuple[str, str], int] = {}
        self._recorded_by_kind: dict[str, int] = dict.fromkeys(ANSWERING_KINDS, 0)
        self._index()

    # ------------------------------------------------------------------ construction

    @classmethod
    def load(
        cls,
        path: str | Path,
        mode: ReplayMode | str = ReplayMode.REPLAY,
        fallback: ReplayFallback | str = ReplayFallback.ERROR,
        *,
        redactor: SecretRedactor | None = None,
        clock: Callable[[], float] | None = None,
        now: Callable[[], str] | None = None,
    ) -> ReplaySession:
        """Load the recording at ``path`` (verified, migrated) into a new session.

        Raises:
            FormatError: the file is not a valid recording (see :mod:`core.record.io`).
        """
        rec = Recording.load(path)
        return cls(mode, fallback, redactor=redactor, recording=rec, clock=clock, now=now)

    @classmethod
    def from_recording(
        cls,
        recording: Recording,
        mode: ReplayMode | str = ReplayMode.REPLAY,
        fallback: ReplayFallback | str = ReplayFallback.ERROR,
        *,
        redactor: SecretRedactor | None = None,
        clock: Callable[[], float] | None = None,
        now: Callable[[], str] | None = None,
        copy: bool = True,
    ) -> ReplaySession:
        """A session over an in-memory recording.

        With ``copy`` (default) the session works on a deep copy and ``recording`` is
        untouched; ``copy=False`` shares it (cheaper for large recordings: replay only
        appends live-fallback records to it, never changes existing ones).
        """
        return cls(
            mode,
            fallback,
            redactor=redactor,
            recording=recording.model_copy(deep=True) if copy else recording,
            clock=clock,
            now=now,
        )

    def _index(self) -> None:
        """Build the per-key positions; records without a key (imports) never answer."""
        for pos, rec in enumerate(self.recording.records):
            if isinstance(rec, (ToolRecord, ModelRecord)) and rec.key is not None:
                self._positions.setdefault((rec.kind, rec.key), []).append(pos)
                self._recorded_by_kind[rec.kind] += 1

    # ------------------------------------------------------------------ properties

    @property
    def metadata(self) -> dict[str, Any]:
        """The recording's ``metadata`` object (mutable)."""
        return self.recording.metadata

    @property
    def events(self) -> list[Any]:
        """Records of what this session did (see the class docstring)."""
        if self.mode is ReplayMode.RECORD:
            return self.recording.records
        return self._replay_events

    def save(self, path: str | Path, *, indent: bool = False) -> str:
        """Write :attr:`recording` atomically (temp file, fsync, rename) with its digest.

        Redaction by field name and by the session's redactor is applied again on save
        (:func:`core.record.io.save_recording`). Returns the ``sha256:`` digest.

        Raises:
            CanonicalizationError: a record holds a value with no canonical JSON form.
        """
        return save_recording(self.recording, path, redactor=self.redactor, indent=indent)

    def events_recording(self, metadata: Mapping[str, Any] | None = None) -> Recording:
        """:attr:`events` as a recording of their own (session mode = this mode)."""
        return Recording(
            metadata=dict(metadata or {}),
            session=SessionInfo(
                mode=self.mode.value,
                fallback=self.fallback.value,
                created_at=self.now(),
                producer=producer(),
            ),
            records=[r.model_copy(deep=True) for r in self.events],
        )

    # ------------------------------------------------------------------ keys

    def redact_value(self, value: Any) -> tuple[Any, bool]:
        """``value`` redacted by field name and by the session's redactor; ``(new, changed)``."""
        return redact(value, self.redactor)

    def tool_identity(self, tool: str, arguments: Any) -> tuple[Any, str]:
        """``(redacted arguments, canonical key)`` of a tool call.

        Raises:
            CanonicalizationError: the arguments have no canonical JSON form.
        """
        red_args, _ = self.redact_value(arguments)
        return red_args, tool_key(tool, red_args)

    def model_identity(self, model: str, request: ModelRequest | Mapping[str, Any]) -> tuple[ModelRequest, str]:
        """``(redacted request, canonical key)`` of a model call.

        Raises:
            CanonicalizationError: a value of the request has no canonical JSON form.
            pydantic.ValidationError: ``request`` is a mapping that is not a ModelRequest.
        """
        req = request if isinstance(request, ModelRequest) else ModelRequest.model_validate(request)
        red, changed = self.redact_value(req.to_json_obj())
        if changed:
            req = ModelRequest.model_validate(red)
        return req, model_key(model, req)

    # ------------------------------------------------------------------ cursors

    def has_remaining(self, kind: str, key: str) -> bool:
        """True when ``(kind, key)`` still has an unconsumed recorded answer."""
        with self._lock:
            pos = self._positions.get((kind, key))
            return pos is not None and self._cursors.get((kind, key), 0) < len(pos)

    def remaining(self, kind: str, key: str) -> int:
        """Number of unconsumed recorded answers of ``(kind, key)``."""
        with self._lock:
            pos = self._positions.get((kind, key), ())
            return len(pos) - self._cursors.get((kind, key), 0)

    def peek(self, kind: str, key: str) -> ToolRecord | ModelRecord | None:
        """The next recorded answer of ``(kind, key)`` without consuming it, or ``None``."""
        with self._lock:
            pos = self._positions.get((kind, key))
            if pos is None:
                return None
            i = self._cursors.get((kind, key), 0)
            return self._answer_at(pos[i]) if i < len(pos) else None

    def take(self, kind: str, key: str, *, detail: str = "") -> ToolRecord | ModelRecord:
        """Consume and return the next recorded answer of ``(kind, key)``.

        Raises:
            ReplayMismatch: reason ``exhausted`` (the key was recorded and every answer
                consumed) or ``missing`` (never recorded); ``recorded`` is the number of
                recorded interactions of ``kind``.
        """
        with self._lock:
            pos = self._positions.get((kind, key))
            if pos is None:
                raise ReplayMismatch(kind, key, self._recorded_by_kind.get(kind, 0), "missing", detail)
            i = self._cursors.get((kind, key), 0)
            if i >= len(pos):
                more = f"key recorded {len(pos)} time(s), all consumed"
                raise ReplayMismatch(
                    kind,
                    key,
                    self._recorded_by_kind.get(kind, 0),
                    "exhausted",
                    f"{detail}; {more}" if detail else more,
                )
            self._cursors[(kind, key)] = i + 1
            return self._answer_at(pos[i])

    def _answer_at(self, pos: int) -> ToolRecord | ModelRecord:
        """The record at ``pos``, one the index holds (so a tool or model record)."""
        return cast(ToolRecord | ModelRecord, self.recording.records[pos])

    def recorded_count(self, kind: str) -> int:
        """Number of recorded interactions of ``kind`` available to answer calls."""
        return self._recorded_by_kind.get(kind, 0)

    def unconsumed(self) -> list[ToolRecord | ModelRecord]:
        """Recorded answers not consumed yet, in recording order."""
        with self._lock:
            out: list[int] = []
            for k, pos in self._positions.items():
                out.extend(pos[self._cursors.get(k, 0) :])
            return [self._answer_at(p) for p in sorted(out)]

    def rewind(self) -> None:
        """Reset every cursor: the next calls are answered from the first records again."""
        with self._lock:
            self._cursors.clear()

    # ------------------------------------------------------------------ appending

    def _next_seq(self, records: list[Any]) -> int:
        return records[-1].seq + 1 if records else 0

    def _append(self, rec: Any) -> Any:
        """Append to the recording (record mode, and live fallbacks in replay)."""
        with self._lock:
            rec.seq = self._next_seq(self.recording.records)
            self.recording.records.append(rec)
            return rec

    def _append_event(self, rec: Any) -> Any:
        with self._lock:
            if self.mode is ReplayMode.RECORD:
                return self._append(rec)
            if self.mode is ReplayMode.LIVE:
                return rec
            rec = rec.model_copy()
            rec.seq = self._next_seq(self._replay_events)
            self._replay_events.append(rec)
            return rec

    # ------------------------------------------------------------------ tool boundary

    def tool_call(
        self,
        tool: str,
        arguments: Any,
        live: Callable[[], ToolResult] | None,
        *,
        tool_call_id: str | None = None,
        run_id: str | None = None,
        generation_id: str | None = None,
        identity: tuple[Any, str] | None = None,
    ) -> tuple[ToolResult, ToolRecord | None]:
        """Answer one tool call according to the mode; return ``(result, record)``.

        ``live`` executes the tool for real and returns a :class:`ToolResult` (tool
        failures already turned into ``error``); it is never called in replay unless the
        fallback is ``LIVE`` and no recorded answer remains. ``record`` is the record of
        this call as stored/served (``None`` in live mode). ``identity`` is a
        precomputed :meth:`tool_identity` (saves hashing the call twice). In replay the
        result is the recorded one (historical: content, artifact, error, redacted) and
        the record's attribution is fresh (duration_seconds, tool_call_id,
        generation_id, run_id).

        Raises:
            ReplayMismatch: replay, no recorded answer, fallback ``ERROR`` (or no ``live``).
            CanonicalizationError: the arguments have no canonical JSON form.
        """
        red_args, key = identity or self.tool_identity(tool, arguments)
        if self.mode is ReplayMode.REPLAY:
            if self.has_remaining("tool", key):
                t0 = self.clock()
                rec = self.take("tool", key)
                assert isinstance(rec, ToolRecord)  # keys of tool calls index tool records
                result = rec.result.model_copy(deep=True)
                served = ToolRecord(
                    seq=0,
                    at=self.now(),
                    run_id=run_id,
                    generation_id=generation_id,
                    replayed=True,
                    key=key,
                    tool=tool,
                    arguments=red_args,
                    tool_call_id=tool_call_id,
                    result=result.model_copy(deep=True),
                    duration_seconds=self.clock() - t0,
                )
                self.stats.replayed += 1
                return result, self._append_event(served)
            if self.fallback is ReplayFallback.ERROR or live is None:
                why = f"tool {tool!r}"
                if self.fallback is ReplayFallback.LIVE:
                    why += ", fallback is live but the tool cannot run here"
                self.take("tool", key, detail=why)  # raises with the right reason
        if live is None:
            raise ValueError(f"tool {tool!r}: a live call needs a live implementation in {self.mode.value} mode")
        t0 = self.clock()
        result = live()
        duration = self.clock() - t0
        self.stats.live += 1
        if self.mode is ReplayMode.LIVE:
            return result, None
        content, changed = self.redact_value(result.to_json_obj())
        stored = ToolResult.model_validate(content)
        if changed:
            stored.redacted = True
        rec = ToolRecord(
            seq=0,
            at=self.now(),
            run_id=run_id,
            generation_id=generation_id,
            key=key,
            tool=tool,
            arguments=red_args,
            tool_call_id=tool_call_id,
            result=stored,
            duration_seconds=duration,
        )
        if self.mode is ReplayMode.REPLAY:
            rec.live_fallback = True
            self.stats.live_fallback += 1
            rec = self._append(rec)
            return result, self._append_event(rec.model_copy(deep=True))
        self.stats.recorded += 1
        return result, self._append(rec)

    # ------------------------------------------------------------------ model boundary

    def model_call(
        self,
        model: str,
        request: ModelRequest | Mapping[str, Any],
        live: Callable[[ModelRequest], ModelResponse] | None,
        *,
        run_id: str | None = None,
        generation_id: str | None = None,
        identity: tuple[ModelRequest, str] | None = None,
    ) -> tuple[ModelResponse, ModelRecord | None]:
        """Answer one model call according to the mode; return ``(response, record)``.

        ``live`` receives the caller's (unredacted) request; the stored request and
        response are redacted and the key is computed on the redacted request
        (``identity``: a precomputed :meth:`model_identity`). A live
        model exception is recorded as ``error`` and re-raised; a replayed record with an
        ``error`` raises :class:`ReplayedModelError`.

        Raises:
            ReplayMismatch: replay, no recorded answer, fallback ``ERROR`` (or no ``live``).
            ReplayedModelError: the recorded call failed.
            CanonicalizationError: a value of the request has no canonical JSON form.
        """
        req = request if isinstance(request, ModelRequest) else ModelRequest.model_validate(request)
        red_req, key = identity or self.model_identity(model, req)
        if self.mode is ReplayMode.REPLAY:
            if self.has_remaining("model", key):
                t0 = self.clock()
                rec = self.take("model", key)
                assert isinstance(rec, ModelRecord)  # keys of model calls index model records
                served = ModelRecord(
                    seq=0,
                    at=self.now(),
                    run_id=run_id,
                    generation_id=generation_id,
                    replayed=True,
                    key=key,
                    model=model,
                    request=red_req,
                    response=rec.response.model_copy(deep=True) if rec.response else None,
                    error=rec.error.model_copy() if rec.error else None,
                    duration_seconds=self.clock() - t0,
                )
                self.stats.replayed += 1
                self._append_event(served)
                if rec.error is not None or rec.response is None:
                    raise ReplayedModelError(
                        model, rec.error or ErrorInfo(type="NoResponse", message="no response recorded")
                    )
                return rec.response.model_copy(deep=True), served
            if self.fallback is ReplayFallback.ERROR or live is None:
                why = f"model {model!r}"
                if self.fallback is ReplayFallback.LIVE:
                    why += ", fallback is live but no inner model is wired"
                self.take("model", key, detail=why)
        if live is None:
            raise ValueError(f"model {model!r}: a live call needs an inner model in {self.mode.value} mode")
        t0 = self.clock()
        error: BaseException | None = None
        response: ModelResponse | None = None
        try:
            out = live(req)
            response = out if isinstance(out, ModelResponse) else ModelResponse.model_validate(out)
        except Exception as exc:  # recorded, then re-raised below
            error = exc
        duration = self.clock() - t0
        self.stats.live += 1
        if self.mode is ReplayMode.LIVE:
            if error is not None:
                raise error
            return response, None  # type: ignore[return-value]
        stored_resp = None
        if response is not None:
            red, _ = self.redact_value(response.to_json_obj())
            stored_resp = ModelResponse.model_validate(red)
        stored_err = None
        if error is not None:
            red_err, _ = self.redact_value(_error_info(error).to_json_obj())
            stored_err = ErrorInfo.model_validate(red_err)
        rec = ModelRecord(
            seq=0,
            at=self.now(),
            run_id=run_id,
            generation_id=generation_id,
            key=key,
            model=model,
            request=red_req,
            response=stored_resp,
            error=stored_err,
            duration_seconds=duration,
        )
        if self.mode is ReplayMode.REPLAY:
            rec.live_fallback = True
            self.stats.live_fallback += 1
            rec = self._append(rec)
            self._append_event(rec.model_copy(deep=True))
        else:
            self.stats.recorded += 1
            rec = self._append(rec)
        if error is not None:
            raise error
        return response, rec  # type: ignore[return-value]

    # ------------------------------------------------------------------ attribution

    def record_interrupt(
        self, value: Any, *, run_id: str | None = None, generation_id: str | None = None
    ) -> InterruptRecord | None:
        """Write an interrupt record (the run paused on ``value``). Attribution only:
        never answers a call. Returns the record (``None`` in live mode)."""
        red, _ = self.redact_value(value)
        rec = InterruptRecord(seq=0, at=self.now(), run_id=run_id, generation_id=generation_id, value=red)
        return None if self.mode is ReplayMode.LIVE else self._append_event(rec)

    def record_snapshot(
        self, generation_id: str, composition: Mapping[str, Any], *, run_id: str | None = None
    ) -> SnapshotRecord | None:
        """Write a runtime snapshot (``composition``: plugins, tools, capabilities) at a
        generation publication. Attribution only. Returns the record (``None`` in live)."""
        red, _ = self.redact_value(dict(composition))
        rec = SnapshotRecord(seq=0, at=self.now(), run_id=run_id, generation_id=generation_id, composition=red)
        return None if self.mode is ReplayMode.LIVE else self._append_event(rec)

    def record_lifecycle(
        self,
        event: str,
        details: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        generation_id: str | None = None,
    ) -> LifecycleRecord | None:
        """Write a lifecycle record; ``event`` is one of ``plugin.mount``,
        ``plugin.unmount``, ``generation.publish``, ``generation.draining``,
        ``generation.retired``, ``harness.shutdown``. Attribution only.

        Raises:
            pydantic.ValidationError: ``event`` is not one of those.
        """
        red, _ = self.redact_value(dict(details or {}))
        rec = LifecycleRecord(
            seq=0,
            at=self.now(),
            run_id=run_id,
            generation_id=generation_id,
            event=event,
            details=red,
        )
        return None if self.mode is ReplayMode.LIVE else self._append_event(rec)


# ====================================================================== spans


@dataclass
class Span:
    """One finished (or running) span: ``name``, ``attributes``, ``start``/``end`` in the
    session clock's seconds, ``status`` (``ok`` | ``error``) and ``error`` (type: message)."""

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    start: float = 0.0
    end: float | None = None
    status: str = "ok"
    error: str | None = None


class SpanRecorder:
    """A minimal tracer keeping finished spans in memory (:attr:`spans`).

    Any object with a ``span(name, attributes)`` context manager yielding an object with
    an ``attributes`` dict can stand in (e.g. an adapter over OpenTelemetry).
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or time.perf_counter
        self.spans: list[Span] = []

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Span]:
        """Open a span; it is appended to :attr:`spans` when it ends (error or not)."""
        sp = Span(name=name, attributes=dict(attributes or {}), start=self.clock())
        try:
            yield sp
        except BaseException as exc:
            sp.status = "error"
            sp.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            sp.end = self.clock()
            self.spans.append(sp)


# ====================================================================== model boundary


class ReplayChatModel:
    """The opt-in model boundary: wraps a model so its calls are recorded and replayed.

    Args:
        session: the :class:`ReplaySession`.
        inner: the real model — a callable ``inner(request: ModelRequest) -> ModelResponse``
            (a dict in ModelResponse shape is accepted), or an object with such a
            ``generate`` or ``invoke`` method. May be ``None`` in replay (nothing is
            delegated; a LIVE fallback then raises ReplayMismatch).
        model_name: the model identity that enters the canonical key.

    Raises:
        ValueError: ``inner`` is ``None`` outside replay mode.
    """

    def __init__(self, session: ReplaySession, inner: Any, model_name: str) -> None:
        if inner is None and session.mode is not ReplayMode.REPLAY:
            raise ValueError(f"ReplayChatModel {model_name!r}: inner may be None only in replay mode")
        self.session = session
        self.inner = inner
        self.model_name = model_name

    def _live(self) -> Callable[[ModelRequest], Any] | None:
        inner = self.inner
        if inner is None:
            return None
        for name in ("generate", "invoke"):
            meth = getattr(inner, name, None)
            if callable(meth):
                return cast(Callable[[ModelRequest], Any], meth)
        if callable(inner):
            return cast(Callable[[ModelRequest], Any], inner)
        raise TypeError(f"inner model of {self.model_name!r} is neither callable nor has generate()/invoke()")

    def generate(
        self,
        request: ModelRequest | Mapping[str, Any],
        *,
        run_id: str | None = None,
        generation_id: str | None = None,
        identity: tuple[ModelRequest, str] | None = None,
    ) -> ModelResponse:
        """Answer ``request`` (live, recorded or replayed per the session's mode).
        ``identity`` is a precomputed :meth:`ReplaySession.model_identity`.

        Raises:
            ReplayMismatch, ReplayedModelError, CanonicalizationError: see
            :meth:`ReplaySession.model_call`; in live/record the inner model's exception.
        """
        response, _ = self.session.model_call(
            self.model_name,
            request,
            self._live(),
            run_id=run_id,
            generation_id=generation_id,
            identity=identity,
        )
        return response

    __call__ = generate


# ====================================================================== tool boundary


def run_tool_function(fn: Callable[..., Any], arguments: Any) -> ToolResult:
    """Run a tool function on ``arguments`` (keyword arguments when they are an object,
    else one positional argument). A returned :class:`ToolResult` is kept; any other value
    becomes its ``content``; an exception becomes ``error`` {type: class name, message}
    (``PolicyDenied`` propagates)."""
    try:
        out = fn(**arguments) if isinstance(arguments, dict) else fn(arguments)
    except PolicyDenied:
        raise
    except Exception as exc:
        return ToolResult(error=_error_info(exc))
    if isinstance(out, ToolResult):
        return out
    return ToolResult(content=out)


class Harness:
    """The tool boundary and the :class:`~core.replay.boundary.AgentRuntime` an agent calls.

    Order of every tool call (live, recorded or replayed; seed "Matching"), steps 1-4 and
    6 being the shared :class:`~core.replay.gate.ToolGate` the engine uses too:

    1. ``before(invocation)`` hook (may raise to stop the call);
    2. authorization: ``authorize(invocation)`` — raises :class:`PolicyDenied` (a
       return of ``False`` is a denial too);
    3. approval: ``approve(invocation) -> bool`` — ``False`` is a denial;
    4. budget: at most ``max_tool_calls`` calls pass (the next is denied);
    5. a ``tool.execute`` span (attributes ``tool``, ``tool_call_id``, ``key``,
       ``run_id``, ``generation_id``, ``replayed``, then ``live_fallback`` and
       ``error``) around the answer: in replay the recorded result, otherwise the
       registered tool run live;
    6. ``after(invocation, result)`` hook.

    A denial raises exactly as live, in replay too, and the call is not recorded (it
    never reached the tool) nor does it consume a recorded answer. A tool exception in
    live/record becomes a result with ``error`` {type, message} and is recorded. A tool
    that is not registered gives an ``UnknownTool`` error result when run live.

    Model calls (:meth:`call_model`) go to the :class:`ReplayChatModel` registered for
    the model name, inside a ``model.call`` span.

    Args:
        session: the :class:`ReplaySession` (default: a live, inert one).
        tools: ``{name: callable}``; a tool is called with the arguments as keyword
            arguments (or one positional argument when they are not an object) and
            returns its content or a :class:`ToolResult`.
        models: :class:`ReplayChatModel` instances, looked up by ``model_name``.
        before, authorize, approve, after: the hooks above (``None`` = pass).
        max_tool_calls: the budget (``None`` = unlimited).
        tracer: a :class:`SpanRecorder` or compatible (default a new SpanRecorder).
        run_id: stamped on every record (default ``run-`` + 12 hex digits).
        generation_id: the current generation (see :meth:`publish_generation`).
    """

    def __init__(
        self,
        session: ReplaySession | None = None,
        tools: Mapping[str, Callable[..., Any]] | None = None,
        *,
        models: Iterable[ReplayChatModel] = (),
        before: Callable[[ToolInvocation], Any] | None = None,
        authorize: Callable[[ToolInvocation], Any] | None = None,
        approve: Callable[[ToolInvocation], bool] | None = None,
        after: Callable[[ToolInvocation, ToolResult], Any] | None = None,
        max_tool_calls: int | None = None,
        tracer: Any = None,
        run_id: str | None = None,
        generation_id: str | None = None,
    ) -> None:
        self.session = session or ReplaySession(ReplayMode.LIVE)
        self.tools: dict[str, Callable[..., Any]] = dict(tools or {})
        self.models: dict[str, ReplayChatModel] = {m.model_name: m for m in models}
        self.before = before
        self.authorize = authorize
        self.approve = approve
        self.after = after
        self._gate = ToolGate(self, max_tool_calls=max_tool_calls)
        self.tracer = tracer if tracer is not None else SpanRecorder(self.session.clock)
        self.run_id = run_id or f"run-{uuid.uuid4().hex[:12]}"
        self.generation_id = generation_id
        self._invocations = 0

    @property
    def max_tool_calls(self) -> int | None:
        """The budget (``None`` = unlimited); settable."""
        return self._gate.max_tool_calls

    @max_tool_calls.setter
    def max_tool_calls(self, value: int | None) -> None:
        self._gate.max_tool_calls = value

    @property
    def tool_calls(self) -> int:
        """Calls that passed the budget so far."""
        return self._gate.passed

    @tool_calls.setter
    def tool_calls(self, value: int) -> None:
        self._gate.passed = value

    # ------------------------------------------------------------------ registration

    def register_tool(self, name: str, fn: Callable[..., Any]) -> None:
        """Register (or replace) the live implementation of tool ``name``."""
        self.tools[name] = fn

    def register_model(self, model: ReplayChatModel) -> None:
        """Register a wrapped model under its ``model_name``."""
        self.models[model.model_name] = model

    # ------------------------------------------------------------------ AgentRuntime

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        """Run one tool call through the boundary (order in the class docstring).

        Raises:
            PolicyDenied: authorization, approval or budget refused the call.
            ReplayMismatch: replay with no recorded answer and fallback ``ERROR``.
            CanonicalizationError: the arguments have no canonical JSON form.
        """
        session = self.session
        red_args, key = session.tool_identity(name, arguments)
        replayed = session.mode is ReplayMode.REPLAY and session.has_remaining("tool", key)
        inv = ToolInvocation(
            tool=name,
            arguments=arguments,
            tool_call_id=tool_call_id,
            run_id=self.run_id,
            generation_id=self.generation_id,
            key=key,
            redacted_arguments=red_args,
            replayed=replayed,
            index=self._invocations,
        )
        self._invocations += 1
        denial = self._gate.admit(name, inv)
        if denial is not None:
            raise denial

        fn = self.tools.get(name)

        def run_live() -> ToolResult:
            if fn is None:
                return ToolResult(error=ErrorInfo(type="UnknownTool", message=f"no tool named {name!r} is registered"))
            return run_tool_function(fn, arguments)

        # in replay an unregistered tool cannot run: a LIVE fallback then raises instead
        live = None if (fn is None and session.mode is ReplayMode.REPLAY) else run_live

        attrs = {
            "tool": name,
            "tool_call_id": tool_call_id,
            "key": key,
            "run_id": self.run_id,
            "generation_id": self.generation_id,
            "replayed": replayed,
        }
        with self.tracer.span("tool.execute", attrs) as span:
            result, rec = session.tool_call(
                name,
                arguments,
                live,
                tool_call_id=tool_call_id,
                run_id=self.run_id,
                generation_id=self.generation_id,
                identity=(red_args, key),
            )
            span.attributes["live_fallback"] = bool(rec is not None and rec.live_fallback)
            span.attributes["error"] = result.error.type if result.error else None
        inv.record = rec
        self._gate.after(inv, result)
        return result

    def call_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Answer one model call with the registered :class:`ReplayChatModel`.

        Raises:
            LookupError: no wrapped model is registered under ``model``.
            ReplayMismatch, ReplayedModelError: see :meth:`ReplaySession.model_call`.
        """
        wrapped = self.models.get(model)
        if wrapped is None:
            raise LookupError(f"no wrapped model named {model!r} (registered: {sorted(self.models) or 'none'})")
        session = self.session
        identity = session.model_identity(model, request)
        key = identity[1]
        replayed = session.mode is ReplayMode.REPLAY and session.has_remaining("model", key)
        attrs = {
            "model": model,
            "key": key,
            "run_id": self.run_id,
            "generation_id": self.generation_id,
            "replayed": replayed,
        }
        with self.tracer.span("model.call", attrs):
            return wrapped.generate(request, run_id=self.run_id, generation_id=self.generation_id, identity=identity)

    # ------------------------------------------------------------------ attribution

    def interrupt(self, value: Any) -> InterruptRecord | None:
        """Record that the run paused on ``value`` (attribution only)."""
        return self.session.record_interrupt(value, run_id=self.run_id, generation_id=self.generation_id)

    def mount_plugin(self, name: str, details: Mapping[str, Any] | None = None) -> None:
        """Record ``plugin.mount`` for plugin ``name``."""
        self.session.record_lifecycle(
            "plugin.mount",
            {"plugin": name, **dict(details or {})},
            run_id=self.run_id,
            generation_id=self.generation_id,
        )

    def unmount_plugin(self, name: str) -> None:
        """Record ``plugin.unmount`` for plugin ``name``."""
        self.session.record_lifecycle(
            "plugin.unmount", {"plugin": name}, run_id=self.run_id, generation_id=self.generation_id
        )

    def publish_generation(self, generation_id: str, composition: Mapping[str, Any] | None = None) -> None:
        """Make ``generation_id`` current: record ``generation.publish`` and a snapshot
        of the composition (default: registered tools, wrapped models as capabilities)."""
        self.generation_id = generation_id
        comp = (
            dict(composition)
            if composition is not None
            else {
                "plugins": [],
                "tools": sorted(self.tools),
                "capabilities": [f"MODEL:{m}" for m in sorted(self.models)],
            }
        )
        self.session.record_lifecycle(
            "generation.publish",
            {"generation": generation_id},
            run_id=self.run_id,
            generation_id=generation_id,
        )
        self.session.record_snapshot(generation_id, comp, run_id=self.run_id)

    def retire_generation(self) -> None:
        """Record ``generation.draining`` then ``generation.retired`` for the current one."""
        gid = self.generation_id
        for event in ("generation.draining", "generation.retired"):
            self.session.record_lifecycle(event, {"generation": gid}, run_id=self.run_id, generation_id=gid)

    def shutdown(self) -> None:
        """Record ``harness.shutdown``."""
        self.session.record_lifecycle(
            "harness.shutdown",
            {"tool_calls": self.tool_calls},
            run_id=self.run_id,
            generation_id=self.generation_id,
        )
