"""Payload diff: the issue's cases, NaN, pointers, and hash guidance vs plain deepdiff."""

from __future__ import annotations

import copy

import pytest
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

import core.analysis.payload_diff as pdmod
from core.analysis.payload_diff import (
    PINNED_OPTIONS,
    Change,
    payload_diff,
    plain_deepdiff,
    pointer,
    subtree_digest,
)

ISSUE_OLD = {"a": {"z": [{"a": ["1"], "b": ["2"]}], "y": ["a"], "x": []}, "b": "1", "c": "1", "d": "1"}
ISSUE_NEW = {"a": {"z": [{"a": ["3"], "b": ["2"]}], "y": ["b"], "x": []}}


def as_json(changes):
    return [c.to_json() for c in changes]


def test_issue_pair_three_removed_keys_two_changed_leaves():
    got = payload_diff(ISSUE_OLD, ISSUE_NEW)
    assert as_json(got) == [
        {"op": "changed", "path": "/a/y/0", "old": "a", "new": "b"},
        {"op": "changed", "path": "/a/z/0/a/0", "old": "1", "new": "3"},
        {"op": "removed", "path": "/b", "old": "1"},
        {"op": "removed", "path": "/c", "old": "1"},
        {"op": "removed", "path": "/d", "old": "1"},
    ]
    assert all(c.path != "" for c in got)  # never "root changed"
    # the same in deepdiff-compatible mode and from plain (pinned) deepdiff
    assert payload_diff(ISSUE_OLD, ISSUE_NEW, align_lists="deepdiff") == got
    assert plain_deepdiff(ISSUE_OLD, ISSUE_NEW) == got


def test_unpinned_deepdiff_collapses_the_issue_pair_to_root():
    # why PINNED_OPTIONS sets threshold_to_diff_deeper=0: deepdiff's default collapses
    raw = DeepDiff(ISSUE_OLD, ISSUE_NEW)
    assert list(raw.get("values_changed", {})) == ["root"]


def test_front_insertion_in_a_long_list_is_one_insertion():
    items = [{"id": i, "tags": [i, i + 1]} for i in range(500)]
    got = payload_diff(items, [{"id": -1}] + items)
    assert as_json(got) == [{"op": "added", "path": "/0", "new": {"id": -1}}]
    # plain deepdiff pairs by position: hundreds of changes for the same edit
    assert len(plain_deepdiff(items, [{"id": -1}] + items)) > 500
    scalars = list(range(1000))
    assert as_json(payload_diff(scalars, ["new"] + scalars)) == [{"op": "added", "path": "/0", "new": "new"}]


def test_list_edits_inside_a_nested_list():
    old = {"rows": [{"k": i} for i in range(50)]}
    new = copy.deepcopy(old)
    del new["rows"][10]
    new["rows"][30]["k"] = "x"
    new["rows"].append({"k": 99})
    assert as_json(payload_diff(old, new)) == [
        {"op": "removed", "path": "/rows/10", "old": {"k": 10}},
        {"op": "changed", "path": "/rows/31/k", "old": 31, "new": "x", "new_path": "/rows/30/k"},
        {"op": "added", "path": "/rows/49", "new": {"k": 99}},  # new-side index
    ]


def test_nan_is_not_a_difference():
    nan = float("nan")
    assert payload_diff(nan, float("nan")) == []
    assert payload_diff({"x": [nan, 1]}, {"x": [float("nan"), 1]}) == []
    tagged = {"v": {"$nonfinite": "NaN"}}
    assert payload_diff(tagged, copy.deepcopy(tagged)) == []
    # but NaN is not null
    assert as_json(payload_diff({"v": {"$nonfinite": "NaN"}}, {"v": None})) == [
        {"op": "changed", "path": "/v", "old": {"$nonfinite": "NaN"}, "new": None}
    ]


def test_types_are_exact():
    assert [c.op for c in payload_diff({"a": 1}, {"a": 1.0})] == ["changed"]
    assert [c.op for c in payload_diff([True], [1])] == ["changed"]
    assert [c.op for c in payload_diff([1, 2], [1.0, 2])] == ["changed"]
    # (plain_deepdiff is deepdiff's own answer, which changed here between deepdiff 9.1 and 9.2:
    # whatever it says, our diff keeps the types exact)
    assert subtree_digest({"a": 1}) != subtree_digest({"a": True})
    assert subtree_digest({"a": 1, "b": [1]}) == subtree_digest({"b": [1], "a": 1})


def test_json_pointer_escaping():
    assert pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"
    assert as_json(payload_diff({"a/b": {"c~d": 1}}, {"a/b": {"c~d": 2}})) == [
        {"op": "changed", "path": "/a~1b/c~0d", "old": 1, "new": 2}
    ]
    assert as_json(payload_diff("x", {"k": 1})) == [{"op": "changed", "path": "", "old": "x", "new": {"k": 1}}]


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="align_lists"):
        payload_diff(1, 2, align_lists="fuzzy")


def test_identical_subtrees_are_not_walked(monkeypatch):
    big = {f"k{i}": {"nested": list(range(20)), "s": "x" * 10} for i in range(2000)}
    new = copy.deepcopy(big)
    new["k1234"]["s"] = "y"
    calls = 0
    real = DeepDiff._diff

    def counting(self, level, *args, **kwargs):
        nonlocal calls
        calls += 1
        return real(self, level, *args, **kwargs)

    monkeypatch.setattr(DeepDiff, "_diff", counting)
    got = payload_diff(big, new)
    assert as_json(got) == [{"op": "changed", "path": "/k1234/s", "old": "x" * 10, "new": "y"}]
    assert calls <= 5  # root, k1234, k1234/s (+ slack): not one per subtree
    calls = 0
    plain_deepdiff(big, new)
    assert calls > 2000


