"""Text forms of timeline records: one-line summaries, names, durations and offsets,
interrupt values, and CSV rows — what the app's table and the ``timeline`` command print.

Pure functions of records and values (no index, no UI); :mod:`core.analysis.timeline`
builds its rows with them. SPEC "Application": timeline.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from ..record.jsonvalues import INVALID_UNICODE_TAG
from ..record.nesting import dumps
from ..record.recording import InterruptRecord, LifecycleRecord, ModelRecord, SnapshotRecord, ToolRecord
from .placeholders import MIN_BASE64, MIN_DATA_URL, blob_of, find_blobs, has_base64_run, shown_value

if TYPE_CHECKING:
    from .timeline import TimelineRow

SUMMARY_CHARS = 160


def one_line(value: Any, limit: int = SUMMARY_CHARS) -> str:
    """``value`` as a single line of at most ``limit`` characters.

    Strings are used as they are; anything else is compact JSON. Runs of whitespace
    (newlines included) become one space; a cut line ends with ``…``. An
    ``$invalid_unicode`` value shows as its text (U+FFFD in each bad place, the marker
    ``⚠`` before the first when ``limit`` is for text to show,
    :func:`core.analysis.placeholders.shown_value`), never as the tag; binary data
    written as text that begins in the part shown (a data URL, base64) as its
    placeholder (``<image/png, 3.0 MB>``), for ``limit`` up to 16,384 (text to show;
    longer limits are search text, kept as it is).
    """
    if value is None:
        return ""
    marked = limit <= 1 << 14  # text to show marks what it cannot show as recorded; search text does not
    if isinstance(value, str):
        # a string holding a tag's JSON text (as some importers store content)
        text = shown_value(value, marked=marked) if value.startswith('{"$invalid_unicode"') else value
    else:
        try:
            text = dumps(value, orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            text = repr(value)
        if INVALID_UNICODE_TAG in text:  # rare: walk the value only then
            shown = shown_value(value, marked=marked)
            text = shown if isinstance(shown, str) else dumps(shown, orjson.OPT_NON_STR_KEYS).decode()
    # cut before splitting so a 1 MB result costs no more than a short one
    window = limit * 4
    # placeholders in what is shown (a summary, a cell), not in search text (a limit of
    # a megabyte and more: the whole value, searched as it is)
    if len(text) >= MIN_DATA_URL and limit <= 1 << 14:
        if text[:5].lower() == "data:":
            whole = blob_of(text)
            text = whole.label() if whole is not None else _with_placeholders(text, window)
        elif len(text) >= MIN_BASE64 or "data:" in text or "DATA:" in text:
            # shorter text cannot hold base64 long enough to be a blob: only data URLs
            text = _with_placeholders(text, window)
    text = " ".join(text[:window].split())
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _with_placeholders(text: str, window: int) -> str:
    """``text`` from its start, at least ``window`` characters of it, with each blob
    that begins in the first ``window`` characters replaced by its placeholder. Text
    with no word long enough to be base64 and no data URL in the part looked at costs
    one split of about ``window`` characters; a blob found costs one pass over it."""
    cut = text[: window + 2 * MIN_BASE64]
    # a cheap look first (a summary is made for every row): a data URL, or a stretch
    # with no space or line break long enough to hold a base64 run (a run of
    # MIN_BASE64 characters covers one whole aligned chunk of half that); base64
    # wrapped in short lines is left as text here
    if "data:" not in cut and "DATA:" not in cut:
        half = MIN_BASE64 // 2
        chunks = (cut[k : k + half] for k in range(0, len(cut) - half + 1, half))
        if not any(" " not in c and "\n" not in c for c in chunks) or not has_base64_run(cut):
            return text
    blobs = find_blobs(text, 0, window)
    if not blobs:
        return text
    parts: list[str] = []
    at = 0
    for b in blobs:
        parts.append(text[at : b.start])
        parts.append(b.label())
        at = b.end
    parts.append(text[at : at + window])
    return "".join(parts)


def _error_text(err: Any) -> str:
    if err is None:
        return ""
    return f"{err.type}: {err.message}" if err.message else err.type


def record_name(rec: Any) -> str:
    """The name column of a record (model identity, tool name, event, ...)."""
    if type(rec) is ToolRecord:
        return rec.tool
    if type(rec) is ModelRecord:
        return rec.model
    if type(rec) is LifecycleRecord:
        return rec.event
    if type(rec) is SnapshotRecord:
        return rec.generation_id or "snapshot"
    return "interrupt"


def composition_text(composition: dict[str, Any]) -> str:
    """``plugins: a, b · tools: x · capabilities: y`` for a snapshot's composition."""
    parts = []
    for field in ("plugins", "tools", "capabilities"):
        items = composition.get(field)
        if isinstance(items, list):
            names = [
                i if isinstance(i, str) else (i.get("name") if isinstance(i, dict) and "name" in i else one_line(i, 40))
                for i in items
            ]
            parts.append(f"{field}: {', '.join(str(n) for n in names) or '-'}")
    for field, value in composition.items():
        if field not in ("plugins", "tools", "capabilities"):
            parts.append(f"{field}: {one_line(value, 60)}")
    return " · ".join(parts)


