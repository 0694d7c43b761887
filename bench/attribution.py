"""Attribution benchmark: does ``sweep`` find the planted decisive fault?

    python bench/attribution.py [--strategy resample|knockout] [--noise P] [--repeat N] [--jobs N]
                                [--json] [--write-samples DIR]

Generates every failing run of the sample agent (``core.examples.sample_agent``) with one planted
fault — each fault kind (``corrupted-result``, ``tool-error``, ``wrong-tool``) at every
step it can occur, on every task where it makes the run fail (36 runs) — each carrying its
ground truth in ``metadata.fault`` (``seq``, ``kind``, ``step``, ``tool``,
``description``). Runs :func:`core.effects.sweep.run_sweep` on each (``--executor recorded``,
every call a candidate) and reports top-1 and top-3 accuracy of the ranking against
``metadata.fault.seq`` — overall and per fault kind — with two log-only baselines on the
same runs: *first error* (the first call whose answer is an error) and *uniform* (the
expected accuracy of picking one call at random). Target: top-1 ≥ 90%.

``--noise P --repeat N`` sweeps with a *flaky* executor instead (each live answer goes
wrong with probability P, from a seeded generator) and N replays per call: what
repeated attempts buy when a resample is not guaranteed to be right.

``--write-samples DIR`` also writes a few of the runs (one per fault kind, at steps and
tasks other than the default samples) as recordings into DIR (the set shipped in
``sample_recordings/attribution/``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from core.effects.sweep import run_sweep
from core.examples.sample_agent import (
    FAULT_KINDS,
    TASKS,
    Fault,
    SampleAgentError,
    SampleAgentExecutor,
    record_run,
)
from core.record.recording import (
    ErrorInfo,
    ModelRecord,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)

#: the runs written by --write-samples: (task, kind, step)
SAMPLES = [
    ("support-002", "corrupted-result", 2),
    ("support-001", "tool-error", 3),
    ("support-002", "wrong-tool", 1),
    ("support-003", "wrong-tool", 0),
]


def failing_runs(max_step: int = 8) -> list[tuple[str, str, int, Recording]]:
    """Every (task, kind, step) whose planted fault makes the run fail, with its recording."""
    out = []
    for task in sorted(TASKS):
        for kind in FAULT_KINDS:
            for step in range(max_step):
                try:
                    run = record_run(task, Fault(kind, step))
                except SampleAgentError:
                    continue  # the run never reaches that step
                if run.outcome == "failure":
                    out.append((task, kind, step, run.recording))
    return out


def first_error_guess(rec: Recording) -> int | None:
    """Log-only baseline: the first call whose answer is an error."""
    for r in rec.records:
        if isinstance(r, ToolRecord) and r.result.error is not None:
            return r.seq
        if isinstance(r, ModelRecord) and r.error is not None:
            return r.seq
    return None


class NoisyExecutor(SampleAgentExecutor):
    """The sample agent with flaky live answers: each live call goes wrong with
    probability ``BENCH_NOISE`` — a tool answers ``ServiceUnavailable``, the model picks
    ``cancel_order`` — drawn from a seeded generator (same sequence on every run)."""

    def __init__(self) -> None:
        self.noise = float(os.environ.get("BENCH_NOISE", "0"))
        self.rnd = random.Random(int(os.environ.get("BENCH_SEED", "1")))

    def live_model(self, model, request):
        response = super().live_model(model, request)
        if self.rnd.random() < self.noise and response.message.tool_calls:
            call = response.message.tool_calls[0]
            wrong = ToolCall(id=call.id, name="cancel_order", arguments={"order_id": "A1001"})
            response = response.model_copy(
                update={"message": response.message.model_copy(update={"tool_calls": [wrong]})}
            )
        return response

    def live_tool(self, name, arguments):
        if self.rnd.random() < self.noise:
            return ToolResult(error=ErrorInfo(type="ServiceUnavailable", message=f"{name}: flaky backend"))
        return super().live_tool(name, arguments)


def make_noisy_executor() -> NoisyExecutor:
    """Entry point ``bench.attribution:make_noisy_executor``."""
    return NoisyExecutor()


def _one(job: tuple[str, str, str, int, str, int, float]) -> dict:
    path, task, kind, step, strategy, repeat, noise = job
    rec = Recording.load(path)
    fault = rec.metadata["fault"]
    executor = "bench.attribution:make_noisy_executor" if noise else "recorded"
    t0 = time.perf_counter()
    res = run_sweep(
        path, executor=executor, trust_executor=True, candidates="all", strategy=strategy, base=rec, repeat=repeat
    )
    dt = time.perf_counter() - t0
    ranked = [e.seq for e in res.effects if e.kind == "call"]
    calls = [r.seq for r in rec.records if isinstance(r, (ToolRecord, ModelRecord))]
    rank = ranked.index(fault["seq"]) + 1 if fault["seq"] in ranked else None
    return {
        "task": task,
        "kind": kind,
        "step": step,
        "fault_seq": fault["seq"],
        "rank": rank,
        "top": ranked[:3],
        "top_effect": res.effects[0].effect if res.effects else None,
        "calls": len(calls),
        "replays": len(res.replays),
        "seconds": dt,
        "first_error": first_error_guess(rec) == fault["seq"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="resample", choices=("resample", "knockout"))
    ap.add_argument("--jobs", type=int, default=1, help="runs swept in parallel processes")
    ap.add_argument("--json", action="store_true", help="print the per-run results as JSON too")
    ap.add_argument("--write-samples", type=Path, default=None)
    ap.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="probability that a live answer goes wrong (a flaky executor; 0 = the sample agent's)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="replays per candidate call (sweep --repeat)")
    args = ap.parse_args(argv)
    os.environ["BENCH_NOISE"] = str(args.noise)

    t0 = time.perf_counter()
    runs = failing_runs()
    gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for task, kind, step, rec in runs:
            p = Path(tmp) / f"{task}-{kind}-step{step}.json"
            rec.save(p)
            jobs.append((str(p), task, kind, step, args.strategy, args.repeat, args.noise))
        t1 = time.perf_counter()
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as pool:
                results = list(pool.map(_one, jobs))
        else:
            results = [_one(j) for j in jobs]
        sweep_time = time.perf_counter() - t1
    if args.write_samples is not None:
        args.write_samples.mkdir(parents=True, exist_ok=True)
        for task, kind, step in SAMPLES:
            run = record_run(task, Fault(kind, step))
            path = args.write_samples / f"sample-agent-{task}-{kind}-step{step}.json"
            run.session.save(path, indent=True)
            print(f"wrote {path} (fault seq {run.recording.metadata['fault']['seq']})")

    n = len(results)
    top1 = sum(1 for r in results if r["rank"] == 1)
    top3 = sum(1 for r in results if r["rank"] is not None and r["rank"] <= 3)
    fe = sum(1 for r in results if r["first_error"])
    uniform = sum(1 / r["calls"] for r in results)
    print(f"attribution benchmark: {n} failing sample-agent runs, one planted fault each (generated in {gen:.2f} s)")
    who = f"a flaky executor (noise {args.noise:g})" if args.noise else "--executor recorded"
    print(
        f"sweep --strategy {args.strategy} --candidates all --repeat {args.repeat}, {who}: "
        f"{sum(r['replays'] for r in results)} replays in {sweep_time:.2f} s "
        f"({sweep_time / n * 1000:.0f} ms per run, {args.jobs} job(s))"
    )
    print()
    print(f"{'fault kind':<18} {'runs':>4}  {'top-1':>7}  {'top-3':>7}  {'first-error':>11}  {'uniform':>7}")
    for kind in (*FAULT_KINDS, None):
        rs = [r for r in results if kind is None or r["kind"] == kind]
        if not rs:
            continue
        k = len(rs)
        t1_ = sum(1 for r in rs if r["rank"] == 1) / k
        t3_ = sum(1 for r in rs if r["rank"] is not None and r["rank"] <= 3) / k
        fe_ = sum(1 for r in rs if r["first_error"]) / k
        un_ = sum(1 / r["calls"] for r in rs) / k
        print(f"{kind or 'all':<18} {k:>4}  {t1_:>7.1%}  {t3_:>7.1%}  {fe_:>11.1%}  {un_:>7.1%}")
    print()
    print(
        f"top-1 {top1}/{n} = {top1 / n:.1%} (target >= 90%), top-3 {top3}/{n} = {top3 / n:.1%}; "
        f"log-only baselines: first-error {fe / n:.1%}, uniform {uniform / n:.1%}"
    )
    misses = [r for r in results if r["rank"] != 1]
    for r in misses:
        print(
            f"  miss: {r['task']} {r['kind']} step {r['step']}: fault seq {r['fault_seq']} ranked "
            f"{r['rank']}, top {r['top']}"
        )
    if args.json:
        print(orjson.dumps(results, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
