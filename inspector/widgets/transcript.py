"""The chat transcript of a model call: the request's messages as a chat, then the response.

Each message is a block titled with its role (system, user, assistant, tool, or
"other" for roles outside those) and, for a tool message, the ``tool_call_id`` it
answers; an assistant message lists its tool calls with their ids and arguments.

What a block shows is bounded, whatever the size of the message: folded, at most
:data:`FOLD_LINES` lines and :data:`FOLD_CHARS` characters of each text (arguments:
twice the lines); expanded (:attr:`TranscriptView.expanded`, the ``z`` key), at most
:data:`EXPANDED_LINES` lines and :data:`EXPANDED_CHARS` characters, then a line saying
how much more there is (the Record tab pages through all of it). Binary data written as
text — data URLs, long base64 (:mod:`core.analysis.placeholders`) — is shown as a
placeholder such as ``<image/png, 3.0 MB>`` unless :attr:`TranscriptView.raw` is set.
Tool-call arguments are indented JSON whose multi-line strings are shown as their lines
between ``\"\"\"`` (a ``file_text`` reads as the file); arguments that are not a JSON
object say so on a dim line.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from rich.text import Text
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from core.analysis.placeholders import Blob, blob_of, find_blobs, format_size, invalid_unicode_of, mime_hint
from core.analysis.timeline import TranscriptEntry
from core.record.jsonvalues import BIGINT_TAG, NONFINITE_TAG, display_text, is_tagged
from core.record.nesting import dumps
from core.record.recording import STANDARD_ROLES, ChatMessage

from ..plain import block, line, mark_at

FOLD_LINES = 8
#: characters of a text shown folded (one long line is folded too)
FOLD_CHARS = 1_500
#: lines and characters of a text shown expanded; the rest is in the Record tab
EXPANDED_LINES = 2_000
EXPANDED_CHARS = 100_000
#: a folded non-text part (``[image_url] {…}``) shows this many characters
PART_CHARS = 300
#: a thinking part is shown folded to this many characters (and 3 lines) until z
THINKING_CHARS = 160
#: the hidden rest of a text has its lines counted up to this length
COUNT_LINES_UP_TO = 4_000_000
#: the search text in the transcript (as in the timeline's summaries)
MATCH_STYLE = "bold #000000 on #e0c000"
#: a placeholder for binary data (as in the JSON tree)
PLACEHOLDER_STYLE = "bold reverse #d7875f"
NOTE_STYLE = "dim italic"


# ---------------------------------------------------------------------- pieces of text


@dataclass(frozen=True)
class _Multiline:
    """A multi-line string value inside JSON: ``text`` shown as its lines, indented by
    ``indent`` spaces, between ``\"\"\"``."""

    text: str
    indent: int
    mark: int | None = None


Piece = str | Blob | _Multiline


class _Sink:
    """Appends recorded text (escaped by :func:`inspector.plain.block`) and placeholders
    to a Rich ``Text`` until ``max_lines`` lines or ``max_chars`` characters are shown;
    then it only counts what it could not show (never copying it)."""

    def __init__(self, body: Text, max_lines: int, max_chars: int, style: str = "") -> None:
        self.body = body
        self.style = style
        self.lines_left = max_lines
        self.chars_left = max_chars
        self.full = False
        #: the first text not shown began in the middle of a line
        self.cut_mid_line = False
        self.hidden_chars = 0
        self._hidden: list[tuple[str, int, int]] = []

    def text(self, raw: str, start: int = 0, end: int | None = None, mark: int | None = None) -> None:
        """Show ``raw[start:end]``, or as much of it as fits; ``mark``: index in ``raw``
        of a character to mark (invalid Unicode)."""
        end = len(raw) if end is None else end
        if start >= end:
            return
        if self.full:
            self.hide(raw, start, end)
            return
        stop = min(end, start + self.chars_left)
        pos = start
        cut = stop
        while True:
            nl = raw.find("\n", pos, stop)
            if nl == -1:
                break
            if self.lines_left <= 1:
                cut = nl  # the last line that fits ends here; its newline is not shown
                break
            self.lines_left -= 1
            pos = nl + 1
        part = raw[start:cut]
        if mark is not None and start <= mark < cut:
            part = mark_at(part, mark - start)
        self.body.append(block(part), style=self.style)
        self.chars_left -= cut - start
        if cut < end:
            self.full = True
            self.cut_mid_line = raw[cut] != "\n"
            self.hide(raw, cut, end)

    def blob(self, blob: Blob) -> None:
        """Show a placeholder for ``blob`` (counted as its label's length)."""
        if self.full:
            self.hidden_chars += blob.chars
            return
        self.body.append(blob.label(), style=PLACEHOLDER_STYLE)
        self.chars_left -= len(blob.label())
        if self.chars_left <= 0:
            self.full = True

    def hide(self, raw: str, start: int, end: int) -> None:
        """Count ``raw[start:end]`` as not shown."""
        self.hidden_chars += end - start
        self._hidden.append((raw, start, end))

    def hidden_lines(self) -> int | None:
        """Lines not shown, or partly shown; ``None`` when too much is hidden to count."""
        if self.hidden_chars > COUNT_LINES_UP_TO:
            return None
        if not self._hidden:
            return 0
        n = sum(raw.count("\n", a, b) for raw, a, b in self._hidden)
        return n + (1 if self.cut_mid_line else 0)


