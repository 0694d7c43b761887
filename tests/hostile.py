"""Hostile recorded text for the tests: control functions, bidi and invisible
characters, and markup, in every string field of a recording.

* :data:`UNSAFE` — the code points no terminal may receive from recorded text (C0 but
  ``\\n``, DEL, C1, the bidi controls of Unicode Standard Annex #9, zero-width and
  invisible format characters); :func:`unsafe_in` lists those a text holds;
* :data:`HOSTILE` — one string with a bit of everything (erase display, cursor home,
  an OSC title, an OSC 52 clipboard write, a bare CR, CSI as a C1 control, a bidi
  override, a zero-width space);
* :func:`hostile_recording` — a small run (model → tool → tool error → interrupt →
  snapshot → lifecycle → model error → final answer) with :data:`HOSTILE` text and markup-looking
  names (``run[/red]``, ``[red]bash[/red]``, ``toolu_[/]01``) in every string field;
* :func:`recording_of` — the same shape with the strings a hypothesis strategy drew;
  :func:`hostile_text` is that strategy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from core.record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    LifecycleRecord,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    SnapshotRecord,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)

BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
INVISIBLE = {0x00AD, 0x200B, 0x200C, 0x200D, *range(0x2060, 0x2065), 0xFEFF, 0x2028, 0x2029}
#: what no terminal may receive from recorded text (``\n`` is allowed; ``\t`` only in CSV)
UNSAFE = frozenset({*range(0x20), 0x7F, *range(0x80, 0xA0), *BIDI, *INVISIBLE} - {0x0A})

CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;pwned\x07"
CLIPBOARD = "\x1b]52;c;ZWNobyBoaQ==\x1b\\"
HOSTILE = f"{CLEAR}{TITLE}{CLIPBOARD}\rover\x9b31m\u202eevil\u200b!"

#: markup-looking names and ids: MarkupError or red text if parsed as markup
MARKUP_TOOL = "run[/red]"
MARKUP_TOOL_2 = "[red]bash[/red]"
MARKUP_ID = "toolu_[/]01"

#: pieces the strategy mixes with ordinary text
_PIECES = [
    CLEAR,
    TITLE,
    CLIPBOARD,
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\r",
    "\x08",
    "\x07",
    "\x00",
    "\t",
    "\n",
    "\x7f",
    "\x9b2J",
    "\x9d0;t\x9c",
    "\x85",
    "\u202e",
    "\u2066",
    "\u200b",
    "\ufeff",
    "\u2028",
    "[/]",
    "[red]",
]


def unsafe_in(text: str, *, allow_tab: bool = False) -> list[str]:
    """The characters of ``text`` in :data:`UNSAFE` (``\\t`` too unless ``allow_tab``)."""
    return sorted({c for c in text if ord(c) in UNSAFE and not (allow_tab and c == "\t")})


def hostile_text(min_size: int = 1) -> st.SearchStrategy[str]:
    """Strings that mix ordinary text (any script, no surrogates) with control, bidi and
    invisible characters, escape and OSC sequences, and markup."""
    ordinary = st.text(st.characters(codec="utf-8"), max_size=6)
    hostile = st.sampled_from(_PIECES) | st.characters(categories=["Cc", "Cf"], codec="utf-8")
    return st.lists(ordinary | hostile, min_size=min_size, max_size=6).map("".join).filter(lambda s: len(s) >= min_size)


def recording_of(
    text: Callable[[], str],
    *,
    call_id: str | None = None,
    tool_name: str | None = None,
    failed_tool: str | None = None,
    model: str | None = None,
) -> Recording:
    """A run whose every string field holds ``text()`` (called once per field): model
    names, tool names, ids, arguments (keys and values), results, messages, errors,
    interrupt values, snapshot and lifecycle details, metadata keys and values, the
    producer. The keyword arguments fix some of them instead."""
    call_id = text() if call_id is None else call_id
    tool_name = text() if tool_name is None else tool_name
    args = {text(): text(), "n": [text(), {text(): text()}]}
    system, task = ChatMessage(role="system", content=text()), ChatMessage(role="user", content=text(), name=text())
    call = ToolCall(id=call_id, name=tool_name, arguments=args)
    first = ModelRecord(
        seq=0,
        model=text() if model is None else model,
        run_id=text(),
        generation_id=text(),
        request=ModelRequest(messages=[system, task], tools=[{"name": tool_name, "description": text()}]),
        response=ModelResponse(
            message=ChatMessage(role="assistant", content=text(), tool_calls=[call]),
            finish_reason=text(),
            usage=Usage(input_tokens=3, output_tokens=2),
        ),
        duration_seconds=0.5,
    )
    result = text()
    used = ToolRecord(
        seq=1,
        tool=tool_name,
        arguments=args,
        tool_call_id=call_id,
        run_id=first.run_id,
        result=ToolResult(content=result),
        duration_seconds=0.1,
    )
    failed = ToolRecord(
        seq=2,
        tool=text() if failed_tool is None else failed_tool,
        arguments={text(): text()},
        tool_call_id=text(),
        result=ToolResult(content=text(), error=ErrorInfo(type=text(), message=text())),
    )
    reply = ChatMessage(role="assistant", content=text(), tool_calls=[call])
    tool_msg = ChatMessage(role="tool", content=result, tool_call_id=call_id, name=tool_name)
    final = ModelRecord(
        seq=7,
        model=first.model,
        run_id=first.run_id,
        request=ModelRequest(messages=[system, task, reply, tool_msg]),
        response=ModelResponse(message=ChatMessage(role="assistant", content=text()), finish_reason="stop"),
    )
    broken = ModelRecord(
        seq=6, model=text(), request=ModelRequest(messages=[task]), error=ErrorInfo(type=text(), message=text())
    )
    records: list[Any] = [
        first,
        used,
        failed,
        InterruptRecord(seq=3, value={"question": text(), text(): text()}),
        SnapshotRecord(seq=4, generation_id=text(), composition={"tools": [text()], text(): text()}),
        LifecycleRecord(seq=5, event="plugin.mount", details={text(): text()}),
        broken,
        final,
    ]
    for r in records:
        if isinstance(r, (ModelRecord, ToolRecord)):
            r.key = r.compute_key()
    metadata = {text(): text(), "outcome": text(), "annotation": {"mistake_reason": text(), text(): text()}}
    rec = Recording(metadata=metadata, session=SessionInfo(mode="record", producer=text()), records=records)
    return Recording.loads(rec.dumps())


def hostile_recording() -> Recording:
    """:func:`recording_of` with :data:`HOSTILE` text everywhere, markup-looking tool
    names and ids where they matter (the call that is answered, the failing tool, the
    model)."""
    return recording_of(
        lambda: "x" + HOSTILE,
        call_id=MARKUP_ID,
        tool_name=MARKUP_TOOL,
        failed_tool=MARKUP_TOOL_2,
        model="gpt[/]" + HOSTILE,
    )
