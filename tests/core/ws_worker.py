"""Subprocess worker for the workspace crash and concurrency tests.

``python -m tests.core.ws_worker DIR N STEPS TAG [STALL]`` runs N replays of a
base with STEPS steps in workspace DIR (alternating an empty branch and a paused one,
adding a fixture each time) and prints ``done <i>`` after each, flushing. With STALL =
k, the (k+1)-th replay stalls inside its output transaction, right after writing its
events, and prints ``in-tx <replay id>`` — for a test to kill it there.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from core.record.recording import ChatMessage, ModelResponse, ToolCall
from core.replay.branch import ModelResponseIntervention, new_branch
from core.replay.fixtures import Fixture
from core.replay.replays import start_replay
from core.workspace import Workspace
from tests.builders import chat_recording


class _StallingConnection:
    """Delegates to a sqlite3 connection; stalls after the events INSERT."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> Any:
        out = self._conn.execute(sql, *args)
        if sql.startswith("INSERT OR REPLACE INTO replay_events"):
            print(f"in-tx {args[0][0]}", flush=True)
            time.sleep(60)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def main() -> None:
    folder, n, steps, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    stall = int(sys.argv[5]) if len(sys.argv) > 5 else None
    base = chat_recording(steps)
    base_path = Path(folder) / f"base-{tag}.json"
    base.save(base_path)
    resp = ModelResponse(
        message=ChatMessage(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="call_new", name="lookup", arguments={"q": f"new-{tag}"})],
        )
    )
    with Workspace.open(folder) as ws:
        for i in range(n):
            if stall is not None and i == stall:
                ws._conn = _StallingConnection(ws._conn)  # type: ignore[assignment]
            ivs = [] if i % 2 == 0 else [ModelResponseIntervention(step=1, response=resp)]
            br = new_branch(base, str(base_path), at=1, interventions=ivs, label=f"{tag}-{i}")
            # a write of its own that never applies (no call of the tool): project scope, as
            # a scope must name a stored branch or replay
            ws.put_fixture(
                Fixture(
                    kind="tool", name=f"never-called-{tag}-{i}", args_hash=None, scope="project", output={"content": i}
                )
            )
            record, _ = start_replay(ws, base_path, br, base=base)
            print(f"done {i} {record.id} {record.status}", flush=True)


if __name__ == "__main__":
    main()
