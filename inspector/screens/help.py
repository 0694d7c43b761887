"""The help screen (``?``): every key of the timeline, generated from the bindings."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

INTRO = (
    "Chassis Inspector shows one line per record of the recording. Move with ↑/↓ (j/k), "
    "PgUp/PgDn, Home/End; the detail pane follows the cursor. Tab moves between the "
    "timeline, the detail and the search box. Ctrl+P opens the command palette, where "
    "every action is listed too. The right column is each key's id, for a keymap."
)


def _key_label(app, binding: Binding) -> str:
    keys = getattr(app, "_keymap", {}).get(binding.id, binding.key) if binding.id else binding.key
    return ", ".join(app.get_key_display(Binding(k.strip(), binding.action)) for k in keys.split(","))


def bindings_table(app, groups: list[tuple[str, list[Binding]]]) -> Group:
    """The keys of ``(group title, bindings)``: each group's title on a line of its own,
    then a table of key(s), what it does and the binding id. The key and id columns are
    as wide as their widest entry in every group (the groups line up); the action
    column takes the rest and wraps."""
    rows = [[(_key_label(app, b), b.tooltip or b.description, b.id or "") for b in bindings] for _, bindings in groups]
    key_width = max((cell_len(k) for group in rows for k, _, _ in group), default=3)
    id_width = max((cell_len(i) for group in rows for _, _, i in group), default=2)
    parts: list[Text | Table] = []
    for (title, _), group in zip(groups, rows):
        parts.append(Text(title, style="bold underline"))
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("key", style="bold cyan", no_wrap=True, width=max(key_width, 3))
        table.add_column("action", ratio=1)
        table.add_column("id (for keymaps)", style="dim", no_wrap=True, width=max(id_width, 2))
        for key, action, binding_id in group:
            table.add_row(key, action, binding_id)
        parts.extend([table, Text("")])
    return Group(*parts)


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
