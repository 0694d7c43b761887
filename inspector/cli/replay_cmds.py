"""Branch, replay, requirement and fixture commands.

* ``branch new BASE --at SEQ [--intervention FILE]... [--policy FILE] [--label L]
  [--parent ID] [-o BRANCH.json]`` — create and validate a branch (saved as JSON and in
  the workspace); ``branch list``.
* ``replay BASE --branch B [--fixtures F] [--executor M:F|recorded] [--dry-run]
  [--json]`` — run a branch; ``replay resume REPLAY_ID``; ``replay show REPLAY_ID``;
  ``replay events REPLAY_ID -o FILE``. Exit code 0 completed, 3 paused, 2 failed or bad
  input.
* ``requirements [--open] [--replay ID] [--approve ID] [--waive ID] [--answer ID TEXT]
  [--json]`` — ``--answer`` pins a person's answer on a ``user`` requirement (``--approve``
  pins the recorded one, ``--waive`` skips the turn).
* ``fixture add --tool T [--args-json ARGS | --any] --output FILE [--scope S]``,
  ``fixture attach REQ_ID FILE [--scope S]``, ``fixture list``.

Every command takes ``--workspace DIR`` (default ``./.chassis-inspector``). The replay
events of every run are also written to ``DIR/replays/<replay id>.json``
(:meth:`core.workspace.Workspace.write_events_file`), a recording any other command can
open. Branches are parsed and validated by :func:`core.replay.branch.resolve_branch`; these
commands only read options and print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from core.analysis.metrics import load_price_table
from core.analysis.outcome import compare_outcomes
from core.errors import FixtureError, InspectorError
from core.proxy.command import SIDE_EFFECTS_NOTE
from core.proxy.provider import provider_url
from core.record.canonical import args_hash
from core.record.nesting import dumps
from core.record.reader import USER_JSON_LIMIT, read_input
from core.record.recording import Recording
from core.record.userjson import loads_user_json
from core.replay.boundary import choose_executor
from core.replay.branch import BranchDraft, InterventionFile, load_policy, resolve_branch, save_branch
from core.replay.dry_run import estimate_live_cost
from core.replay.fixtures import Fixture, Requirement, load_output_file, parse_scope
from core.replay.replay_record import ReplayRecord
from core.replay.replays import dry_run, resume_replay, start_replay
from core.workspace import NoWorkspace, Workspace

from .common import TrustExecutorOpt, check_output, command_hint, echo_err, load_any, print_json

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option("--workspace", help="Workspace folder (default ./.chassis-inspector).", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


#: ``ctx.meta`` key: the (typed, implied) command words when a subcommand name was implied
IMPLICIT_COMMAND = "chassis_inspector.implicit_command"


class _ReplayGroup(TyperGroup):
    """``replay BASE ...`` runs a branch; ``replay resume|show|events ...`` are
    subcommands. Anything that is not a subcommand name is the BASE of ``replay run``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
            ctx.meta[IMPLICIT_COMMAND] = ("replay", "run")  # a usage error names what was typed
        return super().parse_args(ctx, args)


def _report_failure(record: ReplayRecord) -> None:
    """A failed replay exits 2: say why in one line on stderr (stdout keeps the record)."""
    if record.status == "failed":
        reason = f"{record.error.type}: {record.error.message}" if record.error else "no reason recorded"
        typer.echo(f"replay {record.id} failed: {' '.join(reason.split())}", err=True)


def _outcomes(base: Any, events: Any, record: ReplayRecord) -> dict[str, Any] | None:
    """The branch's outcome next to the base's (:func:`core.analysis.outcome.compare_outcomes`);
    ``base`` a recording or its path. ``None`` when there is nothing to say (a replay that
    paused or failed has no outcome yet) or the base cannot be read again."""
    if record.status != "completed" or events is None:
        return None
    if not isinstance(base, Recording):
        try:
            base = load_any(Path(base)) if base else None
        except (InspectorError, OSError):
            return None
        if base is None:
            return None
    return compare_outcomes(base, events)


