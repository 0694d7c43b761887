"""Audit of an outcome: the lineage of a run's final output (SPEC "Audit").

:func:`audit` answers "which calls produced this answer?" from the recording alone:

1. The **final call** is the call that produced the final output, by the one rule the
   diff, the metrics and knockout use too (:func:`core.analysis.final_output.find_final_output`):
   the format's declared rule (``metadata.final_output_rule``: SWE-agent's ``submit``,
   mini-swe-agent's submit command, OpenHands' ``finish``), else the model call whose
   response is the final answer (the last model call, when it succeeded and requested no
   tool). When only tool records without ``tool_call_id`` follow that call (text actions:
   SWE-agent's ``submit``, the next agent's turn in a Who&When log), they are linked to it
   (``issued``) and the last one is the final call: its result is the final output.
   Benchmark metadata (Who&When ``ground_truth``: the expected answer) is never taken as
   the run's output.
2. **Links.** For every model call, each message of its request is traced to the call
   that produced it: a ``tool`` message by its ``tool_call_id``; any other message,
   whatever its role, to an earlier model response with the same text (``transcript``)
   or to an earlier tool result it equals or contains (``content``) — text-mode agents
   wrap observations in ``user`` messages, multi-agent logs replay agents' outputs as
   ``assistant``/``user`` messages under the agent's name. Content matches are attributed
   by position: the messages of one request are taken from the last back, each to the
   latest earlier tool result no later message of that request claimed, so identical
   results repeated in the transcript count once each; transcript inclusion means same
   text and same tool-call ids. A tool record is also linked to the model call whose response
   *issued* it (its ``tool_call_id`` among that response's ``tool_calls``).
3. **Lineage.** Walking those links back from the final call gives the calls that
   *contributed*; every other call did not, with the reason (its result never reached a
   later request; it reached only calls outside the lineage; its response is not in the
   final transcript; it failed; it came after the final output). A tool without
   ``tool_call_id`` whose result is empty is ``unknown`` ("cannot tell (empty result)"):
   an empty output leaves nothing to match.
4. **Quoted values.** For each contributing tool, the values of its result that appear
   verbatim in the final output (strings of 4+ characters, numbers of 3+ digits) — a
   hint of *how* it was used, not a proof.
5. **Redaction.** Every place where redaction hid content (a ``[REDACTED:KIND]`` marker,
   or the plain ``[REDACTED]`` of older recordings, in
   a call's arguments, result or response, or in the final request's messages, and tool
   results flagged ``redacted``), with whether it lies on the lineage — then the audit
   cannot tell what the hidden content contributed.

**Knockout** (what happens to the outcome when one call is removed or answered
differently) needs a replay with a wired executor. :func:`audit` accepts a
:class:`KnockoutRunner` (:class:`core.effects.knockout.ReplayKnockout` replays through the engine
and an executor; ``audit --executor``); without one ``knockout`` is reported as not
run, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from ..record.nesting import dumps
from ..record.recording import ChatMessage, ModelRecord, Recording, ToolRecord
from ..record.redaction import has_marker
from .final_output import final_model_record, final_output, find_final_output
from .payload_diff import pointer

__all__ = [
    "AuditReport",
    "CallLineage",
    "KnockoutResult",
    "KnockoutRunner",
    "LineageEdge",
    "Redaction",
    "audit",
    "audit_markdown",
]


@dataclass(frozen=True)
class KnockoutResult:
    """What one knockout replay found: the call ``seq``, the replay's ``outcome``,
    whether the final output changed, a free ``detail`` (e.g. a replay id) and
    ``outcome_changed`` (whether the outcome differs from the recorded run's; ``None``
    when the runner does not say or the replay did not finish)."""

    seq: int
    outcome: str
    final_output_changed: bool
    detail: str = ""
    outcome_changed: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "outcome": self.outcome,
            "final_output_changed": self.final_output_changed,
            "detail": self.detail,
            "outcome_changed": self.outcome_changed,
        }


@runtime_checkable
class KnockoutRunner(Protocol):
    """The extension point for knockout analysis: replays ``recording`` with the call at
    ``seq`` knocked out (through the replay engine and a wired executor) and reports."""

    def knockout(self, recording: Recording, seq: int) -> KnockoutResult: ...


@dataclass(frozen=True)
class LineageEdge:
    """``source`` seq flowed into ``target`` seq ``via`` ``tool_call_id`` (a tool result
    read by a model call), ``content`` (same, matched by equal content), ``transcript``
    (a response included in a later request) or ``issued`` (a response that requested
    the tool call)."""

    source: int
    target: int
    via: str

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "via": self.via}


@dataclass(frozen=True)
class Redaction:
    """Content hidden by redaction: record ``seq``, JSON Pointer ``path`` inside the
    record, and whether the record is on the lineage of the final output."""

    seq: int
    path: str
    in_lineage: bool

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "path": self.path, "in_lineage": self.in_lineage}


@dataclass
class CallLineage:
    """One call's part in the final output.

    ``status``: ``final`` (the call that produced it), ``contributed``, ``unused`` or
    ``unknown`` (cannot tell: an empty result of a tool without ``tool_call_id``);
    ``via``: how it flowed (edge kinds out of it toward the lineage); ``reason``: why an
    unused call did not contribute (or why an unknown one cannot be told); ``included_at``: seq of the first model request that
    included its result/response; ``quoted``: values of a tool result found verbatim in
    the final output; ``redacted``: pointers of hidden content; ``knockout``: a
    :class:`KnockoutResult` when a runner was given."""

    seq: int
    kind: str
    name: str
    status: str
    via: list[str] = field(default_factory=list)
    reason: str = ""
    included_at: int | None = None
    quoted: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    knockout: KnockoutResult | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "kind": self.kind,
            "name": self.name,
            "status": self.status,
            "via": self.via,
            "reason": self.reason,
            "included_at": self.included_at,
            "quoted": self.quoted,
            "redacted": self.redacted,
            "knockout": self.knockout.to_json() if self.knockout else None,
        }


@dataclass
class AuditReport:
    """Result of :func:`audit`: ``final_seq`` (``None`` when the run has no final
    output), ``final_output``, one :class:`CallLineage` per tool/model call in order,
    the ``edges``, the ``redactions`` and the ``knockout`` status text (``not run: …``
    without a runner; with one, ``run: …`` and how many knockouts changed the outcome,
    the final output, or could not be replayed); ``final_missing``: why there is no final
    output (``""`` when there is one; not part of :meth:`to_json`)."""

    final_seq: int | None
    final_output: Any
    calls: list[CallLineage]
    edges: list[LineageEdge]
    redactions: list[Redaction]
    knockout: str
    final_missing: str = ""

    def contributed(self) -> list[CallLineage]:
        """Calls with status ``final`` or ``contributed``."""
        return [c for c in self.calls if c.status in ("final", "contributed")]

    def unused(self) -> list[CallLineage]:
        """Calls with status ``unused``."""
        return [c for c in self.calls if c.status == "unused"]

    def unknown(self) -> list[CallLineage]:
        """Calls with status ``unknown``: the recording cannot tell whether they
        contributed (a tool without a ``tool_call_id`` whose result is empty has nothing
        to match in the transcript)."""
        return [c for c in self.calls if c.status == "unknown"]

    def to_json(self) -> dict[str, Any]:
        return {
            "final_seq": self.final_seq,
            "final_output": self.final_output,
            "contributed": [c.seq for c in self.contributed()],
            "unused": [c.seq for c in self.unused()],
            "unknown": [c.seq for c in self.unknown()],
            "calls": [c.to_json() for c in self.calls],
            "edges": [e.to_json() for e in self.edges],
            "redactions": [r.to_json() for r in self.redactions],
            "knockout": self.knockout,
        }


# --------------------------------------------------------------------------- helpers


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return dumps(value, orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return str(value)


def _message_fp(m: ChatMessage) -> tuple[str, tuple[str, ...]]:
    ids = tuple(tc.id or tc.name for tc in (m.tool_calls or ()))
    return (m.text if not isinstance(m.content, list) else _text(m.content), ids)


def _tool_content_text(r: ToolRecord) -> str:
    c = r.result.content
    if r.result.error is not None and c is None:
        return r.result.error.message
    return _text(c)


_MIN_CONTAINED = 8


class _ContainedIndex:
    """Which earlier tool results (8+ characters) a message text contains, latest first.

    Text-mode agents wrap observations in a ``user`` message with decorations around the
    tool's output, so a message is traced to every earlier result it contains. Cost is
    linear: a text seen before is only checked against the results added since
    (``extend``); a new text is scanned once through an index of the results' first
    :data:`_MIN_CONTAINED` characters (one dictionary lookup per character of the text)
    instead of testing every earlier result in turn.
    """

    def __init__(self) -> None:
        self.texts: list[tuple[int, str]] = []  # (seq, result text), in record order
        self._by_prefix: dict[str, list[int]] = {}  # first 8 chars -> indexes into texts
        self._cache: dict[str, tuple[int, list[int]]] = {}  # text -> (texts seen, seqs latest first)

    def add(self, seq: int, text: str) -> None:
        self._by_prefix.setdefault(text[:_MIN_CONTAINED], []).append(len(self.texts))
        self.texts.append((seq, text))

    def contained(self, text: str) -> list[int]:
        hit = self._cache.get(text)
        if hit is not None:
            seen, seqs = hit
            if seen == len(self.texts):
                return seqs
            newer = [s for s, t in reversed(self.texts[seen:]) if t in text]
            seqs = newer + seqs if newer else seqs
        elif len(self.texts) <= 64:
            seqs = [s for s, t in reversed(self.texts) if t in text]
        else:
            found: set[int] = set()
            by_prefix, texts = self._by_prefix, self.texts
            for i in range(len(text) - _MIN_CONTAINED + 1):
                for k in by_prefix.get(text[i : i + _MIN_CONTAINED], ()):
                    if k not in found and text.startswith(texts[k][1], i):
                        found.add(k)
            seqs = [texts[k][0] for k in sorted(found, reverse=True)]
        self._cache[text] = (len(self.texts), seqs)
        return seqs


def _content_candidates(text: str, by_text: dict[str, list[int]], contained: _ContainedIndex) -> list[int]:
    """Every earlier tool record whose result could be ``text``, best first: those whose
    result *is* ``text`` (latest first), then those whose result (8+ characters) is
    contained in ``text`` (latest first)."""
    exact = list(reversed(by_text.get(text, ()))) if text else []
    if not exact:
        return contained.contained(text)
    seen = set(exact)
    return exact + [s for s in contained.contained(text) if s not in seen]


def _walk_redacted(value: Any, path: list[Any], out: list[str]) -> None:
    if isinstance(value, str):
        if has_marker(value):  # [REDACTED:KIND], or the plain [REDACTED] of older recordings
            out.append(pointer(path))
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_redacted(v, path + [k], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _walk_redacted(v, path + [i], out)


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                yield from _leaves(orjson.loads(s))
                return
            except orjson.JSONDecodeError:
                pass
        if len(s) >= 4:
            yield s
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        s = repr(value)
        if len(s.replace(".", "").replace("-", "")) >= 3:
            yield s
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


# --------------------------------------------------------------------------- audit


def audit(rec: Recording, *, knockout: KnockoutRunner | None = None) -> AuditReport:
    """The lineage of ``rec``'s final output (see module docstring).

    ``knockout``: a runner to call once per tool/model call before the final call; its
    results land in :attr:`CallLineage.knockout`. Cost: linear in the size of the model
    requests (every request message is traced once).
    """
    calls = [r for r in rec.records if isinstance(r, (ToolRecord, ModelRecord))]
    found = find_final_output(rec, source="records")
    final = final_model_record(rec)
    by_call_id: dict[tuple[str | None, str], ToolRecord] = {}
    by_call_id_any: dict[str, ToolRecord] = {}
    issuer: dict[str, int] = {}  # tool_call_id -> model seq that requested it
    response_fp: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    tool_by_text: dict[str, list[int]] = {}
    tool_texts = _ContainedIndex()  # tool results seen so far (long enough to search for)
    edges: set[tuple[int, int, str]] = set()
    deps: dict[int, set[int]] = {}
    included_at: dict[int, int] = {}

    for r in calls:
        if isinstance(r, ToolRecord):
            if r.tool_call_id:
                by_call_id[(r.run_id, r.tool_call_id)] = r
                by_call_id_any.setdefault(r.tool_call_id, r)
                src = issuer.get(r.tool_call_id)
                if src is not None and src < r.seq:
                    edges.add((src, r.seq, "issued"))
                    deps.setdefault(r.seq, set()).add(src)
            text = _tool_content_text(r)
            tool_by_text.setdefault(text, []).append(r.seq)
            if len(text) >= _MIN_CONTAINED:
                tool_texts.add(r.seq, text)
            continue
        # a model call: trace its request messages to earlier calls
        mine = deps.setdefault(r.seq, set())
        # Content matches are attributed message by message from the end of the request
        # back: each message goes to the latest earlier tool result that no later message
        # of this request has claimed, so two identical results repeated in the
        # transcript are attributed one each, by position.
        claimed: set[int] = set()
        for m in reversed(r.request.messages):
            src_seq: int | None = None
            via = ""
            if m.role == "tool" and m.tool_call_id:
                t = by_call_id.get((r.run_id, m.tool_call_id)) or by_call_id_any.get(m.tool_call_id)
                if t is not None and t.seq < r.seq:
                    src_seq, via = t.seq, "tool_call_id"
            else:
                # any other message, whatever its role (multi-agent logs replay another
                # agent's output as an assistant or user message under that agent's
                # name): an earlier model response with the same text, or an earlier
                # tool result it equals or contains. An assistant message prefers the
                # model response, any other role an exactly equal tool result.
                # responses are added after their own request is traced: all are earlier
                resp = response_fp.get(_message_fp(m), ())
                cands_c = _content_candidates(m.text, tool_by_text, tool_texts)
                exact_tool = bool(m.text) and m.text in tool_by_text
                if resp and (m.role == "assistant" or not exact_tool):
                    src_seq, via = resp[-1], "transcript"
                else:
                    src_seq = next((c for c in cands_c if c not in claimed), cands_c[0] if cands_c else None)
                    if src_seq is not None:
                        claimed.add(src_seq)
                        via = "content"
            if src_seq is not None:
                mine.add(src_seq)
                edges.add((src_seq, r.seq, via))
                included_at[src_seq] = min(included_at.get(src_seq, r.seq), r.seq)
        if r.response is not None and r.error is None:
            response_fp.setdefault(_message_fp(r.response.message), []).append(r.seq)
            for tc in r.response.message.tool_calls or ():
                if tc.id:
                    issuer.setdefault(tc.id, r.seq)

    # text actions: tool records after the final model call, none with a tool_call_id
    # (SWE-agent's `submit`, the next agent's turn in a multi-agent log), were led to by
    # that call's plain-text response; the run's final output is the last one's result.
    trailing = _trailing_actions(calls, final)
    for t in trailing:
        edges.add((final.seq, t.seq, "issued"))  # type: ignore[union-attr]
        deps.setdefault(t.seq, set()).add(final.seq)  # type: ignore[union-attr]
    # the final call: the one rule of core.analysis.final_output (the format's declared
    # rule — SWE-agent's submit, OpenHands' finish — else the last text action or response)
    final_seq = found.seq
    if found.model_seq is not None:
        final = next((r for r in calls if r.seq == found.model_seq and isinstance(r, ModelRecord)), final)

    # lineage: walk back from the final call
    lineage: set[int] = set()
    if final_seq is not None:
        stack = [final_seq]
        while stack:
            s = stack.pop()
            if s in lineage:
                continue
            lineage.add(s)
            stack.extend(deps.get(s, ()))

    out_value = found.value
    final_tool = next((r for r in calls if r.seq == final_seq and isinstance(r, ToolRecord)), None)
    final_text = _text(found.value) if final_tool is not None else _text(final_output(rec))
    reached: dict[int, set[int]] = {}
    out_edges: dict[int, list[tuple[int, str]]] = {}
    for src, dst, edge_via in edges:
        out_edges.setdefault(src, []).append((dst, edge_via))
        if edge_via != "issued":
            reached.setdefault(src, set()).add(dst)
    trailing_seqs = {t.seq for t in trailing}

    lineage_calls: list[CallLineage] = []
    redactions: list[Redaction] = []
    for r in calls:
        name = r.tool if isinstance(r, ToolRecord) else r.model
        hidden: list[str] = []
        if isinstance(r, ToolRecord):
            _walk_redacted(r.arguments, ["arguments"], hidden)
            _walk_redacted(r.result.to_json_obj(), ["result"], hidden)
            if r.result.redacted and not any(p.startswith("/result") for p in hidden):
                hidden.append("/result")
        else:
            if r.response is not None:
                _walk_redacted(r.response.message.to_json_obj(), ["response", "message"], hidden)
            if final is not None and r.seq == final.seq:
                for i, m in enumerate(r.request.messages):
                    _walk_redacted(m.to_json_obj(), ["request", "messages", i], hidden)
        on = r.seq in lineage
        redactions.extend(Redaction(r.seq, p, on) for p in hidden)
        via_kinds = sorted({v for dst, v in out_edges.get(r.seq, ()) if dst in lineage})
        if r.seq == final_seq:
            status, reason = "final", ""
        elif on:
            status, reason = "contributed", ""
        elif r.seq in trailing_seqs and final_seq is not None and r.seq < final_seq:
            status = "unknown"
            reason = (
                f"cannot tell (an action of the last model response, seq {final.seq}; "  # type: ignore[union-attr]
                f"no model call read its result)"
            )
        else:
            reason = _why_unused(r, found.missing, final_seq, reached.get(r.seq, set()), lineage)
            status = "unknown" if reason.startswith("cannot tell") else "unused"
        quoted: list[str] = []
        if on and isinstance(r, ToolRecord) and final_text and r.seq != final_seq:
            seen: set[str] = set()
            for leaf in _leaves(r.result.content):
                if leaf not in seen and leaf in final_text:
                    seen.add(leaf)
                    quoted.append(leaf)
                    if len(quoted) >= 5:
                        break
        entry = CallLineage(r.seq, r.kind, name, status, via_kinds, reason, included_at.get(r.seq), quoted, hidden)
        if knockout is not None and final_seq is not None and r.seq < final_seq:
            entry.knockout = knockout.knockout(rec, r.seq)
        lineage_calls.append(entry)

    if knockout is not None:
        kos = [c.knockout for c in lineage_calls if c.knockout is not None]
        if not kos:
            ko = "run: no call before the final output to knock out"
        else:
            unk = sum(1 for k in kos if k.outcome == "unknown")
            done = [k for k in kos if k.outcome != "unknown"]
            told = [k for k in done if k.outcome_changed is not None]
            ko = (
                f"run: each of the {len(kos)} call(s) before the final output was replayed with that call knocked out; "
            )
            if told:
                ko += f"the outcome changed for {sum(1 for k in told if k.outcome_changed)}, "
            ko += f"the final output changed for {sum(1 for k in done if k.final_output_changed)}"
            if unk:
                ko += f"; {unk} could not be replayed (outcome unknown)"
    else:
        ko = "not run: knockout needs a replay with an executor, and none was given"
    return AuditReport(
        final_seq=final_seq,
        final_output=out_value,
        calls=lineage_calls,
        edges=[LineageEdge(s, t, v) for s, t, v in sorted(edges)],
        redactions=redactions,
        knockout=ko,
        final_missing=found.missing,
    )


def _trailing_actions(calls: list[Any], final: ModelRecord | None) -> list[ToolRecord]:
    """The tool records after the final model call when all of them are text actions (no
    ``tool_call_id``): what the final call's plain-text response led to (SWE-agent's
    ``submit``; the next agent's turn in a Who&When log). Empty otherwise."""
    if final is None:
        return []
    after = [r for r in calls if r.seq > final.seq]
    if after and all(isinstance(r, ToolRecord) and not r.tool_call_id for r in after):
        return after
    return []


