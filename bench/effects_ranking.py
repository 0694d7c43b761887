"""Benchmark of the effect ranking over many replays' metrics (synthetic).

    python bench/effects_ranking.py [--replays 10000] [--candidates 200] [--repeat 5]

Builds ``--replays`` synthetic :class:`core.effects.ranking.Observation` objects of one base —
spread over ``--candidates`` target calls (one intervention set per call, 1 in 10 replays
with a two-call intervention set), random outcomes, comparability levels, drift and
fixture counts and metric deltas — and times :func:`core.effects.ranking.rank_effects` (median
of ``--repeat``), the JSON form of the ranking, and the observations' JSON round trip
(what ``effects`` reads back from the workspace's stored causal diffs). Also prints the
time per replay at 1k, 10k and 100k replays (linearity). Figures for docs/performance.md,
section "Effects".
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from core.effects.ranking import Observation, Target, rank_effects


def synthetic(n: int, candidates: int, seed: int = 7) -> list[Observation]:
    """``n`` observations of one failing base over ``candidates`` calls."""
    rnd = random.Random(seed)
    decisive = set(rnd.sample(range(candidates), max(1, candidates // 50)))
    out = []
    for i in range(n):
        c = rnd.randrange(candidates)
        seq = 3 + 2 * c
        targets = (Target(seq, "tool", f"tool{c % 7}"),)
        set_id = f"is-{c:06d}"
        if i % 10 == 9:
            targets += (Target(seq + 2, "model", "m"),)
            set_id = f"is-{c:06d}-pair"
        p = 0.9 if c in decisive else 0.05
        status = "completed" if rnd.random() > 0.03 else rnd.choice(["paused", "failed"])
        level = "none" if status != "completed" else rnd.choice(["full", "partial", "partial"])
        outcome = ("success" if rnd.random() < p else "failure") if status == "completed" else "unknown"
        out.append(
            Observation(
                replay_id=f"rp-{i:08d}",
                branch_id=f"br-{i:08d}",
                intervention_set=set_id,
                targets=targets,
                description=f"tool_result at seq {seq}",
                status=status,
                comparability=level,
                outcome_base="failure",
                outcome=outcome,
                final_output_changed=outcome == "success" or rnd.random() < 0.2,
                deltas={
                    "tool_errors": rnd.choice([-1, 0, 0, 1]),
                    "steps": rnd.randint(-3, 5),
                    "model_calls": rnd.randint(-3, 5),
                    "tool_calls": rnd.randint(-3, 5),
                    "input_tokens": rnd.randint(-5000, 20000),
                    "output_tokens": rnd.randint(-500, 2000),
                },
                drift_uses=rnd.choice([0, 0, 0, 1, 2]),
                fixture_uses=rnd.choice([0, 0, 1]),
                live_uses=rnd.randint(0, 4),
                diff_ids=(f"df-rp-{i:08d}-causal", f"df-rp-{i:08d}-trace"),
            )
        )
    return out


def _median(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=10_000)
    ap.add_argument("--candidates", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    obs = synthetic(args.replays, args.candidates)
    t_rank, ranked = _median(lambda: rank_effects(obs), args.repeat)
    t_json, docs = _median(lambda: [e.to_json() for e in ranked], args.repeat)
    blob = orjson.dumps([o.to_json() for o in obs])
    t_load, _ = _median(lambda: [Observation.from_json(d) for d in orjson.loads(blob)], args.repeat)
    shuffled = list(obs)
    random.Random(1).shuffle(shuffled)
    same = [e.to_json() for e in rank_effects(shuffled)] == docs
    print(
        f"effect ranking: {args.replays} replays of one base, {args.candidates} target calls, "
        f"{len(ranked)} effects (median of {args.repeat})"
    )
    print(f"  rank_effects            {t_rank * 1000:8.1f} ms  ({t_rank / args.replays * 1e6:.1f} µs per replay)")
    print(f"  effects to JSON         {t_json * 1000:8.1f} ms")
    print(f"  observations from JSON  {t_load * 1000:8.1f} ms  ({len(blob) / 1e6:.1f} MB stored)")
    print(f"  total                   {(t_rank + t_json + t_load) * 1000:8.1f} ms")
    print(f"  shuffled input gives the same ranking: {same}")
    print(
        "  top 3: "
        + "; ".join(
            f"seq {e.seq} effect {e.effect:.2f} score {e.score:.2f} rel {e.reliability:.2f}" for e in ranked[:3]
        )
    )
    print()
    print("linearity (rank_effects, same candidates):")
    base_rate = None
    for n in (1_000, 10_000, 100_000):
        o = synthetic(n, args.candidates, seed=n)
        t, _ = _median(lambda o=o: rank_effects(o), max(1, args.repeat // 2))
        rate = t / n * 1e6
        base_rate = base_rate or rate
        print(f"  {n:>7} replays  {t * 1000:8.1f} ms  {rate:5.1f} µs/replay  (x{rate / base_rate:.2f} of 1k)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
