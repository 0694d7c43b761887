"""Cassette import and OTLP export/import speed on a synthetic long agent run.

Builds a vcrpy cassette of N OpenAI chat-completion turns (each request repeats the whole
history, as agents do, so the cassette grows quadratically) with one tool call per turn;
then times: YAML parsing alone (the floor), the vcr import (decode, pair, keys, redact),
export of the recording to OTLP JSON, and import of that OTLP file; with ratios.

    .venv/bin/python -m bench.vcr_otel_bench [--turns N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from core.importers.otel import OtelImporter, export_otlp
from core.importers.vcr import VcrImporter


def best(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def build_cassette(turns: int) -> dict:
    """A cassette of ``turns`` model calls, each asking for one ``read_file`` call."""
    history = [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": "Fix the bug."}]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    inters = []
    for k in range(turns):
        req = {"model": "gpt-4o-mini", "messages": list(history), "tools": tools, "temperature": 0}
        call = {
            "id": f"call_{k}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod{k}.py"})},
        }
        resp = {
            "id": f"chatcmpl-{k}",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": f"Reading module {k}.", "tool_calls": [call]},
                }
            ],
            "usage": {"prompt_tokens": 100 + 40 * k, "completion_tokens": 20},
        }
        inters.append(
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(req),
                    "headers": {
                        "authorization": ["Bearer sk-proj-XXXXXXXXXXXXXXXXXXXXXXXX"],
                        "content-type": ["application/json"],
                    },
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": json.dumps(resp)},
                },
            }
        )
        history += [
            {"role": "assistant", "content": f"Reading module {k}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{k}", "content": f"def f{k}():\n    return {k}\n" * 5},
        ]
    return {"interactions": inters, "version": 1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cassette = Path(d) / "long.yaml"
        cassette.write_text(yaml.safe_dump(build_cassette(args.turns)))
        data = cassette.read_bytes()
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        floor = best(lambda: yaml.load(data, Loader=loader), args.repeat)
        imp = VcrImporter()
        t_import = best(lambda: imp.load(cassette), args.repeat)
        [run] = imp.load(cassette)
        rec = run.recording
        t_export = best(lambda: export_otlp(rec), args.repeat)
        otlp = Path(d) / "long.otlp.json"
        otlp.write_bytes(export_otlp(rec))
        t_back = best(lambda: OtelImporter().load(otlp), args.repeat)
        n = len(rec.records)
        print(f"cassette        {args.turns} turns, {len(data) / 1e6:.1f} MB YAML, {n} records")
        print(f"YAML parse      {floor * 1000:8.1f} ms   (floor, libyaml)")
        print(
            f"vcr import      {t_import * 1000:8.1f} ms   ×{t_import / floor:.2f} the YAML parse, {t_import / n * 1000:.2f} ms per record"
        )
        print(f"OTLP export     {t_export * 1000:8.1f} ms   ({otlp.stat().st_size / 1e6:.1f} MB)")
        print(f"OTLP import     {t_back * 1000:8.1f} ms   ×{t_back / t_import:.2f} the vcr import")


if __name__ == "__main__":
    main()
