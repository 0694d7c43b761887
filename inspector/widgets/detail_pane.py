"""The detail pane of the selected record: identity, error, JSON tree and transcript.

``show(index, position)`` (attribute down from the screen) fills it. The identity block
gives the key, args hash and attribution fields — and, in a replay's events, the call's
answer source and why it answered (at most three lines); the "Record" tab is the full record as
a collapsible JSON tree; the "Transcript" tab renders the chat (built only when that
tab is visible, so moving the cursor stays cheap). Both tabs show binary data (data
URLs, long base64) as placeholders until :meth:`DetailPane.set_raw` turns them off.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Final

import orjson
from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.scalar import Unit
from textual.widgets import Static, TabbedContent, TabPane, Tabs

from core.analysis.timeline import TimelineIndex, TranscriptEntry, transcript_for
from core.analysis.timeline_text import format_duration, one_line, source_label
from core.errors import FormatError
from core.record.recording import ModelRecord, ToolRecord

from .. import plain
from .json_tree import JsonTree
from .timeline_table import SOURCE_STYLES
from .transcript import TranscriptView

#: an error message longer than this is cut (head … tail) before the banner is made
BANNER_SOURCE_CHARS = 4_000
#: an answer reason longer than this is cut before it is wrapped (it shows three lines)
REASON_CHARS = 1_000


def update_static(widget: Static, content: Text) -> None:
    """``widget.update(content)``, with a layout of the screen only when the widget's
    height changes: ``content`` wrapped to the widget's width (capped by a ``max-height``
    in cells) takes as many lines as it holds now, so a repaint is enough. Textual's
    ``Static.update`` lays out every widget of the screen by default (about 10 ms at
    160x50), which the detail pane would pay at every cursor move."""
    before = widget.content_region.height
    widget.update(content, layout=False)
    width = widget.content_region.width
    if not widget.is_mounted or width <= 0 or not widget.display:
        widget.refresh(layout=True)
        return
    need = widget.get_content_height(widget.container_size, widget.app.size, width)
    cap = widget.styles.max_height
    if cap is not None and cap.unit == Unit.CELLS:
        need = min(need, int(cap.value) - widget.styles.gutter.height)
    if need != before:
        widget.refresh(layout=True)


def source_lines(source: str, reason: str, width: int, max_lines: int = 3) -> list[Text]:
    """``✎ intervention  why…`` wrapped to at most ``max_lines`` lines of ``width``
    cells (the last one cut with ``…``): the source's symbol and name in its colour,
    then the reason as plain text (recorded ids in it are data: control characters are
    shown, :mod:`inspector.plain`)."""
    label = source_label(source)
    why = plain.line(reason[:REASON_CHARS] + ("…" if len(reason) > REASON_CHARS else ""))
    wrapped = textwrap.wrap(f"{label}  {why}", max(10, width), max_lines=max_lines, placeholder=" …") or [label]
    out: list[Text] = []
    for i, text in enumerate(wrapped):
        t = Text(text)
        if i == 0:
            t.stylize(SOURCE_STYLES.get(source, ""), 0, min(len(label), len(text)))
        t.truncate(width, overflow="ellipsis")
        out.append(t)
    return out


def _with_structured_result(rec: Any, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """A tool call's transcript with its result shown as recorded: when the result
    succeeded and its content is not a string (content parts, an object), the last
    entry carries that content itself rather than its JSON text on one line, so the
    transcript shows its parts (and an image in them as a placeholder of the right
    size) as it does in a request's messages."""
    if type(rec) is not ToolRecord or rec.result.error is not None or not entries:
        return entries
    content = rec.result.content
    if content is None or isinstance(content, str) or not entries[-1].current:
        return entries
    last = entries[-1]
    message = last.message.model_copy(update={"content": content})
    return [*entries[:-1], TranscriptEntry(message, last.caption, last.current)]


