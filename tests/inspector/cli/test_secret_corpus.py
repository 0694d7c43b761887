"""A corpus of the secrets real recordings hold, in every place, through the command line.

One of each secret shape — a PEM private key, a JWT, Slack, Google, GitHub and Stripe
tokens, an AWS secret access key, the passwords of an ``https://`` and a ``postgres://``
URL, ``password`` / ``private_key`` / ``ssh_key`` fields inside JSON text,
``Authorization: Basic``, an ``X-Auth`` header, a ``?code=`` query parameter, an
``openai-organization`` header, and a header value echoed in a tool result — is put in
HTTP headers, query strings, URLs, request and response bodies, tool arguments and
results, model messages, the import's metadata, fixtures, interventions, a policy and
``--args-json``. The run is imported, described (``info --json``), exported (OTLP),
branched, replayed, paused, answered (``fixture attach``) and resumed in a temporary
folder; then every file written, every table of the workspace (compressed blobs
inflated) and everything printed is searched for every run of 6 characters of each
probe's secret part: none may be found (docs/format.md, "Redaction").
"""

from __future__ import annotations

import base64
import json
import sqlite3
import zlib
from pathlib import Path

import orjson
import pytest

from inspector.cli import main


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


PEM_BODY = (
    "MIIEowIBAAKCAQEA7xQpZ3vKc9LmW2nRt8YhBd4FsJ0aUeGkNq1oPzXy6CiVbHwT\n"
    "q5Rk2LmN8vXcZp3HsJt7WyBd0FaGe4UiKo9QnMlPrStVwXyZ1a2b3c4d5e6f7g8h"
)
JWT = (
    _b64url({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64url({"sub": "corpus-user-7731", "role": "admin"})
    + ".Q9zVx3LmPq7RtY2kWbN5cJ8dHs4FgA1eUo6iTyK0Lr"
)
SLACK = "xoxb-2718281828-3141592653-Zt7QmWk3LpRx9VbN2cHs5Jd8"
GOOGLE = "AIza" + "SyC8Tq3LmZ0vXw7PkR2nBj5Hd9Fs6Ga4Ue1"
GITHUB = "github_pat_11AB2CD3E0Qx7Lm9PzRt4Vw8Ys2Kj6Hn"
STRIPE = "sk_live_51HqZtR3mLpXw9VcB2nK7sJd4FgTy"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLm3TpK"
HTTPS_PW = "Hx7-Pq9!Zr3vLm"
PG_PW = "Pg4Rz8-Vm2Qx7Lt"
JSON_PW, JSON_PK, JSON_SSH = "Tr0ub4dor-Qz9x", "Pk7Lm2-Vx9Rz3Qw", "Sk3Jd8-Lp5Vx2Mq"
BASIC = base64.b64encode(b"svc-user:Bz7Qm-Lx4Rp9Vt").decode()
X_AUTH = "Xa9Lm3-Qz7Vr2Tp"
CODE = "Cd4Qz8Lm2Vx7Rp9T"
ORG = "Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7"
ECHO = "Ek5Vq2-Lm8Rz4Tx9"

#: probe name -> its secret part (what must never be written): the random part of a
#: token, not the prefix that names its kind (``github_pat_``, ``xoxb-``, ``AIza``,
#: ``sk_live_``, a JWT's standard header), the password of a URL, not its scheme or host
SECRETS = {
    "private-key": PEM_BODY.replace("\n", ""),
    "jwt": JWT.split(".", 1)[1],
    "slack": SLACK.removeprefix("xoxb-"),
    "google": GOOGLE.removeprefix("AIza"),
    "github": GITHUB.removeprefix("github_pat_"),
    "stripe": STRIPE.removeprefix("sk_live_"),
    "aws-secret": AWS_SECRET,
    "https-password": HTTPS_PW,
    "postgres-password": PG_PW,
    "json-password": JSON_PW,
    "json-private-key": JSON_PK,
    "json-ssh-key": JSON_SSH,
    "basic-auth": BASIC,
    "x-auth": X_AUTH,
    "code": CODE,
    "organization": ORG,
    "echoed-header": ECHO,
}

PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
HTTPS_URL = f"https://deploy:{HTTPS_PW}@git.example.com/repo.git"
PG_URL = f"postgres://app:{PG_PW}@db.internal:5432/app"
JSON_TEXT = json.dumps({"password": JSON_PW, "private_key": JSON_PK, "ssh_key": JSON_SSH, "max_tokens": 512})
EVERY_SHAPE = (
    f"{PEM}\ntoken {JWT} slack {SLACK} github {GITHUB} stripe {STRIPE} google {GOOGLE}\n"
    f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\nclone {HTTPS_URL} and {PG_URL}\nconfig {JSON_TEXT}\n"
    f"Authorization: Basic {BASIC}\nX-Auth: {X_AUTH}\n"
    f"https://app.example.com/callback?code={CODE}&state=ok\nopenai-organization: org-{ORG}"
)

OPENAI = f"https://api.openai.com/v1/chat/completions?code={CODE}&key={GOOGLE}"
REQ_HEADERS = {
    "content-type": ["application/json"],
    "Authorization": [f"Basic {BASIC}"],
    "X-Auth": [X_AUTH],
    "openai-organization": [f"org-{ORG}"],
    "x-api-key": [ECHO],
}
RESP_HEADERS = {
    "Content-Type": ["application/json"],
    "openai-organization": [f"org-{ORG}"],
    "x-ratelimit-remaining-tokens": ["149984"],
    "x-request-id": ["req_7f3a9c"],
}


def _resp(message: dict, finish: str = "stop") -> str:
    return json.dumps(
        {
            "id": "chatcmpl-corpus",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 9},
        }
    )


def _inter(body: dict, resp: str) -> dict:
    return {
        "request": {"method": "POST", "uri": OPENAI, "body": json.dumps(body), "headers": REQ_HEADERS},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": RESP_HEADERS, "body": {"string": resp}},
    }


def _cassette() -> dict:
    tools = [{"type": "function", "function": {"name": "run_shell", "parameters": {"type": "object"}}}]
    system = {"role": "system", "content": f"deploy with {HTTPS_URL}; the database is {PG_URL}"}
    user = {"role": "user", "content": EVERY_SHAPE}
    args1 = {
        "cmd": f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}; psql {PG_URL}; curl -H 'X-Auth: {X_AUTH}' {HTTPS_URL}",
        "config": JSON_TEXT,
        "aws_secret_access_key": AWS_SECRET,
        "note": f"bearer of {JWT} and {SLACK}",
    }
    call1 = {"id": "c1", "type": "function", "function": {"name": "run_shell", "arguments": json.dumps(args1)}}
    call2 = {"id": "c2", "type": "function", "function": {"name": "read_config", "arguments": '{"path": "app.conf"}'}}
    result1 = f"{PEM}\nthe key {ECHO} works; pushed to {HTTPS_URL}"
    result2 = f"X-Auth: {X_AUTH}\nstripe={STRIPE}\n{JSON_TEXT}\nkey {ECHO}"
    a1 = {"role": "assistant", "content": None, "tool_calls": [call1]}
    a2 = {"role": "assistant", "content": None, "tool_calls": [call2]}
    t1 = {"role": "tool", "tool_call_id": "c1", "content": result1}
    t2 = {"role": "tool", "tool_call_id": "c2", "content": result2}
    m = "gpt-4o-mini"
    return {
        "interactions": [
            _inter(
                {"model": m, "messages": [system, user], "tools": tools, "max_tokens": 512}, _resp(a1, "tool_calls")
            ),
            _inter({"model": m, "messages": [system, user, a1, t1], "tools": tools}, _resp(a2, "tool_calls")),
            _inter(
                {"model": m, "messages": [system, user, a1, t1, a2, t2], "tools": tools},
                _resp({"role": "assistant", "content": f"done; {ECHO} rotated"}),
            ),
        ],
        "version": 1,
    }


