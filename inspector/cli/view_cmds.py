"""Commands that view a recording: ``open`` (the default verb), ``serve``, ``timeline``.

``open`` loads the file completely (and verifies it) *before* the app starts, so a file
that fails to load prints its :class:`~core.errors.FormatError` on one line and exits 2
without ever drawing a screen. ``serve`` runs the same app in a browser through
textual-serve (loopback only unless ``--public``). ``timeline`` prints the rows the
app's table shows, for scripts.
"""

from __future__ import annotations

import ipaddress
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.analysis.marks import record_marks
from core.analysis.timeline import TimelineIndex
from core.analysis.timeline_text import format_duration, format_offset, rows_to_csv, source_label
from core.record.recording import RECORD_KINDS

from .common import echo_err, opened_notices_each, print_json
from .safe_output import cell, csv_safe

if TYPE_CHECKING:
    from inspector.app import InspectorApp

#: files bigger than this get a "loading…" line on stderr before the app starts
LOUD_LOAD_BYTES = 50 * 1024 * 1024


class Kind(str, Enum):
    """The record kinds ``timeline --kind`` accepts."""

    model = "model"
    tool = "tool"
    interrupt = "interrupt"
    snapshot = "snapshot"
    lifecycle = "lifecycle"


def resolve_recording(file: Path | None) -> Path:
    """``file``, or the bundled default recording when ``None`` (see inspector.defaults)."""
    from inspector.defaults import default_recording_path

    return default_recording_path() if file is None else file


def _check_bindable(host: str, port: int, *, shown: str | None = None) -> None:
    """Fail in one line, before starting the server, when ``host:port`` cannot be bound
    (unknown host name, an address of another machine, a port already in use). ``host``
    is the address as the socket layer takes it (``::1``), ``shown`` as the user wrote it
    (``[::1]``)."""
    import socket

    shown = host if shown is None else shown
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        echo_err(f"--host {shown}: cannot resolve ({exc.strerror})")
        raise typer.Exit(2) from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            echo_err(f"cannot serve on {shown}:{port}: {exc.strerror or exc}")
            raise typer.Exit(2) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine.

    ``localhost`` and any loopback address (127.0.0.0/8, ::1) count; names other than
    ``localhost`` and wildcard addresses (0.0.0.0, ::) do not.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _load(path: Path, *, fast_open: bool = True, run: str | None = None):
    from inspector.loader import load_for_view

    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > LOUD_LOAD_BYTES:
        typer.echo(f"chassis-inspector: loading {path} ({size / 1e6:,.0f} MB)…", err=True)
    if fast_open:
        return load_for_view(path, run=run)
    return load_for_view(path, run=run, fast_open_bytes=1 << 62)


def run_app(app: InspectorApp) -> None:
    """Run the app in this terminal and turn how it ended into the command's exit: a
    fast-opened file that failed its background verification raises its
    :class:`~core.errors.FormatError` (exit 2); an exception nothing handled is one line
    on stderr (the app printed no traceback) and exit 1; else the app's return code.

    Raises:
        FormatError: the recording turned out invalid while the app ran.
        typer.Exit: the app ended with a non-zero code.
    """
    try:
        app.run()
    except Exception as exc:  # raised past Textual's handler (e.g. again while it shut down)
        if app.crash is None:
            app.crash = exc
    if app.load_error is not None:
        raise app.load_error
    if app.crash is not None:
        what = " ".join(f"{type(app.crash).__name__}: {app.crash}".split())
        echo_err(f"the inspector app stopped on an unexpected error: {cell(what)}")
        raise typer.Exit(app.return_code or 1)
    if app.return_code:
        raise typer.Exit(app.return_code)


