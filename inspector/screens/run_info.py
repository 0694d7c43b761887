"""The run-info screen (``i``): outcome, ground truth, planted fault, task, source,
import warnings, and all the metadata as a JSON tree.

Dismissed with ``None`` (escape, ``i``, ``q``) or with the seq to jump to (``m``: the
marked record — annotated mistake step or planted fault).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from core.analysis.timeline_text import one_line
from core.importers.opened import Opened
from core.record.jsonvalues import display_text
from core.record.recording import Recording

from ..plain import block, line
from ..runinfo import (
    group_warnings,
    marked_seqs,
    run_outcome,
    split_notices,
    warning_texts,
)
from ..widgets.json_tree import JsonTree

LABEL = "bold #4fb0b0"


def _row(t: Text, label: str, value: Any, style: str = "") -> None:
    """``label  value``: both may be recorded (metadata keys and values), so both are
    shown, never obeyed (:mod:`inspector.plain`)."""
    t.append(f"{line(label):<18} ", style=LABEL)
    t.append(block(value if isinstance(value, str) else display_text(value)), style=style)
    t.append("\n")


def run_info_text(recording: Recording, notices: list[str], opened: Opened | None = None) -> Text:
    """The sections of the run-info view as text (everything but the JSON tree); the
    import warnings are ``opened``'s when given (:func:`inspector.runinfo.warning_texts`)."""
    md = recording.metadata
    t = Text()
    outcome, source = run_outcome(recording)
    style = {"success": "bold #5faf5f", "failure": "bold #ff5f5f"}.get(outcome, "bold")
    t.append("Outcome\n", style="bold underline")
    _row(t, "outcome", outcome + ("" if source == "metadata" else "  (no metadata.outcome)"), style)
    if md.get("outcome_reason") not in (None, ""):
        _row(t, "outcome_reason", md["outcome_reason"])
    for k in ("exit_status", "status", "resolved", "success", "score", "is_correct", "reward"):
        if k in md and md[k] is not None:
            _row(t, k, md[k], "dim")
    for mark in marked_seqs(recording):
        _row(t, f"{mark.label} seq", f"{mark.seq}  (m: jump to it)", "bold #d7af00")
    ann = md.get("annotation")
    if isinstance(ann, dict):
        t.append("\nGround truth (annotation)\n", style="bold underline")
        for k, v in ann.items():
            _row(t, k, v)
    fault = md.get("fault")
    if isinstance(fault, dict):
        t.append("\nPlanted fault\n", style="bold underline")
        for k, v in fault.items():
            _row(t, k, v)
    task = md.get("task")
    expected = md.get("expected_actions")
    if task is not None or expected is not None:
        t.append("\nTask\n", style="bold underline")
        if isinstance(task, dict):
            for k, v in task.items():
                _row(t, k, one_line(v, 400))
        elif task is not None:
            _row(t, "task", one_line(task, 600))
        if isinstance(expected, list):
            for i, a in enumerate(expected):
                name = a.get("name") if isinstance(a, dict) else None
                args = a.get("kwargs", a.get("arguments")) if isinstance(a, dict) else a
                _row(t, f"expected [{i}]", (f"{name}(" + one_line(args, 300) + ")") if name else one_line(a, 300))
    src = md.get("source")
    notes = split_notices(notices)[0]
    all_warnings = warning_texts(recording, notices, opened)
    if isinstance(src, dict) or notes or all_warnings:
        t.append("\nSource\n", style="bold underline")
        if isinstance(src, dict):
            for k, v in src.items():
                if k != "warnings":
                    _row(t, k, one_line(v, 200))
        for n in notes:
            _row(t, "notice", n, "dim")
        if all_warnings:
            t.append(
                f"\n{len(all_warnings)} import warning{'s' if len(all_warnings) != 1 else ''}\n", style="bold #d7af00"
            )
            for text, count in group_warnings(all_warnings):
                t.append("  • ", style="#d7af00")
                t.append(block(text))
                if count > 1:
                    t.append(f"  (×{count})", style="bold")
                t.append("\n")
    return t


class RunInfoScreen(ModalScreen[int | None]):
    """The run information of the open recording (see the module docstring)."""

    BINDINGS = [
        Binding("escape,i,q", "close", "Close", id="runinfo.close"),
        Binding("m", "jump_mark", "Jump to marked step", id="runinfo.jump_mark"),
    ]

    DEFAULT_CSS = """
    RunInfoScreen { align: center middle; }
    RunInfoScreen > Vertical { width: 96%; max-width: 140; height: 94%; border: thick $primary; background: $surface; }
    RunInfoScreen #runinfo-scroll { height: auto; max-height: 60%; padding: 0 1; }
    RunInfoScreen #runinfo-tree-title { padding: 0 1; text-style: bold underline; margin-top: 1; }
    RunInfoScreen JsonTree { height: 1fr; overflow-x: hidden; }
    """

    def __init__(self, recording: Recording, notices: list[str], opened: Opened | None = None) -> None:
        super().__init__()
        self.recording = recording
        self.notices = notices
        self.opened = opened

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll(id="runinfo-scroll"):
                yield Static(run_info_text(self.recording, self.notices, self.opened), id="runinfo-text")
            yield Static(
                "All metadata (JSON tree: enter opens a node, z expands long strings)", id="runinfo-tree-title"
            )
            yield JsonTree(id="runinfo-tree")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = "Run info — escape to close" + (
            ", m: jump to the marked step" if marked_seqs(self.recording) else ""
        )
        self.query_one(JsonTree).show(self.recording.metadata, "metadata")
        self.query_one("#runinfo-scroll").focus()

    def key_z(self) -> None:
        self.query_one(JsonTree).expand_all_strings()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_jump_mark(self) -> None:
        marks = marked_seqs(self.recording)
        if not marks:
            self.notify("the metadata marks no step (no annotation, no planted fault)", timeout=3)
            return
        self.dismiss(marks[0].seq)
