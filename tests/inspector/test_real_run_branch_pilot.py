"""The bundled real SWE-agent run (pydicom issue 1458, the recording ``make run`` opens),
branched in the app and checked against the command line.

A user opens the default recording, presses ``e`` (the first rejected ``edit``, seq 11),
``B`` (the branch editor, prefilled with the recorded error), types a result in which the
edit was accepted, reads the dry run, and saves and replays it (``ctrl+r``). With no
executor in the recording the replay pauses on the model call after the edit (its request
now differs from the base). Everything the app shows on the way — the dry run, the tree's
status line, the paused notice, the requirements panel, the answer sources of the replay's
events — is compared with what ``chassis-inspector … --json`` reports for the same branch
and replay (``inspector.cli.main``, as the CLI tests call it). Waits are on workers and
messages, never sleeps.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import orjson
from textual.widgets import Static

from core.workspace import Workspace
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.defaults import DEFAULT_RECORDING, default_recording_path
from inspector.loader import load_for_view
from inspector.screens.branch_editor import BranchEditorScreen
from inspector.screens.requirements import RequirementsScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.json_editor import JsonEditor

from .test_answer_sources import row_texts as table_rows
from .test_app_pilot import settle
from .test_replay_runner import idle, open_tree, panel_of, row_texts, select

SIZE = (160, 45)

#: the edit at seq 11 accepted instead of rejected by the linter
ACCEPTED = '{"content": "File updated. Please review the changes.", "error": null}'

#: answer source → the symbol the app draws before its name (docs/app.md, "Answer sources")
SOURCE_SYMBOL = {
    "recorded": "=",
    "intervention": "✎",
    "fixture": "▣",
    "drift": "≈",
    "live": "↯",
    "policy": "⊘",
    "user": "›",
}
#: dry-run answer → the symbol of the editor's dry-run panel
ANSWER_SYMBOL = {"recorded": "=", "intervention": "✎", "requirement": "‖", "unknown": "?", "live": "↯"}


def cli_json(capsys, *args: object) -> tuple[int, Any]:
    """Run ``chassis-inspector ARGS… --json``; its exit code and decoded stdout."""
    capsys.readouterr()
    code = main([str(a) for a in (*args, "--json")])
    out, err = capsys.readouterr()
    assert out, f"no output (exit {code}): {err}"
    return code, orjson.loads(out)


def flat(text: object) -> str:
    """Rendered text with its wrapping undone."""
    return " ".join(str(text).split())


async def editor_settled(pilot, editor: BranchEditorScreen) -> None:
    await pilot.pause()
    await asyncio.wait_for(editor.settled(), timeout=30)  # a hang fails, never a race
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def open_editor_at_first_error(pilot, app: InspectorApp) -> BranchEditorScreen:
    await settle(pilot, app)
    await pilot.press("e")
    await settle(pilot, app)
    await pilot.press("B")
    await pilot.pause()
    editor = app.screen
    assert isinstance(editor, BranchEditorScreen)
    await editor_settled(pilot, editor)
    return editor


def shown_dry_run(editor: BranchEditorScreen) -> tuple[dict[str, int], dict[int, str], str]:
    """What the dry-run panel draws: the counts line, seq → answer of each row, all its text."""
    counts_text = str(editor.query_one("#dry-counts", Static).render())
    counts = {answer: int(n) for _, answer, n in re.findall(r"(\S) ([a-z]+) (\d+)", counts_text)}
    rows_text = str(editor.query_one("#dry-rows", Static).render())
    answers = {
        int(m[1]): m[2]
        for m in re.finditer(r"^\s*(\d+) (?:model|tool)\s+\S+\s+\S ([a-z]+)\s*$", rows_text, flags=re.MULTILINE)
    }
    return counts, answers, rows_text


async def test_branch_at_the_first_rejected_edit_shows_what_the_cli_reports(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base_path = default_recording_path()
    assert base_path.name == DEFAULT_RECORDING == "swe-agent-pydicom-1458.json"  # what `make run` opens
    ws = tmp_path / "ws"
    _, errors = cli_json(capsys, "timeline", base_path, "--errors")
    first_error = errors[0]
    assert (first_error["seq"], first_error["name"], first_error["status"]) == (11, "edit", "error")

    app = InspectorApp(load_for_view(base_path), workspace=ws)
    shown: dict[str, Any] = {}
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        editor = await open_editor_at_first_error(pilot, app)
        assert editor.query_one("#be-checkpoint").value == str(first_error["seq"])
        assert editor.query_one("#iv-kind").value == "tool_result"
        assert "edit_rejected" in editor.query_one(JsonEditor).text  # prefilled with the recorded error
        assert editor.query_one("#pol-executor").value == "none"  # the recording names no executor

        area = editor.query_one(JsonEditor).area
        area.select_all()
        area.replace(ACCEPTED, *area.selection)  # a document edit, as typing it would be
        await editor_settled(pilot, editor)
        assert editor.last is not None and editor.last.dry_run is not None
        shown["dry_run"] = editor.last.dry_run
        shown["dry_counts"], shown["dry_answers"], shown["dry_text"] = shown_dry_run(editor)
        branch_id = editor.branch_id

        await pilot.press("ctrl+r")  # save & replay: no executor, so no consent dialog
        await idle(pilot, app)
        assert isinstance(app.screen, TimelineScreen)
        [state] = app.replay_runner.runs.values()
        assert state.branch_id == branch_id
        rid = state.replay_id
        shown["state"] = (state.status, list(state.requirement_ids), state.progress.steps)
        shown["notices"] = [str(n.message) for n in app._notifications]

        panel = await open_tree(pilot, app)
        shown["tree"] = row_texts(panel)
        await select(pilot, panel, "replay", rid)
        shown["tree_detail"] = str(panel.query_one("#branch-tree-detail", Static).render())

        await pilot.press("o")
        await idle(pilot, app)
        panel_screen = app.screen
        assert isinstance(panel_screen, RequirementsScreen) and panel_screen.replay_id == rid
        shown["requirements"] = [
            (r.id, r.kind, r.name, r.step, r.position, r.args_hash, r.mismatch) for r in panel_screen.requirements
        ]
        shown["req_detail"] = flat(panel_screen.query_one("#req-detail", Static).render())
        await pilot.press("escape")
        await idle(pilot, app)

        # enter on the replay opens its events as a timeline with the answer-source column
        panel = panel_of(app)
        await select(pilot, panel, "replay", rid)
        panel.view.focus()
        await pilot.press("enter")
        await idle(pilot, app)
        await settle(pilot, app)
        events_screen = app.screen
        assert isinstance(events_screen, TimelineScreen) and events_screen.loaded.path.name == f"{rid}.json"
        shown["events_rows"] = table_rows(events_screen.table)
        shown["events_len"] = len(events_screen.index)
        shown["reasons"] = {}
        for seq in (3, first_error["seq"]):
            assert events_screen.go_to_seq(seq)
            await settle(pilot, app)
            shown["reasons"][seq] = flat(events_screen.detail.query_one("#detail-identity").render())

    # ---- the dry run: the editor's own result, and what it drew, equal `replay --dry-run --json`
    code, dry = cli_json(capsys, "replay", base_path, "--branch", branch_id, "--dry-run", "--workspace", ws)
    assert code == 0
    assert shown["dry_run"] == dry
    assert shown["dry_counts"] == dry["counts"] == {"recorded": 11, "intervention": 1, "requirement": 1}
    assert shown["dry_answers"] == {p["base_seq"]: p["answer"] for p in dry["predictions"]}
    for p in dry["predictions"]:
        if p["answer"] != "recorded":
            assert flat(p["detail"]) in flat(shown["dry_text"]), p
    assert shown["dry_answers"][11] == "intervention" and shown["dry_answers"][12] == "requirement"

    # ---- the replay the app ran, as `replay show --json` reports it
    code, record = cli_json(capsys, "replay", "show", rid, "--workspace", ws)
    assert code == 0
    assert record["branch_id"] == branch_id and record["executor"] is None
    status, req_ids, steps = shown["state"]
    assert (status, req_ids, steps) == (record["status"], record["pause"]["requirement_ids"], record["steps"])
    assert record["status"] == "paused" and len(req_ids) == 1
    assert record["first_divergence"] == {"base_seq": 11, "replay_seq": 11, "dimension": "tool result"}
    # the tree: its line and the selected replay's status lines
    n_req = len(req_ids)
    assert f"‖ {rid} paused · {n_req} req" in [t.strip() for t in shown["tree"]], shown["tree"]
    assert any(f"{branch_id}  @{first_error['seq']} · 1 iv" in t for t in shown["tree"]), shown["tree"]
    comparability = record["comparability"]["level"]
    line = f"comparability {comparability} · {record['steps']} steps · stop {record['stop_reason']}"
    assert line in shown["tree_detail"], shown["tree_detail"]

    # ---- the requirement, as `requirements --json` lists it
    code, reqs = cli_json(capsys, "requirements", "--open", "--replay", rid, "--workspace", ws)
    assert code == 0
    assert shown["requirements"] == [
        (r["id"], r["kind"], r["name"], r["step"], r["position"], r["args_hash"], r["mismatch"]) for r in reqs
    ]
    [req] = reqs
    assert (req["kind"], req["name"], req["position"], req["mismatch"]) == ("model", "unknown", 12, "missing")
    assert f"paused on {n_req} requirement: {req['kind']} {req['name']}" in shown["tree_detail"]
    assert any(
        rid in n and f"paused on {n_req} requirement: {req['kind']} {req['name']}" in n for n in shown["notices"]
    ), shown["notices"]
    detail = shown["req_detail"]
    assert f"{req['id']} {req['status']} {req['kind']} {req['name']}" in detail, detail
    assert f"replay {rid} · model step {req['step']} · call {req['position']} · never recorded (missing)" in detail
    assert flat(req["reason"]) in detail
    assert f"seq {req['nearest']['seq']} {req['nearest']['name']}" in detail
    for change in req["nearest"]["diff"]:
        assert f"{change['path']} {change['op']}" in detail, change

    # ---- the events: the app's source column and reasons equal `timeline EVENTS --json`
    events_file = Path(record["events_file"])
    assert events_file.resolve() == (ws / "replays" / f"{rid}.json").resolve()
    code, rows = cli_json(capsys, "timeline", events_file)
    assert code == 0
    assert shown["events_len"] == len(rows) == 12  # seq 0–11: the pause is at the twelfth call
    assert set(shown["events_rows"]) == {r["seq"] for r in rows}
    for r in rows:
        drawn = shown["events_rows"][r["seq"]]
        assert r["name"] in drawn
        label = f"{SOURCE_SYMBOL[r['source']]} {r['source']}"
        assert label in drawn, (r, drawn)
        others = [f"{SOURCE_SYMBOL[s]} {s}" for s in SOURCE_SYMBOL if s != r["source"]]
        assert not any(o in drawn for o in others), (r, drawn)
    by_seq = {r["seq"]: r for r in rows}
    assert by_seq[11]["source"] == "intervention" and {by_seq[s]["source"] for s in range(11)} == {"recorded"}
    for seq, text in shown["reasons"].items():
        assert flat(by_seq[seq]["reason"]) in text, (seq, text)

    # ---- the same branch replayed from the command line: the same replay
    code, again = cli_json(capsys, "replay", base_path, "--branch", branch_id, "--workspace", ws)
    assert code == 3  # paused on a requirement
    assert again["id"] != rid
    for field in ("status", "first_divergence", "steps", "answers", "stop_reason", "interventions_applied"):
        assert again[field] == record[field], field
    assert again["comparability"]["level"] == record["comparability"]["level"]
    assert again["events_digest"] == record["events_digest"]  # byte-identical events
    assert record["answers"] == {"recorded": 11, "intervention": 1}
    with Workspace.open(ws, create=False) as w:
        assert w.check() == []
        assert [b.id for b in w.list_branches()] == [branch_id]


async def test_the_prefilled_dry_run_agrees_with_the_replay(tmp_path, monkeypatch):
    """The editor opens with the recorded error as the intervention: the replay of that
    branch completes with every answer recorded, so the dry run should not predict a pause."""
    monkeypatch.chdir(tmp_path)
    app = InspectorApp(load_for_view(default_recording_path()), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        editor = await open_editor_at_first_error(pilot, app)
        assert editor.last is not None and editor.last.dry_run is not None
        predicted = {p["base_seq"]: p["answer"] for p in editor.last.dry_run["predictions"]}
        await pilot.press("ctrl+r")
        await idle(pilot, app)
        [state] = app.replay_runner.runs.values()
        assert state.status == "completed"  # the replay does not pause at seq 12
        # the recorded value as the intervention changes nothing downstream: every other
        # call is predicted as recorded, as the replay answers it
        assert predicted.pop(11) == "intervention"
        assert set(predicted.values()) == {"recorded"}, predicted
