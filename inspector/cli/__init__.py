"""The ``chassis-inspector`` command line (typer).

Command modules register themselves on :data:`app`; each keeps to one area:
``recording_cmds`` (validate, info, migrate), ``view_cmds`` (open, serve, timeline),
``import_cmds`` (import). ``chassis-inspector FILE`` and a bare ``chassis-inspector``
mean ``open``. Every :class:`core.errors.InspectorError` is printed on one line on
stderr with exit code 2 — never a traceback.

Every command writes through :func:`inspector.cli.safe_output.protected_output`: recorded
text that reaches the terminal shows its control, bidi and invisible characters as
visible stand-ins, with a marker on the line (see that module). Only ``serve`` is left
out: its server log is written by Rich in colour, and it prints no recorded text.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from core.analysis.safe_text import shown
from core.errors import InspectorError, printable
from core.record.nesting import ensure_recursion_limit

from .. import set_frame_rate
from .replay_cmds import IMPLICIT_COMMAND
from .safe_output import protected_output

app = typer.Typer(
    name="chassis-inspector",
    help="Inspect, branch, replay and compare recordings of AI-agent runs.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # never strip escape sequences silently when stdout is not a terminal: the output
    # filter shows them (the same bytes on a terminal and in a pipe)
    context_settings={"color": True},
)

#: commands that hand the terminal to something else: serve's server log (coloured, no
#: recorded text) and record's agent (its own output, shown as it prints it)
_UNFILTERED_COMMANDS = frozenset({"serve", "record"})

_COMMAND_MODULES = (
    "inspector.cli.recording_cmds",
    "inspector.cli.view_cmds",
    "inspector.cli.import_cmds",
    "inspector.cli.replay_cmds",
    "inspector.cli.export_cmds",
    "inspector.cli.analysis_cmds",
    "inspector.cli.effects_cmds",
    "inspector.cli.proxy_cmds",
    "inspector.cli.batch_cmds",
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
    """Entry point of the console script; returns the exit code.

    Every command (and the app, which ``open`` runs) works on JSON values nested up to
    the nesting limit: the recursion limit and the stack size of threads are raised first
    (:func:`core.record.nesting.ensure_recursion_limit`).
    """
    ensure_recursion_limit()
    set_frame_rate()  # before Textual is imported (the app's commands import it lazily)
    args = list(sys.argv[1:] if argv is None else argv)
    commands = _known_commands()
    implied_open = False
    if "open" in commands:
        if not args or (args[0] not in commands and args[0] not in ("--help", "-h")):
            args = ["open", *args]
            implied_open = True
    if args and args[0] in _UNFILTERED_COMMANDS:
        return _run(args)
    with protected_output():
        return _run(args, implied_open)


def _run(args: list[str], implied_open: bool = False) -> int:
    try:
        result = app(args=args, prog_name="chassis-inspector", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except InspectorError as exc:
        # shown() here too: serve runs without the output filter
        typer.echo(f"chassis-inspector: {shown(str(exc), keep_newline=True)}", err=True)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # standard output on a full disk (ENOSPC), a path the system refuses
        typer.echo(f"chassis-inspector: {_os_error_line(exc)}", err=True)
        if exc.filename is None:
            _discard_stdout()
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Exception as exc:  # typer's (vendored click) usage errors: one line, exit 2
        if _is_usage_error(exc):
            typer.echo(_usage_line(exc, args, implied_open), err=True)
            return int(getattr(exc, "exit_code", 2) or 2)
        if type(exc).__name__ == "Abort":
            typer.echo("aborted", err=True)
            return 130
        raise
    return result if isinstance(result, int) else 0


def _os_error_line(exc: OSError) -> str:
    """One line for an OSError no command turned into its own error: the file and the
    system's reason, or — without a file — what could not be written: the output."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{printable(os.fsdecode(exc.filename))}: {reason}"
    return f"cannot write the output: {reason}"


def _discard_stdout() -> None:
    """Point standard output at the null device, so that what is still buffered is not
    written again (and fails again) when the interpreter exits."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (a test's capture)
        pass


def _is_usage_error(exc: BaseException) -> bool:
    return hasattr(exc, "format_message") and hasattr(exc, "exit_code") and hasattr(exc, "show")


def _usage_line(exc: BaseException, args: list[str], implied_open: bool = False) -> str:
    """``chassis-inspector CMD: <reason> (see 'chassis-inspector CMD --help')``.

    CMD is the command as typed: when a subcommand name was implied (``chassis-inspector
    FILE`` is ``open FILE``, ``replay BASE`` is ``replay run BASE``), the line names the
    typed words and the hint says which command's help lists the options."""
    message = exc.format_message().replace("Value error, ", "")  # type: ignore[attr-defined]
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "chassis-inspector"
    if path == "chassis-inspector" and args and args[0] in _known_commands():
        # an error raised before the command's own context exists (an option's missing
        # value): the command is the first word
        path = f"chassis-inspector {args[0]}"
    message = message[:1].lower() + message[1:] if message[:1].isupper() and message[1:2].islower() else message
    implied: tuple[str, str] | None = None
    meta = getattr(ctx, "meta", None) or {}
    if isinstance(meta.get(IMPLICIT_COMMAND), tuple):
        implied = meta[IMPLICIT_COMMAND]
    elif implied_open and path.split()[1:2] == ["open"]:
        implied = ("", "open")
    if implied is not None:
        group, sub = implied
        full = " ".join(w for w in ("chassis-inspector", group, sub) if w)
        typed = " ".join(w for w in ("chassis-inspector", group) if w)
        what = f"{typed} {'BASE' if group else 'FILE'}"
        implied_what = f"{full.removeprefix('chassis-inspector ')} {'BASE' if group else 'FILE'}"
        return f"{typed}: {message.rstrip('.')} (see '{full} --help': '{what}' is '{implied_what}')"
    return f"{path}: {message.rstrip('.')} (see '{path} --help')"


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s code."""
    sys.exit(main())
