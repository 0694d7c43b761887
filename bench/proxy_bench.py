"""Model-API proxy overhead: recording and replaying an agent's calls over loopback HTTP.

An agent process (``bench/proxy_bench.py --client``: plain ``http.client`` on one
keep-alive connection, so the figures are the proxy's, not an SDK's) makes N chat
completion calls with a bounded history (the system prompt and its last four messages,
as real agents trim), each answered with a tool call it "runs" itself. It times every
call from request sent to answer read. Three runs of the same agent:

1. **direct** — straight to a local upstream (the yardstick, measured in this run);
2. **record** — through ``record`` to the same upstream: the overhead of recording is
   the difference of the medians (target ≤ 5 ms);
3. **replay** — through ``--executor cmd:…`` with no intervention: every answer from the
   recording by the engine's answer chain, nothing reaching the upstream (targets: p50
   ≤ 2 ms per call, and the cost per call of the last tenth ≤ 1.2x the first tenth — flat
   as the recording grows).

Usage: ``.venv/bin/python bench/proxy_bench.py [--calls 10000] [--repeat 1]``
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


# ------------------------------------------------------------------ the agent (--client)


def client(n: int, out: str) -> None:
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
    path = base.path.rstrip("/") + "/chat/completions"
    system = {"role": "system", "content": "You fetch records and summarise them."}
    window: list[dict] = [{"role": "user", "content": "Fetch everything."}]
    tools = [{"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}}]
    times = []
    for _ in range(n):
        body = json.dumps({"model": "bench-model", "messages": [system, *window[-4:]], "tools": tools}).encode()
        t0 = time.perf_counter()
        conn.request(
            "POST", path, body=body, headers={"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
        )
        r = conn.getresponse()
        data = r.read()
        times.append(time.perf_counter() - t0)
        if r.status != 200:
            raise SystemExit(f"HTTP {r.status}: {data[:300]!r}")
        msg = json.loads(data)["choices"][0]["message"]
        tc = msg["tool_calls"][0]
        window.append({"role": "assistant", "content": None, "tool_calls": msg["tool_calls"]})
        window.append(
            {
                "role": "tool",
                "tool_call_id": tc["id"],
                "content": f"record {json.loads(tc['function']['arguments'])['id']}",
            }
        )
    Path(out).write_text(json.dumps(times))


# ------------------------------------------------------------------ a fast local upstream


def start_upstream():
    import asyncio
    import threading

    from aiohttp import web

    state = {"n": 0, "port": 0}
    ready = threading.Event()

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        state["n"] += 1
        k = state["n"]
        return web.json_response(
            {
                "id": f"chatcmpl-{k}",
                "object": "chat.completion",
                "created": 1700000000,
                "model": "bench-model",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": f"call_{k}",
                                    "type": "function",
                                    "function": {"name": "fetch", "arguments": json.dumps({"id": k})},
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
            }
        )

    def run() -> None:
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        state["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    ready.wait(10)
    return state


# ------------------------------------------------------------------ the runs


def _stats(times: list[float]) -> dict[str, float]:
    n = len(times)
    tenth = max(1, n // 10)
    first, last = statistics.median(times[:tenth]), statistics.median(times[-tenth:])
    return {
        "p50": statistics.median(times) * 1000,
        "p95": sorted(times)[int(0.95 * (n - 1))] * 1000,
        "first_tenth": first * 1000,
        "last_tenth": last * 1000,
        "growth": last / first if first else float("nan"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--client", nargs=2, metavar=("N", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        client(int(args.client[0]), args.client[1])
        return

    from core.proxy.recorder import record_command
    from core.record.recording import Recording
    from core.replay.boundary import ExecutorChoice
    from core.replay.branch import new_branch
    from core.replay.replays import start_replay
    from core.workspace import Workspace

    n = args.calls
    up = start_upstream()
    up_url = f"http://127.0.0.1:{up['port']}/v1"
    tmp = Path(tempfile.mkdtemp(prefix="proxy-bench-"))
    me = [sys.executable, str(Path(__file__).resolve()), "--client", str(n)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    rows: dict[str, list[dict[str, float]]] = {"direct": [], "record": [], "replay": []}
    for rep in range(args.repeat):
        # 1. direct
        out = tmp / f"direct{rep}.json"
        subprocess.run([*me, str(out)], env={**env, "OPENAI_BASE_URL": up_url}, check=True)
        rows["direct"].append(_stats(json.loads(out.read_text())))
        # 2. record
        out = tmp / f"record{rep}.json"
        run = tmp / f"run{rep}.json"
        t0 = time.perf_counter()
        res = record_command([*me, str(out)], run, upstream_openai=up_url, env=env, echo=False)
        rec_s = time.perf_counter() - t0
        assert res.exit_code == 0, res.reason
        rows["record"].append({**_stats(json.loads(out.read_text())), "total_s": rec_s})
        # 3. replay (the same command; its timings go to another file)
        base = Recording.load(run)
        out = tmp / f"replay{rep}.json"
        spec = "cmd:" + " ".join([*me, str(out)])
        ws = Workspace.open(tmp / f"ws{rep}")
        sent = up["n"]
        t0 = time.perf_counter()
        record_, outcome = start_replay(
            ws, str(run), new_branch(base, str(run), at=0), executor=ExecutorChoice(spec), base=base
        )
        rep_s = time.perf_counter() - t0
        assert record_.status == "completed", (record_.error, outcome.requirement)
        assert up["n"] == sent, "a replayed call reached the upstream"
        rows["replay"].append({**_stats(json.loads(out.read_text())), "total_s": rep_s})
        ws.close()

    def best(name: str) -> dict[str, float]:
        return min(rows[name], key=lambda r: r["p50"])

    d, r, p = best("direct"), best("record"), best("replay")
    print(f"Model-API proxy: {n} chat completion calls, one keep-alive connection, best of {args.repeat}")
    print(f"{'run':<8} {'p50 ms':>8} {'p95 ms':>8} {'first 10% ms':>13} {'last 10% ms':>12} {'last/first':>11}")
    for name, row in (("direct", d), ("record", r), ("replay", p)):
        print(
            f"{name:<8} {row['p50']:>8.3f} {row['p95']:>8.3f} {row['first_tenth']:>13.3f} "
            f"{row['last_tenth']:>12.3f} {row['growth']:>11.2f}"
        )
    print(f"recording adds {r['p50'] - d['p50']:.3f} ms p50 per call over a direct call (target <= 5 ms)")
    print(f"replay p50 {p['p50']:.3f} ms per call (target <= 2 ms), {p['p50'] / d['p50']:.2f}x a direct call")
    print(f"replay cost per call, last tenth / first tenth: {p['growth']:.2f} (target <= 1.2)")
    print(
        f"whole runs: record {r['total_s']:.1f} s (writing the recording included), replay {p['total_s']:.1f} s (storing the replay included)"
    )


if __name__ == "__main__":
    main()
