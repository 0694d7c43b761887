"""Helpers shared by the command modules."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import typer

from core.io import load_recording
from core.recording import Recording


def load_any(path: Path, *, verify_keys: bool | str = "auto") -> Recording:
    """Load a recording for a command (raises FormatError, printed by ``main``)."""
    return load_recording(path, verify_keys=verify_keys)


def print_json(obj: object) -> None:
    """Write ``obj`` as indented JSON on stdout."""
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


def echo_err(message: str) -> None:
    typer.echo(f"chassis-inspector: {message}", err=True)
