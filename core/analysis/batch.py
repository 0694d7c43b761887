"""Rows of a batch over many runs, as one polars frame (the ``batch`` command).

One row per run: what identifies it, how many records of each kind it holds, then the
sections asked for (:data:`SECTIONS`):

* **identity** (always): ``file`` (the path under the batch folder, POSIX separators),
  ``run`` (the run id of a converted file; null for a native recording, one run per
  file), ``format`` (``chassis`` or the importer's name), ``error`` (null, or the one-line
  error that kept the file or the run from being read: a
  :class:`core.errors.FormatError` names the file, the place and the reason),
  ``warnings`` (import warnings raised for the run), ``records`` and
  ``records_<kind>`` for every kind of :data:`core.record.recording.RECORD_KINDS`;
* ``metrics`` — every column of :data:`core.analysis.metrics.RUN_SCHEMA` but ``run``
  and ``records`` (which the identity holds), computed by
  :func:`core.analysis.metrics.run_metrics_row`, so a row equals what ``metrics FILE``
  prints for that run;
* ``effects`` — what the recording itself says of interventions and answer sources
  (:func:`effects_summary`): a replay's events name their base, why they stopped and how
  many calls were answered by an intervention, a fixture, lenient drift or live. The
  *ranked* effects of a call need replays of the run, which need an executor (``sweep``,
  ``effects``): not part of a batch row;
* ``audit`` — the lineage counts of :func:`core.analysis.audit.audit` run without a
  knockout runner (:func:`audit_summary`); knockouts need an executor and are left out.

A row whose ``error`` is set has nulls in every figure (a file that could not be read
holds no run to count). :func:`batch_frame` builds the frame with the schema of the
sections (:func:`batch_schema`), :func:`write_frame` writes it as CSV, Parquet or JSON
by the output's extension (:data:`OUTPUT_FORMATS`), atomically.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import AnalysisError
from ..record.io import atomic_write_bytes
from ..record.recording import RECORD_KINDS, Recording
from .audit import audit
from .metrics import RUN_SCHEMA, Predicate, PriceTable, answer_source_counts, run_metrics_row

__all__ = [
    "ANSWER_SOURCES",
    "AUDIT_SCHEMA",
    "EFFECTS_SCHEMA",
    "IDENTITY_SCHEMA",
    "METRICS_SCHEMA",
    "OUTPUT_FORMATS",
    "SECTIONS",
    "audit_summary",
    "batch_frame",
    "batch_schema",
    "effects_summary",
    "error_row",
    "frame_bytes",
    "output_format",
    "run_row",
    "write_frame",
]

SECTIONS = ("metrics", "effects", "audit")
"""The optional parts of a batch row, in column order."""

IDENTITY_SCHEMA: dict[str, Any] = {
    "file": pl.String,
    "run": pl.String,
    "format": pl.String,
    "error": pl.String,
    "warnings": pl.Int64,
    "records": pl.Int64,
    **{f"records_{k}": pl.Int64 for k in RECORD_KINDS},
}

METRICS_SCHEMA: dict[str, Any] = {k: v for k, v in RUN_SCHEMA.items() if k not in ("run", "records")}

#: the non-recorded answer sources a replay's events count (``metadata.replay.answer_sources``)
ANSWER_SOURCES = ("intervention", "fixture", "drift", "live")

EFFECTS_SCHEMA: dict[str, Any] = {
    "replayed": pl.Boolean,
    "replay_base_digest": pl.String,
    "replay_stop_reason": pl.String,
    **{f"answers_{s}": pl.Int64 for s in ANSWER_SOURCES},
}

AUDIT_SCHEMA: dict[str, Any] = {
    "final_seq": pl.Int64,
    "calls_contributed": pl.Int64,
    "calls_unused": pl.Int64,
    "calls_unknown": pl.Int64,
    "lineage_edges": pl.Int64,
    "redactions": pl.Int64,
    "redactions_in_lineage": pl.Int64,
}

_SECTION_SCHEMAS = {"metrics": METRICS_SCHEMA, "effects": EFFECTS_SCHEMA, "audit": AUDIT_SCHEMA}

OUTPUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".json": "json"}
"""Output file extension → format written by :func:`write_frame`."""


def _check_sections(sections: Sequence[str]) -> list[str]:
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise AnalysisError(f"unknown batch section(s) {unknown}; choose among {', '.join(SECTIONS)}")
    return [s for s in SECTIONS if s in sections]


def batch_schema(sections: Sequence[str]) -> dict[str, Any]:
    """The column → polars dtype mapping of a batch frame with ``sections`` (any order,
    columns always in :data:`SECTIONS` order after the identity). Raises AnalysisError
    for an unknown section."""
    schema = dict(IDENTITY_SCHEMA)
    for s in _check_sections(sections):
        schema.update(_SECTION_SCHEMAS[s])
    return schema


def effects_summary(rec: Recording) -> dict[str, Any]:
    """The :data:`EFFECTS_SCHEMA` part of a row: ``replayed`` (the recording is a
    replay's events: ``metadata.replay`` written by the replay engine), the replay's
    base digest and stop reason, and per source of :data:`ANSWER_SOURCES` how many calls
    were not answered from the recording
    (:func:`core.analysis.metrics.answer_source_counts`). A recording that is not a
    replay has ``replayed`` false and nulls (nothing was replayed, so no source)."""
    replay = rec.metadata.get("replay") if isinstance(rec.metadata, dict) else None
    if not isinstance(replay, dict):
        return {"replayed": False, "replay_base_digest": None, "replay_stop_reason": None} | {
            f"answers_{s}": None for s in ANSWER_SOURCES
        }
    base = replay.get("base")
    digest = base.get("digest") if isinstance(base, dict) else None
    stop = replay.get("stop_reason")
    counts = answer_source_counts(rec)
    return {
        "replayed": True,
        "replay_base_digest": digest if isinstance(digest, str) else None,
        "replay_stop_reason": stop if isinstance(stop, str) else None,
    } | {f"answers_{s}": counts.get(s, 0) for s in ANSWER_SOURCES}


def audit_summary(rec: Recording) -> dict[str, Any]:
    """The :data:`AUDIT_SCHEMA` part of a row, from :func:`core.analysis.audit.audit`
    without a knockout runner: the final call's seq (null: no final output), how many
    calls contributed to the final output (the final call included), were unused or
    cannot be told, the lineage edges, and the places redaction hid content (all, and on
    the lineage)."""
    rep = audit(rec)
    return {
        "final_seq": rep.final_seq,
        "calls_contributed": len(rep.contributed()),
        "calls_unused": len(rep.unused()),
        "calls_unknown": len(rep.unknown()),
        "lineage_edges": len(rep.edges),
        "redactions": len(rep.redactions),
        "redactions_in_lineage": sum(1 for r in rep.redactions if r.in_lineage),
    }


def run_row(
    rec: Recording,
    *,
    file: str,
    run: str | None = None,
    fmt: str = "chassis",
    warnings: int = 0,
    sections: Sequence[str] = ("metrics",),
    prices: PriceTable | None = None,
    predicate: Predicate | None = None,
) -> dict[str, Any]:
    """The batch row of one run (module docstring), keys in :func:`batch_schema` order.

    Raises AnalysisError from a failing outcome ``predicate`` or an unknown section."""
    kinds: Counter[str] = Counter(r.kind for r in rec.records)
    row: dict[str, Any] = {
        "file": file,
        "run": run,
        "format": fmt,
        "error": None,
        "warnings": warnings,
        "records": len(rec.records),
        **{f"records_{k}": kinds.get(k, 0) for k in RECORD_KINDS},
    }
    for s in _check_sections(sections):
        if s == "metrics":
            m = run_metrics_row(rec, file if run is None else f"{file}#{run}", prices=prices, predicate=predicate)
            row.update({k: m[k] for k in METRICS_SCHEMA})
        elif s == "effects":
            row.update(effects_summary(rec))
        else:
            row.update(audit_summary(rec))
    return row


def error_row(file: str, error: str, *, run: str | None = None, fmt: str | None = None) -> dict[str, Any]:
    """A row for a file (or one run of it) that could not be read or summarized:
    ``error`` set, every figure null (filled in by :func:`batch_frame`)."""
    return {"file": file, "run": run, "format": fmt, "error": error}


def batch_frame(rows: Iterable[dict[str, Any]], sections: Sequence[str] = ("metrics",)) -> pl.DataFrame:
    """The frame of ``rows`` with the schema of ``sections`` (:func:`batch_schema`);
    a column a row lacks (an :func:`error_row`) is null there."""
    schema = batch_schema(sections)
    data = [{k: r.get(k) for k in schema} for r in rows]
    return pl.DataFrame(data, schema=schema, orient="row") if data else pl.DataFrame(schema=schema)


def output_format(path: str | Path) -> str:
    """``csv``, ``parquet`` or ``json`` from the extension of ``path`` (case-insensitive,
    :data:`OUTPUT_FORMATS`). Raises AnalysisError naming the file for another one."""
    fmt = OUTPUT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise AnalysisError(f"{path}: the output must end in {', '.join(OUTPUT_FORMATS)} (it picks the format)")
    return fmt


def frame_bytes(df: pl.DataFrame, fmt: str) -> bytes:
    """``df`` serialized as ``csv`` (header row, UTF-8, nulls as empty fields),
    ``parquet`` or ``json`` (an array of row objects, polars' ``write_json``)."""
    if fmt == "csv":
        return df.write_csv().encode()
    if fmt == "json":
        return df.write_json().encode()
    if fmt == "parquet":
        buf = io.BytesIO()
        df.write_parquet(buf)
        return buf.getvalue()
    raise AnalysisError(f"unknown output format {fmt!r}; choose among {', '.join(OUTPUT_FORMATS.values())}")


def write_frame(df: pl.DataFrame, path: str | Path) -> str:
    """Write ``df`` to ``path`` in the format its extension names (:func:`output_format`)
    atomically (:func:`core.record.io.atomic_write_bytes`); returns the format.

    Raises AnalysisError for an unknown extension, OutputError when it cannot be
    written."""
    fmt = output_format(path)
    atomic_write_bytes(path, frame_bytes(df, fmt))
    return fmt
