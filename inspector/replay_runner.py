"""The app's replay runner: replays launched and resumed in child processes, with
progress, cancellation, executor consent and the notifications they raise.

:class:`ReplayRunner` is a small controller the app owns (``app.replay_runner``); the
screens never run a replay themselves, they post :class:`~inspector.messages.LaunchReplay`
/ :class:`~inspector.messages.ResumeReplay` (or call :meth:`ReplayRunner.request_launch`,
:meth:`ReplayRunner.resume`), and the app's handlers call the runner. The work is the
core's: :func:`core.replay.replays.start_replay` and
:func:`~core.replay.replays.resume_replay`, each attempt run in a child process
(:class:`core.replay_process.AttemptProcess`: the replay has a core of its own, so
keys are answered as fast while a 100,000-call replay runs as with none) and watched by its
own thread worker (``app.run_worker(..., thread=True, exit_on_error=False)``), which
relays its progress; the child opens its own workspace connection and writes the events
file as the command line does (``replays/ID.json``).

While a replay runs its :class:`RunState` holds the last
:class:`~core.replay.engine.ReplayProgress` (calls answered, the base's number of calls,
the current call); the child sends, and the worker posts :class:`RunProgressed`, at most
every :data:`PROGRESS_INTERVAL` seconds (a 100k-call replay does not post 100k messages) and
:class:`RunEnded` once the outcome is stored. The runner then tells every view that shows
workspace state (:meth:`ReplayRunner.broadcast`, a
:class:`~inspector.messages.WorkspaceChanged`): views register with
:meth:`ReplayRunner.listen`, and screens on the stack that define ``workspace_changed``
are told too.

A replay that pauses raises a notification naming its requirement; ``o`` (or a click
on the notification) opens the requirements panel on it. A replay that fails says why;
one that cannot start (no workspace, a read-only or damaged one, a branch that no longer
validates, an executor that cannot be loaded) opens the error screen, and nothing is
stored.

**Executors are code** (docs/replay.md): a recording that names an executor
(``metadata.executor``) gets it only after the user consents in
:class:`ExecutorConsentScreen`, which shows the module and function; the replay then runs
with ``ExecutorChoice(spec, "recording")``. Quitting the app cancels running replays
(they stop between two calls and are stored ``failed``/``Cancelled``, resumable).
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.screen import ModalScreen
from textual.widgets import Button, Static
from textual.worker import Worker

from core.errors import InspectorError
from core.record.io import recording_digest
from core.record.recording import Recording
from core.replay.boundary import ExecutorChoice
from core.replay.branch import Branch
from core.replay.engine import ReplayProgress
from core.replay.replay_record import ReplayRecord
from core.replay_process import AttemptProcess, ReplayProcessError
from core.workspace import NoWorkspace, Workspace

from .messages import BranchSaved, WorkspaceChanged
from .plain import block, line, line_text

if TYPE_CHECKING:
    from .app import InspectorApp
    from .loader import LoadedRecording

__all__ = [
    "PROGRESS_INTERVAL",
    "EventsLoaded",
    "ExecutorConsentScreen",
    "ReplayRunner",
    "RunEnded",
    "RunProgressed",
    "RunState",
    "open_workspace",
    "keep_long_lived",
    "raised_on_purpose",
    "progress_bar",
]

#: seconds between two progress messages of one replay (the last state is always kept)
PROGRESS_INTERVAL = 0.1

#: statuses of a replay being worked on
ACTIVE = ("queued", "running")


@contextmanager
def open_workspace(path: Path, *, create: bool = False) -> Iterator[Workspace]:
    """The workspace at ``path``, open for one operation on this thread, closed after.

    ``create=False`` (reading, answering, resuming): a missing workspace is not created.

    Raises:
        NoWorkspace: there is no workspace at ``path`` (and ``create`` is false).
        WorkspaceError: the folder is not a workspace, or is damaged (names the file and
            the reason).
    """
    ws = Workspace.open(path, create=create)
    try:
        yield ws
    finally:
        ws.close()


def keep_long_lived() -> None:
    """Move every object alive now — the open recordings, the app's widgets — out of the
    cyclic garbage collector's reach (``gc.freeze``): a full collection then scans only
    what was made since. With a recording of 100,000 calls loaded, a full collection,
    which runs on whichever thread happens to allocate, held every thread of the app for
    about two seconds; reference counting still frees these objects (only garbage cycles
    among them would be kept)."""
    gc.freeze()


def progress_bar(done: int, total: int, width: int = 10) -> str:
    """A bar of ``width`` cells for ``done`` of ``total`` (``▰`` done, ``▱`` to go); a
    replay may make more calls than its base (the bar is then full)."""
    if width <= 0:
        return ""
    filled = width if total <= 0 or done >= total else int(width * done / total)
    return "▰" * filled + "▱" * (width - filled)


class WorkspaceView(Protocol):
    """What :meth:`ReplayRunner.listen` takes: anything with a ``workspace_changed``."""

    def workspace_changed(self, what: str, ident: str | None) -> None: ...


@dataclass
class RunState:
    """One replay this app is running (or ran since it started).

    ``replay_id``, ``branch_id``, ``kind`` (``start`` | ``resume``), ``status``
    (``queued`` → ``running`` → ``paused`` | ``completed`` | ``failed``; ``failed`` also
    when it could not start), ``progress`` (the last
    :class:`~core.replay.engine.ReplayProgress`, written by the worker thread),
    ``status_line`` (as ``replay show`` prints it, once ended), ``requirement_ids`` (the
    open requirements of a paused replay), ``error`` (one line, when it failed),
    ``stored`` (whether the replay is in the workspace: ``False`` when it failed before
    anything was stored), ``cancel`` (set to stop it between two calls), ``process`` (the
    child process running it, once started: :meth:`stop` tells it at once)."""

    replay_id: str
    branch_id: str
    kind: Literal["start", "resume"]
    status: str = "queued"
    progress: ReplayProgress | None = None
    status_line: str | None = None
    requirement_ids: list[str] = field(default_factory=list)
    error: str | None = None
    stored: bool = True
    cancel: threading.Event = field(default_factory=threading.Event)
    worker: Worker[None] | None = None
    posted_at: float = 0.0
    process: AttemptProcess | None = None

    def stop(self) -> None:
        """Ask the replay to stop between two calls (``cancel``, and its child process
        told now rather than at the worker's next look)."""
        self.cancel.set()
        if self.process is not None:
            self.process.cancel()

    @property
    def active(self) -> bool:
        """Whether the worker still runs it."""
        return self.status in ACTIVE

    def describe(self) -> str:
        """One line: ``running 5/7 · seq 8 tool check_refund_policy (intervention)``,
        ``paused on 1 requirement``, or the status line."""
        p = self.progress
        if self.active:
            if p is None or p.kind == "started" and not p.calls_answered:
                return "starting…" if self.status == "queued" else "running"
            text = f"running {p.calls_answered}/{p.base_calls}"
            if p.current_seq is not None:
                text += f" · seq {p.current_seq} {p.call_kind or ''} {line(p.call_name or '')}".rstrip()
                if p.source:
                    text += f" ({p.source})"
            if self.cancel.is_set():
                text += " · cancelling"
            return text
        if self.status == "paused":
            n = len(self.requirement_ids) or 1
            return f"paused on {n} requirement{'s' if n != 1 else ''}"
        return self.status_line or self.status


class RunProgressed(Message):
    """Replay ``replay_id`` answered more calls (posted by its worker, throttled)."""

    def __init__(self, replay_id: str) -> None:
        super().__init__()
        self.replay_id = replay_id


class RunEnded(Message):
    """Replay ``replay_id``'s worker ended: ``record`` is what it stored (``None`` when
    it failed before storing an outcome); ``error`` the exception it raised, if any."""

    def __init__(self, replay_id: str, record: ReplayRecord | None, error: BaseException | None) -> None:
        super().__init__()
        self.replay_id = replay_id
        self.record = record
        self.error = error


class EventsLoaded(Message):
    """The events of replay ``replay_id`` are ready (``loaded``), or could not be read
    (``error``)."""

    def __init__(
        self,
        replay_id: str,
        loaded: LoadedRecording | None,
        error: str | None,
        *,
        compare_with: LoadedRecording | None = None,
        comparison: Any = None,
    ) -> None:
        super().__init__()
        self.replay_id = replay_id
        self.loaded = loaded
        self.error = error
        #: when set, the events open beside this recording in the compare screen
        self.compare_with = compare_with
        #: the alignment the worker computed (:class:`core.analysis.compare.Comparison`)
        self.comparison = comparison


class ExecutorConsentScreen(ModalScreen[ExecutorChoice | None | Literal[False]]):
    """Asks before running an executor a recording names (docs/replay.md, "Executors
    are code"). Shows the ``module:function``; dismisses with
    ``ExecutorChoice(spec, "recording")`` (run it), ``None`` (replay without an
    executor) or ``False`` (do not replay)."""

    BINDINGS = [
        Binding("escape", "dismiss(False)", "Cancel", id="consent.cancel"),
    ]

    DEFAULT_CSS = """
    ExecutorConsentScreen { align: center middle; }
    ExecutorConsentScreen > Vertical { width: 84%; max-width: 96; height: auto; border: thick $warning;
        background: $surface; padding: 1 2; }
    ExecutorConsentScreen #consent-module { margin: 1 0; text-style: bold; }
    ExecutorConsentScreen .consent-note { color: $text-muted; margin-bottom: 1; }
    ExecutorConsentScreen Horizontal { height: auto; }
    ExecutorConsentScreen Button { margin-right: 2; }
    """

    def __init__(self, spec: str, branch: Branch) -> None:
        super().__init__()
        self.spec = spec
        self.branch = branch

    def compose(self) -> ComposeResult:
        live = self.branch.policy.wants_live
        without = (
            "Without an executor the engine walks the generic chat loop: calls the recording, the "
            "interventions and the fixtures cannot answer become requirements."
        )
        if live:
            without += " This branch's policy is live, so the replay would fail at once (NoExecutor)."
        with Vertical():
            yield Static(Text("This recording names an executor: code that runs on this machine", style="bold"))
            yield Static(line_text(self.spec), id="consent-module")
            what = (
                "Running it runs that command (made by record) with its model calls answered by the replay "
                "through a local proxy; its own tools run again, side effects included, on every replay and "
                "resume."
                if self.spec.startswith("cmd:")
                else "Running it imports that module (never from the current folder) and calls the function: "
                "the agent's own code then decides the calls after the branch point."
            )
            yield Static(
                Text(
                    what + " The recording's digest does not cover metadata.executor: anyone can edit it. "
                    "Run it only if you trust where the recording came from."
                ),
                classes="consent-note",
            )
            yield Static(Text(without), classes="consent-note")
            with Horizontal():
                yield Button("Run it", id="consent-run", variant="warning")
                yield Button("Without an executor", id="consent-none")
                yield Button("Cancel (esc)", id="consent-cancel")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = f"Replay branch {line(self.branch.id)}"
        self.query_one("#consent-cancel" if not self.branch.policy.wants_live else "#consent-run").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "consent-run":
            self.dismiss(ExecutorChoice(self.spec, "recording"))
        elif event.button.id == "consent-none":
            self.dismiss(None)
        else:
            self.dismiss(False)


def raised_on_purpose(error: BaseException | None) -> TypeGuard[InspectorError]:
    """Whether ``error`` is one the core raises on purpose (an
    :class:`~core.errors.InspectorError`, also when raised in the replay's child process)
    rather than a bug or a child that died."""
    if isinstance(error, ReplayProcessError):
        return error.inspector
    return isinstance(error, InspectorError)


def was_stored(workspace: Path, replay_id: str) -> bool:
    """Whether replay ``replay_id`` is in the workspace (``False`` when it cannot be
    read at all)."""
    try:
        with open_workspace(workspace) as ws:
            ws.get_replay(replay_id)
    except Exception:  # noqa: BLE001 — unknown id, or the workspace itself failed
        return False
    return True


class ReplayRunner:
    """Runs replays for the app (see the module docstring). ``runs`` maps replay ids to
    their :class:`RunState` (ended ones stay until the app ends, so their last progress
    can be shown)."""

    def __init__(self, app: InspectorApp) -> None:
        self.app = app
        self.runs: dict[str, RunState] = {}
        #: the replay that paused last (``o`` opens its requirements when nothing is selected)
        self.last_paused: str | None = None
        #: notification identity → replay id, for the "paused" notifications (a click opens it)
        self.paused_notices: dict[str, str] = {}
        self._listeners: weakref.WeakSet[Any] = weakref.WeakSet()
        #: digest → the in-memory recording an open timeline shows (a launch uses it
        #: instead of reading the stored copy back)
        self._bases: dict[str, Recording] = {}
        #: id(recording) → (a weak reference to it, its digest); recordings are not hashable
        self._digests: dict[int, tuple[weakref.ref[Recording], str]] = {}

    # ------------------------------------------------------------------ views

    @property
    def workspace_path(self) -> Path:
        """The workspace folder (``--workspace``)."""
        return self.app.workspace_path

    def listen(self, view: WorkspaceView) -> None:
        """Tell ``view`` (``view.workspace_changed(what, ident)``) of every change."""
        self._listeners.add(view)

    def unlisten(self, view: WorkspaceView) -> None:
        """Stop telling ``view``."""
        self._listeners.discard(view)

    def broadcast(self, event: WorkspaceChanged) -> None:
        """Tell every registered view and every screen on the stack that defines
        ``workspace_changed`` that ``event.what`` / ``event.ident`` changed."""
        told: set[int] = set()
        for view in list(self._listeners):
            told.add(id(view))
            view.workspace_changed(event.what, event.ident)
        for screen in list(self.app.screen_stack):
            hook: Callable[[str, str | None], None] | None = getattr(screen, "workspace_changed", None)
            if hook is not None and id(screen) not in told:
                hook(event.what, event.ident)

    def changed(self, what: str, ident: str | None = None) -> None:
        """Post :class:`~inspector.messages.WorkspaceChanged` to the app."""
        self.app.post_message(WorkspaceChanged(what, ident))

    # ------------------------------------------------------------------ bases

    def digest_of(self, loaded: LoadedRecording) -> str | None:
        """The digest an open recording is known by in the workspace
        (:func:`core.record.io.recording_digest`; remembered per recording), or ``None``
        when it cannot be known yet (a fast-opened file without a digest, still being
        verified). A verified recording is remembered, for the executor its metadata names
        (the replay itself reads the workspace's stored copy).

        Raises:
            InspectorError: the recording holds a value without a canonical form.
        """
        rec = loaded.recording
        known = self._digests.get(id(rec))
        digest = known[1] if known is not None and known[0]() is rec else None
        if digest is None:
            if loaded.verify is not None and not rec.digest:
                return None
            digest = recording_digest(rec)
            key = id(rec)
            self._digests[key] = (weakref.ref(rec, lambda _: self._digests.pop(key, None)), digest)
        if not loaded.records_pending:
            self._bases[digest] = rec
        return digest

    # ------------------------------------------------------------------ launching

    def branch_saved(self, event: BranchSaved) -> None:
        """A branch was stored (by the branch editor): refresh the views; with
        ``launch``, replay it with the executor the editor consented to."""
        self.changed("branch", event.branch_id)
        if event.launch:
            self.launch(event.branch_id, event.executor)

    def request_launch(self, branch_id: str, executor: ExecutorChoice | None = None) -> None:
        """Replay branch ``branch_id``: with ``executor`` when one is given; else, when
        the branch's base names an executor, after asking (:class:`ExecutorConsentScreen`);
        else without one. A branch that cannot be read opens the error screen."""
        if executor is not None:
            self.launch(branch_id, executor)
            return
        try:
            with open_workspace(self.workspace_path) as ws:
                branch = ws.get_branch(branch_id)
                ws.require_writable()  # before asking about the executor: nothing would be stored
                named = self._named_executor(ws, branch)
        except InspectorError as exc:
            self._error(f"cannot replay branch {branch_id}", exc)
            return
        if named is None:
            self.launch(branch_id, None)
            return

        def chosen(choice: ExecutorChoice | None | Literal[False]) -> None:
            if choice is not False:
                self.launch(branch_id, choice)

        self.app.push_screen(ExecutorConsentScreen(named, branch), chosen)

    def _named_executor(self, ws: Workspace, branch: Branch) -> str | None:
        """The executor the branch's base names (``metadata.executor``), if any."""
        rec = self._bases.get(branch.base.digest)
        if rec is not None:
            meta = rec.metadata
        else:
            stored = next((r for r in ws.list_recordings() if r.digest == branch.base.digest), None)
            meta = stored.metadata if stored is not None else {}
        named = meta.get("executor")
        return named if isinstance(named, str) and named else None

    def launch(self, branch_id: str, executor: ExecutorChoice | None) -> str:
        """Start a replay of branch ``branch_id`` in a child process; return its id (the
        replay is stored by the worker: it may still fail to start)."""
        rid = "rp-" + uuid.uuid4().hex[:12]
        state = RunState(replay_id=rid, branch_id=branch_id, kind="start")
        self.runs[rid] = state
        state.worker = self.app.run_worker(
            partial(self._work, state, executor),
            name=f"replay {rid}",
            group="replay",
            description=f"replay {rid} of branch {branch_id}",
            thread=True,
            exit_on_error=False,
        )
        self.changed("replay", rid)
        self.app.notify(f"replaying branch {branch_id} as {rid}", title="replay started", timeout=3)
        return rid

    def resume(self, replay_id: str, executor: ExecutorChoice | None = None) -> bool:
        """Resume replay ``replay_id`` (its executor as it started, or ``executor``) in a
        child process; ``False`` (and a notice) when this app is running it already."""
        running = self.runs.get(replay_id)
        if running is not None and running.active:
            self.app.notify(f"replay {replay_id} is running already", severity="warning", timeout=3)
            return False
        try:
            with open_workspace(self.workspace_path) as ws:
                record = ws.get_replay(replay_id)
                ws.require_writable()
        except InspectorError as exc:
            self._error(f"cannot resume replay {replay_id}", exc)
            return False
        state = RunState(replay_id=replay_id, branch_id=record.branch_id, kind="resume")
        self.runs[replay_id] = state
        state.worker = self.app.run_worker(
            partial(self._work, state, executor),
            name=f"resume {replay_id}",
            group="replay",
            description=f"resuming replay {replay_id}",
            thread=True,
            exit_on_error=False,
        )
        self.changed("replay", replay_id)
        self.app.notify(f"resuming replay {replay_id}", title="replay resumed", timeout=3)
        return True

    def resume_when_answered(self, replay_id: str) -> bool:
        """:meth:`resume`, unless the replay still has an open requirement (resuming would
        pause on it again) or has completed: then say so and return ``False``."""
        try:
            with open_workspace(self.workspace_path) as ws:
                record = ws.get_replay(replay_id)
                still = ws.requirements(replay_id=replay_id, open_only=True)
        except InspectorError as exc:
            self._error(f"cannot resume replay {replay_id}", exc)
            return False
        if record.status == "completed":
            self.app.notify(
                f"replay {replay_id} has completed: R replays its branch again", severity="warning", timeout=4
            )
            return False
        if still:
            req = still[0]
            what = "a person's turn" if req.kind == "user" else f"{req.kind} {req.name}"
            self.app.notify(
                f"replay {replay_id} still waits on {req.id} ({what}): answer it first (A)",
                severity="warning",
                timeout=5,
            )
            return False
        return self.resume(replay_id)

    def cancel(self, replay_id: str) -> bool:
        """Ask running replay ``replay_id`` to stop between two calls (it ends ``failed``
        with error ``Cancelled``, resumable); ``False`` when this app is not running it."""
        state = self.runs.get(replay_id)
        if state is None or not state.active:
            return False
        state.stop()
        self.changed("replay", replay_id)
        return True

    def active(self) -> list[RunState]:
        """The replays running now, oldest first."""
        return [s for s in self.runs.values() if s.active]

    def shutdown(self) -> None:
        """Cancel every running replay (the app is quitting): each stops between two
        calls and is stored ``failed``/``Cancelled``, resumable."""
        for state in self.active():
            state.stop()

    # ------------------------------------------------------------------ worker side (threads)

    def _progress(self, state: RunState, p: ReplayProgress) -> None:
        """The replay's progress (relayed on the worker thread): keep, post now and then."""
        state.progress = p
        if p.kind == "started":
            state.status = "running"
        state.posted_at = time.monotonic()
        self.app.post_message(RunProgressed(state.replay_id))  # the child sends at most every PROGRESS_INTERVAL

    def _work(self, state: RunState, executor: ExecutorChoice | None) -> None:
        """Worker (a thread): run the attempt in a child process
        (:class:`core.replay_process.AttemptProcess`: the replay has a core
        of its own, and keys are answered as fast as with none running), relay its
        progress, and post :class:`RunEnded`; an unexpected error of the child is raised
        again (the app's worker error screen names it)."""
        path = self.workspace_path
        try:
            state.process = AttemptProcess(
                path, state.kind, state.replay_id, state.branch_id, executor, progress_interval=PROGRESS_INTERVAL
            )
            record = state.process.wait(on_progress=partial(self._progress, state), cancel=state.cancel.is_set)
        except BaseException as exc:
            state.stored = state.kind == "resume" or was_stored(path, state.replay_id)
            self.app.post_message(RunEnded(state.replay_id, None, exc))
            if not raised_on_purpose(exc):
                raise
            return
        self.app.post_message(RunEnded(state.replay_id, record, None))

    # ------------------------------------------------------------------ app side (messages)

    def progressed(self, event: RunProgressed) -> None:
        """A worker's progress message: refresh the views (cheap: no workspace read)."""
        self.changed("replay", event.replay_id)

    def ended(self, event: RunEnded) -> None:
        """A worker ended: record the outcome, refresh the views, and say what happened
        (a notification; the error screen when nothing was stored)."""
        state = self.runs.get(event.replay_id)
        if state is None:
            return
        record, error = event.record, event.error
        if record is not None:
            state.status = record.status
            state.status_line = record.status_line
            state.requirement_ids = list(record.pause.requirement_ids) if record.pause else []
            state.error = f"{record.error.type}: {record.error.message}" if record.error else None
        else:
            state.status = "failed"
            state.error = " ".join(str(error).split()) if error is not None else "no reason recorded"
        self.changed("replay", state.replay_id)
        self.changed("requirement", None)
        if record is not None and record.status == "paused":
            self._notify_paused(state)
        elif record is not None and record.status == "completed":
            self.app.notify(f"replay {state.replay_id}: {record.status_line}", title="replay completed", timeout=6)
        elif record is not None and record.error is not None and record.error.type == "Cancelled":
            self.app.notify(
                f"replay {state.replay_id} cancelled after {state.progress.calls_answered if state.progress else 0} "
                "call(s); u resumes it",
                title="replay cancelled",
                severity="warning",
                timeout=6,
            )
        elif record is not None:
            self.app.notify(
                f"replay {state.replay_id} failed: {state.error}", title="replay failed", severity="error", timeout=10
            )
        elif raised_on_purpose(error) and not state.stored:
            what = "resume" if state.kind == "resume" else "replay"
            self.runs.pop(state.replay_id, None)
            target = f"replay {state.replay_id}" if state.kind == "resume" else f"branch {state.branch_id}"
            self._error(f"cannot {what} {target}", error, hint="nothing was stored · enter: close")
        elif raised_on_purpose(error):
            what = "cannot resume:" if state.kind == "resume" else "failed:"
            self.app.notify(
                f"replay {state.replay_id} {what} {state.error}", title="replay failed", severity="error", timeout=10
            )
        # any other exception: the app's worker handler shows the error screen

    def _notify_paused(self, state: RunState) -> None:
        """The notification of a paused replay: names its requirement; ``o`` or a click
        opens the requirements panel on it."""
        self.last_paused = state.replay_id
        what = ""
        try:
            with open_workspace(self.workspace_path) as ws:
                reqs = [r for r in ws.requirements(replay_id=state.replay_id, open_only=True)]
        except InspectorError:
            reqs = []
        if reqs:
            first = reqs[0]
            what = f": {first.kind} {first.name}" if first.kind != "user" else ": a person's turn"
        n = len(reqs) or len(state.requirement_ids) or 1
        message = (
            f"replay {state.replay_id} paused on {n} requirement{'s' if n != 1 else ''}{what}. "
            "Press o (or click here) to answer it."
        )
        notification = Notification(block(message), line("replay paused"), "warning", 12, markup=False)
        self.paused_notices[notification.identity] = state.replay_id
        self.app.post_message(Notify(notification))

    def notification_clicked(self, widget: object) -> None:
        """A click landed on ``widget``: a "replay paused" notification opens the
        requirements panel on its replay."""
        from textual.widgets._toast import Toast

        if not isinstance(widget, Toast):
            return
        notification = getattr(widget, "_notification", None)
        replay_id = self.paused_notices.pop(getattr(notification, "identity", ""), None)
        if replay_id is not None:
            self.open_requirements(replay_id)

    def open_requirements(self, replay_id: str | None, *, answer: bool = False) -> None:
        """Push the requirements panel on ``replay_id`` (``None``: the whole workspace)."""
        from .screens.requirements import RequirementsScreen

        self.app.push_screen(RequirementsScreen(replay_id, answer_first=answer))

    def worker_failed(self, worker: Worker[Any]) -> None:
        """A worker raised unexpectedly (the app's error screen names it): the views
        that waited on it stop waiting."""
        for view in list(self._listeners):
            hook = getattr(view, "background_failed", None)
            if hook is not None and (worker.group or "").endswith(str(id(view))):
                hook()

    def help_groups(self) -> list[tuple[str, list[Binding]]]:
        """The help screen's groups for the branch tree and the requirements panel."""
        from .screens.requirements import FixturesScreen, RequirementsScreen
        from .widgets.branch_tree import BranchTreeView

        def of(cls: type) -> list[Binding]:
            return [b for b in getattr(cls, "BINDINGS", []) if isinstance(b, Binding)]

        tree = [b for b in of(BranchTreeView) if (b.id or "").startswith("workspace.") or b.key == "enter"]
        return [
            ("Branch tree (T)", tree),
            ("Requirements panel (o)", of(RequirementsScreen)),
            ("Fixtures list (F)", of(FixturesScreen)),
        ]

    def _error(self, title: str, error: BaseException, hint: str = "enter: close") -> None:
        from .screens.error import ErrorScreen

        message = str(error)
        if isinstance(error, NoWorkspace) or (isinstance(error, ReplayProcessError) and error.type == "NoWorkspace"):
            message += " (save a branch first: B on a record)"
        self.app.push_screen(ErrorScreen(title, message, hint))

    # ------------------------------------------------------------------ opening replays

    def open_events(self, replay_id: str, compare_with: LoadedRecording | None = None) -> None:
        """Open replay ``replay_id``'s events as a timeline — or, with ``compare_with``,
        beside that recording in the compare screen — read (and aligned) in a worker: big
        events take a while to index. Escape there returns to the screen it was opened
        from."""
        what = (
            f"comparing replay {replay_id} with its base"
            if compare_with
            else f"opening the events of replay {replay_id}"
        )
        self.app.run_worker(
            partial(self._load_events, replay_id, compare_with=compare_with),
            name=f"{'compare' if compare_with else 'events'} {replay_id}",
            group="replay-events",
            description=what,
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _load_events(self, replay_id: str, compare_with: LoadedRecording | None = None) -> None:
        from core.analysis.compare import compare_runs

        from .loader import LoadedRecording

        try:
            with open_workspace(self.workspace_path) as ws:
                events = ws.replay_events(replay_id)
                if events is None:
                    raise InspectorError(f"replay {replay_id} has no events yet: its first attempt has not ended")
                path = ws.events_file(replay_id)
            loaded = LoadedRecording.from_recording(events, path)
            comparison = None if compare_with is None else compare_runs(compare_with.recording, events)
        except InspectorError as exc:
            self.app.post_message(EventsLoaded(replay_id, None, str(exc)))
            return
        self.app.post_message(EventsLoaded(replay_id, loaded, None, compare_with=compare_with, comparison=comparison))

    def events_loaded(self, event: EventsLoaded) -> None:
        """Push the replay's timeline (or the error screen)."""
        from .screens.error import ErrorScreen
        from .screens.timeline import TimelineScreen

        if event.loaded is None:
            self.app.push_screen(ErrorScreen(f"cannot open replay {event.replay_id}", event.error or ""))
            return
        if event.compare_with is not None:
            from .screens.compare import CompareScreen

            self.app.push_screen(CompareScreen(event.compare_with, event.loaded, comparison=event.comparison))
            return
        self.app.push_screen(TimelineScreen(event.loaded))
        self.app.notify(f"replay {event.replay_id}: its events. escape: back to the base run", timeout=5)
