"""``record``: run an agent's command with its model APIs pointed at the proxy, forward
every request to the real upstream, and write what went through as a recording.

Each model exchange becomes a model record (docs/proxy.md, "What is recorded"): the
request in our canonical shape (:mod:`core.proxy.exchange`), the response (a streamed one
reassembled: text, tool calls with fragmented arguments joined, thinking kept apart),
usage, duration, and an upstream error (HTTP status, error body) as the call's error;
``meta`` keeps the endpoint, the transport fields, the response id and creation time and
the HTTP status. Tool calls the agent ran itself are rebuilt from the transcript — a
call's id in one response, its result in a later request — as tool records with
``meta.observed = true`` (not mediated), placed before the model call whose request first
carried the result. Requests to other paths are forwarded as they are and listed in
``metadata.recorder.unrecorded``.

Credentials are forwarded, never written: no header is stored, and every credential
header's value is taught to the run's redactor (:class:`core.record.redaction.SecretRedactor`)
so it is scrubbed wherever else it appears, with the rest of the redaction rules
(docs/format.md, "Redaction"). The recording is written atomically when the command
exits; on a timeout, a Ctrl-C or a crash of the command it keeps what was recorded,
marked incomplete (``metadata.incomplete``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from aiohttp import web

from ..errors import CanonicalizationError, FormatError, OutputError
from ..importers._build import identity_key, record_identity, tag_big_ints, tag_big_ints_in
from ..importers._llm_api import Warnings
from ..importers.vcr import ToolPairer
from ..record.canonical import canonical_json
from ..record.io import redact_recording, save_recording
from ..record.jsonvalues import load_json_lenient
from ..record.nesting import depth_reason, ensure_recursion_limit, exceeds
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    ModelRecord,
    Recording,
    SessionInfo,
    ToolRecord,
)
from ..record.redaction import SecretRedactor, header_kind
from .exchange import (
    ProxyRequest,
    endpoint_of,
    model_response,
    parse_proxy_request,
    parse_proxy_response,
)
from .process import AgentProcess, environment
from .server import BASE_URL_VARIABLES, ProxyServer, proxy_env

__all__ = ["DEFAULT_UPSTREAMS", "RecordResult", "Recorder", "record_command", "upstreams_from"]

#: where requests go when neither a flag nor the agent's environment names an upstream
DEFAULT_UPSTREAMS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}

#: request headers not forwarded (RFC 9110 §7.6.1 hop-by-hop, and what the client
#: library sets again); ``accept-encoding`` is dropped so the upstream answers
#: uncompressed and a stream passes through chunk by chunk
_DROP_REQUEST = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "accept-encoding",
        "origin",
        "proxy-authorization",
    }
)
_DROP_RESPONSE = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "upgrade", "trailer"}
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def upstreams_from(env: dict[str, str], openai: str | None = None, anthropic: str | None = None) -> dict[str, str]:
    """Each provider's upstream: the flag, else the base URL the agent's environment had
    (:data:`core.proxy.server.BASE_URL_VARIABLES`), else :data:`DEFAULT_UPSTREAMS`."""
    out: dict[str, str] = {}
    for provider, flag in (("openai", openai), ("anthropic", anthropic)):
        had = next((env[n] for n in BASE_URL_VARIABLES[provider] if env.get(n)), None)
        out[provider] = (flag or had or DEFAULT_UPSTREAMS[provider]).rstrip("/")
    return out


@dataclass
class _Exchange:
    """One recorded model exchange, in the order it finished."""

    tools: list[ToolRecord]
    model: ModelRecord


@dataclass
class _InFlight:
    """A model exchange on its way: what is known of it so far (kept as a partial record
    when the agent exits before the upstream's answer has ended)."""

    endpoint: str
    preq: ProxyRequest
    tools: list[ToolRecord]
    at: str
    t0: float
    status: int = 0
    ctype: str = ""
    chunks: list[bytes] = field(default_factory=list)


def upstream_url(base: str, path: str, query: str) -> str:
    """``base`` (an upstream base URL, with or without a query) joined with the path below
    it and the agent's query: ``https://h/v1?k=1`` + ``/chat/completions`` + ``x=2`` →
    ``https://h/v1/chat/completions?k=1&x=2``."""
    parts = urlsplit(base)
    joined = parts.path.rstrip("/") + path
    q = "&".join(x for x in (parts.query, query) if x)
    return urlunsplit((parts.scheme, parts.netloc, joined, q, ""))


def shown_upstream(url: str) -> str:
    """An upstream URL as the recording keeps it: no user, password or query (a key may
    hide in either; only the host and path matter to a reader)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", "")) + (" (query not stored)" if parts.query else "")


@dataclass
class Recorder:
    """The recording half of the proxy: an aiohttp handler (:meth:`handle`) that forwards
    to ``upstreams`` and keeps each exchange. Build the recording with :meth:`recording`.
    ``timeout``: seconds the upstream may stay silent (no byte) before the call is given
    up (HTTP 504 to the agent, error ``upstream_timeout``)."""

    upstreams: dict[str, str]
    timeout: float = 600.0
    redactor: SecretRedactor = field(default_factory=SecretRedactor)
    exchanges: list[_Exchange] = field(default_factory=list)
    unrecorded: list[dict[str, Any]] = field(default_factory=list)
    warnings: Warnings = field(default_factory=Warnings)
    in_flight: int = 0
    _pairer: ToolPairer | None = None
    _history: dict[str, list[ChatMessage]] = field(default_factory=dict)
    _session: aiohttp.ClientSession | None = None
    _n: int = 0
    _open: dict[int, _InFlight] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._pairer = ToolPairer(self.warnings)

    def history(self, response_id: str) -> list[ChatMessage] | None:
        """The full messages a recorded Responses id stands for, or ``None``."""
        return self._history.get(response_id)

    def _learn_credentials(self, headers: Any) -> None:
        """Teach the run's redactor every credential header's value (names as text:
        aiohttp gives them as case-insensitive strings of its own)."""
        for name, value in headers.items():
            kind = header_kind(str(name))
            if kind is not None and isinstance(value, str):
                self.redactor.remember(value, kind)

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(auto_decompress=True)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            try:
                await self._session.close()
            except Exception:  # noqa: BLE001 — connections the agent left behind; nothing to keep
                pass
            self._session = None

    def _unrecorded(self, request: web.Request, provider: str, path: str, reason: str, status: Any = None) -> None:
        self.unrecorded.append(
            {"method": request.method, "provider": provider, "path": path, "status": status, "reason": reason}
        )

    async def handle(self, request: web.Request, provider: str, path: str) -> web.StreamResponse:
        """Forward one request upstream; record it when it is a model call. Never raises:
        whatever goes wrong, the agent gets the upstream's answer (or a clear error) and
        the call is recorded or listed as unrecorded with the reason."""
        self.in_flight += 1
        try:
            return await self._handle(request, provider, path)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 — a bug must not cost the agent its answer
            self._unrecorded(request, provider, path, f"the proxy failed on this request: {type(exc).__name__}: {exc}")
            return web.json_response(
                {"error": {"type": "proxy_error", "message": f"chassis-inspector proxy: {type(exc).__name__}"}},
                status=502,
            )
        finally:
            self.in_flight -= 1

    def _parse_request(
        self, request: web.Request, provider: str, path: str, endpoint: str, body: bytes
    ) -> ProxyRequest | None:
        """The model request a body stands for, or ``None`` (listed as unrecorded, with the
        reason: not JSON, not an object, nested past the format's limit, a shape the
        parser cannot read)."""
        try:
            obj, _ = load_json_lenient(body, source="request body")
        except FormatError as exc:
            self._unrecorded(
                request,
                provider,
                path,
                f"request body is not JSON the format can hold ({exc.reason}); forwarded as sent",
            )
            return None
        if not isinstance(obj, dict):
            self._unrecorded(request, provider, path, "request body is not a JSON object; forwarded as sent")
            return None
        try:
            return parse_proxy_request(endpoint, obj, self.history)
        except Exception as exc:  # noqa: BLE001 — a body of a shape the parser cannot read
            self._unrecorded(
                request,
                provider,
                path,
                f"request body could not be read ({type(exc).__name__}: {exc}); forwarded as sent",
            )
            return None

    async def _handle(self, request: web.Request, provider: str, path: str) -> web.StreamResponse:
        self._n += 1
        body = await request.read()
        self._learn_credentials(request.headers)
        endpoint = endpoint_of(provider, request.method, path)
        preq = self._parse_request(request, provider, path, endpoint, body) if endpoint is not None else None
        tools: list[ToolRecord] = []
        if preq is not None:
            assert self._pairer is not None
            for r in preq.results:
                tr = self._pairer.answer(r)
                if tr is not None:
                    tr.meta = {"observed": True}
                    tools.append(tr)
        url = upstream_url(self.upstreams[provider], path, request.query_string)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
        state = _InFlight(endpoint or "", preq, tools, _now(), time.perf_counter()) if preq is not None else None
        key = id(request)
        if state is not None:
            self._open[key] = state
        client_gone = False
        error: ErrorInfo | None = None
        response: web.StreamResponse
        #: a stream already started towards the agent (an upstream failure after this
        #: point ends that stream: a fresh error response can no longer be sent)
        started: web.StreamResponse | None = None
        chunks: list[bytes] = state.chunks if state is not None else []
        status = 502
        ctype = ""
        data = b""
        try:
            session = await self._client()
            async with session.request(
                request.method,
                url,
                data=body,
                headers=headers,
                # silence, not the whole answer: a long generation that keeps streaming is fine
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=self.timeout),
                allow_redirects=False,
                skip_auto_headers=("Accept-Encoding",),
            ) as up:
                status = up.status
                ctype = up.headers.get("Content-Type", "")
                if state is not None:
                    state.status, state.ctype = status, ctype
                out_headers = {k: v for k, v in up.headers.items() if k.lower() not in _DROP_RESPONSE}
                if "text/event-stream" in ctype.lower():
                    stream = web.StreamResponse(status=up.status, headers=out_headers)
                    started = stream
                    try:
                        await stream.prepare(request)
                    except (ConnectionResetError, RuntimeError):
                        client_gone = True
                    async for chunk in up.content.iter_any():
                        chunks.append(chunk)
                        if not client_gone:
                            try:
                                await stream.write(chunk)
                            except (ConnectionResetError, RuntimeError):
                                client_gone = True  # keep reading: the recording gets the whole answer
                    data = b"".join(chunks)
                    if not client_gone:
                        try:
                            await stream.write_eof()
                        except (ConnectionResetError, RuntimeError):
                            client_gone = True
                    response = stream
                else:
                    data = await up.read()
                    chunks.append(data)
                    response = web.Response(body=data, status=up.status, headers=out_headers)
        except (TimeoutError, aiohttp.ClientError, ValueError, RuntimeError) as exc:
            if started is not None:
                # the stream broke after it began: the agent has what was sent; the record
                # keeps the partial answer and says why it ends there
                data = b"".join(chunks)
                error = ErrorInfo(
                    type="upstream_stream_broken",
                    message=f"the upstream's stream ended early after {len(data)} bytes: "
                    + ("timeout" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__),
                )
                response = started
                try:
                    await started.write_eof()
                except (ConnectionResetError, RuntimeError):
                    pass
            elif isinstance(exc, TimeoutError):
                error = ErrorInfo(
                    type="upstream_timeout",
                    message=f"the upstream sent nothing for {self.timeout:g} s ({shown_upstream(url)})",
                )
                response = web.json_response(
                    {"error": {"type": "upstream_timeout", "message": error.message}}, status=504
                )
                status = 504
            else:
                error = ErrorInfo(
                    type="upstream_unreachable",
                    message=f"the upstream {shown_upstream(url)} could not be reached: {type(exc).__name__}: {exc}",
                )
                response = web.json_response(
                    {"error": {"type": "upstream_unreachable", "message": error.message}}, status=502
                )
                status = 502
        finally:
            self._open.pop(key, None)
        if endpoint is None:
            self._unrecorded(request, provider, path, "not a model call the proxy records; forwarded as sent", status)
            return response
        if preq is None:
            return response
        self._finish(
            endpoint,
            preq,
            tools,
            state.at if state else _now(),
            state.t0 if state else 0.0,
            status,
            ctype,
            data,
            error,
            client_gone,
        )
        return response

    def _finish(
        self,
        endpoint: str,
        preq: ProxyRequest,
        tools: list[ToolRecord],
        at: str,
        t0: float,
        status: int,
        ctype: str,
        data: bytes,
        error: ErrorInfo | None,
        client_gone: bool,
    ) -> None:
        """Record one exchange (``error`` already known, or read from the answer)."""
        duration = time.perf_counter() - t0
        meta: dict[str, Any] = {
            "endpoint": endpoint,
            "http_status": status,
            "streamed": "text/event-stream" in ctype.lower(),
        }
        if preq.transport:
            meta["transport"] = preq.transport
        if client_gone:
            meta["client_disconnected"] = True
        if preq.unresolved:
            meta["history_unresolved"] = preq.unresolved
        if preq.instructions:
            meta["instructions"] = True
        resp_obj = None
        partial = error is not None and error.type in ("upstream_stream_broken", "recording_cut")
        if error is None or partial:
            try:
                answer = parse_proxy_response(endpoint, status, data, ctype)
            except Exception as exc:  # noqa: BLE001 — an answer of a shape the parser cannot read
                answer = None
                error = ErrorInfo(type="unreadable_response", message=f"HTTP {status}: {type(exc).__name__}: {exc}")
            if answer is not None:
                parsed, created = answer.parsed, answer.created
                if answer.arguments_text:
                    meta["arguments_text"] = answer.arguments_text
                error = error if partial else parsed.error
                resp_obj = model_response(parsed)
                if parsed.response_id:
                    meta["response_id"] = parsed.response_id
                if parsed.response_model and parsed.response_model != preq.model:
                    meta["response_model"] = parsed.response_model
                if created is not None:
                    meta["created"] = created
        model = ModelRecord(
            seq=0,
            at=at,
            model=preq.model,
            request=preq.request,
            response=resp_obj,
            duration_seconds=duration,
            error=error,
            meta=meta,
        )
        self.exchanges.append(_Exchange(tools, model))
        if resp_obj is not None:
            assert self._pairer is not None
            for tc in resp_obj.message.tool_calls or []:
                self._pairer.open(tc.id, tc.name, tc.arguments, len(self.exchanges) - 1)
            rid = meta.get("response_id")
            if endpoint == "openai.responses" and isinstance(rid, str):
                self._history[rid] = [*preq.history(), resp_obj.message]

    def cut_open(self) -> int:
        """Record every exchange still on its way as far as it got (error
        ``recording_cut``: the agent ended before the upstream's answer did); return how many."""
        n = 0
        for state in list(self._open.values()):
            data = b"".join(state.chunks)
            self._finish(
                state.endpoint,
                state.preq,
                state.tools,
                state.at,
                state.t0,
                state.status or 0,
                state.ctype,
                data,
                ErrorInfo(
                    type="recording_cut",
                    message=f"the agent ended before the upstream's answer did; {len(data)} bytes of it recorded",
                ),
                True,
            )
            n += 1
        self._open.clear()
        return n

    def recording(self, metadata: dict[str, Any]) -> Recording:
        """The recording of every exchange so far: records numbered, keys computed,
        every value redacted (credentials learned from the headers included)."""
        records: list[Any] = []
        for ex in self.exchanges:
            calls: list[ToolRecord | ModelRecord] = [*ex.tools, ex.model]
            for r in calls:
                why = _unkeepable(r)
                if why is None:
                    records.append(r.model_copy())
                else:  # one call the format cannot hold never costs the others
                    name = r.tool if isinstance(r, ToolRecord) else r.model
                    self.unrecorded.append(
                        {"method": None, "provider": None, "path": None, "status": None,
                         "reason": f"{r.kind} call {name!r} could not be kept: {why}"}
                    )  # fmt: skip
        for seq, r in enumerate(records):
            r.seq = seq
            r.run_id = "run"
        tag_big_ints(records, self.warnings.add)
        metadata = tag_big_ints_in(metadata, "metadata", self.warnings.add)
        seen: dict[str, int] = {}
        for r in records:
            if isinstance(r, ToolRecord) and r.tool_call_id:
                n = seen.get(r.tool_call_id, 0) + 1
                seen[r.tool_call_id] = n
                if n > 1:
                    r.tool_call_id = f"{r.tool_call_id}~{n}"
        for r in records:
            try:
                r.key, why = identity_key(record_identity(r))
            except CanonicalizationError as exc:  # pragma: no cover - identity_key reports, not raises
                r.key, why = None, str(exc)
            if r.key is None:
                self.warnings.add(
                    f"record {r.seq}", f"call recorded without a canonical key ({why}); replay cannot match it"
                )
        rec = Recording(
            metadata=metadata,
            session=SessionInfo(
                mode="record", created_at=metadata.get("recorder", {}).get("started_at"), producer=_producer()
            ),
            records=records,
        )
        redact_recording(rec, self.redactor)
        return rec


def _unkeepable(record: Any) -> str | None:
    """Why a record cannot go into a recording (nested past the format's limit, a value
    with no canonical form), or ``None``."""
    try:
        obj = record.to_json_obj()
        if exceeds(obj):
            return depth_reason()
        canonical_json(obj)
    except (CanonicalizationError, FormatError, RecursionError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class _Terminated(BaseException):
    """``record`` got SIGTERM (``timeout``, a CI job cancelled, ``kill``): handled as a
    Ctrl-C is — the agent is ended, the recording kept."""


def _producer() -> str:
    from .. import __version__

    return f"chassis-inspector {__version__} (record)"


@contextlib.contextmanager
def _no_second_interrupt() -> Iterator[None]:
    """Ctrl-C ignored while the recording is being kept (main thread only; elsewhere a
    no-op): the first one already said to stop, a second must not lose what was recorded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)


@dataclass
class RecordResult:
    """What :func:`record_command` did: the command's ``exit_code`` (128 + N when it was
    ended by signal N), the ``recording`` written to ``path``, whether it is
    ``incomplete`` and why, and warnings."""

    exit_code: int
    recording: Recording
    path: Path
    incomplete: bool
    reason: str | None
    warnings: list[str]


def record_command(
    argv: list[str],
    output: Path,
    *,
    upstream_openai: str | None = None,
    upstream_anthropic: str | None = None,
    timeout: float | None = None,
    upstream_timeout: float = 600.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    echo: bool = True,
) -> RecordResult:
    """Run ``argv`` through the recording proxy and write ``output`` atomically.

    ``timeout``: seconds the command may run (then it is terminated, SIGKILL after 5 s,
    and the recording is marked incomplete); ``upstream_timeout``: seconds the upstream
    may send nothing (then the agent gets HTTP 504 and the call is recorded as error
    ``upstream_timeout``; a stream that stops after it began keeps what arrived). ``echo``: the command's output and input are the terminal's.
    A Ctrl-C (KeyboardInterrupt) reaches the command too, and SIGTERM to this process
    ends it; the recording is then kept, marked incomplete, and the exit code is the
    command's.

    Raises:
        CommandError: the command cannot be started (nothing is written).
        OutputError: ``output``'s folder does not exist, or the file cannot be written.
        ProxyStartError: the proxy cannot start.
    """
    ensure_recursion_limit()  # request bodies nested up to the format's limit
    output = Path(output)
    if not output.parent.exists():
        raise OutputError(str(output), f"the folder {output.parent} does not exist")
    base_env = environment() if env is None else dict(env)
    recorder = Recorder(upstreams_from(base_env, upstream_openai, upstream_anthropic), timeout=upstream_timeout)
    server = ProxyServer(recorder.handle).start()
    started_at = _now()
    t0 = time.monotonic()
    reason: str | None = None
    proc: AgentProcess | None = None
    previous_term = _on_sigterm()
    try:
        proc = AgentProcess(argv, proxy_env(server, base_env), echo=echo, cwd=cwd)
        try:
            code = proc.wait(timeout)
            if code is None:
                reason = f"the command ran past --timeout {timeout:g} s and was ended"
                proc.end("timeout")
            else:
                proc.finish()
        except (KeyboardInterrupt, _Terminated) as exc:
            terminated = isinstance(exc, _Terminated)
            reason = (
                "ended by SIGTERM before the command ended"
                if terminated
                else "interrupted (Ctrl-C) before the command ended"
            )
            with _no_second_interrupt():  # a second signal must not lose the recording
                if terminated:
                    proc.end("terminated")
                else:
                    proc.interrupt()
                    if proc.wait(KILL_WAIT) is None:
                        proc.end("interrupted")
                    else:
                        proc.finish()
        # answers still on their way when the command ended: a moment to finish, then
        # kept as far as they got
        with _no_second_interrupt():
            deadline = time.monotonic() + IN_FLIGHT_WAIT
            while recorder.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)
            if server.loop is not None:
                try:
                    server.run_soon(_call(recorder.cut_open)).result(5)
                except Exception:  # noqa: BLE001 — the loop is gone: nothing is on its way
                    pass
    finally:
        _restore_sigterm(previous_term)
        if server.loop is not None:
            try:
                server.run_soon(recorder.close()).result(5)
            except Exception:  # noqa: BLE001 — the loop is gone: nothing left to close
                pass
        server.stop()
    assert proc is not None
    exit_code = proc.exit_status
    if reason is None and exit_code != 0:
        reason = f"the command exited with status {exit_code}"
    incomplete = reason is not None
    meta: dict[str, Any] = {
        "agent": "command",
        "executor": "cmd:" + shlex.join(argv),
        "final_output": proc.output_text(),
        "recorder": {
            "command": list(argv),
            "cwd": str(Path(cwd).resolve()) if cwd is not None else str(Path.cwd()),
            "exit_code": exit_code,
            "started_at": started_at,
            "duration_seconds": round(time.monotonic() - t0, 3),
            "upstreams": {k: shown_upstream(v) for k, v in recorder.upstreams.items()},
            "requests": recorder._n,
            "unrecorded": recorder.unrecorded[:200],
            "refused": [{"status": s, "reason": r} for s, r in server.refused[:50]],
            "incomplete": incomplete,
        },
    }
    if proc.stdout.dropped:
        meta["recorder"]["output_dropped_bytes"] = proc.stdout.dropped
    if incomplete:
        meta["incomplete"] = True
        meta["recorder"]["reason"] = reason
    rec = recorder.recording(meta)
    if rec.metadata.get("executor") != meta["executor"]:
        recorder.warnings.add(
            "metadata.executor",
            "the command line held a secret, redacted in metadata.executor: --executor recorded would run it "
            "without the secret; replay with --executor 'cmd:…' naming the command yourself",
        )
    try:
        with _no_second_interrupt():
            save_recording(rec, output)
    except OSError as exc:
        raise OutputError(str(output), f"cannot write the recording: {exc.strerror or exc}") from None
    return RecordResult(exit_code, rec, output, incomplete, reason, [str(w) for w in recorder.warnings])


#: seconds the command is given to exit by itself after a Ctrl-C
KILL_WAIT = 5.0
#: seconds answers still on their way when the command ends are given to finish
IN_FLIGHT_WAIT = 5.0


async def _call(fn: Any) -> Any:
    return fn()


def _on_sigterm() -> Any:
    """Handle SIGTERM as a Ctrl-C while the command runs (main thread only); the previous
    handler, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        raise _Terminated()

    return signal.signal(signal.SIGTERM, handler)


def _restore_sigterm(previous: Any) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)