_INSTRUCTION_KEYS = frozenset({"instruction", "task", "request"})


def _is_instruction(arguments: Any) -> bool:
    """Whether tool arguments are just an instruction in prose (one ``instruction`` /
    ``task`` / ``request`` string, as multi-agent importers such as Who&When write them):
    the summary then leads with the result, ``⇒ result ⇐ instruction``."""
    return (
        isinstance(arguments, dict)
        and len(arguments) == 1
        and next(iter(arguments)) in _INSTRUCTION_KEYS
        and isinstance(next(iter(arguments.values())), str)
    )


def args_text(arguments: Any) -> Any:
    """What a summary shows of tool arguments: the string itself when the arguments are
    one string field (e.g. ``{"command": "ls -la"}`` → ``ls -la``), else the value."""
    if isinstance(arguments, dict) and len(arguments) == 1:
        (value,) = arguments.values()
        if isinstance(value, str):
            return value
    return arguments


def record_summary(rec: Any, limit: int = SUMMARY_CHARS) -> str:
    """The one-line summary of a record (see the module docstring), at most ``limit`` chars."""
    if type(rec) is ModelRecord:
        if rec.error is not None:
            return one_line("✗ " + _error_text(rec.error), limit)
        resp = rec.response
        if resp is None:
            return "(no response)"
        text = resp.message.text
        calls = resp.message.tool_calls or []
        call_text = " ".join(f"→ {c.name}({one_line(c.arguments, 60)})" for c in calls)
        return one_line(" ".join(p for p in (text, call_text) if p) or "(empty response)", limit)
    if type(rec) is ToolRecord:
        if rec.result.error is not None:
            out = "✗ " + _error_text(rec.result.error)
        else:
            out = one_line(rec.result.content, limit)
        if _is_instruction(rec.arguments) and out:
            # an orchestrator's instruction (Who&When): what happened comes first
            return one_line(f"⇒ {out} ⇐ {one_line(args_text(rec.arguments), limit)}", limit)
        args = one_line(args_text(rec.arguments), limit)
        return one_line(f"{args} ⇒ {out}", limit)
    if type(rec) is InterruptRecord:
        return one_line(interrupt_summary(rec.value), limit) or "(no value)"
    if type(rec) is SnapshotRecord:
        return one_line(composition_text(rec.composition), limit) or "(empty composition)"
    if type(rec) is LifecycleRecord:
        return one_line(" · ".join(f"{k}={one_line(v, 40)}" for k, v in rec.details.items()), limit)
    return ""


