"""Benchmark of ``sweep --jobs``: replays in parallel processes.

    python bench/effects_sweep_jobs.py [--latency-ms 20] [--jobs 1,2]

The sample agent answers instantly, so this wraps its executor in one that waits
``--latency-ms`` per live call (a model or tool service's latency) and sweeps the
success sample (every call a candidate, ``--strategy resample``) with each ``--jobs``
value, in memory. Prints wall time and the speed-up over one job; the rankings must be
equal. Figures for docs/performance.md, section "Effects".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.effects.sweep import run_sweep
from core.examples.sample_agent import SampleAgentExecutor

SAMPLE = Path(__file__).resolve().parents[1] / "sample_recordings" / "sample-agent-success.json"


class SlowExecutor(SampleAgentExecutor):
    """The sample agent with a fixed latency per live call (``BENCH_LATENCY_MS``)."""

    def _wait(self) -> None:
        time.sleep(float(os.environ.get("BENCH_LATENCY_MS", "20")) / 1000)

    def live_model(self, model, request):
        self._wait()
        return super().live_model(model, request)

    def live_tool(self, name, arguments):
        self._wait()
        return super().live_tool(name, arguments)


def make_slow_executor() -> SlowExecutor:
    """Entry point ``bench.effects_sweep_jobs:make_slow_executor``."""
    return SlowExecutor()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=20.0)
    ap.add_argument("--jobs", default="1,2")
    args = ap.parse_args(argv)
    os.environ["BENCH_LATENCY_MS"] = str(args.latency_ms)
    spec = "bench.effects_sweep_jobs:make_slow_executor"
    first = None
    print(f"sweep of {SAMPLE.name} (--strategy resample --candidates all), {args.latency_ms:g} ms per live call")
    for jobs in (int(j) for j in args.jobs.split(",")):
        t = time.perf_counter()
        res = run_sweep(SAMPLE, executor=spec, jobs=jobs)
        dt = time.perf_counter() - t
        order = [e.seq for e in res.effects]
        if first is None:
            first = (dt, order)
        print(
            f"  --jobs {jobs}: {len(res.replays)} replays in {dt:.2f} s  (x{first[0] / dt:.2f} of 1 job; "
            f"same ranking: {order == first[1]})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
