"""Canonical JSON (RFC 8785) and keys."""

from __future__ import annotations

import math
import sys

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import CanonicalizationError
from core.record.canonical import _INTERN_KEYS, args_hash, canonical_json, model_key, normalize_stop, tool_key
from core.record.recording import ChatMessage, ModelRequest

SAFE_INT = 2**53 - 1

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE_INT, max_value=SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(), children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=600, deadline=None)
@given(json_values)
def test_fast_path_is_byte_identical_to_rfc8785(value):
    assert canonical_json(value) == rfc8785.dumps(value)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_match_reference(f):
    assert canonical_json([f, {"x": f}]) == rfc8785.dumps([f, {"x": f}])


@pytest.mark.parametrize(
    "value",
    [
        {"\ue000": 1, "\U0001f600": 2, "a": 3},  # UTF-16 order differs from code point order
        {"\uffff": [1.5], "\U00010000": {"\ufb01": 0.1}},
        'tab\t nl\n quote" backslash\\ ctrl\x01 del\x7f ls\u2028 emoji\U0001f600',
        [1e21, 1e-7, 1e20, 1e-6, 123456789.125, -0.0, 5e-324, 1.7976931348623157e308],
    ],
)
def test_edge_cases_match_reference(value):
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value, reason_part, path",
    [
        (float("nan"), "not a JSON number", "/"),
        ({"a": [1, float("inf")]}, "not a JSON number", "/a/1"),
        ({"a": -math.inf}, "not a JSON number", "/a"),
        ({"b": b"raw"}, "bytes", "/b"),
        ({"s": {1, 2}}, "set", "/s"),
        ({1: "x"}, "not a string", "/"),
        ({"o": object()}, "object is not JSON", "/o"),
        ({"n": 2**53}, "safe range", "/n"),
        ({"u": "\ud800"}, "surrogate", "/u"),
        ({"a/b": {"c~d": float("nan")}}, "not a JSON number", "/a~1b/c~0d"),
    ],
)
def test_uncanonicalizable_values_raise_with_path(value, reason_part, path):
    with pytest.raises(CanonicalizationError) as exc:
        canonical_json(value)
    assert reason_part in str(exc.value)
    assert exc.value.path == ("" if path == "/" else path)


def test_key_independent_of_dict_order():
    a = {"x": 1, "y": {"b": 2, "a": [1, 2]}}
    b = {"y": {"a": [1, 2], "b": 2}, "x": 1}
    assert tool_key("t", a) == tool_key("t", b)
    assert args_hash(a) == args_hash(b)


def test_args_hash_differs_from_tool_key():
    assert args_hash({"a": 1}) != tool_key("t", {"a": 1})
    assert args_hash({"a": 1}).startswith("sha256:") and len(args_hash({"a": 1})) == 71


def _request(**over):
    base = dict(
        messages=[ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content="hi")],
        tools=[{"name": "ls", "parameters": {"type": "object"}}],
        stop=["END", "STOP"],
        options={"temperature": 0.2, "tool_choice": "auto", "provider": {"seed": 7}},
    )
    base.update(over)
    return ModelRequest(**base)


def test_model_key_stop_order_and_duplicates_do_not_matter():
    k = model_key("m", _request())
    assert model_key("m", _request(stop=["STOP", "END", "END"])) == k
    assert model_key("m", _request(stop=["STOP", "END"]).model_dump()) == k


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content="hi!")]},
        {"messages": [ChatMessage(role="user", content="hi")]},
        {"tools": []},
        {"stop": ["END"]},
        {"stop": ["END", "STOP", "HALT"]},
        {"options": {"temperature": 0.3, "tool_choice": "auto", "provider": {"seed": 7}}},
        {"options": {"temperature": 0.2, "tool_choice": "none", "provider": {"seed": 7}}},
        {"options": {"temperature": 0.2, "tool_choice": "auto", "provider": {"seed": 8}}},
        {
            "options": {
                "temperature": 0.2,
                "tool_choice": "auto",
                "provider": {"seed": 7},
                "response_format": {"type": "json"},
            }
        },
    ],
)
def test_any_change_changes_model_key(change):
    assert model_key("m", _request(**change)) != model_key("m", _request())


def test_model_identity_changes_key():
    assert model_key("m1", _request()) != model_key("m2", _request())


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_scalars, max_size=5), st.data())
def test_tool_key_changes_with_any_argument_change(args, data):
    k = tool_key("t", args)
    if args:
        name = data.draw(st.sampled_from(sorted(args)))
        changed = dict(args)
        changed[name] = [changed[name]]
        assert tool_key("t", changed) != k
    extra = dict(args)
    extra["__new__" + "x" * 6] = 1
    assert tool_key("t", extra) != k
    assert tool_key("t2", args) != k


def test_model_key_rejects_uncanonicalizable_option():
    with pytest.raises(CanonicalizationError):
        model_key("m", _request(options={"temperature": float("nan")}))


def test_normalize_stop():
    assert normalize_stop(None) == []
    assert normalize_stop("x") == ["x"]
    assert normalize_stop(["b", "a", "b"]) == ["a", "b"]


def test_keys_are_interned_only_where_interned_strings_are_freed(monkeypatch):
    from core.record import canonical

    for version, freed in (((3, 11, 7), True), ((3, 12, 3), False), ((3, 12, 6), True), ((3, 13, 1), True)):
        monkeypatch.setattr(sys, "version_info", (*version, "final", 0))
        assert canonical._interned_strings_are_freed() is freed, version
    monkeypatch.setattr(canonical, "_INTERN_KEYS", False)
    fresh = "".join(["sha256:", "1" * 64])
    assert canonical.intern_key(fresh) is fresh  # left as it is: equal keys still compare equal


@pytest.mark.skipif(
    not _INTERN_KEYS,
    reason="this interpreter keeps interned strings for good: keys are not interned",
)
def test_equal_keys_are_one_object_however_made_or_loaded(tmp_path):
    """Keys are interned where they are made (tool_key, model_key, key_for) and where a
    record is read, so two runs' equal keys compare by pointer (trace diff, matching)."""
    from core.record.io import load_recording, save_recording
    from core.record.recording import ModelRecord, Recording, ToolRecord

    args = {"q": "".join(["x", "y"])}
    assert tool_key("lookup", args) is tool_key("lookup", dict(args))
    req = ModelRequest(messages=[ChatMessage(role="user", content="hi")])
    same = ModelRequest(messages=[ChatMessage(role="user", content="hi")])
    assert req.key_for("m") is same.key_for("m")
    assert model_key("m", {"messages": [{"role": "user", "content": "hi"}]}) is req.key_for("m")

    tool = ToolRecord(seq=0, tool="lookup", arguments=args)
    tool.key = tool.compute_key()
    rec = Recording(records=[tool, ModelRecord(seq=1, model="m", request=req)])
    rec.records[1].key = rec.records[1].compute_key()
    path = tmp_path / "run.json"
    save_recording(rec, path)
    first, second = load_recording(path), load_recording(path)
    for a, b, made in zip(first.records, second.records, rec.records):
        assert a.key == made.key and a.key is b.key is made.key
    # a key given as a new string object (not computed) is interned when validated
    given_key = "".join(["sha256:", "0" * 64])
    assert ToolRecord(seq=0, tool="t", key=given_key).key is sys.intern("sha256:" + "0" * 64)
