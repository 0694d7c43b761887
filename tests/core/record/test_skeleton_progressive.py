"""A progressive skeleton decode (core.record.skeleton.skeleton's ``first_records``): the
first records for the first paint, the rest (Skeleton.rest) a chunk at a time, and the
timeline index grown with them (TimelineIndex.extend) — against the decode of the same
bytes whole and the index built from every column at once."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.timeline import TimelineIndex
from core.errors import FormatError
from core.record import skeleton as sk_mod
from core.record.io import recording_from_dict
from core.record.recording import Recording, SessionInfo
from core.record.skeleton import ChunkedRawRecords, Skeleton, skeleton
from tests.builders import make_recording
from tests.core.record.test_skeleton import records
from tests.core.record.test_skeleton_chunks import (
    _doc_bytes,
    _lifecycle,
    _records_doc,
    _with_nested,
    chunks_of,
    mapped,
)

INDEX_ATTRIBUTES = ("seqs", "kinds", "names", "statuses", "durations", "tokens", "offsets", "error_positions")


def drained(sk: Skeleton | None) -> tuple[dict[str, list[Any]], list[dict[str, list[Any]]]]:
    """The columns of a progressive skeleton with every chunk of its ``rest`` appended,
    and the chunks' own columns."""
    assert sk is not None
    columns = {name: list(col) for name, col in sk.columns.items()}
    parts = list(sk.rest or ())
    for part in parts:
        for name, col in part.items():
            columns[name] += col
    return columns, parts


def rest_error(data: bytes, source: str, size: int, monkeypatch: pytest.MonkeyPatch) -> FormatError:
    """The FormatError the rest of a progressive decode of ``data`` raises (chunks of
    ``size`` bytes, the first paint after 5 records, which must be fine)."""
    error: FormatError | None = None
    with chunks_of(size, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source=source, copy_on_write=True, first_records=5)
        assert sk is not None and sk.rest is not None
        try:  # (not pytest.raises: its traceback would keep the map's slices, and the map open)
            drained(sk)
        except FormatError as exc:  # a copy: the raised one's context holds frames, and so the map
            error = FormatError(
                exc.reason, file=exc.file, record=exc.record, path=exc.path, line=exc.line, column=exc.column
            )
        del sk
    if error is None:
        pytest.fail("no FormatError")
    return error


def index_of(sk: Skeleton, source: str = "p.json") -> TimelineIndex:
    header = {k: v for k, v in sk.header.items() if k != "digest"}
    shell = recording_from_dict({**header, "records": []}, source=source)
    return TimelineIndex.from_columns(shell, sk.columns, sk.raw, source=source)


def same_index(a: TimelineIndex, b: TimelineIndex) -> None:
    for name in INDEX_ATTRIBUTES:
        assert getattr(a, name) == getattr(b, name), name
    assert a.summary == b.summary
    assert a.answered_by == b.answered_by
    assert a.requested_by == b.requested_by


# --------------------------------------------------------------------------- the decode


@settings(max_examples=60, deadline=None)
@given(
    recs=records(),
    version=st.sampled_from([1, 2]),
    indent=st.booleans(),
    size=st.sampled_from([1, 40, 300]),
    first=st.integers(1, 4),
)
def test_property_first_records_and_the_rest_give_what_the_whole_decode_gives(recs, version, indent, size, first):
    if version == 1:
        recs = [r.model_copy(update={"meta": None}) for r in recs]
    rec = Recording(metadata={"task": "ünï"}, session=SessionInfo(producer="test"), records=recs)
    data = _doc_bytes(rec, version, indent)
    whole = skeleton(data, source="f.json")
    assert whole is not None
    with pytest.MonkeyPatch.context() as mp, chunks_of(size, mp), mapped(data) as mm:
        sk = skeleton(mm, source="f.json", copy_on_write=True, first_records=first)
        assert sk is not None and sk.header == whole.header
        if sk.rest is not None:
            assert len(sk.columns["seq"]) >= first  # the first paint holds what it asked for
            assert 0.0 < sk.rest.fraction < 1.0
        columns, _ = drained(sk)
        assert columns == whole.columns
        assert sk.rest is None or (sk.rest.done and sk.rest.fraction == 1.0)
        assert len(sk.raw) == len(whole.raw) and list(sk.raw) == list(whole.raw)
        assert mm[:] == data  # every chunk's brackets were put back
        del sk


