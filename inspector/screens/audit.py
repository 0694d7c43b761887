"""The audit screen: the lineage of a run's final output as a tree, the calls that did
not contribute greyed with the reason, redactions marked, knockouts with an executor,
and an export as Markdown and JSON.

The work is core's (:func:`core.analysis.audit.audit`, SPEC "Audit"; the Markdown is
:func:`core.analysis.audit.audit_markdown`, the same document as ``audit --markdown``);
this screen draws it. The tree's root is the final output; under the final call are the
calls whose results or responses flowed into it (the audit's edges: ``tool_call_id``,
``content``, ``transcript``, ``issued``), and so on back; a call shown already appears
again as a leaf "shown above". Two more groups list the calls that did not contribute
(each dim, with its reason) and those the recording cannot tell about.

Keys: ``k`` knocks each call out by replaying it with the executor the recording names
(after asking: it is code), ``x`` exports (files in the terminal; downloads through
``deliver_text`` in the browser), escape back.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static, Tree
from textual.widgets.tree import TreeNode

from core.analysis.audit import AuditReport, CallLineage, audit, audit_markdown
from core.analysis.safe_text import json_safe
from core.errors import InspectorError
from core.record.nesting import dumps

from ..loader import LoadedRecording
from ..plain import line

__all__ = ["AuditScreen", "export_documents"]

#: characters of a recorded value on one node
NODE_CHARS = 90
#: calls met again shown one leaf each under one call; the rest share one leaf
REPEATS_SHOWN = 6


def _short(value: Any, n: int = NODE_CHARS) -> str:
    text = line(value if isinstance(value, str) else dumps(value, default=str).decode())  # any depth
    return text if len(text) <= n else text[: n - 1] + "…"


def export_documents(report: AuditReport, file_name: str) -> tuple[str, str]:
    """The two exports: the Markdown (:func:`core.analysis.audit.audit_markdown`) and
    the JSON (``{"file": file_name, **report.to_json()}``, as ``audit --json`` prints it
    for a file given by its name)."""
    doc = {"file": file_name, **report.to_json()}
    data = dumps(doc, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()  # as print_json writes it
    return audit_markdown(report, file_name), json_safe(data) + "\n"


class _WriteFailed(Exception):
    """A file of an export could not be written: its ``path`` and the OS's ``reason``."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def _write_all(files: list[tuple[Path, str]]) -> None:
    """Each ``(path, text)`` written whole or none of them: every text goes to a
    temporary file beside its path first (``mkstemp``: mode 0600), then all are renamed
    over their paths (``os.replace``, atomic on POSIX within one file system). Raises
    :class:`_WriteFailed` naming the file that failed; the temporary files are removed,
    and no path is touched unless every temporary file was written."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            except OSError as exc:
                raise _WriteFailed(path, exc.strerror or str(exc)) from exc
            temps.append((tmp, path))
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
            except OSError as exc:
                raise _WriteFailed(path, exc.strerror or str(exc)) from exc
        for tmp, path in temps:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _WriteFailed(path, exc.strerror or str(exc)) from exc
    finally:
        for tmp, _ in temps:
            Path(tmp).unlink(missing_ok=True)


class AuditExportScreen(ModalScreen[Path | None]):
    """Asks for the Markdown file to export to (the JSON goes beside it, ``.json``);
    ``None`` on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="audit_export.cancel")]

    DEFAULT_CSS = """
    AuditExportScreen { align: center middle; }
    AuditExportScreen > Vertical { width: 84; max-width: 95%; height: auto; border: thick $primary;
        background: $surface; padding: 0 1; }
    AuditExportScreen .export-hint { color: $text-muted; }
    """

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Export the audit: Markdown to this file, JSON beside it (.json)")
            yield Label("enter: write both · escape: cancel", classes="export-hint")
            yield Input(str(self.default), id="audit-export-path")

    @on(Input.Submitted, "#audit-export-path")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.notify("give a file name", severity="error", timeout=3)
            return
        self.dismiss(Path(text).expanduser())

    def action_cancel(self) -> None:
        self.dismiss(None)


