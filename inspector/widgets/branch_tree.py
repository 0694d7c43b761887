"""The branch tree side panel of a timeline: the branches of the open run and their
replays, live.

:class:`BranchTreePanel` is docked at the right of a
:class:`~inspector.screens.timeline.TimelineScreen` (hidden until ``T``, binding
``workspace.tree``). It reads :meth:`core.workspace.Workspace.branch_tree` of the open
recording's digest in a thread worker (its own workspace connection; a missing workspace
is never created) and draws, one line each: the base → its branches (label or id,
checkpoint ``@SEQ``, interventions ``N iv``) → each branch's replays (status as a symbol
*and* a word, never colour alone: ``◌ queued``, ``● running 5/7``, ``‖ paused · 1 req``,
``✓ completed``, ``✗ failed``, ``⚠ interrupted``; then the outcome) and its child branches.
Below the tree, the selected line in full: for a running replay a progress bar (calls
answered of the base's calls) and the current call, from the app's
:class:`~inspector.replay_runner.ReplayRunner`.

:class:`BranchTreeView` is a Line API widget (only visible lines are rendered, rendered
lines are memoised), so a workspace of 1,000 branches and 10,000 replays draws as fast as
one of three. Progress of a running replay redraws its line only; a status change (a
replay stored, paused, ended; a branch saved) reads the tree again.

Keys in the tree: ↑/↓ (k/j), PgUp/PgDn, Home/End (the timeline's binding ids), ←/→
collapse/expand, enter (a replay: open its events as a timeline; a branch: fold). The
screen's ``workspace.*`` keys act on the selected line (launch ``R``, resume ``u``, cancel
``K``, requirements ``o``, answer ``A``). Branch labels, ids and outcomes are drawn as
plain text (:mod:`inspector.plain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import ProgressBar, Static

from core.errors import InspectorError
from core.workspace import BranchNode, BranchTree, NoWorkspace, ReplaySummary

from ..plain import line
from ..replay_runner import open_workspace, progress_bar

if TYPE_CHECKING:
    from ..loader import LoadedRecording
    from ..replay_runner import ReplayRunner, RunState

__all__ = ["BranchTreePanel", "BranchTreeView", "Row", "STATUS_MARKS", "TreeData", "flatten"]

#: replay status → (symbol, word); the symbol is never the only sign
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "queued": ("◌", "queued"),
    "running": ("●", "running"),
    "paused": ("‖", "paused"),
    "completed": ("✓", "completed"),
    "failed": ("✗", "failed"),
    "interrupted": ("⚠", "interrupted"),
}

RowKind = Literal["base", "branch", "replay", "note"]


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the tree: ``depth`` (indent level), ``kind``, ``ident`` (branch or
    replay id; the base's digest; a note's text), the ``node`` (a branch's, or the
    branch a replay belongs to), the ``replay`` summary (``None`` for a replay this app
    just started and the workspace does not list yet) and whether a branch has lines
    under it (``foldable``)."""

    depth: int
    kind: RowKind
    ident: str
    node: BranchNode | None = None
    replay: ReplaySummary | None = None
    foldable: bool = False


@dataclass(frozen=True)
class TreeData:
    """What the panel draws: the ``tree`` (``None`` with a ``note`` when there is no
    workspace yet, or with an ``error`` when it cannot be read), ``open_requirements``
    (replay id → the open requirements' ``(kind, name)``), and ``base_name`` (the open
    file's name)."""

    tree: BranchTree | None
    base_name: str
    open_requirements: dict[str, list[tuple[str, str]]]
    note: str | None = None
    error: str | None = None


