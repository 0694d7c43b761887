"""A run's final output: one rule, used by the audit, the diff, the metrics and knockout.

What a run *produced* depends on the agent: a chat agent's answer is its last response,
SWE-agent submits a patch with its ``submit`` command, mini-swe-agent ends on a command
that echoes its submit marker, OpenHands calls ``finish``. Each importer declares its
format's rule in the recording's metadata (``metadata.final_output_rule``, below; the
replay engine copies it into the replay events), so every consumer asks one function —
:func:`find_final_output` — and a base and its replays are judged alike.

**A declared rule** is ``{"format": NAME, "describe": TEXT, "takes": [TAKE, ...]}``; each
``TAKE`` names a ``tool``, optionally a ``command`` (a regular expression the call's
``arguments.command`` must match), and what to ``take`` from the *last* such call of the
run:

* ``result`` — its result content (content parts as their text);
* ``argument`` — its argument ``field``, when present and not empty;
* ``response`` — the text of the model response that asked for the call (by
  ``tool_call_id``, else the model call just before it: a text action).

or names an ``interrupt`` (an object of fields its value must have, e.g.
``{"action": "finish"}``) and takes its value's ``field`` (``take: "field"``) — an agent
that finished in plain text; the final call is then the model call before it.

The first take that finds a value gives the final output, and the call it names is the
*final call*. When none does, the run has no final output (it never submitted): nothing
else stands in — not the last response, not ``metadata.final_output``.

**Without a rule** (a chat agent, a harness of our own): ``metadata.final_output`` when
the harness stated it (``source="auto"``); else, when only tool records without a
``tool_call_id`` follow the last model call (text actions: the next agent's turn in a
multi-agent log), the last one's result; else the text of the last model response, when
that call succeeded and asked for no tool; else none.

Benchmark metadata is never the run's output (Who&When's ``ground_truth`` is the
*expected* answer).

**Invalid Unicode** in the output is given as a viewer shows it: every
``{"$invalid_unicode": TEXT, …}`` tag in the value (and every string holding such a
tag's JSON text, as some importers store message content) is replaced by ``TEXT``,
which has U+FFFD in each bad place (:func:`core.analysis.placeholders.shown_value`), so
no consumer — the audit, its ``--json``, the diff — ever shows the internal tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..record.recording import ModelRecord, Recording, ToolRecord
from .placeholders import shown_value

__all__ = ["FinalOutput", "final_model_record", "final_output", "find_final_output", "final_output_rule"]

_TAKES = ("result", "argument", "response")


@dataclass(frozen=True)
class FinalOutput:
    """What :func:`find_final_output` found: ``value`` (``None``: no final output), the
    ``seq`` of the final call (the record that produced it; ``None`` when there is none,
    or when it came from ``metadata.final_output``), ``model_seq`` (the model call behind
    it: the final response, or the response that led to the final tool call), ``how`` (the
    rule, in words) and ``missing`` (why there is none; ``""`` when there is one)."""

    value: Any
    seq: int | None
    model_seq: int | None
    how: str
    missing: str = ""


def final_model_record(rec: Recording) -> ModelRecord | None:
    """The last model record, when it succeeded and its response requests no tool call;
    else ``None`` (the run ended mid-loop, on an error, or never called a model)."""
    for r in reversed(rec.records):
        if isinstance(r, ModelRecord):
            if r.error is None and r.response is not None and not r.response.message.tool_calls:
                return r
            return None
    return None


def final_output_rule(rec: Recording) -> dict[str, Any] | None:
    """The declared rule of ``rec`` (``metadata.final_output_rule``) when it is well
    formed (an object with a non-empty ``takes`` list of objects naming a ``tool`` and a
    known ``take``); else ``None`` (the default rule applies)."""
    rule = rec.metadata.get("final_output_rule") if isinstance(rec.metadata, dict) else None
    if not isinstance(rule, dict):
        return None
    takes = rule.get("takes")
    if not isinstance(takes, list) or not takes:
        return None
    for t in takes:
        if not isinstance(t, dict):
            return None
        if isinstance(t.get("interrupt"), dict):
            if t.get("take") != "field" or not isinstance(t.get("field"), str):
                return None
            continue
        if not isinstance(t.get("tool"), str) or t.get("take") not in _TAKES:
            return None
        if t.get("take") == "argument" and not isinstance(t.get("field"), str):
            return None
        if "command" in t and not isinstance(t["command"], str):
            return None
        if "command" in t:
            try:
                re.compile(t["command"])
            except re.error:
                return None
    return rule


def _content_text(content: Any) -> Any:
    """A result's content as the output: text parts joined when it is a list of them."""
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "\n".join(str(shown_value(p.get("text", ""))) for p in content)
    return content


def _response_value(m: Any) -> Any:
    if isinstance(m.content, list):
        return m.text or m.content
    return m.content


def _issuer(rec: Recording, tool: ToolRecord) -> ModelRecord | None:
    """The model record whose response asked for ``tool``: the latest one listing its
    ``tool_call_id``, else (a text action) the model call just before it."""
    before: ModelRecord | None = None
    listed: ModelRecord | None = None
    for r in rec.records:
        if r.seq >= tool.seq:
            break
        if isinstance(r, ModelRecord):
            before = r
            if tool.tool_call_id and r.response is not None:
                if any(tc.id == tool.tool_call_id for tc in r.response.message.tool_calls or ()):
                    listed = r
    return listed or before


