"""Importing at scale: three sources whose calls repeat a growing history.

(a) **tau-bench, one long conversation**: the 200 runs of the real
    ``tests/data/real_traces/tau_bench/gpt-4o-airline.json`` concatenated, in order, into
    ONE run of tau-bench's own format — the first run's trajectory, then every other run's
    trajectory without its system policy (the policy stays once, at the start, as in one
    conversation): 5,109 messages, 2.0 MB of messages, 2,454 model calls whose requests
    repeat everything before them. Imported with :func:`core.importers.import_file` and
    written with :func:`core.record.io.save_recording`. Targets: ≤ 5 s, ≤ 10 MB written
    (the size is the recording writer's: format v3's message pool).
(b) **a large Inspect ``.eval``**, written by the real ``inspect-ai`` package with its
    ``mockllm`` model: one sample, ``--steps`` user turns, each answered by a tool call
    (a tool event) and then text — 2 × steps model events (~1,000) whose inputs repeat the
    growing conversation. Imported (target ≤ 3 s); the yardstick is Inspect AI's own
    ``read_eval_log`` on the same file. ``inspect-ai`` is a benchmark tool, not a
    dependency of the project: ``.venv/bin/pip install inspect-ai`` (the row is skipped,
    saying so, when it is missing). Writing the log takes Inspect ~30 s; ``--eval FILE``
    reuses one.
(c) **a 100 MB Claude Code session** (``bench.claude_code_bench.generate``): MB/s of the
    import against orjson parsing every line (target ≥ 50 MB/s).

Each measurement runs in a child process (``--child``) so its peak memory
(``ru_maxrss``) is its own; figures are medians of ``--repeat`` runs, printed with the
yardstick measured in the same run and the ratio.

    .venv/bin/python -m bench.import_scale_bench [--repeat 3] [--steps 500] [--mb 100]
        [--only tau,eval,claude] [--eval FILE] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
TAU = ROOT / "tests" / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"
INSTALL_INSPECT = ".venv/bin/pip install inspect-ai"


# ----------------------------------------------------------------------------- inputs


def tau_concat(out_dir: Path) -> tuple[Path, int]:
    """Write the 200 tau-bench runs as one run (see the module docstring) to
    ``out_dir/gpt-4o-airline.json`` (the name gives the model and environment); return
    the path and the number of messages."""
    runs = orjson.loads(TAU.read_bytes())
    traj: list[Any] = []
    for i, run in enumerate(runs):
        traj.extend(run["traj"] if i == 0 else [m for m in run["traj"] if m.get("role") != "system"])
    one = dict(runs[0])
    one["traj"] = traj
    path = out_dir / "gpt-4o-airline.json"
    path.write_bytes(orjson.dumps([one]))
    return path, len(traj)


_EVAL_SCRIPT = r"""
import sys
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.solver import solver
from inspect_ai.tool import tool

steps, log_dir = int(sys.argv[1]), sys.argv[2]


@tool
def lookup():
    async def execute(item: int) -> str:
        '''Look an item up.

        Args:
            item: the item's number.
        '''
        return f"item {item}: " + "record " * (5 + item % 40)

    return execute


def outputs(input, tools, tool_choice, config):
    if input[-1].role == "user":
        out = ModelOutput.for_tool_call("mockllm/model", "lookup", {"item": len(input)})
    else:
        out = ModelOutput.from_content("mockllm/model", f"Item looked up ({len(input)} messages so far).")
    # usage given, so mockllm does not count tokens with tiktoken (which downloads its tables)
    out.usage = ModelUsage(input_tokens=10 * len(input), output_tokens=10, total_tokens=10 * len(input) + 10)
    return out


@solver
def grow(n):
    async def solve(state, generate):
        state.tools = [lookup()]
        for i in range(n):
            state.messages.append(ChatMessageUser(content=f"step {i}: please look up item {i} " + "x" * (i % 200)))
            state = await generate(state, tool_calls="loop")
        return state

    return solve


