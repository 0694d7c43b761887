"""The command executor (``cmd:CMD ARGS…``): replay a recording made by ``record`` by
running the agent's own, unmodified command against the proxy in replay mode.

:class:`CommandExecutor` implements :class:`core.replay.boundary.Executor`. Its
:meth:`~CommandExecutor.run` starts the proxy, runs the command with the SDKs' base-URL
variables pointed at it (:func:`core.proxy.server.proxy_env`), and answers each model
request the agent makes on the engine's thread, in arrival order:

1. the request is parsed into our canonical shape (:mod:`core.proxy.exchange`); the
   tool results it carries for the first time are the agent's own tool calls, given to
   :meth:`ReplayEngine.observe_tool <core.replay.engine.ReplayEngine.observe_tool>`
   (events with ``meta.observed``; a ``tool_result`` intervention on one rewrites that
   tool message in this and every later request before it is matched or sent — the
   model sees the override, the agent's own process keeps what it got);
2. the engine's answer chain answers it (intervention, recorded with per-key cursors,
   fixture, drift; the real upstream only when the policy says ``model: live``);
3. the answer goes back **in the wire shape the client asked for** — a JSON body, or a
   server-sent-event stream when it streamed — with the recorded response id, so a
   Responses ``previous_response_id`` resolves to the recorded history.

A request nobody can answer pauses the replay: the agent gets HTTP 424 with
``x-should-retry: false`` and an error body naming the requirement, its command is ended,
and a resume runs it again from the start. Unlike other replays, each run executes the
agent's own tools again, side effects included (docs/proxy.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ..errors import FormatError, InspectorError
from ..importers._llm_api import Warnings, WireAnswer, render_request
from ..importers.vcr import ToolPairer
from ..record.jsonvalues import load_json_lenient
from ..record.recording import ChatMessage, ErrorInfo, ModelRecord, ModelRequest, ModelResponse, Recording, ToolResult
from ..record.redaction import SecretRedactor, header_kind, redact
from .exchange import (
    ProxyRequest,
    answer_id,
    endpoint_of,
    http_status_of,
    model_response,
    parse_proxy_request,
    parse_proxy_response,
    render_answer,
)
from .process import AgentProcess, environment
from .rewrite import rewrite_tool_results
from .server import ProxyServer, proxy_env

__all__ = ["CommandExecutor", "parse_command_spec", "SIDE_EFFECTS_NOTE"]

#: said once by ``replay`` and by every dry run of a command executor
SIDE_EFFECTS_NOTE = (
    "the command executor runs the agent's own command again: its tools run inside its process, "
    "unmediated, side effects included — on every replay, resume and sweep replay"
)


#: seconds a paused replay's agent is given to report the error it got and exit, before
#: it is ended (SIGTERM, then SIGKILL)
EXIT_GRACE = 3.0


def parse_command_spec(spec: str) -> list[str]:
    """The argv of ``cmd:CMD ARGS…`` (split as a POSIX shell would, no shell run).

    Raises:
        ValueError: not a ``cmd:`` spec, no command, or unbalanced quotes.
    """
    if not spec.startswith("cmd:"):
        raise ValueError(f"executor {spec!r} is not a command executor (cmd:CMD ARGS…)")
    try:
        argv = shlex.split(spec[4:])
    except ValueError as exc:
        raise ValueError(f"executor {spec!r}: {exc}") from None
    if not argv:
        raise ValueError(f"executor {spec!r} names no command (write cmd:CMD ARGS…)")
    return argv


class CommandFailed(InspectorError, RuntimeError):
    """The agent's command ended with another exit status than the recorded run's: the
    replay fails (its events are kept) — an agent that crashed is never a completed
    replay."""

    title = "command failed"


@dataclass
class _Pending:
    """A request waiting for the engine's thread: its endpoint, body, headers, and the
    future the proxy's handler awaits ``(status, body or SSE chunks, streamed)``."""

    endpoint: str
    body: Any
    headers: dict[str, str]
    raw: bytes = b""
    future: concurrent.futures.Future[tuple[int, Any, bool]] = field(default_factory=concurrent.futures.Future)


