"""The nesting limit (core.record.nesting): finding values nested too deeply (in parsed
values and in JSON text), and the writers that work beyond orjson's and pydantic-core's
254 levels — byte-identical to orjson, to pydantic's JSON mode, and (canonical JSON) to
the ``rfc8785`` reference, property-tested."""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import FormatError, short_pointer
from core.record.canonical import _canonical_deep, canonical_json
from core.record.io import RECORDING_VALUES, dumps_recording, loads_recording, recording_to_dict
from core.record.nesting import (
    MAX_DEPTH,
    RECURSION_LIMIT,
    VALUE,
    Each,
    _dumps_deep,
    _jsonable_deep,
    check_values,
    depth_exceeded,
    dumps,
    ensure_recursion_limit,
    exceeds,
    json_mode_dump,
    pointer,
    text_values_exceeding,
    values_exceeding,
)
from core.record.recording import ToolRecord
from tests.builders import make_recording
from tests.core.record.test_canonical import json_values

SAFE_INT = 2**53 - 1
keys = st.text(max_size=4) | st.sampled_from(["\ue000", "\U0001f600", "\uffff", "a", "é", "~/"])
#: JSON values with keys whose UTF-16 order differs from code point order, tuples and
#: big (64-bit) integers orjson writes
any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE_INT, max_value=SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(keys, children, max_size=5)
    ),
    max_leaves=30,
)
#: how a value is wrapped to nest deeply: one container per level, with siblings
wrapper_levels = st.lists(
    st.tuples(st.sampled_from(["list", "dict"]), keys, st.integers(0, 2), any_json),
    min_size=1,
    max_size=4,
)


def wrap(value: Any, depth: int, levels: list[tuple[str, str, int, Any]]) -> Any:
    """``value`` inside ``depth`` containers, cycling through ``levels`` (kind, key,
    position among siblings, a sibling value)."""
    for i in range(depth):
        kind, key, pos, sibling = levels[i % len(levels)]
        if kind == "list":
            items = [sibling] * pos
            value = [*items, value, sibling]
        else:
            value = {f"s{key}": sibling, key: value} if pos else {key: value, f"s{key}": sibling}
    return value


