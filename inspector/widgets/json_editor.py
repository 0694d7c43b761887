"""A JSON editor: a text area with JSON highlighting, validated as you type.

:class:`JsonEditor` is a ``TextArea`` (line numbers, soft wrap, JSON highlighting when
the tree-sitter JSON grammar is installed: the ``tree-sitter`` and ``tree-sitter-json``
packages, dependencies of the project) above one line that says whether the text is
valid. The check is the caller's — a function ``text -> Problem | None`` (e.g.
:func:`core.replay.editing.check_payload`), so the editor says exactly what core would
say when the value is used. It runs in a thread worker on the app, :data:`DELAY`
seconds after the last keystroke (a big value is not re-read per key), and its result
is shown inline — the JSON Pointer (``at /result/content: …``) or, for malformed JSON,
the line and column — and posted as :class:`JsonEditor.Validated`.

The text is the user's (or a recorded value written as JSON by
:func:`core.replay.editing.to_json_text`, whose control, bidi and invisible characters
are ``\\uXXXX`` escapes, so nothing raw reaches the terminal); the problem line is plain
text (:mod:`inspector.plain`), never markup.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from importlib.util import find_spec

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static, TextArea

from core.replay.editing import Problem

from ..plain import line

__all__ = ["DELAY", "JSON_HIGHLIGHTING", "JsonEditor"]

#: seconds after the last edit before the text is validated
DELAY = 0.2

#: whether the JSON grammar is installed (else the text is plain, still validated)
JSON_HIGHLIGHTING = find_spec("tree_sitter") is not None and find_spec("tree_sitter_json") is not None

Validator = Callable[[str], Problem | None]


class JsonEditor(Vertical):
    """A JSON text area and its validity line.

    ``text``: the initial text; ``validator``: ``text -> Problem | None`` run in a
    worker after each edit (``None``: no check, always valid); ``read_only``: shown,
    not editable (``note``, when given, says why on the validity line)."""

    DEFAULT_CSS = """
    JsonEditor { height: 1fr; }
    JsonEditor > TextArea { height: 1fr; border: round $panel-lighten-2; }
    JsonEditor > TextArea:focus { border: round $accent; }
    JsonEditor.-invalid > TextArea { border: round #ff5f5f; }
    JsonEditor > .json-problem { height: auto; max-height: 3; color: $text-muted; }
    JsonEditor.-invalid > .json-problem { color: #ff5f5f; }
    """

    class Changed(Message):
        """The user edited the text (``text``: all of it now)."""

        def __init__(self, editor: JsonEditor, text: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text

        @property
        def control(self) -> JsonEditor:
            return self.editor

    class Validated(Message):
        """The text was checked: ``problem`` or ``None`` (valid)."""

        def __init__(self, editor: JsonEditor, problem: Problem | None) -> None:
            super().__init__()
            self.editor = editor
            self.problem = problem

        @property
        def control(self) -> JsonEditor:
            return self.editor

    class _Result(Message):
        def __init__(self, generation: int, problem: Problem | None) -> None:
            super().__init__()
            self.generation = generation
            self.problem = problem

    def __init__(
        self,
        text: str = "",
        *,
        validator: Validator | None = None,
        read_only: bool = False,
        note: str = "",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._initial = text
        self.validator = validator
        self._read_only = read_only
        self._note = note
        self._generation = 0
        self._timer: Timer | None = None
        #: the last check's result (``None``: valid, or not checked yet — see :attr:`valid`)
        self.problem: Problem | None = None
        self._settled = asyncio.Event()

    def compose(self) -> ComposeResult:
        yield TextArea.code_editor(
            self._initial,
            language="json" if JSON_HIGHLIGHTING else None,
            theme="css",
            soft_wrap=True,
            read_only=self._read_only,
            tab_behavior="indent",
        )
        yield Static("", classes="json-problem")

    def on_mount(self) -> None:
        self._schedule(at_once=True)

    # ------------------------------------------------------------------ API

    @property
    def area(self) -> TextArea:
        """The text area itself."""
        return self.query_one(TextArea)

    @property
    def text(self) -> str:
        return self.area.text

    @property
    def valid(self) -> bool | None:
        """``True`` / ``False`` once the current text was checked; ``None`` while a check
        is pending."""
        return None if not self._settled.is_set() else self.problem is None

    def set_text(
        self, text: str, *, read_only: bool = False, note: str = "", validator: Validator | None | bool = True
    ) -> None:
        """Replace the text (clearing the undo history) and check it; ``read_only`` with
        a ``note`` saying why; ``validator``: a new check (``True``: keep the current)."""
        if validator is not True:
            self.validator = validator if callable(validator) else None
        self._read_only = read_only
        self._note = note
        area = self.area
        area.read_only = read_only
        if area.text != text:
            with self.prevent(TextArea.Changed):
                area.load_text(text)
        self._schedule(at_once=True)

    async def settled(self) -> None:
        """Wait until the current text has been checked (no pending or running check)."""
        await self._settled.wait()

    def go_to_problem(self) -> None:
        """Put the cursor where malformed JSON goes wrong (when the problem says)."""
        p = self.problem
        if p is not None and p.line is not None:
            self.area.move_cursor((p.line - 1, max(0, (p.column or 1) - 1)))
            self.area.focus()

    # ------------------------------------------------------------------ checking

    @on(TextArea.Changed)
    def _edited(self, event: TextArea.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, self.area.text))
        self._schedule()

    def _schedule(self, *, at_once: bool = False) -> None:
        self._generation += 1
        self._settled.clear()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if at_once:
            self._start(self._generation)
        else:
            self._timer = self.set_timer(DELAY, partial(self._start, self._generation))

    def _start(self, generation: int) -> None:
        if generation != self._generation:
            return
        validator = self.validator
        if validator is None:
            self._show(None)
            self._settled.set()
            return
        text = self.area.text
        self.app.run_worker(
            partial(self._check, generation, validator, text),
            name="json-validate",
            group=f"json-validate-{id(self)}",
            description="checking the JSON being edited",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _check(self, generation: int, validator: Validator, text: str) -> None:
        try:
            problem = validator(text)
        except Exception as exc:  # a bug in the check: said on the problem line, the text kept
            problem = Problem(f"the text could not be checked: {type(exc).__name__}: {exc}", field="payload")
        self.post_message(self._Result(generation, problem))

    @on(_Result)
    def _result(self, event: _Result) -> None:
        event.stop()
        if event.generation != self._generation:
            return  # an older text's result
        self.problem = event.problem
        self._show(event.problem)
        self._settled.set()
        self.post_message(self.Validated(self, event.problem))

    def _show(self, problem: Problem | None) -> None:
        self.set_class(problem is not None, "-invalid")
        status = self.query_one(".json-problem", Static)
        if problem is not None:
            where = f"line {problem.line}, column {problem.column}: " if problem.line is not None else ""
            message = problem.message if where and problem.message.startswith("line ") else where + problem.describe()
            status.update(Text("✗ " + line(message)))
        elif self._read_only:
            status.update(Text(line(self._note or "read-only"), style="italic"))
        else:
            status.update(Text("✓ valid JSON", style="green"))
