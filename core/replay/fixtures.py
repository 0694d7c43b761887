"""Fixtures, the fixture gateway, and requirements.

A *fixture* (SPEC glossary) is a canned output for a call the base never made: a tool
result (or a model response), scoped to the ``project``, one ``branch:ID`` or one
``replay:ID``. The *fixture gateway* answers a divergent call from fixtures; it matches
by scope, name and matcher (an args hash — *exact* — or ``any`` — *tool-wide*).
Precedence (SPEC "Replay engine": fixture scopes): scope first, ``replay`` > ``branch`` > ``project``; then
exact > tool-wide; then the most recently added fixture.

A *requirement* is the open work item the engine creates when a divergent call has no
answer and the policy requires one; it carries the nearest recorded call of the same
tool with an argument diff, so the user can author the missing fixture from it.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import CanonicalizationError, FixtureError
from ..record.canonical import args_hash as compute_args_hash
from ..record.canonical import canonical_hash
from ..record.nesting import json_mode_dump
from ..record.reader import USER_JSON_LIMIT, read_input
from ..record.recording import ModelRecord, ModelResponse, Recording, ToolRecord, ToolResult
from ..record.userjson import loads_user_json

__all__ = [
    "Fixture",
    "FixtureGateway",
    "NearestCall",
    "Requirement",
    "json_diff",
    "load_fixture_file",
    "load_output_file",
    "nearest_model_call",
    "nearest_tool_call",
    "parse_scope",
]

_TOOL_RESULT_KEYS = {"content", "artifact", "error", "redacted"}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = json_mode_dump(self.model_dump, exclude_none=True)  # any depth (nesting limit)
        return out


#: what a branch or replay id may be (letters, digits, ``.``, ``_``, ``-``; no ``/``, not
#: starting with ``.``, at most 128 characters): the same rule as branch ids and events files
SCOPE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")


def parse_scope(text: str) -> str:
    """Validate the syntax of a scope string: ``project``, ``branch:ID`` or
    ``replay:ID`` with ID matching :data:`SCOPE_ID`. Whether the branch or replay exists
    is the workspace's check (:meth:`core.workspace.Workspace.check_scope`).

    Raises:
        FixtureError: anything else (``branch:``, ``replay:../../x``, ``global``).
    """
    if not isinstance(text, str):
        raise FixtureError(f"scope {text!r} must be a string: 'project', 'branch:ID' or 'replay:ID'")
    if text == "project":
        return text
    head, _, ident = text.partition(":")
    if head in ("branch", "replay") and ident and SCOPE_ID.fullmatch(ident):
        return text
    if head in ("branch", "replay") and ident:
        raise FixtureError(
            f"scope {text!r}: {ident!r} is not a {head} id (letters, digits, '.', '_', '-'; "
            "no '/', at most 128 characters, not starting with '.')"
        )
    raise FixtureError(f"scope {text!r} must be 'project', 'branch:ID' or 'replay:ID'")


_SCOPE_RANK = {"replay": 0, "branch": 1, "project": 2}


class Fixture(_Model):
    """A canned answer.

    ``kind`` is ``tool`` or ``model``; ``name`` the tool name (or model identity);
    ``args_hash`` the exact matcher (``None`` = tool-wide, answers every call of
    ``name``). For model fixtures ``args_hash`` holds the request's canonical key.
    ``output`` is a :class:`ToolResult` (tool) or :class:`ModelResponse` (model) as JSON.
    ``scope`` is ``project`` | ``branch:ID`` | ``replay:ID``; ``source`` says where it came
    from (a file, a requirement id).
    """

    id: str = Field(default_factory=lambda: "fx-" + uuid.uuid4().hex[:12])
    scope: str = "project"
    kind: Literal["tool", "model"] = "tool"
    name: str
    args_hash: str | None = None
    arguments: Any = None
    output: dict[str, Any]
    source: str | None = None
    created_at: str = Field(default_factory=_now)

    @model_validator(mode="after")
    def _check(self) -> Fixture:
        parse_scope(self.scope)
        if self.kind == "tool":
            ToolResult.model_validate(self.output)
        else:
            ModelResponse.model_validate(self.output)
        return self

    @property
    def scope_kind(self) -> str:
        return self.scope.partition(":")[0]

    @property
    def scope_id(self) -> str | None:
        return self.scope.partition(":")[2] or None

    def tool_result(self) -> ToolResult:
        """The output as a :class:`ToolResult` (tool fixtures)."""
        return ToolResult.model_validate(self.output)

    def model_response(self) -> ModelResponse:
        """The output as a :class:`ModelResponse` (model fixtures)."""
        return ModelResponse.model_validate(self.output)


class FixtureGateway:
    """Matches calls to fixtures (see module docstring for precedence).

    Built from any iterable of :class:`Fixture` in the order they were added (later ones
    win ties). Lookup is a dict access per (kind, name), never a scan of all fixtures.
    """

    def __init__(self, fixtures: list[Fixture] | None = None) -> None:
        self._by_name: dict[tuple[str, str], list[tuple[int, Fixture]]] = {}
        self._count = 0
        for f in fixtures or []:
            self.add(f)

    def add(self, fixture: Fixture) -> None:
        """Register one fixture (later additions win ties)."""
        self._count += 1
        self._by_name.setdefault((fixture.kind, fixture.name), []).append((self._count, fixture))

    def __len__(self) -> int:
        return self._count

    def match(
        self,
        kind: str,
        name: str,
        args_hash: str | None,
        *,
        branch_id: str | None = None,
        replay_id: str | None = None,
    ) -> Fixture | None:
        """The best fixture for a call, or ``None``.

        ``kind`` is ``tool``/``model``, ``name`` the tool name or model identity,
        ``args_hash`` the call's args hash (model calls: the request key). Only fixtures
        scoped to the project, to ``branch_id`` or to ``replay_id`` are eligible.
        """
        best: tuple[tuple[int, int, int], Fixture] | None = None
        for order, f in self._by_name.get((kind, name), ()):
            sk = f.scope_kind
            if sk == "branch" and f.scope_id != branch_id:
                continue
            if sk == "replay" and f.scope_id != replay_id:
                continue
            if f.args_hash is not None and f.args_hash != args_hash:
                continue
            rank = (_SCOPE_RANK[sk], 0 if f.args_hash is not None else 1, -order)
            if best is None or rank < best[0]:
                best = (rank, f)
        return best[1] if best else None


# --------------------------------------------------------------------------- files


def _read_json(path: Path) -> Any:
    data = read_input(path, limit=USER_JSON_LIMIT, error=FixtureError)
    return loads_user_json(data, str(path), FixtureError)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = "/" + "/".join(str(p) for p in err.get("loc", ()))
    msg = err.get("msg", "invalid value")
    if err.get("type") == "extra_forbidden":
        msg = f"unknown field {err['loc'][-1]!r}"
    elif err.get("type") == "missing":
        msg = f"missing required field {err['loc'][-1]!r}"
    return f"at {loc}: {msg}"


def parse_output(obj: Any, kind: str, *, source: str) -> dict[str, Any]:
    """Validate a fixture output: a tool result object (``content``, ``artifact``,
    ``error``, ``redacted``) or a model response (``message``, ``finish_reason``,
    ``usage``). Returns its JSON form. Raises FixtureError naming ``source``."""
    if not isinstance(obj, dict):
        raise FixtureError(
            f"{source}: a {kind} fixture output must be a JSON object "
            + ("with 'content' and/or 'error'" if kind == "tool" else "with 'message'")
        )
    try:
        if kind == "tool":
            if not obj or not set(obj) <= _TOOL_RESULT_KEYS:
                extra = sorted(set(obj) - _TOOL_RESULT_KEYS)
                raise FixtureError(
                    f"{source}: a tool fixture output is an object with 'content', 'artifact', "
                    f"'error' (null or {{type, message}}) and 'redacted'"
                    + (f"; unknown field(s) {extra}" if extra else "; the object is empty")
                )
            return ToolResult.model_validate(obj, strict=True).to_json_obj()
        return ModelResponse.model_validate(obj, strict=True).to_json_obj()
    except ValidationError as exc:
        raise FixtureError(f"{source}: {kind} fixture output {_first_error(exc)}") from None


def load_output_file(path: Path, kind: str) -> dict[str, Any]:
    """Read a fixture output file (see :func:`parse_output`)."""
    return parse_output(_read_json(path), kind, source=str(path))


def fixture_from_spec(obj: Any, *, source: str, index: int, default_scope: str) -> Fixture:
    """One fixture from a fixtures-file entry: ``{"tool": NAME, "arguments": {...} |
    "args_hash": "sha256:..." | "any": true, "output": {...}, "scope": ...}`` or
    ``{"model": NAME, "output": {...}}`` (model-wide)."""
    where = f"{source}: fixture {index}"
    if not isinstance(obj, dict):
        raise FixtureError(f"{where}: expected a JSON object")
    allowed = {"tool", "model", "arguments", "args_hash", "any", "output", "scope", "id"}
    extra = sorted(set(obj) - allowed)
    if extra:
        raise FixtureError(f"{where}: unknown field(s) {extra}")
    if ("tool" in obj) == ("model" in obj):
        raise FixtureError(f"{where}: give exactly one of 'tool' or 'model'")
    kind: Literal["tool", "model"] = "tool" if "tool" in obj else "model"
    name = obj[kind]
    if not isinstance(name, str) or not name:
        raise FixtureError(f"{where}: {kind!r} must be a non-empty string")
    if "output" not in obj:
        raise FixtureError(f"{where}: missing 'output'")
    output = parse_output(obj["output"], kind, source=f"{where} output")
    h = None
    arguments = None
    if kind == "tool":
        given = [k for k in ("arguments", "args_hash", "any") if k in obj]
        if len(given) != 1:
            raise FixtureError(f"{where}: give exactly one matcher: 'arguments', 'args_hash' or 'any': true")
        if "arguments" in obj:
            arguments = obj["arguments"]
            try:
                h = compute_args_hash(arguments)
            except CanonicalizationError as exc:
                raise FixtureError(f"{where}: arguments cannot be canonicalized: {exc}") from None
        elif "args_hash" in obj:
            h = obj["args_hash"]
            if not isinstance(h, str) or not h.startswith("sha256:"):
                raise FixtureError(f"{where}: 'args_hash' must be 'sha256:<hex>'")
        elif obj["any"] is not True:
            raise FixtureError(f"{where}: 'any' must be true")
    try:
        scope = parse_scope(obj.get("scope", default_scope))
    except FixtureError as exc:
        raise FixtureError(f"{where}: {exc}") from None
    kw: dict[str, Any] = {}
    if isinstance(obj.get("id"), str):
        kw["id"] = obj["id"]
    return Fixture(
        scope=scope, kind=kind, name=name, args_hash=h, arguments=arguments, output=output, source=source, **kw
    )


def load_fixture_file(path: Path, *, default_scope: str = "project") -> list[Fixture]:
    """Read a fixtures file (``--fixtures FILE``): a JSON list of fixture entries (see
    :func:`fixture_from_spec`; docs/replay.md, "Fixtures").

    Raises:
        FixtureError: naming the file and the entry — the file is not a JSON list (a
            single entry too: the file format is a list), or an entry is invalid.
    """
    obj = _read_json(path)
    if not isinstance(obj, list):
        what = "an object" if isinstance(obj, dict) else f"a {type(obj).__name__}"
        hint = " (a single fixture is written as a list of one: [{...}])" if isinstance(obj, dict) else ""
        raise FixtureError(f"{path}: a fixtures file is a JSON list of fixture entries, not {what}{hint}")
    items = obj
    return [fixture_from_spec(o, source=str(path), index=i, default_scope=default_scope) for i, o in enumerate(items)]


# --------------------------------------------------------------------------- requirements


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k in sorted(value):
            _flatten(value[k], f"{prefix}/{str(k).replace('~', '~0').replace('/', '~1')}", out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}/{i}", out)
    else:
        out[prefix or "/"] = value


def json_diff(base: Any, branch: Any, *, limit: int = 50) -> list[dict[str, Any]]:
    """Leaf-level difference of two JSON values: a list of ``{"path": JSON Pointer,
    "op": "changed"|"added"|"removed", "base": ..., "branch": ...}`` in path order,
    at most ``limit`` entries."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(base, "", a)
    _flatten(branch, "", b)
    out: list[dict[str, Any]] = []
    for path in sorted(set(a) | set(b)):
        if path in a and path in b:
            if a[path] == b[path] and type(a[path]) is type(b[path]):
                continue
            out.append({"path": path, "op": "changed", "base": a[path], "branch": b[path]})
        elif path in a:
            out.append({"path": path, "op": "removed", "base": a[path]})
        else:
            out.append({"path": path, "op": "added", "branch": b[path]})
        if len(out) >= limit:
            break
    return out


