"""Background tasks: a failing one clears the status it showed and opens the error
screen naming the task and the exception's message (as plain text)."""

from __future__ import annotations

import pytest

from core.analysis.timeline import TimelineIndex
from inspector.app import InspectorApp
from inspector.screens.error import ErrorScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.filter_bar import FilterBar

from .test_app_pilot import SIZE, settle

pytestmark = pytest.mark.asyncio


def match_info(app) -> str:
    return str(app.screen_stack[-2].query_one(FilterBar).query_one("#match-info").render())


async def test_a_failing_search_clears_searching_and_names_what_failed(built, monkeypatch):
    def broken(self, text):
        raise RuntimeError("index exploded on [bold]markup[/bold]")

    monkeypatch.setattr(TimelineIndex, "search", broken)
    app = InspectorApp(built)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("slash", *"pytest", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert "search for 'pytest'" in app.screen.error_title
        # the message is shown as it is: recorded text is never read as markup
        assert app.screen.message == "RuntimeError: index exploded on [bold]markup[/bold]"
        shown = str(app.screen.query_one("#error-message").render())
        assert "[bold]markup[/bold]" in shown
        timeline = app.screen_stack[-2]
        assert isinstance(timeline, TimelineScreen)
        assert "searching" not in match_info(app) and not timeline.matches and not timeline.search_text
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, TimelineScreen) and app.return_code is None


async def test_a_crashing_verification_clears_verifying_and_names_what_failed(built_path):
    from inspector.loader import load_for_view

    loaded = load_for_view(built_path, fast_open_bytes=0)

    def broken():
        raise ValueError("verifier bug")

    loaded.verify = broken
    app = InspectorApp(loaded)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        assert "verifying the recording" in app.screen.error_title
        assert app.screen.message == "ValueError: verifier bug"
        header = str(app.screen_stack[-2].query_one("#header").render())
        assert "verifying" not in header and loaded.verify is None
