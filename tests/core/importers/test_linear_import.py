"""Importers at linear cost: a growing history shares message objects between requests,
keys are streamed, and every fast path gives the records of the plain path.

The plain path is the same importer with every fast path turned off (:func:`go_plain`):
no prefix reuse (``extends`` finds none), keys by :func:`identity_key` of the whole
identity, no shared conversions of equal source messages, no slices of Inspect's converted
message pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.importers import _build, import_file
from core.importers import inspect_ai as inspect_mod
from core.importers._build import ModelKeys, RunBuilder, identity_key, unify_tool_call_ids
from core.importers._source import read_source
from core.record.canonical import canonical_hash, normalize_stop
from core.record.io import recording_digest
from core.record.recording import ChatMessage, ModelRecord, ToolCall
from tests.builders import TESTS

REAL = TESTS / "data" / "real_traces"
DATA = TESTS / "data"


def _real_files() -> list[Path]:
    files = [p for p in sorted(REAL.rglob("*")) if p.is_file() and p.suffix not in (".md", ".txt")]
    files = [p for p in files if "teammates_subagents" not in p.parts]
    return [*files, REAL / "claude_code" / "teammates_subagents"]


REAL_FILES = _real_files()
OTHER_FILES = [
    DATA / "importers" / "inspect-0.3.285" / "adder.eval",
    DATA / "importers" / "inspect-0.3.285" / "adder.json",
    DATA / "importers" / "swe_agent_function_calling.traj",
    DATA / "inspect_ai" / "two-samples.eval",
]


def _plain_keys(self: ModelKeys, model: str, messages: Any, tools: Any, stop: Any, options: Any) -> Any:
    identity = {
        "kind": "model",
        "model": model,
        "messages": [m.to_json_obj() for m in messages],
        "tools": tools,
        "stop": stop,
        "options": options,
    }
    return identity_key(identity)


class _PlainConverted(inspect_mod._Converted):
    def get(self, k: int, make: Any) -> ChatMessage:  # never advances ``upto``: no slices
        msg = self.by_index.get(k)
        if msg is None:
            msg = self.by_index[k] = make()
        return msg


def go_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fast path of the importers off (until the test ends)."""
    monkeypatch.setattr(_build, "extends", lambda messages, last: 0)
    monkeypatch.setattr(ModelKeys, "key", _plain_keys)
    monkeypatch.setattr(RunBuilder, "shared_message", lambda self, source, make: make())
    monkeypatch.setattr(inspect_mod, "_Converted", _PlainConverted)


def _summary(runs: list[Any]) -> list[Any]:
    """What must not change: ids, digests, every key, every warning."""
    return [
        (
            r.run_id,
            recording_digest(r.recording),
            [getattr(x, "key", None) for x in r.recording.records],
            [str(w) for w in r.warnings],
        )
        for r in runs
    ]


_FAST: dict[Path, list[Any]] = {}


def _fast(path: Path) -> list[Any]:
    if path not in _FAST:
        _FAST[path] = import_file(path)
    return _FAST[path]


# ------------------------------------------------------------------ same as the plain path


