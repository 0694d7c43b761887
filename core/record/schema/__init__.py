"""The JSON Schema of the recording format, generated from the pydantic models.

``python -m core.record.schema`` rewrites ``core/record/schema/recording.schema.json``; a test fails
when the committed file drifts from the models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

SCHEMA_PATH = Path(__file__).with_name("recording.schema.json")


def recording_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12, as pydantic emits it) of the current format version."""
    from ..recording import FORMAT_VERSION, Recording

    schema = Recording.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://chassis-inspector.invalid/schema/recording-v{FORMAT_VERSION}.json"
    schema["title"] = f"Chassis recording (format version {FORMAT_VERSION})"
    return schema


def render() -> bytes:
    """The committed file's exact bytes (indented, sorted keys, trailing newline)."""
    return orjson.dumps(recording_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main() -> None:
    SCHEMA_PATH.write_bytes(render())
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