def _by_rule(rec: Recording, rule: dict[str, Any]) -> FinalOutput:
    how = str(rule.get("describe") or "the format's declared rule")
    tools = [r for r in rec.records if isinstance(r, ToolRecord)]
    names = []
    for take in rule["takes"]:
        if "tool" not in take:
            found = _from_interrupt(rec, take)
            if found is not None:
                return FinalOutput(found[0], found[1], found[1], how)
            names.append(" · ".join(f"{k}={v}" for k, v in take["interrupt"].items()) + " interrupt")
            continue
        name = take["tool"]
        names.append(f"`{name}`")
        pattern = re.compile(take["command"]) if isinstance(take.get("command"), str) else None
        last = None
        for r in reversed(tools):
            if r.tool != name:
                continue
            if pattern is not None:
                cmd = r.arguments.get("command") if isinstance(r.arguments, dict) else None
                if not isinstance(cmd, str) or not pattern.search(cmd):
                    continue
            last = r
            break
        if last is None:
            continue
        issuer = _issuer(rec, last)
        kind = take["take"]
        if kind == "result":
            if last.result.content is None and last.result.error is not None:
                continue
            value = _content_text(last.result.content)
        elif kind == "argument":
            args = last.arguments if isinstance(last.arguments, dict) else {}
            value = args.get(take["field"])
            if value in (None, "", {}, []):
                continue
        else:
            if issuer is None or issuer.response is None:
                continue
            value = _response_value(issuer.response.message)
            if value in (None, ""):
                continue
        return FinalOutput(value, last.seq, issuer.seq if issuer is not None else None, how)
    called = " or ".join(dict.fromkeys(names))
    return FinalOutput(None, None, None, how, f"it never called {called}; its final output is {how}")


def _from_interrupt(rec: Recording, take: dict[str, Any]) -> tuple[Any, int | None] | None:
    """``(value, seq of the model call before it)`` of the last interrupt whose value has
    every field of ``take["interrupt"]``, taking its ``field``; ``None`` when none has it."""
    want = take["interrupt"]
    for k in range(len(rec.records) - 1, -1, -1):
        r = rec.records[k]
        if r.kind != "interrupt" or not isinstance(r.value, dict):
            continue
        if all(r.value.get(f) == v for f, v in want.items()):
            value = r.value.get(take["field"])
            if value in (None, ""):
                return None
            model = next((m.seq for m in reversed(rec.records[:k]) if isinstance(m, ModelRecord)), None)
            return value, model
    return None


def _trailing_actions(rec: Recording, final: ModelRecord | None) -> list[ToolRecord]:
    """The tool records after ``final`` when all calls after it are tool records without
    a ``tool_call_id`` (text actions); empty otherwise."""
    if final is None:
        return []
    after = [r for r in rec.records if r.seq > final.seq and isinstance(r, (ToolRecord, ModelRecord))]
    if after and all(isinstance(r, ToolRecord) and not r.tool_call_id for r in after):
        return [r for r in after if isinstance(r, ToolRecord)]
    return []


def find_final_output(rec: Recording, *, source: str = "auto") -> FinalOutput:
    """The run's final output and the call that produced it (rules: module docstring).

    ``source``: ``auto`` (default) — the declared rule; else ``metadata.final_output``
    when present; else the records. ``records`` — the declared rule, else the records
    (``metadata.final_output`` ignored). ``metadata`` — ``metadata.final_output`` only.
    Invalid Unicode in the value is given as its text with U+FFFD (module docstring).
    Raises ``ValueError`` for another ``source``.
    """
    if source not in ("auto", "records", "metadata"):
        raise ValueError(f"source must be auto, records or metadata, not {source!r}")
    found = _find(rec, source)
    value = shown_value(found.value)
    return found if value is found.value else replace(found, value=value)


def _find(rec: Recording, source: str) -> FinalOutput:
    rule = final_output_rule(rec)
    if rule is not None and source != "metadata":
        return _by_rule(rec, rule)
    if source in ("auto", "metadata") and isinstance(rec.metadata, dict) and "final_output" in rec.metadata:
        final = final_model_record(rec)
        return FinalOutput(
            rec.metadata["final_output"], None, final.seq if final else None, "the harness's metadata.final_output"
        )
    if source == "metadata":
        return FinalOutput(None, None, None, "the harness's metadata.final_output", "no metadata.final_output")
    final = final_model_record(rec)
    trailing = _trailing_actions(rec, final)
    if trailing and final is not None:
        last = trailing[-1]
        value = last.result.content if last.result.content is not None else _error_text(last)
        return FinalOutput(value, last.seq, final.seq, "the result of the last text action after the last response")
    if final is None or final.response is None:
        return FinalOutput(None, None, None, "the last model response", "it ended on an error or a tool request")
    return FinalOutput(_response_value(final.response.message), final.seq, final.seq, "the last model response")


def _error_text(r: ToolRecord) -> str:
    return r.result.error.message if r.result.error is not None else ""


def final_output(rec: Recording, *, source: str = "auto") -> Any:
    """The value of :func:`find_final_output` (``None`` when there is none).

    ``source`` as there; ``transcript`` is accepted as the older name of ``records``.
    """
    return find_final_output(rec, source="records" if source == "transcript" else source).value
