"""The branch / replay / requirements / fixture commands, end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from core.examples.sample_agent import get_order
from core.record.recording import Recording
from inspector.cli import main
from tests.builders import ROOT

SAMPLES = ROOT / "sample_recordings"


@pytest.fixture()
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "sample-agent-fault-corrupted-result.json", tmp_path / "base.json")
    return tmp_path


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, obj) -> Path:
    path.write_bytes(orjson.dumps(obj))
    return path


def test_trust_executor_with_nothing_to_trust_says_so(cwd, capsys):
    write(cwd / "none.json", [])
    assert cli(capsys, "branch", "new", "base.json", "--at", 0, "--intervention", "none.json", "-o", "b.json")[0] == 0
    code, _, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--trust-executor")
    assert code == 0
    assert "--trust-executor has nothing to trust" in err and "runs without one" in err
    code, _, err = cli(capsys, "replay", "base.json", "--branch", "b.json")
    assert code == 0 and "nothing to trust" not in err


def test_empty_branch_replay_completes_with_documented_fields(cwd, capsys):
    write(cwd / "none.json", [])
    code, out, err = cli(capsys, "branch", "new", "base.json", "--at", 0, "--intervention", "none.json", "-o", "b.json")
    assert code == 0, err
    assert Path("b.json").exists()
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json")
    assert code == 0, err
    rec = orjson.loads(out)
    for field in (
        "status",
        "comparability",
        "first_divergence",
        "pause",
        "error",
        "attempts",
        "policy",
        "branch_id",
        "base_digest",
        "id",
    ):
        assert field in rec
    assert rec["status"] == "completed"
    assert rec["comparability"]["level"] == "full" and rec["comparability"]["reasons"] == []
    assert rec["first_divergence"] is None and rec["pause"] is None and rec["error"] is None
    # the events are a recording every other command can open
    events = Path(rec["events_file"])
    code, out, err = cli(capsys, "info", events, "--json")
    assert code == 0, err
    info = orjson.loads(out)
    assert info["metadata"]["replayed"] is True
    assert info["metadata"]["replay"]["branch"]["id"] == rec["branch_id"]
    code, _, err = cli(capsys, "validate", events)
    assert code == 0, err


def test_pause_attach_resume_complete(cwd, capsys):
    base = Recording.load("base.json")
    seq = base.metadata["fault"]["seq"]
    write(cwd / "fix.json", {"kind": "tool_result", "seq": seq, "result": {"content": get_order("A1001")}})
    write(cwd / "policy.json", {"model": "live"})
    code, out, err = cli(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        seq,
        "--intervention",
        "fix.json",
        "--policy",
        "policy.json",
        "--label",
        "honest order",
        "--json",
    )
    assert code == 0, err
    branch_id = orjson.loads(out)["id"]
    # a branch id in the workspace works as --branch too
    code, out, err = cli(
        capsys, "replay", "base.json", "--branch", branch_id, "--executor", "recorded", "--trust-executor", "--json"
    )
    assert code == 3, err
    rec = orjson.loads(out)
    assert rec["status"] == "paused"
    assert rec["first_divergence"] == {"base_seq": seq, "replay_seq": seq, "dimension": "tool result"}
    [req_id] = rec["pause"]["requirement_ids"]
    code, out, err = cli(capsys, "requirements", "--open", "--json")
    reqs = orjson.loads(out)
    assert [r["id"] for r in reqs] == [req_id]
    assert reqs[0]["kind"] == "tool" and reqs[0]["name"] == "check_refund_policy"
    code, out, err = cli(capsys, "requirements", "--open")
    assert req_id in out and "check_refund_policy" in out
    outputs = {
        "check_refund_policy": {
            "content": {
                "order_id": "A1001",
                "sku": "BL-200",
                "eligible": True,
                "max_refund": 89.99,
                "rule": "damaged delivered items are refunded in full",
            }
        },
        "issue_refund": {
            "content": {"refund_id": "R-1", "order_id": "A1001", "sku": "BL-200", "amount": 89.99, "status": "issued"}
        },
        "send_message": {"content": {"delivered": True, "customer_id": "C-1001"}},
    }
    status = "paused"
    rounds = 0
    while status == "paused":
        code, out, _ = cli(capsys, "requirements", "--open", "--json")
        [req] = orjson.loads(out)
        write(cwd / "out.json", outputs[req["name"]])
        code, out, err = cli(capsys, "fixture", "attach", req["id"], "out.json")
        assert code == 0, err
        assert "replay resume" in out
        code, out, err = cli(capsys, "replay", "resume", rec["id"], "--json")
        status = orjson.loads(out)["status"]
        assert code == {"paused": 3, "completed": 0}[status], err
        rounds += 1
        assert rounds < 5
    final = orjson.loads(out)
    assert final["status"] == "completed" and len(final["attempts"]) == rounds + 1
    events = Recording.load(final["events_file"])
    assert events.metadata["outcome"] == "success"
    code, out, _ = cli(capsys, "requirements", "--open")
    assert "no open requirements" in out
    code, out, _ = cli(capsys, "replay", "show", rec["id"])
    assert "completed" in out and "comparability" in out
    code, out, _ = cli(capsys, "replay", "list")
    assert rec["id"] in out


def test_live_policy_without_executor_fails_with_exit_2(cwd, capsys):
    write(cwd / "none.json", [])
    write(cwd / "policy.json", {"tool": "live"})
    cli(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        0,
        "--intervention",
        "none.json",
        "--policy",
        "policy.json",
        "-o",
        "b.json",
    )
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json")
    assert code == 2
    rec = orjson.loads(out)
    assert rec["status"] == "failed" and rec["error"]["type"] == "NoExecutor"
    code, out, _ = cli(capsys, "replay", "base.json", "--branch", "b.json")
    assert code == 2 and "NoExecutor" in out


def test_dry_run(cwd, capsys):
    base = Recording.load("base.json")
    seq = base.metadata["fault"]["seq"]
    write(cwd / "fix.json", {"kind": "tool_result", "seq": seq, "result": {"content": {}}})
    cli(capsys, "branch", "new", "base.json", "--at", seq, "--intervention", "fix.json", "-o", "b.json")
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--dry-run", "--json")
    assert code == 0, err
    pred = orjson.loads(out)
    answers = {p["base_seq"]: p["answer"] for p in pred["predictions"]}
    assert answers[seq] == "intervention" and answers[seq + 1] == "requirement"
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--dry-run")
    assert "intervention" in out and "summary:" in out
    code, out, _ = cli(capsys, "replay", "list", "--json")
    assert orjson.loads(out) == []  # a dry run runs nothing


def test_fixture_add_and_list(cwd, capsys):
    write(cwd / "out.json", {"content": {"eligible": True}})
    code, out, err = cli(
        capsys,
        "fixture",
        "add",
        "--tool",
        "check_refund_policy",
        "--args-json",
        '{"order_id": "A1001"}',
        "--output",
        "out.json",
        "--json",
    )
    assert code == 0, err
    fx = orjson.loads(out)
    assert fx["args_hash"].startswith("sha256:") and fx["scope"] == "project"
    code, out, err = cli(capsys, "branch", "new", "base.json", "--at", 0, "--json")
    assert code == 0, err
    branch_id = orjson.loads(out)["id"]
    code, out, err = cli(
        capsys, "fixture", "add", "--tool", "lookup", "--any", "--output", "out.json", "--scope", f"branch:{branch_id}"
    )
    assert code == 0 and "any arguments" in out
    code, out, _ = cli(capsys, "fixture", "list")
    assert "check_refund_policy" in out and f"branch:{branch_id}" in out


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("branch:br-nothere", "scope 'branch:br-nothere': no branch 'br-nothere' in workspace"),
        ("replay:rp-nothere", "scope 'replay:rp-nothere': no replay 'rp-nothere' in workspace"),
        ("replay:../../x", "scope 'replay:../../x': '../../x' is not a replay id"),
        ("branch:", "scope 'branch:' must be 'project', 'branch:ID' or 'replay:ID'"),
    ],
)
def test_fixture_scope_must_name_something_stored(cwd, capsys, scope, expected):
    """A fixture scoped to a branch or replay that does not exist would never apply:
    ``fixture add --scope``, ``--fixtures`` entries and attach refuse it, storing nothing."""
    write(cwd / "out.json", {"content": "ok"})
    code, _, err = cli(capsys, "fixture", "add", "--tool", "lookup", "--any", "--output", "out.json")
    assert code == 0, err  # the workspace exists, with one project fixture
    code, out, err = cli(
        capsys, "fixture", "add", "--tool", "lookup", "--any", "--output", "out.json", "--scope", scope
    )
    assert code == 2 and expected in err and "Traceback" not in err
    write(cwd / "b.json", {"checkpoint": 0, "interventions": []})
    code, _, err = cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json", "--force")
    assert code == 0, err
    write(cwd / "fx.json", [{"tool": "lookup", "any": True, "output": {"content": "x"}, "scope": scope}])
    code, _, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--fixtures", "fx.json")
    assert code == 2 and expected in err
    code, out, _ = cli(capsys, "replay", "list", "--json")
    assert orjson.loads(out) == []  # nothing stored
    code, out, _ = cli(capsys, "fixture", "list", "--json")
    assert len(orjson.loads(out)) == 1


def test_fixture_add_for_a_branch_never_creates_a_workspace(cwd, capsys):
    write(cwd / "out.json", {"content": "ok"})
    code, _, err = cli(
        capsys, "fixture", "add", "--tool", "t", "--any", "--output", "out.json", "--scope", "branch:br-1"
    )
    assert code == 2 and "no workspace" in err
    assert not (cwd / ".chassis-inspector").exists()


def test_fixtures_file_is_a_list(cwd, capsys):
    write(cwd / "fx.json", {"tool": "lookup", "any": True, "output": {"content": "x"}})
    code, _, err = cli(capsys, "branch", "new", "base.json", "--at", 0, "-o", "b.json")
    assert code == 0, err
    code, _, err = cli(capsys, "replay", "base.json", "--branch", "b.json", "--fixtures", "fx.json")
    assert code == 2
    assert "fx.json: a fixtures file is a JSON list of fixture entries, not an object" in err
    assert "[{...}]" in err


@pytest.mark.parametrize("option", ["--approve", "--waive"])
@pytest.mark.parametrize("value", ["", "  "])
def test_empty_requirement_id_is_an_error(cwd, capsys, option, value):
    code, out, err = cli(capsys, "requirements", option, value)
    assert code == 2 and "the requirement id is empty" in err and out == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["replay", "nope.json", "--branch", "b.json"], "nope.json"),
        (["replay", "base.json", "--branch", "missing.json"], "missing.json: no such branch file"),
        (["replay", "base.json", "--branch", "br-unknown"], "no branch 'br-unknown'"),
        (["replay", "resume", "rp-unknown"], "no replay 'rp-unknown'"),
        (["branch", "new", "base.json", "--at", "999"], "checkpoint 999 is not the seq"),
        (
            ["branch", "new", "base.json", "--at", "0", "--intervention", "bad.json"],
            "bad.json: intervention 0 at /: unknown intervention kind 'oops'",
        ),
        (
            ["branch", "new", "base.json", "--at", "6", "--intervention", "late.json"],
            "late.json: intervention 0 (tool_result at seq 4) against base.json: seq 4 is before the checkpoint 6",
        ),
        (["branch", "new", "base.json", "--at", "0", "--parent", "br-x"], "no branch 'br-x'"),
        (["fixture", "attach", "req-nope", "out.json"], "no requirement 'req-nope'"),
        (["fixture", "add", "--tool", "t", "--output", "out.json"], "give exactly one of --args-json ARGS or --any"),
        (
            ["fixture", "add", "--tool", "t", "--any", "--args-json", "{}", "--output", "out.json"],
            "give exactly one of",
        ),
        (["fixture", "add", "--tool", "t", "--args-json", "{", "--output", "out.json"], "malformed JSON"),
        (["fixture", "add", "--tool", "t", "--any", "--output", "badout.json"], "badout.json: a tool fixture output"),
        (
            ["fixture", "add", "--tool", "t", "--any", "--output", "out.json", "--scope", "galaxy"],
            "scope 'galaxy' must be",
        ),
        (["replay", "base.json", "--branch", "b.json", "--executor", "nomodule_xyz:f"], "cannot import"),
        (["replay", "base.json", "--branch", "b.json", "--fixtures", "badfx.json"], "badfx.json: fixture 0"),
        (["requirements", "--approve", "req-nope"], "no requirement 'req-nope'"),
    ],
)
def test_bad_input_is_one_line_exit_2(cwd, capsys, args, expected):
    write(cwd / "bad.json", {"kind": "oops"})
    write(cwd / "late.json", {"kind": "tool_result", "seq": 4, "result": {}})
    write(cwd / "out.json", {"content": 1})
    write(cwd / "badout.json", {"stuff": 1})
    write(cwd / "badfx.json", [{"tool": "x", "output": {"content": 1}}])
    write(cwd / "none.json", [])
    cli(capsys, "branch", "new", "base.json", "--at", 0, "--intervention", "none.json", "-o", "b.json")
    code, _, err = cli(capsys, *args)
    assert code == 2
    assert expected in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_replay_help_lists_resume(capsys):
    code, out, _ = cli(capsys, "replay", "--help")
    assert code == 0 and "resume" in out


def test_fixtures_file_answers_new_calls_for_this_replay_only(cwd, capsys):
    base = Recording.load("base.json")
    seq = base.metadata["fault"]["seq"]
    write(cwd / "fix.json", {"kind": "tool_result", "seq": seq, "result": {"content": get_order("A1001")}})
    write(cwd / "policy.json", {"model": "live"})
    write(
        cwd / "fixtures.json",
        [
            {
                "tool": "check_refund_policy",
                "any": True,
                "output": {"content": {"eligible": True, "max_refund": 89.99, "rule": "damaged"}},
            },
            {
                "tool": "issue_refund",
                "any": True,
                "output": {
                    "content": {
                        "refund_id": "R-9",
                        "order_id": "A1001",
                        "sku": "BL-200",
                        "amount": 89.99,
                        "status": "issued",
                    }
                },
            },
            {"tool": "send_message", "any": True, "output": {"content": {"delivered": True}}},
        ],
    )
    cli(
        capsys,
        "branch",
        "new",
        "base.json",
        "--at",
        seq,
        "--intervention",
        "fix.json",
        "--policy",
        "policy.json",
        "-o",
        "b.json",
    )
    code, out, err = cli(
        capsys,
        "replay",
        "base.json",
        "--branch",
        "b.json",
        "--executor",
        "recorded",
        "--trust-executor",
        "--fixtures",
        "fixtures.json",
        "--json",
    )
    assert code == 0, err
    rec = orjson.loads(out)
    assert rec["answers"]["fixture"] == 3 and rec["comparability"]["level"] == "partial"
    assert Recording.load(rec["events_file"]).metadata["outcome"] == "success"
    code, out, _ = cli(capsys, "fixture", "list", "--json")
    assert {f["scope"] for f in orjson.loads(out)} == {f"replay:{rec['id']}"}
    # a second replay of the same branch without the file pauses: those fixtures were replay-scoped
    code, out, _ = cli(
        capsys, "replay", "base.json", "--branch", "b.json", "--executor", "recorded", "--trust-executor", "--json"
    )
    assert code == 3 and orjson.loads(out)["status"] == "paused"


def test_approval_requirement_flow(cwd, capsys):
    shutil.copy(SAMPLES / "sample-agent-success.json", cwd / "ok.json")
    base = Recording.load("ok.json")
    refund = next(r.seq for r in base.records if r.kind == "tool" and r.tool == "issue_refund")
    write(
        cwd / "gate.json",
        {
            "kind": "tool_policy",
            "tool": "issue_refund",
            "action": "require_approval",
            "reason": "refunds need a second pair of eyes",
        },
    )
    cli(capsys, "branch", "new", "ok.json", "--at", refund, "--intervention", "gate.json", "-o", "g.json")
    code, out, err = cli(capsys, "replay", "ok.json", "--branch", "g.json", "--json")
    assert code == 3, err
    rec = orjson.loads(out)
    [req_id] = rec["pause"]["requirement_ids"]
    code, out, _ = cli(capsys, "requirements", "--open", "--json")
    [req] = orjson.loads(out)
    assert req["kind"] == "approval" and req["reason"] == "refunds need a second pair of eyes"
    write(cwd / "out.json", {"content": 1})
    code, _, err = cli(capsys, "fixture", "attach", req_id, "out.json")
    assert code == 2 and "asks for an approval" in err
    code, out, err = cli(capsys, "requirements", "--approve", req_id)
    assert code == 0 and "satisfied" in out
    code, out, err = cli(capsys, "replay", "resume", rec["id"], "--json")
    assert code == 0, err
    done = orjson.loads(out)
    assert done["status"] == "completed" and done["comparability"]["level"] == "full"
    assert done["first_divergence"] is None  # approved: the run is the base's


@pytest.mark.parametrize(
    "args", [["replay", "list"], ["branch", "list"], ["fixture", "list"], ["requirements"], ["effects"]]
)
def test_read_commands_do_not_create_a_workspace(cwd, capsys, args):
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    assert out.startswith("no workspace at .chassis-inspector (")
    assert not (cwd / ".chassis-inspector").exists()
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0 and orjson.loads(out) in ([], {"bases": []}) and "no workspace at" in err
    assert not (cwd / ".chassis-inspector").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "show", "rp-x"],
        ["replay", "resume", "rp-x"],
        ["replay", "events", "rp-x", "-o", "e.json"],
        ["effects", "--replay", "rp-x"],
        ["requirements", "--approve", "req-x"],
    ],
)
def test_commands_needing_a_stored_id_fail_without_a_workspace(cwd, capsys, args):
    code, _, err = cli(capsys, *args)
    assert code == 2 and err.startswith("chassis-inspector: no workspace at .chassis-inspector (")
    assert err.count("\n") == 1
    assert not (cwd / ".chassis-inspector").exists()


def test_empty_workspace_lists_say_so(cwd, capsys):
    from core.workspace import Workspace

    Workspace.open(cwd / ".chassis-inspector").close()
    for args, says in (
        (["replay", "list"], "no replays"),
        (["branch", "list"], "no branches"),
        (["fixture", "list"], "no fixtures"),
        (["requirements"], "no requirements"),
    ):
        code, out, _ = cli(capsys, *args)
        assert code == 0 and out.strip() == says


def test_completed_but_not_comparable_exits_4_and_says_so(cwd, capsys):
    # the model finishes at once, so the later tool-result intervention is never applied:
    # the replay completes, but nothing in it can be compared with the base
    write(
        cwd / "early.json",
        [
            {
                "kind": "model_response",
                "seq": 3,
                "response": {"message": {"role": "assistant", "content": "done early"}, "finish_reason": "stop"},
            },
            {"kind": "tool_result", "seq": 6, "result": {"content": "never used"}},
        ],
    )
    code, out, err = cli(
        capsys, "branch", "new", "base.json", "--at", 3, "--intervention", "early.json", "-o", "b.json"
    )
    assert code == 0, err
    code, out, err = cli(capsys, "replay", "base.json", "--branch", "b.json")
    assert code == 4, (out, err)
    status = next(line for line in out.splitlines() if line.startswith("status "))
    assert status.split(None, 1)[1].startswith("completed — not comparable: ")
    assert "intervention 1" in status and "never applied" in status
    code, out, _ = cli(capsys, "replay", "base.json", "--branch", "b.json", "--json")
    assert code == 4
    obj = orjson.loads(out)
    assert obj["status"] == "completed" and obj["comparability"]["level"] == "none"


def test_comparable_completed_replay_still_exits_0(cwd, capsys):
    write(cwd / "none.json", [])
    cli(capsys, "branch", "new", "base.json", "--at", 3, "--intervention", "none.json", "-o", "b.json")
    code, out, _ = cli(capsys, "replay", "base.json", "--branch", "b.json")
    assert code == 0
    assert "status          completed (final)" in out


def test_hints_name_the_workspace_the_user_gave(cwd, capsys):
    """Every command the output suggests works as printed: with ``--workspace W`` when the
    user gave one (a path with a space is quoted for the shell)."""
    base = Recording.load("base.json")
    seq = base.metadata["fault"]["seq"]
    write(cwd / "fix.json", {"kind": "tool_result", "seq": seq, "result": {"content": get_order("A1001")}})
    write(cwd / "policy.json", {"model": "live"})
    ws = "my ws"
    code, out, err = cli(
        capsys, "branch", "new", "base.json", "--at", seq, "--intervention", "fix.json", "--policy", "policy.json",
        "--workspace", ws, "--json",
    )  # fmt: skip
    assert code == 0, err
    branch_id = orjson.loads(out)["id"]
    code, out, err = cli(
        capsys,
        "replay",
        "base.json",
        "--branch",
        branch_id,
        "--executor",
        "recorded",
        "--trust-executor",
        "--workspace",
        ws,
    )
    assert code == 3, err
    assert "(see: chassis-inspector requirements --open --workspace 'my ws')" in out
    code, out, err = cli(capsys, "requirements", "--open", "--workspace", ws, "--json")
    [req] = orjson.loads(out)
    write(cwd / "out.json", {"content": {"eligible": True}})
    code, out, err = cli(capsys, "fixture", "attach", req["id"], "out.json", "--workspace", ws)
    assert code == 0, err
    assert f"resume with: chassis-inspector replay resume {req['replay_id']} --workspace 'my ws'" in out
    # without --workspace: the default folder, and the hint has no option
    code, out, err = cli(
        capsys, "branch", "new", "base.json", "--at", seq, "--intervention", "fix.json", "--policy", "policy.json",
        "-o", "b.json",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = cli(
        capsys, "replay", "base.json", "--branch", "b.json", "--executor", "recorded", "--trust-executor"
    )
    assert code == 3 and "(see: chassis-inspector requirements --open)" in out


def test_usage_errors_name_the_command_as_typed(cwd, capsys):
    code, _, err = cli(capsys, "replay", "base.json")
    assert code == 2
    assert err.startswith("chassis-inspector replay: missing option '--branch'")
    assert "'chassis-inspector replay BASE' is 'replay run BASE'" in err
    code, _, err = cli(capsys, "replay", "run", "base.json")
    assert err.startswith("chassis-inspector replay run: missing option '--branch'")
    code, _, err = cli(capsys, "base.json", "--bogus")
    assert err.startswith("chassis-inspector: no such option: --bogus")
    assert "(see 'chassis-inspector open --help': 'chassis-inspector FILE' is 'open FILE')" in err
    code, _, err = cli(capsys, "base.json", "--run")  # an option's missing value: no command context yet
    assert err.startswith("chassis-inspector: option '--run' requires an argument (see 'chassis-inspector open --help'")
    code, _, err = cli(capsys, "info", "base.json", "--json", "--bogus")
    assert err.startswith("chassis-inspector info: no such option: --bogus (see 'chassis-inspector info --help')")
    code, _, err = cli(capsys, "requirements", "--answer", "r1", "T", "--approve", "")
    assert code == 2 and "give one of --answer, --approve or --waive" in err