class NearestCall(_Model):
    """The recorded call closest to a requirement's call: its ``seq``, its arguments (or
    request summary), its recorded output and the diff (base → branch)."""

    seq: int
    name: str
    arguments: Any = None
    output: Any = None
    diff: list[dict[str, Any]] = Field(default_factory=list)


def _diff_size(a: Any, b: Any) -> int:
    return len(json_diff(a, b, limit=10_000))


def nearest_tool_call(base: Recording, tool: str, arguments: Any, *, near_seq: int | None = None) -> NearestCall | None:
    """The base tool call of ``tool`` whose arguments differ least from ``arguments``
    (fewest differing leaves; ties → closest to ``near_seq``, then earliest)."""
    best = None
    for r in base.records:
        if type(r) is not ToolRecord or r.tool != tool:
            continue
        size = _diff_size(r.arguments, arguments)
        dist = abs(r.seq - near_seq) if near_seq is not None else 0
        rank = (size, dist, r.seq)
        if best is None or rank < best[0]:
            best = (rank, r)
    if best is None:
        return None
    r = best[1]
    return NearestCall(
        seq=r.seq,
        name=r.tool,
        arguments=r.arguments,
        output=r.result.to_json_obj(),
        diff=json_diff(r.arguments, arguments),
    )


#: how many model steps either side of a missed call's step :func:`nearest_model_call` compares
NEAREST_WINDOW = 5


