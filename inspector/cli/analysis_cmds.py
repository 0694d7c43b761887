"""Commands that compare and explain runs: ``diff``, ``metrics``, ``audit``.

Thin wrappers over :mod:`core.analysis.diff`, :mod:`core.analysis.metrics` and :mod:`core.analysis.audit`; every
error is a :class:`core.errors.InspectorError` printed by ``main`` on one line (exit 2).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from core.analysis.audit import audit as audit_run
from core.analysis.audit import audit_markdown
from core.analysis.compare import changed_strings, common_prefix
from core.analysis.diff import (
    ALL_KINDS,
    CALL_KINDS,
    output_diff,
    state_diff,
    tool_diffs,
    trace_diff,
)
from core.analysis.metrics import (
    comparison_metrics,
    final_output,
    load_predicate,
    load_price_table,
    run_metrics,
)
from core.analysis.safe_text import HIDDEN_MARK, shown
from core.errors import AnalysisError, name_text, short_pointer
from core.record.nesting import dumps

from .common import LiveModelOpt, TrustExecutorOpt, load_any, print_json
from .safe_output import cell, csv_safe


def _short(v: Any, n: int = 80) -> str:
    """``v`` on one line of at most ``n`` characters: newlines as ``\\n``, other control,
    bidi and invisible characters as visible stand-ins with the marker
    (:func:`core.analysis.safe_text.shown`) — escaped *before* the cut, so a cut never
    ends inside an escape or OSC sequence left raw."""
    s = v if isinstance(v, str) else dumps(v, orjson.OPT_SORT_KEYS).decode()
    s = _marked_replacements(shown(s.replace("\n", "\\n")))
    return s if len(s) <= n else s[: n - 1] + "…"


def _marked_replacements(s: str) -> str:
    """``s`` with the marker before its first U+FFFD (what an invalid-Unicode value shows
    in each bad place), unless the line has the marker already."""
    i = s.find("\ufffd")
    if i < 0 or HIDDEN_MARK in s:
        return s
    return s[:i] + HIDDEN_MARK + s[i:]


def _oneline(v: Any, n: int = 80) -> str:
    """``v`` on one line for prose: runs of whitespace (newlines included) become one
    space, the rest is escaped as in :func:`_short`, then cut to ``n`` characters."""
    s = v if isinstance(v, str) else dumps(v, orjson.OPT_SORT_KEYS).decode()
    s = _marked_replacements(shown(" ".join(s.split())))
    return s if len(s) <= n else s[: n - 1] + "…"


def _seq(v: int | None) -> str:
    return "-" if v is None else str(v)


def diff_document(a_path: Path, b_path: Path, *, all_kinds: bool = False) -> dict[str, Any]:
    """The JSON document ``diff --json`` prints (also used by the app)."""
    a, b = load_any(a_path), load_any(b_path)
    trace = trace_diff(a, b, kinds=ALL_KINDS if all_kinds else CALL_KINDS)
    doc = {"base": str(a_path), "other": str(b_path), **trace.to_json()}
    doc["tool_diffs"] = [t.to_json() for t in tool_diffs(a, b, trace)]
    doc["state_diffs"] = [s.to_json() for s in state_diff(a, b) if s.status != "same"]
    doc["output_diff"] = output_diff(final_output(a), final_output(b)).to_json()
    fd = doc.get("first_divergence")
    if isinstance(fd, dict) and fd.get("dimension") == "request":
        fd["request_changes"] = _request_changes(a, b, fd.get("base_seq"), fd.get("replay_seq"))
    return doc


#: at most this many request differences are listed under the first divergence, each
#: string cut to this many characters around its first difference (``old_chars`` /
#: ``new_chars`` give the whole lengths, ``from_character`` where they first differ)
MAX_REQUEST_CHANGES = 20
REQUEST_TEXT_CHARS = 200


def _request_changes(a: Any, b: Any, base_seq: int | None, other_seq: int | None) -> list[dict[str, Any]]:
    """Where the two model requests of a first divergence in ``request`` differ: the
    payload diff of the requests (JSON Pointer paths, RFC 6901), at most
    :data:`MAX_REQUEST_CHANGES` — e.g. the prompt a person typed differently."""
    from core.analysis.payload_diff import payload_diff

    ra = next((r for r in a.records if r.seq == base_seq), None)
    rb = next((r for r in b.records if r.seq == other_seq), None)
    if ra is None or rb is None or ra.kind != "model" or rb.kind != "model":
        return []
    out = []
    for c in payload_diff(ra.request.to_json_obj(), rb.request.to_json_obj())[:MAX_REQUEST_CHANGES]:
        j = c.to_json()
        for side in ("old", "new"):
            v = j.get(side)
            if isinstance(v, str) and len(v) > REQUEST_TEXT_CHARS:
                j[side] = v[:REQUEST_TEXT_CHARS] + "…"
                j[f"{side}_chars"] = len(v)
        old_v, new_v = c.to_json().get("old"), c.to_json().get("new")
        if isinstance(old_v, str) and isinstance(new_v, str):
            j["from_character"] = common_prefix(old_v, new_v)
            if j["from_character"] > REQUEST_TEXT_CHARS // 2:
                _, _, at = changed_strings(old_v, new_v)
                lo = max(0, at - 20)
                j["old"] = (
                    "…" + old_v[lo : lo + REQUEST_TEXT_CHARS] + ("…" if len(old_v) > lo + REQUEST_TEXT_CHARS else "")
                )
                j["new"] = (
                    "…" + new_v[lo : lo + REQUEST_TEXT_CHARS] + ("…" if len(new_v) > lo + REQUEST_TEXT_CHARS else "")
                )
        out.append(j)
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def diff(
        base: Annotated[Path, typer.Argument(help="The base recording.")],
        other: Annotated[Path, typer.Argument(help="The recording to compare with it.")],
        json: Annotated[
            bool, typer.Option("--json", help="Print JSON (first_divergence, ops, payload diffs).")
        ] = False,
        all_kinds: Annotated[
            bool, typer.Option("--all-kinds", help="Align interrupts, snapshots and lifecycle records too.")
        ] = False,
    ) -> None:
        """Compare two recordings: aligned calls, first divergence, tool/state/output diffs."""
        doc = diff_document(base, other, all_kinds=all_kinds)
        if json:
            print_json(doc)
            return
        fd = doc["first_divergence"]
        c = doc["counts"]
        unit = "records" if all_kinds else "calls"
        typer.echo(f"base   {base} ({doc['base_records']} {unit})")
        typer.echo(f"other  {other} ({doc['other_records']} {unit})")
        typer.echo(f"ops    same {c['same']}, changed {c['changed']}, removed {c['removed']}, inserted {c['inserted']}")
        if fd is None:
            typer.echo("first divergence: none (the runs are the same)")
        else:
            typer.echo(
                f"first divergence: {fd['dimension']} at base seq {_seq(fd['base_seq'])}, other seq {_seq(fd['replay_seq'])}"
            )
            for ch in fd.get("request_changes") or []:
                text = _change_text(ch)
                if "from_character" in ch and ("old_chars" in ch or "new_chars" in ch or ch["from_character"] > 0):
                    n_old = ch.get("old_chars", len(ch.get("old") or ""))
                    n_new = ch.get("new_chars", len(ch.get("new") or ""))
                    text = text.split(" (from character")[0] + (
                        f" (from character {ch['from_character']:,} of {n_old:,} → {n_new:,})"
                    )
                typer.echo(f"  request {ch['op']} {cell(short_pointer(ch['path'] or '/'))}: " + text)
        changes = [o for o in doc["ops"] if o["op"] != "same"]
        if changes:
            typer.echo("")
            typer.echo(f"{'op':<9} {'base':>6} {'other':>6}  {'kind':<6} {'name':<24} dimension")
            for o in changes:
                typer.echo(
                    f"{o['op']:<9} {_seq(o['base_seq']):>6} {_seq(o['other_seq']):>6}  {o['kind']:<6} "
                    f"{_short(o['name'] or '', 24):<24} {o.get('dimension', '')}"
                )
        for t in doc["tool_diffs"]:
            typer.echo("")
            names = cell(t["tool"]) if t["tool"] == t["other_tool"] else f"{cell(t['tool'])} ↔ {cell(t['other_tool'])}"
            typer.echo(f"tool {names} (base seq {t['base_seq']} ↔ other seq {t['other_seq']})")
            for part in ("arguments", "result"):
                for ch in t[part]:
                    typer.echo(f"  {part} {ch['op']} {cell(short_pointer(ch['path'] or '/'))}: " + _change_text(ch))
        for s in doc["state_diffs"]:
            typer.echo("")
            typer.echo(
                f"snapshot {cell(s['generation_id'] or '-')} {s['status']} (base seq {_seq(s['base_seq'])}, other seq {_seq(s['other_seq'])})"
            )
            for ch in s["changes"]:
                typer.echo(f"  {ch['op']} {cell(short_pointer(ch['path'] or '/'))}: " + _change_text(ch))
        od = doc["output_diff"]
        typer.echo("")
        if not od["changed"]:
            typer.echo("final output: same")
        elif od["mode"] == "missing":
            typer.echo(f"final output: only one run has one (base {_short(od['base'])}, other {_short(od['other'])})")
        elif od["mode"] == "text":
            typer.echo("final output (text diff):")
            for line in od["text_diff"]:
                typer.echo("  " + cell(line))
        else:
            typer.echo("final output (structural diff):")
            for ch in od["changes"]:
                typer.echo(f"  {ch['op']} {cell(short_pointer(ch['path'] or '/'))}: " + _change_text(ch))

    @app.command()
    def metrics(
        files: Annotated[list[Path], typer.Argument(help="Recordings (with --compare the first is the base).")],
        csv: Annotated[bool, typer.Option("--csv", help="Print CSV.")] = False,
        json: Annotated[bool, typer.Option("--json", help="Print JSON (a list of rows).")] = False,
        prices: Annotated[
            Path | None, typer.Option("--prices", help="Price table JSON: {MODEL: {input, output}} per million tokens.")
        ] = None,
        outcome: Annotated[
            str | None, typer.Option("--outcome", help="Outcome predicate module:function (called with the recording).")
        ] = None,
        compare: Annotated[bool, typer.Option("--compare", help="Compare every other FILE with the first.")] = False,
    ) -> None:
        """Metrics per run (steps, calls, errors, tokens, duration, cost, outcome, final output)."""
        if csv and json:
            raise AnalysisError("--csv and --json cannot be used together")
        if compare and len(files) < 2:
            raise AnalysisError("--compare needs a base and at least one other recording")
        table = load_price_table(prices) if prices is not None else None
        predicate = load_predicate(outcome) if outcome else None
        runs = [(name_text(str(f)), load_any(f)) for f in files]  # a table holds UTF-8 text only
        if compare:
            import polars as pl

            (bl, brec), rest = runs[0], runs[1:]
            df = pl.concat(
                [
                    comparison_metrics(brec, rec, base_label=bl, other_label=lbl, prices=table, predicate=predicate)
                    for lbl, rec in rest
                ]
            )
        else:
            df = run_metrics(runs, prices=table, predicate=predicate)
        if csv:
            sys.stdout.write(csv_safe(df.write_csv()))
        elif json:
            print_json(df.to_dicts())
        else:
            _print_table(df.to_dicts(), compare)

    @app.command()
    def audit(
        file: Annotated[Path, typer.Argument(help="Recording to audit.")],
        json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
        markdown: Annotated[
            bool, typer.Option("--markdown", help="Print the audit as Markdown (what the app's audit screen exports).")
        ] = False,
        executor: Annotated[
            str | None,
            typer.Option(
                "--executor",
                help="Executor module:function, 'provider:openai' / 'provider:anthropic[@URL]', or 'recorded': "
                "knock each call out by replaying (core.effects.knockout).",
            ),
        ] = None,
        trust_executor: TrustExecutorOpt = False,
        live_model: LiveModelOpt = None,
    ) -> None:
        """Lineage of the final output: contributing and unused calls, redactions."""
        if json and markdown:
            raise AnalysisError("--json and --markdown cannot be used together")
        if live_model is not None and executor is None:
            raise typer.BadParameter(
                "--live-model is the model a live knockout asks: use it with --executor", param_hint="--live-model"
            )
        rec = load_any(file)
        if executor is not None:
            from core.effects.knockout import knockout_runner

            runner = knockout_runner(executor, rec, trust_executor=trust_executor, live_model=live_model)
            rep = audit_run(rec, knockout=runner)
        else:
            rep = audit_run(rec)
        if json:
            print_json({"file": str(file), **rep.to_json()})
            return
        if markdown:
            typer.echo(audit_markdown(rep, file.name), nl=False)
            return
        if not rec.records:
            typer.echo(f"{file}: no final output (the recording has no records)")
        elif rep.final_seq is None:
            typer.echo(f"{file}: no final output ({rep.final_missing or 'it ended on an error or a tool request'})")
        else:
            typer.echo(f"final output (seq {rep.final_seq}): {_oneline(rep.final_output, 100)}")
        counts = f"contributed {len(rep.contributed())}, unused {len(rep.unused())}"
        if rep.unknown():
            counts += f", cannot tell {len(rep.unknown())}"
        typer.echo(counts)
        typer.echo("")
        for c in rep.calls:
            line = f"{c.seq:>6}  {c.kind:<5} {_short(c.name, 24):<24} {c.status:<11}"
            if c.status in ("unused", "unknown"):
                line += f" {cell(c.reason)}"
            else:
                line += " " + ", ".join(cell(v) for v in c.via)
                if c.quoted:
                    line += "  quoted: " + ", ".join(_short(q, 30) for q in c.quoted)
            if c.redacted:
                line += "  [redacted: " + ", ".join(cell(r) for r in c.redacted) + "]"
            if c.knockout is not None:
                line += f"  knockout: {c.knockout.outcome} ({cell(c.knockout.detail)})"
            typer.echo(line)
        if rep.redactions:
            typer.echo("")
            hidden = [r for r in rep.redactions if r.in_lineage]
            typer.echo(f"redaction hid {len(rep.redactions)} value(s), {len(hidden)} on the lineage")
        typer.echo("")
        typer.echo(f"knockout: {rep.knockout}")


def _change_text(ch: dict[str, Any]) -> str:
    if ch["op"] == "added":
        return _short(ch.get("new"))
    if ch["op"] == "removed":
        return _short(ch.get("old"))
    old, new = ch.get("old"), ch.get("new")
    if isinstance(old, str) and isinstance(new, str):
        a, b, at = changed_strings(old, new)
        where = f" (from character {at:,} of {len(old):,} → {len(new):,})" if at > 0 and len(old) > 38 else ""
        return f"{a} → {b}{where}"
    return f"{_short(old, 38)} → {_short(new, 38)}"


_RUN_COLS = (
    "steps",
    "model_calls",
    "tool_calls",
    "tool_errors",
    "input_tokens",
    "output_tokens",
    "duration_seconds",
    "cost",
    "outcome",
)
_CMP_COLS = (
    "steps_delta",
    "tool_errors_delta",
    "input_tokens_delta",
    "output_tokens_delta",
    "outcome_base",
    "outcome_other",
    "final_output_changed",
    "divergence_base_seq",
    "divergence_dimension",
    "divergence_step",
)


# columns that are null because the recording holds no such figure (not zero)
_RECORDED_COLS = ("input_tokens", "output_tokens", "duration_seconds")
_NOT_RECORDED = "not recorded"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return cell(v)


def _cell_of(column: str, value: Any) -> str:
    """A table cell: a figure the recording does not hold reads ``not recorded``, a cost
    no price or recorded total gives reads ``unknown`` (both are empty in CSV and null in
    JSON), anything else as :func:`_fmt` writes it."""
    if value is None and column in _RECORDED_COLS:
        return _NOT_RECORDED
    if value is None and column == "cost":
        return "unknown"
    return _fmt(value)


def _print_table(rows: list[dict[str, Any]], compare: bool) -> None:
    cols = ("base", "other", *_CMP_COLS) if compare else ("run", *_RUN_COLS)
    cells = [[_cell_of(c, r.get(c)) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(cols)]
    typer.echo("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
    for row in cells:
        typer.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
