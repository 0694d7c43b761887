"""Shared builders for the tests: recordings built with the core models (no
hand-written JSON), their files on disk, and the repository's paths.

* ``ROOT`` — the repository; ``TESTS`` — ``tests/``; ``DATA`` — ``tests/data``;
  ``SAMPLES`` — ``sample_recordings/``;
* :func:`make_recording` — a small mixed recording (every record kind);
* :func:`tool`, :func:`model`, :func:`msg`, :func:`lifecycle`, :func:`snapshot`,
  :func:`recording`, :func:`stream` — hand-made analysis recordings;
* :func:`chat_recording`, :func:`random_recording`, :func:`strip` — generic chat
  agent bases for the engine;
* :func:`build_recording`, :func:`write_recording` — the SWE-style run the app tests open.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from core.record.canonical import model_key, tool_key
from core.record.io import save_recording
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
from core.replay.engine import tool_message

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
SAMPLES = ROOT / "sample_recordings"


def make_recording() -> Recording:
    """A small two-step run with one tool error, one snapshot, one lifecycle, one interrupt."""
    msgs = [ChatMessage(role="system", content="You are terse."), ChatMessage(role="user", content="List /tmp")]
    req1 = ModelRequest(messages=msgs, tools=[{"name": "ls"}], stop=["END"], options={"temperature": 0})
    call = ToolCall(id="call_1", name="ls", arguments={"path": "/tmp"})
    resp1 = ModelResponse(
        message=ChatMessage(role="assistant", content="", tool_calls=[call]),
        finish_reason="tool_calls",
        usage=Usage(input_tokens=20, output_tokens=5),
    )
    req2 = ModelRequest(
        messages=[*msgs, resp1.message, ChatMessage(role="tool", content="permission denied", tool_call_id="call_1")],
        tools=[{"name": "ls"}],
        stop=["END"],
        options={"temperature": 0},
    )
    resp2 = ModelResponse(
        message=ChatMessage(role="assistant", content="I cannot list /tmp."),
        finish_reason="stop",
        usage=Usage(input_tokens=40, output_tokens=7),
    )
    records = [
        SnapshotRecord(
            seq=0,
            at="2026-01-01T00:00:00Z",
            generation_id="g1",
            composition={"plugins": ["fs"], "tools": ["ls"], "capabilities": ["MODEL"]},
        ),
        LifecycleRecord(seq=1, at="2026-01-01T00:00:00Z", event="generation.publish", details={"generation": "g1"}),
        ModelRecord(
            seq=2,
            at="2026-01-01T00:00:01Z",
            run_id="r1",
            key=model_key("m", req1),
            model="m",
            request=req1,
            response=resp1,
            duration_seconds=0.5,
        ),
        ToolRecord(
            seq=3,
            at="2026-01-01T00:00:02Z",
            run_id="r1",
            key=tool_key("ls", {"path": "/tmp"}),
            tool="ls",
            arguments={"path": "/tmp"},
            tool_call_id="call_1",
            result=ToolResult(
                content="permission denied", error=ErrorInfo(type="PermissionError", message="permission denied")
            ),
            duration_seconds=0.01,
        ),
        ModelRecord(
            seq=4,
            at="2026-01-01T00:00:03Z",
            run_id="r1",
            key=model_key("m", req2),
            model="m",
            request=req2,
            response=resp2,
            duration_seconds=0.7,
        ),
        InterruptRecord(seq=5, at="2026-01-01T00:00:04Z", run_id="r1", value={"reason": "confirm"}),
    ]
    return Recording(
        metadata={"dataset": "unit", "outcome": "failure"},
        session=SessionInfo(mode="record", producer="tests"),
        records=records,
    )


def tool(
    seq: int,
    name: str,
    args: Any = None,
    content: Any = "ok",
    *,
    error: str | None = None,
    call_id: str | None = None,
    duration: float | None = None,
    redacted: bool = False,
) -> ToolRecord:
    r = ToolRecord(
        seq=seq,
        tool=name,
        arguments=args if args is not None else {},
        tool_call_id=call_id,
        result=ToolResult(
            content=content, error=ErrorInfo(type="ToolError", message=error) if error else None, redacted=redacted
        ),
        duration_seconds=duration,
    )
    r.key = r.compute_key()
    return r


def msg(
    role: str,
    content: Any = None,
    *,
    tool_calls: list[tuple[str, str, dict]] | None = None,
    tool_call_id: str | None = None,
) -> ChatMessage:
    return ChatMessage(
        role=role,
        content=content,
        tool_call_id=tool_call_id,
        tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in tool_calls] if tool_calls else None,
    )


def model(
    seq: int,
    messages: list[ChatMessage],
    reply: ChatMessage | str | None = "done",
    *,
    name: str = "m",
    usage: tuple[int, int] | None = None,
    duration: float | None = None,
    error: str | None = None,
    finish: str = "stop",
) -> ModelRecord:
    if isinstance(reply, str):
        reply = msg("assistant", reply)
    r = ModelRecord(
        seq=seq,
        model=name,
        request=ModelRequest(messages=messages),
        response=ModelResponse(
            message=reply,
            finish_reason=finish,
            usage=Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None,
        )
        if reply is not None
        else None,
        error=ErrorInfo(type="ModelError", message=error) if error else None,
        duration_seconds=duration,
    )
    r.key = r.compute_key()
    return r


def lifecycle(seq: int, event: str = "plugin.mount") -> LifecycleRecord:
    return LifecycleRecord(seq=seq, event=event)


def snapshot(seq: int, generation: str | None, composition: dict) -> SnapshotRecord:
    return SnapshotRecord(seq=seq, generation_id=generation, composition=composition)


def recording(*records: Any, metadata: dict | None = None) -> Recording:
    return Recording(records=list(records), metadata=metadata or {})


def stream(spec: str, *, results: dict[str, Any] | None = None) -> Recording:
    """A run of tool calls from letters: ``"ABC"`` → tools A, B, C (args ``{}``) whose
    result is the letter, or ``results[letter]``; seqs 0, 1, 2..."""
    results = results or {}
    return recording(*(tool(i, ch, {}, results.get(ch, ch)) for i, ch in enumerate(spec)))


MODEL = "test-model"
TOOLS = [
    {
        "name": "lookup",
        "description": "look an item up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


def chat_recording(
    steps: int = 3, *, results: list[Any] | None = None, attribution: bool = True, final: str = "done"
) -> Recording:
    """A run of the generic chat agent: ``steps`` model calls that each call ``lookup``
    with ``{"q": "item-k"}`` (result ``results[k]`` or ``{"value": k}``), then a final
    answer ``final``. With ``attribution``, lifecycle records open and close the run."""
    messages = [
        ChatMessage(role="system", content="You look things up."),
        ChatMessage(role="user", content="Look up the items."),
    ]
    records: list[Any] = []
    seq = 0
    if attribution:
        records.append(LifecycleRecord(seq=seq, event="plugin.mount", details={"plugin": "t"}, run_id="run-1"))
        seq += 1
    for k in range(steps + 1):
        req = ModelRequest(messages=list(messages), tools=TOOLS, options={"temperature": 0.2})
        if k < steps:
            call = ToolCall(id=f"call_{k}", name="lookup", arguments={"q": f"item-{k}"})
            msg = ChatMessage(role="assistant", content="", tool_calls=[call])
            finish = "tool_calls"
        else:
            msg = ChatMessage(role="assistant", content=final)
            finish = "stop"
        resp = ModelResponse(message=msg, finish_reason=finish, usage=Usage(input_tokens=10 + k, output_tokens=5))
        records.append(
            ModelRecord(
                seq=seq,
                key=model_key(MODEL, req),
                model=MODEL,
                request=req,
                response=resp,
                run_id="run-1",
                duration_seconds=0.5,
            )
        )
        seq += 1
        messages.append(msg)
        if k < steps:
            content = results[k] if results is not None else {"value": k}
            result = ToolResult(content=content)
            records.append(
                ToolRecord(
                    seq=seq,
                    key=tool_key("lookup", call.arguments),
                    tool="lookup",
                    arguments=call.arguments,
                    tool_call_id=call.id,
                    result=result,
                    run_id="run-1",
                    duration_seconds=0.1,
                )
            )
            seq += 1
            messages.append(tool_message(call.id, "lookup", result))
    if attribution:
        records.append(LifecycleRecord(seq=seq, event="harness.shutdown", details={}, run_id="run-1"))
    rec = Recording(metadata={"task": "lookup"}, session=SessionInfo(mode="record"), records=records)
    return Recording.loads(rec.dumps())


def strip(record: Any) -> dict[str, Any]:
    """A record's JSON without the replay flags (``replayed``, ``live_fallback``)."""
    obj = record.to_json_obj()
    obj.pop("replayed", None)
    obj.pop("live_fallback", None)
    return obj