def nearest_model_call(base: Recording, model: str, request: dict[str, Any], *, step: int) -> NearestCall | None:
    """The recorded model call nearest to a missed request: among the base's calls to the
    same model (any model when none) within :data:`NEAREST_WINDOW` steps of ``step``, the
    one whose request differs from ``request`` in the fewest places (ties: the closest
    step, then the earliest), with the diff of its request against ``request`` (both as
    JSON; paths are JSON Pointers — a timestamp or a random id in a prompt shows up as
    the one path that differs)."""
    models = [r for r in base.records if type(r) is ModelRecord]
    if not models:
        return None
    at = min(step, len(models) - 1)
    window = [(i, r) for i, r in enumerate(models) if abs(i - at) <= NEAREST_WINDOW]
    same = [(i, r) for i, r in window if r.model == model] or window
    best: tuple[int, int, int] | None = None
    chosen = same[0][1]
    for i, r in same:
        rank = (_diff_size(r.request.identity(), request), abs(i - at), i)
        if best is None or rank < best:
            best, chosen = rank, r
    return NearestCall(
        seq=chosen.seq,
        name=chosen.model,
        arguments=None,
        output=chosen.response.to_json_obj() if chosen.response else None,
        diff=json_diff(chosen.request.identity(), request, limit=20),
    )


