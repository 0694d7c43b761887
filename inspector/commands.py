"""Command palette providers: every timeline action, named "area: what it does".

:data:`TIMELINE_COMMANDS` is the list (title, help, action); the provider offers them
when the palette is opened over a :class:`~inspector.screens.timeline.TimelineScreen`
and runs the action on that screen — with :data:`SOURCE_COMMANDS` too when the timeline
is a replay's events (its calls have answer sources).
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from core.analysis.timeline import ANSWER_SOURCES
from core.analysis.timeline import VIEW_KINDS as RECORD_KINDS
from core.analysis.timeline_text import source_label

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
    (
        "filter: next answer source",
        "A replay's events: only the calls of one answer source, the next at each press, then all (S)",
        "cycle_source",
    ),
    ("detail: record JSON tree", "Show the record as a JSON tree (r)", "show_tab('tab-record')"),
    ("detail: transcript", "Show the chat transcript (t)", "show_tab('tab-transcript')"),
    ("detail: expand long text", "Expand folded strings or long messages (z)", "expand"),
    ("detail: show raw", "Raw text of images and base64 instead of placeholders (v)", "show_raw"),
    ("detail: switch pane", "Move focus between timeline and detail (w)", "focus_other"),
    ("copy: canonical key", "Copy the key of the selected call (y)", "copy('key')"),
    ("copy: args hash", "Copy the args hash of the selected tool call (a)", "copy('args_hash')"),
    ("copy: record JSON", "Copy the selected record as JSON (c)", "copy('json')"),
    (
        "branch: new branch at the selected record",
        "Open the branch editor, checkpoint at this record (B)",
        "new_branch",
    ),
    ("workspace: branch tree", "Show/hide the branches of this run and their replays (T)", "branch_tree"),
    ("workspace: launch replay", "Replay the branch selected in the branch tree (R)", "launch_replay"),
    ("workspace: resume replay", "Resume the selected replay once its requirements are answered (u)", "resume_replay"),
    ("workspace: cancel replay", "Stop the selected running replay between two calls (K)", "cancel_replay"),
    (
        "workspace: compare replay with its base",
        "The selected replay and its base side by side, at the first divergence (C)",
        "compare_replay",
    ),
    (
        "workspace: effects",
        "Which calls and interventions change the outcome, ranked; sweep the run's calls from there (W)",
        "effects",
    ),
    (
        "workspace: requirements",
        "Open requirements of the selected or last paused replay, else of the whole workspace (o)",
        "requirements",
    ),
    (
        "workspace: answer a requirement",
        "Attach a fixture to, approve, or answer the selected replay's open requirement (A)",
        "answer_requirement",
    ),
    ("workspace: fixtures", "Every fixture: scope, where used; reuse one for another branch (F)", "fixtures"),
    (
        "workspace: back to the base run",
        "From a replay's timeline back to the run it was opened from (escape)",
        "close_replay",
    ),
    ("analysis: audit the final output", "Lineage of the final output: which calls produced it (L)", "audit"),
    ("app: help", "List every key (?)", "app.help"),
]

#: the requirements panel's entries (inspector/screens/requirements.py)
REQUIREMENTS_COMMANDS: list[tuple[str, str, str]] = [
    ("requirements: answer", "Attach a fixture, approve or deny, answer a person's turn (A)", "answer"),
    ("requirements: resume the replay", "Resume the replay once answered (u)", "resume"),
    (
        "requirements: this replay / all",
        "The open requirements of this replay, or of the workspace (o)",
        "switch_scope",
    ),
    ("requirements: fixtures", "Every fixture: scope, where used (F)", "fixtures"),
    ("requirements: back", "Back to the timeline (escape)", "close"),
]

#: the compare screen's entries (inspector/screens/compare.py)
COMPARE_COMMANDS: list[tuple[str, str, str]] = [
    ("compare: first divergence", "Jump to the first divergence of the two runs (d)", "first_divergence"),
    ("compare: next difference", "Jump to the next row that differs (])", "next_difference"),
    ("compare: previous difference", "Jump to the previous row that differs ([)", "previous_difference"),
    ("compare: back", "Back to the screen it was opened from (escape)", "close"),
]

#: the effects screen's entries (inspector/screens/effects.py)
EFFECTS_COMMANDS: list[tuple[str, str, str]] = [
    (
        "effects: sweep the run's calls",
        "One branch per candidate call, replayed in worker processes and ranked (s)",
        "sweep",
    ),
    ("effects: cancel the sweep", "Stop the running sweep; what finished stays ranked (K)", "cancel_sweep"),
    ("effects: evidence replay", "The selected row's evidence replay beside the base (enter)", "open_evidence"),
    ("effects: rank again", "Rank every stored replay of this run again (r)", "rerank"),
    ("effects: back", "Back to the timeline (escape)", "close"),
]

#: the audit screen's entries (inspector/screens/audit.py)
AUDIT_COMMANDS: list[tuple[str, str, str]] = [
    ("audit: knockouts", "Knock each call out by replaying it with the recording's executor (k)", "knockout"),
    ("audit: export", "The audit as Markdown and JSON: files, or downloads in the browser (x)", "export"),
    ("audit: back", "Back to the timeline (escape)", "close"),
]

#: the fixtures list's entries (inspector/screens/requirements.py)
FIXTURES_COMMANDS: list[tuple[str, str, str]] = [
    (
        "fixtures: reuse for another branch",
        "A copy of the highlighted fixture scoped to a branch you pick (A)",
        "reuse",
    ),
    ("fixtures: back", "Back (escape)", "close"),
]

BRANCH_EDITOR_COMMANDS: list[tuple[str, str, str]] = [
    ("branch: save", "Store the branch in the workspace (ctrl+s)", "save"),
    ("branch: save and replay", "Store the branch and replay it at once (ctrl+r)", "save(True)"),
    ("branch: export to a file", "Store the branch and write it to a file for replay --branch (ctrl+o)", "export"),
    ("branch: add an intervention", "Add an intervention, prefilled with the recorded value (alt+a)", "add"),
    ("branch: remove the intervention", "Remove the intervention shown (alt+d)", "remove"),
    ("branch: move the intervention up", "Interventions apply in order (alt+up)", "move(-1)"),
    ("branch: move the intervention down", "Interventions apply in order (alt+down)", "move(1)"),
    ("branch: policy / intervention form", "Switch between the intervention and the policy form (alt+t)", "switch_tab"),
    ("branch: go to the problem", "Show and focus the first problem of the branch (ctrl+g)", "go_to_problem"),
    ("branch: close the editor", "Close without saving (escape; asks when edited)", "close"),
]

#: the answer-source filter of a replay's events, per source (offered only there)
SOURCE_COMMANDS: list[tuple[str, str, str]] = [
    *[
        (
            f"filter: only {s} answers",
            f"Show only the calls whose answer source is {source_label(s)}",
            f"only_source('{s}')",
        )
        for s in ANSWER_SOURCES
    ],
    *[
        (
            f"filter: show/hide {s} answers",
            f"Toggle the calls whose answer source is {source_label(s)}",
            f"toggle_source('{s}')",
        )
        for s in ANSWER_SOURCES
    ],
    ("filter: every answer source", "Show the calls of every answer source again", "all_sources"),
]


class TimelineCommands(Provider):
    """Palette entries for the timeline screen (see :data:`TIMELINE_COMMANDS`)."""

    def _commands(self) -> list[tuple[str, str, str]]:
        from .screens.timeline import TimelineScreen

        if not isinstance(self.screen, TimelineScreen):
            return []
        if self.screen.index.has_answer_sources:
            return TIMELINE_COMMANDS + SOURCE_COMMANDS
        return TIMELINE_COMMANDS

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


class BranchEditorCommands(TimelineCommands):
    """Palette entries for the branch editor (see :data:`BRANCH_EDITOR_COMMANDS`)."""

    def _commands(self) -> list[tuple[str, str, str]]:
        from .screens.branch_editor import BranchEditorScreen

        return BRANCH_EDITOR_COMMANDS if isinstance(self.screen, BranchEditorScreen) else []


class WorkspaceScreenCommands(TimelineCommands):
    """Palette entries for the requirements panel and the fixtures list."""

    def _commands(self) -> list[tuple[str, str, str]]:
        from .screens.requirements import FixturesScreen, RequirementsScreen

        if isinstance(self.screen, RequirementsScreen):
            return REQUIREMENTS_COMMANDS
        if isinstance(self.screen, FixturesScreen):
            return FIXTURES_COMMANDS
        return []


class AnalysisScreenCommands(TimelineCommands):
    """Palette entries for the compare, effects and audit screens."""

    def _commands(self) -> list[tuple[str, str, str]]:
        from .screens.audit import AuditScreen
        from .screens.compare import CompareScreen
        from .screens.effects import EffectsScreen

        if isinstance(self.screen, AuditScreen):
            return AUDIT_COMMANDS
        if isinstance(self.screen, CompareScreen):
            return COMPARE_COMMANDS
        if isinstance(self.screen, EffectsScreen):
            return EFFECTS_COMMANDS
        return []