def _runs6(secret: str) -> set[str]:
    return {secret[i : i + 6] for i in range(len(secret) - 5)}


def _leaks(text: str) -> list[str]:
    return [f"{name}: {run!r}" for name, s in SECRETS.items() for run in sorted(_runs6(s)) if run in text]


def _workspace_dump(db: Path) -> str:
    """Every table of the workspace: the SQL dump, and every value, zlib blobs inflated."""
    conn = sqlite3.connect(db)
    try:
        parts = list(conn.iterdump())
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            for row in conn.execute(f'SELECT * FROM "{t}"'):
                for v in row:
                    if isinstance(v, bytes):
                        try:
                            v = zlib.decompress(v)
                        except zlib.error:
                            pass
                        parts.append(v.decode("utf-8", "replace"))
                    else:
                        parts.append(str(v))
    finally:
        conn.close()
    return "\n".join(parts)


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "cassette.json").write_text(json.dumps(_cassette()))
    return tmp_path, inputs


def test_no_secret_byte_is_written_anywhere(corpus, capsys):
    tmp, inputs = corpus
    printed: list[str] = []

    def cli(*args: object) -> tuple[int, str]:
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        printed.extend([out, err])
        return code, out

    def user_file(name: str, obj: object) -> Path:
        p = inputs / name
        p.write_text(json.dumps(obj))
        return p

    code, _ = cli("import", inputs / "cassette.json", "-o", "base.json")
    assert code == 0
    base = orjson.loads(Path("base.json").read_bytes())
    code, out = cli("info", "base.json", "--json")
    assert code == 0
    Path("info.json").write_text(out)
    assert cli("export", "base.json", "--to", "otlp", "-o", "otlp.json")[0] == 0

    tool2 = next(r for r in base["records"] if r["kind"] == "tool" and r["tool"] == "read_config")
    intervention = user_file(
        "intervention.json",
        {"kind": "tool_result", "seq": tool2["seq"], "result": {"content": EVERY_SHAPE}, "note": f"via {PG_URL}"},
    )
    # a policy holding a secret is refused, and the refusal does not show it
    bad_policy = user_file("bad-policy.json", {"model": STRIPE})
    code, _ = cli("branch", "new", "base.json", "--at", tool2["seq"], "--policy", bad_policy)
    assert code == 2
    policy = user_file("policy.json", {"drift": "strict", "require_fixtures": True})
    code, out = cli(
        "branch", "new", "base.json", "--at", tool2["seq"], "--intervention", intervention, "--policy", policy,
        "--label", "corpus", "-o", "branch.json", "--json",
    )  # fmt: skip
    assert code == 0
    fixtures = user_file(
        "fixtures.json",
        [
            {
                "tool": "run_shell",
                "arguments": {"cmd": f"echo {SLACK}", "url": HTTPS_URL},
                "output": {"content": EVERY_SHAPE},
            }
        ],
    )
    out_file = user_file("fixture-output.json", {"content": EVERY_SHAPE})
    args_file = user_file("args.json", {"password": JSON_PW, "dsn": PG_URL, "token": JWT})
    assert cli("fixture", "add", "--tool", "read_config", "--args-json", json.dumps({"key": GOOGLE, "cfg": JSON_TEXT}),
               "--output", out_file)[0] == 0  # fmt: skip
    assert cli("fixture", "add", "--tool", "read_config", "--args-json", f"@{args_file}", "--output", out_file)[0] == 0

    code, out = cli("replay", "base.json", "--branch", "branch.json", "--fixtures", fixtures, "--json")
    assert code == 3, printed[-1]  # paused: the model call after the intervention has no answer
    rec = orjson.loads(out)
    [req_id] = rec["pause"]["requirement_ids"]
    answer = user_file("answer.json", {"message": {"role": "assistant", "content": f"final: {EVERY_SHAPE}"}})
    assert cli("fixture", "attach", req_id, answer)[0] == 0
    code, out = cli("replay", "resume", rec["id"], "--json")
    assert code == 0, printed[-1]
    assert orjson.loads(out)["status"] == "completed"
    assert cli("replay", "events", rec["id"], "-o", "events.json")[0] == 0
    for args in (["requirements", "--json"], ["fixture", "list", "--json"], ["branch", "list", "--json"]):
        assert cli(*args)[0] == 0

    # the inputs hold every probe (the search below is not vacuous), in every kind of user file
    given = {p.name: p.read_text() for p in inputs.iterdir()}

    def probes_in(text: str) -> set[str]:
        return {leak.split(":")[0] for leak in _leaks(text)}

    assert probes_in(given["cassette.json"]) == set(SECRETS)
    for f in ("intervention.json", "fixtures.json", "fixture-output.json", "answer.json"):
        assert len(probes_in(given[f])) >= 15, f
    ws_rows = _workspace_dump(tmp / ".chassis-inspector" / "workspace.sqlite")
    for marker in ("[REDACTED:jwt]", "[REDACTED:url-password]", "[REDACTED:stripe-key]", "[REDACTED:password]"):
        assert marker in ws_rows, marker  # the fixtures, branch and events were stored, redacted

    # every file written (the user's own input files aside)
    written = [p for p in tmp.rglob("*") if p.is_file() and inputs not in p.parents]
    assert {"base.json", "info.json", "otlp.json", "branch.json", "events.json", "workspace.sqlite"} <= {
        p.name for p in written
    }
    leaks = []
    for p in written:
        leaks += [f"{p.relative_to(tmp)}: {x}" for x in _leaks(p.read_bytes().decode("utf-8", "replace"))]
    dump = _workspace_dump(tmp / ".chassis-inspector" / "workspace.sqlite")
    leaks += [f"workspace table: {x}" for x in _leaks(dump)]
    leaks += [f"printed: {x}" for x in _leaks("\n".join(printed))]
    assert not leaks, "\n".join(leaks[:40])

    # the markers say what was removed; the non-secrets stay
    text = Path("base.json").read_text()
    for kind in (
        "private-key",
        "jwt",
        "slack-token",
        "github-token",
        "stripe-key",
        "aws-secret-key",
        "url-password",
        "password",
        "private-key",
        "basic-auth",
        "auth",
        "auth-code",
        "organization-id",
        "api-key",
    ):
        assert f"[REDACTED:{kind}]" in text, kind
    http = base["metadata"]["http"][0]
    assert http["response_headers"]["x-ratelimit-remaining-tokens"] == ["149984"]
    assert http["response_headers"]["x-request-id"] == ["req_7f3a9c"]
    first = base["records"][0]
    assert first["request"]["options"]["max_tokens"] == 512 and first["key"].startswith("sha256:")
    assert f"[REDACTED:{'api-key'}]" in str(http["request_headers"])
