"""Answer sources on screen: the source column, its filter, the reason in the detail pane,
the palette and help entries, a snapshot, and the ``timeline`` command's column.

The replay's events come from a real replay of the sample-agent fault recording
(``tests/core/analysis/test_answer_sources.py``): seq 3–5 recorded, seq 6 the
``tool_result`` intervention, seq 7 the branch's model fixture.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from core.analysis.timeline_text import CSV_FIELDS
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.commands import SOURCE_COMMANDS, TimelineCommands
from inspector.loader import load_for_view
from inspector.screens.help import HelpScreen
from inspector.widgets.filter_bar import Chip, FilterBar
from inspector.widgets.timeline_table import Columns, TimelineTable
from tests.core.analysis.test_answer_sources import FIXTURE_ID, SAMPLE, replay_with_sources

from .test_app_pilot import screen_of, seq_at_cursor, settle

SIZE = (180, 32)


@pytest.fixture(scope="module")
def events_path(tmp_path_factory) -> Path:
    """The events file of the replay, as the CLI writes it (``WORKSPACE/replays/ID.json``)."""
    path, _ = replay_with_sources(tmp_path_factory.mktemp("events"))
    return path


def row_texts(table: TimelineTable) -> dict[int, str]:
    """seq → the drawn text of each row on screen (the Line API's own strips)."""
    out = {}
    for y in range(1, len(table.view) + 1):
        p = table.view[y - 1]
        out[table.index.seqs[p]] = table.render_line(y).text
    return out


def source_segment(table: TimelineTable, seq: int, symbol: str):
    """The segment of the row of ``seq`` that draws ``symbol`` (the source cell)."""
    y = table.row_of_position(table.index.position_of_seq(seq)) + 1
    return next(s for s in table.render_line(y) if symbol in s.text)


def shown_chips(app) -> dict[str, bool]:
    """Answer-source chips shown in the filter bar → lit (their rows shown)."""
    bar = app.screen.query_one(FilterBar)
    return {
        (c.id or "")[7:]: c.has_class("on")
        for c in bar.query(Chip)
        if (c.id or "").startswith("source-") and not c.has_class("empty")
    }


async def test_the_column_shows_each_calls_source_as_symbol_name_and_colour(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        table = screen_of(app).table
        assert "source" in table.render_line(0).text  # the header
        rows = row_texts(table)
        for seq in (3, 4, 5):
            assert "= recorded" in rows[seq]
        assert "✎ intervention" in rows[6] and "▣ fixture" in rows[7]
        assert "= recorded" not in rows[6] + rows[7]
        for seq in (0, 1, 2):  # lifecycle and snapshot separators answer nothing
            assert not any(sym in rows[seq] for sym in ("= recorded", "✎", "▣"))
        # every record of a replay's events is replayed: the status says ok, the source how
        assert "↺ replayed" not in "".join(rows.values())
        # the symbol is drawn in its source's colour (besides its name)
        iv = source_segment(table, 6, "✎").style.color
        fx = source_segment(table, 7, "▣").style.color
        assert iv is not None and fx is not None and iv != fx


async def test_narrow_tables_keep_the_symbol(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        table = screen_of(app).table
        rows = row_texts(table)
        assert "✎" in rows[6] and "▣" in rows[7] and "=" in rows[3]
    assert Columns.fit(60, 9, source_width=14, source_short_width=6).source == 3  # the symbol alone
    assert Columns.fit(200, 9, source_width=14, source_short_width=6).source == 14
    assert Columns.fit(200, 9).source == 0  # a plain recording: no column, no room


async def test_a_plain_recording_has_no_source_column_and_no_source_chips():
    app = InspectorApp(load_for_view(SAMPLE))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        table = screen_of(app).table
        header = table.render_line(0).text
        assert "source" not in header and "src" not in header
        assert table._columns(table.size.width).source == 0
        assert shown_chips(app) == {}
        assert app.screen.query_one("#source-key").has_class("empty")
        await pilot.press("S")
        await settle(pilot, app)
        assert len(table.view) == len(table.index)  # nothing filtered
        assert any("not a replay's events" in n.message for n in app._notifications)


async def test_the_source_key_steps_through_the_sources_present(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        seqs = lambda: [s.index.seqs[p] for p in s.table.view]  # noqa: E731
        assert shown_chips(app) == {"recorded": True, "intervention": True, "fixture": True}
        await pilot.press("S")
        await settle(pilot, app)
        assert seqs() == [3, 4, 5]
        assert shown_chips(app) == {"recorded": True, "intervention": False, "fixture": False}
        await pilot.press("S")
        await settle(pilot, app)
        assert seqs() == [6] and seq_at_cursor(app) == 6
        assert any("only ✎ intervention (1)" in n.message for n in app._notifications)
        await pilot.press("S")
        await settle(pilot, app)
        assert seqs() == [7]
        # the detail pane follows the cursor: why the fixture answered
        shown = " ".join(str(s.detail.query_one("#detail-identity").render()).split())  # as wrapped
        assert f"fixture {FIXTURE_ID} (branch scope) answers any request to model" in shown
        await pilot.press("S")
        await settle(pilot, app)
        assert seqs() == list(range(8))  # every row again, separators included
        assert shown_chips(app) == {"recorded": True, "intervention": True, "fixture": True}


async def test_the_source_filter_composes_with_the_kind_filter_and_jumps_clear_it(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        seqs = lambda: [s.index.seqs[p] for p in s.table.view]  # noqa: E731
        await s.run_action("only_source('recorded')")
        await settle(pilot, app)
        assert seqs() == [3, 4, 5]
        await pilot.press("1")  # hide model calls
        await settle(pilot, app)
        assert seqs() == [4]
        await s.run_action("only_source('fixture')")  # the fixture answered a model call: hidden
        await settle(pilot, app)
        assert seqs() == []
        assert "no row shown is answered by ▣ fixture" in s.table.empty_message
        await pilot.press("1")  # model calls back: the fixture's row shows
        await settle(pilot, app)
        assert seqs() == [7]
        assert "▣ fixture" not in s.table.empty_message
        # a jump to a row the source filter hides clears it
        assert s.go_to_seq(4)
        await settle(pilot, app)
        assert s.table.sources is None and seq_at_cursor(app) == 4
        assert len(s.table.view) == 8


async def test_clicking_a_source_chip_toggles_its_rows(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        await pilot.click("#source-recorded")
        await settle(pilot, app)
        assert [s.index.seqs[p] for p in s.table.view] == [6, 7]
        assert shown_chips(app) == {"recorded": False, "intervention": True, "fixture": True}
        await pilot.click("#source-recorded")
        await settle(pilot, app)
        assert len(s.table.view) == 8 and s.table.sources is None


async def test_the_detail_pane_says_why(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        identity = s.detail.query_one("#detail-identity")
        for seq, expected in (
            (6, "✎ intervention  intervention 0 (tool_result at seq 6) answers this call of tool 'get_order'"),
            (3, "= recorded  recorded answer for key sha256:"),
        ):
            assert s.go_to_seq(seq)
            await settle(pilot, app)
            text = " ".join(str(identity.render()).split())
            assert " ".join(expected.split()) in text, text


async def test_the_source_lines_show_a_reason_as_data():
    from inspector.widgets.detail_pane import source_lines

    lines = source_lines("fixture", "fixture fx-\x1b[2J[red]x[/red] " + "word " * 60, 40)
    assert len(lines) == 3 and all(len(t) <= 40 for t in lines)
    assert "␛[2J[red]x[/red]" in lines[0].plain  # escapes shown, markup not parsed
    assert lines[2].plain.endswith("…")


async def test_palette_and_help_list_the_source_filter(events_path):
    app = InspectorApp(load_for_view(events_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        provider = TimelineCommands(app.screen)
        titles = [t for t, _, _ in provider._commands()]
        assert "filter: next answer source" in titles
        assert all(t in titles for t, _, _ in SOURCE_COMMANDS)
        await pilot.press("ctrl+p")
        await settle(pilot, app)
        await pilot.press(*"only fixture answers")
        await settle(pilot, app)
        await pilot.press("enter")
        await settle(pilot, app)
        s = screen_of(app)
        assert [s.index.seqs[p] for p in s.table.view] == [7]
        await pilot.press("question_mark")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        groups = dict(app.screen.groups)
        assert "filter.source" in {b.id for b in groups["Filter"]}


async def test_a_plain_recording_offers_no_per_source_palette_entries():
    app = InspectorApp(load_for_view(SAMPLE))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        titles = [t for t, _, _ in TimelineCommands(app.screen)._commands()]
        assert "filter: next answer source" in titles
        assert not any(t in titles for t, _, _ in SOURCE_COMMANDS)


async def test_the_source_key_can_be_remapped(events_path):
    app = InspectorApp(load_for_view(events_path), {"filter.source": "ctrl+o"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        s = screen_of(app)
        assert [s.index.seqs[p] for p in s.table.view] == [3, 4, 5]


# ---------------------------------------------------------------- snapshot


def test_snapshot_replay_timeline_with_answer_sources(snap_compare, events_path, tmp_path):
    """A replay's events: recorded, intervention and fixture answers in the source column,
    their chips in the filter bar, the fixture's reason in the detail pane."""
    path = tmp_path / "rp-answer-sources.json"  # a fixed name: the header shows it
    shutil.copy(events_path, path)

    async def run_before(pilot):
        await pilot.press("G")
        await settle(pilot, pilot.app)

    assert snap_compare(InspectorApp(load_for_view(path)), terminal_size=(180, 24), run_before=run_before)


# ---------------------------------------------------------------- the timeline command


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_the_source_column(events_path, capsys):
    code, out, err = cli(capsys, "timeline", events_path)
    assert code == 0, err
    header, *lines = out.splitlines()
    assert "source" in header.split()
    by_seq = {int(ln.split()[0]): ln for ln in lines}
    assert all("= recorded" in by_seq[s] for s in (3, 4, 5))
    assert "✎ intervention" in by_seq[6] and "▣ fixture" in by_seq[7]
    assert not any(sym in by_seq[0] for sym in ("= recorded", "✎", "▣"))
    # --kind and the column together
    code, out, _ = cli(capsys, "timeline", events_path, "--kind", "tool")
    assert [ln.split()[0] for ln in out.splitlines()[1:]] == ["4", "6"]


def test_cli_json_and_csv_carry_source_and_reason(events_path, capsys):
    code, out, err = cli(capsys, "timeline", events_path, "--json")
    assert code == 0, err
    rows = {r["seq"]: r for r in orjson.loads(out)}
    assert rows[7]["source"] == "fixture"
    assert (
        rows[7]["reason"]
        == f"fixture {FIXTURE_ID} (branch scope) answers any request to model 'scripted-support-v1' (model-wide)"
    )
    assert rows[3]["source"] == "recorded" and rows[3]["reason"].startswith("recorded answer for key sha256:")
    assert rows[0]["source"] is None
    code, out, err = cli(capsys, "timeline", events_path, "--csv")
    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split(",") == [*CSV_FIELDS, "source", "reason"]
    assert any(ln.startswith("6,") and ",intervention,intervention 0 (tool_result at seq 6)" in ln for ln in lines)


def test_cli_plain_recording_has_no_source_column(capsys):
    code, out, _ = cli(capsys, "timeline", SAMPLE)
    assert code == 0 and "source" not in out.splitlines()[0]
    code, out, _ = cli(capsys, "timeline", SAMPLE, "--json")
    assert all("source" not in r and "reason" not in r for r in orjson.loads(out))
    code, out, _ = cli(capsys, "timeline", SAMPLE, "--csv")
    assert out.splitlines()[0].split(",") == list(CSV_FIELDS)
