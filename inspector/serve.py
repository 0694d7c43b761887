"""The served app: textual-serve's :class:`~textual_serve.server.Server` behind an address
check, a per-start secret token and a cap on concurrent sessions.

``chassis-inspector serve`` builds a :class:`GuardedServer` and prints :attr:`GuardedServer.url`
(``http://127.0.0.1:8000/?token=…``). Every request goes through one aiohttp middleware
(:meth:`AccessRule.check`) that refuses, with a 403 page saying why:

* a ``Host`` header that does not name the served address (RFC 9110 §7.2; for a loopback
  address the loopback names ``localhost``, ``127.0.0.1`` and ``[::1]`` on the same port
  count too) — a web page that reached the server through a name of its own (DNS
  rebinding) sends its own name there;
* an ``Origin`` header, when there is one, that is not ``http://`` plus an allowed host:port
  — browsers send it on every WebSocket handshake, and RFC 6455 §10.2 leaves it to the
  server to refuse the origins it does not serve;
* a request for anything but ``/static/…`` without the token (query ``token=``, the last
  path segment of ``/ws/{token}``, or the cookie a valid visit sets), compared in constant
  time (:func:`hmac.compare_digest`).

A WebSocket beyond :attr:`GuardedServer.max_sessions` is accepted and closed at once with
code 1013 (try again later) and a reason the page shows; no app process is started for
it. When a socket closes, its app process is asked to quit, terminated after
``quit_grace`` seconds and killed after ``term_grace`` more (:func:`reap`), so no app
process outlives its socket by more than about ``quit_grace + term_grace + 1`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import ipaddress
import logging
import secrets
import shlex
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, web
from aiohttp.typedefs import Handler
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

log = logging.getLogger("chassis-inspector.serve")

DEFAULT_MAX_SESSIONS = 4
#: seconds an app process gets to quit after its socket closed, before SIGTERM
QUIT_GRACE_SECONDS = 3.0
#: seconds after SIGTERM before SIGKILL
TERM_GRACE_SECONDS = 1.0
#: seconds after SIGKILL for the exit to be reported
KILL_GRACE_SECONDS = 1.0
#: seconds a session beyond the cap waits for an open one to start closing (a reloaded
#: tab's new socket can reach the server just before its old one's close)
CLOSING_GRACE_SECONDS = 0.5
#: how often :func:`reap` looks at the exit status while it waits
_EXIT_POLL_SECONDS = 0.05

TOKEN_PARAM = "token"
#: the names that reach a loopback server from this machine, as they appear in ``Host``
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
HTTP_DEFAULT_PORT = 80
#: the part of a request path that needs no token: textual-serve's own scripts and styles
PUBLIC_PREFIX = "/static/"


# --------------------------------------------------------------------------- addresses


@dataclass(frozen=True)
class ServeAddress:
    """Where the server listens: ``bind_host`` as the socket layer takes it (``::1``),
    ``url_host`` as a URL and a ``Host`` header write it (``[::1]``), and ``port``."""

    bind_host: str
    url_host: str
    port: int

    @classmethod
    def parse(cls, host: str, port: int) -> ServeAddress:
        """``--host`` as the user typed it: a name, an IPv4 address, or an IPv6 address
        bare (``::1``) or in brackets (``[::1]``, RFC 3986 §3.2.2).

        Raises :class:`ValueError` (with a one-line reason) for brackets around something
        that is not an IPv6 address, or an empty host.
        """
        text = host.strip()
        if text.startswith("[") or text.endswith("]"):
            inner = text[1:-1] if text.startswith("[") and text.endswith("]") else ""
            try:
                ipaddress.IPv6Address(inner)
            except ValueError:
                raise ValueError(f"{host!r} is not an IPv6 address in brackets (e.g. [::1])") from None
            return cls(inner, f"[{inner}]", port)
        if not text:
            raise ValueError("the host is empty")
        if ":" in text:
            try:
                ipaddress.IPv6Address(text)
            except ValueError:
                raise ValueError(f"{host!r} is neither a host name nor an IP address") from None
            return cls(text, f"[{text}]", port)
        return cls(text, text, port)

    @property
    def base_url(self) -> str:
        """``http://host:port`` (no trailing slash)."""
        return f"http://{self.url_host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        """Whether only this machine can connect (``localhost``, 127.0.0.0/8, ``::1``)."""
        if self.bind_host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.bind_host).is_loopback
        except ValueError:
            return False

    @property
    def is_wildcard(self) -> bool:
        """Whether the server listens on every address of the machine (``0.0.0.0``, ``::``)."""
        try:
            return ipaddress.ip_address(self.bind_host).is_unspecified
        except ValueError:
            return False


def parse_authority(value: str) -> tuple[str, int] | None:
    """``host[:port]`` of a ``Host`` header or an origin → ``(host, port)``, the host
    lower-cased, an IPv6 literal in its compressed form inside brackets, a missing port
    taken as HTTP's default 80 (RFC 9110 §4.2.1). ``None`` when it is not of that shape
    (an unbracketed IPv6 address, a path, a user part, a bad port, an empty host)."""
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        try:
            host = f"[{ipaddress.IPv6Address(text[1:end]).compressed}]"
        except ValueError:
            return None
        rest = text[end + 1 :]
    else:
        host, colon, port_text = text.partition(":")
        rest = colon + port_text
        if not host or ":" in port_text or any(c in host for c in "/?#@ \\"):
            return None
    if not rest:
        return host, HTTP_DEFAULT_PORT
    if not rest.startswith(":") or not rest[1:].isascii() or not rest[1:].isdigit():
        return None
    port = int(rest[1:])
    return (host, port) if 0 < port <= 65535 else None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- access rule


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: an HTTP ``status``, a short ``title`` and the ``detail``
    sentence the page shows."""

    title: str
    detail: str
    status: int = 403