def depth_of(value: Any) -> int:
    """The reference nesting depth (recursive; the test raises the recursion limit)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@pytest.fixture(autouse=True, scope="module")
def _deep_recursion():
    ensure_recursion_limit()  # the reference implementations recurse
    assert sys.getrecursionlimit() >= RECURSION_LIMIT


# --------------------------------------------------------------------------- canonical JSON


@settings(max_examples=500, deadline=None)
@given(json_values)
def test_deep_writer_is_byte_identical_to_rfc8785(value):
    # the fallback, forced to write every container itself, on arbitrary values
    assert _canonical_deep(value, use_fast=False) == rfc8785.dumps(value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.integers(min_value=250, max_value=MAX_DEPTH), wrapper_levels)
def test_canonical_json_of_deep_values_is_byte_identical_to_rfc8785(value, depth, levels):
    levels = [(k, key, p, s if depth_of(s) < 3 else None) for k, key, p, s in levels]
    deep = wrap(value, depth, [(k, key, p, _canonical_safe(s)) for k, key, p, s in levels])
    assert canonical_json(deep) == rfc8785.dumps(deep)
    assert _canonical_deep(deep, use_fast=False) == rfc8785.dumps(deep)


def _canonical_safe(v: Any) -> Any:
    """Tuples as lists (what rfc8785 takes)."""
    if isinstance(v, (list, tuple)):
        return [_canonical_safe(x) for x in v]
    if isinstance(v, dict):
        return {k: _canonical_safe(x) for k, x in v.items()}
    return v


@pytest.mark.parametrize("depth", [253, 254, 255, 256, 600, 999, 1000, 1500])
def test_canonical_chain_at_every_boundary(depth):
    deep = wrap({"\ue000": 1.5, "\U0001f600": [1e21, -0.0]}, depth, [("dict", "k", 1, 2), ("list", "", 1, "x")])
    assert canonical_json(deep) == rfc8785.dumps(deep)


@pytest.mark.parametrize(
    "bad, reason",
    [(float("nan"), "not a JSON number"), ("\ud800", "lone UTF-16 surrogate"), (2**60, "safe range"), (b"x", "bytes")],
)
def test_deep_values_without_a_canonical_form_name_their_place(bad, reason):
    from core.errors import CanonicalizationError

    deep = wrap({"bad": bad}, 700, [("list", "", 0, None), ("dict", "a/b", 0, None)])
    with pytest.raises(CanonicalizationError) as exc:
        canonical_json(deep)
    assert reason in exc.value.reason
    assert exc.value.path.endswith("/bad") and exc.value.path.count("/") == 701
    assert "a~1b" in exc.value.path  # RFC 6901 escaping
    assert len(str(exc.value)) < 300  # the message shortens the pointer


def test_canonical_json_of_deep_values_needs_no_raised_recursion_limit():
    deep = wrap([1.5, "x"], MAX_DEPTH, [("dict", "k", 0, None)])
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default
    try:
        out = canonical_json(deep)
    finally:
        sys.setrecursionlimit(old)
    assert out == rfc8785.dumps(deep)


# --------------------------------------------------------------------------- orjson.dumps

OPTIONS = [
    0,
    orjson.OPT_INDENT_2,
    orjson.OPT_SORT_KEYS,
    orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2,
    orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2,
]


@settings(max_examples=400, deadline=None)
@given(any_json, st.sampled_from(OPTIONS))
def test_deep_dumps_writer_is_byte_identical_to_orjson(value, option):
    assert _dumps_deep(value, option, use_orjson=False) == orjson.dumps(value, option=option)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.integers(-5, 5) | st.text(max_size=3) | st.booleans(), st.integers(-(2**63), 2**63 - 1), max_size=5
    ),
    st.sampled_from([orjson.OPT_NON_STR_KEYS, orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS]),
)
def test_deep_dumps_writer_matches_orjson_on_non_string_keys(value, option):
    assert _dumps_deep(value, option, use_orjson=False) == orjson.dumps(value, option=option)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_json, st.integers(min_value=250, max_value=MAX_DEPTH + 500), wrapper_levels, st.sampled_from(OPTIONS))
def test_dumps_of_deep_values_is_orjson_layout(value, depth, levels, option):
    deep = wrap(value, depth, levels)
    out = dumps(deep, option)
    assert out == _dumps_deep(deep, option, use_orjson=False)
    # orjson's own output for the same value cut below its limit, re-nested: the
    # innermost part is orjson's bytes exactly
    if not option & orjson.OPT_INDENT_2:
        assert orjson.dumps(value, option=option) in out
    assert json.loads(out) == json.loads(json.dumps(deep))


#: run in a child process: values on which orjson overflows its output buffer (a heap
#: overflow that glibc notices only later, elsewhere: the flaky SIGABRT of the property
#: tests above), written by dumps and canonical_json with every orjson result checked
#: against the size of its allocation (glibc's malloc_usable_size) where there is one
_ORJSON_OVERFLOW_CHILD = r"""
import ctypes, os, sys
import orjson, rfc8785
from core.record.canonical import canonical_json
from core.record.nesting import _dumps_deep, dumps

try:
    usable = ctypes.CDLL(None).malloc_usable_size
    usable.restype, usable.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
except (OSError, AttributeError):
    usable = None
real_dumps = orjson.dumps

def checked_dumps(*args, **kwargs):
    out = real_dumps(*args, **kwargs)
    if usable is not None and sys.getsizeof(out) > 512 and usable(id(out)) < sys.getsizeof(out):
        os.write(2, b"orjson wrote %d bytes into a smaller buffer\n" % len(out))
        os._exit(3)
    return out

orjson.dumps = checked_dumps  # the modules call orjson.dumps through the module

def chain(depth, trailing):
    v = None
    for _ in range(depth):
        v = [v, *trailing]
    return v

values = [[chain(20, [-1.2345678901234567e-300] * 4)] * k for k in range(1, 30)]  # orjson 3.12, 3.13
values += [[1] * p + [chain(140, [])] for p in range(360, 390)]  # 140 closing brackets: every version
for v in values:
    assert dumps(v) == _dumps_deep(v, 0, use_orjson=False)
    assert dumps(v, orjson.OPT_INDENT_2) == _dumps_deep(v, orjson.OPT_INDENT_2, use_orjson=False)
    assert canonical_json(v) == rfc8785.dumps(v)