@pytest.mark.parametrize("path", REAL_FILES + OTHER_FILES, ids=lambda p: p.name)
def test_fast_path_gives_the_plain_records(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _summary(_fast(path))
    go_plain(monkeypatch)
    slow = _summary(import_file(path))
    assert fast == slow
    assert fast  # something was imported


@pytest.mark.parametrize("path", REAL_FILES + OTHER_FILES, ids=lambda p: p.name)
def test_keys_are_the_plain_canonical_hash(path: Path) -> None:
    checked = 0
    for run in _fast(path):
        for r in run.recording.records:
            if isinstance(r, ModelRecord) and r.key is not None:
                identity = {"kind": "model", "model": r.model, **r.request.identity()}
                assert r.key == canonical_hash(identity)
                checked += 1
    if any(isinstance(r, ModelRecord) for run in _fast(path) for r in run.recording.records):
        assert checked


# ------------------------------------------------------------------ shared message objects


def _assert_shared(runs: list[Any]) -> int:
    """Each model request that extends the one before shares its message objects; returns
    how many requests did."""
    shared = 0
    for run in runs:
        prev: list[ChatMessage] = []
        for r in run.recording.records:
            if not isinstance(r, ModelRecord):
                continue
            msgs = r.request.messages
            if prev and len(prev) <= len(msgs) and msgs[: len(prev)] == prev:
                assert all(a is b for a, b in zip(prev, msgs))
                shared += 1
            prev = msgs
    return shared


def test_tau_bench_history_is_shared() -> None:
    runs = _fast(REAL / "tau_bench" / "gpt-4o-airline.json")[:20]
    assert _assert_shared(runs) > 50


def test_inspect_input_lists_are_shared() -> None:
    # every model event of this log holds the whole conversation again (``input``)
    runs = _fast(REAL / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json")
    assert _assert_shared(runs) == 4


def test_inspect_message_pool_is_shared() -> None:
    runs = _fast(REAL / "inspect_ai" / "log_message_deduplication.eval")
    assert _assert_shared(runs) >= 4


def test_claude_code_history_is_shared() -> None:
    runs = _fast(REAL / "claude_code" / "jssoundrecorder_sonnet45.jsonl")
    assert _assert_shared(runs[:1]) > 20


# ------------------------------------------------------------------ streamed keys, small inputs

_MESSAGES = [
    ChatMessage(role="system", content="policy"),
    ChatMessage(role="user", content="hello"),
    ChatMessage(role="assistant", content="hi", tool_calls=[ToolCall(id="c1", name="f", arguments={"a": 1})]),
    ChatMessage(role="tool", content="done", tool_call_id="c1"),
    ChatMessage(role="user", content=[{"type": "text", "text": "more"}]),
    ChatMessage(role="assistant", content="ok"),
    ChatMessage(role="user", content=None, name="x"),
]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, len(_MESSAGES) - 1), max_size=6),
            st.sampled_from([[], [{"name": "f"}]]),
            st.sampled_from([None, "END", ["b", "a", "b"]]),
        ),
        max_size=8,
    )
)
def test_model_keys_equal_identity_key(requests: list[Any]) -> None:
    """Requests that extend, repeat, shorten or leave earlier ones: the streamed key is the
    plain one."""
    keys = ModelKeys()
    history: list[ChatMessage] = []
    for picks, tools, stop in requests:
        history = history + [_MESSAGES[i] for i in picks] if picks and picks[0] % 2 else [_MESSAGES[i] for i in picks]
        got = keys.key("m", list(history), tools, normalize_stop(stop), {"t": 0})
        assert got == _plain_keys(keys, "m", history, tools, normalize_stop(stop), {"t": 0})


@pytest.mark.parametrize(
    "odd",
    [
        ChatMessage.model_construct(role="user", content=[{"x": 2**60}], tool_calls=None, tool_call_id=None, name=None),
        ChatMessage(role="user", content=[{"n": {"$bigint": "12345678901234567890"}}]),
    ],
    ids=["raw-big-int", "bigint-tag"],
)
def test_model_keys_odd_values_as_identity_key(odd: ChatMessage) -> None:
    """A message with no canonical form, or a tagged big integer: no key, the same reason."""
    keys = ModelKeys()
    base = _MESSAGES[:2]
    assert keys.key("m", base, [], [], {}) == _plain_keys(keys, "m", base, [], [], {})
    got = keys.key("m", [*base, odd], [], [], {})
    assert got[0] is None
    assert got == _plain_keys(keys, "m", [*base, odd], [], [], {})
    tagged_tools = [{"limit": {"$bigint": "12345678901234567890"}}]
    assert keys.key("m", base, tagged_tools, [], {}) == _plain_keys(keys, "m", base, tagged_tools, [], {})


# ------------------------------------------------------------------ tool-call ids, small inputs


def _run_with_reused_ids(drop_from_history: bool) -> list[Any]:
    """A run whose calls all reuse id ``c`` (as tau-bench does); with
    ``drop_from_history`` the last request leaves an earlier response out (an edited
    history: the incremental mapping must not be used)."""
    b = RunBuilder("test", read_source(REAL / "tau_bench" / "gpt-4o-airline.json"), "r", redactor=None)
    history = [b.message("system", "s"), b.message("user", "go")]
    for i in range(4):
        call = b.tool_call("c", "f", f'{{"i": {i % 2}}}', f"[{i}]")
        resp = b.message("assistant", "calling", tool_calls=[call])
        b.model(model="m", messages=list(history), response=resp)
        b.tool(tool="f", arguments=call.arguments, tool_call_id="c", content=str(i))
        history += [resp, b.message("tool", str(i), tool_call_id="c")]
    final = [m for k, m in enumerate(history) if not (drop_from_history and k == 2)]
    b.model(model="m", messages=final, response=b.message("assistant", "done"))
    return b.records


@pytest.mark.parametrize("drop", [False, True], ids=["growing", "edited"])
def test_unify_ids_incremental_equals_plain(drop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _run_with_reused_ids(drop)
    fast_changed = unify_tool_call_ids(fast, lambda place, msg: None)
    slow = _run_with_reused_ids(drop)
    with monkeypatch.context() as m:
        m.setattr(_build, "extends", lambda messages, last: 0)
        slow_changed = unify_tool_call_ids(slow, lambda place, msg: None)
    assert fast_changed == slow_changed
    assert [r.to_json_obj() for r in fast] == [r.to_json_obj() for r in slow]
    ids = [tc.id for m in fast[-1].request.messages for tc in (m.tool_calls or [])]
    assert len(set(ids)) == len(ids) == (3 if drop else 4)  # renamed c, c~2, …