def test_a_big_document_paints_from_its_first_chunks_and_leaves_the_rest(monkeypatch):
    data = _records_doc([_lifecycle(k) for k in range(200)])
    with chunks_of(256, monkeypatch) as seen, mapped(data) as mm:
        sk = skeleton(mm, source="r.json", copy_on_write=True, first_records=10)
        assert sk is not None and sk.rest is not None
        first = len(sk.columns["seq"])
        assert 10 <= first < 200 and len(sk.raw) == first
        assert sk.raw[first - 1]["seq"] == first - 1
        with pytest.raises(IndexError):
            sk.raw[first]  # not decoded yet
        part = next(sk.rest)
        assert part["seq"][0] == first and len(sk.raw) == first + len(part["seq"])
        assert sk.raw[first]["seq"] == first  # read from the chunk just decoded
        _, parts = drained(sk)
        assert len(sk.raw) == 200 and sk.raw[199]["seq"] == 199 and parts
        with pytest.raises(StopIteration):
            next(sk.rest)
        del sk, part, parts
    assert seen == ["chunked"]


def test_without_first_records_every_chunk_is_decoded_at_once(monkeypatch):
    data = _records_doc([_lifecycle(k) for k in range(200)])
    with chunks_of(256, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="r.json", copy_on_write=True)
        assert sk is not None and sk.rest is None and len(sk.columns["seq"]) == 200
        del sk


def test_a_chunk_that_never_splits_is_read_from_a_decode_of_the_whole_document(monkeypatch):
    """Records full of separators (``,{"seq":`` inside their arguments) defeat every
    split tried in a chunk left for later: the rest comes from the whole decode."""
    data = _with_nested(40)
    whole = skeleton(data, source="n.json")
    assert whole is not None
    calls: list[int] = []
    real = sk_mod.SkeletonRest._whole

    def spy(self: Any) -> Any:
        calls.append(len(self._decoder.raw))
        return real(self)

    monkeypatch.setattr(sk_mod.SkeletonRest, "_whole", spy)
    with chunks_of(64, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="n.json", copy_on_write=True, first_records=1)
        assert sk is not None and sk.rest is not None
        columns, _ = drained(sk)
        assert columns == whole.columns
        assert list(sk.raw) == list(whole.raw)
        assert isinstance(sk.raw, ChunkedRawRecords) and sk.raw._tail is not None
        assert mm[:] == data
        del sk
    assert calls  # the fallback ran


@pytest.mark.parametrize(
    ("bad", "path", "reason"),
    [
        ({"seq": 41, "kind": "thought"}, "/records/40/kind", "unknown record kind 'thought'"),
        ({"seq": 3, "kind": "lifecycle", "event": "x"}, "/records/40/seq", "seq 3 does not increase"),
        (7, "/records/40", "record is not a JSON object"),
    ],
)
def test_a_bad_record_after_the_first_paint_is_raised_by_the_rest(bad, path, reason, monkeypatch):
    data = _records_doc([_lifecycle(k) for k in range(40)] + [bad] + [_lifecycle(k) for k in range(50, 60)])
    with pytest.raises(FormatError) as plain:
        skeleton(data, source="e.json")
    exc = rest_error(data, "e.json", 100, monkeypatch)
    got = (exc.file, exc.record, exc.path, exc.reason)
    assert got[:3] == ("e.json", plain.value.record, plain.value.path) == ("e.json", 40, path)
    assert got[3].startswith(reason)


