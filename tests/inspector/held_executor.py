"""An executor for tests of replays running in the app: the bundled sample agent
(``core.sample_agent:make_executor``), held at its first tool call until the test lets
it go — so that replays are *running* (in their child processes) for as long as a test
needs.

The test listens on a Unix socket and names it in :data:`GATE_ENV` (the replay's child
process inherits the environment); at its first tool call the agent connects (the test's
``accept`` returning says "held here") and blocks reading until the test writes
:data:`GO` or closes the connection; once the test has removed the socket, nothing is
held (a resumed replay runs through). Without :data:`GATE_ENV` it is the sample agent as is.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from core.examples.sample_agent import make_executor as sample_executor
from core.record.recording import ModelRequest, ModelResponse, ToolResult
from core.replay.boundary import AgentRuntime

#: the environment variable naming the test's socket
GATE_ENV = "CHASSIS_TEST_GATE"
#: what the test writes to let a held agent go on
GO = b"go"
#: how long a held agent waits for the test (seconds) before failing its call
HOLD_AT_MOST = 60.0

SPEC = "tests.inspector.held_executor:make_executor"


class HeldRuntime:
    """``runtime`` with its first ``call_tool`` held at the test's socket ``gate``."""

    def __init__(self, runtime: AgentRuntime, gate: str) -> None:
        self.runtime = runtime
        self.gate = gate
        self.held = False

    def call_model(self, model: str, request: ModelRequest) -> ModelResponse:
        return self.runtime.call_model(model, request)

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        if not self.held:
            self.held = True
            if os.path.exists(self.gate):  # gone: the test opened the gate for good
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(HOLD_AT_MOST)
                    s.connect(self.gate)
                    s.recv(len(GO))  # GO, or b"" when the test closed it: go on either way
        return self.runtime.call_tool(name, arguments, tool_call_id)


class HeldExecutor:
    def __init__(self) -> None:
        self.inner = sample_executor()

    def run(self, runtime: AgentRuntime, task: Any) -> Any:
        gate = os.environ.get(GATE_ENV)
        return self.inner.run(HeldRuntime(runtime, gate) if gate else runtime, task)

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        return self.inner.live_model(model, request)

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        return self.inner.live_tool(name, arguments)


def make_executor() -> HeldExecutor:
    return HeldExecutor()