class DetailPane(Vertical):
    """Identity + error banner + tabs (Record JSON tree, Transcript)."""

    DEFAULT_CSS = """
    DetailPane { background: $surface; }
    DetailPane > #detail-identity { height: auto; max-height: 4; padding: 0 1; background: $panel; }
    DetailPane > #detail-error { height: auto; max-height: 2; padding: 0 1; background: $panel; color: #ff5f5f; text-style: bold; display: none; }
    DetailPane > #detail-error.shown { display: block; }
    DetailPane TabbedContent { height: 1fr; }
    DetailPane TabPane { padding: 0; }
    DetailPane JsonTree, DetailPane TranscriptView { height: 1fr; }
    DetailPane:focus-within { outline-left: tall $accent; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.index: TimelineIndex | None = None
        self.position: int | None = None
        self._transcript_for: int | None = None
        #: the search text: the identity block says where the record matched it
        self.term = ""
        #: seq → (label, reason) of the records the metadata marks (see inspector.runinfo)
        self.marks: dict[int, tuple[str, str]] = {}
        #: the selected record's error (the banner), if any
        self._error: Any = None
        #: binary data shown as the text it is (no placeholders) in both tabs
        self.raw = False

    def compose(self) -> ComposeResult:
        yield Static("", id="detail-identity")
        yield Static("", id="detail-error")
        with TabbedContent(id="detail-tabs", initial="tab-record"):
            with TabPane("Record", id="tab-record"):
                yield JsonTree(id="detail-tree")
            with TabPane("Transcript", id="tab-transcript"):
                yield TranscriptView(id="detail-transcript")

    def on_mount(self) -> None:
        # `r` and `t` switch the tabs (and a click does): Tab goes from the timeline
        # straight to the record, not to the tab bar first
        self.query_one(Tabs).can_focus = False

    # ------------------------------------------------------------------ data

    def show(self, index: TimelineIndex, position: int | None, empty_message: str = "") -> None:
        """Show the record at ``position`` of ``index`` (``None``: nothing selected,
        ``empty_message`` says why)."""
        self.index = index
        self.position = position
        self._transcript_for = None
        self._error = None
        identity = self.query_one("#detail-identity", Static)
        error = self.query_one("#detail-error", Static)
        tree = self.query_one(JsonTree)
        if position is None:
            identity.update(Text(empty_message or "no record selected (the filter hides every record)"))
            error.remove_class("shown")
            tree.show_nothing()
            self.query_one(TranscriptView).show([], "")
            return
        try:
            rec = index.record(position)
            identity_text = self._identity_text(index, position)
        except FormatError as exc:  # a fast-opened file, not verified yet
            update_static(identity, plain.line_text(f"✗ this record is invalid: {exc}", style="bold #ff5f5f"))
            error.remove_class("shown")
            tree.show({}, "invalid record")
            return
        update_static(identity, identity_text)
        err = rec.result.error if type(rec) is ToolRecord else getattr(rec, "error", None)
        self._error = err
        if err is not None:
            self._update_error_banner()
            error.add_class("shown")
        else:
            error.remove_class("shown")
        tree.show(rec.to_json_obj(), f"seq {rec.seq} · {rec.kind}")
        if self.active_tab == "tab-transcript":
            self._show_transcript()

    def set_raw(self, raw: bool) -> None:
        """Show binary data as placeholders (``False``) or as the text it is (``True``)
        in the JSON tree and the transcript; the open nodes and the scroll position stay."""
        self.raw = raw
        self.query_one(JsonTree).set_raw(raw)
        self.query_one(TranscriptView).raw = raw

    @property
    def active_tab(self) -> str:
        """Id of the visible tab: ``tab-record`` or ``tab-transcript``."""
        return self.query_one(TabbedContent).active

    @active_tab.setter
    def active_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def focus_content(self) -> None:
        """Focus the visible tab's content (the JSON tree or the transcript)."""
        if self.active_tab == "tab-transcript":
            self.query_one(TranscriptView).focus()
        else:
            self.query_one(JsonTree).focus()

    def _update_error_banner(self) -> None:
        """The error banner: one line on a narrow screen, else two, with the error's
        most specific part (its last sentence) kept when the whole does not fit; the
        whole error is in the tabs. Shown on both tabs."""
        if self._error is None:
            return
        lines = 1 if self.screen.has_class("-narrow") else 2
        message = self._error.message or ""
        if len(message) > BANNER_SOURCE_CHARS:
            # the banner shows a head and the last sentence: never process megabytes for it
            half = BANNER_SOURCE_CHARS // 2
            message = f"{message[:half]} … {message[-half:]}"
        # recorded text: escaped before it is cut to the banner (newlines kept: they split sentences)
        text = Text(
            error_banner(
                plain.line(self._error.type),
                plain.block(message),
                max(38, self.size.width - 2),
                lines,
            )
        )
        text.no_wrap, text.overflow = True, "ellipsis"
        self.query_one("#detail-error", Static).update(text)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-transcript":
            self._show_transcript()

    def on_resize(self) -> None:
        self._update_error_banner()
        if self.index is not None and self.position is not None:
            try:
                self.query_one("#detail-identity", Static).update(self._identity_text(self.index, self.position))
            except FormatError:
                pass

    def _show_transcript(self) -> None:
        if self.index is None or self.position is None or self._transcript_for == self.position:
            return
        self._transcript_for = self.position
        try:
            entries, note = transcript_for(self.index, self.position)
            entries = _with_structured_result(self.index.record(self.position), entries)
        except FormatError as exc:
            entries, note = [], f"✗ {exc}"
        view = self.query_one(TranscriptView)
        view.term = self.term
        view.show(entries, note)

    def _identity_text(self, index: TimelineIndex, position: int) -> Text:
        ident = index.identity(position)
        rec = index.record(position)
        t = Text()
        t.append(f"seq {ident['seq']}", style="bold")
        t.append(f"  {plain.line(str(ident['kind']))}", style="bold")
        t.append(f"  {plain.line(index.names[position])}")
        status = index.statuses[position]
        # an index not yet verified may say anything: shown as data (inspector.plain)
        t.append(f"  [{plain.line(str(status))}]", style="bold #ff5f5f" if status == "error" else "dim")
        dur = index.durations[position]
        if dur is not None:
            t.append(f"  {format_duration(dur)}", style="dim")
        if index.tokens[position] is not None and type(rec) is ModelRecord and rec.response and rec.response.usage:
            u = rec.response.usage
            t.append(f"  tokens in {u.input_tokens:,} / out {u.output_tokens:,}", style="dim")
        rows: list[tuple[str, Any]] = []
        for field, label in (
            ("key", "key"),
            ("args_hash", "args hash"),
            ("tool_call_id", "call id"),
            ("at", "at"),
            ("run_id", "run"),
            ("generation_id", "generation"),
        ):
            if ident.get(field):
                rows.append((label, ident[field]))
        flags = [f for f in ("replayed", "live_fallback") if ident.get(f)]
        if flags:
            rows.append(("flags", ", ".join(flags)))
        links = index.linked(position)
        if links:
            label = "requested by" if type(rec) is ToolRecord else "answered by"
            rows.append((label, ", ".join(f"seq {index.seqs[p]}" for p in links) + " (l)"))
        if type(rec) is ToolRecord and isinstance(rec.meta, dict) and rec.meta.get("observed") is True:
            rows.insert(0, ("observed", "the agent ran it itself, unmediated (meta.observed)"))
        if self.marks.get(rec.seq):
            label, reason = self.marks[rec.seq]
            rows.insert(0, (f"⚑ {label}", reason or "marked by the metadata"))
        if self.term:
            where = matched_fields(rec.to_json_obj(), self.term)
            if where:
                rows.insert(0, ("matched in", ", ".join(plain.line(w) for w in where)))
        # label+value pairs packed into lines; a pair never breaks between its label
        # and its value; at most three lines (the tree has every field)
        width = max(30, (self.size.width or 60) - 2)
        # a replay's events: what answered the call and why, first (three lines at most)
        source = index.answer_source(position)
        lines: list[Text] = []
        if source is not None:
            lines.extend(source_lines(source, index.answer_reason(position) or "", width))
        lines.append(Text())
        for k, v in rows:
            v = plain.line(v)
            if k in ("key", "args hash") and len(v) > 25:
                v = v[:24] + "…"
            pair = Text()
            pair.append(f"{k} ", style="#4fb0b0")
            pair.append(v, style="bold #d7af00" if k == "matched in" or k.startswith("⚑") else "")
            pair.truncate(width, overflow="ellipsis")
            line = lines[-1]
            if len(line) and line.cell_len + 2 + pair.cell_len > width:  # cells: a wide character takes two
                lines.append(Text())
                line = lines[-1]
            if len(line):
                line.append("  ")
            line.append_text(pair)
        head = t
        head.truncate(width, overflow="ellipsis")
        out = Text()
        out.append_text(head)
        for line in [ln for ln in lines if len(ln)][:3]:
            out.append("\n")
            out.append_text(line)
        return out


