"""The fast trace diff against the plain one: same matches, ops, counts and first
divergence on generated runs under random edit scripts, on the real recordings, and on
answers that only look alike (numbers of another type, NaN, key order)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.analysis.diff as diff_module
from core.analysis.align import align
from core.analysis.diff import (
    _BLOCK,
    _CHUNK,
    ALL_KINDS,
    CALL_KINDS,
    _align_keys,
    _identities,
    _records,
    _same_flags,
    _same_result,
    _trace_diff_plain,
    first_divergence,
    trace_diff,
)
from core.record.io import load_recording
from core.record.recording import ErrorInfo, ToolResult
from tests.builders import DATA, SAMPLES, lifecycle, model, msg, recording, snapshot, tool


def same_diff(base, other, **kw):
    """The fast diff equals the plain one, both ways round; returns the fast one."""
    for x, y in ((base, other), (other, base)):
        fast, plain = trace_diff(x, y, **kw), _trace_diff_plain(x, y, **kw)
        assert fast.ops == plain.ops
        assert fast.counts == plain.counts
        assert fast.first_divergence == plain.first_divergence
        assert fast.to_json() == plain.to_json()
        assert first_divergence(x, y, **kw) == plain.first_divergence
    return trace_diff(base, other, **kw)


def pairs_of(runs):
    return [(i + t, j + t) for i, j, n in runs for t in range(n)]


def plain_pairs(ka, kb, max_edits):
    if ka <= kb:
        return align(ka, kb, max_edits=max_edits)
    return [(i, j) for j, i in align(kb, ka, max_edits=max_edits)]


# --------------------------------------------------------------------------- generated runs


def step(k: int, variant: str = "") -> list:
    """One agent step: a model call asking for tool ``lookup`` with ``q=k``, the call."""
    call = [("c", "lookup", {"q": f"{variant}{k}"})]
    return [
        model(0, [msg("user", f"{variant}turn {k}")], msg("assistant", "", tool_calls=call)),
        tool(0, "lookup", {"q": f"{variant}{k}"}, {"value": k}),
    ]


def run_of(records: list) -> list:
    return [r.model_copy(update={"seq": i}) for i, r in enumerate(records)]


edit = st.tuples(
    st.sampled_from(["insert", "delete", "replace", "result", "arguments", "repeat"]),
    st.integers(0, 10_000),
    st.integers(0, 10_000),
)


def apply(records: list, script: list[tuple[str, int, int]]) -> list:
    out = list(records)
    for op, at, x in script:
        if not out and op != "insert":
            continue
        i = at % max(len(out), 1)
        if op == "insert":
            out[i:i] = step(x, "new ")[: 1 + x % 2]
        elif op == "delete":
            del out[i : i + 1 + x % 3]
        elif op == "replace":
            out[i] = step(x, "other ")[x % 2]
        elif op == "result" and out[i].kind == "tool":
            out[i] = out[i].model_copy(update={"result": ToolResult(content={"value": -x})})
        elif op == "result":
            out[i] = out[i].model_copy(update={"response": out[i].response.model_copy(update={"finish_reason": "len"})})
        elif op == "arguments" and out[i].kind == "tool":
            r = out[i].model_copy(update={"arguments": {"q": f"changed {x}"}})
            r.key = r.compute_key()
            out[i] = r
        elif op == "repeat":  # an earlier call made again: keys that repeat
            out.insert(i, out[x % len(out)])
    return run_of(out)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 40), st.lists(edit, max_size=8), st.sampled_from([0, 2, 2000]))
def test_random_edit_scripts_give_the_plain_result(steps, script, max_edits):
    base = run_of([r for k in range(steps) for r in step(k)])
    other = apply(base, script)
    same_diff(base, other, max_edits=max_edits)
    ka, kb = _identities(base), _identities(other)
    assert pairs_of(_align_keys(ka, kb, max_edits)) == plain_pairs(ka, kb, max_edits)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40), st.lists(st.integers(0, 6), max_size=40), st.integers(0, 4))
def test_alignment_of_key_runs_is_align(a, b, max_edits):
    """Repeated keys, one-sided keys, a bounded search that gives up (patience anchors)."""
    ka, kb = [f"k{x}" for x in a], [f"k{x}" for x in b]
    assert pairs_of(_align_keys(ka, kb, max_edits)) == plain_pairs(ka, kb, max_edits)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=40), st.lists(st.integers(0, 12), max_size=40), st.integers(0, 4))
def test_alignment_with_keys_dropped_by_scan_or_by_mask(a, b, max_edits):
    """Keys found on one side only are left out by one scan each (a few) or by a mask
    (many); either way, interned or not, the matches are align()'s."""
    interned = [f"k{x}" for x in a], [f"k{x}" for x in b]
    fresh = ["".join(["k", str(x)]) for x in a], ["".join(["k", str(x)]) for x in b]  # new objects
    few = diff_module._FEW_DROPPED
    try:
        for threshold in (0, 1, few):
            diff_module._FEW_DROPPED = threshold
            for ka, kb in (interned, fresh, (interned[0], fresh[1])):
                assert pairs_of(_align_keys(ka, kb, max_edits)) == plain_pairs(ka, kb, max_edits)
    finally:
        diff_module._FEW_DROPPED = few


