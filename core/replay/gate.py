"""The tool gate: what every tool call passes before it is answered, and after.

One implementation for the replay session's :class:`~core.replay.session.Harness` and for the
:class:`~core.replay.engine.ReplayEngine`, so the two boundaries cannot drift apart. The order
(SPEC "Replay session": the tool boundary runs before hook, authorization, approval, budget
and a span before a replayed result is returned, then the after hook; SPEC "Replay engine":
authorization, budgets and approvals run on every replayed call):

1. ``before(invocation)`` — an observer; it may raise to stop the call;
2. **authorization** — the caller's ``deny`` rule (the engine's ``tool_policy`` deny), then
   ``authorize(invocation)``: raising :class:`~core.errors.PolicyDenied` or returning
   ``False`` denies;
3. **approval** — the caller's ``approval`` rule (the engine's ``tool_policy``
   require_approval: it may raise to pause, or return a denial), then
   ``approve(invocation)``: a falsy return denies;
4. **budget** — at most ``max_tool_calls`` calls pass; the next is denied;
5. (the caller answers the call, inside its ``tool.execute`` span)
6. ``after(invocation, result)`` — :meth:`ToolGate.after`, only for a call that passed.

A denial is returned as a :class:`~core.errors.PolicyDenied` (never raised by the gate), so
each caller decides what a denied call leaves behind: the harness raises it at once (the
call is not recorded), the engine records the denied call (source ``policy``) first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import PolicyDenied
from ..record.recording import ToolRecord, ToolResult

__all__ = ["GateHooks", "GateRule", "ToolGate", "ToolHooks", "ToolInvocation"]


@dataclass
class ToolInvocation:
    """One tool call as the boundary's hooks see it.

    ``arguments`` are what the agent passed; ``redacted_arguments`` and ``key`` what is
    recorded and matched. ``replayed`` is True when a recorded answer will serve the call
    (known before the hooks run). ``record`` is set once answered (``None`` in live mode):
    the stored/served :class:`ToolRecord` with fresh attribution. ``index`` is the
    0-based number of the call in this harness (in the engine: its call position).
    """

    tool: str
    arguments: Any
    tool_call_id: str | None
    run_id: str | None
    generation_id: str | None
    key: str
    redacted_arguments: Any
    replayed: bool
    index: int
    record: ToolRecord | None = None


@dataclass
class ToolHooks:
    """Optional tool-boundary hooks, as in :class:`core.replay.session.Harness`: ``before`` and
    ``after`` observers, ``authorize`` (raise :class:`PolicyDenied` or return ``False``
    to deny), ``approve`` (return ``False`` to deny). Each receives a
    :class:`ToolInvocation`; ``after`` also the result."""

    before: Callable[[ToolInvocation], Any] | None = None
    authorize: Callable[[ToolInvocation], Any] | None = None
    approve: Callable[[ToolInvocation], Any] | None = None
    after: Callable[[ToolInvocation, ToolResult], Any] | None = None


class GateHooks(Protocol):
    """Anything with the four hook attributes (``None`` = pass): a :class:`ToolHooks`, or
    the :class:`~core.replay.session.Harness` itself. Read on every call, so a hook set
    after construction takes effect."""

    @property
    def before(self) -> Callable[[ToolInvocation], Any] | None: ...

    @property
    def authorize(self) -> Callable[[ToolInvocation], Any] | None: ...

    @property
    def approve(self) -> Callable[[ToolInvocation], Any] | None: ...

    @property
    def after(self) -> Callable[[ToolInvocation, ToolResult], Any] | None: ...


#: a caller's own step of the gate: returns a denial, ``None`` to let the call go on, or
#: raises (the engine's approval rule raises to pause the replay on an approval requirement)
GateRule = Callable[[], PolicyDenied | None]

#: the invocation, or a function making it (called only when a hook needs it)
InvocationLike = ToolInvocation | Callable[[], ToolInvocation]


class ToolGate:
    """The tool gate (order in the module docstring).

    Args:
        hooks: the hook set (:class:`GateHooks`).
        max_tool_calls: the budget (``None`` = unlimited).

    Attributes:
        passed: calls that passed the budget so far.
    """

    def __init__(self, hooks: GateHooks, *, max_tool_calls: int | None = None) -> None:
        self.hooks = hooks
        self.max_tool_calls = max_tool_calls
        self.passed = 0

    def admit(
        self,
        name: str,
        invocation: InvocationLike,
        *,
        deny: GateRule | None = None,
        approval: GateRule | None = None,
    ) -> PolicyDenied | None:
        """Run ``before`` → authorization → approval → budget for one call of tool
        ``name``. Returns the denial, or ``None`` when the call may be answered (it then
        counts against the budget). ``deny`` and ``approval`` are the caller's own rules,
        run first in their step. Exceptions of ``before`` and of the rules propagate."""
        hooks = self.hooks
        before, authorize, approve = hooks.before, hooks.authorize, hooks.approve
        inv: ToolInvocation  # made only when a hook will see it (the engine's calls are hot)
        if isinstance(invocation, ToolInvocation):
            inv = invocation
        elif before is not None or authorize is not None or approve is not None:
            inv = invocation()
        if before is not None:
            before(inv)
        # authorization
        if deny is not None:
            denial = deny()
            if denial is not None:
                return denial
        if authorize is not None:
            try:
                if authorize(inv) is False:
                    return PolicyDenied(name, "not authorized")
            except PolicyDenied as exc:
                return exc
        # approval
        if approval is not None:
            denial = approval()
            if denial is not None:
                return denial
        if approve is not None and not approve(inv):
            return PolicyDenied(name, "approval refused")
        # budget
        budget = self.max_tool_calls
        if budget is not None and self.passed >= budget:
            return PolicyDenied(name, f"budget exceeded: at most {budget} tool call(s) allowed")
        self.passed += 1
        return None

    def after(self, invocation: InvocationLike, result: ToolResult) -> None:
        """The ``after(invocation, result)`` hook of a call that was answered."""
        after = self.hooks.after
        if after is not None:
            after(invocation if isinstance(invocation, ToolInvocation) else invocation(), result)