def _print_record(
    record: ReplayRecord,
    events: Path | None,
    as_json: bool,
    workspace: Path | None = None,
    *,
    outcome: dict[str, Any] | None = None,
) -> None:
    if as_json:
        obj = record.to_json_obj()
        obj["events_file"] = str(events) if events else None
        if outcome is not None:
            obj["outcome"] = {
                "base": outcome["base"].to_json_obj(),
                "branch": outcome["branch"].to_json_obj(),
                "same_final_output": outcome["same_final_output"],
            }
        print_json(obj)
        return
    echo = typer.echo
    echo(f"replay          {record.id}")
    echo(f"branch          {record.branch_id}")
    echo(f"base            {record.base_path or ''} ({record.base_digest})")
    extra = record.stop_reason if record.stop_reason not in (None, record.status, "error") else None
    echo(f"status          {record.status_line}" + (f" ({extra})" if extra else ""))
    pol = record.policy
    echo(
        f"policy          model={pol.model} tool={pol.tool} drift={pol.drift} max_steps={pol.max_steps} "
        f"require_fixtures={str(pol.require_fixtures).lower()}"
        + (f" live_model={pol.live_model}" if pol.live_model else "")
        + (f" user_model={pol.user_model}" if pol.user_model else "")
    )
    echo(f"executor        {record.executor or 'none'}")
    echo(f"comparability   {record.comparability.level}")
    for reason in record.comparability.reasons:
        echo(f"  - {reason}")
    fd = record.first_divergence
    echo(
        "first divergence " + (f"base seq {fd.base_seq}, replay seq {fd.replay_seq}, {fd.dimension}" if fd else "none")
    )
    if outcome is not None:
        base_line, branch_line = outcome["lines"]
        echo(f"outcome         {base_line}")
        echo(f"                {branch_line}")
    echo(f"steps           {record.steps}")
    echo("answers         " + (", ".join(f"{k} {v}" for k, v in record.answers.items()) or "-"))
    if record.fixture_uses:
        echo("fixtures used   " + ", ".join(f"{u['fixture_id']}@{u['seq']}" for u in record.fixture_uses))
    if record.pause:
        echo(
            "paused on       "
            + ", ".join(record.pause.requirement_ids)
            + f"  (see: {command_hint('requirements --open', workspace)})"
        )
    if record.error:
        echo(f"error           {record.error.type}: {record.error.message}")
    echo(f"attempts        {len(record.attempts)}")
    if events:
        echo(f"events          {events}")


def _tokens(n: int) -> str:
    return f"~{n:,}"


def _cost(c: float | None, prices: Path | None) -> str:
    if prices is None:
        return "cost: give --prices"
    return "cost: no price for this model" if c is None else f"cost {c:.4f}"


def _print_live_cost(est: dict[str, Any], prices: Path | None) -> None:
    """The dry run's estimate of what goes live (:func:`core.replay.dry_run.estimate_live_cost`)."""
    echo = typer.echo
    t = est["total"]
    echo(
        f"live model calls (an estimate): {t['calls']}, {_tokens(t['input_tokens'])} input and "
        f"{_tokens(t['output_tokens'])} output tokens, {_cost(t['cost'], prices)}"
    )
    for c in est["calls"]:
        echo(
            f"  call {c['position']:>4}  base seq {c['base_seq']:>5}  {c['model']:<24} "
            f"{_tokens(c['input_tokens'])} in, {_tokens(c['output_tokens'])} out ({c['how']}), {_cost(c['cost'], prices)}"
        )
    rest = est["rest_of_base"]
    if est.get("user_model"):
        echo(f"note: {est['user_model']}")
    if rest["calls"]:
        echo(
            f"if the branch runs as long as the base: {rest['calls']} more model call(s), "
            f"{_tokens(rest['input_tokens'])} input and {_tokens(rest['output_tokens'])} output tokens, "
            f"{_cost(rest['cost'], prices)}"
        )


def _person_message_file(path: Path, req_id: str) -> str:
    """A person's message from a fixture file: a JSON string, or an object whose
    ``content`` (a tool result's shape), ``text`` or ``answer`` is one.

    Raises:
        FixtureError: unreadable, not JSON, or neither shape (names the file and why).
    """
    data = read_input(path, what="fixture file", limit=USER_JSON_LIMIT, error=FixtureError)
    doc = loads_user_json(data, str(path), FixtureError)
    if isinstance(doc, str):
        return doc
    if isinstance(doc, dict):
        for key in ("content", "text", "answer"):
            if isinstance(doc.get(key), str):
                return doc[key]
    raise FixtureError(
        f"{path}: requirement {req_id} is a person's turn, answered with their message: a JSON string, or "
        f'{{"content": "the message"}} — or answer it with \'requirements --answer {req_id} TEXT\''
    )


