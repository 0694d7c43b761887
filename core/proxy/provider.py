"""The provider executor (``provider:openai`` / ``provider:anthropic``): continue a branch
with a live model while every tool answer stays offline.

:class:`ProviderExecutor` answers the model calls a replay cannot answer from the
recording — with the branch's policy ``model: live`` — by sending the engine's request,
rebuilt in the provider's wire format (:func:`core.importers._llm_api.render_request`), to
an OpenAI- or Anthropic-compatible endpoint (OpenAI's, or vLLM, Ollama, LiteLLM, OpenRouter,
Gemini's OpenAI endpoint…). It runs no agent loop (``runs_agent = False``): the engine's
generic chat loop walks the branch, and tool calls are answered by the recording,
fixtures or requirements — never executed.

It follows no redirect (the key would go along), cuts an answer that has not fully come
within the timeout or holds more than :data:`MAX_ANSWER` bytes, and waits at most
:data:`MAX_WAIT` seconds between retries.

Where it sends: ``provider:openai`` — ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) with ``OPENAI_API_KEY``; ``provider:anthropic`` —
``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``) with ``ANTHROPIC_API_KEY``;
``provider:openai@URL`` names the base URL in the spec. The key is sent as a header and
never stored. Timeouts (``CHASSIS_PROVIDER_TIMEOUT`` seconds for the whole answer,
default 600); up to
:data:`RETRIES` retries on HTTP 429 and 5xx with exponential backoff (honouring
``retry-after``; the sleep is injectable, so tests never wait); a provider error is the
call's model error. docs/replay.md, "The provider executor".
"""

from __future__ import annotations

import http.client
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import ValidationError

from ..errors import InspectorError
from ..importers._llm_api import render_request
from ..record.recording import ModelRequest, ModelResponse, ToolResult
from .exchange import model_response, parse_proxy_response

__all__ = [
    "PROVIDERS",
    "PROVIDER_ENV",
    "ProviderError",
    "ProviderExecutor",
    "RETRIES",
    "parse_provider_spec",
    "provider_spec",
    "provider_timeout",
    "provider_url",
]

#: retries of one call after HTTP 429 or 5xx (so at most RETRIES + 1 requests)
RETRIES = 3
#: the first backoff, in seconds; doubled at each retry
BACKOFF = 0.5

_DEFAULTS = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
}
#: the built-in provider executors, as a policy or --executor names them
PROVIDERS = ("provider:openai", "provider:anthropic")
#: per provider executor: (base-URL variable, default base URL, API-key variable)
PROVIDER_ENV = {f"provider:{name}": spec for name, spec in _DEFAULTS.items()}
_ENDPOINT = {"openai": ("openai.chat", "/chat/completions"), "anthropic": ("anthropic.messages", "/v1/messages")}


class ProviderError(InspectorError, RuntimeError):
    """A provider answered with an error (after the retries) or could not be reached:
    ``http_<status>: <message>`` or ``unreachable: <reason>``; the engine records it as the
    model call's error."""

    title = "provider error"


def parse_provider_spec(spec: str) -> tuple[str, str | None]:
    """``(provider, base URL or None)`` of ``provider:NAME[@URL]``.

    Raises:
        ValueError: not a provider spec, or an unknown provider (the message lists them).
    """
    if not spec.startswith("provider:"):
        raise ValueError(f"executor {spec!r} is not a provider executor (provider:openai or provider:anthropic)")
    name, _, url = spec[len("provider:") :].partition("@")
    if name not in _DEFAULTS:
        raise ValueError(f"executor {spec!r}: unknown provider {name!r} (provider:openai or provider:anthropic)")
    return name, url or None


#: the most bytes one answer may hold (a provider answering more is broken or hostile)
MAX_ANSWER = 64 * 1024 * 1024
#: the longest wait between two retries, whatever ``retry-after`` asks (seconds)
MAX_WAIT = 20.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect: it surfaces as the 3xx HTTPError it is."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _read_by(r: Any, deadline: float, timeout: float) -> bytes:
    """The answer's body, read as it comes (``read1``), until ``deadline``
    (``time.monotonic()``) and :data:`MAX_ANSWER`.

    Raises:
        ProviderError: the deadline passed or the body is too large."""
    chunks: list[bytes] = []
    size = 0
    read = getattr(r, "read1", None) or r.read
    while True:
        if time.monotonic() > deadline:
            raise ProviderError(f"timed out: the whole answer did not come within {timeout:g} s")
        chunk = read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER:
            raise ProviderError(f"the answer is larger than {MAX_ANSWER // (1024 * 1024)} MiB: not read further")
        chunks.append(chunk)


def provider_timeout(env: Any = None) -> float:
    """``CHASSIS_PROVIDER_TIMEOUT`` (seconds one live call may take in all; default 600).

    Raises:
        ValueError: not a finite number of seconds greater than 0 (names the variable).
    """
    e = os.environ if env is None else env
    raw = e.get("CHASSIS_PROVIDER_TIMEOUT") or "600"
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (0 < value < 1e7):  # NaN fails every comparison
        raise ValueError(
            f"CHASSIS_PROVIDER_TIMEOUT must be a number of seconds greater than 0 (and finite), not {raw[:40]!r}"
        )
    return value


def provider_spec(spec: str, base_url: str = "") -> str:
    """``provider:NAME`` with ``base_url`` as its ``@URL`` (none when empty).

    Raises:
        ValueError: a base URL not starting ``http://`` or ``https://``.
    """
    if not base_url:
        return spec
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"the provider URL must start with http:// or https://, not {base_url[:60]!r}")
    return f"{spec.partition('@')[0]}@{base_url}"