class CommandExecutor:
    """Runs ``argv`` (the agent's own command) against the proxy in replay mode.

    Args:
        argv: the command (``cmd:`` spec split by :func:`parse_command_spec`).
        env: the environment the command starts from (default: ours); the base-URL
            variables are pointed at the proxy and a missing API key gets a placeholder.
        upstreams: where ``model: live`` calls go (default: the base URLs this
            environment had, else the providers' — never the recording's: a recording
            must not choose where the user's credentials are sent).
        timeout: seconds the command may run (then it is ended and the replay fails).
        cwd: the command's working folder.
    """

    #: the engine says in the replay's comparability that tools ran unmediated
    unmediated_tools = True

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        upstreams: dict[str, str] | None = None,
        timeout: float | None = None,
        cwd: str | None = None,
    ) -> None:
        from .recorder import upstreams_from

        self.argv = list(argv)
        self.env = environment() if env is None else dict(env)
        self.upstreams = upstreams or upstreams_from(self.env)
        self.timeout = timeout
        self.cwd = cwd
        self._reset()

    def _reset(self) -> None:
        """Forget the previous run (one executor serves every replay of a sweep)."""
        self._runtime: Any = None
        self._server: ProxyServer | None = None
        self._queue: queue.Queue[_Pending] = queue.Queue()
        self._pairer = ToolPairer(Warnings())
        self._overrides: dict[str, ToolResult] = {}
        self._history: dict[str, list[ChatMessage]] = {}
        self._current: _Pending | None = None
        self._in_flight = 0
        self.exit_code: int | None = None
        self.stderr_tail = ""
        self.requests = 0
        self._stopping = False
        self._lock = threading.Lock()
        #: redacts what the engine is given as ``record`` redacted the recording: the
        #: credentials the agent's requests carried (headers) and secrets by shape, so
        #: keys and observed results compare equal and no event holds a secret
        self._redactor = SecretRedactor()

    # -- Executor ------------------------------------------------------------------------

    def run(self, runtime: Any, task: Any) -> Any:
        """Run the command against ``runtime`` (the replay engine); return its standard
        output (the run's final output, as ``record`` stored it).

        Raises:
            CommandError: the command cannot be started. CommandFailed: it exited with
            another status than the recorded run's. InspectorError: it ran past
            ``timeout``. The engine's pause / failure propagate after the command (its
            whole process group) is ended.
        """
        self._reset()
        self._runtime = runtime
        base: Recording | None = getattr(runtime, "base", None)
        recorder = base.metadata.get("recorder") if base is not None else None
        recorder = recorder if isinstance(recorder, dict) else {}
        if base is not None:
            self._seed_history(base)
        cwd = self.cwd
        if cwd is None and base is not None and base.metadata.get("executor") == "cmd:" + shlex.join(self.argv):
            # the recorded command runs where it was recorded (a relative path in it)
            where = recorder.get("cwd")
            if isinstance(where, str) and Path(where).is_dir():
                cwd = where
        server = ProxyServer(self._handle).start()
        self._server = server
        proc: AgentProcess | None = None
        try:
            proc = AgentProcess(self.argv, proxy_env(server, self.env, placeholder_keys=True), echo=False, cwd=cwd)
            started = time.monotonic()
            while True:
                try:
                    item = self._queue.get(timeout=0.02)
                except queue.Empty:
                    if proc.poll() is not None and self._in_flight == 0 and self._queue.empty():
                        break
                    if self.timeout is not None and time.monotonic() - started > self.timeout:
                        proc.end("timeout")
                        raise InspectorError(
                            f"the command ran past {self.timeout:g} s and was ended: {shlex.join(self.argv)}"
                        ) from None
                    check = getattr(runtime, "check_cancel", None)
                    if callable(check):
                        check()  # raises the engine's stop when the replay was cancelled
                    continue
                self._serve(item)
        except BaseException:
            # the replay paused or stopped: every request from now on gets an error at
            # once, the agent has a moment to report it and exit, then it is ended
            self._stopping = True
            self._drain("the replay has stopped")
            if proc is not None:
                if proc.wait(EXIT_GRACE) is None:
                    proc.end("paused")
                proc.finish()
                self.exit_code = proc.exit_status
                self.stderr_tail = proc.error_tail()
            raise
        finally:
            self._stopping = True
            self._drain("the replay has ended")
            server.stop()
        proc.finish()
        self.exit_code = proc.exit_status
        self.stderr_tail = proc.error_tail()
        recorded = recorder.get("exit_code", 0)
        if self.exit_code != recorded:
            tail = " ".join(self.stderr_tail.split())
            raise CommandFailed(
                f"the command exited with status {self.exit_code} (the recorded run exited with {recorded})"
                + (f"; its last error output: {tail[-400:]}" if tail else "")
            )
        return proc.output_text()

    def live_model(self, model: str, request: ModelRequest) -> ModelResponse:
        """Send a request of the agent to the real upstream (``model: live``), rebuilt
        from the engine's request (its interventions and options applied) in the wire
        format of the endpoint the agent called, not streamed — a Responses request with
        its whole history as ``input``, never a ``previous_response_id`` the upstream has
        not seen; the agent gets the answer in the shape it asked for. The agent's own
        credential headers are forwarded.

        Raises:
            RuntimeError: no request of the agent is in flight (the command executor
                cannot resample a call on its own), or the upstream failed (the engine
                records it as the call's error).
        """
        cur = self._current
        if cur is None or self._server is None:
            raise RuntimeError(
                "the command executor calls a model live only for a request its agent is making during a "
                "replay (policy model: live); it cannot resample a call on its own — use the knockout or "
                "fixture strategy"
            )
        body = render_request(cur.endpoint, model, request)
        fut = self._server.run_soon(self._forward(cur.endpoint, body, cur.headers))
        status, data, ctype = fut.result()
        parsed = parse_proxy_response(cur.endpoint, status, data, ctype).parsed
        resp = model_response(parsed)
        if resp is None:
            err = parsed.error or ErrorInfo(type="no_response", message="the upstream gave no response")
            raise RuntimeError(f"{err.type}: {err.message}")
        return resp

    def live_tool(self, name: str, arguments: Any) -> ToolResult:
        """Never called: the agent runs its own tools (observed, not mediated)."""
        raise RuntimeError(
            "the command executor runs no tools: its agent runs its own (observed, unmediated) — use the "
            "knockout or fixture strategy"
        )

    def run_metadata(self) -> dict[str, Any]:
        """What the events record about the command's run: its argv, exit code, the
        number of requests, and the last lines of its standard error."""
        out: dict[str, Any] = {"command": self.argv, "exit_code": self.exit_code, "requests": self.requests}
        if self.stderr_tail and self.exit_code not in (0, None):
            out["stderr_tail"] = self.stderr_tail
        return out

    # -- the proxy's side (event loop thread) ---------------------------------------------

    async def _forward(self, endpoint: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes, str]:
        provider = endpoint.split(".", 1)[0]
        path = {"openai.chat": "/chat/completions", "openai.responses": "/responses"}.get(endpoint, "/v1/messages")
        keep = {
            k: v
            for k, v in headers.items()
            if k.lower()
            in (
                "authorization",
                "x-api-key",
                "anthropic-version",
                "anthropic-beta",
                "openai-organization",
                "openai-project",
                "content-type",
            )
        }
        async with aiohttp.ClientSession() as session:
            try:
                async with session.post(
                    self.upstreams[provider] + path,
                    data=orjson.dumps(body),
                    headers=keep,
                    timeout=aiohttp.ClientTimeout(total=600),
                ) as up:
                    return up.status, await up.read(), up.headers.get("Content-Type", "")
            except (TimeoutError, aiohttp.ClientError) as exc:
                err = {
                    "error": {"type": "upstream_unreachable", "message": f"the upstream could not be reached: {exc}"}
                }
                return 502, orjson.dumps(err), "application/json"

    async def _handle(self, request: web.Request, provider: str, path: str) -> web.StreamResponse:
        endpoint = endpoint_of(provider, request.method, path)
        if endpoint is None:
            return web.json_response(
                {
                    "error": {
                        "type": "not_replayed",
                        "message": (
                            f"chassis-inspector replay: {request.method} {path} is not a model call the proxy replays "
                            "(only chat completions, responses and messages are)"
                        ),
                    }
                },
                status=404,
                headers={"x-should-retry": "false"},
            )
        raw = await request.read()
        try:
            body, _ = load_json_lenient(raw, source="request body")  # as record read it
        except FormatError as exc:
            return web.json_response(
                {
                    "error": {
                        "type": "invalid_request",
                        "message": f"chassis-inspector replay: the request body is not JSON the format can hold "
                        f"({exc.reason})",
                    }
                },
                status=400,
            )
        if not isinstance(body, dict):
            return web.json_response(
                {
                    "error": {
                        "type": "invalid_request",
                        "message": "chassis-inspector replay: the request body is not a JSON object",
                    }
                },
                status=400,
            )
        item = _Pending(endpoint, body, {str(k): v for k, v in request.headers.items()}, raw)
        with self._lock:  # against the engine's thread draining the queue as the replay stops
            if self._stopping:
                return web.json_response(
                    {"error": {"type": "replay_ended", "message": "chassis-inspector replay: the replay has stopped"}},
                    status=424,
                    headers={"x-should-retry": "false"},
                )
            self._queue.put(item)
        self._in_flight += 1
        try:
            status, payload, streamed = await asyncio.wrap_future(item.future)
        finally:
            self._in_flight -= 1
        # the proxy's own refusal (a requirement, the replay stopped: 424) is never retried;
        # a recorded error is answered as it was, and the SDK retries it as it did while
        # recording (at once: retry-after-ms), meeting the recorded retry next
        if status == 424:
            headers = {"x-should-retry": "false"}
        elif status >= 400:
            headers = {"retry-after-ms": "1"}
        else:
            headers = {}
        if not streamed:
            return web.json_response(payload, status=status, headers=headers)
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        try:
            await resp.prepare(request)
            for chunk in payload:
                await resp.write(chunk)
            await resp.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass  # the client went away mid-stream: the answer was given (the event is kept)
        return resp

    def _drain(self, why: str) -> None:
        """Stop taking requests and answer every one still queued with an error."""
        with self._lock:
            self._stopping = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            item.future.set_result(
                (424, {"error": {"type": "replay_ended", "message": f"chassis-inspector replay: {why}"}}, False)
            )

    # -- the engine's side ----------------------------------------------------------------

    def _seed_history(self, base: Recording) -> None:
        """The Responses ids the recording holds, with the history each stands for."""
        for r in base.records:
            if type(r) is ModelRecord and r.response is not None and isinstance(r.meta, dict):
                rid = r.meta.get("response_id")
                if r.meta.get("endpoint") == "openai.responses" and isinstance(rid, str):
                    msgs = list(r.request.messages)
                    if r.meta.get("instructions") is True and msgs and msgs[0].role == "system":
                        msgs = msgs[1:]
                    self._history[rid] = [*msgs, r.response.message]

    def _serve(self, item: _Pending) -> None:
        self._current = item
        self.requests += 1
        try:
            result = self._answer(item)
        except BaseException as exc:
            item.future.set_result(self._stopped_answer(item, exc))
            raise
        finally:
            self._current = None
        item.future.set_result(result)

    def _stopped_answer(self, item: _Pending, exc: BaseException) -> tuple[int, Any, bool]:
        req = getattr(exc, "requirement", None)
        if req is not None:
            message = (
                f"chassis-inspector replay paused: no recorded answer, intervention or fixture answers this request; "
                f"requirement {req.id} ({req.kind} {req.name}): {req.reason}. Attach a fixture "
                f"(chassis-inspector fixture attach {req.id} RESPONSE.json) and resume the replay "
                "(chassis-inspector replay resume REPLAY_ID)"
            )
            etype = "chassis_requirement"
        else:
            reason = getattr(getattr(exc, "error", None), "message", None) or str(exc) or type(exc).__name__
            message = f"chassis-inspector replay stopped: {reason}"
            etype = "chassis_replay_stopped"
        body = (
            {"type": "error", "error": {"type": etype, "message": message}}
            if item.endpoint.startswith("anthropic")
            else {"error": {"type": etype, "message": message, "code": None, "param": None}}
        )
        return 424, body, False

    def _learned(self, item: _Pending) -> bool:
        """Teach the redactor the request's credential headers; whether the body holds one
        of the credentials learned (then what reaches the engine is scrubbed of them, as
        ``record`` scrubbed the recording: the keys match, and no event holds them)."""
        for name, value in item.headers.items():
            kind = header_kind(name)
            if kind is not None and isinstance(value, str):
                self._redactor.remember(value, kind)
        return bool(self._redactor.known) and any(sec.encode() in item.raw for sec in self._redactor.secrets)

    def _scrubbed(self, value: Any) -> Any:
        return redact(value, self._redactor)[0]

    def _answer(self, item: _Pending) -> tuple[int, Any, bool]:
        runtime = self._runtime
        body = item.body
        scrub = self._learned(item)
        preq = parse_proxy_request(item.endpoint, body, self._history.get)
        if scrub:
            preq.request = ModelRequest.model_validate(self._scrubbed(preq.request.to_json_obj()))
        for r in preq.results:
            tr = self._pairer.answer(r)
            if tr is None:
                continue
            # as the recording holds it: compared with the recorded result, stored in the events
            tr.arguments = self._scrubbed(tr.arguments)
            scrubbed, changed = redact(tr.result.to_json_obj(), self._redactor)
            tr.result = ToolResult.model_validate(scrubbed)
            if changed:
                tr.result.redacted = True  # as the recording marks a result it scrubbed
            seen = runtime.observe_tool(tr.tool, tr.arguments, tr.tool_call_id, tr.result)
            unflagged = seen.model_copy(update={"redacted": False})
            if unflagged != tr.result.model_copy(update={"redacted": False}) and tr.tool_call_id:
                self._overrides[tr.tool_call_id] = seen  # an intervention: the model sees it
        if self._overrides:
            rewritten = rewrite_tool_results(item.endpoint, body, self._overrides)
            if rewritten is not body:
                item.body = body = rewritten
                preq = parse_proxy_request(item.endpoint, body, self._history.get)
                if scrub:
                    preq.request = ModelRequest.model_validate(self._scrubbed(preq.request.to_json_obj()))
        error: ErrorInfo | None = None
        response: ModelResponse | None = None
        try:
            response = runtime.call_model(preq.model, preq.request, miss_reason=preq.unresolved)
        except Exception as exc:
            # the engine's ModelCallError: the answer is a model error (recorded, a fixture, live)
            err = getattr(exc, "error", None)
            if not isinstance(err, ErrorInfo):
                raise
            error = err
        event = runtime.last_event
        wire = self._wire(item.endpoint, preq, event, response, error)
        if response is not None:
            for tc in response.message.tool_calls or []:
                self._pairer.open(tc.id, tc.name, tc.arguments, event.seq if event is not None else 0)
            if item.endpoint == "openai.responses":
                made = runtime.last_request or preq.request
                self._history[wire.response_id] = [*preq.history(made), response.message]
        status, payload = render_answer(item.endpoint, wire, stream=preq.stream, include_usage=preq.include_usage)
        return status, payload, preq.stream and status == 200

    def _wire(
        self,
        endpoint: str,
        preq: ProxyRequest,
        event: Any,
        response: ModelResponse | None,
        error: ErrorInfo | None,
    ) -> WireAnswer:
        meta = event.meta if event is not None and isinstance(event.meta, dict) else {}
        rid = meta.get("response_id")
        if not isinstance(rid, str):
            key = event.key if event is not None and event.key else "none"
            rid = answer_id(endpoint, key, getattr(self._runtime, "_step", 0))
        c = meta.get("created")
        created: int = c if isinstance(c, int) else 0
        m = meta.get("response_model")
        model: str = m if isinstance(m, str) else preq.model
        texts = meta.get("arguments_text")
        return WireAnswer(
            arguments_text={k: v for k, v in texts.items() if isinstance(v, str)} if isinstance(texts, dict) else {},
            model=model,
            response_id=rid,
            created=created,
            message=response.message if response is not None else None,
            finish_reason=response.finish_reason if response is not None else None,
            usage=response.usage if response is not None else None,
            error=error,
            http_status=http_status_of(error, meta.get("http_status")) if error is not None else 200,
        )
