"""The requirements panel and the fixtures list: what a paused replay waits on, and the
canned answers of the workspace.

:class:`RequirementsScreen` lists the **open** requirements of one replay (or of the
whole workspace; ``o`` switches) and, for the highlighted one (:func:`requirement_text`):
its kind (``tool``, ``model``, ``approval``, ``user``), the tool and its arguments or the
model request's last messages, why nothing answered it, and the **nearest recorded call**
with its argument (or request) diff — or "none recorded". ``A`` (or enter) answers it:

* ``tool`` / ``model``: the fixture editor
  (:class:`~inspector.screens.fixture_editor.FixtureEditorScreen`), prefilled with the
  nearest recorded answer or a template, with a scope choice;
* ``approval``: approve, or deny (the call is then refused as by a policy)
  (:class:`DecisionScreen`);
* ``user`` (a person's turn): answer with a text, pin the recorded answer, or skip the
  turn (:class:`DecisionScreen`).

``u`` resumes the replay (through the app's replay runner: a child process) once it has
no open requirement; the list follows the replay live (it pauses again on the next
requirement, or completes). ``F`` opens :class:`FixturesScreen`: every fixture with its
scope, matcher and where it was used; ``A`` there reuses the highlighted fixture for
another branch (a copy scoped to that branch).

Every operation opens the workspace on the UI thread for that operation only (these are
small reads and one-transaction writes) and never creates it. Errors — a read-only or
damaged workspace, a requirement answered meanwhile — are shown inline; nothing is
half-stored. Recorded text (names, arguments, messages) is drawn as plain text
(:mod:`inspector.plain`).
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from core.errors import InspectorError
from core.record.nesting import dumps
from core.replay.fixtures import Fixture, Requirement
from core.workspace import NoWorkspace

from ..messages import WorkspaceChanged
from ..plain import block, line, line_text
from ..replay_runner import open_workspace

__all__ = [
    "BranchPickScreen",
    "DecisionScreen",
    "FixturesScreen",
    "RequirementsScreen",
    "requirement_label",
    "requirement_text",
]

#: what each kind of requirement asks for
KIND_MEANING: dict[str, str] = {
    "tool": "a tool call nothing answers: attach a tool result",
    "model": "a model call nothing answers: attach a model response",
    "approval": "a tool call that waits for an approval: approve or deny it",
    "user": "a person's turn after the branch diverged: answer it, pin the recorded answer, or skip it",
}

#: most characters of one JSON value or message shown in the detail
_VALUE_CHARS = 1_500
#: most lines of one message shown
_MESSAGE_LINES = 6


def _json(value: Any, *, indent: bool = False, limit: int = _VALUE_CHARS) -> str:
    import orjson

    try:
        text = dumps(value, orjson.OPT_INDENT_2 if indent else 0).decode()
    except Exception:  # noqa: BLE001 — a value that cannot be written: say what it is
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def requirement_label(req: Requirement, *, with_replay: bool) -> Text:
    """One line for the list: kind, name, step (and the replay in the workspace view)."""
    t = Text()
    if with_replay:
        t.append(line(req.replay_id) + "  ", style="dim")
    t.append(f"{req.kind:<8} ", style="bold")
    t.append("a person's turn" if req.kind == "user" else line(req.name))
    t.append(f"  step {req.step}", style="dim")
    return t


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return _json(message)
    content = message.get("content")
    text = content if isinstance(content, str) else _json(content) if content is not None else ""
    calls = message.get("tool_calls") or []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            text += f"\n→ {c.get('name')}({_json(c.get('arguments'), limit=200)})"
    lines = text.splitlines() or [""]
    if len(lines) > _MESSAGE_LINES:
        lines = lines[:_MESSAGE_LINES] + [f"… {len(lines) - _MESSAGE_LINES} more line(s)"]
    out = "\n".join(lines)
    return out if len(out) <= _VALUE_CHARS else out[: _VALUE_CHARS - 1] + "…"


def requirement_text(req: Requirement) -> Text:
    """The detail of one requirement (see the module docstring), as plain text."""
    t = Text()
    t.append(line(req.id), style="bold")
    t.append(f"  {req.status}  {req.kind}  ")
    t.append("a person's turn" if req.kind == "user" else line(req.name), style="bold")
    t.append(f"\n{KIND_MEANING.get(req.kind, req.kind)}", style="italic")
    t.append(f"\nreplay {line(req.replay_id)} · model step {req.step} · call {req.position}")
    if req.mismatch == "exhausted":
        t.append(f" · recorded {req.recorded_answers or 0} time(s), every answer used (exhausted)")
    elif req.mismatch == "missing":
        t.append(" · never recorded (missing)")
    if req.reason:
        t.append("\nwhy: ", style="dim")
        t.append(line(req.reason))
    if req.kind in ("tool", "approval"):
        t.append("\n\narguments\n", style="bold underline")
        t.append(block(_json(req.arguments, indent=True)))
    elif req.kind == "model":
        messages = (req.request or {}).get("messages") or []
        shown = messages[-3:] if isinstance(messages, list) else []
        t.append(f"\n\nthe request's last messages ({len(shown)} of {len(messages)})\n", style="bold underline")
        for m in shown:
            role = m.get("role", "?") if isinstance(m, dict) else "?"
            t.append(f"{line(role)}: ", style="bold")
            t.append(block(_message_text(m)) + "\n")
    elif req.kind == "user":
        t.append("\n\nrecorded answer offered\n", style="bold underline")
        t.append(block(req.default) if req.default is not None else "none", style="" if req.default else "dim")
        if req.answer is not None:
            t.append("\npinned answer: ", style="bold")
            t.append(block(req.answer))
    if req.kind == "user":
        return t
    t.append("\n\nnearest recorded call\n", style="bold underline")
    near = req.nearest
    if near is None:
        never = "the base never called this tool" if req.kind != "model" else "the base has no model call"
        t.append(f"none recorded ({never})", style="dim")
        return t
    t.append(f"seq {near.seq} {line(near.name)}")
    if req.kind != "model" and near.arguments is not None:
        t.append("  " + line(_json(near.arguments, limit=300)), style="dim")
    t.append("\n")
    if not near.diff:
        t.append("same arguments" if req.kind != "model" else "same request", style="dim")
    else:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_column()
        t.append(f"{'argument' if req.kind != 'model' else 'request'} diff (recorded → this call)\n", style="dim")
        for d in near.diff[:20]:
            path = line(d.get("path", ""))
            op = d.get("op", "")
            base = line(_json(d.get("base"), limit=120)) if "base" in d else "—"
            branch = line(_json(d.get("branch"), limit=120)) if "branch" in d else "—"
            t.append(f"  {path}  ", style="bold")
            t.append(f"{op}  ", style="dim")
            t.append(base, style="#ff5f5f")
            t.append(" → ")
            t.append(branch, style="#5faf5f")
            t.append("\n")
        if len(near.diff) > 20:
            t.append(f"  … {len(near.diff) - 20} more difference(s)\n", style="dim")
    if near.output is not None:
        t.append("recorded answer: ", style="dim")
        t.append(line(_json(near.output, limit=300)))
    return t


class DecisionScreen(ModalScreen[bool]):
    """Approve or deny an ``approval`` requirement; answer, pin or skip a ``user`` one.
    Dismisses with ``True`` once the decision is stored (errors stay inline)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="decision.cancel", priority=True)]

    DEFAULT_CSS = """
    DecisionScreen { align: center middle; }
    DecisionScreen > Vertical { width: 86%; max-width: 110; height: auto; max-height: 90%; border: thick $primary;
        background: $surface; padding: 0 1; }
    DecisionScreen #decision-what { height: auto; max-height: 12; }
    DecisionScreen TextArea { height: 6; }
    DecisionScreen #decision-error { color: #ff5f5f; height: auto; }
    DecisionScreen Horizontal { height: auto; }
    DecisionScreen Button { margin-right: 2; }
    """

    def __init__(self, requirement: Requirement) -> None:
        super().__init__()
        self.requirement = requirement

    def compose(self) -> ComposeResult:
        req = self.requirement
        with Vertical():
            what = Text()
            what.append(KIND_MEANING.get(req.kind, ""), style="italic")
            if req.kind == "approval":
                what.append("\n")
                what.append(line(req.name), style="bold")
                what.append("  " + line(_json(req.arguments, limit=400)))
                if req.reason:
                    what.append("\n" + line(req.reason), style="dim")
            yield Static(what, id="decision-what")
            if req.kind == "user":
                yield Static(Text("the answer (prefilled with the recorded one):"))
                yield TextArea(req.default or "", id="decision-answer", soft_wrap=True)
            yield Static("", id="decision-error")
            with Horizontal():
                if req.kind == "approval":
                    yield Button("Approve (y)", id="decision-approve", variant="success")
                    yield Button("Deny (n): the call is refused", id="decision-deny", variant="error")
                else:
                    yield Button("Answer with this text", id="decision-answer-text", variant="primary")
                    yield Button("Pin the recorded answer", id="decision-pin", disabled=req.default is None)
                    yield Button("Skip the turn", id="decision-deny")
                yield Button("Cancel (esc)", id="decision-cancel")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = f"{self.requirement.kind} requirement {line(self.requirement.id)}"

    def key_y(self) -> None:
        if self.requirement.kind == "approval":
            self._decide("satisfied")

    def key_n(self) -> None:
        if self.requirement.kind == "approval":
            self._decide("waived")

    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        which = event.button.id
        if which == "decision-approve" or which == "decision-pin":
            self._decide("satisfied")
        elif which == "decision-deny":
            self._decide("waived")
        elif which == "decision-answer-text":
            text = self.query_one("#decision-answer", TextArea).text
            if not text.strip():
                self.query_one("#decision-error", Static).update(Text("✗ the answer is empty"))
                return
            self._decide("satisfied", answer=text)
        else:
            self.dismiss(False)

    def _decide(self, status: str, answer: str | None = None) -> None:
        req = self.requirement
        try:
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                current = ws.get_requirement(req.id)
                if current.status != "open":
                    raise InspectorError(f"requirement {req.id} is already {current.status}: nothing was stored")
                ws.decide_requirement(req.id, status, answer=answer)
        except InspectorError as exc:
            self.query_one("#decision-error", Static).update(line_text("✗ " + str(exc)))
            return
        self.dismiss(True)


