"""The Claude Code importer as committed before its fast path (commit 1c6be75:
``core/importers/claude_code.py`` with ``core/importers/_jsonl.py``'s reader inlined and
the relative imports made absolute) — the plain path the tests compare the importer with.
Not used by the product. Its own docstring follows.

Claude Code sessions (``~/.claude/projects/<project>/<session>.jsonl``): JSON Lines,
one line per event, the conversation a **tree** of lines linked by ``parentUuid``.

What the CLI writes (read from real sessions of Claude Code 2.0.42 – 2.1.114):

* ``user`` / ``assistant`` lines carry an Anthropic Messages ``message``; one model
  response is spread over several ``assistant`` lines (one per content block) that share
  ``message.id``. ``system`` lines (``stop_hook_summary``, ``turn_duration``,
  ``compact_boundary``, …), ``progress`` (hook progress) and ``attachment`` lines are in
  the tree too; ``file-history-snapshot``, ``queue-operation``, ``permission-mode``,
  ``last-prompt``, ``summary`` and ``custom-title`` lines have no ``uuid`` and sit
  beside it.
* The **main line** is the path from the root to the newest leaf that is a ``user`` or
  ``assistant`` line. A ``/rewind`` leaves the abandoned path in the file: a line with
  two children whose subtrees both hold conversation is a **fork**; every other
  conversation leaf is a **recorded alternative path** (:class:`RecordedFork`).
* ``compact_boundary`` (a ``system`` line with no ``parentUuid``) names the last line
  before the compaction in ``logicalParentUuid``: the chain goes on through it, and the
  next ``user`` line (``isCompactSummary``) is the summary the model sees instead of the
  history before it.
* Sub-agents: an ``Agent`` / ``Task`` call whose result's ``toolUseResult.agentId``
  names ``<session>/subagents/agent-<id>.jsonl`` (with ``agent-<id>.meta.json``) beside
  the session file; older versions wrote the sub-agent's lines into the session itself
  with ``isSidechain: true``.

Mapping (docs/importers.md, "Claude Code"):

* each model response (its ``assistant`` lines) → a model record: request = the
  conversation before it, response = the text, ``thinking`` (kept apart, signature kept)
  and ``tool_use`` blocks; model and usage per call — input tokens = ``input_tokens`` +
  ``cache_creation_input_tokens`` + ``cache_read_input_tokens`` (what the model read),
  the three kept in ``meta.usage``; duration = from the line before the call to its last
  line;
* each ``tool_result`` block → the tool record of the ``tool_use`` it answers (by
  ``tool_use_id``); ``is_error`` → error ``tool_error``, or ``rejected_by_user`` when
  the person refused the call (followed by an interrupt record saying so);
* a prompt the person typed → an interrupt record ``{"role": "user", "content": …}``
  (and a message of the next requests); ``[Request interrupted by user…]`` → an
  interrupt ``{"type": "interrupted", …}``; a compaction → an interrupt
  ``{"type": "compaction", "summary": …}``;
* runs: the main line (run id = the session id), each recorded alternative path
  (``SESSION~rewind-N``, linked ``forked-from`` at its checkpoint), each sub-agent
  (``agent-ID``, linked ``parent``); the main run lists them in ``links``.

The final output is the default rule: the last model response.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from core.errors import FormatError, name_text
from core.importers._build import PendingCall, RunBuilder, seconds_between
from core.importers._llm_api import _thinking_part, simplify_parts, text_part
from core.importers._source import SourceFile, TruncatedSourceError, as_object, read_source
from core.importers.base import ImportedRun, Importer, ImportWarning
from core.record.recording import ChatMessage, ErrorInfo, RunLink, ToolCall

#: longest reason text kept from a parser's message
_REASON_CHARS = 120


@dataclass(frozen=True)
class Line:
    """One parsed line: ``number`` (1-based) and ``value`` (any JSON value)."""

    number: int
    value: Any


@dataclass(frozen=True)
class BadLine:
    """A line that could not be read: ``number`` (1-based), ``reason`` (plain words),
    ``truncated`` (the file's last line, cut short: no final newline)."""

    number: int
    reason: str
    truncated: bool = False

    @property
    def message(self) -> str:
        """The warning text for a person (``ImportWarning.message``)."""
        if self.truncated:
            return f"the last line is cut short ({self.reason}); the file ends early, the line is skipped"
        return f"not a JSON line ({self.reason}); skipped"


def _exact(text: str) -> Any:
    """Parse ``text`` with the standard library, reading integers exactly and accepting
    NaN/Infinity and lone surrogates; the value tagged as the loader stores it."""
    from core.record.jsonvalues import encode_value, json_loads_exact

    value = json_loads_exact(text)
    return encode_value(value)[0]


def read_jsonl(src: SourceFile) -> tuple[list[Line], list[BadLine]]:
    """Every line of ``src`` as a :class:`Line`, and the lines that failed as
    :class:`BadLine`, both in file order. Blank lines are ignored.

    Never raises for bad content (a file that is not UTF-8 is read with
    ``surrogateescape`` and its odd bytes tagged); the caller decides whether zero good
    lines is an error.
    """
    from core.record.jsonvalues import might_hold_big_int
    from core.record.nesting import depth_reason, ensure_recursion_limit, exceeds

    ensure_recursion_limit()
    data = src.data
    ends_with_newline = data.endswith(b"\n")
    raw_lines = data.split(b"\n")
    if ends_with_newline:
        raw_lines.pop()
    good: list[Line] = []
    bad: list[BadLine] = []
    last = len(raw_lines)
    for i, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        value: Any
        try:
            value = orjson.loads(raw)
            if might_hold_big_int(raw):
                value = _exact(raw.decode("utf-8"))
        except orjson.JSONDecodeError as exc:
            try:
                value = _exact(raw.decode("utf-8", "surrogateescape"))
            except (json.JSONDecodeError, RecursionError, ValueError):
                reason = str(exc).split(":", 1)[0] if "recursion" not in str(exc).lower() else depth_reason()
                bad.append(BadLine(i, reason[:_REASON_CHARS], truncated=(i == last and not ends_with_newline)))
                continue
        if exceeds(value):
            bad.append(BadLine(i, depth_reason()))
            continue
        good.append(Line(i, value))
    return good, bad


#: the top-level ``type`` values of Claude Code session lines (CLI 2.0 – 2.1)
LINE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "attachment",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "permission-mode",
        "last-prompt",
        "custom-title",
        "agent-name",
    }
)
_CONVERSATION = ("user", "assistant")
#: the text Claude Code puts in a tool result when the person refuses the call
_REJECTED = ("The user doesn't want to proceed with this tool use", "The user doesn't want to take this action")
_INTERRUPTED = "[Request interrupted by user"
#: tool names whose result may name a sub-agent transcript
_AGENT_TOOLS = ("Agent", "Task")
_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: how many lines of the head the sniffer reads
_SNIFF_LINES = 40