def flatten(data: TreeData, collapsed: set[str], extra: Sequence[RunState] = ()) -> list[Row]:
    """The lines of ``data`` depth first: the base, then each root branch, its replays
    (oldest first) and its child branches, skipping what lies under a branch id in
    ``collapsed``. ``extra``: replays this app runs that the tree does not list yet,
    drawn under their branch."""
    rows: list[Row] = [Row(0, "base", data.tree.base_digest if data.tree else "")]
    tree = data.tree
    if tree is None:
        rows.append(Row(1, "note", data.error or data.note or ""))
        return rows
    if not tree.roots:
        rows.append(Row(1, "note", "no branches of this run yet (B on a record makes one)"))
    pending: dict[str, list[RunState]] = {}
    for state in extra:
        pending.setdefault(state.branch_id, []).append(state)
    listed = {r.id for _, n in tree.walk() for r in n.replays} if pending else set()
    stack: list[tuple[int, BranchNode]] = [(1, n) for n in reversed(tree.roots)]
    while stack:
        depth, node = stack.pop()
        mine = [s for s in pending.get(node.id, ()) if s.replay_id not in listed]
        rows.append(Row(depth, "branch", node.id, node, foldable=bool(node.replays or node.children or mine)))
        if node.id in collapsed:
            continue
        rows.extend(Row(depth + 1, "replay", r.id, node, r) for r in node.replays)
        rows.extend(Row(depth + 1, "replay", s.replay_id, node, None) for s in mine)
        stack.extend((depth + 1, c) for c in reversed(node.children))
    return rows


