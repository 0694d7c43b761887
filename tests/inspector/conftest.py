"""Fixtures for the app tests: a built recording on disk and a real sample recording."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.loader import LoadedRecording, load_for_view
from tests.builders import ROOT, write_recording

REPO = ROOT
#: a real recording produced by the bundled sample agent (planted tool failure)
REAL_SAMPLE = REPO / "sample_recordings" / "sample-agent-fault-tool-error.json"


@pytest.fixture(autouse=True)
def _truecolour_cursor(monkeypatch):
    """The terminal running the tests decides the colour system (``TERM``): pin the
    cursor style so that snapshots do not depend on it."""
    from inspector.widgets.timeline_table import TimelineTable

    monkeypatch.setattr(TimelineTable, "FORCE_LOW_COLOUR", False)


@pytest.fixture
def built_path(tmp_path: Path) -> Path:
    return write_recording(tmp_path / "built.json")


@pytest.fixture
def built(built_path: Path) -> LoadedRecording:
    return load_for_view(built_path)


@pytest.fixture
def real() -> LoadedRecording:
    if not REAL_SAMPLE.exists():  # pragma: no cover - the file is committed
        pytest.fail(f"missing real sample recording {REAL_SAMPLE}")
    return load_for_view(REAL_SAMPLE)


@pytest.fixture
def default() -> LoadedRecording:
    """The bundled default recording (the real SWE-agent run, once it is in the repo)."""
    from inspector.defaults import default_recording_path

    return load_for_view(default_recording_path())