def _why_unused(r: Any, missing: str, final_seq: int | None, reached: set[int], lineage: set[int]) -> str:
    if final_seq is None:
        return f"the run has no final output ({missing or 'it ended on an error or a tool request'})"
    if r.seq > final_seq:
        return "after the final output"
    if isinstance(r, ToolRecord):
        if not reached:
            if _tool_content_text(r) == "" and not r.tool_call_id:
                return "cannot tell (empty result)"
            return "its result never reached a later model request"
        return "its result reached only calls outside the lineage (seq " + ", ".join(map(str, sorted(reached))) + ")"
    if r.error is not None or r.response is None:
        return "the call failed"
    if not reached:
        return "its response is not in any later request (not in the final transcript)"
    return "its response reached only calls outside the lineage (seq " + ", ".join(map(str, sorted(reached))) + ")"


# --------------------------------------------------------------------------- Markdown

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#~"})


def _md(value: Any, limit: int = 200) -> str:
    """Recorded ``value`` as one line of Markdown text: newlines as spaces, other control,
    bidi and invisible characters made visible (:func:`core.analysis.safe_text.shown`:
    ``␛`` for ESC, ``\\x9b``-style escapes for C1 controls, with the ``⚠`` marker), cut
    to ``limit`` characters, then every ASCII punctuation character Markdown or HTML
    gives a meaning to here (backslash, backtick, ``*``, ``_``, brackets, ``<``, ``>``,
    ``|``, ``#``, ``~``) backslash-escaped (CommonMark 0.31, "Backslash escapes"): a name
    cannot end a table cell, start a heading or open an HTML tag."""
    from .safe_text import shown

    text = _text(value) if not isinstance(value, str) else value
    text = shown(text.replace("\r\n", " ").replace("\n", " "))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.translate(_MD_SPECIAL)


