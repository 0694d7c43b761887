"""Pilot tests of the inspector app: open a recording and use it like a user would."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Input

from core.record.recording import ModelRecord, ToolRecord
from inspector.app import InspectorApp
from inspector.commands import TIMELINE_COMMANDS
from inspector.screens.help import HelpScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.detail_pane import DetailPane
from inspector.widgets.json_tree import JsonTree
from inspector.widgets.timeline_table import TimelineTable
from inspector.widgets.transcript import MessageBlock, TranscriptView
from tests.builders import UNIQUE_RESULT

pytestmark = pytest.mark.asyncio

SIZE = (140, 40)


async def settle(pilot, app) -> None:
    """Wait for the background work, the pending messages and the detail pane (whose
    redraw after a cursor move is debounced): never a fixed sleep."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    if isinstance(app.screen, TimelineScreen):
        await asyncio.wait_for(app.screen.detail_settled(), timeout=30)  # a hang fails, not a race
        await pilot.pause()


def screen_of(app) -> TimelineScreen:
    assert isinstance(app.screen, TimelineScreen)
    return app.screen


def seq_at_cursor(app) -> int:
    s = screen_of(app)
    return s.index.seqs[s.table.cursor_position]


@pytest.mark.parametrize("which", ["built", "real", "default"])
async def test_opens_with_one_row_per_record(which, request):
    loaded = request.getfixturevalue(which)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        assert len(table.view) == len(loaded.recording.records)
        assert table.virtual_size.height == len(loaded.recording.records) + 1  # + header line
        assert table.cursor_position == 0


async def test_filter_to_tools_only(real):
    app = InspectorApp(real)
    n_tools = sum(isinstance(r, ToolRecord) for r in real.recording.records)
    assert n_tools > 0
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        # hide every kind but tools with the number keys (1 model, 3 interrupt, 4 snapshot, 5 lifecycle)
        await pilot.press("1", "3", "4", "5")
        await settle(pilot, app)
        s = screen_of(app)
        assert len(s.table.view) == n_tools
        assert all(s.index.kinds[p] == "tool" for p in s.table.view)
        # and back
        await pilot.press("0")
        assert len(s.table.view) == len(real.recording.records)


