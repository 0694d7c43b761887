"""Dry run (SPEC "Replay engine", dry run): predict how a branch's calls will be answered, running nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..record.canonical import args_hash as compute_args_hash
from ..record.recording import Recording
from .branch import (
    Branch,
    MessagesIntervention,
    ModelResponseIntervention,
    OptionsIntervention,
    ToolPolicyIntervention,
    ToolResultIntervention,
    validate_branch,
)
from .fixtures import FixtureGateway
from .user_turns import UserTurns

__all__ = ["CHARS_PER_TOKEN", "Prediction", "estimate_live_cost", "predict"]


@dataclass
class Prediction:
    """One predicted call of a dry run: call ``position``, ``base_seq``, ``kind``,
    ``name``, ``answer`` (``recorded`` | ``intervention`` | ``fixture`` | ``drift`` |
    ``live`` | ``requirement`` | ``fail`` | ``denied`` | ``approval`` | ``user`` |
    ``unknown``) and ``detail``. A ``user`` prediction (kind and name ``user``) is a
    person's turn the base recorded after the branch diverged: the replay would pause on
    a ``user`` requirement there (the user-turn rule)."""

    position: int
    base_seq: int | None
    kind: str
    name: str
    answer: str
    detail: str = ""

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "base_seq": self.base_seq,
            "kind": self.kind,
            "name": self.name,
            "answer": self.answer,
            "detail": self.detail,
        }


def predict(
    base: Recording,
    branch: Branch,
    *,
    fixtures: FixtureGateway | None = None,
    executor_wired: bool = False,
    observed_tools: bool = False,
    answers_only: bool = False,
) -> dict[str, Any]:
    """Dry run (SPEC "Replay engine"): predict, before anything runs, how each call of the
    base from the checkpoint would be answered, as far as it can be known.

    Until the first change the branch re-issues the base's calls (``recorded``); a call
    an intervention targets is answered by it; after a change the next model request
    differs from the base, so its answer comes from a fixture, lenient drift, the
    executor, or a requirement; after that only lenient drift keeps the path known (the
    base's answers stand in), otherwise calls are ``unknown``. With ``observed_tools``
    (the command executor: the agent runs its own tools), a tool call no intervention
    targets is ``live`` — the agent runs it again, side effects included. Once the branch has
    diverged, a person's turn of the base before a model call is ``user`` (the replay
    would pause on a ``user`` requirement: docs/replay.md, the user-turn rule). Returns
    ``{"status": "failed"|"ok", "reason", "predictions": [...], "counts": {...}}``. With
    ``answers_only`` (an executor that only answers calls, the provider executor) a live
    model policy over a recording whose model is ``unknown`` needs ``live_model``, or the
    replay would fail at once.

    Raises:
        BranchError: the branch is invalid against ``base`` (not checked again for a
            :class:`~core.replay.branch.ResolvedBranch` of ``base``).
    """
    if not branch.is_resolved_for(base):  # a ResolvedBranch was validated once, by resolve_branch
        validate_branch(branch, base)
    gw = fixtures or FixtureGateway()
    pol = branch.policy
    calls = [r for r in base.records if r.kind in ("tool", "model")]
    models = [r for r in calls if r.kind == "model"]
    cp_pos = sum(1 for r in calls if r.seq < branch.checkpoint)
    out: list[Prediction] = []
    if pol.wants_live and not executor_wired:
        return {
            "status": "failed",
            "reason": "a live policy with no executor fails at once; nothing would run",
            "predictions": [],
            "counts": {},
        }
    later_models = [r for r in calls[cp_pos:] if r.kind == "model"]
    if answers_only and pol.model == "live" and not pol.live_model and any(r.model == "unknown" for r in later_models):
        return {
            "status": "failed",
            "reason": "the recording does not name its model ('unknown'): set the policy's live_model "
            "(the model to continue with); nothing would run",
            "predictions": [],
            "counts": {},
        }
    tool_ivs = {
        iv.seq: iv for iv in branch.interventions if isinstance(iv, ToolResultIntervention) and iv.seq is not None
    }
    tool_seq = set(tool_ivs)
    tool_names = {iv.tool: iv for iv in branch.interventions if isinstance(iv, ToolResultIntervention) and iv.tool}
    model_steps: dict[int, ModelResponseIntervention] = {}
    for iv in branch.interventions:
        if isinstance(iv, ModelResponseIntervention):
            at = iv.step if iv.step is not None else next(i for i, m in enumerate(models) if m.seq == iv.seq)
            model_steps[at] = iv
    policies = {iv.tool: iv for iv in branch.interventions if isinstance(iv, ToolPolicyIntervention)}
    changes_request = any(isinstance(iv, (MessagesIntervention, OptionsIntervention)) for iv in branch.interventions)
    changes_request = changes_request or pol.temperature is not None
    diverged = False
    step = 0
    turns = UserTurns(base)

    def no_answer(kind: str) -> tuple[str, str]:
        if pol.drift == "lenient":
            return "drift", "the base's answer at the same step stands in (comparability partial)"
        if getattr(pol, kind) == "live":
            return "live", "the executor answers it"
        if pol.require_fixtures:
            return "requirement", f"needs a {kind} fixture: the replay would pause here"
        return "fail", "no answer and require_fixtures is false: the replay would fail here"

    for pos, r in enumerate(calls):
        name = r.model if r.kind == "model" else r.tool
        if pos < cp_pos:
            out.append(Prediction(pos, r.seq, r.kind, name, "recorded", "before the checkpoint"))
            if r.kind == "model":
                step += 1
            continue
        if r.kind == "model":
            turn = turns.before(step) if diverged else None
            if turn is not None and (not executor_wired or turn.interrupts):
                shown = turn.default if len(turn.default) <= 40 else turn.default[:39] + "…"
                out.append(
                    Prediction(
                        pos,
                        turn.base_seq,
                        "user",
                        "user",
                        "user",
                        f"a person's turn after the branch diverged: the replay would pause on a user "
                        f"requirement (recorded answer offered: {shown!r})",
                    )
                )
                break
            if step in model_steps:
                same = r.response is not None and _json(model_steps[step].response) == _json(r.response)
                why = "model_response intervention" + (
                    " (the recorded value: the path stays the base's)" if same else ""
                )
                out.append(Prediction(pos, r.seq, "model", name, "intervention", why))
                diverged = diverged or not same  # the recorded value changes nothing downstream
            elif not diverged and not changes_request:
                if pol.model == "fixture":
                    fx = gw.match("model", name, r.key, branch_id=branch.id)
                    if fx is not None:
                        out.append(Prediction(pos, r.seq, "model", name, "fixture", f"fixture {fx.id}"))
                    else:
                        ans, detail = no_answer("model")
                        out.append(Prediction(pos, r.seq, "model", name, ans, detail))
                        if ans in ("requirement", "fail"):
                            break
                else:
                    out.append(Prediction(pos, r.seq, "model", name, "recorded", ""))
            elif diverged and pol.drift != "lenient" and out and out[-1].answer == "unknown":
                out.append(Prediction(pos, None, "model", name, "unknown", "depends on answers not produced yet"))
            else:
                why = "the request differs from the base (earlier change or request intervention)"
                fx = gw.match("model", name, None, branch_id=branch.id)
                if fx is not None:
                    ans, detail = "fixture", f"model-wide fixture {fx.id}"
                else:
                    ans, detail = no_answer("model")
                out.append(Prediction(pos, r.seq, "model", name, ans, f"{why}; {detail}"))
                changes_request = False
                diverged = ans in ("drift",) and diverged
                if ans not in ("drift",):
                    diverged = True
                    if ans in ("requirement", "fail"):
                        break
                    # the response is new: what follows is unknown
                    out.append(
                        Prediction(pos + 1, None, "?", "?", "unknown", "later calls depend on the new model response")
                    )
                    break
            step += 1
            continue
        pol_iv = policies.get(r.tool)
        if pol_iv is not None:
            out.append(
                Prediction(
                    pos,
                    r.seq,
                    "tool",
                    name,
                    "denied" if pol_iv.action == "deny" else "approval",
                    "tool_policy intervention",
                )
            )
            if pol_iv.action == "deny":
                diverged = True
            continue
        if r.seq in tool_seq or (
            r.tool in tool_names and (tool_names[r.tool].args_hash in (None, compute_args_hash(r.arguments)))
        ):
            iv_t = tool_ivs.get(r.seq) or tool_names[r.tool]
            same = _result_json(iv_t.result) == _result_json(r.result)
            why = "tool_result intervention" + (" (the recorded value: the path stays the base's)" if same else "")
            out.append(Prediction(pos, r.seq, "tool", name, "intervention", why))
            diverged = diverged or not same  # the recorded value changes nothing downstream
            continue
        if observed_tools:
            out.append(
                Prediction(
                    pos,
                    r.seq,
                    "tool",
                    name,
                    "live",
                    "the agent runs it itself (command executor): observed, side effects included",
                )
            )
            continue
        if pol.tool == "fixture":
            fx = gw.match("tool", r.tool, compute_args_hash(r.arguments), branch_id=branch.id)
            if fx is not None:
                out.append(Prediction(pos, r.seq, "tool", name, "fixture", f"fixture {fx.id}"))
            else:
                ans, detail = no_answer("tool")
                out.append(Prediction(pos, r.seq, "tool", name, ans, detail))
            continue
        out.append(
            Prediction(
                pos,
                r.seq,
                "tool",
                name,
                "recorded",
                "the same call as the base" + (" (its answer is recorded)" if diverged else ""),
            )
        )
    counts: dict[str, int] = {}
    for p in out:
        counts[p.answer] = counts.get(p.answer, 0) + 1
    return {"status": "ok", "reason": "", "predictions": [p.to_json_obj() for p in out], "counts": counts}


def _json(value: Any) -> Any:
    """A model response as JSON (what the next request carries of it)."""
    return value.to_json_obj() if value is not None else None


def _result_json(result: Any) -> Any:
    """A tool result as JSON without its ``redacted`` flag (what the next request carries)."""
    obj = result.to_json_obj() if result is not None else None
    if isinstance(obj, dict):
        obj.pop("redacted", None)
    return obj


#: characters per token of the estimate when no usage was recorded (no tokenizer is downloaded)
CHARS_PER_TOKEN = 4


def _chars(request: Any) -> int:
    n = sum(len(m.text) for m in request.messages)
    if request.tools:
        n += len(orjson.dumps(request.tools, default=str))
    return n


def _tokens_of(r: Any) -> tuple[int, int, str]:
    """``(input, output, how)`` of one base model call: its recorded usage, else its
    request's and response's characters / :data:`CHARS_PER_TOKEN`."""
    usage = r.response.usage if r.response is not None else None
    if usage is not None and (usage.input_tokens or usage.output_tokens):
        return usage.input_tokens, usage.output_tokens, "recorded usage"
    out_chars = 0
    if r.response is not None:
        out_chars = len(r.response.message.text)
        for tc in r.response.message.tool_calls or []:  # a tool call's name and arguments are output too
            out_chars += len(tc.name) + len(orjson.dumps(tc.arguments, default=str))
    return (
        -(-_chars(r.request) // CHARS_PER_TOKEN),
        -(-out_chars // CHARS_PER_TOKEN),
        f"characters / {CHARS_PER_TOKEN}",
    )


def estimate_live_cost(
    base: Recording, branch: Branch, result: dict[str, Any], prices: dict[str, dict[str, float]] | None = None
) -> dict[str, Any]:
    """The dry run's cost estimate of the model calls that would go live (answer
    ``live``): per call, the base call at that place's recorded usage, else characters /
    4 — an estimate, said so in ``how`` — and the cost from ``prices`` (the ``metrics
    --prices`` table: per million tokens, ``"*"`` for any model; ``None`` when the model
    has no price or no table is given), priced as the model the call would ask (the
    policy's ``live_model``, else the recorded one). ``rest_of_base``: the base's model
    calls after the last predicted one — what a branch that runs as long as the base
    would add (the dry run cannot know how long it runs); ``user_model``: a note when the
    policy names a user simulator (its calls are not estimated). Returns ``{"calls":
    [...], "total": {...}, "rest_of_base": {...}, "estimate": True[, "user_model": str]}``."""
    by_seq = {r.seq: r for r in base.records if r.kind == "model"}
    models = [r for r in base.records if r.kind == "model"]
    live_model = branch.policy.live_model

    def price(model: str, tin: int, tout: int) -> float | None:
        if prices is None:
            return None
        p = prices.get(model) or prices.get("*")
        if p is None:
            return None
        return (tin * p.get("input", 0.0) + tout * p.get("output", 0.0)) / 1e6

    calls: list[dict[str, Any]] = []
    last_seq = -1
    for p in result.get("predictions", []):
        if p["base_seq"] is not None:
            last_seq = max(last_seq, p["base_seq"])
        if p["kind"] != "model" or p["answer"] != "live":
            continue
        r = by_seq.get(p["base_seq"])
        if r is None:
            continue
        tin, tout, how = _tokens_of(r)
        model = live_model or r.model
        calls.append(
            {
                "position": p["position"],
                "base_seq": r.seq,
                "model": model,
                "input_tokens": tin,
                "output_tokens": tout,
                "how": how,
                "cost": price(model, tin, tout),
            }
        )
    rest = [r for r in models if r.seq > last_seq] if calls else []

    def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
        costs = [c["cost"] for c in rows]
        return {
            "calls": len(rows),
            "input_tokens": sum(c["input_tokens"] for c in rows),
            "output_tokens": sum(c["output_tokens"] for c in rows),
            "cost": sum(costs) if rows and all(c is not None for c in costs) else None,
        }

    rest_rows = []
    for r in rest:
        tin, tout, how = _tokens_of(r)
        model = live_model or r.model
        rest_rows.append({"input_tokens": tin, "output_tokens": tout, "cost": price(model, tin, tout)})
    out = {"calls": calls, "total": total(calls), "rest_of_base": total(rest_rows), "estimate": True}
    if branch.policy.user_model:
        out["user_model"] = (
            f"the user simulator {branch.policy.user_model} is also asked at each of the person's turns "
            "after the divergence: not estimated (how many there will be is not known)"
        )
    return out
