"""App benchmark: first paint and keypress latency on synthetic recordings.

For each size (records; default 10k and 100k, add 1M with ``--sizes 10000,100000,1000000``)
this script writes a synthetic recording once (``bench/app_synth.py``; ~1 KB a record,
1M ≈ 1 GB, cached in ``bench/out/``) and then, in a fresh child process per size:

* ``orjson.loads`` of the file, in its own fresh process (the baseline of the target
  "first paint within 2x");
* **first paint**: interpreter start and imports (from the parent's spawn of the child)
  plus the time from starting to load until the first timeline line is painted,
  headless (``App.run_test``). The
  load is ``inspector.loader.load_for_view``, exactly as ``open`` does it: files of
  64 MB and more are *fast-opened* (parse + raw columnar index, full verification in a
  background worker), smaller ones are verified before the first paint;
* **verified**: when the background verification of a fast-opened file finished;
* **keypress → repaint** latency for cursor down, page down and jump-to-end: median
  (and p90) of 50 presses each, once the recording is verified (and, for a fast-opened
  file, cursor down also *during* the verification, which competes for the GIL), measured from the key being posted until the table
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


def _stamped(cls: type, method: str) -> list[float]:
    """Wrap ``cls.method`` (a widget's line or lines renderer) so that each call appends
    its end time (``time.perf_counter``) to the list returned."""
    stamps: list[float] = []
    original = getattr(cls, method)

    def wrapper(self, *args):
        out = original(self, *args)
        stamps.append(time.perf_counter())
        return out

    setattr(cls, method, wrapper)
    return stamps


async def _drawn(stamps: list[float], before: int) -> float:
    """Wait until ``stamps`` grew past ``before`` and then drew nothing for 5 ms (the
    frame is complete); the time of its last stamp."""
    while len(stamps) == before:
        await asyncio.sleep(0)
    seen = -1
    while seen != len(stamps):
        seen = len(stamps)
        await asyncio.sleep(0.005)
    return stamps[-1]


def child(path: str, spawn_wall: float) -> None:
    """Measure inside a fresh process; print one JSON line."""
    sys.path.insert(0, str(ROOT))
    from inspector import set_frame_rate

    set_frame_rate()  # as the console script does, before Textual is imported
    from inspector.app import InspectorApp
    from inspector.loader import load_for_view
    from inspector.widgets.timeline_table import TimelineTable

    # launch = interpreter start + imports, measured from the parent's spawn
    launch_s = time.time() - spawn_wall

    # time spent building the raw index (fast open), to split the load figure
    from core.analysis.timeline import TimelineIndex

    index_times: list[float] = []
    original_from_raw = TimelineIndex.from_raw.__func__

    def timed_from_raw(cls, *a, **k):
        t = time.perf_counter()
        out = original_from_raw(cls, *a, **k)
        index_times.append(time.perf_counter() - t)
        return out

    TimelineIndex.from_raw = classmethod(timed_from_raw)  # type: ignore[method-assign]

    from inspector.widgets.json_tree import JsonTree

    # when each line of the table, and each page of the detail pane's tree, was drawn
    painted = _stamped(TimelineTable, "render_line")
    tree_painted = _stamped(JsonTree, "render_lines")

    # the same path as `open`: inspector.loader.load_for_view (fast open for big files)
    t0 = time.perf_counter()
    loaded = load_for_view(Path(path))
    load_s = time.perf_counter() - t0
    fast = loaded.verify is not None
    app = InspectorApp(loaded)
    result: dict = {"fast_open": fast, "raw_index_s": sum(index_times)}

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

            screen = app.screen
            detail_times: dict[str, list[float]] = {}

            async def measure(key: str, reset: str | None = None) -> list[float]:
                times = []
                for _ in range(PRESSES):
                    if reset:
                        await pilot.press(reset)
                        await pilot.pause()
                        await screen.detail_settled()
                    n_before = len(painted)
                    trees_before = len(tree_painted)
                    t = time.perf_counter()
                    await pilot.press(key)
                    # the table repainted after the key, that frame complete
                    times.append(await _drawn(painted, n_before) - t)
                    # and the detail pane showing the record under the cursor, drawn
                    await screen.detail_settled()
                    detail_times.setdefault(key, []).append(await _drawn(tree_painted, trees_before) - t)
                return times

            if fast and loaded.verify is not None:
                # while the background verification runs (it competes for the GIL)
                await pilot.press("home")
                result["down_during_verify_ms"] = [x * 1000 for x in await measure("down")]
            while loaded.verify is not None and app.load_error is None:
                await asyncio.sleep(0.05)
            result["verified_s"] = time.perf_counter() - t0
            await pilot.pause(0.2)
            await pilot.press("home")
            result["down_ms"] = [x * 1000 for x in await measure("down")]
            await pilot.press("home")
            result["pagedown_ms"] = [x * 1000 for x in await measure("pagedown")]
            result["end_ms"] = [x * 1000 for x in await measure("end", reset="home")]
            # from the key to the detail pane drawn (the presses once verified)
            result["detail_ms"] = [x * 1000 for k in ("down", "pagedown", "end") for x in detail_times[k][-PRESSES:]]

    asyncio.run(run())
    result.update(
        records=len(loaded.index),
        bytes=Path(path).stat().st_size,
        launch_s=launch_s,
        load_s=load_s,
        peak_rss_gb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    )
    print("RESULT " + json.dumps(result))


BASELINE = (
    "import sys, time, orjson\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "t = time.perf_counter(); orjson.loads(data); print(time.perf_counter() - t)\n"
)


def orjson_baseline(path: Path) -> float:
    """``orjson.loads`` of the file in a fresh process (cold, like the app's own parse)."""
    out = subprocess.run([sys.executable, "-c", BASELINE, str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def summarize(r: dict) -> dict:
    def med(xs):
        return statistics.median(xs)

    def p90(xs):
        return sorted(xs)[int(0.9 * (len(xs) - 1))]

    return {
        "records": r["records"],
        "mb": r["bytes"] / 1e6,
        "orjson_s": r["orjson_s"],
        "fast_open": r["fast_open"],
        "launch_s": r["launch_s"],
        "load_s": r["load_s"],
        "raw_index_s": r["raw_index_s"],
        "verified_s": r["verified_s"],
        "down_during_verify_ms": med(r["down_during_verify_ms"]) if "down_during_verify_ms" in r else None,
        "first_paint_s": r["first_paint_wall_s"],
        "first_paint_in_process_s": r["first_paint_in_process_s"],
        "ratio_vs_orjson": r["first_paint_wall_s"] / r["orjson_s"],
        "down_ms": med(r["down_ms"]),
        "down_p90_ms": p90(r["down_ms"]),
        "pagedown_ms": med(r["pagedown_ms"]),
        "pagedown_p90_ms": p90(r["pagedown_ms"]),
        "end_ms": med(r["end_ms"]),
        "end_p90_ms": p90(r["end_ms"]),
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
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "TEXTUAL": ""},
            check=False,
        )
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            print(f"size {n}: child failed ({proc.returncode})\n{proc.stderr[-3000:]}", file=sys.stderr)
            return 1
        result = json.loads(line[7:])
        result["orjson_s"] = orjson_baseline(path)
        rows.append(summarize(result))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'records':>9} {'MB':>6} {'fast':>4} {'orjson s':>8} {'launch s':>8} {'load s':>7} {'raw idx s':>9} {'1st paint s':>11} "
        f"{'×orjson':>7} {'verified s':>10} {'down ms':>7} {'pgdn ms':>7} {'end ms':>6} {'down/verif':>10} {'RSS GB':>6}"
    )
    for r in rows:
        dv = "-" if r["down_during_verify_ms"] is None else f"{r['down_during_verify_ms']:.1f}"
        print(
            f"{r['records']:>9,} {r['mb']:>6.0f} {'yes' if r['fast_open'] else 'no':>4} {r['orjson_s']:>8.2f} "
            f"{r['launch_s']:>8.2f} {r['load_s']:>7.2f} {r['raw_index_s']:>9.2f} {r['first_paint_s']:>11.2f} {r['ratio_vs_orjson']:>7.1f} "
            f"{r['verified_s']:>10.1f} {r['down_ms']:>7.1f} {r['pagedown_ms']:>7.1f} {r['end_ms']:>6.1f} {dv:>10} "
            f"{r['peak_rss_gb']:>6.1f}"
        )
    print("targets: first paint ≤ 2.0 × orjson.loads; keypress → repaint median < 50 ms")
    for r in rows:
        lat_ok = max(r["down_ms"], r["pagedown_ms"], r["end_ms"]) < 50
        print(
            f"  {r['records']:>9,}: first paint {r['ratio_vs_orjson']:.1f}× orjson "
            f"({'meets' if r['ratio_vs_orjson'] <= 2 else 'MISSES'} target); latency "
            f"{'meets' if lat_ok else 'MISSES'} target (p90 down {r['down_p90_ms']:.1f}, "
            f"pgdn {r['pagedown_p90_ms']:.1f}, end {r['end_p90_ms']:.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
