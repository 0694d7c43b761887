"""Redacting a whole recording (docs/format.md, "Redaction").

:func:`redact_recording` applies :func:`core.record.redaction.redact` — field names,
shapes, known secrets — to every value of a recording: its ``metadata`` and ``links``,
and every record (format-v2 ``meta`` included). It is what every writer of the product
calls: saving a recording, storing a base or a replay's events in the workspace,
exporting.

* **Propagation.** One :class:`~core.record.redaction.SecretRedactor` serves the whole
  run and learns every secret it removes; when it learned something, a second pass
  scrubs those values from the places seen before they were learned — so a header value
  redacted in one record is scrubbed where a tool result echoes it in another.
* **Flags and keys.** A tool record whose result was scrubbed gets
  ``result.redacted = True``; the key of a changed record is recomputed on the redacted
  values (keys are computed on redacted values, as the replay session computes them);
  a recording whose records changed loses its ``digest`` (the next save writes a fresh
  one).
* **Chat histories.** A model request repeats the messages of the ones before it; each
  distinct message object is redacted once.
"""

from __future__ import annotations

import weakref
from typing import Any

from pydantic import TypeAdapter

from ..errors import CanonicalizationError
from .canonical import canonical_hash
from .recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    ModelRequest,
    Record,
    Recording,
    RunLink,
    ToolRecord,
    ToolResult,
)
from .redaction import SecretRedactor, redact

__all__ = [
    "ensure_redacted",
    "redact_recording",
    "redacted_args_hash",
    "redacted_copy",
    "redacted_model_key",
    "redacted_tool_key",
]

_RECORD_ADAPTER: TypeAdapter[Any] = TypeAdapter(Record)


class _Pass:
    """One pass over a recording with one redactor; distinct messages redacted once."""

    def __init__(self, redactor: SecretRedactor) -> None:
        self.r = redactor
        self._messages: dict[int, tuple[ChatMessage, ChatMessage]] = {}
        #: the last request's messages, their redacted form, whether any changed
        self._last: tuple[list[ChatMessage], list[ChatMessage], bool] | None = None

    def value(self, v: Any) -> tuple[Any, bool]:
        return redact(v, self.r)

    def text(self, v: str | None) -> str | None:
        return None if v is None else self.value(v)[0]

    def message(self, m: ChatMessage) -> ChatMessage:
        hit = self._messages.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        obj = m.to_json_obj()
        new, changed = self.value(obj)
        out = ChatMessage.model_validate(new) if changed else m
        self._messages[id(m)] = (m, out)
        return out

    def messages(self, msgs: list[ChatMessage]) -> tuple[list[ChatMessage], bool]:
        """The messages of a request redacted, and whether any changed. A request that
        extends the previous one (a growing history: the same message objects) reuses
        its redacted prefix, so each request costs what it adds."""
        last = self._last
        if last is not None and len(msgs) >= len(last[0]) and msgs[: len(last[0])] == last[0]:
            k = len(last[0])
            new = [self.message(m) for m in msgs[k:]]
            out = last[1] + new
            changed = last[2] or any(a is not b for a, b in zip(new, msgs[k:]))
        else:
            out = [self.message(m) for m in msgs]
            changed = any(a is not b for a, b in zip(out, msgs))
        self._last = (list(msgs), out, changed)
        return out, changed

    def error(self, e: ErrorInfo | None) -> ErrorInfo | None:
        if e is None:
            return None
        new, changed = self.value(e.to_json_obj())
        return ErrorInfo.model_validate(new) if changed else e

    def record(self, r: Any) -> Any:
        """``r`` redacted: the same object when nothing changed, else a new record
        (result flag set, key recomputed)."""
        upd: dict[str, Any] = {}
        for f in ("at", "run_id", "generation_id"):
            v = getattr(r, f)
            if v is not None:
                nv = self.text(v)
                if nv is not v:
                    upd[f] = nv
        if r.meta is not None:
            meta, changed = self.value(r.meta)
            if changed:
                upd["meta"] = meta
        if type(r) is ModelRecord:
            self._model(r, upd)
        elif type(r) is ToolRecord:
            self._tool(r, upd)
        else:
            obj = r.to_json_obj()
            new, changed = self.value(obj)
            if not changed:
                return r if not upd else r.model_copy(update=upd)
            nr = _RECORD_ADAPTER.validate_python(new)
            return nr
        if not upd:
            return r
        nr = r.model_copy(update=upd)
        if nr.key is not None:
            try:
                nr.key = nr.compute_key()
            except CanonicalizationError:
                pass
        return nr

    def _model(self, r: ModelRecord, upd: dict[str, Any]) -> None:
        model = self.text(r.model)
        if model is not r.model:
            upd["model"] = model
        req = r.request
        rq: dict[str, Any] = {}
        msgs, changed_msgs = self.messages(req.messages)
        if changed_msgs:
            rq["messages"] = msgs
        for f in ("tools", "stop", "options"):
            v = getattr(req, f)
            nv, changed = self.value(v)
            if changed:
                rq[f] = nv
        if rq:
            upd["request"] = req.model_copy(update=rq)
        resp = r.response
        if resp is not None:
            rs: dict[str, Any] = {}
            if resp.message is not None:
                m = self.message(resp.message)
                if m is not resp.message:
                    rs["message"] = m
            if resp.finish_reason is not None:
                fr = self.text(resp.finish_reason)
                if fr is not resp.finish_reason:
                    rs["finish_reason"] = fr
            if rs:
                upd["response"] = resp.model_copy(update=rs)
        err = self.error(r.error)
        if err is not r.error:
            upd["error"] = err

    def _tool(self, r: ToolRecord, upd: dict[str, Any]) -> None:
        for f in ("tool", "tool_call_id"):
            v = getattr(r, f)
            if v is not None:
                nv = self.text(v)
                if nv is not v:
                    upd[f] = nv
        args, changed = self.value(r.arguments)
        if changed:
            upd["arguments"] = args
        res, changed = self.value(r.result.to_json_obj())
        if changed:
            res["redacted"] = True
            upd["result"] = ToolResult.model_validate(res)


