"""Redaction by shape, by name inside text, propagation, markers (docs/format.md, "Redaction")."""

from __future__ import annotations

import base64
import json

import pytest

from core.analysis.audit import _walk_redacted
from core.analysis.timeline import record_status
from core.record.recording import ChatMessage, ModelRecord, ModelRequest, ModelResponse, ToolRecord, ToolResult
from core.record.recording_redaction import redact_recording
from core.record.redaction import (
    DETECT_SECRETS_KINDS,
    REDACTED,
    SecretRedactor,
    find_secrets,
    has_marker,
    header_kind,
    holds_marker,
    is_marker,
    marker,
    name_kind,
    query_kind,
    redact,
)
from tests.builders import make_recording


def _jwt() -> str:
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': '42'})}.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


BASIC = base64.b64encode(b"admin:Pa55-w0rd").decode()

# (text holding one secret, the secret part that must go, the marker kind)
SHAPES = [
    (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\n-----END OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE",
        "private-key",
    ),
    (f"Authorization token {_jwt()} sent", _jwt().split(".", 1)[1], "jwt"),
    ("slack xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy done", "pdFZKVeTuE8sk7oOcBrzbqgy", "slack-token"),
    ("maps AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe ok", "SyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "google-api-key"),
    ("gh github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCD", "0123456789_abcdefghij", "github-token"),
    ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok", "abcdefghijklmnopqrstuvwxyz0123456789", "github-token"),
    ("pay sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQAbCdEfGh", "4eC39HqLyjWDarjtT1zdp7dcTYooMQAbCdEfGh", "stripe-key"),
    ("id AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws-secret-key",
    ),
    ("clone https://alice:S3cr3t-Passw0rd@git.example.com/r.git", "S3cr3t-Passw0rd", "url-password"),
    ("dsn postgres://bob:Pg-pass-9876@db.internal:5432/app", "Pg-pass-9876", "url-password"),
    (f"Authorization: Basic {BASIC}", BASIC, "basic-auth"),
    (f"curl -u x -H 'Basic {BASIC}'", BASIC, "basic-auth"),
    ("Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234", "bearer-token"),
    ("X-Auth: abcd1234efgh", "abcd1234efgh", "auth"),
    ("https://x.example.com/cb?code=4/0AX4XfWh-abc123&state=xyz", "4/0AX4XfWh-abc123", "auth-code"),
    ("openai-organization: org-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx", "organization-id"),
    ("key sk-proj-ABCDEFGHIJKLMNOPQRST0123 ok", "ABCDEFGHIJKLMNOPQRST0123", "openai-key"),
    ("key sk-ant-api03-abcdefghijklmnop ok", "api03-abcdefghijklmnop", "anthropic-key"),
    ("hf hf_abcdefghijklmnopqrstuvwxyz ok", "abcdefghijklmnopqrstuvwxyz", "huggingface-token"),
    ('{"password": "hunter2xyz"}', "hunter2xyz", "password"),
    ('{\\"private_key\\": \\"abc123def456\\"}', "abc123def456", "private-key"),
    ('{"ssh_key": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQ"}', "AAAAB3NzaC1yc2EAAAADAQ", "private-key"),
    ("DB_PASSWORD=correct9horse ./run", "correct9horse", "password"),
    ("run --password hunter22 now", "hunter22", "password"),
    ("cfg client_secret: 'q8Zr-Lm3V'", "q8Zr-Lm3V", "secret"),
    ("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", "TwL2iGABf9DHoTf", "sendgrid-key"),
    ("npm //registry.npmjs.org/:_authToken=npm_abcdefghij0123456789", "abcdefghij0123456789", "npm-token"),
]


@pytest.mark.parametrize("text, secret, kind", SHAPES, ids=[s[2] + str(i) for i, s in enumerate(SHAPES)])
def test_every_shape_is_found_and_named(text, secret, kind):
    out = SecretRedactor().scrub_text(text)
    assert secret not in out
    assert marker(kind) in out, out
    assert SecretRedactor().scrub_text(out) == out  # idempotent


NON_SECRETS = [
    "max_tokens=1024 and input_tokens: 12",
    "x-ratelimit-remaining-tokens: 149984",
    "args_hash sha256:" + "ab12" * 16,
    "key sha256:" + "0f" * 32,
    "replay rp-0123456789ab branch br-abc123 req-0a1b2c3d4e5f fixture fx-00aa11bb22cc",
    "a task-list of skills",
    "the passenger bought a basic economy ticket with a key card",
    "token = get_token()",
    "def login(password: str, token: str) -> None:",
    "self.password = password",
    "api_key = os.environ",
    "see https://example.com/path?page=2&sort=asc",
    "https://user@example.com/only-a-user",
    "tokenizer: cl100k_base, token_count: 17",
]


@pytest.mark.parametrize("text", NON_SECRETS)
def test_non_secrets_survive(text):
    assert SecretRedactor().scrub_text(text) == text
    assert find_secrets(text) == []


def test_names_headers_and_query_parameters():
    for name in ("ssh_key", "X-Auth", "openai-organization", "openai_organization_id", "db_pwd", "x-api-key"):
        assert name_kind(name) is not None or header_kind(name) is not None, name
    for name in ("x-ratelimit-remaining-tokens", "max_tokens", "x-request-id", "signature", "session_id"):
        assert header_kind(name) is None, name
    assert header_kind("openai-organization") == "organization-id"
    assert query_kind("code") == "auth-code" and query_kind("key") == "api-key" and query_kind("page") is None
    # an auth object is walked, an auth string hidden
    assert redact({"auth": {"type": "basic", "password": "x1"}})[0] == {
        "auth": {"type": "basic", "password": marker("password")}
    }
    assert redact({"auth": "user:pw"})[0] == {"auth": marker("auth")}


def test_header_values_take_the_kind_of_their_shape():
    out, _ = redact(
        {"headers": [["Authorization", f"Basic {BASIC}"], ["X-Api-Key", "sk-proj-ABCDEFGHIJKLMNOPQRST0123"]]}
    )
    assert out["headers"] == [["Authorization", marker("basic-auth")], ["X-Api-Key", marker("openai-key")]]


def test_a_value_removed_once_is_scrubbed_everywhere_in_the_run():
    token = "Zq8v-Lm3N-pQ7r"  # no shape of its own
    rec = make_recording()
    tool = rec.records[3]
    assert isinstance(tool, ToolRecord)
    tool.result = ToolResult(content=f"the server echoed {token}")  # before the header that names it
    late = rec.records[4]
    late.meta = {"headers": [["X-Auth-Token", token]]}
    changed = redact_recording(rec)
    assert changed >= 2
    assert rec.records[3].result.content == f"the server echoed {marker('token')}"
    assert rec.records[3].result.redacted is True
    assert rec.records[4].meta == {"headers": [["X-Auth-Token", marker("token")]]}
    assert redact_recording(rec) == 0  # idempotent


def test_short_or_plain_values_are_not_propagated():
    r = SecretRedactor()
    redact({"password": "secret", "token": "enabled", "api_key": "123456", "cookie": "Pr0pagat3d"}, r)
    assert "Pr0pagat3d" in r.known and not {"secret", "enabled", "123456"} & set(r.known)
    assert r.scrub_text("enabled with secret") == "enabled with secret"


def test_markers_new_and_old_are_recognised_everywhere():
    for text in (REDACTED, marker("jwt"), f"x {marker('url-password')} y"):
        assert has_marker(text) and holds_marker({"a": [text]})
    assert is_marker(marker("private-key")) and is_marker(REDACTED) and not is_marker("[REDACTED:Bad Kind]")
    assert not has_marker("[REDACTION]") and not holds_marker({"redacted": True})
    out: list[str] = []
    _walk_redacted({"a": REDACTED, "b": [f"k={marker('api-key')}"], "c": "plain"}, ["arguments"], out)
    assert out == ["/arguments/a", "/arguments/b/0"]
    t = ToolRecord(seq=0, tool="t", result=ToolResult(content=f"x {marker('jwt')}"))
    assert record_status(t) == "redacted"
    m = ModelRecord(
        seq=1,
        model="m",
        request=ModelRequest(messages=[]),
        response=ModelResponse(message=ChatMessage(role="assistant", content=f"key {REDACTED}")),
    )
    assert record_status(m) == "redacted"


def test_detect_secrets_plugins_are_all_used_but_entropy_and_addresses():
    import detect_secrets.plugins as plugins

    from core.record.redaction import _DETECT_SECRETS_SKIPPED, _DETECT_SECRETS_WHERE, _detect_secrets_rules

    rules = _detect_secrets_rules()
    kinds = {r.kind for r in rules}
    assert kinds == {k for ks in DETECT_SECRETS_KINDS.values() for k in ks}
    assert set(DETECT_SECRETS_KINDS) == set(_DETECT_SECRETS_WHERE)
    assert _DETECT_SECRETS_SKIPPED == {"IPPublicDetector"}
    assert plugins  # the package is installed: a dependency of the product
    # the recording's own hashes, keys and ids trip none of them
    own = "sha256:" + "0123456789abcdef" * 4 + " rp-0123456789ab fx-0123456789ab req-0123456789ab"
    assert find_secrets(own) == []


@pytest.mark.parametrize(
    "token",
    [
        "glpat-sz5TvPcq2cS0kwLbGY9W",
        "gldt-sz5TvPcq2cS0kwLbGY9Wab",
        "glrt-sz5TvPcq2cS0kwLbGY9Wab",
        "glsoat-sz5TvPcq2cS0kwLbGY9Wab",
        "glcbt-sz5TvPcq2cS0kwLbGY9Wab",  # without the optional hex prefix
        "glcbt-a1_sz5TvPcq2cS0kwLbGY9Wab",
        "ghp_" + "aB3" * 12,
    ],
)
def test_tokens_whose_pattern_groups_their_prefix_are_hidden_whole(token):
    """Some detect-secrets patterns capture the token's prefix, not its secret part: the
    whole token goes, not only the prefix."""
    out, changed = redact(f"tok {token} end", SecretRedactor())
    assert changed and token[8:] not in out and out.startswith("tok [REDACTED:") and out.endswith("] end")


def test_a_secret_used_as_an_object_key_is_hidden():
    hf1 = "hf_hxG6GmD9i0WiJvdbPAdnAFENYa3RR7iybC"
    hf2 = "hf_hxG6GmD9i0WiJvdbPAdnAFENYa3RR7iybD"
    value = {hf1: "v", hf2: "w", "args": [{"ghp_" + "aB3" * 12: 1}], "plain key": 2}
    out, changed = redact(value, SecretRedactor())
    text = json.dumps(out)
    assert changed and hf1 not in text and hf2 not in text and "aB3aB3" not in text
    assert out["[REDACTED:huggingface-token]"] == "v" and out["[REDACTED:huggingface-token] #2"] == "w"
    assert out["plain key"] == 2 and list(out["args"][0].values()) == [1]
    assert redact({"plain key": 2}, SecretRedactor()) == ({"plain key": 2}, False)
