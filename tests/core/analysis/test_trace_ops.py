"""The ops of a trace diff made when read (:class:`core.analysis.diff.TraceOps`) against
the plain diff's list: indexing, slicing, iteration, length, equality, the changes, the
counts and the first divergence read from the runs and gaps; the compare rows made the
same way against the plain pairing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.compare import _pair_changed_records, _row_of, compare_runs
from core.analysis.diff import (
    _ITER_CHUNK,
    ALL_KINDS,
    CALL_KINDS,
    TraceOps,
    _trace_diff_plain,
    iter_changed_seqs,
    tool_diffs,
    trace_diff,
)
from core.record.recording import ToolResult
from tests.builders import lifecycle, recording, snapshot
from tests.core.analysis.test_trace_diff_fast import apply, edit, run_of, step


def check_ops(ops: TraceOps, plain: list) -> None:
    """Every way of reading ``ops`` gives what the same reading of ``plain`` gives."""
    n = len(plain)
    assert len(ops) == n
    assert list(ops) == plain
    assert ops == plain and plain == ops and ops == tuple(plain)
    for t in range(-n, n):
        assert ops[t] == plain[t]
    for t in (n, -n - 1):
        with pytest.raises(IndexError):
            ops[t]
    cuts = sorted({0, 1, n // 3, n // 2, n - 1, n, n + 5, -2})
    for lo in cuts:
        for hi in cuts:
            assert ops[lo:hi] == plain[lo:hi]
    assert ops[::3] == plain[::3] and ops[::-1] == plain[::-1]
    assert list(reversed(ops)) == plain[::-1]
    if plain:
        assert ops.index(plain[-1]) == plain.index(plain[-1])
    assert ops.changes() == [o for o in plain if o.op != "same"]
    assert ops.difference_rows() == [i for i, o in enumerate(plain) if o.op != "same"]
    assert ops.counts() == {k: sum(o.op == k for o in plain) for k in ("same", "changed", "removed", "inserted")}


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 30), st.lists(edit, max_size=8), st.sampled_from([CALL_KINDS, ALL_KINDS]))
def test_lazy_ops_read_as_the_plain_list(steps, script, kinds):
    calls = run_of([r for k in range(steps) for r in step(k)])
    base = run_of([lifecycle(0), *calls, snapshot(0, "g", {"tools": []})])
    other = run_of([lifecycle(0), *apply(calls, script), snapshot(0, "g", {"tools": ["x"]})])
    fast, plain = trace_diff(base, other, kinds=kinds), _trace_diff_plain(base, other, kinds=kinds)
    assert isinstance(fast.ops, TraceOps)
    check_ops(fast.ops, plain.ops)
    assert fast.ops.first_divergence() == plain.first_divergence
    assert list(iter_changed_seqs(fast)) == list(iter_changed_seqs(plain))
    assert tool_diffs(base, other, fast) == tool_diffs(base, other, plain)


def test_ops_longer_than_an_iteration_chunk():
    base = run_of([r for k in range(_ITER_CHUNK) for r in step(k)])
    other = apply(base, [("result", 5, 1), ("delete", _ITER_CHUNK + 3, 0), ("result", 2 * _ITER_CHUNK - 1, 2)])
    fast, plain = trace_diff(base, other), _trace_diff_plain(base, other)
    assert len(plain.ops) >= 2 * _ITER_CHUNK
    check_ops(fast.ops, plain.ops)


def test_empty_runs():
    fast = trace_diff([], [])
    check_ops(fast.ops, [])
    assert fast.first_divergence is None and fast.ops.first_divergence() is None


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 20), st.lists(edit, max_size=6), st.booleans())
def test_compare_rows_read_as_the_plain_pairing(steps, script, changed_lifecycle):
    calls = [r for k in range(steps) for r in step(k)]
    base = recording(*run_of([lifecycle(0), *calls, lifecycle(0, "harness.shutdown")]))
    edited = apply(run_of(calls), script)
    end = lifecycle(0, "harness.shutdown")
    if changed_lifecycle:  # a lifecycle record whose payload changed: paired into one changed row
        end = end.model_copy(update={"details": {"changed": True}})
    other = recording(*run_of([lifecycle(0), *edited, end]))
    c = compare_runs(base, other)
    rows = _pair_changed_records(_trace_diff_plain(base, other, kinds=ALL_KINDS).ops)
    check_ops(c.rows, rows)
    fd = _trace_diff_plain(base, other).first_divergence
    assert c.first_divergence == fd
    assert c.differences == [i for i, op in enumerate(rows) if op.op != "same"]
    assert c.first_divergence_row == (_row_of(rows, fd) if fd else None)


def test_compare_of_calls_only_reuses_the_trace_first_divergence():
    calls = run_of([r for k in range(10) for r in step(k)])
    other = list(calls)
    other[5] = other[5].model_copy(update={"result": ToolResult(content={"value": -1})})
    c = compare_runs(recording(*calls), recording(*other))
    assert c.first_divergence == _trace_diff_plain(calls, other).first_divergence
    assert c.first_divergence is not None and c.first_divergence.dimension == "tool result"
