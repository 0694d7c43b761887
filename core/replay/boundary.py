"""The agent ↔ harness boundary: the two calls an agent makes, and executors.

An agent written against :class:`AgentRuntime` can be *recorded* (the replay session's
runtime executes live and appends records), *replayed* (answers come from a recording)
and *branched* (the replay engine answers from interventions, recorded calls, fixtures
or a wired executor). This is what lets the agent's own code decide the next call after
an intervention (SPEC "Executors").
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..record.recording import ModelRequest, ModelResponse, ToolResult


@runtime_checkable
class AgentRuntime(Protocol):
    """What an agent calls. Implemented by the replay session's harness and by the engine."""

    def call_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Answer one model call (raises ReplayMismatch / PolicyDenied / other errors)."""
        ...

    def call_tool(self, name: str, arguments: Any, tool_call_id: str | None = None) -> ToolResult:
        """Answer one tool call; a tool failure is a ``ToolResult`` with ``error`` set.

        Raises:
            PolicyDenied: authorization, approval or budget refused the call.
        """
        ...


@runtime_checkable
class Executor(Protocol):
    """A wired agent: runs its loop against a runtime, and answers calls live.

    A user wires one as ``module:function``; the function takes no arguments and returns
    an ``Executor``. The sample agent's is ``core.sample_agent:make_executor``.
    """

    def run(self, runtime: AgentRuntime, task: Any) -> Any:
        """Run the agent's loop on ``task`` against ``runtime``; return its final output."""
        ...

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Answer a model call for real (the executor's own model)."""
        ...

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        """Execute a tool for real (the executor's own tools)."""
        ...


def load_executor(spec: str) -> Executor:
    """Import ``module:function`` and call it to get an :class:`Executor`.

    Raises:
        ValueError: ``spec`` is not ``module:function``, the module or function does not
            exist, importing the module or calling the factory raised (or the factory
            needs arguments), or the result is not an Executor (message names ``spec``,
            one line).
    """
    import importlib

    if ":" not in spec:
        raise ValueError(f"executor {spec!r} must be written module:function")
    mod_name, func_name = spec.split(":", 1)
    if not mod_name or not func_name:
        raise ValueError(f"executor {spec!r} must be written module:function")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"executor {spec!r}: cannot import {mod_name!r} ({exc})") from None
    except Exception as exc:  # noqa: BLE001 — the user's module failed while importing
        raise ValueError(
            f"executor {spec!r}: importing {mod_name!r} failed: {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    factory = getattr(mod, func_name, None)
    if factory is None or not callable(factory):
        raise ValueError(f"executor {spec!r}: {mod_name} has no callable {func_name!r}")
    try:
        executor = factory()
    except Exception as exc:  # noqa: BLE001 — the user's factory (raised, or needs arguments)
        raise ValueError(
            f"executor {spec!r}: calling {func_name}() failed: "
            f"{type(exc).__name__}: {_one_line(exc)} (the factory must take no arguments "
            "and return an Executor)"
        ) from None
    if not isinstance(executor, Executor):
        raise ValueError(f"executor {spec!r} returned {type(executor).__name__}, not an Executor")  # noqa: TRY004
    return executor


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:299] + "…"