# --------------------------------------------------------------------------- properties

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.text(alphabet="ab/~", max_size=3),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(alphabet="abc/~", max_size=2), children, max_size=5),
    ),
    max_leaves=25,
)
no_lists = st.recursive(
    scalars,
    lambda children: st.dictionaries(st.text(alphabet="abc/~", max_size=2), children, max_size=5),
    max_leaves=25,
)


@st.composite
def related_pair(draw, values=json_values):
    """Either two independent values or a value and a mutated copy (shared subtrees)."""
    a = draw(values)
    if draw(st.booleans()):
        return a, draw(values)
    b = copy.deepcopy(a)
    for _ in range(draw(st.integers(1, 3))):
        b = _mutate(draw, b, values)
    return a, b


def _mutate(draw, v, values):
    if isinstance(v, dict) and v and draw(st.booleans()):
        k = draw(st.sampled_from(sorted(v)))
        v[k] = _mutate(draw, v[k], values)
        return v
    if isinstance(v, list) and v and draw(st.booleans()):
        i = draw(st.integers(0, len(v) - 1))
        choice = draw(st.sampled_from(["into", "insert", "delete"]))
        if choice == "into":
            v[i] = _mutate(draw, v[i], values)
        elif choice == "insert":
            v.insert(i, draw(values))
        else:
            del v[i]
        return v
    return draw(values)


@settings(max_examples=400, deadline=None)
@given(related_pair())
def test_hash_guided_equals_plain_deepdiff(pair):
    """The guidance skips work but never changes deepdiff's findings."""
    a, b = pair
    assert payload_diff(a, b, align_lists="deepdiff") == plain_deepdiff(a, b)


@settings(max_examples=300, deadline=None)
@given(related_pair(no_lists))
def test_default_mode_equals_plain_deepdiff_without_lists(pair):
    """Where no list alignment is involved, the default mode agrees with deepdiff exactly."""
    a, b = pair
    assert payload_diff(a, b) == plain_deepdiff(a, b)


def _resolve(doc, path):
    for tok in path.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        doc = doc[int(tok)] if isinstance(doc, list) else doc[tok]
    return doc


def _typed(v):
    if isinstance(v, dict):
        return {k: _typed(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_typed(x) for x in v]
    return (type(v).__name__, v)


@settings(max_examples=400, deadline=None)
@given(related_pair())
def test_default_mode_findings_are_real(pair):
    """Every reported old value is at its path in the old document, every new value at its
    path in the new one, and no reported place is inside another reported place."""
    a, b = pair
    changes = payload_diff(a, b)
    for c in changes:
        if c.op in ("removed", "changed"):
            assert _typed(_resolve(a, c.path)) == _typed(c.old)
        if c.op == "added":
            assert _typed(_resolve(b, c.path)) == _typed(c.new)
        if c.op == "changed":
            assert _typed(_resolve(b, c.new_path or c.path)) == _typed(c.new)
            assert _typed(c.old) != _typed(c.new)
    old_places = [c.path for c in changes if c.op != "added"]
    for p in old_places:
        assert not any(q != p and q.startswith(p + "/") for q in old_places)


@settings(max_examples=300, deadline=None)
@given(related_pair())
def test_default_mode_is_empty_exactly_when_equal(pair):
    a, b = pair
    assert (payload_diff(a, b) == []) == (a == b and _same_types(a, b))
    assert payload_diff(a, copy.deepcopy(a)) == []


def _same_types(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return all(_same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True


def test_pinned_options_are_the_documented_ones():
    assert PINNED_OPTIONS["threshold_to_diff_deeper"] == 0
    assert PINNED_OPTIONS["ignore_order"] is False
    assert isinstance(pdmod.Change("added", "/x", new=1), Change)


def test_nan_and_infinity_are_not_null():
    """orjson writes NaN/Infinity as null: the fast hash must never call them equal."""
    nan, inf = float("nan"), float("inf")
    for old, new in (
        ([nan], [None]),
        ({"x": inf}, {"x": None}),
        ([[nan], 1], [[None], 1]),
        ({"a": [{"b": -inf}]}, {"a": [{"b": None}]}),
    ):
        assert [c.op for c in payload_diff(old, new)] == ["changed"], (old, new)
        assert [c.op for c in payload_diff(new, old)] == ["changed"], (new, old)
    assert payload_diff([[nan]], [[float("nan")]]) == []


def test_values_orjson_refuses_still_diff():
    lone = "\ud800"
    assert [c.op for c in payload_diff({"s": [lone]}, {"s": ["x"]})] == ["changed"]
    assert payload_diff({"s": [lone]}, {"s": [lone]}) == []
    big = 2**70
    assert [c.path for c in payload_diff([{"n": big}], [{"n": big + 1}])] == ["/0/n"]


def test_removed_and_added_items_at_the_same_index_stay_apart():
    """deepdiff merges an item removed at index i and one added at index i into a
    "changed"; in an alignment they are different items (found by hypothesis)."""
    assert as_json(payload_diff([[], [], None], [None, []])) == [
        {"op": "removed", "path": "/0", "old": []},
        {"op": "removed", "path": "/1", "old": []},
        {"op": "added", "path": "/1", "new": []},
    ]
