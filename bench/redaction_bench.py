"""What redaction adds to importing a large recording (docs/format.md, "Redaction").

Builds a tau-bench file of about ``--mb`` MB from the real trace in ``tests/data``
(``gpt-4o-airline.json``, its 200 runs copied until the size is reached), every string
longer than 20 characters made unique in each copy (a tag appended) so nothing repeats
between copies: every string is new to the detector, the worst case for redaction, whose
cost is per distinct text. The detector's cache of texts seen is emptied before every
timed run, and detect-secrets' plugins (loaded once per process, about 0.15 s) are loaded
before the first. Then times, alternating the two so load on the machine hits both
alike, ``--repeat`` times each:

* **import** — ``import_file`` (detection, conversion, keys, and the importer's
  redaction: field names, shapes, names in text, propagation);
* **import + save** — the same, then every run saved (``save_recording``: redaction again,
  keys, digest, an atomic write) into a folder on ``/dev/shm`` when there is one;

with redaction and without it (the importer's redactor turned off —
``core.importers._build.default_redactor`` returning ``None``, the ``RunBuilder``
redactor flag the tests of raw mapping use — and the save-time pass skipped). Prints the
medians of process (CPU) time and wall time and the ratio with / without; the target is
≤ 1.30.

    .venv/bin/python -m bench.redaction_bench [--mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.importers import _build, import_file  # noqa: E402
from core.record import io  # noqa: E402
from core.record.io import save_recording  # noqa: E402
from core.record.redaction import _DETECTOR, clear_caches  # noqa: E402

SOURCE = ROOT / "tests" / "data" / "real_traces" / "tau_bench" / "gpt-4o-airline.json"


def _tagged(value: Any, tag: str) -> Any:
    if type(value) is str:
        return f"{value} [{tag}]" if len(value) > 20 else value
    if type(value) is dict:
        return {k: _tagged(v, tag) for k, v in value.items()}
    if type(value) is list:
        return [_tagged(v, tag) for v in value]
    return value


def build_source(mb: float, path: Path) -> int:
    """Write a tau-bench file of about ``mb`` MB to ``path``; return its size in bytes."""
    runs = orjson.loads(SOURCE.read_bytes())
    one = len(orjson.dumps(_tagged(runs, "0.0")))
    copies = max(1, math.ceil(mb * 1e6 / one))
    out = []
    for i in range(copies):
        for j, r in enumerate(runs):
            r2 = _tagged(r, f"{i}.{j}")
            r2["task_id"] = f"{r.get('task_id')}-{i}"
            out.append(r2)
    path.write_bytes(orjson.dumps(out))
    return path.stat().st_size


@contextlib.contextmanager
def redaction(on: bool) -> Iterator[None]:
    """Redaction as the product does it (``on``), or turned off in the importer and on save."""
    if on:
        yield
        return
    with (
        mock.patch.object(_build, "default_redactor", lambda: None),
        mock.patch.object(io, "_redact_recording", lambda rec, redactor=None: 0),
    ):
        yield


def timed(fn: Any) -> tuple[float, float]:
    """(process seconds, wall seconds) of ``fn()``, after a full collection, with the
    detector's cache of texts seen emptied (each run sees every text for the first time)."""
    clear_caches()
    gc.collect()
    c, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="size of the source file (MB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-save", action="store_true", help="time the import only")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="redaction-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        src = work / "tau-bench-large.json"
        size = build_source(args.mb, src)
        out = work / "out"
        out.mkdir()

        def import_only() -> None:
            import_file(src)

        def import_and_save() -> None:
            for i, run in enumerate(import_file(src)):
                save_recording(run.recording, out / f"{i}.json")

        _DETECTOR.load()  # detect-secrets' plugins, loaded once per process (about 0.15 s), not timed
        cases = [("import", import_only)] + ([] if args.no_save else [("import + save", import_and_save)])
        results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
        for _ in range(args.repeat):
            for name, fn in cases:
                for on in (False, True):
                    with redaction(on):
                        results.setdefault((name, on), []).append(timed(fn))
        runs = len(import_file(src))
        print(f"source          {src.name}  {size / 1e6:.1f} MB, {runs} runs (every string distinct)")
        print(f"repeats         {args.repeat} (alternating with / without); medians")
        for name, _ in cases:
            off_c = statistics.median(c for c, _ in results[(name, False)])
            on_c = statistics.median(c for c, _ in results[(name, True)])
            off_w = statistics.median(w for _, w in results[(name, False)])
            on_w = statistics.median(w for _, w in results[(name, True)])
            print(
                f"{name:<15} without {off_c:7.2f} s cpu ({off_w:6.2f} s wall)   with {on_c:7.2f} s cpu "
                f"({on_w:6.2f} s wall)   ratio {on_c / off_c:.2f} cpu, {on_w / off_w:.2f} wall"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
