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

import shlex
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ..errors import CanonicalizationError, OutputError
from ..importers._build import identity_key, record_identity, tag_big_ints, tag_big_ints_in
from ..importers._llm_api import Warnings
from ..importers.vcr import ToolPairer
from ..record.io import redact_recording, save_recording
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
class Recorder:
    """The recording half of the proxy: an aiohttp handler (:meth:`handle`) that forwards
    to ``upstreams`` and keeps each exchange. Build the recording with :meth:`recording`."""

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

    def __post_init__(self) -> None:
        self._pairer = ToolPairer(self.warnings)

    def history(self, response_id: str) -> list[ChatMessage] | None:
        """The full messages a recorded Responses id stands for, or ``None``."""
        return self._history.get(response_id)

    def _learn_credentials(self, headers: Any) -> None:
        for name, value in headers.items():
            if header_kind(name) is not None and isinstance(value, str):
                self.redactor.remember(value, header_kind(name) or "secret")

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(auto_decompress=True)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _unrecorded(self, request: web.Request, provider: str, path: str, reason: str, status: Any = None) -> None:
        self.unrecorded.append(
            {"method": request.method, "provider": provider, "path": path, "status": status, "reason": reason}
        )

    async def handle(self, request: web.Request, provider: str, path: str) -> web.StreamResponse:
        """Forward one request upstream; record it when it is a model call."""
        self.in_flight += 1
        try:
            return await self._handle(request, provider, path)
        finally:
            self.in_flight -= 1

    async def _handle(self, request: web.Request, provider: str, path: str) -> web.StreamResponse:
        self._n += 1
        body = await request.read()
        self._learn_credentials(request.headers)
        endpoint = endpoint_of(provider, request.method, path)
        preq: ProxyRequest | None = None
        tools: list[ToolRecord] = []
        if endpoint is not None:
            try:
                obj = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                obj = None
                self._unrecorded(request, provider, path, f"request body is not JSON ({exc}); forwarded as sent")
            if obj is not None and not isinstance(obj, dict):
                self._unrecorded(request, provider, path, "request body is not a JSON object; forwarded as sent")
            elif isinstance(obj, dict):
                preq = parse_proxy_request(endpoint, obj, self.history)
                assert self._pairer is not None
                for r in preq.results:
                    tr = self._pairer.answer(r)
                    if tr is not None:
                        tr.meta = {"observed": True}
                        tools.append(tr)
        url = self.upstreams[provider] + path + (f"?{request.query_string}" if request.query_string else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP_REQUEST}
        at, t0 = _now(), time.perf_counter()
        status = 502
        data = b""
        ctype = ""
        client_gone = False
        error: ErrorInfo | None = None
        response: web.StreamResponse
        try:
            session = await self._client()
            async with session.request(
                request.method,
                url,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                allow_redirects=False,
            ) as up:
                status = up.status
                ctype = up.headers.get("Content-Type", "")
                out_headers = {k: v for k, v in up.headers.items() if k.lower() not in _DROP_RESPONSE}
                if "text/event-stream" in ctype.lower():
                    stream = web.StreamResponse(status=up.status, headers=out_headers)
                    chunks: list[bytes] = []
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
                    response = web.Response(body=data, status=up.status, headers=out_headers)
        except TimeoutError:
            error = ErrorInfo(
                type="upstream_timeout",
                message=f"the upstream did not answer within {self.timeout:g} s ({url.split('?')[0]})",
            )
            response = web.json_response({"error": {"type": "upstream_timeout", "message": error.message}}, status=504)
            status = 504
        except aiohttp.ClientError as exc:
            error = ErrorInfo(type="upstream_unreachable", message=f"the upstream could not be reached: {exc}")
            response = web.json_response(
                {"error": {"type": "upstream_unreachable", "message": error.message}}, status=502
            )
            status = 502
        duration = time.perf_counter() - t0
        if endpoint is None:
            self._unrecorded(request, provider, path, "not a model call the proxy records; forwarded as sent", status)
            return response
        if preq is None:
            return response
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
        resp_obj = None
        if error is None:
            answer = parse_proxy_response(endpoint, status, data, ctype)
            parsed, created = answer.parsed, answer.created
            if answer.arguments_text:
                meta["arguments_text"] = answer.arguments_text
            error = parsed.error
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
                self._history[rid] = [*preq.request.messages, resp_obj.message]
        return response

    def recording(self, metadata: dict[str, Any]) -> Recording:
        """The recording of every exchange so far: records numbered, keys computed,
        every value redacted (credentials learned from the headers included)."""
        records: list[Any] = []
        for ex in self.exchanges:
            records.extend(t.model_copy() for t in ex.tools)
            records.append(ex.model.model_copy())
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


def _producer() -> str:
    from .. import __version__

    return f"chassis-inspector {__version__} (record)"


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
    and the recording is marked incomplete); ``upstream_timeout``: seconds one upstream
    answer may take (then the agent gets HTTP 504 and the call is recorded as error
    ``upstream_timeout``). ``echo``: the command's output and input are the terminal's.
    A Ctrl-C (KeyboardInterrupt) reaches the command too; the recording is then kept,
    marked incomplete, and the exit code is the command's.

    Raises:
        CommandError: the command cannot be started (nothing is written).
        OutputError: ``output``'s folder does not exist, or the file cannot be written.
        ProxyStartError: the proxy cannot start.
    """
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
    try:
        proc = AgentProcess(argv, proxy_env(server, base_env), echo=echo, cwd=cwd)
        try:
            code = proc.wait(timeout)
            if code is None:
                reason = f"the command ran past --timeout {timeout:g} s and was ended"
                proc.end("timeout")
            else:
                proc.finish()
        except KeyboardInterrupt:
            reason = "interrupted (Ctrl-C) before the command ended"
            proc.interrupt()
            if proc.wait(KILL_WAIT) is None:
                proc.end("interrupted")
            else:
                proc.finish()
        # answers still on their way when the command ended
        deadline = time.monotonic() + 2.0
        while recorder.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
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
    incomplete = reason is not None and (proc.killed is not None or exit_code != 0)
    meta: dict[str, Any] = {
        "agent": "command",
        "executor": "cmd:" + shlex.join(argv),
        "final_output": proc.output_text(),
        "recorder": {
            "command": list(argv),
            "exit_code": exit_code,
            "started_at": started_at,
            "duration_seconds": round(time.monotonic() - t0, 3),
            "upstreams": recorder.upstreams,
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
    try:
        save_recording(rec, output)
    except OSError as exc:
        raise OutputError(str(output), f"cannot write the recording: {exc.strerror or exc}") from None
    return RecordResult(exit_code, rec, output, incomplete, reason, [str(w) for w in recorder.warnings])


#: seconds the command is given to exit by itself after a Ctrl-C
KILL_WAIT = 5.0
