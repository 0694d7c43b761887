"""Pilot and unit tests of the fixes from the UX review: run info, grouped import
warnings, adaptive columns, transcript rendering, link fallback, empty filters."""

from __future__ import annotations

import pytest
from rich.text import Text

from core.analysis.metrics import outcome_of
from core.analysis.timeline import transcript_for
from core.analysis.timeline_text import format_duration
from core.record.io import load_recording as load
from core.record.recording import (
    ChatMessage,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)
from inspector.app import InspectorApp
from inspector.loader import LoadedRecording, load_for_view
from inspector.runinfo import group_warnings, marked_seqs, open_notice
from inspector.screens.run_info import RunInfoScreen, run_info_text
from inspector.widgets.detail_pane import DetailPane, matched_fields
from inspector.widgets.filter_bar import FilterBar
from inspector.widgets.recording_header import RecordingHeader
from inspector.widgets.timeline_table import Columns, TimelineTable
from inspector.widgets.transcript import (
    MessageBlock,
    TranscriptView,
    arguments_text,
    message_text,
)
from tests.builders import ROOT

from .test_app_pilot import screen_of, seq_at_cursor, settle

REPO = ROOT
WHO_AND_WHEN = REPO / "sample_recordings" / "who-and-when-hand-crafted-1.json"
FAULT = REPO / "sample_recordings" / "sample-agent-fault-tool-error.json"
SWE = REPO / "sample_recordings" / "swe-agent-pydicom-1458.json"
TAU = REPO / "sample_recordings" / "tau-bench-airline-task0-trial0.json"


def plain(widget) -> str:
    r = widget.render()
    return r.plain if isinstance(r, Text) else str(r)


# ---------------------------------------------------------------------- run info


async def test_run_info_shows_ground_truth_and_m_jumps_to_the_mistake_step():
    loaded = load_for_view(WHO_AND_WHEN)
    ann = loaded.recording.metadata["annotation"]
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        header = plain(app.screen.query_one(RecordingHeader))
        assert "outcome failure" in header and f"mistake seq {ann['mistake_seq']}" in header
        # the marked record carries a flag in the status column
        table = app.screen.query_one(TimelineTable)
        assert table.marks == {ann["mistake_seq"]: "mistake"}
        await pilot.press("i")
        await settle(pilot, app)
        assert isinstance(app.screen, RunInfoScreen)
        text = plain(app.screen.query_one("#runinfo-text"))
        for needle in (
            ann["mistake_agent"],
            ann["mistake_reason"],
            "outcome",
            "failure",
            "mistake_step is the string '12'",
        ):
            assert needle in text
        await pilot.press("m")
        await settle(pilot, app)
        assert seq_at_cursor(app) == ann["mistake_seq"]
        # m from the timeline too
        await pilot.press("home", "m")
        await settle(pilot, app)
        assert seq_at_cursor(app) == ann["mistake_seq"]


def test_run_info_of_a_sample_agent_fault_and_of_swe_agent():
    fault = load(FAULT)
    assert [(m.seq, m.label) for m in marked_seqs(fault)] == [(fault.metadata["fault"]["seq"], "fault")]
    text = run_info_text(fault, []).plain
    assert "Planted fault" in text and fault.metadata["fault"]["description"] in text
    assert fault.metadata["outcome_reason"] in text
    # SWE-agent: exit_status is not an outcome; the app agrees with `metrics`
    swe = load(SWE)
    outcome, _ = outcome_of(swe)
    text = run_info_text(swe, []).plain
    assert f"outcome{' ' * 12}{outcome}" in text and f"exit_status{' ' * 8}submitted" in text


async def test_header_outcome_agrees_with_metrics_not_exit_status():
    loaded = load_for_view(SWE)
    app = InspectorApp(loaded)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        header = plain(app.screen.query_one(RecordingHeader))
        assert f"outcome {outcome_of(loaded.recording)[0]}" in header
        assert "outcome submitted" not in header
        # two lines, never wrapped
        assert app.screen.query_one(RecordingHeader).content_size.height == 2
        # no call recorded usage: the header shows the source's run totals, as `metrics` does
        ut = loaded.recording.metadata["usage_totals"]
        assert f"tokens {ut['input_tokens']:,} in / {ut['output_tokens']:,} out (run totals)" in header
        assert "tokens not recorded" not in header


