"""A collapsible, syntax-highlighted JSON tree with folded, paged long strings.

Objects and arrays are expanded lazily (children are built the first time a node opens),
so a model request with hundreds of messages costs nothing until you open it. Strings
longer than :data:`FOLD_AT` characters (or with several lines) are shown folded; opening
the node (enter, or a click) shows its text wrapped to the tree's width, one page of
:data:`PAGE_CHARS` characters at a time: the last line of a page, "… N more characters —
enter: next page", opens the next one. Pages of strings longer than :data:`SYNC_CHARS`
are built in a worker thread, so a 50 MB tool result never blocks a key.

Binary data written as text — a data URL or a long base64 string, whole or inside a
longer text (:mod:`core.analysis.placeholders`) — is shown as a placeholder such as
``<image/png, 3.0 MB>``; :meth:`JsonTree.set_raw` shows the text itself instead (the
"show raw" action). Invalid Unicode (``{"$invalid_unicode": …}``) is shown as its text,
U+FFFD in each bad place, with the marker ``⚠`` before the first.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self

from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from core.analysis.placeholders import Blob, blob_of, find_blobs, invalid_unicode_of, mime_hint
from core.analysis.safe_text import shown
from core.record.jsonvalues import display_text, is_tagged

from ..plain import TAB_SIZE, line, mark_at

FOLD_AT = 100
WRAP_AT = 110
EAGER_DEPTH = 2
#: characters of an opened string shown per page
PAGE_CHARS = 20_000
#: pages of strings longer than this are built in a worker thread
SYNC_CHARS = 200_000
#: a folded string's hint counts its lines up to this length (a count costs ~1 ms/MB)
COUNT_LINES_UP_TO = 4_000_000

KEY_STYLE = "bold cyan"
STRING_STYLE = "green"
NUMBER_STYLE = "magenta"
#: true/false/null: a blue that stays blue in 16 colours (yellow turns brown-red
#: there and reads like an error)
CONST_STYLE = "italic #5fafd7"
MUTED_STYLE = "dim"
#: a placeholder (``<image/png, 3.0 MB>``): never quoted, never green, so it cannot be
#: taken for a recorded string
PLACEHOLDER_STYLE = "bold reverse #d7875f"
MORE_STYLE = "dim italic"


@dataclass
class JsonNode:
    """Data of one tree node.

    ``value``: the JSON value; ``populated``: its children are built; ``folded_string``:
    a long string, opened in pages; ``path``: keys and indexes from the root; ``text``:
    the string shown (for a tag, the text it stands for; ``None`` for other values);
    ``mark``: index in ``text`` where the marker of invalid Unicode goes; ``note``: a dim
    note after the value; ``blob``: the whole string is binary data, shown as its
    placeholder; ``lines``: lines of ``text`` (``None``: not counted); ``more_from``: on
    a "more" line, where the next page of its string starts.
    """

    value: Any
    populated: bool = False
    folded_string: bool = False
    path: list[str | int] = field(default_factory=list)
    text: str | None = None
    mark: int | None = None
    note: str = ""
    blob: Blob | None = None
    lines: int | None = None
    more_from: int | None = None


def string_data(value: Any, path: list[str | int], *, mime: str | None = None, raw: bool = False) -> JsonNode | None:
    """The node data of a string or an invalid-Unicode value (``None`` for any other):
    its text, whether it is folded, its placeholder when it is binary data (not with
    ``raw``; ``mime`` is the type its context states) and its line count."""
    found = invalid_unicode_of(value)
    if found is not None:
        text, mark = found
        note = "invalid Unicode" + (", stored as JSON text" if isinstance(value, str) else "")
    elif isinstance(value, str):
        text, mark, note = value, None, ""
    else:
        return None
    blob = None if raw or found is not None else blob_of(text, mime)
    folded = blob is None and needs_fold(text)
    lines = text.count("\n") + 1 if folded and len(text) <= COUNT_LINES_UP_TO else None
    return JsonNode(
        value,
        populated=not folded,
        folded_string=folded,
        path=path,
        text=text,
        mark=mark,
        note=note,
        blob=blob,
        lines=lines,
    )


def _scalar(value: Any) -> Text:
    if is_tagged(value):
        # {"$bigint": ...}, {"$nonfinite": ...}: what it stands for (invalid Unicode is a string node)
        tag = next(iter(value))
        t = Text(line(display_text(value)), style=NUMBER_STYLE)
        t.append(f"  ({tag})", style=MUTED_STYLE)
        return t
    if isinstance(value, str):
        return Text(repr_json_string(value), style=STRING_STYLE)
    if isinstance(value, bool) or value is None:
        return Text("null" if value is None else str(value).lower(), style=CONST_STYLE)
    if isinstance(value, (int, float)):
        return Text(str(value), style=NUMBER_STYLE)
    return Text(line(value))


def repr_json_string(s: str) -> str:
    """A short quoted form of a string for a tree label (newlines shown as ``⏎``; other
    control, bidi and invisible characters as stand-ins with the marker: see
    :mod:`inspector.plain`)."""
    return '"' + shown(s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "⏎")) + '"'


def needs_fold(s: str) -> bool:
    """Whether a string is shown folded (long, or several lines)."""
    return len(s) > FOLD_AT or ("\n" in s and len(s) > 40)


def placeholder_text(blob: Blob, width: int | None = None) -> Text:
    """A blob's placeholder (``<image/png, 3.0 MB>``) and a dim note of what it stands
    for and how to see it; with ``width`` (cells left), the short note when the long
    one does not fit."""
    t = Text(blob.label(), style=PLACEHOLDER_STYLE)
    hint = f"  ({blob.form}, {blob.chars:,} chars — v: show raw)"
    if width is not None and t.cell_len + len(hint) > width:
        hint = "  (v: show raw)"
    t.append(hint, style=MUTED_STYLE)
    return t


def label_for(key: str | int | None, value: Any, width: int | None = None) -> Text:
    """The label of a node: ``key: value`` (scalars), ``key {n}`` / ``key [n]`` (containers),
    a folded string preview with its length, or a placeholder. With ``width`` (cells), a
    folded string's preview is shortened so that the whole label, its length hint
    included, fits."""
    data = string_data(value, []) or JsonNode(value)
    return node_label(key, data, width)


def node_label(key: str | int | None, data: JsonNode, width: int | None = None, expanded: bool = False) -> Text:
    """:func:`label_for` of a node's data (cached line counts and placeholders); a folded
    string's hint says what enter does: expand it, or (``expanded``) fold it again."""
    value = data.value
    label = Text()
    if key is not None:
        label.append(line(key) if isinstance(key, str) else f"[{key}]", style=KEY_STYLE)
        label.append(": " if data.text is not None or not isinstance(value, (dict, list)) or is_tagged(value) else " ")
    text = data.text
    if data.blob is not None:
        label.append_text(placeholder_text(data.blob, None if width is None else width - label.cell_len))
    elif text is not None and data.folded_string:
        lines = "" if data.lines is None else f", {data.lines:,} lines"
        note = f", {data.note}" if data.note else ""
        hint = f"  ({len(text):,} chars{lines}{note} — enter to {'fold' if expanded else 'expand'})"
        if width is not None and width - label.cell_len - len(hint) - 3 < 12:
            hint = f"  ({len(text):,} chars)"  # narrow: the short hint
        room = FOLD_AT if width is None else max(8, min(FOLD_AT, width - label.cell_len - len(hint) - 3))
        # escaped before the cut (a cut never leaves half an escape sequence raw)
        head = mark_at(text[: room * 2], data.mark if data.mark is not None and data.mark < room * 2 else None)
        preview = shown(head.replace("\n", "⏎"))[:room]
        label.append('"' + preview + '…"', style=STRING_STYLE)
        label.append(hint, style=MUTED_STYLE)
    elif text is not None:
        label.append(repr_json_string(mark_at(text, data.mark)), style=STRING_STYLE)
        if data.note:
            label.append(f"  ({data.note})", style=MUTED_STYLE)
    elif isinstance(value, dict) and not is_tagged(value):
        label.append(f"{{{len(value)}}}", style=MUTED_STYLE)
    elif isinstance(value, list):
        label.append(f"[{len(value)}]", style=MUTED_STYLE)
    else:
        label.append_text(_scalar(value))
    return label


