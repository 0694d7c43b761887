"""Redaction of secrets in recordings (SPEC "Recording format", Privacy).

Two mechanisms, applied on save, on record and on import:

1. **By field name** — a value whose field name looks sensitive is replaced with
   :data:`REDACTED`. Names are split into words (``snake_case``, ``kebab-case``,
   ``camelCase``); a name is sensitive when it is or ends in one of ``api key``,
   ``apikey``, ``access key``, ``private key``, ``secret key``, ``token`` (singular:
   ``access_token``, ``x-auth-token``), or contains ``authorization``, ``password``,
   ``passwd``, ``secret``, ``cookie``, ``credential``. Counters and ordinary fields are
   not caught: ``max_tokens``, ``input_tokens``, ``output_tokens``, ``token_count``,
   ``tokenizer``, ``key``, ``args_hash``. HTTP header lists (``[name, value]`` pairs or
   ``{"name", "value"}`` objects) use the broader header rule: a header whose name
   contains ``key``, ``token``, ``secret``, ``authorization`` or ``cookie``.
2. **By value** — :class:`SecretRedactor` scrubs known secret strings (given
   explicitly or read from named environment variables) from every string, and
   optionally secret-looking values (``sk-…``, ``sk-ant-…``, ``AKIA…``, ``ghp_…``,
   ``hf_…``, ``Bearer …``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_CONTAINS = ("authorization", "password", "passwd", "secret", "cookie", "credential")
_KEY_PREFIX = {"api", "access", "private", "secret", "signing", "encryption", "client", "auth"}
_HEADER_PARTS = ("key", "token", "secret", "authorization", "cookie")

SECRET_VALUE_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-(?:proj-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
    re.compile(r"hf_[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{16,}"),
)


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


def is_sensitive_name(name: str) -> bool:
    """True when a JSON field named ``name`` should have its value redacted."""
    if not isinstance(name, str) or not name:
        return False
    words = _words(name)
    if not words:
        return False
    joined = "".join(words)
    if any(part in joined for part in _CONTAINS):
        return True
    last = words[-1]
    if last in ("apikey", "token", "accesstoken", "authtoken"):
        return True
    if last == "key" and len(words) >= 2 and words[-2] in _KEY_PREFIX:
        return True
    return False


def is_sensitive_header(name: str) -> bool:
    """True when an HTTP header named ``name`` carries credentials (broader rule)."""
    if not isinstance(name, str):
        return False
    low = name.lower()
    return any(part in low for part in _HEADER_PARTS)


class SecretRedactor:
    """Scrubs known secret values from every string of a JSON value.

    Args:
        secrets: literal secret strings (shorter than 4 characters are ignored: they
            would scrub ordinary text).
        env: names of environment variables whose current values are secrets.
        patterns: also scrub secret-looking values (:data:`SECRET_VALUE_PATTERNS`).
    """

    def __init__(
        self,
        secrets: Iterable[str] = (),
        env: Iterable[str] = (),
        *,
        patterns: bool = False,
    ) -> None:
        values = {s for s in secrets if isinstance(s, str) and len(s) >= 4}
        for var in env:
            v = os.environ.get(var)
            if v and len(v) >= 4:
                values.add(v)
        # longest first so a secret containing another is scrubbed whole
        self.secrets = sorted(values, key=len, reverse=True)
        self.patterns = patterns
        self._regex = re.compile("|".join(re.escape(s) for s in self.secrets)) if self.secrets else None

    def scrub_text(self, text: str) -> str:
        """``text`` with every known (and, if enabled, pattern-matched) secret replaced."""
        if self._regex is not None:
            text = self._regex.sub(REDACTED, text)
        if self.patterns:
            for pat in SECRET_VALUE_PATTERNS:
                text = pat.sub(REDACTED, text)
        return text

    def __bool__(self) -> bool:
        return bool(self.secrets) or self.patterns


def _header_pair(item: Any) -> tuple[str, str] | None:
    """Recognise one header-list entry; return (name field, value field) accessors."""
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
        return ("0", "1")
    if isinstance(item, dict) and isinstance(item.get("name"), str) and "value" in item:
        return ("name", "value")
    return None


def redact(value: Any, redactor: SecretRedactor | None = None) -> tuple[Any, bool]:
    """Redact a JSON value by field name and (if given) by ``redactor``.

    Returns ``(new_value, changed)``; ``value`` itself is never mutated. Lists that look
    like HTTP header lists (every item a ``[name, value]`` pair or a ``{name, value}``
    object) are redacted by header name.
    """
    if isinstance(value, str):
        if redactor:
            new = redactor.scrub_text(value)
            return new, new != value
        return value, False
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        changed = False
        for k, v in value.items():
            if isinstance(k, str) and is_sensitive_name(k) and v not in (None, REDACTED, "", [], {}):
                out[k] = REDACTED
                changed = True
                continue
            nv, c = redact(v, redactor)
            out[k] = nv
            changed |= c
        return (out if changed else value), changed
    if isinstance(value, list):
        header_like = bool(value) and all(_header_pair(i) is not None for i in value)
        out_list: list[Any] = []
        changed = False
        for item in value:
            if header_like:
                name_f, value_f = _header_pair(item)  # type: ignore[misc]
                name = item[0] if name_f == "0" else item["name"]
                if is_sensitive_header(name) and (item[1] if name_f == "0" else item["value"]) != REDACTED:
                    if name_f == "0":
                        out_list.append([name, REDACTED])
                    else:
                        out_list.append({**item, "value": REDACTED})
                    changed = True
                    continue
            nv, c = redact(item, redactor)
            out_list.append(nv)
            changed |= c
        return (out_list if changed else value), changed
    return value, False