@dataclass(frozen=True)
class RecordedFork:
    """A recorded alternative path of a session (a ``/rewind``): the run ``run_id`` (its
    own records, from the root to its leaf) that left the main run ``base_run_id`` after
    record ``shared_seq`` (the last record both paths share; ``-1`` when none) — so its
    ``checkpoint`` (``shared_seq + 1``) is the first record that differs. ``prompt`` is
    the person's message that starts the alternative (``None`` when the paths part on
    something else), ``base_prompt`` the one the main run has there."""

    run_id: str
    base_run_id: str
    shared_seq: int
    prompt: ChatMessage | None
    base_prompt: ChatMessage | None

    @property
    def checkpoint(self) -> int:
        """The seq of the first record after the shared prefix (in both runs)."""
        return self.shared_seq + 1


@dataclass
class _Node:
    uuid: str
    parent: str | None
    line: int
    value: dict[str, Any]
    children: list[str] = field(default_factory=list)

    @property
    def type(self) -> str:
        t = self.value.get("type")
        return t if isinstance(t, str) else ""

    @property
    def time(self) -> str:
        t = self.value.get("timestamp")
        return t if isinstance(t, str) else ""


def _head_lines(head: bytes) -> list[Any]:
    import orjson

    out = []
    for raw in head.split(b"\n")[:_SNIFF_LINES]:
        if not raw.strip():
            continue
        try:
            out.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
    return out


def session_files(folder: Path) -> list[Path]:
    """The Claude Code sessions of a project folder (``~/.claude/projects/<project>/``):
    its ``*.jsonl`` files whose first lines read as a session, sorted by name."""
    out = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    for p in entries:
        if p.suffix != ".jsonl" or not p.is_file():
            continue
        try:
            with p.open("rb") as f:
                head = f.read(64 * 1024)
        except OSError:
            continue
        if _session_reason(head) is None:
            out.append(p)
    return out


def _session_reason(head: bytes) -> str | None:
    """``None`` when the first lines of ``head`` read as a Claude Code session, else why
    not."""
    lines = _head_lines(head)
    if not lines:
        return "not JSON Lines (no line of the head parses as JSON)"
    objs = [v for v in lines if isinstance(v, dict)]
    if len(objs) < len(lines):
        return "not a Claude Code session (a line is not a JSON object)"
    if not any(v.get("type") in LINE_TYPES and _claude_line(v) for v in objs):
        return "no Claude Code session line (type user/assistant/… with a sessionId) near the start"
    if any("payload" in v and "sessionId" not in v for v in objs):
        return "lines of {timestamp, type, payload} (a Codex rollout, not a Claude Code session)"
    return None


