"""The chat transcript of a model call: the request's messages as a chat, then the response.

Each message is a block titled with its role (system, user, assistant, tool, or
"other" for roles outside those) and, for a tool message, the ``tool_call_id`` it
answers; an assistant message lists its tool calls with their ids. Messages longer than
:data:`FOLD_LINES` lines are folded until :attr:`TranscriptView.expanded` is set.
"""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from core.recording import STANDARD_ROLES, ChatMessage
from core.timeline import TranscriptEntry, one_line

FOLD_LINES = 8


def message_text(msg: ChatMessage, expanded: bool) -> tuple[Text, int]:
    """The body of a message block and the number of lines hidden by folding."""
    body = Text()
    content = msg.content
    if isinstance(content, list):
        text_parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text_parts.append(part["text"])
            elif isinstance(part, str):
                text_parts.append(part)
            else:
                text_parts.append(f"[{part.get('type', 'part') if isinstance(part, dict) else 'part'}] {one_line(part, 80)}")
        content = "\n".join(text_parts)
    hidden = 0
    if content:
        lines = content.split("\n")
        if not expanded and len(lines) > FOLD_LINES:
            hidden = len(lines) - FOLD_LINES
            lines = lines[:FOLD_LINES]
        body.append("\n".join(lines))
        if hidden:
            body.append(f"\n… {hidden} more lines (z: expand long messages)", style="dim italic")
    elif not msg.tool_calls:
        body.append("(empty)", style="dim italic")
    for call in msg.tool_calls or ():
        if len(body):
            body.append("\n")
        body.append("→ tool call ", style="bold")
        body.append(call.name, style="bold green")
        body.append(f"  id={call.id}\n   ", style="dim")
        body.append(one_line(call.arguments, 400 if not expanded else 1 << 20))
    return body, hidden


class MessageBlock(Static):
    """One chat message, bordered and titled with its role."""

    DEFAULT_CSS = """
    MessageBlock {
        border: round $panel-lighten-2;
        padding: 0 1;
        margin: 0 0 1 0;
        height: auto;
    }
    MessageBlock.role-system { border: round #a0a0a0; }
    MessageBlock.role-user { border: round #5f87ff; }
    MessageBlock.role-assistant { border: round #5faf5f; }
    MessageBlock.role-tool { border: round #d7af00; }
    MessageBlock.role-other { border: round #c060c0; }
    MessageBlock.current { border: double #4fb0b0; }
    """

    def __init__(self, entry: TranscriptEntry, expanded: bool) -> None:
        role = entry.message.role if entry.message.role in STANDARD_ROLES else "other"
        body, _ = message_text(entry.message, expanded)
        super().__init__(body, classes=f"role-{role}" + (" current" if entry.current else ""))
        title = entry.message.role if role != "other" else f"other ({entry.message.role})"
        if entry.message.name:
            title += f" · {entry.message.name}"
        if entry.message.tool_call_id:
            title += f" · answers {entry.message.tool_call_id}"
        if entry.caption:
            title += f" — {entry.caption}"
        self.border_title = title
        self.entry = entry


class TranscriptView(VerticalScroll, can_focus=True):
    """A scrollable chat transcript. Set it with :meth:`show`."""

    DEFAULT_CSS = """
    TranscriptView { padding: 0 1; background: $surface; }
    TranscriptView > .transcript--note { color: $text-muted; margin: 0 0 1 0; }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._entries: list[TranscriptEntry] = []
        self._note = ""

    def show(self, entries: list[TranscriptEntry], note: str = "") -> None:
        """Replace the transcript with ``entries`` under an explanatory ``note``; the
        view scrolls so the block marked current shows at the bottom with as much as
        fits of what came before it."""
        self._entries = entries
        self._note = note
        self._rebuild(scroll_to_current=True)

    def watch_expanded(self) -> None:
        self._rebuild(scroll_to_current=False)

    def _rebuild(self, scroll_to_current: bool) -> None:
        with self.app.batch_update():
            self.remove_children()
            widgets: list[Static] = []
            if self._note:
                widgets.append(Static(Text(self._note), classes="transcript--note"))
            widgets.extend(MessageBlock(e, self.expanded) for e in self._entries)
            mounted = self.mount_all(widgets)

        async def scroll() -> None:
            await mounted
            current = [w for w in widgets if isinstance(w, MessageBlock) and w.entry.current]
            if scroll_to_current and current:
                self.call_after_refresh(self._scroll_to_block, current[-1])
            else:
                self.scroll_home(animate=False)

        self.call_next(scroll)

    def _scroll_to_block(self, block: MessageBlock) -> None:
        region = block.virtual_region_with_margin
        height = self.scrollable_content_region.height
        # bottom of the block at the bottom of the view, unless it is taller than the view
        self.scroll_to(y=max(0, min(region.y, region.bottom - height)), animate=False)
