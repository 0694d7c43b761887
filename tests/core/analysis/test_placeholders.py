"""core.analysis.placeholders: binary data written as text is found (whole strings and
inside texts, in a window), with its MIME type and decoded size; ordinary text never is;
invalid-Unicode tags give their text and the place of their marker; the final output
never carries the internal tag."""

from __future__ import annotations

import base64
import random
import re
import string

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.analysis.final_output import final_output, find_final_output
from core.analysis.placeholders import (
    MIN_BASE64,
    MIN_DATA_URL,
    Blob,
    blob_of,
    find_blobs,
    format_size,
    invalid_unicode_of,
    mime_hint,
    shown_value,
    sniff_mime,
)
from core.record.jsonvalues import encode_text
from tests.builders import model, msg, recording, tool

#: (magic bytes, MIME type) a file of that type starts with
MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff\xe0", "image/jpeg"),
    (b"GIF89a", "image/gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"%PDF-1.7", "application/pdf"),
    (b"\x00\x00\x00\x1cftypavif", "image/avif"),
    (b"", None),
]


def random_bytes(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


@st.composite
def encoded(draw: st.DrawFn) -> tuple[str, int, str | None]:
    """``(text, decoded size, MIME type)`` of random data as base64 in any of its shapes:
    standard or URL-safe alphabet, padded or not, one line or wrapped."""
    magic, mime = draw(st.sampled_from(MAGIC))
    n = draw(st.integers(MIN_BASE64, 6000))
    data = magic + random_bytes(draw(st.integers(0, 2**32)), n)
    text = base64.b64encode(data).decode()
    shape = draw(st.sampled_from(["std", "urlsafe", "unpadded", "wrapped64", "wrapped76"]))
    if shape == "urlsafe":
        text = base64.urlsafe_b64encode(data).decode()
    elif shape == "unpadded":
        text = text.rstrip("=")
    elif shape.startswith("wrapped"):
        width = int(shape[7:])
        text = "\n".join(text[i : i + width] for i in range(0, len(text), width))
        if draw(st.booleans()):
            text += "\n"
    return text, len(data), mime


@given(encoded())
@settings(max_examples=60, deadline=None)
def test_base64_of_random_data_is_a_blob_of_its_size_and_type(case: tuple[str, int, str | None]) -> None:
    text, size, mime = case
    blob = blob_of(text)
    assert blob is not None
    assert (blob.start, blob.end, blob.size, blob.mime, blob.form) == (0, len(text), size, mime, "base64")
    assert blob.label() == f"<{mime or 'base64'}, {format_size(size)}>"
    # the type a sibling field states wins over an unknown one
    assert blob_of(text, "image/x-test").mime == "image/x-test"  # type: ignore[union-attr]


@given(encoded(), st.sampled_from(["image/png", "image/svg+xml", "application/octet-stream", None]), st.booleans())
@settings(max_examples=60, deadline=None)
def test_data_urls_are_blobs_with_their_own_type(
    case: tuple[str, int, str | None], mime: str | None, param: bool
) -> None:
    text, size, sniffed = case
    if "\n" in text:
        return  # a data URL is one line
    url = f"data:{mime or ''}{';charset=utf-8' if param else ''};base64,{text}"
    blob = blob_of(url)
    assert blob is not None and blob.form == "data URL" and blob.size == size and blob.end == len(url)
    assert blob.mime == (mime or sniffed or "text/plain")


_SEPARATORS = st.sampled_from([" ", "\n", '"', "'", ", ", ": ", ")", "<", "\t", ". "])


@given(encoded(), st.text(max_size=40), _SEPARATORS, _SEPARATORS, st.text(max_size=40), st.booleans())
@settings(max_examples=60, deadline=None)
def test_a_blob_inside_a_text_is_found_where_it_is(
    case: tuple[str, int, str | None], before: str, sep1: str, sep2: str, after: str, as_url: bool
) -> None:
    payload, size, _ = case
    if as_url and "\n" in payload:
        return
    inner = f"data:image/png;base64,{payload}" if as_url else payload
    if not as_url and "\n" in payload and (sep1 != "\n" or sep2 != "\n"):
        sep1 = sep2 = "\n"  # wrapped base64 is a block of whole lines
    if inner.endswith("\n"):
        inner = inner[:-1]
    if "\n" in inner:
        # wrapped base64 is a block of whole lines: a neighbouring line that is itself a
        # base64 line would be part of the block (and is another case)
        assume(not re.fullmatch(r"[A-Za-z0-9+/=]{16,}", before.split("\n")[-1] if sep1 == "\n" else ""))
        assume(not re.fullmatch(r"[A-Za-z0-9+/=]+", after.split("\n")[0] if sep2 == "\n" else ""))
    text = f"{before}{sep1}{inner}{sep2}{after}"
    start = len(before) + len(sep1)
    found = [b for b in find_blobs(text) if b.start <= start < b.end or b.start == start]
    assert [(b.start, b.end, b.size) for b in found] == [(start, start + len(inner), size)]
    # in a window: found when it begins there (in full, past the window), not otherwise
    assert [b.start for b in find_blobs(text, start, start + 10)] == [start]
    assert all(b.start >= start + 1 for b in find_blobs(text, start + 1))


def test_the_issue_cases_a_3_mb_png_data_url_and_a_bare_base64_png() -> None:
    png = b"\x89PNG\r\n\x1a\n" + random_bytes(1, 3_000_000 - 8)
    b64 = base64.b64encode(png).decode()
    assert blob_of(f"data:image/png;base64,{b64}").label() == "<image/png, 3.0 MB>"  # type: ignore[union-attr]
    assert blob_of(b64).label() == "<image/png, 3.0 MB>"  # type: ignore[union-attr]
    text = f'{{"type": "image_url", "image_url": {{"url": "data:image/png;base64,{b64}"}}}}'
    (blob,) = find_blobs(text)
    assert text[blob.start : blob.start + 22] == "data:image/png;base64," and text[blob.end :] == '"}}'


_WORD = st.text(alphabet=string.ascii_letters + string.digits + "+/=_-", min_size=1, max_size=60)


@given(st.lists(st.tuples(_WORD, st.sampled_from([" ", "\n", ", ", ". ", "\t", "; "])), max_size=200))
@settings(max_examples=200, deadline=None)
def test_words_of_the_base64_alphabet_are_never_a_blob(words: list[tuple[str, str]]) -> None:
    """Text whose runs of base64 characters are words (never MIN_BASE64 long) holds no blob."""
    text = "".join(w + sep for w, sep in words)
    assert find_blobs(text) == [] and blob_of(text) is None


@given(
    st.sampled_from(
        [
            string.hexdigits[:16],  # hex digests of any length
            string.hexdigits.upper(),
            "ab",  # repeated characters
            string.ascii_lowercase,  # one case of letters: identifiers, words glued together
            string.ascii_lowercase + string.digits + "_",
            string.ascii_uppercase + "-",
            "ACGT",  # DNA
            "-=",  # separators
        ]
    ),
    st.integers(MIN_BASE64, 5000),
    st.integers(0, 2**32),
)
@settings(max_examples=100, deadline=None)
def test_long_runs_that_are_not_random_data_are_never_a_blob(alphabet: str, n: int, seed: int) -> None:
    rng = random.Random(seed)
    run = "".join(rng.choice(alphabet) for _ in range(n))
    assert blob_of(run) is None
    assert find_blobs(f"x {run} y") == []


@given(st.text(max_size=3000))
@settings(max_examples=200, deadline=None)
def test_any_text_only_ever_yields_valid_base64(text: str) -> None:
    """Whatever the text, what is found is valid base64 of at least the minimum length."""
    for b in find_blobs(text):
        assert 0 <= b.start < b.end <= len(text)
        run = text[b.start : b.end]
        payload = run.split(",", 1)[1] if b.form == "data URL" else "".join(run.split())
        assert len(payload.rstrip("=")) >= (MIN_DATA_URL if b.form == "data URL" else MIN_BASE64)
        base64.b64decode(payload.translate(str.maketrans("-_", "+/")) + "=" * (-len(payload) % 4))


def test_a_window_costs_what_the_window_costs() -> None:
    """A 50 MB log: the first window finds nothing and reads only about the window."""
    log = "".join(f"line {i}: " + "x" * 90 + "\n" for i in range(500_000))
    assert find_blobs(log, 0, 20_000) == []
    assert blob_of(log) is None
    b64 = base64.b64encode(random_bytes(2, 600)).decode()
    text = log[:10_000] + b64 + "\n" + log[:10_000]
    (blob,) = find_blobs(text, 9_990, 10_010)
    assert (blob.start, blob.end) == (10_000, 10_000 + len(b64))
    assert find_blobs(text, 10_001, 10_500) == []  # begins before the window: not reported


def test_short_or_ill_formed_values_are_not_blobs() -> None:
    b64 = base64.b64encode(random_bytes(3, 600)).decode().rstrip("=")
    assert blob_of(b64[: MIN_BASE64 - 1]) is None
    assert blob_of(b64[:513]) is None  # a length of 1 modulo 4 is not base64
    assert blob_of(b64 + "=") is None or len(b64 + "=") % 4 == 0
    assert blob_of(f"data:image/png;base64,{b64[: MIN_DATA_URL - 4]}") is None
    assert blob_of(f"metadata:image/png;base64,{b64}") is None
    assert find_blobs(f"metadata:image/png;base64,{b64}")[0].form == "base64"  # its payload is still base64
    assert blob_of(b64 + "+" + b64.replace("+", "-").replace("/", "_")) is None  # two alphabets mixed


def test_a_data_url_that_is_not_base64() -> None:
    url = "data:text/html;charset=utf-8," + "%3Cp%3E" * 100
    blob = blob_of(url)
    assert blob is not None and blob.mime == "text/html" and blob.size == 300
    assert blob_of("data:text/plain,short") is None


def test_sniffing_and_hints() -> None:
    for magic, mime in MAGIC:
        assert sniff_mime(magic + b"\x00" * 16) == mime
    assert mime_hint({"media_type": "image/PNG"}) == "image/png"
    assert mime_hint({"mimeType": "image/jpeg", "data": "…"}) == "image/jpeg"
    assert mime_hint({"media_type": "\x1b[2J/evil"}) is None  # never a recorded control string


@pytest.mark.parametrize(
    ("n", "shown"),
    [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (12_345, "12.3 kB"), (3_000_000, "3.0 MB"), (2 * 10**9, "2.0 GB")],
)
def test_format_size(n: int, shown: str) -> None:
    assert format_size(n) == shown


def test_blob_label_and_chars() -> None:
    blob = Blob(4, 104, 75, None, "base64")
    assert blob.chars == 100 and blob.label() == "<base64, 75 B>"


# ---------------------------------------------------------------------- invalid Unicode


def test_invalid_unicode_tags_and_their_json_text_give_text_and_first_place() -> None:
    tag = encode_text("bad \udc80 and \ud800")
    assert isinstance(tag, dict)
    assert invalid_unicode_of(tag) == ("bad \ufffd and \ufffd", 4)
    assert invalid_unicode_of(orjson.dumps(tag).decode()) == ("bad \ufffd and \ufffd", 4)
    assert invalid_unicode_of(orjson.dumps(tag, option=orjson.OPT_INDENT_2).decode()) == ("bad \ufffd and \ufffd", 4)
    # ordinary data: not a tag
    assert invalid_unicode_of("bad \ufffd text") is None
    assert invalid_unicode_of({"$invalid_unicode": "x"}) is None  # no places: not well formed
    assert invalid_unicode_of('{"$invalid_unicode": "x", "extra": 1}') is None
    assert invalid_unicode_of({"$bigint": "123456789012345678901"}) is None


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=30), st.lists(st.integers(0xD800, 0xDFFF), min_size=1))
def test_shown_value_replaces_every_tag_and_nothing_else(text: str, units: list[int]) -> None:
    bad = text + "".join(chr(u) for u in units)
    tag = encode_text(bad)
    value = {"a": [tag, "plain", {"b": orjson.dumps(tag).decode()}], "n": 1, "tag": {"$nonfinite": "NaN"}}
    out = shown_value(value)
    expected_text = text + "\ufffd" * len(units)
    assert out == {"a": [expected_text, "plain", {"b": expected_text}], "n": 1, "tag": {"$nonfinite": "NaN"}}
    # no tag is left: the name appears only where the text itself holds it (twice shown)
    assert orjson.dumps(out).decode().count("$invalid_unicode") == 2 * text.count("$invalid_unicode")
    plain = {"x": ["y", 2]}
    assert shown_value(plain) is plain


def test_the_final_output_is_never_the_internal_tag() -> None:
    """A run whose final output (the last text action's result, or the last response
    stored as the tag's JSON text) held a lone surrogate: U+FFFD, never the tag."""
    sur = encode_text("bad \udc80 text")
    m = model(0, [msg("user", "go")], "final")
    rec = recording(m, tool(1, "submit", {}, sur))
    found = find_final_output(rec)
    assert found.value == "bad \ufffd text" and found.seq == 1
    assert final_output(rec) == "bad \ufffd text"
    as_json_text = recording(model(0, [msg("user", "go")], orjson.dumps(sur).decode()))
    assert final_output(as_json_text) == "bad \ufffd text"
    parts = recording(model(0, [msg("user", "go")], "final"), tool(1, "submit", {}, [{"type": "text", "text": sur}]))
    assert final_output(parts) == [{"type": "text", "text": "bad \ufffd text"}]
