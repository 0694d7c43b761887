"""Redaction of secrets in everything the product writes (docs/format.md, "Redaction").

One redaction, :func:`redact`, applied to every JSON value before it is written:
recordings (on save, on record, on import), replay events, fixtures, branches,
interventions, policies and ``--args-json`` values (when their file is read), the
workspace database and exports. Three rules:

1. **By field name** — the value of a field whose name looks sensitive is replaced with
   a marker. Names are split into words (``snake_case``, ``kebab-case``, ``camelCase``);
   a name is sensitive when it contains ``authorization``, ``password``, ``passwd``,
   ``passphrase``, ``secret``, ``cookie`` or ``credential``, or ends in ``pwd``,
   ``token`` (singular), ``apikey``, ``auth``, or ``key`` after ``api``/``access``/
   ``private``/``secret``/``ssh``/``client``/``auth``/``signing``/``encryption``/
   ``master``/``session``/``license``/``subscription``; an organisation or project id
   header (``openai-organization``,
   ``openai-project``, ``…-organization-id``) too. ``auth`` and organisation ids only
   hide string values. Counters and ordinary fields are not caught: ``max_tokens``,
   ``input_tokens``, ``x-ratelimit-remaining-tokens``, ``token_count``, ``tokenizer``,
   ``key``, ``args_hash``. HTTP header lists (``[name, value]`` pairs or
   ``{"name", "value"}`` objects) use the header rule: the name rule, or a name with the
   word ``key``, ``token``, ``auth`` or ``organization``. URL query parameters use the
   header rule plus ``code``, ``sig``, ``signature``, ``otp``.
2. **By shape**, in every string — the pattern plugins of Yelp's ``detect-secrets``
   (:data:`DETECT_SECRETS_KINDS`; its entropy and keyword plugins are not used: entropy
   would flag the recording's own hashes, keys, digests and ids, and ``IPPublicDetector``
   flags addresses, not secrets) plus the rules of :data:`OWN_RULES` for shapes it does
   not know or matches only in part (a PEM block to its ``END`` line, a whole JWT,
   ``github_pat_``, ``AIza…``, ``sk-…``, ``sk_live_…`` of any length, the password of a
   URL, ``Basic`` credentials, bearer tokens, organisation ids), and the name rule inside
   text: ``NAME: VALUE``, ``NAME=VALUE``, ``"NAME": "VALUE"`` (JSON held in a string,
   escaped or not), ``--NAME VALUE`` and ``?NAME=VALUE``.
3. **Known secrets** — strings given to :class:`SecretRedactor` (``secrets``, ``env``)
   and every secret a redactor has removed so far (**propagation**: once a value is
   redacted anywhere in a run, the same value is scrubbed everywhere in that run;
   :func:`core.record.recording_redaction.redact_recording` runs a second pass over the
   whole run for values found after their first appearance).

Markers say what was removed — ``[REDACTED:private-key]``, ``[REDACTED:jwt]``,
``[REDACTED:url-password]``, ``[REDACTED:password]`` … (:func:`marker`); the plain
``[REDACTED]`` of older recordings is still recognised (:data:`MARKER_RE`,
:func:`has_marker`). Redaction is idempotent: a redacted value redacts to itself.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import pkgutil
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "DETECT_SECRETS_KINDS",
    "MARKER_RE",
    "OWN_RULES",
    "REDACTED",
    "SECRET_VALUE_PATTERNS",
    "SecretRedactor",
    "clear_caches",
    "find_secrets",
    "has_marker",
    "header_kind",
    "holds_marker",
    "is_marker",
    "is_sensitive_header",
    "is_sensitive_name",
    "marker",
    "marker_kinds",
    "name_kind",
    "query_kind",
    "redact",
]

#: the plain marker of older recordings (still recognised everywhere markers are looked for)
REDACTED = "[REDACTED]"
#: any redaction marker: the plain one or ``[REDACTED:KIND]``
MARKER_RE = re.compile(r"\[REDACTED(?::([a-z0-9][a-z0-9.\-]*))?\]")


def marker(kind: str | None) -> str:
    """The marker that replaces a secret of ``kind`` (``[REDACTED:jwt]``); the plain
    ``[REDACTED]`` without a kind."""
    return f"[REDACTED:{kind}]" if kind else REDACTED


def is_marker(value: Any) -> bool:
    """True when ``value`` is exactly one redaction marker (any kind, or the plain one)."""
    return type(value) is str and value[:9] == "[REDACTED" and MARKER_RE.fullmatch(value) is not None


def has_marker(text: Any) -> bool:
    """True when the string ``text`` holds a redaction marker (any kind, or the plain one)."""
    return type(text) is str and "[REDACTED" in text and MARKER_RE.search(text) is not None


_MARKER_BYTES = re.compile(rb"\[REDACTED(?::[a-z0-9][a-z0-9.\-]*)?\]")


def holds_marker(value: Any) -> bool:
    """True when a JSON value holds a redaction marker in any of its strings (object
    names included)."""
    if type(value) is str:
        return has_marker(value)
    if type(value) is dict or type(value) is list:
        try:
            data = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return has_marker(str(value))
        return b"[REDACTED" in data and _MARKER_BYTES.search(data) is not None
    return False


def marker_kinds(text: str) -> list[str]:
    """The kinds named by the markers in ``text``, in order (``""`` for a plain marker)."""
    return [m.group(1) or "" for m in MARKER_RE.finditer(text)]


# --------------------------------------------------------------------------- names

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_KEY_PREFIX = {
    "access",
    "secret",
    "signing",
    "encryption",
    "client",
    "auth",
    "master",
    "session",
    "license",
    "subscription",
}
_PROVIDERS = {"openai", "anthropic", "x", "azure"}
#: name kinds that only hide a string value (an ``auth`` object or flag is kept and walked)
_WEAK_KINDS = frozenset({"auth", "organization-id", "project-id"})
_NAME_CACHE: dict[str, str | None] = {}
_HEADER_CACHE: dict[str, str | None] = {}
_QUERY_NAMES = {
    "code": "auth-code",
    "sig": "signature",
    "signature": "signature",
    "otp": "otp",
    "pwd": "password",
    "pw": "password",
    "pass": "password",
    "jwt": "jwt",
}


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


def _name_kind(name: str) -> str | None:
    words = _words(name)
    if not words:
        return None
    joined = "".join(words)
    if "password" in joined or "passwd" in joined or "passphrase" in joined or words[-1] == "pwd":
        return "password"
    if "authorization" in joined:
        return "authorization"
    if "cookie" in joined:
        return "cookie"
    if "credential" in joined:
        return "credential"
    if "secret" in joined:
        return "secret"
    last = words[-1]
    prev = words[-2] if len(words) >= 2 else ""
    if last == "apikey" or (last == "key" and prev == "api"):
        return "api-key"
    if last == "key" and prev in ("private", "ssh"):
        return "private-key"
    if last == "key" and prev in _KEY_PREFIX:
        return f"{prev}-key"
    if last in ("token", "accesstoken", "authtoken", "refreshtoken", "idtoken", "bearertoken"):
        return "token"
    if last == "auth":
        return "auth"
    if last == "organization" and words[0] in _PROVIDERS:
        return "organization-id"
    if last == "id" and prev in ("organization", "org") and (len(words) == 2 or words[0] in _PROVIDERS):
        return "organization-id"
    if words == ["openai", "project"]:
        return "project-id"
    return None


def name_kind(name: Any) -> str | None:
    """The kind of secret a JSON field (or text assignment) named ``name`` holds
    (``password``, ``api-key``, ``token``, …; see the module docstring), ``None`` for an
    ordinary field."""
    if type(name) is not str or not name:
        return None
    kind = _NAME_CACHE.get(name, "")
    if kind == "":
        kind = _name_kind(name)
        if len(_NAME_CACHE) < 100_000:
            _NAME_CACHE[name] = kind
    return kind


def is_sensitive_name(name: Any) -> bool:
    """True when a JSON field named ``name`` should have its value redacted."""
    return name_kind(name) is not None


def header_kind(name: Any) -> str | None:
    """The kind of secret an HTTP header named ``name`` carries (the name rule, or a name
    with the word ``key``, ``token``, ``auth`` or ``organization``), else ``None``.
    Rate-limit counters (``x-ratelimit-remaining-tokens``) are not caught."""
    if type(name) is not str or not name:
        return None
    kind = _HEADER_CACHE.get(name, "")
    if kind != "":
        return kind
    kind = name_kind(name)
    if kind is None:
        for w in _words(name):
            if w in ("key", "apikey"):
                kind = "api-key"
            elif w == "token":
                kind = "token"
            elif w == "auth":
                kind = "auth"
            elif w == "organization":
                kind = "organization-id"
            if kind is not None:
                break
    if len(_HEADER_CACHE) < 100_000:
        _HEADER_CACHE[name] = kind
    return kind


def is_sensitive_header(name: Any) -> bool:
    """True when an HTTP header named ``name`` carries credentials (the header rule)."""
    return header_kind(name) is not None


def query_kind(name: Any) -> str | None:
    """The kind of secret a URL query parameter named ``name`` carries (the header rule,
    plus ``code``, ``sig``, ``signature``, ``otp``), else ``None``."""
    if type(name) is not str or not name:
        return None
    return header_kind(name) or _QUERY_NAMES.get(name.lower())


# --------------------------------------------------------------------------- shapes

_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@dataclass(frozen=True)
class _Rule:
    """One shape. ``regex`` finds it; the secret is the match (``group`` 0, trimmed of
    ``trim``), one group, or every group that matched (``group`` ``None``); ``extend``
    stretches the secret's end over what follows it; ``check`` accepts the match;
    ``lead`` (when set) holds the characters one of which must stand just before the
    match (the regex then starts with a literal); ``after`` holds the characters that may
    not stand just before the match (or before its lead).

    Which texts the rule runs on (a rule is tried only where it can match, so most text
    is scanned for a few literals, not by every rule): ``anchors`` — one of these
    literals is in the text; ``lower`` — one of these is in the lower-cased text;
    ``probe`` — this regex (a part every match holds) matches; ``window`` — only around
    a keyword assignment (``KEY = VALUE`` with a long value); none of them — every text.
    """

    kind: str
    regex: re.Pattern[str]
    group: int | None = 0
    extend: re.Pattern[str] | None = None
    check: Callable[[str], bool] | None = None
    trim: str = ""
    lead: str = ""
    after: frozenset[str] = frozenset()
    anchors: tuple[str, ...] = ()
    lower: tuple[str, ...] = ()
    probe: re.Pattern[str] | None = None
    window: bool = False


def _basic_credentials(value: str) -> bool:
    """Whether ``value`` is base64 of ``user:password`` (printable text with a colon);
    a plain word (``Basic economy``) is not."""
    if len(value) < 8 or (value.isalpha() and (value.islower() or value.istitle())):
        return False
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


_AWS_IDS = ("A3T", "ABIA", "ACCA", "AKIA", "ASIA")
_WORD = _ALNUM | {"_", "-"}

#: shapes detect-secrets does not know, or matches only in part (each regex starts with a
#: literal, so the regex engine skips ahead to it)
OWN_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        anchors=("PRIVATE KEY",),
    ),
    _Rule(
        "private-key",
        re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9a-fA-F]+|\Z)", re.S),
        anchors=("PuTTY-User-Key-File",),
    ),
    _Rule(
        "jwt",
        re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
        after=_WORD,
        anchors=("eyJ",),
    ),
    _Rule("slack-token", re.compile(r"xox[a-z]-[A-Za-z0-9-]{8,}"), after=_ALNUM, anchors=("xox",)),
    _Rule("slack-token", re.compile(r"xapp-\d-[A-Za-z0-9-]{8,}"), after=_ALNUM, anchors=("xapp-",)),
    _Rule("google-api-key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), after=_ALNUM, anchors=("AIza",)),
    _Rule("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), after=_ALNUM, anchors=("github_pat_",)),
    _Rule(
        "github-token",
        re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}"),
        after=_ALNUM,
        anchors=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Rule(
        "stripe-key", re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{10,}"), after=_ALNUM, anchors=("sk_live_", "sk_test_")
    ),
    _Rule(
        "stripe-key", re.compile(r"rk_(?:live|test)_[0-9A-Za-z]{10,}"), after=_ALNUM, anchors=("rk_live_", "rk_test_")
    ),
    _Rule(
        "aws-access-key",
        re.compile(r"A(?:3T[A-Z0-9]|BIA|CCA|KIA|SIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
        after=_ALNUM,
        anchors=_AWS_IDS,
    ),
    _Rule(
        "aws-secret-key",
        re.compile(
            r"(?i:aws)[A-Za-z0-9_.\-]{0,24}(?i:secret|key)[A-Za-z0-9_.\- \"':=\\]{0,24}?"
            r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        group=1,
        anchors=("aws", "AWS", "Aws"),
    ),
    _Rule(
        "url-password",
        re.compile(r"://[^\s/?#@:\"'<>\\]{0,256}:([^\s/?#\"'<>\\]{1,256})@"),
        group=1,
        anchors=("://",),
    ),
    _Rule(
        "basic-auth",
        # the credentials are base64 of user:password, never a plain word ("Basic economy")
        re.compile(r"asic[ \t]+(?![A-Z]?[a-z]+(?![A-Za-z0-9+/=]))([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])"),
        group=1,
        check=lambda m: _basic_credentials(m.split()[-1]),
        lead="Bb",
        after=_ALNUM,
        probe=re.compile(r"asic[ \t]+[A-Za-z0-9+/]{6}"),
    ),
    _Rule(
        "bearer-token",
        re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+([A-Za-z0-9._~+/\-]{16,}=*)"),
        group=1,
        after=_ALNUM,
        anchors=("bearer", "Bearer", "BEARER"),
    ),
    _Rule("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), after=_ALNUM, anchors=("sk-ant-",)),
    _Rule(
        "openai-key",
        re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
        after=_ALNUM,
        anchors=("sk-",),
    ),
    _Rule("huggingface-token", re.compile(r"hf_[A-Za-z0-9]{20,}"), after=_ALNUM, anchors=("hf_",)),
    _Rule(
        "organization-id",
        re.compile(r"org-[A-Za-z0-9]{20,}(?![A-Za-z0-9])"),
        after=_ALNUM | {"-"},
        anchors=("org-",),
    ),
    _Rule(
        "project-id",
        re.compile(r"proj_[A-Za-z0-9]{20,}(?![A-Za-z0-9])"),
        after=_WORD,
        anchors=("proj_",),
    ),
)
#: the compiled regexes of :data:`OWN_RULES` (kept under this name for callers that pre-check text)
SECRET_VALUE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(r.regex for r in OWN_RULES)

#: detect-secrets plugin (a ``RegexBasedDetector``) → the marker kind of each of its patterns
DETECT_SECRETS_KINDS: dict[str, tuple[str, ...]] = {
    "ArtifactoryDetector": ("artifactory-token", "artifactory-password"),
    "AWSKeyDetector": ("aws-access-key", "aws-secret-key"),
    "AzureStorageKeyDetector": ("azure-storage-key",),
    "BasicAuthDetector": ("url-password",),
    "CloudantDetector": ("cloudant-credential",),
    "DiscordBotTokenDetector": ("discord-token",),
    "GitHubTokenDetector": ("github-token",),
    "GitLabTokenDetector": ("gitlab-token",),
    "IbmCloudIamDetector": ("ibm-cloud-key",),
    "IbmCosHmacDetector": ("ibm-cos-key",),
    "JwtTokenDetector": ("jwt",),
    "MailchimpDetector": ("mailchimp-key",),
    "NpmDetector": ("npm-token",),
    "OpenAIDetector": ("openai-key",),
    "PrivateKeyDetector": ("private-key",),
    "PypiTokenDetector": ("pypi-token",),
    "SendGridDetector": ("sendgrid-key",),
    "SlackDetector": ("slack-token", "slack-webhook"),
    "SoftlayerDetector": ("softlayer-key",),
    "SquareOAuthDetector": ("square-secret",),
    "StripeDetector": ("stripe-key",),
    "TelegramBotTokenDetector": ("telegram-token",),
    "TwilioKeyDetector": ("twilio-key",),
}
# Where each detect-secrets pattern can match (see _Rule): literals one of which every
# match holds ("lower:" — in the lower-cased text), "re:" a regex every match holds,
# "window" for a keyword assignment (KEY = VALUE), "" for every text. A pattern not
# listed (a newer detect-secrets) runs on every text.
_DETECT_SECRETS_WHERE: dict[str, tuple[str, ...]] = {
    "ArtifactoryDetector": ("re:AKC[a-zA-Z0-9]{10}", "re:AP[0-9A-F][a-zA-Z0-9]{8}"),
    "AWSKeyDetector": (",".join(_AWS_IDS), "aws,AWS,Aws"),
    "AzureStorageKeyDetector": ("AccountKey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": ("window", "window", "://", "://"),
    "DiscordBotTokenDetector": (r"re:\.[A-Za-z0-9_-]{6}\.",),
    "GitHubTokenDetector": ("ghp_,gho_,ghu_,ghs_,ghr_",),
    "GitLabTokenDetector": (
        "glpat-,gldt-,glft-,glsoat-,glrt-",
        "GR1348941",
        "glcbt-",
        "glimt-",
        "glptt-",
        "glagent-",
        "gloas-",
    ),
    "IbmCloudIamDetector": ("window",),
    "IbmCosHmacDetector": ("window",),
    "JwtTokenDetector": ("eyJ",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": ("_authToken",),
    "OpenAIDetector": ("T3BlbkFJ",),
    "PrivateKeyDetector": ("PRIVATE KEY",) * 7 + ("PuTTY-User-Key-File-2",),
    "PypiTokenDetector": ("pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"),
    "SendGridDetector": ("SG.",),
    "SlackDetector": ("xox", "://"),
    "SoftlayerDetector": ("window", "://"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": ("re::[0-9A-Za-z_-]{35}",),
    "TwilioKeyDetector": ("AC", "SK"),
}
#: detect-secrets plugins not used: public IP addresses are not secrets
_DETECT_SECRETS_SKIPPED = {"IPPublicDetector"}

#: the words of the name rule, looked for (lower-cased) before names inside text are read
_KEYWORDS = ("pass", "pwd", "secret", "token", "key", "auth", "cookie", "credent")
_KEYWORD = re.compile("|".join(_KEYWORDS), re.I)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
#: characters many anchors hold: the anchors holding one are looked for together, by one
#: regex that starts at that character (the regex engine skips ahead to a literal first
#: character quickly; an alternation of literals starting with common letters it tries at
#: every position)
_GUARDS = "_-:."
_NAME_END = re.compile(r"[A-Za-z0-9_.\-]*")
#: what may follow a name that is assigned a value: a closing quote (escaped or not), an
#: assignment, or blanks before one (``--flag VALUE`` included)
_AFTER_NAME = frozenset("\"'\\:= \t>")
# after a name: its closing quote, an assignment, then a quoted value (escaped or not) or a bare one
_ASSIGN = re.compile(
    r"(?:\\{0,4}[\"'])?[ \t]{0,4}(?::=|=>|=|:)[ \t]{0,4}"
    r"(?:(?P<vq>\\{0,4}[\"'])(?P<qv>[^\n]*?)(?P=vq)"
    r"|(?P<uv>(?:(?:[Bb]asic|[Bb]earer|[Tt]oken|[Dd]igest)[ \t]+)?[^\s\"'`,;&<>{}\[\]()\\]+))"
)
_FLAG_VALUE = re.compile(r"[ \t]+(?P<uv>[^\s\"'`,;&<>{}\[\]()\\-][^\s\"'`,;&<>{}\[\]()\\]*)")
# a keyword assignment with a long value: where the windowed detect-secrets patterns can match
_LONG_VALUE = re.compile(r"[\"'\]]{0,2}[ \t]*(?::=|=>|::|=|:|[ \t])[ \t]*[\"']?[A-Za-z0-9_\-+/]{24}")
_QUERY = re.compile(r"[?&;](?P<name>[A-Za-z0-9_.%\-\[\]]{1,64})=(?P<value>[^&#\s\"'<>\\]+)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9.]+")
_PLAIN_VALUES = frozenset({"null", "none", "true", "false", "undefined", "nil", "string", "str", "bool", "int"})
#: our own values that are never secrets: digests, keys and args hashes, workspace ids
_OWN_VALUE = re.compile(r"sha256:[0-9a-f]{64}|(?:rp|br|req|fx)-[0-9a-f]{6,32}")
#: no rule matches a text this short without ``:`` or ``=`` (known secrets aside)
_MIN_LENGTH = 13


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "secret"


#: detect-secrets plugins whose capture groups are not the secret (the token's prefix,
#: ``(glpat|gldt|…)-``, or an optional part of it): the whole match is hidden
_DETECT_SECRETS_WHOLE_MATCH = frozenset({"GitHubTokenDetector", "GitLabTokenDetector"})


def _detect_secrets_rules() -> tuple[_Rule, ...]:
    """A rule per pattern of every ``RegexBasedDetector`` plugin of detect-secrets
    (kinds from :data:`DETECT_SECRETS_KINDS`, else the plugin's ``secret_type``; where
    it runs from :data:`_DETECT_SECRETS_WHERE`)."""
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector

    out: list[_Rule] = []
    for info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, RegexBasedDetector)) or cls is RegexBasedDetector:
                continue
            if cls.__module__ != module.__name__ or cls.__name__ in _DETECT_SECRETS_SKIPPED:
                continue
            kinds = DETECT_SECRETS_KINDS.get(cls.__name__, ())
            where = _DETECT_SECRETS_WHERE.get(cls.__name__, ())
            patterns: list[re.Pattern[str]] = list(getattr(cls, "denylist", ()))  # class attribute of each plugin
            for i, regex in enumerate(patterns):
                kind = kinds[i] if i < len(kinds) else kinds[-1] if kinds else _slug(str(cls.secret_type))
                place = where[i] if i < len(where) else ""
                at: dict[str, Any] = {}
                if place == "window":
                    at["window"] = True
                elif place.startswith("lower:"):
                    at["lower"] = tuple(place[6:].split(","))
                elif place.startswith("re:"):
                    at["probe"] = re.compile(place[3:])
                elif place:
                    at["anchors"] = tuple(place.split(","))
                if cls is JwtTokenDetector:
                    rule = _Rule(
                        kind,
                        regex,
                        extend=re.compile(r"[A-Za-z0-9_\-+/=]*"),
                        check=JwtTokenDetector.is_formally_valid,
                        **at,
                    )
                else:
                    whole = not regex.groups or cls.__name__ in _DETECT_SECRETS_WHOLE_MATCH
                    rule = _Rule(kind, regex, group=0 if whole else None, trim=" \t\r\n=:\"'", **at)
                out.append(rule)
    return tuple(out)


_Check = tuple[str | re.Pattern[str], list[_Rule]]


def _grouped(items: list[_Check]) -> list[_Check]:
    """Literal checks sharing a first character as one regex (their rules together)."""
    by_first: dict[str, list[tuple[str, list[_Rule]]]] = {}
    out: list[_Check] = []
    for check, rules in items:
        if type(check) is str:
            by_first.setdefault(check[0], []).append((check, rules))
        else:
            out.append((check, rules))
    for first, lits in by_first.items():
        if len(lits) == 1:
            out.append(lits[0])
            continue
        rests = sorted({re.escape(lit[1:]) for lit, _ in lits}, key=len, reverse=True)
        merged = list({id(r): r for _, rules in lits for r in rules}.values())
        out.append((re.compile(re.escape(first) + "(?:" + "|".join(rests) + ")"), merged))
    return out


class _Detector:
    """The shape rules, :data:`OWN_RULES` and detect-secrets' pattern plugins (loaded on
    first use), indexed by where they run.

    The checks that pick a text's rules come in families, each behind one cheap gate: the
    anchors holding ``_``, ``-`` or ``:`` are looked for only in a text that holds that
    character; the ones starting with a capital letter behind one regex of them all (the
    regex engine scans quickly for a rare first character, but tries an alternation of
    many literals starting with common letters at every position)."""

    def __init__(self) -> None:
        self._ready = False
        self._lock = threading.Lock()
        self.families: list[
            tuple[
                str | re.Pattern[str] | None, list[tuple[str, list[_Rule]]], list[tuple[re.Pattern[str], list[_Rule]]]
            ]
        ] = []
        self.lowered: list[tuple[str, list[_Rule]]] = []
        self.windowed: tuple[_Rule, ...] = ()
        self.everywhere: tuple[_Rule, ...] = ()

    def load(self) -> _Detector:
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._index(OWN_RULES + _detect_secrets_rules())
                    self._ready = True
        return self

    def _index(self, all_rules: tuple[_Rule, ...]) -> None:
        checks: dict[str, list[_Rule]] = {}
        probes: dict[str, tuple[re.Pattern[str], list[_Rule]]] = {}
        lowered: dict[str, list[_Rule]] = {}
        windowed: list[_Rule] = []
        everywhere: list[_Rule] = []
        for rule in all_rules:
            if rule.window:
                windowed.append(rule)
            elif rule.anchors:
                for a in rule.anchors:
                    checks.setdefault(a, []).append(rule)
            elif rule.lower:
                for a in rule.lower:
                    lowered.setdefault(a, []).append(rule)
            elif rule.probe is not None:
                probes.setdefault(rule.probe.pattern, (rule.probe, []))[1].append(rule)
            else:
                everywhere.append(rule)
        family: dict[str, list[_Check]] = {}
        branches: dict[str, list[str]] = {}  # a family's gate: one regex of all its checks
        for lit, rules in checks.items():
            guard = next((c for c in _GUARDS if c in lit), "")
            if guard:  # the regex starts at the guard, what comes before it a look-behind
                k = lit.index(guard)
                before = f"(?<={re.escape(lit[: k + 1])})" if k else ""  # after the guard: it is matched
                branches.setdefault(guard, []).append(before + re.escape(lit[k + 1 :]))
            elif lit[0].isupper():
                guard = "A-Z"
                branches.setdefault(guard, []).append(re.escape(lit))
            family.setdefault(guard, []).append((lit, rules))
        for pattern, (probe, rules) in probes.items():
            first = pattern[1] if pattern.startswith("\\") else pattern[0]
            guard = next((c for c in _GUARDS if c == first), "")
            if guard:
                branches.setdefault(guard, []).append(pattern[2 if pattern.startswith("\\") else 1 :])
            elif first.isupper() and re.match(r"[A-Za-z0-9]", first):
                guard = "A-Z"
                branches.setdefault(guard, []).append(pattern)
            family.setdefault(guard, []).append((probe, rules))
        for guard, items in family.items():
            gate: str | re.Pattern[str] | None = None
            if guard == "A-Z":
                gate = re.compile("|".join(sorted(branches[guard], key=len, reverse=True)))
            elif guard:
                alts = "|".join(sorted(branches[guard], key=len, reverse=True))
                gate = re.compile(re.escape(guard) + "(?:" + alts + ")")
            grouped = _grouped(items)
            literals = [(c, r) for c, r in grouped if type(c) is str]
            regexes = [(c, r) for c, r in grouped if type(c) is not str]
            self.families.append((gate, literals, regexes))  # type: ignore[arg-type]
        self.lowered = list(lowered.items())
        self.windowed = tuple(windowed)
        self.everywhere = tuple(everywhere)

    def rules_for(self, text: str) -> list[_Rule]:
        """The rules that may match ``text``."""
        found: list[_Rule] = []
        for gate, literals, regexes in self.families:
            if gate is not None and (gate not in text if type(gate) is str else gate.search(text) is None):  # type: ignore[union-attr]
                continue
            for lit, rules in literals:
                if lit in text:
                    found += rules
            for regex, rules in regexes:
                if regex.search(text) is not None:
                    found += rules
        if self.lowered:
            low = text.lower()
            for lit, rules in self.lowered:
                if lit in low:
                    found += rules
        if self.everywhere:
            found += self.everywhere
        if len(found) > 1:
            found = list({id(r): r for r in found}.values())
        return found


_DETECTOR = _Detector()


def _rule_spans(text: str, rule: _Rule, out: list[tuple[int, int, str]], offset: int = 0) -> None:
    for m in rule.regex.finditer(text):
        start = m.start()
        if rule.lead:
            if start == 0 or text[start - 1] not in rule.lead:
                continue
            start -= 1
        if rule.after and start > 0 and text[start - 1] in rule.after:
            continue
        if rule.check is not None and not rule.check(m.group(0)):
            continue
        if rule.group is None:
            n = rule.regex.groups or 0
            spans = [m.span(g) for g in range(1, n + 1) if m.start(g) >= 0 and m.end(g) > m.start(g)]
        else:
            spans = [m.span(rule.group)]
        for s, e in spans:
            if rule.trim:
                while s < e and text[s] in rule.trim:
                    s += 1
                while e > s and text[e - 1] in rule.trim:
                    e -= 1
            if rule.extend is not None:
                x = rule.extend.match(text, e)
                if x is not None:
                    e = x.end()
            if e > s:
                out.append((s + offset, e + offset, rule.kind))


def _value_ok(value: str, quoted: bool) -> bool:
    """Whether a value assigned to a sensitive name in text is worth hiding: not empty,
    not a marker, not a placeholder word; a bare value not an identifier or a number
    (``token = get_token()``, ``password: str``, ``self.key = key``)."""
    if not value or value.lower() in _PLAIN_VALUES or has_marker(value) or _OWN_VALUE.fullmatch(value):
        return False
    if quoted:
        return True
    return len(value) >= 4 and _IDENTIFIER.fullmatch(value) is None


def _keyword_hits(text: str, low: str) -> list[int]:
    """Start offsets of the name rule's words in ``text``, in order."""
    if len(low) != len(text):  # lower-casing changed the length: offsets would not match
        return [m.start() for m in _KEYWORD.finditer(text)]
    hits: list[int] = []
    for kw in _KEYWORDS:
        i = low.find(kw)
        while i >= 0:
            hits.append(i)
            i = low.find(kw, i + 1)
    hits.sort()
    return hits