def _text_pieces(raw: str, end: int, blobs: bool) -> list[Piece | tuple[int, int]]:
    """``raw[:end]`` as spans ``(start, stop)`` of text and the blobs beginning there
    (each in full); the text after the last piece is a span up to ``len(raw)``."""
    out: list[Piece | tuple[int, int]] = []
    pos = 0
    for b in find_blobs(raw, 0, end) if blobs else ():
        if b.start < pos:
            continue
        if b.start > pos:
            out.append((pos, b.start))
        out.append(b)
        pos = b.end
    if pos < len(raw):
        out.append((pos, len(raw)))
    return out


def _show_text(sink: _Sink, raw: str, *, blobs: bool, mark: int | None = None) -> None:
    """Show a recorded text in ``sink``, binary data in it as placeholders."""
    window = min(len(raw), sink.chars_left + 1)
    for piece in _text_pieces(raw, window, blobs):
        if isinstance(piece, tuple):
            sink.text(raw, piece[0], piece[1], mark)
        elif isinstance(piece, Blob):
            sink.blob(piece)


def _more_note(sink: _Sink, expanded: bool) -> str:
    lines = sink.hidden_lines()
    if lines is None:
        amount = f"{format_size(sink.hidden_chars)} more"
    elif sink.cut_mid_line and lines <= 1:
        amount = f"{sink.hidden_chars:,} more characters"
    else:
        amount = f"{lines:,} more line{'' if lines == 1 else 's'}"
    if expanded:
        return f"\n… {amount} not shown here (r: the Record tab pages through all of it)"
    return f"\n… {amount} (z: expand long messages)"


# ---------------------------------------------------------------------- JSON with pieces


def _json_pieces(value: Any, *, indent: bool, blobs: bool, multiline: bool) -> list[Piece]:
    """``value`` as JSON text (indented with ``indent``), cut into pieces: a string that
    is binary data becomes its :class:`Blob` (with ``blobs``), a string of several
    lines a :class:`_Multiline` (with ``multiline``), tags what they stand for
    (invalid Unicode as its text with the marker, numbers as their digits)."""
    token = f"@@piece-{uuid.uuid4().hex}-"
    found: list[Blob | _Multiline] = []

    def sub(piece: Blob | _Multiline) -> str:
        found.append(piece)
        return f"{token}{len(found) - 1}@@"

    def walk(v: Any, mime: str | None) -> Any:
        if isinstance(v, str) or (is_tagged(v) and NONFINITE_TAG not in v and BIGINT_TAG not in v):
            bad = invalid_unicode_of(v)
            text, mark = bad if bad is not None else (v, None)
            if not isinstance(text, str):
                return display_text(v)
            if blobs and bad is None:
                blob = blob_of(text, mime)
                if blob is not None:
                    return sub(blob)
            if multiline and "\n" in text:
                return sub(_Multiline(text, 0, mark))
            return mark_at(text, mark)
        if is_tagged(v):
            if BIGINT_TAG in v:
                return orjson.Fragment(v[BIGINT_TAG].encode())
            return v[NONFINITE_TAG]
        if isinstance(v, dict):
            hint = mime_hint(v)
            return {k: walk(item, hint) for k, item in v.items()}
        if isinstance(v, list):
            return [walk(item, None) for item in v]
        return v

    try:
        text = dumps(walk(value, None), orjson.OPT_INDENT_2 if indent else 0).decode()
    except TypeError:
        return [display_text(value)]
    if not found:
        return [text]
    pieces: list[Piece] = []
    pattern = re.compile(f'"{re.escape(token)}(\\d+)@@"')
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            pieces.append(text[pos : m.start()])
        piece = found[int(m.group(1))]
        if isinstance(piece, _Multiline):
            line_start = text.rfind("\n", 0, m.start()) + 1
            key_indent = len(text[line_start : m.start()]) - len(text[line_start : m.start()].lstrip(" "))
            piece = _Multiline(piece.text, key_indent + 2, piece.mark)
        pieces.append(piece)
        pos = m.end()
    if pos < len(text):
        pieces.append(text[pos:])
    return pieces


