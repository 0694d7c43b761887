"""core.analysis.compare: the pair diff stopped after MAX_CHANGES, changed non-call
records as one changed row, changed strings shown around their first difference, and
blobs told apart by a hash."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.compare import (
    MAX_CHANGES,
    changed_strings,
    changed_texts,
    compare_runs,
    pair_changes,
    pair_diff,
    value_text,
)
from core.record.recording import LifecycleRecord, Recording
from tests.builders import SAMPLES, lifecycle, model, msg, recording, tool


def test_the_pair_diff_stops_after_max_changes():
    """Two tool results of 100,000 items that all differ: the diff stops at the change
    after MAX_CHANGES and says it is incomplete (all 100,000 took about 6 s)."""
    a = tool(0, "read", {"p": "x"}, [str(i) for i in range(100_000)])
    b = tool(0, "read", {"p": "x"}, [f"{i}x" for i in range(100_000)])
    diff = pair_diff(a, b)
    assert len(diff.changes) == MAX_CHANGES and not diff.complete
    assert all(ch.op == "changed" and ch.path.startswith("/result/content/") for ch in diff.changes)
    assert diff.changes[0].path == "/result/content/0" and diff.changes[0].new == "0x"
    small = pair_diff(tool(0, "r", {}, {"a": 1, "b": [1, 2]}), tool(0, "r", {}, {"a": 2, "b": [1, 3]}))
    assert small.complete and [c.path for c in small.changes] == ["/result/content/a", "/result/content/b/1"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=3),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text("xyz", max_size=2), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(_json, _json, st.integers(0, 6))
def test_a_stopped_diff_is_part_of_the_whole_one(old, new, limit):
    """Under the limit the findings are payload_diff's; over it, ``limit`` of them."""
    a, b = tool(0, "r", {}, old), tool(0, "r", {}, new)
    full = pair_changes(a, b)  # payload_diff, unbounded
    assert pair_diff(a, b, limit=10**9) == type(pair_diff(a, b))(full, complete=True)
    bounded = pair_diff(a, b, limit=limit)
    if len(full) <= limit:
        assert bounded.complete and bounded.changes == full
    else:
        assert not bounded.complete and len(bounded.changes) == limit
        assert all(c in full for c in bounded.changes)


def test_a_changed_lifecycle_record_is_one_changed_row():
    """The fault run's harness.shutdown counts 2 tool calls, the successful run's 5: the
    same event at the same place, one ``~`` row (it was a removed and an inserted row)."""
    a = Recording.load(SAMPLES / "sample-agent-fault-corrupted-result.json")
    b = Recording.load(SAMPLES / "sample-agent-success.json")
    c = compare_runs(a, b)
    last = c.rows[-1]
    assert (last.op, last.kind, last.name, last.base_seq, last.other_seq) == (
        "changed",
        "lifecycle",
        "harness.shutdown",
        11,
        18,
    )
    assert c.counts == {"same": 9, "changed": 2, "removed": 1, "inserted": 8}
    assert [ch.path for ch in pair_changes(*c.counterparts(len(c.rows) - 1))] == ["/details/tool_calls"]
    assert c.differences[-1] == len(c.rows) - 1


def test_records_of_a_gap_stay_in_order_when_paired():
    """In a gap of calls and lifecycle events, the events of one kind pair in order and
    every record of both runs is still on one row, in its run's order."""

    def event(seq: int, name: str, **details: object) -> LifecycleRecord:
        return LifecycleRecord(seq=seq, event=name, details=details)  # type: ignore[arg-type]

    a = recording(
        lifecycle(0),
        model(1, [msg("user", "one")]),
        event(2, "generation.publish", g=1),
        tool(3, "t", {"x": 1}, "a"),
        event(4, "harness.shutdown", calls=2),
    )
    b = recording(
        lifecycle(0),
        model(1, [msg("user", "two")]),
        tool(2, "u", {"x": 1}, "a"),
        event(3, "generation.publish", g=2),
        event(4, "harness.shutdown", calls=3),
    )
    c = compare_runs(a, b)
    assert [op.base_seq for op in c.rows if op.base_seq is not None] == [0, 1, 2, 3, 4]
    assert [op.other_seq for op in c.rows if op.other_seq is not None] == [0, 1, 2, 3, 4]
    changed = [(op.name, op.base_seq, op.other_seq) for op in c.rows if op.op == "changed" and op.kind == "lifecycle"]
    assert changed == [("generation.publish", 2, 3), ("harness.shutdown", 4, 4)]
    assert not any(op.kind == "lifecycle" and op.op in ("removed", "inserted") for op in c.rows)


def test_changed_strings_past_the_width_show_the_first_difference():
    """Two 400-character strings that differ at character 300: both sides from 12
    characters before it, not the same first 160 characters twice."""
    old, new = "a" * 300 + "X" + "b" * 99, "a" * 300 + "Y" + "b" * 99
    left, right, at = changed_texts(old, new, 60)
    assert at == 300 and left != right
    assert left.startswith("…" + "a" * 12 + "X") and right.startswith("…" + "a" * 12 + "Y")
    assert len(left) <= 60 and len(right) <= 60
    # short ones stay as JSON, huge ones (past the hashing size) get the window too
    assert changed_texts("C-1001", "C-2002", 60) == ('"C-1001"', '"C-2002"', None)
    huge_a, huge_b = "x" * 10_000 + "1", "x" * 10_000 + "2"
    left, right, at = changed_texts(huge_a, huge_b, 60)
    assert at == 10_000 and left.endswith('1"') and right.endswith('2"')
    # escaped: nothing hidden reaches the line
    left, right, _ = changed_texts("a" * 200 + "\x1b[2J" + "1", "a" * 200 + "\x1b[2J" + "2", 60)
    assert "\x1b" not in left + right and left.endswith('1"')


def test_the_cli_and_the_app_share_one_changed_strings():
    from inspector.cli import analysis_cmds

    assert analysis_cmds.changed_strings is changed_strings


def test_two_images_of_one_size_differ_by_their_hash():
    png = "data:image/png;base64,iVBORw0KGgo" + "A" * 4_000_000
    other = "data:image/png;base64,iVBORw0KGgo" + "A" * 3_999_999 + "B"
    a, b = value_text(png), value_text(other)
    assert a.startswith("<image/png, 3.0 MB, sha256:") and b.startswith("<image/png, 3.0 MB, sha256:")
    assert a != b and a == value_text(png)  # stable, and different images differ
    left, right, at = changed_texts(png, other, 80)
    assert (left, right, at) == (a, b, None)
    big_a, big_b = value_text("y" * 5000), value_text("y" * 4999 + "z")
    assert big_a.startswith("<text, 5.0 kB, sha256:") and big_a != big_b
