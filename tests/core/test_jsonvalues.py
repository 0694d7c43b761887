"""core.jsonvalues: the documented encoding of NaN/Infinity and invalid Unicode."""

from __future__ import annotations

import math

import orjson
import pytest
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from core.canonical import canonical_json, tool_key
from core.errors import FormatError
from core.jsonvalues import (
    decode_value,
    display_text,
    encode_bytes,
    encode_text,
    encode_value,
    invalid_unicode_bytes,
    is_tagged,
    load_json_lenient,
)
from core.recording import Recording, ToolRecord, ToolResult


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
_texts = st.lists(
    st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr), st.just("\ufffd")), max_size=12
).map("".join)
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(allow_nan=True, allow_infinity=True), _texts,
)
_json = st.recursive(
    _json_scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(alphabet="abcxyz", max_size=3), kids, max_size=4)),
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
    import json

    text = json.dumps(v)  # Python writes NaN/Infinity literals and \\udXXX escapes
    loaded, _ = load_json_lenient(text.encode())
    # what the standard library reads (a surrogate *pair* written as two escapes is
    # one character to any JSON reader, so compare with json.loads, not with v)
    assert _same(decode_value(loaded), json.loads(text))
