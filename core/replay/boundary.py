"""The agent ↔ harness boundary: the two calls an agent makes, and executors.

An agent written against :class:`AgentRuntime` can be *recorded* (the replay session's
runtime executes live and appends records), *replayed* (answers come from a recording)
and *branched* (the replay engine answers from interventions, recorded calls, fixtures
or a wired executor). This is what lets the agent's own code decide the next call after
an intervention (SPEC "Executors").
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import BranchError
from ..record.recording import ModelRequest, ModelResponse, Recording, ToolResult


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


#: where an executor's name came from (docs/replay.md, "Executors are code"):
#: ``command line`` — the user typed ``--executor module:function``; ``recording`` — the
#: base's ``metadata.executor`` (``--executor recorded``), a field the digest does not seal
ExecutorOrigin = Literal["command line", "recording"]


@dataclass(frozen=True)
class ExecutorChoice:
    """Which executor a replay runs: ``spec`` (``module:function``) and its ``origin``.

    An executor is code that runs on this machine. One the user names runs as named,
    found in the installed packages and then the current folder (as ``python -m``
    finds a module); one taken from a recording runs only with the user's consent
    (``--trust-executor``, or a confirmation in the app) and is imported with neither
    the current folder nor ``""`` on the import path, so no module lying beside an
    untrusted recording is picked up."""

    spec: str
    origin: ExecutorOrigin = "command line"

    @property
    def search_cwd(self) -> bool:
        """Whether the current folder is on the import path while it is imported."""
        return self.origin == "command line"


def _check_spec(spec: str, what: str) -> str:
    if spec.startswith("provider:"):
        from ..proxy.provider import parse_provider_spec, provider_timeout

        try:
            parse_provider_spec(spec)
        except ValueError as exc:  # its message starts "executor 'provider:…'"
            raise BranchError(str(exc) if what == "executor" else f"{what}: {exc}") from None
        try:
            provider_timeout()
        except ValueError as exc:  # said before anything is stored
            raise BranchError(f"{what} {spec!r}: {exc}") from None
        return spec
    if spec.startswith("cmd:"):
        if not spec[4:].strip():
            raise BranchError(f"{what} {spec!r} names no command (write cmd:CMD ARGS…)")
        return spec
    mod_name, sep, func_name = spec.partition(":")
    if not sep or not mod_name or not func_name:
        raise BranchError(f"{what} {spec!r} must be written module:function or cmd:CMD ARGS…")
    return spec


def choose_executor(
    spec: str | ExecutorChoice | None,
    base: Recording | None,
    *,
    trust_recorded: bool = False,
    policy_executor: str | None = None,
) -> ExecutorChoice | None:
    """Resolve ``--executor`` without importing anything: ``None`` (no executor, or the
    branch policy's ``executor`` when it names one), ``recorded`` (the base's
    ``metadata.executor``), ``module:function`` or ``cmd:CMD ARGS…`` (named by the user)
    or an :class:`ExecutorChoice` as it is. An executor named by a file — the
    recording's ``metadata.executor`` or the branch policy's ``executor`` — needs
    ``trust_recorded`` (the user's consent) and is imported as a recording's is — except
    a built-in provider executor (``provider:openai``), which runs no code of the file's.

    Raises:
        BranchError: ``recorded`` when the base names no executor, or without
            ``trust_recorded`` (the message names the module and says how to consent);
            a spec not written ``module:function``.
    """
    if spec is None and policy_executor is not None:
        _check_spec(policy_executor, "the branch policy's executor")
        if policy_executor.startswith("provider:"):
            # built in: no code of the file's runs (it names where model calls go live)
            return ExecutorChoice(policy_executor, "command line")
        if not trust_recorded:
            raise BranchError(
                f"the branch policy names the executor {policy_executor!r} (policy.executor), code that would "
                "run on this machine. Run it only if you trust where the branch came from: add --trust-executor "
                "(or name an executor yourself: --executor)"
            )
        return ExecutorChoice(policy_executor, "recording")
    if spec is None or isinstance(spec, ExecutorChoice):
        return spec
    if spec != "recorded":
        return ExecutorChoice(_check_spec(spec, "executor"), "command line")
    named = base.metadata.get("executor") if base is not None else None
    if not isinstance(named, str):
        raise BranchError("--executor recorded: the base recording names no executor in metadata.executor")
    _check_spec(named, "--executor recorded: metadata.executor")
    if not trust_recorded:
        raise BranchError(
            f"--executor recorded: the recording names the executor {named!r} (metadata.executor), "
            "code that would run on this machine; the recording's digest does not cover that field. "
            "Run it only if you trust where the recording came from: add --trust-executor "
            "(or name an executor yourself: --executor module:function or cmd:CMD ARGS…)"
        )
    return ExecutorChoice(named, "recording")


@contextlib.contextmanager
def _import_path(search_cwd: bool) -> Iterator[None]:
    """``sys.path`` while an executor is imported: the current folder added (a user's
    own module, as ``python -m`` finds it) or taken away (``""``, ``.`` and the current
    folder: an executor named by a file), restored afterwards."""
    saved = list(sys.path)
    cwd = os.getcwd()
    if search_cwd:
        if "" not in sys.path and cwd not in sys.path:
            sys.path.append(cwd)
    else:
        # every spelling of the current folder: relative, through a symbolic link
        # (``PYTHONPATH=$PWD`` in a linked folder), or the physical path
        here = os.path.realpath(cwd)
        sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) != here]
    try:
        yield
    finally:
        sys.path[:] = saved


def load_executor(spec: str | ExecutorChoice) -> Executor:
    """Import ``module:function`` and call it to get an :class:`Executor`. A plain
    string is an executor the user named (:class:`ExecutorChoice` says where the current
    folder is searched).

    Raises:
        ValueError: ``spec`` is not ``module:function``, the module or function does not
            exist, importing the module or calling the factory raised (or the factory
            needs arguments), or the result is not an Executor (message names ``spec``,
            one line).
    """
    import importlib

    choice = spec if isinstance(spec, ExecutorChoice) else ExecutorChoice(spec)
    spec = choice.spec
    if spec.startswith("cmd:"):
        from ..proxy.command import CommandExecutor, parse_command_spec

        return CommandExecutor(parse_command_spec(spec))
    if spec.startswith("provider:"):
        from ..proxy.provider import ProviderExecutor, parse_provider_spec

        provider, url = parse_provider_spec(spec)
        return ProviderExecutor(provider, url)
    if ":" not in spec:
        raise ValueError(f"executor {spec!r} must be written module:function")
    mod_name, func_name = spec.split(":", 1)
    if not mod_name or not func_name:
        raise ValueError(f"executor {spec!r} must be written module:function")
    try:
        with _import_path(choice.search_cwd):
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
