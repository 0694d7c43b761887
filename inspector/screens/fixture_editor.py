"""The fixture editor: answer one requirement of a paused replay with a canned tool
result or model response.

:class:`FixtureEditorScreen` opens on a ``tool`` or ``model`` requirement
(:class:`core.replay.fixtures.Requirement`). The JSON starts as the **nearest recorded
call's answer** when the base has one (its result for a tool, its response for a model;
:attr:`Requirement.nearest`), else a template of the answer's shape
(:data:`TEMPLATES`), and is checked as you type exactly as ``fixture attach`` reads a
file (:func:`check_answer`: strict JSON, values with a canonical form, the tool-result or
model-response model, then :func:`core.replay.fixtures.parse_output`) — the problem inline
with its JSON Pointer or line and column, **Save disabled while it is invalid**. The scope
is chosen among ``replay`` / ``branch`` (default) / ``project``, each explained in one line
(:data:`SCOPE_MEANING`).

Saving calls :meth:`core.workspace.Workspace.attach_fixture` (fixture and requirement in
one transaction). A requirement answered meanwhile (another window, the command line),
a read-only or damaged workspace: the error is shown under the editor and nothing is
stored. The screen dismisses with the :class:`~core.replay.fixtures.Fixture` stored, or
``None``.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static

from core.errors import FixtureError, InspectorError
from core.record.nesting import dumps
from core.replay.editing import Problem, check_payload, to_json_text
from core.replay.fixtures import Fixture, Requirement, parse_output

from ..plain import line, line_text
from ..widgets.json_editor import JsonEditor

__all__ = ["SCOPE_MEANING", "TEMPLATES", "FixtureEditorScreen", "check_answer", "initial_answer", "scope_value"]

#: the answer's shape when no recorded call can prefill it
TEMPLATES: dict[str, Any] = {
    "tool": {"content": {}, "error": None},
    "model": {"message": {"role": "assistant", "content": "", "tool_calls": []}, "finish_reason": "stop"},
}

#: one line per scope: which replays the fixture answers
SCOPE_MEANING: dict[str, str] = {
    "replay": "only this replay: a new replay of the branch asks again",
    "branch": "every replay of this branch (its resume and later replays reuse it)",
    "project": "every replay in this workspace that makes this exact call",
}

#: the intervention whose payload has the same shape as a fixture output of each kind
_PAYLOAD_OF = {"tool": ("tool_result", "/result"), "model": ("model_response", "/response")}


def check_answer(kind: str, text: str) -> Problem | None:
    """The first problem of ``text`` as the answer of a ``kind`` (``tool`` | ``model``)
    requirement, or ``None``: read as a fixture file is (strict JSON, canonical values,
    redacted), shaped as a tool result / model response, then core's fixture rules
    (:func:`~core.replay.fixtures.parse_output`). Pointers are inside the answer
    (``/content/items/0``)."""
    iv_kind, member = _PAYLOAD_OF[kind]
    value, problem = check_payload(iv_kind, text)
    if problem is not None:
        pointer = problem.pointer
        if pointer is not None and pointer.startswith(member):
            pointer = pointer[len(member) :] or None
        message = problem.message.replace(f"{member[1:]} JSON: ", "").replace(
            f"{member[1:]} is empty", "the answer is empty"
        )
        return Problem(message, field="payload", pointer=pointer, line=problem.line, column=problem.column)
    try:
        parse_output(value, kind, source="the answer")
    except FixtureError as exc:
        return Problem(str(exc).removeprefix("the answer: "), field="payload")
    return None


def initial_answer(req: Requirement) -> tuple[str, str]:
    """``(JSON text, where it came from)``: the nearest recorded call's answer, else the
    template of the answer's shape."""
    near = req.nearest
    if near is not None and near.output is not None:
        what = "result" if req.kind == "tool" else "response"
        diff = ""
        if near.diff:
            paths = ", ".join(d["path"] for d in near.diff[:3]) + (" …" if len(near.diff) > 3 else "")
            diff = f"; its {'arguments' if req.kind == 'tool' else 'request'} differ at {paths}"
        return to_json_text(
            near.output
        ), f"prefilled with the recorded {what} of seq {near.seq} (the nearest call{diff})"
    never = "the base never called this tool" if req.kind == "tool" else "the base has no model call to start from"
    shape = "tool result" if req.kind == "tool" else "model response"
    return to_json_text(TEMPLATES[req.kind]), f"a template of a {shape} ({never})"


def scope_value(choice: str, req: Requirement, branch_id: str | None) -> str:
    """The scope string of ``choice`` (``replay`` | ``branch`` | ``project``) for ``req``."""
    if choice == "replay":
        return f"replay:{req.replay_id}"
    if choice == "branch" and branch_id:
        return f"branch:{branch_id}"
    return "project"