def provider_url(spec: str, env: dict[str, str] | None = None) -> str:
    """The base URL a provider executor ``spec`` sends to: the ``@URL`` it names, else the
    environment's ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``, else the provider's own.

    Raises:
        ValueError: not a provider spec (as :func:`parse_provider_spec`).
    """
    name, url = parse_provider_spec(spec)
    e = os.environ if env is None else env
    url_var, default, _ = _DEFAULTS[name]
    return (url or e.get(url_var) or default).rstrip("/")


class ProviderExecutor:
    """Answers model calls live from a provider endpoint (see the module docstring).

    Args:
        provider: ``openai`` or ``anthropic``.
        base_url: the endpoint's base URL (default from the environment, then the
            provider's).
        env: the environment to read the base URL, key and timeout from (default ours).
        sleep: waits between retries (injectable).
    """

    #: no agent loop of its own: the engine's generic chat loop walks the branch
    runs_agent = False
    #: a call that still fails after the retries ends the replay ``failed`` (the error is
    #: kept as the call's model error in the events)
    errors_end_replay = True

    def __init__(
        self,
        provider: str,
        base_url: str | None = None,
        *,
        env: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        e = dict(os.environ) if env is None else env
        url_var, default, key_var = _DEFAULTS[provider]
        self.provider = provider
        self.base_url = (base_url or e.get(url_var) or default).rstrip("/")
        self._key = e.get(key_var) or None
        self.timeout = provider_timeout(e)
        self.sleep = sleep
        self.endpoint, self.path = _ENDPOINT[provider]
        self.calls = 0  # requests sent (retries included)

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json"}
        if self._key:
            if self.provider == "anthropic":
                h["x-api-key"] = self._key
                h["anthropic-version"] = "2023-06-01"
            else:
                h["Authorization"] = f"Bearer {self._key}"
        elif self.provider == "anthropic":
            h["anthropic-version"] = "2023-06-01"
        return h

    def _post(self, body: dict[str, Any]) -> tuple[int, bytes, str, dict[str, str]]:
        """POST ``body``; ``(status, body, content type, headers)``. Redirects are not
        followed (the key would go to wherever they point); the whole answer must come
        within :attr:`timeout` seconds (a slow drip is cut) and hold at most
        :data:`MAX_ANSWER` bytes.

        Raises:
            ProviderError: a redirect, the deadline passed, or the answer too large.
            urllib.error.URLError, OSError, http.client.HTTPException: not reachable.
        """
        req = urllib.request.Request(
            self.base_url + self.path, data=orjson.dumps(body), headers=self._headers(), method="POST"
        )
        self.calls += 1
        deadline = time.monotonic() + self.timeout
        try:
            with _OPENER.open(req, timeout=self.timeout) as r:
                return r.status, _read_by(r, deadline, self.timeout), r.headers.get("Content-Type", ""), dict(r.headers)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                where = exc.headers.get("Location", "?") if exc.headers else "?"
                raise ProviderError(
                    f"http_{exc.code}: the provider redirects to {where}; redirects are not followed (the API key "
                    "would be sent there): point the base URL at the final address"
                ) from None
            return (
                exc.code,
                _read_by(exc, deadline, self.timeout),
                exc.headers.get("Content-Type", "") if exc.headers else "",
                dict(exc.headers or {}),
            )

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Ask the provider's ``model`` for ``request`` (not streamed), retrying 429 / 5xx.

        Raises:
            ProviderError: an error answer after the retries, or the endpoint cannot be
                reached (``unreachable: …``, a timeout included).
        """
        body = render_request(self.endpoint, model, request)
        if self.provider == "anthropic":
            body.setdefault("max_tokens", 4096)  # required by the Messages API
        delay = BACKOFF
        for attempt in range(RETRIES + 1):
            try:
                status, data, ctype, headers = self._post(body)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise ProviderError(f"unreachable: {self.base_url}: {reason}") from None
            except http.client.HTTPException as exc:  # not HTTP at all (a bad status line, a cut body)
                raise ProviderError(f"not an HTTP answer from {self.base_url}: {type(exc).__name__}") from None
            if (status == 429 or status >= 500) and attempt < RETRIES:
                after = headers.get("retry-after") or headers.get("Retry-After")
                wait = float(after) if after and after.replace(".", "", 1).isdigit() else delay
                self.sleep(min(wait, MAX_WAIT))
                delay *= 2
                continue
            try:
                parsed = parse_proxy_response(self.endpoint, status, data, ctype).parsed
                resp = model_response(parsed)
            except ValidationError as exc:  # JSON, but not a chat answer (a tool call id that is a number…)
                errors = exc.errors()
                where = ".".join(str(x) for x in errors[0]["loc"]) if errors else ""
                msg = errors[0]["msg"] if errors else "invalid"
                raise ProviderError(f"malformed answer (HTTP {status}): {where or 'the answer'}: {msg}") from None
            if resp is None:
                err = parsed.error
                raise ProviderError(f"{err.type}: {err.message}" if err else f"http_{status}: no response")
            return resp
        raise ProviderError("unreachable: no answer after the retries")  # pragma: no cover - loop returns

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        """Never runs a tool: tool calls are answered from the recording, fixtures or
        requirements."""
        raise ProviderError(
            f"the provider executor runs no tools: tool {name!r} is answered from the recording, a fixture "
            "or a requirement (keep the policy's tool source recorded or fixture)"
        )

    def run(self, runtime: Any, task: Any) -> Any:  # pragma: no cover - runs_agent is False
        raise ProviderError("the provider executor has no agent loop: the engine's generic chat loop runs")
