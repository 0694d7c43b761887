"""The proxy is language-agnostic: an agent written with the ``openai`` npm package goes
through the same record → replay round trip as the Python SDKs' agents.

Needs ``node`` and ``tests/proxy/node/node_modules`` (``make test`` and ``.ci/run``
install it with ``npm ci`` from the registry; the test never fetches anything); skipped
with the reason otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.record.recording import Recording

from .conftest import call_view, files_hold, record, replay
from .upstream import API_KEY

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not on this machine"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "openai").is_dir(),
        reason="the openai npm package is not installed (make node-deps: npm ci in tests/proxy/node)",
    ),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_node_openai_agent_round_trip(tmp_path: Path, upstream, stream: bool) -> None:
    argv = [str(NODE), str(NODE_DIR / "agent.mjs"), *(["--stream"] if stream else [])]
    res = record(argv, tmp_path / "run.json", upstream)
    assert res.exit_code == 0, res.reason
    rec = Recording.load(tmp_path / "run.json")
    assert [r.kind for r in rec.records] == ["model", "tool", "model"]
    assert rec.metadata["final_output"].strip() == "Answer: no note for weather"
    sent = upstream.model_requests()
    ws, record_, outcome = replay(tmp_path / "run.json", tmp_path / "ws")
    assert record_.status == "completed", (record_.error, outcome.requirement)
    assert upstream.model_requests() == sent
    assert call_view(outcome.events.records) == call_view(rec.records)
    assert outcome.output == rec.metadata["final_output"]
    assert files_hold(tmp_path, API_KEY) == []
    ws.close()
