"""Who&When roles as the dataset spells them (docs/importers.md, "Who&When").

Magentic-One logs name speakers in ``role`` (``Orchestrator (thought)``, ``Orchestrator
(-> NAME)``, ``Orchestrator (termination condition)``, ``WebSurfer``, ``FileSurfer``,
``ComputerTerminal``, ``Assistant``, ``human``); AutoGen/CaptainAgent logs put the agent in
``name`` (``Computer_terminal``, ``…_Expert``) under a chat role. Tool-like agents are tool
records, everyone else model records, a person an interrupt; a terminal's exit code other
than 0 is a tool error in both spellings; an annotated ``mistake_step`` outside the run is
warned and marks nothing (never "⚑ mistake seq 999"); ``timeline`` shows ``⚑`` as the app.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.analysis.marks import record_marks
from core.importers import import_file
from core.importers.who_and_when import speaker
from core.record.recording import InterruptRecord, ModelRecord, ToolRecord
from inspector.cli import main
from inspector.runinfo import marked_seqs

MAGENTIC = [
    {"role": "human", "content": "How many files are in the repo?"},
    {"role": "Orchestrator (thought)", "content": "Initial plan: look, then count."},
    {"role": "Orchestrator (-> WebSurfer)", "content": "Open the repository page."},
    {"role": "WebSurfer", "content": "I opened the page. It lists 3 files."},
    {"role": "Orchestrator (-> FileSurfer)", "content": "Open README.md."},
    {"role": "FileSurfer", "content": "Viewing README.md: it says there are 4 files."},
    {"role": "Orchestrator (-> Assistant)", "content": "Write a script that counts them."},
    {"role": "Assistant", "content": "```python\nimport os\nprint(len(os.listdir('.')))\n```"},
    {"role": "Orchestrator (-> ComputerTerminal)", "content": "Run the script."},
    {
        "role": "ComputerTerminal",
        "content": "The script ran, then exited with an error (POSIX exit code: 1)\nIts output was:\nTraceback: boom",
    },
    {"role": "Orchestrator (thought)", "content": "Next speaker ComputerTerminal"},
    {
        "role": "ComputerTerminal",
        "content": "The script ran but produced no output to console. The POSIX exit code was: 0. If you were "
        "expecting output, consider revising the script to ensure content is printed to stdout.",
    },
    {"role": "Orchestrator (termination condition)", "content": "No agent selected."},
]

CAPTAIN = [
    {"role": "assistant", "name": "YouTubeDownload_Expert", "content": "Let us download the video.\n```sh\nls\n```"},
    {"role": "user", "name": "Computer_terminal", "content": "exitcode: 0 (execution succeeded)\nCode output: a.mp4"},
    {"role": "user", "name": "VideoProcessing_Expert", "content": "Now count the birds.\n```python\n1/0\n```"},
    {
        "role": "user",
        "name": "Computer_terminal",
        "content": "exitcode: 1 (execution failed)\nCode output: ZeroDivisionError",
    },
    {"role": "assistant", "name": "ResultVerification_Expert", "content": "TERMINATE"},
]


def case(tmp_path: Path, history: list[dict[str, Any]], mistake_step: Any, name: str = "case.json") -> Path:
    doc = {
        "history": history,
        "question": "q",
        "ground_truth": "3",
        "is_corrected": False,
        "mistake_agent": "WebSurfer",
        "mistake_step": mistake_step,
        "mistake_reason": "counted the wrong list",
        "question_ID": name.split(".")[0],
        "level": 1,
    }
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_magentic_one_roles(tmp_path: Path) -> None:
    (run,) = import_file(case(tmp_path, MAGENTIC, 3), "who_and_when")
    recs = run.recording.records
    kinds = [(r.kind, r.tool if isinstance(r, ToolRecord) else getattr(r, "model", None)) for r in recs]
    assert kinds == [
        ("interrupt", None),
        ("model", "agent/Orchestrator"),
        ("model", "agent/Orchestrator"),
        ("tool", "WebSurfer"),
        ("model", "agent/Orchestrator"),
        ("tool", "FileSurfer"),
        ("model", "agent/Orchestrator"),
        ("model", "agent/Assistant"),
        ("model", "agent/Orchestrator"),
        ("tool", "ComputerTerminal"),
        ("model", "agent/Orchestrator"),
        ("tool", "ComputerTerminal"),
        ("model", "agent/Orchestrator"),
    ]
    assert isinstance(recs[0], InterruptRecord) and recs[0].value["type"] == "human"
    # an instruction addressed to the agent is the tool call's argument
    assert recs[3].arguments == {"instruction": "Open the repository page."}
    assert recs[5].arguments == {"instruction": "Open README.md."}
    assert recs[9].arguments == {"instruction": "Run the script."}
    # Magentic-One's exit codes: 1 is an error, 0 is not
    err = recs[9].result.error
    assert err is not None and err.type == "nonzero_exit" and "POSIX exit code: 1" in err.message
    assert recs[11].result.error is None
    assert run.recording.metadata["annotation"]["mistake_seq"] == 3
    assert set(run.recording.metadata["agents"]) == {
        "human",
        "Orchestrator",
        "WebSurfer",
        "FileSurfer",
        "Assistant",
        "ComputerTerminal",
    }


def test_captain_agent_experts_and_terminal(tmp_path: Path) -> None:
    (run,) = import_file(case(tmp_path, CAPTAIN, "0"), "who_and_when")
    recs = run.recording.records
    assert [r.kind for r in recs] == ["model", "tool", "model", "tool", "model"]
    assert [r.model for r in recs if isinstance(r, ModelRecord)] == [
        "agent/YouTubeDownload_Expert",
        "agent/VideoProcessing_Expert",
        "agent/ResultVerification_Expert",
    ]
    assert [r.tool for r in recs if isinstance(r, ToolRecord)] == ["Computer_terminal", "Computer_terminal"]
    # the terminal ran the code of the message before it
    assert recs[3].arguments["instruction"].startswith("Now count the birds.")
    assert recs[1].result.error is None
    assert recs[3].result.error is not None and recs[3].result.error.type == "nonzero_exit"


def test_a_mistake_step_outside_the_run_is_warned_and_marks_nothing(tmp_path: Path, capsys: Any) -> None:
    p = case(tmp_path, MAGENTIC, 999)
    (run,) = import_file(p, "who_and_when")
    ann = run.recording.metadata["annotation"]
    assert ann["mistake_step"] == 999 and "mistake_seq" not in ann
    assert any("999 is outside the history" in str(w) for w in run.warnings)
    assert record_marks(run.recording) == [] and marked_seqs(run.recording) == []
    assert main(["timeline", str(p)]) == 0
    out = capsys.readouterr().out
    assert "⚑" not in out and "999" not in out


def test_timeline_shows_the_mark_as_the_app_does(tmp_path: Path, capsys: Any) -> None:
    p = case(tmp_path, MAGENTIC, 3)
    (run,) = import_file(p, "who_and_when")
    assert [(m.seq, m.label) for m in marked_seqs(run.recording)] == [(3, "mistake")]
    assert main(["timeline", str(p)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.strip()[:1].isdigit()]
    marked = [line for line in rows if "⚑ mistake" in line]
    assert len(marked) == 1 and marked[0].split()[0] == "3"


def test_marks_of_other_runs_name_records_they_hold(tmp_path: Path) -> None:
    from core.record.recording import Recording

    (run,) = import_file(case(tmp_path, CAPTAIN, 2), "who_and_when")
    rec = run.recording
    assert [m.seq for m in record_marks(rec)] == [2]
    # a hand-written annotation with only mistake_step, and a fault, beyond the last record
    other = Recording(
        metadata={"annotation": {"mistake_step": 50}, "fault": {"seq": 77, "kind": "tool-error"}},
        records=rec.records,
    )
    assert record_marks(other) == []


SPELLINGS = {
    "tool": ["WebSurfer", "FileSurfer", "ComputerTerminal", "Computer_terminal", "computer terminal", "Web_Surfer"],
    "model": [
        "Orchestrator (thought)",
        "Orchestrator (-> WebSurfer)",
        "Orchestrator (termination condition)",
        "Assistant",
        "DataAnalysis_Expert",
        "Coder",
    ],
    "human": ["human", "Human"],
}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(sorted(SPELLINGS)), st.integers(0, 5), st.booleans(), st.integers(-1, 3)),
        min_size=1,
        max_size=8,
    )
)
def test_property_every_spelling_maps_to_its_kind(tmp_path: Path, steps: list[tuple[str, int, bool, int]]) -> None:
    """Any mix of the dataset's role spellings (in ``role``, or in ``name`` under a chat
    role): tool-like agents are tool records, a person an interrupt, the rest model
    records; a terminal's non-zero exit code is a tool error."""
    history = []
    want = []
    for kind, k, in_name, code in steps:
        spelling = SPELLINGS[kind][k % len(SPELLINGS[kind])]
        text = f"exitcode: {code} (execution)\nCode output: x" if code >= 0 else "some output"
        if in_name and kind != "human":
            history.append({"role": "user", "name": spelling, "content": text})
        else:
            history.append({"role": spelling, "content": text})
        want.append(("interrupt" if kind == "human" else kind, spelling, code))
    (run,) = import_file(case(tmp_path, history, 0), "who_and_when")
    for r, (kind, spelling, code) in zip(run.recording.records, want):
        assert r.kind == kind, (spelling, r.kind)
        if kind == "tool":
            terminal = "terminal" in spelling.lower()
            assert (r.result.error is not None) == (terminal and code > 0), (spelling, code)


@pytest.mark.parametrize(
    "role,name,want",
    [
        ("Orchestrator (-> ComputerTerminal)", None, ("model", "Orchestrator", "ComputerTerminal")),
        ("user", None, ("human", "user", None)),
        ("user", "Computer_terminal", ("tool", "Computer_terminal", None)),
        ("assistant", "YouTubeDownload_Expert", ("model", "YouTubeDownload_Expert", None)),
    ],
)
def test_speaker(role: str, name: str | None, want: tuple[str, str, str | None]) -> None:
    assert speaker(role, name) == want


def test_mark_reasons_are_text_never_a_tag_or_a_repr():
    from tests.builders import recording, tool

    bad = {"$invalid_unicode": "bad \ufffd", "surrogates": [[4, 0xD800]]}
    meta = {"annotation": {"mistake_step": 0, "mistake_agent": "A", "mistake_reason": bad}, "fault": {"seq": 0}}
    meta["fault"]["description"] = {"x": 1}
    marks = record_marks(recording(tool(0, "t"), metadata=meta))
    assert [(m.label, m.reason) for m in marks] == [("mistake", "A: bad \ufffd"), ("fault", '{"x":1}')]
