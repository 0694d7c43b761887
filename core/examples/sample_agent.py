"""A small deterministic customer-support agent, wired as an executor.

The agent handles a refund request: it looks the customer up, fetches the order, checks
the refund policy for the damaged item, issues the refund (a supervisor approves refunds
above :data:`APPROVAL_THRESHOLD` — the run pauses on an interrupt for it), messages the
customer, and answers. Its "model" (:func:`scripted_model`) is a rule-based policy that
reads the request's transcript — the user's words and every tool result so far — to pick
the next call, so a changed tool result changes its next decisions. Tools read a fixed
in-module store: no clock, no randomness, no network.

It is written against :class:`core.replay.boundary.AgentRuntime` only, so the same code runs
recorded (through :class:`core.replay.session.Harness`), replayed, and under the replay engine
after an intervention (SPEC "Executors"): :func:`make_executor` is its entry point,
``core.sample_agent:make_executor``, and every recording it writes names it in
``metadata.executor`` with the task in ``metadata.task``.

Planted faults (:class:`Fault`), injected at record time only — the executor's live
model and tools are always honest:

* ``corrupted-result`` — the tool called at step N returns bad data;
* ``tool-error`` — the tool called at step N fails (``ServiceUnavailable``);
* ``wrong-tool`` — the model's response at step N picks the wrong tool (``cancel_order``).

A *step* is one model call and the tool calls it requests (0-based). A faulted run ends
in ``metadata.outcome = "failure"`` with ``metadata.fault = {seq, kind, step, tool,
description}`` (``seq`` of the faulted record); a clean run ends in ``"success"``.
:func:`evaluate` judges an output against the store's ground truth.

Command line::

    python -m core.examples.sample_agent record [--fault KIND --step N] [--task ID] -o FILE
    python -m core.examples.sample_agent samples [DIR]     # the sample_recordings/ set
    python -m core.examples.sample_agent replay FILE       # replay with zero live calls
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import InspectorError, PolicyDenied
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    ToolCall,
    ToolRecord,
    ToolResult,
    Usage,
)
from ..record.redaction import SecretRedactor
from ..replay.session import (
    Harness,
    ReplayChatModel,
    ReplayFallback,
    ReplayMode,
    ReplaySession,
    ToolInvocation,
    run_tool_function,
)

__all__ = [
    "AGENT_NAME",
    "APPROVAL_THRESHOLD",
    "DEFAULT_FAULT_STEPS",
    "DEFAULT_TASK",
    "EXECUTOR_SPEC",
    "FAULT_KINDS",
    "MODEL_NAME",
    "SAMPLE_FILES",
    "TASKS",
    "TOOLS",
    "TOOL_SCHEMAS",
    "Fault",
    "RecordedRun",
    "ReplayedRun",
    "SampleAgentError",
    "SampleAgentExecutor",
    "evaluate",
    "expected_resolution",
    "live_tool",
    "main",
    "make_executor",
    "record_run",
    "replay_run",
    "run_agent",
    "scripted_model",
    "write_samples",
]

AGENT_NAME = "sample-support-agent"
MODEL_NAME = "scripted-support-v1"
EXECUTOR_SPEC = "core.sample_agent:make_executor"
APPROVAL_THRESHOLD = 50.0  # refunds above this (currency units) need a supervisor
MAX_TURNS = 10
FAULT_KINDS = ("corrupted-result", "tool-error", "wrong-tool")
DEFAULT_FAULT_STEPS = {"corrupted-result": 1, "tool-error": 2, "wrong-tool": 3}
OPTIONS = {"temperature": 0.0, "tool_choice": "auto"}

SYSTEM_PROMPT = (
    "You are a customer-support agent for a home-goods shop. Verify the customer, "
    "fetch the order, check the refund policy for the item, refund only what the policy "
    "allows, confirm to the customer by message, then answer."
)


class SampleAgentError(InspectorError):
    """The sample agent was asked for something it cannot do (unknown task, a fault step
    the run never reaches)."""

    title = "sample agent"


# ====================================================================== the store

CUSTOMERS: dict[str, dict[str, Any]] = {
    "ana@example.com": {"customer_id": "C-1001", "name": "Ana Silva", "tier": "gold"},
    "ben@example.com": {"customer_id": "C-1002", "name": "Ben Okafor", "tier": "standard"},
}
ORDERS: dict[str, dict[str, Any]] = {
    "A1001": {
        "order_id": "A1001",
        "customer_id": "C-1001",
        "status": "delivered",
        "items": [
            {"sku": "BL-200", "name": "blender", "price": 89.99, "qty": 1},
            {"sku": "MG-4", "name": "mug set", "price": 24.5, "qty": 1},
        ],
    },
    "A1002": {
        "order_id": "A1002",
        "customer_id": "C-1002",
        "status": "delivered",
        "items": [{"sku": "KT-7", "name": "kettle", "price": 45.0, "qty": 1}],
    },
    "A1003": {
        "order_id": "A1003",
        "customer_id": "C-1002",
        "status": "in_transit",
        "items": [{"sku": "HP-9", "name": "headphones", "price": 129.0, "qty": 1}],
    },
}
TASKS: dict[str, dict[str, Any]] = {
    "support-001": {
        "task_id": "support-001",
        "customer_email": "ana@example.com",
        "order_id": "A1001",
        "message": "Hi, my blender from order A1001 arrived broken. Please refund it. -- ana@example.com",
    },
    "support-002": {
        "task_id": "support-002",
        "customer_email": "ben@example.com",
        "order_id": "A1002",
        "message": "The kettle in order A1002 came damaged, I want my money back. ben@example.com",
    },
    "support-003": {
        "task_id": "support-003",
        "customer_email": "ben@example.com",
        "order_id": "A1003",
        "message": "My headphones (order A1003) are broken, refund please. ben@example.com",
    },
}
DEFAULT_TASK = "support-001"

_DAMAGE_WORDS = ("broken", "damaged", "cracked", "defective")


def _money(x: float) -> float:
    return round(float(x), 2)


# ====================================================================== tools (live, honest)


class ToolFailure(Exception):
    """A tool refused its input (becomes an ``error`` result at the boundary)."""


class ServiceUnavailable(Exception):
    """A backend did not answer (raised only by the planted ``tool-error`` fault)."""


def lookup_customer(email: str) -> dict[str, Any]:
    """The customer record for ``email``. Raises ToolFailure when unknown."""
    cust = CUSTOMERS.get(str(email).lower())
    if cust is None:
        raise ToolFailure(f"no customer with email {email!r}")
    return dict(cust)


def get_order(order_id: str) -> dict[str, Any]:
    """The order ``order_id`` with its items and ``total``. Raises ToolFailure when unknown."""
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolFailure(f"no order {order_id!r}")
    out: dict[str, Any] = orjson.loads(orjson.dumps(order))
    out["total"] = _money(sum(i["price"] * i["qty"] for i in order["items"]))
    return out


def _item(order_id: str, sku: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolFailure(f"no order {order_id!r}")
    items: list[dict[str, Any]] = order["items"]
    for item in items:
        if item["sku"] == sku:
            return item
    raise ToolFailure(f"order {order_id} has no item {sku!r}")


def check_refund_policy(order_id: str, sku: str, reason: str) -> dict[str, Any]:
    """Whether item ``sku`` of ``order_id`` may be refunded for ``reason``, and how much.

    Rule: a *delivered* item reported ``damaged`` is refundable in full (price × qty);
    anything else is not eligible.
    """
    item = _item(order_id, sku)
    status = ORDERS[order_id]["status"]
    if status != "delivered":
        return {
            "order_id": order_id,
            "sku": sku,
            "eligible": False,
            "max_refund": 0.0,
            "rule": f"order is {status}; only delivered items can be refunded",
        }
    if reason != "damaged":
        return {
            "order_id": order_id,
            "sku": sku,
            "eligible": False,
            "max_refund": 0.0,
            "rule": "only items damaged on arrival are refundable",
        }
    return {
        "order_id": order_id,
        "sku": sku,
        "eligible": True,
        "max_refund": _money(item["price"] * item["qty"]),
        "rule": "damaged on arrival: full refund of the item",
    }


def issue_refund(order_id: str, sku: str, amount: float) -> dict[str, Any]:
    """Refund ``amount`` for item ``sku``. Raises ToolFailure above the item's price."""
    item = _item(order_id, sku)
    limit = _money(item["price"] * item["qty"])
    if _money(amount) > limit or amount <= 0:
        raise ToolFailure(f"refund {amount} is outside (0, {limit}] for {sku}")
    return {
        "refund_id": f"R-{order_id}-{sku}",
        "order_id": order_id,
        "sku": sku,
        "amount": _money(amount),
        "status": "issued",
    }


