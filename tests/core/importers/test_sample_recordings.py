"""The sample recordings made from real traces are exactly what the importers produce
today (so sample_recordings/README.md's regeneration commands stay true), and each is a
valid recording with the failure the README describes."""

from __future__ import annotations

import pytest

from core.importers import import_file, select_run
from core.record.io import load_recording
from tests.builders import ROOT

REAL = ROOT / "tests" / "data" / "real_traces"
SAMPLES = ROOT / "sample_recordings"

# sample file → (source, run, first error (seq, type) or None, outcome)
MADE = {
    "swe-agent-pydicom-1458.json": ("swe_agent/pydicom__pydicom-1458.traj", None, (11, "edit_rejected"), None),
    "tau-bench-airline-task0-trial0.json": (
        "tau_bench/gpt-4o-airline.json",
        "task0-trial0",
        (14, "tool_error"),
        "failure",
    ),
    "tau-bench-airline-task5-trial0.json": ("tau_bench/gpt-4o-airline.json", "task5-trial0", None, "failure"),
    "tau-bench-airline-task5-trial1.json": ("tau_bench/gpt-4o-airline.json", "task5-trial1", None, "success"),
    "inspect-ai-browser.json": ("inspect_ai/2025-05-12T20-27-36-04-00_browser.json", None, None, "success"),
    "inspect-ai-human-input.json": (
        "inspect_ai/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json",
        None,
        None,
        "success",
    ),
    "inspect-ai-tool-error-types.json": ("inspect_ai/log_tool_call_error.json", None, (0, "parsing"), None),
    "inspect-ai-repeated-calls.json": ("inspect_ai/log_message_deduplication.eval", None, None, None),
    "mini-swe-agent-sqlfluff-2419.json": (
        "mini_swe_agent/sqlfluff__sqlfluff-2419.traj.json",
        None,
        (39, "nonzero_exit"),
        None,
    ),
    "claude-code-rewind-fork.json": ("claude_code/rewind_fork_opus46.jsonl", None, None, None),
    "codex-gpt55-context-setting.json": ("codex/codemie_gpt55_rollout.jsonl", None, (54, "exit_code_2"), None),
    "langfuse-weather-agent.json": ("langfuse/claude-agent-2025-12-22.trace.json", None, None, "failure"),
    "atif-terminus-context-summarization.json": (
        "atif/hello-world-context-summarization.trajectory.json",
        None,
        None,
        None,
    ),
    "openinference-smolagents-final-answer.json": ("openinference/any-agent_SMOLAGENTS_trace.json", None, None, None),
    "openhands-hung-command.json": ("openhands/basic_gui_mode.json", None, (11, "hung"), None),
    "openhands-wrong-initial-state.json": ("openhands/wrong_initial_state.json", None, None, None),
    "who-and-when-hand-crafted-1.json": ("who_and_when/hand-crafted_1.json", None, None, "failure"),
    "who-and-when-algorithm-generated-77.json": (
        "who_and_when/algorithm-generated_77.json",
        None,
        (7, "nonzero_exit"),
        "failure",
    ),
}


@pytest.mark.parametrize("name", sorted(MADE))
def test_sample_matches_a_fresh_import(name: str) -> None:
    source, run, first_error, outcome = MADE[name]
    saved = load_recording(SAMPLES / name, verify_keys=True)
    fresh = select_run(import_file(REAL / source), run, source=source).recording
    assert [r.to_json_obj() for r in saved.records] == [r.to_json_obj() for r in fresh.records]
    assert saved.metadata["source"]["sha256"] == fresh.metadata["source"]["sha256"]
    fe = saved.first_error()
    if first_error is None:
        assert fe is None
    else:
        err = fe.result.error if fe.kind == "tool" else fe.error
        assert (fe.seq, err.type) == first_error
    assert saved.metadata.get("outcome") == outcome


def test_every_sample_is_listed_in_the_readme() -> None:
    readme = (SAMPLES / "README.md").read_text()
    for p in SAMPLES.glob("*.json"):
        if not p.name.startswith("sample-agent-"):
            assert f"`{p.name}`" in readme, p.name
