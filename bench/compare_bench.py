"""App benchmark: the compare screen on two big runs.

Two synthetic runs of ``--records`` records each (default 10,000; the generator of
``bench/replay_throughput.py``: half model calls, half tool calls), the second a copy with
every 50th tool result changed and every 500th record left out — so the alignment has
changed, removed and inserted rows all along. Both are loaded in the app first (the
target counts from the key press, with both runs in memory). Measured, medians of
``--repeat``:

* ``open s``: from the press of ``C``'s action (the compare screen pushed with the two
  loaded runs) until the table's first lines *with the alignment* are painted (the
  alignment and the metrics run in a worker; the screen itself, "aligning…", paints
  first: ``first paint``); target ≤ 1 s. The yardstick, in the same run: opening the
  second run's own timeline (the index built and painted);
* ``down → repaint``: ``down`` pressed every ``--interval`` seconds (default 0.035, a
  held key's auto-repeat) by another thread through the app's driver, as a terminal's
  keys arrive, from when each key was due until a line with the cursor past it is
  painted (the diff pane follows each move); target p95 ≤ 50 ms. The yardstick: the
  same presses on the timeline.

    .venv/bin/python bench/compare_bench.py [--records 10000] [--presses 200] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.branch_tree_bench import pct, type_keys  # noqa: E402
from core.record.recording import Recording, ToolResult  # noqa: E402

SIZE = (160, 45)


def pair(records: int) -> tuple[Recording, Recording]:
    """The base and its altered copy (module docstring)."""
    from bench.replay_throughput import synthetic

    base = synthetic(records)
    kept = []
    for i, r in enumerate(base.records):
        if i % 500 == 499:
            continue
        if r.kind == "tool" and i % 100 == 1:
            r = r.model_copy(update={"result": ToolResult(content={"changed": i})})
        kept.append(r)
    other = base.model_copy(update={"records": kept})
    return base, other


def measure(records: int, presses: int, interval: float) -> dict[str, Any]:
    from inspector.app import InspectorApp
    from inspector.loader import LoadedRecording
    from inspector.screens.compare import CompareScreen
    from inspector.screens.timeline import TimelineScreen
    from inspector.widgets.compare_table import CompareTable
    from inspector.widgets.timeline_table import TimelineTable

    base, other = pair(records)
    a = LoadedRecording.from_recording(base, Path("base.json"))
    b = LoadedRecording.from_recording(other, Path("other.json"))
    painted: list[tuple[float, int]] = []
    aligned: list[float] = []  # lines of the compare table painted with the alignment
    originals = {cls: cls.render_line for cls in (TimelineTable, CompareTable)}

    def instrument(cls: Any) -> None:
        original = originals[cls]

        def render_line(self: Any, y: int) -> Any:
            strip = original(self, y)
            now = time.perf_counter()
            painted.append((now, self.cursor))
            if isinstance(self, CompareTable) and self.comparison is not None and y > 0:
                aligned.append(now)
            return strip

        cls.render_line = render_line

    for cls in originals:
        instrument(cls)
    app = InspectorApp(a, workspace=Path("/nonexistent-workspace"))
    result: dict[str, Any] = {"records": len(base.records), "other_records": len(other.records)}

    async def wait_painted(since: float, timeout: float = 30.0) -> float:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            after = [t for t, _ in painted if t >= since]
            if after:
                return min(after) - since
            await asyncio.sleep(0.001)
        raise TimeoutError("nothing painted")

    async def typed(table: Any, keys: int) -> list[float]:
        latencies, _ = await type_keys(app, painted, table.cursor, interval, keys, threading.Event())
        return latencies

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            timeline = app.screen.query_one(TimelineTable)
            timeline.focus()
            await pilot.pause()
            result["timeline_ms"] = await typed(timeline, presses)
            # the yardstick: the other run's own timeline
            painted.clear()
            t = time.perf_counter()
            app.push_screen(TimelineScreen(LoadedRecording.from_recording(other, Path("other.json"))))
            result["timeline_open_s"] = await wait_painted(t)
            await pilot.pause()
            app.pop_screen()
            await pilot.pause()
            painted.clear()
            t = time.perf_counter()
            aligned.clear()
            app.push_screen(CompareScreen(a, b))
            result["first_paint_s"] = await wait_painted(t)
            end = time.perf_counter() + 60
            while not aligned and time.perf_counter() < end:
                await asyncio.sleep(0.001)
            if not aligned:
                raise TimeoutError("the alignment was never painted")
            result["open_s"] = min(aligned) - t
            await pilot.pause()
            table = app.screen.query_one(CompareTable)
            await pilot.press("home")
            await pilot.pause()
            result["compare_ms"] = await typed(table, presses)
            aligned_runs = table.comparison
            assert aligned_runs is not None  # painted with the alignment above
            result["rows"] = len(aligned_runs.rows)
            result["differences"] = len(aligned_runs.differences)

    asyncio.run(run())
    for cls, original in originals.items():
        cls.render_line = original
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--presses", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.035)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    runs = [measure(args.records, args.presses, args.interval) for _ in range(args.repeat)]
    med = statistics.median

    def p(name: str, q: float) -> float:
        return med(pct(r[name], q) for r in runs)

    summary = {
        "records": runs[0]["records"],
        "other_records": runs[0]["other_records"],
        "rows": runs[0]["rows"],
        "differences": runs[0]["differences"],
        "open_s": med(r["open_s"] for r in runs),
        "first_paint_s": med(r["first_paint_s"] for r in runs),
        "timeline_open_s": med(r["timeline_open_s"] for r in runs),
        "compare_p50_ms": p("compare_ms", 0.5),
        "compare_p95_ms": p("compare_ms", 0.95),
        "timeline_p50_ms": p("timeline_ms", 0.5),
        "timeline_p95_ms": p("timeline_ms", 0.95),
    }
    summary["open_vs_timeline"] = summary["open_s"] / summary["timeline_open_s"]
    summary["p95_vs_timeline"] = summary["compare_p95_ms"] / summary["timeline_p95_ms"]
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    s = summary
    print(
        f"two runs of {s['records']:,} and {s['other_records']:,} records: {s['rows']:,} rows, "
        f"{s['differences']:,} differences (medians of {args.repeat})"
    )
    print(
        f"open compare        {s['open_s']:.3f} s, aligned rows painted; the screen itself at "
        f"{s['first_paint_s']:.3f} s   (the other run's timeline: {s['timeline_open_s']:.3f} s, "
        f"× {s['open_vs_timeline']:.2f})"
    )
    print(
        f"down → repaint      p50 {s['compare_p50_ms']:.1f} ms  p95 {s['compare_p95_ms']:.1f} ms   "
        f"(timeline: p50 {s['timeline_p50_ms']:.1f}  p95 {s['timeline_p95_ms']:.1f} ms, × {s['p95_vs_timeline']:.2f})"
    )
    ok_open = "meets" if s["open_s"] <= 1.0 else "misses"
    ok_keys = "meets" if s["compare_p95_ms"] <= 50 else "misses"
    print(f"targets: open ≤ 1 s — {ok_open}; keypress p95 ≤ 50 ms — {ok_keys}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
