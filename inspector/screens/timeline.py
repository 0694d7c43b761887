"""The timeline screen: header, filter bar, the virtualized timeline and the detail pane.

It owns the navigation state (visible kinds, errors-only, search matches, jump history)
and pushes it down to its widgets; widgets report user intent with messages. Searching
runs in a thread worker (the first search over a big recording builds the haystack).
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Sequence
from functools import partial
from time import monotonic

import orjson
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input
from textual.worker import Worker

from core.analysis.timeline import VIEW_KINDS as RECORD_KINDS
from core.analysis.timeline import TimelineIndex
from core.errors import FormatError
from core.record.nesting import dumps
from core.record.recording import ModelRecord, ToolRecord

from ..loader import LoadedRecording
from ..plain import line
from ..runinfo import marked_seqs
from ..widgets.branch_tree import BranchTreePanel
from ..widgets.detail_pane import DetailPane
from ..widgets.filter_bar import FilterBar
from ..widgets.json_tree import JsonTree
from ..widgets.recording_header import RecordingHeader, header_text
from ..widgets.timeline_table import TimelineTable
from ..widgets.transcript import TranscriptView
from .goto import GotoSeqScreen
from .run_info import RunInfoScreen

#: seconds between cursor moves below which the detail pane waits for the cursor to
#: settle (this long after the last move) before it redraws; a move after a pause this
#: long redraws it at once
DETAIL_DELAY = 0.06

#: what the table and the detail pane say for a recording of no records (e.g. an Inspect
#: sample that failed before its first model call)
#: a search started with ``move=False`` "started" at no cursor position: it only marks
_NOWHERE = -2
EMPTY_RUN = "this recording has no records: the run ended before its first call (i: run info)"


class TimelineScreen(Screen[None]):
    """Everything about one recording. ``loaded`` is the recording and its index."""

    BINDINGS = [
        Binding(
            "slash", "search", "Search", id="timeline.search", tooltip="Search names, arguments, contents and results"
        ),
        Binding("n", "next_match", "Next match", id="timeline.next_match", tooltip="Jump to the next search match"),
        Binding(
            "N",
            "previous_match",
            "Prev match",
            show=False,
            id="timeline.previous_match",
            tooltip="Jump to the previous search match",
        ),
        Binding(
            "e", "next_error", "Next error", id="timeline.next_error", tooltip="Jump to the next record with an error"
        ),
        Binding(
            "E",
            "previous_error",
            "Prev error",
            show=False,
            id="timeline.previous_error",
            tooltip="Jump to the previous record with an error",
        ),
        Binding(
            "f",
            "first_error",
            "First error",
            show=False,
            id="timeline.first_error",
            tooltip="Jump to the first record with an error",
        ),
        Binding("g,colon", "goto", "Go to seq", id="timeline.goto", tooltip="Go to a record by its seq"),
        Binding(
            "l",
            "follow_link",
            "Follow call",
            id="timeline.follow_link",
            tooltip="Tool call ↔ the model call that requested it (by tool_call_id)",
        ),
        Binding("b", "back", "Back", show=False, id="timeline.back", tooltip="Back to where the last jump started"),
        Binding(
            "1", "toggle_kind('model')", "Model calls", show=False, id="filter.model", tooltip="Show/hide model calls"
        ),
        Binding("2", "toggle_kind('tool')", "Tool calls", show=False, id="filter.tool", tooltip="Show/hide tool calls"),
        Binding(
            "3",
            "toggle_kind('interrupt')",
            "Interrupts",
            show=False,
            id="filter.interrupt",
            tooltip="Show/hide interrupts",
        ),
        Binding(
            "4",
            "toggle_kind('snapshot')",
            "Snapshots",
            show=False,
            id="filter.snapshot",
            tooltip="Show/hide snapshot separators",
        ),
        Binding(
            "5",
            "toggle_kind('lifecycle')",
            "Lifecycle",
            show=False,
            id="filter.lifecycle",
            tooltip="Show/hide lifecycle separators",
        ),
        Binding(
            "0", "show_all", "All kinds", show=False, id="filter.all", tooltip="Show every kind, clear errors-only"
        ),
        Binding(
            "x",
            "toggle_errors",
            "Errors only",
            show=False,
            id="filter.errors",
            tooltip="Show only records with an error",
        ),
        Binding(
            "S",
            "cycle_source",
            "Answer source",
            show=False,
            id="filter.source",
            tooltip="A replay's events: only the calls of one answer source, the next one each press, then all",
        ),
        Binding(
            "r",
            "show_tab('tab-record')",
            "Record",
            show=False,
            id="detail.record",
            tooltip="Detail: the record as a JSON tree",
        ),
        Binding(
            "t",
            "show_tab('tab-transcript')",
            "Transcript",
            id="detail.transcript",
            tooltip="Detail: the chat transcript",
        ),
        Binding(
            "z",
            "expand",
            "Expand long",
            show=False,
            id="detail.expand",
            tooltip="Expand long strings (a page at a time) and messages",
        ),
        Binding(
            "v",
            "show_raw",
            "Show raw",
            show=False,
            id="detail.show_raw",
            tooltip="Raw text of images and base64 instead of placeholders",
        ),
        Binding("y", "copy('key')", "Copy key", show=False, id="copy.key", tooltip="Copy the canonical key"),
        Binding(
            "a",
            "copy('args_hash')",
            "Copy args hash",
            show=False,
            id="copy.args_hash",
            tooltip="Copy the args hash of a tool call",
        ),
        Binding("c", "copy('json')", "Copy JSON", show=False, id="copy.json", tooltip="Copy the record as JSON"),
        Binding(
            "i",
            "run_info",
            "Run info",
            id="timeline.run_info",
            tooltip="Run info: outcome, ground truth, fault, task, source, import warnings, all metadata",
        ),
        Binding(
            "m",
            "jump_mark",
            "Marked step",
            show=False,
            id="timeline.jump_mark",
            tooltip="Jump to the step the metadata marks (annotated mistake, planted fault)",
        ),
        Binding(
            "w",
            "focus_other",
            "Switch pane",
            show=False,
            id="timeline.switch_pane",
            tooltip="Move focus between the timeline and the detail",
        ),
        Binding(
            "B",
            "new_branch",
            "New branch",
            show=False,
            id="workspace.branch",
            tooltip="Branch editor: a new branch with its checkpoint at the selected record",
        ),
        # -- the workspace: branch tree, replays, requirements (inspector/widgets/branch_tree.py)
        Binding(
            "T",
            "branch_tree",
            "Tree",
            show=False,
            id="workspace.tree",
            tooltip="Branch tree of this run: branches, their replays and status (again: focus, then hide)",
        ),
        Binding(
            "R",
            "launch_replay",
            "Replay",
            show=False,
            id="workspace.launch",
            tooltip="Replay the branch selected in the branch tree (in the background)",
        ),
        Binding(
            "u",
            "resume_replay",
            "Resume",
            show=False,
            id="workspace.resume",
            tooltip="Resume the replay selected in the branch tree (its requirements answered)",
        ),
        Binding(
            "C",
            "compare_replay",
            "Compare",
            show=False,
            id="workspace.compare",
            tooltip="Compare the replay selected in the branch tree with its base, side by side",
        ),
        Binding(
            "L",
            "audit",
            "Audit",
            show=False,
            id="analysis.audit",
            tooltip="Audit: the lineage of the final output — which calls produced it",
        ),
        Binding(
            "W",
            "effects",
            "Effects",
            show=False,
            id="workspace.effects",
            tooltip="Effects: which calls and interventions change the outcome, ranked; s sweeps from there",
        ),
        Binding(
            "K",
            "cancel_replay",
            "Cancel replay",
            show=False,
            id="workspace.cancel",
            tooltip="Cancel the selected running replay (it stops between two calls)",
        ),
        Binding(
            "o",
            "requirements",
            "Requirements",
            show=False,
            id="workspace.requirements",
            tooltip="Open requirements of the selected (or last paused) replay, else of the whole workspace",
        ),
        Binding(
            "A",
            "answer_requirement",
            "Answer",
            show=False,
            id="workspace.attach",
            tooltip="Answer the selected replay's open requirement: attach a fixture, approve, or answer a turn",
        ),
        Binding(
            "F",
            "fixtures",
            "Fixtures",
            show=False,
            id="workspace.fixtures",
            tooltip="Fixtures of the workspace: scope, where each was used; reuse one for another branch",
        ),
        Binding(
            "escape",
            "close_replay",
            "Back to base",
            show=False,
            id="workspace.back",
            tooltip="Clear the search shown; on a replay's timeline: back to the run it was opened from",
        ),
    ]

    DEFAULT_CSS = """
    TimelineScreen #main { height: 1fr; }
    TimelineScreen TimelineTable { width: 3fr; }
    TimelineScreen DetailPane { width: 2fr; border-left: vkey $panel-lighten-2; }
    TimelineScreen.-xwide TimelineTable { width: 1fr; }
    TimelineScreen.-xwide DetailPane { width: 36%; max-width: 100; }
    TimelineScreen.-narrow #main { layout: vertical; }
    TimelineScreen.-narrow #header { border-bottom: none; }
    TimelineScreen.-narrow DetailPane > #detail-identity { max-height: 2; }
    TimelineScreen.-narrow DetailPane > #detail-error { max-height: 1; }
    TimelineScreen.-narrow TimelineTable { width: 1fr; height: 1fr; }
    TimelineScreen.-narrow DetailPane { width: 1fr; height: 1fr; border-left: none; border-top: hkey $panel-lighten-2; }
    """

    class SearchFinished(Message):
        """A search for ``text`` found ``positions`` (ascending); ``generation``: which
        search it was (a result of one started before the last is dropped)."""

        def __init__(self, text: str, positions: list[int], generation: int = 0) -> None:
            super().__init__()
            self.text = text
            self.positions = positions
            self.generation = generation

    def __init__(self, loaded: LoadedRecording) -> None:
        super().__init__()
        self.loaded = loaded
        self.index: TimelineIndex = loaded.index
        self.kinds: frozenset[str] = frozenset(RECORD_KINDS)
        self.errors_only = False
        self.search_text = ""
        self.matches: list[int] = []
        self.history: list[int] = []
        self._detail_timer: Timer | None = None
        #: ``time.monotonic()`` of the last cursor move (see _highlighted)
        self._last_move = float("-inf")
        self._searching = False
        self._search_from: int | None = None
        self._search_job: Worker[None] | None = None
        #: searches started (see SearchFinished.generation)
        self._search_generation = 0
        #: set while the detail pane shows the record under the cursor (see detail_settled)
        self._detail_current = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield RecordingHeader(self._header_text(), id="header")
        yield FilterBar(id="filters")
        with Horizontal(id="main"):
            yield TimelineTable(self.index, id="timeline")
            yield DetailPane(id="detail")
        yield BranchTreePanel(self.loaded, id="branch-tree")
        yield Footer()

    #: below this width the footer is compact (no padding around each key), so that its
    #: keys and the palette hint fit side by side at 110 columns
    COMPACT_FOOTER_BELOW = 150

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(Footer).compact = event.size.width < self.COMPACT_FOOTER_BELOW

    def on_mount(self) -> None:
        self.query_one(Footer).compact = self.size.width < self.COMPACT_FOOTER_BELOW
        self.title = f"Chassis Inspector — {line(self.loaded.path.name)}"
        self.query_one(FilterBar).set_state(self.kinds, self.errors_only, self.index.summary.counts)
        table = self.table
        marks = marked_seqs(self.loaded.recording)
        table.set_marks({m.seq: m.label for m in marks})
        self.detail.marks = {m.seq: (m.label, m.reason) for m in marks}
        if not len(self.index):
            table.empty_message = EMPTY_RUN
        table.focus()
        self.detail.show(self.index, table.cursor_position, empty_message=table.empty_message)
        self._detail_current.set()

    # ------------------------------------------------------------------ helpers

    def _header_text(self):
        reading = self.loaded.reading
        return header_text(
            self.loaded.path,
            self.loaded.recording,
            self.index.summary,
            verifying=self.loaded.verify is not None,
            reading=None if reading is None else reading.fraction,
        )

    def records_read(self, done: bool) -> None:
        """More records of a big file were read after the first paint (the index grew):
        the rows, filter counts and header follow, the cursor stays on its record.
        ``done``: every record is read (a search shown is run again over all of them)."""
        table = self.table
        if not len(table.view):
            self._apply_filter()  # nothing was shown (no row the filter keeps, yet)
        else:
            view: Sequence[int]
            if self.kinds == frozenset(RECORD_KINDS) and not self.errors_only:
                view = range(len(self.index))
            else:
                view = self.index.select(self.kinds, errors_only=self.errors_only)
            table.grow_view(view, settle=done)
            self.query_one(FilterBar).set_state(self.kinds, self.errors_only, self.index.summary.counts)
        self.refresh_header()
        if done and self.search_text:
            if self._searching:  # the user's search runs on fewer records: again, from where it began
                self._run_search(self.search_text)
            else:
                self.start_search(self.search_text, move=False)

    def refresh_header(self) -> None:
        """Redraw the header (e.g. once a fast-opened file is verified)."""
        self.query_one(RecordingHeader).update(self._header_text())

    @property
    def table(self) -> TimelineTable:
        return self.query_one(TimelineTable)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    def _apply_filter(self, keep: int | None = None) -> None:
        table = self.table
        keep = table.cursor_position if keep is None else keep
        view: Sequence[int]
        if self.kinds == frozenset(RECORD_KINDS) and not self.errors_only:
            view = range(len(self.index))
        else:
            view = self.index.select(self.kinds, errors_only=self.errors_only)
        if not len(self.index):
            table.empty_message = EMPTY_RUN
        elif self.errors_only and not self.index.error_positions:
            table.empty_message = (
                f"no errors in the records read so far{self._reading_note()} (x or 0: show everything)"
                if self.loaded.reading is not None
                else "no errors in this recording (x or 0: show everything)"
            )
        elif self.errors_only:
            table.empty_message = "no error among the kinds shown (0: show everything)"
        else:
            table.empty_message = "no record of the kinds shown (0: show everything)"
        table.set_view(view, keep_position=keep)
        self.query_one(FilterBar).set_state(self.kinds, self.errors_only, self.index.summary.counts)
        self._update_match_info()
        self.detail.show(self.index, table.cursor_position, empty_message=table.empty_message)

    def jump_to(self, position: int, *, remember: bool = True) -> bool:
        """Move the cursor to ``position``; if the filter hides it, clear the filter.
        With ``remember`` the current position goes on the back-history."""
        table = self.table
        here = table.cursor_position
        if table.row_of_position(position) is None:
            self.kinds = frozenset(RECORD_KINDS)
            self.errors_only = False
            self._apply_filter(keep=position)
            self.notify("filter cleared to show the target record", timeout=3)
        if remember and here is not None and here != position:
            self.history.append(here)
            del self.history[:-100]
        return table.go_to_position(position, center=True)

    def _visible(self, position: int) -> bool:
        return self.table.row_of_position(position) is not None

    # ------------------------------------------------------------------ messages up

    @on(TimelineTable.RecordHighlighted)
    def _highlighted(self, event: TimelineTable.RecordHighlighted) -> None:
        # A move after the cursor was still for DETAIL_DELAY (a single key press, a click)
        # redraws the detail at once; moves that follow each other faster (a held key)
        # redraw it once they stop. Stillness is counted from the end of the last
        # immediate redraw, so moves queued behind a slow redraw wait as a held key's do.
        still = monotonic() - self._last_move >= DETAIL_DELAY
        if self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        if still:
            self._show_detail(event.position)
        else:
            self._detail_current.clear()
            self._detail_timer = self.set_timer(DETAIL_DELAY, self._show_detail_at_cursor)
        self._last_move = monotonic()
        self._update_match_info()

    def _show_detail(self, position: int | None) -> None:
        self.detail.show(self.index, position, empty_message=self.table.empty_message)
        self._detail_current.set()

    def _show_detail_at_cursor(self) -> None:
        """The debounce timer's redraw: the record under the cursor when it fires (a
        filter or a search may have moved the view since the move that set it)."""
        self._detail_timer = None
        self._show_detail(self.table.cursor_position)

    async def detail_settled(self) -> None:
        """Wait until the detail pane shows the record under the cursor: after moves that
        follow each other within :data:`DETAIL_DELAY` its redraw waits that long for the
        cursor to settle."""
        await self._detail_current.wait()

    @on(TimelineTable.RecordSelected)
    def _selected(self, event: TimelineTable.RecordSelected) -> None:
        self.detail.focus_content()

    @on(FilterBar.KindToggled)
    def _kind_toggled(self, event: FilterBar.KindToggled) -> None:
        self.action_toggle_kind(event.kind)

    @on(FilterBar.ErrorsToggled)
    def _errors_toggled(self) -> None:
        self.action_toggle_errors()

    @on(FilterBar.SearchSubmitted)
    def _search_submitted(self, event: FilterBar.SearchSubmitted) -> None:
        self.table.focus()
        self.start_search(event.text)

    @on(FilterBar.SearchCancelled)
    def _search_cancelled(self) -> None:
        self.table.focus()

    # ------------------------------------------------------------------ search

    def start_search(self, text: str, *, move: bool = True) -> None:
        """Search for ``text`` (empty: clear the search) in a worker; the cursor goes to
        the first match from it unless ``move`` is false (the matches are only marked)."""
        self.search_text = text
        self.detail.term = ""
        self._search_from = self.table.cursor_position if move else _NOWHERE
        self._run_search(text)

    def _run_search(self, text: str) -> None:
        """:meth:`start_search`'s search, from where it was started (``_search_from``)."""
        self._search_generation += 1
        if not text:
            self.matches = []
            self._searching = False
            self.table.set_matches(frozenset(), "")
            self.detail.show(self.index, self.table.cursor_position)
            self._update_match_info()
            return
        self._searching = True
        self.query_one(FilterBar).set_match_info("searching…")
        # on the app, so that a failure reaches its one handler (InspectorApp.on_worker_state_changed)
        self._search_job = self.app.run_worker(
            partial(self._search, text, self._search_generation),
            name="search",
            group="search",
            description=f"search for {text!r}",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _search(self, text: str, generation: int) -> None:
        """The search itself (in a thread): posts :class:`SearchFinished`."""
        positions = self.index.search(text)
        self.post_message(self.SearchFinished(text, positions, generation))

    def background_failed(self, worker: Worker) -> None:
        """Drop the status a failed background task showed here: the "searching…" of
        the current search (the search is cleared), the header's "verifying…"."""
        if worker.group == "verify":
            self.refresh_header()
        elif worker is self._search_job:
            self._search_job = None
            self._searching = False
            self.search_text = ""
            self.matches = []
            self.table.set_matches(frozenset(), "")
            self._update_match_info()

    @on(SearchFinished)
    def _search_finished(self, event: SearchFinished) -> None:
        if event.text != self.search_text or event.generation != self._search_generation:
            return
        self._searching = False
        self.matches = event.positions
        self.detail.term = event.text
        self.table.set_matches(frozenset(event.positions), event.text)
        if self.table.cursor_position != self._search_from:
            # the user moved on while the search ran (or it ran again over more records):
            # mark the matches, do not yank the cursor
            self.detail.show(self.index, self.table.cursor_position)
            self._update_match_info()
            return
        if not event.positions:
            self.notify(f"no record contains {event.text!r}", severity="warning", timeout=3)
            self._update_match_info()
            return
        here = self.table.cursor_position
        start = -1 if here is None else here - 1
        target = self._next_in(self.matches, start, visible_only=True) or self._next_in(
            self.matches, -1, visible_only=True
        )
        if target is None:
            target = event.positions[0]
        self.jump_to(target)
        self._update_match_info()

    def _next_in(self, positions: list[int], after: int, *, visible_only: bool) -> int | None:
        i = bisect.bisect_right(positions, after)
        while i < len(positions):
            if not visible_only or self._visible(positions[i]):
                return positions[i]
            i += 1
        return None

    def _previous_in(self, positions: list[int], before: int) -> int | None:
        i = bisect.bisect_left(positions, before) - 1
        while i >= 0:
            if self._visible(positions[i]):
                return positions[i]
            i -= 1
        return None

    def _update_match_info(self) -> None:
        bar = self.query_one(FilterBar)
        if self._searching:
            bar.set_match_info("searching…")
            return
        if not self.search_text:
            bar.set_match_info("")
            return
        if not self.matches:
            bar.set_match_info("no match")
            return
        here = self.table.cursor_position
        n = len(self.matches)
        if here is not None:
            i = bisect.bisect_left(self.matches, here)
            if i < n and self.matches[i] == here:
                bar.set_match_info(f"match {i + 1}/{n}")
                return
        bar.set_match_info(f"{n} matches")

    # ------------------------------------------------------------------ actions

    def action_search(self) -> None:
        """Focus the search box."""
        self.query_one("#search").focus()

    def action_next_match(self) -> None:
        """Go to the next search match (wrapping around)."""
        if not self.matches:
            self.notify("no search: press / to search", timeout=2)
            return
        here = self.table.cursor_position
        target = self._next_in(self.matches, -1 if here is None else here, visible_only=True)
        if target is None:
            target = self._next_in(self.matches, -1, visible_only=True)
        if target is not None:
            self.jump_to(target)
        self._update_match_info()

    def action_previous_match(self) -> None:
        """Go to the previous search match (wrapping around)."""
        if not self.matches:
            self.notify("no search: press / to search", timeout=2)
            return
        here = self.table.cursor_position
        target = self._previous_in(self.matches, len(self.index) if here is None else here)
        if target is None:
            target = self._previous_in(self.matches, len(self.index))
        if target is not None:
            self.jump_to(target)
        self._update_match_info()

    def _error_in_view(self, start: int, forward: bool) -> int | None:
        idx = self.index
        p = idx.next_error(start) if forward else idx.previous_error(start)
        while p is not None and not self._visible(p):
            p = idx.next_error(p) if forward else idx.previous_error(p)
        return p

    def _reading_note(self) -> str:
        """`` (reading the file… 46%)`` while a big file's records are still being read
        after the first paint, else ``""``: what is not found may be further on."""
        reading = self.loaded.reading
        return "" if reading is None else f" (reading the file… {min(99, int(reading.fraction * 100))}%)"

    def _no_errors(self) -> None:
        if self.loaded.reading is not None:
            self.notify(f"no errors in the records read so far{self._reading_note()}", timeout=3)
        else:
            self.notify("this recording has no errors", timeout=3)

    def action_first_error(self) -> None:
        """Jump to the first record with an error."""
        if not self.index.error_positions:
            self._no_errors()
            return
        self.jump_to(self.index.error_positions[0])

    def action_next_error(self) -> None:
        """Jump to the next error after the cursor (wrapping to the first)."""
        if not self.index.error_positions:
            self._no_errors()
            return
        here = self.table.cursor_position
        p = self._error_in_view(-1 if here is None else here, True)
        if p is None:
            p = self._error_in_view(-1, True)
            if p is not None:
                self.notify("wrapped to the first error", timeout=2)
        if p is None:
            p = self.index.error_positions[0]
        self.jump_to(p)

    def action_previous_error(self) -> None:
        """Jump to the previous error before the cursor (wrapping to the last)."""
        if not self.index.error_positions:
            self._no_errors()
            return
        here = self.table.cursor_position
        p = self._error_in_view(len(self.index) if here is None else here, False)
        if p is None:
            p = self._error_in_view(len(self.index), False)
        if p is None:
            p = self.index.error_positions[-1]
        self.jump_to(p)

    def action_goto(self) -> None:
        """Ask for a seq and go to it (or to the next record after it)."""

        def done(seq: int | None) -> None:
            if seq is None:
                return
            p = self.index.position_of_seq(seq)
            if p is None:
                p = self.index.nearest_position_of_seq(seq)
                if p is None:
                    return
                if self.loaded.reading is not None and seq > self.index.seqs[-1]:
                    went = f"seq {seq} is not read yet{self._reading_note()}"
                else:
                    went = f"no record has seq {seq}"
                self.notify(f"{went}; went to seq {self.index.seqs[p]}", timeout=3)
            self.jump_to(p)

        self.app.push_screen(
            GotoSeqScreen(self.index.seqs[0] if len(self.index) else 0, self.index.seqs[-1] if len(self.index) else 0),
            done,
        )

    def go_to_seq(self, seq: int) -> bool:
        """Go to the record with ``seq``; ``False`` if there is none."""
        p = self.index.position_of_seq(seq)
        if p is None:
            return False
        return self.jump_to(p)

    def _open_sub_run(self, here: int) -> bool:
        """A call that started a sub-agent (``meta.sub_run``, e.g. Claude Code's ``Agent``
        tool) opens the sub-agent's run of the same file; ``True`` when it did."""
        try:
            rec = self.index.record(here)
        except FormatError:
            return False
        meta = getattr(rec, "meta", None)
        sub = meta.get("sub_run") if isinstance(meta, dict) else None
        opened = self.loaded.opened
        if not isinstance(sub, str) or opened is None or not any(r.id == sub for r in opened.runs):
            return False
        open_run = getattr(self.app, "open_run", None)
        if not callable(open_run):
            return False
        open_run(sub)
        return True

    def action_follow_link(self) -> None:
        """From a tool call to the model call that requested it, and from a model call to
        the tool calls that answered it (repeated presses cycle through them); from a call
        that started a sub-agent, to the sub-agent's run."""
        here = self.table.cursor_position
        if here is None:
            return
        if self._open_sub_run(here):
            return
        try:
            links = self.index.linked(here)
        except FormatError as exc:
            self.notify(str(exc), severity="error", timeout=6)
            return
        if not links:
            rec = self.index.record(here)
            if type(rec) is ToolRecord:
                # no tool_call_id link: the model call just before it (as the transcript does)
                p = self.index.preceding_model_call(here)
                if p is None:
                    self.notify("no model call precedes this tool call", timeout=3)
                    return
                self.jump_to(p)
                self.notify(
                    f"no tool_call_id links this call: went to the model call just before it (seq {self.index.seqs[p]})",
                    timeout=4,
                )
                return
            if type(rec) is ModelRecord:
                where = "the records read so far" if self.loaded.reading is not None else "this recording"
                self.notify(
                    f"no tool call in {where} answers this model call (by tool_call_id){self._reading_note()}",
                    timeout=3,
                )
                return
            self.notify(
                f"not a call: {self._article(rec.kind)} {rec.kind} record links to nothing (l follows tool_call_id links)",
                timeout=3,
            )
            return
        self.jump_to(links[0])

    @staticmethod
    def _article(word: str) -> str:
        return "an" if word[:1] in "aeiou" else "a"

    def action_back(self) -> None:
        """Return to where the last jump started; with no jump left on a timeline opened
        from another (a sub-agent's run, a replay's events), back to that one."""
        if not self.history:
            stack = self.app.screen_stack
            if self is stack[-1] and any(isinstance(s, TimelineScreen) for s in stack[:-1]):
                self.app.pop_screen()
                return
            self.notify("nothing to go back to", timeout=2)
            return
        self.jump_to(self.history.pop(), remember=False)

    def action_toggle_kind(self, kind: str) -> None:
        """Show or hide records of ``kind``."""
        kinds = set(self.kinds)
        kinds.symmetric_difference_update({kind})
        self.kinds = frozenset(kinds)
        self._apply_filter()

    def action_only_kind(self, kind: str) -> None:
        """Show only records of ``kind``."""
        self.kinds = frozenset({kind})
        self._apply_filter()

    def action_show_all(self) -> None:
        """Show every kind and answer source, and clear errors-only."""
        self.kinds = frozenset(RECORD_KINDS)
        self.errors_only = False
        self.table.set_source_filter(None)
        self._apply_filter()

    def action_toggle_errors(self) -> None:
        """Show only records with an error (or everything again)."""
        self.errors_only = not self.errors_only
        self._apply_filter()

    # -- answer sources (a replay's events): the filter is the table's, within the view set here

    def _source_filter_unavailable(self) -> bool:
        """Say so and return ``True`` when this recording is not a replay's events."""
        if self.index.has_answer_sources:
            return False
        self.notify(
            "no answer sources: this recording is not a replay's events (open WORKSPACE/replays/REPLAY_ID.json)",
            timeout=4,
        )
        return True

    def _show_sources(self, sources: frozenset[str] | None) -> None:
        from core.analysis.timeline_text import source_label

        self.table.set_source_filter(sources)
        shown = self.table.sources
        if shown is None:
            self.notify("answer sources: every row", timeout=2)
        else:
            counts = self.index.source_counts()
            names = ", ".join(f"{source_label(s)} ({counts.get(s, 0):,})" for s in counts if s in shown)
            self.notify(f"answer sources: only {names or 'none'} (S: next source)", timeout=3)

    def action_cycle_source(self) -> None:
        """Show only the calls of one answer source, the next source present at each
        press (in the order of the state table), then every row again."""
        if self._source_filter_unavailable():
            return
        present = list(self.index.source_counts())
        shown = self.table.sources
        if shown is None:
            nxt: frozenset[str] | None = frozenset(present[:1])
        elif len(shown) == 1 and next(iter(shown)) in present:
            i = present.index(next(iter(shown))) + 1
            nxt = frozenset({present[i]}) if i < len(present) else None
        else:
            nxt = None
        self._show_sources(nxt)

    def action_toggle_source(self, source: str) -> None:
        """Show or hide the calls answered by ``source``."""
        if self._source_filter_unavailable():
            return
        shown = self.table.sources
        current = set(self.index.source_counts()) if shown is None else set(shown)
        current.symmetric_difference_update({source})
        self._show_sources(frozenset(current))

    def action_only_source(self, source: str) -> None:
        """Show only the calls answered by ``source``."""
        if not self._source_filter_unavailable():
            self._show_sources(frozenset({source}))

    def action_all_sources(self) -> None:
        """Show the calls of every answer source again."""
        if not self._source_filter_unavailable():
            self._show_sources(None)

    @on(FilterBar.SourceToggled)
    def _source_toggled(self, event: FilterBar.SourceToggled) -> None:
        event.stop()
        self.action_toggle_source(event.source)

    @on(TimelineTable.SourceFilterChanged)
    def _source_filter_changed(self, event: TimelineTable.SourceFilterChanged) -> None:
        event.stop()
        self.query_one(FilterBar).set_sources(event.counts, event.shown)

    def action_show_tab(self, tab: str) -> None:
        """Switch the detail pane to ``tab`` (``tab-record`` or ``tab-transcript``); when
        the detail had the focus, the tab shown takes it (the hidden one cannot keep it)."""
        inside = self.focused is not None and self.detail in self.focused.ancestors_with_self
        self.detail.active_tab = tab
        if inside:
            self.call_after_refresh(self.detail.focus_content)

    def action_expand(self) -> None:
        """Expand folded strings (Record tab: the first page of each) or long messages
        (Transcript tab)."""
        if self.detail.active_tab == "tab-transcript":
            view = self.detail.query_one(TranscriptView)
            view.expanded = not view.expanded
        else:
            self.detail.query_one(JsonTree).expand_all_strings()

    def action_show_raw(self) -> None:
        """Toggle placeholders (``<image/png, 3.0 MB>``) and the raw text of binary data
        in the detail pane."""
        raw = not self.detail.raw
        self.detail.set_raw(raw)
        if raw:
            self.notify("showing images and base64 data as raw text (v: placeholders again)", timeout=3)
        else:
            self.notify("showing images and base64 data as placeholders", timeout=2)

    def action_copy(self, what: str) -> None:
        """Copy the key, the args hash or the record JSON to the clipboard."""
        here = self.table.cursor_position
        if here is None:
            return
        try:
            ident = self.index.identity(here)
        except FormatError as exc:
            self.notify(str(exc), severity="error", timeout=6)
            return
        if what == "json":
            text = dumps(self.index.record(here).to_json_obj(), orjson.OPT_INDENT_2).decode()
            label = f"record seq {ident['seq']} as JSON"
        else:
            value = ident.get(what)
            if not value:
                self.notify(
                    f"this {ident['kind']} record has no {what.replace('_', ' ')}", severity="warning", timeout=3
                )
                return
            text = value
            label = f"{what.replace('_', ' ')} {value[:20]}…"
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {label}", timeout=2)

    def action_run_info(self) -> None:
        """Open the run-info view; it may hand back a seq to jump to (``m``)."""

        def done(seq: int | None) -> None:
            if seq is not None:
                self._jump_to_seq_or_say(seq)

        self.app.push_screen(RunInfoScreen(self.loaded.recording, self.loaded.notices, self.loaded.opened), done)

    def _jump_to_seq_or_say(self, seq: int) -> None:
        p = self.index.position_of_seq(seq)
        if p is None:
            self.notify(f"no record has seq {seq}", severity="warning", timeout=3)
            return
        self.jump_to(p)

    def action_jump_mark(self) -> None:
        """Jump to the record the metadata marks (annotated mistake step, planted
        fault); repeated presses cycle when there are several."""
        marks = marked_seqs(self.loaded.recording)
        if not marks:
            self.notify("the metadata marks no step (no annotation, no planted fault)", timeout=3)
            return
        here = self.table.cursor_position
        here_seq = None if here is None else self.index.seqs[here]
        seqs = [m.seq for m in marks]
        nxt = next((s for s in seqs if here_seq is None or s > here_seq), seqs[0])
        mark = marks[seqs.index(nxt)]
        self._jump_to_seq_or_say(mark.seq)
        self.notify(f"{mark.label} (seq {mark.seq}): {mark.reason}", timeout=6)

    def action_focus_other(self) -> None:
        """Move the focus between the timeline and the detail pane."""
        if self.table.has_focus:
            self.detail.focus_content()
        else:
            self.table.focus()

    def action_new_branch(self) -> None:
        """Open the branch editor with its checkpoint at the selected record (see
        :mod:`inspector.screens.branch_editor`)."""
        from .branch_editor import BranchEditorScreen

        here = self.table.cursor_position
        if here is None:
            self.notify("no record selected: a branch starts at a record (its checkpoint)", timeout=3)
            return
        if self.app.needs_whole_recording("branch it", self.action_new_branch):  # type: ignore[attr-defined]
            return
        self.app.push_screen(BranchEditorScreen(self.loaded, self.index.seqs[here]))

    # -- the workspace (the panel and the app's replay runner do the work)

    @property
    def branch_panel(self) -> BranchTreePanel:
        return self.query_one(BranchTreePanel)

    def action_branch_tree(self) -> None:
        """Show the branch tree side panel, focus it, or hide it."""
        self.branch_panel.toggle()

    def action_launch_replay(self) -> None:
        """Replay the branch selected in the branch tree."""
        self.branch_panel.launch_selected()

    def action_resume_replay(self) -> None:
        """Resume the replay selected in the branch tree."""
        self.branch_panel.resume_selected()

    def action_compare_replay(self) -> None:
        """Compare the replay selected in the branch tree with its base."""
        self.branch_panel.compare_selected()

    def action_audit(self) -> None:
        """The audit screen: the lineage of this run's final output."""
        from .audit import AuditScreen

        if self.app.needs_whole_recording("audit it", self.action_audit):  # type: ignore[attr-defined]
            return
        self.app.push_screen(AuditScreen(self.loaded))

    def action_effects(self) -> None:
        """The effects screen of this run (its replays ranked; sweeps)."""
        from .effects import EffectsScreen

        if self.app.needs_whole_recording("rank its effects", self.action_effects):  # type: ignore[attr-defined]
            return
        self.app.push_screen(EffectsScreen(self.loaded))

    def action_cancel_replay(self) -> None:
        """Cancel the running replay selected in the branch tree."""
        self.branch_panel.cancel_selected()

    def action_requirements(self) -> None:
        """Open the requirements panel (selected replay, last paused one, or all)."""
        self.branch_panel.open_requirements()

    def action_answer_requirement(self) -> None:
        """Answer the first open requirement of the selected replay."""
        self.branch_panel.open_requirements(answer=True)

    def action_fixtures(self) -> None:
        """Open the fixtures list of the workspace."""
        self.branch_panel.open_fixtures()

    def action_close_replay(self) -> None:
        """Back from a replay's timeline to the timeline it was opened from (with the
        branch tree focused: hide it; with a search shown: clear it first)."""
        if self.branch_panel.view.has_focus:
            self.branch_panel.hide()
            return
        if self.search_text:
            self.start_search("")
            self.query_one("#search", Input).value = ""  # the box no longer holds a term not applied
            self.notify("search cleared", timeout=2)
            return
        stack = self.app.screen_stack
        if self is stack[-1] and len(stack) > 1 and any(isinstance(s, TimelineScreen) for s in stack[:-1]):
            self.app.pop_screen()
