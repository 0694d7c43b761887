"""Messages the workspace screens of the app exchange (Textual ``Message`` classes).

The branch editor, the branch tree panel, the requirements panel and the replay runner
are separate modules; they talk through these messages, posted to the app
(``self.app.post_message(...)``), and never call each other directly:

* :class:`BranchSaved` — a branch was stored in the workspace (``launch``: the user asked
  to replay it at once, with ``executor``);
* :class:`LaunchReplay` — replay branch ``branch_id`` of the open base now;
* :class:`ResumeReplay` — resume replay ``replay_id``;
* :class:`WorkspaceChanged` — something in the workspace changed (a branch, a replay's
  status or progress, a requirement, a fixture): views that show it refresh.

``executor`` is a :class:`core.replay.boundary.ExecutorChoice` the user chose or
consented to (docs/replay.md, "Executors are code"), or ``None`` for no executor.
"""

from __future__ import annotations

from textual.message import Message

from core.replay.boundary import ExecutorChoice

__all__ = ["BranchSaved", "LaunchReplay", "ResumeReplay", "WorkspaceChanged"]


class BranchSaved(Message):
    """Branch ``branch_id`` was stored; ``launch``: replay it now with ``executor``."""

    def __init__(self, branch_id: str, *, launch: bool = False, executor: ExecutorChoice | None = None) -> None:
        super().__init__()
        self.branch_id = branch_id
        self.launch = launch
        self.executor = executor


class LaunchReplay(Message):
    """Replay branch ``branch_id`` of the open base with ``executor``."""

    def __init__(self, branch_id: str, executor: ExecutorChoice | None = None) -> None:
        super().__init__()
        self.branch_id = branch_id
        self.executor = executor


class ResumeReplay(Message):
    """Resume replay ``replay_id`` (its executor as it started, or ``executor``)."""

    def __init__(self, replay_id: str, executor: ExecutorChoice | None = None) -> None:
        super().__init__()
        self.replay_id = replay_id
        self.executor = executor


class WorkspaceChanged(Message):
    """The workspace changed: ``what`` (``branch``, ``replay``, ``requirement``,
    ``fixture``) and the id concerned (``None``: anything)."""

    def __init__(self, what: str, ident: str | None = None) -> None:
        super().__init__()
        self.what = what
        self.ident = ident
