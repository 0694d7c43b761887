"""Chassis Inspector core: recordings, canonical keys, replay session (no UI here).

The curated public API; implementation lives in modules named for domain concepts.
"""

from .canonical import args_hash, canonical_json, model_key, normalize_stop, tool_key
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
from .session import Harness, ReplayChatModel, ReplayFallback, ReplayMode, ReplaySession
from .branch import Branch, Policy
from .engine import ReplayEngine, ReplayRecord
from .fixtures import Fixture, FixtureGateway, Requirement
from .workspace import Workspace

__version__ = "0.9.0"

__all__ = [
    "Branch",
    "Fixture",
    "FixtureGateway",
    "Policy",
    "ReplayEngine",
    "ReplayRecord",
    "Requirement",
    "Workspace",
    "FORMAT_VERSION",
    "REDACTED",
    "BranchError",
    "CanonicalizationError",
    "ChatMessage",
    "ErrorInfo",
    "FixtureError",
    "FormatError",
    "Harness",
    "InspectorError",
    "InterruptRecord",
    "LifecycleRecord",
    "ModelRecord",
    "ModelRequest",
    "ModelResponse",
    "PolicyDenied",
    "Recording",
    "ReplayChatModel",
    "ReplayFallback",
    "ReplayMismatch",
    "ReplayMode",
    "ReplaySession",
    "SecretRedactor",
    "SessionInfo",
    "SnapshotRecord",
    "ToolCall",
    "ToolRecord",
    "ToolResult",
    "Usage",
    "WorkspaceError",
    "args_hash",
    "canonical_json",
    "model_key",
    "normalize_stop",
    "tool_key",
]
