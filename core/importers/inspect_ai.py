"""Inspect AI eval logs (``UKGovernmentBEIS/inspect_ai``): JSON logs and ``.eval`` zips.

Mapping (details and losses in ``docs/importers.md``):

* each sample (``id`` × ``epoch``) → one run, id ``<sample id>_epoch_<epoch>``;
* ``model`` event → model record: ``input`` (or ``input_refs`` into the sample's
  ``message_pool``, the de-duplicated layout) → request messages, ``tools``,
  ``config`` + ``tool_choice`` → options, ``output.choices[0]`` → response,
  ``stop_reason`` → finish_reason, ``usage``; ``error`` → record error;
* ``tool`` event → tool record: ``function``, ``arguments``, ``id``, ``result``;
  ``error`` {type, message} kept with Inspect's type names (``parsing``, ``timeout``,
  ``unicode_decode``, ``permission``, ``file_not_found``, ``is_a_directory``,
  ``limit``, ``approval``, ``unknown``, ``output_limit``);
* ``input`` event (a human typed at the console) and ``approval`` event → interrupt
  records;
* ``span_begin``/``span_end`` and the older ``step`` events → ``metadata.spans``
  (name, type, seq range); scores → ``metadata.scores`` (and ``metadata.outcome``
  from a C/I score); ``sandbox``, ``store``, ``state``, ``sample_init``, ``logger``,
  ``info`` events are not mapped (one warning with their counts);
* ``attachment://<hash>`` references are replaced by the sample's ``attachments``;
* the old layout (a sample with ``messages`` and no ``events``): assistant messages →
  model records over the message prefix, ``tool`` messages → tool records (with
  their ``error``); a tool message whose call is not in the log keeps ``key`` null.

A ``.eval`` zip without its central directory (cut short) is read from its local
headers; complete samples before the damage are recovered, marked incomplete.
"""

from __future__ import annotations

import io
import re
import zlib
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..record.jsonvalues import load_json_lenient
from ..record.nesting import dumps
from ..record.recording import ChatMessage, ErrorInfo
from ._build import JsonImporter, RunBuilder, attach_value_warnings, id_text, truncated_error, usage_pair
from ._source import (
    SourceFile,
    TruncatedSourceError,
    Truncation,
    as_array,
    as_object,
    read_source,
    salvage_zip,
    zipfile,
    zstd,
)
from .base import ImportedRun, Importer

_JSON_HEAD = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,')
_ATTACH = "attachment://"
_OUTCOME = {"C": "success", "I": "failure", "P": "partial"}


