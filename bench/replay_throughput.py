"""Replay engine throughput: an intervention-free branch over synthetic recordings.

Prints, for recordings of 1k, 10k and 100k calls (half model calls, half tool calls,
bounded request windows, 10% repeated tool keys), the engine's records per second and
microseconds per call, the ratio of the per-call cost at each size to the 10k one, and,
within one run, the cost per call of the last tenth of the calls over the first tenth —
both must stay flat (matching is one dict lookup plus a cursor per key, never a scan).
"store s" is the time to write the replay's outputs to a workspace (serialize with the
RFC 8785 digest, compress, one transaction).

For comparison, vcrpy's cassette matching (``Cassette.play_response``, which scans the
cassette's interactions for each request) on the same numbers of interactions, if
vcrpy is installed (``pip install vcrpy``; offline, in memory). vcrpy at 100k is
extrapolated from its measured growth rather than run (it is quadratic).

Usage: ``.venv/bin/python bench/replay_throughput.py [--sizes 1000,10000,100000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.record.canonical import model_key, tool_key
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from core.replay.branch import new_branch
from core.replay.engine import ReplayEngine
from core.replay.replay_record import ReplayRecord
from core.workspace import Workspace

MODEL = "bench-model"
WITHIN: dict[int, float] = {}
TOOLS = [{"name": "fetch", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}]


def synthetic(n_calls: int) -> Recording:
    """``n_calls`` calls: model call k asks for tool ``fetch`` with id k (every 10th
    step repeats an earlier id, so keys repeat); requests hold the system prompt and the
    last four messages (bounded, as real agents trim), so size grows linearly."""
    system = ChatMessage(role="system", content="You fetch records and summarise them.")
    window: list[ChatMessage] = [ChatMessage(role="user", content="Fetch everything.")]
    records = []
    seq = 0
    for k in range(n_calls // 2):
        ident = k // 2 if k % 10 == 9 else k
        req = ModelRequest(messages=[system, *window[-4:]], tools=TOOLS, options={"temperature": 0})
        call = ToolCall(id=f"call_{k}", name="fetch", arguments={"id": ident})
        resp = ModelResponse(
            message=ChatMessage(role="assistant", content="", tool_calls=[call]),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=40, output_tokens=8),
        )
        records.append(
            ModelRecord(
                seq=seq,
                key=model_key(MODEL, req),
                model=MODEL,
                request=req,
                response=resp,
                run_id="bench",
                duration_seconds=0.4,
            )
        )
        seq += 1
        result = ToolResult(content={"id": ident, "name": f"record {ident}", "tags": ["a", "b"]})
        records.append(
            ToolRecord(
                seq=seq,
                key=tool_key("fetch", call.arguments),
                tool="fetch",
                arguments=call.arguments,
                tool_call_id=call.id,
                result=result,
                run_id="bench",
                duration_seconds=0.05,
            )
        )
        seq += 1
        window += [
            resp.message,
            ChatMessage(role="tool", content=str(result.content), tool_call_id=call.id, name="fetch"),
        ]
    return Recording(metadata={"bench": True}, records=records, digest="sha256:bench")


def time_engine(base: Recording, repeat: int) -> tuple[float, int, float]:
    """Best replay time, record count, and the time to store the outputs in a workspace
    (serialize, compress, one transaction)."""
    branch = new_branch(base, "synthetic.json", at=0)
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = ReplayEngine(base, branch).run()
        best = min(best, time.perf_counter() - t0)
        assert out.status == "completed" and out.comparability.level == "full" and out.first_divergence is None
        assert len(out.events.records) == len(base.records)
    # within one run: the cost per call of the first and the last tenth of the calls
    # (a matcher that scanned would make the last tenth slower)
    marks: list[float] = []
    tenth = max(len(base.records) // 10, 1)

    def mark(rec: object, source: str) -> None:
        if rec.seq % tenth == 0:  # type: ignore[attr-defined]
            marks.append(time.perf_counter())

    ReplayEngine(base, branch, on_event=mark).run()
    first, last = marks[1] - marks[0], marks[-1] - marks[-2]
    WITHIN[len(base.records)] = last / first
    with tempfile.TemporaryDirectory() as d, Workspace.open(d) as ws:
        record = ReplayRecord(id="rp-bench", base_digest="sha256:bench", branch_id=branch.id, policy=branch.policy)
        ws.create_replay(record)
        t0 = time.perf_counter()
        ws.save_replay_outputs(record, out, [])
        store = time.perf_counter() - t0
    return best, len(base.records), store


def time_vcrpy(n: int) -> float | None:
    try:
        from vcr.cassette import Cassette
        from vcr.request import Request
    except ImportError:
        return None
    from vcr.matchers import body, method, uri

    cas = Cassette("bench.yaml", match_on=(method, uri, body))
    reqs = []
    for i in range(n):
        r = Request("POST", f"https://api.example.com/v1/fetch?id={i}", f'{{"id": {i}}}', {})
        cas.append(r, {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": str(i)}})
        reqs.append(r)
    t0 = time.perf_counter()
    for r in reqs:
        cas.play_response(r)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vcr-sizes", default="250,500,1000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    print("Replay engine: intervention-free branch (generic chat loop), best of", args.repeat)
    print(
        f"{'calls':>8} {'records':>8} {'build s':>8} {'replay s':>9} {'records/s':>11} {'us/call':>8} "
        f"{'vs 10k':>7} {'last/first tenth':>17} {'store s':>8}"
    )
    per_call: dict[int, float] = {}
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        base = synthetic(n)
        build = time.perf_counter() - t0
        secs, nrec, store = time_engine(base, args.repeat)
        per_call[n] = secs / n * 1e6
        rows.append((n, nrec, build, secs, store))
        del base
    ref = per_call.get(10000) or per_call[sizes[0]]
    for n, nrec, build, secs, store in rows:
        print(
            f"{n:>8} {nrec:>8} {build:>8.2f} {secs:>9.3f} {nrec / secs:>11,.0f} {per_call[n]:>8.1f} "
            f"{per_call[n] / ref:>7.2f} {WITHIN[nrec]:>17.2f} {store:>8.2f}"
        )
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        print(f"per-call cost ratio {hi // 1000}k / {lo // 1000}k: {per_call[hi] / per_call[lo]:.2f} (flat = 1.0)")

    vcr_sizes = [int(s) for s in args.vcr_sizes.split(",") if s]
    if not vcr_sizes:
        return
    print()
    print("vcrpy Cassette.play_response on the same numbers of interactions (in memory, played in order)")
    measured = {}
    for n in vcr_sizes:
        secs = time_vcrpy(n)
        if secs is None:
            print("vcrpy is not installed: skipped (pip install vcrpy)")
            return
        measured[n] = secs
        print(f"{n:>8} interactions {secs:>9.3f} s {secs / n * 1e6:>10.1f} us/call")
    big = max(measured)
    # per-call cost grows linearly with n (each play scans the interactions before it)
    est = measured[big] * (100_000 / big) ** 2
    print(f"{100_000:>8} interactions ~{est:>8.0f} s (extrapolated, quadratic from {big // 1000}k; not run)")
    common = sorted(set(measured) & set(per_call))
    for n in common:
        print(
            f"at {n} calls the engine is {measured[n] / n * 1e6 / per_call[n]:.0f}x faster per call than "
            "vcrpy's matching"
        )
    est10k = measured[big] * (10_000 / big) ** 2
    if 10000 in per_call:
        print(
            f"at 10k calls vcrpy would need ~{est10k:.0f} s (extrapolated) against the engine's "
            f"{per_call[10000] * 10000 / 1e6:.2f} s"
        )


if __name__ == "__main__":
    main()