"""


def test_writers_never_hand_orjson_a_value_it_overflows_on():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    run = subprocess.run([sys.executable, "-c", _ORJSON_OVERFLOW_CHILD], cwd=root, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]


def test_dumps_keeps_orjson_errors():
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps(wrap(object(), 300, [("list", "", 0, None)]))
    with pytest.raises(TypeError):
        dumps(wrap({1: 2}, 300, [("dict", "k", 0, None)]))  # non-str key without OPT_NON_STR_KEYS
    assert dumps(wrap(object(), 300, [("list", "", 0, None)]), default=lambda o: "obj").count(b'"obj"') == 1


def test_recording_with_deep_values_saves_loads_and_dumps_identically(tmp_path):
    rec = make_recording()
    tool = next(r for r in rec.records if isinstance(r, ToolRecord))
    deep = wrap("leaf", 900, [("dict", "k", 1, 1.5), ("list", "", 0, None)])
    tool.result.content = deep
    rec.metadata["deep"] = wrap(1, MAX_DEPTH - 1, [("list", "", 0, None)])
    path = tmp_path / "deep.json"
    digest = rec.save(path)
    data = path.read_bytes()
    assert data == dumps_recording(rec)
    back = loads_recording(data, verify_keys=True)
    assert back.digest == digest and back.records[3].result.content == deep
    assert dumps_recording(back, indent=True) == data  # version 3: one record per line, never indented
    # the logical document, indented at this depth, loads (whole-document path) to the same
    indented = dumps(recording_to_dict(back), orjson.OPT_INDENT_2)
    assert indented.startswith(b'{\n  "format"')
    again = loads_recording(indented, verify_keys=True)
    assert again.digest == digest and again.records == back.records and again.metadata == back.metadata


@pytest.mark.parametrize("depth", [250, 260, MAX_DEPTH])
def test_records_digest_of_deep_records_is_the_reference_hash(depth):
    import hashlib

    from core.record.io import records_digest

    raw = recording_to_dict(make_recording())["records"]
    # ``depth`` levels: depth - 2 wrappers, the object, its array (within the limit: a
    # deeper value is refused with a FormatError, which the digest now checks whenever the
    # value is too deep for orjson, not only where orjson refuses it)
    raw[3]["result"]["content"] = wrap({"\ue000": 1.5, "a": [1e21]}, depth - 2, [("dict", "k", 1, 0.1)])
    raw[1]["details"] = wrap("x", depth, [("list", "", 1, -0.0)])
    expected = "sha256:" + hashlib.sha256(rfc8785.dumps(raw)).hexdigest()
    assert records_digest(raw) == expected


# --------------------------------------------------------------------------- pydantic JSON mode


@settings(max_examples=200, deadline=None)
@given(any_json | st.lists(st.floats() | st.tuples(st.floats(), st.text(max_size=2)), max_size=4))
def test_json_mode_fallback_matches_pydantic(value):
    rec = ToolRecord(seq=0, key=None, tool="t", arguments={"a": value}, result={"content": value})
    expected = rec.model_dump(mode="json", exclude_none=True)
    assert _jsonable_deep(rec.model_dump(exclude_none=True)) == expected
    assert json_mode_dump(rec.model_dump, exclude_none=True) == expected


def test_json_mode_dump_beyond_pydantic_depth():
    deep = wrap((1, 2.5, float("nan")), 600, [("dict", "k", 0, None)])
    rec = ToolRecord(seq=0, key=None, tool="t", arguments={}, result={"content": deep})
    with pytest.raises(ValueError, match="serialization depth"):
        rec.model_dump(mode="json")
    out = rec.to_json_obj()
    inner = out["result"]["content"]
    for _ in range(600):
        inner = inner["k"]
    assert inner == [1, 2.5, None]  # tuples as lists, NaN as null: pydantic's JSON mode


# --------------------------------------------------------------------------- finding


@settings(max_examples=300, deadline=None)
@given(any_json, st.integers(0, 8))
def test_depth_exceeded_agrees_with_the_recursive_reference(value, limit):
    found = depth_exceeded(value, limit)
    assert (found is not None) == (depth_of(value) > limit) == exceeds(value, limit)
    if found is not None:
        node = value
        for tok in found:
            node = node[tok]
        assert isinstance(node, (dict, list, tuple)) and len(found) == limit


@settings(max_examples=300, deadline=None)
@given(any_json, st.integers(1, 8))
def test_text_scan_agrees_with_the_parsed_value(value, limit):
    text = orjson.dumps(value)
    assert text_values_exceeding(text, limit=limit) == depth_exceeded(orjson.loads(text), limit)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), any_json, any_json)
def test_text_scan_follows_a_pattern(limit, meta, content):
    doc = {"metadata": meta, "records": [{"seq": 0, "result": {"content": content}}, {"seq": 1, "x": [meta]}]}
    text = orjson.dumps(doc)
    assert text_values_exceeding(text, RECORDING_VALUES, limit=limit) == values_exceeding(
        doc, RECORDING_VALUES, limit=limit
    )


def test_values_are_counted_from_their_own_top():
    doc = {"metadata": wrap(1, 5, [("list", "", 0, None)]), "records": [{"result": {"content": [[["x"]]]}}]}
    assert values_exceeding(doc, RECORDING_VALUES, limit=5) is None
    assert values_exceeding(doc, RECORDING_VALUES, limit=4) == ["metadata", 0, 0, 0, 0]
    assert values_exceeding(doc, RECORDING_VALUES, limit=2) == ["metadata", 0, 0]
    assert values_exceeding(doc["records"], Each({"result": {}}), limit=2) == [0, "result", "content", 0, 0]
    # a part of the document whose type the pattern does not expect is a value itself
    assert values_exceeding({"records": {"a": [[1]]}}, RECORDING_VALUES, limit=2) == ["records", "a", 0]
    assert values_exceeding([[1]], VALUE, limit=1) == [0]
    with pytest.raises(FormatError) as exc:
        check_values(doc, RECORDING_VALUES, source="run.json", limit=2)
    assert str(exc.value) == (
        "run.json at /metadata/0/0: nested more than 2 levels deep (arrays and objects; the limit is 2 levels)"
    )


def test_pointers_are_rfc6901_and_shortened_in_messages():
    assert pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0" and pointer([]) == "/"
    long = pointer(["records", 3, "result", "content", *[0, "k"] * 500])
    assert short_pointer(long) == "/records/3/result/content/0/k/0/k/…(994 more)…/0/k"
    assert short_pointer("/a/b") == "/a/b"
    assert short_pointer("/metadata/\n/x\x1b") == "/metadata/\\n/x\\x1b"  # one line, no control codes


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1030, 3000])
def test_loading_a_document_beyond_the_limit_names_the_place(depth):
    doc = recording_to_dict(make_recording())
    del doc["digest"]
    doc["records"][3]["result"]["content"] = wrap("x", depth, [("list", "", 0, None)])
    data = dumps(doc)  # beyond 1,024 levels orjson refuses to parse: the text is scanned
    with pytest.raises(FormatError) as exc:
        loads_recording(data, source="run.json")
    e = exc.value
    assert e.record == 3 and e.path == pointer(["records", 3, "result", "content", *[0] * MAX_DEPTH])
    assert str(e).startswith("run.json at record 3, /records/3/result/content/0/0/0/0/…(994 more)…/0/0: nested more")


# --------------------------------------------------------------------------- arrays in parts


@settings(max_examples=300, deadline=None)
@given(st.lists(any_json, max_size=12), st.integers(1, 5), st.sampled_from([0, orjson.OPT_SORT_KEYS]))
def test_array_parts_join_to_the_whole_array(items, part, option):
    from core.record.io import dump_array_parts

    def dump(v):
        return orjson.dumps(v, option=option)

    parts = dump_array_parts(items, dump, part)
    assert b"".join(parts) == dump(items)
    assert len(parts) == (1 if len(items) <= part else 2 * -(-len(items) // part) + 1)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, any_json, max_size=3), st.lists(any_json, max_size=12), st.integers(0, 6))
def test_documents_written_in_parts_are_byte_identical(header, records, deep_at):
    from core.record import io

    doc = {**{k: v for k, v in header.items() if k != "records"}, "records": records}
    if records and deep_at < len(records):  # a member too deep for one orjson call
        records[deep_at] = wrap(records[deep_at], 300, [("list", "", 1, 0)])
    expected = dumps(doc)
    old = io.ARRAY_PART
    io.ARRAY_PART = 2
    try:
        assert io.dumps_document(doc) == expected
    finally:
        io.ARRAY_PART = old


def test_records_digest_in_parts_is_the_reference_hash():
    import hashlib

    from core.record import io

    raw = recording_to_dict(make_recording())["records"] * 3
    expected = "sha256:" + hashlib.sha256(rfc8785.dumps(raw)).hexdigest()
    old = io.ARRAY_PART
    io.ARRAY_PART = 4
    try:
        assert len(raw) > 4 and io.records_digest(raw) == expected
    finally:
        io.ARRAY_PART = old