def _assignment_spans(text: str, low: str, windowed: tuple[_Rule, ...], out: list[tuple[int, int, str]]) -> None:
    """Values assigned to sensitive names inside text (see the module docstring), and the
    windowed detect-secrets patterns around keyword assignments with a long value."""
    n = len(text)
    done = 0
    name_end = _NAME_END.match
    for start in _keyword_hits(text, low):
        if start < done:
            continue
        i = start
        while i > 0 and text[i - 1] in _NAME_CHARS:
            i -= 1
        j = name_end(text, start).end()  # type: ignore[union-attr]  # matches the empty string at worst
        done = j
        if j < n and text[j] not in _AFTER_NAME:
            continue
        if windowed and _LONG_VALUE.match(text, j) is not None:
            lo = max(0, i - 40)
            window = text[lo : min(n, j + 200)]
            for rule in windowed:
                _rule_spans(window, rule, out, lo)
        raw = text[i:j]
        name = raw.strip("-.")
        kind = name_kind(name)
        if kind is None and i > 0 and text[i - 1] in "?&;":
            kind = query_kind(name)
        if kind is None:
            continue
        a = _ASSIGN.match(text, j)
        quoted, grp = False, "uv"
        if a is not None:
            if a.group("qv") is not None:
                quoted, grp = True, "qv"
        elif raw.startswith("--"):
            a = _FLAG_VALUE.match(text, j)
        if a is None:
            continue
        value = full = a.group(grp)
        s, e = a.span(grp)
        if not quoted:
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("basic", "bearer", "token", "digest"):
                value = rest.strip()
        if _value_ok(value, quoted):
            out.append((s, e, _value_kind(full, kind)))
            done = max(done, e)


