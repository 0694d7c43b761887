"""Action parsers (core.importers.actions): the SWE-agent 0.x thought/action parser reads
every recorded reply of the real trajectory into the tool call the importer made from
it, and renders every observation exactly as the next recorded request holds it."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from core.importers import import_file
from core.importers.actions import ActionFormatError, ParsedAction, SweAgentThoughtAction, parser_for
from core.record.recording import ChatMessage, ModelRecord, ToolRecord, ToolResult
from tests.builders import DATA

TRAJ = DATA / "real_traces" / "swe_agent" / "pydicom__pydicom-1458.traj"


@pytest.fixture(scope="module")
def swe():
    return import_file(TRAJ)[0].recording


def test_the_importer_names_the_parser_and_its_commands(swe) -> None:
    spec = swe.metadata["action_parser"]
    assert spec["name"] == "swe_agent.thought_action"
    assert {"open", "edit", "create", "submit", "find_file"} <= set(spec["commands"])
    tools = [r for r in swe.records if isinstance(r, ToolRecord)]
    assert len(tools) == 12 and all(r.meta == {"action_parser": "swe_agent.thought_action"} for r in tools)


def test_every_recorded_reply_parses_into_the_recorded_tool_call(swe) -> None:
    parser = parser_for(swe.metadata)
    assert isinstance(parser, SweAgentThoughtAction)
    records = swe.records
    pairs = [(r, records[i + 1]) for i, r in enumerate(records) if isinstance(r, ModelRecord)]
    assert len(pairs) == 12
    for model, tool in pairs:
        assert parser.parse(model.response.message.text) == [ParsedAction(tool.tool, tool.arguments)]


def test_every_observation_renders_as_the_next_request_holds_it(swe) -> None:
    parser = parser_for(swe.metadata)
    records = swe.records
    models = [r for r in records if isinstance(r, ModelRecord)]
    checked = 0
    for k, model in enumerate(models[:-1]):
        tool = records[records.index(model) + 1]
        seen = [*model.request.messages, model.response.message]
        nxt = models[k + 1].request.messages
        assert nxt[: len(seen)] == seen
        made, recorded = parser.observation(tool.result, seen).text, nxt[len(seen)].text
        body, _, state = made.rpartition("\n(Open file: ")
        rbody, _, rstate = recorded.rpartition("\n(Open file: ")
        assert body == rbody  # the output, or the no-output sentence after `rm`
        # the state lines are carried from the last observation: equal unless the command
        # changed them (the environment's state command does not run in a replay)
        last_user = next(m for m in reversed(seen) if m.role == "user")
        before = last_user.text.rpartition("\n(Open file: ")[2]
        assert state == before  # carried, not invented
        if before == rstate:
            assert made == recorded
            checked += 1
    assert checked == 9  # `create` and `open` changed the open file, the others did not


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("Just thinking, no command.", "no fenced command block"),
        ("```\n\n```", "empty"),
        ("Unclosed:\n```\nls -a\n", "no fenced command block"),
    ],
)
def test_replies_the_agent_could_not_read(text: str, why: str) -> None:
    with pytest.raises(ActionFormatError, match=why):
        SweAgentThoughtAction(commands=("open",)).parse(text)


def test_the_last_top_level_block_is_the_action() -> None:
    p = SweAgentThoughtAction(commands=("open", "edit"))
    text = "First\n```python\nprint(1)\n```\nthen\n```\nopen a.py 3\n```\n"
    assert p.parse(text) == [ParsedAction("open", {"command": "open a.py 3"})]
    nested = "```\nedit 1:2\n```python\nx = 1\n```\nend_of_edit\n```"
    # an inner block (with a language) stays inside the outer one, as SWE-agent reads it
    assert p.parse(nested)[0].arguments["command"].startswith("edit 1:2\n```python")


def test_an_unknown_or_malformed_parser_is_named() -> None:
    assert parser_for({}) is None and parser_for({"action_parser": None}) is None
    with pytest.raises(ValueError, match="unknown action parser 'future.parser'"):
        parser_for({"action_parser": {"name": "future.parser"}})
    with pytest.raises(ValueError, match=r"unknown action parser 'xxxx.*…' \(known"):
        parser_for({"action_parser": {"name": "x" * 1_000_000}})  # not echoed whole
    for bad in ("x", {"name": 5}, [1]):
        with pytest.raises(ValueError, match="is not"):
            parser_for({"action_parser": bad})
    for cmds in ("submit", [None, "submit"], [""]):
        with pytest.raises(ValueError, match="commands is not a list of command names"):
            parser_for({"action_parser": {"name": "swe_agent.thought_action", "commands": cmds}})


def test_the_format_error_turn_and_the_end_of_the_run() -> None:
    p = SweAgentThoughtAction()
    msg = p.format_error("no fenced command block")
    assert msg.role == "user" and "(no fenced command block)" in msg.text and "```" in msg.text
    assert p.ends_run("submit") and not p.ends_run("edit") and p.max_requeries == 3
    # with no state lines to carry, an observation is the output alone
    empty = ToolResult(content="")
    assert p.observation(empty, [ChatMessage(role="user", content="task")]).text.startswith("Your command ran")
    failed = ToolResult(error={"type": "timeout", "message": "took too long"})
    assert p.observation(failed, []).text == "ERROR timeout: took too long"


_line = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="`"), max_size=40)


@given(thought=_line, command=st.lists(_line, min_size=1, max_size=4).map("\n".join))
def test_a_command_in_a_fenced_block_parses_back(thought: str, command: str) -> None:
    # (SWE-agent's opening fence takes the blank lines after it: a command starts on its line)
    assume(command.split("\n")[0].strip())
    stripped = command.strip("\n")
    text = f"{thought}\n\n```\n{command}\n```"
    [action] = SweAgentThoughtAction(commands=("open",)).parse(text)
    assert action.arguments == {"command": stripped}
    assert action.tool == ("open" if stripped.split(None, 1)[0] == "open" else "bash")