model = get_model("mockllm/model", custom_outputs=outputs)
task = Task(dataset=[Sample(input="Start.", target="ok")], solver=grow(steps))
log = inspect_eval(task, model=model, log_dir=log_dir, display="none", message_limit=10**7)[0]
print(log.location)
"""


def have_inspect() -> bool:
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        return False
    return True


def write_eval(out_dir: Path, steps: int) -> Path:
    """An Inspect ``.eval`` of one sample with ``2 * steps`` model events, written by
    ``inspect-ai`` itself (in a child process: Inspect sets up logging and an event loop)."""
    done = subprocess.run(
        [sys.executable, "-c", _EVAL_SCRIPT, str(steps), str(out_dir)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "INSPECT_LOG_FORMAT": "eval"},
    )
    return Path(done.stdout.strip().splitlines()[-1].removeprefix("file://"))


# ----------------------------------------------------------------------------- children


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def child(kind: str, path: str, out: str) -> dict[str, Any]:
    """One measurement in this (fresh) process: ``import`` (+ ``save`` for tau), or
    Inspect's ``read_eval_log`` (``inspect``), or orjson over the lines (``lines``)."""
    base = _peak_mb()
    res: dict[str, Any] = {}
    if kind == "inspect":
        from inspect_ai.log import read_eval_log

        t = time.perf_counter()
        log = read_eval_log(path)
        res["seconds"] = time.perf_counter() - t
        res["events"] = sum(1 for e in (log.samples or [])[0].events if e.event == "model")
    elif kind == "lines":
        data = Path(path).read_bytes()
        t = time.perf_counter()
        for raw in data.splitlines():
            orjson.loads(raw)
        res["seconds"] = time.perf_counter() - t
    elif kind == "parse":
        data = Path(path).read_bytes()
        t = time.perf_counter()
        orjson.loads(data)
        res["seconds"] = time.perf_counter() - t
    else:
        from core.importers import import_file

        t = time.perf_counter()
        runs = import_file(Path(path))
        res["seconds"] = time.perf_counter() - t
        rec = runs[0].recording
        res["records"] = len(rec.records)
        res["models"] = sum(1 for r in rec.records if r.kind == "model")
        res["messages"] = max((len(r.request.messages) for r in rec.records if r.kind == "model"), default=0)
        if out:
            from core.record.io import save_recording

            t = time.perf_counter()
            save_recording(rec, out)
            res["save_seconds"] = time.perf_counter() - t
            res["size"] = os.path.getsize(out)
    res["peak_mb"] = _peak_mb()
    res["base_mb"] = base
    return res


def measure(kind: str, path: Path, out: Path | None, repeat: int) -> dict[str, Any]:
    """Medians of ``repeat`` children (peak memory: the largest)."""
    got = []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-m", "bench.import_scale_bench", "--child", kind, str(path), str(out or "")],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        got.append(json.loads(done.stdout.strip().splitlines()[-1]))
    res = dict(got[-1])
    for k in ("seconds", "save_seconds"):
        if k in res:
            res[k] = statistics.median(g[k] for g in got)
    res["peak_mb"] = max(g["peak_mb"] for g in got)
    return res


# ----------------------------------------------------------------------------- rows


