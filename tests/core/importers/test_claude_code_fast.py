"""The Claude Code importer's fast path gives the recordings of the plain path.

The plain path is the importer as committed before the fast path
(:mod:`tests.core.importers._claude_code_reference`: its tree walk and its JSON Lines
reader, with a nesting walk and a big-integer search on every line) over
:class:`core.importers._build.RunBuilder` with its own fast paths off
(``model_construct`` for every object, message canonical JSON computed by
``message_canonical``, every value handed to ``redact``). Compared: run ids, digests,
every key, every warning, metadata, links, recorded forks — on every Claude Code file
of ``tests/data/real_traces``, on small sessions generated as the benchmark generates
its 100 MB one, and on damaged or odd variants of them. The fast helpers are compared
with what they stand for on generated inputs.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.claude_code_bench import generate
from core.importers import _build, claude_code
from core.importers._build import Construct, RunBuilder
from core.importers._jsonl import read_jsonl
from core.importers._source import read_source
from core.record import recording as recording_mod
from core.record.canonical import canonical_json
from core.record.io import recording_digest
from core.record.nesting import MAX_DEPTH
from core.record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    RunLink,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from core.record.redaction import redact
from tests.builders import TESTS
from tests.core.importers import _claude_code_reference as reference

CC = TESTS / "data" / "real_traces" / "claude_code"
TEAM_DIR = CC / "teammates_subagents"
REAL = [p for p in sorted(CC.rglob("*.jsonl"))] + [TEAM_DIR]


def _summary(runs: list[Any]) -> list[Any]:
    """What must not change: ids, digests, keys, warnings, metadata, links, forks."""
    return [
        (
            r.run_id,
            r.parent,
            r.incomplete,
            recording_digest(r.recording),
            [getattr(x, "key", None) for x in r.recording.records],
            [str(w) for w in r.warnings],
            r.recording.metadata,
            [link.model_dump() for link in r.recording.links or []],
            [(f.run_id, f.base_run_id, f.shared_seq, f.prompt, f.base_prompt) for f in r.forks or []],
        )
        for r in runs
    ]


def _plain_scrub(self: RunBuilder, value: Any, place: str) -> Any:
    """``RunBuilder.scrub`` as committed: every value but a string the pre-check clears
    goes to ``redact``."""
    if not self.redact_enabled or self.redactor is None:
        return value
    if type(value) is str and not _build._TRIGGER.search(value) and not self.redactor.secrets:
        return value
    new, changed = redact(value, self.redactor)
    if changed:
        self._redacted_places.append(place)
    return new


def _import(path: Path, *, plain: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Import ``path`` as ``import_file`` does (the GC paused), by the fast or the plain path."""
    with monkeypatch.context() as m:
        if plain:
            m.setattr(Construct, "__call__", lambda self, **values: self.cls.model_construct(**values))
            m.setattr(_build, "_adopt_plain_canonical", lambda msg: None)
            m.setattr(RunBuilder, "scrub", _plain_scrub)
            importer: Any = reference.ClaudeCodeImporter()
        else:
            importer = claude_code.ClaudeCodeImporter()
        was = gc.isenabled()
        gc.disable()
        try:
            return importer.load(path)
        finally:
            if was:
                gc.enable()


