"""Make the PNG screenshots of docs/app.md and docs/tutorial.md: the app driven by
Textual's pilot on the bundled sample-agent fault recording, saved as SVG
(``App.save_screenshot``) and converted with ``rsvg-convert`` (Debian's librsvg2-bin; the
Fira Code font, Debian's fonts-firacode, draws them as Textual means them).

Run from the checkout: ``.venv/bin/python docs/screenshots.py [app|tutorial]`` (about a
minute; both without an argument). It works in a temporary folder and writes
``docs/app-*.png`` and ``docs/tutorial-*.png``. The tutorial's pictures come from one
session driven only by keys and the fields a user fills in — the tutorial's steps, in
its order — so a change of the UI that breaks a step breaks this script.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.record.recording import Recording, ToolResult  # noqa: E402
from core.replay.branch import Policy, ToolResultIntervention, new_branch  # noqa: E402
from core.replay.replays import resume_replay, start_replay  # noqa: E402
from core.workspace import Workspace  # noqa: E402
from inspector.app import InspectorApp  # noqa: E402
from inspector.loader import load_for_view  # noqa: E402

SIZE = (160, 45)
SAMPLE = ROOT / "sample_recordings" / "sample-agent-fault-tool-error.json"
POLICY = {"order_id": "A1001", "sku": "BL-200", "eligible": True, "max_refund": 89.99}
#: what the tools the recording never called would have answered
ANSWERS = {
    "issue_refund": {"refund_id": "R-1", "order_id": "A1001", "sku": "BL-200", "amount": 89.99, "status": "issued"},
    "send_message": {"delivered": True, "customer_id": "C-1001"},
}


async def shoot(path: Path, out: Path, keys: list[str], *, workspace: Path | None = None) -> None:
    app = InspectorApp(load_for_view(path), workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
        await pilot.pause(0.3)  # the last repaint of the dry run or the tree (a worker's message)
        svg = out.with_suffix(".svg")
        app.save_screenshot(str(svg))
    subprocess.run(["rsvg-convert", str(svg), "-o", str(out)], check=True)
    svg.unlink()
    print("wrote", out.relative_to(ROOT))


def _save(app: InspectorApp, out: Path | None) -> None:
    if out is None:  # a rehearsal (the tutorial's test): the steps, no pictures
        return
    svg = out.with_suffix(".svg")
    app.save_screenshot(str(svg))
    subprocess.run(["rsvg-convert", str(svg), "-o", str(out)], check=True)
    svg.unlink()
    print("wrote", out.relative_to(ROOT))


async def tutorial(pictures: bool = True) -> dict[str, object]:
    """docs/tutorial.md's session: first error, a branch that answers the failed call,
    its replay beside the base, a sweep ranking the calls, the audit of the new answer.
    ``pictures=False`` runs the steps without saving pictures; returns what each step
    reached (for the tutorial's test)."""
    from textual.widgets import Checkbox, Input, Select

    from inspector.screens.branch_editor import BranchEditorScreen
    from inspector.screens.compare import CompareScreen
    from inspector.screens.effects import EffectsScreen, SweepScreen
    from inspector.screens.timeline import TimelineScreen
    from inspector.widgets.branch_tree import BranchTreePanel
    from inspector.widgets.json_editor import JsonEditor
    from inspector.widgets.timeline_table import TimelineTable

    docs = ROOT / "docs"
    seen: dict[str, object] = {}

    def shot(name: str) -> Path | None:
        return docs / name if pictures else None

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)
        base_path = tmp / "support-run.json"
        shutil.copy(SAMPLE, base_path)
        app = InspectorApp(load_for_view(base_path))  # the default workspace, ./.chassis-inspector

        async def settle(pilot, rounds: int = 6) -> None:
            for _ in range(rounds):
                await app.workers.wait_for_complete()
                await pilot.pause()

        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("f")  # the first error: the failed policy check
            await settle(pilot)
            seen["first_error"] = app.screen.index.seqs[app.screen.query_one(TimelineTable).cursor]
            _save(app, shot("tutorial-1-first-error.png"))

            await pilot.press("B")  # a branch at that call
            await settle(pilot)
            editor = app.screen
            assert isinstance(editor, BranchEditorScreen)
            await asyncio.wait_for(editor.settled(), timeout=60)
            area = editor.query_one(JsonEditor).area
            lines = area.text.split("\n")
            area.replace(
                '{\n  "content": ' + json.dumps(POLICY) + "\n}",
                (0, 0),
                (len(lines) - 1, len(lines[-1])),
            )
            await pilot.pause()
            editor.query_one("#pol-tool", Select).value = "live"
            await pilot.pause()
            await asyncio.wait_for(editor.settled(), timeout=60)
            await settle(pilot)
            assert editor.last is not None
            seen["dry_run"] = dict(editor.last.counts)
            _save(app, shot("tutorial-2-branch.png"))

            await pilot.press("ctrl+r")  # save and replay: consent to the named executor
            await pilot.pause()
            await pilot.press("y")
            await settle(pilot, 12)
            timeline = app.screen
            assert isinstance(timeline, TimelineScreen)
            panel = timeline.query_one(BranchTreePanel)
            if not panel.shown:
                await pilot.press("T")
                await settle(pilot)
            replay = next(r for r in panel.view.rows if r.kind == "replay")
            seen["replay"] = (replay.ident, app.replay_runner.runs[replay.ident].status)
            assert panel.view.go_to("replay", replay.ident)
            await settle(pilot)
            _save(app, shot("tutorial-3-replayed.png"))

            await pilot.press("C")  # the replay beside the base
            await settle(pilot)
            assert isinstance(app.screen, CompareScreen)
            op = app.screen.comparison.rows[app.screen.table.cursor]
            seen["divergence"] = (op.op, op.base_seq)
            _save(app, shot("tutorial-4-compare.png"))
            await pilot.press("escape")
            await settle(pilot)

            await pilot.press("W")  # effects; s sweeps every call
            await settle(pilot)
            effects = app.screen
            assert isinstance(effects, EffectsScreen)
            await pilot.press("s")
            await pilot.pause()
            dialog = app.screen
            assert isinstance(dialog, SweepScreen)
            dialog.query_one("#sweep-executor", Checkbox).value = True
            dialog.query_one("#sweep-jobs", Input).value = "2"
            await pilot.pause()
            dialog.query_one("#sweep-start").press()
            await settle(pilot)
            while effects._sweeping:
                await pilot.pause(0.1)
            await settle(pilot)
            seen["effects"] = [(e["seq"], e["outcome"]["direction"], e["score"]) for e in effects.effects]
            _save(app, shot("tutorial-5-effects.png"))
            await pilot.press("escape")
            await settle(pilot)

            # the new answer's lineage: the replay's events, audited
            timeline = app.screen
            panel = timeline.query_one(BranchTreePanel)
            panel.show()
            await settle(pilot)
            assert panel.view.go_to("replay", replay.ident)
            await pilot.press("enter")
            await settle(pilot)
            events = app.screen
            assert isinstance(events, TimelineScreen) and events is not timeline
            await pilot.press("L")
            await settle(pilot)
            seen["audit"] = app.screen
            _save(app, shot("tutorial-6-audit.png"))
    return seen


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)
        base_path = tmp / SAMPLE.name
        shutil.copy(SAMPLE, base_path)
        base = Recording.load(base_path)
        ws_path = Path(".chassis-inspector")  # the default workspace, in the temporary folder
        await shoot(base_path, ROOT / "docs" / "app-branch-editor.png", ["e", "B"])
        branch = new_branch(
            base,
            str(base_path),
            at=8,
            interventions=[ToolResultIntervention(seq=8, result=ToolResult(content=POLICY))],
            policy=Policy(model="live"),
            label="policy answers",
        )
        with Workspace.open(ws_path) as ws:
            ws.add_branch(branch, base, str(base_path))
            rec, _ = start_replay(ws, base_path, branch, executor="recorded", trust_executor=True, events_file=True)
        await shoot(base_path, ROOT / "docs" / "app-requirements.png", ["o"], workspace=ws_path)
        with Workspace.open(ws_path) as ws:
            while rec.status == "paused":  # answer what nobody recorded, as the docs' walkthrough does
                for req in ws.requirements(open_only=True, replay_id=rec.id):
                    ws.attach_fixture(req.id, {"content": ANSWERS[req.name]}, source="docs/screenshots.py")
                rec, _ = resume_replay(ws, rec.id, executor="recorded", trust_executor=True, events_file=True)
            events = ws.events_file(rec.id)
        await shoot(base_path, ROOT / "docs" / "app-branch-tree.png", ["T"], workspace=ws_path)
        await shoot(events, ROOT / "docs" / "app-replay-sources.png", ["g", "9", "enter"], workspace=ws_path)


if __name__ == "__main__":
    which = sys.argv[1:] or ["app", "tutorial"]
    if "app" in which:
        asyncio.run(main())
    if "tutorial" in which:
        asyncio.run(tutorial())
