"""Chassis Inspector core: recordings, canonical keys, replay session (no UI here).

The curated public API; implementation lives in modules named for domain concepts.
Names load lazily on first use (PEP 562 module ``__getattr__``), so ``import core`` or
``from core import __version__`` loads no other module of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.9.0"

if TYPE_CHECKING:
    from .branch import Branch, Policy
    from .canonical import args_hash, canonical_json, model_key, normalize_stop, tool_key
    from .engine import ReplayEngine
    from .errors import (
        BranchError,
        CanonicalizationError,
        FixtureError,
        FormatError,
        InspectorError,
        PolicyDenied,
        ReplayMismatch,
        WorkspaceError,
    )
    from .fixtures import Fixture, FixtureGateway, Requirement
    from .recording import (
        FORMAT_VERSION,
        ChatMessage,
        ErrorInfo,
        InterruptRecord,
        LifecycleRecord,
        ModelRecord,
        ModelRequest,
        ModelResponse,
        Recording,
        SessionInfo,
        SnapshotRecord,
        ToolCall,
        ToolRecord,
        ToolResult,
        Usage,
    )
    from .redaction import REDACTED, SecretRedactor
    from .replay_record import ReplayRecord
    from .session import Harness, ReplayChatModel, ReplayFallback, ReplayMode, ReplaySession
    from .workspace import Workspace

#: public name -> the module of ``core`` that defines it
_API: dict[str, str] = {
    "FORMAT_VERSION": "recording",
    "REDACTED": "redaction",
    "Branch": "branch",
    "BranchError": "errors",
    "CanonicalizationError": "errors",
    "ChatMessage": "recording",
    "ErrorInfo": "recording",
    "Fixture": "fixtures",
    "FixtureError": "errors",
    "FixtureGateway": "fixtures",
    "FormatError": "errors",
    "Harness": "session",
    "InspectorError": "errors",
    "InterruptRecord": "recording",
    "LifecycleRecord": "recording",
    "ModelRecord": "recording",
    "ModelRequest": "recording",
    "ModelResponse": "recording",
    "Policy": "branch",
    "PolicyDenied": "errors",
    "Recording": "recording",
    "ReplayChatModel": "session",
    "ReplayEngine": "engine",
    "ReplayFallback": "session",
    "ReplayMismatch": "errors",
    "ReplayMode": "session",
    "ReplayRecord": "replay_record",
    "ReplaySession": "session",
    "Requirement": "fixtures",
    "SecretRedactor": "redaction",
    "SessionInfo": "recording",
    "SnapshotRecord": "recording",
    "ToolCall": "recording",
    "ToolRecord": "recording",
    "ToolResult": "recording",
    "Usage": "recording",
    "Workspace": "workspace",
    "WorkspaceError": "errors",
    "args_hash": "canonical",
    "canonical_json": "canonical",
    "model_key": "canonical",
    "normalize_stop": "canonical",
    "tool_key": "canonical",
}

__all__ = [
    "FORMAT_VERSION",
    "REDACTED",
    "Branch",
    "BranchError",
    "CanonicalizationError",
    "ChatMessage",
    "ErrorInfo",
    "Fixture",
    "FixtureError",
    "FixtureGateway",
    "FormatError",
    "Harness",
    "InspectorError",
    "InterruptRecord",
    "LifecycleRecord",
    "ModelRecord",
    "ModelRequest",
    "ModelResponse",
    "Policy",
    "PolicyDenied",
    "Recording",
    "ReplayChatModel",
    "ReplayEngine",
    "ReplayFallback",
    "ReplayMismatch",
    "ReplayMode",
    "ReplayRecord",
    "ReplaySession",
    "Requirement",
    "SecretRedactor",
    "SessionInfo",
    "SnapshotRecord",
    "ToolCall",
    "ToolRecord",
    "ToolResult",
    "Usage",
    "Workspace",
    "WorkspaceError",
    "args_hash",
    "canonical_json",
    "model_key",
    "normalize_stop",
    "tool_key",
]


def __getattr__(name: str) -> Any:
    """Load a curated name from its module on first access; AttributeError otherwise."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
