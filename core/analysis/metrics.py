"""Metrics of runs and of comparisons, as polars frames (SPEC "Diffs, metrics, effects").

**Per run** (:func:`run_metrics`, one row per recording, schema :data:`RUN_SCHEMA`):

* ``steps`` — agent-loop turns: a turn starts with a model call and includes the tool
  calls that follow it, so ``steps`` = ``model_calls``; a recording with no model call
  (a tool-only capture) counts each tool call as a turn;
* ``model_calls``, ``tool_calls``, ``tool_errors`` (tool results with an ``error``),
  ``model_errors`` (model records with an ``error``);
* ``input_tokens``, ``output_tokens`` — sums of ``response.usage`` over the model calls
  that recorded it; when none did, the run totals of ``metadata.usage_totals`` (an
  importer's mapping of totals the source keeps per run, e.g. SWE-agent's
  ``model_stats``), else null — *not recorded*, never 0;
* ``duration_seconds`` — sum of the recorded ``duration_seconds`` of the calls that
  recorded one; null when no call did;
  ``wall_seconds`` — last ``at`` minus first ``at`` (null without timestamps);
* ``cost`` — with a price table (:func:`load_price_table`): Σ tokens × price per million
  tokens, per model; null when a model has no price or no call recorded usage. Without
  a table: the recorded ``metadata.usage_totals.cost`` when there is one, else null;
* ``outcome`` / ``outcome_source`` — from a user predicate ``module:function`` when given
  (``predicate``), else ``metadata.outcome`` (``metadata``), else ``unknown``; booleans
  map to ``success`` / ``failure``;
* ``final_output`` — :func:`final_output`, as text (JSON text for structured outputs):
  the one rule of :mod:`core.analysis.final_output` (the format's declared rule — SWE-agent's
  submitted patch, OpenHands' ``finish`` — else the harness's statement, else the last
  response), so ``final_output_changed`` compares what each run produced.

**Per comparison** (:func:`comparison_metrics`, schema :data:`COMPARISON_SCHEMA`): the
delta (other − base) of every numeric run metric, ``outcome_changed``,
``final_output_changed``, the first divergence (``divergence_base_seq``,
``divergence_replay_seq``, ``divergence_dimension``, ``divergence_step`` — the base turn
it falls in), and ``fixture_uses`` / ``drift_uses``: how many calls of the other run were
answered from a fixture or by lenient drift. Those come from the replay engine: given
explicitly, or read from replay events' ``metadata.replay.answer_sources``
(``{seq: source}`` for every answer that was not ``recorded``); 0 for a plain recording.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..errors import AnalysisError
from ..record.nesting import dumps
from ..record.reader import USER_JSON_LIMIT, read_input
from ..record.recording import ModelRecord, Recording, ToolRecord
from ..record.userjson import loads_user_json
from .diff import TraceDiff, output_diff, trace_diff
from .final_output import final_model_record, final_output

__all__ = [
    "COMPARISON_SCHEMA",
    "RUN_SCHEMA",
    "answer_source_counts",
    "comparison_metrics",
    "final_model_record",
    "final_output",
    "load_predicate",
    "load_price_table",
    "normalize_outcome",
    "outcome_of",
    "run_metrics",
    "run_metrics_row",
    "step_of",
    "usage_totals",
]

RUN_SCHEMA: dict[str, Any] = {
    "run": pl.String,
    "records": pl.Int64,
    "steps": pl.Int64,
    "model_calls": pl.Int64,
    "tool_calls": pl.Int64,
    "tool_errors": pl.Int64,
    "model_errors": pl.Int64,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "duration_seconds": pl.Float64,
    "wall_seconds": pl.Float64,
    "cost": pl.Float64,
    "outcome": pl.String,
    "outcome_source": pl.String,
    "final_output": pl.String,
}

_NUMERIC = (
    "records",
    "steps",
    "model_calls",
    "tool_calls",
    "tool_errors",
    "model_errors",
    "input_tokens",
    "output_tokens",
    "duration_seconds",
    "wall_seconds",
    "cost",
)

COMPARISON_SCHEMA: dict[str, Any] = {
    "base": pl.String,
    "other": pl.String,
    **{f"{m}_delta": (pl.Float64 if RUN_SCHEMA[m] == pl.Float64 else pl.Int64) for m in _NUMERIC},
    "outcome_base": pl.String,
    "outcome_other": pl.String,
    "outcome_changed": pl.Boolean,
    "final_output_changed": pl.Boolean,
    "divergence_base_seq": pl.Int64,
    "divergence_replay_seq": pl.Int64,
    "divergence_dimension": pl.String,
    "divergence_step": pl.Int64,
    "fixture_uses": pl.Int64,
    "drift_uses": pl.Int64,
}

Predicate = Callable[[Recording], Any]
PriceTable = Mapping[str, Mapping[str, float]]


# --------------------------------------------------------------------------- final output


def _output_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    return dumps(v, orjson.OPT_SORT_KEYS).decode()


# --------------------------------------------------------------------------- outcome


def normalize_outcome(value: Any) -> str:
    """An outcome as a label: ``True``/``False`` → ``success``/``failure``; a string as
    written (stripped); a mapping → its ``status``/``outcome``/``result`` field; anything
    else (``None`` included) → ``unknown``."""
    if isinstance(value, bool):
        return "success" if value else "failure"
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, Mapping):
        for k in ("status", "outcome", "result"):
            if k in value:
                return normalize_outcome(value[k])
    return "unknown"


def load_predicate(spec: str) -> Predicate:
    """Import an outcome predicate ``module:function`` (called with a Recording, returns
    bool, a label, or ``None`` for unknown); the module is looked up in the installed
    packages, then in the current directory. Raises AnalysisError naming ``spec``."""
    if ":" not in spec:
        raise AnalysisError(f"outcome predicate {spec!r} must be written module:function")
    mod_name, func_name = spec.split(":", 1)
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)  # a user's module in the current directory, as `python -m` finds it
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise AnalysisError(f"outcome predicate {spec!r}: cannot import {mod_name!r} ({exc})") from None
    fn: Callable[[Recording], Any] | None = getattr(mod, func_name, None)
    if fn is None or not callable(fn):
        raise AnalysisError(f"outcome predicate {spec!r}: {mod_name} has no callable {func_name!r}")
    return fn


def outcome_of(rec: Recording, predicate: Predicate | None = None, *, label: str = "") -> tuple[str, str]:
    """``(outcome, source)`` — source ``predicate``, ``metadata`` or ``unknown``.

    Raises AnalysisError when the predicate raises (message names the run ``label``)."""
    if predicate is not None:
        try:
            value = predicate(rec)
        except Exception as exc:  # a user's function: report, never a traceback
            raise AnalysisError(f"outcome predicate failed on {label or 'run'}: {type(exc).__name__}: {exc}") from exc
        out = normalize_outcome(value)
        return out, ("predicate" if out != "unknown" else "unknown")
    if "outcome" in rec.metadata:
        out = normalize_outcome(rec.metadata["outcome"])
        return out, ("metadata" if out != "unknown" else "unknown")
    return "unknown", "unknown"


# --------------------------------------------------------------------------- prices


def load_price_table(path: Path | str) -> dict[str, dict[str, float]]:
    """Read a price table: ``{"MODEL": {"input": X, "output": Y}, ...}`` in currency units
    per million tokens; ``"*"`` is the price of any model not listed.

    Raises AnalysisError naming the file and the place of a bad entry.
    """
    p = Path(path)
    data = read_input(p, what="price table", limit=USER_JSON_LIMIT, error=AnalysisError)
    doc = loads_user_json(data, str(p), AnalysisError)
    return validate_price_table(doc, source=str(p))


def validate_price_table(doc: Any, *, source: str = "<prices>") -> dict[str, dict[str, float]]:
    """Check a parsed price table (see :func:`load_price_table`). Raises AnalysisError."""
    if not isinstance(doc, dict):
        raise AnalysisError(f"{source}: a price table is a JSON object of models, not {type(doc).__name__}")
    out: dict[str, dict[str, float]] = {}
    for model, entry in doc.items():
        if not isinstance(entry, dict):
            raise AnalysisError(f'{source} at /{model}: expected {{"input": N, "output": N}}')
        prices: dict[str, float] = {}
        for k in ("input", "output"):
            v = entry.get(k, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise AnalysisError(f"{source} at /{model}/{k}: price must be a number >= 0, got {v!r}")
            prices[k] = float(v)
        unknown = set(entry) - {"input", "output"}
        if unknown:
            raise AnalysisError(f"{source} at /{model}: unknown field(s) {sorted(unknown)}")
        out[model] = prices
    return out


# --------------------------------------------------------------------------- per run


def _parse_at(at: str | None) -> datetime | None:
    if not at:
        return None
    try:
        return datetime.fromisoformat(at)
    except ValueError:
        return None


def usage_totals(rec: Recording) -> dict[str, Any]:
    """``metadata.usage_totals`` of ``rec`` (run totals an importer mapped from its source:
    ``input_tokens``/``output_tokens`` ints, ``cost`` in USD), keeping only well-typed
    values; ``{}`` when absent or malformed."""
    raw = rec.metadata.get("usage_totals") if isinstance(rec.metadata, dict) else None
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for k in ("input_tokens", "output_tokens"):
        v = raw.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
    v = raw.get("cost")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        out["cost"] = float(v)
    return out


def run_metrics_row(
    rec: Recording,
    label: str = "",
    *,
    prices: PriceTable | None = None,
    predicate: Predicate | None = None,
) -> dict[str, Any]:
    """The :data:`RUN_SCHEMA` row of one recording (see module docstring)."""
    model_calls = tool_calls = tool_errors = model_errors = 0
    tin = tout = 0
    with_usage = 0  # model calls that recorded usage
    duration = 0.0
    with_duration = 0  # calls that recorded a duration
    cost: float | None = 0.0 if prices is not None else None
    first = last = None
    for r in rec.records:
        t = _parse_at(r.at)
        if t is not None:
            first = t if first is None or t < first else first
            last = t if last is None or t > last else last
        if isinstance(r, ModelRecord):
            model_calls += 1
            if r.error is not None:
                model_errors += 1
            i = o = 0
            if r.response is not None and r.response.usage is not None:
                i, o = r.response.usage.input_tokens, r.response.usage.output_tokens
                with_usage += 1
            tin += i
            tout += o
            if r.duration_seconds is not None:
                duration += r.duration_seconds
                with_duration += 1
            if cost is not None:
                price = prices.get(r.model) or prices.get("*")  # type: ignore[union-attr]
                if price is None:
                    cost = None
                else:
                    cost += (i * price.get("input", 0.0) + o * price.get("output", 0.0)) / 1e6
        elif isinstance(r, ToolRecord):
            tool_calls += 1
            if r.result.error is not None:
                tool_errors += 1
            if r.duration_seconds is not None:
                duration += r.duration_seconds
                with_duration += 1
    tokens_in: int | None = tin
    tokens_out: int | None = tout
    if not with_usage:
        totals = usage_totals(rec)
        tokens_in, tokens_out = totals.get("input_tokens"), totals.get("output_tokens")
        cost = totals.get("cost") if prices is None else None
    outcome, source = outcome_of(rec, predicate, label=label)
    return {
        "run": label,
        "records": len(rec.records),
        "steps": model_calls if model_calls else tool_calls,
        "model_calls": model_calls,
        "tool_calls": tool_calls,
        "tool_errors": tool_errors,
        "model_errors": model_errors,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "duration_seconds": duration if with_duration else None,
        "wall_seconds": (last - first).total_seconds() if first is not None and last is not None else None,
        "cost": cost,
        "outcome": outcome,
        "outcome_source": source,
        "final_output": _output_text(final_output(rec)),
    }


def run_metrics(
    runs: Iterable[tuple[str, Recording]] | Iterable[Recording],
    *,
    prices: PriceTable | None = None,
    predicate: Predicate | None = None,
) -> pl.DataFrame:
    """One :data:`RUN_SCHEMA` row per run. ``runs`` holds ``(label, recording)`` pairs
    or bare recordings (labelled ``run0``, ``run1``...). Raises AnalysisError from a
    failing predicate."""
    rows = []
    for n, item in enumerate(runs):
        label, rec = item if isinstance(item, tuple) else (f"run{n}", item)
        rows.append(run_metrics_row(rec, label, prices=prices, predicate=predicate))
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row") if rows else pl.DataFrame(schema=RUN_SCHEMA)


# --------------------------------------------------------------------------- per comparison


def answer_source_counts(rec: Recording) -> dict[str, int]:
    """Count of non-recorded answers per source (``intervention``, ``fixture``, ``drift``,
    ``live``) from replay events' ``metadata.replay.answer_sources``; ``{}`` otherwise."""
    replay = rec.metadata.get("replay")
    sources = replay.get("answer_sources") if isinstance(replay, Mapping) else None
    counts: dict[str, int] = {}
    if isinstance(sources, Mapping):
        for src in sources.values():
            if isinstance(src, str):
                counts[src] = counts.get(src, 0) + 1
    return counts