def _show_pieces(sink: _Sink, pieces: list[Piece]) -> None:
    for piece in pieces:
        if isinstance(piece, str):
            _show_text(sink, piece, blobs=False)
        elif isinstance(piece, Blob):
            if not sink.full and sink.body.plain[-1:] not in ("", " ", "\n"):
                sink.text(" ")  # a placeholder stands apart: `"url": <image/png, 3.0 MB>`
            sink.blob(piece)
        else:
            _show_multiline(sink, piece)


def _show_multiline(sink: _Sink, piece: _Multiline) -> None:
    """A multi-line string value: ``\"\"\"``, its lines indented, ``\"\"\"``."""
    text, pad = piece.text, " " * piece.indent
    sink.text('"""')
    pos = 0
    while pos <= len(text) and not sink.full:
        nl = text.find("\n", pos)
        stop = len(text) if nl == -1 else nl
        sink.text("\n" + pad)
        sink.text(text, pos, stop, piece.mark)
        pos = stop + 1
    if pos <= len(text):
        sink.hide(text, pos, len(text))
    sink.text("\n" + " " * max(0, piece.indent - 2) + '"""')


def _plain_pieces(pieces: list[Piece]) -> str:
    """Pieces as one text, before any escaping (blobs as the label they would show)."""
    out: list[str] = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
        elif isinstance(piece, Blob):
            out.append(piece.label())
        else:
            pad = " " * piece.indent
            body = "\n".join(pad + ln for ln in mark_at(piece.text, piece.mark).split("\n"))
            out.append('"""\n' + body + "\n" + " " * max(0, piece.indent - 2) + '"""')
    return "".join(out)


def arguments_kind(arguments: Any) -> str | None:
    """What tool-call arguments are when they are not a JSON object (``None`` when
    they are one, or a string holding one): ``"a string"``, ``"an array"``, ``"a
    number"``, ``"true or false"``, ``"null"``, ``"text that is not JSON"``, ``"text
    with invalid Unicode"``."""
    if isinstance(arguments, dict) and not is_tagged(arguments):
        return None
    if invalid_unicode_of(arguments) is not None:
        return "text with invalid Unicode"
    value = arguments
    if isinstance(arguments, str):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return "text that is not JSON"
        if isinstance(value, str):
            return "a JSON string"
    if isinstance(value, dict) and not is_tagged(value):
        return None
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return "a number"


def _arguments_value(arguments: Any) -> tuple[Any, bool]:
    """``(value, as_json)``: the arguments to show as JSON, or a text to show as it is."""
    bad = invalid_unicode_of(arguments)
    if bad is not None:
        # the marker goes in first: U+FFFD can only be inside a JSON string, so it stays there
        text = mark_at(*bad)
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            return text, False
        return (parsed, True) if isinstance(parsed, (dict, list)) else (text, False)
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments, False
        return (parsed, True) if not isinstance(parsed, str) else (parsed, False)
    return arguments, True


def arguments_text(arguments: Any) -> str:
    """Tool-call arguments, pretty-printed: a JSON object (or a string holding one) as
    indented JSON with real newlines, a string value of several lines as its lines
    between ``\"\"\"``; tagged values (``$bigint``, ``$nonfinite``, ``$invalid_unicode``)
    shown as what they stand for; other strings as they are. The whole text, not yet
    escaped for display (the transcript shows a bounded, escaped part of it)."""
    value, as_json = _arguments_value(arguments)
    if not as_json:
        return value if isinstance(value, str) else display_text(value)
    return _plain_pieces(_json_pieces(value, indent=True, blobs=False, multiline=True))


def _show_arguments(sink: _Sink, arguments: Any, *, blobs: bool) -> None:
    value, as_json = _arguments_value(arguments)
    if as_json:
        _show_pieces(sink, _json_pieces(value, indent=True, blobs=blobs, multiline=True))
        return
    _show_text(sink, value if isinstance(value, str) else display_text(value), blobs=blobs)


# ---------------------------------------------------------------------- a message


def _part_text(part: dict[str, Any]) -> tuple[str, int | None] | None:
    """The text of a text-like part (``text`` a string or a tag; invalid Unicode kept
    under ``encoded`` gives the marker's place), or ``None``."""
    text = part.get("text")
    bad = invalid_unicode_of(text) if text is not None else None
    if bad is not None:
        return bad
    if isinstance(text, str):
        enc = invalid_unicode_of(part.get("encoded"))
        return text, (enc[1] if enc is not None and enc[0] == text else None)
    return None