@dataclass(frozen=True)
class PageLine:
    """One tree line of an opened string: ``text`` (shown, wrapped) or a ``blob``."""

    text: str
    blob: Blob | None = None


def _wrap_into(out: list[PageLine], segment: str, width: int, *, after_blob: bool, cut: bool) -> None:
    lines = segment.split("\n")
    if cut and len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the segment's last newline ends a line; the next page (or blob) follows
    if after_blob and len(lines) > 1 and lines[0] == "":
        lines.pop(0)  # the rest of the blob's own line
    for raw_line in lines:
        # recorded text: shown, not obeyed (inspector.plain); tabs kept for wrap to expand
        text_line = shown(raw_line, keep_tab=True)
        chunks = textwrap.wrap(
            text_line,
            width,
            drop_whitespace=False,
            replace_whitespace=False,
            break_on_hyphens=False,
            tabsize=TAB_SIZE,
        ) or [""]
        out.extend(PageLine(chunk) for chunk in chunks)


def string_page(
    text: str,
    start: int,
    width: int,
    *,
    blobs: bool = True,
    mark: int | None = None,
    page_chars: int = PAGE_CHARS,
) -> tuple[list[PageLine], int]:
    """The page of ``text`` that begins at ``start``: its lines wrapped at ``width``
    cells, and where the next page begins (``len(text)``: this was the last).

    A page holds about ``page_chars`` characters, ending after a newline when one is in
    its second half; binary data that begins in it (with ``blobs``) is one placeholder
    line, however long (the next page starts after it). ``mark``: index of the first
    invalid-Unicode character, marked when it is on this page. Costs what the page
    costs, whatever the length of ``text``.
    """
    n = len(text)
    stop = min(n, start + page_chars)
    if stop < n:
        newline = text.rfind("\n", start + page_chars // 2, stop)
        if newline != -1:
            stop = newline + 1
    out: list[PageLine] = []
    pos = start
    after_blob = False

    def segment(a: int, b: int, cut: bool) -> None:
        if a >= b:
            return
        seg = text[a:b]
        if mark is not None and a <= mark < b:
            seg = mark_at(seg, mark - a)
        _wrap_into(out, seg, width, after_blob=after_blob, cut=cut)

    for blob in find_blobs(text, start, stop) if blobs else ():
        if blob.start < pos:
            continue
        segment(pos, blob.start, cut=True)
        out.append(PageLine(blob.label(), blob))
        pos = blob.end
        after_blob = True
    if pos < stop:
        segment(pos, stop, cut=stop < n)
    return out, max(pos, stop)


def more_label(rest: int, cells: int = 1 << 30) -> str:
    """The line that opens a string's next page (``rest`` characters not shown yet), in
    at most ``cells`` cells when a shorter form fits: the key to press stays in view."""
    for text in (
        f"… {rest:,} more characters — enter: next page",
        f"… {rest:,} more — enter: next page",
        f"… {rest:,} more — enter",
        "… more — enter",
    ):
        if len(text) <= cells:
            return text
    return text


class JsonTree(Tree[JsonNode]):
    """Tree view of a JSON value. Call :meth:`show` with the value and a root label."""

    DEFAULT_CSS = """
    JsonTree { background: $surface; overflow-x: hidden; }
    """

    class PageBuilt(Message):
        """A worker built the page of ``owner``'s string that ``loading`` waits for."""

        def __init__(
            self,
            owner: TreeNode[JsonNode],
            loading: TreeNode[JsonNode],
            generation: int,
            lines: list[PageLine],
            nxt: int,
        ) -> None:
            super().__init__()
            self.owner = owner
            self.loading = loading
            self.generation = generation
            self.lines = lines
            self.nxt = nxt

    #: set while Tree's own code asks for a screen layout that this tree does not need
    _box_unchanged = False

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("record", JsonNode(None), name=name, id=id, classes=classes)
        self.show_root = True
        self.guide_depth = 3
        #: placeholders off: binary data is shown as the text it is (see set_raw)
        self.raw = False
        self._value: Any = None
        self._label = "record"
        self._shown = False
        #: bumped by every show(): a page built for an earlier value is dropped
        self._generation = 0

    def render_label(self, node: TreeNode[JsonNode], base_style: Style, style: Style) -> Text:
        """Textual's label, fitted to the width the tree has at the node's depth: a folded
        string's preview is shortened so its length hint stays visible; any other label
        that does not fit ends with ``…`` (never silently clipped at the right edge)."""
        room = self.scrollable_content_region.width
        data = node.data
        if not room or data is None:
            return super().render_label(node, base_style, style)
        avail = room - self._depth(node) * self.guide_depth - 1
        if not data.path:  # a page's line, or the line that opens the next page
            text = super().render_label(node, base_style, style)
            owner = node.parent.data if node.parent is not None else None
            if text.cell_len > avail > 1 and data.more_from is not None and owner and owner.text is not None:
                text = Text(more_label(len(owner.text) - data.more_from, avail), style=MORE_STYLE)
                text.stylize(style)
            if text.cell_len > avail > 1:
                text.truncate(avail, overflow="ellipsis")
            return text
        if data.folded_string:
            text = node_label(data.path[-1], data, avail - 2, node.is_expanded)
            text.stylize(style)
            prefix = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE, base_style + TOGGLE_STYLE)
            text = Text.assemble(prefix, text)
        elif data.blob is not None:
            text = (
                node_label(data.path[-1], data, avail) if data.text is not None else placeholder_text(data.blob, avail)
            )
            text.stylize(style)
        else:
            text = super().render_label(node, base_style, style)
        if text.cell_len > avail > 1:
            text.truncate(avail, overflow="ellipsis")
        return text

    @staticmethod
    def _depth(node: TreeNode[JsonNode]) -> int:
        depth = 0
        parent = node
        while parent.parent is not None:
            depth += 1
            parent = parent.parent
        return depth

    # ------------------------------------------------------------------ layout
    #
    # Textual's Tree asks for a layout of the whole screen whenever its lines change
    # (``_invalidate``) and whenever its virtual size does (``_build``), since a tree of
    # ``height: auto`` grows with its lines. A tree whose box is fixed by its container
    # (the detail pane's: ``height: 1fr``) keeps its size whatever it shows; for it a new
    # record is a repaint and a scrollbar update, not a reflow of every widget (about 10
    # ms at 160x50, paid at every cursor move). A scrollbar that appears or goes still
    # asks for the layout it needs (Widget.show_vertical_scrollbar).

    def _fixed_box(self) -> bool:
        """Neither the height nor the width is ``auto``: the box does not follow the lines."""
        height, width = self.styles.height, self.styles.width
        return not (height is not None and height.is_auto) and not (width is not None and width.is_auto)

    def refresh(self, *regions: Any, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if layout and self._box_unchanged:
            layout = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    @contextmanager
    def _no_layout(self) -> Iterator[None]:
        """While Tree's own code runs: its requests for a layout are repaints only."""
        self._box_unchanged = True
        try:
            yield
        finally:
            self._box_unchanged = False

    def _invalidate(self) -> None:
        if not self._fixed_box():
            super()._invalidate()
            return
        with self._no_layout():
            super()._invalidate()

    def _build(self) -> None:
        if not self._fixed_box():
            super()._build()
            return
        before = self.virtual_size
        with self._no_layout():
            super()._build()
        if self.virtual_size != before and self.is_mounted:
            self._scroll_update(self.virtual_size)  # what a layout would do for this widget

    # ------------------------------------------------------------------ data

    def show(self, value: Any, label: str = "record") -> None:
        """Replace the tree with ``value``; the first two levels are opened."""
        self._value, self._label, self._shown = value, label, True
        self._generation += 1
        self.clear()
        root_label = Text(label, style="bold")
        if self.raw:
            root_label.append("  · raw text (v: placeholders)", style=MUTED_STYLE)
        self.root.set_label(root_label)
        self.root.data = JsonNode(value)
        self.root.allow_expand = True
        self._populate(self.root)
        self.root.expand()
        for child in self.root.children:
            if child.data and isinstance(child.data.value, (dict, list)) and child.data.text is None:
                if len(child.data.value) <= 12:
                    self._populate(child)
                    child.expand()
                    # an error is what the user came for: open it wherever it is
                    for grandchild in child.children:
                        if grandchild.data and grandchild.data.path[-1:] == ["error"] and grandchild.data.value:
                            self._populate(grandchild)
                            grandchild.expand()
                continue
            if child.data and child.data.path == ["error"] and child.data.value:
                self._populate(child)
                child.expand()
        self.scroll_home(animate=False)

    def show_nothing(self, label: str = "(no record)") -> None:
        """An empty tree with a dim root label (nothing selected)."""
        self._value, self._shown = None, False
        self._generation += 1
        self.clear()
        self.root.set_label(Text(label, style=MUTED_STYLE))
        self.root.data = JsonNode(None, populated=True)
        self.root.allow_expand = False

    def set_raw(self, raw: bool) -> None:
        """Show binary data as its placeholder (``False``, the default) or as the text it
        is (``True``). The tree is rebuilt with the same nodes open and the cursor on the
        same path."""
        if raw == self.raw:
            return
        self.raw = raw
        if not self._shown:
            return
        opened = [n.data.path for n in self._walk() if n.is_expanded and n.data is not None and n.parent is not None]
        cursor = self.cursor_node
        at = list(cursor.data.path) if cursor is not None and cursor.data is not None else None
        self.show(self._value, self._label)
        for path in sorted(opened, key=len):
            node = self.node_at(path)
            if node is not None and node.allow_expand:
                self._populate(node)
                node.expand()
        if at:
            target = self.node_at(at)
            if target is not None:
                self.call_after_refresh(self.move_cursor, target)

    def node_at(self, path: list[str | int]) -> TreeNode[JsonNode] | None:
        """The built node at ``path`` (keys and indexes from the root), if any."""
        node: TreeNode[JsonNode] | None = self.root
        for i in range(len(path)):
            want = path[: i + 1]
            assert node is not None
            node = next((c for c in node.children if c.data is not None and c.data.path == want), None)
            if node is None:
                return None
        return node

    def _walk(self) -> list[TreeNode[JsonNode]]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children)
        return out

    def _add_json_child(
        self, parent: TreeNode[JsonNode], key: str | int | None, value: Any, path: list[str | int], mime: str | None
    ) -> None:
        data = string_data(value, path, mime=mime, raw=self.raw)
        if data is not None:
            label = node_label(key, data)
            if data.folded_string:
                parent.add(label, data, allow_expand=True)
            else:
                parent.add_leaf(label, data)
            return
        data = JsonNode(value, path=path)
        label = node_label(key, data)
        if isinstance(value, (dict, list)) and not is_tagged(value):
            parent.add(label, data, allow_expand=bool(value))
        else:
            data.populated = True
            parent.add_leaf(label, data)

    def _populate(self, node: TreeNode[JsonNode]) -> None:
        data = node.data
        if data is None or data.populated:
            return
        data.populated = True
        value = data.value
        if data.folded_string:
            self._add_page(node, 0)
        elif isinstance(value, dict):
            mime = mime_hint(value)
            for k, v in value.items():
                self._add_json_child(node, k, v, [*data.path, k], mime)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._add_json_child(node, i, v, [*data.path, i], None)

    def _wrap_width(self, node: TreeNode[JsonNode]) -> int:
        """Cells a line of ``node``'s string has: wrapped at words to the room the tree
        has at that depth (no side scrolling)."""
        room = (self.scrollable_content_region.width or WRAP_AT) - (self._depth(node) + 1) * self.guide_depth - 2
        return max(20, min(WRAP_AT * 2, room))

    def _add_page(self, owner: TreeNode[JsonNode], start: int) -> None:
        """Add the page of ``owner``'s string that begins at ``start`` (in a worker when
        the string is long; a "building" line stands in until it is done)."""
        data = owner.data
        assert data is not None and data.text is not None
        text, width, blobs, mark = data.text, self._wrap_width(owner), not self.raw, data.mark
        if len(text) <= SYNC_CHARS:
            self._fill_page(owner, *string_page(text, start, width, blobs=blobs, mark=mark))
            return
        loading = owner.add_leaf(Text("… building this page", style=MORE_STYLE), JsonNode(None, populated=True))
        generation = self._generation

        def build() -> None:
            lines, nxt = string_page(text, start, width, blobs=blobs, mark=mark)
            self.post_message(self.PageBuilt(owner, loading, generation, lines, nxt))

        # on the app, so that a failure reaches its one handler (InspectorApp.on_worker_state_changed)
        self.app.run_worker(
            build,
            name="page",
            group="json-page",
            description=f"building a page of a {len(text):,}-character string",
            thread=True,
            exit_on_error=False,
        )

    def on_json_tree_page_built(self, event: PageBuilt) -> None:
        event.stop()
        if event.generation != self._generation or event.loading not in event.owner.children:
            return  # the tree shows something else now
        event.loading.remove()
        self._fill_page(event.owner, event.lines, event.nxt)

    def _fill_page(self, owner: TreeNode[JsonNode], lines: list[PageLine], nxt: int) -> None:
        for page_line in lines:
            if page_line.blob is not None:
                owner.add_leaf(placeholder_text(page_line.blob), JsonNode(None, populated=True, blob=page_line.blob))
            else:
                owner.add_leaf(Text(page_line.text, style=STRING_STYLE), JsonNode(page_line.text, populated=True))
        assert owner.data is not None and owner.data.text is not None
        rest = len(owner.data.text) - nxt
        if rest > 0:
            owner.add_leaf(Text(more_label(rest), style=MORE_STYLE), JsonNode(None, populated=True, more_from=nxt))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[JsonNode]) -> None:
        event.stop()
        self._populate(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected[JsonNode]) -> None:
        node = event.node
        if node.data is None or node.data.more_from is None or node.parent is None:
            return
        event.stop()
        owner, start = node.parent, node.data.more_from
        node.remove()
        self._add_page(owner, start)

    def expand_all_strings(self) -> None:
        """Open every folded string among the built nodes (the "expand" action): each
        shows its first page."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.data and node.data.folded_string:
                self._populate(node)
                node.expand()
            stack.extend(node.children)