def random_recording(draw_ints: Any, draw_bool: Any, draw_choice: Any, n_steps: int) -> Recording:
    """A base of arbitrary shape (not necessarily the generic loop's): steps of one model
    call and 0..3 tool calls with repeated keys, tool errors, model errors, attribution
    records anywhere; request messages are arbitrary. ``draw_*`` come from hypothesis."""
    from core.record.recording import ErrorInfo, InterruptRecord, SnapshotRecord

    records: list[Any] = []
    seq = 0
    call_n = 0
    for step in range(n_steps):
        if draw_bool():
            records.append(InterruptRecord(seq=seq, value={"step": step}))
            seq += draw_ints(1, 3)
        msgs = [ChatMessage(role="user", content=f"u{draw_ints(0, 3)}")]
        req = ModelRequest(messages=msgs, tools=TOOLS, options={"temperature": draw_choice([0, 0.5])})
        if draw_bool() and step > 0 and draw_bool():
            records.append(
                ModelRecord(
                    seq=seq,
                    key=model_key(MODEL, req),
                    model=MODEL,
                    request=req,
                    error=ErrorInfo(type="timeout", message="slow"),
                    run_id="r",
                )
            )
            seq += 1
            continue
        n_tools = draw_ints(0, 3)
        calls = []
        for _ in range(n_tools):
            name = draw_choice(["lookup", "search"])
            calls.append(ToolCall(id=f"c{call_n}", name=name, arguments={"q": draw_ints(0, 2)}))
            call_n += 1
        msg = ChatMessage(role="assistant", content="" if calls else "final", tool_calls=calls or None)
        records.append(
            ModelRecord(
                seq=seq,
                key=model_key(MODEL, req),
                model=MODEL,
                request=req,
                response=ModelResponse(message=msg),
                run_id="r",
            )
        )
        seq += 1
        for c in calls:
            err = draw_bool() and draw_bool()
            result = (
                ToolResult(error=ErrorInfo(type="E", message="bad")) if err else ToolResult(content=draw_ints(0, 5))
            )
            records.append(
                ToolRecord(
                    seq=seq,
                    key=tool_key(c.name, c.arguments),
                    tool=c.name,
                    arguments=c.arguments,
                    tool_call_id=c.id,
                    result=result,
                    run_id="r",
                )
            )
            seq += 1
        if draw_bool():
            records.append(SnapshotRecord(seq=seq, composition={"tools": ["lookup"]}))
            seq += 1
    rec = Recording(metadata={}, records=records)
    return Recording.loads(rec.dumps())


