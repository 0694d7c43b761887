"""Helpers shared by the command modules."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import typer

from core.io import load_recording
from core.recording import Recording


def load_any(
    path: Path,
    *,
    verify_keys: bool | str = "auto",
    convert: bool = True,
    with_notices: bool = False,
) -> Recording | tuple[Recording, list[str]]:
    """Load a recording for a command, converting any importable format in memory.

    A Chassis recording is loaded and verified as is. With ``convert`` (default), a file
    in a format some importer accepts (Inspect AI, SWE-agent, tau-bench, vcrpy, ...) is
    converted (its first run; see :func:`core.importers.open_any`), and the notices —
    "converted from FORMAT", other runs, import warnings — are printed on stderr, or
    returned as ``(recording, notices)`` when ``with_notices``. ``convert=False`` accepts
    native recordings only (``validate``).

    Raises:
        core.errors.FormatError: unreadable, damaged or invalid file.
        core.errors.SourceImportError: no importer accepts the file (names the formats
            tried and why each refused).
    """
    if not convert:
        rec = load_recording(path, verify_keys=verify_keys)
        return (rec, []) if with_notices else rec
    from core.importers import group_notices, open_any

    rec, notices = open_any(path, verify_keys=verify_keys)
    if with_notices:
        return rec, notices
    for n in group_notices(notices):
        echo_err(n if n.startswith("warning: ") else f"notice: {n}")  # one prefix per line
    return rec


def print_json(obj: object) -> None:
    """Write ``obj`` as indented JSON on stdout."""
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


def echo_err(message: str) -> None:
    typer.echo(f"chassis-inspector: {message}", err=True)


def check_output(path: Path, *, force: bool, inputs: tuple[Path, ...] = ()) -> None:
    """Refuse to write ``path`` over an input of the same command (even with --force) or
    over an existing file without ``--force``. Raises :class:`core.errors.OutputError`."""
    from core.errors import OutputError

    if not path.name:
        raise OutputError(str(path) or "''", "no file name given")
    if path.is_dir():
        raise OutputError(str(path), "is a directory; give a file name")
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            raise OutputError(str(path), f"{parent} is a file, not a folder")
    if path.exists() and not path.is_file():
        raise OutputError(str(path), "exists and is not a regular file; refusing to replace it")
    if path.exists():
        for src in inputs:
            try:
                same = src.exists() and path.samefile(src)
            except OSError:
                same = False
            if same:
                raise OutputError(str(path), f"is the input {src}; choose another output file")
        if path.is_file() and not force:
            raise OutputError(str(path), "exists; pass --force to overwrite it")
