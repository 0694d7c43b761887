"""The run picker: every run of a multi-run file (an Inspect AI log of many samples,
tau-bench's results), in run order, with its outcome, score and number of records.

The runs come from :attr:`core.importers.Opened.runs`, already in run order
(:func:`core.importers.order_runs`: by sample id, then epoch, compared naturally), so the
``#`` column is the index ``import --run N`` and ``open --run N`` take. Typing filters the
list (every word must occur in the run's id, sample, epoch, outcome or score, case
ignored); ``enter`` opens the highlighted run (:meth:`inspector.app.InspectorApp.open_run`);
``escape`` clears the filter, else goes back to the run that was open.

Every run id, sample id, outcome and score is recorded text: drawn as Rich ``Text``
with its control characters visible (:mod:`inspector.plain`), never as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from core.importers.opened import Opened, RunRef

from ..plain import line, line_text

OUTCOME_STYLES = {"success": "bold #5faf5f", "failure": "bold #ff5f5f"}

#: the columns of the table: (key, title)
COLUMNS = (
    ("current", " "),
    ("index", "#"),
    ("run", "run"),
    ("sample", "sample"),
    ("epoch", "epoch"),
    ("outcome", "outcome"),
    ("score", "score"),
    ("records", "records"),
)


def run_matches(run: RunRef, words: list[str]) -> bool:
    """Whether every word of ``words`` (already case-folded) occurs in the run's id,
    sample id, epoch, outcome, score, title or the id of the run it belongs to (case
    ignored). No words: every run matches."""
    hay = " ".join(
        str(v)
        for v in (run.id, run.sample_id, run.epoch, run.outcome, run.score, run.parent, run.title)
        if v is not None
    )
    hay = hay.casefold()
    return all(w in hay for w in words)


def _run_cell(run: RunRef) -> Text:
    """The run's id — marked ``↳`` when it belongs to another run (a sub-agent, a recorded
    alternative) — and its title, dim, when the source names the run."""
    cell = line_text(run.id, style="bold")
    if run.parent is not None:
        cell = Text.assemble(Text("↳ ", style="dim"), cell)
    if run.title:
        cell = Text.assemble(cell, Text(" · ", style="dim"), line_text(run.title, style="dim"))
    return cell


def run_row(run: RunRef, current: bool) -> list[Text]:
    """The cells of ``run`` in the table (:data:`COLUMNS`), each a Rich ``Text`` of the
    recorded value (``-`` when not recorded); ``current`` marks the run open now."""
    dash = Text("-", style="dim")
    outcome = (
        Text(line(run.outcome), style=OUTCOME_STYLES.get(run.outcome, "bold")) if run.outcome is not None else dash
    )
    records = f"{run.records:,}" + (" (incomplete)" if run.incomplete else "")
    return [
        Text("●", style="bold #d7af00") if current else Text(" "),
        Text(str(run.index), style="dim", justify="right"),
        _run_cell(run),
        line_text(run.sample_id) if run.sample_id is not None else dash,
        line_text(run.epoch) if run.epoch is not None else dash,
        outcome,
        line_text(run.score) if run.score is not None else dash,
        Text(records, justify="right"),
    ]


class RunPickerScreen(Screen[None]):
    """Pick one of the runs of ``opened`` (the file ``file_name``); ``current`` is the
    id of the run open now (marked, and the cursor starts on it), ``None`` at start."""

    BINDINGS = [
        Binding("enter", "open_run", "Open run", id="picker.open", tooltip="Open the highlighted run", priority=True),
        Binding(
            "escape",
            "back",
            "Back",
            id="picker.back",
            tooltip="Clear the filter, else back to the run that was open",
        ),
        Binding(
            "ctrl+k",
            "compare_run",
            "Compare",
            id="picker.compare",
            tooltip="Mark the highlighted run; on a second run, compare the two side by side",
            priority=True,
        ),
        Binding("ctrl+q", "app.quit", "Quit", id="picker.quit", tooltip="Quit the inspector"),
        Binding("up", "move(-1)", "Up", show=False, id="picker.up"),
        Binding("down", "move(1)", "Down", show=False, id="picker.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="picker.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="picker.page_down"),
        Binding("ctrl+home", "edge(0)", "First run", show=False, id="picker.first"),
        Binding("ctrl+end", "edge(1)", "Last run", show=False, id="picker.last"),
    ]

    DEFAULT_CSS = """
    RunPickerScreen #picker-title { padding: 0 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    RunPickerScreen #picker-filter { margin: 0 1; border: tall $panel-lighten-2; }
    RunPickerScreen #picker-filter:focus { border: tall $primary; }
    RunPickerScreen #picker-table { height: 1fr; margin: 0 1; }
    RunPickerScreen #picker-count { padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, opened: Opened, file_name: str, current: str | None = None) -> None:
        super().__init__()
        #: the run ``ctrl+k`` marked, to compare with the next one it is pressed on
        self.compare_mark: RunRef | None = None
        self.opened = opened
        self.file_name = file_name
        self.current = current
        #: the runs the table shows now (the filter applied), in run order
        self.shown: list[RunRef] = list(opened.runs)

    def compose(self) -> ComposeResult:
        n = len(self.opened.runs)
        title = Text()
        title.append(line(self.file_name), style="bold")
        title.append(f"  {n:,} runs", style="bold")
        title.append(f"  {line(self.opened.source_format)}", style="dim")
        title.append("  by sample, then epoch", style="dim")
        yield Static(title, id="picker-title")
        yield Input(placeholder="type to filter: run id, sample, epoch, outcome, score", id="picker-filter")
        table: DataTable[Text] = DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)
        yield table
        yield Static("", id="picker-count")
        yield Footer()

    def on_mount(self) -> None:
        self.title = f"Chassis Inspector — {line(self.file_name)}: pick a run"
        table = self.table
        for key, label in COLUMNS:
            table.add_column(Text(label, style="bold"), key=key)
        self._fill(keep=self.current)
        self.query_one(Input).focus()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#picker-table", DataTable)

    # ------------------------------------------------------------------ the list

    def _fill(self, keep: str | None = None) -> None:
        """Show the runs matching the filter; the cursor on ``keep`` when shown, else
        on the first row."""
        words = self.query_one(Input).value.casefold().split()
        self.shown = [r for r in self.opened.runs if run_matches(r, words)]
        table = self.table
        table.clear()
        for r in self.shown:
            table.add_row(*run_row(r, r.id == self.current), key=str(r.index))
        row = next((i for i, r in enumerate(self.shown) if r.id == keep), 0)
        if self.shown:
            table.move_cursor(row=row, animate=False)
        total = len(self.opened.runs)
        count = (
            f"{len(self.shown):,} of {total:,} runs"
            if words
            else f"{total:,} runs · type to filter · enter opens the highlighted run · ctrl+k on two runs compares"
            " them · # is what --run N takes · ctrl+q quits"
        )
        if words and not self.shown:
            count = f"no run matches {' '.join(words)!r} (of {total:,}) · escape clears the filter"
        self.query_one("#picker-count", Static).update(line_text(count))

    @property
    def highlighted(self) -> RunRef | None:
        """The run under the cursor (``None`` when the filter shows none)."""
        if not self.shown:
            return None
        row = self.table.cursor_row
        return self.shown[row] if 0 <= row < len(self.shown) else None

    @on(Input.Changed, "#picker-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        here = self.highlighted
        self._fill(keep=here.id if here is not None else None)

    @on(Input.Submitted, "#picker-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open_run()

    @on(DataTable.RowSelected, "#picker-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_run()

    # ------------------------------------------------------------------ actions

    def action_move(self, delta: int) -> None:
        """Move the cursor ``delta`` rows (the filter box keeps the focus)."""
        if self.shown:
            row = max(0, min(len(self.shown) - 1, self.table.cursor_row + delta))
            self.table.move_cursor(row=row)

    def action_page(self, direction: int) -> None:
        """Move the cursor a page up (``-1``) or down (``1``)."""
        self.action_move(direction * max(1, self.table.size.height - 2))

    def action_edge(self, last: int) -> None:
        """Go to the first (``0``) or last (``1``) run shown."""
        if self.shown:
            self.table.move_cursor(row=len(self.shown) - 1 if last else 0)

    def action_open_run(self) -> None:
        """Open the highlighted run (:meth:`inspector.app.InspectorApp.open_run`)."""
        run = self.highlighted
        if run is None:
            self.notify("no run matches the filter (escape clears it)", severity="warning", timeout=3)
            return
        open_run = getattr(self.app, "open_run", None)
        if open_run is not None:
            open_run(run.index)

    def action_compare_run(self) -> None:
        """``ctrl+k``: mark the highlighted run; on another run, open the two side by
        side (:meth:`inspector.app.InspectorApp.compare_runs`; the marked one is the
        base). On the marked run again: unmark it."""
        run = self.highlighted
        if run is None:
            self.notify("no run matches the filter (escape clears it)", severity="warning", timeout=3)
            return
        marked = self.compare_mark
        if marked is None or marked.index == run.index:
            self.compare_mark = None if marked is not None else run
            if self.compare_mark is None:
                self.notify(f"run {line(run.id)} unmarked", timeout=3)
            else:
                self.notify(f"run {line(run.id)} marked: ctrl+k on another run compares the two", timeout=5)
            return
        self.compare_mark = None
        compare = getattr(self.app, "compare_runs", None)
        if compare is not None:
            compare(marked.index, run.index)

    def action_back(self) -> None:
        """Clear the filter; with none, go back to the run that was open (if any)."""
        box = self.query_one(Input)
        if box.value:
            box.value = ""
            return
        back = getattr(self.app, "close_run_picker", None)
        if back is None or not back():
            self.notify("pick a run: enter opens the highlighted one (ctrl+q quits)", timeout=3)
