"""Helpers shared by the command modules."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer

from core.analysis.safe_text import json_safe
from core.errors import FormatError
from core.importers.opened import Opened
from core.record.io import load_recording
from core.record.nesting import dumps
from core.record.recording import Recording


def load_any(
    path: Path,
    *,
    verify_keys: bool | str = "auto",
    convert: bool = True,
) -> Recording:
    """Load a recording for a command, converting any importable format in memory.

    A Chassis recording is loaded and verified as is. With ``convert`` (default), a file
    in a format some importer accepts (Inspect AI, SWE-agent, tau-bench, vcrpy, ...) is
    converted (its first run; see :func:`core.importers.open_any`) and what the CLI says
    about it (:func:`opened_notices`: converted from FORMAT, other runs, import
    warnings) is printed on stderr. ``convert=False`` accepts native recordings only
    (``validate``).

    Raises:
        core.errors.FormatError: unreadable, damaged or invalid file.
        core.errors.SourceImportError: no importer accepts the file (names the formats
            tried and why each refused).
    """
    if not convert:
        try:
            return load_recording(path, verify_keys=verify_keys)
        except FormatError as exc:
            other = _other_format(path)
            if other is None:
                raise
            raise FormatError(
                f"not a Chassis recording: it looks like {other}; convert it with: chassis-inspector import {path} -o OUT",
                file=str(path),
            ) from exc
    from core.importers import open_any

    opened = open_any(path, verify_keys=verify_keys)
    for line in opened_notices(path, opened):
        echo_err(line)
    return opened.recording


def _other_format(path: Path) -> str | None:
    """What an importer recognises ``path`` as (``"an Inspect AI eval log (.json or .eval
    zip), format inspect_ai"``), or ``None`` when it is not another known format (or
    looks like a Chassis recording, whose own error then stands)."""
    from core.errors import InspectorError
    from core.importers import NATIVE, detect, get_importer

    if not Path(path).is_file():  # a FIFO or a device is never sniffed (reading could block)
        return None
    try:
        name = detect(path)
    except InspectorError:
        return None
    if name == NATIVE:
        return None
    description = get_importer(name).description
    article = "an" if description[:1].lower() in "aeiou" else "a"
    return f"{article} {description}, format {name}"


def _conversion_notes(path: Path, opened: Opened) -> list[str]:
    """The CLI's notes on a converted file: converted from which format (with the
    command that saves it), which run among how many (with the one that imports
    another), incomplete."""
    if not opened.converted:
        return []
    p = Path(path)
    notes = [
        f"converted from {opened.source_format} ({p.name}) in memory; save it with: chassis-inspector import {p} -o OUT"
    ]
    if len(opened.runs) > 1:
        notes.append(
            f"{p.name} holds {len(opened.runs)} runs; showing run {opened.run_id!r} "
            f"({opened.run_index} of 0..{len(opened.runs) - 1}); import another with: chassis-inspector import --run ID"
        )
    if opened.incomplete:
        notes.append("this run is incomplete (the source was cut short)")
    return notes


def opened_notices(path: Path, opened: Opened) -> list[str]:
    """What the commands print on stderr (after ``chassis-inspector: ``) for a file
    :func:`core.importers.open_any` opened: ``notice: ...`` lines, then one ``warning:
    ...`` line per folded warning (:func:`core.importers.base.warning_line`). Nothing for
    a native recording."""
    from core.importers.base import warning_line

    lines = [f"notice: {n}" for n in _conversion_notes(path, opened)]
    lines += [f"warning: {warning_line(w).removeprefix(': ')}" for w in opened.warnings]
    return lines


def opened_notices_each(path: Path, opened: Opened) -> list[str]:
    """Like :func:`opened_notices` but unfolded and without the ``notice:`` prefix, as
    ``export`` prints them: each note, then ``warning: PLACE: MESSAGE`` per warning
    raised."""
    return _conversion_notes(path, opened) + [f"warning: {w}" for w in opened.all_warnings]


def print_json(obj: object) -> None:
    """Write ``obj`` as indented JSON on stdout. DEL, C1 controls and bidi or invisible
    characters inside strings are written as ``\\uXXXX`` escapes
    (:func:`core.analysis.safe_text.json_safe`; the encoder escapes U+0000–U+001F
    itself): the document decodes to the same values and drives no terminal."""
    try:
        data = dumps(obj, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        if "UTF-8" not in str(exc):
            raise
        # a file name given on the command line that is not UTF-8 (PEP 383): escaped
        data = dumps(_names_as_text(obj), orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    sys.stdout.write(json_safe(data.decode()) + "\n")


def _names_as_text(obj: object) -> object:
    """``obj`` with every string (and key) that is not valid Unicode text escaped by
    :func:`core.errors.name_text`; containers copied, any depth (no recursion)."""
    from core.errors import name_text

    def conv(v: object) -> object:
        if isinstance(v, str):
            return name_text(v)
        if isinstance(v, dict):
            return {}
        if isinstance(v, (list, tuple)):
            return []
        return v

    root = conv(obj)
    todo: list[tuple[object, object]] = [(obj, root)]
    while todo:
        src, dst = todo.pop()
        if isinstance(src, dict) and isinstance(dst, dict):
            for k, v in src.items():
                nv = conv(v)
                dst[name_text(k) if isinstance(k, str) else k] = nv
                todo.append((v, nv))
        elif isinstance(src, (list, tuple)) and isinstance(dst, list):
            for v in src:
                nv = conv(v)
                dst.append(nv)
                todo.append((v, nv))
    return root


def echo_err(message: str) -> None:
    typer.echo(f"chassis-inspector: {message}", err=True)


def check_output(path: Path, *, force: bool, inputs: tuple[Path, ...] = (), new_folder: Path | None = None) -> None:
    """Refuse to write ``path`` over an input of the same command (even with --force),
    over an existing file without ``--force``, or into a folder that does not exist (an
    output never creates folders, so a mistyped path is an error, not a new tree) —
    except ``new_folder``, one folder the command creates itself (``import --all -o
    DIR``), whose own parent must exist. Raises :class:`core.errors.OutputError`."""
    from core.errors import OutputError

    if not path.name:
        raise OutputError(str(path) or "''", "no file name given")
    try:
        path.exists()  # a name the system refuses (a component over 255 bytes: ENAMETOOLONG)
    except OSError as exc:
        raise OutputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    if path.is_dir():
        raise OutputError(str(path), "is a directory; give a file name")
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            raise OutputError(str(path), f"{parent} is a file, not a folder")
    folder = path.parent
    if new_folder is not None and folder == new_folder and not folder.exists():
        folder = new_folder.parent
    if not folder.is_dir():
        raise OutputError(str(path), f"the folder {folder} does not exist; create it first")
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


def command_hint(words: str, workspace: Path | None = None) -> str:
    """A command line to suggest: ``chassis-inspector WORDS``, with ``--workspace W``
    (shell-quoted) when the user named a workspace, so that the suggestion works as
    printed from the same folder."""
    hint = f"chassis-inspector {words}"
    if workspace is not None:
        hint += f" --workspace {shlex.quote(str(workspace))}"
    return hint


#: ``--trust-executor``: consent to run the executor a recording names (docs/replay.md,
#: "Executors are code")
LiveModelOpt = Annotated[
    str | None,
    typer.Option(
        "--live-model",
        help="The model live calls ask instead of the recorded one (policy live_model; required by a provider "
        "executor when the recording's model is 'unknown').",
    ),
]

TrustExecutorOpt = Annotated[
    bool,
    typer.Option(
        "--trust-executor",
        help="Run the executor the recording names (--executor recorded): it is code that runs on this machine.",
    ),
]
