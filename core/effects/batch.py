"""Batch: the metrics, effects and audit summaries of every run under a folder, as one
polars frame (the ``batch`` command; rows and columns: :mod:`core.analysis.batch`).

:func:`run_batch` lists the files under a folder that match a glob
(:func:`batch_files`), opens each with :func:`core.importers.open_any` — a native
recording, or any format an importer reads, every run of a multi-run file one row, in
the run order every frontend uses — and computes its rows (:func:`file_rows`, a pure
function of the file). The files are spread over

* this process (``jobs=1``, the default);
* ``jobs`` worker processes started by ``spawn`` (``concurrent.futures``), each ending
  with this one, as the sweep's workers do (:mod:`core.effects.sweep`);
* or Ray tasks, one per file, on the cluster at ``ray_address``
  (:mod:`core.effects.ray_support`; ``local`` starts one here).

The frame is the same whichever runs it: rows in file order (POSIX path under the
folder), then run order. It lives here, not in :mod:`core.analysis`, because it opens
every format through :mod:`core.importers`, a sibling layer analysis may not import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..analysis.batch import batch_frame, batch_schema, error_row, run_row
from ..analysis.metrics import PriceTable, load_predicate
from ..errors import AnalysisError, InspectorError, name_text, printable
from ..record.nesting import ensure_recursion_limit
from ..record.recording import Recording

__all__ = ["DEFAULT_GLOB", "MAX_JOBS", "BatchResult", "batch_files", "file_rows", "run_batch"]

DEFAULT_GLOB = "**/*.json"
"""The files a batch reads by default: every ``.json`` file at any depth."""

MAX_JOBS = 64
"""Most worker processes a batch starts (``--jobs``)."""

_PREDICATES: dict[str, Any] = {}


def batch_files(root: str | os.PathLike[str], pattern: str = DEFAULT_GLOB) -> list[Path]:
    """The regular files under the folder ``root`` matching the glob ``pattern``
    (``pathlib`` syntax: ``**`` any depth), sorted by their POSIX path under ``root``.

    Raises AnalysisError when ``root`` is not a folder or the pattern is empty or
    absolute."""
    folder = Path(root)
    if not folder.is_dir():
        raise AnalysisError(f"{printable(str(root))}: not a folder (batch reads the files under a folder)")
    if not pattern or Path(pattern).is_absolute():
        raise AnalysisError(f"--glob {pattern!r}: give a pattern relative to the folder, such as {DEFAULT_GLOB}")
    try:
        found = [p for p in folder.glob(pattern) if p.is_file()]
    except (ValueError, OSError) as exc:
        raise AnalysisError(f"--glob {pattern!r}: {exc}") from None
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def _predicate_of(spec: str | None) -> Any:
    if spec is None:
        return None
    if spec not in _PREDICATES:
        _PREDICATES[spec] = load_predicate(spec)
    return _PREDICATES[spec]


def _error_text(path: str, exc: BaseException) -> str:
    """The one line of ``exc`` as the ``error`` column holds it: an InspectorError's
    own message (it names the file, the place and the reason), else the file and the
    reason; valid Unicode text (:func:`core.errors.name_text`: a file name that is not
    UTF-8 shows its bytes as ``\\xNN``)."""
    if isinstance(exc, InspectorError):
        text = str(exc)
    elif isinstance(exc, OSError):
        text = f"{printable(path)}: {exc.strerror or exc}"
    else:
        text = f"{printable(path)}: cannot be read: {type(exc).__name__}: {exc}"
    return name_text(text)


def file_rows(
    path: str,
    name: str,
    sections: Sequence[str] = ("metrics",),
    prices: PriceTable | None = None,
    predicate: str | None = None,
) -> list[dict[str, Any]]:
    """The batch rows of the file at ``path``, listed as ``name``
    (:func:`core.analysis.batch.run_row`): one for a native recording, one per run (in
    run order, :func:`core.importers.opened.order_runs`) for a converted file. A file
    that cannot be opened is one :func:`~core.analysis.batch.error_row` with the error's
    text (a FormatError's names the file, the place and the reason); a run whose
    figures cannot be computed (a failing outcome predicate) is one too, the other runs
    still computed. ``predicate``: an outcome predicate ``module:function``, imported
    once per process. Never raises for a bad file."""
    from ..importers import open_any

    try:
        opened = open_any(path)
    except Exception as exc:  # noqa: BLE001 — one bad file is a row, never the end of the batch
        return [error_row(name, _error_text(path, exc))]
    runs: list[tuple[str | None, Recording, int]]
    if opened.converted:
        runs = [
            (
                ref.id,
                opened.imported[ref.file_index].recording,
                len(opened.file_warnings) + len(opened.imported[ref.file_index].warnings),
            )
            for ref in opened.runs
        ]
    else:
        runs = [(None, opened.recording, 0)]
    rows = []
    for run_id, rec, warnings in runs:
        try:
            rows.append(
                run_row(
                    rec,
                    file=name,
                    run=run_id,
                    fmt=opened.source_format,
                    warnings=warnings,
                    sections=sections,
                    prices=prices,
                    predicate=_predicate_of(predicate),
                )
            )
        except Exception as exc:  # noqa: BLE001 — as above, for one run
            where = path if run_id is None else f"{path} (run {run_id})"
            rows.append(error_row(name, _error_text(where, exc), run=run_id, fmt=opened.source_format))
    return rows


def _file_task(task: tuple[str, str, tuple[str, ...], PriceTable | None, str | None]) -> list[dict[str, Any]]:
    """A worker's entry point (process pool or Ray task): :func:`file_rows` of one
    task ``(path, name, sections, prices, predicate)``."""
    ensure_recursion_limit()
    return file_rows(*task)


def _init_worker(parent_pid: int) -> None:
    """Process-pool initializer: end with the batching process (as sweep workers do)
    and raise the recursion limit for values nested up to the nesting limit."""
    from .sweep import _die_with_parent

    ensure_recursion_limit()
    _die_with_parent(parent_pid)


@dataclass
class BatchResult:
    """A finished batch: the ``frame`` (schema :func:`core.analysis.batch.batch_schema`),
    the number of ``files`` read, and ``failed``: the ``file`` of every row with an
    error (a file counted once)."""

    frame: pl.DataFrame
    files: int
    failed: list[str]

    @property
    def ok(self) -> bool:
        """Every file (and every run in it) was read."""
        return not self.failed


def run_batch(
    root: str | os.PathLike[str],
    *,
    pattern: str = DEFAULT_GLOB,
    sections: Sequence[str] = ("metrics",),
    prices: PriceTable | None = None,
    predicate: str | None = None,
    jobs: int = 1,
    ray_address: str | None = None,
    on_file: Callable[[str, list[dict[str, Any]]], None] | None = None,
) -> BatchResult:
    """Summarize every run under ``root`` (module docstring).

    ``pattern``: the glob of the files (:data:`DEFAULT_GLOB`); ``sections``: among
    :data:`core.analysis.batch.SECTIONS`; ``prices`` / ``predicate``: as for
    :func:`core.analysis.metrics.run_metrics` (the predicate as ``module:function``,
    imported in each worker); ``jobs``: worker processes (1 = this process), or with
    ``ray_address`` the CPUs of a ``local`` Ray (default: all); ``ray_address``: run
    each file as a Ray task there (:func:`core.effects.ray_support.ray_connection`);
    ``on_file``: called with each file's name and rows as they arrive (progress).

    Raises:
        AnalysisError: ``root`` is not a folder, a bad glob, no file matches, a bad
            section or ``jobs``, or the predicate cannot be imported.
        RayError: Ray is not installed or cannot be reached (with ``ray_address``).
    """
    schema_sections = tuple(sections)
    batch_schema(schema_sections)  # an unknown section fails here, before any work
    if jobs < 1:
        raise AnalysisError(f"--jobs must be at least 1, not {jobs}")
    if jobs > MAX_JOBS:
        raise AnalysisError(f"--jobs {jobs} is more than the {MAX_JOBS} worker processes a batch allows")
    if ray_address is not None:
        from .ray_support import import_ray

        import_ray()  # without Ray, say how to install it before any work
    _predicate_of(predicate)  # fail early, here, on a predicate that cannot be imported
    files = batch_files(root, pattern)
    if not files:
        raise AnalysisError(f"{printable(str(root))}: no file matches {pattern!r}")
    folder = Path(root)
    tasks = [
        (str(p.resolve()), name_text(p.relative_to(folder).as_posix()), schema_sections, prices, predicate)
        for p in files
    ]
    by_file: list[list[dict[str, Any]] | None] = [None] * len(tasks)

    def done(i: int, rows: list[dict[str, Any]]) -> None:
        by_file[i] = rows
        if on_file is not None:
            on_file(tasks[i][1], rows)

    if ray_address is not None:
        _run_on_ray(tasks, ray_address, jobs if jobs > 1 else None, done)
    elif jobs == 1 or len(tasks) == 1:
        for i, t in enumerate(tasks):
            done(i, _file_task(t))
    else:
        _run_in_pool(tasks, min(jobs, len(tasks)), done)
    rows = [r for file_rows_ in by_file for r in (file_rows_ or [])]
    failed = sorted({r["file"] for r in rows if r.get("error") is not None})
    return BatchResult(batch_frame(rows, schema_sections), len(files), failed)


def _run_in_pool(tasks: list[tuple[Any, ...]], workers: int, done: Callable[[int, list[dict[str, Any]]], None]) -> None:
    """Run ``tasks`` in ``workers`` spawned processes, calling ``done(index, rows)`` as
    each file's rows arrive."""
    import multiprocessing
    from concurrent.futures import as_completed

    from .sweep import _start_resource_tracker

    _start_resource_tracker()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    ) as pool:
        futures = {pool.submit(_file_task, t): i for i, t in enumerate(tasks)}
        try:
            for f in as_completed(futures):
                done(futures[f], f.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _run_on_ray(
    tasks: list[tuple[Any, ...]],
    address: str,
    num_cpus: int | None,
    done: Callable[[int, list[dict[str, Any]]], None],
) -> None:
    """Run ``tasks`` as Ray tasks (one per file) on the cluster at ``address``, calling
    ``done(index, rows)`` as each finishes."""
    from .ray_support import ray_connection, ray_results

    with ray_connection(address, num_cpus=num_cpus) as ray:
        remote = ray.remote(_file_task)
        refs = {remote.remote(t): i for i, t in enumerate(tasks)}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=min(len(pending), 64), timeout=0.5)
                for ref, rows in zip(ready, ray_results(ray, ready)):
                    done(refs[ref], rows)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