def message_text(msg: ChatMessage, expanded: bool, raw: bool = False) -> tuple[Text, int]:
    """The body of a message block and the number of lines hidden by folding.

    Text parts are shown as text; ``thinking`` parts as a dimmed block (folded to its
    first lines until expanded); other parts as ``[type]`` and their JSON; tagged
    values as what they stand for (invalid Unicode: its text, marked); tool calls with
    their arguments pretty-printed (:func:`arguments_text`), marked when they are not a
    JSON object. Binary data is shown as placeholders unless ``raw``. Bounded by the
    limits of the module docstring, whatever the message's size."""
    body = Text()
    content = msg.content
    hidden = 0
    blobs = not raw
    #: (style, text, mark) of a text; (style, pieces, None) of a part's JSON
    blocks: list[tuple[str, Any, int | None]] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                bad = invalid_unicode_of(part)
                blocks.append(("", *(bad or (part, None))))
            elif isinstance(part, dict) and part.get("type") in ("thinking", "reasoning", "redacted_thinking"):
                text = part.get("thinking", part.get("reasoning", part.get("text", part.get("data", ""))))
                bad = invalid_unicode_of(text)
                if bad is not None:
                    blocks.append(("thinking", *bad))
                else:
                    blocks.append(("thinking", text if isinstance(text, str) else display_text(text), None))
            elif (bad := invalid_unicode_of(part)) is not None:
                blocks.append(("", *bad))
            elif is_tagged(part):
                blocks.append(("", display_text(part), None))
            elif isinstance(part, dict) and (found := _part_text(part)) is not None:
                blocks.append(("", *found))
            else:
                kind = part.get("type", "part") if isinstance(part, dict) else "part"
                blocks.append(("part", (line(kind), part), None))
    elif isinstance(content, str) and content != "":
        bad = invalid_unicode_of(content)
        blocks.append(("", *(bad or (content, None))))
    elif content is not None and content != "":
        blocks.append(("part", ("", content), None))
    for style, raw_text, mark in blocks:
        if len(body):
            body.append("\n")
        if style == "part":
            kind, value = raw_text
            sink = _Sink(
                body, 1 if not expanded else EXPANDED_LINES, PART_CHARS if not expanded else EXPANDED_CHARS, "dim"
            )
            if kind:
                sink.text(f"[{kind}] ")
            pieces = _json_pieces(value, indent=expanded, blobs=blobs, multiline=False)
            _show_pieces(sink, pieces)
            if sink.full:
                hidden += sink.hidden_lines() or 1
                body.append("…" if not expanded else _more_note(sink, True), style="dim")
            continue
        thinking = style == "thinking"
        if thinking:
            body.append("thinking\n", style="dim bold italic")
        if expanded:
            limits = (EXPANDED_LINES, EXPANDED_CHARS)
        elif thinking:
            limits = (3, THINKING_CHARS)
        else:
            limits = (FOLD_LINES, FOLD_CHARS)
        sink = _Sink(body, limits[0], limits[1], "dim italic" if thinking else "")
        _show_text(sink, raw_text, blobs=blobs, mark=mark)
        if sink.full:
            hidden += max(1, sink.hidden_lines() or 1)
            if thinking and not expanded:
                body.append("…" if sink.cut_mid_line else "", style="dim italic")
                body.append("\n(z: show all the thinking)", style=NOTE_STYLE)
            else:
                body.append(_more_note(sink, expanded), style=NOTE_STYLE)
    if not blocks and not msg.tool_calls:
        body.append("(empty)", style=NOTE_STYLE)
    for call in msg.tool_calls or ():
        if len(body):
            body.append("\n")
        body.append("→ tool call ", style="bold")
        body.append(line(call.name), style="bold green")
        body.append(f"  id={line(call.id)}\n", style="dim")
        kind = arguments_kind(call.arguments)
        if kind is not None:
            body.append(f"(arguments are not a JSON object: {kind})\n", style=NOTE_STYLE)
        lines, chars = (EXPANDED_LINES, EXPANDED_CHARS) if expanded else (2 * FOLD_LINES, 2 * FOLD_CHARS)
        sink = _Sink(body, lines, chars)
        _show_arguments(sink, call.arguments, blobs=blobs)
        if sink.full:
            hidden += max(1, sink.hidden_lines() or 1)
            body.append(_more_note(sink, expanded), style=NOTE_STYLE)
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

    def __init__(self, entry: TranscriptEntry, expanded: bool, term: str = "", raw: bool = False) -> None:
        role = entry.message.role if entry.message.role in (*STANDARD_ROLES, "interrupt") else "other"
        body, _ = message_text(entry.message, expanded, raw)
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
    #: binary data shown as the text it is, not as placeholders
    raw: reactive[bool] = reactive(False, init=False)

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
        self._rebuild_in_place()

    def watch_raw(self) -> None:
        self._rebuild_in_place()

    def _rebuild_in_place(self) -> None:
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
            widgets.extend(MessageBlock(e, self.expanded, self.term, self.raw) for e in self._entries)
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
