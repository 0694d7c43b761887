"""One tool gate for the replay session's harness and for the replay engine.

Rules (SPEC "Replay session": a tool boundary that runs before hook, authorization,
approval, budget and a span before a replayed result is returned, then the after hook;
SPEC "Replay engine": authorization, budgets and approvals run on every replayed call):
the same hooks, given to :class:`~core.replay.session.Harness` and to
:class:`~core.replay.engine.ReplayEngine`, are called in the same order, deny the same
calls with the same messages, and spend the same budget.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import PolicyDenied
from core.record.recording import ToolResult
from core.replay.branch import Policy, ToolPolicyIntervention, new_branch
from core.replay.engine import ReplayEngine, ToolHooks
from core.replay.gate import ToolGate, ToolInvocation
from core.replay.session import Harness, ReplayMode, ReplaySession
from tests.builders import MODEL, chat_recording

STEPS = 4  # chat_recording(4): lookup item-0 .. item-3, each after a model call


class Hooks:
    """Hooks that log every call as ``(hook, q)`` and deny by a plan:
    ``plan[q]`` is ``authorize-false``, ``authorize-raise``, ``approve-false`` or absent."""

    def __init__(self, plan: dict[str, str]) -> None:
        self.plan = plan
        self.log: list[tuple[str, str]] = []

    def before(self, inv: ToolInvocation) -> None:
        self.log.append(("before", inv.arguments["q"]))

    def authorize(self, inv: ToolInvocation) -> Any:
        q = inv.arguments["q"]
        self.log.append(("authorize", q))
        if self.plan.get(q) == "authorize-raise":
            raise PolicyDenied(inv.tool, f"{q} is off limits")
        return self.plan.get(q) != "authorize-false"

    def approve(self, inv: ToolInvocation) -> bool:
        q = inv.arguments["q"]
        self.log.append(("approve", q))
        return self.plan.get(q) != "approve-false"

    def after(self, inv: ToolInvocation, result: ToolResult) -> None:
        self.log.append(("after", inv.arguments["q"]))

    def tool_hooks(self) -> ToolHooks:
        return ToolHooks(before=self.before, authorize=self.authorize, approve=self.approve, after=self.after)


def through_harness(plan: dict[str, str], budget: int | None) -> tuple[list[tuple[str, str]], list[str]]:
    """The base's tool calls through a replaying Harness: the hook log and, per call,
    ``ok`` or the denial message."""
    base = chat_recording(STEPS)
    hooks = Hooks(plan)
    h = Harness(
        ReplaySession.from_recording(base, ReplayMode.REPLAY),
        {},
        before=hooks.before,
        authorize=hooks.authorize,
        approve=hooks.approve,
        after=hooks.after,
        max_tool_calls=budget,
    )
    outcomes = []
    for k in range(STEPS):
        try:
            h.call_tool("lookup", {"q": f"item-{k}"}, f"call_{k}")
            outcomes.append("ok")
        except PolicyDenied as exc:
            outcomes.append(str(exc))
    return hooks.log, outcomes


class ToolsOnly:
    """An executor whose agent makes the base's calls (model, then tool) and carries on
    past a denial, noting each tool call's outcome."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.outcomes: list[str] = []

    def run(self, runtime: Any, task: Any) -> Any:
        models = [r for r in self.base.records if r.kind == "model"]
        for k in range(STEPS):
            runtime.call_model(MODEL, models[k].request)
            try:
                runtime.call_tool("lookup", {"q": f"item-{k}"}, f"call_{k}")
                self.outcomes.append("ok")
            except PolicyDenied as exc:
                self.outcomes.append(str(exc))
        return "done"

    def live_model(self, model: str, request: Any) -> Any:
        raise AssertionError("never live")

    def live_tool(self, name: str, arguments: Any) -> Any:
        raise AssertionError("never live")


