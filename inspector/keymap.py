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


#: the modules whose widgets and screens declare bindings with ids
BINDING_MODULES = (
    "inspector.app",
    "inspector.screens.audit",
    "inspector.replay_runner",
    "inspector.screens.branch_editor",
    "inspector.screens.compare",
    "inspector.screens.effects",
    "inspector.screens.error",
    "inspector.screens.fixture_editor",
    "inspector.screens.goto",
    "inspector.screens.help",
    "inspector.screens.requirements",
    "inspector.screens.run_info",
    "inspector.screens.run_picker",
    "inspector.screens.timeline",
    "inspector.widgets.branch_tree",
    "inspector.widgets.compare_table",
    "inspector.widgets.effects_table",
    "inspector.widgets.filter_bar",
    "inspector.widgets.row_cursor",
    "inspector.widgets.timeline_table",
)


def binding_ids() -> set[str]:
    """Every binding id of the app: the ``id`` of each :class:`textual.binding.Binding`
    of every screen and widget class in :data:`BINDING_MODULES` (the timeline, the
    branch tree, the branch and fixture editors, the requirements and fixtures screens,
    their dialogs, the app)."""
    import importlib

    from textual.binding import Binding
    from textual.dom import DOMNode

    for name in BINDING_MODULES:
        importlib.import_module(name)
    ids: set[str] = set()
    pending: list[type] = [DOMNode]
    seen: set[type] = set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("inspector."):
            ids.update(b.id for b in cls.__dict__.get("BINDINGS", ()) if isinstance(b, Binding) and b.id)
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