def _note_side_effects(executor: str | None, base: Any, policy_executor: str | None) -> None:
    """Say once, on stderr, that a command executor runs the agent's own tools again."""
    spec = executor
    if spec == "recorded":
        named = base.metadata.get("executor")
        spec = named if isinstance(named, str) else None
    if spec is None:
        spec = policy_executor
    if spec is not None and spec.startswith("cmd:"):
        typer.echo(f"chassis-inspector: note: {SIDE_EFFECTS_NOTE}", err=True)


def _print_requirement(req: Requirement, workspace: Path | None = None) -> None:
    if req.kind == "user":
        # a person's turn after the branch diverged (docs/replay.md, the user-turn rule)
        typer.echo(
            f"{req.id}  {req.status:<9} {req.kind:<8} replay {req.replay_id} step {req.step}  "
            f"a person's turn before model step {req.step}"
        )
        default = dumps(req.default).decode() if req.default is not None else "none"
        seq = f" (seq {req.nearest.seq})" if req.nearest is not None and req.nearest.seq >= 0 else ""
        typer.echo(f"    recorded answer{seq}, offered: {default if len(default) <= 80 else default[:79] + '…'}")
        if req.status == "satisfied" and req.answer is not None:
            typer.echo(f"    pinned answer: {dumps(req.answer).decode()}")
        elif req.status == "open":
            typer.echo(
                f"    answer with: {command_hint(f'requirements --answer {req.id} TEXT', workspace)} "
                f"(--approve {req.id}: the recorded answer; --waive {req.id}: skip the turn)"
            )
        return
    args = dumps(req.arguments).decode() if req.arguments is not None else ""
    if len(args) > 80:
        args = args[:79] + "…"
    typer.echo(f"{req.id}  {req.status:<9} {req.kind:<8} replay {req.replay_id} step {req.step}  {req.name} {args}")
    if req.mismatch == "exhausted":
        n_rec = req.recorded_answers or 0
        typer.echo(
            f"    recorded answers: {n_rec}, all used by earlier calls of the replay (exhausted): "
            "the call was recorded, but not this often"
        )
    if req.kind == "model" and req.reason.startswith("previous_response_id"):
        typer.echo(f"    {req.reason}")
    if req.nearest is not None:
        n = req.nearest
        if n.diff:
            changes = ", ".join(f"{d['path']} {d['op']}" for d in n.diff[:5])
            typer.echo(f"    nearest recorded call: seq {n.seq} {n.name}; differs at {changes}")
        else:
            typer.echo(f"    nearest recorded call: seq {n.seq} {n.name}; the same call")
    elif req.kind != "model":
        typer.echo("    nearest recorded call: none (the base never called this tool)")


def open_to_read(workspace: Path | None, json: bool, empty: Any) -> Workspace | None:
    """The workspace for a read-only list command, never creating one: ``None`` when there
    is none, after printing ``no workspace at PATH …`` (on stdout; on stderr with
    ``--json``, whose stdout gets ``empty``) — nothing stored is not an error (exit 0)."""
    try:
        return Workspace.open(workspace, create=False)
    except NoWorkspace as exc:
        if json:
            typer.echo(str(exc), err=True)
            print_json(empty)
        else:
            typer.echo(str(exc))
        return None


