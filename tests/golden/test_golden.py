"""CLI outputs (text and --json) on four sample recordings, byte-identical to golden files."""

from __future__ import annotations

import pytest

from tests.golden.cases import CASES, GOLDEN, run_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli_output_matches_golden(name, tmp_path):
    expected = (GOLDEN / f"{name}.txt").read_text()
    assert run_case(name, tmp_path / "w") == expected


def test_every_golden_file_has_a_case():
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(CASES)
