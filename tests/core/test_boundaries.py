"""The core/UI boundary and the package's import hygiene.

``core`` is headless (SPEC "Application": the app is one client of the core library):
importing any core module loads neither ``textual``, ``typer`` nor ``inspector``; the
version string loads nothing; no docstring or comment cites a tracker issue in place
of the rule it implements.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.builders import ROOT


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_core_module_imports_without_ui_packages():
    code = (
        "import importlib, pkgutil, sys, core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'core.')\n"
        "         if not m.name.endswith('.__main__')]\n"
        "for n in names: importlib.import_module(n)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'typer', 'inspector'))\n"
        "assert not bad, bad\n"
        "print(len(names))\n"
    )
    found = int(_run(code).strip())
    # the walk must really see the package tree: every module file below core/ is one module
    # (``__main__`` scripts are run, not imported: core.record.schema's writes the schema file)
    expected = sum(
        1
        for p in (ROOT / "core").rglob("*.py")
        if p.name != "__main__.py" and (p.name != "__init__.py" or p.parent != ROOT / "core")
    )
    assert found == expected


def test_version_loads_no_other_core_module():
    code = (
        "import sys\n"
        "from core import __version__\n"
        "print(__version__, sorted(m for m in sys.modules if m.startswith('core')))\n"
    )
    version, loaded = _run(code).strip().split(" ", 1)
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert loaded == "['core']"


def test_curated_api_loads_lazily_and_completely():
    import core

    for name in core.__all__:
        assert getattr(core, name) is not None
    assert set(core.__all__) <= set(dir(core))
    assert core.__all__ == list(core._API)  # the literal list and the lazy map agree


_ISSUE_CITATION = re.compile(
    r"\b(?:issue|task)\s*#?\s*\d+\s*(?:,\s*)?(?:point|item)\b|\((?:issue|task)\s*#?\d+\b", re.IGNORECASE
)


def test_no_source_cites_a_tracker_issue():
    hits = []
    for folder in ("core", "inspector", "tests", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.resolve() == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _ISSUE_CITATION.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_issue_citation_pattern_catches_the_old_forms():
    for text in (
        "Dry run (issue 5, point 8): x",
        "rules from issue 5, point 2",
        "(issue 3: imported",
        "task 4 point 2",
    ):
        assert _ISSUE_CITATION.search(text), text
    assert not _ISSUE_CITATION.search("a real SWE-agent run (pydicom issue 1458)")
