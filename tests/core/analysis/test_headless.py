"""The analysis modules are headless: importing and using them loads no textual/inspector."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_analysis_modules_import_without_textual():
    code = (
        "import sys\n"
        "import core.align, core.diff, core.payload_diff, core.metrics, core.audit\n"
        "from tests.core.analysis.builders import stream\n"
        "core.diff.trace_diff(stream('AB'), stream('AC'))\n"
        "core.metrics.run_metrics([stream('AB')])\n"
        "core.audit.audit(stream('AB'))\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.') or m.startswith('inspector')]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[3], check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
