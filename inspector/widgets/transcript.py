"""The chat transcript of a model call: the request's messages as a chat, then the response.

Each message is a block titled with its role (system, user, assistant, tool, or
"other" for roles outside those) and, for a tool message, the ``tool_call_id`` it
answers; an assistant message lists its tool calls with their ids. Messages longer than
:data:`FOLD_LINES` lines are folded until :attr:`TranscriptView.expanded` is set.
"""

from __future__ import annotations

from typing import Any

import orjson
from rich.text import Text
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from core.analysis.timeline import TranscriptEntry
from core.analysis.timeline_text import one_line
from core.record.jsonvalues import display_text, is_tagged
from core.record.nesting import dumps
from core.record.recording import STANDARD_ROLES, ChatMessage

from ..plain import block, line

FOLD_LINES = 8
#: a thinking part is shown folded to this many characters (and 3 lines) until z
THINKING_CHARS = 160
#: the search text in the transcript (as in the timeline's summaries)
MATCH_STYLE = "bold #000000 on #e0c000"


def _fold(lines: list[str], expanded: bool, limit: int = FOLD_LINES) -> tuple[list[str], int]:
    if expanded or len(lines) <= limit:
        return lines, 0
    return lines[:limit], len(lines) - limit


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments, pretty-printed: a JSON object (or a string holding one) as
    indented JSON with real newlines; tagged values (``$bigint``, ``$nonfinite``,
    ``$invalid_unicode``) shown as what they stand for; other strings as they are."""
    value = arguments
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return arguments
        if isinstance(value, str):
            return value
    if is_tagged(value):
        return display_text(value)
    try:
        shown = orjson.loads(display_text(value))
    except orjson.JSONDecodeError:
        return display_text(value)
    return dumps(shown, orjson.OPT_INDENT_2).decode()


def message_text(msg: ChatMessage, expanded: bool) -> tuple[Text, int]:
    """The body of a message block and the number of lines hidden by folding.

    Text parts are shown as text; ``thinking`` parts as a dimmed block (folded to its
    first lines until expanded); other parts as ``[type]`` and their JSON; tagged
    values through :func:`core.record.jsonvalues.display_text`; tool calls with their
    arguments pretty-printed (:func:`arguments_text`)."""
    body = Text()
    content = msg.content
    hidden = 0
    blocks: list[tuple[str, str]] = []  # (style, text)
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                blocks.append(("", part))
            elif isinstance(part, dict) and part.get("type") in ("thinking", "reasoning", "redacted_thinking"):
                text = part.get("thinking", part.get("reasoning", part.get("text", part.get("data", ""))))
                blocks.append(("thinking", text if isinstance(text, str) else display_text(text)))
            elif is_tagged(part):
                blocks.append(("", display_text(part)))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                blocks.append(("", part["text"]))
            else:
                kind = part.get("type", "part") if isinstance(part, dict) else "part"
                blocks.append(("part", f"[{kind}] {one_line(display_text(part), 300 if not expanded else 1 << 20)}"))
    elif content is not None and content != "":
        blocks.append(("", content if isinstance(content, str) else display_text(content)))
    for style, raw in blocks:
        if len(body):
            body.append("\n")
        text = block(raw)  # recorded text: shown, never obeyed (inspector.plain)
        lines, h = _fold(text.split("\n"), expanded, 3 if style == "thinking" else FOLD_LINES)
        if style == "thinking" and not expanded and sum(len(ln) for ln in lines) > THINKING_CHARS:
            # one long paragraph: fold by characters too
            cut, kept = THINKING_CHARS, []
            for ln in lines:
                kept.append(ln[:cut])
                cut -= len(kept[-1])
                if cut <= 0:
                    break
            kept[-1] += "…"
            lines, h = kept, max(h, 1)
        hidden += h
        if style == "thinking":
            body.append("thinking\n", style="dim bold italic")
            body.append("\n".join(lines), style="dim italic")
        elif style == "part":
            body.append("\n".join(lines), style="dim")
        else:
            body.append("\n".join(lines))
        if h and style == "thinking":
            body.append("\n(z: show all the thinking)", style="dim italic")
        elif h:
            body.append(f"\n… {h} more lines (z: expand long messages)", style="dim italic")
    if not blocks and not msg.tool_calls:
        body.append("(empty)", style="dim italic")
    for call in msg.tool_calls or ():
        if len(body):
            body.append("\n")
        body.append("→ tool call ", style="bold")
        body.append(line(call.name), style="bold green")
        body.append(f"  id={line(call.id)}\n", style="dim")
        lines, h = _fold(block(arguments_text(call.arguments)).split("\n"), expanded, 2 * FOLD_LINES)
        hidden += h
        body.append("\n".join(lines))
        if h:
            body.append(f"\n… {h} more lines (z: expand long messages)", style="dim italic")
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
    MessageBlock.role-interrupt { border: round #d7af00; }
    MessageBlock.current { border: double #4fb0b0; }
    """

    def __init__(self, entry: TranscriptEntry, expanded: bool, term: str = "") -> None:
        role = entry.message.role if entry.message.role in (*STANDARD_ROLES, "interrupt") else "other"
        body, _ = message_text(entry.message, expanded)
        if term:
            # why the record matched the search: the term marked where it shows
            body.highlight_words([term], style=MATCH_STYLE, case_sensitive=False)
        super().__init__(body, classes=f"role-{role}" + (" current" if entry.current else ""))
        title = entry.message.role if role != "other" else f"other ({entry.message.role})"
        if entry.message.name:
            title += f" · {entry.message.name}"
        if entry.message.tool_call_id:
            title += f" · answers {entry.message.tool_call_id}"
        if entry.caption:
            title += f" — {entry.caption}"
        # a plain Content, never markup: a name or id may hold "[/]" (inspector.plain)
        self.border_title = Content(line(title))
        self.entry = entry
        #: the rendered body (rich Text)
        self.body = body


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
        #: the search text, highlighted in the messages
        self.term = ""

    def show(self, entries: list[TranscriptEntry], note: str = "") -> None:
        """Replace the transcript with ``entries`` under an explanatory ``note``; the
        view scrolls so the block marked current shows at the bottom with as much as
        fits of what came before it."""
        self._entries = entries
        self._note = note
        self._rebuild(scroll_to_current=True)

    def watch_expanded(self) -> None:
        # keep the reader where they are: the block at the top of the view stays there
        anchor = None
        top = self.scroll_y
        for i, w in enumerate(self.query(MessageBlock)):
            if w.virtual_region_with_margin.bottom > top:
                anchor = (i, top - w.virtual_region_with_margin.y)
                break
        self._rebuild(scroll_to_current=False, anchor=anchor)

    def _rebuild(self, scroll_to_current: bool, anchor: tuple[int | None, float] | None = None) -> None:
        with self.app.batch_update():
            self.remove_children()
            widgets: list[Static] = []
            if self._note:
                widgets.append(Static(Text(block(self._note)), classes="transcript--note"))
            widgets.extend(MessageBlock(e, self.expanded, self.term) for e in self._entries)
            mounted = self.mount_all(widgets)

        async def scroll() -> None:
            await mounted
            current = [w for w in widgets if isinstance(w, MessageBlock) and w.entry.current]
            blocks = [w for w in widgets if isinstance(w, MessageBlock)]
            if scroll_to_current and current:
                self.call_after_refresh(self._scroll_to_block, current[-1])
            elif anchor is not None and anchor[0] is not None and anchor[0] < len(blocks):
                block, offset = blocks[anchor[0]], anchor[1]
                self.call_after_refresh(
                    lambda: self.scroll_to(y=max(0, block.virtual_region_with_margin.y + offset), animate=False)
                )
            else:
                self.scroll_home(animate=False)

        self.call_next(scroll)

    def _scroll_to_block(self, block: MessageBlock) -> None:
        region = block.virtual_region_with_margin
        height = self.scrollable_content_region.height
        # bottom of the block at the bottom of the view, unless it is taller than the view
        self.scroll_to(y=max(0, min(region.y, region.bottom - height)), animate=False)