class FixtureEditorScreen(ModalScreen[Fixture | None]):
    """Answer ``requirement`` (a tool or model one of replay ``requirement.replay_id``,
    whose branch is ``branch_id``) with a fixture; see the module docstring."""

    BINDINGS = [
        Binding(
            "ctrl+s",
            "save",
            "Save",
            id="fixture.save",
            tooltip="Store the fixture and answer the requirement",
            priority=True,
        ),
        Binding(
            "escape", "cancel", "Cancel", id="fixture.cancel", tooltip="Close without storing anything", priority=True
        ),
    ]

    DEFAULT_CSS = """
    FixtureEditorScreen { align: center middle; }
    FixtureEditorScreen > Vertical { width: 92%; max-width: 130; height: 90%; border: thick $primary;
        background: $surface; padding: 0 1; }
    FixtureEditorScreen #fx-call { height: auto; max-height: 3; }
    FixtureEditorScreen #fx-origin { color: $text-muted; height: auto; }
    FixtureEditorScreen JsonEditor { height: 1fr; min-height: 6; }
    FixtureEditorScreen RadioSet { height: auto; width: 1fr; border: none; padding: 0; }
    FixtureEditorScreen #fx-error { color: #ff5f5f; height: auto; }
    FixtureEditorScreen #fx-scope-now { height: 1; padding-left: 1; }
    FixtureEditorScreen #fx-buttons { height: auto; }
    FixtureEditorScreen Button { margin-right: 2; }
    """

    def __init__(self, requirement: Requirement, branch_id: str | None) -> None:
        super().__init__()
        self.requirement = requirement
        self.branch_id = branch_id
        self.text, self.origin = initial_answer(requirement)
        self.scope = "branch" if branch_id else "project"

    def compose(self) -> ComposeResult:
        req = self.requirement
        with Vertical():
            call = Text()
            call.append(f"{req.kind} ", style="bold")
            call.append(line(req.name), style="bold")
            if req.arguments is not None:
                args = dumps(req.arguments).decode()
                call.append("  " + line(args if len(args) <= 200 else args[:199] + "…"))
            call.append(f"\nreplay {line(req.replay_id)} · step {req.step} · {line(req.reason)}", style="dim")
            yield Static(call, id="fx-call")
            yield Static(line_text(self.origin), id="fx-origin")
            yield JsonEditor(self.text, validator=self._validate, id="fx-editor")
            with RadioSet(id="fx-scope"):
                for choice, meaning in SCOPE_MEANING.items():
                    disabled = choice == "branch" and not self.branch_id
                    yield RadioButton(
                        f"{choice}: {meaning}", value=choice == self.scope, id=f"fx-scope-{choice}", disabled=disabled
                    )
            yield Static(self._scope_text(), id="fx-scope-now")
            yield Static("", id="fx-error")
            with Horizontal(id="fx-buttons"):
                yield Button("Save (ctrl+s)", id="fx-save", variant="primary", disabled=True)
                yield Button("Cancel (esc)", id="fx-cancel")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = f"Answer {line(self.requirement.id)} with a fixture"
        self.query_one(JsonEditor).area.focus()

    def _validate(self, text: str) -> Problem | None:
        return check_answer(self.requirement.kind, text)

    @property
    def editor(self) -> JsonEditor:
        return self.query_one(JsonEditor)

    @on(JsonEditor.Changed)
    def _changed(self, event: JsonEditor.Changed) -> None:
        self.query_one("#fx-save", Button).disabled = True  # until the new text is checked
        self.query_one("#fx-error", Static).update("")

    @on(JsonEditor.Validated)
    def _validated(self, event: JsonEditor.Validated) -> None:
        self.query_one("#fx-save", Button).disabled = event.problem is not None

    @on(RadioSet.Changed, "#fx-scope")
    def _scope_changed(self, event: RadioSet.Changed) -> None:
        pressed = event.pressed.id or ""
        self.scope = pressed.removeprefix("fx-scope-")
        self.query_one("#fx-scope-now", Static).update(self._scope_text())

    def _scope_text(self) -> Text:
        """The chosen scope in words (the radio buttons mark it by colour only)."""
        t = Text("scope: ", style="dim")
        t.append(line(scope_value(self.scope, self.requirement, self.branch_id)), style="bold")
        return t

    @on(Button.Pressed, "#fx-save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#fx-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _say(self, message: str) -> None:
        self.query_one("#fx-error", Static).update(line_text("✗ " + message))

    def action_save(self) -> None:
        """Store the fixture (when the text is valid) and close; an error stays inline."""
        from core.record.userjson import loads_user_json

        from ..replay_runner import open_workspace

        editor = self.editor
        problem = check_answer(self.requirement.kind, editor.text)
        if problem is not None or editor.valid is False:
            self._say("the answer is not valid yet: " + (problem.describe() if problem else "see above"))
            return
        req = self.requirement
        try:
            value = loads_user_json(editor.text, "the answer", FixtureError)
            with open_workspace(self.app.workspace_path) as ws:  # type: ignore[attr-defined]
                current = ws.get_requirement(req.id)
                if current.status != "open":
                    by = f" by fixture {current.fixture_id}" if current.fixture_id else ""
                    raise FixtureError(f"requirement {req.id} is already {current.status}{by}: nothing was stored")
                fixture = ws.attach_fixture(
                    req.id, value, source="the inspector app", scope=scope_value(self.scope, req, self.branch_id)
                )
        except InspectorError as exc:
            self._say(str(exc))
            return
        self.dismiss(fixture)
