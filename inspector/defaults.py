"""Where the bundled recordings are, and which one opens by default.

``chassis-inspector`` with no argument opens :data:`DEFAULT_RECORDING` from
``sample_recordings/`` (beside the ``inspector`` package, at the repository root): a
real SWE-agent run (pydicom issue 1458) with rejected edits in it. Until that file
exists, the first ``*.json`` file of ``sample_recordings/`` (by name) is used.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import FormatError

#: The recording opened when no file is given (a file name inside SAMPLE_DIR).
DEFAULT_RECORDING = "swe-agent-pydicom-1458.json"

#: The folder of bundled sample recordings: <repository root>/sample_recordings.
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_recordings"


def default_recording_path(sample_dir: Path | None = None) -> Path:
    """The recording to open when none is given.

    Returns ``SAMPLE_DIR / DEFAULT_RECORDING`` if it exists, else the first ``*.json``
    in ``SAMPLE_DIR`` by name.

    Raises:
        FormatError: no recording at all in the sample folder (names the folder).
    """
    folder = SAMPLE_DIR if sample_dir is None else sample_dir
    preferred = folder / DEFAULT_RECORDING
    if preferred.is_file():
        return preferred
    candidates = sorted(p for p in folder.glob("*.json") if p.is_file())
    if not candidates:
        raise FormatError(
            f"no bundled recording found (expected {DEFAULT_RECORDING} or any *.json); pass a recording file",
            file=str(folder),
        )
    return candidates[0]
