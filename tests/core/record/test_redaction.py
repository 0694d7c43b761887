"""Redaction by field name and by known secret values."""

from __future__ import annotations

import orjson
import pytest

from core.record.io import redact_recording, save_recording
from core.record.recording import ChatMessage, ModelRecord, Recording, ToolRecord
from core.record.redaction import SecretRedactor, is_sensitive_name, marker, redact
from tests.builders import make_recording


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "apiKey",
        "API-KEY",
        "x-api-key",
        "Authorization",
        "proxy_authorization",
        "token",
        "access_token",
        "refreshToken",
        "password",
        "db_passwd",
        "secret",
        "client_secret",
        "cookie",
        "Set-Cookie",
        "private_key",
        "aws_secret_access_key",
        "credentials",
    ],
)
def test_sensitive_names(name):
    assert is_sensitive_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "input_tokens",
        "output_tokens",
        "token_count",
        "tokenizer",
        "key",
        "args_hash",
        "total_tokens",
        "prompt_tokens",
        "maxTokens",
        "keyboard",
        "monkey",
        "tool",
        "primary_key_column",
        "keys",
        "hash",
        "model",
    ],
)
def test_ordinary_names_are_not_caught(name):
    assert not is_sensitive_name(name)


def test_nested_objects_and_header_lists():
    value = {
        "request": {
            "headers": [["Content-Type", "application/json"], ["Authorization", "Bearer abc"], ["X-Api-Key", "k1"]],
            "header_objs": [{"name": "Cookie", "value": "sid=1"}, {"name": "Accept", "value": "*/*"}],
            "body": {"config": {"api_key": "sk-live", "max_tokens": 100, "token_count": 3}},
        },
        "usage": {"input_tokens": 5, "output_tokens": 6},
    }
    out, changed = redact(value)
    assert changed
    # markers name the kind removed (docs/format.md, "Redaction")
    assert out["request"]["headers"] == [
        ["Content-Type", "application/json"],
        ["Authorization", marker("authorization")],
        ["X-Api-Key", marker("api-key")],
    ]
    assert out["request"]["header_objs"] == [
        {"name": "Cookie", "value": marker("cookie")},
        {"name": "Accept", "value": "*/*"},
    ]
    assert out["request"]["body"]["config"] == {"api_key": marker("api-key"), "max_tokens": 100, "token_count": 3}
    assert out["usage"] == {"input_tokens": 5, "output_tokens": 6}
    assert value["request"]["body"]["config"]["api_key"] == "sk-live"  # input untouched


def test_ordinary_two_item_lists_are_not_headers():
    out, changed = redact({"pairs": [["token", "abc"], ["x", "y"]]})
    # [name, value] pairs whose name looks like a credential header are redacted ...
    assert out["pairs"][0] == ["token", marker("token")]
    out2, changed2 = redact({"matrix": [[1, 2], [3, 4]], "words": ["key", "value"]})
    assert not changed2 and out2 == {"matrix": [[1, 2], [3, 4]], "words": ["key", "value"]}


def test_secret_values_in_free_text(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890")
    r = SecretRedactor(secrets=["hunter22"], env=["MY_SERVICE_TOKEN", "UNSET_VAR_XYZ"])
    out, changed = redact({"content": "password is hunter22 and tok-1234567890 ok", "n": 1}, r)
    assert changed
    assert out["content"] == f"password is {marker('secret')} and {marker('my-service-token')} ok"


def test_short_secrets_are_ignored():
    r = SecretRedactor(secrets=["a", "ab"])
    assert not r
    assert r.scrub_text("a cab") == "a cab"


def test_pattern_secrets():
    r = SecretRedactor(patterns=True)
    text = "keys: sk-ant-api03-abcdefghijklmnop and sk-proj-ABCDEFGHIJKLMNOPQRST and AKIAABCDEFGHIJKLMNOP"
    out = r.scrub_text(text)
    assert "sk-ant" not in out and "sk-proj" not in out and "AKIA" not in out
    assert r.scrub_text("a task-list of skills") == "a task-list of skills"


def test_recording_redaction_sets_flag_and_recomputes_keys(tmp_path):
    rec = make_recording()
    tool = rec.records[3]
    assert isinstance(tool, ToolRecord)
    tool.arguments = {"path": "/tmp", "password": "hunter22"}
    tool.key = tool.compute_key()
    tool.result.content = "logged in with hunter22"
    model = rec.records[2]
    assert isinstance(model, ModelRecord)
    model.request.messages.append(ChatMessage(role="user", content="my secret is hunter22"))
    model.key = model.compute_key()
    old_model_key = model.key
    path = tmp_path / "r.json"
    save_recording(rec, path, redactor=SecretRedactor(secrets=["hunter22"]))
    raw = path.read_bytes()
    assert b"hunter22" not in raw
    loaded = Recording.load(path)  # keys verified on load
    t = loaded.records[3]
    assert t.arguments["password"] == marker("password")
    assert t.result.content == f"logged in with {marker('secret')}"
    assert t.result.redacted is True
    assert t.key == t.compute_key()
    m = loaded.records[2]
    assert m.key != old_model_key and m.key == m.compute_key()
    assert loaded.records[4].key == make_recording().records[4].key  # untouched record keeps its key


def test_metadata_is_redacted_on_save(tmp_path):
    rec = make_recording()
    rec.metadata["provider"] = {"api_key": "xyz123", "max_tokens": 5}
    path = tmp_path / "r.json"
    rec.save(path)
    doc = orjson.loads(path.read_bytes())
    assert doc["metadata"]["provider"] == {"api_key": marker("api-key"), "max_tokens": 5}


def test_redaction_is_idempotent():
    rec = make_recording()
    rec.metadata["token"] = "abc"
    assert redact_recording(rec) == 0  # metadata only; no record changed
    assert rec.metadata["token"] == marker("token")
    assert redact_recording(rec) == 0