async def test_header_shows_the_run_s_fields_before_the_file_s_format_at_160_columns():
    """SWE-agent's exit_status is in view at 160 columns: the run's fields come before
    the format and the producer, and a field equal to the run id shown is left out."""
    loaded = load_for_view(SWE)
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        header = app.screen.query_one(RecordingHeader)
        first = header.render_line(0).text
        assert "exit_status=submitted" in first
        run = loaded.recording.metadata["source"]["run"]
        assert f"run {run}" in first and f"instance_id={run}" not in plain(header)
        assert plain(header).index("exit_status=") < plain(header).index("format v2")


def test_tau_bench_run_info_lists_expected_actions():
    tau = load(TAU)
    text = run_info_text(tau, []).plain
    name = tau.metadata["expected_actions"][0]["name"]
    assert f"expected [0]{' ' * 7}{name}(" in text and "reward" in text


# ---------------------------------------------------------------------- import warnings


def test_near_identical_warnings_are_grouped():
    ws = [f"samples[0].messages[{i}]: the tool call's arguments are not in the source" for i in range(13)]
    ws.insert(0, "samples[0]: old layout: no events")
    groups = group_warnings(ws)
    assert groups == [
        ("samples[0]: old layout: no events", 1),
        ("samples[*].messages[*]: the tool call's arguments are not in the source", 13),
    ]


async def test_one_grouped_notice_on_open_and_every_warning_in_run_info():
    from core.importers import ImportWarning, Opened, RunRef
    from core.importers.base import fold_warnings

    rec = load(FAULT)
    ws = [ImportWarning(f"samples[0].messages[{i}]", "no arguments") for i in range(13)]
    opened = Opened(rec, "inspect_ai", "1", [RunRef("1", 0, "")], False, fold_warnings(ws), ws)
    loaded = LoadedRecording.from_opened(opened, "x.json")
    notices = loaded.notices
    assert notices == [
        "converted from inspect_ai (x.json) in memory; save it with: chassis-inspector import x.json -o OUT"
    ]
    assert (
        open_notice(rec, notices, opened=opened) == "converted from inspect_ai with 13 warnings — press i for run info"
    )
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        shown = [n.message for n in app._notifications]
        assert shown == ["converted from inspect_ai with 13 warnings — press i for run info"]
        await pilot.press("i")
        await settle(pilot, app)
        text = plain(app.screen.query_one("#runinfo-text"))
        assert "13 import warnings" in text and "samples[*].messages[*]: no arguments  (×13)" in text


# ---------------------------------------------------------------------- columns


def test_columns_hide_empty_ones_and_widen_names():
    # nothing recorded for time/duration/tokens: those columns never show
    cols = Columns.fit(96, 30, has_offset=False, has_duration=False, has_tokens=False, name_width=20, status_width=7)
    assert (cols.offset, cols.duration, cols.tokens) == (0, 0, 0)
    assert cols.name == 20 and cols.summary >= 30
    # recorded: shown at 100 columns, and the summary keeps its room
    cols = Columns.fit(100, 30, name_width=18, status_width=7)
    assert cols.offset and cols.tokens and cols.duration and cols.summary >= 30
    # narrow: the optional columns give way before the summary shrinks below 30
    cols = Columns.fit(80, 30, name_width=30, status_width=15)
    assert cols.summary >= 30 and cols.tokens == 0


async def test_table_at_160_columns_shows_full_names_and_no_empty_columns():
    loaded = load_for_view(TAU)
    app = InspectorApp(loaded)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        header = table.render_line(0).text
        assert "dur" not in header and "tokens" not in header  # nothing recorded
        longest = max(loaded.index.names, key=len)
        lines = [table.render_line(y).text for y in range(1, 25)]
        assert any(longest in line for line in lines)


# ---------------------------------------------------------------------- transcript


def test_tool_call_arguments_are_pretty_printed_and_thinking_is_dimmed():
    msg = ChatMessage(
        role="assistant",
        content=[
            {"type": "thinking", "thinking": "step 1\nstep 2\nstep 3\nstep 4\nstep 5"},
            {"type": "text", "text": "the answer"},
            {"$bigint": "123456789012345678901234567890"},
        ],
        tool_calls=[ToolCall(id="c1", name="book", arguments={"user": "mia", "flights": [{"n": "HAT136"}]})],
    )
    body, hidden = message_text(msg, expanded=False)
    text = body.plain
    assert "thinking\nstep 1" in text and "step 5" not in text and hidden == 2
    assert "the answer" in text and "123456789012345678901234567890" in text
    assert '{\n  "user": "mia",\n  "flights": [\n    {\n      "n": "HAT136"' in text
    assert any("dim" in str(span.style) for span in body.spans)
    full, hidden = message_text(msg, expanded=True)
    assert "step 5" in full.plain and hidden == 0
    # a string holding JSON is parsed; a plain string stays as it is
    assert arguments_text('{"a":1}') == '{\n  "a": 1\n}'
    assert arguments_text("ls -la") == "ls -la"
    assert arguments_text({"x": {"$nonfinite": "NaN"}}) == '{\n  "x": "NaN"\n}'


