"""Subprocess worker for the workspace crash and concurrency tests.

``python -m tests.core.engine.ws_worker DIR N STEPS TAG`` runs N replays of a base with
STEPS steps in workspace DIR (alternating an empty branch and a paused one, adding a
fixture each time) and prints ``done <i>`` after each, flushing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.branch import ModelResponseIntervention, new_branch
from core.fixtures import Fixture
from core.recording import ChatMessage, ModelResponse, ToolCall
from core.replays import start_replay
from core.workspace import Workspace

from .helpers import chat_recording


def main() -> None:
    folder, n, steps, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    base = chat_recording(steps)
    base_path = Path(folder) / f"base-{tag}.json"
    base.save(base_path)
    resp = ModelResponse(message=ChatMessage(role="assistant", content="", tool_calls=[
        ToolCall(id="call_new", name="lookup", arguments={"q": f"new-{tag}"})]))
    with Workspace.open(folder) as ws:
        for i in range(n):
            ivs = [] if i % 2 == 0 else [ModelResponseIntervention(step=1, response=resp)]
            br = new_branch(base, str(base_path), at=1, interventions=ivs, label=f"{tag}-{i}")
            ws.put_fixture(Fixture(kind="tool", name="lookup", args_hash=None, scope=f"replay:none-{tag}-{i}",
                                   output={"content": i}))
            record, _ = start_replay(ws, base_path, br, base=base)
            print(f"done {i} {record.id} {record.status}", flush=True)


if __name__ == "__main__":
    main()
