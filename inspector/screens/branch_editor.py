"""The branch editor: a branch of the open recording at a checkpoint, with a live dry run.

Opened on the selected record (``B`` on the timeline, or "branch: new branch at the
selected record" in the palette): the checkpoint is that record's seq (changeable); the
interventions start with the one a user most often wants there — the tool call's result
or the model call's response, **prefilled with the recorded value**. Every intervention
kind has its form (:data:`core.replay.editing.KINDS`); payloads are JSON in a
:class:`~inspector.widgets.json_editor.JsonEditor`, checked as you type by core
(:func:`core.replay.editing.check_payload`), the problem shown inline with its JSON
Pointer. Provider-signed reasoning blocks of a response are kept apart, read-only, with
the reason.

The policy form starts from :func:`core.replay.editing.default_policy`: when the
recording names an executor (``metadata.executor``) it is offered — its module shown —
and used only after the user confirms (:class:`ConsentScreen`; then
``ExecutorChoice(spec, "recording")``, docs/replay.md "Executors are code"); otherwise
recorded answers, with requirements. Each choice says in one line what it means.

Beside the form, the **dry run** (:func:`core.replay.editing.preview`, i.e.
:func:`core.replay.replays.dry_run` with the workspace's fixtures) lists per call what
will answer it, with counts; it runs in a thread worker :data:`PREVIEW_DELAY` seconds
after the last edit. The screen only gathers fields and shows what core says.

Saving (``ctrl+s``; ``ctrl+r`` saves and asks the replay runner to launch it; ``ctrl+o``
also writes the branch to a file, :func:`core.replay.branch.save_branch`) resolves the
branch again in a worker and stores it with :meth:`core.workspace.Workspace.add_branch`
— what ``chassis-inspector branch new`` stores — in one transaction, then posts
:class:`~inspector.messages.BranchSaved` (and
:class:`~inspector.messages.WorkspaceChanged`) to the app. Any error stores nothing: a
problem of the branch is shown inline, a workspace that cannot be written or read (or a
file that cannot be written) opens the error screen, and the editor stays as it was.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import (
    Button,
    Footer,
    Input,
    Label,
    OptionList,
    Select,
    Static,
    TabbedContent,
    TabPane,
)
from textual.widgets.option_list import Option

from core.errors import InspectorError, WorkspaceError
from core.proxy.provider import PROVIDER_ENV, PROVIDERS, provider_spec
from core.record.recording import ModelRecord, Recording, ToolRecord
from core.record.recording_redaction import ensure_redacted
from core.replay.boundary import ExecutorChoice
from core.replay.branch import save_branch, signed_reasoning_parts
from core.replay.editing import (
    ANSWER_MEANING,
    DRIFT_MEANING,
    KIND_MEANING,
    KINDS,
    PAYLOAD_FIELD,
    SOURCE_MEANING,
    BranchCheck,
    InterventionDraft,
    Preview,
    Problem,
    check_branch,
    check_payload,
    default_policy,
    describe_draft,
    first_target,
    initial_drafts,
    known_tools,
    new_branch_id,
    new_draft,
    next_request,
    policy_from_fields,
    prefill,
    preview,
    produced_by,
    recorded_executor,
)
from core.workspace import DEFAULT_DIR, NoWorkspace, Workspace

from ..commands import BranchEditorCommands
from ..loader import LoadedRecording
from ..messages import BranchSaved, WorkspaceChanged
from ..plain import block, line
from ..widgets.json_editor import JsonEditor
from .error import ErrorScreen

__all__ = ["PREVIEW_DELAY", "BranchEditorScreen", "ConsentScreen", "ExportScreen"]

#: seconds after the last edit before the branch is checked and dry-run again
PREVIEW_DELAY = 0.3

#: how each dry-run answer is drawn: a symbol (never colour alone) and a colour
ANSWER_STYLE: dict[str, tuple[str, str]] = {
    # the symbols and colours of the answer sources on a replay's timeline (docs/app.md)
    "recorded": ("=", "dim"),
    "intervention": ("✎", "bold magenta"),
    "fixture": ("▣", "blue"),
    "drift": ("≈", "bright_yellow"),
    "live": ("↯", "yellow"),
    "denied": ("⊘", "red"),
    "user": ("›", "cyan"),
    "unknown": ("?", "bold"),
    # what only a dry run predicts: the replay would stop there
    "requirement": ("‖", "bold #ff8700"),
    "approval": ("‖", "#ff8700"),
    "fail": ("✗", "bold #ff5f5f"),
}

_SOURCES = ("recorded", "fixture", "live")

#: below this many columns the side columns are narrower (class ``-narrow``)
NARROW_BELOW = 140
#: the dry-run panel's width in columns (its CSS), wide and narrow
DRY_WIDTH, DRY_WIDTH_NARROW = 46, 34


@dataclass(frozen=True)
class _Snapshot:
    """The form as it stands (what a worker checks; plain values, copied)."""

    checkpoint: str
    label: str
    parent: str
    drafts: tuple[InterventionDraft, ...]
    model: str
    tool: str
    drift: str
    max_steps: str
    temperature: str
    executor: str  # "recording", "none", or a built-in provider executor ("provider:openai")
    live_model: str = ""
    user_model: str = ""
    provider_url: str = ""  # with a provider executor: its base URL (empty: the environment's)


class ConsentScreen(ModalScreen[bool]):
    """Asks before code named by a recording runs: shows the module and function of
    ``choice`` and what running it means. Dismissed with ``True`` (run it) or ``False``."""

    BINDINGS = [
        Binding("escape,n", "answer(False)", "Do not run it", id="consent.refuse"),
        Binding("y", "answer(True)", "Run it", id="consent.trust"),
    ]

    DEFAULT_CSS = """
    ConsentScreen { align: center middle; }
    ConsentScreen > Vertical { width: 84; max-width: 95%; height: auto; border: thick #ff8700; background: $surface; padding: 1 2; }
    ConsentScreen #consent-module { margin: 1 0; text-style: bold; }
    ConsentScreen #consent-buttons { height: auto; margin-top: 1; }
    ConsentScreen Button { margin-right: 2; }
    """

    def __init__(self, choice: ExecutorChoice) -> None:
        super().__init__()
        self.choice = choice

    def compose(self) -> ComposeResult:
        spec = self.choice.spec
        with Vertical():
            yield Static(Text("Run code named by the recording?", style="bold #ff8700"))
            if spec.startswith("cmd:"):
                yield Static(Text.assemble("command ", (line(spec[4:].strip()), "bold")), id="consent-module")
                yield Static(
                    Text(
                        "This recording names a command in metadata.executor (it was made by record). "
                        "Replaying runs that command on this machine with your permissions, its model calls "
                        "answered by the replay through a local proxy — and its own tools run again, side "
                        "effects included, on every replay and resume. The recording's digest does not cover "
                        "that field — anyone can edit it. Run it only if you trust where the recording came from."
                    )
                )
            else:
                module, _, function = spec.partition(":")
                yield Static(
                    Text.assemble("module ", (line(module), "bold"), "   function ", (line(function), "bold")),
                    id="consent-module",
                )
                yield Static(
                    Text(
                        "This recording names an executor in metadata.executor. Replaying with it imports that "
                        "module and calls the function: code that runs on this machine with your permissions. "
                        "The recording's digest does not cover that field — anyone can edit it. Run it only if "
                        "you trust where the recording came from. It is imported from the installed packages, "
                        "never from the current folder."
                    )
                )
            with Horizontal(id="consent-buttons"):
                yield Button("Do not run it (n)", id="consent-no", variant="primary")
                yield Button("Run it (y)", id="consent-yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#consent-no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "consent-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ExportScreen(ModalScreen[Path | None]):
    """Asks for the file to export a branch to (``default``); ``None`` on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="export.cancel")]

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 84; max-width: 95%; height: auto; border: thick $primary; background: $surface; padding: 0 1; }
    ExportScreen .export-hint { color: $text-muted; }
    """

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Export the branch to a file (it is stored in the workspace too)")
            yield Label(
                "enter: save · escape: cancel (for: replay BASE --branch FILE)",
                classes="export-hint",
            )
            yield Input(str(self.default), id="export-path")

    @on(Input.Submitted, "#export-path")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.notify("give a file name", severity="error", timeout=3)
            return
        self.dismiss(Path(text).expanduser())

    def action_cancel(self) -> None:
        self.dismiss(None)


class DiscardScreen(ModalScreen[bool]):
    """Asks before edits are thrown away; ``True``: discard."""

    BINDINGS = [
        Binding("enter,y", "answer(True)", "Discard", id="discard.yes"),
        Binding("escape,n", "answer(False)", "Keep editing", id="discard.no"),
    ]

    DEFAULT_CSS = """
    DiscardScreen { align: center middle; }
    DiscardScreen > Vertical { width: 64; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Close the branch editor without saving?", style="bold"))
            yield Static(Text("enter: discard the branch · escape: keep editing", style="dim"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class BranchEditorScreen(Screen[str | None]):
    """The branch editor over ``loaded`` (its recording is the base), opened at record
    ``seq``. Dismissed with the id of the branch saved, or ``None``."""

    COMMANDS = {BranchEditorCommands}

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="branch_editor.save", tooltip="Store the branch in the workspace"),
        Binding(
            "ctrl+r",
            "save(True)",
            "Save & replay",
            id="branch_editor.save_replay",
            tooltip="Store the branch and replay it at once",
        ),
        Binding(
            "ctrl+o",
            "export",
            "Export",
            id="branch_editor.export",
            tooltip="Store the branch and write it to a file (what replay --branch FILE takes)",
        ),
        Binding("alt+a", "add", "Add", priority=True, id="branch_editor.add", tooltip="Add an intervention"),
        Binding(
            "alt+d",
            "remove",
            "Remove",
            show=False,
            priority=True,
            id="branch_editor.remove",
            tooltip="Remove the intervention shown",
        ),
        Binding(
            "alt+up",
            "move(-1)",
            "Move up",
            show=False,
            priority=True,
            id="branch_editor.move_up",
            tooltip="Move the intervention shown up (interventions apply in order)",
        ),
        Binding(
            "alt+down",
            "move(1)",
            "Move down",
            show=False,
            priority=True,
            id="branch_editor.move_down",
            tooltip="Move the intervention shown down",
        ),
        Binding(
            "alt+t",
            "switch_tab",
            "Policy/Intervention",
            priority=True,
            id="branch_editor.switch_tab",
            tooltip="Switch between the intervention form and the policy form",
        ),
        Binding(
            "ctrl+g",
            "go_to_problem",
            "Go to problem",
            show=False,
            id="branch_editor.go_to_problem",
            tooltip="Put the cursor on the first problem",
        ),
        Binding("escape", "close", "Close", id="branch_editor.close", tooltip="Close the editor (asks when edited)"),
    ]

    DEFAULT_CSS = """
    BranchEditorScreen { layout: vertical; }
    BranchEditorScreen #be-title { height: 1; padding: 0 1; background: $panel; }
    BranchEditorScreen #be-body { height: 1fr; }
    BranchEditorScreen #be-left { width: 34; padding: 0 1; border-right: vkey $panel-lighten-2; }
    BranchEditorScreen #be-tabs { width: 1fr; }
    BranchEditorScreen #be-dry { width: 46; padding: 0 1; border-left: vkey $panel-lighten-2; }  /* DRY_WIDTH */
    BranchEditorScreen.-narrow #be-left { width: 28; }
    BranchEditorScreen.-narrow #be-dry { width: 34; }  /* DRY_WIDTH_NARROW */
    BranchEditorScreen .field-label { color: $text-muted; height: 1; margin-top: 1; }
    BranchEditorScreen .note { color: $text-muted; height: auto; }
    BranchEditorScreen .error { color: #ff5f5f; height: auto; }
    BranchEditorScreen Input { width: 1fr; }
    BranchEditorScreen #be-list { height: 1fr; min-height: 4; border: round $panel-lighten-2; }
    BranchEditorScreen #be-list:focus { border: round $accent; }
    BranchEditorScreen #be-list-buttons { height: 1; }
    BranchEditorScreen #be-list-buttons Button { min-width: 4; width: auto; height: 1; border: none; margin-right: 1; }
    BranchEditorScreen .row { height: 1; margin-top: 1; }
    BranchEditorScreen .row > Label { width: auto; padding: 0 1 0 0; }
    BranchEditorScreen .row > Label.gap { margin-left: 2; }
    BranchEditorScreen #iv-note { margin-top: 1; }
    BranchEditorScreen .row > Select { width: 1fr; }
    BranchEditorScreen #iv-kind { width: 24; }
    BranchEditorScreen #iv-target { width: 26; }
    BranchEditorScreen #iv-tool { width: 1fr; }
    BranchEditorScreen #iv-seq, BranchEditorScreen #iv-index { width: 12; }
    BranchEditorScreen #iv-op, BranchEditorScreen #iv-action { width: 26; }
    BranchEditorScreen #iv-payload-row { height: 1; margin-top: 1; }
    BranchEditorScreen #iv-payload-label { width: 1fr; color: $text-muted; }
    BranchEditorScreen #iv-reset { height: 1; border: none; min-width: 10; width: auto; }
    BranchEditorScreen #iv-locked { height: auto; max-height: 6; color: $text-muted; border-left: thick $warning; padding-left: 1; }
    BranchEditorScreen #tab-iv { padding: 0 1; }
    BranchEditorScreen #pol-scroll { padding: 0 1; }
    BranchEditorScreen #pol-scroll Select { width: 1fr; }
    BranchEditorScreen #dry-title { text-style: bold; height: 1; }
    BranchEditorScreen #dry-counts { height: auto; margin-bottom: 1; }
    BranchEditorScreen #dry-scroll { height: 1fr; }
    BranchEditorScreen #be-actions { height: 4; padding: 0 1; border-top: hkey $panel-lighten-2; }
    BranchEditorScreen #be-actions Button { margin-right: 1; }
    BranchEditorScreen #be-status { width: 1fr; height: 3; content-align: left middle; padding-left: 1; }
    BranchEditorScreen .-hidden { display: none; }
    """

    class _Previewed(Message):
        def __init__(self, generation: int, result: Preview | None, error: str | None = None) -> None:
            super().__init__()
            self.generation = generation
            self.result = result
            self.error = error

    class _Saved(Message):
        def __init__(
            self, branch_id: str, launch: bool, executor: ExecutorChoice | None, file: Path | None, n: int
        ) -> None:
            super().__init__()
            self.branch_id = branch_id
            self.launch = launch
            self.executor = executor
            self.file = file
            self.interventions = n

    class _SaveFailed(Message):
        def __init__(self, title: str, message: str, *, inline: Problem | None = None) -> None:
            super().__init__()
            self.title = title
            self.message = message
            self.inline = inline

    def __init__(self, loaded: LoadedRecording, seq: int) -> None:
        super().__init__()
        self.loaded = loaded
        self.base: Recording = loaded.recording
        self.base_path = str(loaded.path)
        self.start_seq = seq
        #: the id the branch will be stored under (shown, and the export's file name)
        self.branch_id = new_branch_id()
        self.drafts: list[InterventionDraft] = initial_drafts(self.base, seq)
        self.current: int | None = 0 if self.drafts else None
        self.offer: ExecutorChoice | None = recorded_executor(self.base)
        #: the user confirmed running :attr:`offer` (asked once per editor)
        self.consented = False
        self.parent_default = produced_by(self.base)
        self.tools = known_tools(self.base)
        #: the last check and dry run (``None`` until the first one arrives)
        self.last: Preview | None = None
        self.dirty = False
        self.saving = False
        self._generation = 0
        self._timer: Timer | None = None
        self._settled = asyncio.Event()
        #: set once the form is filled in: change events before that are the widgets' own
        self._ready = False

    @property
    def workspace_path(self) -> Path:
        """The app's workspace folder (``--workspace``; opened for each operation)."""
        return Path(getattr(self.app, "workspace_path", DEFAULT_DIR))

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        pol = default_policy(self.base)
        yield Static(self._title_text(), id="be-title")
        with Horizontal(id="be-body"):
            with Vertical(id="be-left"):
                yield Label("checkpoint (seq)", classes="field-label")
                yield Input(compact=True, value=str(self.start_seq), id="be-checkpoint", type="integer")
                yield Static("", id="be-checkpoint-note", classes="note")
                yield Label("label", classes="field-label")
                yield Input(compact=True, value="", id="be-label", placeholder="optional")
                yield Label("parent branch", classes="field-label")
                parent = self.parent_default or ""
                yield Input(
                    compact=True, value=parent if line(parent) == parent else "", id="be-parent", placeholder="none"
                )
                yield Static(self._parent_note(), id="be-parent-note", classes="note")
                yield Label("interventions, in order", classes="field-label")
                yield OptionList(id="be-list")
                with Horizontal(id="be-list-buttons"):
                    yield Button("+ add", id="be-add", tooltip="Add an intervention (alt+a)")
                    yield Button("− remove", id="be-remove", tooltip="Remove it (alt+d)")
                    yield Button("↑", id="be-up", tooltip="Move up (alt+up)")
                    yield Button("↓", id="be-down", tooltip="Move down (alt+down)")
            with TabbedContent(id="be-tabs", initial="tab-iv"):
                with TabPane("Intervention", id="tab-iv"):
                    yield Static("", id="iv-empty", classes="note")
                    with Horizontal(classes="row", id="iv-kind-row"):
                        yield Label("kind")
                        yield Select(
                            compact=True,
                            options=[(k, k) for k in KINDS],
                            id="iv-kind",
                            allow_blank=False,
                            value=self.drafts[0].kind if self.drafts else KINDS[0],
                        )
                        yield Label("seq", id="iv-seq-label", classes="gap")
                        yield Input(compact=True, value="", id="iv-seq", type="integer")
                    with Horizontal(classes="row", id="iv-messages-row"):
                        yield Label("op")
                        yield Select(
                            compact=True,
                            options=[
                                ("replace a message", "replace"),
                                ("append messages", "append"),
                                ("remove a message", "remove"),
                            ],
                            id="iv-op",
                            allow_blank=False,
                            value="replace",
                        )
                        yield Label("index", id="iv-index-label", classes="gap")
                        yield Input(compact=True, value="", id="iv-index", type="integer")
                    with Horizontal(classes="row", id="iv-tool-row"):
                        yield Label("target", id="iv-target-label")
                        yield Select(
                            compact=True,
                            options=[("this call (seq)", "seq"), ("every call of a tool", "tool")],
                            id="iv-target",
                            allow_blank=False,
                            value="seq",
                        )
                        yield Label("tool", id="iv-tool-label", classes="gap")
                        yield Select(
                            compact=True,
                            options=[(Text(line(t)), t) for t in self.tools],
                            id="iv-tool",
                            allow_blank=True,
                            prompt="(a tool the base knows)",
                        )
                    with Horizontal(classes="row", id="iv-policy-row"):
                        yield Label("action")
                        yield Select(
                            compact=True,
                            options=[("deny every call", "deny"), ("require an approval", "require_approval")],
                            id="iv-action",
                            allow_blank=False,
                            value="deny",
                        )
                        yield Input(compact=True, value="", id="iv-reason", placeholder="reason (optional)")
                    yield Static("", id="iv-meaning", classes="note")
                    yield Input(compact=True, value="", id="iv-note", placeholder="note (optional)")
                    with Horizontal(id="iv-payload-row"):
                        yield Static("", id="iv-payload-label")
                        yield Button("↺ recorded value", id="iv-reset", tooltip="Start again from the recorded value")
                    yield JsonEditor("", id="iv-json")
                    yield Static("", id="iv-locked")
                    yield Static("", id="iv-error", classes="error")
                with TabPane("Policy", id="tab-policy"):
                    with VerticalScroll(id="pol-scroll"):
                        yield Label("executor: who answers what the recording cannot", classes="field-label")
                        options: list[tuple[Any, str]] = [("none: no code runs", "none")]
                        options += [(f"{spec} (live model, tools offline)", spec) for spec in PROVIDERS]
                        if self.offer is not None:
                            options.insert(0, (Text("the recording's: " + line(self.offer.spec)), "recording"))
                        yield Select(
                            compact=True,
                            options=options,
                            id="pol-executor",
                            allow_blank=False,
                            value="recording" if self.offer is not None else "none",
                        )
                        yield Static("", id="pol-executor-note", classes="note")
                        yield Label("provider URL", classes="field-label", id="pol-provider-url-label")
                        yield Input(
                            compact=True,
                            value="",
                            id="pol-provider-url",
                            placeholder="empty: from the environment, else the provider's",
                        )
                        yield Label("live model", classes="field-label")
                        yield Input(
                            compact=True, value=pol.live_model or "", id="pol-live-model", placeholder="as recorded"
                        )
                        yield Static("", id="pol-live-model-note", classes="note")
                        yield Label("user simulator", classes="field-label")
                        yield Input(
                            compact=True,
                            value=pol.user_model or "",
                            id="pol-user-model",
                            placeholder="none: a person's turns are requirements",
                        )
                        yield Static(
                            "a model that plays the person once the branch diverged (tau-bench's design); "
                            "empty: each turn is a user requirement you answer",
                            id="pol-user-model-note",
                            classes="note",
                        )
                        yield Label("model calls", classes="field-label")
                        yield Select(
                            compact=True,
                            options=[(s, s) for s in _SOURCES],
                            id="pol-model",
                            allow_blank=False,
                            value=pol.model,
                        )
                        yield Static("", id="pol-model-note", classes="note")
                        yield Label("tool calls", classes="field-label")
                        yield Select(
                            compact=True,
                            options=[(s, s) for s in _SOURCES],
                            id="pol-tool",
                            allow_blank=False,
                            value=pol.tool,
                        )
                        yield Static("", id="pol-tool-note", classes="note")
                        yield Label("drift", classes="field-label")
                        yield Select(
                            compact=True,
                            options=[("strict", "strict"), ("lenient", "lenient")],
                            id="pol-drift",
                            allow_blank=False,
                            value=pol.drift,
                        )
                        yield Static("", id="pol-drift-note", classes="note")
                        yield Label("max steps", classes="field-label")
                        yield Input(compact=True, value="", id="pol-max-steps", type="integer", placeholder="no limit")
                        yield Static(
                            "most model calls the replay may make (empty: no limit)", id="pol-max-note", classes="note"
                        )
                        yield Label("temperature", classes="field-label")
                        yield Input(
                            compact=True, value="", id="pol-temperature", type="number", placeholder="as recorded"
                        )
                        yield Static(
                            "set on every model request from the checkpoint on (empty: as recorded)",
                            id="pol-temp-note",
                            classes="note",
                        )
                        yield Static("", id="pol-error", classes="error")
            with Vertical(id="be-dry"):
                yield Static("Dry run — what will answer each call", id="dry-title")
                yield Static("", id="dry-counts")
                with VerticalScroll(id="dry-scroll"):
                    yield Static("", id="dry-rows")
        with Horizontal(id="be-actions"):
            yield Button("Save", id="be-save", variant="primary", disabled=True, tooltip="ctrl+s")
            yield Button("Save & replay", id="be-save-replay", disabled=True, tooltip="ctrl+r")
            yield Button("Export…", id="be-export", disabled=True, tooltip="ctrl+o")
            yield Static("", id="be-status")
        yield Footer()

    def _title_text(self) -> Text:
        return Text.assemble(
            ("New branch ", "bold"),
            (self.branch_id, "bold"),
            " of ",
            (line(self.loaded.path.name), "bold"),
            ("  ·  records before the checkpoint answer as recorded", "dim"),
        )

    def _parent_note(self) -> Text:
        if self.parent_default is None:
            return Text("a root branch (empty: none)", style="dim")
        shown = line(self.parent_default)
        if shown != self.parent_default:
            return Text(f"the recording names parent '{shown}', which is not a branch id", style="#ff5f5f")
        return Text("the branch whose replay produced this recording", style="dim")

    def on_mount(self) -> None:
        self.title = f"Branch editor — {line(self.loaded.path.name)}"
        self.set_class(self.size.width < NARROW_BELOW, "-narrow")
        self._refresh_list()
        self._load_form()
        self._refresh_policy_notes()
        self._refresh_checkpoint_note()
        self._schedule(at_once=True)
        self.call_after_refresh(self._set_ready)
        if self.current is not None:
            self.query_one(JsonEditor).area.focus()
        else:
            self.query_one("#be-checkpoint", Input).focus()

    def _set_ready(self) -> None:
        self._ready = True

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW_BELOW, "-narrow")
        if self.last is not None:
            self._show_dry_run(self.last)

    # ------------------------------------------------------------------ the list

    def _list_prompt(self, i: int) -> Text:
        d = self.drafts[i]
        mark, style = ("·", "dim")
        if self.last is not None and i < len(self.last.check.drafts):
            mark, style = ("✓", "green") if self.last.check.drafts[i].ok else ("✗", "bold #ff5f5f")
        return Text.assemble((f"{mark} ", style), f"{i + 1} ", line(describe_draft(d)))

    def _refresh_list(self) -> None:
        ol = self.query_one("#be-list", OptionList)
        with self.prevent(OptionList.OptionHighlighted):
            ol.clear_options()
            ol.add_options([Option(self._list_prompt(i)) for i in range(len(self.drafts))])
            if self.current is not None:
                ol.highlighted = self.current
        self.query_one("#be-remove", Button).disabled = self.current is None
        self.query_one("#be-up", Button).disabled = not self.current
        self.query_one("#be-down", Button).disabled = self.current is None or self.current >= len(self.drafts) - 1

    def _refresh_list_marks(self) -> None:
        ol = self.query_one("#be-list", OptionList)
        for i in range(min(len(self.drafts), ol.option_count)):
            ol.replace_option_prompt_at_index(i, self._list_prompt(i))

    @on(OptionList.OptionHighlighted, "#be-list")
    def _picked(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index == self.current:
            return
        self._store_form()
        self.current = event.option_index
        self._refresh_list()
        self._load_form()
        self._show_current_problem()

    # ------------------------------------------------------------------ the form

    def _checkpoint(self) -> int:
        """The checkpoint as typed when it is a base seq, else the one the editor opened at."""
        try:
            seq = int(self.query_one("#be-checkpoint", Input).value.strip())
        except ValueError:
            return self.start_seq
        return seq if any(r.seq == seq for r in self.base.records) else self.start_seq

    def _show(self, selector: str, visible: bool) -> None:
        self.query_one(selector).set_class(not visible, "-hidden")

    def _load_form(self) -> None:
        """Put the current draft into the intervention form (no change events)."""
        empty = self.current is None
        self._show("#iv-empty", empty)
        self.query_one("#iv-empty", Static).update(
            Text(
                "no intervention: the replay would equal the base. alt+a (or + add) adds one, "
                "prefilled with the recorded value at the checkpoint.",
                style="italic",
            )
        )
        for sel in ("#iv-kind-row", "#iv-meaning", "#iv-note", "#iv-payload-row", "#iv-json", "#iv-error"):
            self._show(sel, not empty)
        if empty:
            for sel in ("#iv-messages-row", "#iv-tool-row", "#iv-policy-row", "#iv-locked"):
                self._show(sel, False)
            return
        d = self.drafts[self.current or 0]
        with self.prevent(Input.Changed, Select.Changed):
            self.query_one("#iv-kind", Select).value = d.kind
            self.query_one("#iv-target", Select).value = "tool" if d.tool_wide else "seq"
            self.query_one("#iv-seq", Input).value = "" if d.seq is None else str(d.seq)
            self.query_one("#iv-op", Select).value = d.op
            self.query_one("#iv-index", Input).value = "" if d.index is None else str(d.index)
            tool_select = self.query_one("#iv-tool", Select)
            if d.tool is not None and d.tool in self.tools:
                tool_select.value = d.tool
            else:
                tool_select.clear()
            self.query_one("#iv-action", Select).value = d.action
            self.query_one("#iv-reason", Input).value = d.reason
            self.query_one("#iv-note", Input).value = d.note
        self._arrange(d)
        payload = PAYLOAD_FIELD.get(d.kind)
        editor = self.query_one(JsonEditor)
        if payload is None:
            editor.set_text("", read_only=True, note="this kind has no JSON payload", validator=None)
        elif d.kind == "messages" and d.op == "remove":
            editor.set_text(d.text, read_only=True, note="the message this removes, as recorded", validator=None)
        else:
            editor.set_text(d.text, validator=partial(_payload_problem, d.kind))
        self._show_locked(d)

    def _arrange(self, d: InterventionDraft) -> None:
        """Show the fields of ``d``'s kind, and say what it does and what it targets."""
        k = d.kind
        targeted = k in ("tool_result", "model_response")
        self._show("#iv-target-label", k == "tool_result")
        self._show("#iv-target", k == "tool_result")
        self._show("#iv-seq-label", targeted and not d.tool_wide)
        self._show("#iv-seq", targeted and not d.tool_wide)
        self._show("#iv-messages-row", k == "messages")
        self._show("#iv-index-label", k == "messages" and d.op != "append")
        self._show("#iv-index", k == "messages" and d.op != "append")
        self._show("#iv-tool-row", k in ("tool_policy", "tool_result"))
        self._show("#iv-tool-label", k == "tool_policy" or d.tool_wide)
        self._show("#iv-tool", k == "tool_policy" or d.tool_wide)
        self._show("#iv-policy-row", k == "tool_policy")
        payload = PAYLOAD_FIELD.get(k)
        self._show("#iv-payload-row", payload is not None)
        self._show("#iv-json", payload is not None)
        self.query_one("#iv-meaning", Static).update(Text.assemble(KIND_MEANING[k], "; ", self._target_note(d)))
        label = f"{payload} (JSON)" if payload else ""
        if d.kind == "messages" and d.op == "remove":
            label = "the message removed (read-only)"
        elif payload is not None:
            label += " — " + ("edited" if d.edited else "the recorded value" if self._has_recorded(d) else "a template")
        self.query_one("#iv-payload-label", Static).update(Text(label))
        self.query_one("#iv-reset", Button).disabled = not self._has_recorded(d)

    def _has_recorded(self, d: InterventionDraft) -> bool:
        by_seq = {r.seq: r for r in self.base.records}
        if d.kind == "tool_result":
            return d.tool_wide or type(by_seq.get(d.seq if d.seq is not None else -1)) is ToolRecord
        if d.kind == "model_response":
            r = by_seq.get(d.seq if d.seq is not None else -1)
            return type(r) is ModelRecord and r.response is not None
        if d.kind == "messages":
            return d.op != "append" and next_request(self.base, self._checkpoint()) is not None
        if d.kind == "options":
            req = next_request(self.base, self._checkpoint())
            return req is not None and bool(req.request.options)
        return False

    def _target_note(self, d: InterventionDraft) -> Text:
        by_seq = {r.seq: r for r in self.base.records}
        if d.kind in ("tool_result", "model_response") and not d.tool_wide:
            r = by_seq.get(d.seq if d.seq is not None else -1)
            if r is None:
                return Text("give the seq of the call it replaces")
            name = getattr(r, "tool", None) or getattr(r, "model", None) or r.kind
            return Text(f"target: seq {r.seq}, {r.kind} {line(name)}")
        if d.kind == "tool_result":
            return Text(f"target: every call of {line(d.tool or '?')} from the checkpoint on")
        if d.kind in ("messages", "options"):
            req = next_request(self.base, self._checkpoint())
            if req is None:
                return Text("no model request at or after the checkpoint")
            return Text(f"first request from the checkpoint: seq {req.seq}, {len(req.request.messages)} message(s)")
        return Text(f"tool {line(d.tool or '?')}")

    def _show_locked(self, d: InterventionDraft) -> None:
        locked = self.query_one("#iv-locked", Static)
        parts: list[Any] = [lp.part for lp in d.locked]
        if d.kind == "messages" and d.op != "append":
            req = next_request(self.base, self._checkpoint())
            msgs = req.request.messages if req is not None else []
            i = d.index if d.index is not None else -1
            if -len(msgs) <= i < len(msgs) and signed_reasoning_parts(msgs[i]):
                parts = signed_reasoning_parts(msgs[i])
        if not parts:
            locked.set_class(True, "-hidden")
            return
        locked.set_class(False, "-hidden")
        lines = [
            Text(
                f"{len(parts)} provider-signed reasoning block(s), read-only: the provider verifies their "
                "signature, so an edited block would be a request no provider accepts",
                style="bold",
            )
        ]
        for p in parts:
            body = p.get("thinking") or p.get("text") or p.get("summary") or ""
            shown = line(body if isinstance(body, str) else str(body))
            lines.append(Text(f"  {line(p.get('type', '?'))}: " + (shown[:120] + "…" if len(shown) > 120 else shown)))
        locked.update(Text("\n").join(lines))

    def _store_form(self) -> None:
        """Copy the intervention form into the current draft."""
        if self.current is None:
            return
        d = self.drafts[self.current]
        d.seq = _int_or_none(self.query_one("#iv-seq", Input).value)
        d.index = _int_or_none(self.query_one("#iv-index", Input).value)
        op = self.query_one("#iv-op", Select).value
        d.op = op if op in ("append", "replace", "remove") else "replace"
        tool = self.query_one("#iv-tool", Select).value
        d.tool = tool if isinstance(tool, str) else None
        action = self.query_one("#iv-action", Select).value
        d.action = action if action in ("deny", "require_approval") else "deny"
        d.reason = self.query_one("#iv-reason", Input).value
        d.note = self.query_one("#iv-note", Input).value
        d.tool_wide = self.query_one("#iv-target", Select).value == "tool" and d.kind == "tool_result"
        editor = self.query_one(JsonEditor)
        if PAYLOAD_FIELD.get(d.kind) is not None and not editor.area.read_only:
            d.text = editor.text

    def _retarget(self, keep_text: bool | None = None) -> None:
        """The target of the current draft changed: prefill it again from the recorded
        value, unless its text was edited."""
        if self.current is None:
            return
        d = self.drafts[self.current]
        if keep_text is None:
            keep_text = d.edited
        if not keep_text:
            d = prefill(self.base, d, self._checkpoint())
            self.drafts[self.current] = d
        self._load_form()

    @on(Select.Changed, "#iv-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        if not self._ready:
            return
        if self.current is None or not isinstance(event.value, str):
            return
        self._store_form()
        old = self.drafts[self.current]
        if event.value == old.kind:
            return
        fresh = new_draft(
            self.base, event.value, self._checkpoint(), seq=old.seq if old.seq is not None else self.start_seq
        )
        fresh.note = old.note
        self.drafts[self.current] = fresh
        self._edited()
        self._load_form()

    @on(Select.Changed, "#iv-target, #iv-op, #iv-tool")
    def _target_changed(self, event: Select.Changed) -> None:
        if not self._ready:
            return
        if self.current is None:
            return
        self._store_form()
        d = self.drafts[self.current]
        if event.select.id == "iv-target" and d.tool_wide and d.tool is None:
            rec = {r.seq: r for r in self.base.records}.get(d.seq if d.seq is not None else -1)
            d.tool = rec.tool if type(rec) is ToolRecord else (self.tools[0] if self.tools else None)
        if event.select.id == "iv-target" and not d.tool_wide and d.seq is None:
            d.seq = first_target(self.base, d.kind, self._checkpoint())
        self._retarget(keep_text=d.edited and event.select.id != "iv-op")
        self._edited()

    @on(Input.Changed, "#iv-seq, #iv-index")
    def _seq_changed(self) -> None:
        if not self._ready:
            return
        if self.current is None:
            return
        self._store_form()
        d = self.drafts[self.current]
        if not d.edited:  # a new target: its recorded value (an edited text is kept)
            self.drafts[self.current] = prefill(self.base, d, self._checkpoint())
        self._load_form()
        self._edited()

    @on(Select.Changed, "#iv-action")
    @on(Input.Changed, "#iv-reason, #iv-note")
    def _detail_changed(self) -> None:
        if not self._ready:
            return
        self._store_form()
        self._edited()

    @on(JsonEditor.Changed, "#iv-json")
    def _payload_changed(self, event: JsonEditor.Changed) -> None:
        if self.current is None:
            return
        d = self.drafts[self.current]
        d.text = event.text
        if not d.edited:
            d.edited = True
            self._arrange(d)
        self._edited()

    @on(JsonEditor.Validated, "#iv-json")
    def _payload_checked(self) -> None:
        self._refresh_buttons()

    @on(Input.Changed, "#be-checkpoint")
    def _checkpoint_changed(self) -> None:
        if not self._ready:
            return
        self._refresh_checkpoint_note()
        if self.current is not None:
            self._arrange(self.drafts[self.current])
        self._edited()

    @on(Input.Changed, "#be-label, #be-parent")
    def _branch_field_changed(self) -> None:
        if not self._ready:
            return
        self._edited()

    @on(Select.Changed, "#pol-executor")
    def _executor_changed(self, event: Select.Changed) -> None:
        if not self._ready:
            return
        model = self.query_one("#pol-model", Select)
        tool = self.query_one("#pol-tool", Select)
        if event.value == "none":
            changed = [s for s in (model, tool) if s.value == "live"]
            for s in changed:
                s.value = "recorded"
            if changed:
                self.notify("no executor: live answers turned back to recorded", timeout=4)
        elif event.value in ("recording", *PROVIDERS) and model.value == "recorded":
            model.value = "live"
        if event.value in PROVIDERS and tool.value == "live":
            tool.value = "recorded"  # the provider executor runs no tools
            self.notify("the provider executor runs no tools: tool calls answer from the recording", timeout=4)
        self._refresh_policy_notes()
        self._edited()

    @on(Select.Changed, "#pol-model, #pol-tool, #pol-drift")
    @on(Input.Changed, "#pol-max-steps, #pol-temperature, #pol-live-model, #pol-user-model, #pol-provider-url")
    def _policy_changed(self) -> None:
        if not self._ready:
            return
        self._refresh_policy_notes()
        self._edited()

    def _refresh_checkpoint_note(self) -> None:
        note = self.query_one("#be-checkpoint-note", Static)
        text = self.query_one("#be-checkpoint", Input).value.strip()
        try:
            seq = int(text)
        except ValueError:
            note.update(Text("the seq of a base record", style="#ff5f5f"))
            return
        rec = next((r for r in self.base.records if r.seq == seq), None)
        if rec is None:
            note.update(Text(f"no base record has seq {seq}", style="#ff5f5f"))
            return
        name = getattr(rec, "tool", None) or getattr(rec, "model", None) or getattr(rec, "event", None) or ""
        note.update(Text(f"{rec.kind} {line(name)}".rstrip() + "; earlier records answer as recorded"))

    def _refresh_policy_notes(self) -> None:
        executor = self.query_one("#pol-executor", Select).value
        for wid in ("#pol-provider-url", "#pol-provider-url-label"):
            self.query_one(wid).display = executor in PROVIDERS
        note = self.query_one("#pol-executor-note", Static)
        if executor == "recording" and self.offer is not None:
            module, _, function = self.offer.spec.partition(":")
            consent = "you confirmed running it" if self.consented else "it runs only after you confirm (asked on save)"
            note.update(
                Text.assemble(
                    "named by the recording (metadata.executor): module ",
                    (line(module), "bold"),
                    ", function ",
                    (line(function), "bold"),
                    f" — code that runs on this machine; {consent}",
                )
            )
        elif executor in PROVIDERS:
            url_var, default, key_var = PROVIDER_ENV[str(executor)]
            typed = self.query_one("#pol-provider-url", Input).value.strip()
            url = typed or os.environ.get(url_var) or default
            if typed and not typed.startswith(("http://", "https://")):
                note.update(Text("the provider URL must start with http:// or https://", style="#ff5f5f"))
                return
            note.update(
                Text(
                    f"built in: model calls the recording cannot answer are sent to {line(url)} ({url_var}; "
                    f"key from {key_var}, never stored); tool calls answer from the recording, fixtures or "
                    "requirements — none is executed"
                )
            )
        elif self.offer is not None:
            note.update(Text("no code runs: what the recording cannot answer pauses on a requirement"))
        else:
            note.update(Text("the recording names no executor: what it cannot answer pauses on a requirement"))
        for sel, key in (("#pol-model", "model"), ("#pol-tool", "tool")):
            value = self.query_one(sel, Select).value
            meaning = SOURCE_MEANING.get(str(value), "")
            if value == "live" and executor == "none":
                meaning += " — no executor is chosen: the replay would fail at once"
            elif value == "live" and key == "tool" and executor in PROVIDERS:
                meaning += " — the provider executor runs no tools: such a call would fail"
            self.query_one(f"#pol-{key}-note", Static).update(Text(meaning))
        drift = self.query_one("#pol-drift", Select).value
        self.query_one("#pol-drift-note", Static).update(Text(DRIFT_MEANING.get(str(drift), "")))
        unknown = any(getattr(r, "model", None) == "unknown" for r in self.base.records if r.kind == "model")
        live = self.query_one("#pol-live-model", Input).value.strip()
        if live:
            why = f"live calls ask {line(live)} instead of the recorded model; each such call says so"
        elif unknown:
            why = "required for live calls: the recording does not name its model ('unknown')"
        else:
            why = 'the model a live call asks (empty: the recorded one) — "what would model Y have done?"'
        self.query_one("#pol-live-model-note", Static).update(Text(why))

    # ------------------------------------------------------------------ interventions

    def action_add(self) -> None:
        """Add an intervention (prefilled with the recorded value at the checkpoint)."""
        self._store_form()
        cp = self._checkpoint()
        rec = next((r for r in self.base.records if r.seq == cp), None)
        kind = (
            "tool_result"
            if type(rec) is ToolRecord
            else "model_response"
            if type(rec) is ModelRecord
            else "messages"
            if next_request(self.base, cp) is not None
            else "tool_policy"
        )
        used = {d.kind for d in self.drafts}
        if kind in used and kind in ("tool_result", "model_response") and next_request(self.base, cp) is not None:
            kind = "messages"
        self.drafts.append(new_draft(self.base, kind, cp, seq=cp))
        self.current = len(self.drafts) - 1
        self._refresh_list()
        self._load_form()
        self.query_one("#be-tabs", TabbedContent).active = "tab-iv"
        self._edited()

    def action_remove(self) -> None:
        """Remove the intervention shown."""
        if self.current is None:
            self.notify("no intervention to remove", timeout=2)
            return
        del self.drafts[self.current]
        self.current = min(self.current, len(self.drafts) - 1) if self.drafts else None
        self._refresh_list()
        self._load_form()
        self._edited()

    def action_move(self, delta: int) -> None:
        """Move the intervention shown up (``-1``) or down (``1``)."""
        if self.current is None:
            return
        j = self.current + delta
        if not 0 <= j < len(self.drafts):
            return
        self._store_form()
        self.drafts[self.current], self.drafts[j] = self.drafts[j], self.drafts[self.current]
        self.current = j
        self._refresh_list()
        self._edited()

    @on(Button.Pressed, "#be-add")
    def _add_pressed(self) -> None:
        self.action_add()

    @on(Button.Pressed, "#be-remove")
    def _remove_pressed(self) -> None:
        self.action_remove()

    @on(Button.Pressed, "#be-up")
    def _up_pressed(self) -> None:
        self.action_move(-1)

    @on(Button.Pressed, "#be-down")
    def _down_pressed(self) -> None:
        self.action_move(1)

    @on(Button.Pressed, "#iv-reset")
    def _reset_pressed(self) -> None:
        if self.current is None:
            return
        self._store_form()
        self._retarget(keep_text=False)
        self._edited()

    def action_switch_tab(self) -> None:
        """Switch between the intervention and the policy form."""
        tabs = self.query_one("#be-tabs", TabbedContent)
        target = "tab-policy" if tabs.active == "tab-iv" else "tab-iv"
        # focus leaves the pane first: a focused field inside a hidden pane would bring its
        # tab back; then the new form's first field has it, so Tab walks that form
        self.set_focus(None)
        tabs.active = target
        first = self.query_one("#pol-executor" if target == "tab-policy" else "#iv-kind")
        self.call_after_refresh(first.focus)

    # ------------------------------------------------------------------ checking

    def _edited(self) -> None:
        self.dirty = True
        if self.current is not None and self.current < len(self.drafts):
            ol = self.query_one("#be-list", OptionList)
            if self.current < ol.option_count:
                ol.replace_option_prompt_at_index(self.current, self._list_prompt(self.current))
        self._schedule()

    def _snapshot(self) -> _Snapshot:
        self._store_form()
        return _Snapshot(
            checkpoint=self.query_one("#be-checkpoint", Input).value,
            label=self.query_one("#be-label", Input).value,
            parent=self.query_one("#be-parent", Input).value,
            drafts=tuple(dataclasses.replace(d) for d in self.drafts),
            model=str(self.query_one("#pol-model", Select).value),
            tool=str(self.query_one("#pol-tool", Select).value),
            drift=str(self.query_one("#pol-drift", Select).value),
            max_steps=self.query_one("#pol-max-steps", Input).value,
            temperature=self.query_one("#pol-temperature", Input).value,
            executor=str(self.query_one("#pol-executor", Select).value),
            live_model=self.query_one("#pol-live-model", Input).value,
            user_model=self.query_one("#pol-user-model", Input).value,
            provider_url=self.query_one("#pol-provider-url", Input).value.strip(),
        )

    def _schedule(self, *, at_once: bool = False) -> None:
        self._generation += 1
        self._settled.clear()
        self._refresh_buttons()
        if self._timer is not None:
            self._timer.stop()
        if at_once:
            self._timer = None
            self._start_preview(self._generation)
        else:
            self._timer = self.set_timer(PREVIEW_DELAY, partial(self._start_preview, self._generation))

    def _start_preview(self, generation: int) -> None:
        if generation != self._generation or not self.is_attached:
            return
        snap = self._snapshot()
        self.query_one("#dry-title", Static).update(Text("Dry run — checking…", style="bold"))
        self.app.run_worker(
            partial(self._preview_job, generation, snap),
            name="branch-dry-run",
            group="branch-dry-run",
            description="the branch editor's dry run",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _check_snapshot(self, snap: _Snapshot, workspace: Workspace | None) -> BranchCheck:
        return check_branch(
            self.base,
            self.base_path,
            checkpoint=snap.checkpoint,
            drafts=snap.drafts,
            policy=self._policy_of(snap),
            label=snap.label,
            parent=snap.parent,
            branch_id=self.branch_id,
            workspace=workspace,
        )

    @staticmethod
    def _policy_of(snap: _Snapshot) -> Any:
        return policy_from_fields(
            model=snap.model,
            tool=snap.tool,
            drift=snap.drift,
            max_steps=snap.max_steps,
            temperature=snap.temperature,
            live_model=snap.live_model,
            user_model=snap.user_model,
        )

    def _preview_job(self, generation: int, snap: _Snapshot) -> None:
        """In a thread: check the branch and dry-run it with the workspace's fixtures
        (the workspace is only read, never created); posts :class:`_Previewed`."""
        try:
            ensure_redacted(self.base)  # what resolve_branch does first; once, off the UI thread
            ws: Workspace | None = None
            note: str | None = None
            try:
                ws = Workspace.open(self.workspace_path, create=False)
            except NoWorkspace:
                note = f"no workspace at {self.workspace_path} yet: no fixtures (saving creates it)"
            except WorkspaceError as exc:
                note = f"the workspace cannot be read, so its fixtures are not used: {exc}"
            try:
                result = preview(
                    self.base,
                    self.base_path,
                    checkpoint=snap.checkpoint,
                    drafts=snap.drafts,
                    policy=self._policy_of(snap),
                    label=snap.label,
                    parent=snap.parent,
                    branch_id=self.branch_id,
                    executor_wired=snap.executor != "none",
                    observed_tools=snap.executor == "recording"
                    and self.offer is not None
                    and self.offer.spec.startswith("cmd:"),
                    answers_only=snap.executor in PROVIDERS,
                    workspace=ws,
                    workspace_note=note,
                )
            finally:
                if ws is not None:
                    ws.close()
        except BaseException as exc:
            self.post_message(self._Previewed(generation, None, f"{type(exc).__name__}: {exc}"))
            raise
        self.post_message(self._Previewed(generation, result))

    @on(_Previewed)
    def _previewed(self, event: _Previewed) -> None:
        if event.generation != self._generation:
            return
        if event.result is None:
            self.query_one("#dry-title", Static).update(Text("Dry run — failed", style="bold #ff5f5f"))
            self.query_one("#dry-rows", Static).update(Text(line(event.error or ""), style="#ff5f5f"))
            self._settled.set()
            return
        self.last = event.result
        self._refresh_list_marks()
        self._show_current_problem()
        check = event.result.check
        cp_note = self.query_one("#be-checkpoint-note", Static)
        if check.checkpoint is not None:
            cp_note.update(Text("✗ " + line(check.checkpoint.message), style="#ff5f5f"))
        else:
            self._refresh_checkpoint_note()
        self.query_one("#pol-error", Static).update(
            Text("✗ " + line(check.policy.describe())) if check.policy is not None else Text("")
        )
        parent_note = self.query_one("#be-parent-note", Static)
        if check.problem is not None and check.problem.field == "parent":
            parent_note.update(Text("✗ " + line(check.problem.message), style="#ff5f5f"))
        else:
            parent_note.update(self._parent_note())
        self._show_dry_run(event.result)
        self._settled.set()
        self._refresh_buttons()

    def _show_current_problem(self) -> None:
        err = self.query_one("#iv-error", Static)
        if self.last is None or self.current is None or self.current >= len(self.last.check.drafts):
            err.update("")
            return
        problem = self.last.check.drafts[self.current].problem
        editor = self.query_one(JsonEditor)
        if problem is None or (problem.field == "payload" and editor.problem is not None):
            err.update("")  # none, or the JSON editor shows it itself
            return
        err.update(Text("✗ " + line(problem.describe())))

    def _first_problem(self) -> str | None:
        if self.last is None:
            return None
        first = self.last.check.first_problem()
        if first is None:
            return None
        i, problem = first
        return (f"intervention {i + 1}: " if i is not None else "") + problem.describe()

    def _refresh_buttons(self) -> None:
        ok = (
            self.last is not None
            and self.last.check.ok
            and self._settled.is_set()
            and self.query_one(JsonEditor).valid is not False
            and not self.saving
        )
        for sel in ("#be-save", "#be-save-replay", "#be-export"):
            self.query_one(sel, Button).disabled = not ok
        status = self.query_one("#be-status", Static)
        problem = self._first_problem()
        if self.saving:
            status.update(Text("saving…"))
        elif problem is not None:
            status.update(
                Text("✗ " + line(problem) + "  (save is off until it is fixed; ctrl+g: go there)", style="#ff5f5f")
            )
        elif self.last is not None and self.last.check.branch is not None:
            n = len(self.last.check.branch.interventions)
            status.update(
                Text(f"✓ valid: {n} intervention(s) at seq {self.last.check.branch.checkpoint}", style="green")
            )
        else:
            status.update(Text("checking…", style="dim"))

    def _show_dry_run(self, result: Preview) -> None:
        title = self.query_one("#dry-title", Static)
        counts = self.query_one("#dry-counts", Static)
        rows = self.query_one("#dry-rows", Static)
        title.update(Text("Dry run — what will answer each call", style="bold"))
        dry = result.dry_run
        notes: list[Text] = []
        if result.workspace_note:
            notes.append(Text(line(result.workspace_note), style="dim"))
        if dry is None:
            counts.update(Text("the branch has a problem: fix it to see the dry run", style="#ff5f5f"))
            rows.update(Text("\n").join(notes) if notes else "")
            return
        parts: list[Any] = []
        for answer, n in dry.get("counts", {}).items():
            symbol, style = ANSWER_STYLE.get(answer, ("·", ""))
            parts += [(f"{symbol} {answer} {n}", style), "  "]
        head = Text.assemble(*parts) if parts else Text("no calls from the checkpoint", style="dim")
        if dry.get("status") != "ok":
            head = Text.assemble(("✗ the replay would fail at once: ", "bold #ff5f5f"), line(dry.get("reason", "")))
        counts.update(head)
        # the panel's width by the layout rules (its size may not be laid out yet)
        width = (DRY_WIDTH_NARROW if self.size.width < NARROW_BELOW else DRY_WIDTH) - 2
        kind_w = 5 if width >= 40 else 1  # narrow: m(odel), t(ool), u(ser)
        name_w = max(4, width - (4 + 1) - (kind_w + 1) - 1 - 15)  # answer: symbol, space, 12 letters, 1 spare
        out: list[Text] = []
        executor = self._snapshot_executor_line()
        if executor is not None:
            out.append(executor)
        out.extend(notes)
        if out:
            out.append(Text(""))
        out.append(Text(f"{'seq':>4} {'call'[:kind_w]:<{kind_w}} {'name':<{name_w}} answer", style="bold"))
        for p in dry.get("predictions", []):
            seq = "-" if p["base_seq"] is None else str(p["base_seq"])
            name = line(p["name"])
            if len(name) > name_w:
                name = name[: name_w - 1] + "…"
            symbol, style = ANSWER_STYLE.get(p["answer"], ("·", ""))
            out.append(
                Text.assemble(
                    f"{seq:>4} {line(p['kind'])[:kind_w]:<{kind_w}} {name:<{name_w}} ",
                    (f"{symbol} {p['answer']}", style),
                )
            )
            detail = p.get("detail") or ""
            if p["answer"] != "recorded" and detail:
                out.append(Text("       " + block(detail), style="dim"))
        if dry.get("predictions"):
            out.append(Text(""))
            legend = [a for a in dict.fromkeys(p["answer"] for p in dry["predictions"])]
            for a in legend:
                symbol, style = ANSWER_STYLE.get(a, ("·", ""))
                out.append(Text.assemble((f"{symbol} {a}", style), ": ", Text(ANSWER_MEANING.get(a, ""), style="dim")))
        est = dry.get("live_cost")
        if est:
            t, rest = est["total"], est["rest_of_base"]
            hows = sorted({c["how"] for c in est["calls"]})
            out.append(Text(""))
            out.append(
                Text(
                    f"live: {t['calls']} model call(s), ~{t['input_tokens']:,} input / ~{t['output_tokens']:,} "
                    f"output tokens (an estimate: {', '.join(hows)})",
                    style="bold",
                )
            )
            if rest["calls"]:
                out.append(
                    Text(
                        f"if the branch runs as long as the base: {rest['calls']} more, "
                        f"~{rest['input_tokens']:,} / ~{rest['output_tokens']:,} tokens "
                        "(cost: replay --dry-run --prices FILE)",
                        style="dim",
                    )
                )
        rows.update(Text("\n").join(out))

    def _snapshot_executor_line(self) -> Text | None:
        chosen = self.query_one("#pol-executor", Select).value
        if chosen in PROVIDERS:
            return Text(f"executor {chosen} (built in): live model calls; tools stay offline", style="dim")
        if self.offer is None or chosen != "recording":
            return None
        state = "you confirmed it" if self.consented else "not imported by a dry run; runs only after you confirm"
        return Text(f"executor {line(self.offer.spec)} (named by the recording): {state}", style="dim")

    async def settled(self) -> None:
        """Wait until the check and dry run of the current form have arrived (and the
        JSON editor's own check)."""
        await self._settled.wait()
        await self.query_one(JsonEditor).settled()

    def action_go_to_problem(self) -> None:
        """Show and focus the first problem."""
        if self.last is None:
            return
        first = self.last.check.first_problem()
        if first is None:
            self.notify("no problem: the branch is valid", timeout=2)
            return
        i, problem = first
        if i is not None and i != self.current:
            self._store_form()
            self.current = i
            self._refresh_list()
            self._load_form()
            self._show_current_problem()
        tabs = self.query_one("#be-tabs", TabbedContent)
        field = problem.field
        if field in ("model", "tool_source", "drift", "max_steps", "temperature"):
            tabs.active = "tab-policy"
            sel = {"tool_source": "#pol-tool", "max_steps": "#pol-max-steps"}.get(field, f"#pol-{field}")
            self.query_one(sel).focus()
            return
        if field in ("checkpoint", "label", "parent"):
            self.query_one(f"#be-{field}").focus()
            return
        tabs.active = "tab-iv"
        if field == "payload":
            editor = self.query_one(JsonEditor)
            editor.area.focus()
            editor.go_to_problem()
        elif field in ("seq", "index", "reason", "note"):
            self.query_one(f"#iv-{field}").focus()
        elif field in ("tool", "op", "action"):
            self.query_one(f"#iv-{field}").focus()

    # ------------------------------------------------------------------ saving

    def _can_save(self) -> bool:
        if self.saving:
            return False
        if self.last is None or not self.last.check.ok or self.query_one(JsonEditor).valid is False:
            problem = self._first_problem()
            self.notify(
                "the branch is not valid yet" + (f": {problem}" if problem else ""), severity="error", timeout=5
            )
            return False
        executor = self.query_one("#pol-executor", Select).value
        url = self.query_one("#pol-provider-url", Input).value.strip()
        if executor in PROVIDERS and url and not url.startswith(("http://", "https://")):
            self.notify("the provider URL must start with http:// or https://", severity="error", timeout=5)
            return False
        return True

    def action_save(self, launch: bool = False, file: Path | None = None) -> None:
        """Store the branch in the workspace (``launch``: and replay it; ``file``: and
        write it there). An executor named by the recording is used only after the user
        confirms it."""
        if not self._can_save():
            return
        snap = self._snapshot()
        if snap.executor == "recording" and self.offer is not None and not self.consented:
            offer = self.offer

            def answered(yes: bool | None) -> None:
                if yes:
                    self.consented = True
                    self._refresh_policy_notes()
                    self._save(self._snapshot(), launch, file)
                    return
                # refused: nothing runs, nothing is saved; the user sees the policy without it
                with self.prevent(Select.Changed):
                    self.query_one("#pol-executor", Select).value = "none"
                    for sel in ("#pol-model", "#pol-tool"):
                        s = self.query_one(sel, Select)
                        if s.value == "live":
                            s.value = "recorded"
                self._refresh_policy_notes()
                self._edited()
                self.notify(
                    "not saved: the recording's executor will not run; the policy now answers from the "
                    "recording, with requirements — save again to store it",
                    severity="warning",
                    timeout=8,
                )

            self.app.push_screen(ConsentScreen(offer), answered)
            return
        self._save(snap, launch, file)

    def action_export(self) -> None:
        """Ask for a file, then store the branch and write it there."""
        if not self._can_save():
            return

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.action_save(False, path)

        self.app.push_screen(ExportScreen(Path.cwd() / f"{self.branch_id}.json"), chosen)

    def _save(self, snap: _Snapshot, launch: bool, file: Path | None) -> None:
        self.saving = True
        self._refresh_buttons()
        choice = self.offer if snap.executor == "recording" and self.consented else None
        if snap.executor in PROVIDERS:
            choice = ExecutorChoice(provider_spec(snap.executor, snap.provider_url), "command line")
        self.app.run_worker(
            partial(self._save_job, snap, launch, file, choice),
            name="branch-save",
            group="branch-save",
            description="saving the branch",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _save_job(self, snap: _Snapshot, launch: bool, file: Path | None, choice: ExecutorChoice | None) -> None:
        """In a thread: resolve the branch again, then store it (and write ``file``) —
        all or nothing; posts :class:`_Saved` or :class:`_SaveFailed`."""
        try:
            self._save_steps(snap, launch, file, choice)
        except BaseException as exc:
            self.post_message(self._SaveFailed("cannot save the branch", f"{type(exc).__name__}: {exc}"))
            raise

    def _save_steps(self, snap: _Snapshot, launch: bool, file: Path | None, choice: ExecutorChoice | None) -> None:
        ensure_redacted(self.base)
        check = self._check_snapshot(snap, None)
        first = check.first_problem()
        if check.branch is None or first is not None:
            problem = first[1] if first is not None else Problem("the branch is not valid")
            self.post_message(self._SaveFailed("the branch is not valid", problem.describe(), inline=problem))
            return
        branch = check.branch
        nothing = "nothing was stored"
        try:
            ws = Workspace.open(self.workspace_path)
        except WorkspaceError as exc:
            self.post_message(self._SaveFailed("cannot open the workspace", f"{exc}; {nothing}"))
            return
        with ws:
            if ws.read_only:
                self.post_message(
                    self._SaveFailed(
                        "the workspace is read-only",
                        f"{ws.path}: the workspace cannot be written (its file or folder is read-only); {nothing}",
                    )
                )
                return
            if branch.parent is not None and not ws.has_branch(branch.parent):
                self.post_message(
                    self._SaveFailed(
                        "the parent is not a branch of the workspace",
                        f"parent {branch.parent!r} is not a branch of the workspace {ws.path}; {nothing}",
                        inline=Problem(f"parent {branch.parent!r} is not a branch of the workspace", field="parent"),
                    )
                )
                return
            created = False
            if file is not None:
                if file.exists():
                    self.post_message(
                        self._SaveFailed(
                            "the file exists",
                            f"{file} exists: give another file name (it is never overwritten); {nothing}",
                        )
                    )
                    return
                try:
                    save_branch(branch, file)
                except (OSError, InspectorError) as exc:
                    self.post_message(self._SaveFailed("cannot write the file", f"{exc}; {nothing}"))
                    return
                created = True
            try:
                ws.add_branch(branch, self.base, self.base_path)
            except (InspectorError, OSError) as exc:
                if created and file is not None:
                    file.unlink(missing_ok=True)  # all or nothing: no file without its stored branch
                self.post_message(self._SaveFailed("cannot save the branch", f"{exc}; {nothing}"))
                return
        self.post_message(self._Saved(branch.id, launch, choice, file, len(branch.interventions)))

    @on(_Saved)
    def _saved(self, event: _Saved) -> None:
        self.saving = False
        self.dirty = False
        self.app.post_message(BranchSaved(event.branch_id, launch=event.launch, executor=event.executor))
        self.app.post_message(WorkspaceChanged("branch", event.branch_id))
        where = f" and written to {event.file}" if event.file is not None else ""
        then = "; replaying it" if event.launch else ""
        self.app.notify(
            f"branch {event.branch_id} stored in {self.workspace_path} "
            f"({event.interventions} intervention(s)){where}{then}",
            timeout=6,
        )
        self.dismiss(event.branch_id)

    @on(_SaveFailed)
    def _save_failed(self, event: _SaveFailed) -> None:
        self.saving = False
        self._refresh_buttons()
        if event.inline is not None:
            self.query_one("#be-status", Static).update(Text("✗ not saved: " + line(event.message), style="#ff5f5f"))
            self._schedule(at_once=True)
            return
        self.app.push_screen(ErrorScreen(event.title, event.message))

    # ------------------------------------------------------------------ closing

    def action_close(self) -> None:
        """Close the editor; when it was edited, ask first."""
        if not self.dirty:
            self.dismiss(None)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(None)

        self.app.push_screen(DiscardScreen(), answered)

    @on(Button.Pressed, "#be-save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#be-save-replay")
    def _save_replay_pressed(self) -> None:
        self.action_save(True)

    @on(Button.Pressed, "#be-export")
    def _export_pressed(self) -> None:
        self.action_export()


def _payload_problem(kind: str, text: str) -> Problem | None:
    """The problem of ``text`` as the payload of an intervention of ``kind`` (core's
    :func:`~core.replay.editing.check_payload`), or ``None``."""
    return check_payload(kind, text)[1]


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None
