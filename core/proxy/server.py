"""The loopback HTTP server of the model-API proxy (aiohttp), run in a thread of its own.

The server binds to 127.0.0.1 on a free port and answers only under a per-run secret
path (``http://127.0.0.1:PORT/TOKEN/openai/v1``, ``…/TOKEN/anthropic``): the token is
made for each run (:func:`secrets.token_urlsafe`) and handed to the agent's process only
through its environment. A request is refused with 403 when its path does not start with
the token, when it carries an ``Origin`` header (browsers add one to every cross-site
request: a page must not drive a loopback server — the attack the served app guards
against too), or when its ``Host`` is not the server's own loopback address (DNS
rebinding). docs/proxy.md, "Security".
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..errors import InspectorError

__all__ = ["ProxyServer", "ProxyStartError", "Handler", "proxy_env", "BASE_URL_VARIABLES"]

#: ``request, provider ("openai" | "anthropic"), path below the provider's base URL``
Handler = Callable[[web.Request, str, str], Awaitable[web.StreamResponse]]

#: the environment variables an agent's SDK reads its base URL from, per provider: the
#: official SDKs (Python, TypeScript, Go) read ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``;
#: older clients and LiteLLM ``OPENAI_API_BASE``; some tools ``ANTHROPIC_API_URL``
BASE_URL_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"),
}

#: what each provider's base URL ends with at the proxy (the SDKs append the rest)
_PROVIDER_SUFFIX = {"openai": "/openai/v1", "anthropic": "/anthropic"}


class ProxyStartError(InspectorError, RuntimeError):
    """The proxy could not start (no free port on 127.0.0.1, …)."""

    title = "proxy error"


def _refuse(reason: str, status: int = 403) -> web.Response:
    return web.json_response(
        {"error": {"type": "proxy_refused", "message": f"chassis-inspector proxy: {reason}"}}, status=status
    )


class ProxyServer:
    """An aiohttp server on 127.0.0.1 answering ``handler`` under a secret path.

    Use :meth:`start` (returns once the port is bound), :attr:`base_url`,
    :func:`proxy_env` for the agent's environment, and :meth:`stop`. ``handler`` runs on
    the server's event loop (:attr:`loop`).

    Raises:
        ProxyStartError: :meth:`start` could not bind or start.
    """

    def __init__(self, handler: Handler, *, token: str | None = None, port: int = 0) -> None:
        self.handler = handler
        self.token = token or secrets.token_urlsafe(24)
        self.port = port
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopped = threading.Event()
        #: requests refused by the guards: ``[(status, reason)]``
        self.refused: list[tuple[int, str]] = []

    # -- guards -----------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        origins = request.headers.getall("Origin", [])
        if origins:
            self.refused.append((403, "browser Origin"))
            return _refuse(
                "a request with an Origin header (a web page) is refused; only the agent's own process may call"
            )
        host = request.headers.get("Host", "")
        if host not in (f"127.0.0.1:{self.port}", f"localhost:{self.port}"):
            self.refused.append((403, "Host"))
            return _refuse(f"Host {host[:80]!r} is not this proxy's loopback address")
        path = request.rel_url.raw_path
        segments = path.split("/")
        if any(seg in ("..", ".") or seg.lower() in ("%2e", "%2e%2e", ".%2e", "%2e.") for seg in segments):
            self.refused.append((400, "dot segment"))
            return _refuse("a path with '.' or '..' segments is refused (it could leave the provider's base URL)", 400)
        head, _, rest = path.lstrip("/").partition("/")
        if not hmac.compare_digest(head.encode(), self.token.encode()):
            self.refused.append((403, "token"))
            return _refuse("this path does not hold the run's token (the proxy answers only the agent it started)")
        provider, _, below = rest.partition("/")
        if provider == "openai" and (below == "v1" or below.startswith("v1/")):
            return await self.handler(request, "openai", "/" + below[3:] if below != "v1" else "/")
        if provider == "anthropic":
            return await self.handler(request, "anthropic", "/" + below)
        return _refuse(f"unknown provider path {('/' + rest)[:80]!r} (expected /openai/v1/… or /anthropic/…)", 404)

    # -- lifecycle --------------------------------------------------------------------

    def _serve(self) -> None:
        # aiohttp logs a malformed request (no Host, a bad request line) with a traceback
        # on stderr — the agent's terminal: the agent's client gets its 400 either way
        for name in ("aiohttp.server", "aiohttp.access", "aiohttp.web"):
            logging.getLogger(name).addHandler(logging.NullHandler())
            logging.getLogger(name).propagate = False
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            app = web.Application(client_max_size=256 * 1024 * 1024)
            app.router.add_route("*", "/{tail:.*}", self._dispatch)
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", self.port, reuse_address=False)
            loop.run_until_complete(site.start())
            server = getattr(site, "_server", None)
            socks = getattr(server, "sockets", None) or []
            if socks:
                self.port = socks[0].getsockname()[1]
            self._runner = runner
        except BaseException as exc:  # noqa: BLE001 — reported to start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()
            self._stopped.set()

    def start(self) -> ProxyServer:
        """Start serving in a daemon thread; return once the port is bound."""
        self._thread = threading.Thread(target=self._serve, name="chassis-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise ProxyStartError(f"the proxy could not start on 127.0.0.1: {self._error}") from None
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server and wait for its thread (at most ``timeout`` seconds)."""
        loop = self.loop
        if loop is None or self._thread is None or not self._thread.is_alive():
            return
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout)

    def run_soon(self, coro: Any) -> Any:
        """Run a coroutine on the server's loop from another thread (a concurrent future)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/TOKEN`` (secret: it holds the token)."""
        return f"http://127.0.0.1:{self.port}/{self.token}"

    def provider_url(self, provider: str) -> str:
        """The base URL an SDK of ``provider`` is given."""
        return self.base_url + _PROVIDER_SUFFIX[provider]


def proxy_env(server: ProxyServer, env: dict[str, str], *, placeholder_keys: bool = False) -> dict[str, str]:
    """``env`` with every base-URL variable (:data:`BASE_URL_VARIABLES`) pointed at the
    proxy. ``placeholder_keys`` (replay: nothing reaches a provider unless the policy is
    live) gives a missing API key a placeholder, as the SDKs refuse to start without one."""
    out = dict(env)
    for provider, names in BASE_URL_VARIABLES.items():
        for name in names:
            out[name] = server.provider_url(provider)
    if placeholder_keys:
        out.setdefault("OPENAI_API_KEY", "chassis-replay-placeholder")
        out.setdefault("ANTHROPIC_API_KEY", "chassis-replay-placeholder")
    # a client honouring HTTP(S)_PROXY must reach the loopback proxy directly
    for name in ("NO_PROXY", "no_proxy"):
        have = [h for h in out.get(name, "").split(",") if h.strip()]
        out[name] = ",".join([*have, *(h for h in ("127.0.0.1", "localhost") if h not in have)])
    return out
