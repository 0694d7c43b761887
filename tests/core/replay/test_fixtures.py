"""Fixture gateway precedence, fixture files and requirement helpers."""

from __future__ import annotations

import orjson
import pytest

from core.errors import FixtureError
from core.record.canonical import args_hash
from core.replay.fixtures import (
    Fixture,
    FixtureGateway,
    Requirement,
    json_diff,
    load_fixture_file,
    load_output_file,
    nearest_tool_call,
    parse_scope,
)
from tests.builders import chat_recording

H = args_hash({"q": 1})


def fx(scope="project", h=None, content=None, name="lookup", **kw):
    return Fixture(scope=scope, name=name, args_hash=h, output={"content": content}, **kw)


def test_precedence_replay_over_branch_over_project_then_exact_over_toolwide():
    project_any = fx(content="project any")
    project_exact = fx(h=H, content="project exact")
    branch_any = fx(scope="branch:b1", content="branch any")
    branch_exact = fx(scope="branch:b1", h=H, content="branch exact")
    replay_any = fx(scope="replay:r1", content="replay any")
    gw = FixtureGateway([project_exact, project_any, branch_exact, branch_any, replay_any])

    def pick(**kw):
        f = gw.match("tool", "lookup", H, **kw)
        return f.output["content"] if f else None

    assert pick(branch_id="b1", replay_id="r1") == "replay any"
    assert pick(branch_id="b1", replay_id="r2") == "branch exact"
    assert pick(branch_id="b2", replay_id="r2") == "project exact"
    assert gw.match("tool", "lookup", args_hash({"q": 2}), branch_id="b1").output["content"] == "branch any"
    assert gw.match("tool", "lookup", args_hash({"q": 2})).output["content"] == "project any"
    assert gw.match("tool", "other", H) is None
    assert gw.match("model", "lookup", H) is None


def test_later_fixture_wins_a_tie():
    gw = FixtureGateway([fx(h=H, content="old"), fx(h=H, content="new")])
    assert gw.match("tool", "lookup", H).output["content"] == "new"


@pytest.mark.parametrize("scope", ["project", "branch:x", "replay:y"])
def test_scopes(scope):
    assert parse_scope(scope) == scope


@pytest.mark.parametrize("scope", ["", "branch", "branch:", "global", "replay"])
def test_bad_scopes(scope):
    with pytest.raises(FixtureError, match="must be 'project', 'branch:ID' or 'replay:ID'"):
        parse_scope(scope)


def test_fixture_file(tmp_path):
    p = tmp_path / "fx.json"
    p.write_bytes(
        orjson.dumps(
            [
                {"tool": "lookup", "arguments": {"q": 1}, "output": {"content": 1}},
                {
                    "tool": "lookup",
                    "any": True,
                    "output": {"error": {"type": "Timeout", "message": "slow"}},
                    "scope": "project",
                },
                {"model": "m", "output": {"message": {"role": "assistant", "content": "hi"}}},
            ]
        )
    )
    fs = load_fixture_file(p, default_scope="replay:r9")
    assert [f.scope for f in fs] == ["replay:r9", "project", "replay:r9"]
    assert fs[0].args_hash == H and fs[1].args_hash is None
    assert fs[1].tool_result().error.type == "Timeout"
    assert fs[2].model_response().message.content == "hi"


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"tool": "t", "output": {"content": 1}}, "give exactly one matcher"),
        ({"tool": "t", "any": True, "arguments": {}, "output": {"content": 1}}, "give exactly one matcher"),
        ({"tool": "t", "any": False, "output": {"content": 1}}, "'any' must be true"),
        ({"tool": "t", "any": True}, "missing 'output'"),
        ({"tool": "t", "model": "m", "any": True, "output": {}}, "exactly one of 'tool' or 'model'"),
        ({"tool": "", "any": True, "output": {"content": 1}}, "must be a non-empty string"),
        ({"tool": "t", "any": True, "output": {"content": 1}, "colour": 1}, "unknown field(s) ['colour']"),
        ({"tool": "t", "args_hash": "md5:1", "output": {"content": 1}}, "'args_hash' must be 'sha256:<hex>'"),
        ({"tool": "t", "any": True, "output": {"content": 1}, "scope": "x"}, "scope 'x' must be"),
        ({"tool": "t", "any": True, "output": {"error": {"message": "no type"}}}, "missing required field 'type'"),
        ({"model": "m", "output": {"content": 1}}, "model fixture output at /message"),
    ],
)
def test_bad_fixture_entries(tmp_path, entry, expected):
    p = tmp_path / "fx.json"
    p.write_bytes(orjson.dumps([entry]))
    with pytest.raises(FixtureError) as err:
        load_fixture_file(p)
    assert "fx.json: fixture 0" in str(err.value)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[{"tool": "t", "arguments": {"x": 9007199254740993}, "output": {"content": 1}}]',
            "at /0/arguments/x: integer 9007199254740993 is outside the I-JSON safe range",
        ),
        # beyond 64 bits: orjson would read 1e+26; the exact reader keeps the integer
        (
            '[{"tool": "t", "any": true, "output": {"content": 100000000000000000000000000}}]',
            "at /0/output/content: integer 100000000000000000000000000 is outside",
        ),
        ('[{"tool": "t", "any": true, "output": {"content": NaN}}]', "malformed JSON (NaN is not a JSON number)"),
        (
            '[{"tool": "t", "any": true, "output": {"content": 1e400}}]',
            "at /0/output/content: inf is not a JSON number",
        ),
    ],
)
def test_fixture_file_values_without_a_canonical_form(tmp_path, text, expected):
    p = tmp_path / "fx.json"
    p.write_text(text)
    with pytest.raises(FixtureError) as err:
        load_fixture_file(p)
    assert str(err.value).startswith(f"{p}: ")
    assert expected in str(err.value)