def through_engine(plan: dict[str, str], budget: int | None) -> tuple[list[tuple[str, str]], list[str]]:
    base = chat_recording(STEPS)
    hooks = Hooks(plan)
    executor = ToolsOnly(base)
    branch = new_branch(base, "base.json", at=0, policy=Policy(max_tool_calls=budget))
    out = ReplayEngine(base, branch, executor=executor, hooks=hooks.tool_hooks()).run()
    assert out.status == "completed", out.error
    denied = [r for r in out.events.records if r.kind == "tool" and out.sources[r.seq] == "policy"]
    assert len(denied) == sum(1 for o in executor.outcomes if o != "ok")
    return hooks.log, executor.outcomes


DENIALS = st.sampled_from([None, "authorize-false", "authorize-raise", "approve-false"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(DENIALS, min_size=STEPS, max_size=STEPS), budget=st.none() | st.integers(0, STEPS))
def test_property_harness_and_engine_run_the_same_gate(plan: list[str | None], budget: int | None) -> None:
    by_q = {f"item-{k}": p for k, p in enumerate(plan) if p is not None}
    log_h, outcomes_h = through_harness(by_q, budget)
    log_e, outcomes_e = through_engine(by_q, budget)
    assert log_h == log_e
    assert outcomes_h == outcomes_e
    # and the order is the documented one: before, authorize, approve, (answer), after
    for k in range(STEPS):
        q = f"item-{k}"
        hooks = [h for h, qq in log_h if qq == q]
        assert hooks == ["before", "authorize", "approve", "after"][: len(hooks)]
        assert hooks[:2] == ["before", "authorize"]
        if outcomes_h[k] == "ok":
            assert hooks == ["before", "authorize", "approve", "after"]


def test_the_denial_messages_are_the_gates() -> None:
    _, outcomes = through_harness({"item-0": "authorize-false", "item-1": "approve-false"}, 1)
    assert outcomes == [
        "tool 'lookup' denied: not authorized",
        "tool 'lookup' denied: approval refused",
        "ok",
        "tool 'lookup' denied: budget exceeded: at most 1 tool call(s) allowed",
    ]


def test_engine_rules_run_first_in_their_step() -> None:
    """A ``tool_policy`` deny is part of authorization: it comes after ``before`` and
    before the ``authorize`` hook, which is then not asked."""
    base = chat_recording(2)
    hooks = Hooks({})
    branch = new_branch(
        base,
        "base.json",
        at=2,
        interventions=[ToolPolicyIntervention(tool="lookup", action="deny", reason="read-only")],
        policy=Policy(drift="lenient"),
    )
    out = ReplayEngine(base, branch, hooks=hooks.tool_hooks()).run()
    assert out.sources[2] == "policy"
    assert hooks.log[0] == ("before", "item-0") and ("authorize", "item-0") not in hooks.log


def test_gate_alone() -> None:
    log: list[str] = []
    made: list[int] = []

    class Set:
        before = None
        authorize = None
        approve = None
        after = None

    gate = ToolGate(Set(), max_tool_calls=1)

    def invocation() -> ToolInvocation:
        made.append(1)
        return ToolInvocation("t", {}, None, None, None, "k", {}, False, 0)

    assert gate.admit("t", invocation) is None
    assert made == []  # no hook: the invocation is never built
    denial = gate.admit("t", invocation, deny=lambda: log.append("deny") or None)
    assert log == ["deny"] and denial is not None and "budget exceeded" in denial.reason
    assert gate.passed == 1

    def pause() -> PolicyDenied | None:
        raise RuntimeError("pause")  # the engine's approval rule raises to pause the replay

    with pytest.raises(RuntimeError, match="pause"):
        gate.admit("t", invocation, approval=pause)


def test_harness_budget_and_counter_are_the_gates() -> None:
    h = Harness(ReplaySession("live"), {"t": lambda: 1}, max_tool_calls=1)
    h.call_tool("t", {})
    assert h.tool_calls == 1
    h.max_tool_calls = 2  # settable, as before
    h.call_tool("t", {})
    with pytest.raises(PolicyDenied, match="at most 2"):
        h.call_tool("t", {})
    h.authorize = lambda inv: False  # a hook set after construction takes effect
    h.max_tool_calls = None
    with pytest.raises(PolicyDenied, match="not authorized"):
        h.call_tool("t", {})