def _interrupt_recording() -> Recording:
    return Recording(
        records=[
            InterruptRecord(seq=0, run_id="r", value={"question": "May I delete the repo?", "state": {"step": 3}}),
            ModelRecord(
                seq=1,
                run_id="r",
                model="m",
                request=ModelRequest(messages=[ChatMessage(role="user", content="go")]),
                response=ModelResponse(message=ChatMessage(role="assistant", content="ok")),
            ),
            ToolRecord(seq=2, run_id="r", tool="bash", arguments={"command": "ls"}, result=ToolResult(content="a")),
        ]
    )


def test_interrupt_transcript_is_readable_and_grammar():
    loaded = LoadedRecording.from_recording(_interrupt_recording())
    entries, note = transcript_for(loaded.index, 0)
    assert note.startswith("interrupt seq 0")
    assert entries[0].message.content.startswith("May I delete the repo?")
    assert '"step": 3' in entries[0].message.content
    _, note = transcript_for(loaded.index, 1)
    assert note.endswith("1 request message")


def test_format_duration_hours():
    assert format_duration(50_000) == "13h53m"


async def test_z_in_the_transcript_keeps_the_scroll_position(built):
    app = InspectorApp(built)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("G", "k", "t")  # the final model call
        await settle(pilot, app)
        view = app.screen.query_one(TranscriptView)
        before = view.scroll_y
        assert before > 0
        await pilot.press("z")
        await settle(pilot, app)
        assert view.scroll_y >= before - 1 and view.scroll_y > 0


# ---------------------------------------------------------------------- navigation


async def test_follow_link_falls_back_to_the_model_call_before():
    loaded = LoadedRecording.from_recording(_interrupt_recording())
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("G", "l")  # tool call without tool_call_id
        await settle(pilot, app)
        assert seq_at_cursor(app) == 1
        await pilot.press("home", "l")  # an interrupt: not a call
        await settle(pilot, app)
        assert seq_at_cursor(app) == 0
        assert any("not a call" in n.message for n in app._notifications)


async def test_errors_only_on_a_run_without_errors_says_so():
    loaded = LoadedRecording.from_recording(_interrupt_recording())
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("x")
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        assert "no errors in this recording" in table.render_line(1).text
        assert "no errors in this recording" in plain(app.screen.query_one("#detail-identity"))


async def test_error_jump_centres_the_row(built_path, tmp_path):
    from tests.builders import write_recording

    loaded = load_for_view(write_recording(tmp_path / "padded.json", n_padding=200))
    app = InspectorApp(loaded)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("G", "e")  # wraps to the first error, far above
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        top = round(table.scroll_y)
        assert table.cursor - top >= 3  # rows before it, and rows after it, are visible


async def test_search_box_has_room_at_80_columns(built):
    app = InspectorApp(built)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"pytest")
        bar = app.screen.query_one(FilterBar)
        box = app.screen.query_one("#search")
        info = app.screen.query_one("#match-info")
        assert bar.has_class("-searching")
        assert box.region.right <= 80 and box.region.width >= 16 and info.region.right <= 80
        await pilot.press("enter")
        await settle(pilot, app)
        assert not bar.has_class("-searching")
        assert "match" in plain(info) and info.region.right <= 80


async def test_detail_says_where_the_record_matched(built):
    app = InspectorApp(built)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"zebra-quartz", "enter")
        await settle(pilot, app)
        assert "matched in result.content" in plain(app.screen.query_one("#detail-identity"))
    assert matched_fields({"arguments": {"command": "ls"}, "result": {"content": "LS"}}, "ls") == [
        "arguments.command",
        "result.content",
    ]


async def test_detail_identity_at_80x24_leaves_room_for_the_tabs(built):
    app = InspectorApp(built)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        await settle(pilot, app)
        detail = app.screen.query_one(DetailPane)
        assert app.screen.query_one("#detail-identity").size.height <= 3
        assert app.screen.query_one("#detail-error").size.height <= 2
        tabs = detail.query_one("#detail-tabs")
        assert tabs.size.height >= 5


