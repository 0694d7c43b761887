"""Every bundled sample recording (sample agent and imported real runs) replays to itself
on an empty branch, and a changed tool result gives a valid, honest replay."""

from __future__ import annotations

import pytest

from core.record.recording import Recording, ToolResult
from core.replay.branch import Policy, ToolResultIntervention, new_branch
from core.replay.engine import ReplayEngine
from tests.builders import ROOT, strip

SAMPLES = sorted((ROOT / "sample_recordings").glob("*.json"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_replays_to_itself_and_under_an_override(path):
    base = Recording.load(path)
    seqs = [r.seq for r in base.records]
    for at in {seqs[0], seqs[len(seqs) // 2], seqs[-1]}:
        out = ReplayEngine(base, new_branch(base, str(path), at=at)).run()
        assert out.status == "completed" and out.comparability.level == "full" and out.first_divergence is None
        assert [strip(r) for r in out.events.records] == [strip(r) for r in base.records]
    tools = [r for r in base.records if r.kind == "tool"]
    if not tools:
        return
    target = tools[len(tools) // 2]
    for drift in ("strict", "lenient"):
        br = new_branch(
            base,
            str(path),
            at=target.seq,
            policy=Policy(drift=drift),
            interventions=[ToolResultIntervention(seq=target.seq, result=ToolResult(content="changed"))],
        )
        out = ReplayEngine(base, br).run()
        assert out.status in ("completed", "paused")
        assert out.first_divergence.base_seq == target.seq
        assert out.first_divergence.dimension == "tool result"
        if out.status == "paused":
            assert out.requirement is not None and out.comparability.level == "none"
        Recording.loads(out.events.dumps())