class RequirementsScreen(Screen[None]):
    """The open requirements of replay ``replay_id`` (``None``: of the whole workspace);
    ``answer_first``: open the answer of the first one at once."""

    BINDINGS = [
        Binding(
            "A",
            "answer",
            "Answer",
            id="workspace.attach",
            tooltip="Answer the highlighted requirement: attach a fixture, approve or deny, answer a turn",
        ),
        Binding("u", "resume", "Resume", id="workspace.resume", tooltip="Resume the replay (in the background)"),
        Binding(
            "o",
            "switch_scope",
            "This replay / all",
            id="workspace.requirements",
            tooltip="Show the open requirements of this replay, or of the whole workspace",
        ),
        Binding("F", "fixtures", "Fixtures", id="workspace.fixtures", tooltip="Every fixture: scope, where used"),
        Binding("escape", "close", "Back", id="requirements.close", tooltip="Back to the timeline"),
    ]

    DEFAULT_CSS = """
    RequirementsScreen #req-title { height: 1; background: $panel; text-style: bold; padding: 0 1; }
    RequirementsScreen #req-main { height: 1fr; }
    RequirementsScreen #req-list { width: 40%; min-width: 30; max-width: 60; height: 1fr; border: none; }
    RequirementsScreen #req-detail-scroll { width: 1fr; height: 1fr; border-left: vkey $panel-lighten-2; padding: 0 1; }
    RequirementsScreen #req-status { height: auto; max-height: 3; padding: 0 1; border-top: hkey $panel-lighten-2; }
    RequirementsScreen #req-status.-error { color: #ff5f5f; }
    """

    def __init__(self, replay_id: str | None = None, *, answer_first: bool = False) -> None:
        super().__init__()
        self.replay_id = replay_id
        self.answer_first = answer_first
        self.requirements: list[Requirement] = []
        self.branch_id: str | None = None
        #: the replay the user answered a requirement of last (``u`` resumes it)
        self.answered_replay: str | None = None
        self._status_line = ""
        self._title = Text()

    def compose(self) -> ComposeResult:
        yield Static("", id="req-title")
        with Horizontal(id="req-main"):
            yield OptionList(id="req-list")
            with VerticalScroll(id="req-detail-scroll"):
                yield Static("", id="req-detail")
        yield Static("", id="req-status")
        yield Footer()

    @property
    def runner(self) -> Any:
        return self.app.replay_runner  # type: ignore[attr-defined]

    def on_mount(self) -> None:
        self.title = "Chassis Inspector — requirements"
        self.reload()
        self.query_one(OptionList).focus()
        if self.answer_first and self.requirements:
            self.call_after_refresh(self.action_answer)

    # ------------------------------------------------------------------ data

    def reload(self) -> None:
        """Read the open requirements again (the highlighted one stays when it is open)."""
        options = self.query_one(OptionList)
        keep = self.current.id if self.current is not None else None
        title = Text()
        status = ""
        error = False
        replay_line = ""
        try:
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                self.requirements = ws.requirements(open_only=True, replay_id=self.replay_id)
                if self.replay_id is not None:
                    record = ws.get_replay(self.replay_id)
                    self.branch_id = record.branch_id
                    branch = ws.get_branch(record.branch_id)
                    replay_line = record.status_line
                    label = f' "{line(branch.label)}"' if branch.label else ""
                    title.append(f"Requirements of replay {line(self.replay_id)} · branch {line(branch.id)}{label}")
                else:
                    title.append("Open requirements of the whole workspace")
        except NoWorkspace as exc:
            self.requirements = []
            title.append("Requirements")
            status, error = f"{exc}", True
        except InspectorError as exc:
            self.requirements = []
            title.append("Requirements")
            status, error = f"cannot read the workspace: {exc}", True
        self._title = title
        self._retitle(replay_line)
        options.clear_options()
        with_replay = self.replay_id is None
        options.add_options([Option(requirement_label(r, with_replay=with_replay), id=r.id) for r in self.requirements])
        if not self.requirements:
            self.query_one("#req-detail", Static).update(self._empty_text(replay_line))
        else:
            index = next((i for i, r in enumerate(self.requirements) if r.id == keep), 0)
            options.highlighted = index
            self._show(self.requirements[index])
        if status:
            self._say(status, error=error)
        elif not self._status_line:
            self._say(self._hint())

    def _retitle(self, replay_line: str = "") -> None:
        """The title line, with the replay's live state while this app runs it."""
        state = self.runner.runs.get(self.replay_id) if self.replay_id else None
        if state is not None and state.active:
            replay_line = state.describe()
        title = self._title.copy()
        if replay_line:
            title.append(f" · {line(replay_line)}", style="dim")
        self.query_one("#req-title", Static).update(title)

    def _empty_text(self, replay_line: str) -> Text:
        t = Text()
        if self.replay_id is None:
            t.append("no open requirements in this workspace")
            return t
        t.append(f"replay {line(self.replay_id)} has no open requirement")
        if replay_line:
            t.append(f" ({line(replay_line)})", style="dim")
        if (
            replay_line.startswith("paused")
            or replay_line in ("failed", "interrupted")
            or replay_line.startswith("interrupted")
        ):
            t.append("\nu: resume it")
        t.append("\no: every open requirement of the workspace · escape: back")
        return t

    def _hint(self) -> str:
        return "A or enter: answer · u: resume · o: this replay / all · F: fixtures · escape: back"

    def _say(self, message: str, *, error: bool = False) -> None:
        self._status_line = message
        status = self.query_one("#req-status", Static)
        status.set_class(error, "-error")
        status.update(line_text(message))

    @property
    def current(self) -> Requirement | None:
        """The highlighted requirement."""
        options = self.query_one(OptionList)
        i = options.highlighted
        if i is None or not 0 <= i < len(self.requirements):
            return None
        return self.requirements[i]

    def _show(self, req: Requirement) -> None:
        self.query_one("#req-detail", Static).update(requirement_text(req))

    @on(OptionList.OptionHighlighted, "#req-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        req = self.current
        if req is not None:
            self._show(req)

    @on(OptionList.OptionSelected, "#req-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.action_answer()

    def workspace_changed(self, what: str, ident: str | None) -> None:
        """Follow the workspace: a replay's live progress updates the title only; any
        other change reads the list again."""
        if what == "replay" and ident is not None:
            state = self.runner.runs.get(ident)
            if state is not None and state.active:
                if ident == self.replay_id:
                    self._retitle()
                return
            if ident == self.replay_id or self.replay_id is None:
                if state is not None and ident == self.replay_id:
                    self._status_line = ""
                self.reload()
            return
        if what in ("requirement", "fixture"):
            self.reload()

    # ------------------------------------------------------------------ actions

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_switch_scope(self) -> None:
        """This replay's requirements ↔ every open requirement of the workspace."""
        if self.replay_id is None:
            target = self.answered_replay or (self.current.replay_id if self.current else None)
            if target is None:
                self._say("showing every open requirement already (select one of a replay to narrow)")
                return
            self.replay_id = target
        else:
            self.answered_replay = self.replay_id
            self.replay_id = None
        self._status_line = ""
        self.reload()

    def action_answer(self) -> None:
        """Answer the highlighted requirement (fixture editor or decision dialog)."""
        req = self.current
        if req is None:
            self._say("no open requirement to answer")
            return
        from .fixture_editor import FixtureEditorScreen

        def answered(result: object) -> None:
            if not result:
                return
            self.answered_replay = req.replay_id
            if isinstance(result, Fixture):
                msg = f"{req.id} answered by fixture {result.id} (scope {result.scope})"
                self.app.post_message(WorkspaceChanged("fixture", result.id))
            else:
                msg = f"{req.id} decided"
            self.app.post_message(WorkspaceChanged("requirement", req.id))
            self._say(f"{msg} · u: resume replay {req.replay_id}")
            self.reload()

        if req.kind in ("tool", "model"):
            branch_id = self.branch_id if req.replay_id == self.replay_id else self._branch_of(req.replay_id)
            self.app.push_screen(FixtureEditorScreen(req, branch_id), answered)
        else:
            self.app.push_screen(DecisionScreen(req), answered)

    def _branch_of(self, replay_id: str) -> str | None:
        try:
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                return ws.get_replay(replay_id).branch_id
        except InspectorError:
            return None

    def action_resume(self) -> None:
        """Resume the replay (this one, or the one answered last) in the background."""
        target = self.replay_id or self.answered_replay or (self.current.replay_id if self.current else None)
        if target is None:
            self._say("no replay to resume: open the requirements of one (o)")
            return
        if self.runner.resume_when_answered(target):
            self._say(f"resuming replay {target}…")

    def action_fixtures(self) -> None:
        self.app.push_screen(FixturesScreen())


class BranchPickScreen(ModalScreen[str | None]):
    """Pick a branch of the workspace (``branches``: ``(id, label)``); dismisses with
    its id or ``None``."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="pick_branch.cancel")]

    DEFAULT_CSS = """
    BranchPickScreen { align: center middle; }
    BranchPickScreen > Vertical { width: 70%; max-width: 90; height: 70%; border: thick $primary; background: $surface; }
    BranchPickScreen OptionList { height: 1fr; border: none; }
    """

    def __init__(self, title: str, branches: list[tuple[str, str | None]]) -> None:
        super().__init__()
        self.title_text = title
        self.branches = branches

    def compose(self) -> ComposeResult:
        with Vertical():
            yield OptionList(
                *[
                    Option(Text(line(bid)).append("  " + line(label) if label else "", style="dim"), id=bid)
                    for bid, label in self.branches
                ],
                id="pick-branch",
            )

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = line(self.title_text)
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class FixturesScreen(Screen[None]):
    """Every fixture of the workspace: id, kind, name, matcher (exact arguments or any),
    scope, where it was used (``replay@seq``) and where it came from; ``A`` reuses the
    highlighted one for another branch."""

    BINDINGS = [
        Binding(
            "A",
            "reuse",
            "Reuse for a branch",
            id="workspace.attach",
            tooltip="Reuse the highlighted fixture for another branch (a copy scoped to it)",
        ),
        Binding("escape", "close", "Back", id="fixtures.close", tooltip="Back"),
    ]

    DEFAULT_CSS = """
    FixturesScreen #fx-title { height: 1; background: $panel; text-style: bold; padding: 0 1; }
    FixturesScreen DataTable { height: 1fr; }
    FixturesScreen #fx-status { height: auto; padding: 0 1; border-top: hkey $panel-lighten-2; }
    FixturesScreen #fx-status.-error { color: #ff5f5f; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.fixtures: list[Fixture] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("Fixtures of the workspace"), id="fx-title")
        yield DataTable(id="fx-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="fx-status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Chassis Inspector — fixtures"
        table = self.query_one(DataTable)
        table.add_columns("fixture", "kind", "name", "matcher", "scope", "used by", "source")
        self.reload()
        table.focus()

    def _say(self, message: str, *, error: bool = False) -> None:
        status = self.query_one("#fx-status", Static)
        status.set_class(error, "-error")
        status.update(line_text(message))

    def reload(self) -> None:
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        try:
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                self.fixtures = ws.fixtures()
                uses: dict[str, list[str]] = {}
                for record in ws.list_replays():
                    for u in record.fixture_uses:
                        uses.setdefault(str(u.get("fixture_id")), []).append(f"{record.id}@{u.get('seq')}")
        except InspectorError as exc:
            self.fixtures = []
            self._say(f"cannot read the workspace: {exc}", error=True)
            return
        for f in self.fixtures:
            used = uses.get(f.id, [])
            table.add_row(
                Text(line(f.id)),
                Text(f.kind),
                Text(line(f.name)),
                Text("exact " + f.args_hash[:15] + "…" if f.args_hash else "any arguments"),
                Text(line(f.scope)),
                Text(line(", ".join(used[:3]) + (f" +{len(used) - 3}" if len(used) > 3 else "")) or "not used yet"),
                Text(line(f.source or "")),
                key=f.id,
            )
        if self.fixtures:
            table.move_cursor(row=min(keep, len(self.fixtures) - 1))
            self._say("A: reuse the highlighted fixture for another branch · escape: back")
        else:
            self._say("no fixtures yet: answering a requirement (A) makes one")

    def workspace_changed(self, what: str, ident: str | None) -> None:
        if what in ("fixture", "requirement") or (what == "replay" and not self._replay_running(ident)):
            self.reload()

    def _replay_running(self, ident: str | None) -> bool:
        state = self.app.replay_runner.runs.get(ident) if ident else None  # type: ignore[attr-defined]
        return state is not None and state.active

    @property
    def current(self) -> Fixture | None:
        table = self.query_one(DataTable)
        if not self.fixtures or table.cursor_row is None:
            return None
        return self.fixtures[min(table.cursor_row, len(self.fixtures) - 1)]

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_reuse(self) -> None:
        """Copy the highlighted fixture to another branch's scope (pick the branch)."""
        fx = self.current
        if fx is None:
            self._say("no fixture to reuse")
            return
        try:
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                branches = [(b.id, b.label) for b in ws.list_branches() if f"branch:{b.id}" != fx.scope]
        except InspectorError as exc:
            self._say(f"cannot read the workspace: {exc}", error=True)
            return
        if not branches:
            self._say("no other branch to reuse it for")
            return

        def picked(branch_id: str | None) -> None:
            if branch_id is None:
                return
            copy = Fixture(
                scope=f"branch:{branch_id}",
                kind=fx.kind,
                name=fx.name,
                args_hash=fx.args_hash,
                arguments=fx.arguments,
                output=fx.output,
                source=f"reused from {fx.id}",
            )
            try:
                with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                    ws.put_fixture(copy)
            except InspectorError as exc:
                self._say(f"nothing stored: {exc}", error=True)
                return
            self.app.post_message(WorkspaceChanged("fixture", copy.id))
            self.reload()
            self._say(f"fixture {copy.id}: {fx.name} for branch {branch_id} (a copy of {fx.id})")

        self.app.push_screen(BranchPickScreen(f"Reuse {fx.id} ({fx.kind} {fx.name}) for branch…", branches), picked)
