"""Snapshot tests (pytest-textual-snapshot): the timeline and the detail pane.

Baselines live in ``__snapshots__/``; after a deliberate change, look at the report
(``snapshot_report.html``) before updating with ``--snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

from inspector.app import InspectorApp
from inspector.loader import load_for_view
from tests.builders import write_recording


def _app(tmp_path: Path) -> InspectorApp:
    # a fixed file name: the header shows it
    path = tmp_path / "date-parsing-run.json"
    write_recording(path)
    return InspectorApp(load_for_view(path))


async def _settle(pilot) -> None:
    from .test_app_pilot import settle

    await settle(pilot, pilot.app)


def test_timeline(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path), terminal_size=(140, 30), run_before=_settle)


def test_timeline_search_highlight_and_errors_filter(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("slash", *"pytest", "enter")
        await _settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=(140, 30), run_before=run_before)


def test_detail_pane_record_tree_of_a_failing_tool_call(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("e")
        await _settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=(140, 36), run_before=run_before)


def test_detail_pane_transcript(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("e", "t")
        await _settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=(140, 36), run_before=run_before)


def test_help_screen(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=(120, 50), run_before=run_before)


def test_narrow_terminal_stacks_the_detail_pane(snap_compare, tmp_path):
    async def run_before(pilot):
        await pilot.press("e")
        await _settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=(80, 34), run_before=run_before)


def test_hostile_names_and_control_characters_are_drawn_as_text(snap_compare, tmp_path):
    """Markup-looking names (``run[/red]``, ``[red]bash[/red]``), escape and OSC
    sequences, bidi and zero-width characters: drawn literally, marked ⚠ (the failing
    tool call selected, so the error banner and the record tree show them too)."""
    from core.record.io import save_recording
    from tests.hostile import hostile_recording

    path = tmp_path / "hostile-run.json"
    save_recording(hostile_recording(), path)

    async def run_before(pilot):
        await pilot.press("f")
        await _settle(pilot)

    assert snap_compare(InspectorApp(load_for_view(path)), terminal_size=(160, 45), run_before=run_before)
