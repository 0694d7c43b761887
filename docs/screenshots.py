"""Make the PNG screenshots of docs/app.md: the app driven by Textual's pilot on the
bundled sample-agent fault recording, saved as SVG (``App.save_screenshot``) and
converted with ``rsvg-convert`` (Debian's librsvg2-bin; the Fira Code font, Debian's
fonts-firacode, draws them as Textual means them).

Run from the checkout: ``.venv/bin/python docs/screenshots.py`` (about a minute). It works
in a temporary folder and writes ``docs/app-*.png``.
"""

from __future__ import annotations

import asyncio
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
    asyncio.run(main())
