"""What :func:`core.importers.open_any` returns: a recording opened from any file, with
where it came from, the runs the file holds and the import warnings — typed, with no
wording of any frontend (the CLI and the app each phrase it their own way).

It also holds the **run order**, the one order in which every frontend lists the runs
of a multi-run file (``import --list``, ``import --run N``, ``open --run N``, the app's
run picker), so that index ``N`` names the same run everywhere:

* :func:`run_sort_key` / :func:`order_runs` — by sample id, then epoch, compared
  naturally (:func:`natural_key`: ``2`` before ``10``, ``s2`` before ``s10``); runs
  whose metadata names no sample come after, in file order; ties stay in file order;
* :func:`select_run` — one run by id or by its index in that order;
* :func:`run_score` / :func:`run_label` / :class:`RunRef` — what a picker shows of a run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CanonicalizationError, FormatError, SourceImportError
from ..record.io import recording_digest
from ..record.recording import Recording
from .base import ImportedRun, ImportWarning, fold_warnings

#: ``(sample key, epoch key)`` pairs of ``Recording.metadata`` that order the runs of a
#: file, the first pair whose sample key is set wins: Inspect AI (``sample_id``,
#: ``epoch``), tau-bench (``task_id``, ``trial``)
SAMPLE_KEYS: tuple[tuple[str, str], ...] = (("sample_id", "epoch"), ("task_id", "trial"))

_DIGITS = re.compile(r"([0-9]+)")

NaturalKey = tuple[str | tuple[int, str], ...]


def _number(digits: str) -> tuple[int, str]:
    """A run of digits as a key that orders as its number, of any length (no ``int()``:
    Python refuses strings of more than 4,300 digits): ``(length without leading zeros,
    those digits)``."""
    significant = digits.lstrip("0")
    return len(significant), significant


def natural_key(value: Any) -> NaturalKey:
    """``value`` (``str()`` of a non-string) as a key that compares runs of ASCII digits
    as numbers and the rest without case: ``("s", (1, "2"), "")`` for ``"S2"``, so
    ``s2`` sorts before ``s10`` and ``2`` before ``10``, for numbers of any length. Keys
    alternate text and numbers, starting with text (possibly empty), so any two
    compare."""
    text = value if isinstance(value, str) else str(value)
    parts = _DIGITS.split(text.casefold())
    return tuple(_number(p) if i % 2 else p for i, p in enumerate(parts))


def sample_of(recording: Recording) -> tuple[Any, Any] | None:
    """``(sample id, epoch)`` of a run as its metadata records them (see
    :data:`SAMPLE_KEYS`; the epoch may be ``None``), or ``None`` when it names no
    sample."""
    md = recording.metadata
    for sample_key, epoch_key in SAMPLE_KEYS:
        if md.get(sample_key) is not None:
            return md[sample_key], md.get(epoch_key)
    return None


def run_sort_key(run: ImportedRun, file_index: int) -> tuple[int, NaturalKey, NaturalKey, int]:
    """The key of the run order: ``(0, sample, epoch, file_index)`` for a run whose
    metadata names its sample (:func:`sample_of`, compared by :func:`natural_key`; no
    epoch counts as the empty text), ``(1, (), (), file_index)`` for one that does not.
    ``file_index`` is the run's position in the file."""
    sample = sample_of(run.recording)
    if sample is None:
        return (1, (), (), file_index)
    sid, epoch = sample
    return (0, natural_key(sid), natural_key("" if epoch is None else epoch), file_index)


def run_order(runs: Sequence[ImportedRun]) -> list[int]:
    """The file positions of ``runs`` (as :func:`core.importers.import_file` returns
    them) in run order (:func:`run_sort_key`)."""
    return sorted(range(len(runs)), key=lambda i: run_sort_key(runs[i], i))


def order_runs(runs: Sequence[ImportedRun]) -> list[ImportedRun]:
    """``runs`` in run order: the order every frontend lists them in and the one
    ``--run N`` counts in. Stable: a list already in run order comes back unchanged."""
    return [runs[i] for i in run_order(runs)]


