"""``record``: record any agent through the local model-API proxy.

``chassis-inspector record -o RUN.json [--upstream-openai URL] [--upstream-anthropic URL]
[--timeout S] [--force] -- CMD ARGS…`` runs CMD with ``OPENAI_BASE_URL`` /
``ANTHROPIC_BASE_URL`` (and the SDKs' other spellings) pointed at a proxy on 127.0.0.1,
forwards every request to the real upstream and writes the recording when CMD exits —
atomically, and marked incomplete when CMD crashed, timed out or was interrupted. The
exit code is CMD's. CMD's output is its own (shown as it prints it, never filtered);
what ``record`` says goes to standard error. Replaying the recording runs CMD again:
``replay RUN.json --branch B --executor recorded --trust-executor`` (or ``--executor
'cmd:CMD ARGS…'``). docs/proxy.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.analysis.safe_text import shown
from core.proxy.recorder import record_command

from .common import check_output


def register(app: typer.Typer) -> None:
    @app.command(
        "record",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )
    def record(
        command: Annotated[list[str], typer.Argument(help="The agent's command, after '--'.", show_default=False)],
        output: Annotated[Path, typer.Option("-o", "--output", help="The recording to write.")],
        upstream_openai: Annotated[
            str | None,
            typer.Option(
                "--upstream-openai",
                help="Where OpenAI requests go (default: the OPENAI_BASE_URL you had, else api.openai.com).",
            ),
        ] = None,
        upstream_anthropic: Annotated[
            str | None,
            typer.Option(
                "--upstream-anthropic",
                help="Where Anthropic requests go (default: the ANTHROPIC_BASE_URL you had, else api.anthropic.com).",
            ),
        ] = None,
        timeout: Annotated[
            float | None,
            typer.Option("--timeout", help="Seconds CMD may run; then it is ended and the recording kept, incomplete."),
        ] = None,
        upstream_timeout: Annotated[
            float,
            typer.Option(
                "--upstream-timeout",
                help="Seconds the upstream may send nothing before the call is given up (then HTTP 504).",
            ),
        ] = 600.0,
        force: Annotated[bool, typer.Option("--force", help="Overwrite an existing recording.")] = False,
    ) -> None:
        """Run CMD with its model APIs pointed at a local proxy and record every call."""
        check_output(output, force=force)
        if timeout is not None and timeout <= 0:
            raise typer.BadParameter("must be more than 0", param_hint="--timeout")
        result = record_command(
            command,
            output,
            upstream_openai=upstream_openai,
            upstream_anthropic=upstream_anthropic,
            timeout=timeout,
            upstream_timeout=upstream_timeout,
        )
        counts = result.recording.counts_by_kind()
        observed = sum(1 for r in result.recording.records if r.kind == "tool")
        unrecorded = len(result.recording.metadata.get("recorder", {}).get("unrecorded") or [])
        line = (
            f"recorded {counts['model']} model call(s) and {observed} tool call(s) the agent ran itself "
            f"to {output}; the command exited with status {result.exit_code}"
        )
        if unrecorded:
            line += f"; {unrecorded} other request(s) forwarded, not recorded"
        typer.echo(f"chassis-inspector: {shown(line)}", err=True)
        if not counts["model"]:
            typer.echo(
                "chassis-inspector: no model call went through the proxy: does the agent read OPENAI_BASE_URL / "
                "ANTHROPIC_BASE_URL (a hard-coded URL bypasses it)? The recording holds only its metadata",
                err=True,
            )
        if result.incomplete:
            typer.echo(f"chassis-inspector: the recording is marked incomplete: {shown(result.reason or '')}", err=True)
        for w in result.warnings[:10]:
            # recorded text (a tool call id, a name) is data: its control codes are shown, never run
            typer.echo(f"chassis-inspector: warning: {shown(w)}", err=True)
        raise typer.Exit(result.exit_code)
