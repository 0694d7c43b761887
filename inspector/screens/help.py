"""The help screen (``?``): every key of the timeline, generated from the bindings."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "Chassis Inspector shows one line per record of the recording. Move with ↑/↓ (j/k), "
    "PgUp/PgDn, Home/End; the detail pane follows the cursor. Ctrl+P opens the command "
    "palette, where every action is listed too."
)


def _key_label(app, binding: Binding) -> str:
    keys = getattr(app, "_keymap", {}).get(binding.id, binding.key) if binding.id else binding.key
    return ", ".join(app.get_key_display(Binding(k.strip(), binding.action)) for k in keys.split(","))


def bindings_table(app, groups: list[tuple[str, list[Binding]]]) -> Table:
    """A rich table of ``(group title, bindings)``: key(s), what it does, binding id."""
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True)
    table.add_column("action")
    table.add_column("id (for keymaps)", style="dim", no_wrap=True)
    for title, bindings in groups:
        table.add_row(Text(title, style="bold underline"), "", "")
        for b in bindings:
            table.add_row(_key_label(app, b), b.tooltip or b.description, b.id or "")
        table.add_row("", "", "")
    return table


class HelpScreen(ModalScreen[None]):
    """Lists the keys of the screen beneath it, grouped, with their binding ids."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close help", id="help.close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90%; max-width: 110; height: 90%; border: thick $primary; background: $surface; padding: 0 2; }
    HelpScreen #help-intro { margin: 1 0; color: $text-muted; }
    """

    def __init__(self, groups: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.groups = groups

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("Keys", style="bold"), id="help-title")
            yield Static(INTRO, id="help-intro")
            yield Static(bindings_table(self.app, self.groups), id="help-keys")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).border_title = "Help — escape to close"

    def action_close(self) -> None:
        self.dismiss(None)
