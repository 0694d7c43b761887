"""The effects modules are headless: importing them loads no textual and no inspector."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_effects_modules_import_without_textual():
    code = (
        "import sys\n"
        "import core.effects, core.causal, core.sweep, core.knockout\n"
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.') or m.startswith('inspector')]\n"
        "assert not bad, bad\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[3], check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
