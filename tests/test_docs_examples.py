"""The Python examples of docs/session.md and docs/replay.md run as written.

Each page's ```python blocks are joined in order and executed in a scratch folder. The
session page's agent, tools and model are placeholders (``my_agent``, ``search``,
``fetch``, ``my_model``), so a small prelude defines them; the replay page works on
``base.json``, here the bundled sample-agent run whose refund-policy call timed out.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.builders import ROOT, SAMPLES

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

SESSION_PRELUDE = """
from core import ChatMessage, ModelRequest, ModelResponse, ToolCall

TOOL_RUNS = []

def search(q):
    TOOL_RUNS.append(("search", q))
    return {"hits": [f"about {q}"]}

def fetch(url):
    TOOL_RUNS.append(("fetch", url))
    return f"<html>{url}</html>"

def my_model(request):
    if len(request.messages) == 1:
        call = ToolCall(id="c1", name="search", arguments={"q": "kettles"})
        return ModelResponse(message=ChatMessage(role="assistant", content="", tool_calls=[call]))
    return ModelResponse(message=ChatMessage(role="assistant", content="kettles are fine"))

def my_agent(harness):
    messages = [ChatMessage(role="user", content="tell me about kettles")]
    while True:
        response = harness.call_model("gpt-example", ModelRequest(messages=messages))
        messages.append(response.message)
        if not response.message.tool_calls:
            return response.message.text
        for call in response.message.tool_calls:
            result = harness.call_tool(call.name, call.arguments, call.id)
            messages.append(ChatMessage(role="tool", content=str(result.content), tool_call_id=call.id))
"""


def blocks(page: str) -> str:
    found = BLOCK.findall((ROOT / "docs" / page).read_text())
    assert found, f"docs/{page} has no ```python block"
    return "\n".join(found)


def run(code: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(folder)
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, "docs-example", "exec"), namespace)
    return namespace


def test_session_page_examples_record_then_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = blocks("session.md")
    # the page records a run (first), then replays it: split at the replay block
    record_part, replay_part = code.split('session = ReplaySession.load("recording.json"', 1)
    ns = run(SESSION_PRELUDE + record_part, tmp_path, monkeypatch)
    assert ns["answer"] == "kettles are fine"
    assert ns["TOOL_RUNS"] == [("search", "kettles")]
    assert (tmp_path / "recording.json").is_file()
    ns["TOOL_RUNS"].clear()
    replayed = run(
        SESSION_PRELUDE + code.split("\n", 1)[0] + '\nsession = ReplaySession.load("recording.json"' + replay_part,
        tmp_path,
        monkeypatch,
    )
    assert replayed["answer"] == "kettles are fine"
    assert replayed["TOOL_RUNS"] == []  # no tool executed in replay
    stats = replayed["session"].stats
    assert (stats.replayed, stats.live, stats.live_fallback) == (3, 0, 0)


def test_replay_page_example_replays_in_memory_and_in_a_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy2(SAMPLES / "sample-agent-fault-tool-error.json", tmp_path / "base.json")
    ns = run(blocks("replay.md"), tmp_path, monkeypatch)
    outcome = ns["outcome"]
    assert outcome.status == "completed"
    assert (tmp_path / "ws").is_dir()
    # the stored replay is the same run as the in-memory one
    assert ns["record"].status == outcome.status
