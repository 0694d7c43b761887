"""Audit: lineage of the final output."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.audit import KnockoutResult, KnockoutRunner, audit
from core.importers import import_file
from core.record.recording import Recording
from core.record.redaction import REDACTED
from tests.builders import ROOT, TESTS, model, msg, recording, tool

DATA = TESTS / "data" / "analysis"
REAL = TESTS / "data" / "real_traces"

SYS = msg("system", "answer questions")
USER = msg("user", "weather in Paris and a joke?")
ASK = msg("assistant", None, tool_calls=[("c1", "weather", {"city": "Paris"}), ("c2", "joke", {})])


def run_with_unused_tool_result() -> Recording:
    """The agent asks for weather and a joke, but its next request carries only the
    weather result (it dropped the joke): the joke tool's result is unused."""
    return recording(
        model(0, [SYS, USER], ASK),
        tool(1, "weather", {"city": "Paris"}, {"temp_c": 21.5, "sky": "sunny"}, call_id="c1"),
        tool(2, "joke", {}, "why did the chicken...", call_id="c2"),
        model(
            3,
            [SYS, USER, ASK, msg("tool", '{"sky":"sunny","temp_c":21.5}', tool_call_id="c1")],
            "It is sunny in Paris, 21.5 C.",
        ),
    )


def by_seq(report):
    return {c.seq: c for c in report.calls}


def test_unused_tool_result():
    rep = audit(run_with_unused_tool_result())
    assert rep.final_seq == 3 and rep.final_output == "It is sunny in Paris, 21.5 C."
    assert [c.seq for c in rep.contributed()] == [0, 1, 3]
    assert [c.seq for c in rep.unused()] == [2]
    calls = by_seq(rep)
    assert calls[2].reason == "its result never reached a later model request"
    assert calls[1].via == ["tool_call_id"] and calls[1].included_at == 3
    assert calls[1].quoted == ["21.5", "sunny"]
    assert calls[0].via == ["issued", "transcript"]
    assert calls[3].status == "final"
    edges = {(e.source, e.target, e.via) for e in rep.edges}
    assert edges == {(0, 1, "issued"), (0, 2, "issued"), (0, 3, "transcript"), (1, 3, "tool_call_id")}
    j = rep.to_json()
    assert j["unused"] == [2] and j["contributed"] == [0, 1, 3] and j["final_seq"] == 3


def test_result_read_only_by_a_discarded_call():
    """A side call (a summarizer) reads the joke, but its answer is thrown away."""
    rec = run_with_unused_tool_result()
    side = model(
        3,
        [msg("user", "summarize"), msg("tool", "why did the chicken...", tool_call_id="c2")],
        "a chicken joke",
        name="summarizer",
    )
    final = rec.records[3].model_copy(update={"seq": 4})
    rec = recording(*rec.records[:3], side, final)
    calls = by_seq(audit(rec))
    assert calls[2].status == "unused"
    assert calls[2].reason == "its result reached only calls outside the lineage (seq 3)"
    assert calls[3].status == "unused"
    assert calls[3].reason == "its response is not in any later request (not in the final transcript)"


def test_failed_call_and_calls_after_the_final_output():
    rec = recording(
        model(0, [USER], None, error="rate limited"),
        model(1, [USER], "done"),
        tool(2, "cleanup", {}, "ok", call_id="h1"),
    )
    # the last model call is the final one; a structured tool call after it (it has a
    # tool_call_id, so it is not a text action the response led to) came after the final
    # output
    calls = by_seq(audit(rec))
    assert calls[0].reason == "the call failed"
    assert calls[1].status == "final"
    assert calls[2].reason == "after the final output"


def test_no_final_output():
    rec = recording(model(0, [USER], ASK), tool(1, "weather", {"city": "Paris"}, "sunny", call_id="c1"))
    rep = audit(rec)
    assert rep.final_seq is None and rep.final_output is None and rep.contributed() == []
    assert {c.reason for c in rep.calls} == {"the run has no final output (it ended on an error or a tool request)"}


def test_tool_message_without_id_is_matched_by_content():
    rec = recording(
        model(0, [USER], msg("assistant", None, tool_calls=[("c1", "weather", {})])),
        tool(1, "weather", {}, "sunny"),
        model(2, [USER, msg("tool", "sunny")], "sunny it is"),
    )
    calls = by_seq(audit(rec))
    assert calls[1].status == "contributed" and calls[1].via == ["content"]


