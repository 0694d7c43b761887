"""The app on huge values: images and base64 as placeholders with a "show raw" key, long
strings in pages built in a worker (``q`` always quits), multi-line tool-call arguments
as lines, arguments that are not an object marked, invalid Unicode as U+FFFD with the
marker — never the internal tag — in every view and in ``audit``.

The big values are built at test time (in memory, or in ``tmp_path``)."""

from __future__ import annotations

import base64
import random
import time
from pathlib import Path

import orjson
import pytest
from textual.containers import VerticalScroll

from core.analysis.safe_text import HIDDEN_MARK
from core.record.io import save_recording
from core.record.jsonvalues import encode_text
from core.record.recording import Recording
from inspector.app import InspectorApp
from inspector.loader import LoadedRecording
from inspector.plain import line
from inspector.screens.help import HelpScreen
from inspector.screens.timeline import TimelineScreen
from inspector.widgets.detail_pane import DetailPane
from inspector.widgets.json_tree import PAGE_CHARS, JsonTree
from inspector.widgets.transcript import EXPANDED_CHARS, MessageBlock, TranscriptView
from tests.builders import model, msg, recording, tool

from .test_app_pilot import settle

SIZE = (160, 45)
PNG = b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(3_000_000 - 8)
B64 = base64.b64encode(PNG).decode()
DATA_URL = f"data:image/png;base64,{B64}"
PLACEHOLDER = "<image/png, 3.0 MB>"
#: a 3.6 KB file_text argument, as str_replace_editor sends it
FILE_TEXT = "".join(f"def step_{i}(x):\n    return x + {i}  # the {i}th step\n" for i in range(70))
SURROGATE = encode_text("bad \udc80 text")


def screen_text(app, widget=None) -> str:
    """What the screen draws (text only), or only the part of it inside ``widget``."""
    strips = app.screen._compositor.render_strips()
    if widget is None:
        return "\n".join(strip.text for strip in strips)
    r = widget.region
    return "\n".join(strip.crop(r.x, r.right).text for strip in strips[r.y : r.bottom])


def open_all(tree: JsonTree) -> None:
    """Open every object and array (not the strings) of the tree, as a user would."""
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if node.data is not None and not node.data.folded_string and node.allow_expand:
            tree._populate(node)
            node.expand()
        stack.extend(node.children)


def labels(tree: JsonTree) -> list[str]:
    out, stack = [], [tree.root]
    while stack:
        node = stack.pop()
        out.append(node.label.plain)
        stack.extend(node.children)
    return out


def image_run() -> Recording:
    """model → tool (an image_url part) → tool (bare base64) → model (the image in its
    request, an Anthropic image part, and a str_replace_editor call with file_text)."""
    image_part = {"type": "image_url", "image_url": {"url": DATA_URL}}
    anthropic = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}
    return recording(
        model(0, [msg("user", "take a screenshot")], msg("assistant", "", tool_calls=[("c0", "screenshot", {})])),
        tool(1, "screenshot", {}, [image_part], call_id="c0"),
        tool(2, "read_image", {"path": "a.png"}, B64, call_id="c1"),
        model(
            3,
            [
                msg("user", "edit"),
                msg("assistant", "", tool_calls=[("c0", "screenshot", {})]),
                msg("tool", [image_part, anthropic], tool_call_id="c0"),
            ],
            msg(
                "assistant",
                "ok",
                tool_calls=[
                    ("c2", "str_replace_editor", {"command": "create", "path": "/x.py", "file_text": FILE_TEXT})
                ],
            ),
        ),
    )


async def go_to(pilot, app, seq: int) -> TimelineScreen:
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    assert screen.go_to_seq(seq)
    await settle(pilot, app)
    return screen


# ---------------------------------------------------------------------- images and base64