CSV_FIELDS = ("seq", "offset_seconds", "kind", "name", "summary", "status", "duration_seconds", "tokens")
#: the two columns a replay's events add (answer source and its reason)
CSV_SOURCE_FIELDS = ("source", "reason")


def rows_to_csv(rows: Iterable[TimelineRow], *, sources: bool = False) -> str:
    """Rows as CSV text with a header line (:data:`CSV_FIELDS`, then
    :data:`CSV_SOURCE_FIELDS` when ``sources``: the rows of a replay's events); ``None``
    is empty."""
    fields = CSV_FIELDS + CSV_SOURCE_FIELDS if sources else CSV_FIELDS
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(fields)
    for r in rows:
        d = r.to_json()
        w.writerow(["" if d.get(f) is None else d[f] for f in fields])
    return buf.getvalue()


#: one symbol per answer source (``core.analysis.timeline.ANSWER_SOURCES``, plus
#: ``unknown``), drawn beside the source's name and in its colour — never colour alone.
#: Single-cell characters with a text (not emoji) presentation, present in DejaVu Sans
#: Mono (the browser font of ``serve``) and in common terminal fonts.
SOURCE_SYMBOLS = {
    "recorded": "=",  # the base's own answer
    "intervention": "✎",  # an authored change
    "fixture": "▣",  # a canned answer
    "drift": "≈",  # the base's answer to a call that differs
    "live": "↯",  # the executor answered
    "policy": "⊘",  # the tool gate denied the call
    "user": "›",  # a person's turn, answered by a pinned answer
    "unknown": "?",  # metadata named a source this version does not know
}


def source_label(source: str) -> str:
    """``"✎ intervention"``: the symbol of an answer source and its name."""
    return f"{SOURCE_SYMBOLS.get(source, '?')} {source}"


def format_offset(seconds: float | None) -> str:
    """``+12.3s`` / ``+4m05s`` / ``+2h03m`` (``""`` for ``None``)."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"+{seconds:.1f}s"
    if seconds < 3600:
        m, s = divmod(int(seconds), 60)
        return f"+{m}m{s:02d}s"
    h, rem = divmod(int(seconds), 3600)
    return f"+{h}h{rem // 60:02d}m"


def format_duration(seconds: float | None) -> str:
    """``850ms`` / ``2.4s`` / ``3m12s`` / ``13h53m`` (``""`` for ``None``)."""
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        m, s = divmod(int(seconds), 60)
        return f"{m}m{s:02d}s"
    h, rem = divmod(int(seconds), 3600)
    return f"{h}h{rem // 60:02d}m"


def interrupt_summary(value: Any) -> str:
    """An interrupt's value on one line, readable: a string as itself; an object's
    ``question`` / ``prompt`` / ``message`` / ``reason`` text first, then its other
    fields as ``key=value`` (``·``-separated); anything else as compact JSON."""
    if isinstance(value, dict):
        head = [str(value[k]) for k in _INTERRUPT_TEXT_KEYS if isinstance(value.get(k), str)]
        rest = [
            f"{k}={one_line(v, 40)}" for k, v in value.items() if not (k in _INTERRUPT_TEXT_KEYS and isinstance(v, str))
        ]
        return " · ".join([*head, *rest])
    return one_line(value, 1 << 20)


_INTERRUPT_TEXT_KEYS = ("question", "prompt", "message", "reason", "content")


def interrupt_text(value: Any) -> str:
    """An interrupt's value, readable: a string as itself; an object's ``question`` /
    ``prompt`` / ``message`` first, then its other fields as indented JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        head = [str(value[k]) for k in ("question", "prompt", "message") if isinstance(value.get(k), str)]
        rest = {k: v for k, v in value.items() if not (k in ("question", "prompt", "message") and isinstance(v, str))}
        body = dumps(rest, orjson.OPT_INDENT_2, default=str).decode() if rest else ""
        return "\n".join([*head, body]).strip() or "{}"
    return dumps(value, orjson.OPT_INDENT_2, default=str).decode()