def row_tau(d: Path, repeat: int, save: bool) -> None:
    path, messages = tau_concat(d)
    src = path.stat().st_size
    floor = measure("parse", path, None, repeat)
    res = measure("import", path, d / "out.json" if save else None, repeat)
    total = res["seconds"] + res.get("save_seconds", 0.0)
    print(
        f"(a) tau-bench as one conversation: {src / 1e6:.1f} MB source, {messages} messages, "
        f"{res['models']} model calls, {res['records']} records"
    )
    print(f"    orjson parse           {floor['seconds'] * 1000:9.1f} ms   (yardstick)")
    print(
        f"    import                 {res['seconds'] * 1000:9.1f} ms   ×{res['seconds'] / floor['seconds']:.0f} the parse"
    )
    if save:
        print(f"    save_recording         {res['save_seconds'] * 1000:9.1f} ms")
        print(f"    import + save          {total:9.2f} s    target ≤ 5 s: {'met' if total <= 5 else 'NOT met'}")
        print(
            f"    written                {res['size'] / 1e6:9.1f} MB   ×{res['size'] / src:.1f} the source; "
            f"target ≤ 10 MB: {'met' if res['size'] <= 10e6 else 'NOT met'} (the writer's format decides)"
        )
    print(
        f"    peak memory            {res['peak_mb']:9.0f} MB   ×{res['peak_mb'] * 2**20 / src:.0f} the source "
        f"(interpreter and imports: {res['base_mb']:.0f} MB)"
    )


def row_eval(d: Path, repeat: int, steps: int, given: Path | None) -> None:
    if not have_inspect():
        print(f"(b) Inspect .eval: skipped — inspect-ai is not installed ({INSTALL_INSPECT}; a benchmark tool only)")
        return
    if given is None:
        t = time.perf_counter()
        path = write_eval(d / "evals", steps)
        made = f"written by inspect-ai in {time.perf_counter() - t:.0f} s"
    else:
        path, made = given, "given"
    yard = measure("inspect", path, None, repeat)
    res = measure("import", path, None, repeat)
    print(
        f"(b) Inspect .eval ({made}): {path.stat().st_size / 1e6:.2f} MB, {yard['events']} model events, "
        f"longest input {res['messages']} messages"
    )
    print(
        f"    read_eval_log          {yard['seconds'] * 1000:9.1f} ms   (yardstick: Inspect AI's own reader; "
        f"peak {yard['peak_mb']:.0f} MB)"
    )
    print(
        f"    import                 {res['seconds'] * 1000:9.1f} ms   ×{res['seconds'] / yard['seconds']:.2f} "
        f"read_eval_log; target ≤ 3 s: {'met' if res['seconds'] <= 3 else 'NOT met'}; peak {res['peak_mb']:.0f} MB"
    )


def row_claude(d: Path, repeat: int, mb: float) -> None:
    from bench.claude_code_bench import generate

    path = d / "session.jsonl"
    size = generate(path, mb)
    floor = measure("lines", path, None, repeat)
    res = measure("import", path, None, repeat)
    rate = size / 1e6 / res["seconds"]
    print(f"(c) Claude Code session: {size / 1e6:.1f} MB, {res['models']} model calls")
    print(
        f"    orjson lines           {floor['seconds'] * 1000:9.1f} ms   (yardstick; "
        f"{size / 1e6 / floor['seconds']:.0f} MB/s)"
    )
    print(
        f"    import                 {res['seconds'] * 1000:9.1f} ms   ×{res['seconds'] / floor['seconds']:.1f} "
        f"the yardstick, {rate:.1f} MB/s; target ≥ 50 MB/s: {'met' if rate >= 50 else 'NOT met'}; "
        f"peak {res['peak_mb']:.0f} MB"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, path, out = sys.argv[2], sys.argv[3], sys.argv[4]
        print(json.dumps(child(kind, path, out)))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--steps", type=int, default=500, help="user turns of the .eval (2 model events each)")
    ap.add_argument("--mb", type=float, default=100.0, help="size of the Claude Code session")
    ap.add_argument("--only", default="tau,eval,claude")
    ap.add_argument("--eval", type=Path, default=None, help="an existing .eval to import instead of writing one")
    ap.add_argument("--no-save", action="store_true", help="(a) without save_recording")
    args = ap.parse_args()
    only = set(args.only.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; medians of {args.repeat} child processes")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        if "tau" in only:
            row_tau(d, args.repeat, not args.no_save)
        if "eval" in only:
            row_eval(d, args.repeat, args.steps, args.eval)
        if "claude" in only:
            row_claude(d, args.repeat, args.mb)


if __name__ == "__main__":
    main()
