"""Chassis Inspector: the Textual application and the command line."""

import os

from core import __version__

__all__ = ["FRAMES_PER_SECOND", "__version__", "set_frame_rate"]

#: the most frames a second the app draws. A key's repaint waits for the next frame, so
#: Textual's default of 60 adds up to 17 ms to every key; at 120 a key's repaint p95 is
#: 21-23 ms instead of 35-45 ms (docs/performance.md, "Lazy record index ..."). Frames
#: are drawn only when something changed: an idle app draws none.
FRAMES_PER_SECOND = 120


def set_frame_rate() -> None:
    """Set Textual's ``TEXTUAL_FPS`` to :data:`FRAMES_PER_SECOND` unless the user set it;
    Textual reads it once, when it is first imported, so this runs before that."""
    os.environ.setdefault("TEXTUAL_FPS", str(FRAMES_PER_SECOND))
