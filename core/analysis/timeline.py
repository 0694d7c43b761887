"""The timeline of a recording: one row per record, as columns, with search and links.

Shared by the app's timeline table (``inspector``) and the ``chassis-inspector
timeline`` command, so both show the same rows. No UI here (SPEC "Application":
timeline, filter by kind, search, jump between errors).

A row (:class:`TimelineRow`) has:

* ``seq`` — the record's seq;
* ``offset_seconds`` — seconds since the run start (the earliest ``at`` in the
  recording), ``None`` when the record has no ``at``;
* ``kind`` — ``model``, ``tool``, ``interrupt``, ``snapshot`` or ``lifecycle``;
* ``name`` — model identity, tool name, lifecycle event, snapshot generation, or
  ``interrupt``;
* ``summary`` — one line: the first words of the response (model), of the arguments and
  the result (tool; ``⇒ result ⇐ instruction`` when the arguments are just an
  instruction), the interrupt value, or the composition (snapshot/lifecycle);
* ``status`` — one of :data:`STATUSES`, by precedence ``error`` > ``interrupted`` /
  ``input`` > ``redacted`` > ``live-fallback`` > ``replayed`` > ``ok``; an interrupt is
  ``input`` when its value is a human/user message (see :func:`interrupt_status`), else
  ``interrupted``; a tool is ``redacted`` when its result is flagged ``redacted`` or its
  content holds a redaction marker (``[REDACTED:KIND]``, or the plain ``[REDACTED]`` of
  older recordings), a model call when its response's content holds one;
* ``duration_seconds`` and ``tokens`` (input + output tokens of a model call);
* in a replay's events only (see :class:`ReplayAnswers`): ``source`` — what answered the
  call, one of :data:`ANSWER_SOURCES` (or :data:`UNKNOWN_SOURCE`), ``None`` on snapshot and
  lifecycle rows, which answer nothing — and ``reason``, why.

:class:`TimelineIndex` keeps these as parallel Python lists (columnar: one list per
field, O(1) access by position) and computes the expensive parts lazily: summaries on
first display (cached), the search haystack on the first search (a polars string column,
searched with ``str.contains``), the answer sources of a replay's events on first use
(one pass over ``metadata.replay.answer_sources``, which lists only the calls *not*
answered as recorded; a row's source is then one dict lookup). A *position* is an index
into ``recording.records``.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import polars as pl
from pydantic import TypeAdapter, ValidationError

from ..errors import FormatError
from ..record.canonical import args_hash
from ..record.indexed import interrupt_status, record_status
from ..record.recording import (
    RECORD_KINDS,
    ChatMessage,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    Record,
    Recording,
    SnapshotRecord,
    ToolRecord,
)
from ..record.redaction import holds_marker
from ..record.skeleton import check_kind_and_seq
from .timeline_text import (
    _error_text,
    composition_text,
    interrupt_text,
    one_line,
    record_name,
    record_summary,
)

#: the kinds in the order the app and the CLI list them
VIEW_KINDS = ("model", "tool", "interrupt", "snapshot", "lifecycle")
#: how a row whose record cannot be read begins (its reason follows)
INVALID_RECORD = "✗ invalid record: "
_RECORD_ADAPTER: TypeAdapter[Any] = TypeAdapter(Record)

STATUSES = ("ok", "error", "interrupted", "input", "redacted", "replayed", "live-fallback")
#: what answers a call of a replay, in the order the app and the CLI list them: the
#: answer sources of the state table (docs/replay.md; ``core.replay.engine.AnswerSource``)
ANSWER_SOURCES = ("recorded", "intervention", "fixture", "drift", "live", "policy", "user")
#: the source of a row whose ``metadata.replay.answer_sources`` entry names none of
#: :data:`ANSWER_SOURCES` (a newer or a hand-edited file)
UNKNOWN_SOURCE = "unknown"
#: the kinds of rows that have an answer source in a replay's events (snapshot and
#: lifecycle records are attribution: they answer nothing)
SOURCED_KINDS = frozenset({"model", "tool", "interrupt"})
SEPARATOR_KINDS = ("snapshot", "lifecycle")
OUTCOME_KEYS = ("outcome", "resolved", "exit_status", "status", "result", "success", "score")


def _message_id(m: Any) -> int:
    """Identity of a request message for :func:`_haystack` (role, name, call id and text)."""
    return hash((m.role, getattr(m, "name", None), getattr(m, "tool_call_id", None), m.text))


def _haystack(rec: Any, previous_request: dict[str | None, Counter[int]]) -> str:
    """Searchable text of a record: names, arguments, contents, results, errors.

    A model record contributes its response, its error, and the *new* messages of its
    request: those (other than assistant messages, which are earlier responses, found at
    their own model call) not already in the previous model call's request of the same
    run. So the opening prompt is found at the first model call, a tool result at its tool
    record and at the model call that reads it, and re-carried history never matches.
    ``previous_request`` maps run_id → the message identities of that run's last model
    request; this function updates it.
    """
    parts: list[str] = [record_name(rec)]
    if type(rec) is ToolRecord:
        parts.append(one_line(rec.arguments, 1 << 30))
        parts.append(one_line(rec.result.content, 1 << 30))
        if rec.result.error is not None:
            parts.append(_error_text(rec.result.error))
        if rec.tool_call_id:
            parts.append(rec.tool_call_id)
    elif type(rec) is ModelRecord:
        before = previous_request.get(rec.run_id, Counter())
        remaining = Counter(before)
        now: Counter[int] = Counter()
        for m in rec.request.messages:
            mid = _message_id(m)
            now[mid] += 1
            if remaining[mid] > 0:
                remaining[mid] -= 1  # carried over from the previous request
            elif m.role != "assistant":
                parts.append(m.text)
        previous_request[rec.run_id] = now
        if rec.response is not None:
            parts.append(rec.response.message.text)
            for c in rec.response.message.tool_calls or []:
                parts.append(f"{c.name} {one_line(c.arguments, 1 << 30)} {c.id}")
        if rec.error is not None:
            parts.append(_error_text(rec.error))
    elif type(rec) is InterruptRecord:
        parts.append(one_line(rec.value, 1 << 30))
    elif type(rec) is SnapshotRecord:
        parts.append(composition_text(rec.composition))
    elif type(rec) is LifecycleRecord:
        parts.append(one_line(rec.details, 1 << 30))
    return "\n".join(parts).lower()


def _as_list(values: Sequence[Any]) -> list[Any]:
    return values if type(values) is list else list(values)


def _total(values: Iterable[Any], start: Any = 0) -> Any:
    """``start`` plus the numbers in ``values``, added left to right (an ``int`` for
    integers), ``None`` and anything else skipped; in C when every entry is a number or
    ``None`` (a record index not yet verified may hold anything: then entry by entry).
    So ``_total(b, _total(a))`` is ``_total(a + b)`` to the last bit (CPython 3.11;
    from 3.12, ``sum`` compensates float rounding and the two agree to an ulp)."""
    try:
        return sum(filter(None, values), start)
    except TypeError:
        return sum((v for v in values if isinstance(v, (int, float))), start)


def positions_of(values: list[Any], value: Any) -> list[int]:
    """The positions of ``value`` in ``values``, ascending (``list.index`` steps in C:
    cheap when ``value`` is rare, such as the errors of a big run)."""
    out: list[int] = []
    i = -1
    try:
        while True:
            i = values.index(value, i + 1)
            out.append(i)
    except ValueError:
        return out


def _parse_at(at: str | None) -> float | None:
    if at is None:
        return None
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return None


def _short_key(key: str) -> str:
    """A canonical key as the engine's reasons write it: 15 characters and ``…``."""
    return key if len(key) <= 16 else key[:15] + "…"