def _query_spans(text: str, out: list[tuple[int, int, str]]) -> None:
    for m in _QUERY.finditer(text):
        kind = query_kind(m.group("name"))
        if kind is not None and _value_ok(m.group("value"), True):
            out.append((*m.span("value"), kind))


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans united (the kind of the earliest, longest one)."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str]] = []
    for s, e, k in spans:
        if merged and s < merged[-1][1]:
            ps, pe, pk = merged[-1]
            merged[-1] = (ps, max(pe, e), pk)
        else:
            merged.append((s, e, k))
    return merged


def _outside_markers(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``spans`` less those inside a marker already in ``text`` (redaction is idempotent)."""
    if spans and "[REDACTED" in text:
        marks = [m.span() for m in MARKER_RE.finditer(text)]
        spans = [sp for sp in spans if not any(ms <= sp[0] and sp[1] <= me for ms, me in marks)]
    return spans


_SPAN_CACHE: dict[str, tuple[tuple[int, int, str], ...]] = {}
# Bounds: a 100 MB import and the save after it fit (the texts it holds are mostly the
# recording's own, alive while it is); past them it starts again.
_SPAN_CACHE_LIMIT = 1 << 21  # entries
_SPAN_CACHE_CHARS = 1 << 28  # characters of the texts it holds
_span_cache_chars = 0
_NO_SPANS: tuple[tuple[int, int, str], ...] = ()


def _shape_spans(text: str) -> tuple[tuple[int, int, str], ...]:
    """Secrets in ``text`` found by shape and by name (rules 1 and 2), unmerged. The same
    text again (a chat history repeats its messages) is answered from a cache."""
    if len(text) < _MIN_LENGTH and ":" not in text and "=" not in text:
        return _NO_SPANS
    cached = _SPAN_CACHE.get(text)
    if cached is not None:
        return cached
    det = _DETECTOR.load()
    out: list[tuple[int, int, str]] = []
    for rule in det.rules_for(text):
        _rule_spans(text, rule, out)
    equals = "=" in text
    if equals or ":" in text or "--" in text or "\t" in text:  # no assignment without one
        _assignment_spans(text, text.lower(), det.windowed, out)
        if equals and ("?" in text or "&" in text or ";" in text):
            _query_spans(text, out)
    found = tuple(_outside_markers(text, out)) if out else _NO_SPANS
    # every text scanned is remembered: a save after an import, a second pass, sees it again
    global _span_cache_chars
    if len(_SPAN_CACHE) >= _SPAN_CACHE_LIMIT or _span_cache_chars >= _SPAN_CACHE_CHARS:
        _SPAN_CACHE.clear()
        _span_cache_chars = 0
    _SPAN_CACHE[text] = found
    _span_cache_chars += len(text)
    return found


def clear_caches() -> None:
    """Forget the texts scanned so far (the cache :func:`redact` answers a text seen
    before from; a long-running process may drop it between unrelated runs)."""
    global _span_cache_chars
    _SPAN_CACHE.clear()
    _span_cache_chars = 0


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` of every secret the shape and name rules find in ``text``
    (merged, in order). Known secrets of a :class:`SecretRedactor` are not included."""
    if type(text) is not str:
        return []
    return _merge(list(_shape_spans(text)))


def _propagatable(value: str) -> bool:
    """Whether a removed value is specific enough to scrub everywhere else in the run: at
    least 6 characters, not a marker or one of our own digests and ids, not a plain
    number, and (shorter than 16 characters) not a plain word."""
    if len(value) < 6 or len(value) > 4096 or has_marker(value) or _OWN_VALUE.fullmatch(value):
        return False
    if value.isdigit() or value.lower() in _PLAIN_VALUES:
        return False
    return len(value) >= 16 or not value.isalpha()


# --------------------------------------------------------------------------- redactor


class SecretRedactor:
    """Scrubs known secrets (and, with ``patterns``, secrets by shape and by name) from
    every string of a JSON value, learning what it removes.

    Args:
        secrets: literal secret strings (shorter than 4 characters are ignored: they
            would scrub ordinary text); their marker is ``[REDACTED:secret]``.
        env: names of environment variables whose current values are secrets; their
            marker names the variable (``OPENAI_API_KEY`` → ``[REDACTED:openai-api-key]``).
        patterns: find secrets by shape and by name inside text (default; the product
            always does — ``False`` only scrubs the known values).
        learn: remember every secret removed (by field name, header, shape or name in
            text) and scrub it from every later string (propagation within a run: use
            one redactor per run).
        memo: answer an object or array seen before (the same object, by identity) from
            what it redacted to then — for a reader that passes the same parsed values
            many times (an importer's tool schemas, repeated in every model call) and
            never changes them.
    """

    def __init__(
        self,
        secrets: Iterable[str] = (),
        env: Iterable[str] = (),
        *,
        patterns: bool = True,
        learn: bool = True,
        memo: bool = False,
    ) -> None:
        known: dict[str, str] = {}
        for s in secrets:
            if isinstance(s, str) and len(s) >= 4:
                known.setdefault(s, "secret")
        for var in env:
            v = os.environ.get(var)
            if v and len(v) >= 4:
                known.setdefault(v, _slug(var))
        self.known: dict[str, str] = known
        self.patterns = patterns
        self.learn = learn
        self.memo: dict[int, tuple[Any, Any, bool, int]] | None = {} if memo else None
        self._regex: re.Pattern[str] | None = None
        self._regex_size = -1
        #: object keys found to hold no secret → how many secrets were known then (a key
        #: is scrubbed again only once more are known): keys repeat in every record
        self.clean_keys: dict[str, int] = {}

    @property
    def secrets(self) -> list[str]:
        """The known secret strings (given and learned), longest first."""
        return sorted(self.known, key=len, reverse=True)

    def remember(self, value: str, kind: str) -> None:
        """Learn ``value`` (a removed secret of ``kind``; of an ``Authorization``-style
        value, also the credentials after its scheme) when learning and specific enough."""
        if not self.learn:
            return
        if value not in self.known and _propagatable(value):
            self.known[value] = kind
        scheme, _, rest = value.partition(" ")
        rest = rest.strip()
        if rest and scheme.lower() in ("basic", "bearer", "token", "digest") and rest not in self.known:
            if _propagatable(rest):
                self.known[rest] = kind

    def _known_regex(self) -> re.Pattern[str] | None:
        if self._regex_size != len(self.known):
            self._regex = (
                re.compile("|".join(re.escape(s) for s in self.secrets)) if self.known else None
            )  # longest first: a secret containing another is scrubbed whole
            self._regex_size = len(self.known)
        return self._regex

    def scrub_text(self, text: str) -> str:
        """``text`` with every known secret and (with ``patterns``) every secret found by
        shape or by name replaced by its marker."""
        return _scrub(text, self)

    def __bool__(self) -> bool:
        """Whether there are known secrets to scrub."""
        return bool(self.known)


def _scrub(text: str, redactor: SecretRedactor | None) -> str:
    known_any = redactor is not None and bool(redactor.known)
    if not known_any and len(text) < _MIN_LENGTH and ":" not in text and "=" not in text:
        return text  # too short for any rule
    if redactor is None or redactor.patterns:
        found = _SPAN_CACHE.get(text)
        if found is None:
            found = _shape_spans(text)
        if not found and not known_any:
            return text
        if found and redactor is not None and redactor.learn:
            for s, e, kind in found:
                redactor.remember(text[s:e], kind)
        spans = list(found)  # first: where a shape and a known secret coincide, the shape names the kind
    else:
        spans = []
    if redactor is not None and redactor.known:
        regex = redactor._known_regex()
        if regex is not None:
            known = redactor.known
            spans.extend(
                _outside_markers(text, [(m.start(), m.end(), known[m.group(0)]) for m in regex.finditer(text)])
            )
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for s, e, kind in _merge(spans):
        parts.append(text[pos:s])
        parts.append(marker(kind))
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def _value_kind(value: Any, fallback: str) -> str:
    """The kind a sensitive field's marker names: the shape found in its string value
    (``basic-auth`` for ``Basic …``, ``jwt``, …), else the field's own kind."""
    if type(value) is str:
        found = find_secrets(value)
        if len(found) == 1 and found[0][2] != fallback:
            return found[0][2]
    return fallback


def _hide(value: Any, kind: str, redactor: SecretRedactor | None) -> str:
    """The marker replacing a sensitive field's ``value``; the value is learned."""
    kind = _value_kind(value, kind)
    if redactor is not None:
        for v in value if type(value) is list else (value,):
            if type(v) is str:
                redactor.remember(v, kind)
    return marker(kind)


def _header_pair(item: Any) -> tuple[str, str] | None:
    """Recognise one header-list entry; return (name field, value field) accessors."""
    if type(item) is list and len(item) == 2 and isinstance(item[0], str):
        return ("0", "1")
    if type(item) is dict and isinstance(item.get("name"), str) and "value" in item:
        return ("name", "value")
    return None


def _empty(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == {}


def redact(value: Any, redactor: SecretRedactor | None = None) -> tuple[Any, bool]:
    """Redact a JSON value by field name, by shape and by ``redactor``'s known secrets.

    Returns ``(new_value, changed)``; ``value`` itself is never mutated. Lists that look
    like HTTP header lists (every item a ``[name, value]`` pair or a ``{name, value}``
    object) are redacted by header name. Without a ``redactor`` nothing is learned.
    """
    return _redact(value, redactor)


def _redact(value: Any, redactor: SecretRedactor | None) -> tuple[Any, bool]:
    t = type(value)
    if t is str:
        new = _scrub(value, redactor)
        return new, new is not value
    if (t is dict or t is list) and value and redactor is not None and redactor.memo is not None:
        memo = redactor.memo
        hit = memo.get(id(value))
        if hit is not None and hit[0] is value and hit[3] == len(redactor.known):
            return hit[1], hit[2]
        new, changed = _redact_container(value, t, redactor)
        if len(memo) >= 1 << 17:
            memo.clear()
        memo[id(value)] = (value, new, changed, len(redactor.known))  # valid while nothing more is known
        return new, changed
    return _redact_container(value, t, redactor)


#: :attr:`SecretRedactor.clean_keys` of redaction without a redactor (no known secrets)
_CLEAN_KEYS: dict[str, int] = {}


def _free_key(key: str, given: dict[str, Any], out: dict[str, Any]) -> str:
    """``key`` (a redacted key), or ``key #2``, ``key #3``… when an object already holds
    it: two secrets redacted to the same marker stay two members."""
    if key not in given and key not in out:
        return key
    n = 2
    while f"{key} #{n}" in given or f"{key} #{n}" in out:
        n += 1
    return f"{key} #{n}"


def _redact_container(value: Any, t: type, redactor: SecretRedactor | None) -> tuple[Any, bool]:
    if t is dict:
        out: dict[str, Any] = {}
        changed = False
        cache = _NAME_CACHE
        clean = redactor.clean_keys if redactor is not None else _CLEAN_KEYS
        gen = len(redactor.known) if redactor is not None else 0
        for k, v in value.items():
            kind = cache.get(k, "") if type(k) is str else None
            if kind == "":
                kind = name_kind(k)
            ok = k
            if type(k) is str and clean.get(k) != gen:  # a secret used as a key is hidden too
                nk = _scrub(k, redactor)
                if nk is not k:
                    ok = _free_key(nk, value, out)
                    changed = True
                elif len(clean) < 1 << 16:
                    clean[k] = gen
            if kind is not None and not _empty(v) and not is_marker(v) and (kind not in _WEAK_KINDS or type(v) is str):
                out[ok] = _hide(v, kind, redactor)
                changed = True
                continue
            if type(v) is str:
                nv = _scrub(v, redactor)
                c = nv is not v
            else:
                nv, c = _redact(v, redactor)
            out[ok] = nv
            changed |= c
        return (out if changed else value), changed
    if t is list:
        if not value:
            return value, False
        header_like = all(_header_pair(i) is not None for i in value)
        out_list: list[Any] = []
        changed = False
        for item in value:
            if header_like:
                pair = item[0] if type(item) is list else item["name"]
                hv = item[1] if type(item) is list else item["value"]
                kind = header_kind(pair)
                if kind is not None and not _empty(hv) and not is_marker(hv):
                    hidden = _hide(hv, kind, redactor)
                    out_list.append([pair, hidden] if type(item) is list else {**item, "value": hidden})
                    changed = True
                    continue
            nv, c = _redact(item, redactor)
            out_list.append(nv)
            changed |= c
        return (out_list if changed else value), changed
    return value, False
