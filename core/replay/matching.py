"""Key exclusions: request paths that matching ignores (a branch policy's
``key_exclusions``; docs/proxy.md, "Explain misses").

An exclusion is a JSON Pointer (RFC 6901) into a model request as a requirement's
``nearest.diff`` shows it — ``/messages/0/content``, ``/options/seed`` — where a segment
``*`` stands for any one member or item (``/messages/*/content`` ignores every message's
content). A model call is then matched on :func:`excluded_model_key`: the canonical key of
its request with those paths removed; the event keeps its full canonical key. A replay
matched this way says so: its comparability is at most ``partial``, naming the paths.
Tool calls are matched on their arguments exactly.
"""

from __future__ import annotations

from typing import Any

from ..record.canonical import canonical_hash
from ..record.recording import ModelRequest
from ..record.redaction import redact

__all__ = ["check_exclusion", "excluded_model_key", "remove_paths", "pointer_tokens"]


def pointer_tokens(pointer: str) -> list[str]:
    """The reference tokens of a JSON Pointer (RFC 6901 §4: ``~1`` is ``/``, ``~0`` is ``~``).

    Raises:
        ValueError: not a pointer (it must be empty or start with ``/``).
    """
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON Pointer (RFC 6901): it must start with '/'")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def check_exclusion(pointer: str) -> str:
    """``pointer`` if it can name a part of a model request (``/messages…``, ``/tools…``,
    ``/stop…`` or ``/options…``).

    Raises:
        ValueError: the reason, naming the pointer.
    """
    tokens = pointer_tokens(pointer)
    if not tokens or tokens[0] not in ("messages", "tools", "stop", "options"):
        raise ValueError(
            f"key exclusion {pointer!r} must point into a model request: /messages/…, /tools/…, /stop or /options/…"
        )
    if tokens == ["messages"] or tokens == ["tools"]:
        raise ValueError(f"key exclusion {pointer!r} would ignore the whole {tokens[0]}: name a part of it")
    return pointer


def _remove(value: Any, tokens: list[str]) -> Any:
    if not tokens:
        return value
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        if not keys:
            return value
        out = dict(value)
        for k in keys:
            if rest:
                out[k] = _remove(out[k], rest)
            else:
                del out[k]
        return out
    if isinstance(value, list):
        if head == "*":
            idx = list(range(len(value)))
        elif head.isdigit() and int(head) < len(value):
            idx = [int(head)]
        else:
            return value
        out_l = list(value)
        if rest:
            for i in idx:
                out_l[i] = _remove(out_l[i], rest)
            return out_l
        return [v if i not in idx else {"$excluded": True} for i, v in enumerate(out_l)]
    return value


def remove_paths(value: Any, pointers: tuple[str, ...] | list[str]) -> Any:
    """``value`` (JSON) without the parts the pointers name (a removed array item leaves
    ``{"$excluded": true}`` in its place, so the other items keep their positions)."""
    for p in pointers:
        value = _remove(value, pointer_tokens(p))
    return value


def excluded_model_key(model: str, request: ModelRequest, exclusions: tuple[str, ...] | list[str]) -> str:
    """The key a model call is matched on under key exclusions: the canonical hash of its
    redacted identity (:meth:`ModelRequest.identity`) without the excluded paths, marked
    so it never equals a full canonical key."""
    identity, _ = redact(request.identity())
    kept = remove_paths(identity, exclusions)
    return "excluded:" + canonical_hash({"kind": "model", "model": model, "exclusions": list(exclusions), **kept})
