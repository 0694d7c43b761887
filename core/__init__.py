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
    from .record.canonical import args_hash, canonical_json, model_key, normalize_stop, tool_key
    from .record.io import recording_digest
    from .record.recording import (
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
    from .record.redaction import REDACTED, SecretRedactor
    from .replay.branch import Branch, BranchDraft, InterventionFile, Policy, ResolvedBranch, resolve_branch
    from .replay.engine import ReplayEngine
    from .replay.fixtures import Fixture, FixtureGateway, Requirement
    from .replay.replay_record import ReplayRecord
    from .replay.session import Harness, ReplayChatModel, ReplayFallback, ReplayMode, ReplaySession
    from .workspace import Workspace

#: public name -> the module of ``core`` that defines it
_API: dict[str, str] = {
    "FORMAT_VERSION": "record.recording",
    "REDACTED": "record.redaction",
    "Branch": "replay.branch",
    "BranchDraft": "replay.branch",
    "BranchError": "errors",
    "CanonicalizationError": "errors",
    "ChatMessage": "record.recording",
    "ErrorInfo": "record.recording",
    "Fixture": "replay.fixtures",
    "FixtureError": "errors",
    "FixtureGateway": "replay.fixtures",
    "FormatError": "errors",
    "Harness": "replay.session",
    "InspectorError": "errors",
    "InterruptRecord": "record.recording",
    "InterventionFile": "replay.branch",
    "LifecycleRecord": "record.recording",
    "ModelRecord": "record.recording",
    "ModelRequest": "record.recording",
    "ModelResponse": "record.recording",
    "Policy": "replay.branch",
    "PolicyDenied": "errors",
    "Recording": "record.recording",
    "ReplayChatModel": "replay.session",
    "ReplayEngine": "replay.engine",
    "ReplayFallback": "replay.session",
    "ReplayMismatch": "errors",
    "ReplayMode": "replay.session",
    "ReplayRecord": "replay.replay_record",
    "ReplaySession": "replay.session",
    "Requirement": "replay.fixtures",
    "ResolvedBranch": "replay.branch",
    "SecretRedactor": "record.redaction",
    "SessionInfo": "record.recording",
    "SnapshotRecord": "record.recording",
    "ToolCall": "record.recording",
    "ToolRecord": "record.recording",
    "ToolResult": "record.recording",
    "Usage": "record.recording",
    "Workspace": "workspace",
    "WorkspaceError": "errors",
    "args_hash": "record.canonical",
    "canonical_json": "record.canonical",
    "model_key": "record.canonical",
    "normalize_stop": "record.canonical",
    "recording_digest": "record.io",
    "resolve_branch": "replay.branch",
    "tool_key": "record.canonical",
}

__all__ = [
    "FORMAT_VERSION",
    "REDACTED",
    "Branch",
    "BranchDraft",
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
    "InterventionFile",
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
    "ResolvedBranch",
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
    "recording_digest",
    "resolve_branch",
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
