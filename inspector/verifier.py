"""Verifying a big version-3 file in a process of its own.

A run of :data:`inspector.loader.KEEP_RECORDS` records or more is verified without
keeping its records (:func:`core.record.io.load_indexed` with ``keep=False``): the result
is only "the digest is …" or the error. That work runs in a child Python process, so it
takes the machine's other core instead of the app's interpreter lock, and the timeline
answers keys at full speed meanwhile.

The child is ``python -m inspector.verifier --watch-stdin FILE``. It prints one JSON line: ``{"digest":
"sha256:…"}`` or ``{"error": {"reason", "file", "record", "path", "line", "column"}}``
(a :class:`core.errors.FormatError`), and exits 0. It stops when its standard input
closes (the app ended), so it never outlives the app.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import orjson

from core.errors import FormatError

#: how often the waiting thread looks whether it was cancelled, seconds
POLL_SECONDS = 0.1


class VerificationCancelled(Exception):
    """The app stopped waiting (it is closing): the child process was ended."""


def verify_digest(path: Path, cancelled: Callable[[], bool] = lambda: False) -> str:
    """Verify the version-3 file at ``path`` record by record in a child process and
    return its digest (``sha256:…``, computed on the logical records). Blocks the calling
    thread (not the interpreter: it waits on the child), checking ``cancelled()`` every
    :data:`POLL_SECONDS`.

    Raises:
        FormatError: the file is damaged (as :func:`core.record.io.load_indexed` says),
            or the child ended without an answer (its exit code and last error line).
        VerificationCancelled: ``cancelled()`` became true; the child was killed.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "inspector.verifier", "--watch-stdin", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        while True:
            try:
                proc.wait(timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if cancelled():
                    raise VerificationCancelled() from None
        out = proc.stdout.read() if proc.stdout is not None else b""
        err = proc.stderr.read() if proc.stderr is not None else b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    try:
        answer = orjson.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except orjson.JSONDecodeError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("digest"), str):
        return str(answer["digest"])
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        e = answer["error"]
        raise FormatError(
            str(e.get("reason")),
            file=e.get("file"),
            record=e.get("record"),
            path=e.get("path"),
            line=e.get("line"),
            column=e.get("column"),
        )
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    raise FormatError(
        f"the verification process ended without an answer (exit code {proc.returncode}: {last[0][:200]})",
        file=str(path),
    )


def _exit_when_orphaned() -> None:
    """End this process when the parent closes our standard input (it ended)."""
    try:
        sys.stdin.buffer.read()
    finally:
        os._exit(3)


def main(argv: list[str] | None = None) -> int:
    """``python -m inspector.verifier [--watch-stdin] FILE``; ``--watch-stdin``: end when
    standard input closes (how :func:`verify_digest` starts it)."""
    args = sys.argv[1:] if argv is None else list(argv)
    watch = "--watch-stdin" in args
    args = [a for a in args if a != "--watch-stdin"]
    if len(args) != 1:
        print("usage: python -m inspector.verifier [--watch-stdin] FILE", file=sys.stderr)
        return 2
    if watch:
        threading.Thread(target=_exit_when_orphaned, daemon=True).start()
    from core.record.indexed import IndexedFile
    from core.record.io import load_indexed

    try:  # (load_indexed pauses the cyclic collector itself)
        digest = load_indexed(IndexedFile.open(args[0]), keep=False).digest
    except FormatError as exc:
        fields = {k: getattr(exc, k) for k in ("reason", "file", "record", "path", "line", "column")}
        sys.stdout.buffer.write(orjson.dumps({"error": fields}) + b"\n")
    else:
        sys.stdout.buffer.write(orjson.dumps({"digest": digest}) + b"\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
