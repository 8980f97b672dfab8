"""Log text shown safe: every control character visible, nothing else changed; CSV cells
that would start a formula marked."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from nerve.safetext import csv_cell, shown

# What a terminal acts on: C0 but tab and newline, DEL, C1, bidi marks, embeddings,
# overrides and isolates, line and paragraph separators, lone surrogates.
DRIVES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
HOSTILE = st.text(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x2FF),
        st.sampled_from(["\x1b", "\x9b", "\u202e", "\u2066", "\u200f", "\u2028", "\ud800"]),
    )
)


def test_each_sequence_is_shown_escaped() -> None:
    assert shown("a\x1b]0;pwned\x07b") == "a\\x1b]0;pwned\\x07b"
    assert shown("\x1b[2J\x9b31m") == "\\x1b[2J\\x9b31m"
    assert shown("abc\u202eevil\u2066x\u200f") == "abc\\u202eevil\\u2066x\\u200f"
    assert shown("safe\rHIDDEN") == "safe\\rHIDDEN"
    assert shown("\x7f\x00") == "\\x7f\\x00"


def test_tabs_and_newlines_are_kept_only_where_the_form_allows_them() -> None:
    assert shown("a\tb\nc") == "a\tb\nc"
    assert shown("a\tb\nc", breaks=False) == "a\\tb\\nc"


def test_readable_text_is_left_alone() -> None:
    text = "[bold]x[/bold] C:\\Users\\me café 日本 😀 \\x1b"
    assert shown(text) is text


@given(HOSTILE)
def test_nothing_that_drives_a_terminal_is_left(text: str) -> None:
    out = shown(text, breaks=False)
    assert DRIVES.search(out) is None and "\t" not in out and "\n" not in out
    assert shown(out) == out  # shown twice is shown once


@given(HOSTILE)
def test_safe_text_is_kept_exact(text: str) -> None:
    if DRIVES.search(text) is None:
        assert shown(text) == text


def test_a_formula_is_marked_other_text_kept() -> None:
    for cell in ("=1+1", "+1", "-2+3", "@SUM(A1)", "\tx", "\r=1"):
        assert csv_cell(cell) == "'" + cell
    for cell in ("", "plain", "a=b", "'quoted", "1-2"):
        assert csv_cell(cell) == cell
