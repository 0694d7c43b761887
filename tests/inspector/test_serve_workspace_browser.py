"""``chassis-inspector serve RUN --workspace DIR`` in a headless Chromium: the workspace the
server names is the one the browser's app shows.

The workspace holds a branch of the served run and a completed replay of it (made with
core, as ``branch new`` and ``replay`` store them). The page is opened through the link
``serve`` printed (loopback only; every other request is blocked), and what the page shows
is read from the terminal's own screen buffer: textual-serve draws xterm.js on a canvas, so
the test serves its ``textual.js`` with one statement added that keeps the page's terminal
in ``window.__chassisTerminal`` (nothing else changes). Keys are typed into the page.

Reuses ``serve_cli`` (its built recording ``served-run.json`` in ``tmp_path``), the
browser launcher and the Chromium guard of ``test_serve``; skipped, with the reason, when
``/usr/bin/chromium`` or Playwright is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.record.recording import Recording, ToolResult
from core.replay.branch import BranchDraft, Policy, ToolResultIntervention, resolve_branch
from core.replay.replays import start_replay
from core.workspace import Workspace
from tests.inspector.test_serve import (
    Served,
    _browser,
    _local_only,
    _stop,
    needs_chromium,
    serve_cli,  # noqa: F401 - the fixture, used by name
)

BRANCH_ID = "br-web-0a1b2c"
REPLAY_ID = "rp-web-5e6f7a"
CHECKPOINT = 2  # the run's first model call

#: the statement of textual.js that makes the page's terminal (``w`` wraps xterm.js)
TERMINAL_MADE = "const t=new w(e,{ping:r});"
#: the terminal's screen as text, one line per row (null until the terminal exists)
SCREEN_JS = """() => {
  const t = window.__chassisTerminal;
  if (!t) return null;
  const buffer = t.terminal.buffer.active;
  const rows = [];
  for (let y = 0; y < t.terminal.rows; y++) {
    const row = buffer.getLine(buffer.viewportY + y);
    rows.push(row ? row.translateToString(true) : "");
  }
  return rows.join("\\n");
}"""


def build_workspace(base_path: Path, ws_path: Path) -> None:
    """A branch of ``base_path`` at its first model call, and a completed replay of it
    (its events file written, as the CLI writes it)."""
    base = Recording.load(base_path)
    with Workspace.open(ws_path) as ws:
        draft = BranchDraft(str(base_path), CHECKPOINT, [], Policy(), None, None, BRANCH_ID)
        branch = resolve_branch(ws, draft, base)
        ws.add_branch(branch, base, str(base_path))
        record, _ = start_replay(ws, str(base_path), branch, base=base, replay_id=REPLAY_ID, events_file=True)
        assert record.status == "completed"
        assert ws.events_file(REPLAY_ID).exists()


def expose_terminal(page, served: Served) -> list[bool]:
    """Serve textual.js with the terminal kept in ``window.__chassisTerminal``; the list
    returned gets one entry per script served (whether the statement was found)."""
    patched: list[bool] = []

    def handle(route) -> None:
        response = route.fetch()
        body = response.text()
        patched.append(body.count(TERMINAL_MADE) == 1)
        route.fulfill(
            response=response, body=body.replace(TERMINAL_MADE, TERMINAL_MADE + "window.__chassisTerminal=t;")
        )

    # registered after _local_only: Playwright runs the newest matching route first
    page.route(lambda url: url.startswith(served.base) and url.split("?")[0].endswith("/js/textual.js"), handle)
    return patched


def open_served(browser, served: Served):
    """A page of ``served`` (loopback only, the terminal exposed) once the timeline of
    the served run is drawn, the terminal focused for keys."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    _local_only(page, served)
    patched = expose_terminal(page, served)
    page.goto(served.url, wait_until="domcontentloaded")
    wait_for_screen(page, "served-run.json", "17 records", "harness.shutdown", timeout=45)
    assert patched == [True]
    page.evaluate("() => window.__chassisTerminal.terminal.focus()")
    return page


def screen_text(page) -> str:
    return page.evaluate(SCREEN_JS) or ""


