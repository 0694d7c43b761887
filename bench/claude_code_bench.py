"""Import speed of a large Claude Code session, generated from a real one's line shapes.

The session is the real ``jssoundrecorder_sonnet45.jsonl`` (0.5 MB, 36 model calls, 71
tool calls) repeated until the file reaches ``--mb`` megabytes, every copy with fresh
uuids, message ids and tool-use ids, chained to the one before it through a
``compact_boundary`` line and its summary — as Claude Code compacts a long session when
the context fills, so each model request holds at most one copy's history. Prints the
yardstick (orjson parsing every line, the floor of any JSON Lines reader), the whole
import, and the ratio and MB/s; the target (≥ 50 MB/s) belongs to the performance work.

    .venv/bin/python -m bench.claude_code_bench [--mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from core.importers import import_file

REAL = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "data"
    / "real_traces"
    / "claude_code"
    / "jssoundrecorder_sonnet45.jsonl"
)


def _renamed(value, k: int):
    """``value`` with every id-like string made unique to copy ``k``."""
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if key in ("uuid", "parentUuid", "id", "tool_use_id", "requestId") and isinstance(v, str):
                out[key] = f"{v}-{k}"
            else:
                out[key] = _renamed(v, k)
        return out
    if isinstance(value, list):
        return [_renamed(v, k) for v in value]
    return value


def generate(path: Path, mb: float) -> int:
    """Write a session of about ``mb`` megabytes to ``path``; return its size in bytes."""
    lines = [orjson.loads(x) for x in REAL.read_bytes().splitlines() if x.strip()]
    convo = [ln for ln in lines if ln.get("type") in ("user", "assistant")]
    target = int(mb * 1_000_000)
    size = 0
    last: str | None = None
    k = 0
    with path.open("wb") as f:
        while size < target:
            copy = [_renamed(ln, k) for ln in convo]
            if last is not None:
                boundary = {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"cb-{k}",
                    "parentUuid": None,
                    "logicalParentUuid": last,
                    "sessionId": convo[0]["sessionId"],
                    "timestamp": copy[0]["timestamp"],
                    "compactMetadata": {"trigger": "auto", "preTokens": 150000},
                }
                summary = {
                    "type": "user",
                    "uuid": f"cs-{k}",
                    "parentUuid": f"cb-{k}",
                    "isCompactSummary": True,
                    "sessionId": convo[0]["sessionId"],
                    "timestamp": copy[0]["timestamp"],
                    "message": {"role": "user", "content": f"This session is being continued (part {k})."},
                }
                copy[0]["parentUuid"] = f"cs-{k}"
                copy = [boundary, summary, *copy]
            for ln in copy:
                b = orjson.dumps(ln) + b"\n"
                f.write(b)
                size += len(b)
            last = copy[-1]["uuid"]
            k += 1
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "session.jsonl"
        size = generate(path, args.mb)
        data = path.read_bytes()
        floors, imports = [], []
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            for raw in data.splitlines():
                orjson.loads(raw)
            floors.append(time.perf_counter() - t)
            t = time.perf_counter()
            runs = import_file(path)
            imports.append(time.perf_counter() - t)
        floor, took = statistics.median(floors), statistics.median(imports)
        rec = runs[0].recording
        models = sum(1 for r in rec.records if r.kind == "model")
        print(f"session         {size / 1e6:.1f} MB, {len(data.splitlines())} lines, {models} model calls")
        print(f"orjson lines    {floor * 1000:9.1f} ms   (yardstick, median of {args.repeat})")
        print(
            f"import          {took * 1000:9.1f} ms   ×{took / floor:.1f} the yardstick, "
            f"{size / 1e6 / took:.1f} MB/s (target ≥ 50 MB/s, performance work)"
        )


if __name__ == "__main__":
    main()