async def test_moving_while_a_search_runs_keeps_the_cursor(built):
    app = InspectorApp(built)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        s.start_search("pytest")
        # the result arrives on the event loop: the user presses G first
        assert str(app.screen.query_one("#match-info").render()) == "searching…"
        s.table.action_last()
        last = s.table.cursor
        await settle(pilot, app)
        assert s.table.cursor == last  # not yanked back to a match
        assert s.matches and "match" in str(app.screen.query_one("#match-info").render())


async def test_cursor_row_is_black_on_white_in_16_colours(built, monkeypatch):
    monkeypatch.setattr(TimelineTable, "FORCE_LOW_COLOUR", True)
    app = InspectorApp(built)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        strip = table.render_line(1 + table.cursor)
        styles = {(str(seg.style.color), str(seg.style.bgcolor)) for seg in strip if seg.text.strip()}
        assert styles and all(c.endswith("#000000'>") or "000000" in c for c, _ in styles)
        assert all("ffffff" in b for _, b in styles)


async def test_filter_chips_go_compact_when_the_counter_would_not_fit(built):
    app = InspectorApp(built)
    async with app.run_test(size=(124, 30)) as pilot:
        await settle(pilot, app)
        bar = app.screen.query_one(FilterBar)
        assert not bar.has_class("-compact")  # small counts: full chips fit
        big = {"model": 49_949, "tool": 49_949, "interrupt": 100, "snapshot": 1, "lifecycle": 1}
        bar.set_state(frozenset(big), False, big)
        await pilot.pause()
        assert bar.has_class("-compact")
        assert app.screen.query_one("#match-info").region.right <= 124


async def test_search_term_is_highlighted_in_the_transcript(built):
    app = InspectorApp(built)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"zebra-quartz", "enter")
        await settle(pilot, app)
        await pilot.press("t")
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        current = [b for b in blocks if b.entry.current][-1]
        body = current.body
        marked = [body.plain[sp.start : sp.end] for sp in body.spans if "e0c000" in str(sp.style)]
        assert marked and all(m.lower() == "zebra-quartz" for m in marked)


async def test_palette_icon_is_plain_in_the_browser(built, monkeypatch):
    from textual.command import SearchIcon

    monkeypatch.setattr(InspectorApp, "is_web", property(lambda self: True))
    app = InspectorApp(built)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await settle(pilot, app)
        icons = list(app.screen.query(SearchIcon))
        assert icons and all(i.icon == "›" for i in icons)


# ---------------------------------------------------------------------- error banner


@pytest.mark.parametrize("size", [(120, 30), (80, 24)])
async def test_error_banner_keeps_the_specific_error_and_stays_on_the_transcript(default, size):
    """README walkthrough: `e` shows `edit_rejected: … E999 SyntaxError: unmatched ']'`;
    `t` keeps the banner (the same detail header on both tabs)."""
    app = InspectorApp(default)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        await settle(pilot, app)
        assert seq_at_cursor(app) == 11
        banner = app.screen.query_one("#detail-error")
        text = plain(banner)
        assert text.startswith("✗ edit_rejected: ") and text.endswith("E999 SyntaxError: unmatched ']'"), text
        assert banner.size.height >= 1 and "shown" in banner.classes
        await pilot.press("t")
        await settle(pilot, app)
        assert app.screen.query_one(DetailPane).active_tab == "tab-transcript"
        assert banner.display and banner.size.height >= 1
        assert plain(banner) == text


def test_error_banner_fits_its_lines():
    from inspector.widgets.detail_pane import error_banner

    msg = "A long explanation of what went wrong. " * 5 + "E1 Specific: detail"
    for width in (40, 60, 94, 200):
        for lines in (1, 2):
            out = error_banner("t", msg, width, lines)
            assert out.startswith("✗ t: ") and len(out.splitlines()) <= lines
            assert all(len(line) <= width for line in out.splitlines()), out
            assert out.endswith("E1 Specific: detail")
    assert error_banner("t", "short", 40) == "✗ t: short"
    # an empty part is left out with its colon
    assert error_banner("timeout", "", 40) == "✗ timeout"
    assert error_banner("timeout", " \n", 40) == "✗ timeout"
    assert error_banner("", "boom", 40) == "✗ boom"
    assert error_banner("", "", 60) == "✗ an error, recorded without a type or a message"
    assert error_banner("", "模型错误", 40) == "✗ 模型错误"
    assert error_banner("t", "x" * 100, 40, 1) == "✗ t: " + "x" * 34 + "…"


