"""docs/tutorial.md works as written: its steps, driven by keys and the fields a user
fills in (``docs/screenshots.py tutorial``, which makes the tutorial's pictures), reach
what the text says — the first error at the planted fault, a dry run with one
intervention, a replay that succeeds, compare on the intervention, the fault ranked
first by the sweep with every other call at score 0, and the audit of the new answer."""

from __future__ import annotations

import importlib.util

from core.record.recording import Recording
from tests.builders import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("docs_screenshots", ROOT / "docs" / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_tutorial_steps_reach_what_the_tutorial_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the script works in a temporary folder of its own
    script = _script()
    fault = Recording.load(script.SAMPLE).metadata["fault"]["seq"]
    seen = await script.tutorial(pictures=False)
    assert seen["first_error"] == fault == 8
    assert seen["dry_run"]["intervention"] == 1 and seen["dry_run"]["live"] >= 1
    assert seen["replay"][1] == "completed"
    assert seen["divergence"] == ("changed", fault)
    effects = seen["effects"]
    top = [e for e in effects if e[2] == effects[0][2]]
    assert {e[0] for e in top} == {fault} and all(e[1] == "fixes" for e in top)
    assert all(e[2] == 0 and e[1] == "none" for e in effects[len(top) :])
    # the audit of the replay's new answer: the refund's confirmation, which read the
    # policy answer the intervention supplied
    from inspector.screens.audit import AuditScreen

    screen = seen["audit"]
    assert isinstance(screen, AuditScreen) and screen.report is not None
    report = screen.report
    assert "refund" in str(report.final_output).lower()
    assert fault in {c.seq for c in report.contributed()}