def register(app: typer.Typer) -> None:
    @app.command("open")
    def open_(
        file: Annotated[
            Path | None,
            typer.Argument(help="Recording (or any format the importers accept). Default: the bundled sample."),
        ] = None,
        run: Annotated[
            str | None,
            typer.Option(
                "--run",
                help="A run of a multi-run file: id, or index as `import --list` shows it (skips the run picker).",
            ),
        ] = None,
        workspace: Annotated[
            Path | None,
            typer.Option(
                "--workspace", help="Workspace folder for branches and replays (default ./.chassis-inspector)."
            ),
        ] = None,
    ) -> None:
        """Open a recording in the inspector app (the default command); a file of several
        runs opens on the run picker unless --run names one."""
        from inspector.app import InspectorApp
        from inspector.keymap import load_keymap

        keymap = load_keymap()
        loaded = _load(resolve_recording(file), run=run)
        run_app(InspectorApp(loaded, keymap, workspace=workspace))

    @app.command()
    def compare(
        base: Annotated[Path, typer.Argument(help="The base run: a recording, or any format the importers accept.")],
        other: Annotated[Path, typer.Argument(help="The run to compare with it (a replay's events, another trial).")],
        run_a: Annotated[
            str | None, typer.Option("--run-a", help="The run of a multi-run BASE file (id or index).")
        ] = None,
        run_b: Annotated[
            str | None, typer.Option("--run-b", help="The run of a multi-run OTHER file (id or index).")
        ] = None,
        workspace: Annotated[
            Path | None,
            typer.Option("--workspace", help="Workspace folder (default ./.chassis-inspector)."),
        ] = None,
    ) -> None:
        """Open two runs side by side in the app, aligned by the trace diff (escape: the
        base's timeline)."""
        from core.errors import InspectorError, SourceImportError
        from core.importers import NATIVE, detect
        from inspector.app import InspectorApp
        from inspector.keymap import load_keymap

        keymap = load_keymap()
        loaded = []
        for path, run, option in ((base, run_a, "--run-a"), (other, run_b, "--run-b")):
            try:
                one = _load(path, fast_open=False, run=run)
            except SourceImportError as exc:
                if run is None:
                    raise
                # about the run (the file's format was recognised): name this command's option,
                # not the loader's `open --run`
                try:
                    native = detect(path) == NATIVE
                except InspectorError:
                    raise exc from None
                if native:
                    why = f"{cell(str(path))}: a Chassis recording is one run; {option} picks a run of a multi-run file"
                else:
                    why = f"{option} {cell(run)}: {cell(str(exc))}"
                echo_err(why)
                raise typer.Exit(2) from None
            if one.has_runs and not one.run_requested:
                count = len(one.opened.runs) if one.opened is not None else 0
                echo_err(f"{cell(str(path))}: the file holds {count} runs: name one with {option} ID")
                raise typer.Exit(2)
            loaded.append(one)
        run_app(InspectorApp(loaded[0], keymap, workspace=workspace, compare_with=loaded[1]))

    @app.command()
    def serve(
        file: Annotated[Path | None, typer.Argument(help="Recording to serve. Default: the bundled sample.")] = None,
        host: Annotated[str, typer.Option("--host", help="Address to bind (loopback by default).")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
        public: Annotated[bool, typer.Option("--public", help="Allow binding a non-loopback address.")] = False,
        max_sessions: Annotated[
            int,
            typer.Option("--max-sessions", help="Browser tabs (app processes) served at once; more are refused."),
        ] = 4,
        workspace: Annotated[
            Path | None,
            typer.Option(
                "--workspace", help="Workspace folder for branches and replays (default ./.chassis-inspector)."
            ),
        ] = None,
    ) -> None:
        """Serve the inspector app in a web browser (textual-serve), behind a per-start token."""
        from inspector.serve import GuardedServer, ServeAddress

        if not 1 <= port <= 65535:
            echo_err(f"--port {port} is not a TCP port (1–65535)")
            raise typer.Exit(2)
        if max_sessions < 1:
            echo_err(f"--max-sessions {max_sessions}: must be at least 1")
            raise typer.Exit(2)
        try:
            address = ServeAddress.parse(host, port)
        except ValueError as exc:
            echo_err(f"--host {host}: {exc}")
            raise typer.Exit(2) from None
        if not is_loopback(host):
            if not public:
                echo_err(
                    f"--host {host} is not a loopback address: anyone who can reach it could read "
                    "the recording; pass --public to allow it"
                )
                raise typer.Exit(2)
            echo_err(
                f"warning: serving on {host}:{port} — the recording is readable by anyone who can reach this address"
            )
        path = resolve_recording(file).resolve()
        _load(path, fast_open=False)  # verify now, with the FormatError line, rather than in the browser
        _check_bindable(address.bind_host, port, shown=address.url_host)
        # our copy of textual-serve's page template (inspector/templates), without its Google
        # Fonts link: nothing is fetched from outside the machine at run time
        from core.workspace import DEFAULT_DIR

        ws_args = ["--workspace", str(workspace.resolve() if workspace is not None else Path(DEFAULT_DIR).resolve())]
        server = GuardedServer(
            [sys.executable, "-m", "inspector", "open", str(path), *ws_args],
            address,
            title=f"Chassis Inspector — {path.name}",
            max_sessions=max_sessions,
        )
        typer.echo(f"serving {path.name} on {server.url} (ctrl+c to stop)")
        server.serve()

    @app.command()
    def timeline(
        file: Annotated[Path, typer.Argument(help="Recording to list.")],
        kind: Annotated[list[Kind] | None, typer.Option("--kind", "-k", help="Only this kind (repeatable).")] = None,
        grep: Annotated[
            str | None, typer.Option("--grep", help="Only records whose text contains this (case-insensitive).")
        ] = None,
        errors: Annotated[bool, typer.Option("--errors", help="Only records with an error.")] = False,
        json: Annotated[bool, typer.Option("--json", help="Print a JSON array of rows.")] = False,
        csv: Annotated[bool, typer.Option("--csv", help="Print CSV with a header line.")] = False,
    ) -> None:
        """Print the timeline rows (the same rows the app's table shows); a replay's events
        add each call's answer source (and, with --json / --csv, its reason)."""
        if json and csv:
            echo_err("--json and --csv cannot be used together")
            raise typer.Exit(2)
        loaded = _load(file, fast_open=False)
        index: TimelineIndex = loaded.index
        if loaded.opened is not None:
            for notice in opened_notices_each(file, loaded.opened):
                echo_err(f"notice: {notice}")
        kinds = [k.value for k in kind] if kind else None
        positions = index.select(kinds, errors_only=errors, grep=grep)
        rows = index.rows(positions)
        sourced = index.has_answer_sources
        if json:
            print_json([r.to_json() for r in rows])
            return
        if csv:
            sys.stdout.write(csv_safe(rows_to_csv(rows, sources=sourced)))
            return
        seq_w = max(3, len(str(index.seqs[-1])) if len(index) else 3)
        # a replay's events: the answer source of each call ("✎ intervention"), as in the app
        src_w = max((len(source_label(s)) for s in index.source_counts()), default=0)
        src_head = f" {'source':<{src_w}}" if sourced else ""
        out = sys.stdout
        out.write(
            f"{'seq':>{seq_w}} {'time':>8} {'kind':<9} {'name':<22} {'status':<13}{src_head} "
            f"{'dur':>7} {'tokens':>7}  summary\n"
        )
        # the records the metadata marks (annotated mistake, planted fault) show "⚑ LABEL"
        # in the status column, as in the app's table ("✗ ⚑ LABEL" for one that failed)
        marks = {m.seq: m.label for m in record_marks(index.recording)}
        for r in rows:
            tok = "" if r.tokens is None else str(r.tokens)
            status = r.status
            if r.seq in marks:
                status = f"{'✗ ' if r.status == 'error' else ''}⚑ {marks[r.seq]}"
            src = f" {source_label(r.source) if r.source else '':<{src_w}}" if sourced else ""
            out.write(
                f"{r.seq:>{seq_w}} {format_offset(r.offset_seconds):>8} {r.kind:<9} {cell(r.name, 22):<22} "
                f"{status:<13}{src} {format_duration(r.duration_seconds):>7} {tok:>7}  {cell(r.summary)}\n"
            )
        if not len(index):
            echo_err(f"{file}: the recording has no records (the run ended before its first call)")
        elif not positions:
            echo_err(
                f"no record matches (kinds: {', '.join(kinds or RECORD_KINDS)}"
                + (", errors only" if errors else "")
                + (f", grep {grep!r}" if grep else "")
                + ")"
            )