@dataclass(frozen=True)
class ReplayAnswers:
    """The answer sources and reasons a replay's events carry in their metadata.

    Read from ``metadata.replay``: ``answer_sources`` (``{"SEQ": source}``) and
    ``answer_reasons`` (``{"SEQ": reason}``), both listing only the calls *not* answered
    as recorded, and ``branch.checkpoint``. ``sources`` maps seq → source (an entry naming
    none of :data:`ANSWER_SOURCES` becomes :data:`UNKNOWN_SOURCE`, its value kept in
    ``unknown`` as one line of text); ``reasons`` maps seq → reason (strings only);
    entries whose key is not a decimal seq are left out. ``checkpoint`` is ``None`` when
    the metadata has none (or not an integer).
    """

    sources: dict[int, str]
    reasons: dict[int, str]
    unknown: dict[int, str]
    checkpoint: int | None

    @classmethod
    def of(cls, metadata: dict[str, Any]) -> ReplayAnswers | None:
        """The answers of a replay's events, or ``None`` when ``metadata`` is not a
        replay's (no ``replay`` object holding an ``answer_sources`` object). O(number
        of entries)."""
        replay = metadata.get("replay")
        if not isinstance(replay, dict) or not isinstance(replay.get("answer_sources"), dict):
            return None
        known = frozenset(ANSWER_SOURCES)
        sources: dict[int, str] = {}
        unknown: dict[int, str] = {}
        for k, v in replay["answer_sources"].items():
            seq = _seq_key(k)
            if seq is None:
                continue
            if type(v) is str and v in known:
                sources[seq] = v
            else:
                sources[seq] = UNKNOWN_SOURCE
                unknown[seq] = one_line(v, 60)
        reasons: dict[int, str] = {}
        raw_reasons = replay.get("answer_reasons")
        if isinstance(raw_reasons, dict):
            for k, v in raw_reasons.items():
                seq = _seq_key(k)
                if seq is not None and type(v) is str:
                    reasons[seq] = v
        branch = replay.get("branch")
        cp = branch.get("checkpoint") if isinstance(branch, dict) else None
        return cls(sources, reasons, unknown, cp if type(cp) is int else None)


def _seq_key(key: Any) -> int | None:
    """``"12"`` → 12; anything else (a sign, spaces, not a string) → ``None``."""
    return int(key) if type(key) is str and key.isascii() and key.isdigit() else None


