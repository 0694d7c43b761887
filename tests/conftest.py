"""Shared fixtures: small recordings built with the core API."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.record.recording import (
    Recording,
)
from tests.builders import make_recording


@pytest.fixture
def recording() -> Recording:
    return make_recording()


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "rec.json"
    make_recording().save(path)
    return path
