"""The effects screen: the ranked effects of the open run (the base), a bar chart of the
best candidates' effect and score (effect × reliability: a row whose measurement is less
reliable draws a shorter score bar), and sweeps started from the app.

What is ranked is core's (:func:`core.effects.causal.workspace_effects`,
:func:`core.effects.ranking.rank_effects`; rules in docs/effects.md): one row per
candidate — a targeted call or an intervention set — with the outcome's base → observed
values, the effect (mean flip over the repeats) ± its spread, the reliability of the
measurement and why it was lowered, and the evidence replays. The ranking orders by the
score (effect × reliability), so a row whose effect is ``none`` never outranks or looks
surer than a cause.

Keys: ``s`` a sweep (:class:`SweepScreen` asks for the candidates, strategy, repeats,
jobs and the executor; it runs in worker processes with progress, ``K`` cancels it),
``r`` ranks the stored replays again, enter opens the selected row's evidence replay in
the compare screen beside the base, escape back.

The ranking stored in the workspace is drawn first (ten thousand rows paint at once);
with replays but no stored ranking, the replays are ranked in a worker.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Checkbox, Footer, Input, Label, ProgressBar, Select, Static
from textual_plotext import PlotextPlot

from core.effects.sweep import CANDIDATE_SETS, MAX_JOBS, MAX_REPEAT, STRATEGIES, sweep_candidates
from core.errors import InspectorError
from core.workspace import NoWorkspace

from ..loader import LoadedRecording
from ..plain import line, line_text
from ..widgets.effects_table import EffectsTable

__all__ = ["EffectsScreen", "SweepScreen", "SweepSettings", "chart_rows"]

#: bars in the chart: the best candidates by rank
CHART_ROWS = 10
#: rows of a stored ranking read and drawn first; the rest follow in the same worker
FIRST_PAGE = 500

STRATEGY_HELP = {
    "resample": "the executor answers the call again, live (needs an executor)",
    "knockout": "the call fails (a tool) or answers nothing (a model)",
    "fixture": "the best fixture of the workspace for the call; calls without one are skipped",
}
CANDIDATE_HELP = {
    "errors": "calls that failed",
    "tools": "every tool call",
    "all": "every tool and model call",
}


def chart_rows(effects: list[dict[str, Any]], n: int = CHART_ROWS) -> list[dict[str, Any]]:
    """The rows the chart draws: the first ``n`` effects (rank order) that have an
    effect (a usable replay); the others have nothing to draw."""
    return [e for e in effects if e["outcome"]["effect"] is not None and e["usable"] > 0][:n]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


@dataclass(frozen=True)
class SweepSettings:
    """What :class:`SweepScreen` asks for: the candidate set and the strategy (names of
    :data:`core.effects.sweep.CANDIDATE_SETS` / :data:`~core.effects.sweep.STRATEGIES`),
    ``repeat`` replays per candidate, ``jobs`` worker processes, and the executor
    ``module:function`` the user consented to run (``None``: none)."""

    candidates: str
    strategy: str
    repeat: int
    jobs: int
    executor: str | None


class SweepScreen(ModalScreen[SweepSettings | None]):
    """Asks how to sweep the base (``named``: the executor its metadata names, run only
    when the user ticks the box: docs/replay.md, "Executors are code"); dismisses with
    :class:`SweepSettings`, or ``None`` on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="sweep.cancel")]

    DEFAULT_CSS = """
    SweepScreen { align: center middle; }
    SweepScreen > Vertical { width: 90%; max-width: 100; height: auto; border: thick $primary;
        background: $surface; padding: 1 2; }
    SweepScreen Horizontal { height: auto; }
    SweepScreen .sweep-field { width: 1fr; height: auto; margin-right: 2; }
    SweepScreen Select { width: 1fr; }
    SweepScreen Input { width: 1fr; }
    SweepScreen .sweep-note { color: $text-muted; }
    SweepScreen #sweep-error { color: #ff5f5f; height: auto; }
    SweepScreen #sweep-buttons { margin-top: 1; }
    SweepScreen Button { margin-right: 2; }
    """

    def __init__(self, loaded: LoadedRecording, named: str | None) -> None:
        super().__init__()
        self.loaded = loaded
        self.named = named

    def compose(self) -> ComposeResult:
        default_strategy = "resample" if self.named else "knockout"
        with Vertical():
            yield Static(Text("Sweep: one branch per candidate call, replayed and ranked", style="bold"))
            yield Static(
                Text(
                    "Each branch replaces one call's recorded answer (the strategy) and replays from there; "
                    "the effects rank which call changes the outcome. Replays run in worker processes and are "
                    "stored in the workspace."
                ),
                classes="sweep-note",
            )
            with Horizontal():
                with Vertical(classes="sweep-field"):
                    yield Label("Candidates")
                    yield Select(
                        [(c, c) for c in CANDIDATE_SETS],
                        value="all",
                        allow_blank=False,
                        id="sweep-candidates",
                    )
                with Vertical(classes="sweep-field"):
                    yield Label("Strategy")
                    yield Select(
                        [(s, s) for s in STRATEGIES],
                        value=default_strategy,
                        allow_blank=False,
                        id="sweep-strategy",
                    )
            with Horizontal():
                with Vertical(classes="sweep-field"):
                    yield Label(f"Repeats per candidate (1–{MAX_REPEAT})")
                    yield Input("1", type="integer", id="sweep-repeat")
                with Vertical(classes="sweep-field"):
                    yield Label(f"Jobs: worker processes (1–{MAX_JOBS})")
                    yield Input(str(min(2, os.cpu_count() or 1)), type="integer", id="sweep-jobs")
            if self.named:
                yield Checkbox(
                    f"Run the executor this recording names: {line(self.named)}",
                    value=False,
                    id="sweep-executor",
                )
                yield Static(
                    Text(
                        "It is code that runs on this machine (the recording's digest does not cover it): tick it "
                        "only if you trust where the recording came from. Without it, calls after the change are "
                        "answered from the recording and the replays are less reliable."
                    ),
                    classes="sweep-note",
                )
            else:
                yield Static(
                    Text(
                        "This recording names no executor: the replays walk the generic chat loop, so their "
                        "reliability is low (the command line's sweep --executor module:function takes one)."
                    ),
                    classes="sweep-note",
                )
            yield Static(Text(""), id="sweep-count", classes="sweep-note")
            yield Static(Text(""), id="sweep-error")
            with Horizontal(id="sweep-buttons"):
                yield Button("Start sweep", id="sweep-start", variant="primary")
                yield Button("Cancel (esc)", id="sweep-cancel-button")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = f"Sweep {line(self.loaded.path.name)}"
        self._count()
        self.query_one("#sweep-start", Button).focus()

    @on(Select.Changed)
    @on(Input.Changed)
    def _count(self) -> None:
        candidates = str(self.query_one("#sweep-candidates", Select).value)
        strategy = str(self.query_one("#sweep-strategy", Select).value)
        try:
            repeat = int(self.query_one("#sweep-repeat", Input).value.strip())
        except ValueError:
            repeat = 1
        n = len(sweep_candidates(self.loaded.recording, candidates))
        self.query_one("#sweep-count", Static).update(
            Text(
                f"{candidates}: {CANDIDATE_HELP[candidates]}; {strategy}: {STRATEGY_HELP[strategy]}.\n"
                f"{n} candidate call(s) × {max(repeat, 1)} = {n * max(repeat, 1)} replay(s)"
            )
        )

    def _read(self, *, quiet: bool = False) -> SweepSettings | None:
        """The settings, or ``None`` (with the reason shown, unless ``quiet``)."""
        error = self.query_one("#sweep-error", Static)
        numbers: list[int] = []
        for ident, name, top in (("#sweep-repeat", "repeats", MAX_REPEAT), ("#sweep-jobs", "jobs", MAX_JOBS)):
            raw = self.query_one(ident, Input).value.strip()
            try:
                value = int(raw)
            except ValueError:
                value = 0
            if not 1 <= value <= top:
                if not quiet:
                    error.update(Text(f"{name}: a whole number from 1 to {top}, not {raw!r}"))
                return None
            numbers.append(value)
        candidates = str(self.query_one("#sweep-candidates", Select).value)
        strategy = str(self.query_one("#sweep-strategy", Select).value)
        executor = None
        if self.named and self.query_one("#sweep-executor", Checkbox).value:
            executor = self.named
        if strategy == "resample" and executor is None:
            if not quiet:
                error.update(
                    Text(
                        "resample re-executes each call live: it needs an executor"
                        + (" (tick the box above)" if self.named else "; pick knockout or fixture")
                    )
                )
            return None
        error.update(Text(""))
        return SweepSettings(candidates, strategy, numbers[0], numbers[1], executor)

    @on(Button.Pressed, "#sweep-start")
    @on(Input.Submitted)
    def _start(self) -> None:
        settings = self._read()
        if settings is not None:
            self.dismiss(settings)

    @on(Button.Pressed, "#sweep-cancel-button")
    def action_cancel(self) -> None:
        self.dismiss(None)


