"""Run every benchmark in ``bench/`` one after the other (``make bench``).

    python bench/run_all.py [--quick] [NAME ...]

Each script prints its own figures and ratios to a yardstick measured in the same run
(docs/performance.md quotes them). ``--quick`` uses small sizes and one repeat — a smoke
run that proves every script still works, not figures to quote. NAMEs pick scripts by
file name (``audit_bench``, ``load_bench`` …). Exits non-zero when any script fails, after
running the rest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: script -> (full arguments, quick arguments)
SCRIPTS: dict[str, tuple[list[str], list[str]]] = {
    "load_bench": ([], ["--sizes", "2", "--repeat", "1"]),
    "import_bench": ([], ["--repeat", "1"]),
    "replay_throughput": ([], ["--sizes", "1000", "--repeat", "1", "--vcr-sizes", "250"]),
    "diff_bench": ([], ["--records", "5000", "--payload-mb", "0.5", "--repeat", "1", "--skip-plain"]),
    "audit_bench": ([], ["--sizes", "1000,2000", "--repeat", "1"]),
    "effects_ranking": ([], ["--replays", "500", "--candidates", "20", "--repeat", "1"]),
    "effects_sweep_jobs": ([], ["--latency-ms", "2", "--jobs", "1,2"]),
    "attribution": ([], []),
    "vcr_otel_bench": ([], ["--turns", "40", "--repeat", "1"]),
    "redaction_bench": ([], ["--mb", "5", "--repeat", "1"]),
    "app_latency": ([], ["--sizes", "2000"]),
    "branch_tree_bench": ([], ["--branches", "100", "--replays", "1000", "--calls", "2000", "--repeat", "1"]),
    "compare_bench": ([], ["--records", "2000", "--presses", "30", "--repeat", "1"]),
    "effects_screen_bench": ([], ["--replays", "1000", "--candidates", "50", "--presses", "20", "--repeat", "1"]),
    "proxy_bench": ([], ["--calls", "300"]),
    "claude_code_bench": ([], ["--mb", "2", "--repeat", "1"]),
    "import_scale_bench": ([], ["--steps", "20", "--mb", "2", "--repeat", "1"]),
    "skeleton_bench": ([], ["--mb", "2", "--repeat", "1"]),
    "scale_bench": ([], ["--quick"]),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    ap.add_argument("names", nargs="*", help="scripts to run (default: all)")
    args = ap.parse_args()
    unknown = [n for n in args.names if n not in SCRIPTS]
    if unknown:
        ap.error(f"no benchmark named {', '.join(unknown)} (choose from {', '.join(SCRIPTS)})")
    # the scripts import ``bench.*`` helpers: the repository root goes on their path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
    failed = []
    for name in args.names or SCRIPTS:
        full, quick = SCRIPTS[name]
        cmd = [sys.executable, str(HERE / f"{name}.py"), *(quick if args.quick else full)]
        print(f"\n=== {name} {' '.join(cmd[2:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, env=env).returncode
        print(f"=== {name}: exit {rc} after {time.perf_counter() - t0:.1f} s", flush=True)
        if rc != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