class InspectAIImporter(JsonImporter, Importer):
    """Inspect AI eval logs: JSON (log versions 1–2) and ``.eval`` zips."""

    name = "inspect_ai"
    description = "Inspect AI eval log (.json or .eval zip)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a zip whose first entry is an Inspect log part, or JSON starting
        ``{"version": N,`` with an ``"eval"`` object near the start."""
        if head[:4] == b"PK\x03\x04":
            nlen = int.from_bytes(head[26:28], "little")
            first = head[30 : 30 + nlen].decode("utf-8", "replace")
            if first in ("header.json", "_journal/start.json") or first.startswith(("samples/", "_journal/")):
                return None
            return f"a zip archive, but its first entry {first!r} is not part of an Inspect .eval log"
        if _JSON_HEAD.match(head) and b'"eval"' in head[:16384]:
            return None
        return 'not an Inspect log (no {"version": N, ... "eval": {...}} header and not a .eval zip)'

    # -- loading ---------------------------------------------------------------------

    def load(self, path: Any) -> list[ImportedRun]:
        """Import every sample of a JSON log or ``.eval`` zip (see module docstring).

        Raises:
            FormatError: damaged or not an Inspect log.
            TruncatedSourceError: cut short; ``recovered`` holds complete samples.
        """
        src = read_source(path)
        if src.data[:4] == b"PK\x03\x04":
            return self._load_zip(src)
        return super().load(path)

    def _load_zip(self, src: SourceFile) -> list[ImportedRun]:
        try:
            zf = zipfile.ZipFile(io.BytesIO(src.data))
        except zipfile.BadZipFile:
            entries, why = salvage_zip(src.data)
            exc = TruncatedSourceError(f"truncated: the .eval zip has no central directory ({why})", file=src.name)
            runs: list[ImportedRun] = []
            try:
                runs = self._from_entries(src, entries, lambda n: entries[n], list(entries))
            except FormatError:
                runs = []
            raise truncated_error(exc, runs) from None
        names = zf.namelist()

        def read(name: str) -> bytes:
            try:
                return zf.read(name)
            except (zipfile.BadZipFile, zlib.error, zstd.ZstdError, OSError, NotImplementedError) as e:
                raise FormatError(f"entry {name!r} is damaged: {e}", file=src.name) from None

        return self._from_entries(src, {n: b"" for n in names}, read, names)

    def _from_entries(
        self, src: SourceFile, present: dict[str, bytes], read: Any, order: list[str]
    ) -> list[ImportedRun]:
        value_warnings: dict[str, list[Any]] = {}

        def parse(name: str) -> Any:
            value, warns = load_json_lenient(read(name), source=f"{src.name}:{name}", place=name)
            if warns:
                value_warnings[name] = warns
            return value

        if "header.json" in present:
            header = parse("header.json")
        elif "_journal/start.json" in present:
            header = parse("_journal/start.json")
        else:
            raise FormatError("not an Inspect .eval log: no header.json or _journal/start.json", file=src.name)
        if not isinstance(header, dict):
            raise FormatError("header.json is not an object", file=src.name)
        samples = [n for n in order if n.startswith("samples/") and n.endswith(".json")]
        runs = []
        for i, n in enumerate(samples):
            s = parse(n)
            if not isinstance(s, dict):
                raise FormatError(f"entry {n!r} is not an object", file=src.name)
            run = self._sample(src, header, s, i, place=n)
            if n in value_warnings or "header.json" in value_warnings:
                attach_value_warnings(
                    [run], value_warnings.get(n, []) + value_warnings.get("header.json", []), by_index=False
                )
            runs.append(run)
        if not runs:
            raise FormatError(
                "the log holds no samples (written without samples, or cut before the first)", file=src.name
            )
        return runs

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, dict) or "eval" not in doc:
            raise FormatError("not an Inspect log: no 'eval' object at the top level", file=src.name, path="/eval")
        samples = doc.get("samples") or []
        if not isinstance(samples, list):
            raise FormatError("'samples' is not an array", file=src.name, path="/samples")
        if not samples:
            raise FormatError("the log holds no samples (written without samples?)", file=src.name, path="/samples")
        return [self._sample(src, doc, s, i, place=f"samples[{i}]") for i, s in enumerate(samples)]

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        doc = partial.value
        if not isinstance(doc, dict) or "eval" not in doc:
            return []
        samples = doc.get("samples")
        if not isinstance(samples, list):
            return []
        path = partial.open_path
        if path and path[0] == "samples":
            complete = path[1] if len(path) > 1 and isinstance(path[1], int) else 0
            samples = samples[:complete]
        return [
            self._sample(src, doc, s, i, place=f"samples[{i}]") for i, s in enumerate(samples) if isinstance(s, dict)
        ]

    # -- one sample --------------------------------------------------------------------

    def _sample(
        self, src: SourceFile, header: dict[str, Any], sample: dict[str, Any], index: int, place: str
    ) -> ImportedRun:
        sid = sample.get("id", index)
        epoch = sample.get("epoch", 1)
        run_id = f"{id_text(sid)}_epoch_{id_text(epoch)}"
        b = RunBuilder(self.name, src, run_id, index)
        attachments = as_object(sample.get("attachments"))
        missing: set[str] = set()
        body = {k: v for k, v in sample.items() if k != "attachments"}
        body = _resolve(body, attachments, missing)
        if missing:
            b.warn(
                f"{place}.attachments",
                f"{len(missing)} attachment:// reference(s) not found in the sample; kept as written",
            )
        ev_model = _str(header.get("eval", {}).get("model")) if isinstance(header.get("eval"), dict) else None
        spans: list[dict[str, Any]] = []
        events = body.get("events")
        if isinstance(events, list) and events:
            self._events(b, body, events, place, spans)
        else:
            msgs = body.get("messages")
            if not isinstance(msgs, list):
                b.warn(place, "sample has neither events nor messages")
                msgs = []
            b.warn(
                place,
                "old layout: no events; calls reconstructed from the sample's messages "
                "(no timestamps, durations or usage)",
            )
            self._messages(b, msgs, ev_model or "unknown", place)
        meta = self._metadata(header, body, sid, epoch, spans)
        created = b.time(header.get("eval", {}).get("created")) if isinstance(header.get("eval"), dict) else None
        return b.build(meta, created_at=created)

    def _metadata(
        self, header: dict[str, Any], s: dict[str, Any], sid: Any, epoch: Any, spans: list[Any]
    ) -> dict[str, Any]:
        ev = as_object(header.get("eval"))
        ds = as_object(ev.get("dataset"))
        meta: dict[str, Any] = {
            "task": ev.get("task"),
            "model": ev.get("model"),
            "dataset": ds.get("name"),
            "task_id": ev.get("task_id"),
            "sample_id": sid,
            "epoch": epoch,
            "input": s.get("input"),
            "target": s.get("target"),
        }
        scores = s.get("scores")
        if isinstance(scores, dict) and scores:
            meta["scores"] = scores
            values = [v.get("value") for v in scores.values() if isinstance(v, dict)]
            outcomes = {_OUTCOME.get(v) for v in values if isinstance(v, str)}
            outcomes.discard(None)
            if len(outcomes) == 1:
                meta["outcome"] = outcomes.pop()
        if isinstance(s.get("metadata"), dict) and s["metadata"]:
            meta["sample_metadata"] = s["metadata"]
        if s.get("error"):
            meta["error"] = s["error"]
        if s.get("limit"):
            meta["limit"] = s["limit"]
        if spans:
            meta["spans"] = spans
        meta["inspect"] = {
            "log_version": header.get("version"),
            "status": header.get("status"),
            "eval_id": ev.get("eval_id"),
            "run_id": ev.get("run_id"),
            "created": ev.get("created"),
            "task_args": ev.get("task_args"),
            "model_usage": s.get("model_usage"),
        }
        return {k: v for k, v in meta.items() if v is not None}

    def _events(
        self, b: RunBuilder, s: dict[str, Any], events: list[Any], place: str, spans: list[dict[str, Any]]
    ) -> None:
        # the de-duplicated message pool: ``message_pool`` (log version 2 before
        # inspect-ai 0.3.2xx) or ``events_data.messages`` (current versions)
        pool = as_array(s.get("message_pool")) or as_array(as_object(s.get("events_data")).get("messages"))
        unmapped: Counter[str] = Counter()
        open_spans: dict[str, dict[str, Any]] = {}
        step_stack: list[dict[str, Any]] = []
        converted = _Converted()
        for i, ev in enumerate(events):
            p = f"{place}.events[{i}]"
            if not isinstance(ev, dict):
                b.warn(p, "event is not an object; skipped")
                continue
            t = ev.get("event")
            at = b.time(ev.get("timestamp"))
            if t == "model":
                self._model_event(b, ev, pool, converted, p, at)
            elif t == "tool":
                self._tool_event(b, ev, p, at)
            elif t == "input":
                b.interrupt(
                    {"type": "input", "source": "inspect input event", "input": ev.get("input")}, at=at, place=p
                )
            elif t == "approval":
                b.interrupt(
                    {
                        "type": "approval",
                        "decision": ev.get("decision"),
                        "approver": ev.get("approver"),
                        "explanation": ev.get("explanation"),
                        "call": ev.get("call"),
                    },
                    at=at,
                    place=p,
                )
            elif t == "span_begin":
                span = {
                    "id": ev.get("id"),
                    "name": ev.get("name"),
                    "type": ev.get("type"),
                    "parent_id": ev.get("parent_id"),
                    "seq_from": len(b.records),
                }
                open_spans[str(ev.get("id"))] = span
                spans.append(span)
            elif t == "span_end":
                ended = open_spans.pop(str(ev.get("id")), None)
                if ended is not None:
                    ended["seq_to"] = len(b.records) - 1
            elif t == "step":
                if ev.get("action") == "begin":
                    span = {"name": ev.get("name"), "type": ev.get("type"), "seq_from": len(b.records)}
                    step_stack.append(span)
                    spans.append(span)
                else:
                    for j in range(len(step_stack) - 1, -1, -1):
                        if step_stack[j]["name"] == ev.get("name"):
                            step_stack.pop(j)["seq_to"] = len(b.records) - 1
                            break
            elif t == "score":
                continue  # the sample's scores go to metadata.scores
            else:
                unmapped[str(t)] += 1
        for span in spans:
            span.setdefault("seq_to", len(b.records) - 1)
        spans[:] = [{k: v for k, v in span.items() if v is not None} for span in spans]
        if unmapped:
            shown = ", ".join(f"{k} ×{v}" for k, v in sorted(unmapped.items()))
            b.warn(f"{place}.events", f"events not mapped to records: {shown}")

    def _message(self, b: RunBuilder, m: Any, place: str) -> ChatMessage:
        if not isinstance(m, dict):
            return b.message("user", str(m), place=place)
        calls = None
        if isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
            calls = []
            for j, tc in enumerate(m["tool_calls"]):
                if not isinstance(tc, dict):
                    continue
                args = tc.get("arguments")
                if tc.get("parse_error"):
                    b.warn(f"{place}.tool_calls[{j}]", f"Inspect could not parse these arguments: {tc['parse_error']}")
                    args = args if isinstance(args, str) else dumps(args).decode()
                calls.append(b.tool_call(tc.get("id"), tc.get("function"), args, f"{place}.tool_calls[{j}]"))
        name = m.get("function") if m.get("role") == "tool" else m.get("name")
        return b.message(
            str(m.get("role", "unknown")),
            m.get("content"),
            tool_calls=calls,
            tool_call_id=m.get("tool_call_id"),
            name=name,
            place=place,
        )

    def _model_event(
        self,
        b: RunBuilder,
        ev: dict[str, Any],
        pool: list[Any],
        converted: _Converted,
        p: str,
        at: str | None,
    ) -> None:
        refs = ev.get("input_refs")
        msgs: list[ChatMessage] = []
        if isinstance(refs, list) and refs and not ev.get("input"):
            for r in refs:
                if isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r):
                    lo, hi = r[0], min(r[1], len(pool))
                    if lo >= 0 and converted.upto >= hi:  # converted already: one slice
                        msgs.extend(converted.messages[lo:hi])
                    else:
                        for k in range(lo, hi):
                            msgs.append(converted.get(k, partial(self._message, b, pool[k], f"message_pool[{k}]")))
                    if r[1] > len(pool):
                        b.warn(p, f"input_refs {r} reach past the message pool ({len(pool)} messages)")
        else:
            # every event holds the whole conversation again: equal messages are converted
            # once and shared (RunBuilder.shared_message)
            for k, m in enumerate(ev.get("input") or []):
                msgs.append(b.shared_message(m, partial(self._message, b, m, f"{p}.input[{k}]")))
        options = dict(ev.get("config") or {}) if isinstance(ev.get("config"), dict) else {}
        if ev.get("tool_choice") is not None:
            options["tool_choice"] = ev["tool_choice"]
        out = as_object(ev.get("output"))
        choices = as_array(out.get("choices"))
        response = None
        finish = None
        if choices:
            c0 = choices[0] if isinstance(choices[0], dict) else {}
            response = self._message(b, c0.get("message") or {"role": "assistant"}, f"{p}.output.choices[0].message")
            finish = c0.get("stop_reason")
            if len(choices) > 1:
                b.warn(f"{p}.output.choices", f"{len(choices)} choices; only the first is kept")
        err = ev.get("error") or out.get("error")
        error = ErrorInfo(type="model_error", message=str(err)) if err else None
        duration = ev.get("working_time", out.get("time"))
        b.model(
            model=str(ev.get("model") or "unknown"),
            messages=msgs,
            response=response,
            tools=as_array(ev.get("tools")),
            options=options,
            finish_reason=finish if isinstance(finish, str) else None,
            usage=usage_pair(out.get("usage")),
            at=at,
            duration=duration,
            error=error,
            place=p,
        )

    def _tool_event(self, b: RunBuilder, ev: dict[str, Any], p: str, at: str | None) -> None:
        args = ev.get("arguments")
        raw = not isinstance(args, dict)
        if raw:
            b.warn(p, "tool-call arguments are not a JSON object; kept raw")
        err = ev.get("error")
        error = None
        if isinstance(err, dict):
            error = ErrorInfo(type=str(err.get("type") or "unknown"), message=str(err.get("message") or ""))
        elif err:
            error = ErrorInfo(type="unknown", message=str(err))
        elif ev.get("failed"):
            error = ErrorInfo(type="failed", message="Inspect marked the tool call as failed")
        if ev.get("truncated"):
            b.warn(p, f"Inspect truncated this tool output (original size, limit: {ev['truncated']})")
        b.tool(
            tool=str(ev.get("function") or "unknown"),
            arguments=args if args is not None else {},
            tool_call_id=ev.get("id"),
            content=ev.get("result"),
            error=error,
            at=at,
            duration=ev.get("working_time"),
            place=p,
        )

    def _messages(self, b: RunBuilder, msgs: list[Any], model: str, place: str) -> None:
        from ._build import PendingCall

        converted: list[ChatMessage] = []
        for j, m in enumerate(msgs):
            p = f"{place}.messages[{j}]"
            cm = self._message(b, m, p)
            if isinstance(m, dict) and m.get("role") == "assistant":
                b.unanswered(p)
                b.model(model=model, messages=list(converted), response=cm, place=p)
                for tc in cm.tool_calls or []:
                    b.pairer.add(PendingCall(tc.id, tc.name, tc.arguments, bool(tc.raw_arguments), p))
            elif isinstance(m, dict) and m.get("role") == "tool":
                err = m.get("error")
                error = None
                if isinstance(err, dict):
                    error = ErrorInfo(type=str(err.get("type") or "unknown"), message=str(err.get("message") or ""))
                call = b.pairer.take(m.get("tool_call_id"), m.get("function"), p) if b.pairer.pending else None
                if call is not None:
                    b.tool(
                        tool=call.name,
                        arguments=call.arguments,
                        tool_call_id=call.id,
                        content=m.get("content"),
                        error=error,
                        place=p,
                    )
                else:
                    b.tool(
                        tool=str(m.get("function") or "unknown"),
                        arguments={},
                        tool_call_id=m.get("tool_call_id"),
                        content=m.get("content"),
                        error=error,
                        place=p,
                        identity_known=False,
                    )
            converted.append(cm)
        b.unanswered(place)


class _Converted:
    """The pool messages converted so far, by pool index (a negative index, which Python
    reads from the end, has an entry of its own): ``messages[:upto]`` are all converted, so
    a reference to a range of them is one list slice."""

    def __init__(self) -> None:
        self.by_index: dict[int, ChatMessage] = {}
        self.messages: list[ChatMessage] = []
        self.upto = 0

    def get(self, k: int, make: Callable[[], ChatMessage]) -> ChatMessage:
        msg = self.by_index.get(k)
        if msg is None:
            msg = self.by_index[k] = make()
            while self.upto in self.by_index:
                self.messages.append(self.by_index[self.upto])
                self.upto += 1
        return msg


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _resolve(value: Any, attachments: dict[str, Any], missing: set[str]) -> Any:
    """Replace every ``attachment://<hash>`` string by the sample's attachment."""
    if isinstance(value, str):
        if value.startswith(_ATTACH):
            h = value[len(_ATTACH) :]
            if h in attachments:
                return attachments[h]
            missing.add(h)
        return value
    if isinstance(value, dict):
        return {k: _resolve(v, attachments, missing) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, attachments, missing) for v in value]
    return value
