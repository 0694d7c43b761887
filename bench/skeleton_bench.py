"""Benchmark: first paint of a format v1/v2 file by the skeleton decode (core.record.skeleton).

Generates v2 recordings (the logical layout: ``recording_to_dict`` with
``format_version`` 2, compact JSON as the v1/v2 writer saved it) of two shapes:

* ``issue`` — the performance issue's shape: each step a model call whose request
  repeats the chat history up to a 64 KB context window (system prompt and task kept),
  then a tool call; 30% of tool results 2–20 KB, the rest 200–500 B;
* ``synthetic`` — ``bench.synthetic.make_growing`` (a 60-message window), re-encoded as v2.

For each, medians of repeated runs (the file in the page cache) of:

* ``read()`` — the yardstick: reading the file's bytes;
* ``orjson.loads`` of the bytes;
* ``skeleton()`` of the bytes, and read + skeleton + ``TimelineIndex.from_columns`` (the
  new first paint, UI aside), also with the file mapped (``mmap``) instead of read;
* read + ``orjson.loads`` + ``TimelineIndex.from_raw`` (the whole-document first paint);

as ratios to ``read()`` (target: first paint ≤ 1.5x), and the peak memory of each path in
a fresh process (VmHWM growth from after the imports, the file's bytes included) as a
ratio to the file size.

A third shape, ``small`` (``--shapes small``), is a v1 file of ``--records`` small records
(``bench.app_synth.write_synthetic``: 1,000,000 records make 916 MB), where the per-record
work dominates: each run is a fresh process timing ``read()`` (the yardstick) and then
``skeleton()`` of the file mapped (``mmap``), as the app's first paint does; medians of
``--repeat`` runs, and the median ratio.

Usage: python bench/skeleton_bench.py [--mb 100] [--repeat 5] [--shapes issue,synthetic,small]
       [--records 1000000]
"""

from __future__ import annotations

