"""``export``: write a recording (or any importable run) in another format.

``chassis-inspector export FILE --to otlp -o OUT.json`` writes the run as OpenTelemetry
OTLP JSON with GenAI semantic-convention spans (see :mod:`core.importers.otel`), for
Langfuse, Phoenix, Logfire or any OTLP collector; ``--to atif`` writes it as an ATIF-v1.7
trajectory (Harbor's Agent Trajectory Interchange Format, see :mod:`core.importers.atif`). ``FILE`` may be a Chassis recording
or any format ``import`` reads (``--run`` picks a run of a multi-run source).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from core.analysis.safe_text import json_safe
from core.errors import FormatError, SourceImportError
from core.record.io import atomic_write_bytes
from core.record.recording import Recording

from .common import check_output, opened_notices_each, print_json

EXPORT_FORMATS = ("otlp", "atif")


def _open(path: Path, run: str | None, fmt: str | None) -> tuple[Recording, list[str]]:
    """The recording to export and the notices to show (conversion, warnings)."""
    from core.importers import open_any

    opened = open_any(path, run=run, fmt=fmt)
    return opened.recording, opened_notices_each(path, opened)


def export_summary(doc: dict[str, Any]) -> dict[str, int]:
    """Counts of an OTLP document: traces, spans, model (chat) spans, tool spans."""
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    ops = [
        next((kv["value"].get("stringValue") for kv in s["attributes"] if kv["key"] == "gen_ai.operation.name"), None)
        for s in spans
    ]
    return {
        "traces": len({s["traceId"] for s in spans}),
        "spans": len(spans),
        "model_spans": ops.count("chat"),
        "tool_spans": ops.count("execute_tool"),
    }


def register(app: typer.Typer) -> None:
    @app.command()
    def export(
        file: Annotated[Path, typer.Argument(help="A recording, or any file `import` reads.")],
        to: Annotated[
            str,
            typer.Option(
                "--to",
                help="Output format: otlp (OpenTelemetry GenAI spans, OTLP JSON) or atif (ATIF-v1.7 trajectory).",
            ),
        ] = "otlp",
        output: Annotated[
            Path | None, typer.Option("--output", "-o", help="Output file (default: standard output).")
        ] = None,
        run: Annotated[str | None, typer.Option("--run", help="Run id or index of a multi-run source.")] = None,
        source_format: Annotated[str | None, typer.Option("--from", help="Source format (default: detected).")] = None,
        compact: Annotated[bool, typer.Option("--compact", help="No indentation.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary (with -o).")] = False,
        force: Annotated[bool, typer.Option("--force", help="Overwrite OUTPUT if it exists.")] = False,
    ) -> None:
        """Export a run to another format (OTLP JSON for Langfuse / Phoenix / Logfire, or an ATIF trajectory)."""
        from core.importers.atif import atif_summary, recording_to_atif
        from core.importers.otel import recording_to_otlp
        from core.record.nesting import dumps

        if to.lower() not in EXPORT_FORMATS:
            raise SourceImportError(f"unknown export format {to!r} (known: {', '.join(EXPORT_FORMATS)})")
        if output is not None and output.is_dir():
            raise FormatError("is a directory; give a file name to -o", file=str(output))
        if output is not None:
            check_output(output, force=force, inputs=(file,))
        rec, notices = _open(file, run, source_format)
        for n in notices:
            typer.echo(f"chassis-inspector: {n}", err=True)
        option = orjson.OPT_INDENT_2 if not compact else 0
        if to.lower() == "atif":
            doc = recording_to_atif(rec)
            data = dumps(doc, option)
            summary = atif_summary(doc)
            wrote = (
                f"{summary['steps']} ATIF steps ({summary['agent_steps']} agent steps, "
                f"{summary['tool_calls']} tool calls, {summary['observations']} tool results)"
            )
        else:
            doc = recording_to_otlp(rec)
            data = dumps(doc, option)  # what export_otlp writes, without converting twice
            summary = export_summary(doc)
            wrote = (
                f"{summary['spans']} spans in {summary['traces']} trace(s) "
                f"({summary['model_spans']} model calls, {summary['tool_spans']} tool calls)"
            )
        if output is None:
            # as text, through the output filter: json_safe escapes what the encoder left raw
            sys.stdout.write(json_safe(data.decode()) + "\n")
            sys.stdout.flush()
            return
        try:
            atomic_write_bytes(output, data)
        except OSError as exc:
            raise FormatError(f"cannot write: {exc.strerror or exc}", file=str(output)) from None
        if as_json:
            print_json({"output": str(output), "format": to.lower(), **summary})
        else:
            typer.echo(f"wrote {output}: {wrote}")
