"""``info`` on a big version-1/2 file reads the timeline's fields of its records (a
skeleton decode, inspector.cli.recording_cmds.skeleton_summary), not the whole document:
the same facts as the whole load, errors named as it names them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import core.record.io as record_io
import inspector.loader as loader
from inspector.cli import main
from tests.builders import SAMPLES, recording, tool
from tests.core.record.test_skeleton_chunks import _doc_bytes

NATIVE = [p for p in sorted(SAMPLES.glob("*.json")) if orjson.loads(p.read_bytes()).get("format") == "chassis.replay"]


def _info(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["info", "--json", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("path", NATIVE, ids=lambda p: p.name)
def test_the_skeleton_gives_what_the_whole_load_gives(path, monkeypatch, capsys):
    assert NATIVE
    whole = _info(path, capsys)
    monkeypatch.setattr(loader, "FAST_OPEN_BYTES", 0)  # every file is "big"
    calls: list[str] = []
    real = record_io.loads_recording

    def spy(*args, **kwargs):
        calls.append("whole")
        return real(*args, **kwargs)

    monkeypatch.setattr(record_io, "loads_recording", spy)
    assert _info(path, capsys) == whole
    assert calls == []  # the document was not loaded whole


def test_a_v1_file_under_64_mb_is_still_loaded_whole(tmp_path, monkeypatch, capsys):
    path = tmp_path / "small-v1.json"
    path.write_bytes(_doc_bytes(recording(tool(0, "bash", {"cmd": "ls"})), version=1))
    calls: list[str] = []
    real = record_io.loads_recording
    monkeypatch.setattr(record_io, "loads_recording", lambda *a, **k: calls.append("whole") or real(*a, **k))
    code, out, _ = _info(path, capsys)
    assert code == 0 and orjson.loads(out)["records"] == 1 and calls == ["whole"]


def test_the_first_error_of_a_big_v1_file_is_read_from_its_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(loader, "FAST_OPEN_BYTES", 0)
    rec = recording(tool(0, "bash", {"cmd": "ls"}), tool(1, "bash", {"cmd": "rm"}, error="denied"))
    path = tmp_path / "err-v1.json"
    path.write_bytes(_doc_bytes(rec, version=1))
    code, out, _ = _info(path, capsys)
    got = orjson.loads(out)
    assert code == 0 and got["migrated_from"] == 1 and got["format_version"] == 3
    assert got["first_error"] == {"seq": 1, "kind": "tool", "name": "bash", "type": "ToolError", "message": "denied"}


def test_a_first_error_record_that_does_not_validate_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(loader, "FAST_OPEN_BYTES", 0)
    rec = recording(tool(0, "bash", {"cmd": "ls"}), tool(1, "bash", {"cmd": "rm"}, error="denied"))
    data = _doc_bytes(rec, version=1).replace(b'"type":"ToolError"', b'"type":7', 1)
    path = tmp_path / "bad-v1.json"
    path.write_bytes(data)
    code, _, err = _info(path, capsys)
    assert code == 2
    assert str(path) in err and "record 1" in err and "does not validate" in err


def test_a_record_out_of_order_is_refused_as_the_whole_load_refuses_it(tmp_path, monkeypatch, capsys):
    rec = recording(tool(0, "bash", {"cmd": "ls"}), tool(1, "bash", {"cmd": "rm"}))
    data = _doc_bytes(rec, version=1).replace(b'"seq":1,', b'"seq":0,', 1)
    path = tmp_path / "order-v1.json"
    path.write_bytes(data)
    whole = _info(path, capsys)
    monkeypatch.setattr(loader, "FAST_OPEN_BYTES", 0)
    big = _info(path, capsys)
    assert whole[0] == big[0] == 2
    assert "/records/1/seq" in whole[2] and "/records/1/seq" in big[2]


@pytest.mark.parametrize(
    "name",
    [
        "codex/codemie_gpt55_rollout.jsonl",
        "claude_code/jssoundrecorder_sonnet45.jsonl",
        "openinference/any-agent_OPENAI_trace.json",
        "langfuse/claude-agent-2025-12-22.trace.json",
    ],
)
def test_a_big_file_of_another_format_still_goes_to_its_importer(name, monkeypatch, capsys):
    """The fast paths read native documents only: a JSON Lines import (Codex, OTel,
    Claude Code) of 64 MB or more was refused as malformed JSON by ``info`` and the app."""
    from tests.builders import TESTS

    path = TESTS / "data" / "real_traces" / name
    whole = _info(path, capsys)
    assert whole[0] == 0, whole[2]
    monkeypatch.setattr(loader, "FAST_OPEN_BYTES", 0)
    assert _info(path, capsys) == whole
    loaded = loader.load_for_view(path, fast_open_bytes=0)
    assert loaded.opened is not None and loaded.opened.converted and len(loaded.index) > 0