def test_redaction_on_and_off_the_lineage():
    rec = recording(
        model(0, [SYS, USER], ASK),
        tool(1, "weather", {"city": "Paris"}, {"api_key": REDACTED, "sky": "sunny"}, call_id="c1", redacted=True),
        tool(2, "joke", {"token": REDACTED}, "ha", call_id="c2"),
        model(3, [SYS, USER, ASK, msg("tool", "sunny", tool_call_id="c1")], "sunny"),
    )
    rep = audit(rec)
    assert [(r.seq, r.path, r.in_lineage) for r in rep.redactions] == [
        (1, "/result/content/api_key", True),
        (2, "/arguments/token", False),
    ]
    assert by_seq(rep)[1].redacted == ["/result/content/api_key"]


def test_sample_recording_lineage():
    rep = audit(Recording.load(DATA / "sample-agent-success.json"))
    assert rep.final_seq == 14
    assert [c.seq for c in rep.contributed()] == [3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14]
    assert rep.unused() == []
    refund = by_seq(rep)[11]
    assert refund.name == "issue_refund" and "R-A1001-BL-200" in refund.quoted


class RecordingRunner:
    """A test double of the knockout extension point: records what it was asked."""

    def __init__(self):
        self.asked = []

    def knockout(self, recording, seq):
        self.asked.append(seq)
        return KnockoutResult(seq, "failure" if seq == 1 else "success", seq == 1, f"replay-{seq}")


def test_knockout_extension_point():
    rec = run_with_unused_tool_result()
    assert "not run" in audit(rec).knockout
    assert all(c.knockout is None for c in audit(rec).calls)
    runner = RecordingRunner()
    assert isinstance(runner, KnockoutRunner)
    rep = audit(rec, knockout=runner)
    assert runner.asked == [0, 1, 2] and rep.knockout.startswith("run: each of the 3 call(s)")
    assert "the final output changed for 1" in rep.knockout and "outcome changed" not in rep.knockout
    assert by_seq(rep)[1].knockout.to_json() == {
        "seq": 1,
        "outcome": "failure",
        "final_output_changed": True,
        "detail": "replay-1",
        "outcome_changed": None,
    }


def test_text_mode_observation_is_linked_by_containment():
    """Text-mode agents (SWE-agent style) wrap a tool's output in a user message."""
    rec = recording(
        model(0, [USER], "run the tests"),
        tool(1, "bash", {"cmd": "pytest"}, "3 passed in 0.1s"),
        tool(2, "bash", {"cmd": "ls"}, "README.md setup.py"),
        model(
            3,
            [
                USER,
                msg("assistant", "run the tests"),
                msg("user", "3 passed in 0.1s\n(Open file: n/a)\n(Current directory: /repo)"),
            ],
            "all good",
        ),
    )
    calls = by_seq(audit(rec))
    assert calls[1].status == "contributed" and calls[1].via == ["content"]
    assert calls[2].status == "unused"


def test_identical_results_are_attributed_by_position():
    """Two tool calls with the same output (a rejected edit retried): the later request
    carries both observations; each goes to its own tool, the last one to the latest
    (the SWE-agent pydicom-1458 case: seq 13 and 15)."""
    rejected = "Your edit has a syntax error: unmatched ')'"
    rec = recording(
        model(0, [USER], "edit 1"),
        tool(1, "edit", {"n": 1}, rejected),
        model(2, [USER, msg("assistant", "edit 1"), msg("user", rejected)], "edit 2"),
        tool(3, "edit", {"n": 2}, rejected),
        model(
            4,
            [
                USER,
                msg("assistant", "edit 1"),
                msg("user", rejected),
                msg("assistant", "edit 2"),
                msg("user", rejected),
            ],
            "giving up",
        ),
    )
    rep = audit(rec)
    calls = by_seq(rep)
    assert calls[1].status == "contributed" and calls[1].included_at == 2
    assert calls[3].status == "contributed" and calls[3].included_at == 4
    assert (3, 4, "content") in {(e.source, e.target, e.via) for e in rep.edges}
    assert rep.unused() == []


def test_empty_result_cannot_be_told():
    rec = recording(
        model(0, [USER], "rm x"),
        tool(1, "bash", {"cmd": "rm x"}, ""),
        model(2, [USER, msg("assistant", "rm x"), msg("user", "ran with no output")], "done"),
    )
    rep = audit(rec)
    c = by_seq(rep)[1]
    assert c.status == "unknown" and c.reason == "cannot tell (empty result)"
    assert rep.unused() == [] and rep.to_json()["unknown"] == [1]


