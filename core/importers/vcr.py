"""Importer for vcrpy cassettes of LLM HTTP APIs (``--from vcr``).

A cassette (YAML or JSON, vcrpy ``version: 1``) is a list of HTTP ``interactions``,
each a ``request`` {method, uri, headers, body} and a ``response`` {status, headers,
body {string}}. Two body styles are read: vcrpy's own (``body`` is a string, bytes, or
``{"string": ...}``) and pydantic-ai's (``parsed_body``, the JSON body already parsed
into YAML). Interactions with these APIs become model records:

* OpenAI chat completions (``…/chat/completions``, also OpenAI-compatible servers);
* Anthropic messages (``…/v1/messages``);
* Gemini ``…/models/NAME:generateContent`` and ``:streamGenerateContent``.

Other interactions are skipped with a warning; one cassette may mix providers.

Tool records are recovered from consecutive requests: a tool call in response *k* is
answered by a tool result in a later request (OpenAI ``role: tool`` message, Anthropic
``tool_result`` block, Gemini ``functionResponse`` part). Results are paired with calls
by id; when the id is empty or was rewritten (e.g. a Gemini ``functionCall`` without id
later replayed to OpenAI under a new id), by tool name and arguments, then by name, then
by position — each such pairing is reported as a warning. Results repeated in later
requests (chat history) are recognised and not imported twice. A tool record is placed
before the model call whose request first carried its result.

Server-sent-event streams (``text/event-stream`` bodies) are reassembled into one model
response: text deltas joined, tool-call argument fragments joined and parsed, and
thinking kept apart from the answer as a content part ``{"type": "thinking",
"thinking": ..., "signature": ...}``.

Every value goes through :mod:`core.record.jsonvalues` (NaN/Infinity, invalid Unicode); a body
that cannot be decoded is kept as an ``$invalid_unicode`` value with an explicit warning
and an ``undecodable_body`` error on the call, never as an empty string. Secrets are
redacted by default (docs/format.md, "Redaction": sensitive headers by the header rule,
sensitive query parameters, secrets by shape and by name everywhere, and every value
removed scrubbed wherever else the run holds it). What maps to what is
documented in ``docs/importers.md`` ("vcrpy cassettes").
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import re
import zlib
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import yaml

from ..errors import FormatError, name_text
from ..record.io import redact_recording
from ..record.jsonvalues import display_text, encode_bytes, encode_value, load_json_lenient
from ..record.recording import (
    ErrorInfo,
    ModelRecord,
    ModelRequest,
    ModelResponse,
    Recording,
    SessionInfo,
    ToolRecord,
    ToolResult,
)
from ..record.redaction import SecretRedactor, header_kind, marker, query_kind
from ._build import identity_key, record_identity, tag_big_ints, tag_big_ints_in, unify_tool_call_ids
from ._llm_api import (
    CarriedResult,
    ParsedRequest,
    ParsedResponse,
    Warnings,
    error_from_result,
    gemini_model,
    parse_request,
    parse_response,
    parse_sse,
    provider_of,
    reassemble_stream,
)
from ._source import TruncatedSourceError, as_object, read_source
from .base import ImportedRun, Importer

__all__ = ["VcrImporter", "ToolPairer", "finalize_recording", "parse_sse"]

PRODUCER = "chassis-inspector import"


def finalize_recording(
    records: list[Any],
    *,
    fmt: str,
    path: Path,
    data: bytes,
    run_id: str,
    metadata: dict[str, Any],
    warnings: Warnings,
    index: int = 0,
    created_at: str | None = None,
    keyless: set[int] | None = None,
    session: SessionInfo | None = None,
    stamp_run_id: bool = True,
    unify_call_ids: bool = True,
    redactor: SecretRedactor | None = None,
) -> Recording:
    """Number records, stamp ``run_id``, compute canonical keys, redact, and wrap them
    in a recording.

    * Every integer outside ±(2**53-1) still raw in a record or in ``metadata`` is
      tagged ``{"$bigint": DIGITS}`` (:func:`._build.tag_big_ints`, warned), so the
      recording can be saved.
    * A record whose identity cannot be canonicalized — or held an integer outside
      ±(2**53-1), tagged or not (:func:`._build.identity_key`) — keeps ``key = None``
      and gets a warning (replay cannot match it); it is never dropped. Records listed
      in ``keyless`` (indices whose identity the source does not hold; the caller
      warned) get no key either.
    * Records without a ``run_id`` get ``run_id`` (unless ``stamp_run_id`` is false:
      a re-imported export keeps the records' own run ids, ``None`` included).
    * Tool-call ids are settled once for the run (:func:`._build.unify_tool_call_ids`):
      unique (the loader rejects an id answered twice; a reused id becomes ``ID~N``), and
      the same in the response that asked for a call, its tool record and every later
      request message carrying it; a call without an id gets the id a later request gives
      it (or ``~N``). Each renaming is warned. ``unify_call_ids=False`` (a re-imported
      export of our own, whose ids are already settled) only makes tool record ids unique.
    * Redaction (docs/format.md, "Redaction"): field names, shapes, names in text and
      the secrets ``redactor`` knows (default a new
      :class:`~core.record.redaction.SecretRedactor`; the caller's learned the headers
      it removed), each scrubbed everywhere in the run; tool results scrubbed are
      marked ``result.redacted``.
    * ``metadata.source`` = ``{format, file, sha256, run, index, redacted, warnings}``
      (the same shape as the other importers).
    """
    for seq, r in enumerate(records):
        r.seq = seq  # numbered first: tag_big_ints names records by seq
    tag_big_ints(records, warnings.add)
    metadata = tag_big_ints_in(metadata, "metadata", warnings.add)
    for seq, r in enumerate(records):
        r.seq = seq
        if r.run_id is None and stamp_run_id:
            r.run_id = run_id
    if unify_call_ids:
        unify_tool_call_ids(records, warnings.add)
    else:
        seen: dict[tuple[str | None, str], int] = {}
        for seq, r in enumerate(records):
            if isinstance(r, ToolRecord) and r.tool_call_id:
                k = (r.run_id, r.tool_call_id)
                n = seen.get(k, 0) + 1
                seen[k] = n
                if n > 1:
                    new_id = f"{r.tool_call_id}~{n}"
                    warnings.add(
                        f"record {seq}",
                        f"tool_call_id {r.tool_call_id!r} is used by more than one call; recorded as {new_id!r}",
                    )
                    r.tool_call_id = new_id
    for seq, r in enumerate(records):
        if not isinstance(r, (ToolRecord, ModelRecord)):
            continue
        if keyless and seq in keyless:
            r.key = None
            continue
        r.key, why = identity_key(record_identity(r))
        if r.key is None:
            what = f"tool {r.tool!r}" if isinstance(r, ToolRecord) else f"model {r.model!r}"
            warnings.add(
                f"record {seq}",
                f"{what} call imported without a canonical key ({why}); replay cannot match this call",
            )
    rec = Recording(
        metadata=dict(metadata),
        session=session or SessionInfo(mode="record", created_at=created_at, producer=f"{PRODUCER} --from {fmt}"),
        records=records,
    )
    changed = redact_recording(rec, redactor if redactor is not None else SecretRedactor())
    if changed:
        warnings.add("redaction", f"secret-looking values or sensitive fields were redacted in {changed} record(s)")
    rec.metadata["source"] = {
        "format": fmt,
        "file": name_text(path.name),  # a name that is not UTF-8 is stored escaped
        "sha256": hashlib.sha256(data).hexdigest(),
        "run": run_id,
        "index": index,
        "redacted": True,
        "warnings": [str(w) for w in warnings][:200],
    }
    return rec


# --------------------------------------------------------------------------- YAML


class _CassetteLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML loader that also reads ``!!python/...`` tags of old cassettes as plain
    values, and leaves timestamps as strings."""


def _construct_python(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_CassetteLoader.add_multi_constructor("tag:yaml.org,2002:python/", _construct_python)
_CassetteLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def _plain(value: Any) -> Any:
    """YAML-specific values to JSON: dates to ISO strings (bytes stay for jsonvalues)."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value


def _load_cassette(path: Path, data: bytes) -> Any:
    source = str(path)
    head = data.lstrip()[:1]
    if path.suffix.lower() == ".json" or head in (b"{", b"["):
        value, _ = load_json_lenient(data, source=source)
        return value
    try:
        return _plain(yaml.load(data, Loader=_CassetteLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        truncated = mark is not None and (
            mark.index >= len(data.rstrip()) - 1 or "end of stream" in problem or "unexpected end" in problem
        )
        reason = ("truncated YAML: the document ends early" if truncated else "malformed YAML") + f" ({problem})"
        raise FormatError(
            reason,
            file=source,
            line=(mark.line + 1) if mark else None,
            column=(mark.column + 1) if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise FormatError(f"malformed YAML ({exc})", file=source) from None


# --------------------------------------------------------------------------- HTTP bits


def _headers(h: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(h, dict):
        for k, v in h.items():
            vals = v if isinstance(v, list) else [v]
            out[str(k)] = [x if isinstance(x, str) else str(x) for x in vals]
    elif isinstance(h, list):  # [[name, value], ...]
        for item in h:
            if isinstance(item, (list, tuple)) and len(item) == 2:
                out.setdefault(str(item[0]), []).append(str(item[1]))
    return out


def _header(h: dict[str, list[str]], name: str) -> str | None:
    low = name.lower()
    for k, v in h.items():
        if k.lower() == low and v:
            return v[0]
    return None


def _redact_headers(
    h: dict[str, list[str]], redactor: SecretRedactor | None = None
) -> tuple[dict[str, list[str] | str], int]:
    """``h`` with each sensitive header's values (the header rule,
    :func:`core.record.redaction.header_kind`) replaced by the one marker of its kind,
    and how many were replaced; ``redactor`` learns the values (they are scrubbed
    wherever else the run holds them)."""
    out: dict[str, list[str] | str] = {}
    n = 0
    for k, v in h.items():
        kind = header_kind(k)
        if kind is not None:
            out[k] = marker(kind)
            n += 1
            if redactor is not None:
                for value in v:
                    redactor.remember(value, kind)
        else:
            out[k] = v
    return out, n


def _redact_uri(uri: str, redactor: SecretRedactor | None = None) -> tuple[str, int]:
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri, 0
    if not parts.query:
        return uri, 0
    q = parse_qsl(parts.query, keep_blank_values=True)
    n = 0
    out = []
    for k, v in q:
        kind = query_kind(k)
        if kind is not None and v:
            out.append((k, marker(kind)))
            n += 1
            if redactor is not None:
                redactor.remember(v, kind)
        else:
            out.append((k, v))
    if not n:
        return uri, 0
    return urlunsplit(parts._replace(query=urlencode(out, safe="[]"))), n


def _duration(h: dict[str, list[str]]) -> float | None:
    for name in ("openai-processing-ms", "x-envoy-upstream-service-time"):
        v = _header(h, name)
        if v:
            try:
                return float(v) / 1000.0
            except ValueError:
                pass
    st = _header(h, "server-timing")
    if st:
        m = re.search(r"dur=([0-9.]+)", st)
        if m:
            return float(m.group(1)) / 1000.0
    return None


def _http_date(h: dict[str, list[str]]) -> str | None:
    v = _header(h, "date")
    if not v:
        return None
    try:
        dt = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return dt.isoformat().replace("+00:00", "Z")


@dataclass
class _Body:
    kind: str  # "json" | "sse" | "text" | "empty" | "undecodable"
    value: Any = None
    events: list[tuple[str, str]] = field(default_factory=list)


def _decode_body(msg: dict[str, Any], headers: dict[str, list[str]], place: str, warnings: Warnings) -> _Body:
    """Decode a request/response body (``parsed_body`` or ``body``)."""
    if "parsed_body" in msg:
        value, vw = encode_value(msg["parsed_body"], place=f"{place}.parsed_body")
        warnings.extend_values(vw)
        return _Body("json", value)
    body = msg.get("body")
    if isinstance(body, dict):
        if "string" in body:
            body = body["string"]
        elif "base64_string" in body:
            import base64

            encoded = body["base64_string"]
            try:
                body = base64.b64decode(encoded)
            except (ValueError, TypeError):
                warnings.add(f"{place}.body", "base64 body could not be decoded")
                return _Body("undecodable", encoded)
        else:
            value, vw = encode_value(body, place=f"{place}.body")
            warnings.extend_values(vw)
            return _Body("json", value)
    if body is None or body == "" or body == b"":
        return _Body("empty")
    bplace = f"{place}.body"
    ctype = (_header(headers, "content-type") or "").lower()
    cenc = (_header(headers, "content-encoding") or "").lower()
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        if raw[:2] == b"\x1f\x8b" or cenc in ("gzip", "deflate"):
            try:
                raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else zlib.decompress(raw)
            except (OSError, zlib.error, EOFError):
                pass
        text_or_tag = encode_bytes(raw)
        if isinstance(text_or_tag, str):
            body = text_or_tag
        else:
            # not UTF-8: it may still be JSON holding bytes that are not UTF-8 in strings
            try:
                value, vw = load_json_lenient(raw, source=bplace, place=bplace)
            except FormatError:
                warnings.add(
                    bplace,
                    f"body could not be decoded ({len(raw)} bytes, content-type {ctype or 'unknown'}, "
                    "not UTF-8 and not JSON); kept as invalid-unicode text",
                )
                return _Body("undecodable", text_or_tag)
            warnings.extend_values(vw)
            return _Body("json", value)
    if not isinstance(body, str):
        value, vw = encode_value(body, place=bplace)
        warnings.extend_values(vw)
        return _Body("json", value)
    stripped = body.lstrip()
    if "event-stream" in ctype or stripped.startswith(("event:", "data:")):
        return _Body("sse", events=parse_sse(body))
    try:
        value, vw = load_json_lenient(body, source=bplace, place=bplace)
    except FormatError as exc:
        enc, vw = encode_value(body, place=bplace)
        warnings.extend_values(vw)
        warnings.add(bplace, f"body is not JSON ({exc.reason}); kept as text")
        return _Body("text", enc)
    warnings.extend_values(vw)
    return _Body("json", value)


# --------------------------------------------------------------------------- the importer


@dataclass
class OpenCall:
    """A tool call asked for by a model response and not answered yet."""

    id: str | None
    name: str
    arguments: Any
    model_seq: int


class ToolPairer:
    """Recovers tool records from consecutive model calls: tool calls of a response are
    *opened* (:meth:`open`); each tool result found in a later request is *answered*
    (:meth:`answer`), giving the tool record — or ``None`` when the result is chat history
    already imported.

    A result is paired with an open call by id; when the id is empty or was rewritten,
    by tool name and arguments (of the call the same request shows), then by tool name,
    then (no id, no name) by position — each fallback adds a warning. History is
    recognised by id, or by tool name and arguments, among the records already made.
    """

    def __init__(self, warnings: Warnings) -> None:
        self.warnings = warnings
        self.open_calls: list[OpenCall] = []
        self.made: list[ToolRecord] = []
        self._ids: set[str] = set()
        self._calls: set[tuple[str, bytes]] = set()

    @staticmethod
    def _sig(tool: str, arguments: Any) -> tuple[str, bytes]:
        try:
            return tool, orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return tool, repr(arguments).encode()

    def open(self, call_id: str | None, name: str, arguments: Any, model_seq: int) -> None:
        """Register a tool call of the response of the model record at ``model_seq``."""
        self.open_calls.append(OpenCall(call_id or None, name, arguments, model_seq))

    def _made(self, rec: ToolRecord) -> ToolRecord:
        self.made.append(rec)
        if rec.tool_call_id:
            self._ids.add(rec.tool_call_id)
        self._calls.add(self._sig(rec.tool, rec.arguments))
        return rec

    def answer(self, r: CarriedResult) -> ToolRecord | None:
        """The tool record for result ``r``, or ``None`` if it repeats chat history."""
        pending = self.open_calls
        taken: OpenCall | None = None
        how = "id"
        if r.id:
            taken = next((p for p in pending if p.id == r.id), None)
            if taken is None and r.id in self._ids:
                return None  # chat history: already imported
        if taken is None and r.call is not None:
            _cid, cname, cargs = r.call
            taken = next((p for p in pending if p.name == cname and p.arguments == cargs), None)
            how = "tool name and arguments"
            if taken is None and self._sig(cname, cargs) in self._calls:
                return None  # history, possibly under a rewritten id
        if taken is None and r.name:
            taken = next((p for p in pending if p.name == r.name), None)
            how = "tool name"
        if taken is None and not r.id and not r.name and pending:
            taken = pending[0]
            how = "position"
        error = error_from_result(r.content, r.is_error, r.place, self.warnings)
        if taken is None:
            name = (r.call[1] if r.call else None) or r.name or "unknown"
            args = r.call[2] if r.call else {}
            self.warnings.add(
                r.place,
                f"tool result for {name!r} (id {r.id or 'none'}) answers no call seen in an earlier response; imported on its own",
            )
            return self._made(
                ToolRecord(
                    seq=0,
                    tool=name,
                    arguments=args,
                    tool_call_id=r.id,
                    result=ToolResult(content=r.content, error=error),
                )
            )
        pending.remove(taken)
        if how != "id":
            if r.id and taken.id and r.id != taken.id:
                self.warnings.add(
                    r.place, f"tool call id rewritten ({taken.id!r} in the response, {r.id!r} here); paired by {how}"
                )
            elif not (r.id and taken.id):
                self.warnings.add(
                    r.place,
                    f"tool call {taken.name!r} has no id on {'both sides' if not r.id and not taken.id else 'one side'}; paired by {how}",
                )
        return self._made(
            ToolRecord(
                seq=0,
                tool=taken.name,
                arguments=taken.arguments,
                tool_call_id=taken.id or r.id,
                result=ToolResult(content=r.content, error=error),
            )
        )

    def unanswered(self) -> list[OpenCall]:
        """The calls never answered (each warned by the caller)."""
        return list(self.open_calls)


class VcrImporter(Importer):
    """vcrpy cassettes (YAML or JSON) of OpenAI / Anthropic / Gemini HTTP calls."""

    name = "vcr"
    description = (
        "vcrpy cassette (YAML/JSON) of OpenAI chat completions, Anthropic messages or Gemini generateContent calls"
    )

    def sniff(self, path: Path, head: bytes) -> str | None:
        if path.suffix.lower() not in (".yaml", ".yml", ".json"):
            return "not a .yaml, .yml or .json file"
        text = head.decode("utf-8", "replace")
        if "interactions" not in text:
            return "no 'interactions' list (not a vcrpy cassette)"
        if "request" not in text or "uri" not in text:
            return "'interactions' has no request with a uri (not a vcrpy cassette)"
        return None

    def load(self, path: Path) -> list[ImportedRun]:
        path = Path(path)
        source = str(path)
        data = read_source(path).data
        doc = _load_cassette(path, data)
        if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
            raise FormatError("not a vcrpy cassette: no 'interactions' list", file=source, path="/interactions")
        if "version" not in doc and doc["interactions"]:
            # vcrpy writes `version` after `interactions`: without it the file was cut, and
            # the last interaction may be cut mid-body. Recover the ones before it.
            exc = TruncatedSourceError(
                "truncated vcrpy cassette: no 'version' after the interactions (vcrpy writes it "
                f"last); {len(doc['interactions']) - 1} complete interaction(s) before the damage",
                file=source,
            )
            kept = doc["interactions"][:-1]
            if kept:
                w = Warnings()
                red = SecretRedactor()  # one per run: headers removed are scrubbed everywhere
                records, metadata, created = self._convert(kept, w, source, red)
                rec = finalize_recording(
                    records,
                    redactor=red,
                    fmt="vcr",
                    path=path,
                    data=data,
                    run_id=name_text(path.stem),
                    metadata=metadata,
                    warnings=w,
                    created_at=created,
                )
                exc.recovered = [
                    ImportedRun(run_id=name_text(path.stem), recording=rec, warnings=list(w), incomplete=True)
                ]
            raise exc
        warnings = Warnings()
        redactor = SecretRedactor()  # one per run: headers removed are scrubbed everywhere
        records, metadata, created = self._convert(doc["interactions"], warnings, source, redactor)
        rec = finalize_recording(
            records,
            redactor=redactor,
            fmt="vcr",
            path=path,
            data=data,
            run_id=name_text(path.stem),
            metadata=metadata,
            warnings=warnings,
            created_at=created,
        )
        return [ImportedRun(run_id=name_text(path.stem), recording=rec, warnings=list(warnings))]

    # -- conversion --------------------------------------------------------------------

    def _convert(
        self, interactions: list[Any], warnings: Warnings, source: str, redactor: SecretRedactor | None = None
    ) -> tuple[list[Any], dict[str, Any], str | None]:
        records: list[Any] = []
        http: list[dict[str, Any]] = []
        providers: list[str] = []
        pairer = ToolPairer(warnings)
        redacted_headers = 0
        created: str | None = None
        for i, inter in enumerate(interactions):
            place = f"interactions[{i}]"
            if not isinstance(inter, dict) or not isinstance(inter.get("request"), dict):
                warnings.add(place, "interaction has no request; skipped")
                continue
            req_msg = inter["request"]
            resp_msg = as_object(inter.get("response"))
            uri = str(req_msg.get("uri") or "")
            req_h = _headers(req_msg.get("headers"))
            resp_h = _headers(resp_msg.get("headers"))
            req_body = _decode_body(req_msg, req_h, f"{place}.request", warnings)
            provider = provider_of(uri, req_body.value)
            safe_uri, nq = _redact_uri(uri, redactor)
            rh, n1 = _redact_headers(req_h, redactor)
            sh, n2 = _redact_headers(resp_h, redactor)
            redacted_headers += n1 + n2 + nq
            status = (
                (resp_msg.get("status") or {}).get("code")
                if isinstance(resp_msg.get("status"), dict)
                else resp_msg.get("status")
            )
            entry: dict[str, Any] = {
                "interaction": i,
                "method": req_msg.get("method"),
                "uri": safe_uri,
                "status": status,
                "provider": provider,
                "request_headers": rh,
                "response_headers": sh,
            }
            http.append(entry)
            if provider is None:
                warnings.add(
                    place,
                    f"{req_msg.get('method', '?')} {safe_uri} is not an OpenAI, Anthropic or Gemini model call; skipped",
                )
                continue
            if provider not in providers:
                providers.append(provider)
            at = _http_date(resp_h)
            created = created or at

            # request
            if req_body.kind != "json" or not isinstance(req_body.value, dict):
                warnings.add(
                    f"{place}.request.body",
                    f"request body is {req_body.kind}, not a JSON object; request kept raw in options",
                )
                req = ParsedRequest(
                    gemini_model(uri) if provider == "gemini" else None, [], [], [], {"raw_body": req_body.value}, []
                )
            else:
                req = parse_request(provider, req_body.value, uri, f"{place}.request.body", warnings)

            # tool results carried by this request
            for r in req.results:
                tr = pairer.answer(r)
                if tr is not None:
                    records.append(tr)

            # response
            resp, stream, stream_events = self._response(
                provider, resp_msg, resp_h, status, f"{place}.response", warnings
            )
            entry["stream"] = stream
            if stream:
                entry["stream_events"] = stream_events
            if resp.response_id:
                entry["response_id"] = resp.response_id
            if resp.response_model:
                entry["response_model"] = resp.response_model
            model = req.model or resp.response_model
            if not model:
                warnings.add(place, "no model name in the request, URI or response; recorded as 'unknown'")
                model = "unknown"
            mr = ModelRecord(
                seq=len(records),
                at=at,
                model=model,
                request=ModelRequest(messages=req.messages, tools=req.tools, stop=req.stop, options=req.options),
                response=ModelResponse(message=resp.message, finish_reason=resp.finish_reason, usage=resp.usage)
                if resp.message
                else None,
                duration_seconds=_duration(resp_h),
                error=resp.error,
            )
            entry["seq"] = len(records)
            records.append(mr)
            if resp.message and resp.message.tool_calls:
                for tc in resp.message.tool_calls:
                    pairer.open(tc.id, tc.name, tc.arguments, mr.seq)
        for p in pairer.unanswered():
            warnings.add(
                f"record {p.model_seq}",
                f"tool call {p.name!r} (id {p.id or 'none'}) has no result in any later request of the cassette; no tool record",
            )
        # seq numbers in 'http' entries are final only after finalize (same order, so same numbers)
        meta = {"providers": providers, "http": http, "redaction": {"headers_and_query_params": redacted_headers}}
        return records, meta, created

    def _response(
        self,
        provider: str,
        msg: dict[str, Any],
        headers: dict[str, list[str]],
        status: Any,
        place: str,
        warnings: Warnings,
    ) -> tuple[ParsedResponse, bool, int]:
        body = _decode_body(msg, headers, place, warnings) if msg else _Body("empty")
        stream = body.kind == "sse"
        value = body.value
        if stream:
            value = reassemble_stream(provider, body.events, f"{place}.body", warnings)
        elif body.kind == "empty":
            warnings.add(place, "response has no body")
            return (
                ParsedResponse(
                    None, error=ErrorInfo(type="empty_response", message=f"HTTP {status}: no response body")
                ),
                False,
                0,
            )
        elif body.kind == "undecodable":
            return (
                ParsedResponse(
                    None,
                    error=ErrorInfo(
                        type="undecodable_body",
                        message=f"HTTP {status}: response body could not be decoded: {display_text(value)[:200]}",
                    ),
                ),
                False,
                0,
            )
        elif body.kind == "text":
            return (
                ParsedResponse(
                    None,
                    error=ErrorInfo(
                        type=f"http_{status}" if isinstance(status, int) and status >= 400 else "bad_response",
                        message=display_text(value)[:2000],
                    ),
                ),
                False,
                0,
            )
        resp = parse_response(provider, value, f"{place}.body", warnings)
        if isinstance(status, int) and status >= 400 and resp.error is None:
            resp.error = ErrorInfo(type=f"http_{status}", message=display_text(value)[:2000])
        elif (
            isinstance(status, int)
            and status >= 400
            and resp.error is not None
            and not resp.error.type.startswith("http_")
        ):
            resp.error = ErrorInfo(type=f"http_{status}:{resp.error.type}", message=resp.error.message)
        return resp, stream, len(body.events)
