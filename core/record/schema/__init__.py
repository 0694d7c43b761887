"""The JSON Schema of the recording format, generated from the pydantic models.

``python -m core.record.schema`` rewrites ``core/record/schema/recording.schema.json``; a test fails
when the committed file drifts from the models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

SCHEMA_PATH = Path(__file__).with_name("recording.schema.json")


#: a pool id: the first 16 (or all 64) hex digits of a SHA-256 (docs/format.md § "Version 3")
POOL_ID_PATTERN = "^([0-9a-f]{16}|[0-9a-f]{64})$"


def recording_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12, as pydantic emits it) of the current format version.

    It describes the document generated from the models (the logical document) plus the
    optional members of the version-3 encoding (:func:`_allow_encoding`), so that both
    ``Recording.to_dict()`` and a saved file validate.
    """
    from ..recording import FORMAT_VERSION, Recording

    schema = Recording.model_json_schema(mode="validation")
    _allow_encoding(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://chassis-inspector.invalid/schema/recording-v{FORMAT_VERSION}.json"
    schema["title"] = f"Chassis recording (format version {FORMAT_VERSION})"
    return schema


def _allow_encoding(schema: dict[str, Any]) -> None:
    """Add the optional members of the version-3 encoding (docs/format.md § "Version 3")
    to ``schema`` in place: the header's ``index_offset`` / ``index_length`` / ``header_end`` (integers,
    byte offsets), ``summary`` (an object), ``pool`` (pool id → any JSON value), ``index`` (an object), and a
    reference ``{"$pool": id}`` wherever a chat message may stand (the writer pools
    messages; recorded content shaped like a reference is any JSON already), and a
    history reference ``{"$history": id}`` as a request's ``messages``."""
    from ..indexed import HISTORY_KEY, POOL_KEY

    defs = schema["$defs"]
    defs["PoolReference"] = {
        "additionalProperties": False,
        "description": "Stands for the value the document's pool holds under this id.",
        "properties": {POOL_KEY: {"pattern": POOL_ID_PATTERN, "type": "string"}},
        "required": [POOL_KEY],
        "title": "PoolReference",
        "type": "object",
    }
    message = {"$ref": "#/$defs/ChatMessage"}
    either = {"anyOf": [message, {"$ref": "#/$defs/PoolReference"}]}

    def swap(node: Any) -> Any:
        if node == message:
            return either
        if isinstance(node, dict):
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    for name, definition in list(defs.items()):
        if name != "ChatMessage":
            defs[name] = swap(definition)
    defs["HistoryReference"] = {
        "additionalProperties": False,
        "description": (
            "A request's messages as a history node of the pool: the messages of its parent node, "
            "then its own (pool ids)."
        ),
        "properties": {HISTORY_KEY: {"pattern": POOL_ID_PATTERN, "type": "string"}},
        "required": [HISTORY_KEY],
        "title": "HistoryReference",
        "type": "object",
    }
    request = defs["ModelRequest"]["properties"]
    request["messages"] = {"anyOf": [request["messages"], {"$ref": "#/$defs/HistoryReference"}]}
    props = schema["properties"]
    for name, what in (
        ("index_offset", "Byte offset of the record index in the file"),
        ("index_length", "Length in bytes of the record index"),
        ("header_end", "Byte offset where the header's members end"),
    ):
        props[name] = {
            "description": f"{what} (written at a fixed width).",
            "minimum": 0,
            "title": name.replace("_", " ").capitalize(),
            "type": "integer",
        }
    props["pool"] = {
        "additionalProperties": True,
        "description": 'Each shared value once, by pool id; referenced as {"$pool": id} from the records.',
        "propertyNames": {"pattern": POOL_ID_PATTERN},
        "title": "Pool",
        "type": "object",
    }
    props["summary"] = {
        "additionalProperties": True,
        "description": "What `info` prints, from the record index: counts, models, tools, run ids, tokens, first error.",
        "title": "Summary",
        "type": "object",
    }
    props["index"] = {
        "additionalProperties": True,
        "description": "The record index: byte ranges and columns (the document's last member).",
        "title": "Index",
        "type": "object",
    }


def render() -> bytes:
    """The committed file's exact bytes (indented, sorted keys, trailing newline)."""
    return orjson.dumps(recording_schema(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main() -> None:
    SCHEMA_PATH.write_bytes(render())
    print(f"wrote {SCHEMA_PATH}")


if __name__ == "__main__":
    main()