def test_malformed_json_after_the_first_paint_is_raised_by_the_rest(monkeypatch):
    good = _records_doc([_lifecycle(k) for k in range(60)])
    at = good.index(b'{"seq":45')
    data = good[:at] + b'{"seq":45,,' + good[at + len(b'{"seq":45,') :]
    with pytest.raises(FormatError) as plain:
        skeleton(data, source="j.json")
    got = str(rest_error(data, "j.json", 100, monkeypatch))
    assert got == str(plain.value) and "line 1" in got


# --------------------------------------------------------------------------- the index grown


def _columns_of(rec: Recording) -> dict[str, list[Any]]:
    sk = skeleton(_doc_bytes(rec), source="c.json")
    assert sk is not None
    return sk.columns


def _split(columns: dict[str, list[Any]], cuts: list[int]) -> list[dict[str, list[Any]]]:
    n = len(columns["seq"])
    bounds = [0, *sorted({c for c in cuts if 0 < c < n}), n]
    return [{name: col[a:b] for name, col in columns.items()} for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=80, deadline=None)
@given(recs=records(), cuts=st.lists(st.integers(1, 40), max_size=4), links_first=st.booleans(), seed=st.integers())
def test_property_an_index_grown_chunk_by_chunk_is_the_index_of_every_column(recs, cuts, links_first, seed):
    rec = Recording(metadata={"outcome": "fail"}, records=recs)
    data = _doc_bytes(rec)
    sk = skeleton(data, source="g.json")
    assert sk is not None
    full = index_of(sk)
    parts = _split(sk.columns, cuts)
    first = Skeleton(sk.header, {name: list(col) for name, col in parts[0].items()}, sk.raw)
    grown = index_of(first)
    if links_first:
        _ = grown.answered_by  # the links built before the index grows, then kept up
    for part in parts[1:]:
        grown.extend(part)
    same_index(grown, full)
    words = [name for name in full.names if name][:3] or ["x"]
    word = random.Random(seed).choice(words)
    assert grown.search(word) == full.search(word)


def test_offsets_are_based_again_on_a_record_earlier_than_every_one_before():
    rec = make_recording()
    columns = _columns_of(rec)
    n = len(columns["seq"])
    columns["at"] = [1000.0 + k for k in range(n)]
    columns["at"][n - 1] = 10.0  # the last record is the earliest
    sk = skeleton(_doc_bytes(rec), source="o.json")
    assert sk is not None
    head, tail = _split(columns, [n - 1])
    grown = index_of(Skeleton(sk.header, head, sk.raw))
    assert grown.offsets[0] == 0.0
    grown.extend(tail)
    assert grown.offsets[0] == 990.0 and grown.offsets[-1] == 0.0
    assert grown.summary.span_seconds == 1000.0 + n - 2 - 10.0


def test_searching_before_and_after_the_index_grows():
    rec = make_recording()
    sk = skeleton(_doc_bytes(rec), source="s.json")
    assert sk is not None
    full = index_of(sk)
    word = full.names[-1]
    head, tail = _split(sk.columns, [2])
    grown = index_of(Skeleton(sk.header, head, sk.raw))
    before = grown.search(word)
    grown.extend(tail)
    assert grown.search(word) == full.search(word) != before  # the search's text was built again


def test_only_an_unverified_index_of_columns_grows_and_only_forward():
    rec = make_recording()
    sk = skeleton(_doc_bytes(rec), source="v.json")
    assert sk is not None
    head, tail = _split(sk.columns, [3])
    with pytest.raises(ValueError, match="only an index built from"):
        TimelineIndex(rec).extend(tail)
    grown = index_of(Skeleton(sk.header, head, sk.raw))
    with pytest.raises(ValueError, match="does not follow"):
        grown.extend(head)
    grown.extend({name: [] for name in tail})  # nothing: nothing changes
    assert len(grown) == 3


# --------------------------------------------------------------------------- hostile documents


def _lifecycles(n: int, event: str = "harness.shutdown", start: int = 0) -> list[dict[str, Any]]:
    return [{"seq": start + k, "kind": "lifecycle", "event": event} for k in range(n)]


