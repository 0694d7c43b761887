"""ATIF trajectories (Agent Trajectory Interchange Format, Harbor / terminal-bench): import
and export.

Source: the ATIF RFC (harbor-framework/harbor ``rfcs/0001-trajectory-format.md``, schema
versions ``ATIF-v1.0`` … ``ATIF-v1.7``) and the trajectories Harbor's terminus-2 agent
writes (its golden test outputs, ``tests/data/real_traces/atif/``). A trajectory is one
JSON object: ``schema_version``, ``session_id`` (v1.7 also ``trajectory_id``), ``agent``
``{name, version, model_name?, tool_definitions?, extra?}``, ``steps`` and optionally
``notes``, ``final_metrics`` ``{total_prompt_tokens, total_completion_tokens,
total_cached_tokens, total_cost_usd, total_steps}``, ``continued_trajectory_ref`` (the
file that continues this one), ``subagent_trajectories`` (embedded, v1.7) and ``extra``.
A step is ``{step_id (1, 2, …), timestamp?, source: user|agent|system, message (a string
or content parts {type: text|image}), reasoning_content?, tool_calls? [{tool_call_id,
function_name, arguments}], observation? {results: [{source_call_id?, content,
subagent_trajectory_ref? [{trajectory_path?, session_id?, trajectory_id?}]}]},
metrics? {prompt_tokens, completion_tokens, cached_tokens, cost_usd, logprobs,
prompt_token_ids, completion_token_ids, extra}, model_name?, reasoning_effort?,
llm_call_count?, is_copied_context?, extra?}``.

Import (one file → one run, plus one run per trajectory it references that can be
resolved):

* an ``agent`` step → a model record. Its request is the history so far as chat
  messages: ``user`` steps as user messages, ``system`` steps before the first agent
  step as system messages, earlier agent steps as assistant messages (the same message
  as their response), their observation results as ``tool`` messages (``tool_call_id``
  and ``name`` of the call they answer). The response is the step's ``message`` with
  ``reasoning_content`` as a ``thinking`` part before it and the ``tool_calls``. Model:
  the step's ``model_name``, else ``agent.model_name``. Usage: ``metrics.prompt_tokens``
  / ``completion_tokens``. The record's ``meta`` holds ``step_id``, ``cost_usd``,
  ``cached_tokens``, ``attribution`` (``logprobs``, ``prompt_token_ids``,
  ``completion_token_ids``: never in the response text), ``metrics_extra``,
  ``step_extra``, ``reasoning_effort``, ``llm_call_count``;
* each tool call → a tool record whose result is the observation result with its
  ``source_call_id``; a result without one is paired with the step's calls by position
  (warned). A call with no result is a tool record without one (warned);
* an observation result that answers no call (terminus-2's reply to a response it could
  not parse: "Previous response had parsing errors …") is the harness's reply: a
  ``user`` message in the next request, and the model record's ``meta.harness_reply``;
* a ``system`` step after the first agent step (terminus-2's "Performed context
  summarization and handoff …"), or one that references sub-trajectories, is an
  interrupt record ``{"type": "system_step", step_id, message, subagent_trajectory_ref?,
  observation?}``: an event of the harness, not a message the model saw;
* ``is_copied_context`` steps (v1.7: copied from the previous trajectory for context)
  are history only: no records; ``llm_call_count: 0`` — no model record (its tool calls
  still are tool records, warned);
* ``subagent_trajectory_ref`` and ``continued_trajectory_ref``: a referenced file beside
  the source (in its folder, never outside it) or an embedded trajectory is imported as
  a further run of the same import, linked (format v2 ``links``: ``sub-run`` / ``next``
  from the referring run, with the seq of the record that referred to it; ``parent`` /
  ``prev`` back); a reference that cannot be resolved (no such file, outside the
  folder, not a trajectory this importer reads, a cycle, too deep) is warned (naming it)
  and listed in ``metadata.unresolved_refs``; an embedded trajectory no reference names
  is warned and not imported;
* ``tool_calls``, ``reasoning_content``, ``metrics``, ``model_name``,
  ``reasoning_effort``, ``llm_call_count`` on a user or system step are warned as not
  mapped (the RFC gives them to agent steps);
* ``final_metrics`` → ``metadata.final_metrics`` and ``metadata.usage_totals``
  ``{input_tokens, output_tokens, cost, source: "atif final_metrics"}``;
  ``agent``, ``session_id``, ``schema_version``, ``notes``, ``extra`` →
  ``metadata.atif``.

Versions: ``ATIF-v1.0`` to ``ATIF-v1.7`` are read (the fields of earlier versions are a
subset); a newer ``ATIF-v1.N`` is read by the v1.7 fields with a warning; another major
version is refused (``FormatError``).

Export (:func:`recording_to_atif`): any recording → an ``ATIF-v1.7`` trajectory. Model
records → agent steps, tool records → their observation results, new user / system
messages of a request → user / system steps, interrupts → system steps. What ATIF has no
field for (request options, stop, per-step tools, finish reason, errors, durations, a
request whose history is not the steps before it, tool results that are not text, a tool
record whose arguments are not its call's) is
kept under ``extra.chassis`` so that importing the export gives the same calls, keys and
usage back (see :func:`recording_to_atif`).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from ..errors import FormatError, name_text
from ..record.canonical import canonical_json
from ..record.recording import (
    ChatMessage,
    ErrorInfo,
    InterruptRecord,
    ModelRecord,
    Recording,
    RunLink,
    ToolCall,
    ToolRecord,
)
from ..record.recording_redaction import redacted_copy
from ._build import JsonImporter, RunBuilder, attach_value_warnings, json_text
from ._source import SourceFile, TruncatedSourceError, Truncation, as_array, as_object, parse_source_json, read_source
from .base import ImportedRun, Importer

#: the schema version :func:`recording_to_atif` writes, and the newest one read without a warning
SCHEMA_VERSION = "ATIF-v1.7"
_NEWEST_MINOR = 7
_VERSION = re.compile(r"ATIF-v(\d+)\.(\d+)\Z")
_SNIFF = re.compile(rb'"schema_version"\s*:\s*"ATIF-v')
#: how deep references (sub-agents of sub-agents, continuations) are followed
MAX_REF_DEPTH = 8

_ROOT_FIELDS = {
    "schema_version",
    "session_id",
    "trajectory_id",
    "agent",
    "steps",
    "notes",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
    "subagent_trajectories",
}
_STEP_FIELDS = {
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "reasoning_effort",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
    "llm_call_count",
    "is_copied_context",
}
#: step fields ATIF defines for agent steps only
_AGENT_ONLY = ("tool_calls", "reasoning_content", "metrics", "model_name", "reasoning_effort", "llm_call_count")
_ATTRIBUTION = ("logprobs", "prompt_token_ids", "completion_token_ids")
#: meta members of a model record that map to ATIF step fields (the rest go to extra.chassis.meta)
_STEP_META = {
    "step_id",
    "cost_usd",
    "cached_tokens",
    "attribution",
    "metrics_extra",
    "step_extra",
    "reasoning_effort",
    "llm_call_count",
    "harness_reply",
}


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 2**53 - 1


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _version_problem(ver: Any) -> str | None:
    """Why ``schema_version`` ``ver`` is not read (``None`` for ``ATIF-v1.N``)."""
    m = _VERSION.match(ver) if isinstance(ver, str) else None
    if m is None:
        return f"schema_version {ver!r} is not an ATIF version ('ATIF-v1.N')"
    if int(m.group(1)) != 1:
        return (
            f"schema_version {ver!r}: ATIF major version {m.group(1)} is not supported "
            f"(this importer reads ATIF-v1.0 to {SCHEMA_VERSION})"
        )
    return None


def _unreadable(doc: Any) -> str | None:
    """Why a referenced trajectory cannot be imported (what :meth:`_Trajectory.convert`
    would refuse: its ``schema_version``, no ``steps`` array), else ``None``."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    problem = _version_problem(doc.get("schema_version"))
    if problem is not None:
        return problem
    if not isinstance(doc.get("steps"), list):
        return "'steps' is missing or not an array"
    return None


