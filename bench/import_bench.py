"""Import speed on the large-input case: tau-bench, 4.1 MB, 200 runs.

Prints the time to parse the file with orjson alone (the floor), to import every run
(detection, conversion, canonical keys, redaction), to import one run for viewing
(``open_any``), and to save all 200 recordings; with the ratio to the orjson floor.

    .venv/bin/python -m bench.import_bench [FILE] [--repeat N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson

from core.importers import detect, import_file, open_any
from core.record.io import save_recording

DEFAULT = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"
)


def best(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path: Path = args.file
    size = path.stat().st_size
    data = path.read_bytes()
    floor = best(lambda: orjson.loads(data), args.repeat)
    t_detect = best(lambda: detect(path), args.repeat)
    t_import = best(lambda: import_file(path), args.repeat)
    runs = import_file(path)
    records = sum(len(r.recording.records) for r in runs)
    t_open = best(lambda: open_any(path), args.repeat)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        for i, r in enumerate(runs):
            save_recording(r.recording, Path(d) / f"{i}.json")
        t_save = time.perf_counter() - t0
    print(f"file            {path.name}  {size / 1e6:.1f} MB, {len(runs)} runs, {records} records")
    print(f"orjson parse    {floor * 1000:8.1f} ms   (floor)")
    print(f"detect          {t_detect * 1000:8.1f} ms")
    print(
        f"import all      {t_import * 1000:8.1f} ms   ×{t_import / floor:.1f} the orjson parse, "
        f"{size / 1e6 / t_import:.1f} MB/s, {t_import / len(runs) * 1000:.2f} ms per run"
    )
    print(f"open one run    {t_open * 1000:8.1f} ms   (open_any: import + pick + digest)")
    print(f"save all runs   {t_save * 1000:8.1f} ms   ({len(runs)} files, atomic writes)")


if __name__ == "__main__":
    main()