def step_of(rec: Recording | Sequence[Any], seq: int | None) -> int | None:
    """The turn (0-based) a record falls in: model calls at or before ``seq`` minus one
    (tool calls belong to the turn of the model call before them); in a recording without
    model calls, the index of the tool call. ``seq`` ``None`` (the end of the run) →
    the number of turns."""
    records = rec.records if isinstance(rec, Recording) else list(rec)
    has_model = any(isinstance(r, ModelRecord) for r in records)
    unit = ModelRecord if has_model else ToolRecord
    n = 0
    for r in records:
        if seq is not None and r.seq > seq:
            break
        if isinstance(r, unit):
            n += 1
    if seq is None:
        return n
    return max(n - 1, 0)


def comparison_metrics(
    base: Recording,
    other: Recording,
    *,
    base_label: str = "base",
    other_label: str = "other",
    prices: PriceTable | None = None,
    predicate: Predicate | None = None,
    trace: TraceDiff | None = None,
    fixture_uses: int | None = None,
    drift_uses: int | None = None,
) -> pl.DataFrame:
    """One :data:`COMPARISON_SCHEMA` row comparing ``other`` with ``base``.

    ``trace`` is reused when given (else computed). ``fixture_uses`` / ``drift_uses``:
    the replay engine's counts of calls answered from fixtures and by lenient drift;
    ``None`` reads them from ``other``'s replay metadata (:func:`answer_source_counts`).
    Raises ``ValueError`` for a negative count.
    """
    counts = answer_source_counts(other)
    if fixture_uses is None:
        fixture_uses = counts.get("fixture", 0)
    if drift_uses is None:
        drift_uses = counts.get("drift", 0)
    if fixture_uses < 0 or drift_uses < 0:
        raise ValueError("fixture_uses and drift_uses must be >= 0")
    a = run_metrics_row(base, base_label, prices=prices, predicate=predicate)
    b = run_metrics_row(other, other_label, prices=prices, predicate=predicate)
    if trace is None:
        trace = trace_diff(base, other)
    fd = trace.first_divergence
    row: dict[str, Any] = {"base": base_label, "other": other_label}
    for m in _NUMERIC:
        x, y = a[m], b[m]
        row[f"{m}_delta"] = None if x is None or y is None else y - x
    row.update(
        {
            "outcome_base": a["outcome"],
            "outcome_other": b["outcome"],
            "outcome_changed": a["outcome"] != b["outcome"],
            "final_output_changed": output_diff(final_output(base), final_output(other)).changed,
            "divergence_base_seq": fd.base_seq if fd else None,
            "divergence_replay_seq": fd.replay_seq if fd else None,
            "divergence_dimension": fd.dimension if fd else None,
            "divergence_step": step_of(base, fd.base_seq) if fd else None,
            "fixture_uses": fixture_uses,
            "drift_uses": drift_uses,
        }
    )
    return pl.DataFrame([row], schema=COMPARISON_SCHEMA, orient="row")
