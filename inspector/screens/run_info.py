"""The run-info screen (``i``): outcome, score and the error that ended the run, which
run of its file, ground truth, planted fault, task, source, import warnings; and all the
metadata as a JSON tree.

One scrolling region fills the dialog (so one scrollbar at most): the summary — the
sections, every value wrapped under its value column, nothing cut but the task and
source fields (the tree has them whole) — then the metadata as a JSON tree, as tall as
its open nodes (``s`` goes to the top, ``a`` to the tree). The dialog has its own footer
with its keys, below it (the timeline's footer is not shown under it).

Dismissed with ``None`` (escape, ``i``, ``q``) or with the seq to jump to (``m``: the
marked record — annotated mistake step or planted fault).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.events import Resize
from textual.geometry import Region
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, Tree

from core.analysis.timeline_text import one_line
from core.importers.opened import Opened
from core.record.jsonvalues import display_text
from core.record.recording import Recording

from ..plain import block, line
from ..runinfo import (
    group_warnings,
    marked_seqs,
    run_error,
    run_outcome,
    run_score,
    split_notices,
    warning_texts,
)
from ..widgets.json_tree import JsonTree

LABEL = "bold #4fb0b0"
#: cells of the label column (the value column starts one cell after it)
LABEL_WIDTH = 18
#: cells a warning's continuation lines are indented by (under the text after "  • ")
BULLET_INDENT = 4

_MEASURE = Console(width=400, color_system=None, legacy_windows=False, force_terminal=False)


def _hang(t: Text, value: Text, indent: int, width: int | None) -> None:
    """Append ``value`` to ``t`` wrapped at ``width`` cells, its continuation lines
    indented by ``indent`` cells (a hanging indent; no wrapping when ``width`` is
    ``None``), then a newline."""
    room = None if width is None else width - indent
    if room is None or room < 12:
        t.append_text(value)
        t.append("\n")
        return
    lines = value.wrap(_MEASURE, room, overflow="fold")
    for i, piece in enumerate(lines):
        if i:
            t.append(" " * indent)
        piece.rstrip()
        t.append_text(piece)
        t.append("\n")
    if not lines:
        t.append("\n")


def _row(t: Text, label: str, value: Any, style: str = "", width: int | None = None) -> None:
    """``label  value``: both may be recorded (metadata keys and values), so both are
    shown, never obeyed (:mod:`inspector.plain`). With ``width`` the value wraps under
    its own column."""
    shown_label = line(label)
    if width is not None and cell_len(shown_label) > LABEL_WIDTH:
        # a long label on a line of its own: the value keeps its column
        t.append(shown_label, style=LABEL)
        t.append("\n" + " " * (LABEL_WIDTH + 1))
    else:
        t.append(f"{shown_label:<{LABEL_WIDTH}} ", style=LABEL)
    text = Text(block(value if isinstance(value, str) else display_text(value)), style=style)
    _hang(t, text, LABEL_WIDTH + 1, width)


def run_info_text(
    recording: Recording, notices: list[str], opened: Opened | None = None, width: int | None = None
) -> Text:
    """The sections of the run-info view as text (everything but the JSON tree); the
    import warnings are ``opened``'s when given (:func:`inspector.runinfo.warning_texts`).
    ``width`` (cells) wraps every value under its column and every warning under its
    text; ``None`` leaves the wrapping to the widget."""
    md = recording.metadata
    t = Text()
    outcome, source = run_outcome(recording)
    style = {"success": "bold #5faf5f", "failure": "bold #ff5f5f"}.get(outcome, "bold")
    t.append("Outcome\n", style="bold underline")
    _row(t, "outcome", outcome + ("" if source == "metadata" else "  (no metadata.outcome)"), style, width)
    if md.get("outcome_reason") not in (None, ""):
        _row(t, "outcome_reason", md["outcome_reason"], width=width)
    for k in ("exit_status", "status", "resolved", "success", "score", "is_correct", "reward"):
        if k in md and md[k] is not None:
            _row(t, k, md[k], "dim", width)
    if isinstance(md.get("scores"), dict) and (score := run_score(recording)) is not None:
        _row(t, "scores", score, "bold", width)
    if (error := run_error(recording)) is not None:
        # the whole message, wrapped (the tree has the traceback)
        _row(t, "error", error, "bold #ff5f5f", width)
    for mark in marked_seqs(recording):
        _row(t, f"{mark.label} seq", f"{mark.seq}  (m: jump to it)", "bold #d7af00", width)
    shown = opened.run if opened is not None else None
    if opened is not None and shown is not None and len(opened.runs) > 1:
        t.append("\nRun\n", style="bold underline")
        _row(t, "run", shown.id, "bold", width)
        where = f"{shown.index} of 0..{len(opened.runs) - 1} in run order (--run {shown.index}; p: pick another)"
        if shown.file_index >= 0:
            where += f"; {shown.file_index} in the file"
        _row(t, "index", where, "", width)
        if shown.sample_id is not None:
            _row(t, "sample", shown.sample_id, "", width)
        if shown.epoch is not None:
            _row(t, "epoch", shown.epoch, "", width)
    ann = md.get("annotation")
    if isinstance(ann, dict):
        t.append("\nGround truth (annotation)\n", style="bold underline")
        for k, v in ann.items():
            _row(t, k, v, width=width)
    fault = md.get("fault")
    if isinstance(fault, dict):
        t.append("\nPlanted fault\n", style="bold underline")
        for k, v in fault.items():
            _row(t, k, v, width=width)
    task = md.get("task")
    expected = md.get("expected_actions")
    if task is not None or expected is not None:
        t.append("\nTask\n", style="bold underline")
        if isinstance(task, dict):
            for k, v in task.items():
                _row(t, k, one_line(v, 400), width=width)
        elif task is not None:
            _row(t, "task", one_line(task, 600), width=width)
        if isinstance(expected, list):
            for i, a in enumerate(expected):
                name = a.get("name") if isinstance(a, dict) else None
                args = a.get("kwargs", a.get("arguments")) if isinstance(a, dict) else a
                _row(
                    t,
                    f"expected [{i}]",
                    (f"{name}(" + one_line(args, 300) + ")") if name else one_line(a, 300),
                    width=width,
                )
    src = md.get("source")
    notes = split_notices(notices)[0]
    all_warnings = warning_texts(recording, notices, opened)
    if isinstance(src, dict) or notes or all_warnings:
        t.append("\nSource\n", style="bold underline")
        if isinstance(src, dict):
            for k, v in src.items():
                if k != "warnings":
                    _row(t, k, one_line(v, 200), width=width)
        for n in notes:
            _row(t, "notice", n, "dim", width)
        if all_warnings:
            t.append(
                f"\n{len(all_warnings)} import warning{'s' if len(all_warnings) != 1 else ''}\n", style="bold #d7af00"
            )
            for text, count in group_warnings(all_warnings):
                t.append("  • ", style="#d7af00")
                item = Text(block(text))
                if count > 1:
                    item.append(f"  (×{count})", style="bold")
                _hang(t, item, BULLET_INDENT, width)
    t.rstrip()
    return t


class RunInfoText(Static):
    """:func:`run_info_text`, wrapped to the widget's width (re-wrapped on resize)."""

    def __init__(self, recording: Recording, notices: list[str], opened: Opened | None, **kwargs: Any) -> None:
        super().__init__(run_info_text(recording, notices, opened), **kwargs)
        self.recording = recording
        self.notices = notices
        self.opened = opened
        self._width: int | None = None

    def on_resize(self, event: Resize) -> None:
        width = self.content_size.width
        if width and width != self._width:
            self._width = width
            self.update(run_info_text(self.recording, self.notices, self.opened, width=width))


