"""The audit screen (L): the lineage tree, non-contributing calls greyed with the reason,
knockouts with consent, both exports (the Markdown equal to ``audit --markdown``, whose
output is a golden file), a failed export, hostile names, the help screen."""

from __future__ import annotations

import json

import pytest
from textual.widgets import Input, Tree

from core.analysis.audit import audit
from core.record.recording import Recording
from inspector.app import InspectorApp
from inspector.cli import main
from inspector.loader import load_for_view
from inspector.screens.audit import AuditExportScreen, AuditScreen
from inspector.screens.branch_editor import ConsentScreen
from tests.builders import ROOT, SAMPLES
from tests.inspector.test_replay_runner import SIZE, base_copy, idle

TOOL_ERROR = SAMPLES / "sample-agent-fault-tool-error.json"
SWE = SAMPLES / "swe-agent-pydicom-1458.json"


async def open_audit(pilot, app) -> AuditScreen:
    await pilot.press("L")
    await idle(pilot, app)
    screen = app.screen
    assert isinstance(screen, AuditScreen) and screen.report is not None
    return screen


def labels(node, depth: int = 0) -> list[tuple[int, str, object]]:
    out = [(depth, str(node.label), node.data)]
    for child in node.children:
        out += labels(child, depth + 1)
    return out