def _chassis(obj: Any) -> dict[str, Any]:
    """``obj.extra.chassis`` (what :func:`recording_to_atif` adds), else ``{}``."""
    return as_object(as_object(as_object(obj).get("extra")).get("chassis"))


def response_content(message: Any, reasoning: Any) -> Any:
    """The content of the assistant message an agent step stands for: ``message`` (a
    string or content parts) with ``reasoning`` (``reasoning_content``) as a ``thinking``
    part first (an empty message adds nothing after it)."""
    if not isinstance(reasoning, str) or not reasoning:
        return message
    parts: list[Any] = [{"type": "thinking", "thinking": reasoning}]
    if isinstance(message, str):
        if message:
            parts.append({"type": "text", "text": message})
    elif isinstance(message, list):
        parts.extend(message)
    elif message is not None:
        parts.append({"type": "text", "text": json_text(message)})
    return parts


# =========================================================================== import


class AtifImporter(JsonImporter, Importer):
    """ATIF trajectory files (one trajectory per file, plus the trajectories it references)."""

    name: ClassVar[str] = "atif"
    description: ClassVar[str] = "ATIF trajectory (Harbor / terminal-bench, schema_version ATIF-v1.x)"

    def sniff(self, path: Path, head: bytes) -> str | None:
        """Accept a JSON object whose ``schema_version`` near the start is ``"ATIF-v…"``
        (Harbor writes it as the first member)."""
        if not head.lstrip()[:1] == b"{":
            return "not a JSON object"
        if _SNIFF.search(head):
            return None
        return 'no ATIF schema_version ("ATIF-v1.x") near the start'

    def sniff_truncated(self, head: bytes) -> bool:
        """A cut-short object with an ATIF ``schema_version``."""
        return head.lstrip()[:1] == b"{" and _SNIFF.search(head) is not None

    def convert(self, src: SourceFile, doc: Any) -> list[ImportedRun]:
        if not isinstance(doc, dict):
            raise FormatError("not an ATIF trajectory: expected a JSON object", file=src.name, path="")
        return _Loader(self.name).load(src, doc, incomplete=False)

    def recover(self, src: SourceFile, partial: Truncation) -> list[ImportedRun]:
        """The steps complete before the damage, as one incomplete run (none when the file
        was cut before its first step)."""
        doc = partial.value
        if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
            return []
        path = partial.open_path
        if path and path[0] == "steps":
            n = path[1] if len(path) > 1 and isinstance(path[1], int) else 0
            doc = {**doc, "steps": doc["steps"][:n]}
        if not doc["steps"]:
            return []
        return _Loader(self.name).load(src, doc, incomplete=True)


class _Ref:
    """A reference to another trajectory: where, what kind, the record that made it."""

    def __init__(self, kind: str, place: str, ref: Any, seq: int | None, step_id: Any) -> None:
        self.kind = kind  # "subagent" | "continued"
        self.place = place
        self.ref = ref
        self.seq = seq
        self.step_id = step_id

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "place": self.place}
        if self.step_id is not None:
            out["step_id"] = self.step_id
        if isinstance(self.ref, dict):
            for k in ("trajectory_path", "session_id", "trajectory_id"):
                if self.ref.get(k) is not None:
                    out[k] = self.ref[k]
        else:
            out["trajectory_path"] = self.ref
        return out

    def name(self) -> str:
        d = self.describe()
        return str(d.get("trajectory_path") or d.get("trajectory_id") or d.get("session_id") or "(unnamed)")