def audit_markdown(report: AuditReport, file_name: str) -> str:
    """The audit as a Markdown document (what ``audit --markdown`` prints and the app's
    audit screen exports): a title naming ``file_name``, the final output, the counts,
    the lineage as a nested list (the final call first, under each call the calls whose
    results or responses flowed into it; a call listed already is marked "see above"),
    a table of the calls that did not contribute with the reason, the redactions, the
    knockout status and, when a runner was given, a table of each call's knockout
    result. Lines end with ``\\n``; the document ends with an empty line. Every recorded string is escaped (:func:`_md`): a name cannot
    break the list or the table, nor bring HTML in."""
    by_seq = {c.seq: c for c in report.calls}
    into: dict[int, list[LineageEdge]] = {}
    for e in report.edges:
        into.setdefault(e.target, []).append(e)
    out = [f"# Audit of {_md(file_name)}", ""]
    if report.final_seq is None:
        out += [f"No final output: {_md(report.final_missing or 'the run ended on an error or a tool request')}.", ""]
    else:
        out += [f"**Final output** (seq {report.final_seq}): {_md(report.final_output, 300)}", ""]
    counts = f"Contributed {len(report.contributed())}, unused {len(report.unused())}"
    if report.unknown():
        counts += f", cannot tell {len(report.unknown())}"
    out += [counts + ".", ""]

    def label(c: CallLineage) -> str:
        text = f"seq {c.seq} · {c.kind} {_md(c.name, 80)} · {c.status}"
        if c.quoted:
            text += " · quoted: " + ", ".join(_md(q, 40) for q in c.quoted)
        if c.redacted:
            text += " · **redacted**: " + ", ".join(_md(r, 80) for r in c.redacted)
        if c.knockout is not None:
            text += f" · knockout: {_md(c.knockout.outcome, 40)}"
            if c.knockout.outcome_changed is not None:
                text += " (outcome changed)" if c.knockout.outcome_changed else " (outcome unchanged)"
        return text

    if report.final_seq is not None and report.final_seq in by_seq:
        out += ["## Lineage", ""]
        listed: set[int] = set()
        stack: list[tuple[int, int, str]] = [(report.final_seq, 0, "")]
        while stack:
            seq, depth, via = stack.pop()
            c = by_seq.get(seq)
            if c is None:
                continue
            prefix = "  " * depth + "- " + (f"({_md(via)}) " if via else "")
            if seq in listed:
                out.append(prefix + f"seq {seq} (see above)")
                continue
            listed.add(seq)
            out.append(prefix + label(c))
            for e in sorted(into.get(seq, []), key=lambda e: e.source, reverse=True):
                stack.append((e.source, depth + 1, e.via))
        out.append("")
    rest = report.unused() + report.unknown()
    if rest:
        out += ["## Not contributing", "", "| seq | kind | name | status | reason |", "|---|---|---|---|---|"]
        for c in sorted(rest, key=lambda c: c.seq):
            out.append(f"| {c.seq} | {c.kind} | {_md(c.name, 80)} | {c.status} | {_md(c.reason, 200)} |")
        out.append("")
    if report.redactions:
        hidden = sum(1 for r in report.redactions if r.in_lineage)
        out += [f"## Redactions ({len(report.redactions)}, {hidden} on the lineage)", ""]
        for r in report.redactions:
            out.append(f"- seq {r.seq} {_md(r.path, 120)}" + (" — on the lineage" if r.in_lineage else ""))
        out.append("")
    out += ["## Knockout", "", f"Knockout: {_md(report.knockout, 300)}", ""]
    knocked = [c for c in report.calls if c.knockout is not None]
    if knocked:
        out += ["| seq | kind | name | outcome | outcome changed | final output changed | detail |"]
        out += ["|---|---|---|---|---|---|---|"]
        for c in knocked:
            k = c.knockout
            assert k is not None
            changed = {True: "yes", False: "no", None: "cannot tell"}[k.outcome_changed]
            out.append(
                f"| {c.seq} | {c.kind} | {_md(c.name, 80)} | {_md(k.outcome, 40)} | {changed} | "
                f"{'yes' if k.final_output_changed else 'no'} | {_md(k.detail, 120)} |"
            )
        out.append("")
    return "\n".join(out)
