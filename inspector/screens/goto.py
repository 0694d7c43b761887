"""A small modal asking for a seq to go to."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.validation import Integer
from textual.widgets import Input, Label


class GotoSeqScreen(ModalScreen[int | None]):
    """Returns the seq typed (an integer), or ``None`` on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="goto.cancel")]

    DEFAULT_CSS = """
    GotoSeqScreen { align: center middle; background: $background 0%; }
    GotoSeqScreen > Vertical { width: 64; max-width: 100%; height: auto; border: thick $primary; background: $surface; padding: 0 1; }
    GotoSeqScreen Input { margin-top: 0; }
    GotoSeqScreen .goto-hint { color: $text-muted; }
    """

    def __init__(self, first: int, last: int) -> None:
        super().__init__()
        self.first = first
        self.last = last

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Go to seq {self.first}–{self.last}")
            yield Label("enter: go · escape: cancel", classes="goto-hint")
            yield Input(placeholder="seq", id="goto-seq", type="integer", validators=[Integer()])

    @on(Input.Submitted, "#goto-seq")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            seq = int(event.value.strip())
        except ValueError:
            self.notify("type a whole number (a seq)", severity="error", timeout=3)
            return
        self.dismiss(seq)

    def action_cancel(self) -> None:
        self.dismiss(None)