def wait_for_screen(page, *needles: str, timeout: float = 30) -> str:
    """Wait until the terminal's screen shows every needle; its text (fails with the
    screen as it was)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    script = f"(needles) => {{ const s = ({SCREEN_JS})(); return s !== null && needles.every((n) => s.includes(n)); }}"
    try:
        page.wait_for_function(script, arg=list(needles), timeout=timeout * 1000, polling=100)
    except PlaywrightTimeout:
        pytest.fail(f"the page never showed {needles!r}; the screen was:\n{screen_text(page)}")
    return screen_text(page)


@pytest.mark.browser
@needs_chromium
def test_the_browser_shows_the_served_workspace(serve_cli, tmp_path):  # noqa: F811
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base_path = tmp_path / "served-run.json"  # serve_cli's recording
    assert base_path.exists()
    ws_path = tmp_path / "ws"
    build_workspace(base_path, ws_path)
    served = serve_cli("--workspace", str(ws_path), "--host", "127.0.0.1")
    assert served.url.startswith("http://127.0.0.1:")

    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            _local_only(page, served)
            patched = expose_terminal(page, served)
            page.goto(served.url, wait_until="domcontentloaded")
            # the timeline of the served run is drawn first; the tree is hidden
            screen = wait_for_screen(page, "served-run.json", "17 records", "harness.shutdown", timeout=45)
            assert patched == [True]
            assert BRANCH_ID not in screen and REPLAY_ID not in screen

            # T: the branch tree of the workspace, beside the timeline
            page.evaluate("() => window.__chassisTerminal.terminal.focus()")
            page.keyboard.press("T")
            screen = wait_for_screen(page, "◆ served-run.json  1 branch", REPLAY_ID)
            lines = [ln.strip() for ln in screen.splitlines()]
            assert any(f"▾ {BRANCH_ID}  @{CHECKPOINT} · 0 iv" in ln for ln in lines), screen
            assert any(f"✓ {REPLAY_ID} completed" in ln for ln in lines), screen
            assert "Branches · workspace" in screen  # the tree names its workspace (the path is cut)

            # End, enter: the replay's events open as a timeline, every call answered as recorded
            page.keyboard.press("End")
            page.keyboard.press("Enter")
            screen = wait_for_screen(page, f"{REPLAY_ID}.json", "source", "= recorded 14")  # its chip
            assert "harness.shutdown" in screen
            lines = screen.splitlines()
            header = next(i for i, ln in enumerate(lines) if re.match(r"^\s*seq\s+kind\s+name\b", ln))
            assert "source" in lines[header]
            calls = {
                int(m[1]): ln
                for ln in lines[header + 1 :]
                if (m := re.match(r"^\s*(\d+) (?:model|tool|interrupt) ", ln))
            }
            assert sorted(calls) == list(range(2, 16)), screen  # 7 model, 6 tool, 1 interrupt call
            assert all("= rec" in ln for ln in calls.values()), screen  # (the column is short at this width)
            assert not any(chip in screen for chip in ("✎ intervention", "▣ fixture", "↯ live")), screen
        finally:
            browser.close()


LABEL = "web label 7"  # typed into the editor's label field
TOOL_SEQ = 3  # the run's first tool call (bash ``ls src``): the checkpoint chosen


@pytest.mark.browser
@needs_chromium
def test_a_branch_made_in_the_browser_is_stored_in_the_served_workspace(serve_cli, tmp_path):  # noqa: F811
    """Select a tool call with the keys, ``B``, keep the intervention it is prefilled with
    (the recorded result), type a label, ``ctrl+s``; ``T`` shows the branch in the tree,
    and the workspace on disk holds it, as core reads it."""
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base_path = tmp_path / "served-run.json"  # serve_cli's recording
    ws_path = tmp_path / "ws"  # does not exist yet: saving the branch creates it
    served = serve_cli("--workspace", str(ws_path), "--host", "127.0.0.1")

    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = open_served(browser, served)

            # the cursor starts on seq 0 (the snapshot); three rows down is the first tool call
            wait_for_screen(page, "seq 0  snapshot")
            for _ in range(TOOL_SEQ):
                page.keyboard.press("ArrowDown")
            wait_for_screen(page, f"seq {TOOL_SEQ}  tool  bash")

            # B: the editor of a new branch at seq 3, a tool_result prefilled with the recorded result
            page.keyboard.press("B")
            screen = wait_for_screen(page, "New branch br-", "✓ 1 tool_result at seq 3", "✓ valid: 1 intervention(s)")
            title = re.search(r"New branch (br-[0-9a-f]+) of served-run\.json", screen)
            assert title is not None, screen
            branch_id = title[1]
            lines = screen.splitlines()
            checkpoint_row = next(i for i, ln in enumerate(lines) if ln.strip().startswith("checkpoint (seq)"))
            assert lines[checkpoint_row + 1].split("▕")[0].strip() == str(TOOL_SEQ), screen
            assert '"content": "dates.py\\nparser.py\\n__init__.py"' in screen  # the recorded value
            assert "✎ intervention 1" in screen  # the dry run: seq 3 is answered by it

            # escape leaves the JSON text (the footer offers the screen's keys again), then
            # tab moves through save, save & replay, export and the checkpoint to the label
            page.keyboard.press("Escape")
            wait_for_screen(page, "q Quit")
            for _ in range(5):
                page.keyboard.press("Tab")
            # ctrl+g (first problem) only says the branch is valid: once that is shown,
            # the tabs before it are handled and the label field has the focus
            page.keyboard.press("Control+g")
            wait_for_screen(page, "no problem: the branch is valid")
            page.keyboard.type(LABEL)
            screen = wait_for_screen(page, LABEL)
            lines = screen.splitlines()
            label_row = next(i for i, ln in enumerate(lines) if ln.strip().startswith("label"))
            assert lines[label_row + 1].split("▕")[0].strip() == LABEL, screen  # in the label field

            # ctrl+s: stored in the workspace, the editor closes with a notice
            page.keyboard.press("Control+s")
            screen = wait_for_screen(page, f"branch {branch_id} stored in", "17 records")
            assert "New branch" not in screen

            # T: the branch tree shows it under the base, by its label, at seq 3 with 1 intervention
            page.keyboard.press("T")
            screen = wait_for_screen(page, "◆ served-run.json  1 branch", LABEL)
            lines = [ln.strip() for ln in screen.splitlines()]
            assert any(f"▏  · {LABEL}  @{TOOL_SEQ} · 1 iv" in ln for ln in lines), screen  # no replay yet
        finally:
            browser.close()
    _stop(served.proc)  # the server (and its app) ends before the workspace is read

    # the workspace on disk, read by core: exactly that branch, of the served run
    base = Recording.load(base_path)
    with Workspace.open(ws_path) as ws:
        branches = ws.list_branches()
        assert [b.id for b in branches] == [branch_id]
        (branch,) = branches
        assert ws.list_branches(base.digest) == branches
        assert ws.list_replays(branch_id=branch_id) == []  # saved, not replayed
    assert branch.label == LABEL
    assert branch.checkpoint == TOOL_SEQ and branch.parent is None
    assert branch.base.digest == base.digest
    (intervention,) = branch.interventions
    assert isinstance(intervention, ToolResultIntervention), branch.interventions
    assert intervention.seq == TOOL_SEQ
    assert intervention.result.content == "dates.py\nparser.py\n__init__.py"  # the recorded value, kept


@pytest.mark.browser
@needs_chromium
def test_compare_opens_from_the_tree_in_the_browser_at_the_first_divergence(serve_cli, tmp_path):  # noqa: F811
    """A replay whose branch changed the first tool result (seq 3): ``T``, the replay's
    row, ``C``: the compare screen, on the first divergence; ``home`` then ``d`` goes
    back to it (the diff pane says which pair is selected)."""
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base_path = tmp_path / "served-run.json"
    ws_path = tmp_path / "ws"
    base = Recording.load(base_path)
    changed = ToolResultIntervention(seq=TOOL_SEQ, result=ToolResult(content="dates.py\nparser.py"))
    with Workspace.open(ws_path) as ws:
        draft = BranchDraft(str(base_path), TOOL_SEQ, [changed], Policy(), None, None, BRANCH_ID)
        branch = resolve_branch(ws, draft, base)
        ws.add_branch(branch, base, str(base_path))
        record, _ = start_replay(ws, str(base_path), branch, base=base, replay_id=REPLAY_ID, events_file=True)
        assert record.status in ("paused", "completed")
    served = serve_cli("--workspace", str(ws_path), "--host", "127.0.0.1")
    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = open_served(browser, served)
            page.keyboard.press("T")
            wait_for_screen(page, "◆ served-run.json  1 branch", REPLAY_ID)
            page.keyboard.press("End")  # the replay's row
            page.keyboard.press("C")
            # the pane shows the pair under the cursor: the divergence
            wait_for_screen(
                page,
                "Compare",
                f"{REPLAY_ID}.json",
                f"first divergence: tool result at base seq {TOOL_SEQ}",
                "~ changed answer",
                "/result/content",
            )
            page.keyboard.press("Home")
            wait_for_screen(page, "= same")  # the first row: the snapshot, the same on both sides
            page.keyboard.press("d")
            # the pane's diff is drawn after the selection: wait for it, not only its title
            wait_for_screen(
                page,
                "~ changed answer",
                f"base seq {TOOL_SEQ} · other seq {TOOL_SEQ}",
                '"dates.py\\nparser.py\\n__init__.py"',
                '"dates.py\\nparser.py"',
            )
        finally:
            browser.close()


@needs_chromium
def test_effects_rank_the_served_workspace_in_the_browser(serve_cli, tmp_path):  # noqa: F811
    """``W`` in the browser: the stored replay of the served run ranked (no ranking was
    stored, so the screen ranks it), its row detailed; ``enter`` opens its evidence in the
    compare screen at the first divergence."""
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base_path = tmp_path / "served-run.json"
    ws_path = tmp_path / "ws"
    base = Recording.load(base_path)
    changed = ToolResultIntervention(seq=TOOL_SEQ, result=ToolResult(content="dates.py\nparser.py"))
    with Workspace.open(ws_path) as ws:
        draft = BranchDraft(str(base_path), TOOL_SEQ, [changed], Policy(), None, None, BRANCH_ID)
        branch = resolve_branch(ws, draft, base)
        ws.add_branch(branch, base, str(base_path))
        start_replay(ws, str(base_path), branch, base=base, replay_id=REPLAY_ID, events_file=True)
    served = serve_cli("--workspace", str(ws_path), "--host", "127.0.0.1")
    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = open_served(browser, served)
            page.keyboard.press("W")
            screen = wait_for_screen(page, "Effects", "ranked from 1 replay(s)", "ranked now", f"evidence: {REPLAY_ID}")
            assert f"tool_result at seq {TOOL_SEQ}" in screen
            page.keyboard.press("Enter")
            wait_for_screen(
                page, "Compare", f"{REPLAY_ID}.json", f"first divergence: tool result at base seq {TOOL_SEQ}"
            )
        finally:
            browser.close()


@pytest.mark.browser
@needs_chromium
def test_the_audit_exports_as_downloads_in_the_browser(serve_cli, tmp_path, capsys):  # noqa: F811
    """``L`` then ``x`` in the browser: no file is written on the server, the browser gets
    two downloads — the Markdown equal to what ``audit FILE --markdown`` prints, and the
    JSON document of ``audit --json`` (the file by its name)."""
    import json

    from inspector.cli import main

    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    base_path = tmp_path / "served-run.json"
    served = serve_cli("--host", "127.0.0.1")
    downloads: list = []
    with playwright.sync_playwright() as p:
        browser = _browser(p)
        try:
            page = open_served(browser, served)
            # textual.js opens each delivery's /download/ link in a new tab; Chromium
            # reports the download on the page that opened it

            def downloaded(download) -> None:
                downloads.append(download)

            page.on("download", downloaded)
            page.keyboard.press("L")
            wait_for_screen(page, "Audit  served-run.json", "final output (seq")
            page.keyboard.press("x")
            wait_for_screen(page, "sent to the browser")
            deadline_ms = 20_000
            while len(downloads) < 2 and deadline_ms > 0:
                page.wait_for_timeout(100)  # Playwright dispatches the page's events meanwhile
                deadline_ms -= 100
            assert sorted(d.suggested_filename for d in downloads) == ["audit-served-run.json", "audit-served-run.md"]
            files = {d.suggested_filename: Path(d.path()).read_text() for d in downloads}
        finally:
            browser.close()
    assert not list(tmp_path.glob("audit-*"))
    assert main(["audit", str(base_path), "--markdown"]) == 0
    assert files["audit-served-run.md"] == capsys.readouterr().out
    assert main(["audit", str(base_path), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert json.loads(files["audit-served-run.json"]) == {**cli, "file": "served-run.json"}
