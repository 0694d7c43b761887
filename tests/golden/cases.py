"""The CLI outputs held byte-identical across refactorings (golden files).

Each case is a list of CLI arguments run in a scratch folder that holds copies of the
sample recordings under short names; :func:`normalize` replaces what legitimately
changes from run to run (generated ids, timestamps, the scratch folder) so the rest
can be compared byte for byte. ``python -m tests.golden.cases`` rewrites the golden
files; do that only when an output is meant to change, and say why in the commit.
"""

from __future__ import annotations

import io
import re
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"
GOLDEN = ROOT / "tests" / "data" / "golden"

#: short name -> bundled sample recording
FILES = {
    "sa-fail.json": "sample-agent-fault-tool-error.json",
    "sa-ok.json": "sample-agent-success.json",
    "swe.json": "swe-agent-pydicom-1458.json",
    "tau0.json": "tau-bench-airline-task5-trial0.json",
    "tau1.json": "tau-bench-airline-task5-trial1.json",
    "vcr.json": "vcr-anthropic-parallel-tools.json",
}

#: case name -> CLI argument lists run in order (setup steps first; every output kept)
CASES: dict[str, list[list[str]]] = {}


def _add(name: str, *steps: list[str]) -> None:
    CASES[name] = list(steps)


for _f in ("sa-fail.json", "swe.json", "tau0.json", "vcr.json"):
    _stem = _f.removesuffix(".json")
    _add(f"info-{_stem}", ["info", _f])
    _add(f"info-{_stem}-json", ["info", _f, "--json"])
    _add(f"timeline-{_stem}", ["timeline", _f])
    _add(f"timeline-{_stem}-json", ["timeline", _f, "--json"])
    _add(f"audit-{_stem}", ["audit", _f])
    _add(f"audit-{_stem}-json", ["audit", _f, "--json"])
    _add(
        f"dryrun-{_stem}",
        ["branch", "new", _f, "--at", "2", "-o", "b.json"],
        ["replay", _f, "--branch", "b.json", "--dry-run"],
    )
    _add(
        f"dryrun-{_stem}-json",
        ["branch", "new", _f, "--at", "2", "-o", "b.json"],
        ["replay", _f, "--branch", "b.json", "--dry-run", "--json"],
    )

for _a, _b in (
    ("sa-fail.json", "sa-ok.json"),
    ("tau0.json", "tau1.json"),
    ("swe.json", "vcr.json"),
    ("vcr.json", "vcr.json"),
):
    _n = f"diff-{_a.removesuffix('.json')}-{_b.removesuffix('.json')}"
    _add(_n, ["diff", _a, _b])
    _add(f"{_n}-json", ["diff", _a, _b, "--json"])

_add("audit-sa-fail-markdown", ["audit", "sa-fail.json", "--markdown"])

_replay_sa = [
    ["branch", "new", "sa-fail.json", "--at", "3", "-o", "b.json"],
    ["replay", "sa-fail.json", "--branch", "b.json"],
]
_add("effects-sa-fail", *_replay_sa, ["effects"])
_add("effects-sa-fail-json", *_replay_sa, ["effects", "--json"])
_replay_swe = [["branch", "new", "swe.json", "--at", "2", "-o", "b.json"], ["replay", "swe.json", "--branch", "b.json"]]
_add("effects-swe", *_replay_swe, ["effects"])
_add("effects-swe-json", *_replay_swe, ["effects", "--json"])

_ID = re.compile(r"\b(rp|br|req|fx|is)-[0-9a-f]{8,}\b")
_TS = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_DUR = re.compile(r'("(?:wall_seconds|elapsed_seconds|live_seconds)"\s*:\s*)[0-9.e-]+')


def normalize(text: str, scratch: Path) -> str:
    """Replace generated ids, wall-clock timestamps and the scratch folder's path."""
    ids: dict[str, str] = {}

    def _id(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"{m.group(1)}-<{len(ids)}>")

    text = text.replace(str(scratch.resolve()) + "/", "").replace(str(scratch) + "/", "")
    text = _ID.sub(_id, text)
    return _TS.sub("<time>", text)


def run_case(name: str, scratch: Path) -> str:
    """Run one case in ``scratch`` (emptied first); return its normalized transcript."""
    from inspector.cli import main

    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    for short, sample in FILES.items():
        shutil.copy(SAMPLES / sample, scratch / short)
    parts: list[str] = []
    old = Path.cwd()
    import os

    os.chdir(scratch)
    try:
        for args in CASES[name]:
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(list(args))
            parts.append(f"$ chassis-inspector {' '.join(args)}\n[exit {code}]\n{out.getvalue()}")
            if err.getvalue():
                parts.append(f"[stderr]\n{err.getvalue()}")
    finally:
        os.chdir(old)
    return normalize("".join(parts), scratch)


def main() -> None:
    import tempfile

    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(CASES if len(sys.argv) < 2 else sys.argv[1:]):
            (GOLDEN / f"{name}.txt").write_text(run_case(name, Path(tmp) / "w"))
            print(name)


if __name__ == "__main__":
    main()
