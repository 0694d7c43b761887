"""Replay engine throughput: an intervention-free branch over synthetic recordings.

Prints, for recordings of 1k, 10k and 100k calls (half model calls, half tool calls,
bounded request windows, 10% repeated tool keys), the engine's records per second and
microseconds per call, the ratio of the per-call cost at each size to the 10k one, and,
within one run, the cost per call of the last tenth of the calls over the first tenth —
both must stay flat (matching is one dict lookup plus a cursor per key, never a scan).
"store s" is the time to write the replay's outputs to a workspace (serialize with the
RFC 8785 digest, compress, one transaction).

"Replay at 20k calls" (``--calls``, default 20,000; ``0`` skips it): a run whose chat
history grows — each step a model call whose request repeats the history up to a 64 KB
context window (the system prompt and the task first), then a tool call; 30% of tool
results 2–20 KB, the rest 200–500 B; every tenth tool call repeats an earlier one's
arguments — replayed on an intervention-free branch three ways: the generic chat loop
(it re-issues the recorded request objects), an executor agent that keeps its own
history (its own message objects, the recorded responses' messages, a request built for
each call, as the sample agent does) and one that rebuilds every message from JSON for
each call (an HTTP client's shape: what the model-API proxy hands the engine). Its
yardstick, measured in the same run: ``canonical_hash`` of each call's key object
(``{"kind": "model", "model", **request.identity()}`` / the tool call's), the objects
built beforehand — canonical-hashing the same requests. Printed: medians of ``--repeat``
runs and their ratios to the yardstick (target ≤ 2x), and what the agents cost on their
own (their loop against a runtime that answers from the recording, no matching).

For comparison, vcrpy's cassette matching (``Cassette.play_response``, which scans the
cassette's interactions for each request) on the same numbers of interactions, if
vcrpy is installed (``pip install vcrpy``; offline, in memory). vcrpy at 100k is
extrapolated from its measured growth rather than run (it is quadratic).

Usage: ``.venv/bin/python bench/replay_throughput.py [--sizes 1000,10000,100000] [--calls 20000]
[--repeat 3]`` (``--sizes ""`` and ``--vcr-sizes ""`` skip those parts).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.record.canonical import canonical_hash, canonical_json, model_key, tool_key
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
from core.replay.branch import new_branch, resolve_branch
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


# --------------------------------------------------------------------------- replay at 20k calls

WINDOW = 64 * 1024
OPTIONS: dict[str, Any] = {"temperature": 0.2, "max_tokens": 1024}
WORDS = (
    "the a of to and order customer refund parcel invoice status pending shipped record "
    "summary item price total address carrier tracking delayed returned account"
).split()


def _text(rng: random.Random, size: int) -> str:
    """Plain words, about ``size`` characters (nothing redaction would touch)."""
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def growing(n_calls: int, seed: int = 17) -> Recording:
    """``n_calls`` calls (half model, half tool) of an agent whose history grows: each
    request holds the system prompt, the task and the longest run of the latest messages
    within :data:`WINDOW` bytes of content; 30% of tool results are 2–20 KB, the rest
    200–500 B; every tenth tool call repeats an earlier call's arguments. Messages are
    shared between requests, as a loaded recording shares them."""
    rng = random.Random(seed)
    system = ChatMessage(role="system", content="You fetch records and summarise them. " + _text(rng, 800))
    task = ChatMessage(role="user", content="Fetch everything about order 17 and summarise it.")
    history: list[ChatMessage] = []
    sizes: list[int] = []
    records: list[Any] = []
    for k in range(n_calls // 2):
        total, j = 0, len(history)
        while j > 0 and total + sizes[j - 1] <= WINDOW:
            j -= 1
            total += sizes[j]
        req = ModelRequest(messages=[system, task, *history[j:]], tools=TOOLS, options=OPTIONS)
        ident = k // 2 if k % 10 == 9 else k
        call = ToolCall(id=f"call_{k}", name="fetch", arguments={"id": ident})
        msg = ChatMessage(role="assistant", content=_text(rng, 120), tool_calls=[call])
        resp = ModelResponse(
            message=msg, finish_reason="tool_calls", usage=Usage(input_tokens=total // 4, output_tokens=30)
        )
        seq = len(records)
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
        content = _text(rng, rng.randint(2000, 20000) if rng.random() < 0.3 else rng.randint(200, 500))
        records.append(
            ToolRecord(
                seq=seq + 1,
                key=tool_key("fetch", call.arguments),
                tool="fetch",
                arguments=call.arguments,
                tool_call_id=call.id,
                result=ToolResult(content=content),
                run_id="bench",
                duration_seconds=0.05,
            )
        )
        history += [msg, ChatMessage(role="tool", content=content, tool_call_id=call.id, name="fetch")]
        sizes += [len(msg.content or "") + 40, len(content) + 40]
    return Recording(metadata={"bench": True}, records=records, digest="sha256:bench")


class WindowAgent:
    """An executor whose agent drives the growing run: the base's windows, rebuilt from
    its own history. ``fresh``: it keeps its history as JSON and validates every message
    anew for each call (an HTTP client's shape); otherwise it keeps message objects (its
    own system and task messages, the responses' messages, its own tool messages)."""

    def __init__(self, base: Recording, *, fresh: bool) -> None:
        self.base = base
        self.fresh = fresh

    def run(self, runtime: Any, task: Any) -> Any:
        first = next(r for r in self.base.records if type(r) is ModelRecord)
        own: list[Any] = [ChatMessage(role=m.role, content=m.content) for m in first.request.messages[:2]]
        if self.fresh:
            own = [m.to_json_obj() for m in own]
        history: list[Any] = []
        resp: Any = None
        for r in self.base.records:
            if type(r) is ModelRecord:
                n = len(r.request.messages) - 2
                window = own + (history[len(history) - n :] if n else [])
                if self.fresh:
                    req = ModelRequest.model_validate({"messages": window, "tools": TOOLS, "options": OPTIONS})
                else:
                    req = ModelRequest(messages=window, tools=TOOLS, options=OPTIONS)
                resp = runtime.call_model(MODEL, req)
                history.append(resp.message.to_json_obj() if self.fresh else resp.message)
            else:
                tc = resp.message.tool_calls[0]
                res = runtime.call_tool(tc.name, tc.arguments, tc.id)
                tm = ChatMessage(role="tool", content=res.content, tool_call_id=tc.id, name=tc.name)
                history.append(tm.to_json_obj() if self.fresh else tm)
        return "done"

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        raise RuntimeError("the benchmark's agent answers nothing live")

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        raise RuntimeError("the benchmark's agent answers nothing live")


class _Playback:
    """A runtime answering by position from the recording (no matching): what the agent's
    own loop costs."""

    def __init__(self, base: Recording) -> None:
        self.records: list[Any] = list(base.records)
        self.i = 0

    def call_model(self, model: str, request: ModelRequest) -> ModelResponse:
        r = self.records[self.i]
        self.i += 1
        return r.response  # type: ignore[no-any-return]  # a model record's

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        r = self.records[self.i]
        self.i += 1
        return r.result  # type: ignore[no-any-return]  # a tool record's


def _timed(fn: Any) -> float:
    was = gc.isenabled()
    gc.disable()  # as the engine runs (it pauses the collector); the yardstick alike
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        if was:
            gc.enable()


def replay_at_scale(n_calls: int, repeat: int) -> dict[str, Any]:
    """Print the "Replay at 20k calls" table (module docstring); return its medians:
    ``yardstick`` (seconds), ``seconds`` and ``ratios`` (per run name, the medians of the
    per-run ratios to the yardstick)."""
    t0 = time.perf_counter()
    base = growing(n_calls)
    build = time.perf_counter() - t0
    # as the product does before a replay: the base redacted (a saved recording redacts to
    # itself) and the branch validated against it once
    branch = resolve_branch(None, new_branch(base, "growing.json", at=0), base)
    calls: list[Any] = list(base.records)
    objects: list[dict[str, Any]] = [
        {"kind": "model", "model": r.model, **r.request.identity()}
        if type(r) is ModelRecord
        else {"kind": "tool", "tool": r.tool, "arguments": r.arguments}
        for r in calls
    ]
    n_models = sum(1 for r in base.records if type(r) is ModelRecord)
    sample = [o for o in objects[:2000] if o["kind"] == "model"]
    avg_kb = sum(len(canonical_json(o)) for o in sample) / len(sample) / 1024

    def yardstick() -> None:
        for o in objects:
            canonical_hash(o)

    def generic() -> None:
        out = ReplayEngine(base, branch).run()
        assert out.status == "completed" and out.comparability.level == "full", out.error

    def agent(fresh: bool) -> Any:
        def go() -> None:
            out = ReplayEngine(base, branch, executor=WindowAgent(base, fresh=fresh)).run()
            assert out.status == "completed" and out.comparability.level == "full", out.error
            assert out.first_divergence is None and len(out.events.records) == len(base.records)

        return go

    def alone(fresh: bool) -> Any:
        return lambda: WindowAgent(base, fresh=fresh).run(_Playback(base), None)

    runs: dict[str, Any] = {
        "generic chat loop (the recorded request objects)": generic,
        "executor agent keeping its own history": agent(False),
        "executor agent rebuilding every message from JSON": agent(True),
        "  (that agent alone: its loop, no matching)": alone(True),
        "  (the agent keeping its history, alone)": alone(False),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    yard: list[float] = []
    for _ in range(repeat):
        y = _timed(yardstick)
        yard.append(y)
        for name, fn in runs.items():
            t = _timed(fn)
            times[name].append(t)
            ratios[name].append(t / y)
    print()
    print(
        f"Replay at {n_calls:,} calls: growing history, {WINDOW // 1024} KB window "
        f"({n_models:,} model requests, ~{avg_kb:.0f} KB of canonical JSON each in the first {len(sample):,}); "
        f"built in {build:.1f} s; medians of {repeat}"
    )
    print(f"{'':<54} {'seconds':>8} {'us/call':>8} {'x yardstick':>12}")
    ym = statistics.median(yard)
    print(f"{'yardstick: canonical_hash of each call key object':<54} {ym:>8.3f} {ym / n_calls * 1e6:>8.1f} {1:>12.2f}")
    for name in runs:
        t = statistics.median(times[name])
        print(f"{name:<54} {t:>8.3f} {t / n_calls * 1e6:>8.1f} {statistics.median(ratios[name]):>12.2f}")
    print("target: replay <= 2x the yardstick (ratios are medians of per-run ratios)")
    return {
        "yardstick": statistics.median(yard),
        "seconds": {name: statistics.median(times[name]) for name in runs},
        "ratios": {name: statistics.median(ratios[name]) for name in runs},
    }


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


#: microseconds per call of the engine at each size of the first part (for vcrpy's comparison)
PER_CALL: dict[int, float] = {}


def throughput(sizes: list[int], repeat: int) -> None:
    """The first part: the engine's throughput on bounded windows (module docstring)."""
    print("Replay engine: intervention-free branch (generic chat loop), best of", repeat)
    print(
        f"{'calls':>8} {'records':>8} {'build s':>8} {'replay s':>9} {'records/s':>11} {'us/call':>8} "
        f"{'vs 10k':>7} {'last/first tenth':>17} {'store s':>8}"
    )
    per_call = PER_CALL
    rows = []
    for n in sizes:
        t0 = time.perf_counter()
        base = synthetic(n)
        build = time.perf_counter() - t0
        secs, nrec, store = time_engine(base, repeat)
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


def vcrpy_part(vcr_sizes: list[int], per_call: dict[int, float]) -> None:
    """vcrpy's matching on the same numbers of interactions (module docstring)."""
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vcr-sizes", default="250,500,1000")
    ap.add_argument("--calls", type=int, default=20000, help="calls of the 'Replay at 20k calls' part (0: skip)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if sizes:
        throughput(sizes, args.repeat)
    if args.calls:
        replay_at_scale(args.calls, args.repeat)
    vcrpy_part([int(s) for s in args.vcr_sizes.split(",") if s], PER_CALL)


if __name__ == "__main__":
    main()
