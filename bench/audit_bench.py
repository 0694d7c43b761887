"""Benchmark of the audit on growing runs: it must scale linearly with the records.

    python bench/audit_bench.py [--sizes 2000,4000,8000,50000] [--repeat 3]

Each run is a chat agent's loop (model call → tool call → model call reading the result …)
whose requests carry a sliding window of the history, as real agents' do. For each size
it prints the median seconds of ``audit(recording)``, the median of the yardstick — one
``canonical_json`` dump of every record's arguments and result, a linear pass over the
same data — and their ratio. A linear audit keeps the ratio flat as the size grows; the
``growth`` column is the ratio at this size over the ratio at the smallest one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.analysis.audit import audit
from core.record.canonical import canonical_json
from core.record.recording import (
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
)


def make_run(records: int, window: int = 12) -> Recording:
    """A run of about ``records`` records: alternating model and tool calls, each request
    carrying the last ``window`` messages of the transcript."""
    transcript = [ChatMessage(role="system", content="agent"), ChatMessage(role="user", content="do the task")]
    out: list[ModelRecord | ToolRecord] = []
    seq = 0
    step = 0
    while seq < records:
        call = ToolCall(id=f"call-{step}", name="shell", arguments={"cmd": f"step {step}"})
        reply = ChatMessage(role="assistant", content=f"thinking {step}", tool_calls=[call])
        request = ModelRequest(messages=transcript[:2] + transcript[2:][-window:])
        out.append(ModelRecord(seq=seq, model="m", request=request, response=ModelResponse(message=reply)))
        seq += 1
        result = f"output of step {step}: " + "x" * 40
        out.append(
            ToolRecord(
                seq=seq, tool="shell", arguments=call.arguments, tool_call_id=call.id, result=ToolResult(content=result)
            )
        )
        seq += 1
        transcript += [reply, ChatMessage(role="tool", content=result, tool_call_id=call.id)]
        step += 1
    final = ChatMessage(role="assistant", content="done: " + transcript[-1].text)
    request = ModelRequest(messages=transcript[:2] + transcript[2:][-window:])
    out.append(ModelRecord(seq=seq, model="m", request=request, response=ModelResponse(message=final)))
    return Recording(records=out)


def yardstick(rec: Recording) -> None:
    for r in rec.records:
        if isinstance(r, ToolRecord):
            canonical_json(r.arguments)
            canonical_json(r.result.content)
        elif isinstance(r, ModelRecord):
            canonical_json([m.text for m in r.request.messages])


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,4000,8000,50000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'records':>8} {'audit s':>9} {'yardstick s':>12} {'ratio':>7} {'growth':>7}")
    first = None
    for n in (int(s) for s in args.sizes.split(",")):
        rec = make_run(n)
        a = median_seconds(lambda rec=rec: audit(rec), args.repeat)
        y = median_seconds(lambda rec=rec: yardstick(rec), args.repeat)
        ratio = a / y
        first = first or ratio
        print(f"{len(rec.records):>8} {a:>9.3f} {y:>12.3f} {ratio:>7.2f} {ratio / first:>7.2f}")


if __name__ == "__main__":
    main()