class Requirement(_Model):
    """Open work: a divergent call with no answer (SPEC glossary: requirement).

    ``id`` is derived from the replay, the call position and the call key, so a resumed
    replay that stops at the same call finds the same requirement. ``kind`` is ``tool``,
    ``model``, ``approval`` or ``user`` (a point where the agent waits on a person, after
    the branch diverged: docs/replay.md, "Replay states", the user-turn rule); ``step``
    the model-call index at the time; ``position`` the call index in the replay; ``name``
    the tool (or model; ``user`` for a person's turn); ``arguments`` the normalized
    arguments (tool calls); ``args_hash`` (tool), the request key (model) or the turn's
    key (user); ``nearest`` the closest recorded call with a diff; ``status`` ``open`` |
    ``satisfied`` | ``waived``; ``fixture_id`` the fixture that satisfied it.

    ``mismatch`` says why a tool or model call had no recorded answer (the seed
    document's ``ReplayMismatch`` reasons): ``missing`` (the call was never recorded) or
    ``exhausted`` (it was, ``recorded_answers`` times, and earlier calls of the replay used
    every one). A ``user`` requirement carries the recorded value as ``default`` (the
    answer offered) and, once a person pinned one, the ``answer``.
    """

    id: str
    replay_id: str
    step: int
    position: int
    kind: Literal["tool", "model", "approval", "user"]
    name: str
    arguments: Any = None
    args_hash: str
    request: dict[str, Any] | None = None
    nearest: NearestCall | None = None
    status: Literal["open", "satisfied", "waived"] = "open"
    fixture_id: str | None = None
    reason: str = ""
    mismatch: Literal["missing", "exhausted"] | None = None
    recorded_answers: int | None = None
    default: str | None = None
    answer: str | None = None
    created_at: str = Field(default_factory=_now)

    @staticmethod
    def make_id(replay_id: str, position: int, kind: str, key: str) -> str:
        """Deterministic id: ``req-`` + 12 hex of the hash of (replay, position, kind, key)."""
        h = canonical_hash({"replay": replay_id, "position": position, "kind": kind, "key": key})
        return "req-" + h.split(":", 1)[1][:12]