async def test_run_info_fits_long_metadata_values_to_the_width():
    """The SWE-agent `submission` (a long diff) is folded to fit: its length hint stays
    visible instead of being clipped at the modal's right edge."""
    from rich.style import Style

    from inspector.widgets.json_tree import JsonTree

    app = InspectorApp(load_for_view(SWE))
    async with app.run_test(size=(100, 36)) as pilot:
        await settle(pilot, app)
        await pilot.press("i")
        await settle(pilot, app)
        assert isinstance(app.screen, RunInfoScreen)
        tree = app.screen.query_one(JsonTree)
        (node,) = [n for n in tree.root.children if n.data and n.data.path == ["submission"]]
        label = tree.render_label(node, Style(), Style())
        room = tree.scrollable_content_region.width - tree.guide_depth
        assert label.cell_len <= room, (label.plain, room)
        assert label.plain.rstrip().endswith("enter to expand)") and "submission: " in label.plain


@pytest.mark.asyncio
async def test_widening_a_filter_keeps_the_cursor_row_on_screen():
    """From a few error rows back to every row: the cursor stays on its record and the
    table scrolls to it (the scroll waits for the new height; made at once it was
    clamped to the few rows' height and left the cursor below the screen)."""
    app = InspectorApp(load_for_view(ROOT / "sample_recordings" / "codex-gpt55-context-setting.json"))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        screen = screen_of(app)
        table = screen.table
        screen.jump_to(screen.index.seqs.index(140))
        await settle(pilot, app)
        await pilot.press("x")  # errors only: a handful of rows
        await settle(pilot, app)
        kept = table.cursor_position
        assert len(table.view) < table._page
        await pilot.press("x")  # every row again
        await settle(pilot, app)
        assert table.cursor_position == kept and table.cursor > table._page
        top = round(table.scroll_y)
        assert top <= table.cursor < top + table._page  # the cursor row is drawn
        assert screen.detail.position == kept


def test_cells_are_counted_in_terminal_cells():
    """A wide character (CJK) takes two cells: a cell is cut and padded by cells, so the
    columns after it stay where they are."""
    from rich.cells import cell_len

    from inspector.widgets.timeline_table import _cell

    for text in ("ascii name", "呼び出し呼び出し", "mixé 呼び", "", "é" * 30):
        for width in (1, 2, 5, 8, 12, 40):
            for right in (False, True):
                out = _cell(text, width, right)
                assert cell_len(out) == width, (text, width, right, out)
                if cell_len(text) <= width:
                    assert out.strip() == text.strip()
                else:
                    assert out.rstrip().endswith("…")
    assert _cell("呼び出し", 5) == "呼び…"  # 2 + 2 + 1 cells
    assert _cell("呼び出し", 4) == "呼 …"  # the second character would be cut in half: a space


@pytest.mark.asyncio
async def test_wide_characters_keep_the_table_columns_and_the_identity_lines(tmp_path):
    from rich.cells import cell_len

    from tests.builders import recording, tool

    wide = "呼び出し" * 10
    rec = recording(
        tool(0, "lookup", {"q": "plain"}, "ok"),
        tool(1, "検索ツール" * 4, {"q": wide}, wide, error="エラー"),
    )
    rec.records[1].tool_call_id = wide
    rec.records[1].run_id = wide
    path = tmp_path / "wide.json"
    rec.save(path)
    app = InspectorApp(load_for_view(path))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        screen = screen_of(app)
        table = screen.table
        width = table.scrollable_content_region.width
        rows = [table.render_line(y) for y in (1, 2)]
        assert [r.cell_length for r in rows] == [width, width]
        texts = ["".join(seg.text for seg in r) for r in rows]
        status_at = [cell_len(texts[0][: texts[0].rindex(" ok")]) + 1, cell_len(texts[1][: texts[1].index("✗")])]
        assert status_at[0] == status_at[1]  # the status column starts at the same cell
        await pilot.press("down")
        await settle(pilot, app)
        detail = app.screen.query_one(DetailPane)
        ident = detail._identity_text(screen.index, 1)
        limit = max(30, detail.size.width - 2)
        assert all(cell_len(line) <= limit for line in ident.plain.split("\n"))
        call_line = next(line for line in ident.plain.split("\n") if line.startswith("call id"))
        assert call_line.endswith("…") and cell_len(call_line) <= limit  # cut by cells