def _cut(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


class BranchTreeView(ScrollView, can_focus=True):
    """The tree's lines (see :func:`flatten`), a cursor, folding. Messages up:
    :class:`BranchTreeView.Highlighted` (cursor moved), :class:`BranchTreeView.Selected`
    (enter or a double click)."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="timeline.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="timeline.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="timeline.page_down"),
        Binding("home", "first", "First line", show=False, id="timeline.home"),
        Binding("end,G", "last", "Last line", show=False, id="timeline.end"),
        Binding(
            "enter",
            "select",
            "Open",
            show=False,
            id="timeline.select",
            tooltip="A replay: open its events; a branch: fold",
        ),
        Binding("left", "collapse", "Fold", show=False, id="workspace.fold", tooltip="Fold the branch (or go to it)"),
        Binding("right", "expand", "Unfold", show=False, id="workspace.unfold", tooltip="Unfold the branch"),
    ]

    COMPONENT_CLASSES = {
        "branch-tree--cursor",
        "branch-tree--cursor-blurred",
        "branch-tree--dim",
        "branch-tree--base",
        "branch-tree--branch",
        "branch-tree--note",
        "branch-tree--error",
        "branch-tree--status-queued",
        "branch-tree--status-running",
        "branch-tree--status-paused",
        "branch-tree--status-completed",
        "branch-tree--status-failed",
        "branch-tree--status-interrupted",
    }

    DEFAULT_CSS = """
    BranchTreeView { background: $surface; overflow-x: hidden; scrollbar-gutter: stable; height: 1fr; }
    BranchTreeView > .branch-tree--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    BranchTreeView > .branch-tree--cursor-blurred { background: $block-cursor-blurred-background; }
    BranchTreeView > .branch-tree--dim { color: $text-muted; }
    BranchTreeView > .branch-tree--base { text-style: bold; }
    BranchTreeView > .branch-tree--branch { color: $text; text-style: bold; }
    BranchTreeView > .branch-tree--note { color: $text-muted; text-style: italic; }
    BranchTreeView > .branch-tree--error { color: #ff5f5f; }
    BranchTreeView > .branch-tree--status-queued { color: $text-muted; }
    BranchTreeView > .branch-tree--status-running { color: #4fb0b0; text-style: bold; }
    BranchTreeView > .branch-tree--status-paused { color: #d7af00; text-style: bold; }
    BranchTreeView > .branch-tree--status-completed { color: #5faf5f; }
    BranchTreeView > .branch-tree--status-failed { color: #ff5f5f; text-style: bold; }
    BranchTreeView > .branch-tree--status-interrupted { color: #c060c0; text-style: bold; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class Highlighted(Message):
        """The cursor is on ``row`` (``None``: no lines)."""

        def __init__(self, view: BranchTreeView, row: Row | None) -> None:
            super().__init__()
            self.view = view
            self.row = row

        @property
        def control(self) -> BranchTreeView:
            return self.view

    class Selected(Message):
        """Enter (or a double click) on ``row``."""

        def __init__(self, view: BranchTreeView, row: Row) -> None:
            super().__init__()
            self.view = view
            self.row = row

        @property
        def control(self) -> BranchTreeView:
            return self.view

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: TreeData | None = None
        self.rows: list[Row] = []
        self.collapsed: set[str] = set()
        self.runner: ReplayRunner | None = None
        #: replay id → a counter bumped when its live progress changes (cache key)
        self._versions: dict[str, int] = {}
        self._line_cache: LRUCache[tuple[object, ...], Strip] = LRUCache(512)
        self._style_cache: dict[str, Style] = {}

    # ------------------------------------------------------------------ data

    def _extra(self) -> list[RunState]:
        return self.runner.active() if self.runner is not None else []

    def set_data(self, data: TreeData) -> None:
        """Draw ``data``; the cursor stays on the line it was on (by id) when it is
        still there."""
        here = self.current
        self.data = data
        self._relayout(keep=(here.kind, here.ident) if here is not None else None)

    def _relayout(self, keep: tuple[str, str] | None = None) -> None:
        if self.data is None:
            return
        self.rows = flatten(self.data, self.collapsed, self._extra())
        self._line_cache.clear()
        self.virtual_size = Size(self.size.width or 40, len(self.rows))
        row = 0
        if keep is not None:
            row = next(
                (i for i, r in enumerate(self.rows) if (r.kind, r.ident) == keep), min(self.cursor, len(self.rows) - 1)
            )
        self.cursor = max(0, row)
        self.refresh()

    def live_changed(self, replay_id: str) -> bool:
        """A replay's live progress changed: redraw its line; ``False`` when the tree
        does not show it (the caller reads the tree again)."""
        for i, r in enumerate(self.rows):
            if r.kind == "replay" and r.ident == replay_id:
                self._versions[replay_id] = self._versions.get(replay_id, 0) + 1
                self.refresh_line(i)
                if i == self.cursor:
                    self.post_message(self.Highlighted(self, r))
                return True
        runs = self.runner.runs if self.runner is not None else {}
        state = runs.get(replay_id)
        if state is not None and self.data is not None and self.data.tree is not None:
            # a replay just started: its line goes under its branch if the tree shows it
            if any(r.kind == "branch" and r.ident == state.branch_id for r in self.rows):
                here = self.current
                self._relayout(keep=(here.kind, here.ident) if here else None)
                return True
        return False

    @property
    def current(self) -> Row | None:
        """The line under the cursor."""
        if not self.rows:
            return None
        return self.rows[min(self.cursor, len(self.rows) - 1)]

    def go_to(self, kind: RowKind, ident: str) -> bool:
        """Put the cursor on the line of ``kind`` ``ident`` (unfolding its branch)."""
        for i, r in enumerate(self.rows):
            if r.kind == kind and r.ident == ident:
                self.cursor = i
                return True
        return False

    # ------------------------------------------------------------------ geometry

    def on_resize(self, event: events.Resize) -> None:
        self._line_cache.clear()
        self.virtual_size = Size(self.size.width or 40, len(self.rows))
        self._scroll_cursor_into_view()

    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + self._page:
            self.scroll_to(y=self.cursor - self._page + 1, animate=False, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        n = len(self.rows)
        if n and not 0 <= new < n:
            self.cursor = max(0, min(new, n - 1))
            return
        self._scroll_cursor_into_view()
        for row in (old, new):
            self.refresh_line(row)
        self.post_message(self.Highlighted(self, self.current))

    def on_focus(self) -> None:
        self._line_cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._line_cache.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._line_cache.clear()
        self._style_cache.clear()

    def _style(self, name: str) -> Style:
        """A component style, memoised until the styles change; a line's pieces are
        partial (no background: the cursor's shows through), the cursor's is whole."""
        style = self._style_cache.get(name)
        if style is None:
            if not name:
                style = self.rich_style
            else:
                style = self.get_component_rich_style(name, partial="cursor" not in name)
            self._style_cache[name] = style
        return style

    # ------------------------------------------------------------------ actions

    def action_cursor_up(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.cursor = min(max(0, len(self.rows) - 1), self.cursor + 1)

    def action_page_up(self) -> None:
        self.cursor = max(0, self.cursor - self._page)

    def action_page_down(self) -> None:
        self.cursor = min(max(0, len(self.rows) - 1), self.cursor + self._page)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = max(0, len(self.rows) - 1)

    def action_select(self) -> None:
        row = self.current
        if row is None:
            return
        if row.kind == "branch" and row.foldable:
            self._fold(row, row.ident not in self.collapsed)
        self.post_message(self.Selected(self, row))

    def _fold(self, row: Row, fold: bool) -> None:
        if fold:
            self.collapsed.add(row.ident)
        else:
            self.collapsed.discard(row.ident)
        self._relayout(keep=(row.kind, row.ident))

    def action_collapse(self) -> None:
        row = self.current
        if row is None:
            return
        if row.kind == "branch" and row.foldable and row.ident not in self.collapsed:
            self._fold(row, True)
        elif row.node is not None and row.kind == "replay":
            self.go_to("branch", row.node.id)
        elif row.kind == "branch" and row.node is not None and row.node.parent:
            self.go_to("branch", row.node.parent)

    def action_expand(self) -> None:
        row = self.current
        if row is not None and row.kind == "branch" and row.ident in self.collapsed:
            self._fold(row, False)

    def on_click(self, event: events.Click) -> None:
        row = round(self.scroll_y) + event.y
        if 0 <= row < len(self.rows):
            self.cursor = row
            if event.chain >= 2:
                self.action_select()

    # ------------------------------------------------------------------ rendering

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        i = round(self.scroll_y) + y
        if i >= len(self.rows):
            return Strip.blank(width, self._style(""))
        row = self.rows[i]
        is_cursor = i == self.cursor
        key = (
            row.kind,
            row.ident,
            self._versions.get(row.ident, 0),
            row.ident in self.collapsed,
            width,
            is_cursor,
            self.has_focus,
        )
        strip = self._line_cache.get(key)
        if strip is None:
            strip = self._row_strip(row, width, is_cursor)
            self._line_cache[key] = strip
        return strip

    def _row_strip(self, row: Row, width: int, is_cursor: bool) -> Strip:
        base = self._style("")
        if is_cursor:
            base = base + self._style("branch-tree--cursor" if self.has_focus else "branch-tree--cursor-blurred")
        segs: list[Segment] = [Segment("  " * row.depth, base)]
        used = 2 * row.depth
        room = max(0, width - used)
        for text, style in self._parts(row):
            if room <= 0:
                break
            cut = _cut(text, room)
            segs.append(Segment(cut, base + style))
            room -= len(cut)
        return Strip(segs).adjust_cell_length(width, base).crop(0, width)

    def _parts(self, row: Row) -> list[tuple[str, Style]]:
        """The styled pieces of a line (recorded and user text through :func:`line`)."""
        dim = self._style("branch-tree--dim")
        data = self.data
        if row.kind == "base":
            tree = data.tree if data is not None else None
            name = line(data.base_name) if data is not None else ""
            count = len(tree) if tree is not None else 0
            parts = [("◆ ", self._style("branch-tree--base")), (name, self._style("branch-tree--base"))]
            if tree is not None:
                parts.append((f"  {count} branch{'es' if count != 1 else ''}", dim))
            return parts
        if row.kind == "note":
            error = data is not None and data.error is not None
            return [(line(row.ident), self._style("branch-tree--error" if error else "branch-tree--note"))]
        if row.kind == "branch":
            node = row.node
            assert node is not None
            marker = ("▸ " if row.ident in self.collapsed else "▾ ") if row.foldable else "· "
            parts = [(marker, dim), (line(node.label or node.id), self._style("branch-tree--branch"))]
            n = node.interventions
            parts.append((f"  @{node.checkpoint} · {n} iv", dim))
            return parts
        return self._replay_parts(row)

    def _replay_parts(self, row: Row) -> list[tuple[str, Style]]:
        dim = self._style("branch-tree--dim")
        state = self.runner.runs.get(row.ident) if self.runner is not None else None
        summary = row.replay
        if state is not None and state.active:
            status = state.status
            symbol, word = STATUS_MARKS[status]
            style = self._style(f"branch-tree--status-{status}")
            parts = [(f"{symbol} ", style), (row.ident, Style()), (f" {word}", style)]
            p = state.progress
            if p is not None and status == "running":
                parts.append(
                    (f" {progress_bar(p.calls_answered, p.base_calls, 8)} {p.calls_answered}/{p.base_calls}", style)
                )
            if state.cancel.is_set():
                parts.append((" cancelling", dim))
            return parts
        status = summary.status if summary is not None else (state.status if state is not None else "queued")
        symbol, word = STATUS_MARKS.get(status, ("?", status))
        style = self._style(f"branch-tree--status-{status}") if status in STATUS_MARKS else dim
        parts = [(f"{symbol} ", style), (row.ident, Style()), (f" {word}", style)]
        if status in ("running", "queued") and summary is not None:
            parts.append((" (another process)", dim))
        if status == "paused" and self.data is not None:
            n = len(self.data.open_requirements.get(row.ident, ()))
            if n:
                parts.append((f" · {n} req", style))
        if summary is not None and status == "completed" and summary.comparability == "none":
            parts.append((" · not comparable", self._style("branch-tree--status-failed")))
        if summary is not None and summary.outcome:
            parts.append((f" · {line(summary.outcome)}", dim))
        return parts


class BranchTreePanel(Vertical):
    """The side panel: a title, the :class:`BranchTreeView`, the selected line in full
    (with a progress bar for a running replay) and the keys that act on it.

    ``loaded``: the recording of the timeline it belongs to (its digest names the base).
    Shown and hidden with :meth:`toggle`; reads the workspace when shown and when told of
    a change (:meth:`workspace_changed`, via the app's replay runner)."""

    DEFAULT_CSS = """
    BranchTreePanel { dock: right; width: 34%; min-width: 42; max-width: 64; height: 1fr; margin-bottom: 1;
        border-left: vkey $panel-lighten-2; display: none; background: $surface; }
    BranchTreePanel.-shown { display: block; }
    BranchTreePanel > #branch-tree-title { height: 1; background: $panel; text-style: bold; padding: 0 1; }
    BranchTreePanel > #branch-tree-detail { height: 6; padding: 0 1; border-top: hkey $panel-lighten-2; }
    BranchTreePanel > ProgressBar { height: 1; padding: 0 1; display: none; }
    BranchTreePanel > ProgressBar.-running { display: block; }
    BranchTreePanel > #branch-tree-keys { height: 2; color: $text-muted; padding: 0 1; }
    """

    class Loaded(Message):
        """A read of the workspace ended (``generation`` says which)."""

        def __init__(self, generation: int, data: TreeData) -> None:
            super().__init__()
            self.generation = generation
            self.data = data

    def __init__(self, loaded: LoadedRecording, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.loaded = loaded
        self._generation = 0
        self._loading = False
        self._forks_stored = False
        self._dirty = False
        #: whether the tree drawn is the workspace's current one
        self.fresh = False

    def compose(self) -> ComposeResult:
        yield Static(Text("Branches"), id="branch-tree-title")
        yield BranchTreeView(id="branch-tree-view")
        yield Static(Text(""), id="branch-tree-detail")
        yield ProgressBar(total=1, show_eta=False, id="branch-tree-progress")
        yield Static(Text(""), id="branch-tree-keys")

    @property
    def runner(self) -> ReplayRunner:
        runner: ReplayRunner = self.app.replay_runner  # type: ignore[attr-defined]
        return runner

    @property
    def view(self) -> BranchTreeView:
        return self.query_one(BranchTreeView)

    def on_mount(self) -> None:
        self.view.runner = self.runner
        self.runner.listen(self)
        self.query_one("#branch-tree-title", Static).update(
            Text(f"Branches · workspace {line(self.app.workspace_path)}")  # type: ignore[attr-defined]
        )

    def on_unmount(self) -> None:
        self.runner.unlisten(self)

    # ------------------------------------------------------------------ showing

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def show(self, focus: bool = True) -> None:
        """Show the panel (reading the workspace when what it drew may be stale)."""
        self.add_class("-shown")
        if not self.fresh:
            self.reload()
        if focus:
            self.view.focus()

    def hide(self) -> None:
        """Hide the panel (the timeline takes the focus back)."""
        had_focus = self.view.has_focus
        self.remove_class("-shown")
        if had_focus:
            from .timeline_table import TimelineTable

            tables = self.screen.query(TimelineTable)
            if tables:
                tables.first().focus()

    def toggle(self) -> None:
        """Show the panel, focus it, or hide it (when it has the focus already)."""
        if not self.shown:
            self.show()
        elif not self.view.has_focus:
            self.view.focus()
        else:
            self.hide()

    @property
    def selected(self) -> Row | None:
        """The selected line, when the panel is shown."""
        return self.view.current if self.shown else None

    # ------------------------------------------------------------------ the screen's keys

    def _need_selection(self, what: str) -> None:
        if not self.shown:
            self.show()
        self.app.notify(f"select {what} in the branch tree first (↑/↓), then press the key again", timeout=4)

    def _branch_replays(self, row: Row) -> list[ReplaySummary]:
        return list(row.node.replays) if row.node is not None else []

    def launch_selected(self) -> None:
        """``R``: replay the selected branch (or the branch of the selected replay)."""
        row = self.selected
        if row is None or row.kind not in ("branch", "replay") or row.node is None:
            self._need_selection("a branch")
            return
        self.runner.request_launch(row.node.id)

    def _target_replay(self, *, resumable: bool) -> str | None:
        """The replay a key acts on: the selected one; for a selected branch, its newest
        paused (or, ``resumable``, failed / interrupted) replay; else the replay that
        paused last."""
        row = self.selected
        if row is not None and row.kind == "replay":
            return row.ident
        if row is not None and row.kind == "branch":
            wanted = ("paused", "failed", "interrupted") if resumable else ("paused",)
            for r in reversed(self._branch_replays(row)):
                if r.status in wanted:
                    return r.id
            return None
        last = self.runner.last_paused
        state = self.runner.runs.get(last) if last else None
        return last if state is not None and state.status == "paused" else None

    def resume_selected(self) -> None:
        """``u``: resume the selected (or last paused) replay once it is answered."""
        target = self._target_replay(resumable=True)
        if target is None:
            self._need_selection("a paused, failed or interrupted replay")
            return
        self.runner.resume_when_answered(target)

    def cancel_selected(self) -> None:
        """``K``: cancel the selected replay, when this app runs it."""
        row = self.selected
        running = self.runner.active()
        target = row.ident if row is not None and row.kind == "replay" else None
        if target is None and len(running) == 1:
            target = running[0].replay_id
        if target is None:
            self._need_selection("a running replay")
            return
        if self.runner.cancel(target):
            self.app.notify(f"cancelling replay {target}: it stops between two calls", timeout=4)
        else:
            self.app.notify(f"replay {target} is not running in this app", severity="warning", timeout=3)

    def compare_selected(self) -> None:
        """``C``: the selected replay's events beside the base (the compare screen)."""
        row = self.selected
        if row is None or row.kind != "replay":
            self._need_selection("a replay")
            return
        state = self.runner.runs.get(row.ident)
        if state is not None and state.active:
            self.app.notify(f"replay {row.ident} is running: compare it once it ends", timeout=3)
            return
        screen = self.screen
        loaded = getattr(screen, "loaded", None)
        if loaded is None:
            return
        if self.app.needs_whole_recording("compare", self.compare_selected):  # type: ignore[attr-defined]
            return  # a fast-opened run: its records are not all read yet
        self.runner.open_events(row.ident, compare_with=loaded)

    def open_requirements(self, *, answer: bool = False) -> None:
        """``o`` (``A``: and answer the first): the requirements of the selected (or last
        paused) replay, else of the whole workspace."""
        from ..screens.requirements import RequirementsScreen

        target = self._target_replay(resumable=False)
        self.app.push_screen(RequirementsScreen(target, answer_first=answer))

    def open_fixtures(self) -> None:
        """``F``: the fixtures list."""
        from ..screens.requirements import FixturesScreen

        self.app.push_screen(FixturesScreen())

    # ------------------------------------------------------------------ reading

    def reload(self) -> None:
        """Read the tree again, in a worker (one at a time: a change while a read runs
        reads once more after it)."""
        if self._loading:
            self._dirty = True
            return
        self._loading = True
        self._dirty = False
        self._generation += 1
        self.app.run_worker(
            partial(self._read, self._generation),
            name="branch-tree",
            group=f"branch-tree-{id(self)}",
            description="reading the branch tree from the workspace",
            thread=True,
            exit_on_error=False,
        )

    def _store_recorded_forks(self, path) -> None:
        """The recorded alternative paths of the run shown (a Claude Code ``/rewind``),
        stored once in the workspace as branches with their replays
        (:func:`core.recorded_forks.store_recorded_forks`), so the tree shows them."""
        opened = self.loaded.opened
        if opened is None or self._forks_stored:
            return
        runs = [r for r in opened.imported if r.run_id == opened.run_id and r.forks]
        if not runs:
            return
        from core.recorded_forks import store_recorded_forks

        with open_workspace(path, create=True) as ws:
            store_recorded_forks(ws, list(opened.imported), str(self.loaded.path))
        self._forks_stored = True

    def _read(self, generation: int) -> None:
        """Worker: the tree of this recording's digest (its own workspace connection)."""
        name = self.loaded.path.name
        path = self.app.workspace_path  # type: ignore[attr-defined]
        try:
            digest = self.runner.digest_of(self.loaded)
            if digest is None:
                data = TreeData(
                    None, name, {}, note="the recording is still being verified: its digest is not known yet"
                )
            else:
                self._store_recorded_forks(path)
                with open_workspace(path) as ws:
                    tree = ws.branch_tree(digest)
                    reqs: dict[str, list[tuple[str, str]]] = {}
                    for r in ws.requirements(open_only=True):
                        reqs.setdefault(r.replay_id, []).append((r.kind, r.name))
                data = TreeData(tree, name, reqs)
        except NoWorkspace:
            data = TreeData(None, name, {}, note=f"no workspace at {path} yet: branches you save are stored there")
        except InspectorError as exc:
            data = TreeData(None, name, {}, error=f"cannot read the workspace: {exc}")
        self.post_message(self.Loaded(generation, data))

    @on(Loaded)
    def _loaded(self, event: Loaded) -> None:
        event.stop()
        self._loading = False
        if event.generation == self._generation:
            self.view.set_data(event.data)
            self.fresh = not self._dirty
            self._show_detail(self.view.current)
        if self._dirty:
            self.reload()

    def workspace_changed(self, what: str, ident: str | None) -> None:
        """Something changed in the workspace (see :class:`~inspector.messages.WorkspaceChanged`):
        progress of a replay this app runs redraws its line; anything else reads the tree
        again (now when shown, else when next shown)."""
        if what == "replay" and ident is not None:
            state = self.runner.runs.get(ident)
            if state is not None and state.active:
                if self.shown and self.view.live_changed(ident):
                    return
                if not self.shown:
                    self.fresh = False
                    return
        if what == "fixture":
            return  # the tree does not show fixtures
        self.fresh = False
        if self.shown:
            self.reload()

    def background_failed(self) -> None:
        """A read that raised unexpectedly (the app's error screen names it)."""
        self._loading = False

    # ------------------------------------------------------------------ the selected line

    @on(BranchTreeView.Highlighted)
    def _highlighted(self, event: BranchTreeView.Highlighted) -> None:
        event.stop()
        self._show_detail(event.row)

    @on(BranchTreeView.Selected)
    def _selected(self, event: BranchTreeView.Selected) -> None:
        event.stop()
        if event.row.kind == "replay":
            state = self.runner.runs.get(event.row.ident)
            if state is not None and state.active:
                self.app.notify(f"replay {event.row.ident} is running: its events open once it ends", timeout=3)
                return
            self.runner.open_events(event.row.ident)

    def _show_detail(self, row: Row | None) -> None:
        detail = self.query_one("#branch-tree-detail", Static)
        keys = self.query_one("#branch-tree-keys", Static)
        bar = self.query_one(ProgressBar)
        bar.remove_class("-running")
        text = Text()
        hint = "T: close"
        if row is None or self.view.data is None:
            detail.update(text)
            keys.update(Text(hint))
            return
        if row.kind == "base":
            tree = self.view.data.tree
            text.append(line(self.view.data.base_name), style="bold")
            if tree is not None:
                text.append(f"\n{tree.base_digest[:23]}…", style="dim")
            hint = "B on a record: new branch · o: every open requirement · F: fixtures · T: close"
        elif row.kind == "note":
            text.append(line(row.ident))
        elif row.kind == "branch" and row.node is not None:
            node = row.node
            text.append(line(node.id), style="bold")
            if node.label:
                text.append("  ")
                text.append(line(node.label))
            n = node.interventions
            text.append(f"\ncheckpoint seq {node.checkpoint} · {n} intervention{'s' if n != 1 else ''}")
            if node.parent:
                text.append(f" · parent {line(node.parent)}")
            counts: dict[str, int] = {}
            for r in node.replays:
                counts[r.status] = counts.get(r.status, 0) + 1
            text.append(
                f"\n{len(node.replays)} replay{'s' if len(node.replays) != 1 else ''}"
                + (": " + ", ".join(f"{v} {k}" for k, v in counts.items()) if counts else "")
            )
            hint = "R: replay it · enter: fold · o: its requirements · T: close"
        elif row.kind == "replay":
            self._replay_detail(row, text, bar)
            hint = "enter: open its events · R: replay the branch again · u: resume · o: requirements · T: close"
            state = self.runner.runs.get(row.ident)
            if state is not None and state.active:
                hint = "K: cancel (stops between two calls) · T: close"
        detail.update(text)
        keys.update(Text(hint))

    def _replay_detail(self, row: Row, text: Text, bar: ProgressBar) -> None:
        state = self.runner.runs.get(row.ident)
        summary = row.replay
        text.append(row.ident, style="bold")
        if state is not None and state.active:
            text.append("  " + state.describe())
            p = state.progress
            if p is not None:
                bar.update(total=max(1, p.base_calls, p.calls_answered), progress=p.calls_answered)
                bar.add_class("-running")
                text.append(
                    f"\n{p.calls_answered} call(s) answered of the base's {p.base_calls} · {p.steps} model step(s)"
                )
            return
        if summary is None:
            text.append("  " + (state.describe() if state is not None else "starting…"))
            if state is not None and state.error:
                text.append("\n")
                text.append(line(state.error), style="#ff5f5f")
            return
        text.append("  ")
        text.append(line(summary.status_line))
        reqs = self.view.data.open_requirements.get(row.ident, []) if self.view.data is not None else []
        if summary.status == "paused" and reqs:
            kind, name = reqs[0]
            what = "a person's turn" if kind == "user" else f"{kind} {line(name)}"
            text.append(f"\npaused on {len(reqs)} requirement{'s' if len(reqs) != 1 else ''}: {what}")
        text.append(
            f"\ncomparability {summary.comparability} · {summary.steps} step{'s' if summary.steps != 1 else ''}"
        )
        if summary.stop_reason:
            text.append(f" · stop {line(summary.stop_reason)}")
        if summary.outcome:
            text.append(f"\noutcome {line(summary.outcome)}")
            if summary.outcome_reason:
                text.append(f": {line(summary.outcome_reason)}", style="dim")
        if state is not None and state.error:
            text.append("\n")
            text.append(line(state.error), style="#ff5f5f")