#: the banner of an error recorded with neither a type nor a message
NO_ERROR_TEXT: Final = "an error, recorded without a type or a message"


def error_banner(error_type: str, message: str, width: int, lines: int = 2) -> str:
    """``✗ type: message`` in at most ``lines`` (1 or 2) lines of at most ``width``
    characters. When it does not fit, the head is cut and the message's last sentence (its
    most specific part, e.g. ``E999 SyntaxError: unmatched ']'`` after a long explanation)
    is kept: on its own second line, or after the cut head on a single line. An empty type
    or message is left out with its colon (``✗ timeout``, ``✗ boom``)."""
    head, said = error_type.strip(), message.strip()
    label = f"{error_type}: {message}" if head and said else head or said or NO_ERROR_TEXT
    full = one_line(f"✗ {label}", 1 << 30)
    if not full.isascii() and cell_len(full) != len(full):
        return _error_banner_cells(full, message, width, lines)  # wide characters (CJK)
    if len(full) <= width:
        return full
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", message.strip()) if x.strip()]
    tail = one_line(sentences[-1], 1 << 30) if len(sentences) > 1 else ""
    if lines >= 2:
        if tail and len(tail) <= width:
            return one_line(full[: -len(tail)].rstrip(), width) + "\n" + tail
        first, *rest = textwrap.wrap(full, width) or [""]
        return first + ("\n" + one_line(" ".join(rest), width) if rest else "")
    if not tail or len(tail) > width - 20:
        return one_line(full, width)
    return one_line(full, width - len(tail) - 1) + " " + tail


