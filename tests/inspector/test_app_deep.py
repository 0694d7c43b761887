"""The app on values nested up to the nesting limit (core.record.nesting.MAX_DEPTH):
every record opens in the detail pane, the transcript and the copy actions work, the
fast-open path verifies in the background — and a file beyond the limit is refused with
the one-line error."""

from __future__ import annotations

import asyncio

import pytest

from core.errors import FormatError
from core.record.nesting import MAX_DEPTH, dumps
from inspector.app import InspectorApp
from inspector.loader import load_for_view
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.json_tree import JsonTree
from tests.inspector.cli.test_deep_nesting import PLACES, deep_recording

pytestmark = pytest.mark.asyncio

SIZE = (140, 40)


async def settle(pilot, app) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    if isinstance(app.screen, TimelineScreen):
        await asyncio.wait_for(app.screen.detail_settled(), timeout=60)
        await pilot.pause()


@pytest.mark.parametrize("fast_open", [False, True])
@pytest.mark.parametrize("place", PLACES)
async def test_every_record_of_a_deep_recording_shows(tmp_path, monkeypatch, place, fast_open):
    path = tmp_path / "deep.json"
    path.write_bytes(dumps(deep_recording(place, MAX_DEPTH)))
    loaded = load_for_view(path, fast_open_bytes=0 if fast_open else 1 << 62)
    copied: list[str] = []
    app = InspectorApp(loaded)
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.load_error is None and app.crash is None
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        for rec in loaded.recording.records:
            screen.go_to_seq(rec.seq)
            await settle(pilot, app)
            tree = screen.query_one(JsonTree)
            assert tree.root.data.value["seq"] == rec.seq
            # expand the path down the deep value a few hundred levels, and every string
            node = tree.root
            for _ in range(300):
                kids = [c for c in node.children if c.allow_expand]
                if not kids:
                    break
                node = kids[-1]
                node.expand()
                await pilot.pause()
            await pilot.press("z", "c")
            await settle(pilot, app)
        await pilot.press("e", "t")  # the transcript of the model call
        await settle(pilot, app)
        assert app.crash is None
    assert copied and all(c.startswith("{") for c in copied)


async def test_a_file_beyond_the_limit_is_refused(tmp_path):
    """Loaded in full: refused before any screen. Fast-opened (raw index first): the
    background verification refuses it, the error screen shows the line, exit 2."""
    from inspector.screens.error import ErrorScreen

    path = tmp_path / "deeper.json"
    path.write_bytes(dumps(deep_recording("tool result", MAX_DEPTH + 1)))
    expected = f"more than {MAX_DEPTH} levels"
    with pytest.raises(FormatError) as exc:
        load_for_view(path, fast_open_bytes=1 << 62)
    assert "/records/3/result/content/" in str(exc.value) and expected in str(exc.value)
    loaded = load_for_view(path, fast_open_bytes=0)
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ErrorScreen)
        assert expected in app.screen.message and str(path) in app.screen.message
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 2
    assert expected in str(app.load_error)