@pytest.mark.parametrize("size", [(110, 45), (60, 30), (44, 30)])
async def test_the_next_page_line_keeps_its_key_in_a_narrow_pane(size):
    """Deep in a narrow pane the line that opens the next page takes a shorter form, so
    "enter" stays in view (it was cut mid-word, without an ellipsis)."""
    app = InspectorApp(LoadedRecording.from_recording(image_run()))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await go_to(pilot, app, 1)
        tree = app.screen.query_one(JsonTree)
        await pilot.press("v")  # the raw text: the url folds into pages
        await settle(pilot, app)
        open_all(tree)
        url = tree.node_at(["result", "content", 0, "image_url", "url"])
        assert url is not None and url.data.folded_string
        tree._populate(url)
        url.expand()
        await settle(pilot, app)
        more = list(url.children)[-1]
        assert more.data is not None and more.data.more_from is not None
        tree.move_cursor(more)
        await settle(pilot, app)
        rest = f"{len(DATA_URL) - PAGE_CHARS:,}"
        shown = [row for row in screen_text(app, tree).splitlines() if rest in row]
        if not shown:  # the shortest form leaves the count out
            shown = [row for row in screen_text(app, tree).splitlines() if "… more — enter" in row]
        assert len(shown) == 1, screen_text(app, tree)
        assert shown[0].rstrip(" ▁▂▃▄▅▆▇█▊▌▍▎▏│┃").endswith(("enter: next page", "— enter")), shown[0]
        tree.focus()
        await pilot.press("enter")  # and it still opens the next page
        await settle(pilot, app)
        assert "".join(c.label.plain for c in list(url.children)[:-1]) == DATA_URL[: 2 * PAGE_CHARS]


async def test_a_3_mb_data_url_and_bare_base64_are_placeholders_and_v_shows_them_raw():
    app = InspectorApp(LoadedRecording.from_recording(image_run()))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, app)
        await go_to(pilot, app, 1)
        tree = app.screen.query_one(JsonTree)
        open_all(tree)
        await settle(pilot, app)
        url = tree.node_at(["result", "content", 0, "image_url", "url"])
        assert url is not None and url.label.plain.startswith(f"url: {PLACEHOLDER}")
        assert not url.allow_expand
        text = screen_text(app, tree)
        assert PLACEHOLDER in text and "iVBOR" not in text
        started = time.monotonic()
        await pilot.press("z")  # nothing to unfold: the placeholder stays, at once
        await settle(pilot, app)
        assert time.monotonic() - started < 5
        assert PLACEHOLDER in screen_text(app, tree)

        await pilot.press("v")  # show raw: the same node, now the folded text itself
        await settle(pilot, app)
        assert app.screen.query_one(JsonTree) is tree and tree.raw
        url = tree.node_at(["result", "content", 0, "image_url", "url"])
        assert url is not None and url.data.folded_string and url.data.blob is None
        assert url.label.plain.startswith('url: "data:image/png;base64,iVBOR')
        assert "raw text" in tree.root.label.plain
        assert any("raw text" in n.message for n in app._notifications)
        tree._populate(url)
        url.expand()
        await settle(pilot, app)
        lines = list(url.children)
        # one page: the wrapped first PAGE_CHARS characters, then the line that opens the next
        assert "".join(c.label.plain for c in lines[:-1]) == DATA_URL[:PAGE_CHARS]
        assert lines[-1].label.plain == f"… {len(DATA_URL) - PAGE_CHARS:,} more characters — enter: next page"
        tree.move_cursor(lines[-1])
        tree.focus()
        await pilot.press("enter")
        await settle(pilot, app)
        assert "".join(c.label.plain for c in list(url.children)[:-1]) == DATA_URL[: 2 * PAGE_CHARS]

        await pilot.press("v")  # placeholders again
        await settle(pilot, app)
        assert not tree.raw and PLACEHOLDER in tree.node_at(["result", "content", 0, "image_url", "url"]).label.plain

        await go_to(pilot, app, 2)  # a bare base64 result: the type sniffed from its bytes
        content = app.screen.query_one(JsonTree).node_at(["result", "content"])
        assert content is not None and content.label.plain.startswith(f"content: {PLACEHOLDER}  (base64, ")


