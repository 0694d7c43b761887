"""The provider executor (``provider:openai`` / ``provider:anthropic``): continue a branch
with a live model while every tool answer stays offline.

:class:`ProviderExecutor` answers the model calls a replay cannot answer from the
recording — with the branch's policy ``model: live`` — by sending the engine's request,
rebuilt in the provider's wire format (:func:`core.importers._llm_api.render_request`), to
an OpenAI- or Anthropic-compatible endpoint (OpenAI's, or vLLM, Ollama, LiteLLM, OpenRouter,
Gemini's OpenAI endpoint…). It runs no agent loop (``runs_agent = False``): the engine's
generic chat loop walks the branch, and tool calls are answered by the recording,
fixtures or requirements — never executed.

Where it sends: ``provider:openai`` — ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``) with ``OPENAI_API_KEY``; ``provider:anthropic`` —
``ANTHROPIC_BASE_URL`` (default ``https://api.anthropic.com``) with ``ANTHROPIC_API_KEY``;
``provider:openai@URL`` names the base URL in the spec. The key is sent as a header and
never stored. Timeouts (``CHASSIS_PROVIDER_TIMEOUT`` seconds, default 600); up to
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
        self.timeout = float(e.get("CHASSIS_PROVIDER_TIMEOUT") or 600)
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
        req = urllib.request.Request(
            self.base_url + self.path, data=orjson.dumps(body), headers=self._headers(), method="POST"
        )
        self.calls += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:  # noqa: S310 — the user's endpoint
                return r.status, r.read(), r.headers.get("Content-Type", ""), dict(r.headers)
        except urllib.error.HTTPError as exc:
            return (
                exc.code,
                exc.read(),
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
                self.sleep(min(wait, 60.0))
                delay *= 2
                continue
            parsed = parse_proxy_response(self.endpoint, status, data, ctype).parsed
            resp = model_response(parsed)
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