class EffectsScreen(Screen[None]):
    """The ranked effects of ``loaded`` (module docstring)."""

    BINDINGS = [
        Binding("s", "sweep", "Sweep", id="effects.sweep", tooltip="Sweep the calls of this run: one replay each"),
        Binding(
            "enter",
            "open_evidence",
            "Evidence",
            id="effects.evidence",
            tooltip="Open the selected row's evidence replay beside the base (the compare screen)",
        ),
        Binding("r", "rerank", "Re-rank", id="effects.rerank", tooltip="Rank the stored replays of this run again"),
        Binding("K", "cancel_sweep", "Cancel sweep", id="effects.cancel", tooltip="Stop the running sweep"),
        Binding("escape", "close", "Back", id="effects.close"),
    ]

    DEFAULT_CSS = """
    EffectsScreen #effects-header { height: auto; padding: 0 1; background: $panel; }
    EffectsScreen #effects-best { height: auto; padding: 0 1; }
    EffectsScreen EffectsTable { height: 1fr; }
    EffectsScreen #effects-bottom { height: 14; border-top: solid $primary-darken-2; }
    EffectsScreen #effects-detail-scroll { width: 1fr; }
    EffectsScreen #effects-detail { padding: 0 1; }
    EffectsScreen PlotextPlot { width: 1fr; height: 1fr; }
    EffectsScreen #effects-sweep { height: 1; display: none; padding: 0 1; }
    EffectsScreen #effects-sweep.-running { display: block; }
    EffectsScreen #effects-sweep-status { width: 1fr; }
    EffectsScreen #effects-sweep ProgressBar { width: 40; }
    """

    class Ranked(Message):
        """A worker read (or computed) the ranking: ``effects`` (JSON shapes, rank
        order), ``replays`` stored for the base, ``computed`` when it was ranked now
        rather than read, ``partial`` for the first :data:`FIRST_PAGE` rows of a longer
        ranking (the rest follow); ``error`` when it could not be read."""

        def __init__(
            self,
            generation: int,
            effects: list[dict[str, Any]],
            replays: int,
            *,
            outcome: str | None = None,
            computed: bool = False,
            partial: bool = False,
            error: str | None = None,
        ) -> None:
            super().__init__()
            self.partial = partial
            self.generation = generation
            self.effects = effects
            self.replays = replays
            self.outcome = outcome
            self.computed = computed
            self.error = error

    class SweepProgressed(Message):
        """``done`` of ``total`` candidate replays of the running sweep have ended."""

        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

    class SweepEnded(Message):
        """The sweep ended: ``summary`` (what it did) or ``error`` (why it could not)."""

        def __init__(self, summary: str | None, error: BaseException | None) -> None:
            super().__init__()
            self.summary = summary
            self.error = error

    def __init__(self, loaded: LoadedRecording) -> None:
        super().__init__()
        self.loaded = loaded
        #: the effects shown (JSON shapes, rank order)
        self.effects: list[dict[str, Any]] = []
        self.replays = 0
        self._generation = 0
        self._stop = threading.Event()
        self._sweeping = False
        self._sweep_done = 0
        #: seconds from building the screen to the first ranking drawn
        self.painted_after: float | None = None
        self._mounted_at = 0.0

    def compose(self) -> ComposeResult:
        self._mounted_at = time.perf_counter()
        self.reload()  # the workspace is read while the screen is built
        yield Static(self._header_text(), id="effects-header")
        yield Static(Text("reading the ranking from the workspace…", style="dim"), id="effects-best")
        yield EffectsTable(id="effects-table")
        with Horizontal(id="effects-sweep"):
            yield Static(Text(""), id="effects-sweep-status")
            yield ProgressBar(total=1, show_eta=False, id="effects-sweep-progress")
        with Horizontal(id="effects-bottom"):
            with VerticalScroll(id="effects-detail-scroll"):
                yield Static(Text(""), id="effects-detail")
            yield PlotextPlot(id="effects-chart")
        yield Footer()

    @property
    def table(self) -> EffectsTable:
        return self.query_one(EffectsTable)

    def on_mount(self) -> None:
        self.title = f"Effects — {line(self.loaded.path.name)}"
        self.table.focus()
        if not self.effects:
            self._draw_chart()

    def on_unmount(self) -> None:
        self._stop.set()  # a sweep still running stops with the screen

    # ------------------------------------------------------------------ reading

    def _header_text(self, outcome: str | None = None) -> Text:
        t = Text()
        t.append("Effects  ", style="bold")
        t.append(line(self.loaded.path.name), style="bold")
        if outcome is not None:
            t.append(f"   base outcome {line(outcome)}")
        # distinct replays: a call's effect merges the intervention sets ranked beside it
        ranked = len({rid for e in self.effects for rid in e["evidence"]["replay_ids"]})
        t.append(f"   {len(self.effects)} candidate(s) ranked from {ranked} replay(s)")
        if self.replays != ranked:
            t.append(f" · {self.replays} stored for this run (r ranks them again)", style="#d7af00")
        return t

    def reload(self, *, rerank: bool = False) -> None:
        """Read the stored ranking (``rerank``: rank every stored replay again) in a
        worker; the newest read wins."""
        self._generation += 1
        self.run_worker(
            partial(self._read, self._generation, rerank),
            name="effects",
            group="effects-read",
            description="ranking the replays of this run" if rerank else "reading the ranked effects",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _read(self, generation: int, rerank: bool) -> None:
        """Worker: the stored ranking of this base, or (``rerank``, or replays without
        a stored ranking) the ranking computed now and stored."""
        from ..replay_runner import open_workspace

        runner = self.app.replay_runner  # type: ignore[attr-defined]
        path = self.app.workspace_path  # type: ignore[attr-defined]
        try:
            digest = runner.digest_of(self.loaded)
            if digest is None:
                raise InspectorError("the recording is still being verified: open the effects once it is")
            with open_workspace(path) as ws:
                replays = ws.count_replays(base_digest=digest)
                stored = ws.effects(digest, limit=FIRST_PAGE) if not rerank else []
                computed = False
                if replays and (rerank or not stored):
                    ws.require_writable()
                    from core.effects.causal import workspace_effects  # polars: imported when needed

                    stored = [e.to_json() for e in workspace_effects(ws, digest, base=self.loaded.recording)]
                    computed = True
                elif len(stored) == FIRST_PAGE:  # the best drawn first, the rest after
                    outcome = stored[0]["outcome"]["base"]
                    self.post_message(self.Ranked(generation, stored, replays, outcome=outcome, partial=True))
                    stored = stored + ws.effects(digest, offset=FIRST_PAGE)
        except NoWorkspace:
            self.post_message(self.Ranked(generation, [], 0))
            return
        except InspectorError as exc:
            self.post_message(self.Ranked(generation, [], 0, error=str(exc)))
            return
        outcome = stored[0]["outcome"]["base"] if stored else None
        self.post_message(self.Ranked(generation, stored, replays, outcome=outcome, computed=computed))

    @on(Ranked)
    def _ranked(self, event: Ranked) -> None:
        if event.generation != self._generation:
            return
        best = self.query_one("#effects-best", Static)
        self.replays = event.replays
        more = bool(self.effects) and event.effects[: len(self.effects)] == self.effects
        self.effects = event.effects
        if more:  # the rest of a ranking drawn first in part: the cursor stays
            self.table.extend_effects(event.effects[len(self.table.effects) :])
        else:
            self.table.set_effects(event.effects)
        self.query_one("#effects-header", Static).update(self._header_text(event.outcome))
        if event.error is not None:
            best.update(line_text(f"cannot rank the effects: {event.error}", style="#ff5f5f"))
        elif not event.effects:
            best.update(
                Text(
                    "no replays of this run yet: press s to sweep its calls "
                    "(or replay branches from the branch tree, T), then come back"
                )
            )
        else:
            best.update(self._best_text(event.computed))
        if event.partial:
            best.update(Text.assemble(self._best_text(False), (" · reading the rest of the ranking…", "dim")))
            self.query_one("#effects-header", Static).update(
                Text("Effects  ", style="bold") + line_text(self.loaded.path.name)
            )
        if not more:
            self._draw_chart()
        self._show_detail(self.table.cursor)
        if self.painted_after is None:
            self.painted_after = time.perf_counter() - self._mounted_at

    def _best_text(self, computed: bool) -> Text:
        t = Text()
        best = next((e for e in self.effects if e["usable"] > 0 and e["outcome"]["effect"] is not None), None)
        if best is None:
            t.append("no best candidate: ", style="bold")
            t.append(f"none of the {self.replays} replay(s) is usable as evidence", style="")
            reasons = self.effects[0]["reliability_reasons"]
            if reasons:
                t.append(f" (e.g. {line(reasons[0])})")
        else:
            t.append("best: ", style="bold")
            t.append(line(best["summary"]))
        t.append("   " + ("ranked now" if computed else "stored ranking, r ranks again"), style="dim")
        return t

    # ------------------------------------------------------------------ detail and chart

    @on(EffectsTable.RowHighlighted)
    def _highlighted(self, event: EffectsTable.RowHighlighted) -> None:
        self._show_detail(event.row)

    def _show_detail(self, row: int) -> None:
        self.query_one("#effects-detail", Static).update(self.detail_text(row))

    def detail_text(self, row: int) -> Text:
        """The detail pane for row ``row``: the candidate, the outcome it observed, the
        effect, score and reliability with why it was lowered, metric deltas, evidence."""
        if not self.effects:
            return Text("")
        e = self.effects[row]
        o = e["outcome"]
        t = Text()
        t.append(f"#{e['rank']} ", style="bold")
        t.append(line(e["description"]), style="bold")
        t.append(f"  ({e['kind'].replace('_', ' ')})\n", style="dim")
        observed = ", ".join(f"{line(k)} ×{v}" for k, v in o["observed"].items()) or "nothing finished"
        t.append(f"outcome {line(o['base'])} → {observed} of {e['replays']} replay(s), {e['usable']} usable\n")
        if o["effect"] is None:
            t.append("effect - (no usable replay)\n", style="dim")
        else:
            t.append(f"effect {o['effect']:.2f} ± {o['spread']:.2f} ({o['direction']})")
            t.append(f" · score {_fmt(e['score'])}", style="bold")
        t.append(f" · reliability {e['reliability']:.2f}\n")
        for reason in e["reliability_reasons"]:
            t.append(f"  - {line(reason)}\n", style="#d7af00")
        metrics = [
            f"{line(name)} {m['mean']:+.2f}" for name, m in e["metrics"].items() if m.get("mean") not in (None, 0, 0.0)
        ]
        if metrics:
            t.append("metric deltas (mean): " + ", ".join(metrics) + "\n")
        if e["output_changed"] is not None:
            t.append(f"final output changed in {e['output_changed']:.0%} of finished replays\n")
        ids = e["evidence"]["replay_ids"]
        if ids:
            shown = ", ".join(line(i) for i in ids[:4]) + (f" … ({len(ids)} in all)" if len(ids) > 4 else "")
            t.append(f"evidence: {shown} — enter opens {line(ids[0])} beside the base", style="dim")
        return t

    def _draw_chart(self) -> None:
        chart = self.query_one(PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        rows = chart_rows(self.effects)
        if not rows:
            plt.title("no effect to chart yet")
        else:
            labels = [f"#{e['rank']}" for e in rows]  # the rank: the table's row
            # textual-plotext's stub names only ``label`` and one colour; plotext itself
            # takes ``labels`` and a colour per series (plotext._figure.multiple_bar)
            plt.multiple_bar(  # type: ignore[call-arg]
                labels,
                [[e["outcome"]["effect"] for e in rows], [e["score"] for e in rows]],
                labels=None,  # a legend would cover the first bars: the title says which is which
                color=["green", "blue"],  # type: ignore[arg-type]
            )
            plt.xticks(list(range(1, len(rows) + 1)), labels)  # every rank, not plotext's pick
            plt.ylim(0, 1)
            plt.title("by rank — left: effect · right: score")
        chart.refresh()

    # ------------------------------------------------------------------ actions

    def action_close(self) -> None:
        if self._sweeping:
            self.notify("a sweep is running: K cancels it, then escape goes back", timeout=4)
            return
        self.dismiss(None)

    def action_rerank(self) -> None:
        if self._sweeping:
            self.notify("a sweep is running: it ranks its replays when it ends", timeout=3)
            return
        self.query_one("#effects-best", Static).update(Text("ranking the replays of this run…", style="dim"))
        self.reload(rerank=True)

    def action_open_evidence(self) -> None:
        if not self.effects:
            self.notify("no effect to show: press s to sweep first", timeout=3)
            return
        e = self.effects[self.table.cursor]
        ids = e["evidence"]["replay_ids"]
        if not ids:
            self.notify("this row has no evidence replay", timeout=3)
            return
        self.app.replay_runner.open_events(ids[0], compare_with=self.loaded)  # type: ignore[attr-defined]

    @on(EffectsTable.RowSelected)
    def _selected(self, event: EffectsTable.RowSelected) -> None:
        self.action_open_evidence()

    def action_sweep(self) -> None:
        if self._sweeping:
            self.notify("a sweep is running already (K cancels it)", timeout=3)
            return
        if self.app.needs_whole_recording("sweep it", self.action_sweep):  # type: ignore[attr-defined]
            return
        named = self.loaded.recording.metadata.get("executor")
        named = named if isinstance(named, str) and named else None
        self.app.push_screen(SweepScreen(self.loaded, named), self._sweep_chosen)

    def _sweep_chosen(self, settings: SweepSettings | None) -> None:
        if settings is None:
            return
        total = len(sweep_candidates(self.loaded.recording, settings.candidates)) * settings.repeat
        if total == 0:
            self.notify(f"no candidate calls: the run has no call of the set '{settings.candidates}'", timeout=4)
            return
        self._stop = threading.Event()
        self._sweeping = True
        self._sweep_done = 0
        bar = self.query_one("#effects-sweep-progress", ProgressBar)
        bar.update(total=total, progress=0)
        self.query_one("#effects-sweep").add_class("-running")
        self._status(f"sweep ({settings.strategy}, {settings.candidates}): 0/{total} replay(s) · K cancels")
        self.run_worker(
            partial(self._sweep, settings, total),
            name="sweep",
            group="effects-sweep",
            description=f"sweep {settings.strategy} of {total} replay(s)",
            thread=True,
            exit_on_error=False,
        )

    def _status(self, text: str) -> None:
        self.query_one("#effects-sweep-status", Static).update(Text(text))

    def _sweep(self, settings: SweepSettings, total: int) -> None:
        """Worker: the sweep (:func:`core.effects.sweep.run_sweep`) in spawned worker
        processes, into the app's workspace, posting progress; cancelled by ``K`` or by
        leaving the screen."""
        from core.effects.sweep import run_sweep

        from ..replay_runner import open_workspace

        done = 0

        def progressed(_result: dict[str, Any]) -> None:
            nonlocal done
            done += 1
            self.post_message(self.SweepProgressed(done, total))

        try:
            path = self.app.workspace_path  # type: ignore[attr-defined]
            with open_workspace(path, create=True) as ws:
                ws.require_writable()
            res = run_sweep(
                self.loaded.path,
                executor=settings.executor,
                trust_executor=settings.executor is not None,  # the user ticked the box
                candidates=settings.candidates,
                strategy=settings.strategy,
                jobs=settings.jobs,
                repeat=settings.repeat,
                workspace=path,
                base=self.loaded.recording,
                on_result=progressed,
                cancel=self._stop.is_set,
                processes=True,
            )
        except Exception as exc:  # noqa: BLE001 — shown to the user, never a crash
            self.post_message(self.SweepEnded(None, exc))
            return
        ran = len(res.replays)
        summary = (
            f"sweep cancelled after {ran} of {res.planned} replay(s); the ranking holds those that finished"
            if res.cancelled
            else f"sweep done: {ran} replay(s)" + (f", {len(res.skipped)} call(s) skipped" if res.skipped else "")
        )
        self.post_message(self.SweepEnded(summary, None))

    @on(SweepProgressed)
    def _sweep_progressed(self, event: SweepProgressed) -> None:
        self._sweep_done = event.done
        self.query_one("#effects-sweep-progress", ProgressBar).update(progress=event.done)
        if not self._stop.is_set():
            self._status(f"sweep: {event.done}/{event.total} replay(s) · K cancels")

    @on(SweepEnded)
    def _sweep_ended(self, event: SweepEnded) -> None:
        self._sweeping = False
        self.query_one("#effects-sweep").remove_class("-running")
        if event.error is not None:
            from .error import ErrorScreen

            message = str(event.error)
            if not isinstance(event.error, InspectorError):
                message = f"{type(event.error).__name__}: {message}"
            self.app.push_screen(ErrorScreen("the sweep could not run", message))
        else:
            self.notify(event.summary or "", title="sweep", timeout=5)
        self.reload()

    def action_cancel_sweep(self) -> None:
        if not self._sweeping:
            self.notify("no sweep is running", timeout=2)
            return
        self._stop.set()
        self._status(f"cancelling the sweep after {self._sweep_done} replay(s): running replays stop…")
