"""App benchmark: first paint and keypress latency on synthetic recordings.

For each size (records; default 10k and 100k, add 1M with ``--sizes 10000,100000,1000000``)
this script writes a synthetic recording once (``bench/app_synth.py``; ~1 KB a record,
1M ≈ 1 GB, cached in ``bench/out/``) and then, in a fresh child process per size:

* ``orjson.loads`` of the file (the baseline of the target "first paint within 2x");
* **first paint**: interpreter start and imports (from the parent's spawn of the child)
  plus the time from starting to load until the first timeline line is painted,
  headless (``App.run_test``); the orjson baseline run in between is not counted. Split
  into launch, load (read + parse + validate + verify, via ``load_any`` as ``open``
  does), index (core.timeline) and app start-up;
* **keypress → repaint** latency for cursor down, page down and jump-to-end: median
  (and p90) of 50 presses each, measured from the key being posted until the table
  has repainted (the screen was refreshed after the key was handled). End is
  alternated with Home so every End press moves and repaints.

Prints one table and the ratios against the targets (first paint ≤ 2× orjson.loads,
latency < 50 ms). Peak RSS of the child is reported too. Run:

    .venv/bin/python bench/app_latency.py [--sizes 10000,100000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
PRESSES = 50


def child(path: str, spawn_wall: float) -> None:
    """Measure inside a fresh process; print one JSON line."""
    sys.path.insert(0, str(ROOT))
    import orjson

    from core.timeline import TimelineIndex
    from inspector.app import InspectorApp
    from inspector.cli.common import load_any
    from inspector.loader import LoadedRecording, _split_result
    from inspector.widgets.timeline_table import TimelineTable

    # launch = interpreter start + imports, measured from the parent's spawn
    launch_s = time.time() - spawn_wall

    data = Path(path).read_bytes()
    t = time.perf_counter()
    orjson.loads(data)
    orjson_s = time.perf_counter() - t
    del data

    painted: list[float] = []
    original = TimelineTable.render_line

    def render_line(self, y):  # noqa: ANN001 - instrumentation
        strip = original(self, y)
        painted.append(time.perf_counter())
        return strip

    TimelineTable.render_line = render_line  # type: ignore[method-assign]

    # the same path as `open` (inspector.loader.load_for_view), timed in two halves
    t0 = time.perf_counter()
    rec, notices = _split_result(load_any(Path(path), with_notices=True))
    load_s = time.perf_counter() - t0
    t_idx = time.perf_counter()
    index = TimelineIndex(rec)
    index_s = time.perf_counter() - t_idx
    loaded = LoadedRecording(Path(path), rec, index, notices)
    app = InspectorApp(loaded)
    result: dict = {}

    async def run() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            while not painted:
                await asyncio.sleep(0.001)
            first_paint_perf = painted[0]
            result["first_paint_in_process_s"] = first_paint_perf - t0
            result["first_paint_wall_s"] = launch_s + (first_paint_perf - t0)
            await pilot.pause(0.2)
            table = app.screen.query_one(TimelineTable)
            table.focus()
            await pilot.pause()

            async def measure(key: str, reset: str | None = None) -> list[float]:
                times = []
                for _ in range(PRESSES):
                    if reset:
                        await pilot.press(reset)
                        await pilot.pause()
                    n_before = len(painted)
                    t = time.perf_counter()
                    await pilot.press(key)
                    # wait until the table has repainted after the key, and that frame
                    # is complete (no new line for 5 ms); the time is that of its last line
                    while len(painted) == n_before:
                        await asyncio.sleep(0)
                    seen = -1
                    while seen != len(painted):
                        seen = len(painted)
                        await asyncio.sleep(0.005)
                    times.append(painted[-1] - t)
                return times

            await pilot.press("home")
            result["down_ms"] = [x * 1000 for x in await measure("down")]
            await pilot.press("home")
            result["pagedown_ms"] = [x * 1000 for x in await measure("pagedown")]
            result["end_ms"] = [x * 1000 for x in await measure("end", reset="home")]

    asyncio.run(run())
    result.update(
        records=len(loaded.index),
        bytes=Path(path).stat().st_size,
        orjson_s=orjson_s,
        launch_s=launch_s,
        index_s=index_s,
        load_s=load_s,
        peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    )
    print("RESULT " + json.dumps(result))


def summarize(r: dict) -> dict:
    def med(xs):
        return statistics.median(xs)

    def p90(xs):
        return sorted(xs)[int(0.9 * (len(xs) - 1))]

    return {
        "records": r["records"],
        "mb": r["bytes"] / 1e6,
        "orjson_s": r["orjson_s"],
        "launch_s": r["launch_s"],
        "load_s": r["load_s"],
        "index_s": r["index_s"],
        "first_paint_s": r["first_paint_wall_s"],
        "first_paint_in_process_s": r["first_paint_in_process_s"],
        "ratio_vs_orjson": r["first_paint_wall_s"] / r["orjson_s"],
        "down_ms": med(r["down_ms"]), "down_p90_ms": p90(r["down_ms"]),
        "pagedown_ms": med(r["pagedown_ms"]), "pagedown_p90_ms": p90(r["pagedown_ms"]),
        "end_ms": med(r["end_ms"]), "end_p90_ms": p90(r["end_ms"]),
        "peak_rss_gb": r["peak_rss_gb"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated record counts")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--child", nargs=2, metavar=("FILE", "SPAWN_WALL"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], float(args.child[1]))
        return 0
    sys.path.insert(0, str(ROOT))
    from bench.app_synth import write_synthetic

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        path = write_synthetic(OUT / f"synthetic-{n}.json", n)
        spawn = time.time()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(path), repr(spawn)],
            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "TEXTUAL": ""},
        )
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            print(f"size {n}: child failed ({proc.returncode})\n{proc.stderr[-3000:]}", file=sys.stderr)
            return 1
        rows.append(summarize(json.loads(line[7:])))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'records':>9} {'MB':>7} {'orjson s':>9} {'load s':>7} {'index s':>8} {'1st paint s':>11} "
          f"{'×orjson':>8} {'down ms':>8} {'pgdn ms':>8} {'end ms':>7} {'RSS GB':>7}")
    for r in rows:
        print(f"{r['records']:>9,} {r['mb']:>7.0f} {r['orjson_s']:>9.2f} {r['load_s']:>7.2f} {r['index_s']:>8.2f} "
              f"{r['first_paint_s']:>11.2f} {r['ratio_vs_orjson']:>8.1f} {r['down_ms']:>8.1f} {r['pagedown_ms']:>8.1f} "
              f"{r['end_ms']:>7.1f} {r['peak_rss_gb']:>7.1f}")
    print("targets: first paint ≤ 2.0 × orjson.loads; keypress → repaint median < 50 ms")
    for r in rows:
        lat_ok = max(r["down_ms"], r["pagedown_ms"], r["end_ms"]) < 50
        print(f"  {r['records']:>9,}: first paint {r['ratio_vs_orjson']:.1f}× orjson "
              f"({'meets' if r['ratio_vs_orjson'] <= 2 else 'MISSES'} target); latency "
              f"{'meets' if lat_ok else 'MISSES'} target (p90 down {r['down_p90_ms']:.1f}, "
              f"pgdn {r['pagedown_p90_ms']:.1f}, end {r['end_p90_ms']:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