def test_fixture_file_not_utf8(tmp_path):
    p = tmp_path / "fx.bin"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(FixtureError, match=r"fx.bin: line 1, column 1: not UTF-8 text \(byte 0x"):
        load_fixture_file(p)


def test_output_files(tmp_path):
    p = tmp_path / "o.json"
    p.write_bytes(b"[1]")
    with pytest.raises(FixtureError, match="o.json: a tool fixture output must be a JSON object"):
        load_output_file(p, "tool")
    p.write_bytes(b"{}")
    with pytest.raises(FixtureError, match="the object is empty"):
        load_output_file(p, "tool")
    p.write_bytes(b'{"content": 1, "extra": 2}')
    with pytest.raises(FixtureError, match=r"unknown field\(s\) \['extra'\]"):
        load_output_file(p, "tool")
    p.write_bytes(b"{oops")
    with pytest.raises(FixtureError, match="o.json: line 1, column 2: malformed JSON"):
        load_output_file(p, "tool")
    with pytest.raises(FixtureError, match="no such file"):
        load_output_file(tmp_path / "nope.json", "tool")
    p.write_bytes(b'{"content": "ok"}')
    assert load_output_file(p, "tool") == {"content": "ok", "redacted": False}


def test_json_diff():
    assert json_diff({"a": 1, "b": [1, 2]}, {"a": 2, "b": [1], "c": True}) == [
        {"path": "/a", "op": "changed", "base": 1, "branch": 2},
        {"path": "/b/1", "op": "removed", "base": 2},
        {"path": "/c", "op": "added", "branch": True},
    ]
    assert json_diff({"a": 1}, {"a": 1.0}) == [{"path": "/a", "op": "changed", "base": 1, "branch": 1.0}]
    assert json_diff([], []) == []


def test_nearest_tool_call_prefers_fewest_differences():
    base = chat_recording(3)
    n = nearest_tool_call(base, "lookup", {"q": "item-2"})
    assert n.seq == 6 and n.diff == []
    n = nearest_tool_call(base, "lookup", {"q": "zzz"}, near_seq=4)
    assert n.seq == 4 and n.diff == [{"path": "/q", "op": "changed", "base": "item-1", "branch": "zzz"}]
    assert nearest_tool_call(base, "search", {}) is None


def test_requirement_ids_are_deterministic():
    a = Requirement.make_id("rp-1", 3, "tool", "sha256:ab")
    assert a == Requirement.make_id("rp-1", 3, "tool", "sha256:ab")
    assert a != Requirement.make_id("rp-2", 3, "tool", "sha256:ab")
    assert a.startswith("req-") and len(a) == 16


def test_fixture_output_types_are_strict(tmp_path):
    p = tmp_path / "out.json"
    p.write_text('{"content": 1, "redacted": "yes"}')
    with pytest.raises(FixtureError, match=r"out.json: tool fixture output at /redacted"):
        load_output_file(p, "tool")
