"""The compare screen: a base and another run (a replay's events, or any recording) in two
columns aligned by the trace diff (:class:`~inspector.widgets.compare_table.CompareTable`),
a header with the metric deltas, and a diff pane for the selected row — the payload diff
of its two records, JSON Pointer paths (:func:`core.analysis.compare.pair_diff`).

Keys: ``d`` the first divergence, ``]`` / ``[`` the next / previous difference, escape
back. The work is core's (:func:`core.analysis.compare.compare_runs`,
:func:`core.analysis.metrics.run_metrics_row`); this screen only draws it, and does the
work in thread workers so the keys stay free: the screen opens at once ("aligning…", the
keys that jump say so and do nothing) and fills in when the runs are aligned; the diff
pane of a row that is not ``same`` is computed in a worker too ("comparing…" meanwhile),
one at a time and latest-wins — a move while one runs asks for the newest row only, and
a result for a row no longer highlighted is dropped.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from core.analysis.compare import MAX_CHANGES, Comparison, changed_texts, compare_runs, pair_diff, value_text
from core.analysis.diff import CALL_KINDS
from core.analysis.metrics import run_metrics_row

from ..loader import LoadedRecording
from ..plain import line
from ..widgets.compare_table import OP_MARKS, OP_WORDS, CompareTable

__all__ = ["CompareScreen", "format_seconds", "metric_deltas", "run_label"]

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

#: the diff pane's width (characters) until it has been laid out
DEFAULT_PANE_WIDTH = 160

_ALIGN_GROUP = "compare-align"
_DIFF_GROUP = "compare-diff"


def format_seconds(seconds: float) -> str:
    """A duration in seconds, in one scheme: under a millisecond in whole microseconds
    (``94 µs``; ``<1 µs`` for less than half of one, ``0 s`` for zero), under a second in
    milliseconds and under a minute in seconds, both to three significant digits
    (``1.5 ms``, ``12 ms``, ``250 ms``, ``3.4 s``, ``42.1 s``), then ``2 min 05 s`` and
    ``1 h 02 min``; a negative duration (clocks that went back) with a ``-``."""
    if seconds < 0:
        return "-" + format_seconds(-seconds)
    if seconds == 0:
        return "0 s"
    us = round(seconds * 1e6)
    if us < 1:
        return "<1 µs"
    if us < 1000:
        return f"{us} µs"
    ms = float(f"{seconds * 1e3:.3g}")
    if ms < 1000:
        return f"{ms:g} ms"
    s = float(f"{seconds:.3g}")
    if s < 60:
        return f"{s:g} s"
    total = round(seconds)
    if total < 3600:
        m, rest = divmod(total, 60)
        return f"{m} min {rest:02d} s"
    h, m = divmod(total // 60, 60)
    return f"{h} h {m:02d} min"


def _number(v: Any, col: str = "") -> str:
    if v is None:
        return "-"
    if col == "duration_seconds" or isinstance(v, float):
        return format_seconds(float(v))
    return f"{v:,}"


def _short(value: Any, n: int) -> str:
    """``value`` on one line (:func:`inspector.plain.line`), cut to ``n`` characters."""
    text = line(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def metric_deltas(base_row: dict[str, Any], other_row: dict[str, Any]) -> str:
    """The header line: outcome (each cut to 40 characters), then each of
    :data:`HEADER_METRICS` as ``base → other (±delta)`` (``-`` where a run did not
    record it; durations by :func:`format_seconds`)."""
    parts = [f"outcome {_short(base_row['outcome'], 40)} → {_short(other_row['outcome'], 40)}"]
    for label, col in HEADER_METRICS:
        a, b = base_row.get(col), other_row.get(col)
        if a is None and b is None:
            continue
        text = f"{label} {_number(a, col)} → {_number(b, col)}"
        if isinstance(a, int) and isinstance(b, int) and a != b:
            text += f" ({b - a:+,})"
        parts.append(text)
    return " · ".join(parts)


def pack(parts: list[str], width: int, sep: str = " · ", first: int = 0) -> str:
    """``parts`` joined by ``sep``, a line break put between two parts where the next
    would not fit in ``width`` cells (``first``: cells already used on the first line),
    so a narrow screen wraps the line between phrases, never inside one. A part wider
    than the line is left to wrap on its own. ``width`` 0: one line."""
    if width <= 0 or not parts:
        return sep.join(parts)
    out, used = parts[0], first + cell_len(parts[0])
    for part in parts[1:]:
        size = cell_len(part)
        if used + len(sep) + size > width:
            out += "\n" + part
            used = size
        else:
            out += sep + part
            used += len(sep) + size
    return out


def run_label(loaded: LoadedRecording, n: int = 60) -> str:
    """How a side is named: its file name, and for a file of several runs the run shown
    (``file.json [run s1_epoch_1]``) — two runs of one file are told apart. The name is
    cut to leave room for the run id; at most about ``n`` characters, one line."""
    opened = loaded.opened
    run_id = opened.run_id if opened is not None and len(opened.runs) > 1 else None
    if run_id is None:
        return _short(loaded.path.name, n)
    run = _short(run_id, max(12, n // 2))
    return f"{_short(loaded.path.name, max(12, n - len(run) - 7))} [run {run}]"


class CompareScreen(Screen[None]):
    """``base`` and ``other`` side by side (module docstring). ``comparison``: the two
    aligned, when the caller has it already (else aligned in a worker; ``None`` until
    then)."""

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
    CompareScreen #compare-diff { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, base: LoadedRecording, other: LoadedRecording, *, comparison: Comparison | None = None) -> None:
        super().__init__()
        self.base = base
        self.other = other
        self.comparison: Comparison | None = comparison
        #: what stopped the alignment (the header says it), else ``None``
        self.align_error: str | None = None
        #: the metric deltas and where the runs diverge, once computed (packed at each resize)
        self._deltas: tuple[str, str] | None = None
        self._diff_wanted = 0  # the latest diff pane asked for (a counter)
        self._diff_row = 0  # ... and its row
        self._diff_running: int | None = None  # the request a worker computes, if any

    # ------------------------------------------------------------------ layout

    def _title_text(self) -> Text:
        title = Text()
        title.append("Compare  ", style="bold")
        title.append(run_label(self.base), style="bold")
        title.append("  ⇄  ")
        title.append(run_label(self.other), style="bold")
        c = self.comparison
        if c is None:
            title.append("   aligning…" if self.align_error is None else "   not aligned", style="dim")
            return title
        counts = c.counts
        parts = [
            f"= same {counts['same']}",
            f"~ changed {counts['changed']}",
            f"− only in base {counts['removed']}",
            f"+ only in other {counts['inserted']}",
        ]
        width, used = self._line_width(), title.cell_len + 3
        if width and used + cell_len(parts[0]) > width:  # not even the first fits after the names
            title.append("\n" + pack(parts, width, "  "))
        else:
            title.append("   " + pack(parts, width, "  ", used))
        return title

    def _line_width(self) -> int:
        """Cells of a header line (the screen's width less the padding); 0 before layout."""
        return max(0, self.size.width - 2)

    def _show_deltas(self) -> None:
        """The metric deltas (packed to the width) and where the runs diverge."""
        if self._deltas is None:
            return
        metrics, where = self._deltas
        text = pack(metrics.split(" · "), self._line_width())
        self.query_one("#compare-deltas", Static).update(Text(f"{text}\n{where}"))

    def on_resize(self) -> None:
        if not self.is_attached:
            return
        self.query_one("#compare-header", Static).update(self._title_text())
        self._show_deltas()

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="compare-header")
        yield Static(Text("aligning the two runs…", style="dim"), id="compare-deltas")
        yield CompareTable(self.comparison, self.base.index, self.other.index, id="compare-table")
        with VerticalScroll(id="compare-diff-scroll"):
            yield Static(id="compare-diff")
        yield Footer()

    @property
    def table(self) -> CompareTable:
        return self.query_one(CompareTable)

    @property
    def aligning(self) -> bool:
        """Whether the runs are still being aligned."""
        return self.comparison is None and self.align_error is None

    def on_mount(self) -> None:
        self.title = f"Compare — {run_label(self.base)} ⇄ {run_label(self.other)}"
        table = self.table
        table.focus()
        c = self.comparison
        if c is not None:
            row = c.first_divergence_row
            table.cursor = row if row is not None else 0
        else:
            self.query_one("#compare-diff", Static).update(Text("aligning the two runs…", style="dim"))
        self.run_worker(self._align, thread=True, name="compare: align", group=_ALIGN_GROUP, exit_on_error=False)

    def _align(self) -> tuple[Comparison, dict[str, Any], dict[str, Any]]:
        """In a worker: the comparison (unless given), shown as soon as it is made (the
        rows paint while the metrics are computed), then both runs' metrics."""
        c = self.comparison
        if c is None:
            c = compare_runs(self.base.recording, self.other.recording)
            self.app.call_from_thread(self._show_rows, c)
        return c, run_metrics_row(self.base.recording, "base"), run_metrics_row(self.other.recording, "other")

    @staticmethod
    def _where(c: Comparison) -> str:
        fd = c.first_divergence
        return (
            "the calls are the same"
            if fd is None
            else f"first divergence: {fd.dimension} at base seq {fd.base_seq if fd.base_seq is not None else '-'}"
            f" / other seq {fd.replay_seq if fd.replay_seq is not None else '-'} (d)"
        )

    def _show_rows(self, c: Comparison) -> None:
        """The aligned rows on screen, the cursor at the first divergence (the metrics
        follow in :meth:`_aligned`)."""
        if not self.is_attached:
            return
        self.comparison = c
        self.query_one("#compare-header", Static).update(self._title_text())
        self.query_one("#compare-deltas", Static).update(Text(f"computing the metrics…\n{self._where(c)}"))
        row = c.first_divergence_row
        self.table.set_comparison(c, row if row is not None else 0)

    def _aligned(self, c: Comparison, a: dict[str, Any], b: dict[str, Any]) -> None:
        self.comparison = c
        self.query_one("#compare-header", Static).update(self._title_text())
        self._deltas = (metric_deltas(a, b), self._where(c))
        self._show_deltas()
        if self.table.comparison is not c:
            row = c.first_divergence_row
            self.table.set_comparison(c, row if row is not None else 0)

    def _not_aligned(self, error: BaseException | None) -> None:
        self.align_error = f"{type(error).__name__}: {error}" if error is not None else "cancelled"
        self.query_one("#compare-header", Static).update(self._title_text())
        self.query_one("#compare-deltas", Static).update(
            Text(f"the runs could not be aligned: {line(self.align_error)}", style="bold red")
        )
        self.query_one("#compare-diff", Static).update(Text(""))

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == _ALIGN_GROUP:
            if event.state == WorkerState.SUCCESS and worker.result is not None:
                self._aligned(*worker.result)
            elif event.state == WorkerState.ERROR:
                self._not_aligned(worker.error)
        elif worker.group == _DIFF_GROUP and event.state in (
            WorkerState.SUCCESS,
            WorkerState.ERROR,
            WorkerState.CANCELLED,
        ):
            self._diff_done(worker, event.state)

    # ------------------------------------------------------------------ actions

    def _still_aligning(self) -> bool:
        if self.comparison is not None:
            return False
        self.notify(
            "the two runs are still being aligned" if self.align_error is None else "the runs could not be aligned",
            timeout=2,
        )
        return True

    def action_first_divergence(self) -> None:
        if self._still_aligning():
            return
        assert self.comparison is not None
        row = self.comparison.first_divergence_row
        if row is None:
            self.notify("no divergence: the two runs make the same calls", timeout=3)
            return
        self.table.cursor = row

    def action_next_difference(self) -> None:
        if self._still_aligning():
            return
        assert self.comparison is not None
        row = self.comparison.next_difference(self.table.cursor, 1)
        if row is None:
            self.notify("no difference after this row", timeout=2)
            return
        self.table.cursor = row

    def action_previous_difference(self) -> None:
        if self._still_aligning():
            return
        assert self.comparison is not None
        row = self.comparison.next_difference(self.table.cursor, -1)
        if row is None:
            self.notify("no difference before this row", timeout=2)
            return
        self.table.cursor = row

    def action_close(self) -> None:
        self.dismiss(None)

    # ------------------------------------------------------------------ the diff pane

    @property
    def _pane(self) -> Static:
        return self.query_one("#compare-diff", Static)

    def _pane_width(self) -> int:
        width = self._pane.content_region.width
        return width if width >= 20 else DEFAULT_PANE_WIDTH

    @on(CompareTable.RowHighlighted)
    def _row_highlighted(self, event: CompareTable.RowHighlighted) -> None:
        c = self.comparison
        if c is None:
            return
        self._diff_wanted += 1
        self._diff_row = event.row
        if not c.rows or c.rows[event.row].op == "same":  # nothing to diff: drawn at once
            self._pane.update(self.diff_text(event.row, self._pane_width()))
            return
        pending = self._head_text(event.row)
        pending.append("comparing…", style="dim")
        self._pane.update(pending)
        if self._diff_running is None:
            self._start_diff()

    def _start_diff(self) -> None:
        request, row, width = self._diff_wanted, self._diff_row, self._pane_width()
        self._diff_running = request

        def work() -> tuple[int, Text | None]:
            if request != self._diff_wanted:  # a newer row was asked for before this began
                return request, None
            return request, self.diff_text(row, width)

        self.run_worker(work, thread=True, name=f"compare: diff of row {row}", group=_DIFF_GROUP, exit_on_error=False)

    def _diff_done(self, worker: Worker[Any], state: WorkerState) -> None:
        request, self._diff_running = self._diff_running, None
        if self.comparison is None:
            return
        if state == WorkerState.SUCCESS and worker.result is not None:
            done, text = worker.result
            if done == self._diff_wanted and text is not None:
                self._pane.update(text)
                return
        elif state == WorkerState.ERROR and request == self._diff_wanted:
            self._pane.update(Text(f"cannot compare these records: {line(str(worker.error))}", style="bold red"))
            return
        rows = self.comparison.rows
        if request != self._diff_wanted and rows and rows[self._diff_row].op != "same":
            self._start_diff()  # another row was highlighted meanwhile: the newest only

    def _head_text(self, row: int) -> Text:
        assert self.comparison is not None
        op = self.comparison.rows[row]
        out = Text(no_wrap=True, overflow="ellipsis")
        seqs = f"base seq {op.base_seq if op.base_seq is not None else '-'} · other seq "
        seqs += f"{op.other_seq if op.other_seq is not None else '-'}"
        word = OP_WORDS[op.op] if op.op != "changed" or op.kind in CALL_KINDS else "changed"
        out.append(f"{OP_MARKS[op.op]} {word}", style="bold")
        out.append(f"  {op.kind} {_short(op.name or '', 60)}  {seqs}")
        if op.dimension:
            out.append(f"  · differs in: {op.dimension}")
        if op.counterpart_seq is not None:
            side = "other" if op.op == "removed" else "base"
            out.append(f"  · paired with {side} seq {op.counterpart_seq}")
        out.append("\n")
        return out

    def diff_text(self, row: int, width: int = DEFAULT_PANE_WIDTH) -> Text:
        """What the diff pane shows for row ``row`` (safe to call from a worker: reads
        the comparison only): the op in words, then each change of the payload diff
        (``~`` changed, ``-`` removed, ``+`` added) at its JSON Pointer path, every line
        cut to ``width`` characters with ``…`` — a changed string from just before its
        first difference (:func:`core.analysis.compare.changed_texts`). At most
        :data:`~core.analysis.compare.MAX_CHANGES` changes: the diff stops after them
        and says so."""
        c = self.comparison
        if c is None:
            return Text("aligning the two runs…", style="dim")
        if not c.rows:
            return Text("no records on either side", style="dim")
        out = self._head_text(row)
        op = c.rows[row]
        if op.op == "same":
            out.append("the two records are the same (timestamps, durations and ids aside)", style="dim")
            return out
        a, b = c.counterparts(row)
        diff = pair_diff(a, b, limit=MAX_CHANGES)
        if not diff.changes:
            out.append("no difference in the payloads (timestamps, durations and ids aside)", style="dim")
            return out
        width = max(20, width)
        for ch in diff.changes:
            path = ch.path or "(the whole record)"
            if ch.op == "changed":
                old, new, at = changed_texts(ch.old, ch.new, width - 6)
                where = ""
                if at:  # from the start: the window is the start, nothing to add (as `diff` does)
                    where = f"  (from character {at:,} of {len(ch.old):,} → {len(ch.new):,})"
                out.append("~ ", style="bold #d7af00")
                out.append(_short(path, max(10, width - 2 - len(where))), style="bold")
                out.append(where, style="dim")
                out.append("\n    - ", style="#ff5f5f")
                out.append(old, style="#ff5f5f")
                out.append("\n    + ", style="#5faf5f")
                out.append(new, style="#5faf5f")
            elif ch.op in ("removed", "added"):
                plus = ch.op == "added"
                colour = "#5faf5f" if plus else "#ff5f5f"
                shown_path = _short(path, width // 2)
                out.append("+ " if plus else "- ", style=f"bold {colour}")
                out.append(shown_path, style="bold")
                value = value_text(ch.new if plus else ch.old, max(10, width - 4 - len(shown_path)))
                out.append("  " + value, style=colour)
            else:  # moved
                out.append("↷ ", style="bold")
                out.append(f"{_short(path, width // 2)} → {_short(ch.new_path or '', width // 2 - 5)}")
            out.append("\n")
        if not diff.complete:
            out.append(
                f"{MAX_CHANGES}+ changes: the first {MAX_CHANGES} found are listed (the diff stopped there)",
                style="dim",
            )
        return out
