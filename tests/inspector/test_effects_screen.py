"""The effects screen (W): the stored ranking drawn, a sweep started from the app with
progress and cancel, a row's evidence replay opened in the compare screen, the chart,
bad and hostile input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, Select

import core.effects.sweep as sweep_module
from core.effects.sweep import run_sweep
from core.record.io import recording_digest
from core.record.recording import Recording
from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.loader import load_for_view
from inspector.screens.compare import CompareScreen
from inspector.screens.effects import EffectsScreen, SweepScreen, chart_rows
from inspector.widgets.effects_table import EffectsTable
from tests.inspector.test_replay_runner import SIZE, Gate, base_copy, held_base, idle

TOOL_ERROR = "sample-agent-fault-tool-error.json"


async def open_effects(pilot, app) -> EffectsScreen:
    await pilot.press("W")
    await idle(pilot, app)
    screen = app.screen
    assert isinstance(screen, EffectsScreen)
    return screen


async def start_sweep(pilot, app, *, executor: bool = True, repeat: str = "1", jobs: str = "1") -> None:
    """``s``, the dialog filled in (executor ticked), Start."""
    await pilot.press("s")
    await pilot.pause()
    dialog = app.screen
    assert isinstance(dialog, SweepScreen)
    if executor:
        dialog.query_one("#sweep-executor", Checkbox).value = True
    dialog.query_one("#sweep-repeat", Input).value = repeat
    dialog.query_one("#sweep-jobs", Input).value = jobs
    await pilot.pause()
    await pilot.click("#sweep-start")
    await pilot.pause()


def stored_effects(ws_path: Path, base: Path) -> list[dict]:
    with Workspace.open(ws_path, create=False) as ws:
        return ws.effects(recording_digest(Recording.load(base)))


async def test_a_sweep_started_from_the_app_ranks_the_planted_fault_first(tmp_path):
    """W on a failed run with no replays says how to get some; s sweeps every call in
    worker processes (the executor the recording names, ticked), the progress bar
    counts the replays, and the ranking — stored in the workspace, the same one the CLI
    prints — has the planted fault first, a fix, above rows whose effect is none."""
    base = base_copy(tmp_path, TOOL_ERROR)
    fault = Recording.load(base).metadata["fault"]["seq"]
    ws = tmp_path / "ws"
    app = InspectorApp(load_for_view(base), workspace=ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        assert "no replays of this run yet: press s to sweep" in str(screen.query_one("#effects-best").render())
        await start_sweep(pilot, app)
        assert app.screen is screen and screen._sweeping
        await idle(pilot, app)
        assert not screen._sweeping
        bar = screen.query_one("#effects-sweep-progress")
        assert bar.total == bar.progress == 7  # seven calls, one replay each
        rows = screen.effects
        assert rows[0]["seq"] == fault and rows[0]["outcome"]["direction"] == "fixes"
        assert rows[0]["score"] > 0 and all(r["score"] < rows[0]["score"] for r in rows[1:])
        assert all(r["outcome"]["direction"] == "none" for r in rows[1:])
        assert screen.table.effects == rows
        best = str(screen.query_one("#effects-best").render())
        assert best.startswith(f"best: call {fault} (tool check_refund_policy)")
        detail = str(screen.query_one("#effects-detail").render())
        assert "effect 1.00 ± 0.00 (fixes) · score 0.80 · reliability 0.80" in detail
        assert "only partially comparable" in detail
        # the chart draws the candidates that have an effect, best first
        assert [e["rank"] for e in chart_rows(rows)] == list(range(1, 8))
    cli = stored_effects(ws, base)
    assert [e["id"] for e in cli] == [e["id"] for e in rows]


async def test_enter_opens_the_evidence_replay_beside_the_base_at_the_checkpoint(tmp_path):
    """The fixing row's evidence replay opens in the compare screen, its cursor on the
    first divergence: the swept call's result."""
    base = base_copy(tmp_path, TOOL_ERROR)
    fault = Recording.load(base).metadata["fault"]["seq"]
    ws = tmp_path / "ws"
    run_sweep(base, executor="recorded", trust_executor=True, workspace=ws)
    app = InspectorApp(load_for_view(base), workspace=ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        assert screen.table.cursor == 0 and screen.effects[0]["seq"] == fault
        await pilot.press("enter")
        await idle(pilot, app)
        cmp = app.screen
        assert isinstance(cmp, CompareScreen)
        assert cmp.other.path.name == f"{screen.effects[0]['evidence']['replay_ids'][0]}.json"
        op = cmp.comparison.rows[cmp.table.cursor]
        assert op.base_seq == fault and op.op != "same"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


async def test_cancel_stops_a_sweep_held_in_a_call(tmp_path, monkeypatch):
    """K while a replay is held in its first tool call: the sweep stops (the stuck
    worker terminated after the grace), says how far it got, and nothing is ranked
    that did not finish."""
    monkeypatch.setattr(sweep_module, "CANCEL_GRACE", 0.5)
    gate = Gate(tmp_path, monkeypatch, expected=1)
    base = held_base(tmp_path)
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        await start_sweep(pilot, app)
        await gate.all_held()
        assert screen._sweeping
        await pilot.press("escape")  # leaving would cancel: it says so and stays
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("K")
        await pilot.pause()
        assert "cancelling the sweep" in str(screen.query_one("#effects-sweep-status").render())
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if not screen._sweeping:
                break
            await asyncio.sleep(0)  # the worker thread posts its end
        assert not screen._sweeping
        await idle(pilot, app)
        notes = [n.message for n in app._notifications]
        assert any(m.startswith("sweep cancelled after 0 of 7 replay(s)") for m in notes), notes
        assert screen.effects == []
        gate.server.close()


async def test_the_sweep_dialog_refuses_bad_settings_in_place(tmp_path):
    """Repeats or jobs out of range, or resample without the executor: the reason in
    the dialog, nothing started; escape closes it."""
    base = base_copy(tmp_path, TOOL_ERROR)
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        await pilot.press("s")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, SweepScreen)
        assert "7 candidate call(s) × 1 = 7 replay(s)" in str(dialog.query_one("#sweep-count").render())
        await pilot.click("#sweep-start")  # resample, executor not ticked
        await pilot.pause()
        assert app.screen is dialog
        assert "needs an executor (tick the box above)" in str(dialog.query_one("#sweep-error").render())
        dialog.query_one("#sweep-executor", Checkbox).value = True
        dialog.query_one("#sweep-repeat", Input).value = "0"
        dialog.query_one("#sweep-repeat", Input).focus()
        await pilot.press("enter")  # enter in a field starts too
        await pilot.pause()
        assert "repeats: a whole number from 1 to 1000, not '0'" in str(dialog.query_one("#sweep-error").render())
        dialog.query_one("#sweep-repeat", Input).value = "3"
        dialog.query_one("#sweep-candidates", Select).value = "errors"
        await pilot.pause()
        assert "1 candidate call(s) × 3 = 3 replay(s)" in str(dialog.query_one("#sweep-count").render())
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and not screen._sweeping
    assert not (tmp_path / "ws").exists()  # nothing was started, nothing created


