"""A small tool-using agent written against the official ``openai`` SDK, as users write
them: it knows nothing of Chassis Inspector (the proxy reaches it only through
``OPENAI_BASE_URL``). It runs its own tool (``lookup``: reads a line of a notes file, a
side effect it logs to ``--log``) and prints the model's final answer.

Usage: python openai_agent.py [--stream] [--responses] [--chain] [--prompt TEXT]
[--log FILE] [--notes FILE]
"""

from __future__ import annotations

import argparse
import json
import sys

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up in the notes.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
]
RESPONSES_TOOLS = [{"type": "function", **TOOLS[0]["function"]}]


def lookup(query: str, args: argparse.Namespace) -> str:
    if args.log:
        with open(args.log, "a", encoding="utf-8") as f:
            f.write(f"lookup {query}\n")
    notes = {}
    if args.notes:
        with open(args.notes, encoding="utf-8") as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                notes[k] = v
    return notes.get(query, f"no note for {query}")


def system_prompt(args: argparse.Namespace) -> str:
    if args.stamp:
        import time

        return f"You look things up. The time is {time.time():.6f}."
    return "You look things up."


def chat(client: openai.OpenAI, args: argparse.Namespace) -> str:
    messages = [{"role": "system", "content": system_prompt(args)}, {"role": "user", "content": args.prompt}]
    for _ in range(8):
        kw = {"model": "gpt-test", "messages": messages, "tools": TOOLS, "temperature": 0}
        if args.stream:
            stream = client.chat.completions.create(**kw, stream=True, stream_options={"include_usage": True})
            text, calls = [], {}
            for chunk in stream:
                for ch in chunk.choices:
                    if ch.delta.content:
                        text.append(ch.delta.content)
                    for tc in ch.delta.tool_calls or []:
                        cur = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        cur["id"] = tc.id or cur["id"]
                        if tc.function and tc.function.name:
                            cur["name"] = tc.function.name
                        if tc.function and tc.function.arguments:
                            cur["arguments"] += tc.function.arguments
            content = "".join(text) or None
            tool_calls = [calls[i] for i in sorted(calls)]
        else:
            resp = client.chat.completions.create(**kw)
            msg = resp.choices[0].message
            content = msg.content
            tool_calls = [
                {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                for tc in msg.tool_calls or []
            ]
        if not tool_calls:
            return content or ""
        messages.append(
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in tool_calls
                ],
            }
        )
        for c in tool_calls:
            result = lookup(json.loads(c["arguments"])["query"], args)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    return "gave up"


def responses(client: openai.OpenAI, args: argparse.Namespace) -> str:
    inputs: list = [{"role": "user", "content": args.prompt}]
    prev = None
    history: list = []
    for _ in range(8):
        kw = {"model": "gpt-test", "instructions": "You look things up.", "tools": RESPONSES_TOOLS}
        if args.bogus_prev and prev is None:
            kw["previous_response_id"] = "resp_not_in_any_recording"
            kw["input"] = inputs
        elif args.chain and prev is not None:
            kw["previous_response_id"] = prev
            kw["input"] = inputs
        else:
            kw["input"] = history + inputs
        if args.stream:
            final = None
            for event in client.responses.create(**kw, stream=True):
                if event.type == "response.completed":
                    final = event.response
            resp = final
        else:
            resp = client.responses.create(**kw)
        calls = [it for it in resp.output if it.type == "function_call"]
        if not calls:
            return resp.output_text
        history = history + inputs + [it.model_dump(exclude_none=True) for it in resp.output]
        prev = resp.id
        inputs = [
            {
                "type": "function_call_output",
                "call_id": c.call_id,
                "output": lookup(json.loads(c.arguments)["query"], args),
            }
            for c in calls
        ]
    return "gave up"


def threads(client: openai.OpenAI, args: argparse.Namespace) -> str:
    """Two questions asked at once (parallel requests from one agent)."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(q: str) -> str:
        r = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": q}], tools=TOOLS, temperature=0
        )
        return r.choices[0].message.tool_calls[0].function.arguments

    with ThreadPoolExecutor(2) as pool:
        return " / ".join(pool.map(ask, ["first question", "second question"]))


def disconnect(client: openai.OpenAI, args: argparse.Namespace) -> str:
    """Read one chunk of a stream, then go away."""
    stream = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": args.prompt}], tools=TOOLS, stream=True
    )
    for _chunk in stream:
        break
    stream.close()
    return "left early"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--stream", action="store_true")
    p.add_argument("--responses", action="store_true")
    p.add_argument("--chain", action="store_true")
    p.add_argument("--prompt", default="weather")
    p.add_argument("--log")
    p.add_argument("--notes")
    p.add_argument("--exit", type=int, default=0)
    p.add_argument("--stamp", action="store_true", help="put the time in the system prompt")
    p.add_argument("--bogus-prev", action="store_true", help="continue a response id nobody has")
    p.add_argument("--threads", action="store_true", help="two requests at once")
    p.add_argument("--disconnect", action="store_true", help="leave a stream after one chunk")
    p.add_argument("--hang", action="store_true", help="never exit after answering")
    args = p.parse_args()
    client = openai.OpenAI(max_retries=2)
    if args.threads:
        answer = threads(client, args)
    elif args.disconnect:
        answer = disconnect(client, args)
    else:
        answer = responses(client, args) if (args.responses or args.bogus_prev) else chat(client, args)
    print(answer)
    sys.stdout.flush()
    if args.hang:
        import time

        while True:
            time.sleep(1)
    return args.exit


if __name__ == "__main__":
    sys.exit(main())