#: line types only Claude Code writes (bookkeeping beside the conversation)
_OWN_TYPES = frozenset(LINE_TYPES - {"user", "assistant", "system", "summary"})


def _claude_line(v: dict[str, Any]) -> bool:
    """A line as Claude Code writes it: a conversation line with a ``sessionId`` or
    ``uuid``, or one of the CLI's own bookkeeping types (``file-history-snapshot``,
    ``queue-operation``, …)."""
    return "sessionId" in v or "uuid" in v or v.get("type") in _OWN_TYPES


class ClaudeCodeImporter(Importer):
    """Claude Code session files and project folders (see the module docstring)."""

    name = "claude_code"
    description = "Claude Code session (JSON Lines with sessionId, uuid/parentUuid; a project folder of them)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept JSON Lines whose first lines carry a ``sessionId`` and a Claude Code
        line ``type``; refuse Codex rollouts (``payload`` lines)."""
        return _session_reason(head)

    def load(self, path: Path) -> list[ImportedRun]:
        """Every run of a session file (main line, recorded alternatives, sub-agents), or
        of every session of a project folder.

        Raises:
            FormatError: no line of the file reads as a session line, or a folder holds
                no session (names the file or folder).
            TruncatedSourceError: the only readable lines end before any conversation.
        """
        p = Path(path)
        if p.is_dir():
            files = session_files(p)
            if not files:
                raise FormatError("no Claude Code session (*.jsonl) in this folder", file=str(p))
            runs: list[ImportedRun] = []
            for f in files:
                runs.extend(_Session(read_source(f), folder_index=len(runs)).runs())
            others = sorted(x.name for x in p.glob("*.jsonl") if x.is_file() and x not in files)
            if others:
                shown = ", ".join(name_text(n) for n in others[:5]) + (" …" if len(others) > 5 else "")
                runs[0].warnings.append(
                    ImportWarning(
                        name_text(p.name), f"{len(others)} .jsonl file(s) not read: not Claude Code sessions ({shown})"
                    )
                )
            return runs
        session = _Session(read_source(p))
        runs = session.runs()
        if session.bad and session.bad[-1].truncated:
            # the last line cut short — often a session still being written: what is
            # complete is imported (warned, line named) and marked incomplete
            for r in runs:
                r.incomplete = True
                src_meta = r.recording.metadata.get("source")
                if isinstance(src_meta, dict):
                    src_meta["incomplete"] = True
        return runs


# ------------------------------------------------------------------------------ a session


class _Session:
    """One session file: its tree, its main line, alternatives and sub-agents."""

    def __init__(self, src: SourceFile, *, folder_index: int = 0) -> None:
        self.src = src
        self.index = folder_index
        self.good, self.bad = read_jsonl(src)

    def runs(self) -> list[ImportedRun]:
        src = self.src
        objs = [ln for ln in self.good if isinstance(ln.value, dict)]
        if not objs:
            if self.bad and self.bad[-1].truncated and len(self.bad) == 1:
                raise TruncatedSourceError(
                    f"truncated: {self.bad[-1].message}", file=src.name, line=self.bad[-1].number
                )
            raise FormatError("no line of the file is a JSON object: not a Claude Code session", file=src.name)
        if not any(ln.value.get("type") in LINE_TYPES and _claude_line(ln.value) for ln in objs):
            first = objs[0].value.get("type")
            raise FormatError(
                "not a Claude Code session: no line has a Claude Code type with a sessionId or uuid "
                f"(line {objs[0].number} has type {str(first)[:40]!r})",
                file=src.name,
            )
        session_id = next(
            (ln.value["sessionId"] for ln in objs if isinstance(ln.value.get("sessionId"), str)),
            name_text(src.path.stem),
        )
        nodes: dict[str, _Node] = {}
        side: list[Line] = []
        non_object = [ln.number for ln in self.good if not isinstance(ln.value, dict)]
        for ln in objs:
            v = ln.value
            uid = v.get("uuid")
            if not isinstance(uid, str) or not uid:
                side.append(ln)
                continue
            parent = v.get("parentUuid")
            if not isinstance(parent, str) or not parent:
                lp = v.get("logicalParentUuid")  # compact_boundary: the chain goes on through it
                parent = lp if isinstance(lp, str) and lp else None
            if uid in nodes:  # the CLI rewrites a line on resume: the later copy wins
                continue
            nodes[uid] = _Node(uid, parent, ln.number, v)
        tree_warnings: list[tuple[str, str]] = []
        for n in nodes.values():
            if n.parent is not None:
                parent_node = nodes.get(n.parent)
                if parent_node is None:
                    tree_warnings.append(
                        (f"line {n.line}", "parentUuid names no line of the file; the line starts a path of its own")
                    )
                    n.parent = None
                else:
                    parent_node.children.append(n.uuid)
        main_nodes = {u: n for u, n in nodes.items() if not n.value.get("isSidechain")}
        side_nodes = {u: n for u, n in nodes.items() if n.value.get("isSidechain")}
        if not main_nodes:  # a sub-agent's own file: every line is a sidechain line
            main_nodes, side_nodes = side_nodes, {}

        leaves = _conversation_leaves(main_nodes)
        out: list[ImportedRun] = []
        if not leaves:
            # no conversation at all (e.g. only a user message before a crash): one run of
            # whatever the file holds, so its lines are still seen
            main_path: list[_Node] = sorted(main_nodes.values(), key=lambda n: n.line)
            alt_leaves: list[_Node] = []
        else:
            main_leaf = max(leaves, key=lambda n: (n.time, n.line))
            main_path = _with_results(_path(main_leaf, main_nodes, tree_warnings), main_nodes)
            alt_leaves = sorted((n for n in leaves if n is not main_leaf), key=lambda n: (n.time, n.line))
        main = self._build(session_id, session_id, main_path, side, tree_warnings, non_object)
        out.append(main)
        forks: list[RecordedFork] = []
        on_main = {n.uuid for n in main_path}
        for k, leaf in enumerate(alt_leaves, start=1):
            path = _with_results(_path(leaf, main_nodes, []), main_nodes)
            if all(n.uuid in on_main for n in path):
                continue
            alt_id = f"{session_id}~rewind-{k}"
            alt = self._build(alt_id, session_id, path, [], [], [], main_of_fork=session_id)
            fork = _fork_of(main, alt)
            forks.append(fork)
            alt.recording.links = [_link("forked-from", session_id, fork.checkpoint, "the main line of the session")]
            out.append(alt)
        # sidechains written into the session itself (older CLIs): one run per root
        roots = sorted(
            (n for n in side_nodes.values() if n.parent is None or n.parent not in side_nodes), key=lambda n: n.line
        )
        for k, root in enumerate(roots, start=1):
            path = _subtree_main_path(root, side_nodes)
            sid = f"{session_id}~sidechain-{k}"
            out.append(self._build(sid, session_id, path, [], [], [], main_of_fork=session_id))
        # sub-agent files beside the session
        out.extend(self._sub_agents(main))
        links = list(main.recording.links or [])
        for fork in forks:
            links.append(_link("fork", fork.run_id, fork.checkpoint, "a recorded alternative path (/rewind)"))
        for r in out[1:]:
            if r.parent == session_id and "~rewind-" not in r.run_id:
                seq = r.recording.metadata.get("spawned_at_seq")
                agent = r.recording.metadata.get("agent")
                title = agent.get("description") if isinstance(agent, dict) else None
                links.append(_link("sub-run", r.run_id, seq if isinstance(seq, int) else None, title))
        main.recording.links = links or None
        main.forks = forks
        for i, r in enumerate(out):
            src_meta = r.recording.metadata.get("source")
            if isinstance(src_meta, dict):
                src_meta["index"] = self.index + i
        return out

    # -- sub-agents --------------------------------------------------------------------

    def _sub_agents(self, main: ImportedRun) -> list[ImportedRun]:
        folder = self.src.path.parent / self.src.path.stem / "subagents"
        out: list[ImportedRun] = []
        for rec in main.recording.records:
            meta = getattr(rec, "meta", None) or {}
            agent_id = meta.get("agent_id") if isinstance(meta, dict) else None
            if not isinstance(agent_id, str):
                continue
            f = folder / f"agent-{agent_id}.jsonl"
            run_id = f"agent-{agent_id}"
            if not f.is_file():
                main.warnings.append(
                    ImportWarning(
                        f"record {rec.seq}",
                        f"the sub-agent transcript {name_text(self.src.path.stem)}/subagents/agent-{agent_id}.jsonl "
                        "is not beside the session; the call is kept without it",
                    )
                )
                meta["sub_run_missing"] = True
                continue
            try:
                sub = _Session(read_source(f), folder_index=0)
                runs = sub.runs()
            except FormatError as exc:
                main.warnings.append(
                    ImportWarning(f"record {rec.seq}", f"the sub-agent transcript is unreadable ({exc}); skipped")
                )
                continue
            first = runs[0]
            first.run_id = run_id
            first.parent = main.run_id
            md = first.recording.metadata
            md["agent"] = _agent_meta(f.with_suffix(".meta.json"))
            raw_args = getattr(rec, "arguments", None)
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            name = args.get("name") if isinstance(args.get("name"), str) else None
            if name:
                md["agent"]["name"] = name
            described = [x for x in (name, md["agent"].get("description")) if x]
            if described:
                md["title"] = _title(": ".join(described))
            md["spawned_at_seq"] = rec.seq
            md["parent_run"] = main.run_id
            if isinstance(md.get("source"), dict):
                md["source"]["run"] = run_id
            for r in first.recording.records:
                r.run_id = run_id
            first.recording.links = [_link("parent", main.run_id, rec.seq, "the call that started this sub-agent")]
            meta["sub_run"] = run_id
            out.append(first)
        return out

    # -- records -----------------------------------------------------------------------

    def _build(
        self,
        run_id: str,
        session_id: str,
        path: list[_Node],
        side: list[Line],
        tree_warnings: list[tuple[str, str]],
        non_object: list[int],
        *,
        main_of_fork: str | None = None,
    ) -> ImportedRun:
        b = RunBuilder("claude_code", self.src, run_id, self.index)
        for bl in self.bad if main_of_fork is None else []:
            b.warn(f"line {bl.number}", bl.message)
        for n in non_object:
            b.warn(f"line {n}", "line is not a JSON object; skipped")
        for place, msg in tree_warnings:
            b.warn(place, msg)
        meta = _Builder(b, path).run()
        skipped: dict[str, int] = {}
        for ln in side:
            t = ln.value.get("type")
            if t == "summary":
                meta.setdefault("summaries", []).append(ln.value.get("summary"))
            elif t == "custom-title":
                meta["title"] = ln.value.get("customTitle")
            elif t == "last-prompt":
                meta["last_prompt"] = ln.value.get("lastPrompt")
            elif t == "permission-mode":
                meta.setdefault("permission_modes", []).append(ln.value.get("permissionMode"))
            elif main_of_fork is None:
                kind = str(t or "untyped")
                skipped[kind] = skipped.get(kind, 0) + 1
        for kind, k in skipped.items():
            b.warn("lines", f"{k} {kind} line(s) skipped (bookkeeping of the CLI, not part of the conversation)")
        if not isinstance(meta.get("title"), str):
            prompt = next(
                (
                    r.value["content"]
                    for r in b.records
                    if r.kind == "interrupt" and isinstance(r.value, dict) and r.value.get("role") == "user"
                ),
                None,
            )
            if isinstance(prompt, str) and prompt.strip():
                meta["title"] = _title(prompt)
        first = next((n.value for n in path), {})
        meta.update(
            {
                "agent": "claude-code",
                "session_id": session_id,
                **({"cwd": first["cwd"]} if isinstance(first.get("cwd"), str) else {}),
                **({"git_branch": first["gitBranch"]} if isinstance(first.get("gitBranch"), str) else {}),
                **({"cli_version": first["version"]} if isinstance(first.get("version"), str) else {}),
            }
        )
        run = b.build({k: v for k, v in meta.items() if v is not None}, created_at=b.time(first.get("timestamp")))
        run.parent = main_of_fork
        return run


class _Builder:
    """Walks one path of lines and appends its records to a :class:`RunBuilder`."""

    def __init__(self, b: RunBuilder, path: list[_Node]) -> None:
        self.b = b
        self.path = path
        self.transcript: list[ChatMessage] = []
        self.skipped: dict[str, int] = {}
        self.models: list[str] = []

    def run(self) -> dict[str, Any]:
        path = self.path
        i = 0
        prev_time: str | None = None
        by_mid: dict[str, list[_Node]] = {}
        for n in path:
            if n.type == "assistant" and (m := _message_id(n)) is not None:
                by_mid.setdefault(m, []).append(n)
        done: set[str] = set()
        while i < len(path):
            n = path[i]
            t = n.type
            if t == "assistant":
                mid = _message_id(n)
                if mid is None:
                    self._model([n], prev_time)
                elif mid not in done:
                    # one response = every line of its message id, wherever its tool
                    # results and attachments fall between them
                    done.add(mid)
                    self._model(by_mid[mid], prev_time)
            elif t == "user":
                self._user(n)
            elif t == "system":
                self._system(n)
            else:
                self.skipped[t or "untyped"] = self.skipped.get(t or "untyped", 0) + 1
            prev_time = path[i].time or prev_time
            i += 1
        self.b.unanswered("end of the session")
        for t, k in self.skipped.items():
            self.b.warn(
                "lines", f"{k} {t} line(s) skipped (hook progress and CLI bookkeeping, not part of the conversation)"
            )
        meta: dict[str, Any] = {}
        if self.models:
            meta["model"] = self.models[-1] if len(set(self.models)) == 1 else sorted(set(self.models))
        return meta

    # -- lines ---------------------------------------------------------------------------

    def _model(self, group: list[_Node], prev_time: str | None) -> None:
        b = self.b
        first = group[0]
        place = f"line {first.line}"
        parts: list[Any] = []
        calls: list[ToolCall] = []
        for n in group:
            content = as_object(n.value.get("message")).get("content")
            blocks = (
                content
                if isinstance(content, list)
                else [{"type": "text", "text": content}]
                if isinstance(content, str)
                else []
            )
            for j, blk in enumerate(blocks):
                if not isinstance(blk, dict):
                    continue
                bt = blk.get("type")
                if bt == "text":
                    parts.append(text_part(blk.get("text", "")))
                elif bt in ("thinking", "redacted_thinking"):
                    part = _thinking_part(blk.get("thinking", ""), blk.get("signature"))
                    if bt == "redacted_thinking":
                        part = {"type": "thinking", "thinking": "", "redacted": blk.get("data")}
                    parts.append(part)
                elif bt in ("tool_use", "server_tool_use"):
                    call = b.tool_call(
                        blk.get("id"), blk.get("name"), blk.get("input", {}), f"line {n.line}.content[{j}]"
                    )
                    calls.append(call)
                else:
                    parts.append(blk)
        last = group[-1]
        msg_obj = as_object(last.value.get("message"))
        # each line of a response carries the usage the CLI knew when it wrote it: the
        # largest output figure of the lines is the closest to the whole response's
        outs = [
            o
            for n in group
            if isinstance(o := as_object(as_object(n.value.get("message")).get("usage")).get("output_tokens"), int)
            and not isinstance(o, bool)
        ]
        raw_model = msg_obj.get("model")
        model: str = raw_model if isinstance(raw_model, str) else "unknown"
        u = as_object(msg_obj.get("usage"))
        usage = None
        meta: dict[str, Any] = {"line": first.line, "uuid": first.uuid}
        if u:
            nums = {
                k: u.get(k)
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
            }
            if all(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) for v in nums.values()):
                inp = sum(
                    int(nums[k] or 0)
                    for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                )
                usage = (inp, max([int(nums["output_tokens"] or 0), *outs]))
                meta["usage"] = {k: v for k, v in nums.items() if v is not None}
        if isinstance(last.value.get("requestId"), str):
            meta["request_id"] = last.value["requestId"]
        error = None
        if last.value.get("isApiErrorMessage") or model == "<synthetic>" and last.value.get("error"):
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
            error = ErrorInfo(type="api_error", message=text or str(last.value.get("error") or "API error"))
        msg = b.message("assistant", simplify_parts(parts), tool_calls=calls or None, place=place)
        self.b.unanswered(place)  # calls still pending when the model is asked again were never answered
        rec = b.model(
            model=model,
            messages=list(self.transcript),
            response=msg if error is None else None,
            finish_reason=msg_obj.get("stop_reason") if isinstance(msg_obj.get("stop_reason"), str) else None,
            usage=usage,
            at=b.time(first.time or None),
            duration=seconds_between(prev_time, last.time),
            error=error,
            place=place,
        )
        rec.meta = meta
        if model != "unknown" and model != "<synthetic>":
            self.models.append(model)
        self.transcript.append(msg)
        for c in calls:
            b.pairer.add(PendingCall(c.id, c.name, c.arguments, bool(c.raw_arguments), place, at=first.time or None))

    def _user(self, n: _Node) -> None:
        b = self.b
        v = n.value
        place = f"line {n.line}"
        content = as_object(v.get("message")).get("content")
        at = b.time(n.time or None)
        if v.get("isCompactSummary"):
            text = _text_of(content)
            b.interrupt({"type": "compaction", "summary": text}, at=at, place=place)
            self.transcript = [b.message("user", content if isinstance(content, (str, list)) else text, place=place)]
            return
        if isinstance(content, str):
            self._prompt(content, v, at, place)
            return
        if not isinstance(content, list):
            b.warn(place, "user line without message content; skipped")
            return
        texts: list[Any] = []
        for j, blk in enumerate(content):
            if not isinstance(blk, dict):
                continue
            if blk.get("type") == "tool_result":
                self._tool_result(blk, v, at, f"{place}.content[{j}]")
            else:
                texts.append(blk)
        if texts:
            self._prompt(simplify_parts(texts), v, at, place)

    def _prompt(self, content: Any, v: dict[str, Any], at: str | None, place: str) -> None:
        b = self.b
        msg = b.message("user", content, place=place)
        text = msg.text
        if v.get("isMeta"):
            self.transcript.append(msg)  # CLI notes sent to the model (caveats, command output)
            return
        if text.startswith(_INTERRUPTED):
            b.interrupt({"type": "interrupted", "message": text}, at=at, place=place)
        else:
            b.interrupt({"role": "user", "content": text}, at=at, place=place)
        self.transcript.append(msg)

    def _tool_result(self, blk: dict[str, Any], v: dict[str, Any], at: str | None, place: str) -> None:
        b = self.b
        raw_id = blk.get("tool_use_id")
        cid: str = raw_id if isinstance(raw_id, str) else ""
        pending = b.pairer.take(cid or None, None, place)  # by tool_use_id (else warned)
        content = blk.get("content")
        text = _text_of(content)
        error = None
        rejected = False
        if blk.get("is_error") is True:
            rejected = any(text.startswith(r) for r in _REJECTED)
            error = ErrorInfo(type="rejected_by_user" if rejected else "tool_error", message=text)
        if pending is None:
            b.warn(place, f"tool result answers no pending call ({cid or 'no id'}); kept without a key")
            rec = b.tool(
                tool="unknown",
                arguments={},
                tool_call_id=cid or None,
                content=None if error else content,
                error=error,
                at=at,
                place=place,
                identity_known=False,
            )
        else:
            rec = b.tool(
                tool=pending.name,
                arguments=pending.arguments,
                tool_call_id=cid or pending.id,
                content=None if error else content,
                error=error,
                at=at,
                duration=seconds_between(pending.at, at),
                place=place,
            )
            tur = v.get("toolUseResult")
            if pending.name in _AGENT_TOOLS and isinstance(tur, dict):
                aid = tur.get("agentId")
                if isinstance(aid, str) and _AGENT_ID.fullmatch(aid):
                    rec.meta = {"agent_id": aid}
        self.transcript.append(
            b.message("tool", content if isinstance(content, (str, list)) else text, tool_call_id=cid, place=place)
        )
        if rejected:
            b.interrupt({"type": "tool_rejected", "tool": rec.tool, "message": text}, at=at, place=place)

    def _system(self, n: _Node) -> None:
        v = n.value
        sub = v.get("subtype")
        if sub == "compact_boundary":
            cm = as_object(v.get("compactMetadata"))
            self.b.interrupt(
                {"type": "compaction_boundary", **{k: cm[k] for k in ("trigger", "preTokens") if k in cm}},
                at=self.b.time(n.time or None),
                place=f"line {n.line}",
            )
            return
        key = f"system ({sub})" if isinstance(sub, str) else "system"
        self.skipped[key] = self.skipped.get(key, 0) + 1


# ------------------------------------------------------------------------------ helpers


def _message_id(n: _Node) -> str | None:
    mid = as_object(n.value.get("message")).get("id")
    return mid if isinstance(mid, str) else None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _conversation_leaves(nodes: dict[str, _Node]) -> list[_Node]:
    """The leaves of the tree's conversation: a ``user``/``assistant`` line none of whose
    descendants is one (hook progress and bookkeeping lines after it do not count)."""
    memo: dict[str, bool] = {}

    def has_conversation_below(u: str) -> bool:
        # iterative: a session may be thousands of lines deep
        stack = [(u, False)]
        while stack:
            cur, done = stack.pop()
            if cur in memo:
                continue
            kids = nodes[cur].children
            if not done:
                stack.append((cur, True))
                stack.extend((k, False) for k in kids if k in nodes and k not in memo)
                continue
            memo[cur] = any(k in nodes and (_is_conversation(nodes[k]) or memo.get(k, False)) for k in kids)
        return memo[u]

    leaves = [n for u, n in nodes.items() if _is_conversation(n) and not has_conversation_below(u)]
    # one response's blocks are lines of their own, each tool_use with its result as a
    # child: the conversation goes on below one of them only — the others are not leaves
    going_on: set[str] = set()
    for u, n in nodes.items():
        mid = _message_id(n) if n.type == "assistant" else None
        if mid is not None and has_conversation_below(u):
            going_on.add(mid)
    return [n for n in leaves if n.type != "assistant" or _message_id(n) not in going_on]


def _only_results(n: _Node) -> bool:
    """A ``user`` line whose content is tool results only (no prompt)."""
    content = as_object(n.value.get("message")).get("content")
    return (
        n.type == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _is_conversation(n: _Node) -> bool:
    """An ``assistant`` line or a ``user`` line with a prompt: what a fork is made of. A
    line of tool results hangs off the call it answers — with parallel calls, each
    ``tool_use`` line has its result as one child and the response's next block as the
    other, which is not a fork."""
    return n.type == "assistant" or (n.type == "user" and not _only_results(n))


def _with_results(path: list[_Node], nodes: dict[str, _Node]) -> list[_Node]:
    """``path`` plus what hangs off it, in file order: the other lines of each response
    on it (its ``tool_use`` blocks, each a line of its own) and the tool-result lines
    answering them (with parallel calls, the conversation goes on below one block's
    result; the others are side children)."""
    on = {n.uuid for n in path}
    mids = {m for n in path if n.type == "assistant" and (m := _message_id(n)) is not None}
    extra = [n for n in nodes.values() if n.uuid not in on and n.type == "assistant" and _message_id(n) in mids]
    on.update(n.uuid for n in extra)
    results = [
        nodes[k] for n in (*path, *extra) for k in n.children if k not in on and k in nodes and _only_results(nodes[k])
    ]
    if not extra and not results:
        return path
    return sorted([*path, *extra, *results], key=lambda n: n.line)


def _path(leaf: _Node, nodes: dict[str, _Node], warnings: list[tuple[str, str]]) -> list[_Node]:
    """The lines from the root to ``leaf``, in order (a cycle is cut, warned)."""
    out: list[_Node] = []
    seen: set[str] = set()
    cur: _Node | None = leaf
    while cur is not None:
        if cur.uuid in seen:
            warnings.append((f"line {cur.line}", "parentUuid links form a cycle; the path is cut there"))
            break
        seen.add(cur.uuid)
        out.append(cur)
        cur = nodes.get(cur.parent) if cur.parent is not None else None
    out.reverse()
    return out


def _subtree_main_path(root: _Node, nodes: dict[str, _Node]) -> list[_Node]:
    """The path from ``root`` to the newest conversation leaf below it."""
    below: list[_Node] = []
    stack = [root.uuid]
    seen = set()
    while stack:
        u = stack.pop()
        if u in seen or u not in nodes:
            continue
        seen.add(u)
        below.append(nodes[u])
        stack.extend(nodes[u].children)
    sub = {n.uuid: n for n in below}
    leaves = _conversation_leaves(sub) or below
    leaf = max(leaves, key=lambda n: (n.time, n.line))
    return _with_results(_path(leaf, sub, []), sub)


def _same_record(a: Any, b: Any) -> bool:
    return bool(a.to_json_obj() == b.to_json_obj())


def _fork_of(main: ImportedRun, alt: ImportedRun) -> RecordedFork:
    """Where ``alt`` leaves ``main``: the last record both share, the prompts there."""
    ma, al = main.recording.records, alt.recording.records
    shared = -1
    for x, y in zip(ma, al):
        xj, yj = x.to_json_obj(), y.to_json_obj()
        xj.pop("run_id", None), yj.pop("run_id", None)
        if xj != yj:
            break
        shared += 1
    k = shared + 1

    def prompt(records: list[Any]) -> ChatMessage | None:
        r = records[k] if k < len(records) else None
        if r is not None and r.kind == "interrupt" and isinstance(r.value, dict) and r.value.get("role") == "user":
            return ChatMessage(role="user", content=r.value.get("content"))
        if r is not None and r.kind == "model" and r.request.messages and r.request.messages[-1].role == "user":
            last: ChatMessage = r.request.messages[-1]
            return last
        return None

    return RecordedFork(alt.run_id, main.run_id, shared, prompt(al), prompt(ma))


def _link(rel: str, target: str, seq: int | None, title: Any) -> RunLink:
    return RunLink(rel=rel, target=target, seq=seq, title=title if isinstance(title, str) else None)


def _title(text: str, n: int = 80) -> str:
    """A run's title for a picker: the first non-empty line of ``text``, at most ``n``
    characters."""
    line = next((x.strip() for x in text.splitlines() if x.strip()), "")
    return line if len(line) <= n else line[: n - 1] + "…"


def _agent_meta(path: Path) -> dict[str, Any]:
    """What ``agent-<id>.meta.json`` says of a sub-agent (agentType, description,
    worktreePath), or ``{}``."""
    import orjson

    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: data[k] for k in ("agentType", "description", "worktreePath") if isinstance(data.get(k), str)}


__all__ = ["ClaudeCodeImporter", "RecordedFork", "session_files"]
