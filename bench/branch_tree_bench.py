"""App benchmark: the branch tree panel of a big workspace, and keypress latency on the
timeline while a big replay runs in a child process.

1. **Branch tree.** A workspace of ``--branches`` branches (default 1,000; the last tenth
   are children of the first ones) and ``--replays`` replays (default 10,000, spread
   evenly), built fast: one real replay of the bundled sample agent's run through
   ``core.replay.replays.start_replay``, then its branch, replay, events and attempt rows
   copied with direct inserts (ids changed). Measured, median of ``--repeat``:

   * ``core s``: ``Workspace.branch_tree(digest)`` plus the open-requirements count — what
     the panel's worker reads (off the UI thread: keys never wait on it);
   * ``render ms``: the panel drawing that tree, headless (160×45): from handing the tree
     to :class:`inspector.widgets.branch_tree.BranchTreeView` until its visible lines are
     painted (``render_line`` instrumented) — the UI-thread cost; target ≤ 200 ms;
   * ``T → painted s``: the whole key press, worker read included;
   * the yardstick, in the same run: the same render for a workspace of 3 branches and
     10 replays (``× small``: how far the render grows with the workspace).

2. **Keypress latency during a replay.** A synthetic base of ``--calls`` calls (default
   100,000; ``bench/replay_throughput.py``'s generator: half model calls, half tool
   calls), opened in the app with the branch tree shown; an intervention-free branch is
   launched through the app's replay runner (a child process watched by a thread worker;
   progress posted at most every 0.1 s) and, while it runs, ``down`` is pressed on the timeline every ``--interval`` seconds (default
   0.035: a held key's auto-repeat) by another thread, through the app's driver, as a
   terminal's keys arrive. A key's latency runs from when it was due until the table
   painted a line with the cursor past it — so a key that arrives while the UI thread
   is stalled counts the stall. The yardstick: the same presses, same app, before the
   replay starts. Target: p95 ≤ 50 ms while the replay runs.

    .venv/bin/python bench/branch_tree_bench.py [--branches 1000] [--replays 10000] [--calls 100000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.record.recording import Recording  # noqa: E402
from core.replay.branch import BranchDraft, Policy, resolve_branch  # noqa: E402
from core.replay.replays import start_replay  # noqa: E402
from core.workspace import Workspace  # noqa: E402

SAMPLE = ROOT / "sample_recordings" / "sample-agent-fault-tool-error.json"
SIZE = (160, 45)


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


# ---------------------------------------------------------------------- 1. the tree


def build_workspace(folder: Path, base_path: Path, branches: int, replays: int) -> str:
    """A workspace of ``branches`` branches and ``replays`` replays of ``base_path``;
    returns the base's digest. One real replay, then copies by direct inserts."""
    base = Recording.load(base_path)
    with Workspace.open(folder) as ws:
        draft = BranchDraft(base_path=str(base_path), at=3, interventions=[], policy=Policy(), label="seed")
        branch = resolve_branch(None, draft, base)
        ws.add_branch(branch, base, str(base_path))
        record, _ = start_replay(ws, str(base_path), branch, base=base)
        digest = record.base_digest
        conn = ws._conn  # direct inserts: the benchmark's own fast path
        body = json.loads(conn.execute("SELECT body FROM branches WHERE id=?", (branch.id,)).fetchone()[0])
        rec = json.loads(conn.execute("SELECT record FROM replays WHERE id=?", (record.id,)).fetchone()[0])
        events = conn.execute(
            "SELECT digest, records, body FROM replay_events WHERE replay_id=?", (record.id,)
        ).fetchone()
        attempts = conn.execute(
            "SELECT number, kind, started_at, ended_at, outcome FROM attempts WHERE replay_id=?", (record.id,)
        ).fetchall()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM attempts")
        conn.execute("DELETE FROM replay_events")
        conn.execute("DELETE FROM replays")
        conn.execute("DELETE FROM branches")
        per = max(1, replays // max(1, branches))
        made = 0
        children_from = branches - branches // 10
        for i in range(branches):
            bid = f"br-bench{i:06d}"
            parent = f"br-bench{i - children_from:06d}" if i >= children_from else None
            b = dict(
                body,
                id=bid,
                label=f"bench branch {i}",
                created_at=f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            )
            if parent:
                b["parent"] = parent
            conn.execute(
                "INSERT INTO branches(id, base_digest, parent_id, label, checkpoint, created_at, body) VALUES (?,?,?,?,?,?,?)",
                (bid, digest, parent, b["label"], b["checkpoint"], b["created_at"], json.dumps(b)),
            )
            n = per if i < branches - 1 else replays - made
            for j in range(n):
                rid = f"rp-bench{i:06d}{j:03d}"
                r = dict(rec, id=rid, branch_id=bid)
                conn.execute(
                    "INSERT INTO replays(id, branch_id, base_digest, status, created_at, updated_at, record) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (rid, bid, digest, r["status"], r["created_at"], r["updated_at"], json.dumps(r)),
                )
                conn.execute(
                    "INSERT INTO replay_events(replay_id, digest, records, body) VALUES (?,?,?,?)", (rid, *events)
                )
                for a in attempts:
                    conn.execute("INSERT INTO attempts VALUES (?,?,?,?,?,?)", (rid, *a))
            made += n
        conn.execute("COMMIT")
        assert ws.count_replays() == replays and len(ws.list_branches()) == branches
    return digest


def measure_tree(folder: Path, base_path: Path, digest: str, repeat: int) -> dict[str, Any]:
    """Core read, render and whole-key-press times for the tree of ``digest``."""
    from inspector.app import InspectorApp
    from inspector.loader import load_for_view
    from inspector.widgets.branch_tree import BranchTreePanel, BranchTreeView, TreeData

    core_s = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with Workspace.open(folder, create=False) as ws:
            tree = ws.branch_tree(digest)
            ws.requirements(open_only=True)
        core_s.append(time.perf_counter() - t0)
    painted: list[float] = []
    original = BranchTreeView.render_line

    def render_line(self: BranchTreeView, y: int) -> Any:
        strip = original(self, y)
        painted.append(time.perf_counter())
        return strip

    BranchTreeView.render_line = render_line  # type: ignore[method-assign]
    result: dict[str, Any] = {"core_s": statistics.median(core_s), "nodes": len(tree)}
    app = InspectorApp(load_for_view(base_path), workspace=folder)

    async def settle_paint(pilot: Any) -> float:
        """Wait for the frame to finish (no new line for 20 ms); the time of its last line."""
        seen = -1
        while seen != len(painted):
            seen = len(painted)
            await asyncio.sleep(0.02)
        return painted[-1]

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            painted.clear()
            t0 = time.perf_counter()
            await pilot.press("T")
            panel = app.screen.query_one(BranchTreePanel)
            while not panel.view.rows or len(panel.view.rows) < 2 or not painted:
                await asyncio.sleep(0.005)
            result["key_to_painted_s"] = await settle_paint(pilot) - t0
            result["rows"] = len(panel.view.rows)
            renders = []
            for _ in range(repeat):
                data = TreeData(tree, base_path.name, {})
                panel.view.data = None
                panel.view.rows = []
                await pilot.pause()
                painted.clear()
                t = time.perf_counter()
                panel.view.set_data(data)
                while not painted:
                    await asyncio.sleep(0)
                renders.append(await settle_paint(pilot) - t)
            result["render_ms"] = statistics.median(renders) * 1000
            result["render_max_ms"] = max(renders) * 1000

    asyncio.run(run())
    BranchTreeView.render_line = original  # type: ignore[method-assign]
    return result


# ---------------------------------------------------------------------- 2. keys during a replay


def _typist(app: Any, interval: float, keys: int | None, stop: threading.Event, scheduled: list[float]) -> None:
    """Press ``down`` every ``interval`` seconds from another thread, through the app's
    driver — as a terminal's keys arrive — until ``keys`` were pressed or ``stop`` is set.
    ``scheduled``: when each key was due (a key that could not even be sent while the UI
    thread was stalled counts from when it was due)."""
    from textual import events

    start = time.perf_counter()
    i = 0
    while (keys is None or i < keys) and not stop.is_set():
        due = start + i * interval
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        event = events.Key("down", None)
        event.set_sender(app)
        scheduled.append(due)
        app._driver.send_message(event)
        i += 1


def _latencies(scheduled: list[float], painted: list[tuple[float, int]], first_cursor: int) -> list[float]:
    """Key ``i`` is on screen at the first painted line whose cursor is past it."""
    out = []
    j = 0
    for i, due in enumerate(scheduled):
        target = first_cursor + i + 1
        while j < len(painted) and painted[j][1] < target:
            j += 1
        if j == len(painted):
            break
        out.append(max(0.0, painted[j][0] - due) * 1000)
    return out


async def type_keys(
    app: Any, painted: list[tuple[float, int]], first: int, interval: float, keys: int | None, stop: threading.Event
) -> tuple[list[float], list[float]]:
    """Press ``down`` (:func:`_typist`) until ``keys`` were pressed or ``stop`` is set,
    wait for the last repaints, and return each key's latency in ms (:func:`_latencies`:
    ``painted`` holds (time, cursor) per painted line, the cursor at ``first`` before
    the first key) and when each key was due."""
    painted.clear()
    scheduled: list[float] = []
    thread = threading.Thread(target=_typist, args=(app, interval, keys, stop, scheduled))
    thread.start()
    while thread.is_alive():
        await asyncio.sleep(0.02)
    for _ in range(200):  # the last keys' repaints
        if painted and painted[-1][1] >= first + len(scheduled):
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    return _latencies(scheduled, sorted(painted), first), scheduled


def measure_latency(folder: Path, calls: int, presses: int, interval: float) -> dict[str, Any]:
    from bench.replay_throughput import synthetic
    from inspector.app import InspectorApp
    from inspector.loader import LoadedRecording
    from inspector.widgets.timeline_table import TimelineTable

    t0 = time.perf_counter()
    from core.record.io import recording_digest

    base = synthetic(calls)
    base.digest = None
    base.digest = recording_digest(base)  # the generator's placeholder digest would not survive a reload
    base_path = folder / "synthetic.json"
    branch = resolve_branch(None, BranchDraft(base_path=str(base_path), at=0, interventions=[]), base)
    with Workspace.open(folder) as ws:
        ws.add_branch(branch, base, str(base_path))
    setup_s = time.perf_counter() - t0
    painted: list[tuple[float, int]] = []
    original = TimelineTable.render_line

    def render_line(self: TimelineTable, y: int) -> Any:
        strip = original(self, y)
        painted.append((time.perf_counter(), self.cursor))
        return strip

    TimelineTable.render_line = render_line  # type: ignore[method-assign]
    app = InspectorApp(LoadedRecording.from_recording(base, base_path), workspace=folder)
    result: dict[str, Any] = {"calls": calls, "setup_s": setup_s}

    async def typed(keys: int | None, stop: threading.Event) -> tuple[list[float], list[float]]:
        table = app.screen.query_one(TimelineTable)
        return await type_keys(app, painted, table.cursor, interval, keys, stop)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("T")  # the tree shown, as when a user launches from it
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.screen.query_one(TimelineTable).focus()
            await pilot.pause()
            idle, _ = await typed(presses, threading.Event())
            await pilot.press("home")
            await pilot.pause()
            runner = app.replay_runner
            started = time.perf_counter()
            rid = runner.launch(branch.id, None)
            state = runner.runs[rid]
            stop = threading.Event()
            answered: list[float] = []

            async def watch() -> None:
                while state.active:
                    p = state.progress
                    if not answered and p is not None and p.kind in ("paused", "finished"):
                        answered.append(time.perf_counter())  # every call answered: storing now
                    await asyncio.sleep(0.02)
                stop.set()

            watcher = asyncio.create_task(watch())
            during, due = await typed(None, stop)
            await watcher
            await app.workers.wait_for_complete()
            result["replay_s"] = time.perf_counter() - started
            result["replay_status"] = state.status if state.error is None else f"{state.status}: {state.error}"
            result["idle_ms"] = idle
            result["during_ms"] = during
            cut = answered[0] if answered else float("inf")
            result["answering_ms"] = [x for x, d in zip(during, due) if d < cut]
            result["storing_ms"] = [x for x, d in zip(during, due) if d >= cut]
            result["storing_s"] = time.perf_counter() - cut if answered else None

    asyncio.run(run())
    TimelineTable.render_line = original  # type: ignore[method-assign]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, default=1000)
    ap.add_argument("--replays", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=100_000, help="calls of the replay run during the key presses")
    ap.add_argument("--presses", type=int, default=100, help="key presses of the yardstick (before the replay)")
    ap.add_argument("--interval", type=float, default=0.035, help="seconds between two key presses")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        base_path = d / "support-run.json"
        shutil.copy(SAMPLE, base_path)
        t0 = time.perf_counter()
        digest = build_workspace(d / "big", base_path, args.branches, args.replays)
        out["build_s"] = time.perf_counter() - t0
        out["big"] = measure_tree(d / "big", base_path, digest, args.repeat)
        small_digest = build_workspace(d / "small", base_path, 3, 10)
        out["small"] = measure_tree(d / "small", base_path, small_digest, args.repeat)
        out["latency"] = measure_latency(d / "replay", args.calls, args.presses, args.interval)
    big, small, lat = out["big"], out["small"], out["latency"]
    idle, during = lat["idle_ms"], lat["during_ms"]
    summary = {
        "branches": args.branches,
        "replays": args.replays,
        "build_s": out["build_s"],
        "core_s": big["core_s"],
        "render_ms": big["render_ms"],
        "render_max_ms": big["render_max_ms"],
        "key_to_painted_s": big["key_to_painted_s"],
        "rows": big["rows"],
        "small_render_ms": small["render_ms"],
        "render_vs_small": big["render_ms"] / small["render_ms"],
        "core_vs_small": big["core_s"] / small["core_s"],
        "calls": lat["calls"],
        "replay_s": lat["replay_s"],
        "replay_status": lat["replay_status"],
        "presses_during": len(during),
        "idle_p50_ms": statistics.median(idle),
        "idle_p95_ms": pct(idle, 0.95),
        "during_p50_ms": statistics.median(during) if during else float("nan"),
        "during_p95_ms": pct(during, 0.95) if during else float("nan"),
        "during_max_ms": max(during) if during else float("nan"),
    }
    summary["p95_vs_idle"] = summary["during_p95_ms"] / summary["idle_p95_ms"]
    answering, storing = lat["answering_ms"], lat["storing_ms"]
    summary["answering_p50_ms"] = statistics.median(answering) if answering else float("nan")
    summary["answering_p95_ms"] = pct(answering, 0.95) if answering else float("nan")
    summary["storing_p95_ms"] = pct(storing, 0.95) if storing else float("nan")
    summary["storing_max_ms"] = max(storing) if storing else float("nan")
    summary["presses_answering"] = len(answering)
    summary["presses_storing"] = len(storing)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    s = summary
    print(
        f"workspace: {s['branches']:,} branches, {s['replays']:,} replays (built in {s['build_s']:.1f} s), {s['rows']:,} lines"
    )
    print(f"{'':24} {'big':>10} {'3 br/10 rp':>11} {'× small':>8}")
    print(f"{'core read s':24} {s['core_s']:>10.3f} {small['core_s']:>11.3f} {s['core_vs_small']:>8.0f}")
    print(f"{'panel render ms':24} {s['render_ms']:>10.1f} {s['small_render_ms']:>11.1f} {s['render_vs_small']:>8.2f}")
    print(f"{'T → painted s':24} {s['key_to_painted_s']:>10.3f} {small['key_to_painted_s']:>11.3f}")
    print(
        f"replay of {s['calls']:,} calls in a child process: {s['replay_s']:.1f} s ({s['replay_status']}), "
        f"{s['presses_during']} presses of down meanwhile"
    )
    print(f"{'down → repaint ms':24} {'p50':>8} {'p95':>8} {'max':>8}")
    print(f"{'  idle (yardstick)':24} {s['idle_p50_ms']:>8.1f} {s['idle_p95_ms']:>8.1f} {max(idle):>8.1f}")
    print(
        f"{'  during the replay':24} {s['during_p50_ms']:>8.1f} {s['during_p95_ms']:>8.1f} {s['during_max_ms']:>8.1f}"
    )
    print(
        f"{'    while answering calls':24} {s['answering_p50_ms']:>8.1f} {s['answering_p95_ms']:>8.1f} "
        f"{'':>8}  ({s['presses_answering']} presses)"
    )
    print(
        f"{'    while storing events':24} {'':>8} {s['storing_p95_ms']:>8.1f} {s['storing_max_ms']:>8.1f}  "
        f"({s['presses_storing']} presses)"
    )
    print(f"p95 during / idle: {s['p95_vs_idle']:.2f}")
    print(
        f"targets: panel render ≤ 200 ms — {'meets' if s['render_ms'] <= 200 else 'MISSES'} ({s['render_ms']:.0f} ms); "
        f"keypress p95 ≤ 50 ms during the replay — {'meets' if s['during_p95_ms'] <= 50 else 'MISSES'} "
        f"({s['during_p95_ms']:.0f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
