"""Benchmark of the diffs: trace diff of two long runs, payload diff vs plain DeepDiff.

    python bench/diff_bench.py [--records 100000] [--payload-mb 10] [--repeat 3] [--skip-plain]

Prints figures and ratios (the numbers in docs/performance.md, section "Diffs"):

* **trace diff** of two runs of ``--records`` call records: a run against itself, against
  a copy with a handful of edits (3 changed results, an inserted and a removed call, changed
  arguments: 6 edits), against a branch that departs at the middle and never rejoins
  (every later call differs), and against the same 6 edits made to the base's own
  records (renumbered copies whose answers are the base's objects, as a replay's events
  share them). For each: the **alignment** alone (the identities of both
  runs aligned: ``core.analysis.diff._align_keys``), the **whole** ``trace_diff`` (ops,
  answers compared, first divergence), the plain reference path of both
  (``core.analysis.align.align`` and ``_trace_diff_plain``; skipped by ``--skip-plain``),
  and the yardstick measured in the same run: ``difflib.SequenceMatcher(None, ka, kb,
  autojunk=False).get_opcodes()`` on the same identities; wall and thread CPU medians. Targets (docs/performance.md,
  "Trace diff at 100k records"): alignment ≤ 50 ms, whole ≤ 300 ms at 100,000 records
  with 6 edits, i.e. ≤ 0.11x and ≤ 0.65x the yardstick's 0.46 s where they were set;
* **payload diff** of two ``--payload-mb`` JSON documents (a list of order-like objects)
  with a handful of changes, hash-guided vs plain ``DeepDiff`` with the same pinned
  options, (a) leaf edits only — both report the same findings — and (b) the same plus one
  object inserted near the front of the list — plain deepdiff then pairs every later item
  by position. Target: guided ≥ 10x faster.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from core.analysis.align import align
from core.analysis.diff import _align_keys, _identities, _trace_diff_plain, trace_diff
from core.analysis.payload_diff import payload_diff, plain_deepdiff
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)

#: the median CPU time of the thread (``time.thread_time``) of the last :func:`_timed`
#: call: less disturbed than the wall time by the load of a shared machine
LAST_CPU = [0.0]


def _timed(fn, repeat: int) -> tuple[float, object]:
    times = []
    cpu = []
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.thread_time()
        out = fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    LAST_CPU[0] = statistics.median(cpu)
    return statistics.median(times), out


# --------------------------------------------------------------------------- trace diff


def make_run(n: int, *, seed: int = 0, tag: str = "") -> list:
    """``n`` records alternating model calls and tool calls (turn number in the identity)."""
    rnd = random.Random(seed)
    recs = []
    for i in range(n):
        turn = i // 2
        if i % 2 == 0:
            r = ModelRecord(
                seq=i,
                model="bench-model",
                request=ModelRequest(messages=[ChatMessage(role="user", content=f"{tag}turn {turn}")]),
                response=ModelResponse(
                    message=ChatMessage(
                        role="assistant",
                        content="",
                        tool_calls=[ToolCall(id=f"c{turn}", name="lookup", arguments={"q": f"{tag}{turn}"})],
                    ),
                    usage=Usage(input_tokens=100, output_tokens=10),
                ),
            )
        else:
            r = ToolRecord(
                seq=i,
                tool="lookup",
                arguments={"q": f"{tag}{turn}"},
                tool_call_id=f"c{turn}",
                result=ToolResult(content={"value": rnd.randint(0, 10**6)}),
            )
        r.key = r.compute_key()
        recs.append(r)
    return recs


def bench_trace(n: int, repeat: int, skip_plain: bool = False) -> dict[str, dict[str, float]]:
    """Print the trace-diff rows; return, per second run (``identical``, ``a handful of
    edits``, ``departs at the middle``), its medians in seconds: ``difflib``, ``align``,
    ``whole``."""
    figures: dict[str, dict[str, float]] = {}
    print(f"== trace diff, {n:,} records per run (medians of {repeat}; ratios to difflib in the same run)")
    t = time.perf_counter()
    base = make_run(n)
    print(f"   (built two runs in {time.perf_counter() - t:.1f} s)")
    same = make_run(n)

    def six_edits(run: list) -> list:
        edited = list(run)
        for idx in (n // 5 | 1, n // 3 | 1, (2 * n) // 3 | 1):  # three changed tool results
            edited[idx] = edited[idx].model_copy(update={"result": ToolResult(content={"value": -1})})
        extra = ToolRecord(seq=0, tool="extra", arguments={"x": 1}, result=ToolResult(content="x"))
        extra.key = extra.compute_key()
        del edited[n // 2 | 1]  # one removed call
        edited.insert(n // 4, extra)  # one inserted call
        args_changed = edited[(3 * n) // 4 | 1].model_copy(update={"arguments": {"q": "other"}})
        args_changed.key = args_changed.compute_key()
        edited[(3 * n) // 4 | 1] = args_changed
        return [r.model_copy(update={"seq": i}) for i, r in enumerate(edited)]

    edited = six_edits(make_run(n))
    # a replay's events: records of their own (seqs renumbered) whose answers are the
    # base's own objects, as the replay engine's recorded answers are
    shared = six_edits(base)
    departed = base[: n // 2] + [
        r.model_copy(update={"seq": n // 2 + i}) for i, r in enumerate(make_run(n - n // 2, seed=1, tag="branch "))
    ]
    gc.collect()  # the runs just built: their collection is not the diff's
    cases = (
        ("identical", same),
        ("a handful of edits", edited),
        ("departs at the middle", departed),
        ("6 edits, answers shared", shared),
    )
    for label, other in cases:
        ka, kb = _identities(base), _identities(other)
        yard, _ = _timed(
            lambda ka=ka, kb=kb: difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes(), repeat
        )
        yard_cpu = LAST_CPU[0]
        al, _ = _timed(lambda ka=ka, kb=kb: _align_keys(ka, kb, 2000), repeat)
        al_cpu = LAST_CPU[0]
        sec, d = _timed(lambda other=other: trace_diff(base, other), repeat)
        sec_cpu = LAST_CPU[0]
        fd = d.first_divergence
        figures[label] = {"difflib": yard, "align": al, "whole": sec}
        print(f"   {label:<24} counts={d.counts}  first={fd.to_json() if fd else None}")
        line = (
            f"      difflib {yard * 1000:7.1f} ms | alignment {al * 1000:6.1f} ms ({al / yard:5.2f}x) | "
            f"whole trace_diff {sec * 1000:7.1f} ms ({sec / yard:5.2f}x, {2 * n / sec / 1e6:5.2f} M records/s)"
            f"\n      CPU: difflib {yard_cpu * 1000:7.1f} ms | alignment {al_cpu * 1000:6.1f} ms "
            f"({al_cpu / yard_cpu:5.2f}x) | whole {sec_cpu * 1000:7.1f} ms ({sec_cpu / yard_cpu:5.2f}x)"
        )
        if not skip_plain:
            p_al, _ = _timed(lambda ka=ka, kb=kb: align(ka, kb) if ka <= kb else align(kb, ka), repeat)
            p_sec, p = _timed(lambda other=other: _trace_diff_plain(base, other), repeat)
            same_result = p.ops == d.ops and p.counts == d.counts and p.first_divergence == d.first_divergence
            line += (
                f"\n      plain: alignment {p_al * 1000:6.1f} ms ({p_al / yard:5.2f}x), whole {p_sec * 1000:7.1f} ms "
                f"({p_sec / yard:5.2f}x); same ops and first divergence: {same_result}"
            )
        print(line)
    return figures


# --------------------------------------------------------------------------- payload diff


def make_payload(mb: float, seed: int = 0) -> dict:
    rnd = random.Random(seed)
    items = []
    size = 0
    i = 0
    target = mb * 1_000_000
    while size < target:
        item = {
            "order_id": f"A{i:07d}",
            "customer": {"id": f"C-{rnd.randint(1, 9999)}", "tier": rnd.choice(["gold", "silver"])},
            "items": [
                {"sku": f"SKU-{rnd.randint(1, 500)}", "qty": rnd.randint(1, 4), "price": round(rnd.random() * 100, 2)}
                for _ in range(rnd.randint(1, 3))
            ],
            "status": rnd.choice(["delivered", "shipped", "pending"]),
            "notes": "n" * rnd.randint(10, 60),
        }
        items.append(item)
        size += len(orjson.dumps(item)) + 1
        i += 1
    return {"orders": items, "meta": {"count": len(items), "source": "bench"}}


def bench_payload(mb: float, repeat: int, skip_plain: bool) -> None:
    a = make_payload(mb)
    size = len(orjson.dumps(a)) / 1e6
    n = len(a["orders"])
    b = copy.deepcopy(a)
    b["orders"][n // 10]["status"] = "refunded"
    b["orders"][n // 2]["items"][0]["qty"] = 99
    b["orders"][(9 * n) // 10]["customer"]["tier"] = "platinum"
    b["meta"]["source"] = "bench-2"
    del b["orders"][(3 * n) // 4]["notes"]
    c = copy.deepcopy(b)
    c["orders"].insert(5, {"order_id": "NEW", "status": "pending"})
    print(f"== payload diff, {size:.1f} MB, {n:,} orders")
    for label, other in (("5 leaf edits", b), ("5 leaf edits + 1 insertion at the front", c)):
        g_sec, g = _timed(lambda other=other: payload_diff(a, other), repeat)
        line = f"   {label:<42} guided {g_sec * 1000:8.1f} ms ({len(g)} changes)"
        if not skip_plain:
            p_sec, p = _timed(lambda other=other: plain_deepdiff(a, other), 1)
            same = "same findings" if p == g else f"{len(p)} findings"
            line += f" | plain DeepDiff {p_sec:7.2f} s ({same}) | ratio {p_sec / g_sec:6.1f}x"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--payload-mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--skip-plain", action="store_true", help="do not run plain DeepDiff, nor the plain trace diff (slow)"
    )
    ap.add_argument("--only", choices=("trace", "payload"))
    args = ap.parse_args()
    if args.only != "payload":
        bench_trace(args.records, args.repeat, args.skip_plain)
    if args.only != "trace":
        bench_payload(args.payload_mb, args.repeat, args.skip_plain)


if __name__ == "__main__":
    main()
