"""Sweep on Ray (``ray_address``): the same ranking as the local path, progress per
candidate, cancellation; one local Ray for the module, shut down at the end."""

from __future__ import annotations

import pytest

from core.effects.sweep import run_sweep
from inspector.cli import main
from tests.builders import ROOT

ray = pytest.importorskip("ray", reason="Ray is not installed (the optional extra: pip install '.[ray]')")

BASE = ROOT / "sample_recordings" / "attribution" / "sample-agent-support-002-wrong-tool-step1.json"


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _strip(effect):  # branch ids are fresh per sweep
    d = effect.to_json()
    del d["evidence"]["branch_ids"]
    return d


def test_ray_sweep_ranks_as_the_local_one(local_ray, tmp_path, monkeypatch) -> None:
    local = run_sweep(BASE, executor="recorded", trust_executor=True)
    seen: list[int] = []
    on_ray = run_sweep(
        BASE,
        executor="recorded",
        trust_executor=True,
        ray_address="local",
        on_result=lambda r: seen.append(r["seq"]),
    )
    assert [_strip(e) for e in on_ray.effects] == [_strip(e) for e in local.effects]
    fresh = ("branch_id",)  # a fresh id per sweep, as in the effects
    assert [{k: v for k, v in r.items() if k not in fresh} for r in on_ray.replays] == [
        {k: v for k, v in r.items() if k not in fresh} for r in local.replays
    ]
    assert not on_ray.cancelled and on_ray.planned == local.planned
    assert sorted(seen) == [c.seq for c in local.calls]
    # stored in a workspace given relative to the working directory, as the local path stores it
    monkeypatch.chdir(tmp_path)
    stored = run_sweep(BASE, executor="recorded", trust_executor=True, ray_address="local", workspace="ws")

    def no_evidence(e):  # stored replays get random ids
        d = _strip(e)
        del d["evidence"]
        return d

    assert [no_evidence(e) for e in stored.effects] == [no_evidence(e) for e in local.effects]
    evidence = {i for e in stored.effects for i in e.to_json()["evidence"]["replay_ids"]}
    assert evidence == {r["replay_id"] for r in stored.replays}
    ws = tmp_path / "ws"
    assert main(["effects", "--base", str(BASE), "--workspace", str(ws), "--json"]) == 0


def test_cancelled_ray_sweep_starts_no_further_candidate(local_ray) -> None:
    res = run_sweep(BASE, strategy="knockout", executor=None, ray_address="local", cancel=lambda: True)
    assert res.cancelled and res.planned > 2
    # at most the tasks in flight (the Ray's 2 CPUs) ran
    assert len(res.replays) + len(res.skipped) <= 2