def send_message(customer_id: str, text: str) -> dict[str, Any]:
    """Send ``text`` to the customer; the id is derived from the text (deterministic)."""
    if not any(c["customer_id"] == customer_id for c in CUSTOMERS.values()):
        raise ToolFailure(f"no customer {customer_id!r}")
    digest = hashlib.sha256(f"{customer_id}\n{text}".encode()).hexdigest()[:10]
    return {"delivered": True, "message_id": f"M-{digest}", "customer_id": customer_id}


def cancel_order(order_id: str) -> dict[str, Any]:
    """Cancel ``order_id`` (the wrong tool for a refund)."""
    if order_id not in ORDERS:
        raise ToolFailure(f"no order {order_id!r}")
    return {"order_id": order_id, "status": "cancelled"}


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    "lookup_customer": lookup_customer,
    "get_order": get_order,
    "check_refund_policy": check_refund_policy,
    "issue_refund": issue_refund,
    "send_message": send_message,
    "cancel_order": cancel_order,
}


def _schema(name: str, description: str, props: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "required": sorted(props),
            "properties": {k: {"type": t} for k, t in props.items()},
        },
    }


TOOL_SCHEMAS = [
    _schema("lookup_customer", "Find a customer by email.", {"email": "string"}),
    _schema("get_order", "Fetch an order with its items.", {"order_id": "string"}),
    _schema(
        "check_refund_policy",
        "Check whether an item may be refunded.",
        {"order_id": "string", "sku": "string", "reason": "string"},
    ),
    _schema("issue_refund", "Refund an item.", {"order_id": "string", "sku": "string", "amount": "number"}),
    _schema("send_message", "Message the customer.", {"customer_id": "string", "text": "string"}),
    _schema("cancel_order", "Cancel an order.", {"order_id": "string"}),
]