class RunInfoScreen(ModalScreen[int | None]):
    """The run information of the open recording (see the module docstring)."""

    BINDINGS = [
        Binding("escape,i,q", "close", "Close", id="runinfo.close"),
        Binding("s", "summary", "Summary", id="runinfo.summary", tooltip="Back to the top: the summary"),
        Binding("a", "metadata", "All metadata", id="runinfo.metadata", tooltip="The metadata as a JSON tree"),
        Binding("m", "jump_mark", "Jump to marked step", id="runinfo.jump_mark"),
        Binding("z", "expand", "Expand strings", show=False, id="runinfo.expand"),
    ]

    DEFAULT_CSS = """
    RunInfoScreen { align: center middle; }
    RunInfoScreen > #runinfo { width: 96%; max-width: 140; height: 1fr; margin: 1 0; border: thick $primary;
                               background: $surface; padding: 0 0 0 1; }
    RunInfoScreen #runinfo-text { padding-right: 1; }
    RunInfoScreen #runinfo-tree-title { text-style: bold underline; margin-top: 1; }
    RunInfoScreen JsonTree { height: auto; overflow: hidden hidden; padding-right: 1; }
    """

    def __init__(self, recording: Recording, notices: list[str], opened: Opened | None = None) -> None:
        super().__init__()
        self.recording = recording
        self.notices = notices
        self.opened = opened

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="runinfo"):
            yield RunInfoText(self.recording, self.notices, self.opened, id="runinfo-text")
            yield Static(
                "All metadata (JSON tree: enter opens a node, z expands long strings)", id="runinfo-tree-title"
            )
            yield JsonTree(id="runinfo-tree")
        yield Footer()

    @property
    def scroller(self) -> VerticalScroll:
        return self.query_one("#runinfo", VerticalScroll)

    def on_mount(self) -> None:
        self.scroller.border_title = "Run info — escape to close" + (
            ", m: jump to the marked step" if marked_seqs(self.recording) else ""
        )
        self.query_one(JsonTree).show(self.recording.metadata, "metadata")
        self.scroller.focus()
        # the notice that sent the user here ("press i for run info") would cover the dialog
        self.app.clear_notifications()

    @on(Tree.NodeHighlighted, "#runinfo-tree")
    def _follow_cursor(self, event: Tree.NodeHighlighted[Any]) -> None:
        """The tree does not scroll itself (it is as tall as its lines): keep its cursor
        in view by scrolling the dialog."""
        tree = self.query_one(JsonTree)
        line = tree.cursor_line
        if line >= 0 and tree.has_focus:
            y = tree.virtual_region.y + line
            self.scroller.scroll_to_region(Region(0, y, 1, 1), animate=False, origin_visible=False)

    def action_summary(self) -> None:
        """Scroll back to the top (the summary) and focus the dialog."""
        self.scroller.scroll_home(animate=False)
        self.scroller.focus()

    def action_metadata(self) -> None:
        """Scroll to the metadata tree and focus it (arrows move in it, enter opens a node)."""
        title = self.query_one("#runinfo-tree-title")
        self.scroller.scroll_to_widget(title, animate=False, top=True)
        self.query_one(JsonTree).focus()

    def action_expand(self) -> None:
        """Expand every folded string of the metadata tree."""
        self.query_one(JsonTree).expand_all_strings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``m`` only when the metadata marks a step (else hidden from the footer)."""
        if action == "jump_mark":
            return bool(marked_seqs(self.recording))
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_jump_mark(self) -> None:
        marks = marked_seqs(self.recording)
        if not marks:
            self.notify("the metadata marks no step (no annotation, no planted fault)", timeout=3)
            return
        self.dismiss(marks[0].seq)