async def test_the_transcript_shows_images_as_placeholders_and_file_text_as_lines():
    app = InspectorApp(LoadedRecording.from_recording(image_run()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await go_to(pilot, app, 3)
        await pilot.press("t")
        await settle(pilot, app)
        blocks = list(app.screen.query(MessageBlock))
        tool_block = next(b for b in blocks if b.entry.message.role == "tool")
        assert tool_block.body.plain.count(PLACEHOLDER) == 2  # the image_url part and the Anthropic part
        assert all("iVBOR" not in b.body.plain and len(b.body.plain) < 5_000 for b in blocks)
        call = blocks[-1].body.plain
        assert '"file_text": """\n    def step_0(x):\n        return x + 0  # the 0th step\n' in call
        assert "\\n" not in call and "(arguments are not a JSON object" not in call
        await pilot.press("z")
        await settle(pilot, app)
        call = list(app.screen.query(MessageBlock))[-1].body.plain
        body = "\n".join(ln[4:] for ln in call.split('"""')[1].split("\n")[1:-1])
        assert body == FILE_TEXT  # every line of the file, as written
        await pilot.press("v")  # raw: the base64 itself, bounded by the expanded limit
        await settle(pilot, app)
        tool_block = next(b for b in app.screen.query(MessageBlock) if b.entry.message.role == "tool")
        assert "data:image/png;base64,iVBOR" in tool_block.body.plain
        assert len(tool_block.body.plain) < 3 * EXPANDED_CHARS and "not shown here" in tool_block.body.plain

        await go_to(pilot, app, 1)  # the tool call's own result: its parts, the image a placeholder
        current = next(b for b in app.screen.query(MessageBlock) if b.entry.current)
        assert "data:image/png;base64,iVBOR" in current.body.plain  # still raw
        await pilot.press("v")
        await settle(pilot, app)
        current = next(b for b in app.screen.query(MessageBlock) if b.entry.current)
        assert (
            current.body.plain
            == '[image_url] {\n  "type": "image_url",\n  "image_url": {\n    "url": ' + PLACEHOLDER + "\n  }\n}"
        )


async def test_show_raw_is_a_key_in_the_help_screen():
    app = InspectorApp(LoadedRecording.from_recording(image_run()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("question_mark")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        detail = dict(app.screen.groups)["Detail pane"]
        (raw,) = [b for b in detail if b.id == "detail.show_raw"]
        assert raw.key == "v" and "placeholder" in (raw.tooltip or "")
        scroller = app.screen.query_one(VerticalScroll)
        rows: list[str] = []
        for y in range(0, 400, 20):  # page down the help until the row shows
            scroller.scroll_to(y=y, animate=False)
            await settle(pilot, app)
            rows = [r for r in screen_text(app).splitlines() if "detail.show_raw" in r]
            if rows:
                break
        assert rows and rows[0].split()[1] == "v" and "Raw text of images" in rows[0]


# ---------------------------------------------------------------------- a 50 MB tool result


def rss_mb() -> float:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    return 0.0  # pragma: no cover - not Linux


@pytest.fixture(scope="module")
def fifty_mb_run() -> Recording:
    log = "".join(f"line {i}: " + "x" * 90 + "\n" for i in range(500_000))
    assert len(log) > 50_000_000
    return recording(
        model(0, [msg("user", "read the log")], msg("assistant", "", tool_calls=[("c0", "cat", {"path": "big.log"})])),
        tool(1, "cat", {"path": "big.log"}, log, call_id="c0"),
        model(2, [msg("user", "read the log"), msg("tool", log, tool_call_id="c0")], "it is long"),
    )


async def test_a_50_mb_result_opens_in_pages_and_q_quits_promptly(fifty_mb_run):
    log = fifty_mb_run.records[1].result.content
    app = InspectorApp(LoadedRecording.from_recording(fifty_mb_run))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await go_to(pilot, app, 1)
        before = rss_mb()
        await pilot.press("z")  # every folded string: its first page, built in a worker
        await settle(pilot, app)
        tree = app.screen.query_one(JsonTree)
        content = tree.node_at(["result", "content"])
        assert content is not None and content.is_expanded
        lines = [c.label.plain for c in content.children]
        assert lines[0].startswith("line 0: xxx") and lines[-2].endswith("x")
        assert len(lines) < 2 * PAGE_CHARS // 20 and lines[-1].endswith("more characters — enter: next page")
        assert "line 1: " in screen_text(app)

        await pilot.press("t", "z")  # the transcript, expanded: bounded too
        await settle(pilot, app)
        assert app.screen.query_one(TranscriptView).expanded
        current = next(b for b in app.screen.query(MessageBlock) if b.entry.current)
        assert current.body.plain.startswith("line 0: ") and len(current.body.plain) < 2 * EXPANDED_CHARS
        assert "MB more not shown here" in current.body.plain
        assert rss_mb() - before < 400  # was 1.2-1.6 GB more, and climbing

        await pilot.press("r")
        await settle(pilot, app)
        tree.move_cursor(content)
        started = time.monotonic()
        await pilot.press("enter", "enter", "q")  # collapse, open again (a worker builds the page), quit
    assert time.monotonic() - started < 10  # was 25-57 s
    assert app.return_code in (None, 0) and app.crash is None
    assert len(log) > 50_000_000


# ---------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("arguments", "kind", "shown"),
    [
        ("ls -la /tmp", "text that is not JSON", "ls -la /tmp"),
        ('{"element_id": 15', "text that is not JSON", '{"element_id": 15'),
        ('"just a string"', "a JSON string", "just a string"),
        ("line one\nline two", "text that is not JSON", "line one\nline two"),
        (["a", 1], "an array", '[\n  "a",\n  1\n]'),
        (7, "a number", "7"),
    ],
)
async def test_arguments_that_are_not_an_object_are_marked(arguments, kind, shown):
    rec = recording(model(0, [msg("user", "go")], msg("assistant", "", tool_calls=[("c0", "run", {})])))
    rec.records[0].response.message.tool_calls[0].__dict__["arguments"] = arguments
    app = InspectorApp(LoadedRecording.from_recording(rec))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("t")
        await settle(pilot, app)
        body = list(app.screen.query(MessageBlock))[-1].body
        assert body.plain.endswith(f"(arguments are not a JSON object: {kind})\n{shown}")
        note = body.plain.index("(arguments are not")
        assert any(span.start <= note < span.end and "dim" in str(span.style) for span in body.spans)


# ---------------------------------------------------------------------- invalid Unicode


def surrogate_run() -> Recording:
    """A lone surrogate in a tool's raw arguments and result, in message content (a part,
    a text part, the tag's JSON text as importers store it), in tool-call arguments, and
    as the run's final output (a text action after the last response)."""
    as_json_text = orjson.dumps(SURROGATE).decode()
    return recording(
        model(
            0,
            [msg("user", [SURROGATE]), msg("user", as_json_text), msg("user", [{"type": "text", "text": SURROGATE}])],
            msg("assistant", "", tool_calls=[("c0", "weird", SURROGATE)]),
        ),
        tool(1, "weird", SURROGATE, SURROGATE, call_id="c0"),
        model(2, [msg("user", "go"), msg("tool", as_json_text, tool_call_id="c0")], "done"),
        tool(3, "submit", {}, SURROGATE),
    )


async def test_a_lone_surrogate_is_u_fffd_with_a_marker_never_the_tag():
    shown = f"bad {HIDDEN_MARK}\ufffd text"
    assert line(SURROGATE) == shown and line(orjson.dumps(SURROGATE).decode()) == shown
    app = InspectorApp(LoadedRecording.from_recording(surrogate_run()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for seq in (0, 1, 2, 3):
            await go_to(pilot, app, seq)
            await pilot.press("r")
            tree = app.screen.query_one(JsonTree)
            open_all(tree)
            await settle(pilot, app)
            assert not any("$invalid_unicode" in label or "surrogates" in label for label in labels(tree))
            # the detail pane: identity, error banner, tree (the table's summaries are
            # core.analysis.timeline's, outside this check)
            text = screen_text(app, app.screen.query_one(DetailPane))
            assert "$invalid_unicode" not in text and "surrogates" not in text
            await pilot.press("t")
            await settle(pilot, app)
            bodies = [b.body.plain for b in app.screen.query(MessageBlock)]
            assert bodies and not any("$invalid_unicode" in b or "surrogates" in b for b in bodies)
            assert "$invalid_unicode" not in screen_text(app, app.screen.query_one(DetailPane))
        await go_to(pilot, app, 1)
        await pilot.press("r")
        await settle(pilot, app)
        tree = app.screen.query_one(JsonTree)
        assert tree.node_at(["result", "content"]).label.plain == f'content: "{shown}"  (invalid Unicode)'
        assert tree.node_at(["arguments"]).label.plain == f'arguments: "{shown}"  (invalid Unicode)'
        await go_to(pilot, app, 0)
        await pilot.press("t")
        await settle(pilot, app)
        bodies = [b.body.plain for b in app.screen.query(MessageBlock)]
        assert bodies[:3] == [shown, shown, shown]
        assert bodies[3].endswith(f"(arguments are not a JSON object: text with invalid Unicode)\n{shown}")


def test_audit_shows_the_final_output_as_u_fffd_never_the_tag(tmp_path, capsys):
    from inspector.cli import main

    path = tmp_path / "surrogate-run.json"
    save_recording(surrogate_run(), path)
    assert main(["audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "final output (seq 3): bad \u26a0\ufffd text"  # the marker, then U+FFFD
    assert "$invalid_unicode" not in out
    assert main(["audit", str(path), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["final_output"] == "bad \ufffd text"
