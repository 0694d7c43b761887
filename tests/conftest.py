"""Shared fixtures: small recordings built with the core API."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.record.nesting import ensure_recursion_limit
from core.record.recording import (
    Recording,
)
from tests.builders import make_recording

# as every entry point does (the CLI, the app, the sweep workers): core raises the limit
# on first use too, but a change in the middle of a hypothesis test draws its warning
ensure_recursion_limit()


@pytest.fixture
def recording() -> Recording:
    return make_recording()


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "rec.json"
    make_recording().save(path)
    return path
