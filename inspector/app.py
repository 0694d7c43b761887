"""The Textual application: opens one loaded recording on the timeline screen, or a
file of several runs on the run picker.

Kept small on purpose: screens live in :mod:`inspector.screens`, widgets in
:mod:`inspector.widgets`, palette providers in :mod:`inspector.commands`, styles in
``app.tcss``. Loading happens before the app starts (:mod:`inspector.loader`), so a
file that fails to load never opens a screen.

Every background task (worker) fails the same way: :meth:`InspectorApp.on_worker_state_changed`
clears the status the task showed and opens the error screen naming the task and what
went wrong. Workers therefore run on the app (``self.app.run_worker``), never exit it on
error, and carry a name and a description.

A file of several runs (an Inspect AI log of many samples, tau-bench's results) opens on
the run picker (:class:`~inspector.screens.run_picker.RunPickerScreen`) unless a run was
named (``open --run N``); ``enter`` there opens a run (:meth:`InspectorApp.open_run`,
from the runs parsed when the file was loaded), ``p`` (or "run: pick another run" in the
palette) goes back to the picker from the timeline.

Recorded text is data: every widget shows it as plain text with its control characters
visible (:mod:`inspector.plain`); :meth:`InspectorApp.notify` does the same for every
notification (never markup). An exception nothing handles ends the app with exit code 1
and :attr:`InspectorApp.crash` set; ``chassis-inspector open`` then prints one line
instead of Textual's traceback (set ``TEXTUAL=debug`` to get the traceback).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from time import monotonic
from typing import Any

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from core.errors import FormatError, InspectorError
from core.record.recording import Recording
from core.record.skeleton import SkeletonRest
from core.workspace import DEFAULT_DIR

from .commands import AnalysisScreenCommands, TimelineCommands, WorkspaceScreenCommands
from .loader import LoadedRecording
from .messages import BranchSaved, LaunchReplay, ResumeReplay, WorkspaceChanged
from .plain import block, line
from .replay_runner import EventsLoaded, ReplayRunner, RunEnded, RunProgressed, keep_long_lived
from .runinfo import open_notice, warning_texts
from .screens.error import ErrorScreen
from .screens.help import HelpScreen
from .screens.run_picker import RunPickerScreen
from .screens.timeline import TimelineScreen
from .widgets.timeline_table import TimelineTable

#: how often the app looks whether its terminal is still there, seconds (see
#: InspectorApp._check_terminal)
TERMINAL_CHECK_SECONDS = 1.0
#: the exit code when the terminal went away (128 + SIGHUP, as a shell reports a hangup)
HANGUP_EXIT = 129

#: rows of a big file decoded after its first paint reach the timeline at most this often
#: (seconds): each batch re-selects the filtered view and redraws the header
READ_BATCH_SECONDS = 0.25


class InspectorApp(App[None]):
    """Chassis Inspector on one recording (``loaded``)."""

    CSS_PATH = "app.tcss"
    TITLE = "Chassis Inspector"
    COMMANDS = App.COMMANDS | {TimelineCommands, WorkspaceScreenCommands, AnalysisScreenCommands}
    #: below 120 columns the detail pane goes under the timeline (class -narrow); from
    #: 160 columns the table takes the larger share (class -xwide)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide"), (160, "-xwide")]
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help", tooltip="List every key"),
        Binding(
            "p",
            "pick_run",
            "Runs",
            id="app.pick_run",
            tooltip="Back to the run picker: every run of this file (a file of several runs)",
        ),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit the inspector"),
        # Textual's own palette binding, given an id so a keymap can move it
        Binding(
            "ctrl+p",
            "command_palette",
            "palette",  # Textual's own word, shown in the footer
            show=False,
            priority=True,
            id="app.palette",
            tooltip="Open the command palette",
        ),
    ]

    class Verified(Message):
        """The background verification of a fast-opened file passed."""

        def __init__(self, recording: Recording) -> None:
            super().__init__()
            self.recording = recording

    class RecordsRead(Message):
        """More records of a big file painted before all of it was decoded
        (``LoadedRecording.reading``): their ``columns`` (each index column → a list),
        the share of the file decoded so far (``fraction``), and whether that was the
        last of them (``done``)."""

        def __init__(self, columns: dict[str, list[Any]] | None, fraction: float, done: bool) -> None:
            super().__init__()
            self.columns = columns
            self.fraction = fraction
            self.done = done

    class VerificationFailed(Message):
        """The background verification of a fast-opened file failed with ``error``."""

        def __init__(self, error: InspectorError) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        loaded: LoadedRecording,
        keymap: dict[str, str] | None = None,
        *,
        workspace: Path | str | None = None,
        compare_with: LoadedRecording | None = None,
    ) -> None:
        super().__init__()
        #: the run shown (for a file of several runs: the one picked last)
        self.loaded = loaded
        #: ``compare A B``: the other run, shown beside ``loaded`` in the compare screen
        #: on top of ``loaded``'s timeline (escape returns to it)
        self.compare_with = compare_with
        #: the workspace folder branches, replays, requirements and fixtures live in
        #: (``--workspace``; the CLI's default ``./.chassis-inspector`` otherwise). It is
        #: opened for each operation, never created just by opening the app.
        self.workspace_path = Path(workspace) if workspace is not None else Path(DEFAULT_DIR)
        if keymap:
            self.set_keymap(keymap)
        #: set when the recording turned out invalid; the CLI prints it and exits 2
        self.load_error: InspectorError | None = None
        #: the first exception nothing handled (the app then exits with code 1)
        self.crash: BaseException | None = None
        #: replays launched and resumed in workers (inspector/replay_runner.py)
        self.replay_runner = ReplayRunner(self)
        #: the descriptor of the terminal the app runs in, watched (see _watch_terminal)
        self._terminal_fd: int | None = None

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Textual's notification, always as plain text: messages quote recorded names,
        ids and search terms, so they are never parsed as markup (``markup`` is ignored)
        and their control characters are shown (:mod:`inspector.plain`)."""
        super().notify(
            block(message), title=line(title) if title else "", severity=severity, timeout=timeout, markup=False
        )

    def _handle_exception(self, error: Exception) -> None:
        """An exception nothing handled: remember it (:attr:`crash`), then let Textual
        end the app (exit code 1)."""
        if self.crash is None:
            self.crash = error
        super()._handle_exception(error)

    def _print_error_renderables(self) -> None:
        """After a crash, no traceback on the terminal: the CLI prints one line naming
        the error. With ``TEXTUAL=debug`` (Textual's own switch) the traceback stays."""
        if self.crash is not None and "debug" not in self.features:
            self._exit_renderables.clear()
            return
        super()._print_error_renderables()

    def on_mount(self) -> None:
        self._watch_terminal()
        if self.loaded.has_runs and not self.loaded.run_requested and not self.loaded.one_top_run:
            # a file of several runs and none named: the picker first
            self.push_screen(self._picker(current=None))
            return
        self.push_screen(TimelineScreen(self.loaded))
        if self.compare_with is not None:
            from .screens.compare import CompareScreen

            self.push_screen(CompareScreen(self.loaded, self.compare_with))
        else:
            self._open_notice()
        keep_long_lived()
        if self.loaded.verify is not None:
            self._verify()
        if not self.loaded.index.verified and self.loaded.reading is None:
            # after the first paint: its parse would hold the interpreter while the
            # first frame is drawn (a file still being read: once it is, see _records_read)
            self.call_after_refresh(self._prefetch)

    def _watch_terminal(self) -> None:
        """In a terminal, look every :data:`TERMINAL_CHECK_SECONDS` whether it is still
        there (:meth:`_check_terminal`). Not headless, not in a browser (``serve``)."""
        if self.is_headless or self.is_web:
            return
        for stream in (sys.__stdin__, sys.__stdout__):
            try:
                fd = stream.fileno() if stream is not None else -1
            except (OSError, ValueError):
                continue
            if fd >= 0 and os.isatty(fd):
                self._terminal_fd = fd
                self.set_interval(TERMINAL_CHECK_SECONDS, self._check_terminal, name="terminal watch")
                return

    def _check_terminal(self) -> None:
        """Quit (exit code :data:`HANGUP_EXIT`) once the terminal is gone — a closed
        window, a killed tmux session. A hangup signal ends the app only when it reaches
        it: run under ``make run`` it goes to make, which survives, and the app went on
        reading end-of-file from the dead terminal, spinning a core."""
        fd = self._terminal_fd
        if fd is not None and not os.isatty(fd):
            self._terminal_fd = None
            self.exit(return_code=HANGUP_EXIT)

    @work(thread=True, exclusive=True, group="prefetch", exit_on_error=False, name="prefetch")
    def _prefetch(self) -> None:
        """Read the index columns the first paint left for later (TimelineIndex.prefetch),
        then put them with the rest of the long-lived objects, out of the cyclic
        collector's reach: a full collection otherwise walks every item of a million-
        item column, 25–90 ms taken from whatever key is being drawn."""
        self.loaded.index.prefetch()
        keep_long_lived()

    def _open_notice(self) -> None:
        """One grouped notice on the run just opened; every warning is listed in the
        run-info view (i)."""
        notice = open_notice(self.loaded.recording, self.loaded.notices, opened=self.loaded.opened)
        if notice:
            warned = bool(warning_texts(self.loaded.recording, self.loaded.notices, self.loaded.opened))
            self.notify(notice, title="opened", severity="warning" if warned else "information", timeout=8)

    # ------------------------------------------------------------------ runs of a file

    def _picker(self, current: str | None) -> RunPickerScreen:
        assert self.loaded.opened is not None
        return RunPickerScreen(self.loaded.opened, self.loaded.path.name, current=current)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``pick_run`` only where it means something: on the timeline of a file of
        several runs (elsewhere its key is hidden from the footer and does nothing)."""
        if action == "pick_run":
            return self.loaded.has_runs and isinstance(self.screen, TimelineScreen)
        return True

    def action_pick_run(self) -> None:
        """Show the run picker over the timeline, the run shown marked (escape comes
        back to it)."""
        if not self.loaded.has_runs:
            self.notify("this file holds one run: nothing to pick", timeout=3)
            return
        if not isinstance(self.screen, RunPickerScreen):
            self.push_screen(self._picker(current=self.loaded.opened.run_id if self.loaded.opened else None))

    def open_run(self, run: str | int) -> None:
        """Open run ``run`` (an ``int``: its index in run order; a ``str``: its id) of
        the file on a new timeline, from the runs imported when the file was loaded (no
        second parse); called by the run picker, which it closes. The run already shown
        comes back as it was left.

        An error (no such run) opens the error screen; the picker stays."""
        picker = self.screen if isinstance(self.screen, RunPickerScreen) else None
        below = self.screen_stack[-2] if picker is not None and len(self.screen_stack) > 1 else None
        shown = self.loaded.opened.run if self.loaded.opened is not None else None
        same = shown is not None and (shown.index == run if isinstance(run, int) else shown.id == run)
        if isinstance(below, TimelineScreen) and same:
            self.pop_screen()  # the run already open, with its cursor, filter and search
            return
        try:
            loaded = self.loaded.for_run(run)
        except InspectorError as exc:
            self.push_screen(ErrorScreen(f"cannot open run {run!r}", str(exc)))
            return
        self.loaded = loaded
        if picker is not None:
            self.pop_screen()
        if isinstance(below, TimelineScreen):
            self.switch_screen(TimelineScreen(loaded))
        else:
            self.push_screen(TimelineScreen(loaded))
        self._open_notice()
        keep_long_lived()

    def compare_runs(self, base_run: int | str, other_run: int | str) -> None:
        """Two runs of this file side by side (the compare screen, over the run picker:
        escape returns to it), from the runs imported when the file was loaded. An error
        (no such run) opens the error screen."""
        from .screens.compare import CompareScreen

        try:
            base = self.loaded.for_run(base_run)
            other = self.loaded.for_run(other_run)
        except InspectorError as exc:
            self.push_screen(ErrorScreen("cannot compare these runs", str(exc)))
            return
        self.push_screen(CompareScreen(base, other))

    def close_run_picker(self) -> bool:
        """Back from the run picker to the run that was open; ``False`` (nothing done)
        when no run was open yet."""
        if isinstance(self.screen, RunPickerScreen) and any(isinstance(s, TimelineScreen) for s in self.screen_stack):
            self.pop_screen()
            return True
        return False

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's palette commands, plus "run: pick another run" on a file of several
        runs."""
        yield from super().get_system_commands(screen)
        if self.loaded.has_runs and isinstance(screen, TimelineScreen):
            n = len(self.loaded.opened.runs) if self.loaded.opened else 0
            yield SystemCommand(
                "run: pick another run", f"Back to the run picker: the {n} runs of this file (p)", self.action_pick_run
            )

    @work(
        thread=True,
        exclusive=True,
        group="verify",
        exit_on_error=False,
        name="verify",
        description="verifying the recording (digest and keys)",
    )
    def _verify(self) -> None:
        """Read the records a big file's first paint left (``LoadedRecording.reading``:
        their rows are posted as :class:`RecordsRead`, at most every
        :data:`READ_BATCH_SECONDS`), then run the full verification of a fast-opened
        file (see inspector.loader)."""
        verify = self.loaded.verify
        if verify is None:
            return
        from textual.worker import get_current_worker

        try:
            if self.loaded.reading is not None and not self._read_rest(self.loaded.reading):
                return  # the app is closing
            if get_current_worker().is_cancelled:
                return
            recording = verify()
        except InspectorError as exc:
            self.post_message(self.VerificationFailed(exc))
        else:
            self.post_message(self.Verified(recording))

    def _read_rest(self, reading: SkeletonRest) -> bool:
        """Decode the chunks ``reading`` holds, posting their columns (in a worker);
        ``False`` when the worker was cancelled first.

        Raises:
            InspectorError: a record further on is not valid (FormatError).
        """
        from textual.worker import get_current_worker

        worker = get_current_worker()
        batch: dict[str, list[Any]] | None = None
        last = monotonic()
        for columns in self._guarded(reading):
            if worker.is_cancelled:
                return False
            if batch is None:
                batch = columns
            else:
                for name, part in columns.items():
                    batch[name] += part
            if monotonic() - last >= READ_BATCH_SECONDS:
                self.post_message(self.RecordsRead(batch, reading.fraction, done=False))
                batch, last = None, monotonic()
        self.post_message(self.RecordsRead(batch, 1.0, done=True))
        return True

    def _guarded(self, reading: SkeletonRest) -> Iterator[dict[str, list[Any]]]:
        """``reading``'s chunks; a failure other than an :class:`InspectorError` (a bug,
        a resource running out) is raised as a FormatError naming the file, so the app
        shows it and exits 2 rather than a partial timeline as if it were the file."""
        try:
            yield from reading
        except InspectorError:
            raise
        except Exception as exc:  # never a partial timeline shown as the whole file
            raise FormatError(
                f"reading the records after the first paint failed ({type(exc).__name__}: {exc})",
                file=str(self.loaded.path),
            ) from exc

    @on(RecordsRead)
    def _records_read(self, event: RecordsRead) -> None:
        if self.loaded.reading is None:
            return
        if event.columns:
            self.loaded.index.extend(event.columns)
        if event.done:
            self.loaded.reading = None
        for screen in self.screen_stack:
            if isinstance(screen, TimelineScreen) and screen.index is self.loaded.index:
                screen.records_read(event.done)
        if event.done:
            keep_long_lived()
            self.call_after_refresh(self._prefetch)

    @on(Verified)
    def _verified(self, event: Verified) -> None:
        if self.loaded.whole is not None:
            # a big run: verified record by record, its records stay in the file
            self.loaded.verify = None
            self.loaded.recording.digest = event.recording.digest
            note = "verified: every record and the digest (records are read from the file as they are shown)"
        else:
            try:
                self.loaded.index.adopt(event.recording)
            except ValueError as exc:  # not the records shown (read from a file replaced since)
                # at once: until then the recording still counts as being verified
                self._verification_failed(self.VerificationFailed(FormatError(str(exc), file=str(self.loaded.path))))
                return
            self.loaded.verify = None
            self.loaded.recording = event.recording
            self._redraw_timeline_rows()
            note = "verified: every record, the digest and the keys"
        keep_long_lived()  # the verified records: out of the cyclic collector's reach
        if isinstance(self.screen, TimelineScreen):
            self.screen.refresh_header()
        self.notify(note, timeout=4)

    class WholeRead(Message):
        """Every record of a big run was read (``then`` continues what asked for them)."""

        def __init__(self, recording: Recording, then: Callable[[], None]) -> None:
            super().__init__()
            self.recording = recording
            self.then = then

    def needs_whole_recording(self, what: str, then: Callable[[], None]) -> bool:
        """``True`` when the open run's records are not all in memory — still being
        verified (the user is told to wait), or a big run read from its file record by
        record (every record is read now, in a worker, and ``then`` runs once they
        are); ``False`` when they are (the caller goes on). ``what``: the action, for the
        notices (\"branch it\")."""
        if self.loaded.verify is not None:
            self.notify(f"the recording is still being verified: {what} once that is done", timeout=4)
            return True
        if self.loaded.whole is None:
            return False
        self.notify(f"reading every record of this run to {what}…", timeout=4)
        self._read_whole(then)
        return True

    @work(
        thread=True,
        exclusive=True,
        group="whole",
        exit_on_error=False,
        name="whole",
        description="reading every record",
    )
    def _read_whole(self, then: Callable[[], None]) -> None:
        whole = self.loaded.whole
        if whole is None:
            self.call_from_thread(then)
            return
        try:
            recording = whole()
        except InspectorError as exc:
            self.post_message(self.VerificationFailed(exc))
        else:
            self.post_message(self.WholeRead(recording, then))

    @on(WholeRead)
    def _whole_read(self, event: WholeRead) -> None:
        if self.loaded.whole is None:
            return
        self.loaded.index.adopt(event.recording)
        self.loaded.recording = event.recording
        self.loaded.whole = None
        self._redraw_timeline_rows()
        keep_long_lived()
        event.then()

    def _redraw_timeline_rows(self) -> None:
        """The timeline's rows drawn again from the index that adopted the verified
        records (rows that could not be read from the file read now)."""
        for screen in self.screen_stack:
            if isinstance(screen, TimelineScreen) and screen.index is self.loaded.index:
                screen.table.redraw_rows()

    @on(VerificationFailed)
    def _verification_failed(self, event: VerificationFailed) -> None:
        self.load_error = event.error
        self.loaded.verify = None
        self.loaded.reading = None

        def close(_: None) -> None:
            self.exit(return_code=2)

        self.push_screen(
            ErrorScreen(
                f"{event.error.title} error — this recording is not valid",
                str(event.error),
                "enter: quit (exit code 2)",
            ),
            close,
        )

    # ------------------------------------------------------------------ the workspace: replays

    @on(BranchSaved)
    def _branch_saved(self, event: BranchSaved) -> None:
        self.replay_runner.branch_saved(event)

    @on(LaunchReplay)
    def _launch_replay(self, event: LaunchReplay) -> None:
        self.replay_runner.request_launch(event.branch_id, event.executor)

    @on(ResumeReplay)
    def _resume_replay(self, event: ResumeReplay) -> None:
        self.replay_runner.resume(event.replay_id, event.executor)

    @on(WorkspaceChanged)
    def _workspace_changed(self, event: WorkspaceChanged) -> None:
        self.replay_runner.broadcast(event)

    @on(RunProgressed)
    def _run_progressed(self, event: RunProgressed) -> None:
        self.replay_runner.progressed(event)

    @on(RunEnded)
    def _run_ended(self, event: RunEnded) -> None:
        self.replay_runner.ended(event)

    @on(EventsLoaded)
    def _events_loaded(self, event: EventsLoaded) -> None:
        self.replay_runner.events_loaded(event)

    def on_click(self, event: events.Click) -> None:
        """A click on a "replay paused" notification opens that replay's requirements."""
        self.replay_runner.notification_clicked(event.widget)

    def exit(self, result: None = None, return_code: int = 0, message: object | None = None) -> None:
        """Quit; running replays are cancelled first (they stop between two calls and
        are stored ``failed``/``Cancelled``, resumable)."""
        self.replay_runner.shutdown()
        super().exit(result, return_code, message)  # type: ignore[arg-type]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed background task ends: the status it showed is cleared
        (each screen drops its own in ``background_failed``) and the error screen names
        the task and the exception's message, as plain text."""
        worker = event.worker
        if event.state is not WorkerState.ERROR:
            return
        if worker.group == "verify":
            # the header said "verifying…" (or "reading…"): the recording stays open, unverified
            self.loaded.verify = None
            self.loaded.reading = None
        for screen in self.screen_stack:
            if isinstance(screen, TimelineScreen):
                screen.background_failed(worker)
        self.replay_runner.worker_failed(worker)
        error = worker.error
        what = worker.description or worker.name or "a background task"
        message = f"{type(error).__name__}: {error}" if error is not None else "no exception recorded"
        self.push_screen(ErrorScreen(f"failed: {what}", message))

    def action_command_palette(self) -> None:
        """The command palette; in a browser its search icon is a plain ``›`` (the
        default emoji is missing from the web font and shows as a box)."""
        super().action_command_palette()
        if self.is_web:
            from textual.command import SearchIcon

            def plain_icon() -> None:
                for icon in self.screen.query(SearchIcon):
                    icon.icon = "›"

            self.call_after_refresh(plain_icon)

    def help_groups(self) -> list[tuple[str, list[Binding]]]:
        """The key groups the help screen lists (from the bindings themselves)."""
        screen_bindings = [b for b in TimelineScreen.BINDINGS if isinstance(b, Binding)]
        groups: list[tuple[str, list[Binding]]] = [
            ("Move", [b for b in TimelineTable.BINDINGS if isinstance(b, Binding)]),
        ]
        for prefix, title in (
            ("timeline.", "Navigate"),
            ("filter.", "Filter"),
            ("detail.", "Detail pane"),
            ("copy.", "Copy to clipboard"),
            ("workspace.", "Workspace: branches, replays, requirements"),
            ("analysis.", "Analysis"),
        ):
            groups.append((title, [b for b in screen_bindings if (b.id or "").startswith(prefix)]))
        from .screens.branch_editor import BranchEditorScreen

        groups.append(("Branch editor", [b for b in BranchEditorScreen.BINDINGS if isinstance(b, Binding)]))
        from .screens.audit import AuditScreen
        from .screens.compare import CompareScreen
        from .screens.effects import EffectsScreen

        groups.append(("Compare (C, compare A B)", [b for b in CompareScreen.BINDINGS if isinstance(b, Binding)]))
        groups.append(("Effects (W)", [b for b in EffectsScreen.BINDINGS if isinstance(b, Binding)]))
        groups.append(("Audit (L)", [b for b in AuditScreen.BINDINGS if isinstance(b, Binding)]))
        groups.extend(self.replay_runner.help_groups())
        # the run picker's key only for a file of several runs
        app_bindings = [
            b for b in self.BINDINGS if isinstance(b, Binding) and (b.id != "app.pick_run" or self.loaded.has_runs)
        ]
        groups.append(("App", app_bindings))
        return groups

    def action_help(self) -> None:
        """Show the help screen (every key)."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups()))
