"""The one input reader (core.record.reader): regular files only, a size limit for user
JSON files, and UTF-8 errors at their line and column."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import BranchError, FormatError
from core.record.io import parse_json
from core.record.reader import InputFileError, check_input, read_input, read_input_head
from core.record.userjson import invalid_utf8_at, loads_user_json


def test_reader_refuses_non_regular_files(tmp_path):
    os.mkfifo(tmp_path / "p")
    for path, kind in ((tmp_path / "p", "a named pipe (FIFO)"), ("/dev/zero", "a character device")):
        with pytest.raises(InputFileError, match=f"is {kind.replace('(', '.').replace(')', '.')}, not a regular file"):
            read_input(path)
        with pytest.raises(InputFileError):
            check_input(path)
        assert read_input_head(path, 10) == b""  # sniffing reads nothing from it
    with pytest.raises(InputFileError, match="is a directory"):
        read_input(tmp_path)
    with pytest.raises(InputFileError, match="no such file"):
        read_input(tmp_path / "missing")
    with pytest.raises(BranchError, match=r"^.*p: is a named pipe"):
        read_input(tmp_path / "p", error=BranchError)


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    """The limit holds on the bytes read, not only on the size the file had when it was
    opened (a file still being written)."""
    p = tmp_path / "grows.json"
    p.write_bytes(b"[" + b" " * 300 + b"]")
    real_fstat = os.fstat

    def fstat_at_open(fd):  # the size the file had a moment before
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 100, 0, 0, 0))

    monkeypatch.setattr(os, "fstat", fstat_at_open)
    with pytest.raises(InputFileError, match="may be at most"):
        read_input(p, limit=150)
    assert read_input(p, limit=1000) == b"[" + b" " * 300 + b"]"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from('ab é"{}[]:,\n\u20ac\U0001f600'), max_size=30), max_size=12),
    st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]),
)
def test_a_bad_byte_is_reported_where_it_is(lines, bad):
    """Anywhere in a file, an invalid UTF-8 sequence is reported at its own line and
    column (characters), with the byte and its offset — not at line 1, column 1."""
    head = "\n".join(lines).encode()
    raw = b'{"a": "' + head + bad + b'z"}'
    offset = raw.index(bad, len(b'{"a": "') + len(head))
    line = raw.count(b"\n", 0, offset) + 1
    column = len(raw[raw.rfind(b"\n", 0, offset) + 1 : offset].decode()) + 1
    assert invalid_utf8_at(raw) == (line, column, offset, bad[0])
    with pytest.raises(FormatError) as exc:
        parse_json(raw, source="f.json")
    assert (exc.value.line, exc.value.column) == (line, column)
    assert f"byte 0x{bad[0]:02x} at byte offset {offset:,}" in str(exc.value)
    with pytest.raises(BranchError, match=f"f.json: line {line}, column {column}: not UTF-8 text"):
        loads_user_json(raw, "f.json", BranchError)


def test_valid_utf8_has_no_bad_byte():
    assert invalid_utf8_at("ok é 😀".encode()) is None