import argparse
import gc
import mmap
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.analysis.timeline import TimelineIndex  # noqa: E402
from core.record.canonical import model_key, tool_key  # noqa: E402
from core.record.io import loads_recording, recording_to_dict  # noqa: E402
from core.record.recording import (  # noqa: E402
    ChatMessage,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from core.record.skeleton import skeleton  # noqa: E402

WINDOW_BYTES = 64 * 1024

MEM_SNIPPET = """
import sys
sys.path.insert(0, {root!r})
import orjson
from bench.skeleton_bench import header_of
from core.analysis.timeline import TimelineIndex
from core.record.skeleton import skeleton
def hwm():  # VmHWM: this process image's peak RSS
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
base = hwm()
{stmt}
print(hwm() - base)
"""

_READ = "data = open({path!r}, 'rb').read()\n"
PATHS = {
    "read()": _READ,
    "orjson.loads": _READ + "doc = orjson.loads(data)",
    "mmap + skeleton + from_columns": (
        "import mmap\nfh = open({path!r}, 'rb')\n"
        "data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)\n"
        "sk = skeleton(data, source='f', copy_on_write=True)\n"
        "ix = TimelineIndex.from_columns(header_of(sk.header), sk.columns, sk.raw, source='f')"
    ),
    "skeleton + from_columns": (
        _READ + "sk = skeleton(data, source='f')\n"
        "ix = TimelineIndex.from_columns(header_of(sk.header), sk.columns, sk.raw, source='f')"
    ),
    "orjson + from_raw": (
        _READ + "doc = orjson.loads(data)\nix = TimelineIndex.from_raw(header_of(doc), doc['records'], source='f')"
    ),
}


def make_issue_shaped(target_bytes: int, seed: int = 17) -> Recording:
    """A recording of about ``target_bytes`` in the issue's shape (module docstring)."""
    rng = random.Random(seed)
    head = [
        ChatMessage(role="system", content="You are a careful coding agent. " * 40),
        ChatMessage(role="user", content="Fix the failing test in the repository and explain the cause."),
    ]
    head_bytes = sum(len(m.model_dump_json()) for m in head)
    history: list[tuple[ChatMessage, int]] = []
    window = 0
    tools = [{"name": "bash", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]
    records: list[Any] = []
    size = seq = step = 0
    while size < target_bytes:
        while history and head_bytes + window > WINDOW_BYTES:
            window -= history.pop(0)[1]
        req = ModelRequest(messages=head + [m for m, _ in history], tools=tools, options={"max_tokens": 1024})
        call = ToolCall(id=f"call_{step}", name="bash", arguments={"cmd": f"pytest -k test_{step} -x"})
        msg = ChatMessage(
            role="assistant", content=f"Step {step}: " + "let me run the test. " * rng.randint(2, 10), tool_calls=[call]
        )
        model = ModelRecord(
            seq=seq,
            at=f"2026-01-01T00:{step // 60 % 60:02d}:{step % 60:02d}Z",
            run_id="r",
            key=model_key("gpt-x", req),
            model="gpt-x",
            request=req,
            response=ModelResponse(
                message=msg, finish_reason="tool_calls", usage=Usage(input_tokens=window // 4, output_tokens=50)
            ),
            duration_seconds=round(rng.uniform(0.5, 3.0), 3),
        )
        n = rng.randint(2_000, 20_000) if rng.random() < 0.3 else rng.randint(200, 500)
        out = (f"===== step {step} =====\n" + "log line with some text and a path /src/x.py:12\n" * (n // 48))[:n]
        tool = ToolRecord(
            seq=seq + 1,
            at=f"2026-01-01T00:{step // 60 % 60:02d}:{step % 60:02d}Z",
            run_id="r",
            key=tool_key("bash", call.arguments),
            tool="bash",
            arguments=call.arguments,
            tool_call_id=call.id,
            result=ToolResult(content=out),
            duration_seconds=0.25,
        )
        records += [model, tool]
        for m in (msg, ChatMessage(role="tool", content=out, tool_call_id=call.id)):
            b = len(m.model_dump_json())
            history.append((m, b))
            window += b
        size += head_bytes + window + 600
        seq += 2
        step += 1
    return Recording(session=SessionInfo(producer="bench"), records=records)


def v2_bytes(rec: Recording) -> bytes:
    """``rec`` as a format-version-2 file (compact JSON, as the v2 writer saved it)."""
    doc = recording_to_dict(rec)
    doc["format_version"] = 2
    return orjson.dumps(doc)


def synthetic_v2(target_bytes: int) -> bytes:
    from bench.synthetic import make_growing

    return v2_bytes(loads_recording(make_growing(target_bytes)))


def header_of(doc: dict[str, Any]) -> Recording:
    """The header as the first paint holds it: metadata and session, no records."""
    return Recording(metadata=doc.get("metadata", {}), session=SessionInfo.model_validate(doc.get("session", {})))


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_bytes(path: Path, stmt: str) -> int:
    code = MEM_SNIPPET.format(root=str(ROOT), path=str(path), stmt=stmt.format(path=str(path)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def bench(path: Path, repeat: int) -> None:
    size = path.stat().st_size

    def read() -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    data = read()
    doc = orjson.loads(data)
    n = len(doc["records"])
    del doc

    def skeleton_paint() -> None:
        d = read()
        sk = skeleton(d, source=str(path))
        assert sk is not None
        TimelineIndex.from_columns(header_of(sk.header), sk.columns, sk.raw, source=str(path))

    def mmap_paint() -> None:
        with open(path, "rb") as fh:  # as the app maps it: copy-on-write, decoded in chunks
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        sk = skeleton(mm, source=str(path), copy_on_write=True)
        assert sk is not None
        TimelineIndex.from_columns(header_of(sk.header), sk.columns, sk.raw, source=str(path))

    def orjson_paint() -> None:
        d = orjson.loads(read())
        TimelineIndex.from_raw(header_of(d), d["records"], source=str(path))

    times = {
        "read()": median_time(read, repeat),
        "orjson.loads": median_time(lambda: orjson.loads(data), repeat),
        "skeleton()": median_time(lambda: skeleton(data, source=str(path)), repeat),
        "skeleton + from_columns": median_time(skeleton_paint, repeat),
        "mmap + skeleton + from_columns": median_time(mmap_paint, repeat),
        "orjson + from_raw": median_time(orjson_paint, repeat),
    }
    yard = times["read()"]
    print(f"  {size / 1e6:,.1f} MB, {n:,} records; medians of {repeat}")
    print(f"  {'path':<36} {'time':>9} {'x read()':>9} {'MB/s':>8} {'peak mem/file':>14}")
    labels = {
        "read()": "read() (yardstick)",
        "orjson.loads": "orjson.loads (bytes in memory)",
        "skeleton()": "skeleton() (bytes in memory)",
        "skeleton + from_columns": "first paint: read+skeleton+index",
        "mmap + skeleton + from_columns": "first paint: mmap+skeleton+index",
        "orjson + from_raw": "first paint: read+orjson+from_raw",
    }
    for name, t in times.items():
        mem = f"{peak_bytes(path, PATHS[name]) / size:.2f}x" if name in PATHS else ""
        print(f"  {labels[name]:<36} {t:>8.3f}s {t / yard:>8.2f}x {size / 1e6 / t:>8.0f} {mem:>14}")


SMALL_SNIPPET = """
import mmap, sys, time
sys.path.insert(0, {root!r})
from core.record.skeleton import skeleton
t = time.perf_counter()
with open({path!r}, 'rb') as fh:
    fh.read()
read = time.perf_counter() - t
t = time.perf_counter()
fh = open({path!r}, 'rb')
sk = skeleton(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY), source='f', copy_on_write=True)
print(read, time.perf_counter() - t, len(sk.raw))
"""


def bench_small(path: Path, repeat: int) -> None:
    """read() and mmap + skeleton() of ``path``, each run in a fresh process."""
    runs = []
    for _ in range(repeat):
        code = SMALL_SNIPPET.format(root=str(ROOT), path=str(path))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        read, sk, n = out.stdout.split()
        runs.append((float(read), float(sk), int(n)))
    read_t = statistics.median(r for r, _, _ in runs)
    sk_t = statistics.median(s for _, s, _ in runs)
    ratio = statistics.median(s / r for r, s, _ in runs)
    print(f"  {path.stat().st_size / 1e6:,.1f} MB, {runs[0][2]:,} records; medians of {repeat} fresh processes")
    print(f"  read() (yardstick)                 {read_t:>8.3f}s    1.00x")
    print(f"  mmap + skeleton()                  {sk_t:>8.3f}s {ratio:>7.2f}x  (median of per-run ratios)")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--mb", type=int, default=100, help="file size in MB")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shapes", default="issue,synthetic", help="issue, synthetic, small; comma separated")
    ap.add_argument("--records", type=int, default=1_000_000, help="records of the small shape")
    args = ap.parse_args()
    makers: dict[str, Callable[[int], bytes]] = {
        "issue": lambda b: v2_bytes(make_issue_shaped(b)),
        "synthetic": synthetic_v2,
    }
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            if shape == "small":
                from bench.app_synth import write_synthetic

                t0 = time.perf_counter()
                small = write_synthetic(Path(tmp) / "small.json", args.records)
                print(f"small shape (generated in {time.perf_counter() - t0:.1f} s):")
                bench_small(small, args.repeat)
                continue
            t0 = time.perf_counter()
            data = makers[shape](args.mb * 1_000_000)
            path = Path(tmp) / f"{shape}.json"
            path.write_bytes(data)
            del data
            print(f"{shape} shape (generated in {time.perf_counter() - t0:.1f} s):")
            bench(path, args.repeat)


if __name__ == "__main__":
    main()
