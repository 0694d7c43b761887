"""The Textual application: opens one loaded recording on the timeline screen.

Kept small on purpose: screens live in :mod:`inspector.screens`, widgets in
:mod:`inspector.widgets`, palette providers in :mod:`inspector.commands`, styles in
``app.tcss``. Loading happens before the app starts (:mod:`inspector.loader`), so a
file that fails to load never opens a screen.

Every background task (worker) fails the same way: :meth:`InspectorApp.on_worker_state_changed`
clears the status the task showed and opens the error screen naming the task and what
went wrong. Workers therefore run on the app (``self.app.run_worker``), never exit it on
error, and carry a name and a description.

Recorded text is data: every widget shows it as plain text with its control characters
visible (:mod:`inspector.plain`); :meth:`InspectorApp.notify` does the same for every
notification (never markup). An exception nothing handles ends the app with exit code 1
and :attr:`InspectorApp.crash` set; ``chassis-inspector open`` then prints one line
instead of Textual's traceback (set ``TEXTUAL=debug`` to get the traceback).
"""

from __future__ import annotations

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from core.errors import InspectorError
from core.record.recording import Recording

from .commands import TimelineCommands
from .loader import LoadedRecording
from .plain import block, line
from .runinfo import open_notice, warning_texts
from .screens.error import ErrorScreen
from .screens.help import HelpScreen
from .screens.timeline import TimelineScreen
from .widgets.timeline_table import TimelineTable


class InspectorApp(App[None]):
    """Chassis Inspector on one recording (``loaded``)."""

    CSS_PATH = "app.tcss"
    TITLE = "Chassis Inspector"
    COMMANDS = App.COMMANDS | {TimelineCommands}
    #: below 120 columns the detail pane goes under the timeline (class -narrow); from
    #: 160 columns the table takes the larger share (class -xwide)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide"), (160, "-xwide")]
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help", tooltip="List every key"),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit the inspector"),
    ]

    class Verified(Message):
        """The background verification of a fast-opened file passed."""

        def __init__(self, recording: Recording) -> None:
            super().__init__()
            self.recording = recording

    class VerificationFailed(Message):
        """The background verification of a fast-opened file failed with ``error``."""

        def __init__(self, error: InspectorError) -> None:
            super().__init__()
            self.error = error

    def __init__(self, loaded: LoadedRecording, keymap: dict[str, str] | None = None) -> None:
        super().__init__()
        self.loaded = loaded
        if keymap:
            self.set_keymap(keymap)
        #: set when the recording turned out invalid; the CLI prints it and exits 2
        self.load_error: InspectorError | None = None
        #: the first exception nothing handled (the app then exits with code 1)
        self.crash: BaseException | None = None

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
        self.push_screen(TimelineScreen(self.loaded))
        # one grouped notice; every warning is listed in the run-info view (i)
        notice = open_notice(self.loaded.recording, self.loaded.notices, opened=self.loaded.opened)
        if notice:
            warned = bool(warning_texts(self.loaded.recording, self.loaded.notices, self.loaded.opened))
            self.notify(notice, title="opened", severity="warning" if warned else "information", timeout=8)
        if self.loaded.verify is not None:
            self._verify()

    @work(
        thread=True,
        exclusive=True,
        group="verify",
        exit_on_error=False,
        name="verify",
        description="verifying the recording (digest and keys)",
    )
    def _verify(self) -> None:
        """Run the full verification of a fast-opened file (see inspector.loader)."""
        verify = self.loaded.verify
        if verify is None:
            return
        try:
            recording = verify()
        except InspectorError as exc:
            self.post_message(self.VerificationFailed(exc))
        else:
            self.post_message(self.Verified(recording))

    @on(Verified)
    def _verified(self, event: Verified) -> None:
        self.loaded.index.adopt(event.recording)
        self.loaded.recording = event.recording
        self.loaded.verify = None
        if isinstance(self.screen, TimelineScreen):
            self.screen.refresh_header()
        self.notify("verified: every record, the digest and the keys", timeout=4)

    @on(VerificationFailed)
    def _verification_failed(self, event: VerificationFailed) -> None:
        self.load_error = event.error
        self.loaded.verify = None

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

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed background task ends: the status it showed is cleared
        (each screen drops its own in ``background_failed``) and the error screen names
        the task and the exception's message, as plain text."""
        worker = event.worker
        if event.state is not WorkerState.ERROR:
            return
        if worker.group == "verify":
            # the header said "verifying…": the recording stays open, unverified
            self.loaded.verify = None
        for screen in self.screen_stack:
            if isinstance(screen, TimelineScreen):
                screen.background_failed(worker)
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
        ):
            groups.append((title, [b for b in screen_bindings if (b.id or "").startswith(prefix)]))
        app_bindings = [b for b in self.BINDINGS if isinstance(b, Binding)]
        groups.append(
            ("App", [*app_bindings, Binding("ctrl+p", "command_palette", "Command palette", id="app.palette")])
        )
        return groups

    def action_help(self) -> None:
        """Show the help screen (every key)."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups()))