class _Loader:
    """Imports one trajectory and, recursively, the trajectories it references."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.out: list[ImportedRun] = []
        self.ids: set[str] = set()
        self.files: set[Path] = set()
        self.embedded_done: set[int] = set()

    def load(self, src: SourceFile, doc: dict[str, Any], *, incomplete: bool) -> list[ImportedRun]:
        try:
            self.files.add(src.path.resolve())
        except OSError:
            pass
        self._trajectory(src, doc, "", incomplete, 0, None, [])
        return self.out

    def _run_id(self, src: SourceFile, doc: dict[str, Any], fallback: str) -> str:
        for k in ("trajectory_id", "session_id"):
            v = doc.get(k)
            if isinstance(v, str) and v.strip():
                base = v
                break
        else:
            base = fallback or name_text(src.path.name).removesuffix(".json") or "run"
        rid, n = base, 1
        while rid in self.ids:
            n += 1
            rid = f"{base}~{n}"
        self.ids.add(rid)
        return rid

    def _trajectory(
        self,
        src: SourceFile,
        doc: dict[str, Any],
        prefix: str,
        incomplete: bool,
        depth: int,
        parent: tuple[str, str] | None,  # (rel back, parent run id)
        value_warnings: list[Any],
        fallback_id: str = "",
    ) -> str:
        run_id = self._run_id(src, doc, fallback_id)
        index = len(self.out)
        conv = _Trajectory(self.fmt, src, doc, prefix, run_id, index)
        refs = conv.convert()
        resolved: list[tuple[_Ref, Any]] = []
        unresolved: list[dict[str, Any]] = []
        for ref in refs:
            target, why = self._resolve(src, doc, prefix, ref, depth)
            if target is None:
                conv.b.warn(ref.place, f"{ref.kind} trajectory {ref.name()!r} cannot be resolved ({why}); skipped")
                unresolved.append({**ref.describe(), "reason": why})
            else:
                resolved.append((ref, target))
        for i, emb in enumerate(as_array(doc.get("subagent_trajectories"))):
            if id(emb) not in self.embedded_done:
                conv.b.warn(
                    f"{prefix}/subagent_trajectories/{i}",
                    "embedded trajectory is named by no subagent_trajectory_ref; not imported (skipped)",
                )
        run = conv.finish(unresolved, incomplete)
        if value_warnings:
            attach_value_warnings([run], value_warnings, by_index=False)
        links: list[dict[str, Any]] = []
        if parent is not None:
            links.append({"rel": parent[0], "target": parent[1]})
        self.out.append(run)
        for ref, target in resolved:
            t_src, t_doc, t_prefix, t_warnings = target
            rel, back = ("next", "prev") if ref.kind == "continued" else ("sub-run", "parent")
            child = self._trajectory(
                t_src, t_doc, t_prefix, False, depth + 1, (back, run_id), t_warnings, fallback_id=ref.name()
            )
            link: dict[str, Any] = {"rel": rel, "target": child, "title": ref.name(), "meta": ref.describe()}
            if ref.seq is not None:
                link["seq"] = ref.seq
            links.append(link)
        if links:
            run.recording.links = [RunLink.model_validate(conv.b.scrub(lk, "links")) for lk in links]
        return run_id

    def _resolve(self, src: SourceFile, doc: dict[str, Any], prefix: str, ref: _Ref, depth: int) -> tuple[Any, str]:
        """``((src, doc, prefix, value warnings), "")`` for a resolvable reference, else
        ``(None, reason)``."""
        if depth + 1 > MAX_REF_DEPTH:
            return None, f"references nest deeper than {MAX_REF_DEPTH} trajectories"
        r = ref.ref
        if isinstance(r, dict):
            for i, emb in enumerate(as_array(doc.get("subagent_trajectories"))):
                if not isinstance(emb, dict) or id(emb) in self.embedded_done:
                    continue
                if any(r.get(k) and emb.get(k) == r.get(k) for k in ("trajectory_id", "session_id")):
                    self.embedded_done.add(id(emb))
                    why = _unreadable(emb)
                    if why is not None:
                        return None, f"the embedded trajectory (/subagent_trajectories/{i}) is not read: {why}"
                    return (src, emb, f"{prefix}/subagent_trajectories/{i}", []), ""
            path = r.get("trajectory_path")
        else:
            path = r
        if not isinstance(path, str) or not path.strip():
            return None, "it names no trajectory_path and no embedded trajectory"
        folder = src.path.parent
        try:
            base = folder.resolve()
            target = (folder / path).resolve()
        except (OSError, RuntimeError, ValueError):
            return None, "its path cannot be resolved"
        if not target.is_relative_to(base):
            return None, "its path leaves the source's folder"
        if target in self.files:
            return None, "already imported (the references form a cycle)"
        try:
            exists = target.is_file()
        except OSError:
            exists = False
        if not exists:
            return None, "no such file beside the source"
        try:
            t_src = read_source(target)
            t_doc, t_warnings = parse_source_json(t_src)
        except TruncatedSourceError:
            return None, "the referenced file is truncated"
        except FormatError as exc:
            return None, f"the referenced file is not readable JSON: {exc.reason}"
        if not isinstance(t_doc, dict) or not (
            isinstance(t_doc.get("schema_version"), str) and str(t_doc["schema_version"]).startswith("ATIF-v")
        ):
            return None, "the referenced file is not an ATIF trajectory"
        why = _unreadable(t_doc)
        if why is not None:
            return None, f"the referenced file is not read: {why}"
        self.files.add(target)
        return (t_src, t_doc, "", t_warnings), ""


class _Trajectory:
    """One trajectory → the records of one run (see the module docstring)."""

    def __init__(self, fmt: str, src: SourceFile, doc: dict[str, Any], prefix: str, run_id: str, index: int) -> None:
        self.src = src
        self.doc = doc
        self.prefix = prefix
        self.b = RunBuilder(fmt, src, run_id, index)
        self.history: list[ChatMessage] = []
        self.refs: list[_Ref] = []
        self.seen_agent = False
        self.version = ""
        self.unknown_model = False

    def err(self, reason: str, place: str) -> FormatError:
        return FormatError(reason, file=self.src.name, path=place)

    def convert(self) -> list[_Ref]:
        doc, p = self.doc, self.prefix
        ver = doc.get("schema_version")
        problem = _version_problem(ver)
        if problem is not None:
            raise self.err(problem, f"{p}/schema_version")
        m = _VERSION.match(str(ver))
        if m is not None and int(m.group(2)) > _NEWEST_MINOR:
            self.b.warn(
                f"{p}/schema_version",
                f"schema_version {ver!r} is newer than {SCHEMA_VERSION}, the newest this importer knows; "
                "read by the ATIF-v1.7 fields (fields it does not know are listed as not mapped)",
            )
        self.version = str(ver)
        steps = doc.get("steps")
        if not isinstance(steps, list):
            raise self.err("'steps' is missing or not an array (an ATIF trajectory is a list of steps)", f"{p}/steps")
        extra_fields = sorted(k for k in doc if k not in _ROOT_FIELDS)
        if extra_fields:
            self.b.warn(p or "/", f"trajectory field(s) {', '.join(extra_fields)} not mapped")
        agent = as_object(doc.get("agent"))
        self.default_model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
        tools = agent.get("tool_definitions")
        self.tools = tools if isinstance(tools, list) else []
        for i, st in enumerate(steps):
            place = f"{p}/steps/{i}"
            if not isinstance(st, dict):
                self.b.warn(place, f"step is {type(st).__name__}, not an object; skipped")
                continue
            self._step(st, place, i)
        cont = doc.get("continued_trajectory_ref")
        if cont is not None:
            self.refs.append(_Ref("continued", f"{p}/continued_trajectory_ref", cont, None, None))
        return self.refs

    # -- steps ---------------------------------------------------------------------

    def _step(self, st: dict[str, Any], place: str, i: int) -> None:
        b = self.b
        sid = st.get("step_id")
        if sid != i + 1:
            b.warn(f"{place}/step_id", f"step_id {sid!r} where {i + 1} was expected (ATIF numbers steps from 1)")
        unknown = sorted(k for k in st if k not in _STEP_FIELDS)
        if unknown:
            b.warn(place, f"step field(s) {', '.join(unknown)} not mapped")
        source = st.get("source")
        if source == "agent":
            self._agent(st, place)
        elif source in ("user", "system"):
            self._plain(st, place, str(source))
        else:
            b.warn(f"{place}/source", f"step source {source!r} is not user, agent or system; kept as an interrupt")
            b.interrupt({"type": "unknown_step", "step": st}, at=b.time(st.get("timestamp")), place=place)

    def _override(self, obj: Any, key: str, place: str) -> ChatMessage | None:
        """A chat message :func:`recording_to_atif` stored as it was (``extra.chassis.KEY``)."""
        raw = _chassis(obj).get(key)
        if raw is None:
            return None
        try:
            m = ChatMessage.model_validate(raw)
        except ValidationError:
            self.b.warn(place, f"extra.chassis.{key} is not a chat message; ignored")
            return None
        return self.b.message(
            m.role, m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id, name=m.name, place=place
        )

    def _plain(self, st: dict[str, Any], place: str, role: str) -> None:
        b = self.b
        ch = _chassis(st)
        at = b.time(st.get("timestamp"))
        if "interrupt" in ch:
            if ch.get("inside_step") is None:  # else the agent step it names holds it
                b.interrupt(ch["interrupt"], at=at, place=place)
            return
        ignored = sorted(k for k in _AGENT_ONLY if st.get(k) is not None)
        if ignored:
            b.warn(place, f"field(s) {', '.join(ignored)} of a {role} step not mapped (ATIF gives them to agent steps)")
        results = as_array(as_object(st.get("observation")).get("results"))
        has_refs = any(isinstance(r, dict) and r.get("subagent_trajectory_ref") for r in results)
        copied = st.get("is_copied_context") is True
        if role == "system" and not copied and (has_refs or (self.seen_agent and not ch.get("in_history"))):
            value: dict[str, Any] = {"type": "system_step", "step_id": st.get("step_id"), "message": st.get("message")}
            contents = []
            refs = []
            for j, r in enumerate(results):
                if not isinstance(r, dict):
                    continue
                if r.get("content") is not None:
                    contents.append(r["content"])
                for k, ref in enumerate(as_array(r.get("subagent_trajectory_ref"))):
                    refs.append(ref)
                    self.refs.append(
                        _Ref(
                            "subagent",
                            f"{place}/observation/results/{j}/subagent_trajectory_ref/{k}",
                            ref,
                            len(b.records),
                            st.get("step_id"),
                        )
                    )
            if refs:
                value["subagent_trajectory_ref"] = refs
            if contents:
                value["observation"] = contents
            b.interrupt(value, at=at, place=place)
            return
        msg = self._override(st, "message", place) or b.message(role, st.get("message"), place=f"{place}/message")
        self.history.append(msg)
        if results:
            for j, r in enumerate(results):
                c = as_object(r).get("content")
                if c is not None:
                    b.warn(f"{place}/observation/results/{j}", f"observation of a {role} step kept as a user message")
                    self.history.append(b.message("user", c, place=f"{place}/observation/results/{j}"))

    def _agent(self, st: dict[str, Any], place: str) -> None:
        b = self.b
        ch = _chassis(st)
        at = b.time(st.get("timestamp"))
        response = self._override(st, "message", place)
        if response is None:
            calls = []
            for j, tc in enumerate(as_array(st.get("tool_calls"))):
                tp = f"{place}/tool_calls/{j}"
                if not isinstance(tc, dict):
                    b.warn(tp, f"tool call is {type(tc).__name__}, not an object; skipped")
                    continue
                name = tc.get("function_name")
                if not isinstance(name, str) or not name:
                    b.warn(tp, "tool call has no function_name; recorded as 'unknown'")
                    name = "unknown"
                calls.append(b.tool_call(tc.get("tool_call_id"), name, tc.get("arguments"), tp))
            if st.get("tool_calls") is not None and not isinstance(st.get("tool_calls"), list):
                b.warn(f"{place}/tool_calls", "tool_calls is not an array; skipped")
            rc = st.get("reasoning_content")
            if rc is not None and not isinstance(rc, str):
                b.warn(f"{place}/reasoning_content", f"reasoning_content is {type(rc).__name__}, not a string; skipped")
            content = response_content(st.get("message"), rc)
            response = b.message("assistant", content, tool_calls=calls, place=f"{place}/message")
        calls = list(response.tool_calls or [])
        copied = st.get("is_copied_context") is True
        llm = st.get("llm_call_count")
        rec: ModelRecord | None = None
        if not copied and llm == 0:
            if not ch.get("no_model"):
                b.warn(place, "llm_call_count is 0: no model call; the step's tool calls are recorded without one")
                self.history.append(response)
        elif not copied:
            if isinstance(llm, int) and _is_count(llm) and llm > 1:
                b.warn(place, f"the step stands for {llm} model calls; imported as one model record")
            self.seen_agent = True
            rec = self._model_record(st, ch, place, at, response)
            self.history = [*rec.request.messages, response]
        else:
            self.history.append(response)
        # observation results → tool records (paired by id, else by position) / the harness's reply
        results = as_array(as_object(st.get("observation")).get("results"))
        by_id = {c.id: c for c in calls if c.id}
        taken: set[int] = set()
        pairs: list[tuple[int, Any, Any]] = []  # (index, result, call or None)
        for j, r in enumerate(results):
            call = None
            if isinstance(r, dict):
                sc = r.get("source_call_id")
                c = by_id.get(sc) if isinstance(sc, str) else None
                if c is not None and id(c) not in taken:
                    call = c
                    taken.add(id(c))
            pairs.append((j, r, call))
        harness: list[Any] = []
        inside = [x for x in as_array(ch.get("interrupts")) if isinstance(x, dict)]

        emitted: set[int] = set()

        def interrupts_before(k: int | None) -> None:
            for n, x in enumerate(inside):
                if n not in emitted and (k is None or x.get("before_result") == k):
                    emitted.add(n)
                    b.interrupt(x.get("value"), at=b.time(x["at"]) if x.get("at") else None, place=place)

        for n, (j, r, call) in enumerate(pairs):
            interrupts_before(j)
            rp = f"{place}/observation/results/{j}"
            if not isinstance(r, dict):
                b.warn(rp, f"observation result is {type(r).__name__}, not an object; skipped")
                continue
            rch = _chassis(r)
            sc = r.get("source_call_id")
            if call is None and "tool" not in rch:
                free = next((c for c in calls if id(c) not in taken), None)
                if free is not None:
                    taken.add(id(free))
                    call = free
                    how = (
                        "has no source_call_id"
                        if not sc
                        else f"has source_call_id {sc!r}, which no call of the step has"
                    )
                    b.warn(
                        rp,
                        f"observation result {how}; paired by position with call {free.id or '(no id)'} ({free.name})",
                    )
                    pairs[n] = (j, r, call)
            for k, ref in enumerate(as_array(r.get("subagent_trajectory_ref"))):
                seq = rec.seq if rec is not None else None
                self.refs.append(_Ref("subagent", f"{rp}/subagent_trajectory_ref/{k}", ref, seq, st.get("step_id")))
            content = r.get("content")
            if call is not None:  # the record's own arguments when they were not the call's (an export)
                args = rch["arguments"] if "arguments" in rch else call.arguments
                self._tool(call.name, args, call.id, r, rch, rp, copied)
                msg = self._override(r, "message", rp) or b.message(
                    "tool", content, tool_call_id=call.id, name=call.name, place=rp
                )
                self.history.append(msg)
            elif "tool" in rch:  # a tool record that answered no call of the step (an export of one)
                t = as_object(rch.get("tool"))
                self._tool(str(t.get("tool") or "unknown"), t.get("arguments"), sc, r, rch, rp, copied)
            elif content is not None:
                harness.append(content)
                msg = self._override(r, "message", rp) or b.message("user", content, place=rp)
                self.history.append(msg)
        interrupts_before(None)
        skip = {x for x in as_array(ch.get("unanswered")) if isinstance(x, str)}
        for c in calls:
            if id(c) not in taken and not copied and c.id not in skip:
                b.warn(place, f"tool call {c.id or '(no id)'} ({c.name}) has no observation result")
                b.tool(tool=c.name, arguments=c.arguments, tool_call_id=c.id, content=None, place=place)
        if rec is not None:
            meta = dict(rec.meta or {})
            if harness:
                meta["harness_reply"] = harness
            rec.meta = b.scrub(meta, place) if meta else None

    def _model_record(
        self, st: dict[str, Any], ch: dict[str, Any], place: str, at: str | None, response: ChatMessage
    ) -> ModelRecord:
        b = self.b
        model = st.get("model_name") if isinstance(st.get("model_name"), str) else None
        model = model or self.default_model
        if not model:
            if not self.unknown_model:
                b.warn(f"{place}/model_name", "no model_name in the step or the agent; model records say 'unknown'")
                self.unknown_model = True
            model = "unknown"
        metrics = as_object(st.get("metrics"))
        usage = None
        pt, ct = metrics.get("prompt_tokens"), metrics.get("completion_tokens")
        if pt is not None or ct is not None:
            if (pt is None or _is_count(pt)) and (ct is None or _is_count(ct)):
                usage = (pt or 0, ct or 0)
            else:
                b.warn(f"{place}/metrics", "the token usage is not a pair of counts; dropped")
        meta: dict[str, Any] = {}
        for k, v in as_object(ch.get("meta")).items():
            meta[k] = v
        if st.get("step_id") is not None:
            meta["step_id"] = st.get("step_id")
        if metrics.get("cost_usd") is not None:
            meta["cost_usd"] = metrics["cost_usd"]
        if metrics.get("cached_tokens") is not None:
            meta["cached_tokens"] = metrics["cached_tokens"]
        attribution = {k: metrics[k] for k in _ATTRIBUTION if metrics.get(k) is not None}
        if attribution:
            meta["attribution"] = attribution
        if metrics.get("extra") is not None:
            meta["metrics_extra"] = metrics["extra"]
        step_extra = {k: v for k, v in as_object(st.get("extra")).items() if k != "chassis"}
        if step_extra:
            meta["step_extra"] = step_extra
        for k in ("reasoning_effort", "llm_call_count"):
            if st.get(k) is not None:
                meta[k] = st[k]
        messages = list(self.history)
        if "request_messages" in ch:
            try:
                given = [ChatMessage.model_validate(m) for m in as_array(ch.get("request_messages"))]
                messages = [
                    b.message(
                        m.role,
                        m.content,
                        tool_calls=m.tool_calls,
                        tool_call_id=m.tool_call_id,
                        name=m.name,
                        place=place,
                    )
                    for m in given
                ]
            except ValidationError:
                b.warn(place, "extra.chassis.request_messages are not chat messages; the steps before are used")
        tools = ch.get("tools") if isinstance(ch.get("tools"), list) else self.tools
        options = ch.get("options") if isinstance(ch.get("options"), dict) else None
        error = None
        e = ch.get("error")
        if isinstance(e, dict) and isinstance(e.get("type"), str):
            error = ErrorInfo(type=e["type"], message=str(e.get("message") or ""))
        fr = ch.get("finish_reason")
        rec = b.model(
            model=model,
            messages=messages,
            response=None if ch.get("no_response") else response,
            tools=tools,
            options=options,
            stop=ch.get("stop"),
            finish_reason=fr if isinstance(fr, str) else None,
            usage=usage,
            at=at,
            duration=ch.get("duration_seconds"),
            error=error,
            place=place,
        )
        rec.meta = meta or None
        return rec

    def _tool(
        self,
        name: str,
        arguments: Any,
        call_id: Any,
        r: dict[str, Any],
        rch: dict[str, Any],
        place: str,
        copied: bool,
    ) -> None:
        if copied:
            return
        b = self.b
        content = r.get("content")
        error = None
        artifact = None
        res = rch.get("result")
        if isinstance(res, dict):  # the tool record's result as it was (an export of one)
            content = res.get("content")
            artifact = res.get("artifact")
            e = res.get("error")
            if isinstance(e, dict) and isinstance(e.get("type"), str):
                error = ErrorInfo(type=e["type"], message=str(e.get("message") or ""))
        rec = b.tool(
            tool=name,
            arguments=arguments,
            tool_call_id=call_id if isinstance(call_id, str) else None,
            content=content,
            error=error,
            artifact=artifact,
            identity_known=rch.get("no_key") is not True,
            at=b.time(rch.get("at")) if rch.get("at") is not None else None,
            duration=rch.get("duration_seconds"),
            place=place,
        )
        if isinstance(res, dict) and res.get("redacted") is True:
            rec.result.redacted = True  # it was redacted before the export
        meta = dict(as_object(rch.get("meta")))
        rx = {k: v for k, v in as_object(r.get("extra")).items() if k != "chassis"}
        if rx:
            meta["result_extra"] = rx
        if meta:
            rec.meta = b.scrub(meta, place)

    # -- finishing -----------------------------------------------------------------

    def finish(self, unresolved: list[dict[str, Any]], incomplete: bool) -> ImportedRun:
        doc = self.doc
        agent = as_object(doc.get("agent"))
        chassis = _chassis(doc)
        meta: dict[str, Any] = {}
        cm = chassis.get("metadata")
        if isinstance(cm, dict):  # an export of a recording: its metadata comes back
            meta.update({k: v for k, v in cm.items() if k != "source"})
            if "source" in cm:
                meta["exported_from"] = cm["source"]
        atif: dict[str, Any] = {"schema_version": self.version}
        for k in ("session_id", "trajectory_id", "notes", "continued_trajectory_ref"):
            if doc.get(k) is not None:
                atif[k] = doc[k]
        if agent:
            atif["agent"] = agent
        extra = {k: v for k, v in as_object(doc.get("extra")).items() if k != "chassis"}
        if extra:
            atif["extra"] = extra
        meta["atif"] = atif
        if isinstance(agent.get("name"), str):
            meta.setdefault("agent", agent["name"])
        if self.default_model:
            meta.setdefault("model", self.default_model)
        fm = doc.get("final_metrics")
        if isinstance(fm, dict):
            meta["final_metrics"] = fm
            totals: dict[str, Any] = {}
            if _is_count(fm.get("total_prompt_tokens")):
                totals["input_tokens"] = fm["total_prompt_tokens"]
            if _is_count(fm.get("total_completion_tokens")):
                totals["output_tokens"] = fm["total_completion_tokens"]
            if _is_number(fm.get("total_cost_usd")):
                totals["cost"] = fm["total_cost_usd"]
            if totals:
                meta["usage_totals"] = {**totals, "source": "atif final_metrics"}
        if unresolved:
            meta["unresolved_refs"] = unresolved
        created = None
        session = as_object(chassis.get("session"))
        if isinstance(session.get("created_at"), str):
            created = self.b.time(session["created_at"])
        else:
            first = next(
                (s.get("timestamp") for s in as_array(doc.get("steps")) if isinstance(s, dict) and s.get("timestamp")),
                None,
            )
            created = self.b.time(first) if first is not None else None
        return self.b.build(meta, created_at=created, incomplete=incomplete)


# =========================================================================== export


def _message_json(role: str, content: Any, **kw: Any) -> dict[str, Any]:
    """The JSON of the chat message the importer rebuilds (for comparing with the recorded one)."""
    return ChatMessage.model_construct(
        role=role,
        content=content,
        tool_calls=kw.get("tool_calls") or None,
        tool_call_id=kw.get("tool_call_id"),
        name=kw.get("name"),
    ).to_json_obj()


def _atif_message(content: Any) -> Any:
    """A chat message's content as an ATIF ``message``: a string, or content parts when it
    holds images (text parts joined into one string otherwise; ``None`` → ``""``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        images = [p for p in content if isinstance(p, dict) and p.get("type") == "image"]
        if images:
            return [p for p in content if isinstance(p, dict) and p.get("type") in ("text", "image")]
        return "\n".join(t for t in texts if isinstance(t, str))
    return json_text(content)


def _split_response(content: Any) -> tuple[Any, str | None]:
    """``(message, reasoning_content)`` of a response's content: its ``thinking`` parts
    are the reasoning, the rest the message."""
    if not isinstance(content, list):
        return _atif_message(content), None
    thinking = [p.get("thinking") for p in content if isinstance(p, dict) and p.get("type") == "thinking"]
    rest = [p for p in content if not (isinstance(p, dict) and p.get("type") == "thinking")]
    reasoning = "\n\n".join(t for t in thinking if isinstance(t, str)) if thinking else None
    msg = _atif_message(rest) if rest else ""
    if not rest and not thinking:
        msg = _atif_message(content)
    return msg, reasoning or None


def _tool_result_text(r: ToolRecord) -> Any:
    if r.result.content is not None:
        c = r.result.content
        if isinstance(c, str):
            return c
        if isinstance(c, list) and all(isinstance(p, dict) and p.get("type") in ("text", "image") for p in c):
            return c
        return json_text(c)
    if r.result.error is not None:
        return f"{r.result.error.type}: {r.result.error.message}"
    return ""


def recording_to_atif(rec: Recording) -> dict[str, Any]:
    """The recording as an ``ATIF-v1.7`` trajectory (a dict; what is exported is redacted,
    ``rec`` is untouched).

    * the first model record's request gives the first steps: its system and user
      messages as ``system`` / ``user`` steps;
    * each model record → an ``agent`` step (``step_id`` 1, 2, … over every step):
      ``message`` and ``reasoning_content`` (``thinking`` parts) from the response,
      ``tool_calls`` ``{tool_call_id, function_name, arguments}``, ``model_name``,
      ``timestamp`` (``at``), ``metrics`` (usage as ``prompt_tokens`` /
      ``completion_tokens``; ``cost_usd``, ``cached_tokens``, ``logprobs`` and token ids
      from the record's ``meta`` when it came from ATIF); the user / system messages a
      request adds after the previous response and its tool results → ``user`` /
      ``system`` steps before it;
    * each tool record → an observation result ``{source_call_id, content}`` of the step
      that asked for it; ``content`` is the text the next request showed the model (its
      ``tool`` message), else the result as text;
    * each interrupt record → a ``system`` step; lifecycle and snapshot records are not
      exported (counted in ``extra.chassis.not_exported``).

    ATIF has no field for some of what a record holds; it goes under ``extra.chassis``
    (of the step, the result or the trajectory), only when the importer would not
    rebuild it from the ATIF fields alone: request ``options``, ``stop`` and ``tools``
    (``agent.tool_definitions`` when every model call had the same), ``finish_reason``,
    ``duration_seconds``, ``error``, other ``meta``; a chat message that the ATIF fields do
    not give back exactly (``message``); a tool record's arguments when they are not its
    call's (``arguments``); the whole request when its history is not the
    steps before it (``request_messages``); a tool result that is not the observation
    text (``result``); the recording's metadata and session. So importing the export
    gives every model and tool call back with the same keys, arguments and usage.
    ``final_metrics`` is the recording's ``metadata.final_metrics`` (an ATIF import's),
    else the sums of the steps' metrics.

    Raises:
        CanonicalizationError: a value with no JSON form (cannot happen for a validated
            recording).
    """
    rec = redacted_copy(rec)
    md = rec.metadata if isinstance(rec.metadata, dict) else {}
    atif_md = as_object(md.get("atif"))
    records = list(rec.records)
    models = [r for r in records if isinstance(r, ModelRecord)]
    tool_sets = {canonical_json(r.request.tools) for r in models}
    shared_tools = models[0].request.tools if models and len(tool_sets) == 1 and models[0].request.tools else None

    # the tool message each tool record's result is shown as in a later request
    shown: dict[str, dict[str, Any]] = {}
    for mr in models:
        for cm in mr.request.messages:
            if cm.role == "tool" and cm.tool_call_id and cm.tool_call_id not in shown:
                shown[cm.tool_call_id] = cm.to_json_obj()

    steps: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    not_exported: Counter[str] = Counter()
    seen_agent = False
    last_agent: dict[str, Any] | None = None
    last_calls: dict[str, str] = {}
    last_args: dict[str, Any] = {}

    def add(step: dict[str, Any]) -> dict[str, Any]:
        out = {"step_id": len(steps) + 1, **step}
        steps.append(out)
        return out

    def chassis_of(obj: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = obj.setdefault("extra", {}).setdefault("chassis", {})
        return out

    def close_step() -> None:
        if last_agent is not None and last_calls:
            chassis_of(last_agent)["unanswered"] = sorted(last_calls)

    for r in records:
        if isinstance(r, ModelRecord):
            close_step()
            req = [m.to_json_obj() for m in r.request.messages]
            new: list[dict[str, Any]] | None = None
            if req[: len(history)] == history:
                new = req[len(history) :]
                if any(m.get("role") not in ("user", "system") or m.get("tool_calls") for m in new):
                    new = None
            if new is not None:
                for m in new:
                    s: dict[str, Any] = {"source": m["role"], "message": _atif_message(m.get("content"))}
                    if _message_json(m["role"], s["message"]) != m:
                        chassis_of(s)["message"] = m
                    if m["role"] == "system" and seen_agent:
                        chassis_of(s)["in_history"] = True
                    add(s)
                    history.append(m)
            step: dict[str, Any] = {"source": "agent"}
            if r.at is not None:
                step["timestamp"] = r.at
            step["model_name"] = r.model
            meta = dict(r.meta or {})
            resp = r.response.message if r.response is not None else ChatMessage(role="assistant", content="")
            message, reasoning = _split_response(resp.content)
            step["message"] = message
            if reasoning:
                step["reasoning_content"] = reasoning
            if resp.tool_calls:
                step["tool_calls"] = [
                    {
                        "tool_call_id": tc.id,
                        "function_name": tc.name,
                        "arguments": tc.arguments if isinstance(tc.arguments, dict) else {},
                    }
                    for tc in resp.tool_calls
                ]
            for k in ("reasoning_effort", "llm_call_count"):
                if meta.get(k) is not None:
                    step[k] = meta[k]
            metrics: dict[str, Any] = {}
            if r.response is not None and r.response.usage is not None:
                metrics["prompt_tokens"] = r.response.usage.input_tokens
                metrics["completion_tokens"] = r.response.usage.output_tokens
            if meta.get("cached_tokens") is not None:
                metrics["cached_tokens"] = meta["cached_tokens"]
            if meta.get("cost_usd") is not None:
                metrics["cost_usd"] = meta["cost_usd"]
            metrics.update({k: v for k, v in as_object(meta.get("attribution")).items() if k in _ATTRIBUTION})
            if meta.get("metrics_extra") is not None:
                metrics["extra"] = meta["metrics_extra"]
            if metrics:
                step["metrics"] = metrics
            if isinstance(meta.get("step_extra"), dict):
                step["extra"] = dict(meta["step_extra"])
            ch: dict[str, Any] = {}
            rebuilt = _message_json(
                "assistant",
                response_content(message, reasoning),
                tool_calls=[
                    ToolCall.model_construct(id=c["tool_call_id"], name=c["function_name"], arguments=c["arguments"])
                    for c in step.get("tool_calls", [])
                ],
            )
            if rebuilt != resp.to_json_obj():
                ch["message"] = resp.to_json_obj()
            if new is None:
                ch["request_messages"] = req
            if r.request.tools and shared_tools is None:
                ch["tools"] = r.request.tools
            if r.request.options:
                ch["options"] = r.request.options
            if r.request.stop:
                ch["stop"] = r.request.stop
            if r.response is None:
                ch["no_response"] = True
            elif r.response.finish_reason is not None:
                ch["finish_reason"] = r.response.finish_reason
            if r.duration_seconds is not None:
                ch["duration_seconds"] = r.duration_seconds
            if r.error is not None:
                ch["error"] = r.error.to_json_obj()
            other = {k: v for k, v in meta.items() if k not in _STEP_META}
            if other:
                ch["meta"] = other
            if ch:
                chassis_of(step).update(ch)
            history = list(req) + [resp.to_json_obj()]
            last_agent = add(step)
            last_calls = {tc.id: tc.name for tc in resp.tool_calls or []}
            last_args = {tc.id: tc.arguments for tc in resp.tool_calls or []}
            seen_agent = True
            for reply in as_array(meta.get("harness_reply")):
                last_agent.setdefault("observation", {"results": []})["results"].append({"content": reply})
                history.append(_message_json("user", reply))
        elif isinstance(r, ToolRecord):
            if last_agent is None:  # tool calls no model call asked for: a step without one
                last_agent = add({"source": "agent", "message": "", "llm_call_count": 0})
                chassis_of(last_agent)["no_model"] = True
                last_calls = {}
            content = _tool_result_text(r)
            seen = shown.get(r.tool_call_id or "")
            if seen is not None and isinstance(seen.get("content"), (str, list)):
                content = seen["content"]
            res: dict[str, Any] = {}
            if r.tool_call_id:
                res["source_call_id"] = r.tool_call_id
            res["content"] = content
            rch: dict[str, Any] = {}
            answers = r.tool_call_id in last_calls and last_calls[r.tool_call_id] == r.tool
            if not answers:
                rch["tool"] = {"tool": r.tool, "arguments": r.arguments}
            elif r.arguments != last_args.get(r.tool_call_id or ""):
                rch["arguments"] = r.arguments  # the tool ran with other arguments than the call's
            if r.key is None:
                rch["no_key"] = True  # its identity was not in its source: no key on import either
            if (
                r.result.content != content
                or r.result.error is not None
                or r.result.artifact is not None
                or r.result.redacted
            ):
                rch["result"] = r.result.to_json_obj()
                if not r.result.redacted:
                    rch["result"].pop("redacted", None)
            if r.at is not None:
                rch["at"] = r.at
            if r.duration_seconds is not None:
                rch["duration_seconds"] = r.duration_seconds
            tmeta = dict(r.meta or {})
            if isinstance(tmeta.get("result_extra"), dict):
                res["extra"] = dict(tmeta.pop("result_extra"))
            if tmeta:
                rch["meta"] = tmeta
            if answers:
                msg = _message_json("tool", content, tool_call_id=r.tool_call_id, name=r.tool)
                if seen is not None and seen != msg:
                    rch["message"] = seen
                    msg = seen
                history.append(msg)
                last_calls.pop(r.tool_call_id or "", None)
            if rch:
                chassis_of(res).update(rch)
            last_agent.setdefault("observation", {"results": []})["results"].append(res)
        elif isinstance(r, InterruptRecord):
            v = r.value
            s = {"source": "system"}
            if r.at is not None:
                s["timestamp"] = r.at
            if isinstance(v, dict) and v.get("type") == "system_step":
                s["message"] = v.get("message") if isinstance(v.get("message"), (str, list)) else ""
                results: list[dict[str, Any]] = [{"content": c} for c in as_array(v.get("observation"))]
                if v.get("subagent_trajectory_ref"):
                    results.append({"subagent_trajectory_ref": v["subagent_trajectory_ref"]})
                if results:
                    s["observation"] = {"results": results}
            else:
                s["message"] = v if isinstance(v, str) else json_text(v)
            chassis_of(s)["interrupt"] = v
            if last_agent is not None and last_calls:
                # between a call and its result (an approval): the importer puts it back there
                done = len(as_object(last_agent.get("observation")).get("results") or [])
                chassis_of(last_agent).setdefault("interrupts", []).append(
                    {"before_result": done, "value": v, "at": r.at}
                )
                chassis_of(s)["inside_step"] = last_agent["step_id"]
            add(s)
        else:
            not_exported[r.kind] += 1

    close_step()
    agent = dict(as_object(atif_md.get("agent")))
    if not agent:
        agent = {"name": md.get("agent") if isinstance(md.get("agent"), str) else "unknown", "version": "unknown"}
        names = Counter(r.model for r in models)
        if names:
            agent["model_name"] = names.most_common(1)[0][0]
    if shared_tools is not None:
        agent["tool_definitions"] = shared_tools
    else:
        agent.pop("tool_definitions", None)
    src = as_object(md.get("source"))
    session_id = atif_md.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        session_id = src.get("run") if isinstance(src.get("run"), str) else None
        session_id = session_id or next((r.run_id for r in records if r.run_id), None) or "run"
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "session_id": session_id}
    if isinstance(atif_md.get("trajectory_id"), str):
        doc["trajectory_id"] = atif_md["trajectory_id"]
    doc["agent"] = agent
    doc["steps"] = steps
    if isinstance(atif_md.get("notes"), str):
        doc["notes"] = atif_md["notes"]
    fm = md.get("final_metrics") if isinstance(md.get("final_metrics"), dict) and atif_md else None
    if fm is None:
        agent_metrics = [as_object(s.get("metrics")) for s in steps if s["source"] == "agent"]
        fm = {
            "total_prompt_tokens": sum(m.get("prompt_tokens", 0) for m in agent_metrics),
            "total_completion_tokens": sum(m.get("completion_tokens", 0) for m in agent_metrics),
            "total_steps": len(steps),
        }
        costs = [m["cost_usd"] for m in agent_metrics if _is_number(m.get("cost_usd"))]
        if costs:
            fm["total_cost_usd"] = sum(costs)
    doc["final_metrics"] = fm
    if isinstance(atif_md.get("continued_trajectory_ref"), str):
        doc["continued_trajectory_ref"] = atif_md["continued_trajectory_ref"]
    extra = dict(as_object(atif_md.get("extra")))
    chassis: dict[str, Any] = {"metadata": md, "session": rec.session.to_json_obj()}
    if not_exported:
        chassis["not_exported"] = dict(not_exported)
    extra["chassis"] = chassis
    doc["extra"] = extra
    return doc


def atif_summary(doc: dict[str, Any]) -> dict[str, int]:
    """Counts of an ATIF trajectory: steps, agent steps, tool calls (structured, in
    ``tool_calls``) and observation results (every tool result, with or without the call
    it answers: an agent that writes its actions in text, as SWE-agent does, has results
    and no structured calls)."""
    steps = [s for s in as_array(doc.get("steps")) if isinstance(s, dict)]
    return {
        "steps": len(steps),
        "agent_steps": sum(1 for s in steps if s.get("source") == "agent"),
        "tool_calls": sum(len(as_array(s.get("tool_calls"))) for s in steps),
        "observations": sum(len(as_array(as_object(s.get("observation")).get("results"))) for s in steps),
    }


__all__ = ["SCHEMA_VERSION", "AtifImporter", "atif_summary", "recording_to_atif", "response_content"]
