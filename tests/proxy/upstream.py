"""A scripted model provider on 127.0.0.1 for the proxy tests (no machine here reaches a
real one): OpenAI Chat Completions and Responses, Anthropic Messages, streamed and not.

It answers like a model that uses tools: a request whose last message is the user's asks
for the ``lookup`` tool (with the user's words as its argument; ``parallel`` in the
prompt asks for two lookups at once); a request that ends with tool results answers with
text quoting them. Streams arrive in small fragments (tool-call arguments split in
several deltas). ``rate_limit_first`` answers the first model request HTTP 429,
``fail_first`` with that status (a 5xx). Every
request is counted in :attr:`Upstream.requests`.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web

API_KEY = "sk-test-UPSTREAMSECRET0123456789abcdefABCDEF"


def _sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(obj) + "\n\n").encode()


def _pieces(text: str, n: int = 3) -> list[str]:
    step = max(1, -(-len(text) // n))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


class Upstream:
    def __init__(self, *, rate_limit_first: bool = False, delay: float = 0.0, fail_first: int | None = None) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.rate_limit_first = rate_limit_first
        self.fail_first = fail_first  # an HTTP status for the first model request (a 5xx the SDK retries)
        self.delay = delay
        self.auth: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self.port = 0
        self._n = 0
        #: scripted answers, taken in order whatever the request: (text, [(tool, args)]);
        #: when it runs out the answers are decided from the request again
        self.script: list[tuple[str | None, list[tuple[str, dict[str, Any]]]]] = []
        #: answer every model request with a body that is not the API's JSON
        self.malformed = False

    # -- the "model" ------------------------------------------------------------------

    def _decide(self, last_user: str, results: list[str]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        """(text, tool calls) for a request."""
        if self.script:
            return self.script.pop(0)
        if results:
            return "Answer: " + " | ".join(results), []
        if "parallel" in last_user:
            return None, [("lookup", {"query": "alpha"}), ("lookup", {"query": "beta"})]
        return None, [("lookup", {"query": last_user.strip()[:40]})]

    # -- endpoints --------------------------------------------------------------------

    async def _maybe_429(self, kind: str) -> web.Response | None:
        self._n += 1
        if self.fail_first and self._n == 1:
            body = (
                {"type": "error", "error": {"type": "api_error", "message": "upstream exploded"}}
                if kind == "anthropic"
                else {"error": {"message": "The server had an error", "type": "server_error", "code": None}}
            )
            return web.json_response(body, status=self.fail_first)
        if self.rate_limit_first and self._n == 1:
            body = (
                {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
                if kind == "anthropic"
                else {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": None}}
            )
            return web.json_response(body, status=429, headers={"retry-after-ms": "10"})
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.malformed:
            return web.Response(body=b"<html>502 gateway</html>", status=200, content_type="application/json")
        return None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(("openai.chat", body))
        self.auth.append(request.headers.get("Authorization", ""))
        limited = await self._maybe_429("openai")
        if limited is not None:
            return limited
        msgs = body["messages"]
        results = []
        for m in reversed(msgs):
            if m["role"] != "tool":
                break
            results.insert(0, m["content"])
        last_user = next((m["content"] for m in reversed(msgs) if m["role"] == "user"), "")
        text, calls = self._decide(last_user if isinstance(last_user, str) else "", results)
        n = len(self.requests)
        tcs = [
            {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
        usage = {"prompt_tokens": 10 * n, "completion_tokens": 5, "total_tokens": 10 * n + 5}
        base = {"id": f"chatcmpl-up{n}", "created": 1700000000 + n, "model": body["model"]}
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            if tcs:
                msg["tool_calls"] = tcs
            return web.json_response(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        head = {**base, "object": "chat.completion.chunk"}
        await resp.write(
            _sse(
                {
                    **head,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                }
            )
        )
        for piece in _pieces(text or ""):
            if piece:
                await resp.write(
                    _sse({**head, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                )
        for i, tc in enumerate(tcs):
            frags = _pieces(tc["function"]["arguments"], 4)
            first = {
                "index": i,
                "id": tc["id"],
                "type": "function",
                "function": {"name": tc["function"]["name"], "arguments": frags[0]},
            }
            await resp.write(
                _sse({**head, "choices": [{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}]})
            )
            for f in frags[1:]:
                d = {"tool_calls": [{"index": i, "function": {"arguments": f}}]}
                await resp.write(_sse({**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}))
        await resp.write(_sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
        if (body.get("stream_options") or {}).get("include_usage"):
            await resp.write(_sse({**head, "choices": [], "usage": usage}))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(("openai.responses", body))
        self.auth.append(request.headers.get("Authorization", ""))
        limited = await self._maybe_429("openai")
        if limited is not None:
            return limited
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        results = [it["output"] for it in items if it.get("type") == "function_call_output"]
        last_user = next((it["content"] for it in reversed(items) if it.get("role") == "user"), "")
        if isinstance(last_user, list):
            last_user = " ".join(p.get("text", "") for p in last_user)
        text, calls = self._decide(last_user, results)
        n = len(self.requests)
        output: list[dict[str, Any]] = []
        if text:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for i, (name, args) in enumerate(calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{n}_{i}",
                    "call_id": f"call_{n}_{i}",
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
            )
        resp_obj = {
            "id": f"resp_up{n}",
            "object": "response",
            "created_at": 1700000000 + n,
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {"input_tokens": 10 * n, "output_tokens": 5, "total_tokens": 10 * n + 5},
        }
        if not body.get("stream"):
            return web.json_response(resp_obj)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        seq = 0

        async def ev(obj: dict[str, Any]) -> None:
            nonlocal seq
            obj["sequence_number"] = seq
            seq += 1
            await resp.write(_sse(obj, obj["type"]))

        await ev({"type": "response.created", "response": {**resp_obj, "status": "in_progress", "output": []}})
        for i, item in enumerate(output):
            await ev({"type": "response.output_item.added", "output_index": i, "item": item})
            await ev({"type": "response.output_item.done", "output_index": i, "item": item})
        await ev({"type": "response.completed", "response": resp_obj})
        await resp.write_eof()
        return resp

    async def messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(("anthropic.messages", body))
        self.auth.append(request.headers.get("x-api-key") or request.headers.get("Authorization", ""))
        limited = await self._maybe_429("anthropic")
        if limited is not None:
            return limited
        msgs = body["messages"]
        results = []
        last = msgs[-1]
        if last["role"] == "user" and isinstance(last["content"], list):
            results = [b.get("content") for b in last["content"] if b.get("type") == "tool_result"]
        last_user = next(
            (m["content"] for m in reversed(msgs) if m["role"] == "user" and isinstance(m["content"], str)), ""
        )
        text, calls = self._decide(last_user, [r if isinstance(r, str) else json.dumps(r) for r in results])
        n = len(self.requests)
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": f"step {n}", "signature": f"sig{n}"}]
        if text:
            content.append({"type": "text", "text": text})
        for i, (name, args) in enumerate(calls):
            content.append({"type": "tool_use", "id": f"toolu_{n}_{i}", "name": name, "input": args})
        msg = {
            "id": f"msg_up{n}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10 * n, "output_tokens": 5},
        }
        if not body.get("stream"):
            return web.json_response(msg)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(
            _sse({"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}, "message_start")
        )
        for i, b in enumerate(content):
            if b["type"] == "text":
                await resp.write(
                    _sse(
                        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                        "content_block_start",
                    )
                )
                for p in _pieces(b["text"]):
                    await resp.write(
                        _sse(
                            {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": p}},
                            "content_block_delta",
                        )
                    )
            elif b["type"] == "thinking":
                await resp.write(
                    _sse(
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                        },
                        "content_block_start",
                    )
                )
                await resp.write(
                    _sse(
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "thinking_delta", "thinking": b["thinking"]},
                        },
                        "content_block_delta",
                    )
                )
                await resp.write(
                    _sse(
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "signature_delta", "signature": b["signature"]},
                        },
                        "content_block_delta",
                    )
                )
            else:
                await resp.write(
                    _sse(
                        {"type": "content_block_start", "index": i, "content_block": {**b, "input": {}}},
                        "content_block_start",
                    )
                )
                for p in _pieces(json.dumps(b["input"]), 4):
                    await resp.write(
                        _sse(
                            {
                                "type": "content_block_delta",
                                "index": i,
                                "delta": {"type": "input_json_delta", "partial_json": p},
                            },
                            "content_block_delta",
                        )
                    )
            await resp.write(_sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        await resp.write(
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
                "message_delta",
            )
        )
        await resp.write(_sse({"type": "message_stop"}, "message_stop"))
        await resp.write_eof()
        return resp

    async def models(self, request: web.Request) -> web.Response:
        self.requests.append(("openai.models", {}))
        return web.json_response({"object": "list", "data": [{"id": "gpt-test", "object": "model"}]})

    # -- lifecycle --------------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/responses", self.responses)
        app.router.add_post("/v1/messages", self.messages)
        app.router.add_get("/v1/models", self.models)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def start(self) -> Upstream:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def model_requests(self) -> int:
        return sum(1 for kind, _ in self.requests if kind != "openai.models")
