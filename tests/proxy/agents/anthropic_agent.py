"""A small tool-using agent written against the official ``anthropic`` SDK (it knows
nothing of Chassis Inspector; the proxy reaches it through ``ANTHROPIC_BASE_URL``). It
runs its own ``lookup`` tool and prints the final answer.

Usage: python anthropic_agent.py [--stream] [--prompt TEXT] [--log FILE]
"""

from __future__ import annotations

import argparse
import sys

import anthropic

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a word up in the notes.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    }
]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--stream", action="store_true")
    p.add_argument("--prompt", default="weather")
    p.add_argument("--log")
    args = p.parse_args()
    client = anthropic.Anthropic(max_retries=2)
    messages: list = [{"role": "user", "content": args.prompt}]
    for _ in range(8):
        kw = {
            "model": "claude-test",
            "max_tokens": 512,
            "system": "You look things up.",
            "messages": messages,
            "tools": TOOLS,
        }
        if args.stream:
            with client.messages.stream(**kw) as stream:
                msg = stream.get_final_message()
        else:
            msg = client.messages.create(**kw)
        uses = [b for b in msg.content if b.type == "tool_use"]
        if not uses:
            print("".join(b.text for b in msg.content if b.type == "text"))
            return 0
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]})
        results = []
        for u in uses:
            if args.log:
                with open(args.log, "a", encoding="utf-8") as f:
                    f.write(f"lookup {u.input['query']}\n")
            results.append({"type": "tool_result", "tool_use_id": u.id, "content": f"no note for {u.input['query']}"})
        messages.append({"role": "user", "content": results})
    print("gave up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
