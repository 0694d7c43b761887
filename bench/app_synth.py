"""Synthetic recordings for the app benchmarks (``bench/app_latency.py``).

``write_synthetic(path, n)`` writes a valid format-v1 recording of ``n`` records
(about 1 KB each, so 1,000,000 records ≈ 1 GB): a snapshot and lifecycle records at the
start, then alternating model calls (with a tool call in the response) and tool
calls (every 97th tool call fails, every 1,000th record is an interrupt). Keys and the
digest are real, so the file passes full verification.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.record.canonical import canonical_json, model_key, tool_key  # noqa: E402 (after the sys.path set-up)

_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
]


def _text(i: int, n_words: int) -> str:
    return " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(n_words))


def synthetic_records(n: int) -> list[dict]:
    """``n`` raw record dicts (see module docstring)."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out: list[dict] = []
    tools = [{"name": "bash", "description": "run a shell command", "parameters": {"type": "object"}}]
    call_no = 0
    seq = 0
    pending_call: tuple[str, dict] | None = None
    while seq < n:
        at = (start + timedelta(milliseconds=250 * seq)).isoformat().replace("+00:00", "Z")
        base = {"seq": seq, "at": at, "run_id": "run-0"}
        if seq == 0:
            rec = {
                **base,
                "kind": "snapshot",
                "generation_id": "gen-1",
                "composition": {"plugins": ["shell"], "tools": ["bash"], "capabilities": ["exec"]},
            }
        elif seq == 1:
            rec = {**base, "kind": "lifecycle", "event": "plugin.mount", "details": {"plugin": "shell"}}
        elif seq % 1000 == 999:
            rec = {**base, "kind": "interrupt", "value": {"reason": "approval", "step": seq}}
        elif pending_call is None:
            call_no += 1
            cid = f"call_{call_no}"
            args = {"command": f"grep -n {_WORDS[call_no % len(_WORDS)]} src/file_{call_no % 50}.py"}
            request = {
                "messages": [
                    {"role": "system", "content": "You are a careful software agent."},
                    {"role": "user", "content": f"Step {call_no}: " + _text(call_no, 40)},
                ],
                "tools": tools,
                "stop": [],
                "options": {"temperature": 0.0},
            }
            rec = {
                **base,
                "kind": "model",
                "model": "synthetic-model-1",
                "key": model_key("synthetic-model-1", request),
                "request": request,
                "response": {
                    "message": {
                        "role": "assistant",
                        "content": _text(call_no + 1, 30),
                        "tool_calls": [{"id": cid, "name": "bash", "arguments": args}],
                    },
                    "finish_reason": "tool_calls",
                    "usage": {"input_tokens": 300 + call_no % 97, "output_tokens": 40 + call_no % 13},
                },
                "duration_seconds": 0.8 + (call_no % 10) / 10,
            }
            pending_call = (cid, args)
        else:
            cid, args = pending_call
            pending_call = None
            failed = call_no % 97 == 0
            result = {"content": None if failed else _text(call_no + 2, 85), "redacted": False}
            if failed:
                result["error"] = {"type": "CommandFailed", "message": f"exit status 2 on call {call_no}"}
            rec = {
                **base,
                "kind": "tool",
                "tool": "bash",
                "key": tool_key("bash", args),
                "arguments": args,
                "tool_call_id": cid,
                "result": result,
                "duration_seconds": 0.05 + (call_no % 7) / 100,
            }
        out.append(rec)
        seq += 1
    return out


def write_synthetic(path: Path, n: int) -> Path:
    """Write a synthetic recording of ``n`` records to ``path`` (reused if present)."""
    path = Path(path)
    if path.exists():
        return path
    records = synthetic_records(n)
    digest = "sha256:" + hashlib.sha256(canonical_json(records)).hexdigest()
    doc = {
        "format": "chassis.replay",
        "format_version": 1,
        "metadata": {"dataset": "synthetic", "outcome": "n/a", "records": n},
        "session": {"mode": "record", "fallback": "error", "producer": "bench/app_synth.py"},
        "digest": digest,
        "records": records,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(doc))
    tmp.replace(path)
    return path


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    p = write_synthetic(ROOT / "bench" / "out" / f"synthetic-{n}.json", n)
    print(p, p.stat().st_size)
