"""core.record.jsonvalues: the documented encoding of NaN/Infinity, integers beyond ±(2**53-1)
and invalid Unicode."""

from __future__ import annotations

import json
import math

import orjson
import pytest
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import CanonicalizationError, FormatError
from core.record.canonical import canonical_json, tool_key
from core.record.jsonvalues import (
    SAFE_INT_MAX,
    decode_value,
    display_text,
    encode_bytes,
    encode_int,
    encode_text,
    encode_value,
    find_big_int,
    invalid_unicode_bytes,
    is_tagged,
    load_json_lenient,
    might_hold_big_int,
)
from core.record.recording import Recording, ToolRecord, ToolResult

# ------------------------------------------------------------------ non-finite numbers


def test_nan_and_infinity_literals_load_as_tags_distinct_from_null():
    value, warnings = load_json_lenient(b'{"a": NaN, "b": Infinity, "c": -Infinity, "d": null}')
    assert value == {
        "a": {"$nonfinite": "NaN"},
        "b": {"$nonfinite": "Infinity"},
        "c": {"$nonfinite": "-Infinity"},
        "d": None,
    }
    assert value["a"] != value["d"]
    assert [w.place for w in warnings] == ["/a", "/b", "/c"]
    assert all("non-standard number" in w.message for w in warnings)


def test_nan_vs_nan_is_no_difference_and_canonicalizes():
    a, _ = load_json_lenient(b'{"x": [1, NaN]}')
    b, _ = load_json_lenient(b'{"x": [1, NaN]}')
    assert a == b
    assert DeepDiff(a, b) == {}
    assert canonical_json(a) == canonical_json(b)
    null, _ = load_json_lenient(b'{"x": [1, null]}')
    assert tool_key("t", a) != tool_key("t", null)


def test_orjson_would_misread_nan_but_tags_survive_our_save_and_load(tmp_path):
    # the trap the encoding avoids: orjson writes NaN as null
    assert orjson.dumps({"x": float("nan")}) == b'{"x":null}'
    args, _ = load_json_lenient(b'{"threshold": NaN, "limit": -Infinity}')
    rec = Recording(records=[ToolRecord(seq=0, tool="t", arguments=args, result=ToolResult(content=args))])
    rec.records[0].key = rec.records[0].compute_key()
    path = tmp_path / "r.json"
    rec.save(path)
    back = Recording.load(path)
    assert back.records[0].arguments == args
    assert back.records[0].key == rec.records[0].key
    assert math.isnan(decode_value(back.records[0].arguments)["threshold"])
    assert decode_value(back.records[0].arguments)["limit"] == -math.inf


def test_python_floats_encode():
    enc, w = encode_value({"v": [float("nan"), float("inf"), -float("inf"), 1.5]})
    assert enc == {"v": [{"$nonfinite": "NaN"}, {"$nonfinite": "Infinity"}, {"$nonfinite": "-Infinity"}, 1.5]}
    assert len(w) == 3
    assert display_text(enc["v"][0]) == "NaN"


# ------------------------------------------------------------------ integers beyond ±(2**53-1)


def test_big_integers_load_as_exact_tags_and_the_range_edge_is_exact():
    doc = b'{"a": 1152921504606846976, "b": [9007199254740991, 9007199254740992, -9007199254740992], "c": 1180591620717411303424}'
    value, warnings = load_json_lenient(doc)
    assert value == {
        "a": {"$bigint": "1152921504606846976"},
        "b": [9007199254740991, {"$bigint": "9007199254740992"}, {"$bigint": "-9007199254740992"}],
        "c": {"$bigint": "1180591620717411303424"},  # beyond 64 bits: orjson would give a float
    }
    assert decode_value(value) == {"a": 2**60, "b": [2**53 - 1, 2**53, -(2**53)], "c": 2**70}
    assert [w.place for w in warnings] == ["/a", "/b/1", "/b/2", "/c"]
    assert all("outside ±(2**53-1)" in w.message and "$bigint" in w.message for w in warnings)
    canonical_json(value)  # the tagged form has a canonical form: keys and digests work
    with pytest.raises(CanonicalizationError, match="outside"):
        canonical_json(decode_value(value))  # the raw integers do not


def test_orjson_alone_would_misread_an_integer_beyond_64_bits():
    # the trap the exact reading avoids
    assert isinstance(orjson.loads(b"[18446744073709551616]")[0], float)
    value, _ = load_json_lenient(b"[18446744073709551616]")
    assert decode_value(value) == [2**64]


def test_integer_longer_than_pythons_conversion_limit_round_trips():
    n = 7 * 10**5000 + 3  # more digits than int() converts at once (4300 by default)
    value, warnings = load_json_lenient(b"[" + b"7" + b"0" * 4999 + b"3]")
    assert decode_value(value) == [n]
    assert encode_int(n) == value[0] and encode_int(-n) == {"$bigint": "-" + value[0]["$bigint"]}
    assert "(5001 digits)" in warnings[0].message
    assert display_text(value[0]).startswith("7000")


