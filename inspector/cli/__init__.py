"""The ``chassis-inspector`` command line (typer).

Command modules register themselves on :data:`app`; each keeps to one area:
``recording_cmds`` (validate, info, migrate), ``view_cmds`` (open, serve, timeline),
``import_cmds`` (import). ``chassis-inspector FILE`` and a bare ``chassis-inspector``
mean ``open``. Every :class:`core.errors.InspectorError` is printed on one line on
stderr with exit code 2 — never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import typer

from core.errors import InspectorError

app = typer.Typer(
    name="chassis-inspector",
    help="Inspect, branch, replay and compare recordings of AI-agent runs.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_COMMAND_MODULES = (
    "inspector.cli.recording_cmds",
    "inspector.cli.view_cmds",
    "inspector.cli.import_cmds",
    "inspector.cli.replay_cmds",
    "inspector.cli.export_cmds",
    "inspector.cli.analysis_cmds",
    "inspector.cli.effects_cmds",
)
for _name in _COMMAND_MODULES:
    try:
        _mod = importlib.import_module(_name)
    except ModuleNotFoundError as _exc:  # a module not written yet
        if _exc.name != _name:
            raise
        continue
    _mod.register(app)


def _known_commands() -> set[str]:
    group = typer.main.get_command(app)
    return set(getattr(group, "commands", {}))


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``chassis-inspector: message`` on stderr and return an Exit to raise."""
    typer.echo(f"chassis-inspector: {message}", err=True)
    return typer.Exit(code)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    commands = _known_commands()
    if "open" in commands:
        if not args or (args[0] not in commands and args[0] not in ("--help", "-h")):
            args = ["open", *args]
    try:
        result = app(args=args, prog_name="chassis-inspector", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except InspectorError as exc:
        typer.echo(f"chassis-inspector: {exc}", err=True)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # typer's (vendored click) usage errors: one line, exit 2
        if _is_usage_error(exc):
            typer.echo(_usage_line(exc, args), err=True)
            return int(getattr(exc, "exit_code", 2) or 2)
        if type(exc).__name__ == "Abort":
            typer.echo("aborted", err=True)
            return 130
        raise
    return result if isinstance(result, int) else 0


def _is_usage_error(exc: BaseException) -> bool:
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code") and hasattr(exc, "show")


def _usage_line(exc: BaseException, args: list[str]) -> str:
    """``chassis-inspector CMD: <reason> (see 'chassis-inspector CMD --help')``."""
    message = exc.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "chassis-inspector"
    message = message[:1].lower() + message[1:] if message[:1].isupper() and message[1:2].islower() else message
    return f"{path}: {message.rstrip('.')} (see '{path} --help')"


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s code."""
    sys.exit(main())
