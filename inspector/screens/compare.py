"""The compare screen: a base and another run (a replay's events, or any recording) in two
columns aligned by the trace diff (:class:`~inspector.widgets.compare_table.CompareTable`),
a header with the metric deltas, and a diff pane for the selected row — the payload diff
of its two records, JSON Pointer paths (:func:`core.analysis.compare.pair_changes`).

Keys: ``d`` the first divergence, ``]`` / ``[`` the next / previous difference, escape
back. The work is core's (:func:`core.analysis.compare.compare_runs`,
:func:`core.analysis.metrics.run_metrics_row`); this screen only draws it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from core.analysis.compare import Comparison, compare_runs, pair_changes, value_text
from core.analysis.metrics import run_metrics_row

from ..loader import LoadedRecording
from ..plain import line
from ..widgets.compare_table import OP_MARKS, OP_WORDS, CompareTable

__all__ = ["CompareScreen", "metric_deltas"]

#: the header's figures: (name shown, run_metrics_row column)
HEADER_METRICS = (
    ("steps", "steps"),
    ("model calls", "model_calls"),
    ("tool calls", "tool_calls"),
    ("tool errors", "tool_errors"),
    ("tokens in", "input_tokens"),
    ("tokens out", "output_tokens"),
    ("duration", "duration_seconds"),
)

#: changes listed in the diff pane at most (the rest are counted)
MAX_CHANGES = 200


def _number(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}s" if v < 100 else f"{v:,.0f}s"
    return f"{v:,}"


def _short(value: Any, n: int) -> str:
    """``value`` on one line (:func:`inspector.plain.line`), cut to ``n`` characters."""
    text = line(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def metric_deltas(base_row: dict[str, Any], other_row: dict[str, Any]) -> str:
    """The header line: outcome (each cut to 40 characters), then each of
    :data:`HEADER_METRICS` as ``base → other (±delta)`` (``-`` where a run did not
    record it)."""
    parts = [f"outcome {_short(base_row['outcome'], 40)} → {_short(other_row['outcome'], 40)}"]
    for label, col in HEADER_METRICS:
        a, b = base_row.get(col), other_row.get(col)
        if a is None and b is None:
            continue
        text = f"{label} {_number(a)} → {_number(b)}"
        if isinstance(a, int) and isinstance(b, int) and a != b:
            text += f" ({b - a:+,})"
        parts.append(text)
    return " · ".join(parts)


class CompareScreen(Screen[None]):
    """``base`` and ``other`` side by side (module docstring)."""

    BINDINGS = [
        Binding("d", "first_divergence", "First divergence", id="compare.first_divergence"),
        Binding("right_square_bracket", "next_difference", "Next diff", id="compare.next"),
        Binding("left_square_bracket", "previous_difference", "Prev diff", id="compare.previous"),
        Binding("escape", "close", "Back", id="compare.close"),
    ]

    DEFAULT_CSS = """
    CompareScreen #compare-header { height: auto; padding: 0 1; background: $panel; }
    CompareScreen #compare-deltas { height: auto; padding: 0 1; color: $text; }
    CompareScreen CompareTable { height: 1fr; }
    CompareScreen #compare-diff-scroll { height: 12; border-top: solid $primary-darken-2; }
    CompareScreen #compare-diff { padding: 0 1; }
    """

    def __init__(self, base: LoadedRecording, other: LoadedRecording, *, comparison: Comparison | None = None) -> None:
        super().__init__()
        self.base = base
        self.other = other
        self.comparison = comparison if comparison is not None else compare_runs(base.recording, other.recording)

    def compose(self) -> ComposeResult:
        c = self.comparison
        counts = c.trace.counts
        title = Text()
        title.append("Compare  ", style="bold")
        title.append(_short(self.base.path.name, 60), style="bold")
        title.append("  ⇄  ")
        title.append(_short(self.other.path.name, 60), style="bold")
        title.append(
            f"   = same {counts['same']}  ~ changed {counts['changed']}  − only in base {counts['removed']}"
            f"  + only in other {counts['inserted']}"
        )
        yield Static(title, id="compare-header")
        a = run_metrics_row(self.base.recording, "base")
        b = run_metrics_row(self.other.recording, "other")
        deltas = metric_deltas(a, b)
        fd = c.first_divergence
        where = (
            "the calls are the same"
            if fd is None
            else f"first divergence: {fd.dimension} at base seq {fd.base_seq if fd.base_seq is not None else '-'}"
            f" / other seq {fd.replay_seq if fd.replay_seq is not None else '-'} (d)"
        )
        yield Static(Text(f"{deltas}\n{where}"), id="compare-deltas")
        yield CompareTable(c, self.base.index, self.other.index, id="compare-table")
        with VerticalScroll(id="compare-diff-scroll"):
            yield Static(id="compare-diff")
        yield Footer()

    @property
    def table(self) -> CompareTable:
        return self.query_one(CompareTable)

    def on_mount(self) -> None:
        self.title = f"Compare — {line(self.base.path.name)} ⇄ {line(self.other.path.name)}"
        table = self.table
        table.focus()
        row = self.comparison.first_divergence_row
        table.cursor = row if row is not None else 0

    # ------------------------------------------------------------------ actions

    def action_first_divergence(self) -> None:
        row = self.comparison.first_divergence_row
        if row is None:
            self.notify("no divergence: the two runs make the same calls", timeout=3)
            return
        self.table.cursor = row

    def action_next_difference(self) -> None:
        row = self.comparison.next_difference(self.table.cursor, 1)
        if row is None:
            self.notify("no difference after this row", timeout=2)
            return
        self.table.cursor = row

    def action_previous_difference(self) -> None:
        row = self.comparison.next_difference(self.table.cursor, -1)
        if row is None:
            self.notify("no difference before this row", timeout=2)
            return
        self.table.cursor = row

    def action_close(self) -> None:
        self.dismiss(None)

    # ------------------------------------------------------------------ the diff pane

    @on(CompareTable.RowHighlighted)
    def _row_highlighted(self, event: CompareTable.RowHighlighted) -> None:
        self.query_one("#compare-diff", Static).update(self.diff_text(event.row))

    def diff_text(self, row: int) -> Text:
        """What the diff pane shows for row ``row``: the op in words, then each change
        of the payload diff (``~`` changed, ``-`` removed, ``+`` added) at its JSON
        Pointer path, values on one line each."""
        c = self.comparison
        if not c.rows:
            return Text("no records on either side", style="dim")
        op = c.rows[row]
        out = Text()
        seqs = f"base seq {op.base_seq if op.base_seq is not None else '-'} · other seq "
        seqs += f"{op.other_seq if op.other_seq is not None else '-'}"
        out.append(f"{OP_MARKS[op.op]} {OP_WORDS[op.op]}", style="bold")
        out.append(f"  {op.kind} {_short(op.name or '', 60)}  {seqs}")
        if op.dimension:
            out.append(f"  · differs in: {op.dimension}")
        if op.counterpart_seq is not None:
            side = "other" if op.op == "removed" else "base"
            out.append(f"  · paired with {side} seq {op.counterpart_seq}")
        out.append("\n")
        if op.op == "same":
            out.append("the two records are the same (timestamps, durations and ids aside)", style="dim")
            return out
        a, b = c.counterparts(row)
        changes = pair_changes(a, b)
        if not changes:
            out.append("no difference in the payloads (timestamps, durations and ids aside)", style="dim")
            return out
        for ch in changes[:MAX_CHANGES]:
            path = _short(ch.path or "(the whole record)", 150)
            if ch.op == "changed":
                out.append("~ ", style="bold #d7af00")
                out.append(path, style="bold")
                out.append("\n    - ", style="#ff5f5f")
                out.append(value_text(ch.old, 160), style="#ff5f5f")
                out.append("\n    + ", style="#5faf5f")
                out.append(value_text(ch.new, 160), style="#5faf5f")
            elif ch.op == "removed":
                out.append("- ", style="bold #ff5f5f")
                out.append(path, style="bold")
                out.append("  " + value_text(ch.old, 160), style="#ff5f5f")
            elif ch.op == "added":
                out.append("+ ", style="bold #5faf5f")
                out.append(path, style="bold")
                out.append("  " + value_text(ch.new, 160), style="#5faf5f")
            else:  # moved
                out.append("↷ ", style="bold")
                out.append(f"{path} → {line(ch.new_path or '')}")
            out.append("\n")
        if len(changes) > MAX_CHANGES:
            out.append(f"… and {len(changes) - MAX_CHANGES} more change(s)", style="dim")
        return out
