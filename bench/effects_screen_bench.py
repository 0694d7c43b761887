"""App benchmark: the effects screen on the stored ranking of many replays.

A workspace holds a base (the bundled sample-agent run) and the ranking of ``--replays``
synthetic replays of it (``bench/effects_ranking.py``'s observations, ranked by
:func:`core.effects.ranking.rank_effects` and stored as ``effects`` and ``sweep`` store
them), spread over ``--candidates`` target calls — and, the worst case, one candidate per
replay. Measured, medians of ``--repeat``:

* ``paint s``: from the press of ``W``'s action (the effects screen pushed) until the
  table's lines with the ranking are painted (the ranking read from the workspace in a
  worker, the table, the detail pane and the chart drawn); target ≤ 300 ms at 10k
  replays. The yardstick, in the same run: the same screen over a ranking of 10 replays.
* ``down → repaint``: ``down`` pressed every ``--interval`` seconds by another thread, as
  a terminal's keys arrive, until a line with the cursor past it is painted (the detail
  pane follows); p50 / p95.

    .venv/bin/python bench/effects_screen_bench.py [--replays 10000] [--candidates 200] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.branch_tree_bench import pct, type_keys  # noqa: E402
from bench.effects_ranking import synthetic  # noqa: E402

SIZE = (160, 45)
BASE = ROOT / "sample_recordings" / "sample-agent-fault-tool-error.json"


def workspace_with(folder: Path, replays: int, candidates: int) -> None:
    """A workspace at ``folder`` with the base and the stored ranking of ``replays``
    synthetic replays over ``candidates`` calls."""
    from core.effects.ranking import rank_effects
    from core.record.io import recording_digest
    from core.record.recording import Recording
    from core.workspace import Workspace

    base = Recording.load(BASE)
    effects = rank_effects(synthetic(replays, candidates))
    with Workspace.open(folder) as ws:
        ws.put_recording(base, str(BASE))
        ws.put_effects(recording_digest(base), [e.to_json() for e in effects])


def measure(folder: Path, presses: int, interval: float) -> dict[str, Any]:
    from inspector.app import InspectorApp
    from inspector.loader import load_for_view
    from inspector.screens.effects import EffectsScreen
    from inspector.widgets.effects_table import EffectsTable

    painted: list[tuple[float, int]] = []
    original = EffectsTable.render_line

    def render_line(self: Any, y: int) -> Any:
        strip = original(self, y)
        if self.effects and y > 0:
            painted.append((time.perf_counter(), self.cursor))
        return strip

    EffectsTable.render_line = render_line  # type: ignore[method-assign]
    app = InspectorApp(load_for_view(BASE), workspace=folder)
    result: dict[str, Any] = {}

    async def wait_painted(since: float, timeout: float = 30.0) -> float:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            after = [t for t, _ in painted if t >= since]
            if after:
                return min(after) - since
            await asyncio.sleep(0.001)
        raise TimeoutError("nothing painted")

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            painted.clear()
            t = time.perf_counter()
            await app.screen.run_action("effects")
            result["paint_s"] = await wait_painted(t)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, EffectsScreen)
            result["rows"] = len(screen.effects)
            result["replays"] = sum(e["replays"] for e in screen.effects)
            table = screen.query_one(EffectsTable)
            latencies, _ = await type_keys(
                app, painted, table.cursor, interval, min(presses, max(1, len(screen.effects) - 1)), threading.Event()
            )
            result["down_ms"] = latencies

    try:
        asyncio.run(run())
    finally:
        EffectsTable.render_line = original  # type: ignore[method-assign]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=10_000)
    ap.add_argument("--candidates", type=int, default=200)
    ap.add_argument("--presses", type=int, default=100)
    ap.add_argument("--interval", type=float, default=0.035)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    med = statistics.median
    cases = {
        "yardstick": (10, 5),
        "candidates": (args.replays, args.candidates),
        "one per replay": (args.replays, args.replays),
    }
    summary: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="effects-bench-") as tmp:
        for name, (n, c) in cases.items():
            folder = Path(tmp) / name.replace(" ", "-")
            workspace_with(folder, n, c)
            runs = [measure(folder, args.presses, args.interval) for _ in range(args.repeat)]
            summary[name] = {
                "replays": runs[0]["replays"],
                "rows": runs[0]["rows"],
                "paint_s": med(r["paint_s"] for r in runs),
                "down_p50_ms": med(pct(r["down_ms"], 0.5) for r in runs),
                "down_p95_ms": med(pct(r["down_ms"], 0.95) for r in runs),
            }
    y = summary["yardstick"]["paint_s"]
    for s in summary.values():
        s["paint_vs_yardstick"] = s["paint_s"] / y
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"effects screen over a stored ranking (medians of {args.repeat})")
    for name, s in summary.items():
        print(
            f"{name:<15} {s['replays']:>7,} replays {s['rows']:>7,} rows   paint {s['paint_s'] * 1000:7.1f} ms "
            f"(× {s['paint_vs_yardstick']:.2f})   down → repaint p50 {s['down_p50_ms']:.1f} ms "
            f"p95 {s['down_p95_ms']:.1f} ms"
        )
    worst = max(summary["candidates"]["paint_s"], summary["one per replay"]["paint_s"])
    print(f"target: paint ≤ 300 ms at {args.replays:,} replays — {'meets' if worst <= 0.3 else 'misses'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
