"""The ``import`` command: convert an agent-run file into Chassis recordings.

``chassis-inspector import SRC -o OUT [--from NAME] [--run ID|INDEX]`` writes one
recording; ``--all -o DIR`` writes every run of a multi-run source (one file per run,
named after the run id); ``--list`` only lists the runs. Runs are listed, and ``--run
N`` counted, in run order (:func:`core.importers.order_runs`: by sample id, then epoch,
compared naturally), the same order as the app's run picker and ``open --run N``. The format is detected
unless ``--from`` names it. Import warnings are printed on stderr (and stored in the
recording's ``metadata.source.warnings``). Existing outputs are never overwritten
without ``--force``; files are written atomically (:func:`core.record.io.save_recording`).
A truncated source fails with a "truncated" error; ``--recover`` writes the runs
recovered from before the damage instead (marked incomplete).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from core.importers import IMPORTERS, ImportedRun, import_file, order_runs, select_run
from core.importers.base import group_warnings
from core.record.io import save_recording

from .common import check_output, echo_err, print_json
from .safe_output import cell

MAX_PRINTED_WARNINGS = 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_FROM_HELP = "Source format (default: detected). One of: " + ", ".join(i.name for i in IMPORTERS) + "."


def run_file_name(run_id: str, index: int) -> str:
    """A safe file name for a run: the id with unsafe characters replaced, ``.json``."""
    stem = _UNSAFE.sub("_", run_id).strip("._") or f"run-{index}"
    return f"{stem[:120]}.json"


def _summary(run: ImportedRun, out: Path | None, index: int) -> dict[str, Any]:
    rec = run.recording
    counts = rec.counts_by_kind()
    return {
        "run": run.run_id,
        "index": index,
        "output": str(out) if out else None,
        "records": len(rec.records),
        "counts": counts,
        "outcome": rec.metadata.get("outcome"),
        "incomplete": run.incomplete,
        "parent": run.parent,
        "warnings": [str(w) for w in run.warnings],
    }


def _store_forks(workspace: Path, runs: list[ImportedRun], src: Path, *, quiet: bool) -> None:
    """Store the recorded alternative paths of ``runs`` in ``workspace`` and say what was
    stored (on stderr, so ``--json`` stays one document)."""
    from core.recorded_forks import store_recorded_forks
    from core.workspace import Workspace

    stored = []
    if any(r.forks for r in runs):  # a workspace is created only to hold something
        with Workspace.open(workspace) as ws:
            stored = store_recorded_forks(ws, runs, str(src))
    if not stored:
        echo_err(
            f"notice: {cell(str(src))} holds no recorded alternative path; nothing stored in {cell(str(workspace))}"
        )
        return
    for f in stored:
        what = "stored" if f.created else "already stored"
        echo_err(
            f"notice: {what}: branch {f.branch_id} (checkpoint {f.checkpoint}, {cell(f.label)}) "
            f"and its replay {f.replay_id} in {cell(str(workspace))}"
        )


def _print_warnings(run: ImportedRun, prefix: str) -> None:
    lines = group_warnings(run.warnings)
    for w in lines[:MAX_PRINTED_WARNINGS]:
        echo_err(f"warning: {prefix}{w}")
    extra = len(lines) - MAX_PRINTED_WARNINGS
    if extra > 0:
        echo_err(f"warning: {prefix}… and {extra} more (all are in metadata.source.warnings)")


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_(
        src: Annotated[Path, typer.Argument(help="Agent-run file to convert.")],
        output: Annotated[
            Path | None, typer.Option("-o", "--output", help="Output recording (a directory with --all).")
        ] = None,
        from_: Annotated[str | None, typer.Option("--from", help=_FROM_HELP)] = None,
        run: Annotated[
            str | None,
            typer.Option("--run", help="Run to import from a multi-run source: id, or index as --list shows it."),
        ] = None,
        all_: Annotated[bool, typer.Option("--all", help="Import every run into the directory given by -o.")] = False,
        list_: Annotated[bool, typer.Option("--list", help="List the runs of SRC and write nothing.")] = False,
        force: Annotated[bool, typer.Option("--force", help="Overwrite existing outputs.")] = False,
        recover: Annotated[
            bool, typer.Option("--recover", help="From a truncated source, write the runs before the damage.")
        ] = False,
        json: Annotated[bool, typer.Option("--json", help="Print a JSON summary on stdout.")] = False,
        workspace: Annotated[
            Path | None,
            typer.Option(
                "--workspace",
                help="Store the source's recorded alternative paths (Claude Code /rewind forks) in this workspace "
                "as branches with their replays.",
            ),
        ] = None,
    ) -> None:
        """Convert an agent-run file (Inspect AI, SWE-agent, tau-bench, Claude Code, ...) into recordings."""
        if not list_ and output is None and workspace is None:
            echo_err("missing -o/--output (a file, or a directory with --all)")
            raise typer.Exit(2)
        if all_ and run is not None:
            echo_err("--all and --run cannot be used together")
            raise typer.Exit(2)
        # run order (core.importers.order_runs: by sample id, then epoch, naturally), the
        # order --list prints, --run N counts in and the app's picker shows
        runs = order_runs(import_file(src, from_, recover=recover))
        fmt = runs[0].recording.metadata.get("source", {}).get("format", from_) if runs else from_
        if workspace is not None:
            _store_forks(workspace, runs, src, quiet=json)
            if output is None and not list_:
                return
        if list_:
            rows = [_summary(r, None, i) for i, r in enumerate(runs)]
            if json:
                print_json({"source": str(src), "format": fmt, "runs": rows})
                return
            for row in rows:
                c = row["counts"]
                typer.echo(
                    f"{row['index']:>4}  {cell(row['run']):<40} model {c['model']:>4}  tool {c['tool']:>4}  "
                    f"outcome {cell(row['outcome'] or '-')}"
                    + ("  (incomplete)" if row["incomplete"] else "")
                    + (f"  (of {cell(row['parent'])})" if row["parent"] else "")
                )
            return
        assert output is not None
        if all_:
            targets = [(i, r, output / run_file_name(r.run_id, i)) for i, r in enumerate(runs)]
            names = [t[2].name for t in targets]
            if len(set(names)) != len(names):
                targets = [(i, r, output / f"{i:04d}-{run_file_name(r.run_id, i)}") for i, r in enumerate(runs)]
            if output.exists() and not output.is_dir():
                echo_err(f"{output} is not a directory (--all writes one file per run into a directory)")
                raise typer.Exit(2)
        else:
            top = [r for r in runs if r.parent is None]
            if len(runs) > 1 and run is None and len(top) == 1:
                # one run and what belongs to it (sub-agents, recorded alternative paths)
                run = top[0].run_id
                echo_err(
                    f"notice: {cell(str(src))} holds {len(runs) - 1} more run(s) of this one (sub-agents, recorded alternative "
                    "paths); import them with --run ID or --all -o DIR (--list names them); --workspace DIR stores the "
                    "recorded alternative paths as branches"
                )
            if len(runs) > 1 and run is None:
                ids = ", ".join(cell(r.run_id) for r in runs[:5]) + (", …" if len(runs) > 5 else "")
                echo_err(
                    f"{src} holds {len(runs)} runs ({ids}); choose one with --run ID|INDEX, "
                    "or write them all with --all -o DIR"
                )
                raise typer.Exit(2)
            chosen = select_run(runs, run, source=str(src))
            targets = [(runs.index(chosen), chosen, output)]
        for t in targets:
            # never the source; --force checked below; --all creates DIR (not its parents)
            check_output(t[2], force=True, inputs=(src,), new_folder=output if all_ else None)
        existing = [str(t[2]) for t in targets if t[2].exists()]
        if existing and not force:
            shown = ", ".join(existing[:3]) + (f" and {len(existing) - 3} more" if len(existing) > 3 else "")
            echo_err(f"{shown} exists; pass --force to overwrite")
            raise typer.Exit(2)
        summaries = []
        for i, r, out in targets:
            _print_warnings(r, f"{r.run_id}: " if len(targets) > 1 else "")
            save_recording(r.recording, out)
            s = _summary(r, out, i)
            summaries.append(s)
            if not json:
                c = s["counts"]
                typer.echo(
                    f"{src} ({cell(fmt)}) run {cell(r.run_id)} → {out}: {s['records']} records "
                    f"(model {c['model']}, tool {c['tool']}, interrupt {c['interrupt']}), "
                    f"{len(r.warnings)} warning(s)" + (", incomplete" if r.incomplete else "")
                )
        if json:
            print_json({"source": str(src), "format": fmt, "runs": summaries})