async def test_a_stored_ranking_of_thousands_is_drawn_first_in_part(tmp_path):
    """A ranking longer than the first page is drawn at once in part, then completed;
    the cursor stays where the user moved it."""
    from bench.effects_ranking import synthetic
    from core.effects.ranking import rank_effects

    base = base_copy(tmp_path, TOOL_ERROR)
    rec = Recording.load(base)
    ranked = [e.to_json() for e in rank_effects(synthetic(3000, 3000))]
    assert len(ranked) > 1000
    ws = tmp_path / "ws"
    with Workspace.open(ws) as w:
        w.put_recording(rec, str(base))
        w.put_effects(recording_digest(rec), ranked)
    app = InspectorApp(load_for_view(base), workspace=ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        assert [e["id"] for e in screen.table.effects] == [e["id"] for e in ranked]
        header = str(screen.query_one("#effects-header").render())
        assert f"{len(ranked)} candidate(s) ranked from 3000 replay(s)" in header
        assert "0 stored for this run" in header  # synthetic: no replay behind them
        await pilot.press("end")
        await pilot.pause()
        assert screen.table.cursor == len(ranked) - 1


async def test_recorded_names_in_the_ranking_are_shown_as_data(tmp_path):
    """A candidate description with markup and terminal control codes (from a tool
    name) shows literally in the table, the detail pane and the best line."""
    base = base_copy(tmp_path, TOOL_ERROR)
    rec = Recording.load(base)
    hostile = "[bold red]x[/]\x1b[2J\x07 tool"
    doc = run_sweep(base, executor="recorded", trust_executor=True, workspace=None).to_json()
    effects = doc["effects"]
    effects[0]["description"] = hostile
    effects[0]["summary"] = hostile
    ws = tmp_path / "ws"
    with Workspace.open(ws) as w:
        w.put_recording(rec, str(base))
        w.put_effects(recording_digest(rec), effects)
    app = InspectorApp(load_for_view(base), workspace=ws)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        table = screen.query_one(EffectsTable)
        line0 = "".join(seg.text for seg in table.render_line(1))
        detail = str(screen.query_one("#effects-detail").render())
        best = str(screen.query_one("#effects-best").render())
        for text in (line0, detail, best):
            assert "[bold red]x[/]" in text
            assert "\x1b" not in text and "\x07" not in text


async def test_no_workspace_and_help_and_palette(tmp_path):
    """Without a workspace the screen says how to start; the help screen and the
    palette list the effects keys."""
    from inspector.commands import EFFECTS_COMMANDS, TIMELINE_COMMANDS

    base = base_copy(tmp_path, TOOL_ERROR)
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "none")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_effects(pilot, app)
        assert screen.effects == []
        assert "press s to sweep" in str(screen.query_one("#effects-best").render())
        groups = dict(app.help_groups())
        assert {b.id for b in groups["Effects (W)"]} == {
            "effects.sweep",
            "effects.evidence",
            "effects.rerank",
            "effects.cancel",
            "effects.close",
        }
        for _title, _help, action in EFFECTS_COMMANDS:
            assert hasattr(screen, f"action_{action.split('(')[0]}"), action
    assert any(action == "effects" for _t, _h, action in TIMELINE_COMMANDS)
    assert not (tmp_path / "none").exists()


def test_sweep_json_says_whether_it_was_cancelled(tmp_path, capsys):
    base = base_copy(tmp_path, TOOL_ERROR)
    assert main(["sweep", str(base), "--executor", "recorded", "--trust-executor", "--no-store", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cancelled"] is False


@pytest.mark.parametrize("size", [(160, 45), (110, 36)], ids=["160x45", "110x36"])
def test_snapshot_effects_table_and_chart(snap_compare, tmp_path, size):
    """The ranking of a sweep (in-memory replay ids: the picture does not change from
    run to run) with its chart, at 160 and 110 columns."""
    base = base_copy(tmp_path, TOOL_ERROR)
    rec = Recording.load(base)
    res = run_sweep(base, executor="recorded", trust_executor=True, workspace=None)
    ws = tmp_path / "ws"
    with Workspace.open(ws) as w:
        w.put_recording(rec, "base.json")
        w.put_effects(recording_digest(rec), [e.to_json() for e in res.effects])

    async def run_before(pilot):
        await pilot.press("W")
        await idle(pilot, pilot.app)

    app = InspectorApp(load_for_view(base), workspace=ws)
    assert snap_compare(app, terminal_size=size, run_before=run_before)