def test_a_second_records_member_is_refused_not_mixed_with_the_first(monkeypatch):
    """``"records":[stale…],"records":[good…]``: every reader here takes the last member,
    so the rows painted from the first one are not the document's: an error, never a
    timeline whose first rows come from one array and the rest from the other."""
    import orjson

    head = b'{"format":"chassis.replay","format_version":1,"metadata":{},'
    stale = orjson.dumps(_lifecycles(80, "STALE"))
    good = orjson.dumps(_lifecycles(200, "good"))
    data = head + b'"records":' + stale + b',"records":' + good + b"}"
    whole = skeleton(data, source="dup.json")
    assert whole is not None and set(whole.columns["name"]) == {"good"}  # the last member
    with chunks_of(256, monkeypatch), mapped(data) as mm:
        sk = skeleton(mm, source="dup.json", copy_on_write=True, first_records=5)
        assert sk is not None and sk.columns["name"][0] == "STALE"  # painted from the first member
        del sk
    exc = rest_error(data, "dup.json", 256, monkeypatch)
    got = (exc.path, exc.reason)
    assert got[0] == "/records" and "not the document's first records" in got[1]
    assert "second 'records' member" in got[1]


def test_a_duration_too_big_for_a_float_is_no_duration_not_a_crash():
    import msgspec

    recs = _lifecycles(3)
    recs[1] = {"seq": 1, "kind": "tool", "tool": "bash", "arguments": {}, "duration_seconds": int("9" * 400)}
    doc = {"format": "chassis.replay", "format_version": 1, "metadata": {}, "records": recs}
    sk = skeleton(msgspec.json.encode(doc), source="big-int.json")
    assert sk is not None and sk.columns["duration"][1] is None and sk.columns["name"][1] == "bash"


def _deep_at(at: int) -> bytes:
    """60 records, record ``at`` a tool result nested 10,000 levels deep (deeper than
    msgspec recurses)."""
    recs = _lifecycles(60)
    recs[at] = {"seq": at, "kind": "tool", "tool": "bash", "arguments": {}, "result": {"content": "x"}}
    deep = "[" * 10_000 + "1" + "]" * 10_000
    return _records_doc(recs).replace(b'"content":"x"', b'"content":' + deep.encode())


@pytest.mark.parametrize("where", ["first", "later"])
def test_nesting_deeper_than_the_decoder_recurses_is_the_full_load_s_error(where, monkeypatch):
    if where == "first":
        assert skeleton(_deep_at(1), source="deep.json") is None  # the whole-document path says why
        return
    got = str(rest_error(_deep_at(50), "deep.json", 400, monkeypatch))
    assert "deep.json" in got and "nested more than" in got


def test_a_negative_first_seq_is_named_as_the_full_load_names_it():
    with pytest.raises(FormatError) as err:
        skeleton(_records_doc([{"seq": -5, "kind": "lifecycle"}]), source="neg.json")
    assert err.value.reason == "seq -5 must be greater than or equal to 0"


def test_a_reason_quoting_a_huge_value_is_shown_shortened():
    huge = "K" * 10_000_000
    exc = FormatError(f"unknown record kind {huge!r}", file="k.json", record=0, path="/records/0/kind")
    shown = str(exc)
    assert len(shown) < 2_100 and shown.endswith("… (10,000,022 characters)")
    assert exc.reason.startswith("unknown record kind 'KKK") and len(exc.reason) > 10_000_000


def test_a_document_too_big_to_load_whole_points_to_validate(monkeypatch):
    """Past FULL_LOAD_ERROR_BYTES the problem a chunk met is not looked up by a full load
    in the app's process (several times the file in memory): the error says where to
    look, and the verification (in a process of its own for a big file) says what."""

    monkeypatch.setattr(sk_mod, "FULL_LOAD_ERROR_BYTES", 0)
    got = str(rest_error(_deep_at(50), "deep.json", 400, monkeypatch))
    assert "could not be read a chunk at a time" in got and "validate" in got
