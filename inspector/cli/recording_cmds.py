"""Commands on recording files: ``validate``, ``info``, ``migrate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from core.errors import FormatError
from core.record.io import (
    atomic_write_bytes,
    dumps_recording,
    parse_json,
    recording_from_dict,
    redact_recording,
)
from core.record.migrate import detect_version
from core.record.nesting import dumps
from core.record.reader import read_input
from core.record.recording import ModelRecord, Recording, ToolRecord

from .common import check_output, echo_err, load_any, print_json
from .safe_output import cell


def recording_summary(rec: Recording) -> dict[str, Any]:
    """The facts ``info`` prints: version, metadata, counts, models, tools, runs, first error."""
    models: dict[str, int] = {}
    tools: dict[str, int] = {}
    runs: list[str] = []
    seen_runs: set[str] = set()
    tokens_in = tokens_out = 0
    usage_seen = False
    for r in rec.records:
        if r.run_id and r.run_id not in seen_runs:
            seen_runs.add(r.run_id)
            runs.append(r.run_id)
        if isinstance(r, ModelRecord):
            swapped = r.meta.get("live_model") if r.meta else None
            # a replay's live call the policy's live_model answered: as the timeline names it
            name = f"{r.model} → {swapped}" if isinstance(swapped, str) else r.model
            models[name] = models.get(name, 0) + 1
            if r.response and r.response.usage:
                usage_seen = True
                tokens_in += r.response.usage.input_tokens
                tokens_out += r.response.usage.output_tokens
        elif isinstance(r, ToolRecord):
            tools[r.tool] = tools.get(r.tool, 0) + 1
    first = rec.first_error()
    first_error = None
    if first is not None:
        err = first.result.error if isinstance(first, ToolRecord) else first.error
        first_error = {
            "seq": first.seq,
            "kind": first.kind,
            "name": first.tool if isinstance(first, ToolRecord) else first.model,
            "type": err.type if err else None,
            "message": err.message if err else None,
        }
    return {
        "format": rec.format,
        "format_version": rec.format_version,
        "digest": rec.digest,
        "migrated_from": rec.migrated_from,
        "session": rec.session.to_json_obj(),
        "metadata": rec.metadata,
        "records": len(rec.records),
        "counts": rec.counts_by_kind(),
        "models": models,
        "tools": tools,
        "run_ids": runs,
        "tokens": {"input": tokens_in, "output": tokens_out} if usage_seen else _usage_totals(rec),
        "first_error": first_error,
    }


def indexed_summary(path: Path) -> dict[str, Any] | None:
    """The facts of :func:`recording_summary` for a version-3 file, from its header and
    its ``summary`` alone (a header without one: from the index columns and the record of
    the first error): ``None`` when ``path`` is not laid out with an index. Nothing else
    is read, so nothing else is verified (``validate`` reads every record).

    Raises:
        FormatError: a damaged header, summary or index, or a first-error record that
            does not validate (names the file and the place).
    """
    from core.record.indexed import IndexedFile, check_summary, index_summary, is_indexed
    from core.record.io import indexed_header
    from core.record.reader import read_input_head

    if not is_indexed(read_input_head(path, 160)):
        return None
    try:
        f = IndexedFile.open(path)
    except FormatError as exc:
        if exc.path != "/index_offset":
            raise
        return None  # the header's offsets are out of date (an edited file): read it whole
    try:
        shell, original = indexed_header(f)
        summary = f.header().get("summary")
        if summary is not None:
            summary = check_summary(summary, str(path))
        else:  # no summary in the header (a file edited by hand): from the index columns
            summary = index_summary(f.index.columns, len(f), _record_reader(f.raw_record, str(path)))
        return _summary_facts(
            shell,
            summary,
            records=len(f),
            digest=shell.digest,
            migrated_from=original if original < shell.format_version else None,
        )
    finally:
        f.close()


def skeleton_summary(path: Path) -> dict[str, Any] | None:
    """The facts of :func:`recording_summary` for a version-1/2 file of at least
    :data:`inspector.loader.FAST_OPEN_BYTES` (64 MB), from a skeleton decode
    (:func:`inspector.loader.skeleton_of`: the timeline's fields of every record, the
    payloads skipped) and the record of the first error: nothing else is parsed, so
    nothing else is verified (``validate`` reads every record), as for a version-3 file
    (:func:`indexed_summary`). ``None`` for a smaller file or one that is not a
    version-1/2 recording (the caller loads it whole).

    Raises:
        FormatError: malformed JSON, a header that does not validate, a record that is
            not an object, of an unknown kind or out of order, or a first-error record
            that does not validate (names the file and the place).
    """
    from core.record.indexed import index_summary
    from core.record.io import recording_from_dict
    from inspector.loader import FAST_OPEN_BYTES, skeleton_of

    if path.stat().st_size < FAST_OPEN_BYTES:
        return None
    opened = skeleton_of(path)
    if opened is None:
        return None
    skel, _ = opened
    source = str(path)
    header = {k: v for k, v in skel.header.items() if k != "digest"}
    shell = recording_from_dict({**header, "records": []}, source=source)

    summary = index_summary(skel.columns, len(skel.raw), _record_reader(skel.raw.__getitem__, source))
    return _summary_facts(
        shell, summary, records=len(skel.raw), digest=skel.header.get("digest"), migrated_from=shell.migrated_from
    )


def _record_reader(raw_record: Callable[[int], Any], source: str) -> Callable[[int], Any]:
    """Position → the record model validated from ``raw_record(position)`` (its parsed
    JSON), for :func:`core.record.indexed.index_summary`'s first error.

    Raises (when called):
        FormatError: the record does not validate (names ``source``, the record, its path).
    """
    from pydantic import TypeAdapter, ValidationError

    from core.record.recording import Record

    adapter: TypeAdapter[Any] = TypeAdapter(Record)

    def record_at(i: int) -> Any:
        try:
            return adapter.validate_python(raw_record(i))
        except ValidationError as exc:
            raise FormatError(
                f"record does not validate ({exc.errors(include_url=False)[0].get('msg')})",
                file=source,
                record=i,
                path=f"/records/{i}",
            ) from None

    return record_at


def _summary_facts(
    shell: Recording, summary: dict[str, Any], *, records: int, digest: str | None, migrated_from: int | None
) -> dict[str, Any]:
    """The facts ``info`` prints (as :func:`recording_summary` returns them) from a
    header-only ``shell`` and an index ``summary`` (:func:`core.record.indexed.index_summary`
    or a version-3 header's)."""
    first = summary["first_error"]
    return {
        "format": shell.format,
        "format_version": shell.format_version,
        "digest": digest,
        "migrated_from": migrated_from,
        "session": shell.session.to_json_obj(),
        "metadata": shell.metadata,
        "records": records,
        "counts": summary["counts"],
        "models": summary["models"],
        "tools": summary["tools"],
        "run_ids": summary["run_ids"],
        "tokens": summary["tokens"] if summary["tokens"] else _usage_totals(shell),
        "first_error": {k: v for k, v in first.items() if k != "position"} if isinstance(first, dict) else None,
    }


def _usage_totals(rec: Recording) -> dict[str, Any] | None:
    """Run totals a source recorded (``metadata.usage_totals``) when no call has usage."""
    ut = rec.metadata.get("usage_totals")
    if isinstance(ut, dict) and isinstance(ut.get("input_tokens"), int) and isinstance(ut.get("output_tokens"), int):
        return {"input": ut["input_tokens"], "output": ut["output_tokens"], "run_totals": ut.get("source", True)}
    return None


def _short(v: Any, n: int = 100) -> str:
    """One line of at most ``n`` characters (newlines shown as ``⏎``; other control, bidi
    and invisible characters as stand-ins with the marker, before the cut)."""
    s = v if isinstance(v, str) else dumps(v).decode()
    s = " ⏎ ".join(part.strip() for part in s.strip().splitlines()) if "\n" in s else s
    s = cell(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        files: Annotated[list[Path], typer.Argument(help="Recording files to check.")],
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
    ) -> None:
        """Check recordings fully (format, version, digest, keys). Exit 0 if all valid, 2 if not."""
        bad = 0
        for f in files:
            try:
                rec = load_any(f, verify_keys=True, convert=False)
            except FormatError as exc:
                echo_err(str(exc))
                bad += 1
                continue
            if not quiet:
                n = len(rec.records)
                records = f"{n:,} record{'' if n == 1 else 's'}"
                if rec.migrated_from is not None:
                    typer.echo(
                        f"{f}: ok (format version {rec.migrated_from}, migrates to {rec.format_version}; {records})"
                    )
                else:
                    typer.echo(f"{f}: ok (format version {rec.format_version}, {records}, {rec.digest})")
        if bad:
            raise typer.Exit(2)

    @app.command()
    def info(
        file: Annotated[Path, typer.Argument(help="Recording to describe.")],
        json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Summarize a recording: version, metadata, counts by kind, models, tools, runs, first error.

        A version-3 file is summarized from its header and record index alone (fast on any
        size), a version-1/2 file of 64 MB or more from the timeline's fields of its
        records; 'validate' checks every record."""
        s = (indexed_summary(file) or skeleton_summary(file)) if file.is_file() else None
        if s is None:
            rec = load_any(file)
            s = recording_summary(rec)
        migrated_from = s["migrated_from"]
        if json:
            print_json({"file": str(file), **s})
            return
        typer.echo(f"file            {file}")
        # the version the file was written in first (as the app's header and validate say
        # it), then the one it is read as
        typer.echo(
            f"format          {s['format']} version "
            + (
                f"{migrated_from} (read as version {s['format_version']} in memory; "
                "'chassis-inspector migrate' writes it)"
                if migrated_from is not None
                else f"{s['format_version']}"
            )
        )
        typer.echo(f"digest          {s['digest'] or 'none (not saved in this version yet)'}")
        sess = s["session"]
        typer.echo(
            f"session         mode={sess.get('mode')} fallback={sess.get('fallback')}"
            + (f" producer={cell(sess['producer'])}" if sess.get("producer") else "")
        )
        typer.echo(f"records         {s['records']}  (" + ", ".join(f"{k} {v}" for k, v in s["counts"].items()) + ")")
        typer.echo("models          " + (", ".join(f"{cell(k)} ×{v}" for k, v in s["models"].items()) or "-"))
        typer.echo("tools           " + (", ".join(f"{cell(k)} ×{v}" for k, v in s["tools"].items()) or "-"))
        tok = s["tokens"]
        if tok:
            note = f" (run totals from the source: {tok['run_totals']})" if tok.get("run_totals") else ""
            typer.echo(f"tokens          input {tok['input']}, output {tok['output']}{note}")
        else:
            typer.echo("tokens          not recorded")
        typer.echo("run ids         " + (", ".join(cell(r) for r in s["run_ids"]) or "-"))
        fe = s["first_error"]
        if fe:
            typer.echo(
                f"first error     seq {fe['seq']} {fe['kind']} {cell(fe['name'])}: {cell(fe['type'])}: "
                + _short(fe["message"])
            )
        else:
            typer.echo("first error     none")
        if s["metadata"]:
            typer.echo("metadata")
            keys = {k: cell(k) for k in s["metadata"]}
            width = max(14, max(len(k) for k in keys.values()) + 2)
            for k, v in s["metadata"].items():
                typer.echo(f"  {keys[k]:<{width}}{_short(v)}")

    @app.command()
    def migrate(
        old: Annotated[Path, typer.Argument(help="Recording in an older format version.")],
        output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the current version.")],
        force: Annotated[bool, typer.Option("--force", help="Overwrite OUTPUT if it exists.")] = False,
    ) -> None:
        """Migrate a recording to the current format version (written atomically)."""
        source = str(old)
        data = read_input(old)  # regular files only (core.record.reader)
        doc = parse_json(data, source=source)
        version = detect_version(doc, source=source)
        rec = recording_from_dict(doc, source=source)
        check_output(output, force=force, inputs=(old,))
        redact_recording(rec)  # what the product writes is redacted (docs/format.md, "Redaction")
        atomic_write_bytes(output, dumps_recording(rec))
        done = (
            f"already format version {version}; rewrote it as"
            if version == rec.format_version
            else f"format version {version} → {rec.format_version}; wrote"
        )
        n = len(rec.records)
        typer.echo(f"{old}: {done} {output} ({n:,} record{'' if n == 1 else 's'})")
