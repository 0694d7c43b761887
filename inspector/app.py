"""The Textual application: opens one loaded recording on the timeline screen.

Kept small on purpose: screens live in :mod:`inspector.screens`, widgets in
:mod:`inspector.widgets`, palette providers in :mod:`inspector.commands`, styles in
``app.tcss``. Loading happens before the app starts (:mod:`inspector.loader`), so a
file that fails to load never opens a screen.
"""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from .commands import TimelineCommands
from .loader import LoadedRecording
from .screens.help import HelpScreen
from .screens.timeline import TimelineScreen
from .widgets.timeline_table import TimelineTable


class InspectorApp(App[None]):
    """Chassis Inspector on one recording (``loaded``)."""

    CSS_PATH = "app.tcss"
    TITLE = "Chassis Inspector"
    COMMANDS = App.COMMANDS | {TimelineCommands}
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help", tooltip="List every key"),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Quit the inspector"),
    ]

    def __init__(self, loaded: LoadedRecording) -> None:
        super().__init__()
        self.loaded = loaded

    def on_mount(self) -> None:
        self.push_screen(TimelineScreen(self.loaded))
        for notice in self.loaded.notices[:8]:
            self.notify(notice, title="converted on open", timeout=10)
        if len(self.loaded.notices) > 8:
            self.notify(f"… and {len(self.loaded.notices) - 8} more notices", timeout=10)

    def help_groups(self) -> list[tuple[str, list[Binding]]]:
        """The key groups the help screen lists (from the bindings themselves)."""
        screen_bindings = [b for b in TimelineScreen.BINDINGS if isinstance(b, Binding)]
        groups: list[tuple[str, list[Binding]]] = [
            ("Move", [b for b in TimelineTable.BINDINGS if isinstance(b, Binding)]),
        ]
        for prefix, title in (("timeline.", "Navigate"), ("filter.", "Filter"),
                              ("detail.", "Detail pane"), ("copy.", "Copy to clipboard")):
            groups.append((title, [b for b in screen_bindings if (b.id or "").startswith(prefix)]))
        groups.append(("App", [*self.BINDINGS, Binding("ctrl+p", "command_palette", "Command palette", id="app.palette")]))
        return groups

    def action_help(self) -> None:
        """Show the help screen (every key)."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_groups()))
