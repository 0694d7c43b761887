"""Importers of agent-run formats into recordings (format v1), and format detection.

Public API:

* :data:`IMPORTERS` — the registry: a plain list, one :class:`~.base.Importer` per
  source format, tried in order by :func:`detect` (an importer module adds itself
  with one line here);
* :func:`detect` — which importer takes a file (a native Chassis recording first);
* :func:`import_file` — every run of a file as :class:`~.base.ImportedRun` objects,
  in file order;
* :func:`order_runs` — those runs in *run order* (by sample id, then epoch, compared
  naturally: ``2`` before ``10``), the one order every frontend lists them in;
  :func:`select_run` picks one by id or by its index in that order
  (:mod:`~.opened` holds them, with :func:`run_label` and :func:`run_score`);
* :func:`open_any` — one recording from any file (native or importable) as an
  :class:`~.opened.Opened`: the recording, its source format, the run shown and every
  run of the file, whether it is incomplete, and its typed warnings.

Errors: a file no importer takes raises :class:`core.errors.SourceImportError` naming
every format tried and why each refused; a damaged file raises
:class:`core.errors.FormatError` (a truncated one
:class:`~._source.TruncatedSourceError`, which carries the runs recovered from before
the damage).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import FormatError, InspectorError, SourceImportError
from ..record.io import gc_paused, load_recording
from ._source import TruncatedSourceError, read_head
from .atif import AtifImporter
from .base import ImportedRun, Importer, ImportWarning
from .claude_code import ClaudeCodeImporter, session_files
from .codex import CodexImporter
from .inspect_ai import InspectAIImporter
from .langfuse import LangfuseImporter
from .mini_swe_agent import MiniSweAgentImporter
from .opened import Opened, RunRef, natural_key, order_runs, run_label, run_order, run_score, select_run
from .openhands import OpenHandsImporter
from .openinference import OpenInferenceImporter
from .otel import OtelImporter
from .swe_agent import SweAgentImporter
from .tau_bench import TauBenchImporter
from .vcr import VcrImporter
from .who_and_when import WhoAndWhenImporter

__all__ = [
    "IMPORTERS",
    "NATIVE",
    "ImportedRun",
    "ImportWarning",
    "Importer",
    "Opened",
    "RunRef",
    "TruncatedSourceError",
    "detect",
    "get_importer",
    "import_file",
    "natural_key",
    "open_any",
    "order_runs",
    "run_label",
    "run_order",
    "run_score",
    "select_run",
]

#: The registry, tried in this order by :func:`detect`. One line per importer.
IMPORTERS: list[Importer] = [
    ClaudeCodeImporter(),
    InspectAIImporter(),
    MiniSweAgentImporter(),
    SweAgentImporter(),
    OpenHandsImporter(),
    TauBenchImporter(),
    AtifImporter(),
    WhoAndWhenImporter(),
    CodexImporter(),
    LangfuseImporter(),
    VcrImporter(),
    OpenInferenceImporter(),
    OtelImporter(),
]

#: The name :func:`detect` returns for a Chassis recording (no conversion needed).
NATIVE = "chassis"

_NATIVE_HEAD = re.compile(rb'"format"\s*:\s*"chassis\.replay"|"chassis_version"\s*:|"format_version"\s*:')


def get_importer(name: str) -> Importer:
    """The registered importer called ``name``.

    Raises:
        SourceImportError: no importer has that name (lists the known names).
    """
    for imp in IMPORTERS:
        if imp.name == name:
            return imp
    known = ", ".join(i.name for i in IMPORTERS)
    raise SourceImportError(f"unknown import format {name!r} (known: {known})")


def looks_native(path: str | Path) -> bool:
    """Whether :func:`detect` takes ``path`` for a native recording by its first 4 KiB
    (``"format": "chassis.replay"``, a ``"format_version"`` or the 0.8.1 legacy
    header): the fast paths that read a native document (the skeleton decode, a whole
    parse) are for those only; anything else goes to the importers. ``False`` for a file
    that cannot be read (the caller's loading reports why)."""
    try:
        head = read_head(Path(path))
    except (OSError, InspectorError):
        return False
    return _NATIVE_HEAD.search(head[:4096]) is not None


def detect(path: str | Path) -> str:
    """Name of the format of ``path``: :data:`NATIVE` or an importer's name.

    A folder holding Claude Code sessions (``~/.claude/projects/<project>/``) is
    ``claude_code``, whose importer lists its sessions as runs. A native recording is recognised first (``"format": "chassis.replay"``, a
    ``"format_version"`` or the 0.8.1 legacy header in the first 4 KiB — loading then
    reports precisely what is wrong with it); then each importer's ``sniff`` in
    registry order.

    Raises:
        FormatError: the file does not exist, is not a regular file
            (:func:`core.record.reader.check_input`) or is empty.
        SourceImportError: no importer takes it; the message names every format tried
            and its reason, and ``attempts`` maps name → reason.
        TruncatedSourceError: the file is JSON cut short too early for any importer to
            recognise (a known format cut that early is returned as that format, whose
            ``load`` then reports the truncation).
    """
    from ..record.reader import check_input

    p = Path(path)
    if p.is_dir():
        if session_files(p):
            return ClaudeCodeImporter.name  # a Claude Code project folder: its sessions
        raise FormatError(
            "is a directory with no Claude Code session (*.jsonl) in it: a directory opens as a Claude Code "
            "project folder; every other format is read from its file",
            file=str(p),
        )
    check_input(p)  # missing, a directory, a FIFO or a device: one line, nothing read
    head = read_head(p)
    if not head.strip():
        raise FormatError("file is empty", file=str(p))
    if _NATIVE_HEAD.search(head[:4096]):
        return NATIVE
    attempts: dict[str, str] = {NATIVE: 'no "format": "chassis.replay" near the start'}
    for imp in IMPORTERS:
        try:
            reason = imp.sniff(p, head)
        except Exception as exc:  # a sniffer must never take detection down
            reason = f"sniffer failed: {type(exc).__name__}: {exc}"
        if reason is None:
            return imp.name
        attempts[imp.name] = reason
    if _is_truncated_json(p, head):
        for imp in IMPORTERS:
            try:
                if imp.sniff_truncated(head):
                    return imp.name  # its load() reports the truncation, naming the file
            except Exception:  # a sniffer must never take detection down
                continue
        raise TruncatedSourceError(
            "truncated JSON: the file ends early, before enough of it to tell which format it is "
            f"(a JSON {'array' if head.lstrip()[:1] == b'[' else 'document'} of {p.stat().st_size} bytes)",
            file=str(p),
        )
    tried = "; ".join(f"{k}: {v}" for k, v in attempts.items())
    raise SourceImportError(f"{p}: not a recognised agent-run format (tried {tried})", attempts=attempts)


def _is_truncated_json(p: Path, head: bytes) -> bool:
    """Whether ``p`` is a JSON document cut short: the whole file is in ``head``, starts
    like JSON (``{`` or ``[``) and the parser runs out of input (an unterminated string
    or container)."""
    import json

    body = head.lstrip()
    if body[:1] not in (b"{", b"[") or p.stat().st_size > len(head):
        return False
    text = head.decode("utf-8", "surrogateescape")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.pos >= len(text.rstrip()) or "Unterminated string" in exc.msg
    except (RecursionError, ValueError):
        return False
    return False


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """:func:`core.record.io.gc_paused` while an importer runs: an import allocates
    millions of objects that live on (the parsed source, the records), which would set
    off a full collection again and again — a third of a large import's time — while it
    makes almost no reference cycles to collect; what it made is then frozen out of the
    collector's reach rather than scanned by its next full pass."""
    with gc_paused():
        yield


def import_file(path: str | Path, fmt: str | None = None, *, recover: bool = False) -> list[ImportedRun]:
    """Import every run of ``path``.

    Args:
        path: the source file.
        fmt: an importer name (``--from``); detected when ``None``.
        recover: when the file is truncated, return the runs recovered from before the
            damage (each ``incomplete``) instead of raising.

    Raises:
        SourceImportError: unknown ``fmt``, or no importer recognises the file, or the
            file is already a Chassis recording (nothing to import).
        FormatError: the file is damaged or not of the named format.
        TruncatedSourceError: the file ends early (unless ``recover`` and something was
            recovered).
    """
    p = Path(path)
    name = fmt or detect(p)
    if name == NATIVE:
        raise SourceImportError(f"{p}: already a Chassis recording; nothing to import (open it directly)")
    imp = get_importer(name)
    try:
        with _gc_paused():
            return imp.load(p)
    except TruncatedSourceError as exc:
        if recover and exc.recovered:
            return exc.recovered
        raise
    except InspectorError:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, UnicodeError) as exc:
        # A file the importer recognised but whose shape it did not expect somewhere:
        # reported in one line, never a traceback (ValidationError is a ValueError).
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise FormatError(
            f"recognised as {name} but has an unexpected shape ({type(exc).__name__}: {detail[:200]}); "
            f"it may be damaged or from a {name} version the importer does not know",
            file=str(p),
        ) from None


