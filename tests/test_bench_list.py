"""``make bench`` runs every benchmark script: bench/run_all.py lists each one."""

from __future__ import annotations

import importlib.util

from tests.builders import ROOT


def test_run_all_lists_every_benchmark_script() -> None:
    spec = importlib.util.spec_from_file_location("bench_run_all", ROOT / "bench" / "run_all.py")
    assert spec is not None and spec.loader is not None
    run_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_all)
    helpers = {"__init__", "run_all", "synthetic", "app_synth"}  # imported by the others, not run
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")} - helpers
    assert scripts == set(run_all.SCRIPTS)
