"""A Claude Code session in the app (pilot): it opens on its main run (not the run
picker), ``l`` on an ``Agent`` call opens that sub-agent's run, ``p`` lists the
sub-agents with their parent; a ``/rewind`` fork shows in the branch tree as a branch
with its completed replay."""

from __future__ import annotations

import shutil

from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.screens.run_picker import RunPickerScreen
from inspector.screens.timeline import TimelineScreen
from tests.builders import TESTS

from .test_app_pilot import settle
from .test_replay_runner import idle, open_tree, row_texts

SIZE = (160, 45)
CC = TESTS / "data" / "real_traces" / "claude_code"
TEAM = CC / "teammates_subagents" / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
REWIND = CC / "rewind_fork_opus46.jsonl"


async def test_a_session_opens_on_its_main_run_and_l_opens_a_sub_agent():
    loaded = load_for_view(TEAM)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.loaded.opened.run_id == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
        rec = next(r for r in app.screen.loaded.recording.records if r.kind == "tool" and r.tool == "Agent")
        pos = app.screen.index.position_of_seq(rec.seq)
        app.screen.jump_to(pos)
        await settle(pilot, app)
        await pilot.press("l")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.loaded.opened.run_id == rec.meta["sub_run"]
        await pilot.press("p")
        await settle(pilot, app)
        assert isinstance(app.screen, RunPickerScreen)
        ids = [r.id for r in app.screen.opened.runs]
        assert ids[0] == "ef958aa1-0e93-49f0-bb71-150f63befcd1" and sum(i.startswith("agent-") for i in ids) == 6
        cells = [app.screen.table.get_row_at(i)[2].plain for i in range(app.screen.table.row_count)]
        assert cells[0].startswith(f"{ids[0]} · OK, we're going to make a little experiment")  # its first prompt
        assert all(c.startswith("↳ agent-") for c in cells[1:])
        assert "alice: Research Claude Code plan mode" in "\n".join(cells)  # the Agent call's name and task


async def test_a_rewind_fork_shows_in_the_branch_tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(REWIND, tmp_path / REWIND.name)
    app = InspectorApp(load_for_view(REWIND.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        panel = await open_tree(pilot, app)
        await idle(pilot, app)
        texts = "\n".join(row_texts(panel))
        assert "rewind: I very much like this idea" in texts, texts
        assert "completed" in texts


async def test_a_hostile_rewound_prompt_is_drawn_as_text_in_the_tree(tmp_path, monkeypatch):
    from tests.core.importers.test_claude_code import hostile_session
    from tests.hostile import unsafe_in

    monkeypatch.chdir(tmp_path)
    f = hostile_session(tmp_path)
    app = InspectorApp(load_for_view(f.name), workspace="ws")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        panel = await open_tree(pilot, app)
        await idle(pilot, app)
        texts = "\n".join(row_texts(panel))
        assert "rewind: [bold]" in texts, texts
        assert unsafe_in(texts) == [], texts
