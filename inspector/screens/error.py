"""A modal that shows an error (title + message); dismissing it returns ``None``.

Every text is shown as plain text, never as markup, with its control characters made
visible (:mod:`inspector.plain`): a message may quote recorded content."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from ..plain import block_text, line_text


class ErrorScreen(ModalScreen[None]):
    """Shows ``title`` and ``message``; enter or escape closes it."""

    BINDINGS = [Binding("enter,escape,q", "close", "Close", id="error.close")]

    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical { width: 80%; max-width: 100; height: auto; border: thick #ff5f5f; background: $surface; padding: 1 2; }
    ErrorScreen #error-message { margin: 1 0; }
    ErrorScreen #error-hint { color: $text-muted; }
    """

    def __init__(self, title: str, message: str, hint: str = "enter: close") -> None:
        super().__init__()
        self.error_title = title
        self.message = message
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(line_text(self.error_title, style="bold #ff5f5f"), id="error-title")
            yield Static(block_text(self.message), id="error-message")
            yield Static(Text(self.hint), id="error-hint")

    def action_close(self) -> None:
        self.dismiss(None)