def test_swe_agent_sample_repeated_edit_and_empty_output():
    path = ROOT / "sample_recordings" / "swe-agent-pydicom-1458.json"
    rec = Recording.load(path)
    calls = by_seq(audit(rec))
    assert calls[13].status == calls[15].status == "contributed"
    assert calls[15].included_at == 16
    assert calls[21].status == "unknown" and "empty result" in calls[21].reason


def test_text_action_after_the_last_model_call_is_the_final_output():
    """A tool without tool_call_id after the last model call was led to by that call's
    plain-text response (SWE-agent `submit`): its result is the final output, the model
    call contributed (issued)."""
    rec = recording(
        model(0, [USER], "fix it"),
        tool(1, "edit", {"n": 1}, "edited file"),
        model(2, [USER, msg("assistant", "fix it"), msg("user", "edited file\n(Open file: a.py)")], "submit"),
        tool(3, "submit", {}, "diff --git a/a.py b/a.py"),
    )
    rep = audit(rec)
    calls = by_seq(rep)
    assert rep.final_seq == 3 and rep.final_output == "diff --git a/a.py b/a.py"
    assert calls[3].status == "final"
    assert calls[2].status == "contributed" and calls[2].via == ["issued"]
    assert calls[1].status == calls[0].status == "contributed"
    assert rep.unused() == []


def test_two_text_actions_after_the_last_model_call():
    rec = recording(
        model(0, [USER], "clean up then submit"),
        tool(1, "bash", {"cmd": "rm x"}, "removed"),
        tool(2, "submit", {}, "the patch"),
    )
    rep = audit(rec)
    calls = by_seq(rep)
    assert rep.final_seq == 2 and rep.final_output == "the patch"
    assert calls[1].status == "unknown" and "action of the last model response, seq 0" in calls[1].reason
    assert calls[0].status == "contributed"


def test_results_and_responses_are_matched_in_messages_of_any_role():
    """Multi-agent logs replay a tool-like agent's output as an assistant message and an
    expert's response as a user message, each under the agent's name."""
    rec = recording(
        model(0, [USER], "please search"),
        tool(1, "WebSurfer", {"instruction": "please search"}, "I typed 'dojo' into the search box."),
        model(
            2,
            [USER, msg("assistant", "please search"), msg("assistant", "I typed 'dojo' into the search box.")],
            "found a dojo",
        ),
        model(3, [USER, msg("user", "found a dojo")], "The answer is the dojo."),
    )
    rep = audit(rec)
    calls = by_seq(rep)
    assert calls[1].status == "contributed" and calls[1].via == ["content"] and calls[1].included_at == 2
    assert calls[2].status == "contributed" and calls[2].via == ["transcript"] and calls[2].included_at == 3
    assert rep.unused() == [] and rep.final_seq == 3


def _imported(*parts: str) -> Recording:
    (run,) = import_file(REAL.joinpath(*parts))
    return run.recording


def test_who_and_when_hand_crafted_1_websurfer_results_contribute():
    rec = _imported("who_and_when", "hand-crafted_1.json")
    rep = audit(rec)
    calls = by_seq(rep)
    # seq 13's request carries seq 12's result word for word (assistant, name WebSurfer)
    assert calls[12].status == "contributed" and calls[12].included_at == 13
    assert (12, 13, "content") in {(e.source, e.target, e.via) for e in rep.edges}
    assert all(c.status != "unused" for c in rep.calls if c.name == "WebSurfer")
    # the final output is WebSurfer's last report (seq 28), which the routing line
    # "Next speaker WebSurfer" (seq 27) led to -- not the routing line itself
    assert rep.final_seq == 28 and calls[27].via == ["issued"]
    assert "Next speaker" not in str(rep.final_output)
    assert rep.final_output == rec.records[28].result.content


def test_who_and_when_algorithm_generated_77_responses_contribute():
    rep = audit(_imported("who_and_when", "algorithm-generated_77.json"))
    calls = by_seq(rep)
    # seq 8's request holds seq 4's response as a user message under the expert's name
    assert calls[4].status == "contributed" and (4, 8, "transcript") in {(e.source, e.target, e.via) for e in rep.edges}
    assert calls[6].status == "contributed"
    assert rep.unused() == []


def test_swe_agent_submit_is_the_final_output():
    rep = audit(_imported("swe_agent", "pydicom__pydicom-1458.traj"))
    calls = by_seq(rep)
    assert calls[23].name == "submit" and calls[23].status == "final"
    assert rep.final_seq == 23 and str(rep.final_output).lstrip().startswith("diff --git")
    assert calls[22].status == "contributed" and "issued" in calls[22].via
    assert rep.unused() == []


