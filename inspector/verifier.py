"""Verifying a big recording in a process of its own.

A version-3 run of :data:`inspector.loader.KEEP_RECORDS` records or more is verified
without keeping its records (:func:`core.record.io.load_indexed` with ``keep=False``),
and so is a version-1/2 file of that many records or :data:`inspector.loader.KEEP_BYTES`
bytes (parsed and verified whole, :func:`core.record.io.loads_recording`, in the child):
the result is only "the digest is …" or the error. That work runs in a child Python process, so it
takes the machine's other core instead of the app's interpreter lock, and the timeline
answers keys at full speed meanwhile.

The child is ``python -P -m inspector.verifier --watch-stdin FILE``. It prints one JSON
line: ``{"digest": "sha256:…", "identity": [device, inode, size, mtime_ns]}`` (the file
it read) or ``{"error": {"reason", "file", "record", "path", "line", "column"}}``
(a :class:`core.errors.FormatError`), and exits 0. It stops when its standard input
closes (the app ended), so it never outlives the app.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import orjson

from core.errors import FormatError

#: how often the waiting thread looks whether it was cancelled, seconds
POLL_SECONDS = 0.1
#: the longest error reason the child reports, characters
MAX_REASON = 2000


class VerificationCancelled(Exception):
    """The app stopped waiting (it is closing): the child process was ended."""


def verify_digest(
    path: Path,
    cancelled: Callable[[], bool] = lambda: False,
    *,
    identity: tuple[int, int, int, int] | None = None,
    digest: str | None = None,
) -> str | None:
    """Verify the recording at ``path`` in a child process (a version-3 file record by
    record, an older one parsed whole: :func:`main`) and return its digest (``sha256:…``,
    computed on the logical records; ``None`` for a version-1/2 file saved without one,
    when ``digest`` is ``None`` too). Blocks the calling thread (not the interpreter: it
    waits on the child), checking ``cancelled()`` every :data:`POLL_SECONDS`.
    ``identity`` (:func:`core.record.indexed.file_identity` of the file the caller shows)
    and ``digest`` (what its header says): the child must have read that same file, with
    that digest.

    The child runs ``python -P`` (the current directory is not searched: a folder the
    app was started in cannot shadow its modules) on this interpreter's ``sys.path``;
    its output goes to temporary files (no pipe to fill and block on).

    Raises:
        FormatError: the file is damaged (as :func:`core.record.io.load_indexed` says),
            it changed on disk since it was opened, or the child ended without an answer
            (its exit code and last error line).
        VerificationCancelled: ``cancelled()`` became true; the child was killed.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "inspector.verifier", "--watch-stdin", str(path)],
            stdin=subprocess.PIPE,
            stdout=out_file,
            stderr=err_file,
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
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdin is not None:
                proc.stdin.close()
        out_file.seek(0)
        out = out_file.read(1 << 20)
        err_file.seek(0)
        err = err_file.read()[-4096:]
    try:
        answer = orjson.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except orjson.JSONDecodeError:
        answer = None
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
    if isinstance(answer, dict) and "digest" in answer and (isinstance(answer["digest"], str) or digest is None):
        seen = answer.get("identity")
        if identity is not None and (not isinstance(seen, list) or tuple(seen) != identity):
            raise FormatError(
                "the file changed on disk after it was opened: what is shown was not verified (open it again)",
                file=str(path),
            )
        if digest is not None and answer["digest"] != digest:
            raise FormatError(
                f"digest mismatch: the header shown says {digest}, the file on disk hashes to {answer['digest']} "
                "(the file changed after it was opened)",
                file=str(path),
                path="/digest",
            )
        found = answer["digest"]
        return found if isinstance(found, str) else None
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
    raise FormatError(
        f"the verification process ended without an answer (exit code {proc.returncode}: {last[0][:200]})",
        file=str(path),
    )


def _verify_whole(path: str) -> tuple[str | None, tuple[int, int, int, int]]:
    """Read, parse and verify the whole recording at ``path`` (any version:
    :func:`core.record.io.loads_recording`); its digest and the identity of the file
    read (:func:`core.record.indexed.file_identity`, taken from the descriptor read).

    Raises:
        FormatError: the file cannot be read, or does not verify.
    """
    from core.record.indexed import file_identity
    from core.record.io import gc_paused, loads_recording
    from core.record.reader import check_input

    check_input(path)  # a regular file (a FIFO would block), with the reason if not
    try:
        with open(path, "rb") as fh:
            identity = file_identity(os.fstat(fh.fileno()))
            data = fh.read()
    except OSError as exc:
        raise FormatError(f"cannot read the file: {exc.strerror or exc}", file=path) from None
    with gc_paused():
        return loads_recording(data, source=path).digest, identity


def _exit_when_orphaned() -> None:
    """End this process when the parent closes our standard input (it ended). Reads the
    descriptor itself (``os.read``), not ``sys.stdin``: a daemon thread blocked in a
    buffered read aborts the interpreter's shutdown ("could not acquire lock")."""
    try:
        while os.read(0, 1 << 16):
            pass
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
    from core.record.indexed import IndexedFile, is_indexed
    from core.record.io import load_indexed
    from core.record.reader import read_input_head

    try:  # (load_indexed pauses the cyclic collector itself)
        if is_indexed(read_input_head(args[0], 160)):
            f = IndexedFile.open(args[0])
            digest, identity = load_indexed(f, keep=False).digest, f.identity
        else:  # a version-1/2 file (or a v3 document another tool rewrote): read whole
            digest, identity = _verify_whole(args[0])
    except FormatError as exc:
        fields = {k: getattr(exc, k) for k in ("reason", "file", "record", "path", "line", "column")}
        if isinstance(fields["reason"], str) and len(fields["reason"]) > MAX_REASON:
            fields["reason"] = fields["reason"][: MAX_REASON - 1] + "…"
        sys.stdout.buffer.write(orjson.dumps({"error": fields}) + b"\n")
    else:
        sys.stdout.buffer.write(orjson.dumps({"digest": digest, "identity": identity}) + b"\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