def _error_banner_cells(full: str, message: str, width: int, lines: int) -> str:
    """:func:`error_banner` for text with wide characters, measured in terminal cells
    (a CJK character takes two): the same choices, with each cut made by cells."""
    if cell_len(full) <= width:
        return full
    sentences = [x for x in re.split(r"(?<=[.!?。！？])\s*|\n+", message.strip()) if x.strip()]
    tail = one_line(sentences[-1], 1 << 30) if len(sentences) > 1 else ""
    if lines >= 2:
        if tail and cell_len(tail) <= width and full.endswith(tail):
            return plain.cut_cells(full[: -len(tail)].rstrip(), width) + "\n" + tail
        first = set_cell_size(full, width).rstrip()
        cut = first.rfind(" ")
        if cut > len(first) // 2:  # a break between words when there is one in reach
            first = first[:cut]
        return first + "\n" + plain.cut_cells(full[len(first) :].strip(), width)
    if not tail or cell_len(tail) > width - 20 or not full.endswith(tail):
        return plain.cut_cells(full, width)
    return plain.cut_cells(full[: -len(tail)].rstrip(), width - cell_len(tail) - 1) + " " + tail


def matched_fields(obj: Any, term: str, limit: int = 4) -> list[str]:
    """Where a record (``to_json_obj()`` form) contains ``term`` (case-insensitive): up
    to ``limit`` short JSON paths (``arguments.command``, ``result.content``, ...)."""
    needle = term.lower()
    out: list[str] = []

    def walk(value: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif value is not None:
            text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
            if needle in text.lower() and path not in out:
                out.append(path)

    walk(obj, "")
    return out