@dataclass(frozen=True)
class TimelineRow:
    """One timeline row (fields as in the module docstring); ``position`` is the index
    of the record in ``recording.records``."""

    position: int
    seq: int
    offset_seconds: float | None
    kind: str
    name: str
    summary: str
    status: str
    duration_seconds: float | None
    tokens: int | None
    #: the answer source and its reason (a replay's events; see the module docstring)
    source: str | None = None
    reason: str | None = None
    #: whether the row is of a replay's events (then ``source`` and ``reason`` are part
    #: of its JSON, ``null`` on snapshot and lifecycle rows)
    sourced: bool = False

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object (``position`` and ``sourced`` left out: app details;
        ``source`` and ``reason`` only for the rows of a replay's events)."""
        d = asdict(self)
        del d["position"], d["sourced"]
        if not self.sourced:
            del d["source"], d["reason"]
        return d


@dataclass(frozen=True)
class TimelineSummary:
    """Header facts of a recording.

    ``counts`` maps every kind to its count; ``tokens_in``/``tokens_out`` are summed over
    model calls; ``errors`` counts tool/model records with an error; ``span_seconds`` is
    last ``at`` − first ``at`` (``None`` without timestamps); ``busy_seconds`` sums
    ``duration_seconds``; ``outcome`` is the first of :data:`OUTCOME_KEYS` found in the
    metadata, as text, or ``None``.
    """

    records: int
    counts: dict[str, int]
    tokens_in: int
    tokens_out: int
    errors: int
    span_seconds: float | None
    busy_seconds: float
    outcome: str | None


class TimelineIndex:
    """Columnar index of a :class:`~core.record.recording.Recording` for the timeline.

    Building it is one pass over the records (O(n)); row access, error navigation and
    seq lookup are O(1) or O(log n); the first :meth:`search` builds a lowercase
    haystack column (O(total text)), later searches are one vectorized scan.
    """

    #: the columns of an index built from columns (run_id, tool_call_id and calls read
    #: from them), until the links between calls and answers are built (on first use)
    _link_columns: Mapping[str, Sequence[Any]] | None = None
    _requested_by: dict[tuple[str | None, str], int]
    _answered_by: dict[tuple[str | None, str], int]

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._raw: list[Any] | None = None
        self._source = "<recording>"
        self._setup(len(recording.records))
        counts = dict.fromkeys(RECORD_KINDS, 0)
        tokens_in = tokens_out = 0
        times: list[float] = []
        for i, r in enumerate(recording.records):
            kind = r.kind
            counts[kind] += 1
            self.seqs[i] = r.seq
            self.kinds[i] = kind
            if type(r) is ToolRecord:
                self.names[i] = r.tool
                self.durations[i] = r.duration_seconds
                if r.tool_call_id:
                    self._answered_by.setdefault((r.run_id, r.tool_call_id), i)
            elif type(r) is ModelRecord:
                swapped = r.meta.get("live_model") if r.meta else None
                # a replay's live call answered by the policy's live_model: both names
                self.names[i] = f"{r.model} → {swapped}" if isinstance(swapped, str) else r.model
                self.durations[i] = r.duration_seconds
                resp = r.response
                if resp is not None:
                    if resp.usage is not None:
                        tokens_in += resp.usage.input_tokens
                        tokens_out += resp.usage.output_tokens
                        self.tokens[i] = resp.usage.input_tokens + resp.usage.output_tokens
                    for c in resp.message.tool_calls or ():
                        self._requested_by.setdefault((r.run_id, c.id), i)
            else:
                self.names[i] = record_name(r)
            status = record_status(r)
            self.statuses[i] = status
            if status == "error":
                self.error_positions.append(i)
            ts = _parse_at(r.at)
            if ts is not None:
                self.offsets[i] = ts  # made relative in _finish
                times.append(ts)
        self._finish(recording.metadata, counts, tokens_in, tokens_out, times)

    @classmethod
    def from_raw(cls, header: Recording, raw_records: list[Any], *, source: str = "<raw>") -> TimelineIndex:
        """Index records straight from parsed JSON (``orjson.loads``), without building
        the pydantic models first — the fast first paint for big files.

        ``header`` is a :class:`Recording` holding the validated header (metadata,
        session) and no records. Checked here, in the same pass: each record is an
        object with a known ``kind`` and an integer ``seq`` that strictly increases.
        Everything else (field types, digest, keys) is *not* checked: a caller must
        still verify the file (``core.record.io.recording_from_dict``) and then call
        :meth:`adopt`. Until then :meth:`record` validates one record on demand.

        Raises:
            FormatError: a record that is not an object, has an unknown kind, or a seq
                that is not an integer or does not increase (names file, record, path).
        """
        self = cls.__new__(cls)
        self.recording = header
        self._raw = raw_records
        self._source = source
        self._setup(len(raw_records))
        counts = dict.fromkeys(RECORD_KINDS, 0)
        tokens_in = tokens_out = 0
        times: list[float] = []
        prev = -1
        names, kinds_col, statuses = self.names, self.kinds, self.statuses
        for i, r in enumerate(raw_records):
            if type(r) is not dict:
                raise FormatError("record is not a JSON object", file=source, record=i, path=f"/records/{i}")
            kind: Any = r.get("kind")
            seq: Any = r.get("seq")
            check_kind_and_seq(kind, seq, prev, source, i)  # a known kind, an increasing integer
            prev = seq
            counts[kind] += 1
            self.seqs[i] = seq
            kinds_col[i] = kind
            status = "ok"
            run_id = r.get("run_id")
            if kind == "tool":
                names[i] = str(r.get("tool", ""))
                self.durations[i] = r.get("duration_seconds")
                result = r.get("result") or {}
                if result.get("error") is not None:
                    status = "error"
                elif result.get("redacted") or holds_marker(result.get("content")):
                    status = "redacted"
                cid = r.get("tool_call_id")
                if cid:
                    self._answered_by.setdefault((run_id, cid), i)
            elif kind == "model":
                names[i] = str(r.get("model", ""))
                self.durations[i] = r.get("duration_seconds")
                if r.get("error") is not None:
                    status = "error"
                resp = r.get("response")
                if resp:
                    usage = resp.get("usage")
                    if usage:
                        ti, to = usage.get("input_tokens", 0) or 0, usage.get("output_tokens", 0) or 0
                        tokens_in += ti
                        tokens_out += to
                        self.tokens[i] = ti + to
                    for c in (resp.get("message") or {}).get("tool_calls") or ():
                        if isinstance(c, dict) and c.get("id"):
                            self._requested_by.setdefault((run_id, c["id"]), i)
                    if status == "ok" and holds_marker((resp.get("message") or {}).get("content")):
                        status = "redacted"
            elif kind == "interrupt":
                names[i] = "interrupt"
                status = interrupt_status(r.get("value"))
            elif kind == "lifecycle":
                names[i] = str(r.get("event", ""))
            else:
                names[i] = r.get("generation_id") or "snapshot"
            if status == "ok":
                if r.get("live_fallback"):
                    status = "live-fallback"
                elif r.get("replayed"):
                    status = "replayed"
            statuses[i] = status
            if status == "error":
                self.error_positions.append(i)
            ts = _parse_at(r.get("at")) if isinstance(r.get("at"), str) else None
            if ts is not None:
                self.offsets[i] = ts
                times.append(ts)
        self._finish(header.metadata, counts, tokens_in, tokens_out, times)
        return self

    @classmethod
    def from_columns(
        cls,
        header: Recording,
        columns: Mapping[str, Sequence[Any]],
        raw_records: Sequence[Any],
        *,
        source: str = "<index>",
    ) -> TimelineIndex:
        """Index records from the columns of a record index — a version-3 file's
        (:class:`core.record.indexed.RecordIndex`) or a skeleton decode's — without
        reading the records: the first paint of a big file. ``columns`` maps each of
        :data:`core.record.indexed.INDEX_COLUMNS` to one entry per record;
        ``raw_records`` gives record ``i`` as parsed JSON on demand (references
        resolved), validated by :meth:`record` when it is shown. The caller still
        verifies the file and then calls :meth:`adopt` (or keeps the index lazy).
        """
        self = cls.__new__(cls)
        self.recording = header
        self._raw = raw_records  # type: ignore[assignment]
        self._source = source
        self._setup(0)
        # the columns' lists are taken as they are (never changed here), not copied
        self.seqs = _as_list(columns["seq"])
        self.kinds = _as_list(columns["kind"])
        self.names = _as_list(columns["name"])
        self.statuses = _as_list(columns["status"])
        self.durations = _as_list(columns["duration"])
        tins, touts = columns["input_tokens"], columns["output_tokens"]
        self.tokens = [None if a is None and b is None else (a or 0) + (b or 0) for a, b in zip(tins, touts)]
        ats = columns["at"]
        self.offsets = list(ats)
        self.error_positions = positions_of(self.statuses, "error")
        # the links between calls and their answers: built on first use
        self._link_columns = columns
        counts = dict.fromkeys(RECORD_KINDS, 0)
        for kind, k in Counter(self.kinds).items():
            if kind in counts:
                counts[kind] = k
        times = [t for t in ats if t is not None]
        self._finish(header.metadata, counts, _total(tins), _total(touts), times)
        return self

    def _build_links(self) -> None:
        """The maps of :attr:`answered_by` / :attr:`requested_by` from the columns of an
        index built from columns, published only once complete (the read-ahead worker
        builds them while the UI thread may follow links by scanning: see _link_of)."""
        columns = self._link_columns
        if columns is None:
            return
        try:
            runs, call_ids, calls = columns["run_id"], columns["tool_call_id"], columns["calls"]
        except FormatError:
            # a damaged record index (read lazily): no links; the verification that
            # runs after the first paint reports the damage and the app shows it
            self._link_columns = None
            return
        answered: dict[tuple[str | None, str], int] = dict(self._answered_by)
        requested: dict[tuple[str | None, str], int] = dict(self._requested_by)
        for i, cid in enumerate(call_ids):
            if cid:
                answered.setdefault((runs[i], cid), i)
        positions, ids_flat = getattr(calls, "positions", None), getattr(calls, "ids", None)
        if positions is not None and ids_flat is not None:  # a record index's flat form
            for i, c in zip(positions, ids_flat):
                requested.setdefault((runs[i], c), i)
        else:
            for i, ids in enumerate(calls):
                if ids:
                    for c in ids:
                        requested.setdefault((runs[i], c), i)
        self._answered_by = answered
        self._requested_by = requested
        self._link_columns = None  # last: from here on, lookups use the maps

    @property
    def answered_by(self) -> dict[tuple[str | None, str], int]:
        """(run_id, tool_call_id) → position of the tool record that answered it."""
        self._build_links()
        return self._answered_by

    @property
    def requested_by(self) -> dict[tuple[str | None, str], int]:
        """(run_id, tool_call_id) → position of the model call that requested it."""
        self._build_links()
        return self._requested_by

    @property
    def verified(self) -> bool:
        """``True`` once every record is a validated model (built from a Recording, or
        after :meth:`adopt`)."""
        return self._raw is None

    def adopt(self, recording: Recording) -> None:
        """Switch to the fully verified ``recording`` of the same records (after a
        :meth:`from_raw` index); drops the raw JSON.

        Raises:
            ValueError: ``recording`` does not have the same seqs as the index.
        """
        if [r.seq for r in recording.records] != self.seqs:
            raise ValueError("the verified recording does not hold the records this index was built from")
        self.recording = recording
        self._raw = None
        self._validated.clear()
        # rows that could not be read before now read from the verified records
        for stale in [p for p, s in self._summaries.items() if s.startswith(INVALID_RECORD)]:
            del self._summaries[stale]

    def _setup(self, n: int) -> None:
        self.seqs: list[int] = [0] * n
        self.kinds: list[str] = [""] * n
        self.names: list[str] = [""] * n
        self.statuses: list[str] = [""] * n
        self.offsets: list[float | None] = [None] * n
        self.durations: list[float | None] = [None] * n
        self.tokens: list[int | None] = [None] * n
        self.error_positions: list[int] = []
        #: (run_id, tool_call_id) → position of the model call that requested it
        self._link_columns = None
        self._requested_by = {}
        #: (run_id, tool_call_id) → position of the tool record that answered it
        self._answered_by = {}
        self._summaries: dict[int, str] = {}
        self._haystack: pl.Series | None = None
        self._validated: dict[int, Any] = {}
        #: the replay answers of the metadata, parsed on first use (see answers)
        self._answers: ReplayAnswers | None = None
        self._answers_read = False
        #: position → answer source, built on the first filter by source
        self._source_column: list[str | None] | None = None
        self._source_counts: dict[str, int] | None = None

    def _finish(
        self, metadata: dict[str, Any], counts: dict[str, int], tokens_in: int, tokens_out: int, times: list[float]
    ) -> None:
        start = min(times) if times else None
        if start is not None:
            self.offsets = [None if o is None else o - start for o in self.offsets]
        #: the first and last ``at`` (seconds since the epoch), for extend
        self._start, self._end = start, (max(times) if times else None)
        busy = _total(self.durations)
        outcome = None
        for k in OUTCOME_KEYS:
            if k in metadata and metadata[k] is not None:
                outcome = one_line(metadata[k], 60)
                break
        self.summary = TimelineSummary(
            records=len(self.seqs),
            counts=counts,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            errors=len(self.error_positions),
            span_seconds=(max(times) - start) if start is not None else None,
            busy_seconds=busy,
            outcome=outcome,
        )

    def extend(self, columns: Mapping[str, Sequence[Any]]) -> None:
        """Append the rows of the records that follow those indexed, from their columns
        (each of :data:`core.record.indexed.INDEX_COLUMNS` → one entry per record): the
        next chunk of a progressive skeleton decode
        (:attr:`core.record.skeleton.Skeleton.rest`), whose records ``raw_records``
        gives from then on. The summary, error positions, offsets (re-based when a
        record is earlier than every one before), links and counts follow; the search's
        text and the answer sources are built again on their next use. Rows already
        indexed keep their positions.

        Raises:
            ValueError: the index is verified (it holds its recording's records), was not
                built from lists of columns, or the first new seq does not follow the
                last one.
        """
        if self.verified or not isinstance(self.seqs, list):
            raise ValueError("only an index built from a skeleton decode's columns grows")
        seqs = columns["seq"]
        if not seqs:
            return
        if self.seqs and not seqs[0] > self.seqs[-1]:
            raise ValueError(f"seq {seqs[0]} does not follow seq {self.seqs[-1]}")
        n0 = len(self.seqs)
        kinds, statuses, durations = columns["kind"], columns["status"], columns["duration"]
        tins, touts = columns["input_tokens"], columns["output_tokens"]
        self.seqs.extend(seqs)
        self.kinds.extend(kinds)
        self.names.extend(columns["name"])
        self.statuses.extend(statuses)
        self.durations.extend(durations)
        self.tokens.extend(None if a is None and b is None else (a or 0) + (b or 0) for a, b in zip(tins, touts))
        self.error_positions.extend(n0 + p for p in positions_of(_as_list(statuses), "error"))
        ats = columns["at"]
        times = [t for t in ats if t is not None]
        start, end = self._start, self._end
        if times:
            lo, hi = min(times), max(times)
            if start is not None and lo < start:
                shift = start - lo
                self.offsets = [None if o is None else o + shift for o in self.offsets]
            start = lo if start is None else min(start, lo)
            end = hi if end is None else max(end, hi)
            self.offsets.extend(None if t is None else t - start for t in ats)
        else:
            self.offsets.extend([None] * len(seqs))
        self._start, self._end = start, end
        links = self._link_columns
        runs, call_ids, calls = columns["run_id"], columns["tool_call_id"], columns["calls"]
        if links is not None:  # not built yet: their columns grow
            for name, part in (("run_id", runs), ("tool_call_id", call_ids), ("calls", calls)):
                col = links[name]
                if not isinstance(col, list):
                    raise ValueError("only an index built from a skeleton decode's columns grows")
                col.extend(part)
        else:
            for i, cid in enumerate(call_ids):
                if cid:
                    self._answered_by.setdefault((runs[i], cid), n0 + i)
            for i, ids in enumerate(calls):
                for c in ids or ():
                    self._requested_by.setdefault((runs[i], c), n0 + i)
        counts = dict(self.summary.counts)
        for kind, k in Counter(kinds).items():
            if kind in counts:
                counts[kind] += k
        old = self.summary
        self.summary = TimelineSummary(
            records=len(self.seqs),
            counts=counts,
            tokens_in=old.tokens_in + _total(tins),
            tokens_out=old.tokens_out + _total(touts),
            errors=len(self.error_positions),
            span_seconds=(end - start) if start is not None and end is not None else None,
            busy_seconds=_total(durations, old.busy_seconds),  # on from the sum so far, as from_columns adds
            outcome=old.outcome,
        )
        self._haystack = None
        self._source_column = None
        self._source_counts = None

    # ------------------------------------------------------------------ rows

    def __len__(self) -> int:
        return len(self.seqs)

    def record(self, position: int) -> Any:
        """The record at ``position`` (a pydantic record model).

        Raises:
            FormatError: (raw index only) the record does not validate.
        """
        if self._raw is None:
            return self.recording.records[position]
        rec = self._validated.get(position)
        if rec is None:
            try:
                rec = _RECORD_ADAPTER.validate_python(self._raw[position])
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                loc = "/".join(str(x) for x in err.get("loc", ())[1:])
                raise FormatError(
                    err.get("msg", "invalid record"),
                    file=self._source,
                    record=position,
                    path=f"/records/{position}" + (f"/{loc}" if loc else ""),
                ) from None
            self._validated[position] = rec
        return rec

    def summary_of(self, position: int) -> str:
        """The one-line summary of the record at ``position`` (computed once, cached)."""
        s = self._summaries.get(position)
        if s is None:
            try:
                s = record_summary(self.record(position))
            except FormatError as exc:
                s = f"{INVALID_RECORD}{exc.reason}"
            self._summaries[position] = s
        return s

    def row(self, position: int) -> TimelineRow:
        """The :class:`TimelineRow` of the record at ``position`` (with its answer source
        and reason in a replay's events, where a record's status is ``ok`` rather than
        ``replayed``: every record of them is replayed, the source says by what — as the
        app's table shows it)."""
        sourced = self.has_answer_sources
        status = self.statuses[position]
        if sourced and status == "replayed":
            status = "ok"
        return TimelineRow(
            position=position,
            seq=self.seqs[position],
            offset_seconds=self.offsets[position],
            kind=self.kinds[position],
            name=self.names[position],
            summary=self.summary_of(position),
            status=status,
            duration_seconds=self.durations[position],
            tokens=self.tokens[position],
            source=self.answer_source(position) if sourced else None,
            reason=self._reason_or_invalid(position) if sourced else None,
            sourced=sourced,
        )

    def _reason_or_invalid(self, position: int) -> str | None:
        try:
            return self.answer_reason(position)
        except FormatError as exc:
            return f"{INVALID_RECORD}{exc.reason}"

    def rows(self, positions: Iterable[int] | None = None) -> Iterable[TimelineRow]:
        """Rows at ``positions`` (all rows when ``None``), in the order given."""
        for p in range(len(self)) if positions is None else positions:
            yield self.row(p)

    # ------------------------------------------------------------------ selection

    def select(
        self,
        kinds: Iterable[str] | None = None,
        *,
        errors_only: bool = False,
        grep: str | None = None,
        sources: Iterable[str] | None = None,
    ) -> list[int]:
        """Positions of the rows to show, in record order.

        ``kinds`` keeps only those kinds (``None`` = all); ``errors_only`` keeps rows
        whose status is ``error``; ``grep`` keeps rows whose text contains it
        (case-insensitive, see :meth:`search`); ``sources`` keeps rows answered by one of
        those answer sources (``None`` = every row; see :meth:`with_sources`).

        Raises:
            ValueError: an unknown kind or answer source (the message lists the known ones).
        """
        wanted = None
        if kinds is not None:
            wanted = set(kinds)
            unknown = wanted - set(RECORD_KINDS)
            if unknown:
                raise ValueError(f"unknown kind(s) {sorted(unknown)}; known kinds: {', '.join(RECORD_KINDS)}")
        if errors_only:
            base: Sequence[int] = self.error_positions
        else:
            base = range(len(self))
        if wanted is not None and len(wanted) < len(RECORD_KINDS):
            k = self.kinds
            out = [p for p in base if k[p] in wanted]
        else:
            out = list(base)
        if grep:
            hits = set(self.search(grep))
            out = [p for p in out if p in hits]
        if sources is not None:
            out = self.with_sources(out, sources)
        return out

    def _build_haystack(self) -> pl.Series:
        previous_request: dict[str | None, Counter[int]] = {}
        texts = []
        for p in range(len(self)):
            try:
                texts.append(_haystack(self.record(p), previous_request))
            except FormatError:
                texts.append("")
        return pl.Series("text", texts, dtype=pl.String)

    def search(self, text: str) -> list[int]:
        """Positions (ascending) of records whose names, arguments, contents, results
        or errors contain ``text``, case-insensitive. Empty ``text`` matches nothing."""
        if not text:
            return []
        haystack = self._haystack
        if haystack is None or len(haystack) != len(self):  # none yet, or rows added since (extend)
            haystack = self._haystack = self._build_haystack()
        mask = haystack.str.contains(text.lower(), literal=True)
        return pl.arg_where(mask, eager=True).to_list() if len(mask) else []

    def position_of_seq(self, seq: int) -> int | None:
        """Position of the record with this seq, or ``None`` (binary search: seqs increase)."""
        i = bisect.bisect_left(self.seqs, seq)
        if i < len(self.seqs) and self.seqs[i] == seq:
            return i
        return None

    def nearest_position_of_seq(self, seq: int) -> int | None:
        """Position of the record with this seq, else of the first record after it, else
        the last record; ``None`` for an empty recording."""
        if not self.seqs:
            return None
        i = bisect.bisect_left(self.seqs, seq)
        return min(i, len(self.seqs) - 1)

    # ------------------------------------------------------------------ answer sources

    @property
    def answers(self) -> ReplayAnswers | None:
        """The answer sources and reasons of a replay's events (parsed from the
        metadata on first use), ``None`` for any other recording."""
        if not self._answers_read:
            self._answers = ReplayAnswers.of(self.recording.metadata)
            self._answers_read = True
        return self._answers

    @property
    def has_answer_sources(self) -> bool:
        """Whether this is a replay's events, whose calls have an answer source (a
        plain recording has none: no source column, no source filter)."""
        return self.answers is not None

    def answer_source(self, position: int) -> str | None:
        """What answered the call at ``position``: one of :data:`ANSWER_SOURCES` (a
        call the metadata does not list was answered as ``recorded``; an interrupt the
        replay copied from its base is ``recorded`` too) or :data:`UNKNOWN_SOURCE`.
        ``None`` for a plain recording and for snapshot and lifecycle rows. O(1)."""
        answers = self.answers
        if answers is None or self.kinds[position] not in SOURCED_KINDS:
            return None
        return answers.sources.get(self.seqs[position], "recorded")

    def answer_reason(self, position: int) -> str | None:
        """Why the source of the row at ``position`` answered it, in one line.

        The reason the replay stored (``metadata.replay.answer_reasons``) when there is
        one. The calls answered as recorded have none stored (the metadata lists only the
        others): their reason is made from the record, in the engine's words —
        ``recorded answer for key sha256:9419d206…`` and ``, before the checkpoint`` for a
        call before it (without the engine's ``(n of m)``: counting needs the base) — and
        an interrupt copied from the base says so. ``None`` where :meth:`answer_source`
        is ``None``.

        Raises:
            FormatError: (raw index only) a recorded call's record does not validate.
        """
        source = self.answer_source(position)
        answers = self.answers
        if source is None or answers is None:
            return None
        seq = self.seqs[position]
        stored = answers.reasons.get(seq)
        if source == UNKNOWN_SOURCE:
            why = f"metadata.replay.answer_sources names an unknown answer source: {answers.unknown.get(seq, '')}"
            return f"{why} ({stored})" if stored else why
        if stored is not None:
            return stored
        if source != "recorded":
            return f"answered by {_SOURCE_NOUNS.get(source, source)} (these replay events store no reason)"
        if self.kinds[position] == "interrupt":
            return "copied from the base: the branch still followed it here (an interrupt answers no call)"
        rec = self.record(position)
        reason = f"recorded answer for key {_short_key(rec.key)}" if rec.key else "recorded answer"
        if answers.checkpoint is not None and seq < answers.checkpoint:
            reason += ", before the checkpoint"
        return reason

    def source_counts(self) -> dict[str, int]:
        """Rows per answer source, for the sources present (in the order of
        :data:`ANSWER_SOURCES`, then :data:`UNKNOWN_SOURCE`); ``{}`` for a plain
        recording. Computed once, with the source column (O(rows)); then a copy of the
        cached counts."""
        if self._source_counts is not None:
            return dict(self._source_counts)
        answers = self.answers
        if answers is None:
            self._source_counts = {}
            return {}
        if self._source_column is None:
            self._source_column = self._build_source_column(answers)
        found = Counter(self._source_column)
        counts = {k: found[k] for k in (*ANSWER_SOURCES, UNKNOWN_SOURCE)}
        self._source_counts = {k: v for k, v in counts.items() if v}
        return dict(self._source_counts)

    def with_sources(self, positions: Iterable[int], sources: Iterable[str]) -> list[int]:
        """The ``positions`` whose row was answered by one of ``sources`` (order kept).
        Snapshot and lifecycle rows, which have no source, are kept only when every
        source is wanted; a plain recording keeps every position. The first call builds
        a source column (O(rows)); later ones are a scan of ``positions``.

        Raises:
            ValueError: an unknown answer source (the message lists the known ones).
        """
        wanted = set(sources)
        allowed = (*ANSWER_SOURCES, UNKNOWN_SOURCE)
        unknown = wanted - set(allowed)
        if unknown:
            raise ValueError(f"unknown answer source(s) {sorted(unknown)}; known sources: {', '.join(allowed)}")
        if self.answers is None:
            return list(positions)
        if wanted >= set(allowed):
            return list(positions)
        column = self._source_column
        if column is None:
            column = self._source_column = self._build_source_column(self.answers)
        return [p for p in positions if column[p] in wanted]

    def _build_source_column(self, answers: ReplayAnswers) -> list[str | None]:
        """Position → answer source (as :meth:`answer_source`) for every row."""
        sourced = SOURCED_KINDS
        column: list[str | None] = ["recorded" if k in sourced else None for k in self.kinds]
        seqs, n = self.seqs, len(self.seqs)
        for seq, src in answers.sources.items():
            # seqs are often the positions themselves (0, 1, 2, …): no search then
            p = seq if seq < n and seqs[seq] == seq else self.position_of_seq(seq)
            if p is not None and column[p] is not None:
                column[p] = src
        return column

    # ------------------------------------------------------------------ errors & links

    def next_error(self, after: int) -> int | None:
        """First error position strictly after ``after`` (``-1`` for the first error)."""
        i = bisect.bisect_right(self.error_positions, after)
        return self.error_positions[i] if i < len(self.error_positions) else None

    def previous_error(self, before: int) -> int | None:
        """Last error position strictly before ``before``."""
        i = bisect.bisect_left(self.error_positions, before)
        return self.error_positions[i - 1] if i > 0 else None

    def linked(self, position: int) -> list[int]:
        """Positions linked to ``position`` by ``tool_call_id`` (same run).

        For a tool record: the model call that requested it. For a model record: the
        tool records that answered the tool calls of its response, in the order of the
        calls. Otherwise, or when nothing matches: ``[]``.
        """
        rec = self.record(position)
        if type(rec) is ToolRecord and rec.tool_call_id:
            p = self._link_of("requested", rec.run_id, rec.tool_call_id)
            return [] if p is None else [p]
        if type(rec) is ModelRecord and rec.response is not None:
            out = []
            for c in rec.response.message.tool_calls or ():
                p = self._link_of("answered", rec.run_id, c.id)
                if p is not None:
                    out.append(p)
            return out
        return []

    def prefetch(self) -> None:
        """Read ahead what an index built from columns reads on first use — the links'
        columns, and the raw records' byte ranges (``raw_records.prefetch()`` when it
        has one) — then build the maps of the links, so that no keypress pays for them
        (the app calls this in a worker right after the first paint). A damaged column
        is left for the verification to report."""
        columns = self._link_columns
        raw = self._raw
        try:
            if columns is not None:
                for name in ("run_id", "tool_call_id", "calls"):
                    columns[name]
            prefetch = getattr(raw, "prefetch", None)
            if prefetch is not None:
                prefetch()
        except FormatError:
            pass
        self._build_links()

    def _link_of(self, which: str, run: str | None, call_id: str) -> int | None:
        """:attr:`answered_by` / :attr:`requested_by` of ``(run, call_id)``. For an index
        built from a record index's columns whose links are not built yet, found by a
        scan of the columns in C (``list.index``: the first match, as the maps keep),
        so showing one record never waits for the links of a million; the read-ahead
        worker builds the maps meanwhile (:meth:`prefetch`)."""
        columns = self._link_columns
        if columns is None:
            return (self.answered_by if which == "answered" else self.requested_by).get((run, call_id))
        try:
            runs = columns["run_id"]
            positions: Sequence[int] | None = None
            if which == "answered":
                ids: Any = columns["tool_call_id"]
            else:
                calls = columns["calls"]
                positions, ids = getattr(calls, "positions", None), getattr(calls, "ids", None)
                if positions is None or ids is None:  # a list per record (a skeleton decode's)
                    return next(
                        (i for i, c in enumerate(calls) if c and call_id in c and runs[i] == run),
                        None,
                    )
        except FormatError:
            return None  # a damaged index: no links (the verification says why)
        if not isinstance(ids, list):
            return None
        k = -1
        while True:
            try:
                k = ids.index(call_id, k + 1)
            except ValueError:
                return None
            at = k if positions is None else positions[k]
            if runs[at] == run:
                return at

    def preceding_model_call(self, position: int, limit: int = 10_000) -> int | None:
        """Position of the nearest model record before ``position`` in the same run
        (looking back at most ``limit`` records), or ``None``."""
        run = self.record(position).run_id
        kinds = self.kinds
        for p in range(position - 1, max(-1, position - 1 - limit), -1):
            if kinds[p] == "model" and self.record(p).run_id == run:
                return p
        return None

    # ------------------------------------------------------------------ details

    def identity(self, position: int) -> dict[str, Any]:
        """Key, args hash and attribution fields of a record (for the detail pane).

        Keys: ``seq``, ``kind``, ``key`` (tool/model), ``args_hash`` (tool),
        ``tool_call_id``, ``at``, ``run_id``, ``generation_id``, ``replayed``,
        ``live_fallback`` — absent values left out.
        """
        rec = self.record(position)
        out: dict[str, Any] = {"seq": rec.seq, "kind": rec.kind}
        if type(rec) in (ToolRecord, ModelRecord) and rec.key:
            out["key"] = rec.key
        if type(rec) is ToolRecord:
            try:
                out["args_hash"] = args_hash(rec.arguments)
            except ValueError:
                out["args_hash"] = None
            if rec.tool_call_id:
                out["tool_call_id"] = rec.tool_call_id
        for f in ("at", "run_id", "generation_id"):
            v = getattr(rec, f)
            if v is not None:
                out[f] = v
        out["replayed"] = rec.replayed
        out["live_fallback"] = rec.live_fallback
        return out


#: how a reason names a source when the events store none (older replay events)
_SOURCE_NOUNS = {
    "intervention": "an intervention",
    "fixture": "a fixture",
    "drift": "the base's answer (lenient drift)",
    "live": "the executor, live",
    "policy": "the tool gate (the call was denied)",
    "user": "an answer a user pinned",
}


# ---------------------------------------------------------------------- transcripts


@dataclass(frozen=True)
class TranscriptEntry:
    """One block of a chat transcript: a ``message``, a ``caption`` (e.g. "response"),
    and whether it is the record being inspected (``current``)."""

    message: ChatMessage
    caption: str = ""
    current: bool = False


def transcript_for(index: TimelineIndex, position: int) -> tuple[list[TranscriptEntry], str]:
    """The chat transcript to show for the record at ``position``, and a note.

    * model record: its request's messages, then its response (``current``);
    * tool record: the transcript of the model call that requested it (linked by
      ``tool_call_id``), then this tool's result as a ``tool`` message (``current``) —
      "the transcript before the tool call";
    * other records, or a tool call no model call requested: no entries, and a note
      saying why.
    """
    rec = index.record(position)
    if type(rec) is ModelRecord:
        entries = [TranscriptEntry(m) for m in rec.request.messages]
        if rec.response is not None:
            entries.append(TranscriptEntry(rec.response.message, caption=f"response of seq {rec.seq}", current=True))
        elif rec.error is not None:
            entries.append(
                TranscriptEntry(
                    ChatMessage(role="assistant", content=f"✗ model call failed: {_error_text(rec.error)}"),
                    caption=f"error of seq {rec.seq}",
                    current=True,
                )
            )
        n = len(rec.request.messages)
        note = f"model call seq {rec.seq} · {rec.model} · {n} request message{'' if n == 1 else 's'}"
        return entries, note
    if type(rec) is ToolRecord:
        links = index.linked(position)
        if rec.result.error is not None:
            # the error once: its type, and its message unless the content repeats it
            err = rec.result.error
            body = rec.result.content
            body_text = "" if body in (None, "") else (body if isinstance(body, str) else one_line(body, 1 << 20))
            message = str(getattr(err, "message", "") or "")
            if message and _repeats(message, body_text):
                content: Any = f"✗ {getattr(err, 'type', 'error')}\n{body_text}"
            else:
                content = f"✗ {_error_text(err)}" + (f"\n{body_text}" if body_text else "")
        else:
            content = (
                rec.result.content if isinstance(rec.result.content, str) else one_line(rec.result.content, 1 << 20)
            )
        result_msg = ChatMessage(role="tool", content=content, tool_call_id=rec.tool_call_id, name=rec.tool)
        model_pos: int | None
        if links:
            model_pos = links[0]
            how = "that requested it"
        else:
            # no tool_call_id link (e.g. text-parsed actions): the model call just before
            model_pos = index.preceding_model_call(position)
            how = "just before it (no tool_call_id links them)"
        if model_pos is None:
            return [TranscriptEntry(result_msg, caption=f"result of seq {rec.seq}", current=True)], (
                f"tool call seq {rec.seq} · {rec.tool}: no model call in this recording precedes it"
            )
        entries, _ = transcript_for(index, model_pos)
        entries = [TranscriptEntry(e.message, e.caption, False) for e in entries]
        entries.append(TranscriptEntry(result_msg, caption=f"result of seq {rec.seq}", current=True))
        note = (
            f"tool call seq {rec.seq} · {rec.tool}: transcript of model call seq "
            f"{index.seqs[model_pos]} {how}, then this result"
        )
        return entries, note
    if type(rec) is InterruptRecord:
        return [
            TranscriptEntry(
                ChatMessage(role="interrupt", content=interrupt_text(rec.value)), caption=f"seq {rec.seq}", current=True
            )
        ], (f"interrupt seq {rec.seq}: the run paused with this value (no chat transcript)")
    article = "an" if rec.kind[:1] in "aeiou" else "a"
    return [], f"{article} {rec.kind} record has no chat transcript"


def _repeats(message: str, body: str) -> bool:
    """Whether a tool result's content already says its error message: the message,
    whitespace-normalized, is in the content, or the content opens with its first
    60 characters (importers often shorten the content into the message)."""
    m = " ".join(message.split())
    b = " ".join(body.split())
    return m in b or (len(m) >= 20 and b.startswith(m[:60]))