SYSTEM = "You are a software agent. Fix the failing test in the repository."
TASK = "The test test_parse_date fails with ValueError on '2024-02-30'. Make it raise a clear error instead."
UNIQUE_RESULT = "zebra-quartz-1458 appears exactly once in a tool result"

#: (tool, arguments, result content, error or None) for each step of the run
STEPS = [
    ("bash", {"command": "ls src"}, "dates.py\nparser.py\n__init__.py", None),
    (
        "bash",
        {"command": "cat src/dates.py"},
        "def parse_date(s):\n    y, m, d = s.split('-')\n    return date(int(y), int(m), int(d))\n" + UNIQUE_RESULT,
        None,
    ),
    (
        "edit",
        {"path": "src/dates.py", "old": "return date(", "new": "return safe_date("},
        None,
        ErrorInfo(type="EditRejected", message="edit would introduce a syntax error at line 3"),
    ),
    (
        "edit",
        {
            "path": "src/dates.py",
            "old": "return date(int(y), int(m), int(d))",
            "new": "try:\n    return date(int(y), int(m), int(d))\nexcept ValueError as e:\n    raise DateError(s) from e",
        },
        "edited src/dates.py",
        None,
    ),
    (
        "bash",
        {"command": "pytest -q tests/test_dates.py"},
        None,
        ErrorInfo(type="CommandFailed", message="exit status 1: 1 failed, 3 passed"),
    ),
    ("bash", {"command": "pytest -q tests/test_dates.py"}, "4 passed in 0.12s", None),
]


