"""Outputs never create folders: a missing folder in ``-o`` is a one-line error, exit 2,
and nothing is written (``import --all -o DIR`` creates DIR itself, not its parents)."""

from __future__ import annotations

import shutil

import pytest

from inspector.cli import main
from tests.builders import DATA, SAMPLES

BASE = SAMPLES / "sample-agent-fault-tool-error.json"
INSPECT = DATA / "importers" / "inspect-0.3.285" / "adder.json"


@pytest.mark.parametrize(
    "argv",
    [
        ["export", str(BASE), "-o", "{out}"],
        ["import", str(INSPECT), "--run", "0", "-o", "{out}"],
        ["migrate", str(BASE), "-o", "{out}"],
        ["branch", "new", "base.json", "--at", "3", "-o", "{out}"],
    ],
    ids=["export", "import", "migrate", "branch-new"],
)
def test_a_missing_output_folder_is_an_error_and_nothing_is_created(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(BASE, tmp_path / "base.json")
    out = tmp_path / "no" / "such" / "x.json"
    assert main([a.replace("{out}", str(out)) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"chassis-inspector: {out}: the folder {out.parent} does not exist; create it first"]
    assert not (tmp_path / "no").exists()
    assert not (tmp_path / ".chassis-inspector").exists()  # branch new stored nothing either


def test_import_all_creates_its_folder_but_not_missing_parents(tmp_path, capsys):
    assert main(["import", str(INSPECT), "--all", "-o", str(tmp_path / "runs")]) == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "s1_epoch_1.json",
        "s1_epoch_2.json",
        "s2_epoch_1.json",
        "s2_epoch_2.json",
    ]
    capsys.readouterr()
    deep = tmp_path / "no" / "runs"
    assert main(["import", str(INSPECT), "--all", "-o", str(deep)]) == 2
    assert "the folder" in capsys.readouterr().err and not (tmp_path / "no").exists()