def _same(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    fast = _summary(_import(path, plain=False, monkeypatch=monkeypatch))
    plain = _summary(_import(path, plain=True, monkeypatch=monkeypatch))
    assert fast == plain
    return fast


@pytest.mark.parametrize("path", REAL, ids=lambda p: str(p.relative_to(CC)))
def test_every_real_session_gives_the_plain_recordings(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got = _same(path, monkeypatch)
    assert got and any(run[4] for run in got)  # runs with records were compared


def test_the_fast_path_is_the_one_the_importer_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    # the comparison above means something only if the two paths differ in what they run
    calls: list[int] = []
    real = _build._adopt_plain_canonical

    def counting(msg: ChatMessage) -> None:
        calls.append(1)
        real(msg)

    monkeypatch.setattr(_build, "_adopt_plain_canonical", counting)
    claude_code.ClaudeCodeImporter().load(CC / "jssoundrecorder_sonnet45.jsonl")
    assert calls


# ------------------------------------------------------------------ generated sessions


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two copies of the real session chained by a compaction, as the benchmark writes
    its 100 MB one."""
    path = tmp_path_factory.mktemp("cc") / "session.jsonl"
    generate(path, 0.6)
    return path


def _variant(generated: Path, tmp_path: Path, name: str) -> Path:
    lines = generated.read_bytes().split(b"\n")[:-1]
    objs = [orjson.loads(x) for x in lines]
    if name == "damaged":  # a line that is no JSON, a blank line, a non-object, a cut last line
        lines[5] = b'{"type": "user", "uuid": '
        lines.insert(9, b" \t\x0b\x0c ")
        lines.insert(12, b"[1, 2]")
        out = b"\n".join(lines) + b'\n{"type": "assistant", "uu'
        return _write(tmp_path, name, out)
    if name == "big-integers":  # a big integer in a tool input and in a line's own member
        for o in objs:
            if o.get("type") == "assistant" and isinstance(o["message"].get("content"), list):
                for blk in o["message"]["content"]:
                    if blk.get("type") == "tool_use":
                        blk["input"]["n"] = "BIG"
                        break
        text = b"\n".join(orjson.dumps(o) for o in objs).replace(b'"BIG"', b"123456789012345678901234567890")
        text = text.replace(b'"preTokens":150000', b'"preTokens":  -99999999999999999')
        return _write(tmp_path, name, text + b"\n")
    if name == "deep":  # lines nested past the limit (bad) and just within it (kept)
        deep = b'{"type":"progress","uuid":"deep-x","x":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"
        within = b'{"type":"progress","uuid":"deep-y","x":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
        lines[3:3] = [deep, within]
        return _write(tmp_path, name, b"\n".join(lines) + b"\n")
    if name == "rewound":  # an abandoned path: the first prompt answered twice
        first_user = next(i for i, o in enumerate(objs) if o.get("type") == "user" and o.get("parentUuid"))
        alt = dict(objs[first_user])
        alt["uuid"] = "alt-1"
        alt["timestamp"] = "2000-01-01T00:00:00.000Z"
        alt["message"] = {"role": "user", "content": "another try"}
        objs.insert(first_user + 1, alt)
        return _write(tmp_path, name, b"\n".join(orjson.dumps(o) for o in objs) + b"\n")
    if name == "sidechain":  # the second copy written as an in-file sub-agent
        for o in objs[len(objs) // 2 :]:
            o["isSidechain"] = True
        return _write(tmp_path, name, b"\n".join(orjson.dumps(o) for o in objs) + b"\n")
    if name == "secret":  # a secret in a tool result, scrubbed where it appeared before too
        objs[3]["message"]["content"] = "use sk-ant-api03-abcdefghijklmnopqrstuvwx please"
        return _write(tmp_path, name, b"\n".join(orjson.dumps(o) for o in objs) + b"\n")
    raise AssertionError(name)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(data)
    return p


def test_a_generated_session_gives_the_plain_recordings(generated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (main,) = _same(generated, monkeypatch)
    assert len(main[4]) > 100


@pytest.mark.parametrize("name", ["damaged", "big-integers", "deep", "rewound", "sidechain", "secret"])
def test_odd_sessions_give_the_plain_recordings(
    generated: Path, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = _same(_variant(generated, tmp_path, name), monkeypatch)
    warnings = [w for run in got for w in run[5]]
    if name == "damaged":
        assert any("line 6" in w for w in warnings) and any("cut short" in w for w in warnings)
    if name == "big-integers":
        assert any("$bigint" in json.dumps(run[6]) or "integer" in " ".join(run[5]) for run in got)
    if name == "deep":
        assert any("nest" in w for w in warnings)
    if name == "sidechain":
        assert len(got) == 2
    if name == "secret":
        assert any("redacted" in w for w in warnings)


# ------------------------------------------------------------------ the JSON Lines reader


_LINE = st.one_of(
    st.sampled_from(
        [
            b"",
            b" \t",
            b"\x0b\x0c\r",
            b"{}",
            b'{"a": 12345678901234567}',
            b'{"a": "12345678901234567"}',
            b"[-  1234567890123456789]",
            b"12345678901234567890",
            b'{"a": NaN}',
            b'{"s": "\\ud800"}',
            b'{"s": "\xff"}',
            b'{"a": [1, 2',
            b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
            b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
            b'{"a":' * 600 + b"1" + b"}" * 600,
            b'"{[{[" ',
        ]
    ),
    st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=5), max_size=3).map(
        lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ),
)


@settings(max_examples=50, deadline=None)
@given(st.lists(_LINE, max_size=8), st.booleans())
def test_read_jsonl_gives_the_plain_lines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], nl: bool
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "x.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"\n" if nl else b""))
    src = read_source(path)
    fast_good, fast_bad = read_jsonl(src)
    plain_good, plain_bad = reference.read_jsonl(read_source(path))
    assert [(x.number, x.value) for x in fast_good] == [(x.number, x.value) for x in plain_good]
    assert [(x.number, x.reason, x.truncated) for x in fast_bad] == [
        (x.number, x.reason, x.truncated) for x in plain_bad
    ]


# ------------------------------------------------------------------ construction, canonical JSON, scrub

_VALUES = {
    ChatMessage: {"role": "user", "content": "hi", "tool_calls": None, "tool_call_id": "c", "name": None},
    ToolCall: {"id": "c", "name": "f", "arguments": {"a": 1}, "raw_arguments": None},
    ModelRequest: {"messages": [], "tools": [], "stop": [], "options": {}},
    Usage: {"input_tokens": 1, "output_tokens": 2},
    ModelResponse: {"message": ChatMessage(role="assistant", content="x"), "finish_reason": None, "usage": None},
    ModelRecord: {
        "seq": 0,
        "at": None,
        "run_id": "r",
        "generation_id": None,
        "replayed": False,
        "live_fallback": False,
        "kind": "model",
        "key": None,
        "model": "m",
        "request": ModelRequest(),
        "response": None,
        "duration_seconds": 1.5,
        "error": None,
    },
    ErrorInfo: {"type": "tool_error", "message": "boom"},
    ToolRecord: {
        "seq": 1,
        "at": "2026-01-01T00:00:00Z",
        "run_id": "r",
        "generation_id": None,
        "replayed": False,
        "live_fallback": False,
        "kind": "tool",
        "key": "sha256:0",
        "tool": "t",
        "arguments": {},
        "tool_call_id": None,
        "result": ToolResult(),
        "duration_seconds": None,
    },
    ToolResult: {"content": None, "artifact": None, "error": None, "redacted": False},
    InterruptRecord: {
        "seq": 2,
        "at": None,
        "run_id": "r",
        "generation_id": None,
        "replayed": False,
        "live_fallback": False,
        "kind": "interrupt",
        "value": {"role": "user"},
    },
    RunLink: {"rel": "fork", "target": "x", "seq": None, "title": None},
}


def _state(m: Any) -> tuple[Any, ...]:
    return (
        type(m),
        list(m.__dict__.items()),
        m.__pydantic_fields_set__,
        m.__pydantic_extra__,
        m.__pydantic_private__,
    )


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(sorted(_VALUES, key=lambda c: c.__name__)), st.data())
def test_construct_makes_what_model_construct_makes(cls: type[Any], data: st.DataObject) -> None:
    full = _VALUES[cls]
    names = data.draw(st.lists(st.sampled_from(sorted(full)), unique=True))
    values = {n: full[n] for n in names}
    if data.draw(st.booleans()):
        values["not_a_field"] = 1  # model_construct ignores it (extra="forbid")
    made = Construct(cls)(**values)
    assert _state(made) == _state(cls.model_construct(**values))
    made.__pydantic_fields_set__.add("x")  # each object has a set of its own
    assert "x" not in Construct(cls)(**values).__pydantic_fields_set__


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["user", "tool", "assistant", "système"]),
    st.none() | st.text(),
    st.none() | st.text(max_size=4),
    st.none() | st.text(max_size=4),
)
def test_plain_message_canonical_is_message_canonical(
    role: str, content: str | None, call_id: str | None, name: str | None
) -> None:
    msg = ChatMessage.model_construct(role=role, content=content, tool_call_id=call_id, name=name)
    _build._adopt_plain_canonical(msg)
    try:
        expected = canonical_json(msg.to_json_obj())
    except Exception:  # a lone surrogate: no canonical form, so nothing may be adopted
        assert recording_mod._MESSAGE_CANONICAL.get(msg) is None
        return
    assert recording_mod._MESSAGE_CANONICAL.get(msg) == expected


@settings(max_examples=50, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30) | st.sampled_from(["sk-ant-abcdefgh12345678"]),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["a", "password", "text", "token"]), inner, max_size=3)
        ),
        max_leaves=8,
    )
)
def test_scrub_is_the_plain_scrub(tmp_path_factory: pytest.TempPathFactory, value: Any) -> None:
    path = tmp_path_factory.mktemp("src") / "x.jsonl"
    path.write_bytes(b"{}\n")
    fast, plain = RunBuilder("claude_code", read_source(path), "r"), RunBuilder("claude_code", read_source(path), "r")
    for _ in range(2):  # the second time with what the first learned
        assert fast.scrub(value, "p") == _plain_scrub(plain, value, "p")
        assert fast._redacted_places == plain._redacted_places