def test_big_integer_tags_are_recognised_and_displayed():
    tag = {"$bigint": "1152921504606846976"}
    assert is_tagged(tag) and is_tagged({"$bigint": "-9007199254740992"})
    # only the canonical digits of an integer outside the range make a tag
    for data in (
        {"$bigint": "5"},
        {"$bigint": "9007199254740991"},
        {"$bigint": "01152921504606846976"},
        {"$bigint": "+1152921504606846976"},
        {"$bigint": 1152921504606846976},
        {"$bigint": "1152921504606846976", "x": 1},
        {"$bigint": "1e30"},
    ):
        assert not is_tagged(data)
        assert decode_value(data) == data
    assert display_text(tag) == "1152921504606846976"
    assert display_text({"id": tag, "n": [tag, 1]}) == '{"id":1152921504606846976,"n":[1152921504606846976,1]}'
    assert display_text([2**70]) == "[1180591620717411303424]"  # a raw one beyond 64 bits too


def test_encode_value_tags_python_ints_and_find_big_int_names_the_place():
    enc, w = encode_value({"ok": 2**53 - 1, "x": [True, 2**60], "y": -(2**80)}, place="args")
    assert enc == {"ok": 2**53 - 1, "x": [True, {"$bigint": str(2**60)}], "y": {"$bigint": str(-(2**80))}}
    assert [x.place for x in w] == ["args/x/1", "args/y"]
    assert find_big_int(enc) == "/x/1"
    assert find_big_int({"a": {"b~/": 2**60}}) == "/a/b~0~1"  # raw ones too, JSON Pointer escaped
    assert find_big_int({"a": [1, 2.5, "12345678901234567", None]}) is None


def test_big_integers_survive_our_save_and_load(tmp_path):
    args, _ = load_json_lenient(b'{"id": 1152921504606846976}')
    rec = Recording(records=[ToolRecord(seq=0, tool="t", arguments=args, result=ToolResult(content=args))])
    path = tmp_path / "r.json"
    rec.save(path)
    back = Recording.load(path, verify_keys=True)
    assert back.records[0].arguments == args
    assert decode_value(back.records[0].result.content) == {"id": 2**60}


def test_long_number_check_never_misses_a_number_token():
    assert might_hold_big_int(b"[1152921504606846976]")
    assert might_hold_big_int(b'{"a":\n  -1152921504606846976}')
    assert might_hold_big_int("1152921504606846976")
    assert might_hold_big_int(b'{"s": "{\\"n\\": 1152921504606846976}"}')  # JSON inside a string
    assert not might_hold_big_int(b'{"t": "1700000000000000000", "n": 123456789012345}')


def _big_int_token_reference(data: bytes) -> bool:
    """The rule of might_hold_big_int read off the whole text at once: a run of 16 or more
    digits whose first digit starts a number token (after the start, "[", ":", ",", a
    line break, spaces or tabs, and an optional "-")."""
    import re

    for m in re.finditer(rb"[0-9]{16,}", data):
        i = m.start() - 1
        if i >= 0 and data[i] == 0x2D:
            i -= 1
        while i >= 0 and data[i] in b" \t":
            i -= 1
        if i < 0 or data[i] in b"[:,\r\n":
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["[", "]", ":", ",", "-", " ", "\t", "\n", '"', "a", "{", "}"]),
            st.text(alphabet="0123456789", min_size=1, max_size=40),
        ),
        max_size=60,
    ),
    st.sampled_from([16, 17, 20, 33, 1 << 18]),
)
def test_long_number_check_by_blocks_is_the_whole_text_rule(pieces, block):
    """The scan goes a block at a time (blocks overlapping by 15 bytes); with tiny blocks
    every run of digits crosses block edges somewhere, and the answer is still the one
    of the rule applied to the whole text."""
    import core.record.jsonvalues as jv

    data = "".join(pieces).encode()
    saved = jv._SCAN_BLOCK
    jv._SCAN_BLOCK = block
    try:
        assert might_hold_big_int(data) == _big_int_token_reference(data)
    finally:
        jv._SCAN_BLOCK = saved


# ------------------------------------------------------------------ invalid unicode


def test_lone_surrogate_escape_loads_displays_and_round_trips():
    value, warnings = load_json_lenient(b'{"out": "ok \\ud800 end"}')
    tag = value["out"]
    assert is_tagged(tag)
    assert tag == {"$invalid_unicode": "ok \ufffd end", "surrogates": [[3, 0xD800]]}
    assert display_text(tag) == "ok \ufffd end"
    assert decode_value(tag) == "ok \ud800 end"
    assert any("invalid unicode" in w.message for w in warnings)
    canonical_json(value)  # a tag is valid JSON: keys can be computed


