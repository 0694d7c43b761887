"""Recorded alternative paths stored as branches: what the open/import service does with
the forks an importer found (a Claude Code ``/rewind``, :class:`core.importers.claude_code.RecordedFork`).

For each fork of a run, :func:`store_recorded_forks` stores in a workspace:

* a **branch** of the main run whose checkpoint is the first record after the shared
  prefix, with a ``messages`` intervention holding the diverging prompt (``replace`` of
  the base's prompt in the next model request), labelled ``rewind: <prompt>``;
* a **completed replay** of that branch whose events are the fork's own records — every
  answer ``recorded`` (they come from the source file, nothing was run) — with
  comparability ``partial`` saying so, and its first divergence from the base computed
  as for any replay (:func:`core.replay.replay_record.first_divergence`).

So the branch tree shows the alternatives beside the user's own branches, and ``diff`` /
compare align them with the main run. Storing is idempotent: ids are derived from the
source (the session id, the fork's run id and the base's digest) and timestamps from the
recording, so opening the same file again stores nothing new. The importer itself never
touches a workspace (SPEC "Application": the workspace).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .importers.base import ImportedRun
from .record.io import recording_digest
from .record.recording import ChatMessage, Recording, SessionInfo
from .record.recording_redaction import ensure_redacted
from .replay.branch import BaseRef, Branch, MessagesIntervention, Policy, validate_branch
from .replay.replay_record import Attempt, Comparability, ReplayRecord, first_divergence
from .workspace import Workspace

__all__ = ["StoredFork", "store_recorded_forks"]

#: why a stored alternative is only partly comparable (shown with its status)
RECORDED_REASON = (
    "a path recorded in the source file (a /rewind in the session), stored as a replay: "
    "its answers are the recorded ones, nothing was run again"
)


@dataclass(frozen=True)
class StoredFork:
    """One recorded alternative as stored: ``branch_id``, ``replay_id``, ``checkpoint``
    (base seq), ``label``, and ``created`` (``False`` when it was already stored)."""

    branch_id: str
    replay_id: str
    checkpoint: int
    label: str
    created: bool


def _short(text: str, n: int = 48) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _ident(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _interventions(base: Recording, checkpoint: int, prompt: ChatMessage | None) -> list[Any]:
    """A ``replace`` of the base's prompt in the first model request at or after the
    checkpoint by ``prompt`` (the last user message of that request); none when there is
    no prompt or no such request."""
    if prompt is None:
        return []
    for r in base.records:
        if r.seq >= checkpoint and r.kind == "model":
            msgs = r.request.messages
            idx = max((i for i, m in enumerate(msgs) if m.role == "user"), default=None)
            if idx is None:
                return [MessagesIntervention(op="append", messages=[prompt], note="the prompt of the recorded path")]
            return [
                MessagesIntervention(op="replace", index=idx, messages=[prompt], note="the prompt of the recorded path")
            ]
    return []


def _calls(rec: Recording) -> list[Any]:
    return [r for r in rec.records if r.kind in ("model", "tool")]


def store_recorded_forks(ws: Workspace, runs: list[ImportedRun], base_path: str) -> list[StoredFork]:
    """Store every recorded fork of ``runs`` (each run's ``forks``, their paths among
    ``runs``) in ``ws`` as a branch and a completed replay; return what is stored.

    ``base_path`` is the source file as the user named it (the branch's ``base.path``).

    Raises:
        WorkspaceError: the workspace cannot be written.
        BranchError: a fork's checkpoint or prompt does not fit its base (a bug in the
            importer's data; nothing of that fork is stored).
    """
    by_id = {r.run_id: r for r in runs}
    out: list[StoredFork] = []
    for main in runs:
        if not main.forks:
            continue
        base = main.recording
        digest = recording_digest(ensure_redacted(base))
        for fork in main.forks:
            alt = by_id.get(fork.run_id)
            if alt is None:
                continue
            checkpoint = fork.checkpoint
            if checkpoint >= len(base.records):
                continue
            text = fork.prompt.text if fork.prompt is not None else fork.run_id
            label = f"rewind: {_short(text)}"
            ident = _ident(digest, fork.run_id)
            branch_id = f"rewind-{ident}"
            replay_id = f"rp-rewind-{ident}"
            when = next((r.at for r in alt.recording.records[checkpoint:] if r.at), None) or "1970-01-01T00:00:00Z"
            branch = Branch(
                id=branch_id,
                base=BaseRef(path=str(base_path), digest=digest),
                checkpoint=checkpoint,
                label=label,
                interventions=_interventions(base, checkpoint, fork.prompt),
                policy=Policy(),
                created_at=when,
            )
            validate_branch(branch, base)
            if ws.has_branch(branch_id) and _replay_stored(ws, replay_id):
                out.append(StoredFork(branch_id, replay_id, checkpoint, label, False))
                continue
            ws.add_branch(branch, base, str(base_path))
            events = _events(alt.recording, branch, digest)
            n_models = sum(1 for r in events.records if r.kind == "model")
            record = ReplayRecord(
                id=replay_id,
                base_digest=digest,
                base_path=str(base_path),
                branch_id=branch_id,
                status="completed",
                policy=branch.policy,
                comparability=Comparability(level="partial", reasons=[RECORDED_REASON]),
                first_divergence=first_divergence(_calls(base), _calls(events), complete=True),
                attempts=[Attempt(number=1, kind="start", started_at=when, ended_at=when, outcome="completed")],
                stop_reason="final",
                steps=n_models,
                answers={"recorded": len(_calls(events))},
                interventions_applied=list(range(len(branch.interventions))),
                created_at=when,
                updated_at=when,
            )
            if not _replay_stored(ws, replay_id):
                ws.create_replay(record.model_copy(update={"status": "queued"}))
            ws.save_replay_outputs(record, _Outcome(events), [], events_file=True)
            out.append(StoredFork(branch_id, replay_id, checkpoint, label, True))
    return out


def _replay_stored(ws: Workspace, replay_id: str) -> bool:
    try:
        ws.get_replay(replay_id)
    except Exception:  # noqa: BLE001 — any "no such replay" means: not stored
        return False
    return True


@dataclass(frozen=True)
class _Outcome:
    events: Recording


def _events(alt: Recording, branch: Branch, digest: str) -> Recording:
    """The fork's records as a replay's events (metadata as the engine writes it)."""
    meta: dict[str, Any] = {
        "replayed": True,
        "replay": {
            "base": {"digest": digest, "path": branch.base.path},
            "branch": {"id": branch.id, "checkpoint": branch.checkpoint, "label": branch.label, "parent": None},
            "policy": branch.policy.model_dump(mode="json", exclude_none=True),
            "executor": None,
            "stop_reason": "final",
            "answer_sources": {},
            "answer_reasons": {},
            "fixture_uses": [],
            "recorded_path": alt.metadata.get("source", {}).get("run")
            if isinstance(alt.metadata.get("source"), dict)
            else None,
        },
    }
    for k in ("task", "agent", "model", "final_output_rule", "session_id"):
        if k in alt.metadata:
            meta[k] = alt.metadata[k]
    return Recording(
        metadata=meta,
        session=SessionInfo(mode="replay", fallback="error", producer="chassis-inspector (recorded alternative path)"),
        records=[r.model_copy() for r in alt.records],
    )