def register(app: typer.Typer) -> None:
    branch_app = typer.Typer(
        help="Create and list branches (checkpoint + interventions + policy).",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    replay_app = typer.Typer(
        cls=_ReplayGroup,
        no_args_is_help=True,
        rich_markup_mode=None,
        help="Replay a branch: 'replay BASE --branch B' or 'replay resume REPLAY_ID'.",
    )
    fixture_app = typer.Typer(
        help="Add, attach and list fixtures (canned tool or model outputs).",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    app.add_typer(branch_app, name="branch")
    app.add_typer(replay_app, name="replay")
    app.add_typer(fixture_app, name="fixture")

    # ------------------------------------------------------------------ branch

    @branch_app.command("new")
    def branch_new(
        base: Annotated[Path, typer.Argument(help="Base recording.")],
        at: Annotated[int, typer.Option("--at", help="Checkpoint: the seq of a base record.")],
        intervention: Annotated[
            list[Path] | None,
            typer.Option("--intervention", help="JSON file: one intervention or a list (repeatable; [] = none)."),
        ] = None,
        policy: Annotated[Path | None, typer.Option("--policy", help="Policy JSON file.")] = None,
        label: Annotated[str | None, typer.Option("--label", help="A label for the branch.")] = None,
        parent: Annotated[str | None, typer.Option("--parent", help="Parent branch id.")] = None,
        output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the branch JSON here.")] = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite OUTPUT if it exists.")] = False,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Create a branch of BASE at a checkpoint, validated against BASE."""
        if output is not None:
            check_output(output, force=force, inputs=(base, *(intervention or []), *((policy,) if policy else ())))
        rec = load_any(base)
        draft = BranchDraft(
            base_path=str(base),
            at=at,
            interventions=[InterventionFile.read(f) for f in intervention or []],
            policy=load_policy(policy) if policy else None,
            label=label,
            parent=parent,
        )
        # validated before the workspace is opened: a bad branch creates nothing
        br = resolve_branch(None, draft, rec)
        with Workspace.open(workspace) as ws:
            ws.add_branch(br, rec, str(base))
        if output is not None:
            save_branch(br, output)
        if json:
            print_json({**br.to_json_obj(), "file": str(output) if output else None})
            return
        typer.echo(
            f"branch {br.id} of {base} at seq {br.checkpoint}: {len(br.interventions)} intervention(s)"
            + (f", written to {output}" if output else "")
        )

    @branch_app.command("list")
    def branch_list(workspace: WorkspaceOpt = None, json: JsonOpt = False) -> None:
        """List the workspace's branches."""
        ws = open_to_read(workspace, json, [])
        if ws is None:
            return
        with ws:
            branches = ws.list_branches()
        if json:
            print_json([b.to_json_obj() for b in branches])
            return
        if not branches:
            typer.echo("no branches")
        for b in branches:
            typer.echo(
                f"{b.id}  at {b.checkpoint}  {len(b.interventions)} intervention(s)  "
                f"{b.label or ''}  parent {b.parent or '-'}  base {b.base.path}"
            )

    # ------------------------------------------------------------------ replay

    @replay_app.command("run", help="Run BRANCH over BASE (same as 'replay BASE --branch B').")
    def replay_run(
        base: Annotated[Path, typer.Argument(help="Base recording.")],
        branch: Annotated[str, typer.Option("--branch", help="Branch JSON file or branch id in the workspace.")],
        fixtures: Annotated[
            Path | None,
            typer.Option("--fixtures", help="Fixtures JSON file (entries without a scope apply to this replay)."),
        ] = None,
        executor: Annotated[
            str | None,
            typer.Option(
                "--executor",
                help="module:function of an executor, 'cmd:CMD ARGS…' (the agent's own command through the "
                "model-API proxy), 'provider:openai' / 'provider:anthropic[@URL]' (a live model for the calls the "
                "recording cannot answer), or 'recorded' (the base's metadata.executor).",
            ),
        ] = None,
        dry_run_: Annotated[
            bool,
            typer.Option("--dry-run", help="Predict which calls are recorded, need fixtures or go live; run nothing."),
        ] = False,
        prices: Annotated[
            Path | None,
            typer.Option(
                "--prices",
                help="With --dry-run: price table JSON {MODEL: {input, output}} per million tokens (as metrics "
                "--prices), to estimate the cost of the calls that would go live.",
            ),
        ] = None,
        trust_executor: TrustExecutorOpt = False,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Replay a branch of BASE. Exit 0 completed (4 completed but not comparable), 3 paused, 2 failed."""
        if prices is not None and not dry_run_:
            raise typer.BadParameter(
                "--prices estimates a dry run's cost: use it with --dry-run", param_hint="--prices"
            )
        table = load_price_table(prices) if prices is not None else None
        rec = load_any(base)
        if not dry_run_:  # consent first: a refused executor leaves no workspace behind
            choose_executor(executor, rec, trust_recorded=trust_executor)
        with Workspace.open(workspace) as ws:
            br = resolve_branch(ws, branch, rec)
            if dry_run_:
                # a dry run never imports an executor: the name is checked, not loaded
                chosen = choose_executor(executor, rec, trust_recorded=True, policy_executor=br.policy.executor)
                result = dry_run(
                    ws,
                    rec,
                    br,
                    executor_wired=chosen is not None,
                    observed_tools=chosen is not None and chosen.spec.startswith("cmd:"),
                    answers_only=chosen is not None and chosen.spec.startswith("provider:"),
                )
                if any(p["kind"] == "model" and p["answer"] == "live" for p in result["predictions"]):
                    result["live_cost"] = estimate_live_cost(rec, br, result, table)
                if chosen is not None:
                    result["executor"] = {"spec": chosen.spec, "origin": chosen.origin, "imported": False}
                    if chosen.spec.startswith("cmd:"):
                        result["executor"]["side_effects"] = SIDE_EFFECTS_NOTE
                if json:
                    print_json(result)
                else:
                    if result["status"] != "ok":
                        typer.echo(f"dry run: the replay would fail at once: {result['reason']}")
                    for p in result["predictions"]:
                        seq = "-" if p["base_seq"] is None else p["base_seq"]
                        typer.echo(
                            f"call {p['position']:>4}  base seq {seq:>5}  {p['kind']:<5} {p['name']:<24} "
                            f"{p['answer']:<12} {p['detail']}"
                        )
                    typer.echo("summary: " + (", ".join(f"{k} {v}" for k, v in result["counts"].items()) or "-"))
                    if "live_cost" in result:
                        _print_live_cost(result["live_cost"], prices)
                    if chosen is not None:
                        consent = (
                            "; the replay runs it only with --trust-executor"
                            if chosen.origin == "recording" and not trust_executor
                            else ""
                        )
                        where = "by the recording" if chosen.origin == "recording" else "on the command line"
                        if chosen.spec.startswith("provider:"):
                            typer.echo(f"executor: {chosen.spec} (built in), sending to {provider_url(chosen.spec)}")
                        else:
                            typer.echo(f"executor: {chosen.spec} (named {where}; not imported by a dry run{consent})")
                        if chosen.spec.startswith("cmd:"):
                            typer.echo(f"note: {SIDE_EFFECTS_NOTE}")
                raise typer.Exit(0 if result["status"] == "ok" else 2)
            _note_side_effects(executor, rec, br.policy.executor)
            if trust_executor and executor is None and br.policy.executor is None:
                echo_err(
                    "note: --trust-executor has nothing to trust: no --executor recorded and the branch policy "
                    "names no executor (the replay runs without one)"
                )
            record, out = start_replay(
                ws,
                base,
                br,
                executor=executor,
                trust_executor=trust_executor,
                fixtures_path=fixtures,
                base=rec,
                events_file=True,
            )
            events = ws.write_events_file(record.id)
        _print_record(record, events, json, workspace, outcome=_outcomes(rec, out.events, record))
        _report_failure(record)
        raise typer.Exit(record.exit_code)

    @replay_app.command("resume")
    def replay_resume(
        replay_id: Annotated[str, typer.Argument(help="The paused, failed or interrupted replay's id.")],
        executor: Annotated[
            str | None, typer.Option("--executor", help="Executor to use (default: the one the replay started with).")
        ] = None,
        trust_executor: TrustExecutorOpt = False,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Resume a paused replay after attaching fixtures (or approving), or an interrupted one. Exit 0/3/2."""
        with Workspace.open(workspace, create=False) as ws:
            stored = ws.get_replay(replay_id)
            if (executor or stored.executor or "").startswith("cmd:"):
                typer.echo(f"chassis-inspector: note: {SIDE_EFFECTS_NOTE}", err=True)
            record, out = resume_replay(
                ws, replay_id, executor=executor, trust_executor=trust_executor, events_file=True
            )
            events = ws.write_events_file(record.id)
        _print_record(record, events, json, workspace, outcome=_outcomes(record.base_path, out.events, record))
        _report_failure(record)
        raise typer.Exit(record.exit_code)

    @replay_app.command("show")
    def replay_show(
        replay_id: Annotated[str, typer.Argument(help="Replay id.")],
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Print a replay record."""
        with Workspace.open(workspace, create=False) as ws:
            record = ws.get_replay(replay_id)
            f = ws.events_file(replay_id)
        _print_record(record, f if f.exists() else None, json, workspace)

    @replay_app.command("events")
    def replay_events(
        replay_id: Annotated[str, typer.Argument(help="Replay id.")],
        output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the events recording.")],
        workspace: WorkspaceOpt = None,
        force: Annotated[bool, typer.Option("--force", help="Overwrite OUTPUT if it exists.")] = False,
    ) -> None:
        """Write a replay's events (a recording) to a file."""
        check_output(output, force=force)
        with Workspace.open(workspace, create=False) as ws:
            ws.export_events(replay_id, output)
        typer.echo(f"wrote {output}")

    @replay_app.command("list")
    def replay_list(workspace: WorkspaceOpt = None, json: JsonOpt = False) -> None:
        """List the workspace's replays."""
        ws = open_to_read(workspace, json, [])
        if ws is None:
            return
        with ws:
            records = ws.list_replays()
        if json:
            print_json([r.to_json_obj() for r in records])
            return
        if not records:
            typer.echo("no replays")
        for r in records:
            typer.echo(
                f"{r.id}  {r.status:<11} {r.comparability.level:<7} branch {r.branch_id}  {r.base_path or r.base_digest}"
            )

    # ------------------------------------------------------------------ requirements

    @app.command()
    def requirements(
        open_: Annotated[bool, typer.Option("--open", help="Only open requirements.")] = False,
        replay: Annotated[str | None, typer.Option("--replay", help="Only this replay's.")] = None,
        approve: Annotated[
            str | None,
            typer.Option(
                "--approve", help="Approve an approval requirement (a user requirement: pin its recorded answer)."
            ),
        ] = None,
        waive: Annotated[
            str | None, typer.Option("--waive", help="Waive a requirement (the call gets no answer).")
        ] = None,
        answer: Annotated[
            tuple[str, str] | None,
            typer.Option(
                "--answer",
                metavar="REQ_ID TEXT",
                help="Answer a person's turn (a user requirement) with TEXT; --approve REQ_ID pins the recorded answer.",
            ),
        ] = None,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """List requirements (open work a paused replay waits on), or approve/waive/answer one."""
        text: str | None = None
        if answer is not None:
            if approve is not None or waive is not None:
                raise FixtureError("give one of --answer, --approve or --waive")
            approve, text = answer
        if approve is not None and waive is not None:
            raise FixtureError("give one of --answer, --approve or --waive")
        for option, value in (("--answer" if text is not None else "--approve", approve), ("--waive", waive)):
            if value is not None and not value.strip():
                raise FixtureError(f"{option}: the requirement id is empty (ids are listed by: requirements --open)")
        decided = approve if approve is not None else waive
        if decided is not None:
            ws_or_none: Workspace | None = Workspace.open(workspace, create=False)
        else:
            ws_or_none = open_to_read(workspace, json, [])
        if ws_or_none is None:
            return
        with ws_or_none as ws:
            if decided is not None:
                req = ws.decide_requirement(decided, "satisfied" if approve is not None else "waived", answer=text)
                if json:
                    print_json(req.to_json_obj())
                else:
                    how = ""
                    if req.kind == "user" and req.answer is not None:
                        how = " with the recorded answer" if req.answer == req.default else " with an authored answer"
                    typer.echo(
                        f"{req.id}: {req.status}{how}; resume with: "
                        + command_hint(f"replay resume {req.replay_id}", workspace)
                    )
                return
            reqs = ws.requirements(open_only=open_, replay_id=replay)
        if json:
            print_json([r.to_json_obj() for r in reqs])
            return
        if not reqs:
            typer.echo("no open requirements" if open_ else "no requirements")
        for r in reqs:
            _print_requirement(r, workspace)

    # ------------------------------------------------------------------ fixtures

    @fixture_app.command("add")
    def fixture_add(
        tool: Annotated[str, typer.Option("--tool", help="Tool name.")],
        output: Annotated[Path, typer.Option("--output", help="JSON file with the tool result {content, error, ...}.")],
        args_json: Annotated[
            str | None, typer.Option("--args-json", help="Arguments the fixture matches exactly (JSON text, or @FILE).")
        ] = None,
        any_: Annotated[bool, typer.Option("--any", help="Match every call of the tool (tool-wide).")] = False,
        scope: Annotated[str, typer.Option("--scope", help="project | branch:ID | replay:ID")] = "project",
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Add a tool fixture: a canned result for calls of TOOL (exact arguments or any)."""
        if (args_json is None) == (not any_):
            raise FixtureError("give exactly one of --args-json ARGS or --any")
        arguments = None
        h = None
        if args_json is not None:
            text: str | bytes = args_json
            where = "--args-json"
            if args_json.startswith("@"):
                where = args_json[1:]
                text = read_input(where, what="--args-json file", limit=USER_JSON_LIMIT, error=FixtureError)
            arguments = loads_user_json(text, where, FixtureError)
            h = args_hash(arguments)
        out = load_output_file(output, "tool")
        fx = Fixture(
            scope=parse_scope(scope),
            kind="tool",
            name=tool,
            args_hash=h,
            arguments=arguments,
            output=out,
            source=str(output),
        )
        # a branch or replay scope names something stored: never create a workspace for it
        with Workspace.open(workspace, create=fx.scope == "project") as ws:
            ws.put_fixture(fx)
        if json:
            print_json(fx.to_json_obj())
            return
        typer.echo(f"fixture {fx.id}: {tool} " + (f"args {h}" if h else "(any arguments)") + f", scope {fx.scope}")

    @fixture_app.command("attach")
    def fixture_attach(
        req_id: Annotated[str, typer.Argument(help="Requirement id.")],
        file: Annotated[
            Path, typer.Argument(help="JSON: a tool result {content, error, ...} or a model response {message, ...}.")
        ],
        scope: Annotated[str | None, typer.Option("--scope", help="Default: branch:<the replay's branch>.")] = None,
        workspace: WorkspaceOpt = None,
        json: JsonOpt = False,
    ) -> None:
        """Answer a requirement with a fixture from FILE and mark it satisfied (a person's
        turn: FILE holds their message, pinned as the answer)."""
        with Workspace.open(workspace, create=False) as ws:
            req = ws.get_requirement(req_id)
            if req.kind == "user":
                text = _person_message_file(file, req_id)
                if scope is not None:
                    raise FixtureError(
                        f"requirement {req_id} is a person's turn: its answer is pinned, it has no scope"
                    )
                pinned = ws.decide_requirement(req_id, "satisfied", answer=text)
                if json:
                    print_json(pinned.to_json_obj())
                    return
                typer.echo(
                    f"answer pinned for {req_id} (a person's turn): {dumps(text).decode()[:80]}; resume with: "
                    + command_hint(f"replay resume {req.replay_id}", workspace)
                )
                return
            kind = "tool" if req.kind == "approval" else req.kind
            # approvals and a person's turns take no fixture: the workspace says what to do instead
            out = load_output_file(file, kind) if req.kind not in ("approval", "user") else None
            fx = ws.attach_fixture(req_id, out, source=str(file), scope=scope)
        if json:
            print_json(fx.to_json_obj())
            return
        typer.echo(
            f"fixture {fx.id} answers {req_id} (scope {fx.scope}); resume with: "
            + command_hint(f"replay resume {req.replay_id}", workspace)
        )

    @fixture_app.command("list")
    def fixture_list(workspace: WorkspaceOpt = None, json: JsonOpt = False) -> None:
        """List fixtures."""
        ws = open_to_read(workspace, json, [])
        if ws is None:
            return
        with ws:
            fixtures = ws.fixtures()
        if json:
            print_json([f.to_json_obj() for f in fixtures])
            return
        if not fixtures:
            typer.echo("no fixtures")
        for f in fixtures:
            typer.echo(f"{f.id}  {f.kind} {f.name}  {f.args_hash or 'any'}  scope {f.scope}  {f.source or ''}")