class AuditScreen(Screen[None]):
    """The audit of ``loaded`` (module docstring)."""

    BINDINGS = [
        Binding("k", "knockout", "Knockouts", id="audit.knockout", tooltip="Knock each call out by replaying it"),
        Binding("x", "export", "Export", id="audit.export", tooltip="Export the audit as Markdown and JSON"),
        Binding("escape", "close", "Back", id="audit.close"),
    ]

    DEFAULT_CSS = """
    AuditScreen #audit-header { height: auto; padding: 0 1; background: $panel; }
    AuditScreen Tree { height: 1fr; }
    AuditScreen #audit-detail { height: auto; max-height: 8; padding: 0 1; border-top: solid $primary-darken-2; }
    """

    class Audited(Message):
        """The worker's audit (``report``) or why it failed (``error``)."""

        def __init__(self, report: AuditReport | None, error: str | None = None) -> None:
            super().__init__()
            self.report = report
            self.error = error

    def __init__(self, loaded: LoadedRecording) -> None:
        super().__init__()
        self.loaded = loaded
        self.report: AuditReport | None = None
        self._busy = False

    def compose(self) -> ComposeResult:
        yield Static(Text("auditing the final output…", style="dim"), id="audit-header")
        tree: Tree[CallLineage | None] = Tree("lineage", id="audit-tree")
        tree.show_root = True
        yield tree
        yield Static(Text(""), id="audit-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.title = f"Audit — {line(self.loaded.path.name)}"
        self.query_one(Tree).focus()
        self._run(None)

    # ------------------------------------------------------------------ auditing

    def _run(self, executor: str | None) -> None:
        self._busy = True
        self.run_worker(
            lambda: self._work(executor),
            name="audit",
            group="audit",
            description="knockouts" if executor else "auditing the final output",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def _work(self, executor: str | None) -> None:
        rec = self.loaded.recording
        try:
            if executor is None:
                report = audit(rec)
            else:
                from core.effects.knockout import knockout_runner

                report = audit(rec, knockout=knockout_runner(executor, rec, trust_executor=True))
        except InspectorError as exc:
            self.post_message(self.Audited(None, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 — an executor's failure, shown, never a crash
            self.post_message(self.Audited(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Audited(report))

    @on(Audited)
    def _audited(self, event: Audited) -> None:
        self._busy = False
        if event.report is None:
            self.query_one("#audit-header", Static).update(
                Text(f"cannot audit: {line(event.error or '')}", style="#ff5f5f")
            )
            return
        self.report = event.report
        self.query_one("#audit-header", Static).update(self.header_text(event.report))
        self._fill(event.report)

    def header_text(self, r: AuditReport) -> Text:
        """File, final output, counts, redactions, knockout status."""
        t = Text()
        t.append("Audit  ", style="bold")
        t.append(line(self.loaded.path.name), style="bold")
        if r.final_seq is None:
            t.append(f"\nno final output: {line(r.final_missing or 'it ended on an error or a tool request')}")
        else:
            t.append(f"\nfinal output (seq {r.final_seq}): ")
            t.append(_short(r.final_output, 80))
        t.append(f"\ncontributed {len(r.contributed())} · unused {len(r.unused())}")
        if r.unknown():
            t.append(f" · cannot tell {len(r.unknown())}")
        if r.redactions:
            hidden = sum(1 for x in r.redactions if x.in_lineage)
            t.append(f" · redaction hid {len(r.redactions)} value(s), {hidden} on the lineage", style="#d7af00")
        t.append(f"\nknockout: {line(r.knockout)}", style="dim")
        return t

    def node_label(self, c: CallLineage, via: str = "") -> Text:
        """One call on the tree: seq, kind, name, how it flowed, quoted values,
        redactions (marked), knockout result."""
        dim = c.status in ("unused", "unknown")
        t = Text(style="dim" if dim else "")
        if via:
            t.append(f"({via}) ", style="dim")
        t.append(f"{c.seq:>4}  {c.kind:<5} ", style="bold" if c.status == "final" else "")
        t.append(_short(c.name, 40))
        if dim:
            t.append(f"  — {_short(c.reason, 120)}")
        if c.quoted:
            t.append("  quoted: " + ", ".join(_short(q, 30) for q in c.quoted), style="#5faf5f")
        if c.redacted:
            t.append("  [redacted " + ", ".join(_short(p, 40) for p in c.redacted) + "]", style="bold #d7af00")
        if c.knockout is not None:
            k = c.knockout
            changed = {True: "outcome changed", False: "outcome unchanged", None: "did not finish"}[k.outcome_changed]
            t.append(f"  knockout: {_short(k.outcome, 30)} ({changed})", style="#ff8700" if k.outcome_changed else "")
        return t

    def _fill(self, r: AuditReport) -> None:
        tree: Tree[CallLineage | None] = self.query_one(Tree)
        tree.clear()
        by_seq = {c.seq: c for c in r.calls}
        into: dict[int, list[Any]] = {}
        for e in r.edges:
            into.setdefault(e.target, []).append(e)
        if r.final_seq is None:
            tree.root.set_label(Text(f"no final output: {line(r.final_missing or 'the run has none')}"))
        else:
            tree.root.set_label(Text(f"final output (seq {r.final_seq}): ") + Text(_short(r.final_output, 70)))
            shown: set[int] = set()
            final = by_seq.get(r.final_seq)
            if final is not None:
                # depth first, inputs in seq order: the tree is drawn in this order, so a
                # call met again is one drawn above (the order audit_markdown lists them)
                pending: list[tuple[TreeNode[CallLineage | None], CallLineage, str]] = [(tree.root, final, "")]
                # repeats under one call beyond REPEATS_SHOWN are gathered into one leaf:
                # a model call reads every earlier turn again, so one leaf per repeat
                # would grow with the square of the run's length
                repeats: dict[int, list[int]] = {}
                more: dict[int, tuple[TreeNode[CallLineage | None], list[int]]] = {}
                while pending:
                    parent, c, via = pending.pop()
                    if c.seq in shown:
                        seen = repeats.setdefault(id(parent), [])
                        seen.append(c.seq)
                        if len(seen) <= REPEATS_SHOWN:
                            parent.add_leaf(
                                Text(
                                    f"({via}) {c.seq:>4}  {c.kind:<5} {_short(c.name, 40)}  (shown above)", style="dim"
                                ),
                                data=c,
                            )
                        elif id(parent) in more:
                            more[id(parent)][1].append(c.seq)
                        else:
                            more[id(parent)] = (parent.add_leaf(Text(""), data=None), [c.seq])
                        continue
                    shown.add(c.seq)
                    sources = [
                        by_seq[e.source]
                        for e in sorted(into.get(c.seq, []), key=lambda e: e.source)
                        if e.source in by_seq
                    ]
                    vias = {e.source: e.via for e in into.get(c.seq, [])}
                    if not sources:
                        parent.add_leaf(self.node_label(c, via), data=c)
                        continue
                    node = parent.add(self.node_label(c, via), data=c, expand=True)
                    pending.extend((node, src, vias[src.seq]) for src in reversed(sources))
            for leaf, seqs in more.values() if final is not None else ():
                listed = ", ".join(str(q) for q in seqs[:12]) + (" …" if len(seqs) > 12 else "")
                leaf.set_label(Text(f"… and {len(seqs)} more, shown above: seq {listed}", style="dim"))
        unused = r.unused()
        if unused:
            group = tree.root.add(Text(f"not contributing ({len(unused)})", style="dim bold"), expand=True)
            for c in unused:
                group.add_leaf(self.node_label(c), data=c)
        unknown = r.unknown()
        if unknown:
            group = tree.root.add(Text(f"cannot tell ({len(unknown)})", style="dim bold"), expand=True)
            for c in unknown:
                group.add_leaf(self.node_label(c), data=c)
        tree.root.expand()

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        c = event.node.data
        detail = self.query_one("#audit-detail", Static)
        if not isinstance(c, CallLineage):
            detail.update(Text(""))
            return
        t = Text()
        t.append(f"seq {c.seq} · {c.kind} ", style="bold")
        t.append(_short(c.name, 60), style="bold")
        t.append(f" · {c.status}")
        if c.via:
            t.append(" · flowed via " + ", ".join(line(v) for v in c.via))
        if c.included_at is not None:
            t.append(f" · first read by the request of seq {c.included_at}")
        if c.reason:
            t.append("\n" + line(c.reason), style="dim")
        for p in c.redacted:
            t.append(f"\nredacted at {line(p)}: the audit cannot tell what it held", style="#d7af00")
        detail.update(t)

    # ------------------------------------------------------------------ actions

    def action_close(self) -> None:
        self.dismiss(None)

    def action_knockout(self) -> None:
        if self._busy:
            self.notify("the audit is running", timeout=2)
            return
        named = self.loaded.recording.metadata.get("executor")
        if not isinstance(named, str) or not named:
            self.notify(
                "knockouts replay each call with an executor, and this recording names none "
                "(on the command line: audit FILE --executor module:function)",
                timeout=6,
            )
            return
        from core.replay.boundary import ExecutorChoice

        from .branch_editor import ConsentScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self.query_one("#audit-header", Static).update(
                    Text("knocking each call out (one replay per call)…", style="dim")
                )
                self._run(named)

        self.app.push_screen(ConsentScreen(ExecutorChoice(named, "recording")), answered)

    def action_export(self) -> None:
        r = self.report
        if r is None:
            self.notify("the audit is not ready yet", timeout=2)
            return
        name = self.loaded.path.name
        markdown, json_text = export_documents(r, name)
        stem = self.loaded.path.stem
        if self.app.is_web:  # the browser's downloads, never a file on the server
            self.app.deliver_text(io.StringIO(markdown), save_filename=f"audit-{stem}.md", mime_type="text/markdown")
            self.app.deliver_text(
                io.StringIO(json_text), save_filename=f"audit-{stem}.json", mime_type="application/json"
            )
            self.notify(f"audit-{stem}.md and .json sent to the browser", timeout=4)
            return

        def chosen(path: Path | None) -> None:
            if path is None:
                return
            # a name ending .json would be both files: the Markdown gets .md beside it
            md_path = path if path.suffix and path.suffix.lower() != ".json" else path.with_suffix(".md")
            json_path = md_path.with_suffix(".json")
            try:
                _write_all([(md_path, markdown), (json_path, json_text)])
            except _WriteFailed as exc:
                self.notify(
                    f"cannot write {line(str(exc.path))}: {line(exc.reason)}",
                    severity="error",
                    timeout=6,
                )
                return
            self.notify(f"wrote {line(str(md_path))} and {line(json_path.name)}", timeout=4)

        self.app.push_screen(AuditExportScreen(Path(f"audit-{stem}.md")), chosen)
