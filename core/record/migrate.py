"""Format versions and migrations.

A recording's ``format_version`` is the *format's* version, never the package version.
Version 0 is the pre-versioning layout written by package version 0.8.1 (documented in
``docs/format.md`` § "Legacy layout"). Each step in :data:`MIGRATIONS` is a pure function
from a version-N document (a parsed JSON dict) to a version-N+1 document, applied in
order: 0 → 1 (:func:`migrate_0_to_1`), 1 → 2 (:func:`migrate_1_to_2`), 2 → 3
(:func:`migrate_2_to_3`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..errors import CanonicalizationError, FormatError
from .canonical import model_key, normalize_stop, tool_key
from .recording import FORMAT_NAME, FORMAT_VERSION

LEGACY_PACKAGE_VERSION = "0.8.1"


def detect_version(doc: Any, *, source: str) -> int:
    """Return the format version of a parsed document (0 for the 0.8.1 layout).

    Raises:
        FormatError: not a JSON object, not a Chassis recording, a non-integer version,
            or a version newer than :data:`core.record.recording.FORMAT_VERSION`.
    """
    if not isinstance(doc, dict):
        raise FormatError(f"expected a JSON object at the top level, found {_json_type(doc)}", file=source, path="/")
    if "format_version" not in doc:
        if doc.get("chassis_version") == LEGACY_PACKAGE_VERSION and "interactions" in doc:
            return 0
        if "format" in doc:
            raise FormatError("missing required field 'format_version'", file=source, path="/format_version")
        raise FormatError(
            "not a Chassis recording: no 'format'/'format_version' and not the 0.8.1 legacy layout "
            "(try 'chassis-inspector import' for other agent-run formats)",
            file=source,
            path="/",
        )
    version = doc["format_version"]
    if type(version) is not int:
        raise FormatError(
            f"format_version must be an integer, found {_json_type(version)} {version!r}",
            file=source,
            path="/format_version",
        )
    if doc.get("format") != FORMAT_NAME:
        raise FormatError(f"format is {doc.get('format')!r}, expected {FORMAT_NAME!r}", file=source, path="/format")
    if version > FORMAT_VERSION:
        raise FormatError(
            f"format version {version} is newer than this inspector supports ({FORMAT_VERSION})",
            file=source,
            path="/format_version",
        )
    if version < 1:
        raise FormatError(f"format version {version} does not exist", file=source, path="/format_version")
    return version


def _json_type(v: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(v), type(v).__name__)


def _epoch_to_rfc3339(ts: Any) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(float(ts), tz=UTC).isoformat().replace("+00:00", "Z")


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _expect(value: Any, kinds: tuple[type, ...], what: str, path: str, *, null: bool = True) -> None:
    """Raise a :class:`FormatError` at ``path`` unless ``value`` is one of ``kinds``
    (JSON types; ``bool`` never counts as a number) or, with ``null``, ``None``."""
    if value is None and null:
        return
    if type(value) is bool and bool not in kinds:
        ok = False
    else:
        ok = isinstance(value, kinds)
    if not ok:
        raise FormatError(f"{what}, found {_json_type(value)} ({_shown(value)})", path=path)


def _check_legacy(doc: dict[str, Any]) -> None:
    """Check the JSON types of every 0.8.1 field the migration reads or transforms
    (docs/format.md § "Legacy layout"); fields passed through unchanged are checked by
    validation after the migration.

    Raises:
        FormatError: the JSON Pointer (RFC 6901) of the field in the 0.8.1 document and
            what it should be (no file name: :func:`migrate` adds it).
    """
    _expect(doc.get("metadata"), (dict,), "metadata must be a JSON object", "/metadata")
    for name in ("mode", "fallback"):
        _expect(doc.get(name), (str,), f"{name} must be a string", f"/{name}")
    interactions = doc.get("interactions")
    _expect(
        interactions, (list,), "interactions must be a JSON array of interaction objects", "/interactions", null=False
    )
    assert isinstance(interactions, list)  # _expect refused anything else
    for i, it in enumerate(interactions):
        p = f"/interactions/{i}"
        _expect(it, (dict,), "an interaction must be a JSON object", p, null=False)
        _expect(
            it.get("type"), (str,), "type must be a string (tool, model, interrupt, snapshot or lifecycle)", f"{p}/type"
        )
        ts = it.get("timestamp")
        _expect(ts, (int, float), "timestamp must be a number (seconds since the epoch)", f"{p}/timestamp")
        if ts is not None:
            try:
                _epoch_to_rfc3339(ts)
            except (OverflowError, ValueError, OSError):
                raise FormatError(
                    f"timestamp {_shown(ts)} is not a time (seconds since the epoch, years 1 to 9999)",
                    path=f"{p}/timestamp",
                ) from None
        _expect(it.get("elapsed"), (int, float), "elapsed must be a number (seconds)", f"{p}/elapsed")
        _expect(it.get("error"), (str,), "error must be a string (the error message)", f"{p}/error")
        if it.get("type") == "model":
            params = it.get("params")
            _expect(params, (dict,), "params must be a JSON object", f"{p}/params")
            stop = (params or {}).get("stop")
            _expect(stop, (str, list), "stop must be a string or an array of strings", f"{p}/params/stop")
            for j, s in enumerate(stop if isinstance(stop, list) else ()):
                _expect(s, (str,), "a stop sequence must be a string", f"{p}/params/stop/{j}", null=False)
            _expect((params or {}).get("tools"), (list,), "tools must be a JSON array", f"{p}/params/tools")
            messages = it.get("messages")
            _expect(messages, (list,), "messages must be a JSON array of message objects", f"{p}/messages")
            for j, m in enumerate(messages or ()):
                _check_legacy_message(m, f"{p}/messages/{j}")
            resp = it.get("response")
            _expect(resp, (dict,), "response must be a JSON object", f"{p}/response")
            if resp is not None:
                _check_legacy_message(resp, f"{p}/response")
            usage = it.get("usage")
            _expect(usage, (dict,), "usage must be a JSON object", f"{p}/usage")


def _check_legacy_message(m: Any, path: str) -> None:
    _expect(m, (dict,), "a message must be a JSON object", path, null=False)
    calls = m.get("tool_calls")
    _expect(calls, (list,), "tool_calls must be a JSON array of tool-call objects", f"{path}/tool_calls")
    for k, c in enumerate(calls or ()):
        _expect(c, (dict,), "a tool call must be a JSON object", f"{path}/tool_calls/{k}", null=False)


def _legacy_message(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: m[k] for k in ("role", "content", "tool_call_id", "name") if k in m}
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c.get("id", ""), "name": c.get("name", ""), "arguments": c.get("args", {})} for c in m["tool_calls"]
        ]
    return out


def migrate_0_to_1(doc: dict[str, Any]) -> dict[str, Any]:
    """Pure migration from the 0.8.1 layout (version 0) to format version 1.

    Mapping (see docs/format.md): ``interactions[i]`` → ``records[i]`` with ``seq = i``;
    ``type`` → ``kind``; epoch ``timestamp`` → RFC 3339 ``at``; tool ``name``/``args``/
    ``output``/``error`` (string) → ``tool``/``arguments``/``result``; model
    ``messages``/``params`` → ``request`` (``params.stop`` normalized into
    ``request.stop``); ``response.content``/``tool_calls`` → ``response.message``;
    ``usage.prompt_tokens``/``completion_tokens`` → ``input_tokens``/``output_tokens``;
    ``elapsed`` → ``duration_seconds``; legacy keys (not canonical) are recomputed.

    Raises:
        FormatError: a field the migration reads has the wrong JSON type (its JSON
            Pointer in the 0.8.1 document and what it should be).
    """
    _check_legacy(doc)
    records: list[dict[str, Any]] = []
    for i, it in enumerate(doc.get("interactions") or []):
        typ = it.get("type")
        base: dict[str, Any] = {"seq": i, "kind": typ}
        at = _epoch_to_rfc3339(it.get("timestamp"))
        if at:
            base["at"] = at
        for f in ("run_id", "generation_id"):
            if it.get(f) is not None:
                base[f] = it[f]
        if typ == "tool":
            args = it.get("args", {})
            err = it.get("error")
            result: dict[str, Any] = {"content": it.get("output")}
            if err:
                result["error"] = {"type": "ToolError", "message": str(err)}
            if it.get("redacted"):
                result["redacted"] = True
            rec = {
                **base,
                "tool": it.get("name"),
                "arguments": args,
                "tool_call_id": it.get("call_id"),
                "result": result,
            }
            if it.get("elapsed") is not None:
                rec["duration_seconds"] = it["elapsed"]
            rec["key"] = _safe(lambda: tool_key(rec["tool"], args))  # noqa: B023 (called at once)
        elif typ == "model":
            params = dict(it.get("params") or {})
            stop = normalize_stop(params.pop("stop", None))
            tools = params.pop("tools", [])
            request = {
                "messages": [_legacy_message(m) for m in it.get("messages") or []],
                "tools": tools,
                "stop": stop,
                "options": params,
            }
            resp = it.get("response")
            rec = {**base, "model": it.get("model"), "request": request}
            if resp is not None:
                usage = it.get("usage") or {}
                rec["response"] = {
                    "message": _legacy_message({"role": "assistant", **resp}),
                    "finish_reason": resp.get("finish_reason"),
                    "usage": {
                        "input_tokens": usage.get("prompt_tokens", 0),
                        "output_tokens": usage.get("completion_tokens", 0),
                    },
                }
            if it.get("error"):
                rec["error"] = {"type": "ModelError", "message": str(it["error"])}
            if it.get("elapsed") is not None:
                rec["duration_seconds"] = it["elapsed"]
            rec["key"] = _safe(lambda: model_key(rec["model"], request))  # noqa: B023 (called at once)
        elif typ == "interrupt":
            rec = {**base, "value": it.get("value")}
        elif typ == "snapshot":
            rec = {**base, "composition": it.get("composition", {})}
        elif typ == "lifecycle":
            rec = {**base, "event": it.get("event"), "details": it.get("details", {})}
        else:
            rec = dict(it, seq=i, kind=typ)  # left for validation to reject with its place
        records.append(rec)
    return {
        "format": FORMAT_NAME,
        "format_version": 1,
        "metadata": dict(doc.get("metadata") or {}, migrated_from=f"chassis {LEGACY_PACKAGE_VERSION}"),
        "session": {
            "mode": doc.get("mode", "record"),
            "fallback": doc.get("fallback", "error"),
            "producer": f"chassis {LEGACY_PACKAGE_VERSION}",
        },
        "records": records,
    }


def migrate_1_to_2(doc: dict[str, Any]) -> dict[str, Any]:
    """Pure migration from format version 1 to format version 2.

    Version 2 is version 1 plus optional fields (SPEC "Format versions": a per-record
    ``meta`` object and run-level ``links``), so a version-1 document is a version-2
    document once ``format_version`` says 2: nothing else changes — no field is added,
    records (hence keys and the ``digest``, which seals the records only) stay as written
    and member order is kept. The input is not mutated.
    """
    return {k: (2 if k == "format_version" else v) for k, v in doc.items()}


def migrate_2_to_3(doc: dict[str, Any]) -> dict[str, Any]:
    """Pure migration from format version 2 to format version 3.

    Version 3 changes the encoding, not the records (docs/format.md § "Version 3": a
    message pool, references, a record index, all optional in a document): a version-2
    document is a version-3 document without a pool once ``format_version`` says 3.
    Records, keys and the ``digest`` stay as written; member order is kept. The input is
    not mutated.
    """
    return {k: (3 if k == "format_version" else v) for k, v in doc.items()}


def _safe(fn: Callable[[], str]) -> str | None:
    try:
        return fn()
    except (CanonicalizationError, TypeError, AttributeError, ValueError):  # ValueError: pydantic's
        return None  # validation reports the offending value with its place


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: migrate_0_to_1,
    1: migrate_1_to_2,
    2: migrate_2_to_3,
}


def migrate(doc: Any, *, source: str = "<dict>") -> tuple[dict[str, Any], int]:
    """Migrate a parsed document to the current version.

    Returns ``(document, original_version)``. The input is not mutated.

    Raises:
        FormatError: as :func:`detect_version`, or a field of a 0.8.1 document with the
            wrong JSON type (:func:`migrate_0_to_1`); names ``source``.
    """
    version = detect_version(doc, source=source)
    original = version
    while version < FORMAT_VERSION:
        try:
            doc = MIGRATIONS[version](doc)
        except FormatError as exc:
            raise (exc.with_file(source) if exc.file is None else exc) from None
        version += 1
    return doc, original
