"""The nesting limit (core.record.nesting.MAX_DEPTH, 1,000 levels per JSON value) in
every command: up to it each command works, beyond it each exits 2 with one line naming
the file, the JSON Pointer where the limit is crossed and the limit — never a traceback.

Depths are the nesting of the value at the place (the value itself is level 1); for
``import`` the source file is one value, so the depth is the source document's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from core.record.canonical import model_key, tool_key
from core.record.io import recording_to_dict
from core.record.nesting import MAX_DEPTH, dumps
from inspector.cli import main
from tests.builders import ROOT, make_recording

DEPTHS = [254, 255, 256, 600, 1000, 1001, 1500]
PLACES = ["metadata", "tool result", "tool arguments", "message content"]
COMMANDS = ["info", "timeline", "audit", "validate", "diff"]
#: the JSON Pointer (from the document's top) of each place's value in a recording
POINTERS = {
    "metadata": "/metadata",
    "tool result": "/records/3/result/content",
    "tool arguments": "/records/3/arguments",
    "message content": "/records/2/request/messages/1/content",
}
LIMIT_TEXT = f"nested more than {MAX_DEPTH} levels deep"


def chain(levels: int, leaf: Any = "deep leaf") -> Any:
    """A value nested exactly ``levels`` levels (arrays and objects in turn)."""
    v = leaf
    for i in range(levels):
        v = [v] if i % 2 == 0 else {"k": v}
    return v


def deep_recording(place: str, depth: int) -> dict[str, Any]:
    """The small mixed recording (tests.builders.make_recording) with a value nested
    ``depth`` levels at ``place``, keys recomputed, no digest (keys are checked)."""
    doc = recording_to_dict(make_recording())
    del doc["digest"]
    tool_rec, model_rec = doc["records"][3], doc["records"][2]
    assert tool_rec["kind"] == "tool" and model_rec["kind"] == "model"
    if place == "metadata":
        doc["metadata"]["deep"] = chain(depth - 1)
    elif place == "tool result":
        tool_rec["result"]["content"] = chain(depth)
    elif place == "tool arguments":
        tool_rec["arguments"] = {"path": chain(depth - 1)}
        tool_rec["key"] = tool_key(tool_rec["tool"], tool_rec["arguments"])
    elif place == "message content":
        msg = model_rec["request"]["messages"][1]
        msg["content"] = [{"type": "text", "text": msg["content"], "data": chain(depth - 2)}]
        model_rec["key"] = model_key(model_rec["model"], model_rec["request"])
    else:  # pragma: no cover
        raise AssertionError(place)
    return doc


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[tuple[str, int], Path]:
    folder = tmp_path_factory.mktemp("deep")
    out = {}
    for place in PLACES:
        for depth in DEPTHS:
            p = folder / f"{place.replace(' ', '-')}-{depth}.json"
            p.write_bytes(dumps(deep_recording(place, depth)))
            out[place, depth] = p
    base = folder / "base.json"
    make_recording().save(base)
    out["base", 0] = base
    return out


def cli(capsys, *args: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, path: Path, pointer: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert str(path) in line and f"at {pointer}" in line.replace("record 2, ", "").replace("record 3, ", "")
    assert LIMIT_TEXT in line and f"the limit is {MAX_DEPTH} levels" in line
    assert len(line) < 400, "the pointer is shortened"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("depth", DEPTHS)
def test_every_command_up_to_the_limit_and_beyond(capsys, files, command, place, depth):
    path = files[place, depth]
    args: list[Any] = [command, path]
    if command == "diff":
        args = [command, files["base", 0], path]
    code, out, err = cli(capsys, *args)
    if depth > MAX_DEPTH:
        assert_refused(code, err, path, POINTERS[place])
        return
    assert code == 0, err
    assert "Traceback" not in err
    assert max(len(line) for line in out.splitlines()) < 400  # long pointers are shortened
    if command == "info":
        assert "records         6  (tool 1, model 2, interrupt 1, snapshot 1, lifecycle 1)" in out
    elif command == "timeline":
        assert len(out.strip().splitlines()) >= 6 and " ls " in out
    elif command == "audit":
        assert "ls" in out
    elif command == "validate":
        assert "ok (format version 3, 6 records" in out
    elif command == "diff":
        changed = "same 3, changed 0" not in out
        assert changed == (place != "metadata"), out


@pytest.mark.parametrize("depth", [600, 1000])
@pytest.mark.parametrize("place", PLACES)
def test_json_output_and_save_round_trip(capsys, files, tmp_path, place, depth):
    path = files[place, depth]
    code, out, err = cli(capsys, "info", "--json", path)
    assert code == 0, err
    assert orjson.loads(out)["counts"]["tool"] == 1
    code, out, err = cli(capsys, "diff", "--json", files["base", 0], path)
    assert code == 0, err
    doc = orjson.loads(out)
    assert doc["base_records"] == doc["other_records"] == 3
    code, out, err = cli(capsys, "timeline", "--json", path)
    assert code == 0, err and len(orjson.loads(out)) == 6
    # migrate writes it again (save path: canonical digest and serialization beyond 254 levels)
    again = tmp_path / "again.json"
    code, out, err = cli(capsys, "migrate", path, "-o", again)
    assert code == 0, err
    code, out, err = cli(capsys, "validate", again)
    assert code == 0 and "ok (format version 3, 6 records" in out, err


# -- import: the source file is one value ------------------------------------------------


def tau_source(place: str, depth: int) -> list[Any] | Any:
    """A tau-bench results file (one run) nesting ``depth`` levels, the deep part at
    ``place`` (for tool arguments: a JSON text in the arguments string nesting ``depth``)."""
    args = '{"id": "a"}'
    result: Any = "ok"
    info: dict[str, Any] = {"task": {"user_id": "u1", "actions": [], "instruction": "x"}}
    user: Any = "hi"
    if place == "metadata":
        info["reward_info"] = chain(depth - 3)  # [run {info {reward_info ...
    elif place == "tool result":
        result = chain(depth - 4)  # [run {traj [msg {content ...
    elif place == "tool arguments":
        args = dumps({"id": chain(depth - 1)}).decode()
    elif place == "message content":
        user = [{"type": "text", "text": "hi", "data": chain(depth - 6)}]  # [run {traj [msg {content [part {data
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": args}}
    traj = [
        {"role": "user", "content": user},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "lookup", "content": result},
        {"role": "assistant", "content": "done"},
    ]
    return [{"task_id": 1, "trial": 0, "reward": 1.0, "info": info, "traj": traj}]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("depth", DEPTHS)
def test_import_up_to_the_limit_and_beyond(capsys, tmp_path, place, depth):
    src = tmp_path / "gpt-4o-airline.json"
    src.write_bytes(dumps(tau_source(place, depth)))
    out = tmp_path / "out.json"
    code, _, err = cli(capsys, "import", src, "-o", out)
    assert "Traceback" not in err
    if depth <= MAX_DEPTH:
        assert code == 0, err
        code, stdout, err = cli(capsys, "validate", out)
        assert code == 0 and "ok (format version 3" in stdout, err
        code, stdout, err = cli(capsys, "info", src)  # converted in memory
        assert code == 0 and "records" in stdout, err
        return
    if place == "tool arguments":
        # the source file is shallow; the JSON text in the string is too deep to decode,
        # so the arguments are kept as written (a string) and marked, like any arguments
        # that are not a JSON object
        assert code == 0, err
        assert "kept raw" in err and f"more than {MAX_DEPTH} levels" in err
        code, stdout, err = cli(capsys, "validate", out)
        assert code == 0, err
        return
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert str(src) in line and LIMIT_TEXT in line and " at /0/" in line
    assert not out.exists()


# -- interventions: each intervention file is one value --------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
def test_intervention_up_to_the_limit_and_beyond(capsys, tmp_path, monkeypatch, depth):
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "base.json"
    make_recording().save(base)
    iv = tmp_path / "iv.json"
    # {kind, seq, result {content ...}}: the intervention file nests `depth` levels
    iv.write_bytes(dumps({"kind": "tool_result", "seq": 3, "result": {"content": chain(depth - 2)}}))
    code, out, err = cli(capsys, "branch", "new", base, "--at", 3, "--intervention", iv, "-o", "b.json")
    assert "Traceback" not in err
    if depth > MAX_DEPTH:
        assert code == 2, err
        (line,) = err.strip().splitlines()
        assert str(iv) in line and "at /result/content/" in line and LIMIT_TEXT in line
        return
    assert code == 0, err
    code, out, err = cli(capsys, "replay", base, "--branch", "b.json", "--json")
    assert "Traceback" not in err
    assert code in (0, 3), err  # completed, or paused on a requirement
    rec = orjson.loads(out)
    events = Path(rec["events_file"])
    code, out, err = cli(capsys, "validate", events)
    assert code == 0, err
    code, out, err = cli(capsys, "timeline", events)
    assert code == 0, err


# -- a few in fresh processes (the console script's own recursion limit) ---------------


@pytest.mark.parametrize(("command", "depth"), [("timeline", 1000), ("audit", 1000), ("info", 1500)])
def test_subprocess_without_traceback(files, command, depth):
    path = files["tool result", depth]
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", command, str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert "Traceback" not in proc.stderr
    if depth > MAX_DEPTH:
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and LIMIT_TEXT in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
