"""The ``batch`` command: metrics, effects and audit summaries of every run under a folder.

``batch DIR [--glob PATTERN] [--metrics] [--effects] [--audit] [--prices F] [--outcome M:F]
[-o OUT.csv|.parquet|.json [--force]] [--jobs N] [--ray-address A]`` — a thin wrapper over
:func:`core.effects.batch.run_batch`: one polars frame, one row per run, printed as a
table (recorded text through :func:`inspector.cli.safe_output.cell`) or written to ``-o``
in the format its extension names. Exit 0 when every file (and every run in it) was
read, 2 otherwise — the unreadable ones are rows whose ``error`` says why. Rules:
docs/batch.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from core.analysis.batch import AUDIT_SCHEMA, EFFECTS_SCHEMA, output_format
from core.analysis.metrics import load_price_table
from core.effects.batch import DEFAULT_GLOB, run_batch
from core.effects.ray_support import RAY_INSTALL

from .common import check_output, echo_err
from .safe_output import cell

#: the columns of each section the printed table shows (files hold every column)
_TABLE_COLUMNS = {
    "metrics": (
        "model_calls",
        "tool_calls",
        "tool_errors",
        "model_errors",
        "input_tokens",
        "output_tokens",
        "duration_seconds",
        "outcome",
    ),
    "effects": tuple(c for c in EFFECTS_SCHEMA if c != "replay_base_digest"),
    "audit": tuple(AUDIT_SCHEMA),
}
#: the widest a name cell gets in the printed table (the files hold it whole)
_NAME_WIDTH = 60


def _fmt(v: Any, width: int | None = None) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    text = cell(v)
    if width is not None and len(text) > width:
        return text[: width - 1] + "…"
    return text


def _print_table(rows: list[dict[str, Any]], sections: list[str]) -> None:
    cols = ["file", "run", "records"]
    for s in sections:
        cols += _TABLE_COLUMNS[s]
    if not any(r["run"] is not None for r in rows):
        cols.remove("run")
    if any(r["error"] is not None for r in rows):
        cols.append("error")
    cells = [[_fmt(r.get(c), None if c == "error" else _NAME_WIDTH) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    typer.echo("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
    for row in cells:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def register(app: typer.Typer) -> None:
    @app.command()
    def batch(
        folder: Annotated[Path, typer.Argument(metavar="DIR", help="The folder whose recordings to summarize.")],
        glob: Annotated[
            str, typer.Option("--glob", help="Which files under DIR (pathlib glob; ** is any depth).")
        ] = DEFAULT_GLOB,
        metrics: Annotated[
            bool,
            typer.Option(
                "--metrics",
                help="Run metrics (the columns of 'metrics'): calls, errors, tokens, duration, cost, outcome, "
                "final output. The default when no section is named.",
            ),
        ] = False,
        effects: Annotated[
            bool,
            typer.Option(
                "--effects",
                help="What the recording says of replays: replayed or not, its base, stop reason, calls answered by "
                "an intervention, fixture, drift or live. Ranked effects need replays with an executor: see 'sweep'.",
            ),
        ] = False,
        audit: Annotated[
            bool,
            typer.Option(
                "--audit",
                help="Lineage counts of the final output: final seq, contributed, unused, unknown calls, redactions. "
                "Knockouts need an executor: see 'audit --executor'.",
            ),
        ] = False,
        prices: Annotated[
            Path | None, typer.Option("--prices", help="Price table JSON for the cost column (as for 'metrics').")
        ] = None,
        outcome: Annotated[
            str | None, typer.Option("--outcome", help="Outcome predicate module:function (as for 'metrics').")
        ] = None,
        output: Annotated[
            Path | None,
            typer.Option("-o", "--output", help="Write the frame to OUT.csv, OUT.parquet or OUT.json (by extension)."),
        ] = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
        jobs: Annotated[
            int,
            typer.Option("--jobs", help="Worker processes (1: this process); with --ray-address local, its CPUs."),
        ] = 1,
        ray_address: Annotated[
            str | None,
            typer.Option(
                "--ray-address",
                help=f"Run each file as a Ray task on this cluster (HOST:PORT, auto, ray://…) or 'local' to start "
                f"one here. Needs the Ray extra: {RAY_INSTALL}",
            ),
        ] = None,
    ) -> None:
        """Summarize every run under DIR (metrics, effects, audit) as one table; exit 2 if a file could not be read."""
        sections = [s for s, on in (("metrics", metrics), ("effects", effects), ("audit", audit)) if on]
        if not sections:
            sections = ["metrics"]
        if output is not None:
            output_format(output)  # an unknown extension fails before any work
            check_output(output, force=force)
        table = load_price_table(prices) if prices is not None else None
        res = run_batch(
            folder,
            pattern=glob,
            sections=sections,
            prices=table,
            predicate=outcome,
            jobs=jobs,
            ray_address=ray_address,
        )
        rows = res.frame.to_dicts()
        if output is not None:
            from core.analysis.batch import write_frame

            fmt = write_frame(res.frame, output)
            typer.echo(f"{len(rows)} row(s) from {res.files} file(s) written to {cell(str(output))} ({fmt})")
        else:
            _print_table(rows, sections)
        if not res.ok:
            echo_err(
                f"{len(res.failed)} of {res.files} file(s) could not be read in full: "
                "their rows hold the error (the error column)"
            )
            raise typer.Exit(2)