def open_any(
    path: str | Path,
    run: str | int | None = None,
    *,
    fmt: str | None = None,
    verify_keys: bool | str = "auto",
    recover: bool = False,
) -> Opened:
    """Open ``path`` whatever its format, as an :class:`~.opened.Opened`.

    A Chassis recording is loaded (and verified, ``verify_keys`` as
    :func:`core.record.io.load_recording` takes it) as is: ``source_format`` ``"chassis"``, no
    runs, no warnings. Any importable file is converted in memory (``fmt`` names the
    importer, else :func:`detect` finds it); ``run`` picks one of its runs by id or
    index in run order (default the first in run order, :func:`select_run`); ``runs``
    lists them all in run order, and :meth:`Opened.with_run` opens another from the
    runs parsed here (no second parse); the chosen run's warnings come folded
    (``warnings``) and as raised (``all_warnings``).
    A recording that has no canonical digest is returned without one (saving it
    reports the value).

    With ``recover``, a truncated source gives the run(s) recovered from before the
    damage: ``incomplete`` is true and the first warning (code ``truncated``, no
    place) says what is wrong with the file; without it, truncation raises.

    Raises:
        FormatError: the file is missing, empty, damaged or not a valid recording
            (:func:`core.record.io.load_recording`, :func:`import_file`).
        TruncatedSourceError: the file ends early (unless ``recover`` and a run
            before the damage could be rebuilt).
        SourceImportError: no importer takes the file (names every format tried), an
            unknown ``fmt``, or no run ``run`` (lists the ids).
    """
    p = Path(path)
    name = fmt or detect(p)
    if name == NATIVE:
        return Opened(recording=load_recording(p, verify_keys=verify_keys), source_format=NATIVE, source=str(p))
    damage: list[ImportWarning] = []
    try:
        runs = import_file(p, name)
    except TruncatedSourceError as exc:
        if not (recover and exc.recovered):
            raise
        runs = exc.recovered
        n = len(runs)
        damage.append(
            ImportWarning(
                None,
                f"the source ends early ({exc.damage}); {n} run{'s' if n != 1 else ''} before the damage "
                "recovered, marked incomplete",
                "truncated",
            )
        )
    return Opened.from_runs(runs, run, source_format=name, source=str(p), file_warnings=damage)
