"""Langfuse trace exports (``--from langfuse``): one trace and its observations, one run.

Source shape (Langfuse's public API, ``GET /api/public/traces/{traceId}`` and the
observation objects of ``GET /api/public/observations``; the "Download trace" JSON of
the Langfuse UI holds the same): a JSON object ``{"trace": TRACE, "observations":
[OBSERVATION, ...]}``. Also read: a bare trace object carrying its observations under
``observations`` (the API's own trace response), and a bare JSON array of observations
(one run per ``traceId``, in order of first appearance).

* ``TRACE``: ``id``, ``name``, ``timestamp``, ``input``, ``output``, ``metadata``,
  ``tags``, ``userId``, ``sessionId``, ``release``, ``version``, ``environment``,
  ``latency`` (seconds), ``scores`` [{``name``, ``value``, ``dataType`` (``NUMERIC`` |
  ``BOOLEAN`` | ``CATEGORICAL``), ``stringValue``, ``source``, ``comment``, ...}] and
  often the same observations again under ``trace.observations`` (a lighter copy: the
  real export's copies have no ``input``/``output``).
* ``OBSERVATION``: ``id``, ``traceId``, ``type`` (``GENERATION``, ``SPAN``, ``EVENT``,
  ``TOOL``, ``AGENT``, ``CHAIN``, ``RETRIEVER``, ``EVALUATOR``, ``EMBEDDING``,
  ``GUARDRAIL``), ``name``, ``startTime``, ``endTime``, ``parentObservationId``,
  ``input``, ``output``, ``model``, ``modelParameters``, ``usageDetails`` (token counts:
  ``input``, ``output``, ``total``, ...), ``costDetails`` (USD: ``input``, ``output``,
  ``total``), ``level`` (``DEBUG`` | ``DEFAULT`` | ``WARNING`` | ``ERROR``),
  ``statusMessage``, ``metadata``, ``toolCalls``/``toolCallNames``.

Values Langfuse received from OpenTelemetry attributes (``input``, ``output``,
``metadata``) are stored as **JSON-encoded strings**, sometimes twice (the real trace's
``input``): every such string is decoded (at most three times); a string that looks
like JSON but is not valid JSON is kept as text, with a warning.

Mapping (rules of this importer; the shapes are Langfuse's):

* observations are read in ``startTime`` order (file order for ties and for those
  without a time; at equal times a ``GENERATION`` before a ``TOOL``); a child that
  starts before its parent (the real export's first ``GENERATION``, 1 ms early) is
  fine, since nesting is taken from ``parentObservationId``, never from times;
* ``GENERATION`` → model record: ``input`` → request messages (a list of chat messages
  or a request body in OpenAI Chat, Anthropic Messages or Gemini shape, read by
  :mod:`core.importers._llm_api`; one message object; a string as one user message;
  anything else as one user message holding its JSON text, warned); ``output`` → the
  response (Anthropic message, OpenAI message or completion, a string);
  ``modelParameters`` → options; ``usageDetails`` ``input``/``output`` → usage (whole
  numbers from 0 to 2**53-1; another value is warned and left out, a missing one is 0);
  ``model``; ``endTime - startTime`` (else ``latency``) → duration; level ``ERROR`` →
  error ``model_error`` with ``statusMessage``; the observation's ``toolCalls`` stand in
  for tool calls the output does not show;
* ``TOOL`` → tool record: ``name`` → tool; ``input`` → arguments (the
  ``{"input": {...}}`` wrapper the Claude Agent SDK's tracing writes is unwrapped);
  ``output`` → result content (an MCP ``CallToolResult`` ``{content: [...], isError}``
  as its content parts, other members as the artifact); level ``ERROR`` or ``isError``
  → error ``tool_error``. Paired with the tool call of an earlier model response: by
  the id in the observation's metadata (``gen_ai.tool.call.id``, ``tool_call_id``) when
  there is one, else with the unanswered call of the same name and the same input, else
  by name, else by position (each fallback warned);
* ``SPAN``, ``AGENT``, ``CHAIN`` (and ``RETRIEVER``, ``EVALUATOR``, ``EMBEDDING``,
  ``GUARDRAIL``, kept as structure with a warning) → ``metadata.spans``: ``id``,
  ``name``, ``type``, ``parent_id``, ``start``, ``end``, the ``seq_from``..``seq_to``
  range of the records beneath, and their ``input``/``output``/``level``/
  ``status_message`` when set (``input``/``output`` left out when they repeat the
  trace's);
* ``EVENT`` (a point in time, no duration) → interrupt record ``{"type": "event",
  "source": "langfuse", "name", "input", "output", "level", "status_message"}``;
* another or a missing ``type`` → skipped, listed in one warning with counts;
* every record's ``meta.langfuse``: the observation's ``id``, ``type``, ``name``,
  ``parent_id``, ``path`` (names of its ancestors, root first), ``level`` and
  ``status_message`` when not default, ``usage`` (all of ``usageDetails``), ``cost``
  (``costDetails``), ``metadata`` (decoded);
* ``trace.scores`` → ``metadata.scores`` (every score, decoded); ``metadata.outcome``
  from the *outcome scores*: a score whose name, lowercased with ``_``/``-``/spaces
  removed, is ``correctness``, ``correct``, ``success``, ``succeeded``, ``successful``,
  ``pass``, ``passed``, ``resolved``, ``solved`` or ``tasksuccess``, with a clear pass/fail
  value: ``BOOLEAN`` (1/0, true/false) or ``NUMERIC`` exactly 1 or 0 → ``success`` /
  ``failure``, with ``metadata.outcome_reason`` (``correctness = 0 (EVAL)``). Scores
  such as ``hallucination`` or ``toxicity`` are kept but decide nothing; outcome
  scores that disagree give no outcome (warned);
* ``trace.input`` → ``metadata.task``; ``trace.output`` → ``metadata.final_output`` (the
  harness's statement of what the run produced: the text of an assistant message, else
  the decoded value); the rest of the trace → ``metadata.trace``; the sums of
  ``usageDetails`` (the counts above) and ``costDetails.total`` →
  ``metadata.usage_totals`` (a cost sum that is not finite is left out, warned).

Duplicates: an observation id seen again (``trace.observations`` repeating the top-level
list) is read once, the top-level copy first; a copy only under ``trace.observations``
is read too.

Lost: ``projectId``, ``createdAt``/``updatedAt``, ``bookmarked``/``public``,
``internalModelId`` and pricing-tier fields, ``completionStartTime``/
``timeToFirstToken``, prompt links (``promptId``, ...), observation ``version``.

Errors: a document that is not an object with ``observations``/``trace`` (or an array of
observations) is a :class:`~core.errors.FormatError` naming the file and the JSON Pointer;
a file cut short is a :class:`~._source.TruncatedSourceError` whose recovered run holds
the observations complete before the damage.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import FormatError, name_text
from ..record.jsonvalues import SAFE_INT_MAX, display_text, is_tagged, load_json_lenient
from ..record.recording import ChatMessage, ErrorInfo, ToolCall
from ._build import JsonImporter, PendingCall, RunBuilder, id_text, json_text
from ._llm_api import Warnings, parse_request, parse_response, simplify_parts
from ._source import SourceFile, Truncation, as_array, as_object, read_tail
from .base import ImportedRun, Importer

__all__ = ["LangfuseImporter", "OUTCOME_SCORE_NAMES"]

_OBJ_HEAD = re.compile(rb"^\s*\{")
_ARR_HEAD = re.compile(rb"^\s*\[\s*\{")
_OBSERVATIONS = re.compile(rb'"observations"\s*:\s*\[')
_PARENT = re.compile(rb'"parentObservationId"\s*:')
_TRACE_ID = re.compile(rb'"traceId"\s*:')
_START = re.compile(rb'"startTime"\s*:')

#: observation types that are structure only (metadata.spans)
_STRUCTURE = ("SPAN", "AGENT", "CHAIN")
#: Langfuse observation types kept as structure, with a warning (no record of ours fits)
_STRUCTURE_OTHER = ("RETRIEVER", "EVALUATOR", "EMBEDDING", "GUARDRAIL")
#: score names (lowercased, without ``_``, ``-``, spaces) that say whether the run succeeded
OUTCOME_SCORE_NAMES = frozenset(
    {
        "correctness",
        "correct",
        "success",
        "succeeded",
        "successful",
        "pass",
        "passed",
        "resolved",
        "solved",
        "tasksuccess",
    }
)
#: keys of a tool input object that wrap the tool's arguments (Claude Agent SDK tracing)
_WRAPPERS = ("input", "args", "arguments", "kwargs", "tool_input")
_MAX_DECODE = 3


class LangfuseImporter(JsonImporter, Importer):
    """Langfuse trace exports ``{trace, observations}`` (see the module docstring)."""

    name = "langfuse"
    description = "Langfuse trace export (JSON {trace, observations}, or an array of observations)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON object with an ``observations`` array whose observations have
        ``parentObservationId`` (in the first or the last 64 KiB: a trace whose input is
        large puts its observations late), or a JSON array of objects with ``traceId``,
        ``startTime`` and ``parentObservationId``. OTLP exports (``resourceSpans``) are
        refused."""
        if _OBJ_HEAD.match(head):
            both = head + b"\n" + read_tail(path)
            if b'"resourceSpans"' in head[:4096] or b'"resource_spans"' in head[:4096]:
                return "an OTLP export (resourceSpans), not a Langfuse trace"
            if _OBSERVATIONS.search(both) and _PARENT.search(both):
                return None
            return "no Langfuse observations (an 'observations' array with parentObservationId)"
        if _ARR_HEAD.match(head):
            if _PARENT.search(head) and _TRACE_ID.search(head) and _START.search(head):
                return None
            return "not an array of Langfuse observations (traceId, startTime, parentObservationId)"
        return "not a JSON object or array"

    def sniff_truncated(self, head: bytes) -> bool:
        """A cut-short object that opens with ``"trace": {`` and names Langfuse fields,
        or an array whose first object has ``traceId`` and ``parentObservationId``."""
        if re.match(rb'^\s*\{\s*"trace"\s*:\s*\{', head):
            return b'"observations"' in head or b'"projectId"' in head or b'"timestamp"' in head
        if _ARR_HEAD.match(head):
            return bool(_PARENT.search(head) and _TRACE_ID.search(head))
        return False

    # -- documents --------------------------------------------------------------------

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if isinstance(doc, list):
            return self._from_list(src, doc, False)
        if not isinstance(doc, dict):
            raise FormatError(
                f"not a Langfuse trace export: the document is a {_kind(doc)}, not an object", file=src.name, path="/"
            )
        if "trace" in doc and not isinstance(doc["trace"], dict):
            raise FormatError(
                f"not a Langfuse trace export: 'trace' is a {_kind(doc['trace'])}, not an object",
                file=src.name,
                path="/trace",
            )
        if "observations" in doc and not isinstance(doc["observations"], list):
            raise FormatError(
                f"not a Langfuse trace export: 'observations' is a {_kind(doc['observations'])}, not an array",
                file=src.name,
                path="/observations",
            )
        trace = doc.get("trace") if isinstance(doc.get("trace"), dict) else None
        if trace is None:
            if not isinstance(doc.get("observations"), list):
                raise FormatError(
                    "not a Langfuse trace export: no 'trace' object and no 'observations' array",
                    file=src.name,
                    path="/observations",
                )
            items = [(o, f"/observations/{i}") for i, o in enumerate(doc["observations"])]
            return [self._run(src, doc, items, False, base="")]
        if "observations" in trace and not isinstance(trace["observations"], list):
            raise FormatError(
                f"'trace.observations' is a {_kind(trace['observations'])}, not an array",
                file=src.name,
                path="/trace/observations",
            )
        items = [(o, f"/observations/{i}") for i, o in enumerate(as_array(doc.get("observations")))]
        items += [(o, f"/trace/observations/{i}") for i, o in enumerate(as_array(trace.get("observations")))]
        return [self._run(src, trace, items, False)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        """The run of the observations complete before the damage (none: nothing)."""
        doc, path = partial.value, partial.open_path
        if isinstance(doc, list):
            return self._from_list(src, doc[: partial.complete_items()], True)
        if not isinstance(doc, dict):
            return []
        top = as_array(doc.get("observations"))
        trace = as_object(doc.get("trace")) if "trace" in doc else doc
        inner = as_array(trace.get("observations"))
        top = _complete(top, path, ["observations"])
        inner = _complete(inner, path, ["trace", "observations"] if "trace" in doc else ["observations"])
        if not top and not inner:
            return []
        scores = _complete(as_array(trace.get("scores")), path, ["trace", "scores"] if "trace" in doc else ["scores"])
        trace = {**trace, "scores": scores}
        items = [(o, f"/observations/{i}") for i, o in enumerate(top)]
        if "trace" in doc:
            items += [(o, f"/trace/observations/{i}") for i, o in enumerate(inner)]
        return [self._run(src, trace, items, True, base="/trace" if "trace" in doc else "")]

    def _from_list(self, src: SourceFile, obs: list[Any], incomplete: bool) -> list[ImportedRun]:
        groups: dict[str, list[tuple[Any, str]]] = {}
        for i, o in enumerate(obs):
            tid = as_object(o).get("traceId")
            groups.setdefault(id_text(tid) if tid is not None else "", []).append((o, f"/{i}"))
        if not groups:
            groups[""] = []
        return [
            self._run(src, {"id": tid} if tid else {}, items, incomplete, index=n, base="")
            for n, (tid, items) in enumerate(groups.items())
        ]

    # -- one run ----------------------------------------------------------------------

    def _run(
        self,
        src: SourceFile,
        trace: dict[str, Any],
        items: list[tuple[Any, str]],
        incomplete: bool,
        index: int = 0,
        base: str = "/trace",
    ) -> ImportedRun:
        """One run: the observations of ``items`` (each with its JSON Pointer) under
        ``trace``, whose own JSON Pointer is ``base`` (``""`` for a bare trace object at
        the document's root)."""
        tid = trace.get("id")
        run_id = id_text(tid) if tid not in (None, "") else (name_text(src.path.name).split(".", 1)[0] or "trace")
        b = RunBuilder(self.name, src, run_id, index)
        obs = _unique(b, items, run_id if tid not in (None, "") else None)
        by_id = {id_text(o["id"]): o for o, _ in obs if o.get("id") is not None}
        paths = _ancestry(b, obs, by_id)
        order = sorted(range(len(obs)), key=lambda k: _order_key(obs[k][0], k))
        trace_input = _decode(b, trace.get("input"), f"{base}/input")
        trace_output = _decode(b, trace.get("output"), f"{base}/output")
        spans: list[dict[str, Any]] = []
        beneath: dict[str, list[int]] = {}  # structure observation id -> seqs of records beneath
        skipped: Counter[str] = Counter()
        kept_other: Counter[str] = Counter()
        totals = {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
        has_usage = has_cost = False
        for k in order:
            o, place = obs[k]
            otype = o.get("type")
            before = len(b.records)
            if otype == "GENERATION":
                counts = _usage_counts(b, o, place)
                self._generation(b, o, place, paths, counts)
                for n, field in zip(counts, ("input_tokens", "output_tokens")):
                    if n is not None:
                        totals[field] += n
                        has_usage = True
                cost: Any = as_object(o.get("costDetails")).get("total")
                if _is_num(cost):
                    totals["cost"] += float(cost)
                    has_cost = True
            elif otype == "TOOL":
                self._tool(b, o, place, paths)
            elif otype == "EVENT":
                value = {
                    "type": "event",
                    "source": "langfuse",
                    "name": o.get("name"),
                    "input": _decode(b, o.get("input"), f"{place}/input"),
                    "output": _decode(b, o.get("output"), f"{place}/output"),
                    "level": o.get("level") if o.get("level") not in (None, "DEFAULT") else None,
                    "status_message": o.get("statusMessage"),
                }
                rec = b.interrupt(
                    {k2: v for k2, v in value.items() if v is not None}, at=b.time(o.get("startTime")), place=place
                )
                rec.meta = b.scrub({"langfuse": _record_meta(b, o, place, paths)}, place)
            elif otype in _STRUCTURE or otype in _STRUCTURE_OTHER:
                if otype in _STRUCTURE_OTHER:
                    kept_other[str(otype)] += 1
                span = {
                    "id": o.get("id"),
                    "name": o.get("name"),
                    "type": otype,
                    "parent_id": o.get("parentObservationId"),
                    "start": b.time(o.get("startTime")),
                    "end": b.time(o.get("endTime")),
                    "level": o.get("level") if o.get("level") not in (None, "DEFAULT") else None,
                    "status_message": o.get("statusMessage"),
                }
                sin = _decode(b, o.get("input"), f"{place}/input")
                sout = _decode(b, o.get("output"), f"{place}/output")
                if sin is not None and sin != trace_input:
                    span["input"] = sin
                if sout is not None and sout != trace_output:
                    span["output"] = sout
                spans.append({k2: v for k2, v in span.items() if v is not None})
            else:
                skipped["no type" if otype is None else f"type {display_text(otype)!r}"] += 1
            for seq in range(before, len(b.records)):
                for anc in paths.get(id(o), ([], []))[1]:
                    beneath.setdefault(anc, []).append(seq)
        b.unanswered("/observations")
        if skipped:
            shown = ", ".join(f"{k} ×{v}" for k, v in sorted(skipped.items()))
            b.warn("/observations", f"observations skipped: {shown}")
        if kept_other:
            shown = ", ".join(f"{k} ×{v}" for k, v in sorted(kept_other.items()))
            b.warn("/observations", f"observations not mapped to records, kept as spans in metadata: {shown}")
        for span in spans:
            seqs = beneath.get(id_text(span.get("id")), [])
            if seqs:
                span["seq_from"], span["seq_to"] = min(seqs), max(seqs)
        meta = self._metadata(b, trace, trace_input, trace_output, spans, base)
        if has_usage or (has_cost and math.isfinite(totals["cost"])):
            ut: dict[str, Any] = {"source": "langfuse usageDetails/costDetails"}
            if has_usage:
                ut["input_tokens"], ut["output_tokens"] = totals["input_tokens"], totals["output_tokens"]
            if has_cost and math.isfinite(totals["cost"]):
                ut["cost"] = round(totals["cost"], 12)
            elif has_cost:
                b.warn("/observations", "the sum of costDetails.total is not finite (too large a cost); left out")
            meta["usage_totals"] = ut
        created = b.time(trace.get("timestamp"))
        return b.build(meta, created_at=created, incomplete=incomplete)

    # -- observations -----------------------------------------------------------------

    def _generation(
        self,
        b: RunBuilder,
        o: dict[str, Any],
        place: str,
        paths: dict[int, Any],
        counts: tuple[int | None, int | None],
    ) -> None:
        w = Warnings()
        model = o.get("model")
        if not isinstance(model, str) or not model:
            b.warn(f"{place}/model", "GENERATION names no model; recorded as 'unknown'")
            model = "unknown"
        raw_in = _decode(b, o.get("input"), f"{place}/input")
        messages, tools, options = _request(b, raw_in, place, w)
        params = o.get("modelParameters")
        if isinstance(params, dict):
            options = {**options, **params}
        defs = o.get("toolDefinitions")
        if isinstance(defs, list) and defs:
            tools = tools + defs
        elif isinstance(defs, dict) and defs:
            tools = tools + [v if isinstance(v, dict) else {"name": k, "definition": v} for k, v in defs.items()]
        raw_out = _decode(b, o.get("output"), f"{place}/output")
        response, finish, usage, error = _response(b, raw_out, place, w)
        response = _with_tool_calls(b, response, o, place, w)
        if counts != (None, None):
            usage = (counts[0] or 0, counts[1] or 0)
        level = o.get("level")
        if level == "ERROR":
            msg = o.get("statusMessage")
            text = b.scrub(msg, f"{place}/statusMessage") if isinstance(msg, str) else "level ERROR"
            error = ErrorInfo(type="model_error", message=text)  # RunBuilder.model does not scrub errors
        for wn in w:
            b.warn(wn.place or place, wn.message)
        rec = b.model(
            model=model,
            messages=messages,
            response=response,
            tools=tools,
            options=options,
            finish_reason=finish,
            usage=usage if response is not None else None,
            at=b.time(o.get("startTime")),
            duration=_duration(o),
            error=error,
            place=place,
        )
        rec.meta = b.scrub({"langfuse": _record_meta(b, o, place, paths)}, place)
        if response is not None:
            for tc in response.tool_calls or []:
                b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), place, rec.at))

    def _tool(self, b: RunBuilder, o: dict[str, Any], place: str, paths: dict[int, Any]) -> None:
        name = o.get("name")
        if not isinstance(name, str) or not name:
            b.warn(f"{place}/name", "TOOL observation has no name; recorded as tool 'unknown'")
            name = "unknown"
        raw_in = _decode(b, o.get("input"), f"{place}/input")
        candidates = [raw_in]
        if isinstance(raw_in, dict) and len(raw_in) == 1:
            ((key, inner),) = raw_in.items()
            if key in _WRAPPERS:
                candidates.insert(0, _decode(b, inner, f"{place}/input/{key}"))
        meta = _record_meta(b, o, place, paths)  # decodes the metadata, once
        hint = _call_id_hint(meta.get("metadata"))
        call = self._pair(b, name, candidates, hint, place)
        extra: dict[str, Any] = {}
        if call is not None:
            arguments: Any = call.arguments
            call_id: str | None = call.id
            if not any(c == call.arguments for c in candidates) and raw_in is not None:
                extra["input"] = raw_in
        else:
            arguments = candidates[0]
            call_id = hint
            if arguments is None:
                arguments = {}
            elif not isinstance(arguments, dict):
                b.warn(f"{place}/input", "TOOL observation's input is not a JSON object; kept as written")
        content, artifact, is_error = _tool_output(b, _decode(b, o.get("output"), f"{place}/output"))
        error = None
        if o.get("level") == "ERROR" or is_error:
            msg = o.get("statusMessage")
            text = msg if isinstance(msg, str) and msg else _text(content)
            error = ErrorInfo(type="tool_error", message=text)
        rec = b.tool(
            tool=name,
            arguments=arguments,
            tool_call_id=call_id,
            content=content,
            error=error,
            artifact=artifact,
            at=b.time(o.get("startTime")),
            duration=_duration(o),
            place=place,
        )
        meta.update(extra)
        rec.meta = b.scrub({"langfuse": meta}, place)

    def _pair(
        self, b: RunBuilder, name: str, candidates: list[Any], hint: str | None, place: str
    ) -> PendingCall | None:
        """The pending tool call a TOOL observation answers: by id hint, else the oldest
        unanswered call of the same name and input (warned once per observation), else
        :meth:`CallPairer.take` (by name, then by position; warned)."""
        pending = b.pairer.pending
        if hint:
            for i, c in enumerate(pending):
                if c.id == hint:
                    return pending.pop(i)
        for i, c in enumerate(pending):
            if c.name == name and any(c.arguments == x for x in candidates):
                b.warn(
                    place,
                    "TOOL observation carries no tool-call id; paired with the unanswered call of the same "
                    "name whose input it repeats",
                )
                return pending.pop(i)
        call = b.pairer.take(hint, name, place)
        if call is None:
            b.warn(place, f"TOOL observation {name!r} answers no tool call of an earlier model response")
        return call

    # -- metadata ---------------------------------------------------------------------

    def _metadata(
        self, b: RunBuilder, trace: dict[str, Any], task: Any, output: Any, spans: list[dict[str, Any]], base: str
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        info = {
            "id": trace.get("id"),
            "name": trace.get("name"),
            "timestamp": trace.get("timestamp"),
            "environment": trace.get("environment"),
            "tags": trace.get("tags") or None,
            "user_id": trace.get("userId"),
            "session_id": trace.get("sessionId"),
            "release": trace.get("release"),
            "version": trace.get("version"),
            "latency_seconds": trace.get("latency"),
            "metadata": _decode(b, trace.get("metadata"), f"{base}/metadata"),
        }
        info = {k: v for k, v in info.items() if v is not None}
        if info:
            meta["trace"] = info
        if task is not None:
            meta["task"] = task
        if output is not None:
            meta["final_output"] = _final_text(output)
        if spans:
            meta["spans"] = spans
        scores = []
        for i, s in enumerate(as_array(trace.get("scores"))):
            if not isinstance(s, dict):
                b.warn(f"{base}/scores/{i}", "score is not an object; kept as written")
                scores.append(s)
                continue
            keep = {
                "name": s.get("name"),
                "value": s.get("value"),
                "string_value": s.get("stringValue"),
                "data_type": s.get("dataType"),
                "source": s.get("source"),
                "comment": s.get("comment"),
                "observation_id": s.get("observationId"),
                "timestamp": s.get("timestamp"),
                "id": s.get("id"),
                "metadata": _decode(b, s.get("metadata"), f"{base}/scores/{i}/metadata"),
            }
            scores.append({k: v for k, v in keep.items() if v is not None})
        if scores:
            meta["scores"] = scores
            verdicts = [(s, _verdict(s)) for s in scores if isinstance(s, dict)]
            decided = [(s, v) for s, v in verdicts if v is not None]
            if decided:
                if len({v for _, v in decided}) == 1:
                    s, v = decided[0]
                    meta["outcome"] = "success" if v else "failure"
                    reason = f"{s.get('name')} = {display_text(s.get('value', s.get('string_value')))}"
                    if s.get("source"):
                        reason += f" ({s['source']})"
                    meta["outcome_reason"] = reason
                else:
                    names = ", ".join(str(s.get("name")) for s, _ in decided)
                    b.warn(f"{base}/scores", f"outcome scores disagree ({names}); no outcome recorded")
        return meta


# --------------------------------------------------------------------------- helpers


def _kind(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number" if isinstance(v, (int, float)) else type(v).__name__
    )


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _count(v: Any) -> int | None:
    """A token count: ``v`` as an integer when it is a whole number from 0 to 2**53-1 (an
    integral float such as ``12.0`` included), else ``None``. A larger count (``1e308``)
    could not be saved: RFC 8785 canonical JSON has no form for it."""
    if not _is_num(v) or v < 0 or v > SAFE_INT_MAX or v != int(v):
        return None
    return int(v)


def _usage_counts(b: RunBuilder, o: dict[str, Any], place: str) -> tuple[int | None, int | None]:
    """``(input, output)`` token counts of an observation's ``usageDetails`` (``None``
    for a missing one); a value present that is no count is warned and left out."""
    u = as_object(o.get("usageDetails"))
    out: list[int | None] = []
    for key in ("input", "output"):
        v = u.get(key)
        n = _count(v)
        if n is None and v is not None:
            b.warn(f"{place}/usageDetails/{key}", f"{display_text(v)} is not a token count; left out")
        out.append(n)
    return out[0], out[1]


def _complete(items: list[Any], open_path: list[Any], at: list[str]) -> list[Any]:
    """``items`` (an array at key path ``at``) without its last element when the
    truncation was inside that element (``open_path`` continues below ``at``)."""
    if open_path[: len(at)] == at and len(open_path) > len(at) and isinstance(open_path[len(at)], int):
        return items[: open_path[len(at)]]
    return items


def _decode(b: RunBuilder, value: Any, place: str) -> Any:
    """A value as Langfuse meant it: a string holding JSON (an object, an array or a
    JSON string literal: OpenTelemetry attributes are strings) decoded, up to
    :data:`_MAX_DECODE` times; a string that starts like JSON but is not JSON kept as
    text, with a warning. Other strings and values are returned as they are."""
    for _ in range(_MAX_DECODE):
        if not isinstance(value, str):
            return value
        s = value.strip()
        if not s or s[0] not in '{["':
            return value
        try:
            parsed, vws = load_json_lenient(s, place=place)
        except FormatError:
            b.warn(place, "a string that looks like JSON but is not valid JSON; kept as text")
            return value
        for vw in vws:
            b.warn(vw.place or place, vw.message)
        value = parsed
    return value


def _unique(b: RunBuilder, items: list[tuple[Any, str]], trace_id: str | None) -> list[tuple[dict[str, Any], str]]:
    """The observations, each id once: the first copy (top level before
    ``trace.observations``), with the members it lacks (``null`` or missing) taken from
    later copies; non-objects skipped with a warning."""
    out: list[tuple[dict[str, Any], str]] = []
    seen: dict[str, dict[str, Any]] = {}
    dup = 0
    other_trace: Counter[str] = Counter()
    for o, place in items:
        if not isinstance(o, dict):
            b.warn(place, f"observation is a {_kind(o)}, not an object; skipped")
            continue
        oid = o.get("id")
        if oid is not None:
            key = id_text(oid)
            first = seen.get(key)
            if first is not None:
                if not place.startswith("/trace/observations/"):
                    dup += 1
                for k, v in o.items():  # what the first copy lacks (a lighter copy's gaps stay gaps)
                    if first.get(k) is None and v is not None:
                        first[k] = v
                continue
            o = dict(o)
            seen[key] = o
        t = o.get("traceId")
        if trace_id is not None and t is not None and id_text(t) != trace_id:
            other_trace[id_text(t)] += 1
        out.append((o, place))
    if dup:
        b.warn(
            "/observations", f"{dup} observation(s) repeat an earlier id; the first copy is read, the others skipped"
        )
    for t, n in other_trace.items():
        b.warn("/observations", f"{n} observation(s) belong to trace {t!r}, not this one; imported with it")
    return out


def _ancestry(
    b: RunBuilder, obs: list[tuple[dict[str, Any], str]], by_id: dict[str, dict[str, Any]]
) -> dict[int, tuple[list[str], list[str]]]:
    """For each observation (by ``id()``): the names and the ids of its ancestors, root
    first. A parent id that names no observation makes it a root (warned); a cycle is cut
    where it closes (warned)."""
    out: dict[int, tuple[list[str], list[str]]] = {}
    for o, place in obs:
        names: list[str] = []
        ids: list[str] = []
        cur = o
        visited = {id(o)}
        while True:
            pid = cur.get("parentObservationId")
            if pid in (None, ""):
                break
            parent = by_id.get(id_text(pid))
            if parent is None:
                if cur is o:
                    b.warn(
                        f"{place}/parentObservationId",
                        f"parent {display_text(pid)!r} names no observation of this trace; read as a root",
                    )
                break
            if id(parent) in visited:
                b.warn(
                    f"{place}/parentObservationId",
                    "the observation's ancestors form a cycle (parentObservationId); its path is cut where the "
                    "cycle closes",
                )
                break
            visited.add(id(parent))
            names.append(str(parent.get("name") or parent.get("type") or "?"))
            ids.append(id_text(parent.get("id")))
            cur = parent
        out[id(o)] = (names[::-1], ids[::-1])
    return out


_TYPE_RANK = {"GENERATION": 0, "TOOL": 1}


def _instant(value: Any) -> float | None:
    """Seconds since the epoch of an ISO 8601 timestamp (UTC when it has no offset)."""
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def _order_key(o: dict[str, Any], k: int) -> tuple[int, float, int, int]:
    t = _instant(o.get("startTime"))
    if t is None:
        return (1, 0.0, 0, k)
    return (0, t, _TYPE_RANK.get(str(o.get("type")), 2), k)


def _duration(o: dict[str, Any]) -> float | None:
    """``endTime - startTime`` in seconds, else ``latency`` (seconds), else ``None``."""
    a, z = _instant(o.get("startTime")), _instant(o.get("endTime"))
    if a is not None and z is not None and z >= a:
        return round(z - a, 6)
    lat = o.get("latency")
    if isinstance(lat, (int, float)) and _is_num(lat) and lat >= 0:
        return float(lat)
    return None


def _record_meta(b: RunBuilder, o: dict[str, Any], place: str, paths: dict[int, Any]) -> dict[str, Any]:
    names = paths.get(id(o), ([], []))[0]
    meta = {
        "id": o.get("id"),
        "type": o.get("type"),
        "name": o.get("name"),
        "parent_id": o.get("parentObservationId"),
        "path": names or None,
        "level": o.get("level") if o.get("level") not in (None, "DEFAULT") else None,
        "status_message": o.get("statusMessage"),
        "usage": o.get("usageDetails") or None,
        "cost": o.get("costDetails") or None,
        "metadata": _decode(b, o.get("metadata"), f"{place}/metadata") or None,
    }
    return {k: v for k, v in meta.items() if v is not None}


def _call_id_hint(md: Any) -> str | None:
    """The tool-call id a TOOL observation names in its (decoded) metadata, if any."""
    if not isinstance(md, dict):
        return None
    attrs = as_object(md.get("attributes"))
    for v in (
        attrs.get("gen_ai.tool.call.id"),
        md.get("gen_ai.tool.call.id"),
        md.get("tool_call_id"),
        md.get("toolCallId"),
    ):
        if isinstance(v, str) and v:
            return v
    return None


def _message_like(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("role"), str)


def _anthropic_like(messages: list[Any]) -> bool:
    """Whether chat messages use Anthropic content blocks (tool_use / tool_result /
    thinking), so the Anthropic reader maps them."""
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for blk in content:
                if isinstance(blk, dict) and blk.get("type") in ("tool_use", "tool_result", "thinking"):
                    return True
    return False


def _request(b: RunBuilder, value: Any, place: str, w: Warnings) -> tuple[list[ChatMessage], list[Any], dict[str, Any]]:
    """Request messages, tools and options from a GENERATION's decoded ``input``."""
    p = f"{place}/input"
    if value is None:
        return [], [], {}
    if isinstance(value, str) or is_tagged(value):
        return [b.message("user", value if isinstance(value, str) else display_text(value), place=p)], [], {}
    body: dict[str, Any] | None = None
    provider = "openai"
    if isinstance(value, list) and all(_message_like(m) for m in value):
        body = {"messages": value}
        provider = "anthropic" if _anthropic_like(value) else "openai"
    elif _message_like(value):
        body = {"messages": [value]}
        provider = "anthropic" if _anthropic_like([value]) else "openai"
    elif isinstance(value, dict) and isinstance(value.get("messages"), list):
        body = value
        provider = "anthropic" if "system" in value or _anthropic_like(value["messages"]) else "openai"
    elif isinstance(value, dict) and isinstance(value.get("contents"), list):
        body, provider = value, "gemini"
    if body is None:
        b.warn(p, "GENERATION input is not a chat message, a list of messages or a request body; kept as text")
        return [b.message("user", json_text(value), place=p)], [], {}
    parsed = parse_request(provider, body, "", p, w)
    msgs = [_scrubbed(b, m, p) for m in parsed.messages]
    options = dict(parsed.options) if body is value else {}
    if parsed.stop:
        options["stop"] = parsed.stop
    return msgs, list(parsed.tools), options


def _scrubbed(b: RunBuilder, m: ChatMessage, place: str) -> ChatMessage:
    """``m`` rebuilt through the builder (redaction)."""
    return b.message(
        m.role, m.content, tool_calls=list(m.tool_calls or []), tool_call_id=m.tool_call_id, name=m.name, place=place
    )


def _response(
    b: RunBuilder, value: Any, place: str, w: Warnings
) -> tuple[ChatMessage | None, str | None, tuple[int, int] | None, ErrorInfo | None]:
    """The response message, finish reason, usage and error from a GENERATION's
    decoded ``output``."""
    p = f"{place}/output"
    if value is None:
        return None, None, None, None
    if isinstance(value, str) or is_tagged(value):
        return (
            b.message("assistant", value if isinstance(value, str) else display_text(value), place=p),
            None,
            None,
            None,
        )
    if isinstance(value, list):
        msgs = [m for m in value if _message_like(m)]
        if not msgs:
            b.warn(p, "GENERATION output is an array with no message; kept as JSON text")
            return b.message("assistant", json_text(value), place=p), None, None, None
        if len(value) > 1:
            b.warn(p, f"GENERATION output holds {len(value)} items; only the last message is the response")
        value = msgs[-1]
    if not isinstance(value, dict):
        return b.message("assistant", json_text(value), place=p), None, None, None
    if isinstance(value.get("choices"), list):
        parsed = parse_response("openai", value, p, w)
    elif isinstance(value.get("candidates"), list):
        parsed = parse_response("gemini", value, p, w)
    elif isinstance(value.get("content"), list) or value.get("type") == "message" or "stop_reason" in value:
        parsed = parse_response("anthropic", value, p, w)
    elif _message_like(value) or "content" in value or "tool_calls" in value:
        parsed = parse_response("openai", {"choices": [{"message": value}]}, p, w)
    else:
        b.warn(p, "GENERATION output is not a message or a completion; kept as JSON text")
        return b.message("assistant", json_text(value), place=p), None, None, None
    usage = (parsed.usage.input_tokens, parsed.usage.output_tokens) if parsed.usage is not None else None
    msg = _scrubbed(b, parsed.message, p) if parsed.message is not None else None
    error = parsed.error
    if error is not None:
        error = ErrorInfo(type=error.type, message=b.scrub(error.message, p))
    return msg, parsed.finish_reason, usage, error


def _with_tool_calls(
    b: RunBuilder, response: ChatMessage | None, o: dict[str, Any], place: str, w: Warnings
) -> ChatMessage | None:
    """The response with the observation's ``toolCalls`` (Langfuse's extraction: JSON
    strings ``{id, arguments, type, index}`` with names in ``toolCallNames``) when the
    output itself shows no tool call."""
    raw = as_array(o.get("toolCalls"))
    if not raw or (response is not None and response.tool_calls):
        return response
    names = as_array(o.get("toolCallNames"))
    calls: list[ToolCall] = []
    for j, item in enumerate(raw):
        tc = _decode(b, item, f"{place}/toolCalls/{j}")
        if not isinstance(tc, dict):
            w.add(f"{place}/toolCalls/{j}", "tool call is not an object; skipped")
            continue
        name = tc.get("name") or (names[j] if j < len(names) else None)
        calls.append(b.tool_call(tc.get("id"), name, tc.get("arguments", tc.get("input")), f"{place}/toolCalls/{j}"))
    if not calls:
        return response
    if response is None:
        return b.message("assistant", None, tool_calls=calls, place=f"{place}/toolCalls")
    return b.message(
        response.role,
        response.content,
        tool_calls=calls,
        tool_call_id=response.tool_call_id,
        name=response.name,
        place=f"{place}/toolCalls",
    )


def _tool_output(b: RunBuilder, value: Any) -> tuple[Any, Any, bool]:
    """``(content, artifact, is_error)`` of a TOOL's decoded output: an MCP
    ``CallToolResult`` (``content`` parts, ``isError``, other members → artifact) or the
    value as it is."""
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        parts = value["content"]
        content = simplify_parts(parts) if all(isinstance(x, dict) for x in parts) else parts
        rest = {k: v for k, v in value.items() if k not in ("content", "isError", "is_error")}
        is_error = value.get("isError", value.get("is_error")) is True
        return content, rest or None, is_error
    return value, None, False


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text")) for p in content if isinstance(p, dict) and "text" in p)
    return json_text(content) if content is not None else ""


def _final_text(value: Any) -> Any:
    """The text of an assistant message (``{role, content}`` with a string or text
    parts); any other value as it is."""
    if isinstance(value, dict) and set(value) <= {"role", "content", "type", "id", "model", "stop_reason"}:
        content = value.get("content")
        if isinstance(content, str):
            return content
        if (
            isinstance(content, list)
            and content
            and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
        ):
            return "".join(p["text"] for p in content)
    return value


def _verdict(score: dict[str, Any]) -> bool | None:
    """``True``/``False`` when ``score`` is an outcome score with a clear pass/fail value
    (see the module docstring), else ``None``."""
    name = score.get("name")
    if not isinstance(name, str) or re.sub(r"[\s_\-]", "", name.lower()) not in OUTCOME_SCORE_NAMES:
        return None
    dtype = score.get("data_type")
    value = score.get("value")
    sval = score.get("string_value")
    if dtype == "BOOLEAN":
        if isinstance(sval, str) and sval.lower() in ("true", "false"):
            return sval.lower() == "true"
        if isinstance(value, bool) or (_is_num(value) and value in (0, 1)):
            return bool(value)
        return None
    if dtype in (None, "NUMERIC") and _is_num(value) and value in (0, 1):
        return bool(value)
    return None
