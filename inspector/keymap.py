"""User keymaps: remap any key of the app by its binding id.

A keymap is a JSON object mapping binding ids (listed by ``?`` in the app and in
``docs/app.md``) to Textual key strings, several keys separated by commas, e.g.
``{"timeline.next_error": "ctrl+n", "app.quit": "q,ctrl+q"}``. It is read from the file
named by ``CHASSIS_INSPECTOR_KEYMAP``, else from ``~/.config/chassis-inspector/keymap.json``
when that exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from core.errors import FormatError
from core.record.reader import USER_JSON_LIMIT, read_input

DEFAULT_KEYMAP_PATH = Path("~/.config/chassis-inspector/keymap.json")


def binding_ids() -> set[str]:
    """Every binding id of the app (timeline table, timeline screen, branch editor, app)."""
    from textual.binding import Binding

    from .app import InspectorApp
    from .screens.branch_editor import BranchEditorScreen
    from .screens.timeline import TimelineScreen
    from .widgets.timeline_table import TimelineTable

    ids: set[str] = set()
    for cls in (InspectorApp, TimelineScreen, TimelineTable, BranchEditorScreen):
        ids.update(b.id for b in cls.BINDINGS if isinstance(b, Binding) and b.id)
    return ids


def keymap_path() -> Path | None:
    """The keymap file to read, or ``None`` (no variable set and no default file)."""
    env = os.environ.get("CHASSIS_INSPECTOR_KEYMAP")
    if env:
        return Path(env)
    default = DEFAULT_KEYMAP_PATH.expanduser()
    return default if default.is_file() else None


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Read and check a keymap file (``path`` or :func:`keymap_path`); ``{}`` if none.

    Raises:
        FormatError: unreadable file, malformed JSON, not an object, an unknown binding
            id or a value that is not a non-empty string (names the file and the key).
    """
    path = keymap_path() if path is None else path
    if path is None:
        return {}
    source = str(path)
    data = read_input(path, what="keymap file", limit=USER_JSON_LIMIT)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"malformed JSON: {exc.msg}", file=source, line=exc.lineno, column=exc.colno) from None
    if not isinstance(obj, dict):
        raise FormatError("a keymap must be a JSON object of binding id → keys", file=source)
    known = binding_ids()
    for k, v in obj.items():
        if k not in known:
            raise FormatError(f"unknown binding id {k!r} (press ? in the app for the list)", file=source, path=f"/{k}")
        if not isinstance(v, str) or not v.strip():
            raise FormatError(
                'keys must be a non-empty string such as "ctrl+n" or "n,ctrl+n"', file=source, path=f"/{k}"
            )
    return dict(obj)