def _one_pass(rec: Recording, redactor: SecretRedactor) -> set[int]:
    """Redact ``rec`` in place once; the indices of the records that changed."""
    p = _Pass(redactor)
    meta, changed = p.value(rec.metadata)
    if changed:
        rec.metadata = meta
    if rec.links is not None:
        raw_links = [link.to_json_obj() for link in rec.links]
        new_links, changed = p.value(raw_links)
        if changed:
            rec.links = [RunLink.model_validate(link) for link in new_links]
    changed_records: set[int] = set()
    records = rec.records
    for i, r in enumerate(records):
        nr = p.record(r)
        if nr is not r:
            records[i] = nr
            changed_records.add(i)
    return changed_records


def redact_recording(rec: Recording, redactor: SecretRedactor | None = None) -> int:
    """Redact ``rec`` in place (see the module docstring); return how many records
    changed. ``redactor`` (default: a new :class:`SecretRedactor`) adds known secrets
    and learns what is removed; give the same one to every writer of one run."""
    r = redactor if redactor is not None else SecretRedactor()
    before = len(r.known)
    changed = _one_pass(rec, r)
    if len(r.known) > before:
        changed |= _one_pass(rec, r)
    if changed:
        rec.digest = None
    return len(changed)


def redacted_copy(rec: Recording, redactor: SecretRedactor | None = None) -> Recording:
    """A redacted copy of ``rec`` (``rec`` is untouched); records that need no change
    are shared with ``rec``."""
    out = rec.model_copy(update={"records": list(rec.records)})
    if rec.links is not None:
        out.links = list(rec.links)
    redact_recording(out, redactor)
    return out


# id of a recording ensure_redacted redacted → (a weak reference to it, what it held then:
# records list, length, last record)
_REDACTED: dict[int, tuple[weakref.ref[Recording], tuple[int, int, int]]] = {}


def _shape(rec: Recording) -> tuple[int, int, int]:
    return (id(rec.records), len(rec.records), id(rec.records[-1]) if rec.records else 0)


def ensure_redacted(rec: Recording) -> Recording:
    """Redact ``rec`` in place (:func:`redact_recording`) unless this very recording was
    redacted by this function already and has only kept its records since; return it.

    What a replay uses as its base: a recording this product saved redacts to itself (its
    digest and keys unchanged); a recording written elsewhere is redacted before a branch
    is validated against it, so the workspace stores, and the replay events copy, the
    redacted base the branch names by digest.
    """
    seen = _REDACTED.get(id(rec))
    if seen is not None and seen[0]() is rec and seen[1] == _shape(rec):
        return rec
    redact_recording(rec)
    key = id(rec)
    _REDACTED[key] = (weakref.ref(rec, lambda _: _REDACTED.pop(key, None)), _shape(rec))
    return rec


def redacted_tool_key(tool: str, arguments: Any) -> str:
    """The key of a tool call computed on its redacted arguments (as saved recordings,
    the replay session and the workspace compute it).

    Raises:
        CanonicalizationError: the arguments have no canonical form.
    """
    red, _ = redact(arguments)
    return canonical_hash({"kind": "tool", "tool": tool, "arguments": red})


def redacted_args_hash(arguments: Any) -> str:
    """The args hash of redacted ``arguments`` (what fixtures read from a user's file and
    requirements match by).

    Raises:
        CanonicalizationError: the arguments have no canonical form.
    """
    red, _ = redact(arguments)
    return canonical_hash(red)


def redacted_model_key(model: str, request: ModelRequest) -> str:
    """The key of a model call computed on its redacted request.

    Raises:
        CanonicalizationError: a value of the request has no canonical form.
    """
    identity, _ = redact(request.identity())
    return canonical_hash({"kind": "model", "model": model, **identity})
