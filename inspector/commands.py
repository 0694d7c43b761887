"""Command palette providers: every timeline action, named "area: what it does".

:data:`TIMELINE_COMMANDS` is the list (title, help, action); the provider offers them
when the palette is opened over a :class:`~inspector.screens.timeline.TimelineScreen`
and runs the action on that screen.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from core.analysis.timeline import VIEW_KINDS as RECORD_KINDS

TIMELINE_COMMANDS: list[tuple[str, str, str]] = [
    ("search: find text", "Search names, arguments, contents and results (/)", "search"),
    ("search: next match", "Jump to the next search match (n)", "next_match"),
    ("search: previous match", "Jump to the previous search match (N)", "previous_match"),
    ("errors: first error", "Jump to the first record with an error (f)", "first_error"),
    ("errors: next error", "Jump to the next record with an error (e)", "next_error"),
    ("errors: previous error", "Jump to the previous record with an error (E)", "previous_error"),
    ("go: go to seq", "Go to a record by its seq (g or :)", "goto"),
    ("go: follow tool call", "Tool call ↔ the model call that requested it, by tool_call_id (l)", "follow_link"),
    (
        "run: run info",
        "Outcome, ground truth, planted fault, task, source, import warnings, all metadata (i)",
        "run_info",
    ),
    ("go: marked step", "Jump to the annotated mistake step or planted fault (m)", "jump_mark"),
    ("go: back", "Back to where the last jump started (b)", "back"),
    *[
        (f"filter: show/hide {k} records", f"Toggle {k} records ({i + 1})", f"toggle_kind('{k}')")
        for i, k in enumerate(RECORD_KINDS)
    ],
    *[(f"filter: only {k} records", f"Show only {k} records", f"only_kind('{k}')") for k in RECORD_KINDS],
    ("filter: errors only", "Show only records with an error (x)", "toggle_errors"),
    ("filter: show everything", "Every kind, errors-only off (0)", "show_all"),
    ("detail: record JSON tree", "Show the record as a JSON tree (r)", "show_tab('tab-record')"),
    ("detail: transcript", "Show the chat transcript (t)", "show_tab('tab-transcript')"),
    ("detail: expand long text", "Expand folded strings or long messages (z)", "expand"),
    ("detail: show raw", "Raw text of images and base64 instead of placeholders (v)", "show_raw"),
    ("detail: switch pane", "Move focus between timeline and detail (w)", "focus_other"),
    ("copy: canonical key", "Copy the key of the selected call (y)", "copy('key')"),
    ("copy: args hash", "Copy the args hash of the selected tool call (a)", "copy('args_hash')"),
    ("copy: record JSON", "Copy the selected record as JSON (c)", "copy('json')"),
    ("app: help", "List every key (?)", "app.help"),
]


class TimelineCommands(Provider):
    """Palette entries for the timeline screen (see :data:`TIMELINE_COMMANDS`)."""

    def _commands(self) -> list[tuple[str, str, str]]:
        from .screens.timeline import TimelineScreen

        return TIMELINE_COMMANDS if isinstance(self.screen, TimelineScreen) else []

    async def _run(self, action: str) -> None:
        await self.screen.run_action(action)

    async def discover(self) -> Hits:
        for title, help_text, action in self._commands():
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), help=help_text)
