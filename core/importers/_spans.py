"""Reading OpenTelemetry spans, shared by the span importers (``otel``, ``openinference``).

Sources: the OTLP/JSON encoding of ``ExportTraceServiceRequest`` (opentelemetry-proto:
``resourceSpans`` → ``scopeSpans`` → ``spans``; ids as hex strings, 64-bit integers —
times in nanoseconds since the Unix epoch — as decimal strings, ``AnyValue`` as
``{"stringValue"|"intValue"|"doubleValue"|"boolValue"|"arrayValue"|"kvlistValue"|
"bytesValue": ...}``, camelCase or snake_case), and the JSON form of the Python SDK's
``ReadableSpan`` (``ReadableSpan.to_json``: ``context.trace_id``/``span_id``, ``parent``,
``start_time``/``end_time``, ``status.status_code``, attributes as a plain map), which
tools such as any-agent dump with decimal-integer ids.

* :func:`from_any` / :func:`attributes` — an ``AnyValue`` and an attribute list (or a
  plain map) as Python values;
* :func:`read_documents` — one JSON document, a JSON array of documents, or JSON Lines
  (the collector's file exporter writes one ``ExportTraceServiceRequest`` per line);
* :func:`otlp_spans` — every span of OTLP documents with its resource attributes and
  its place (``resourceSpans[i].scopeSpans[j].spans[k]``);
* :func:`to_nanos`, :func:`nanos_to_rfc3339`, :func:`span_duration` — times;
* :func:`id_text` — a trace or span id as lower-case hex (decimal integers converted);
* :func:`tree_order` — spans by start time, a parent before its children on ties.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from ..errors import FormatError
from ..record.jsonvalues import BIGINT_TAG, is_tagged, load_json_lenient

__all__ = [
    "attributes",
    "from_any",
    "id_text",
    "nanos_to_rfc3339",
    "otlp_spans",
    "read_documents",
    "span_duration",
    "to_nanos",
    "tree_order",
]

T = TypeVar("T")
SpanItem = tuple[dict[str, Any], dict[str, Any], str]  # (span, resource attributes, place)


def from_any(v: Any) -> Any:
    """An OTLP ``AnyValue`` (JSON form, camelCase or snake_case) as a JSON value; a
    ``bytesValue`` (base64) as the text its bytes hold when they are UTF-8, else its
    base64 text as written."""
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "string_value"):
        if k in v:
            return v[k]
    for k in ("boolValue", "bool_value"):
        if k in v:
            return bool(v[k])
    for k in ("intValue", "int_value"):
        if k in v:
            try:
                return int(v[k])
            except (TypeError, ValueError):
                return v[k]
    for k in ("doubleValue", "double_value"):
        if k in v:
            x = v[k]
            if isinstance(x, str):
                try:
                    return float(x.replace("Infinity", "inf"))
                except ValueError:
                    return x
            return x
    for k in ("arrayValue", "array_value"):
        if k in v:
            return [from_any(x) for x in _values(v[k])]
    for k in ("kvlistValue", "kvlist_value"):
        if k in v:
            return {
                kv.get("key"): from_any(kv.get("value"))
                for kv in _values(v[k])
                if isinstance(kv, dict) and _scalar(kv.get("key"))
            }
    for k in ("bytesValue", "bytes_value"):
        if k in v:  # a record holds JSON values only: never Python bytes
            try:
                return base64.b64decode(v[k], validate=True).decode("utf-8")
            except (ValueError, TypeError):  # binascii.Error, UnicodeDecodeError: the base64 text as written
                return v[k]
    return None


def _values(container: Any) -> list[Any]:
    """The ``values`` list of an ``ArrayValue`` / ``KeyValueList`` (empty when malformed)."""
    vals = container.get("values") if isinstance(container, dict) else None
    return vals if isinstance(vals, list) else []


def _scalar(key: Any) -> bool:
    """Whether an attribute key can key a map (a malformed key is skipped)."""
    return key is None or isinstance(key, (str, int, float, bool))


def attributes(items: Any) -> dict[str, Any]:
    """Span (or event, resource) attributes as a map: an OTLP ``KeyValue`` list decoded
    with :func:`from_any`, or a plain map (``ReadableSpan`` JSON, some exporters) as is."""
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for kv in items:
            if isinstance(kv, dict) and "key" in kv and _scalar(kv["key"]):
                out[kv["key"]] = from_any(kv.get("value"))
    elif isinstance(items, dict):  # already a plain map (some exporters)
        out.update(items)
    return out


def read_documents(data: bytes, source: str) -> list[Any]:
    """The JSON documents of ``data``: one document, the items of a top-level array, or
    one per line (JSON Lines; blank lines skipped).

    Raises:
        FormatError: not JSON (the whole file's error, line and column), or JSON Lines
            whose last line is cut ("truncated JSON Lines", its line number).
    """
    text = data.strip()
    try:
        doc, _ = load_json_lenient(data, source=source)
        return doc if isinstance(doc, list) else [doc]
    except FormatError as first:
        lines = [ln for ln in text.split(b"\n") if ln.strip()]
        if len(lines) < 2:
            raise
        docs: list[Any] = []
        for n, ln in enumerate(lines):
            try:
                d, _ = load_json_lenient(ln, source=source)
            except FormatError as exc:
                if n == len(lines) - 1 and docs:
                    raise FormatError(
                        f"truncated JSON Lines: the last line is cut ({exc.reason})", file=source, line=n + 1
                    ) from None
                raise first from None
            docs.append(d)
        return docs


def otlp_spans(docs: list[Any], source: str) -> list[SpanItem]:
    """Every span object of OTLP JSON documents, in file order, as ``(span, resource
    attributes, place)``; ``place`` is ``resourceSpans[i].scopeSpans[j].spans[k]``,
    prefixed ``[d].`` when there are several documents (JSON Lines: line ``d + 1``).

    Raises:
        FormatError: a document is not an object or has no ``resourceSpans`` list (its
            JSON Pointer), or no span at all.
    """
    spans: list[SpanItem] = []
    for d, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise FormatError("not an OTLP JSON trace export: a document is not an object", file=source, path=f"/{d}")
        prefix = f"[{d}]." if len(docs) > 1 else ""  # document (JSON Lines: line d+1)
        rss = doc.get("resourceSpans", doc.get("resource_spans"))
        if not isinstance(rss, list):
            raise FormatError(
                "not an OTLP JSON trace export: no 'resourceSpans' list", file=source, path="/resourceSpans"
            )
        for i, rs in enumerate(rss):
            rs = rs if isinstance(rs, dict) else {}
            res = rs.get("resource")
            res_attrs = attributes(res.get("attributes") if isinstance(res, dict) else None)
            sss = rs.get("scopeSpans", rs.get("scope_spans"))
            for j, ss in enumerate(sss if isinstance(sss, list) else []):
                sps = ss.get("spans") if isinstance(ss, dict) else None
                for k, sp in enumerate(sps if isinstance(sps, list) else []):
                    if isinstance(sp, dict):
                        spans.append((sp, res_attrs, f"{prefix}resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"))
    if not spans:
        raise FormatError("OTLP JSON export holds no spans", file=source, path="/resourceSpans")
    return spans


def to_nanos(v: Any) -> int | None:
    """A span time as nanoseconds since the Unix epoch: an integer (or its decimal
    string, or a ``{"$bigint": ...}`` tag), or an ISO 8601 text (UTC when it has no
    offset); ``None`` when it is neither or not after the epoch."""
    if is_tagged(v) and BIGINT_TAG in v:
        v = v[BIGINT_TAG]
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v if v > 0 else None
    if isinstance(v, float):
        return int(v) if v == v and 0 < v < 1e20 else None
    if isinstance(v, str):
        s = v.strip()
        if s.isdigit():
            n = int(s)
            return n if n > 0 else None
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        try:
            n = int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
        except (OverflowError, OSError, ValueError):
            return None
        return n if n > 0 else None
    return None


def nanos_to_rfc3339(v: Any) -> str | None:
    """RFC 3339 text (UTC, microseconds) of a time in nanoseconds since the epoch
    (an integer or its decimal text); ``None`` when it is not one."""
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    if n <= 0:
        return None
    try:
        dt = datetime.fromtimestamp(n // 1_000_000_000, tz=UTC).replace(microsecond=(n % 1_000_000_000) // 1000)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.isoformat().replace("+00:00", "Z")


def span_duration(sp: dict[str, Any]) -> float | None:
    """Seconds between an OTLP span's ``startTimeUnixNano`` and ``endTimeUnixNano``;
    ``None`` when either is missing or the end is not after the start."""
    start: Any = sp.get("startTimeUnixNano", sp.get("start_time_unix_nano"))
    end: Any = sp.get("endTimeUnixNano", sp.get("end_time_unix_nano"))
    try:
        s = int(start)
        e = int(end)
    except (TypeError, ValueError):
        return None
    if s <= 0 or e <= s:
        return None
    return (e - s) / 1e9


def id_text(v: Any, width: int = 16) -> str | None:
    """A trace or span id as text: a hex string lower-cased, a decimal integer (the
    ``ReadableSpan`` JSON any-agent dumps; ``{"$bigint": ...}`` once tagged) as
    ``width`` hex digits zero-padded (32 for a trace id, 16 for a span id); ``None``
    for null, an empty string or anything else."""
    if is_tagged(v) and BIGINT_TAG in v:
        try:
            v = int(v[BIGINT_TAG])
        except (TypeError, ValueError):
            return None
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return format(v, f"0{width}x") if v >= 0 else str(v)
    if isinstance(v, str) and v.strip():
        return v.strip().lower()
    return None


def tree_order(
    items: Sequence[T], start: Callable[[T], int], span_id: Callable[[T], str | None], parent: Callable[[T], str | None]
) -> list[T]:
    """``items`` by start time (a stable sort); among spans with equal start times each
    comes after its ancestors (a parent placed just before its first child), the others
    in the order given. Linear in the spans times the depth of the tree; a cycle of
    parent ids stops the walk."""
    by_start = sorted(items, key=start)
    out: list[T] = []
    i = 0
    while i < len(by_start):
        j = i
        while j < len(by_start) and start(by_start[j]) == start(by_start[i]):
            j += 1
        group = by_start[i:j]
        if len(group) > 1:
            by_id: dict[str, int] = {}
            for n, x in enumerate(group):
                sid = span_id(x)
                if sid is not None:
                    by_id.setdefault(sid, n)
            done = [False] * len(group)
            for n in range(len(group)):
                # n's chain of not-yet-placed ancestors among the tied spans, then n
                chain: list[int] = []
                k: int | None = n
                while k is not None and not done[k] and k not in chain:
                    chain.append(k)
                    p = parent(group[k])
                    k = by_id.get(p) if p is not None else None
                for k2 in reversed(chain):
                    done[k2] = True
                    out.append(group[k2])
        else:
            out.extend(group)
        i = j
    return out
