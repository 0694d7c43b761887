"""Robustness of the importers (SPEC "Recording format": bad input gets a clear error) and of detection: truncated sources,
arguments that are not objects, empty or rewritten tool-call ids, values that cannot be
canonicalized, non-standard JSON values, redaction, unknown and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import FormatError, SourceImportError
from core.importers import NATIVE, TruncatedSourceError, detect, import_file, open_any, select_run
from core.importers._source import salvage_json
from core.record.io import load_recording
from core.record.jsonvalues import decode_value
from core.record.recording import ModelRecord, Recording, ToolRecord
from core.record.redaction import marker
from tests.builders import TESTS

REAL = TESTS / "data" / "real_traces"
EVAL = REAL / "inspect_ai" / "log_message_deduplication.eval"
TAU = REAL / "tau_bench" / "gpt-4o-airline.json"


def tools(rec) -> list[ToolRecord]:
    return [r for r in rec.records if isinstance(r, ToolRecord)]


def write(tmp_path: Path, name: str, doc) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


def tau_run(traj: list[dict], task_id: int = 7, trial: int = 0, reward: float = 0.0) -> dict:
    return {
        "task_id": task_id,
        "reward": reward,
        "info": {"task": {"user_id": "u1", "actions": [], "instruction": "x"}},
        "traj": traj,
        "trial": trial,
    }


def call(cid: str, name: str, args: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


# -- truncation ------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [40, 500, 3000, 6000, 6500, 8000])
def test_truncated_eval_zip_is_a_truncated_error_naming_the_file(tmp_path: Path, keep: int) -> None:
    p = tmp_path / "cut.eval"
    p.write_bytes(EVAL.read_bytes()[:keep])
    assert detect(p) == "inspect_ai"
    with pytest.raises(TruncatedSourceError) as ei:
        import_file(p)
    msg = str(ei.value)
    assert msg.startswith(str(p)) and "truncated" in msg
    # the sample entry ends at byte 6160: cut after it, the complete sample is recovered
    if keep >= 6160:
        assert [r.incomplete for r in ei.value.recovered] == [True]
        rec = ei.value.recovered[0].recording
        assert rec.counts_by_kind()["model"] == 6 and rec.metadata["source"]["incomplete"] is True
        assert "can be recovered" in msg
    else:
        assert ei.value.recovered == [] and "no complete run before the damage" in msg


def test_truncated_eval_recovered_with_recover_flag(tmp_path: Path) -> None:
    p = tmp_path / "cut.eval"
    p.write_bytes(EVAL.read_bytes()[:7000])
    (run,) = import_file(p, recover=True)
    assert run.incomplete
    out = tmp_path / "out.json"
    run.recording.save(out)
    assert load_recording(out, verify_keys=True).metadata["source"]["incomplete"] is True


def test_json_cut_mid_string_recovers_complete_runs(tmp_path: Path) -> None:
    data = TAU.read_bytes()
    cut = 2_000_000
    assert data[cut - 1 : cut] not in (b'"',)
    p = tmp_path / "gpt-4o-airline.json"
    p.write_bytes(data[:cut])
    with pytest.raises(TruncatedSourceError) as ei:
        import_file(p)
    err = ei.value
    assert "truncated" in str(err) and str(p) in str(err) and err.line is not None
    full = import_file(TAU)
    rec = err.recovered
    assert 0 < len(rec) < 200 and all(r.incomplete for r in rec)
    # the recovered runs are exactly the complete runs before the damage
    complete_before = json.loads(
        data[: data.rfind(b'"task_id"', 0, cut)].rstrip().rstrip(b"{").rstrip().rstrip(b",") + b"]"
    )
    assert len(rec) == len(complete_before)
    for a, b in zip(rec, full[: len(rec)], strict=True):
        assert a.run_id == b.run_id
        assert [r.to_json_obj() for r in a.recording.records] == [r.to_json_obj() for r in b.recording.records]


def test_inspect_json_cut_inside_its_only_sample_recovers_nothing(tmp_path: Path) -> None:
    src = REAL / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json"
    p = tmp_path / "browser.json"
    p.write_bytes(src.read_bytes()[:200_000])
    with pytest.raises(TruncatedSourceError, match="no complete run before the damage") as ei:
        import_file(p, recover=True)
    assert ei.value.recovered == []


def test_openhands_stream_cut_keeps_the_events_before_the_damage(tmp_path: Path) -> None:
    src = REAL / "openhands" / "basic_gui_mode.json"
    p = tmp_path / "basic_gui_mode.json"
    p.write_bytes(src.read_bytes()[:30_000])
    (run,) = import_file(p, recover=True)
    assert run.incomplete and run.recording.counts_by_kind()["model"] == 2


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.dictionaries(
            st.text(max_size=5),
            st.one_of(st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=3)),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    ),
    frac=st.floats(0.0, 1.0),
)
def test_salvage_keeps_exactly_the_complete_elements(items: list[dict], frac: float) -> None:
    parts = [json.dumps(i, ensure_ascii=False) for i in items]
    text = "[" + ", ".join(parts) + "]"
    ends, pos = [], 1
    for part in parts:
        pos += len(part)
        ends.append(pos)
        pos += 2
    cut = 1 + int(frac * (len(text) - 2))  # never the closing bracket
    got = salvage_json(text[:cut])
    assert got is not None
    k = got.complete_items()
    assert k == sum(1 for e in ends if e <= cut)
    assert got.value[:k] == items[:k]


# -- tool-call arguments, ids, keys ------------------------------------------------------


def test_non_object_arguments_are_kept_raw_and_marked(tmp_path: Path) -> None:
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("c1", "think", '"just a string"'),
                call("c2", "lookup", '{"id": 12'),
                call("c3", "noop", ""),
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "think", "content": "ok"},
        {"role": "tool", "tool_call_id": "c2", "name": "lookup", "content": "Error: bad arguments"},
        {"role": "tool", "tool_call_id": "c3", "name": "noop", "content": ""},
        {"role": "assistant", "content": "done"},
    ]
    (run,) = import_file(write(tmp_path, "raw-airline.json", [tau_run(traj)]), "tau_bench")
    rec = run.recording
    model = next(r for r in rec.records if isinstance(r, ModelRecord))
    tc = model.response.message.tool_calls
    assert [(c.arguments, c.raw_arguments) for c in tc] == [('"just a string"', True), ('{"id": 12', True), ("", True)]
    ts = tools(rec)
    assert [t.arguments for t in ts] == ['"just a string"', '{"id": 12', ""]
    assert all(t.key is not None for t in ts)  # a raw string still has a canonical form
    assert ts[1].result.error.type == "tool_error"
    assert sum("kept raw" in str(w) for w in run.warnings) == 3
    out = tmp_path / "out.json"
    rec.save(out)
    back = load_recording(out, verify_keys=True)
    assert [
        c.raw_arguments for c in next(r for r in back.records if isinstance(r, ModelRecord)).response.message.tool_calls
    ] == [True] * 3


def test_empty_and_rewritten_tool_call_ids_are_still_paired(tmp_path: Path) -> None:
    traj = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("", "get_user_details", '{"user_id": "a"}'),
                call("call_B", "search", '{"q": "b"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_B_rewritten", "name": "search", "content": "result b"},
        {"role": "tool", "tool_call_id": "", "name": "get_user_details", "content": "result a"},
        {"role": "assistant", "content": "ok"},
    ]
    (run,) = import_file(write(tmp_path, "ids-airline.json", [tau_run(traj)]), "tau_bench")
    ts = tools(run.recording)
    assert [(t.tool, t.arguments, t.result.content) for t in ts] == [
        ("search", {"q": "b"}, "result b"),
        ("get_user_details", {"user_id": "a"}, "result a"),
    ]
    # one id per call, everywhere: the empty id becomes "~1", the rewritten result id the call's own
    assert ts[0].tool_call_id == "call_B" and ts[1].tool_call_id == "~1"
    models = [r for r in run.recording.records if isinstance(r, ModelRecord)]
    assert [tc.id for tc in models[0].response.message.tool_calls] == ["~1", "call_B"]
    last = models[-1].request.messages
    assert [tc.id for tc in last[1].tool_calls] == ["~1", "call_B"]
    assert [m.tool_call_id for m in last[2:]] == ["call_B", "~1"]
    assert sum("paired with the oldest unanswered" in str(w) for w in run.warnings) == 2
    assert any("has no id; recorded as '~1'" in str(w) for w in run.warnings)


def test_uncanonicalizable_identity_is_kept_without_a_key(tmp_path: Path) -> None:
    traj = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "big", '{"n": 18446744073709551615}')]},
        {"role": "tool", "tool_call_id": "c1", "name": "big", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    (run,) = import_file(write(tmp_path, "big-airline.json", [tau_run(traj)]), "tau_bench")
    (t,) = tools(run.recording)
    # kept exactly, tagged (RFC 8785 has no form for it), and without a key
    assert t.key is None and t.arguments == {"n": {"$bigint": "18446744073709551615"}}
    assert decode_value(t.arguments) == {"n": 18446744073709551615}
    models = [r for r in run.recording.records if isinstance(r, ModelRecord)]
    assert models[0].key is not None  # its request does not hold the number
    assert models[1].key is None  # its request carries the call in its history
    assert any("cannot be canonicalized" in str(w) and "replay cannot match it" in str(w) for w in run.warnings)
    assert any("$bigint" in str(w) and "tool_calls[0].arguments/n" in w.place for w in run.warnings)
    # and the recording saves, loads back and keeps the exact integer
    out = tmp_path / "big.json"
    run.recording.save(out)
    back = load_recording(out, verify_keys=True)
    (bt,) = tools(back)
    assert bt.key is None and decode_value(bt.arguments) == {"n": 18446744073709551615}
    assert [r.key for r in back.records] == [r.key for r in run.recording.records]


def test_big_integers_anywhere_are_tagged_exactly_and_the_run_saves(tmp_path: Path) -> None:
    # 2**70 is beyond 64 bits: orjson alone would read it as an inexact float
    text = (
        json.dumps(
            [
                tau_run(
                    [
                        {"role": "user", "content": "go"},
                        {"role": "assistant", "content": None, "tool_calls": [call("c1", "calc", '{"x": 1}')]},
                        {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": "__BIG__"},
                        {"role": "assistant", "content": "done"},
                    ],
                    reward=1.0,
                )
            ]
        )
        .replace('"__BIG__"', str(2**70))
        .replace('"task_id": 7', f'"task_id": {-(2**60)}')
    )
    (run,) = import_file(write(tmp_path, "bigval-airline.json", text), "tau_bench")
    (t,) = tools(run.recording)
    assert t.key is not None  # the identity holds no big integer: replay can match it
    assert t.result.content == {"$bigint": str(2**70)} and decode_value(t.result.content) == 2**70
    assert run.recording.metadata["task_id"] == {"$bigint": str(-(2**60))}
    assert run.run_id == f"task{-(2**60)}-trial0"  # ids show the digits, not the tag
    # the tool message in the next request holds the number as text, like any number
    assert any("traj/2/content" in w.place and "$bigint" in w.message for w in run.warnings)
    out = tmp_path / "bigval.json"
    run.recording.save(out)
    back = load_recording(out, verify_keys=True)
    assert [r.to_json_obj() for r in back.records] == [r.to_json_obj() for r in run.recording.records]
    last = [r for r in back.records if isinstance(r, ModelRecord)][-1]
    assert last.key is not None and last.request.messages[-1].content == str(2**70)


def test_nan_and_infinity_literals_stay_distinct_from_null(tmp_path: Path) -> None:
    text = (
        json.dumps(
            [
                tau_run(
                    [
                        {"role": "user", "content": "go"},
                        {"role": "assistant", "content": None, "tool_calls": [call("c1", "calc", '{"x": 1}')]},
                        {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": "__NAN__"},
                    ]
                )
            ]
        )
        .replace('"__NAN__"', "NaN")
        .replace('"reward": 0.0', '"reward": -Infinity')
    )
    (run,) = import_file(write(tmp_path, "nan-airline.json", text), "tau_bench")
    (t,) = tools(run.recording)
    assert t.result.content == {"$nonfinite": "NaN"}
    assert run.recording.metadata["reward"] == {"$nonfinite": "-Infinity"}
    assert any("/0/" in w.place for w in run.warnings)
    out = tmp_path / "out.json"
    run.recording.save(out)
    back = load_recording(out, verify_keys=True)
    assert tools(back)[0].result.content == {"$nonfinite": "NaN"}


# -- redaction ---------------------------------------------------------------------------


def test_secrets_are_redacted_and_marked(tmp_path: Path) -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0"
    traj = [
        {"role": "user", "content": f"my key is {secret}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c1", "login", json.dumps({"user": "u", "api_key": "hunter22"}))],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "login", "content": f"token={secret}"},
        {"role": "assistant", "content": "done"},
    ]
    p = write(tmp_path, "secret-airline.json", [tau_run(traj)])
    (run,) = import_file(p, "tau_bench")
    blob = orjson.dumps([r.to_json_obj() for r in run.recording.records])
    assert secret.encode() not in blob and b"hunter22" not in blob
    (t,) = tools(run.recording)
    # markers name the kind removed (docs/format.md, "Redaction")
    assert t.arguments == {"user": "u", "api_key": marker("api-key")}
    assert t.result.redacted is True and t.result.content == f"token={marker('openai-key')}"
    assert run.recording.metadata["source"]["redacted"] is True
    assert any(w.place == "redaction" for w in run.warnings)
    out = tmp_path / "out.json"
    run.recording.save(out)
    load_recording(out, verify_keys=True)


# -- detection and errors ----------------------------------------------------------------


def test_unknown_file_names_every_format_tried(tmp_path: Path) -> None:
    p = write(tmp_path, "mystery.json", {"hello": "world"})
    with pytest.raises(SourceImportError) as ei:
        detect(p)
    msg = str(ei.value)
    for name in ("chassis", "inspect_ai", "swe_agent", "mini_swe_agent", "openhands", "tau_bench", "who_and_when"):
        assert f"{name}:" in msg
    assert set(ei.value.attempts) >= {"inspect_ai", "tau_bench"}
    with pytest.raises(SourceImportError):
        open_any(p)


@pytest.mark.parametrize("content,reason", [(b"", "empty"), (b"   \n", "empty")])
def test_empty_file(tmp_path: Path, content: bytes, reason: str) -> None:
    p = tmp_path / "e.json"
    p.write_bytes(content)
    with pytest.raises(FormatError, match=reason):
        detect(p)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no such file"):
        import_file(tmp_path / "nope.json")
    with pytest.raises(FormatError, match="directory"):
        detect(tmp_path)


def test_malformed_json_of_a_detected_format(tmp_path: Path) -> None:
    p = tmp_path / "bad-airline.json"
    p.write_text('[{"task_id": 1, "reward": 0.0, "traj": [}, 3]')
    with pytest.raises(FormatError, match="malformed JSON") as ei:
        import_file(p)
    assert not isinstance(ei.value, TruncatedSourceError) and str(p) in str(ei.value)


def test_wrong_from_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="not a SWE-agent trajectory"):
        import_file(REAL / "openhands" / "wrong_initial_state.json", "swe_agent")
    with pytest.raises(SourceImportError, match="unknown import format 'nope'"):
        import_file(REAL / "openhands" / "wrong_initial_state.json", "nope")


def test_open_any_native_and_converted(tmp_path: Path) -> None:
    (run,) = import_file(REAL / "swe_agent" / "pydicom__pydicom-1458.traj")
    out = tmp_path / "native.json"
    run.recording.save(out)
    assert detect(out) == NATIVE
    from inspector.cli.common import opened_notices_each

    def opened(path: Path, **kw: object) -> tuple[Recording, list[str]]:
        o = open_any(path, **kw)  # type: ignore[arg-type]
        return o.recording, opened_notices_each(path, o)

    rec, notices = opened(out)
    assert notices == [] and len(rec.records) == 24
    rec, notices = opened(REAL / "swe_agent" / "pydicom__pydicom-1458.traj")
    assert notices[0].startswith("converted from swe_agent")
    assert rec.digest and rec.digest.startswith("sha256:")
    rec, notices = opened(TAU, run="task3-trial2")
    assert rec.metadata["task_id"] == 3 and rec.metadata["trial"] == 2
    assert any("holds 200 runs" in n for n in notices)
    with pytest.raises(SourceImportError, match="already a Chassis recording"):
        import_file(out)


def test_select_run_by_id_and_index() -> None:
    runs = import_file(REAL / "who_and_when" / "hand-crafted_1.json")
    assert select_run(runs, 0, source="x") is runs[0]
    assert select_run(runs, runs[0].run_id, source="x") is runs[0]
    with pytest.raises(SourceImportError, match="no run '5'"):
        select_run(runs, "5", source="x")


# -- Inspect: several samples, unparsable arguments ---------------------------------------


def test_inspect_several_samples_give_several_runs(tmp_path: Path) -> None:
    import zipfile

    doc = json.loads((REAL / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json").read_text())
    second = json.loads(json.dumps(doc["samples"][0]))
    second["epoch"] = 2
    second["scores"]["includes"]["value"] = "I"
    doc["samples"].append(second)
    runs = import_file(write(tmp_path, "two.json", doc))
    assert [r.run_id for r in runs] == ["1_epoch_1", "1_epoch_2"]
    assert [r.recording.metadata["outcome"] for r in runs] == ["success", "failure"]
    assert [r.recording.metadata["source"]["index"] for r in runs] == [0, 1]

    src = zipfile.ZipFile(EVAL)
    out = tmp_path / "two.eval"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in src.namelist():
            z.writestr(name, src.read(name))
            if name.startswith("samples/"):
                s = json.loads(src.read(name))
                s["epoch"] = 2
                z.writestr("samples/0_epoch_2.json", json.dumps(s))
    runs = import_file(out)
    assert [r.run_id for r in runs] == ["0_epoch_1", "0_epoch_2"]
    assert all(r.recording.counts_by_kind()["tool"] == 5 for r in runs)


def test_inspect_unparsable_tool_arguments_are_kept_raw(tmp_path: Path) -> None:
    doc = json.loads((REAL / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json").read_text())
    ev = next(
        e
        for e in doc["samples"][0]["events"]
        if e["event"] == "model" and e["output"]["choices"][0]["message"].get("tool_calls")
    )
    tc = ev["output"]["choices"][0]["message"]["tool_calls"][0]
    tc["arguments"] = '{"element_id": 15'
    tc["parse_error"] = "Expecting ',' delimiter"
    (run,) = import_file(write(tmp_path, "bad-args.json", doc))
    model = next(r for r in run.recording.records if isinstance(r, ModelRecord) and r.response.message.tool_calls)
    (call_,) = model.response.message.tool_calls
    assert call_.raw_arguments is True and call_.arguments == '{"element_id": 15'
    assert any("could not parse these arguments" in str(w) for w in run.warnings)


def test_invalid_unicode_in_tool_output_loads_and_round_trips(tmp_path: Path) -> None:
    doc = [
        tau_run(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call("c1", "cat", '{"path": "x"}')]},
                {"role": "tool", "tool_call_id": "c1", "name": "cat", "content": "__LONE__"},
            ]
        )
    ]
    text = json.dumps(doc).replace("__LONE__", "abc\\ud800def")
    p = tmp_path / "u-airline.json"
    p.write_bytes(text.encode().replace(b'\\"x\\"', b'\\"\xff\\"'))  # a non-UTF-8 byte inside the arguments string
    (run,) = import_file(p, "tau_bench")
    (t,) = tools(run.recording)
    assert t.result.content["$invalid_unicode"] == "abc\ufffddef"
    assert t.arguments["$invalid_unicode"] == '{"path": "\ufffd"}'  # the arguments string itself, kept raw
    assert any("kept raw" in w.message for w in run.warnings)
    assert sum("nvalid" in w.message or "Unicode" in w.message for w in run.warnings) >= 1
    out = tmp_path / "out.json"
    run.recording.save(out)
    assert tools(load_recording(out, verify_keys=True))[0].result.content == t.result.content


def test_a_damaged_native_recording_is_reported_by_the_loader(tmp_path: Path) -> None:
    p = write(tmp_path, "future.json", {"format": "chassis.replay", "format_version": 9, "records": []})
    assert detect(p) == NATIVE
    with pytest.raises(FormatError, match="newer than this inspector supports"):
        open_any(p)
    q = write(tmp_path, "odd.json", {"format_version": 1, "format": "other", "records": []})
    with pytest.raises(FormatError, match="expected 'chassis.replay'"):
        open_any(q)


def test_tag_big_ints_rebuilds_records_holding_raw_big_integers() -> None:
    from core.importers._build import identity_key, record_identity, tag_big_ints
    from core.record.recording import ChatMessage, ModelRequest, ModelResponse, ToolResult, Usage

    tool = ToolRecord.model_construct(
        seq=0,
        at=None,
        run_id="r",
        generation_id=None,
        replayed=False,
        live_fallback=False,
        kind="tool",
        key=None,
        tool="f",
        arguments={"id": 2**60},
        tool_call_id=None,
        result=ToolResult.model_construct(content=[2**70], artifact=None, error=None, redacted=False),
        duration_seconds=None,
    )
    model = ModelRecord.model_construct(
        seq=1,
        at=None,
        run_id="r",
        generation_id=None,
        replayed=False,
        live_fallback=False,
        kind="model",
        key=None,
        model="m",
        request=ModelRequest(messages=[ChatMessage(role="user", content="hi")]),
        response=ModelResponse(
            message=ChatMessage(role="assistant", content="ok"),
            usage=Usage.model_construct(input_tokens=3, output_tokens=2**60),
        ),
        duration_seconds=None,
        error=None,
    )
    plain = ToolRecord(seq=2, tool="g", arguments={"n": 2**53 - 1})
    records = [tool, model, plain]
    warned: list[tuple[str, str]] = []
    assert tag_big_ints(records, lambda place, msg: warned.append((place, msg))) == 2
    assert records[0].arguments == {"id": {"$bigint": str(2**60)}}
    assert decode_value(records[0].result.content) == [2**70]
    assert records[1].response.usage is None and records[1].response.message.content == "ok"
    assert records[2] is plain  # nothing to do: untouched
    assert [p for p, _ in warned] == ["record 0/arguments/id", "record 0/result/content/0", "record 1/response/usage"]
    # an identity that held such an integer gets no key, tagged or not; others key as before
    assert identity_key(record_identity(records[0]))[0] is None
    assert identity_key(record_identity(tool))[0] is None
    assert identity_key(record_identity(plain))[0] == plain.compute_key()
    assert identity_key(record_identity(records[1]))[0] == records[1].compute_key()


def test_compressed_sources_are_always_checked_for_big_integers(tmp_path: Path) -> None:
    from core.importers._source import read_source

    assert read_source(EVAL).may_hold_big_ints  # a zip: digits are not visible in the bytes
    assert not read_source(TAU).may_hold_big_ints


def test_a_big_source_is_hashed_while_it_is_imported(tmp_path: Path) -> None:
    """A source of 8 MB or more is hashed in a thread; the digest recorded in
    ``metadata.source`` is the file's SHA-256 all the same, small or big."""
    import hashlib
    from concurrent.futures import Future

    from core.importers._source import HASH_IN_THREAD_BYTES, read_source

    big = tmp_path / "big.json"
    body = TAU.read_bytes()
    big.write_bytes(body + b" " * (HASH_IN_THREAD_BYTES - len(body) + 1))  # JSON may end in spaces
    src = read_source(big)
    assert isinstance(src.digest, Future)
    assert src.sha256 == hashlib.sha256(big.read_bytes()).hexdigest()
    assert src.sha256 == src.digest  # resolved once
    small = read_source(TAU)
    assert small.sha256 == small.digest == hashlib.sha256(TAU.read_bytes()).hexdigest()
    runs = import_file(big)
    assert runs[0].recording.metadata["source"]["sha256"] == hashlib.sha256(big.read_bytes()).hexdigest()
