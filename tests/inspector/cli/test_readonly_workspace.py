"""A workspace the user cannot write (an immutable file in an immutable folder: what a
read-only mount or another user's files look like, even to root) can still be listed."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from inspector.cli import main
from tests.builders import SAMPLES


def _chattr(flag: str, *paths) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0


def test_listing_commands_read_an_unwritable_workspace(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(SAMPLES / "sample-agent-fault-tool-error.json", "base.json")
    assert main(["branch", "new", "base.json", "--at", "3", "-o", "br.json"]) == 0
    assert main(["replay", "base.json", "--branch", "br.json"]) == 0
    capsys.readouterr()
    folder = tmp_path / ".chassis-inspector"
    db = folder / "workspace.sqlite"
    if not _chattr("+i", db, folder):
        pytest.skip("chattr +i is not available here (needs CAP_LINUX_IMMUTABLE on ext2/3/4)")
    try:
        for argv in (["replay", "list"], ["branch", "list"], ["requirements"]):
            assert main(argv) == 0, capsys.readouterr().err
        out = capsys.readouterr()
        assert "rp-" in out.out and "br-" in out.out and "readonly" not in out.err
        # a command that must write says so in one line
        assert main(["replay", "base.json", "--branch", "br.json"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in err[0]
        assert "the workspace cannot be written (its file or folder is read-only)" in err[0]
    finally:
        _chattr("-i", folder, db)