def select_run(runs: Sequence[ImportedRun], run: str | int | None, *, source: str) -> ImportedRun:
    """Pick one run: ``None`` → the first in run order (:func:`order_runs`); an ``int``
    → the run at that index in run order (negative counts from the end); a ``str`` →
    the run with that id, else, when it is a whole number, the run at that index (what
    ``--run`` takes).

    Raises:
        SourceImportError: ``runs`` is empty, or no such run (the message lists the ids
            available, in run order).
    """
    if not runs:
        raise SourceImportError(f"{source}: holds no run")
    ordered = order_runs(runs)
    if run is None:
        return ordered[0]
    key = str(run)
    if not isinstance(run, int):
        for r in ordered:
            if r.run_id == key:
                return r
    if key.lstrip("-").isdigit():
        i = int(key)
        if -len(ordered) <= i < len(ordered):
            return ordered[i]
    ids = [r.run_id for r in ordered]
    shown = ", ".join(ids[:10]) + (f", … ({len(ids)} in all)" if len(ids) > 10 else "")
    raise SourceImportError(f"{source}: no run {key!r} (runs: {shown}; or an index 0..{len(ordered) - 1})")


def _short(value: Any, limit: int = 40) -> str:
    """A score value on one line: scalars as written, anything else as compact JSON,
    cut at ``limit`` characters with ``…``."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool | int | float) or value is None:
        text = json.dumps(value)
    else:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_score(recording: Recording) -> str | None:
    """The score a source recorded for a run, as one short line, or ``None``: Inspect
    AI's ``metadata.scores`` as ``SCORER VALUE`` pairs (``includes C``, several joined
    with ``, ``), tau-bench's ``metadata.reward`` as ``reward 1.0``, else a
    ``metadata.score`` as ``score VALUE``. Recorded text: a frontend shows it as data."""
    md = recording.metadata
    scores = md.get("scores")
    if isinstance(scores, dict) and scores:
        parts = []
        for name, s in scores.items():
            value = s.get("value") if isinstance(s, dict) else s
            parts.append(f"{name} {_short(value)}")
        return ", ".join(parts)
    if isinstance(md.get("reward"), bool | int | float):
        return f"reward {_short(md['reward'])}"
    if md.get("score") is not None:
        return f"score {_short(md['score'])}"
    return None


def run_outcome(recording: Recording) -> str | None:
    """``metadata.outcome`` when it is a non-empty string (``success``, ``failure``…),
    else ``None``."""
    outcome = recording.metadata.get("outcome")
    return outcome if isinstance(outcome, str) and outcome else None


def run_label(run: ImportedRun) -> str:
    """A short summary of a run for a picker: its outcome and score when the source
    records them, its number of records, ``incomplete`` when it was cut short
    (``success · includes C · 24 records``)."""
    n = len(run.recording.records)
    parts = [p for p in (run_outcome(run.recording), run_score(run.recording)) if p]
    parts.append(f"{n} record{'s' if n != 1 else ''}")
    if run.incomplete:
        parts.append("incomplete")
    return " · ".join(parts)


@dataclass(frozen=True)
class RunRef:
    """One run (sample, trajectory, cassette) of a source file, for a run picker.

    * ``id`` — as ``open_any(path, run=ID)`` takes it;
    * ``index`` — its position in run order (:func:`order_runs`), also accepted as
      ``run`` (``--run N``);
    * ``label`` — a short summary (:func:`run_label`);
    * ``file_index`` — its position in the file (``metadata.source.index``);
    * ``sample_id`` / ``epoch`` — as the metadata records them (:func:`sample_of`), as
      text; ``None`` when not recorded;
    * ``outcome`` — ``metadata.outcome`` (``success``, ``failure``…) or ``None``;
    * ``score`` — :func:`run_score` or ``None``;
    * ``records`` — its number of records; ``incomplete`` — cut short with the source;
    * ``title`` — ``metadata.title`` when the source names the run (a Claude Code
      session's first prompt or title, a sub-agent's name and task), else ``None``;
    * ``parent`` — the id of the run this one belongs to (a sub-agent's or a recorded
      alternative path's run), ``None`` for a top-level run.

    Every text is recorded data: a frontend shows it, never interprets it.
    """

    id: str
    index: int
    label: str
    file_index: int = -1
    sample_id: str | None = None
    epoch: str | None = None
    outcome: str | None = None
    score: str | None = None
    records: int = 0
    incomplete: bool = False
    parent: str | None = None
    title: str | None = None

    @classmethod
    def of(cls, run: ImportedRun, index: int, file_index: int) -> RunRef:
        """The reference of ``run``, ``index`` in run order, ``file_index`` in the file."""
        sample = sample_of(run.recording)
        return cls(
            id=run.run_id,
            index=index,
            label=run_label(run),
            file_index=file_index,
            sample_id=None if sample is None else str(sample[0]),
            epoch=None if sample is None or sample[1] is None else str(sample[1]),
            outcome=run_outcome(run.recording),
            score=run_score(run.recording),
            records=len(run.recording.records),
            incomplete=run.incomplete,
            parent=run.parent,
            title=title if isinstance(title := run.recording.metadata.get("title"), str) else None,
        )


@dataclass(frozen=True)
class Opened:
    """A recording opened by :func:`core.importers.open_any`.

    * ``recording`` — the recording (converted in memory when the file is not native);
    * ``source_format`` — ``"chassis"`` (:data:`core.importers.NATIVE`) for a native
      recording, else the name of the importer that converted it;
    * ``run_id`` — the id of the run shown (``None`` for a native recording);
    * ``runs`` — every run the file holds, in run order (:func:`order_runs`; empty for
      a native recording: it is one run, nothing to pick);
    * ``incomplete`` — the source was cut short and this run was recovered from the
      part before the damage (only with ``open_any(..., recover=True)``);
    * ``warnings`` — the import warnings, near-identical ones folded into one with a
      ``count`` (:func:`core.importers.base.fold_warnings`);
    * ``all_warnings`` — every warning as raised, in order, each ``count`` 1 (what
      ``metadata.source.warnings`` stores, without its cap);
    * ``source`` — the file, as given to ``open_any``;
    * ``imported`` — every run as imported, in file order: :meth:`with_run` opens
      another one from them without parsing the file again;
    * ``file_warnings`` — the warnings about the file as a whole (its truncation), the
      first of every run's ``all_warnings``.
    """

    recording: Recording
    source_format: str
    run_id: str | None = None
    runs: list[RunRef] = field(default_factory=list)
    incomplete: bool = False
    warnings: list[ImportWarning] = field(default_factory=list)
    all_warnings: list[ImportWarning] = field(default_factory=list)
    source: str = ""
    imported: tuple[ImportedRun, ...] = field(default=(), repr=False, compare=False)
    file_warnings: tuple[ImportWarning, ...] = field(default=(), repr=False)

    @classmethod
    def from_runs(
        cls,
        runs: Sequence[ImportedRun],
        run: str | int | None,
        *,
        source_format: str,
        source: str,
        file_warnings: Sequence[ImportWarning] = (),
    ) -> Opened:
        """The :class:`Opened` of run ``run`` (id or index in run order, ``None`` the
        first; :func:`select_run`) among ``runs`` of the file ``source``, in file order
        (their positions are the ``file_index`` of :attr:`runs`). The chosen run gets its canonical digest when it has
        none and one can be computed (otherwise it stays without: saving reports the
        value).

        Raises:
            SourceImportError: no such run, or ``runs`` is empty.
        """
        order = run_order(runs)
        ordered = [runs[i] for i in order]
        chosen = select_run(ordered, run, source=source)
        if chosen.recording.digest is None:
            try:
                chosen.recording.digest = recording_digest(chosen.recording)
            except (FormatError, CanonicalizationError):
                pass  # shown without a digest; saving reports the value that has no canonical form
        every = list(file_warnings) + list(chosen.warnings)
        return cls(
            recording=chosen.recording,
            source_format=source_format,
            run_id=chosen.run_id,
            runs=[RunRef.of(r, k, i) for k, (i, r) in enumerate(zip(order, ordered))],
            incomplete=chosen.incomplete,
            warnings=fold_warnings(every),
            all_warnings=every,
            source=source,
            imported=tuple(runs),
            file_warnings=tuple(file_warnings),
        )

    def with_run(self, run: str | int) -> Opened:
        """The same file opened at another run (id, or index in run order), from the
        runs already imported: the file is not read again.

        Raises:
            SourceImportError: a native recording (one run, nothing to pick), or no
                such run (lists the ids).
        """
        if not self.imported:
            raise SourceImportError(f"{self.source or 'this file'}: a Chassis recording holds one run; none to pick")
        return Opened.from_runs(
            self.imported, run, source_format=self.source_format, source=self.source, file_warnings=self.file_warnings
        )

    @property
    def converted(self) -> bool:
        """Whether the file was converted from another format (not a native recording)."""
        return self.source_format != "chassis"

    @property
    def run_index(self) -> int | None:
        """Position of the run shown among :attr:`runs` (run order; ``None`` for a native
        recording)."""
        for r in self.runs:
            if r.id == self.run_id:
                return r.index
        return None

    @property
    def run(self) -> RunRef | None:
        """The :class:`RunRef` of the run shown (``None`` for a native recording)."""
        for r in self.runs:
            if r.id == self.run_id:
                return r
        return None

    @property
    def warning_count(self) -> int:
        """How many warnings were raised (the folded ones counted each)."""
        return sum(w.count for w in self.warnings)
