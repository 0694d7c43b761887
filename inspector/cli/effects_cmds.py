"""Commands that rank explanations of an outcome: ``sweep`` and ``effects``.

* ``sweep BASE [--executor M:F|recorded] [--candidates errors|tools|all]
  [--strategy resample|knockout|fixture] [--jobs N] [--ray-address A] [--repeat N] [--fixtures F]
  [--outcome M:F] [--no-store] [--json]`` — one branch per candidate call, replayed,
  ranked (:func:`core.effects.sweep.run_sweep`); ``--json`` prints the ranked effects best
  first, each naming its target call's ``seq``.
* ``effects [--base FILE] [--outcome M:F] [--refresh] [--json]`` — rank every replay of
  a base stored in the workspace (:func:`core.effects.causal.workspace_effects`), store and print;
  ``effects --replay ID`` prints the stored evidence of one replay (causal record, diffs).

Both take ``--workspace DIR`` (default ``./.chassis-inspector``). Rules: docs/effects.md.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer

from core.analysis.metrics import load_predicate
from core.effects.causal import workspace_effects
from core.effects.ranking import Effect
from core.effects.ray_support import RAY_INSTALL
from core.effects.sweep import CANDIDATE_SETS, STRATEGIES, run_sweep
from core.errors import AnalysisError
from core.record.io import recording_digest
from core.record.recording import Recording
from core.workspace import DEFAULT_DIR, Workspace

from .common import LiveModelOpt, TrustExecutorOpt, command_hint, echo_err, load_any, print_json
from .replay_cmds import open_to_read

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", help="Workspace folder (default ./.chassis-inspector).", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
OutcomeOpt = Annotated[
    str | None,
    typer.Option("--outcome", help="Outcome predicate module:function (default: metadata.outcome)."),
]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _print_effects(effects: list[Effect] | list[dict[str, Any]], limit: int | None = None) -> None:
    rows = [e.to_json() if isinstance(e, Effect) else e for e in effects]
    if not rows:
        typer.echo("no effects: no replay of this base")
        return
    typer.echo(
        f"{'rank':>4}  {'seq':>5}  {'score':>5}  {'effect':>6}  {'±':>4}  {'rel':>4}  {'direction':<9} {'replays':>7}  "
        "candidate"
    )
    for e in rows[:limit]:
        o = e["outcome"]
        seq = "-" if e["seq"] is None else str(e["seq"])
        typer.echo(
            f"{e['rank']:>4}  {seq:>5}  {_fmt(e['score']):>5}  {_fmt(o['effect']):>6}  {_fmt(o['spread']):>4}  "
            f"{_fmt(e['reliability']):>4}  {o['direction']:<9} {e['usable']:>3}/{e['replays']:<3}  "
            f"{e['description']}"
        )
    typer.echo("")
    best = next((e for e in rows if e["usable"] > 0 and e["outcome"]["effect"] is not None), None)
    if best is None:
        total = sum(e["replays"] for e in rows)
        typer.echo(
            f"no best candidate: none of the {total} replay(s) is usable as evidence, so no call "
            "can be ranked above another"
        )
        reasons = rows[0]["reliability_reasons"]
        for r in reasons:
            typer.echo(f"  - e.g. {rows[0]['description']}: {r}")
        if any("outcome unknown" in r for r in reasons):
            typer.echo(
                "  a replay's outcome is unknown when nothing evaluates it: the executor has no evaluator "
                "(a provider executor has none) — give an outcome predicate with --outcome module:function"
            )
        else:
            typer.echo(
                "  replays that cannot answer a call from the recording need a live executor "
                "(--executor module:function, provider:openai, or 'recorded' when metadata.executor names one)"
            )
        return
    typer.echo(f"best: {best['summary']}")
    for r in best["reliability_reasons"]:
        typer.echo(f"  - {r}")
    typer.echo(f"  evidence: replays {', '.join(best['evidence']['replay_ids'])}")


def _print_evidence(diffs: list[dict[str, Any]]) -> None:
    by_kind = {d["kind"]: d["body"] for d in diffs}
    c = by_kind.get("causal")
    if c is not None:
        typer.echo(f"{c['id']}  {c['label']}")
        for r in c["comparability"]["reasons"]:
            typer.echo(f"  - {r}")
        for name, ch in c["changes"].items():
            if isinstance(ch, dict):
                typer.echo(f"  {name:<14} {ch.get('base')} → {ch.get('replay')}")
            else:
                typer.echo(f"  {name:<14} {ch}")
    t = by_kind.get("trace")
    if t is not None:
        fd = t["first_divergence"]
        typer.echo(
            f"{t['id']}  ops same {t['counts']['same']}, changed {t['counts']['changed']}, removed "
            f"{t['counts']['removed']}, inserted {t['counts']['inserted']}; first divergence "
            + (f"{fd['dimension']} at base seq {fd['base_seq']}" if fd else "none")
        )
    o = by_kind.get("output")
    if o is not None:
        typer.echo(f"{o['id']}  final output {'changed (' + o['mode'] + ')' if o['changed'] else 'same'}")
    m = by_kind.get("metric")
    if m is not None:
        typer.echo(
            f"{m['id']}  steps {m['steps_delta']:+d}, tool_errors {m['tool_errors_delta']:+d}, "
            f"fixture uses {m['fixture_uses']}, drift uses {m['drift_uses']}"
        )


def register(app: typer.Typer) -> None:
    @app.command()
    def sweep(
        base: Annotated[Path, typer.Argument(help="The base recording (a failed run, typically).")],
        executor: Annotated[
            str | None,
            typer.Option(
                "--executor",
                help="Executor module:function, 'provider:openai' / 'provider:anthropic[@URL]' (live model calls, "
                "tools from the recording), or 'recorded' for the recording's metadata.executor.",
            ),
        ] = None,
        trust_executor: TrustExecutorOpt = False,
        live_model: LiveModelOpt = None,
        candidates: Annotated[
            str, typer.Option("--candidates", help=f"Calls to sweep: {', '.join(CANDIDATE_SETS)}.")
        ] = "all",
        strategy: Annotated[
            str, typer.Option("--strategy", help=f"What replaces each call's answer: {', '.join(STRATEGIES)}.")
        ] = "resample",
        jobs: Annotated[int, typer.Option("--jobs", help="Replays in parallel processes.")] = 1,
        ray_address: Annotated[
            str | None,
            typer.Option(
                "--ray-address",
                help="Replay the candidates as Ray tasks on this cluster (HOST:PORT, auto, ray://…) or 'local' to "
                f"start one here, instead of local processes. Needs the Ray extra: {RAY_INSTALL}",
            ),
        ] = None,
        repeat: Annotated[int, typer.Option("--repeat", help="Replays per candidate (mean and spread).")] = 1,
        fixtures: Annotated[
            Path | None,
            typer.Option("--fixtures", help="Fixture library (replay --fixtures format) for --strategy fixture."),
        ] = None,
        outcome: OutcomeOpt = None,
        no_store: Annotated[
            bool, typer.Option("--no-store", help="Run in memory; store nothing in the workspace.")
        ] = False,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Replay one branch per candidate call and rank which calls change the outcome."""
        if live_model is not None and executor is None:
            raise typer.BadParameter(
                "--live-model is the model live calls ask: use it with --executor", param_hint="--live-model"
            )
        rec = load_any(base)
        ws_dir = None if no_store else (workspace if workspace is not None else Path(DEFAULT_DIR))

        def progress(r: dict[str, Any]) -> None:
            if json:
                return
            if r["skipped"]:
                echo_err(f"seq {r['seq']}: skipped ({r['skipped']})")

        res = run_sweep(
            base,
            executor=executor,
            trust_executor=trust_executor,
            candidates=candidates,
            strategy=strategy,
            jobs=jobs,
            repeat=repeat,
            workspace=ws_dir,
            fixtures_path=fixtures,
            predicate=outcome,
            base=rec,
            on_result=progress,
            live_model=live_model,
            ray_address=ray_address,
        )
        if json:
            print_json(res.to_json())
            return
        typer.echo(f"base      {base} (outcome {res.outcome_base})")
        typer.echo(
            f"sweep     {res.strategy} of {len(res.calls)} call(s) ({res.candidates}), "
            f"executor {res.executor or 'none'}, {len(res.replays)} replay(s)"
            + (f", {len(res.skipped)} skipped" if res.skipped else "")
        )
        if ws_dir is not None:
            hint = command_hint(f"effects --base {shlex.quote(str(base))}", workspace)
            typer.echo(f"stored in {ws_dir} (see: {hint})")
        typer.echo("")
        if not res.calls:
            typer.echo(f"no candidate calls: the run has no call of the set '{res.candidates}'")
            return
        _print_effects(res.effects)

    @app.command()
    def effects(
        base: Annotated[Path | None, typer.Option("--base", help="Rank the replays of this base only.")] = None,
        outcome: OutcomeOpt = None,
        refresh: Annotated[bool, typer.Option("--refresh", help="Recompute every replay's comparison.")] = False,
        replay: Annotated[
            str | None,
            typer.Option(
                "--replay", help="Print the stored evidence (causal record and diffs) of this replay instead."
            ),
        ] = None,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Rank the effects of the replays stored in the workspace (per base), store them and print them."""
        predicate = load_predicate(outcome) if outcome else None
        if replay is not None or base is not None:
            opened: Workspace | None = Workspace.open(workspace, create=False)  # NoWorkspace: exit 2
        else:
            opened = open_to_read(workspace, json, {"bases": []})
        if opened is None:
            return
        with opened as ws:
            if replay is not None:
                ws.get_replay(replay)  # WorkspaceError for an unknown id
                diffs = ws.diffs(replay)
                if not diffs:
                    raise AnalysisError(
                        f"replay {replay} has no stored comparison yet "
                        f"(run: {command_hint('effects --base BASE', workspace)})"
                    )
                if json:
                    print_json({"replay_id": replay, "diffs": [d["body"] for d in diffs]})
                else:
                    _print_evidence(diffs)
                return
            if base is not None:
                rec = load_any(base)
                digest = recording_digest(rec)
                if not ws.count_replays(base_digest=digest):
                    raise AnalysisError(
                        f"{base}: no replay of this recording in {ws.path} "
                        f"(run: {command_hint(f'sweep {shlex.quote(str(base))} --executor MODULE:FUNCTION', workspace)}; "
                        "or --executor recorded --trust-executor if you trust the executor the recording names)"
                    )
                bases: list[tuple[str, str, Recording | None]] = [(str(base), digest, rec)]
            else:
                bases = [(r.path or r.digest, r.digest, None) for r in ws.list_recordings() if r.replays]
            docs: list[dict[str, Any]] = []
            for path, digest, base_rec in bases:
                ranked = workspace_effects(
                    ws, digest, predicate=predicate, predicate_spec=outcome, base=base_rec, refresh=refresh
                )
                docs.append(
                    {
                        "base": path,
                        "digest": digest,
                        "outcome_base": ranked[0].outcome_base if ranked else None,
                        "replays": ws.count_replays(base_digest=digest),
                        "effects": [e.to_json() for e in ranked],
                    }
                )
        if json:
            print_json(docs[0] if base is not None else {"bases": docs})
            return
        if not docs:
            typer.echo("no replays in the workspace")
            return
        for i, d in enumerate(docs):
            if i:
                typer.echo("")
            typer.echo(f"base      {d['base']} (outcome {d['outcome_base']}, {d['replays']} replay(s))")
            typer.echo("")
            _print_effects(d["effects"])
