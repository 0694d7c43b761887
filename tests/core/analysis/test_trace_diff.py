"""Trace diff: alignment of hand-made streams, first-divergence dimensions, symmetry."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.align import align, opcodes
from core.analysis.diff import (
    ALL_KINDS,
    FirstDivergence,
    output_diff,
    state_diff,
    tool_diffs,
    trace_diff,
)
from tests.builders import lifecycle, model, msg, recording, snapshot, stream, tool


def ops(d):
    """(op, base_seq, other_seq, dimension) of every op."""
    return [(o.op, o.base_seq, o.other_seq, o.dimension) for o in d.ops]


# --------------------------------------------------------------------------- hand-made streams


def test_identical_runs_have_no_divergence():
    d = trace_diff(stream("ABC"), stream("ABC"))
    assert ops(d) == [("same", 0, 0, None), ("same", 1, 1, None), ("same", 2, 2, None)]
    assert d.first_divergence is None and d.identical
    assert d.to_json()["first_divergence"] is None


def test_insert_is_one_extra_record():
    d = trace_diff(stream("ABC"), stream("AXBC"))
    assert ops(d) == [
        ("same", 0, 0, None),
        ("inserted", None, 1, "extra"),
        ("same", 1, 2, None),
        ("same", 2, 3, None),
    ]
    assert d.first_divergence == FirstDivergence(base_seq=1, replay_seq=1, dimension="extra")
    assert d.counts == {"same": 3, "changed": 0, "removed": 0, "inserted": 1}


def test_delete_is_one_missing_record():
    d = trace_diff(stream("ABCD"), stream("ACD"))
    assert ops(d) == [
        ("same", 0, 0, None),
        ("removed", 1, None, "missing"),
        ("same", 2, 1, None),
        ("same", 3, 2, None),
    ]
    assert d.first_divergence == FirstDivergence(1, 1, "missing")


def test_change_is_same_identity_different_result():
    d = trace_diff(stream("ABC"), stream("ABC", results={"B": "other"}))
    assert ops(d) == [("same", 0, 0, None), ("changed", 1, 1, "tool result"), ("same", 2, 2, None)]
    assert d.first_divergence == FirstDivergence(1, 1, "tool result")


def test_reorder_is_one_removal_and_one_insertion():
    d = trace_diff(stream("ABCD"), stream("ACBD"))
    # LCS keeps A, C, D (or A, B, D): two records stay, the moved one is removed + inserted
    assert ops(d) == [
        ("same", 0, 0, None),
        ("removed", 1, None, "missing"),
        ("same", 2, 1, None),
        ("inserted", None, 2, "extra"),
        ("same", 3, 3, None),
    ]
    assert d.first_divergence == FirstDivergence(1, 1, "missing")


def test_missing_and_extra_at_the_end():
    d = trace_diff(stream("AB"), stream("A"))
    assert d.first_divergence == FirstDivergence(1, None, "missing")
    d = trace_diff(stream("A"), stream("AB"))
    assert d.first_divergence == FirstDivergence(None, 1, "extra")


def test_tool_arguments_dimension_pairs_the_calls():
    base = recording(tool(0, "search", {"q": "a"}), tool(1, "fetch", {"url": "u"}, "page"))
    other = recording(tool(0, "search", {"q": "a"}), tool(1, "fetch", {"url": "v"}, "page"))
    d = trace_diff(base, other)
    assert ops(d) == [
        ("same", 0, 0, None),
        ("removed", 1, None, "tool arguments"),
        ("inserted", None, 1, "tool arguments"),
    ]
    assert d.ops[1].counterpart_seq == 1 and d.ops[2].counterpart_seq == 1
    assert d.first_divergence == FirstDivergence(1, 1, "tool arguments")
    (td,) = tool_diffs(base, other, d)
    assert [c.to_json() for c in td.arguments] == [{"op": "changed", "path": "/url", "old": "u", "new": "v"}]
    assert td.result == []


def test_calls_of_different_tools_are_never_paired(capsys):
    """tau-bench task5: base ``think`` and other ``update_reservation_passengers`` at the
    same place are a missing and an extra call, not one tool with changed arguments."""
    base = recording(
        tool(0, "search", {"q": "a"}), tool(1, "think", {"thought": "t"}, ""), tool(2, "update", {"id": 1}, "ok")
    )
    other = recording(
        tool(0, "search", {"q": "a"}), tool(1, "update_passengers", {"id": 1}, "ok"), tool(2, "update", {"id": 2}, "ok")
    )
    d = trace_diff(base, other)
    assert ops(d)[1:] == [
        ("removed", 1, None, "missing"),
        ("removed", 2, None, "tool arguments"),
        ("inserted", None, 1, "extra"),
        ("inserted", None, 2, "tool arguments"),
    ]
    (td,) = tool_diffs(base, other, d)
    assert (td.tool, td.other_tool, td.base_seq, td.other_seq) == ("update", "update", 2, 2)


def test_a_mixed_pair_keeps_both_tool_names_and_the_cli_does_not_pair_them(capsys, tmp_path):
    """A trace whose pair mixes two tools (as a caller may build) is labelled with both."""
    from core.analysis.diff import TraceDiff, TraceOp
    from inspector.cli import main

    base = recording(tool(0, "think", {"thought": "t"}, ""))
    other = recording(tool(0, "update_passengers", {"id": 1}, "ok"))
    trace = TraceDiff(
        [TraceOp("removed", "tool", "think", 0, None, "tool arguments", 0)],
        None,
        {"same": 0, "changed": 0, "removed": 1, "inserted": 0},
        1,
        1,
    )
    (td,) = tool_diffs(base, other, trace)
    assert (td.tool, td.other_tool) == ("think", "update_passengers")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    base.save(a)
    other.save(b)
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "tool think (base" not in out and "missing" in out and "extra" in out


def test_request_and_response_dimensions():
    sys = msg("system", "be brief")
    base = recording(model(0, [sys, msg("user", "hi")], "hello"))
    asked_differently = recording(model(0, [sys, msg("user", "hey")], "hello"))
    answered_differently = recording(model(0, [sys, msg("user", "hi")], "goodbye"))
    assert trace_diff(base, asked_differently).first_divergence == FirstDivergence(0, 0, "request")
    assert trace_diff(base, answered_differently).first_divergence == FirstDivergence(0, 0, "response")


def test_first_divergence_is_the_earliest_difference():
    base = stream("ABCDE")
    other = stream("ABXDE", results={"D": "changed"})
    d = trace_diff(base, other)
    # C → X: two different tools are not paired → C missing, before D's changed result
    assert d.first_divergence == FirstDivergence(2, 2, "missing")
    assert [o.op for o in d.changes()] == ["removed", "inserted", "changed"]


def test_kind_mismatch_in_a_gap_is_missing():
    base = recording(tool(0, "A"), tool(1, "B"))
    other = recording(tool(0, "A"), model(1, [msg("user", "x")]))
    d = trace_diff(base, other)
    assert d.first_divergence == FirstDivergence(1, 1, "missing")
    assert ops(d)[1:] == [("removed", 1, None, "missing"), ("inserted", None, 1, "extra")]


def test_volatile_fields_are_not_differences():
    a = tool(0, "A", {"x": 1}, "r", call_id="call_1", duration=1.0)
    b = tool(5, "A", {"x": 1}, "r", call_id="call_9", duration=2.5)
    b.run_id = "another-run"
    assert trace_diff(recording(a), recording(b)).identical


def test_lifecycle_records_only_with_all_kinds():
    base = recording(lifecycle(0), tool(1, "A"))
    other = recording(tool(0, "A"))
    assert trace_diff(base, other).identical
    d = trace_diff(base, other, kinds=ALL_KINDS)
    assert d.first_divergence == FirstDivergence(0, 0, "missing")
    with pytest.raises(ValueError, match="unknown record kind"):
        trace_diff(base, other, kinds=("tool", "bogus"))


def test_empty_runs():
    d = trace_diff(recording(), recording())
    assert d.ops == [] and d.first_divergence is None
    d = trace_diff(recording(), stream("A"))
    assert d.first_divergence == FirstDivergence(None, 0, "extra")


def test_json_shape():
    j = trace_diff(stream("AB"), stream("AC")).to_json()
    assert j["first_divergence"] == {"base_seq": 1, "replay_seq": 1, "dimension": "missing"}
    assert j["ops"][0] == {"op": "same", "kind": "tool", "name": "A", "base_seq": 0, "other_seq": 0}
    assert set(j) == {"first_divergence", "counts", "kinds", "base_records", "other_records", "ops"}


# --------------------------------------------------------------------------- properties

letters = st.text(alphabet="ABCDE", max_size=12)


def _lcs_len(a, b):
    n, m = len(a), len(b)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            dp[i][j] = dp[i + 1][j + 1] + 1 if a[i] == b[j] else max(dp[i + 1][j], dp[i][j + 1])
    return dp[0][0]


_MIRROR = {"missing": "extra", "extra": "missing"}


@settings(max_examples=300, deadline=None)
@given(letters, letters, st.sets(st.sampled_from("ABCDE")))
def test_alignment_is_symmetric(sa, sb, changed):
    a = stream(sa)
    b = stream(sb, results={c: c + "'" for c in changed})
    ab, ba = trace_diff(a, b), trace_diff(b, a)
    pairs_ab = {(o.base_seq, o.other_seq, o.op) for o in ab.ops if o.op in ("same", "changed")}
    pairs_ba = {(o.other_seq, o.base_seq, o.op) for o in ba.ops if o.op in ("same", "changed")}
    assert pairs_ab == pairs_ba
    assert {o.base_seq for o in ab.ops if o.op == "removed"} == {o.other_seq for o in ba.ops if o.op == "inserted"}
    assert {o.other_seq for o in ab.ops if o.op == "inserted"} == {o.base_seq for o in ba.ops if o.op == "removed"}
    fa, fb = ab.first_divergence, ba.first_divergence
    assert (fa is None) == (fb is None)
    if fa is not None:
        assert (fa.base_seq, fa.replay_seq) == (fb.replay_seq, fb.base_seq)
        if fa.dimension in ("tool result", "tool arguments"):
            assert fb.dimension == fa.dimension


@settings(max_examples=300, deadline=None)
@given(letters, letters)
def test_alignment_is_a_longest_common_subsequence(sa, sb):
    d = trace_diff(stream(sa), stream(sb))
    matched = [o for o in d.ops if o.op == "same"]
    assert len(matched) == _lcs_len(sa, sb)
    assert len(d.ops) == len(sa) + len(sb) - len(matched)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), max_size=30))
def test_bounded_search_still_gives_a_valid_alignment(a, b):
    for max_edits in (0, 1, 3):
        pairs = align(a, b, max_edits=max_edits)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(p[0] < q[0] and p[1] < q[1] for p, q in itertools.pairwise(pairs))
        blocks = opcodes(pairs, len(a), len(b))
        assert sum(i2 - i1 for _, i1, i2, _, _ in blocks) == len(a)
        assert sum(j2 - j1 for _, _, _, j1, j2 in blocks) == len(b)


# --------------------------------------------------------------------------- payload-level diffs


def test_tool_diff_of_a_changed_result():
    base = recording(tool(0, "get_order", {"id": 1}, {"customer": "C-1", "items": [1, 2]}))
    other = recording(tool(0, "get_order", {"id": 1}, {"customer": "C-2", "items": [1, 2]}))
    (td,) = tool_diffs(base, other)
    assert td.arguments == []
    assert [c.to_json() for c in td.result] == [
        {"op": "changed", "path": "/content/customer", "old": "C-1", "new": "C-2"}
    ]


def test_state_diff_pairs_snapshots_by_generation():
    base = recording(snapshot(0, "g1", {"tools": ["a", "b"]}), snapshot(1, "g2", {"tools": ["a"]}))
    other = recording(
        snapshot(0, "g2", {"tools": ["a"]}), snapshot(1, "g1", {"tools": ["a", "c"]}), snapshot(2, "g3", {})
    )
    got = [
        (s.generation_id, s.base_seq, s.other_seq, s.status, [c.to_json() for c in s.changes])
        for s in state_diff(base, other)
    ]
    assert got == [
        ("g1", 0, 1, "changed", [{"op": "changed", "path": "/tools/1", "old": "b", "new": "c"}]),
        ("g2", 1, 0, "same", []),
        ("g3", None, 2, "added", []),
    ]


def test_output_diff_text_and_json():
    t = output_diff("line one\nline two\n", "line one\nline 2\n")
    assert t.mode == "text" and "-line two" in t.text_diff and "+line 2" in t.text_diff
    j = output_diff({"reply": "no", "refund": None}, {"reply": "no", "refund": 89.99})
    assert j.mode == "json"
    assert [c.to_json() for c in j.changes] == [{"op": "changed", "path": "/refund", "old": None, "new": 89.99}]
    s = output_diff('{"a": [1]}', '{"a": [1, 2]}')
    assert s.mode == "json" and [c.op for c in s.changes] == ["added"]
    assert output_diff("same", "same").mode == "same" and not output_diff("x", "x").changed
    assert output_diff(None, "x").mode == "missing"


def test_calls_whose_identity_cannot_be_canonicalized_still_align():
    """Imported calls may carry key None (e.g. an integer beyond ±(2**53-1))."""
    from core.record.recording import ToolRecord, ToolResult

    def keyless(seq, n, content):
        return ToolRecord(seq=seq, tool="big", arguments={"n": n}, result=ToolResult(content=content))

    a = recording(keyless(0, 2**60, "x"), keyless(1, 2**61, "y"))
    b = recording(keyless(0, 2**60, "x"), keyless(1, 2**61, "z"))
    d = trace_diff(a, b)
    assert [o.op for o in d.ops] == ["same", "changed"]
    assert d.first_divergence == FirstDivergence(1, 1, "tool result")
