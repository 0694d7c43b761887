"""Benchmark: loading recordings (parse + validation) against plain orjson.loads.

Prints, for synthetic recordings of 10 MB and 100 MB (growing chat history):
median wall time of ``orjson.loads`` and of ``Recording.loads`` (parse, version check,
pydantic validation, seq/tool_call_id checks, RFC 8785 canonicalization + digest
verification; keys are sealed by the digest), their ratio (target ≤ 3x); the same with
every key recomputed (``verify_keys=True``, what ``validate`` does); and peak memory as
a ratio to file size (fresh subprocess, VmHWM growth from before the file is read, file bytes included),
beside orjson's own.

Usage: python bench/load_bench.py [--sizes 10,100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.synthetic import make_growing  # noqa: E402
from core.record.io import loads_recording  # noqa: E402

MEM_SNIPPET = """
import sys
sys.path.insert(0, {root!r})
from core.record.io import loads_recording
import orjson
def hwm():  # VmHWM: this process image's peak RSS (ru_maxrss would inherit the parent's)
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) * 1024
base = hwm()
data = open({path!r}, 'rb').read()
{stmt}
print(hwm() - base)
"""


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_bytes(path: Path, stmt: str) -> int:
    root = str(Path(__file__).resolve().parents[1])
    code = MEM_SNIPPET.format(root=root, path=str(path), stmt=stmt)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100", help="sizes in MB, comma separated")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(
        f"{'size':>8} {'records':>8} {'orjson.loads':>13} {'Recording.loads':>16} {'ratio':>6} "
        f"{'keys checked':>13} {'ratio':>6} {'peak mem/file':>14} {'(orjson)':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (int(s) for s in args.sizes.split(",")):
            data = make_growing(mb * 1_000_000)
            path = Path(tmp) / f"r{mb}.json"
            path.write_bytes(data)
            n = len(orjson.loads(data)["records"])
            t_orjson = median_time(lambda: orjson.loads(data), args.repeat)  # noqa: B023 (timed within this iteration)
            t_full = median_time(lambda: loads_recording(data), args.repeat)  # noqa: B023 (timed within this iteration)
            t_keys = median_time(lambda: loads_recording(data, verify_keys=True), args.repeat)  # noqa: B023 (timed within this iteration)
            mem = peak_bytes(path, "r = loads_recording(data)")
            mem_orjson = peak_bytes(path, "r = orjson.loads(data)")
            print(
                f"{len(data) / 1e6:>6.1f}MB {n:>8} {t_orjson * 1000:>11.1f}ms {t_full * 1000:>14.1f}ms "
                f"{t_full / t_orjson:>5.2f}x {t_keys * 1000:>11.1f}ms {t_keys / t_orjson:>5.2f}x "
                f"{mem / len(data):>13.2f}x {mem_orjson / len(data):>8.2f}x"
            )


if __name__ == "__main__":
    main()
