"""The 0.8.1 legacy migration on hostile input: any field of a legacy document given a
value of any JSON type (or out of range) is migrated, or refused with a FormatError
naming the file, the field's JSON Pointer and the reason — never another exception."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError
from core.record.io import loads_recording
from core.record.recording import Recording
from inspector.cli import main
from tests.builders import DATA

LEGACY = DATA / "legacy" / "chassis-0.8.1-recording.json"
SAMPLE: dict[str, Any] = orjson.loads(LEGACY.read_bytes())


def _fields(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in the sample: each member and element, at every level."""
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _fields(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _fields(v, (*path, i))
    return out


FIELDS = _fields(SAMPLE)
#: fields a 0.8.1 document may lack (their absence is tested too)
any_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and ±Infinity too (a document built in code)
    | st.sampled_from([1e300, -1e300, 2**70, -(2**63), 253402300800, -62135596801, "noon", ""])
    | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8,
)


def _replace(doc: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node: Any = out
    for p in path[:-1]:
        node = node[p]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _migrates_or_refuses(doc: dict[str, Any]) -> None:
    try:
        rec = Recording.from_dict(doc, source="legacy.json")
    except FormatError as exc:
        assert str(exc).startswith("legacy.json"), exc
        assert "\n" not in str(exc)
        return
    assert rec.format_version == 3


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(FIELDS), any_value, st.booleans())
def test_any_value_in_any_field_migrates_or_is_a_format_error(path, value, delete):
    _migrates_or_refuses(_replace(SAMPLE, path, value, delete))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(FIELDS), any_value), min_size=2, max_size=5))
def test_several_wrong_fields_at_once(changes):
    doc = SAMPLE
    for path, value in changes:
        try:
            doc = _replace(doc, path, value, False)
        except (KeyError, IndexError, TypeError):  # an earlier change removed the place
            pass
    _migrates_or_refuses(doc)


@pytest.mark.parametrize(
    "path, value, pointer, reason",
    [
        (("interactions", 1, "timestamp"), "noon", "/interactions/1/timestamp", "timestamp must be a number"),
        (("interactions", 1, "timestamp"), 1e300, "/interactions/1/timestamp", "is not a time"),
        (("interactions", 1, "timestamp"), True, "/interactions/1/timestamp", "found a boolean"),
        (("interactions",), "all of them", "/interactions", "interactions must be a JSON array"),
        (("interactions", 1, "messages"), "hello", "/interactions/1/messages", "messages must be a JSON array"),
        (("interactions", 1, "messages", 0), "hello", "/interactions/1/messages/0", "a message must be"),
        (("interactions", 1, "params"), [["temperature", 0]], "/interactions/1/params", "params must be a JSON object"),
        (("interactions", 1, "params", "stop"), 7, "/interactions/1/params/stop", "stop must be a string or an array"),
        (("interactions", 1, "params", "stop", 0), ["x"], "/interactions/1/params/stop/0", "must be a string"),
        (("interactions", 1, "response"), "sunny", "/interactions/1/response", "response must be a JSON object"),
        (("interactions", 1, "response", "tool_calls"), {}, "/interactions/1/response/tool_calls", "tool_calls"),
        (("interactions", 1, "usage"), 40, "/interactions/1/usage", "usage must be a JSON object"),
        (("interactions", 2, "error"), {"code": 503}, "/interactions/2/error", "error must be a string"),
        (("interactions", 2, "elapsed"), "1.5s", "/interactions/2/elapsed", "elapsed must be a number"),
        (("interactions", 0), 5, "/interactions/0", "an interaction must be a JSON object"),
        (("metadata",), ["dataset"], "/metadata", "metadata must be a JSON object"),
        (("mode",), 1, "/mode", "mode must be a string"),
    ],
)
def test_wrong_types_are_named_with_their_pointer(path, value, pointer, reason):
    doc = _replace(SAMPLE, path, value, False)
    with pytest.raises(FormatError) as exc:
        loads_recording(orjson.dumps(doc), source="legacy.json")
    assert exc.value.file == "legacy.json" and exc.value.path == pointer
    assert reason in exc.value.reason


def test_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    p = tmp_path / "legacy.json"
    p.write_bytes(orjson.dumps(_replace(SAMPLE, ("interactions", 1, "timestamp"), "noon", False)))
    for command in ("info", "validate", "timeline", "audit"):
        assert main([command, str(p)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"chassis-inspector: {p} at /interactions/1/timestamp: timestamp must be a number "
            "(seconds since the epoch), found a string ('noon')\n"
        )
    out = tmp_path / "out.json"
    assert main(["migrate", str(p), "-o", str(out)]) == 2
    assert "/interactions/1/timestamp" in capsys.readouterr().err and not out.exists()