def live_tool(name: str, arguments: Any) -> ToolResult:
    """Execute tool ``name`` for real; failures become ``error`` results (never raises)."""
    fn = TOOLS.get(name)
    if fn is None:
        return ToolResult(error=ErrorInfo(type="UnknownTool", message=f"no tool named {name!r}"))
    return run_tool_function(fn, arguments)


# ====================================================================== the scripted model


def _tool_text(result: ToolResult) -> str:
    """How a tool result enters the transcript (the model reads it back)."""
    if result.error is not None:
        return f"ERROR {result.error.type}: {result.error.message}"
    if isinstance(result.content, str):
        return result.content
    return orjson.dumps(result.content, option=orjson.OPT_SORT_KEYS).decode()


def _read_transcript(messages: list[ChatMessage]) -> tuple[str, dict[str, Any], list[str]]:
    """``(user text, {tool: last parsed result or {"error": text}}, tool order)``."""
    user = next((m.text for m in messages if m.role == "user"), "")
    results: dict[str, Any] = {}
    order: list[str] = []
    for m in messages:
        if m.role != "tool":
            continue
        name = m.name or "?"
        text = m.text
        if text.startswith("ERROR"):
            results[name] = {"error": text}
        else:
            try:
                results[name] = orjson.loads(text)
            except orjson.JSONDecodeError:
                results[name] = {"text": text}
        order.append(name)
    return user, results, order


