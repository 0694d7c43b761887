"""One-line text of recorded values (core.analysis.timeline_text): what every table cell
and summary shows."""

from __future__ import annotations

import base64
import os

from core.analysis.timeline_text import one_line


def test_summaries_show_placeholders_and_never_the_invalid_unicode_tag():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(3_000_000)).decode()
    assert one_line("data:image/png;base64," + png) == "<image/png, 3.0 MB>"
    assert one_line(png) == "<image/png, 3.0 MB>"
    assert one_line("see " + png + " end") == "see <image/png, 3.0 MB> end"
    assert one_line({"source": {"data": png}}) == '{"source":{"data":"<image/png, 3.0 MB>"}}'
    tag = {"$invalid_unicode": "bad \ufffd text", "surrogates": [[4, 0xD800]]}
    # shown with the marker before the first bad place; search text without it
    assert one_line(tag) == "bad \u26a0\ufffd text"
    assert one_line({"content": tag}) == '{"content":"bad \u26a0\ufffd text"}'
    assert one_line(tag, 1 << 30) == "bad \ufffd text"
    # search text (a huge limit) keeps the value as it is
    assert png[:100] in one_line("see " + png, 1 << 30)
    # prose is untouched
    prose = "Lorem ipsum dolor sit amet. " * 200
    assert one_line(prose) == " ".join(prose.split())[:159] + "…"
