"""Lazy open for the app: a version-3 file paints from its record index, a version-1/2
file from a skeleton decode; both give the same rows as the plain path, and the
background verification catches what the first paint did not read."""

from __future__ import annotations

import orjson
import pytest

from core.errors import FormatError
from core.record.io import load_recording, save_recording
from inspector.loader import _LazyRecords, load_for_view
from tests.builders import SAMPLES

SAMPLE_FILES = sorted(SAMPLES.glob("*.json"))


def _same_rows(lazy, plain) -> None:
    assert len(lazy.index) == len(plain.index)
    for i in range(len(plain.index)):
        assert lazy.index.row(i) == plain.index.row(i), i
    assert lazy.index.summary == plain.index.summary
    assert lazy.index.answered_by == plain.index.answered_by
    assert lazy.index.requested_by == plain.index.requested_by
    assert lazy.index.error_positions == plain.index.error_positions


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_index_and_skeleton_paint_the_rows_of_the_plain_path(tmp_path, path):
    rec = load_recording(path)
    v3 = tmp_path / "v3.json"
    save_recording(rec, v3)
    v2 = tmp_path / "v2.json"
    v2.write_bytes(orjson.dumps({**rec.to_dict(), "format_version": 2}))
    for f, kind in ((v3, _LazyRecords), (v2, None)):
        plain = load_for_view(f, fast_open_bytes=1 << 40)
        assert plain.verify is None
        lazy = load_for_view(f, fast_open_bytes=0)
        assert lazy.verify is not None
        if kind is not None:
            assert isinstance(lazy.index._raw, kind)
        # links followed one record at a time, before the maps of all links exist
        assert [lazy.index.linked(i) for i in range(len(plain.index))] == [
            plain.index.linked(i) for i in range(len(plain.index))
        ]
        _same_rows(lazy, plain)
        verified = lazy.verify()
        assert verified.digest == rec.digest
        lazy.index.adopt(verified)
        _same_rows(lazy, plain)


def test_a_lying_index_paints_but_fails_verification(tmp_path):
    rec = load_recording(SAMPLES / "sample-agent-fault-tool-error.json")
    path = tmp_path / "run.json"
    save_recording(rec, path)
    data = path.read_bytes()
    # flip a status in the index's string table: same length, so the ranges still hold
    at = data.index(b'"status":[', data.index(b'"strings":')) + len(b'"status":[')
    assert data[at : at + 4] == b'"ok"'
    path.write_bytes(data[:at] + b'"in"' + data[at + 4 :])
    lazy = load_for_view(path, fast_open_bytes=0)
    assert lazy.index.statuses[0] == "in"  # painted from the index as written ...
    with pytest.raises(FormatError) as info:
        lazy.verify()  # ... and refused by the verification that follows
    assert info.value.path == "/index/records/status/0" and str(path) in str(info.value)