def _decide(messages: list[ChatMessage]) -> tuple[str | None, dict[str, Any] | None, str]:
    """The next call ``(tool, arguments, text)``; ``tool`` None means a final answer."""
    user, res, _ = _read_transcript(messages)
    low = user.lower()
    failed = [n for n, r in res.items() if isinstance(r, dict) and "error" in r]
    if failed:
        return (
            None,
            None,
            (
                f"I'm sorry, I could not complete your request: {failed[0]} failed "
                f"({res[failed[0]]['error']}). I have escalated it to a human agent."
            ),
        )
    if "cancel_order" in res:
        return None, None, f"Your order {res['cancel_order'].get('order_id')} has been cancelled."
    email = re.search(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", user)
    order_id = re.search(r"\b[A-Z]\d{4}\b", user)
    if email is None or order_id is None:
        return None, None, "Could you give me your email address and order number?"
    if "lookup_customer" not in res:
        return "lookup_customer", {"email": email.group(0)}, ""
    customer = res["lookup_customer"]
    if "get_order" not in res:
        return "get_order", {"order_id": order_id.group(0)}, ""
    order = res["get_order"]
    if order.get("customer_id") != customer.get("customer_id"):
        return None, None, (f"I'm sorry, order {order.get('order_id')} is not on your account, so I cannot refund it.")
    item = next((i for i in order.get("items", []) if str(i.get("name", "")).lower() in low), None)
    if item is None:
        return None, None, "Which item of the order is the problem?"
    if "check_refund_policy" not in res:
        reason = "damaged" if any(w in low for w in _DAMAGE_WORDS) else "other"
        return "check_refund_policy", {"order_id": order["order_id"], "sku": item["sku"], "reason": reason}, ""
    policy = res["check_refund_policy"]
    if not policy.get("eligible"):
        return None, None, f"I'm sorry, your {item['name']} is not eligible for a refund: {policy.get('rule')}."
    if "issue_refund" not in res:
        return (
            "issue_refund",
            {"order_id": order["order_id"], "sku": item["sku"], "amount": policy.get("max_refund")},
            "",
        )
    refund = res["issue_refund"]
    if refund.get("status") != "issued":
        return None, None, f"The refund for your {item['name']} could not be issued ({refund.get('status')})."
    note = (
        f"Refund {refund.get('refund_id')} of {refund.get('amount'):.2f} for your "
        f"{item['name']} (order {order['order_id']}) has been issued."
    )
    if "send_message" not in res:
        return "send_message", {"customer_id": customer["customer_id"], "text": note}, ""
    if not res["send_message"].get("delivered"):
        return None, None, f"{note} I could not send you a confirmation message."
    return None, None, f"{note} A confirmation was sent to you."


def scripted_model(request: ModelRequest) -> ModelResponse:
    """The agent's deterministic "model": the next call decided from the transcript.

    One tool call per response, id ``call_<k>`` where k is the number of assistant
    messages already in the transcript; usage is characters / 4 (a fixed estimate).
    """
    tool, args, text = _decide(request.messages)
    turn = sum(1 for m in request.messages if m.role == "assistant")
    in_tokens = sum(len(m.text) for m in request.messages) // 4 + 1
    if tool is None:
        msg = ChatMessage(role="assistant", content=text)
        finish = "stop"
    else:
        msg = ChatMessage(
            role="assistant", content="", tool_calls=[ToolCall(id=f"call_{turn}", name=tool, arguments=args or {})]
        )
        finish = "tool_calls"
    out_tokens = len(orjson.dumps(msg.to_json_obj())) // 4 + 1
    return ModelResponse(
        message=msg, finish_reason=finish, usage=Usage(input_tokens=in_tokens, output_tokens=out_tokens)
    )


# ====================================================================== the agent loop


def _task(task: Any) -> dict[str, Any]:
    if task is None:
        return dict(TASKS[DEFAULT_TASK])
    if isinstance(task, str):
        if task not in TASKS:
            raise SampleAgentError(f"unknown task {task!r} (known: {', '.join(sorted(TASKS))})")
        return dict(TASKS[task])
    if isinstance(task, dict) and isinstance(task.get("message"), str):
        return dict(task)
    raise SampleAgentError(f"a task is a task id or an object with a 'message' string, not {task!r}")


def run_agent(runtime: Any, task: Any = None, *, max_turns: int = MAX_TURNS) -> dict[str, Any]:
    """Run the agent loop against ``runtime`` (an :class:`~core.replay.boundary.AgentRuntime`).

    ``task`` is a task id of :data:`TASKS`, a task object (``message`` required), or
    ``None`` (the default task). Returns the final output: ``reply`` (text), ``refund``
    (the issued refund or ``None``), ``cancelled`` (bool), ``confirmation_sent`` (bool),
    ``turns`` (model calls made), ``stopped`` (``final`` | ``max_turns``).

    Raises:
        PolicyDenied, ReplayMismatch, ...: whatever the runtime raises propagates.
    """
    t = _task(task)
    messages = [ChatMessage(role="system", content=SYSTEM_PROMPT), ChatMessage(role="user", content=t["message"])]
    refund: dict[str, Any] | None = None
    cancelled = False
    confirmed = False
    for turn in range(max_turns):
        request = ModelRequest(messages=list(messages), tools=TOOL_SCHEMAS, options=dict(OPTIONS))
        response = runtime.call_model(MODEL_NAME, request)
        msg = response.message
        messages.append(msg)
        if not msg.tool_calls:
            return {
                "reply": msg.text,
                "refund": refund,
                "cancelled": cancelled,
                "confirmation_sent": confirmed,
                "turns": turn + 1,
                "stopped": "final",
            }
        for call in msg.tool_calls:
            result = runtime.call_tool(call.name, call.arguments, call.id)
            ok = result.error is None and isinstance(result.content, dict)
            if ok and call.name == "issue_refund" and result.content.get("status") == "issued":
                refund = dict(result.content)
            if ok and call.name == "cancel_order" and result.content.get("status") == "cancelled":
                cancelled = True
            if ok and call.name == "send_message" and result.content.get("delivered"):
                confirmed = True
            messages.append(ChatMessage(role="tool", content=_tool_text(result), tool_call_id=call.id, name=call.name))
    return {
        "reply": "",
        "refund": refund,
        "cancelled": cancelled,
        "confirmation_sent": confirmed,
        "turns": max_turns,
        "stopped": "max_turns",
    }


def expected_resolution(task: Any) -> dict[str, Any]:
    """Ground truth from the store: ``{"refund": {order_id, sku, amount} | None}``."""
    t = _task(task)
    order = ORDERS.get(t.get("order_id", ""))
    low = t["message"].lower()
    if order is None:
        return {"refund": None}
    item = next((i for i in order["items"] if i["name"] in low), None)
    damaged = any(w in low for w in _DAMAGE_WORDS)
    if item is None or order["status"] != "delivered" or not damaged:
        return {"refund": None}
    return {
        "refund": {"order_id": order["order_id"], "sku": item["sku"], "amount": _money(item["price"] * item["qty"])}
    }


def evaluate(task: Any, output: Any) -> tuple[str, str]:
    """Judge a final output: ``("success" | "failure", reason)``.

    Success: the run answered (not cut at max turns), cancelled nothing, and either issued
    exactly the refund the store's policy allows (order, sku, amount) and confirmed it to
    the customer, or — when no refund is due — issued none.
    """
    if not isinstance(output, dict):
        return "failure", "the run produced no output"
    if output.get("stopped") != "final":
        return "failure", f"the run stopped without an answer ({output.get('stopped')})"
    if output.get("cancelled"):
        return "failure", "the order was cancelled instead of refunded"
    want = expected_resolution(task)["refund"]
    got = output.get("refund")
    if want is None:
        if got is not None:
            return "failure", f"refund {got.get('refund_id')} issued although none is due"
        return "success", "no refund due and none issued"
    if got is None:
        return "failure", f"no refund issued; {want['amount']:.2f} for {want['sku']} was due"
    got_key = (got.get("order_id"), got.get("sku"), _money(got.get("amount", 0)))
    if got_key != (want["order_id"], want["sku"], want["amount"]):
        return "failure", f"wrong refund {got_key}; expected {tuple(want.values())}"
    if not output.get("confirmation_sent"):
        return "failure", "refund issued but the customer was not told"
    return "success", f"refunded {want['amount']:.2f} for {want['sku']} and confirmed"


# ====================================================================== executor


class SampleAgentExecutor:
    """The sample agent as an :class:`~core.replay.boundary.Executor`.

    ``run(runtime, task)`` runs :func:`run_agent`; ``live_model`` answers with
    :func:`scripted_model`; ``live_tool`` executes the store's tools. All deterministic.
    """

    name = AGENT_NAME
    model_name = MODEL_NAME

    def run(self, runtime: Any, task: Any) -> Any:
        """Run the agent loop on ``task`` against ``runtime``; return its final output."""
        return run_agent(runtime, task)

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Answer a model call with the scripted model (``model`` is not consulted)."""
        req = request if isinstance(request, ModelRequest) else ModelRequest.model_validate(request)
        return scripted_model(req)

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        """Execute tool ``name`` on the store (failures are ``error`` results)."""
        return live_tool(name, arguments)

    def evaluate(self, task: Any, output: Any) -> tuple[str, str]:
        """:func:`evaluate` (``("success" | "failure", reason)``)."""
        return evaluate(task, output)


def make_executor() -> SampleAgentExecutor:
    """Entry point ``core.sample_agent:make_executor`` (takes no arguments)."""
    return SampleAgentExecutor()


# ====================================================================== faults


@dataclass
class Fault:
    """A planted fault: ``kind`` ∈ :data:`FAULT_KINDS`, at step ``step`` (0-based model call).

    Raises:
        SampleAgentError: unknown kind or negative step.
    """

    kind: str
    step: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise SampleAgentError(f"unknown fault kind {self.kind!r} (known: {', '.join(FAULT_KINDS)})")
        if self.step is None:
            self.step = DEFAULT_FAULT_STEPS[self.kind]
        if self.step < 0:
            raise SampleAgentError(f"fault step must be >= 0, not {self.step}")


def _corrupt(tool: str, content: Any) -> tuple[Any, str]:
    """Bad data a tool returns under ``corrupted-result``: ``(content, description)``."""
    c = orjson.loads(orjson.dumps(content))
    if tool == "lookup_customer":
        c["customer_id"] = "C-0000"
        return c, "lookup_customer returned a stale customer id C-0000"
    if tool == "get_order":
        c["customer_id"] = "C-2002"
        return c, "get_order returned the order under another customer's id (C-2002)"
    if tool == "check_refund_policy":
        c["eligible"], c["max_refund"] = False, 0.0
        c["rule"] = "outside the 30-day return window"
        return c, "check_refund_policy wrongly reported the item as outside the return window"
    if tool == "issue_refund":
        c["status"] = "pending_review"
        return c, "issue_refund reported a refund stuck in pending_review"
    if tool == "send_message":
        c["delivered"] = False
        return c, "send_message reported the confirmation as undelivered"
    c = {"corrupted": True}
    return c, f"{tool} returned garbage"


class _FaultPlanter:
    """Wraps the live model and tools of one recorded run to plant one fault."""

    def __init__(self, fault: Fault | None) -> None:
        self.fault = fault
        self.model_calls = 0
        self.tool_calls = 0
        self.applied: dict[str, Any] | None = None  # {"model_index"|"tool_index", tool, description}

    @property
    def step(self) -> int:
        return self.model_calls - 1

    def model(self, request: ModelRequest) -> ModelResponse:
        response = scripted_model(request)
        self.model_calls += 1
        f = self.fault
        if f is not None and f.kind == "wrong-tool" and self.step == f.step and self.applied is None:
            order_id = re.search(r"\b[A-Z]\d{4}\b", next((m.text for m in request.messages if m.role == "user"), ""))
            call_id = f"call_{sum(1 for m in request.messages if m.role == 'assistant')}"
            meant = response.message.tool_calls[0].name if response.message.tool_calls else "a final answer"
            wrong = ToolCall(
                id=call_id, name="cancel_order", arguments={"order_id": order_id.group(0) if order_id else "?"}
            )
            response = ModelResponse(
                message=ChatMessage(role="assistant", content="", tool_calls=[wrong]),
                finish_reason="tool_calls",
                usage=response.usage,
            )
            self.applied = {
                "model_index": self.model_calls - 1,
                "tool": "cancel_order",
                "description": f"the model called cancel_order where {meant} was due",
            }
        return response

    def tool(self, name: str) -> Any:
        fn = TOOLS[name]

        def wrapped(**arguments: Any) -> Any:
            index = self.tool_calls
            self.tool_calls += 1
            f = self.fault
            hit_kind = f.kind if f is not None and self.step == f.step and self.applied is None else None
            if hit_kind == "tool-error":
                self.applied = {
                    "tool_index": index,
                    "tool": name,
                    "description": f"{name} failed: its backend timed out",
                }
                raise ServiceUnavailable(f"{name} backend timed out after 30s")
            out = fn(**arguments)
            if hit_kind == "corrupted-result":
                out, desc = _corrupt(name, out)
                self.applied = {"tool_index": index, "tool": name, "description": desc}
            return out

        return wrapped


# ====================================================================== recording and replaying


@dataclass
class RecordedRun:
    """Result of :func:`record_run`: the session (its ``recording`` is ready to save),
    the harness (spans in ``harness.tracer.spans``), the output and the outcome."""

    session: ReplaySession
    harness: Harness
    output: dict[str, Any] | None
    outcome: str
    reason: str

    @property
    def recording(self) -> Recording:
        return self.session.recording


@dataclass
class ReplayedRun:
    """Result of :func:`replay_run`: the session (``stats``, ``events``), the harness, the
    output, and ``live_calls`` — how many times a live model or tool actually ran."""

    session: ReplaySession
    harness: Harness
    output: dict[str, Any] | None
    live_calls: dict[str, int] = field(default_factory=dict)


def _approver(harness_ref: list[Harness], task: dict[str, Any]) -> Any:
    """Supervisor approval: refunds above the threshold and cancellations pause on an
    interrupt; the supervisor approves unless the task says ``"supervisor": "deny"``."""

    def approve(inv: ToolInvocation) -> bool:
        args = inv.arguments if isinstance(inv.arguments, dict) else {}
        needs = (
            inv.tool == "issue_refund" and float(args.get("amount") or 0) > APPROVAL_THRESHOLD
        ) or inv.tool == "cancel_order"
        if not needs:
            return True
        harness_ref[0].interrupt(
            {
                "type": "approval",
                "tool": inv.tool,
                "tool_call_id": inv.tool_call_id,
                "arguments": inv.redacted_arguments,
                "question": f"Supervisor approval needed for {inv.tool}",
            }
        )
        return bool(task.get("supervisor", "approve") != "deny")

    return approve


def _harness(session: ReplaySession, task: dict[str, Any], tools: dict[str, Any], inner: Any) -> Harness:
    ref: list[Harness] = []
    harness = Harness(
        session,
        tools,
        models=[ReplayChatModel(session, inner, MODEL_NAME)],
        approve=_approver(ref, task),
        max_tool_calls=12,
        run_id=f"run-{task.get('task_id', 'task')}",
    )
    ref.append(harness)
    return harness


def _start(harness: Harness) -> None:
    harness.mount_plugin("support-tools", {"tools": sorted(TOOLS)})
    harness.publish_generation(
        "gen-1",
        {
            "plugins": ["support-tools"],
            "tools": sorted(TOOLS),
            "capabilities": [f"MODEL:{MODEL_NAME}", "APPROVAL"],
            "agent": AGENT_NAME,
            "executor": EXECUTOR_SPEC,
        },
    )


def _stop(harness: Harness) -> None:
    harness.retire_generation()
    harness.unmount_plugin("support-tools")
    harness.shutdown()


def record_run(
    task: Any = None,
    fault: Fault | None = None,
    *,
    redactor: SecretRedactor | None = None,
    clock: Any = None,
    now: Any = None,
) -> RecordedRun:
    """Run the agent live in record mode, planting ``fault`` if given.

    The recording carries snapshot and lifecycle records (plugin mount, generation
    publish/draining/retired, unmount, shutdown), an interrupt for each supervisor
    approval, and ``metadata``: ``agent``, ``executor`` (:data:`EXECUTOR_SPEC`),
    ``task``, ``model``, ``outcome`` / ``outcome_reason`` (:func:`evaluate`),
    ``final_output`` and, when a fault was planted, ``fault`` {seq, kind, step, tool,
    description}.

    Raises:
        SampleAgentError: unknown task, or the fault's step is never reached.
    """
    t = _task(task)
    planter = _FaultPlanter(fault)
    session = ReplaySession(
        ReplayMode.RECORD,
        metadata={
            "agent": AGENT_NAME,
            "executor": EXECUTOR_SPEC,
            "task": t,
            "model": MODEL_NAME,
            "dataset": "sample-agent",
        },
        redactor=redactor,
        clock=clock,
        now=now,
    )
    harness = _harness(session, t, {n: planter.tool(n) for n in TOOLS}, planter.model)
    _start(harness)
    output: dict[str, Any] | None = None
    try:
        output = run_agent(harness, t)
        outcome, reason = evaluate(t, output)
    except PolicyDenied as exc:
        outcome, reason = "failure", str(exc)
    _stop(harness)
    if fault is not None:
        if planter.applied is None:
            raise SampleAgentError(
                f"fault {fault.kind} at step {fault.step} was never reached: the run made "
                f"{planter.model_calls} model call(s)"
                + (" and the step requested no tool call" if fault.kind != "wrong-tool" else "")
            )
        if "model_index" in planter.applied:
            model_recs = [r for r in session.recording.records if isinstance(r, ModelRecord)]
            seq = model_recs[planter.applied["model_index"]].seq
        else:
            tool_recs = [r for r in session.recording.records if isinstance(r, ToolRecord)]
            seq = tool_recs[planter.applied["tool_index"]].seq
        session.metadata["fault"] = {
            "seq": seq,
            "kind": fault.kind,
            "step": fault.step,
            "tool": planter.applied["tool"],
            "description": planter.applied["description"],
        }
    session.metadata["outcome"] = outcome
    session.metadata["outcome_reason"] = reason
    session.metadata["final_output"] = output
    return RecordedRun(session, harness, output, outcome, reason)


def replay_run(
    source: str | Path | Recording,
    *,
    fallback: ReplayFallback | str = ReplayFallback.ERROR,
    task: Any = None,
) -> ReplayedRun:
    """Replay a sample-agent recording: the agent runs again, every call answered from
    the recording. The live model and tools are wired (counted in ``live_calls``) so a
    ``LIVE`` fallback can use them; with ``ERROR`` they never run.

    ``task`` defaults to the recording's ``metadata.task``.

    Raises:
        FormatError: ``source`` is not a valid recording.
        ReplayMismatch: a call has no recorded answer and the fallback is ``ERROR``.
    """
    if isinstance(source, Recording):
        session = ReplaySession.from_recording(source, ReplayMode.REPLAY, fallback)
    else:
        session = ReplaySession.load(source, ReplayMode.REPLAY, fallback)
    t = _task(task if task is not None else session.metadata.get("task"))
    counts = {"model": 0, "tool": 0}

    def counted_model(request: ModelRequest) -> ModelResponse:
        counts["model"] += 1
        return scripted_model(request)

    def counted_tool(name: str) -> Any:
        def fn(**arguments: Any) -> Any:
            counts["tool"] += 1
            return TOOLS[name](**arguments)

        return fn

    harness = _harness(session, t, {n: counted_tool(n) for n in TOOLS}, counted_model)
    _start(harness)
    try:
        output = run_agent(harness, t)
    finally:
        _stop(harness)
    return ReplayedRun(session, harness, output, counts)


SAMPLE_FILES = {
    None: "sample-agent-success.json",
    "corrupted-result": "sample-agent-fault-corrupted-result.json",
    "tool-error": "sample-agent-fault-tool-error.json",
    "wrong-tool": "sample-agent-fault-wrong-tool.json",
}


def write_samples(folder: str | Path) -> list[Path]:
    """Record the sample set into ``folder``: one clean run and one per fault kind (at
    :data:`DEFAULT_FAULT_STEPS`). Returns the paths written."""
    out = []
    for kind, name in SAMPLE_FILES.items():
        run = record_run(DEFAULT_TASK, Fault(kind) if kind else None)
        path = Path(folder) / name
        run.session.save(path, indent=True)
        out.append(path)
    return out


# ====================================================================== command line


def _parser() -> argparse.ArgumentParser:
    """The ``python -m core.examples.sample_agent`` command line (argparse: core never imports typer)."""
    parser = argparse.ArgumentParser(
        prog="python -m core.examples.sample_agent",
        description="The deterministic sample support agent: record and replay it.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    record = sub.add_parser("record", help="Record one run (optionally with a planted fault).")
    record.add_argument("-o", "--output", type=Path, required=True, help="Recording file to write.")
    record.add_argument("--fault", help=f"Plant a fault: {', '.join(FAULT_KINDS)}.")
    record.add_argument("--step", type=int, help="Step (0-based model call) of the fault.")
    record.add_argument("--task", default=DEFAULT_TASK, help=f"Task id: {', '.join(sorted(TASKS))}.")
    samples = sub.add_parser("samples", help="Write the sample recordings (one success, one per fault kind).")
    samples.add_argument("folder", nargs="?", type=Path, default=Path("sample_recordings"))
    replay = sub.add_parser(
        "replay", help="Replay a recording of the sample agent with no live calls; print the result."
    )
    replay.add_argument("recording", type=Path)
    return parser


def _command(args: argparse.Namespace) -> None:
    if args.command == "record":
        if args.step is not None and args.fault is None:
            raise SampleAgentError("--step needs --fault")
        run = record_run(args.task, Fault(args.fault, args.step) if args.fault else None)
        run.session.save(args.output, indent=True)
        print(f"{args.output}: {run.outcome} ({run.reason})")
    elif args.command == "samples":
        for path in write_samples(args.folder):
            print(str(path))
    else:
        replayed = replay_run(args.recording)
        outcome, reason = evaluate(replayed.session.metadata.get("task"), replayed.output)
        print(
            orjson.dumps(
                {
                    "outcome": outcome,
                    "reason": reason,
                    "replayed": replayed.session.stats.replayed,
                    "live_calls": replayed.live_calls,
                    "output": replayed.output,
                },
                option=orjson.OPT_INDENT_2,
            ).decode()
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m core.examples.sample_agent``; returns the exit code (2 on bad input, one line)."""
    import sys

    try:
        _command(_parser().parse_args(argv))
    except InspectorError as exc:
        print(f"sample-agent: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