def test_error_banner_counts_wide_characters_in_cells():
    """A CJK error message: every line fits in cells, the message is not lost behind
    its type, and the last sentence is kept when it fits."""
    from rich.cells import cell_len

    from inspector.widgets.detail_pane import error_banner

    msg = "これは非常に長いエラーメッセージです。" * 4 + "最後の文です。"
    for width in (38, 60, 94, 200):
        for lines in (1, 2):
            out = error_banner("エラー", msg, width, lines)
            rows = out.splitlines()
            assert out.startswith("✗ エラー: これは") and len(rows) <= lines, out
            assert all(cell_len(row) <= width for row in rows), (width, lines, out)
            if cell_len(out) > width:  # cut: the specific part is kept
                assert out.endswith("最後の文です。"), out
    assert error_banner("エラー", "短い", 40) == "✗ エラー: 短い"


def test_the_header_says_the_version_a_file_was_written_in():
    """A v1 or v2 file is read as the current version (migrated on load): the header says
    both, so a user knows `migrate` would give the file its index."""
    from core.record.io import load_recording
    from inspector.loader import load_for_view
    from inspector.widgets.recording_header import format_label
    from tests.builders import DATA

    fmt = DATA / "format"
    assert format_label(load_recording(fmt / "v1.json")) == "format v1 (migrated in memory)"
    assert format_label(load_recording(fmt / "v2-meta-links.json")) == "format v2 (migrated in memory)"
    assert format_label(load_recording(fmt / "v3-growing-history.json")) == "format v3"
    # the fast open of a v1 file (the skeleton decode) says so before it is verified
    view = load_for_view(fmt / "v1.json", fast_open_bytes=0)
    assert format_label(view.recording) == "format v1 (migrated in memory)"


async def test_tab_goes_from_the_timeline_to_the_record_then_the_search():
    """The tab bar is switched by `r` / `t` (or a click): Tab does not stop on it."""
    app = InspectorApp(load_for_view(SWE))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        for tab, shown in (("r", "detail-tree"), ("t", "detail-transcript")):
            app.screen.query_one(TimelineTable).focus()
            await pilot.press(tab)
            await settle(pilot, app)
            chain = []
            for _ in range(3):
                await pilot.press("tab")
                await settle(pilot, app)
                chain.append(app.focused.id if app.focused else None)
            assert chain == [shown, "search", "timeline"]


async def test_the_detail_pane_marks_its_focus_and_keeps_it_across_tabs():
    app = InspectorApp(load_for_view(SWE))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, app)
        pane = app.screen.query_one(DetailPane)
        assert pane.styles.outline_left[0] == ""  # the timeline has the focus
        await pilot.press("tab")
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "detail-tree"
        assert pane.styles.outline_left[0] == "tall"  # a bar along the pane's left edge
        await pilot.press("t")  # the hidden tree cannot keep the focus: the transcript takes it
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "detail-transcript"
        await pilot.press("r")
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "detail-tree"
        await pilot.press("shift+tab")
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "timeline"
        assert pane.styles.outline_left[0] == ""


@pytest.mark.parametrize("width", [160, 110])
async def test_a_marked_step_that_failed_shows_the_error_and_the_mark(width):
    """The planted fault's tool call failed: its row says both (the error in red first),
    where the mark alone hid the error from a reader scanning the status column."""
    loaded = load_for_view(REPO / "sample_recordings" / "sample-agent-fault-tool-error.json")
    seq = loaded.recording.metadata["fault"]["seq"]
    app = InspectorApp(loaded)
    async with app.run_test(size=(width, 40)) as pilot:
        await settle(pilot, app)
        screen = screen_of(app)
        assert screen.index.statuses[screen.index.position_of_seq(seq)] == "error"
        table = app.screen.query_one(TimelineTable)
        rows = [table.render_line(y) for y in range(1, 20)]
        (row,) = [strip for strip in rows if strip.text.lstrip().startswith(f"{seq} ")]
        assert "✗ ⚑ fault" in row.text
        cross = next(seg for seg in row if seg.text.startswith("✗"))
        assert cross.style is not None and cross.style.color is not None and cross.style.color.triplet is not None
        assert cross.style.color.triplet.red > 150 > cross.style.color.triplet.green  # red: the error's style