async def test_only_tools_from_the_palette_action(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await app.screen.run_action("only_kind('tool')")
        s = screen_of(app)
        assert [s.index.kinds[p] for p in s.table.view] == ["tool"] * 6


async def test_search_lands_on_the_one_tool_result(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"ZEBRA-quartz")  # case-insensitive
        await pilot.press("enter")
        await settle(pilot, app)
        s = screen_of(app)
        rec = s.index.record(s.table.cursor_position)
        assert isinstance(rec, ToolRecord) and UNIQUE_RESULT in rec.result.content
        # the tool result, and the model call that reads it (its new request message)
        assert s.matches == [s.table.cursor_position, s.table.cursor_position + 1]
        assert s.index.kinds[s.matches[1]] == "model"
        assert s.table.matches == frozenset(s.matches)  # highlighted
        assert isinstance(app.focused, TimelineTable)
        assert "match 1/2" in str(s.query_one("#match-info").render())


async def test_escape_clears_the_search_shown(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"ZEBRA-quartz", "enter")
        await settle(pilot, app)
        s = screen_of(app)
        here = s.table.cursor_position
        assert s.matches and "match 1/2" in str(s.query_one("#match-info").render())
        await pilot.press("escape")  # in the table: the search goes, the cursor stays
        await settle(pilot, app)
        assert s.search_text == "" and s.matches == [] and s.table.matches == frozenset()
        assert str(s.query_one("#match-info").render()) == ""
        assert s.query_one("#search", Input).value == ""  # the box holds no term not applied
        assert s.table.cursor_position == here and isinstance(app.screen, type(s))


async def test_search_next_and_previous_match(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        s.start_search("pytest")
        await settle(pilot, app)
        hits = s.matches
        assert len(hits) >= 2
        assert s.table.cursor_position == hits[0]
        await pilot.press("n")
        assert s.table.cursor_position == hits[1]
        await pilot.press("N")
        assert s.table.cursor_position == hits[0]


async def test_jump_to_first_and_next_error(built):
    app = InspectorApp(built)
    errors = [
        r.seq
        for r in built.recording.records
        if (isinstance(r, ToolRecord) and r.is_error) or (isinstance(r, ModelRecord) and r.is_error)
    ]
    assert len(errors) == 2
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        assert seq_at_cursor(app) == errors[0] == built.recording.first_error().seq
        await pilot.press("e")
        assert seq_at_cursor(app) == errors[1]
        await pilot.press("E")
        assert seq_at_cursor(app) == errors[0]
        await pilot.press("end", "f")
        assert seq_at_cursor(app) == errors[0]
        await settle(pilot, app)
        detail = app.screen.query_one(DetailPane)
        assert detail.position == screen_of(app).table.cursor_position
        assert "shown" in detail.query_one("#detail-error").classes


@pytest.mark.parametrize("which", ["real", "default"])
async def test_first_error_in_real_recordings(which, request):
    loaded = request.getfixturevalue(which)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        first = loaded.recording.first_error()
        assert first is not None and seq_at_cursor(app) == first.seq
        await pilot.press("t")
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        # the failing call is the last, current block; the model's request comes before it
        assert blocks[-1].entry.current
        assert len(blocks) > 1


async def test_transcript_of_a_model_call_shows_the_tool_message(real):
    # the last model call's request carries the earlier tool results as tool messages
    model_positions = [i for i, r in enumerate(real.recording.records) if isinstance(r, ModelRecord)]
    last = model_positions[-1]
    rec = real.recording.records[last]
    tool_ids = [m.tool_call_id for m in rec.request.messages if m.role == "tool"]
    assert tool_ids
    app = InspectorApp(real)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("g")
        await pilot.press(*str(rec.seq), "enter")
        await settle(pilot, app)
        assert seq_at_cursor(app) == rec.seq
        await pilot.press("t")
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        roles = [b.entry.message.role for b in blocks]
        assert roles[: len(rec.request.messages)] == [m.role for m in rec.request.messages]
        tool_blocks = [b for b in blocks if b.entry.message.role == "tool"]
        assert tool_blocks and tool_blocks[0].entry.message.tool_call_id == tool_ids[0]
        assert f"answers {tool_ids[0]}" in str(tool_blocks[0].border_title)
        assert blocks[-1].entry.current and blocks[-1].entry.message.role == "assistant"


async def test_transcript_before_a_failing_tool_call(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e", "t")
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        assert blocks[-1].entry.current and blocks[-1].entry.message.role == "tool"
        assert "EditRejected" in blocks[-1].entry.message.content
        assert blocks[-2].entry.message.tool_calls[0].id == blocks[-1].entry.message.tool_call_id


async def test_follow_tool_call_link_and_back(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e")  # tool seq 7 (call_3)
        tool_seq = seq_at_cursor(app)
        await pilot.press("l")
        s = screen_of(app)
        model = s.index.record(s.table.cursor_position)
        assert isinstance(model, ModelRecord)
        tool = s.index.record(s.index.position_of_seq(tool_seq))
        assert tool.tool_call_id in [c.id for c in model.response.message.tool_calls]
        await pilot.press("l")  # model → the tool call that answered it
        assert seq_at_cursor(app) == tool_seq
        await pilot.press("b", "b")
        assert seq_at_cursor(app) == tool_seq


async def test_goto_seq_and_errors_only(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("colon", "1", "2", "enter")
        assert seq_at_cursor(app) == 12
        await pilot.press("x")
        s = screen_of(app)
        assert [s.index.statuses[p] for p in s.table.view] == ["error", "error"]
        # going to a hidden record clears the filter
        await pilot.press("g", "0", "enter")
        assert seq_at_cursor(app) == 0
        assert len(s.table.view) == len(built.recording.records)


async def test_cursor_keys_and_detail_follows(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("down", "down", "j")
        assert seq_at_cursor(app) == 3
        await pilot.press("end")
        assert seq_at_cursor(app) == built.recording.records[-1].seq
        await pilot.press("home")
        await settle(pilot, app)
        tree = app.screen.query_one(JsonTree)
        assert tree.root.data.value["seq"] == 0


async def test_long_strings_fold_and_expand(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        s = screen_of(app)
        s.go_to_seq(5)  # cat src/dates.py: a multi-line result
        await settle(pilot, app)
        tree = app.screen.query_one(JsonTree)
        result = next(c for c in tree.root.children if str(c.label).startswith("result"))
        content = next(c for c in result.children if str(c.label).startswith("content"))
        assert content.data.folded_string and "enter to expand" in str(content.label)
        assert not content.children
        from inspector.widgets.json_tree import node_label

        assert node_label("content", content.data, 200, content.is_expanded).plain.endswith("enter to expand)")
        await pilot.press("z")
        assert content.is_expanded and len(content.children) >= content.data.value.count("\n") + 1
        # the hint of an open string, as the tree draws it, says what enter does now
        assert node_label("content", content.data, 200, content.is_expanded).plain.endswith("enter to fold)")
        # wrapped at words to the tree's width: nothing lost, no line wider than the tree
        chunks = [str(c.label) for c in content.children]
        assert "".join(chunks) == content.data.value.replace("\n", "")
        assert max(len(c) for c in chunks) <= tree.scrollable_content_region.width


async def test_copy_key_args_hash_and_json(built, monkeypatch):
    copied: list[str] = []
    app = InspectorApp(built)
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e", "y", "a", "c")
        rec = screen_of(app).index.record(screen_of(app).table.cursor_position)
        from core.record.canonical import args_hash

        assert copied[0] == rec.key
        assert copied[1] == args_hash(rec.arguments)
        assert '"tool_call_id": "call_3"' in copied[2]


async def test_help_screen_lists_every_binding(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = {b.id for _, group in app.screen.groups for b in group}
        assert {b.id for b in TimelineScreen.BINDINGS} <= listed
        assert {b.id for b in TimelineTable.BINDINGS} <= listed
        await pilot.press("escape")
        assert isinstance(app.screen, TimelineScreen)


async def test_every_binding_has_an_id_a_tooltip_or_description_and_a_palette_entry():
    palette_actions = {action for _, _, action in TIMELINE_COMMANDS}
    for b in TimelineScreen.BINDINGS:
        assert b.id and (b.tooltip or b.description)
        assert b.action in palette_actions, f"{b.action} missing from the command palette"


async def test_palette_runs_a_timeline_command(built):
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await settle(pilot, app)
        await pilot.press(*"first error")
        await settle(pilot, app)  # the palette gathers its hits in workers
        await pilot.press("enter")
        await settle(pilot, app)
        assert seq_at_cursor(app) == built.recording.first_error().seq


async def test_notices_are_shown(built):
    built.notices = ["converted from swe_agent (x.traj) in memory"]
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert any("converted from swe_agent" in str(n.message) for n in app._notifications)


# ---------------------------------------------------------------- fast open (big files)


async def test_fast_open_shows_the_timeline_then_verifies_in_the_background(built_path):
    from inspector.loader import load_for_view

    loaded = load_for_view(built_path, fast_open_bytes=0)
    assert loaded.verify is not None and not loaded.index.verified
    assert len(loaded.index) == 17 and loaded.index.error_positions == [7, 12]
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert loaded.index.verified and loaded.verify is None
        assert len(loaded.recording.records) == 17 and app.load_error is None
        await pilot.press("e", "t")
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        assert "EditRejected" in blocks[-1].entry.message.content


async def test_a_big_run_keeps_its_records_in_the_file_until_a_branch_needs_them(built_path, monkeypatch):
    """A run of at least KEEP_RECORDS records is verified record by record without being
    kept as objects; the timeline reads records from the file; B (a branch needs every
    record) reads them all, then opens the branch editor."""
    import inspector.loader as loader
    from inspector.screens.branch_editor import BranchEditorScreen

    monkeypatch.setattr(loader, "KEEP_RECORDS", 5)
    loaded = loader.load_for_view(built_path, fast_open_bytes=0)
    assert loaded.whole is not None and loaded.records_pending
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert loaded.verify is None and loaded.recording.records == []  # verified, nothing kept
        assert not loaded.index.verified and loaded.recording.digest
        await pilot.press("e", "t")  # a record is read from the file when shown
        await settle(pilot, app)
        blocks = list(app.screen.query_one(TranscriptView).query(MessageBlock))
        assert "EditRejected" in blocks[-1].entry.message.content
        await pilot.press("B")
        await settle(pilot, app)
        assert loaded.whole is None and len(loaded.recording.records) == 17 and loaded.index.verified
        assert isinstance(app.screen, BranchEditorScreen)


@pytest.mark.parametrize("layout", ["indexed", "whole-document"])
async def test_fast_open_of_an_invalid_file_shows_the_error_and_exits_2(built_path, layout):
    import orjson

    from core.record.recording import Recording
    from inspector.loader import load_for_view
    from inspector.screens.error import ErrorScreen

    if layout == "indexed":
        # same-length damage inside record 3 of the saved v3 file: its index still holds,
        # the background verification finds the digest mismatch
        head, records = built_path.read_bytes().split(b'"records":[', 1)
        assert records.count(b'"content":"dates.py') == 1
        built_path.write_bytes(head + b'"records":[' + records.replace(b'"content":"dates.py', b'"content":"DATES.PY'))
    else:
        doc = Recording.load(built_path).to_dict()  # the logical document: no pool, no index
        doc["records"][3]["result"]["content"] = "tampered after saving"  # digest no longer matches
        built_path.write_bytes(orjson.dumps(doc))
    loaded = load_for_view(built_path, fast_open_bytes=0)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        assert "digest mismatch" in app.screen.message and str(built_path) in app.screen.message
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 2
    assert "digest mismatch" in str(app.load_error)


async def test_fast_open_rejects_bad_shapes_before_any_screen(built_path):
    import orjson

    from core.errors import FormatError
    from core.record.recording import Recording
    from inspector.loader import load_for_view

    doc = Recording.load(built_path).to_dict()  # the logical document: no pool, no index
    doc["records"][4]["seq"] = 2
    built_path.write_bytes(orjson.dumps(doc))
    with pytest.raises(FormatError, match=r"record 4, /records/4/seq: seq 2 does not increase"):
        load_for_view(built_path, fast_open_bytes=0)
    doc["records"][4]["seq"] = 4
    doc["records"][5]["kind"] = "telepathy"
    built_path.write_bytes(orjson.dumps(doc))
    with pytest.raises(FormatError, match="unknown record kind 'telepathy'"):
        load_for_view(built_path, fast_open_bytes=0)


async def test_raw_index_equals_the_verified_index(built_path, built):
    from inspector.loader import load_for_view

    fast = load_for_view(built_path, fast_open_bytes=0).index
    slow = built.index
    assert list(fast.rows()) == list(slow.rows())
    assert fast.summary == slow.summary
    assert (fast.requested_by, fast.answered_by) == (slow.requested_by, slow.answered_by)
    assert fast.search("zebra") == slow.search("zebra")


# ---------------------------------------------------------------- keymaps


async def test_a_keymap_remaps_a_binding_by_id(built, tmp_path, monkeypatch):
    from inspector.keymap import load_keymap

    path = tmp_path / "keymap.json"
    path.write_text('{"timeline.next_error": "ctrl+n"}')
    monkeypatch.setenv("CHASSIS_INSPECTOR_KEYMAP", str(path))
    app = InspectorApp(built, load_keymap())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        assert seq_at_cursor(app) == 0  # e no longer jumps
        await pilot.press("ctrl+n")
        assert seq_at_cursor(app) == 7
        await pilot.press("question_mark")
        from inspector.screens.help import _key_label

        binding = next(b for b in TimelineScreen.BINDINGS if b.id == "timeline.next_error")
        assert _key_label(app, binding) == "^n"


def test_every_binding_id_in_the_source_is_remappable(tmp_path):
    """Each ``Binding(..., id=...)`` written anywhere in the app — the workspace side
    panel, the branch and fixture editors, the requirements and fixtures screens and
    their dialogs included — is a binding id a keymap may name."""
    import re
    from pathlib import Path

    import inspector
    from inspector.keymap import binding_ids, load_keymap

    root = Path(inspector.__file__).parent
    written = {m for f in root.rglob("*.py") for m in re.findall(r'Binding\([^)]*?\bid="([^"]+)"', f.read_text(), re.S)}
    assert {"workspace.tree", "workspace.launch", "fixture.save", "requirements.close", "decision.cancel"} <= written
    assert written - binding_ids() == set()
    path = tmp_path / "keymap.json"
    path.write_text('{"workspace.tree": "ctrl+t", "fixture.save": "ctrl+s", "branch_editor.save": "ctrl+w"}')
    assert load_keymap(path)["workspace.tree"] == "ctrl+t"


def test_docs_list_every_binding_id_with_its_default_keys():
    import re
    from pathlib import Path

    from inspector.keymap import binding_ids

    text = (Path(__file__).parents[2] / "docs" / "app.md").read_text()
    listed = dict(re.findall(r"^\| `([a-z_]+\.[a-z_]+)` \| ([^|]+) \|", text, re.M))
    assert set(listed) == binding_ids()
    assert listed["workspace.tree"].strip() == "`T`" and listed["app.help"].strip() == "`question_mark`, `f1`"


async def test_the_command_palette_key_is_remappable(built, tmp_path):
    from textual.command import CommandPalette

    from inspector.keymap import load_keymap

    path = tmp_path / "keymap.json"
    path.write_text('{"app.palette": "ctrl+k"}')
    app = InspectorApp(built, load_keymap(path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert not isinstance(app.screen, CommandPalette)
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


@pytest.mark.parametrize(
    "content,reason",
    [
        ("{", "malformed JSON"),
        ("[]", "must be a JSON object"),
        ('{"timeline.teleport": "t"}', "unknown binding id 'timeline.teleport'"),
        ('{"app.quit": ""}', "non-empty string"),
    ],
)
async def test_bad_keymaps_are_rejected(tmp_path, content, reason):
    from core.errors import FormatError
    from inspector.keymap import load_keymap

    path = tmp_path / "keymap.json"
    path.write_text(content)
    with pytest.raises(FormatError, match=reason) as info:
        load_keymap(path)
    assert str(path) in str(info.value)


# ---------------------------------------------------------------- virtualization


async def test_only_visible_rows_are_rendered_in_a_big_recording(monkeypatch):
    """200,000 records: opening, End and PgUp render and summarize only what is visible."""
    from core.analysis.timeline import TimelineIndex
    from core.record.recording import Recording
    from inspector.loader import LoadedRecording

    n = 200_000
    raw = [
        {
            "seq": i,
            "kind": "tool",
            "tool": "bash",
            "arguments": {"command": f"echo {i}"},
            "result": {"content": f"out {i}"},
        }
        for i in range(n)
    ]
    index = TimelineIndex.from_raw(Recording(), raw, source="<synthetic>")
    loaded = LoadedRecording(Path("big.json"), Recording(), index)
    summarized: list[int] = []
    original = TimelineIndex.summary_of

    def counting(self, position):
        summarized.append(position)
        return original(self, position)

    monkeypatch.setattr(TimelineIndex, "summary_of", counting)
    app = InspectorApp(loaded)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one(TimelineTable)
        height = table.scrollable_content_region.height
        assert len(table.view) == n
        assert len(set(summarized)) <= height
        summarized.clear()
        await pilot.press("end")
        await settle(pilot, app)
        assert seq_at_cursor(app) == n - 1
        assert summarized and min(summarized) >= n - height and len(set(summarized)) <= height
        summarized.clear()
        await pilot.press("pageup")
        await settle(pilot, app)
        assert len(set(summarized)) <= height
        await pilot.press("slash", *"out 123456", "enter")
        await settle(pilot, app)
        assert seq_at_cursor(app) == 123456