def build_recording(n_padding: int = 0) -> Recording:
    """A small but realistic run: snapshot + lifecycle, six model→tool steps (two tool
    errors), an interrupt, a final answer, shutdown. ``n_padding`` extra tool calls
    (ok) are appended before the end, for scrolling tests."""
    t0 = 1_767_225_600  # 2026-01-01T00:00:00Z
    seq = 0
    records = []

    def at(s: float) -> str:
        from datetime import datetime

        return datetime.fromtimestamp(t0 + s, tz=UTC).isoformat().replace("+00:00", "Z")

    records.append(
        SnapshotRecord(
            seq=seq,
            at=at(0),
            generation_id="gen-1",
            run_id="run-1",
            composition={
                "plugins": ["shell", "editor"],
                "tools": ["bash", "edit"],
                "capabilities": ["exec", "fs.write"],
            },
        )
    )
    seq += 1
    records.append(
        LifecycleRecord(seq=seq, at=at(0.1), event="plugin.mount", run_id="run-1", details={"plugin": "shell"})
    )
    seq += 1
    messages = [ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=TASK)]
    tools = [{"name": "bash", "parameters": {"type": "object"}}, {"name": "edit", "parameters": {"type": "object"}}]
    clock = 1.0
    for i, (tool, args, content, error) in enumerate(STEPS):
        cid = f"call_{i + 1}"
        thought = f"Step {i + 1}: I will run {tool} to make progress on the date parsing bug."
        req = ModelRequest(messages=list(messages), tools=tools, options={"temperature": 0.0})
        resp = ModelResponse(
            message=ChatMessage(
                role="assistant", content=thought, tool_calls=[ToolCall(id=cid, name=tool, arguments=args)]
            ),
            finish_reason="tool_calls",
            usage=Usage(input_tokens=500 + 120 * i, output_tokens=60 + i),
        )
        m = ModelRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            generation_id="gen-1",
            model="gpt-4o-2024-08-06",
            request=req,
            response=resp,
            duration_seconds=1.5 + i / 10,
        )
        m.key = m.compute_key()
        records.append(m)
        seq += 1
        clock += 2
        t = ToolRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            generation_id="gen-1",
            tool=tool,
            arguments=args,
            tool_call_id=cid,
            result=ToolResult(content=content, error=error),
            duration_seconds=0.25,
        )
        t.key = t.compute_key()
        records.append(t)
        seq += 1
        clock += 1
        messages = [
            *messages,
            resp.message,
            ChatMessage(
                role="tool",
                tool_call_id=cid,
                name=tool,
                content=content if error is None else f"ERROR {error.type}: {error.message}",
            ),
        ]
        if i == 2:
            records.append(
                InterruptRecord(seq=seq, at=at(clock), run_id="run-1", value={"reason": "approval required for edit"})
            )
            seq += 1
    for j in range(n_padding):
        args = {"command": f"echo padding {j}"}
        t = ToolRecord(
            seq=seq,
            at=at(clock),
            run_id="run-1",
            tool="bash",
            arguments=args,
            tool_call_id=f"pad_{j}",
            result=ToolResult(content=f"padding {j}"),
            duration_seconds=0.01,
        )
        t.key = t.compute_key()
        records.append(t)
        seq += 1
        clock += 0.5
    req = ModelRequest(messages=list(messages), tools=tools, options={"temperature": 0.0})
    final = ModelRecord(
        seq=seq,
        at=at(clock),
        run_id="run-1",
        generation_id="gen-1",
        model="gpt-4o-2024-08-06",
        request=req,
        response=ModelResponse(
            message=ChatMessage(role="assistant", content="The test passes now: parse_date raises DateError."),
            finish_reason="stop",
            usage=Usage(input_tokens=1400, output_tokens=30),
        ),
        duration_seconds=1.1,
    )
    final.key = final.compute_key()
    records.append(final)
    seq += 1
    records.append(
        LifecycleRecord(seq=seq, at=at(clock + 1), event="harness.shutdown", run_id="run-1", details={"reason": "done"})
    )
    return Recording(
        metadata={"dataset": "tests", "task": "date-parsing", "outcome": "resolved"},
        session=SessionInfo(mode="record", producer="tests/inspector/builders.py", created_at=at(0)),
        records=records,
    )


def write_recording(path: Path, n_padding: int = 0) -> Path:
    """Save :func:`build_recording` to ``path`` (the real save path: redaction, digest)."""
    save_recording(build_recording(n_padding), path)
    return path