# ------------------------------------------------------------ content tracing index

_ALPHABET = "ab xy\n"


@settings(max_examples=200, deadline=None)
@given(
    results=st.lists(st.text(_ALPHABET, min_size=8, max_size=14), min_size=66, max_size=100),
    noise=st.lists(st.text(_ALPHABET, max_size=20), min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 99), max_size=6),
    order=st.lists(st.integers(0, 99), max_size=12),
)
def test_contained_index_equals_the_plain_scan(results, noise, picks, order):
    """The index (prefix lookups past 64 results, incremental for a text seen before)
    finds exactly the earlier results a text contains, latest first, as testing every
    result in turn does — whatever the interleaving of adds and lookups. Messages are
    noise with whole results at the start, middle and end."""
    from core.analysis.audit import _ContainedIndex

    chosen = [results[i % len(results)] for i in picks] if results else []
    messages = [*noise, *(n + c for n, c in zip(noise, chosen)), *(c + n + c for n, c in zip(noise, chosen))]
    index = _ContainedIndex()
    added: list[tuple[int, str]] = []
    cuts = set(order)
    for seq, text in enumerate(results):
        index.add(seq, text)
        added.append((seq, text))
        if seq in cuts or seq == len(results) - 1:
            # texts seen before (incremental) and texts new at this point (scanned)
            for m in [*messages, *(f"{seq}|{m}" for m in messages)]:
                want = [s for s, t in reversed(added) if t in m]
                assert index.contained(m) == want


HOSTILE = "a|b\n# h <script>` x"


def test_markdown_escapes_a_hostile_tool_name():
    """A tool named with a table bar, a newline then a heading, an HTML tag and a
    backtick, once on the lineage and once unused: every line of the Markdown is still
    one list item or one five-cell table row, no heading or tag comes from the name,
    and the name reads back as written (newline as a space)."""
    from core.analysis.audit import audit_markdown

    ask = msg("assistant", None, tool_calls=[("c1", HOSTILE, {"city": "Paris"}), ("c2", HOSTILE + "\x1b[2J", {})])
    rec = recording(
        model(0, [SYS, USER], ask),
        tool(1, HOSTILE, {"city": "Paris"}, {"temp_c": 21.5, "sky": "sunny"}, call_id="c1"),
        tool(2, HOSTILE + "\x1b[2J", {}, "why did the chicken...", call_id="c2"),
        model(3, [SYS, USER, ask, msg("tool", '{"sky":"sunny","temp_c":21.5}', tool_call_id="c1")], "sunny"),
    )
    report = audit(rec)
    assert [c.seq for c in report.unused()] == [2]
    md = audit_markdown(report, "<b>run|1</b>.json")
    escaped = "a\\|b \\# h \\<script\\>\\` x"
    assert md.startswith("# Audit of \\<b\\>run\\|1\\</b\\>.json\n")
    assert "<script>" not in md and "<b>" not in md and "\x1b" not in md
    assert [ln for ln in md.splitlines() if ln.startswith("#")] == [
        "# Audit of \\<b\\>run\\|1\\</b\\>.json",
        "## Lineage",
        "## Not contributing",
        "## Knockout",
    ]
    (on_lineage,) = [ln for ln in md.splitlines() if "seq 1 ·" in ln]
    assert on_lineage == f"  - (tool\\_call\\_id) seq 1 · tool {escaped} · contributed · quoted: sunny"
    (row,) = [ln for ln in md.splitlines() if ln.startswith("| 2 |")]
    # five cells: the bar of the name is escaped, so it does not split a cell
    assert row.replace("\\|", "").count("|") == 6
    assert f"| tool | {escaped}⚠␛\\[2J | unused |" in row


def test_markdown_lists_each_knockout():
    """With a runner, the Markdown's knockout section has one row per call knocked out."""
    from core.analysis.audit import audit_markdown

    class Runner:
        def knockout(self, recording, seq):
            return KnockoutResult(seq, "failure", seq == 1, detail="rp-1", outcome_changed=seq == 1)

    md = audit_markdown(audit(run_with_unused_tool_result(), knockout=Runner()), "r.json")
    rows = [ln for ln in md.split("## Knockout", 1)[1].splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| seq | kind | name | outcome |")
    assert rows[1:] == [
        "| 0 | model | m | failure | no | no | rp-1 |",
        "| 1 | tool | weather | failure | yes | yes | rp-1 |",
        "| 2 | tool | joke | failure | no | no | rp-1 |",
    ]