def test_runs_longer_than_a_block_of_answers():
    """Answers are compared a block at a time: edits on both sides of a block's edge,
    and a run that is not a whole number of blocks."""
    n = 2 * _BLOCK + 11
    base = run_of([r for k in range(n // 2 + 1) for r in step(k)])[:n]
    script = [("result", _BLOCK - 1, 1), ("result", _BLOCK, 2), ("result", 2 * _BLOCK + 3, 3)]
    other = apply(base, script)
    d = same_diff(base, other)
    assert d.counts["changed"] == 3
    flags = _same_flags(base, other)
    assert len(flags) == n and flags.count(False) == 3


def test_long_runs_across_chunks():
    """Runs longer than a chunk of compared answers, edits at chunk edges."""
    n = 3 * _CHUNK + 7
    base = run_of([r for k in range(n // 2) for r in step(k)])
    script = [("result", _CHUNK - 1, 1), ("result", _CHUNK, 2), ("result", 2 * _CHUNK + 1, 3), ("delete", 500, 0)]
    d = same_diff(base, apply(base, script))
    assert d.counts["changed"] == 3 and d.counts["removed"] == 1
    same_diff(base, run_of(base[:-1]), kinds=ALL_KINDS)


def test_departing_branch_and_other_kinds():
    base = run_of([lifecycle(0), snapshot(0, "g1", {"tools": ["lookup"]})] + [r for k in range(30) for r in step(k)])
    branch = run_of(base[:20] + [r for k in range(40) for r in step(k, "branch ")] + [lifecycle(0, "harness.shutdown")])
    for kinds in (CALL_KINDS, ALL_KINDS):
        d = same_diff(base, branch, kinds=kinds)
        assert d.counts["removed"] and d.counts["inserted"]


# --------------------------------------------------------------------------- answers that look alike


LOOKALIKES = [
    ({"v": 1}, {"v": 1.0}),
    ({"v": 1}, {"v": True}),
    ({"v": 0.0}, {"v": -0.0}),
    ({"v": math.nan}, {"v": None}),
    ({"v": math.inf}, {"v": None}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"v": [1, 2]}, {"v": (1, 2)}),
    ({"v": 2**70}, {"v": 2**70}),
    ({"v": "x"}, {"v": type("S", (str,), {})("x")}),
    ({"v": {1: "x"}}, {"v": {1: "x"}}),
    ("same", "same"),
    ({"a": None}, {}),
]


@pytest.mark.parametrize(("x", "y"), LOOKALIKES, ids=range(len(LOOKALIKES)))
def test_lookalike_results_are_judged_as_the_plain_path_does(x, y):
    base = [tool(i, "t", {"i": i}, x) for i in range(_CHUNK + 2)]
    other = [tool(i, "t", {"i": i}, x if i % 3 else y) for i in range(_CHUNK + 2)]
    assert _same_flags(base, other) == [_same_result(p, q) for p, q in zip(base, other)]
    same_diff(recording(*base), recording(*other))


def test_model_answers_errors_and_missing_responses():
    calls = [("c1", "lookup", {"q": 1.0})]
    ask = [msg("user", "hi")]
    base = [
        model(0, ask, msg("assistant", "", tool_calls=calls)),
        model(1, ask, "done", error="timeout"),
        model(2, ask, None, error="boom"),
        model(3, ask, "done", finish="stop"),
        model(4, ask, msg("assistant", [{"type": "text", "text": "x", "n": 1}])),
    ]
    other = [
        model(0, ask, msg("assistant", "", tool_calls=[("c9", "lookup", {"q": 1})])),
        model(1, ask, "done", error="timeout"),
        model(2, ask, None, error="boom"),
        model(3, ask, "done", finish="length"),
        model(4, ask, msg("assistant", [{"type": "text", "text": "x", "n": 1}])),
    ]
    assert _same_flags(base, other) == [_same_result(p, q) for p, q in zip(base, other)]
    base_err = tool(0, "t", {}, None, error="x")
    other_err = base_err.model_copy(update={"result": ToolResult(error=ErrorInfo(type="ToolError", message="y"))})
    assert _same_flags([base_err], [other_err]) == [False]


# --------------------------------------------------------------------------- real recordings


REAL = sorted(SAMPLES.glob("*.json")) + sorted((DATA / "analysis").glob("*.json"))


def _load(path: Path):
    return load_recording(path)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_recordings_against_themselves_and_a_neighbour(path):
    run = _load(path)
    others = [p for p in REAL if p != path]
    neighbour = _load(others[REAL.index(path) % len(others)])
    for kinds in (CALL_KINDS, ALL_KINDS):
        assert same_diff(run, run, kinds=kinds).identical
        same_diff(run, neighbour, kinds=kinds)
        recs = _records(run, kinds)
        if len(recs) > 3:  # a call left out and the order of two changed
            edited = recs[:1] + recs[2:]
            edited[0], edited[-1] = edited[-1], edited[0]
            same_diff(recs, edited, kinds=kinds)


def test_sample_pairs_of_one_task():
    pairs = [
        ("sample-agent-success.json", "sample-agent-fault-corrupted-result.json"),
        ("sample-agent-success.json", "sample-agent-fault-wrong-tool.json"),
        ("tau-bench-airline-task5-trial0.json", "tau-bench-airline-task5-trial1.json"),
    ]
    for x, y in pairs:
        d = same_diff(_load(SAMPLES / x), _load(SAMPLES / y), kinds=ALL_KINDS)
        assert not d.identical


def test_compare_runs_is_the_plain_comparison():
    from core.analysis.compare import _pair_changed_records, _row_of, compare_runs

    for x, y in [
        ("sample-agent-success.json", "sample-agent-fault-wrong-tool.json"),
        ("tau-bench-airline-task5-trial0.json", "tau-bench-airline-task5-trial1.json"),
    ]:
        base, other = _load(SAMPLES / x), _load(SAMPLES / y)
        c = compare_runs(base, other)
        rows = _pair_changed_records(_trace_diff_plain(base, other, kinds=ALL_KINDS).ops)
        fd = _trace_diff_plain(base, other).first_divergence
        assert c.rows == rows and c.first_divergence == fd
        assert c.differences == [i for i, op in enumerate(rows) if op.op != "same"]
        assert c.counts == {k: sum(op.op == k for op in rows) for k in ("same", "changed", "removed", "inserted")}
        assert c.first_divergence_row == (_row_of(rows, fd) if fd else None)
