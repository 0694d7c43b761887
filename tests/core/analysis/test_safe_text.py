"""core.analysis.safe_text: control, bidi and invisible characters become visible."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from core.analysis.safe_text import has_hidden, visible

#: what no terminal may receive from recorded text
UNSAFE = {
    *range(0x20),
    0x7F,
    *range(0x80, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
}


def test_escape_sequences_and_osc_are_shown_not_obeyed():
    clear = "\x1b[2J\x1b[Hdone"
    assert visible(clear) == "␛[2J␛[Hdone"
    title = "\x1b]0;pwned\x07rest"
    assert visible(title) == "␛]0;pwned␇rest"
    clipboard = "\x1b]52;c;ZWNobyBoaQ==\x1b\\"
    assert "\x1b" not in visible(clipboard) and visible(clipboard).startswith("␛]52;")
    assert visible("a\rb") == "a␍b"
    assert visible("csi\x9b31m") == "csi\\x9b31m"
    assert visible("\x7f") == "␡"


def test_bidi_and_zero_width_become_escapes():
    trojan = "access = 'user\u202e \u2066// admin\u2069\u2066'"
    out = visible(trojan)
    assert "\\u202e" in out and "\\u2066" in out and "\\u2069" in out
    assert not any(ord(c) in UNSAFE for c in out)
    assert visible("pass\u200bword") == "pass\\u200bword"
    assert visible("\ufeffbom") == "\\ufeffbom"


def test_newlines_and_tabs_kept_only_when_asked():
    assert visible("a\nb\tc") == "a␊b␉c"
    assert visible("a\nb\tc", keep_newline=True) == "a\nb␉c"
    assert visible("a\nb\tc", keep_newline=True, keep_tab=True) == "a\nb\tc"


def test_ordinary_text_of_every_script_is_unchanged():
    for text in ("héllo wörld", "日本語のテキスト", "مرحبا", "emoji 🎉✨", "e\u0301", "Ω≈ç√∫"):
        assert visible(text) == text
        assert not has_hidden(text)


def test_has_hidden_marks_rows():
    assert has_hidden("x\x1b[31m")
    assert has_hidden("x\u202e")
    assert not has_hidden("two\nlines\tand a tab")
    assert has_hidden("two\nlines", keep_newline=False)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_visible_never_lets_an_unsafe_character_through(text):
    out = visible(text)
    assert not any(ord(c) in UNSAFE or unicodedata.category(c) == "Cc" for c in out)
    assert has_hidden(text, keep_newline=False, keep_tab=False) == (out != text)
    # safe characters are kept in place: removing every stand-in source gives the same text
    assert visible(out) == out


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_keep_newline_only_passes_newlines(text):
    out = visible(text, keep_newline=True)
    assert not any((ord(c) in UNSAFE and c != "\n") for c in out)
    assert out.count("\n") == text.count("\n")


def test_shown_marks_the_first_replaced_character():
    from core.analysis.safe_text import HIDDEN_MARK, shown

    assert shown("plain text") == "plain text"
    assert shown("ok\x1b[2J\x1b[H") == f"ok{HIDDEN_MARK}␛[2J␛[H"
    assert shown("a\nb") == f"a{HIDDEN_MARK}␊b"
    assert shown("a\nb", keep_newline=True) == "a\nb"
    assert shown("a\nb\u202ec", keep_newline=True) == f"a\nb{HIDDEN_MARK}\\u202ec"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_shown_is_visible_plus_one_marker(text):
    from core.analysis.safe_text import HIDDEN_MARK, shown

    out = shown(text)
    if visible(text) == text:
        assert out == text
    else:
        i = next(i for i, c in enumerate(text) if visible(c) != c)  # the first replaced character
        assert out[i] == HIDDEN_MARK and out[:i] + out[i + 1 :] == visible(text)
    assert not any(ord(c) in UNSAFE for c in out)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(alphabet=st.characters(codec="utf-8")),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet=st.characters(codec="utf-8"), max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(_JSON_VALUES)
def test_json_safe_keeps_the_value_and_leaves_nothing_raw(value):
    import orjson

    from core.analysis.safe_text import json_safe

    for option in (0, orjson.OPT_INDENT_2):
        out = json_safe(orjson.dumps(value, option=option).decode())
        assert orjson.loads(out) == value
        assert not any(ord(c) in UNSAFE and c != "\n" for c in out)
