"""The header of the timeline: which recording (and which run of its file), its
outcome and score, counts, tokens, duration."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from core.analysis.timeline import VIEW_KINDS as RECORD_KINDS
from core.analysis.timeline import TimelineSummary
from core.analysis.timeline_text import format_duration, one_line
from core.record.recording import Recording

from ..plain import line
from ..runinfo import marked_seqs, run_outcome, run_score

OUTCOME_STYLES = {"success": "bold #5faf5f", "failure": "bold #ff5f5f"}

KIND_STYLES = {
    "model": "bold #5f87ff",
    "tool": "bold #5faf5f",
    "interrupt": "bold #d7af00",
    "snapshot": "#c060c0",
    "lifecycle": "#4fb0b0",
}


def run_usage_totals(recording: Recording) -> tuple[int, int] | None:
    """``(input_tokens, output_tokens)`` from ``metadata.usage_totals`` — the run totals a
    source recorded (e.g. SWE-agent's model_stats) — or None when absent or not integers.
    The same rule as ``chassis-inspector info`` (inspector/cli/recording_cmds.py)."""
    ut = recording.metadata.get("usage_totals")
    if isinstance(ut, dict) and isinstance(ut.get("input_tokens"), int) and isinstance(ut.get("output_tokens"), int):
        return ut["input_tokens"], ut["output_tokens"]
    return None


#: metadata fields the first line shows on their own (not again among the simple fields)
OWN_FIELDS = ("outcome", "outcome_reason", "reward", "score")


def source_run(recording: Recording) -> str | None:
    """The id of the run in its source file (``metadata.source.run``, written by the
    importers), or ``None`` for a recording that was not imported."""
    src = recording.metadata.get("source")
    run = src.get("run") if isinstance(src, dict) else None
    return run if isinstance(run, str) and run else None


def header_text(
    path: Path | str,
    recording: Recording,
    summary: TimelineSummary,
    verifying: bool = False,
    reading: float | None = None,
) -> Text:
    """Two lines (never wrapped): file · run (of an imported file) · outcome · score ·
    marked steps · a few metadata fields · format · producer, then counts, errors,
    tokens, time; ``verifying`` adds a note that the full verification is still
    running; ``reading`` (the share of the file decoded, 0.0 to 1.0) says the counts are
    of the records read so far, the file still being read. Every recorded value is shown
    as text (never markup)."""
    t = Text()
    t.append(line(Path(path).name), style="bold")
    run = source_run(recording)
    if run is not None:
        t.append("  run ", style="dim")
        t.append(line(run), style="bold")
    # the outcome as `chassis-inspector metrics` computes it (core.analysis.metrics.outcome_of);
    # fields such as exit_status are shown as what they are
    outcome, _ = run_outcome(recording)
    t.append("  outcome ", style="dim")
    t.append(line(outcome), style=OUTCOME_STYLES.get(outcome, "bold"))
    score = run_score(recording)
    if score is not None:
        t.append("  score ", style="dim")
        t.append(line(score), style="bold")
    for mark in marked_seqs(recording):
        t.append(f"  ⚑ {mark.label} seq {mark.seq} (m)", style="bold #d7af00")
    t.append("  i: run info", style="dim italic")
    # the run's own fields before the file's format and producer: on a narrow screen the
    # line is cut at its end (a field equal to the run id shown is left out)
    meta = [
        f"{line(k)}={line(one_line(v, 32))}"
        for k, v in recording.metadata.items()
        if k not in OWN_FIELDS and v not in (None, "") and not isinstance(v, (dict, list)) and v != run
    ][:3]
    if meta:
        t.append("  " + " ".join(meta), style="dim")
    t.append(f"  {format_label(recording)}", style="dim")
    producer = recording.session.producer
    if producer:
        t.append(f"  {line(producer)}", style="dim")
    t.append("\n")
    t.append(f"{summary.records:,} record{'' if summary.records == 1 else 's'}", style="bold")
    if reading is not None:
        t.append(f" so far  reading the file… {min(99, int(reading * 100))}%", style="bold #d7af00")
    elif verifying:
        t.append("  verifying digest and keys…", style="bold #d7af00")
    for kind in RECORD_KINDS:
        n = summary.counts.get(kind, 0)
        if n:
            t.append("  ")
            t.append(f"{kind} {n:,}", style=KIND_STYLES[kind])
    t.append("  ")
    t.append(f"errors {summary.errors:,}", style="bold #ff5f5f" if summary.errors else "dim")
    if summary.tokens_in or summary.tokens_out:
        t.append(f"  tokens in {summary.tokens_in:,} / out {summary.tokens_out:,}")
    elif (totals := run_usage_totals(recording)) is not None:
        # no call recorded usage; the source's run totals (as `metrics` and run info report them)
        t.append(f"  tokens {totals[0]:,} in / {totals[1]:,} out (run totals)")
    else:
        t.append("  tokens not recorded", style="dim")
    if summary.span_seconds:
        t.append(f"  wall {format_duration(summary.span_seconds)}")
    if summary.busy_seconds:
        t.append(f"  sum of call durations {format_duration(summary.busy_seconds)}", style="dim")
    # exactly two lines whatever the width: each is cut with an ellipsis
    t.no_wrap = True
    t.overflow = "ellipsis"
    return t


class RecordingHeader(Static):
    """Shows :func:`header_text` for the open recording."""

    DEFAULT_CSS = """
    RecordingHeader { height: auto; padding: 0 1; background: $panel; color: $foreground;
                      text-wrap: nowrap; text-overflow: ellipsis; }
    """


def format_label(recording: Recording) -> str:
    """The header's format: the version the file was written in, and whether the loader
    migrated it to the current version in memory (``format v1 (migrated in memory)``;
    ``the 0.8.1 layout`` for the legacy layout, SPEC "Format": migration), as ``info``
    says it."""
    was = recording.migrated_from
    if was is None:
        return f"format v{recording.format_version}"
    written = "the 0.8.1 layout" if was == 0 else f"v{was}"
    return f"format {written} (migrated in memory)"
