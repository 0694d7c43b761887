"""Chassis Inspector core: recordings, canonical keys, replay session (no UI here).

The curated public API; implementation lives in modules named for domain concepts.
"""

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

__version__ = "0.9.0"

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