async def test_the_tree_is_the_lineage_of_the_final_output(tmp_path):
    """SWE-agent's submit is the final call, under the root; the model call that issued
    it under that; the empty-result tool the recording cannot tell about in its own
    group, dim, with its reason — as core's audit says."""
    expected = audit(Recording.load(SWE))
    app = InspectorApp(load_for_view(SWE), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        tree = screen.query_one(Tree)
        rows = labels(tree.root)
        assert rows[0][1].startswith(f"final output (seq {expected.final_seq}): ")
        assert expected.final_seq == 23
        (depth, text, data) = rows[1]
        assert depth == 1 and "  23  tool  submit" in text and data.status == "final"
        assert rows[2][0] == 2 and "(issued)" in rows[2][1] and rows[2][2].seq == 22
        shown = {d.seq for _, _, d in rows if d is not None}
        assert shown == {c.seq for c in expected.contributed()} | {c.seq for c in expected.unknown()}
        group = next(n for n in tree.root.children if str(n.label).startswith("cannot tell"))
        (leaf,) = group.children
        assert leaf.data.status == "unknown" and leaf.data.reason in str(leaf.label)
        assert leaf.label.style == "dim"
        header = str(screen.query_one("#audit-header").render())
        assert "contributed 23 · unused 0 · cannot tell 1" in header


async def test_the_tree_of_a_failed_support_run(tmp_path):
    """The sample agent's failed run: the final answer (seq 9) read every earlier call;
    under it the six calls in seq order, each with the calls that flowed into it, and a
    call met again is a leaf "shown above" (drawn depth first, so it *is* above). By
    hand: seq 8 (check_refund_policy) was issued by seq 7; seq 3 has no inputs."""
    expected = audit(Recording.load(TOOL_ERROR))
    assert expected.final_seq == 9 and [c.seq for c in expected.contributed()] == [3, 4, 5, 6, 7, 8, 9]
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        tree = screen.query_one(Tree)
        final = tree.root.children[0]
        assert final.data.seq == 9 and final.data.status == "final"
        assert [n.data.seq for n in final.children] == [3, 4, 5, 6, 7, 8]
        first = {}
        for depth, text, data in labels(tree.root)[1:]:
            if data is None:
                continue
            if "(shown above)" in text:
                assert data.seq in first, text  # drawn above already
            else:
                assert data.seq not in first, text
                first[data.seq] = depth
        assert set(first) == {3, 4, 5, 6, 7, 8, 9}
        seq8 = final.children[5]
        assert "check_refund_policy" in str(seq8.label) and "(tool_call_id)" in str(seq8.label)
        assert [(n.data.seq, "(issued)" in str(n.label)) for n in seq8.children] == [(7, True)]
        assert not final.children[0].children  # seq 3: the first model call, no inputs
        assert [str(n.label) for n in tree.root.children[1:]] == []  # every call contributed
        header = str(screen.query_one("#audit-header").render())
        assert "sample-agent-fault-tool-error.json" in header and "final output (seq 9): I'm sorry" in header
        assert "contributed 7 · unused 0" in header and "cannot tell" not in header
        assert "knockout: not run" in header


async def test_unused_calls_are_greyed_with_their_reason(tmp_path):
    """A real Inspect run whose tool calls failed and never fed the answer: those calls
    are under "not contributing", dim, each with core's reason."""
    path = SAMPLES / "inspect-ai-tool-error-types.json"
    report = audit(Recording.load(path))
    assert len(report.unused()) == 11
    app = InspectorApp(load_for_view(path), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        tree = screen.query_one(Tree)
        group = next(n for n in tree.root.children if str(n.label).startswith("not contributing (11)"))
        assert [n.data.seq for n in group.children] == [c.seq for c in report.unused()]
        for n in group.children:
            assert n.label.style == "dim" and n.data.reason and n.data.reason[:60] in str(n.label)


async def test_both_exports_equal_the_command_line_documents(tmp_path, capsys):
    """x, the path, enter: the Markdown is what ``audit --markdown`` prints (a golden
    file), the JSON what ``audit --json`` prints for the file by name."""
    base = base_copy(tmp_path, TOOL_ERROR.name, name="support-run.json")
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "ws")
    out = tmp_path / "out" / "audit.md"
    out.parent.mkdir()
    async with app.run_test(size=SIZE) as pilot:
        await open_audit(pilot, app)
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, AuditExportScreen)
        app.screen.query_one(Input).value = str(out)
        await pilot.press("enter")
        await pilot.pause()
    assert main(["audit", str(base), "--markdown"]) == 0
    assert out.read_text() == capsys.readouterr().out
    golden = ROOT / "tests" / "data" / "golden" / "audit-sa-fail-markdown.txt"
    assert golden.read_text().endswith(out.read_text().replace("support-run.json", "sa-fail.json"))
    assert main(["audit", str(base), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    exported = json.loads(out.with_suffix(".json").read_text())
    assert exported == {**cli, "file": "support-run.json"}


async def test_an_export_that_cannot_be_written_says_so_and_leaves_nothing(tmp_path):
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    target = tmp_path / "missing-folder" / "audit.md"
    async with app.run_test(size=SIZE) as pilot:
        await open_audit(pilot, app)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one(Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        notes = [n.message for n in app._notifications]
        assert any(m.startswith("cannot write ") and "No such file or directory" in m for m in notes), notes
    assert not target.parent.exists()


async def test_knockouts_run_after_consent_and_show_per_call(tmp_path):
    """k asks before the recording's executor runs; with yes, every call before the
    final output gets its knockout result (as ``audit --executor`` reports: in this
    failed run knocking a call out never turns it into a success) and the tree shows it."""
    base = base_copy(tmp_path, TOOL_ERROR.name)
    app = InspectorApp(load_for_view(base), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, ConsentScreen)
        await pilot.press("y")
        await idle(pilot, app)
        report = screen.report
        assert report is not None and report.knockout.startswith("run")
        before = [c for c in report.calls if c.seq < report.final_seq]
        assert len(before) == 6 and all(c.knockout is not None for c in before)
        assert all(c.knockout.outcome == "failure" and c.knockout.outcome_changed is False for c in before)
        texts = [t for _, t, _ in labels(screen.query_one(Tree).root)]
        assert sum("knockout: failure (outcome unchanged)" in t for t in texts) == 6
        assert "the outcome changed for 0" in str(screen.query_one("#audit-header").render())


async def test_k_without_a_named_executor_says_how(tmp_path):
    app = InspectorApp(load_for_view(SWE), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        await open_audit(pilot, app)
        await pilot.press("k")
        await pilot.pause()
        assert isinstance(app.screen, AuditScreen)
        assert any("audit FILE --executor" in n.message for n in app._notifications)


async def test_hostile_names_show_as_data_in_the_tree(tmp_path):
    """Markup-looking names and terminal control codes in every recorded string: the
    tree, the header and the detail show them as text, no control character reaches
    the screen."""
    from inspector.loader import LoadedRecording
    from tests.hostile import MARKUP_TOOL, hostile_recording, unsafe_in

    rec = hostile_recording()
    app = InspectorApp(LoadedRecording.from_recording(rec, tmp_path / "hostile.json"), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        tree = screen.query_one(Tree)
        texts = [t for _, t, _ in labels(tree.root)] + [str(screen.query_one("#audit-header").render())]
        assert all(unsafe_in(t) == [] for t in texts), [t for t in texts if unsafe_in(t)]
        assert any(MARKUP_TOOL in t for t in texts)
        for _ in range(len(texts)):
            await pilot.press("down")
        await pilot.pause()
        assert unsafe_in(str(screen.query_one("#audit-detail").render())) == []


async def test_a_run_without_a_final_output_says_so(tmp_path):
    """A run whose model call failed has no final output: the root and the header say
    so (core's ``final_missing``), and every call is under "not contributing"."""
    from inspector.loader import LoadedRecording
    from tests.builders import model, msg, recording, tool

    rec = recording(model(0, [msg("user", "hi")], error="boom"), tool(1, "t", {}, "x"))
    report = audit(rec)
    assert report.final_seq is None and report.final_missing
    app = InspectorApp(LoadedRecording.from_recording(rec, tmp_path / "no-final.json"), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        tree = screen.query_one(Tree)
        assert str(tree.root.label) == f"no final output: {report.final_missing}"
        assert f"no final output: {report.final_missing}" in str(screen.query_one("#audit-header").render())
        (group,) = tree.root.children
        assert str(group.label) == "not contributing (2)"
        assert [n.data.seq for n in group.children] == [0, 1]


async def test_l_waits_for_the_verification(tmp_path, monkeypatch):
    """While the recording is still being verified, L refuses with a notification."""
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        await idle(pilot, app)
        monkeypatch.setattr(app.screen.loaded, "verify", lambda: None)  # as while a big file is verified
        await pilot.press("L")
        await pilot.pause()
        assert not isinstance(app.screen, AuditScreen)
        assert any("still being verified" in str(n.message) for n in app._notifications)


def test_the_help_screen_lists_the_audit_keys(tmp_path):
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    groups = dict(app.help_groups())
    assert {b.id for b in groups["Audit (L)"]} == {"audit.knockout", "audit.export", "audit.close"}
    assert [(b.key, b.id) for b in groups["Analysis"]] == [("L", "analysis.audit")]


async def test_the_palette_has_the_audit_entries(tmp_path):
    """On the timeline the palette opens the audit; on the audit screen it lists the
    screen's own entries, each an action the screen has."""
    from inspector.commands import AUDIT_COMMANDS, TIMELINE_COMMANDS, AnalysisScreenCommands

    assert (
        "analysis: audit the final output",
        "Lineage of the final output: which calls produced it (L)",
        "audit",
    ) in (TIMELINE_COMMANDS)
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        provider = AnalysisScreenCommands(screen)
        assert provider._commands() == AUDIT_COMMANDS
        assert [a for _, _, a in AUDIT_COMMANDS] == ["knockout", "export", "close"]
        for _title, _help, action in AUDIT_COMMANDS:
            assert callable(getattr(screen, f"action_{action}", None)), action


def test_markdown_and_json_together_is_an_error(capsys):
    assert main(["audit", str(TOOL_ERROR), "--markdown", "--json"]) == 2
    assert "--json and --markdown cannot be used together" in capsys.readouterr().err


@pytest.mark.parametrize("size", [(160, 45), (110, 36)], ids=["160x45", "110x36"])
def test_snapshot_audit(snap_compare, tmp_path, size):
    async def run_before(pilot):
        await pilot.press("L")
        await idle(pilot, pilot.app)
        await pilot.press("down", "down")
        await pilot.pause()

    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_a_final_output_nested_past_orjson_depth_draws_and_exports():
    """A final output nested 400 levels (orjson refuses past 254): its one-line form and
    both exports are made (core's nesting-safe writer), the JSON as ``audit --json``
    writes it."""
    import dataclasses

    from inspector.screens.audit import _short, export_documents

    deep: object = "bottom"
    for _ in range(400):
        deep = [deep]
    report = dataclasses.replace(audit(Recording.load(TOOL_ERROR)), final_output=deep)
    assert _short(deep).startswith("[[[[")
    markdown, json_text = export_documents(report, "deep.json")
    assert markdown.startswith("# Audit of deep.json")
    doc = json.loads(json_text)
    assert doc["file"] == "deep.json" and doc["final_output"] == deep


async def test_a_path_typed_with_json_writes_the_markdown_beside_it(tmp_path):
    """A path typed with .json: the Markdown goes beside it as .md, never over it."""
    app = InspectorApp(load_for_view(TOOL_ERROR), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        await open_audit(pilot, app)
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one(Input).value = str(tmp_path / "out.json")
        await pilot.press("enter")
        await pilot.pause()
    assert (tmp_path / "out.md").read_text().startswith("# Audit of sample-agent-fault-tool-error.json")
    assert json.loads((tmp_path / "out.json").read_text())["final_seq"] == 9


async def test_repeats_under_one_call_share_one_leaf(tmp_path):
    """mini-swe-agent's run re-reads every earlier turn at each model call: past
    REPEATS_SHOWN repeats under one call, the rest are one leaf naming their seqs, so the
    tree grows with the run, not with its square (1,681 nodes before, one per edge)."""
    from inspector.screens.audit import REPEATS_SHOWN

    path = SAMPLES / "mini-swe-agent-sqlfluff-2419.json"
    report = audit(Recording.load(path))
    app = InspectorApp(load_for_view(path), workspace=tmp_path / "ws")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_audit(pilot, app)
        rows = labels(screen.query_one(Tree).root)
        assert len(rows) < len(report.edges) // 2
        gathered = [t for _, t, _ in rows if t.startswith("… and ")]
        assert gathered and all("more, shown above: seq " in t for t in gathered)
        node = next(n for n in screen.query_one(Tree).root.children[0].children if len(n.children) > REPEATS_SHOWN)
        assert sum("(shown above)" in str(c.label) for c in node.children) <= REPEATS_SHOWN
        # every contributing call is still on the tree once in full
        full = {d.seq for _, t, d in rows if d is not None and "(shown above)" not in t}
        assert {c.seq for c in report.contributed()} <= full