OPEN_THE_LINK = "Open the link `chassis-inspector serve` printed (it ends with ?token=…)."


class AccessRule:
    """Which requests the server answers: the ``Host`` and ``Origin`` checks and the token.

    ``address`` is the served address, ``token`` the secret of this start, ``cookie_name``
    the cookie a valid visit sets (one per port: browsers keep cookies per host, not per
    port).
    """

    def __init__(self, address: ServeAddress, token: str, cookie_name: str) -> None:
        self.address = address
        self.token = token
        self.cookie_name = cookie_name
        port = address.port
        served = parse_authority(address.url_host)  # the served host in Host-header form
        allowed = {(served[0] if served else address.url_host.lower(), port)}
        if address.is_loopback or address.is_wildcard:
            allowed |= {(name, port) for name in LOOPBACK_NAMES}
        if address.is_wildcard:
            for name in (socket.gethostname(), socket.getfqdn()):
                if name:
                    allowed.add((name.lower(), port))
        self.allowed: frozenset[tuple[str, int]] = frozenset(allowed)

    def authority_allowed(self, authority: tuple[str, int] | None) -> bool:
        """Whether ``(host, port)`` names this server. On a wildcard address any IP literal
        with the right port counts too: a rebinding page can only send a name."""
        if authority is None:
            return False
        if authority in self.allowed:
            return True
        host, port = authority
        return self.address.is_wildcard and port == self.address.port and _is_ip_literal(host)

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison of ``candidate`` with the token."""
        return hmac.compare_digest(candidate.encode("utf-8", "surrogateescape"), self.token.encode("utf-8"))

    def served_names(self) -> str:
        """The addresses this server answers to, for the refusal page."""
        names = [self.address.base_url]
        if self.address.is_loopback:
            names += [f"http://{n}:{self.address.port}" for n in LOOPBACK_NAMES if n != self.address.url_host.lower()]
        return ", ".join(names)

    def check(self, request: web.Request) -> Refusal | None:
        """``None`` when ``request`` may go on, else why it is refused (see the module)."""
        hosts = request.headers.getall("Host", [])
        if len(hosts) != 1:
            return Refusal(
                "Wrong host",
                f"A request needs exactly one Host header (RFC 9110 §7.2); this one had {len(hosts)}. " + OPEN_THE_LINK,
            )
        if not self.authority_allowed(parse_authority(hosts[0])):
            return Refusal(
                "Wrong host",
                f"This server answers only to {self.served_names()}; the request named the host "
                f"{_shorten(hosts[0])!r}. A page that reaches it under another name is refused "
                "(DNS rebinding). " + OPEN_THE_LINK,
            )
        origins = request.headers.getall("Origin", [])
        for origin in origins:
            ok = origin.lower().startswith("http://") and self.authority_allowed(parse_authority(origin[7:]))
            if not ok or len(origins) > 1:
                return Refusal(
                    "Cross-origin request refused",
                    f"A page from {_shorten(origin)!r} tried to use this server; only its own pages "
                    f"({self.address.base_url}) may (RFC 6455 §10.2). " + OPEN_THE_LINK,
                )
        if request.path.startswith(PUBLIC_PREFIX):
            return None
        candidates = [request.match_info.get(TOKEN_PARAM), *request.query.getall(TOKEN_PARAM, [])]
        candidates.append(request.cookies.get(self.cookie_name))
        given = [c for c in candidates if c]
        if not given:
            return Refusal("Access token missing", "This address needs the access token. " + OPEN_THE_LINK)
        if not any([self.token_matches(c) for c in given]):  # every candidate compared: no early exit
            return Refusal(
                "Wrong access token",
                "The access token is not the one this server started with (each start of "
                "`chassis-inspector serve` makes a new one). " + OPEN_THE_LINK,
            )
        return None


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refusal_response(request: web.Request, refusal: Refusal) -> web.Response:
    """The refusal as an HTML page, or as plain text when the client does not ask for HTML."""
    headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
    if "text/html" not in request.headers.get("Accept", ""):
        return web.Response(
            status=refusal.status,
            text=f"{refusal.title}: {refusal.detail}\n",
            content_type="text/plain",
            headers=headers,
        )
    title, detail = html.escape(refusal.title), html.escape(refusal.detail)
    page = (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
        f"<title>Chassis Inspector — {title}</title></head>\n"
        "<body style='font-family: ui-monospace, monospace; background: #0c181f; color: #eee; margin: 3em'>\n"
        f"<h1>{title}</h1>\n<p>{detail}</p>\n</body></html>\n"
    )
    return web.Response(status=refusal.status, text=page, content_type="text/html", headers=headers)


# --------------------------------------------------------------------------- reaping


async def _exited_within(service: AppService, seconds: float) -> bool:
    """Whether the app process has exited, waiting up to ``seconds`` for it. The exit
    status is read, not ``Process.wait()``: that one also waits for the pipes to close."""
    process = service._process
    if process is None:
        return True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while process.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_EXIT_POLL_SECONDS)
    return True


async def _drain(stream: asyncio.StreamReader | None) -> None:
    """Read ``stream`` to its end so that its pipe closes (nobody else reads it any more)."""
    if stream is None:
        return
    with contextlib.suppress(Exception):
        while await stream.read(1 << 16):
            pass


async def reap(
    service: AppService,
    *,
    quit_grace: float = QUIT_GRACE_SECONDS,
    term_grace: float = TERM_GRACE_SECONDS,
    kill_grace: float = KILL_GRACE_SECONDS,
) -> int | None:
    """Stop the app process of ``service``: textual-serve's quit message first
    (:meth:`AppService.stop`, which on its own waits forever), SIGTERM after
    ``quit_grace`` seconds, SIGKILL after ``term_grace`` more. Returns the exit status
    (``None`` only when even SIGKILL was not reported within ``kill_grace``)."""
    process = service._process
    if process is None:
        return None
    stop = asyncio.ensure_future(service.stop())
    drains: list[asyncio.Task[None]] = []

    def drain_unread_pipes() -> None:
        # textual-serve stops reading the app's output once its socket is gone; read the
        # rest so the pipes close and the exit can be waited for
        if not drains and (service._task is None or service._task.done()):
            drains.extend(asyncio.ensure_future(_drain(s)) for s in (process.stdout, process.stderr))

    loop = asyncio.get_running_loop()
    quit_deadline = loop.time() + quit_grace
    try:
        await asyncio.wait({stop}, timeout=quit_grace)
        drain_unread_pipes()
        if not await _exited_within(service, quit_deadline - loop.time()):
            log.warning("app process %s did not quit in %.1f s: terminating it", process.pid, quit_grace)
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            if not await _exited_within(service, term_grace):
                log.warning("app process %s ignored SIGTERM: killing it", process.pid)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await _exited_within(service, kill_grace)
    finally:
        drain_unread_pipes()
        done, still = await asyncio.wait({stop, *drains}, timeout=kill_grace)
        for task in still:
            task.cancel()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.warning("stopping app process %s: %r", process.pid, task.exception())
    return process.returncode


# --------------------------------------------------------------------------- server


@dataclass(eq=False)
class _Session:
    websocket: web.WebSocketResponse
    service: AppService | None = None
    closing: bool = False
    reaper: asyncio.Task[None] | None = field(default=None, repr=False)


class GuardedServer(Server):
    """textual-serve's server with the access rule, the session cap and reaping.

    ``argv`` is the app's command line; it runs through ``/bin/sh`` as textual-serve does,
    with ``exec`` so that the process the server holds is the app itself. ``token`` is
    made with :func:`secrets.token_urlsafe` (32 bytes) unless given. ``max_sessions`` ≥ 1
    (:class:`ValueError` otherwise).
    """

    def __init__(
        self,
        argv: Sequence[str],
        address: ServeAddress,
        *,
        title: str | None = None,
        templates_path: str | Path | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        token: str | None = None,
        quit_grace: float = QUIT_GRACE_SECONDS,
        term_grace: float = TERM_GRACE_SECONDS,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        command = "exec " + shlex.join(argv)
        templates = templates_path if templates_path is not None else Path(__file__).resolve().parent / "templates"
        super().__init__(
            command,
            host=address.bind_host,
            port=address.port,
            title=title,
            public_url=address.base_url,
            templates_path=templates,
        )
        self.address = address
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self.max_sessions = max_sessions
        self.quit_grace = quit_grace
        self.term_grace = term_grace
        self.rule = AccessRule(address, self.token, cookie_name=f"chassis-inspector-{address.port}")
        self.sessions: set[_Session] = set()
        self._changed: asyncio.Condition | None = None

    @property
    def url(self) -> str:
        """The link to open: ``http://host:port/?token=…``."""
        return f"{self.address.base_url}/?{TOKEN_PARAM}={self.token}"

    def app_pids(self) -> list[int]:
        """The pids of the app processes of the open (or closing) sessions."""
        return [s.service._process.pid for s in self.sessions if s.service is not None and s.service._process]

    # -- the aiohttp application

    async def _make_app(self) -> web.Application:
        """Our routes behind the access rule; ``/static/`` without a directory index."""
        rule = self.rule

        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            refusal = rule.check(request)
            if refusal is not None:
                return refusal_response(request, refusal)
            return await handler(request)

        app = web.Application(middlewares=[guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/ws/{token}", self.handle_websocket, name="websocket-token"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ]
        )
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    def initialize_logging(self) -> None:
        """textual-serve's logging, with the token blanked out of the access log."""
        super().initialize_logging()
        token = self.token

        def scrub(record: logging.LogRecord) -> bool:
            message = record.getMessage()
            if token in message:
                record.msg, record.args = message.replace(token, "…"), ()
            return True

        logging.getLogger("aiohttp.access").addFilter(scrub)

    async def on_startup(self, app: web.Application) -> None:
        """Print nothing: ``serve`` prints the link (textual-serve's banner has no token)."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every socket and reap every app process (all at once) before the server stops."""
        reapers = [self._start_reap(s, reason="The server stopped.") for s in list(self.sessions)]
        if reapers:
            await asyncio.wait(reapers, timeout=self.reap_budget)

    @property
    def reap_budget(self) -> float:
        """Seconds within which a closing session's process is gone (see :func:`reap`)."""
        return self.quit_grace + self.term_grace + 2 * KILL_GRACE_SECONDS

    # -- handlers

    async def handle_index(self, request: web.Request) -> web.Response:
        """The app page, its WebSocket URL carrying the token; sets the token cookie."""
        font_size = to_int(request.query.get("fontsize", "16"), 16)
        context: dict[str, Any] = {
            "font_size": font_size,
            # textual.js appends "?width=…&height=…" to this URL: the token goes in the path
            "app_websocket_url": f"ws://{request.host}/ws/{self.token}",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers.update(
            {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}
        )
        response.set_cookie(self.rule.cookie_name, self.token, httponly=True, samesite="Strict", path="/")
        return response

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def _take_slot(self, session: _Session) -> bool:
        """Add ``session`` when there is room, waiting only for sessions that are already
        closing (a reloaded tab's old session); ``False`` when the cap is reached."""
        changed = self._condition()
        loop = asyncio.get_running_loop()
        start = loop.time()
        async with changed:
            while len(self.sessions) >= self.max_sessions:
                closing = any(s.closing for s in self.sessions)
                remaining = start + (self.reap_budget if closing else CLOSING_GRACE_SECONDS) - loop.time()
                if remaining <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), remaining)
            self.sessions.add(session)
            return True

    def full_reason(self) -> str:
        """The close reason of a refused session (at most 123 bytes, RFC 6455 §5.5.1)."""
        return (
            f"Too many sessions: {self.max_sessions} of {self.max_sessions} are open "
            "(serve --max-sessions). Close one, then press Restart."
        )

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """The socket that drives one app process (one per browser tab)."""
        websocket = web.WebSocketResponse(heartbeat=15)
        session = _Session(websocket)
        if not await self._take_slot(session):
            await websocket.prepare(request)
            await websocket.close(code=WSCloseCode.TRY_AGAIN_LATER, message=self.full_reason().encode())
            return websocket
        try:
            await websocket.prepare(request)
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)

            async def close() -> None:
                await websocket.close()

            session.service = service = AppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await service.start(width, height)
            messages = asyncio.ensure_future(self._process_messages(websocket, service))
            assert service._task is not None
            # the socket ends the session, and so does the app exiting on its own
            await asyncio.wait({messages, service._task}, return_when=asyncio.FIRST_COMPLETED)
            messages.cancel()
            await asyncio.wait({messages})
            if not messages.cancelled() and messages.exception() is not None:
                log.warning("bad message from the browser: %r", messages.exception())
        except Exception as error:
            log.exception(error)
        finally:
            # shielded: a cancelled handler (the server stopping) still reaps its process
            await asyncio.shield(self._start_reap(session))
        return websocket

    def _start_reap(self, session: _Session, reason: str = "") -> asyncio.Task[None]:
        """The task that ends ``session`` (started once, however many ask)."""
        if session.reaper is None:
            session.closing = True
            session.reaper = asyncio.ensure_future(self._reap(session, reason))
        return session.reaper

    async def _reap(self, session: _Session, reason: str) -> None:
        """Close the socket and reap the process (at the same time: a close waits for the
        browser's answer), then free the slot."""
        changed = self._condition()
        async with changed:
            changed.notify_all()  # a session waiting for a slot may wait for this one
        code = WSCloseCode.GOING_AWAY if reason else WSCloseCode.OK
        close = asyncio.ensure_future(session.websocket.close(code=code, message=reason.encode()))
        try:
            if session.service is not None:
                await reap(session.service, quit_grace=self.quit_grace, term_grace=self.term_grace)
        finally:
            async with changed:
                self.sessions.discard(session)
                changed.notify_all()
            # the slot is free once the process is gone; the close handshake may take longer
            done, _ = await asyncio.wait({close}, timeout=self.reap_budget)
            if close in done:
                with contextlib.suppress(Exception):
                    close.result()
            else:
                close.cancel()