def test_non_utf8_bytes_load_reversibly():
    raw = b'{"out": "caf\xe9 \xff!"}'
    value, warnings = load_json_lenient(raw)
    tag = value["out"]
    assert tag == {"$invalid_unicode": "caf\ufffd \ufffd!", "bytes": [[3, 0xE9], [5, 0xFF]]}
    assert invalid_unicode_bytes(tag) == b"caf\xe9 \xff!"
    assert "not UTF-8" in warnings[0].message


def test_genuine_replacement_character_is_not_confused():
    # U+FFFD in valid text stays text; positions tell which U+FFFD were invalid
    value, warnings = load_json_lenient('{"s": "\ufffd and \\udfff"}'.encode())
    assert value["s"] == {"$invalid_unicode": "\ufffd and \ufffd", "surrogates": [[6, 0xDFFF]]}
    assert decode_value(value["s"]) == "\ufffd and \udfff"


def test_object_that_only_looks_like_a_tag_is_data():
    assert not is_tagged({"$nonfinite": "NaN", "other": 1})
    assert not is_tagged({"$nonfinite": "nan"})
    assert not is_tagged({"$invalid_unicode": "x"})
    assert not is_tagged({"$invalid_unicode": "x", "bytes": [[5, 200]]})  # index out of range
    assert decode_value({"$nonfinite": "NaN", "other": 1}) == {"$nonfinite": "NaN", "other": 1}


def test_malformed_and_truncated_json_are_format_errors():
    with pytest.raises(FormatError, match="truncated"):
        load_json_lenient(b'{"a": "cut', source="x.json")
    with pytest.raises(FormatError, match="malformed") as exc:
        load_json_lenient(b'{"a": nope}', source="x.json")
    assert "x.json" in str(exc.value) and "line 1" in str(exc.value)


# ------------------------------------------------------------------ properties

# text that also holds lone surrogates (hypothesis' st.text() never does)
_texts = st.lists(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr), st.just("\ufffd")), max_size=12).map(
    "".join
)
# integers of any size, with the edges of the safe range well represented
_ints = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.integers(2**53 - 3, 2**53 + 3).flatmap(lambda n: st.sampled_from([n, -n])),
    st.integers(-(2**200), 2**200),
    st.integers(),
)
_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    _ints,
    st.floats(allow_nan=True, allow_infinity=True),
    _texts,
)
_json = st.recursive(
    _json_scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(alphabet="abcxyz", max_size=3), kids, max_size=4)
    ),
    max_leaves=20,
)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_text_round_trip_any_string_including_surrogates(s):
    enc = encode_text(s)
    assert decode_value(enc) == s
    orjson.dumps(enc)  # always valid JSON
    canonical_json(enc)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_bytes_round_trip(b):
    enc = encode_bytes(b)
    if isinstance(enc, str):
        assert enc.encode("utf-8") == b
    else:
        assert invalid_unicode_bytes(enc) == b
    canonical_json(enc)


@settings(max_examples=200, deadline=None)
@given(_json)
def test_value_round_trip_through_our_json(v):
    enc, _ = encode_value(v)
    # the encoded form is strict JSON that orjson writes and reads back unchanged
    assert orjson.loads(orjson.dumps(enc)) == enc
    canonical_json(enc)
    assert _same(decode_value(enc), v)
    # encoding is idempotent (tags are kept)
    assert encode_value(enc)[0] == enc


@settings(max_examples=200, deadline=None)
@given(_json)
def test_lenient_load_of_python_json_output(v):
    text = json.dumps(v)  # Python writes NaN/Infinity literals and \\udXXX escapes
    loaded, _ = load_json_lenient(text.encode())
    # what the standard library reads (a surrogate *pair* written as two escapes is
    # one character to any JSON reader, so compare with json.loads, not with v)
    assert _same(decode_value(loaded), json.loads(text))


@settings(max_examples=400, deadline=None)
@given(_ints)
def test_big_integer_round_trip(n):
    enc = encode_int(n)
    assert is_tagged(enc) == (abs(n) > SAFE_INT_MAX)
    assert type(decode_value(enc)) is int and decode_value(enc) == n
    canonical_json(enc)
    assert orjson.loads(orjson.dumps(enc)) == enc
    # read from JSON text, compact or pretty, the exact integer comes back
    for text in (json.dumps([n]), json.dumps({"k": [n]}, indent=2)):
        loaded, warnings = load_json_lenient(text.encode())
        assert json.loads(text) == decode_value(loaded)
        assert len(warnings) == (abs(n) > SAFE_INT_MAX)
        assert might_hold_big_int(text) or abs(n) <= SAFE_INT_MAX
    assert find_big_int([enc]) == ("/0" if abs(n) > SAFE_INT_MAX else None)
