"""Errors cross process boundaries (the verification child, batch workers, Ray): each
comes back as it was — its message, its fields, a subclass's own attributes."""

from __future__ import annotations

import pickle

import pytest

from core.errors import CanonicalizationError, FormatError, InspectorError, ReplayMismatch
from core.importers._source import TruncatedSourceError


@pytest.mark.parametrize(
    "exc",
    [
        FormatError("bad seq", file="run.json", record=3, path="/records/3/seq", line=4, column=2),
        CanonicalizationError("NaN is not JSON", "/records/0/result/content"),
        InspectorError("plain"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_an_error_pickles_to_itself(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and back.__dict__ == exc.__dict__


def test_a_subclass_keeps_its_own_attributes():
    exc = TruncatedSourceError("the file ends mid-record", file="trace.jsonl")
    exc.recovered = [1, 2]
    back = pickle.loads(pickle.dumps(exc))
    assert str(back) == str(exc) and back.recovered == [1, 2] and back.partial is None


def test_other_subclasses_too():
    exc = ReplayMismatch.__new__(ReplayMismatch)
    InspectorError.__init__(exc, "no recorded call matches")
    back = pickle.loads(pickle.dumps(exc))
    assert str(back) == "no recorded call matches"
