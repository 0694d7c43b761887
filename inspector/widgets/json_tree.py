"""A collapsible, syntax-highlighted JSON tree with folded long strings.

Objects and arrays are expanded lazily (children are built the first time a node opens),
so a model request with hundreds of messages costs nothing until you open it. Strings
longer than :data:`FOLD_AT` characters (or with several lines) are shown folded; opening
the node (enter, or a click) shows the whole text, one line per tree line.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from core.analysis.safe_text import shown
from core.record.jsonvalues import display_text, is_tagged

from ..plain import TAB_SIZE, line

FOLD_AT = 100
WRAP_AT = 110
EAGER_DEPTH = 2

KEY_STYLE = "bold cyan"
STRING_STYLE = "green"
NUMBER_STYLE = "magenta"
#: true/false/null: a blue that stays blue in 16 colours (yellow turns brown-red
#: there and reads like an error)
CONST_STYLE = "italic #5fafd7"
MUTED_STYLE = "dim"


@dataclass
class JsonNode:
    """Data of one tree node: the JSON ``value`` and whether its children are built."""

    value: Any
    populated: bool = False
    folded_string: bool = False
    path: list[str | int] = field(default_factory=list)


def _scalar(value: Any) -> Text:
    if is_tagged(value):
        # {"$bigint": ...}, {"$nonfinite": ...}, {"$invalid_unicode": ...}: what it stands for
        tag = next(iter(value))
        t = Text(line(display_text(value)), style=NUMBER_STYLE if tag != "$invalid_unicode" else STRING_STYLE)
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
    return '"' + line(s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "⏎")) + '"'


def needs_fold(s: str) -> bool:
    """Whether a string is shown folded (long, or several lines)."""
    return len(s) > FOLD_AT or s.count("\n") > 0 and len(s) > 40


def label_for(key: str | int | None, value: Any, width: int | None = None) -> Text:
    """The label of a node: ``key: value`` (scalars), ``key {n}`` / ``key [n]`` (containers),
    or a folded string preview with its length. With ``width`` (cells), a folded string's
    preview is shortened so that the whole label, its length hint included, fits."""
    label = Text()
    if key is not None:
        label.append(line(key) if isinstance(key, str) else f"[{key}]", style=KEY_STYLE)
        label.append(": " if not isinstance(value, (dict, list)) or is_tagged(value) else " ")
    if is_tagged(value):
        label.append_text(_scalar(value))
    elif isinstance(value, dict):
        label.append(f"{{{len(value)}}}", style=MUTED_STYLE)
    elif isinstance(value, list):
        label.append(f"[{len(value)}]", style=MUTED_STYLE)
    elif isinstance(value, str) and needs_fold(value):
        lines = value.count("\n") + 1
        hint = f"  ({len(value):,} chars, {lines} lines — enter to expand)"
        if width is not None and width - label.cell_len - len(hint) - 3 < 12:
            hint = f"  ({len(value):,} chars)"  # narrow: the short hint
        room = FOLD_AT if width is None else max(8, min(FOLD_AT, width - label.cell_len - len(hint) - 3))
        # escaped before the cut (a cut never leaves half an escape sequence raw)
        preview = line(value[: room * 2].replace("\n", "⏎"))[:room]
        label.append('"' + preview + '…"', style=STRING_STYLE)
        label.append(hint, style=MUTED_STYLE)
    else:
        label.append_text(_scalar(value))
    return label


class JsonTree(Tree[JsonNode]):
    """Tree view of a JSON value. Call :meth:`show` with the value and a root label."""

    DEFAULT_CSS = """
    JsonTree { background: $surface; overflow-x: hidden; }
    """

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("record", JsonNode(None), name=name, id=id, classes=classes)
        self.show_root = True
        self.guide_depth = 3

    def render_label(self, node: TreeNode[JsonNode], base_style: Style, style: Style) -> Text:
        """Textual's label, fitted to the width the tree has at the node's depth: a folded
        string's preview is shortened so its length hint stays visible; any other label
        that does not fit ends with ``…`` (never silently clipped at the right edge)."""
        room = self.scrollable_content_region.width
        data = node.data
        if not room or data is None or not data.path:
            return super().render_label(node, base_style, style)
        depth = 0
        parent = node
        while parent.parent is not None:
            depth += 1
            parent = parent.parent
        avail = room - depth * self.guide_depth - 1
        if data.folded_string:
            text = label_for(data.path[-1], data.value, avail - 2)
            text.stylize(style)
            prefix = (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE, base_style + TOGGLE_STYLE)
            text = Text.assemble(prefix, text)
        else:
            text = super().render_label(node, base_style, style)
        if text.cell_len > avail > 1:
            text.truncate(avail, overflow="ellipsis")
        return text

    def show(self, value: Any, label: str = "record") -> None:
        """Replace the tree with ``value``; the first two levels are opened."""
        self.clear()
        self.root.set_label(Text(label, style="bold"))
        self.root.data = JsonNode(value)
        self._populate(self.root)
        self.root.expand()
        for child in self.root.children:
            if child.data and isinstance(child.data.value, (dict, list)) and len(child.data.value) <= 12:
                self._populate(child)
                child.expand()
                # an error is what the user came for: open it wherever it is
                for grandchild in child.children:
                    if grandchild.data and grandchild.data.path[-1:] == ["error"] and grandchild.data.value:
                        self._populate(grandchild)
                        grandchild.expand()
            elif child.data and child.data.path == ["error"] and child.data.value:
                self._populate(child)
                child.expand()
        self.scroll_home(animate=False)

    def show_nothing(self, label: str = "(no record)") -> None:
        """An empty tree with a dim root label (nothing selected)."""
        self.clear()
        self.root.set_label(Text(label, style=MUTED_STYLE))
        self.root.data = JsonNode(None, populated=True)
        self.root.allow_expand = False

    def _add_json_child(
        self, parent: TreeNode[JsonNode], key: str | int | None, value: Any, path: list[str | int]
    ) -> None:
        label = label_for(key, value)
        if isinstance(value, (dict, list)) and not is_tagged(value):
            parent.add(label, JsonNode(value, path=path), allow_expand=bool(value))
        elif isinstance(value, str) and needs_fold(value):
            parent.add(label, JsonNode(value, folded_string=True, path=path), allow_expand=True)
        else:
            parent.add_leaf(label, JsonNode(value, populated=True, path=path))

    def _populate(self, node: TreeNode[JsonNode]) -> None:
        data = node.data
        if data is None or data.populated:
            return
        data.populated = True
        value = data.value
        if data.folded_string:
            # wrapped at words to the room the tree has at this depth (no side scrolling)
            depth = 0
            parent = node
            while parent.parent is not None:
                depth += 1
                parent = parent.parent
            room = (self.scrollable_content_region.width or WRAP_AT) - (depth + 1) * self.guide_depth - 2
            width = max(20, min(WRAP_AT * 2, room))
            for raw_line in value.split("\n"):
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
                for chunk in chunks:
                    node.add_leaf(Text(chunk, style=STRING_STYLE), JsonNode(chunk, populated=True))
        elif isinstance(value, dict):
            for k, v in value.items():
                self._add_json_child(node, k, v, [*data.path, k])
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._add_json_child(node, i, v, [*data.path, i])

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[JsonNode]) -> None:
        event.stop()
        self._populate(event.node)

    def expand_all_strings(self) -> None:
        """Open every folded string among the built nodes (the "expand" action)."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.data and node.data.folded_string:
                self._populate(node)
                node.expand()
            stack.extend(node.children)
