"""The sanitiser every untrusted string passes before a terminal, on real payloads."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.text import MARKER, clean, clean_all, one_line

# Anything a terminal would act on: C0 but tab and newline, DEL, C1, bidi overrides/isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize(("payload", "shown"), [
    ("before\x1b[2Jafter", "beforeafter"),  # clear screen
    ("\x1b[H\x1b[2J\x1b[3Jreset", "reset"),  # home, clear, clear scrollback
    ("x\x1b]0;pwned\x07y", "xy"),  # window title, BEL-terminated
    ("x\x1b]2;pwned\x1b\\y", "xy"),  # window title, ST-terminated
    ("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"),  # OSC 8 hyperlink
    ("\x1b]8;;file:///etc/passwd\x07here\x1b]8;;\x07", "here"),
    ("a\x9b2Jb", "ab"),  # 8-bit CSI
    ("a\x9d0;title\x9cb", "ab"),  # 8-bit OSC and ST
    ("up\x1b[5Adown\x1b[10;20Hleft\x1b[3D", "updownleft"),  # cursor movement
    ("\x1b[31;1mred\x1b[0m", "red"),  # SGR colours
    ("\x1b[?1049hscreen\x1b[?25l", "screen"),  # alternate screen, hidden cursor
    ("\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"),  # DCS (sixel graphics)
    ("\x1b_Gf=100;AAAA\x1b\\kitty", "kitty"),  # APC (kitty graphics)
    ("\x1b^pm\x1b\\\x1bXsos\x1b\\text", "text"),  # PM and SOS
    ("\x1bcreset", "reset"),  # RIS: full terminal reset
    ("\x1b7save\x1b8", "save"),  # two-byte sequences
    ("\x1b(0line\x1b(B", "line"),  # nF: character set designation
    ("plain text, ünïcödé ✓ 中文", "plain text, ünïcödé ✓ 中文"),
    ("ops[/bold] [link=x]", "ops[/bold] [link=x]"),  # markup is text here
])
def test_escape_sequences_vanish_and_text_stays(payload: str, shown: str) -> None:
    assert clean(payload) == shown


@pytest.mark.parametrize(("payload", "shown"), [
    ("bell\x07", f"bell{MARKER}"),
    ("back\x08space", f"back{MARKER}space"),
    ("over\rwrite", f"over{MARKER}write"),  # a lone CR would overwrite the line
    ("del\x7f", f"del{MARKER}"),
    ("nul\x00", f"nul{MARKER}"),
    ("c1\x85\x8d", f"c1{MARKER}{MARKER}"),
    ("stray\x1b", f"stray{MARKER}"),  # ESC without a sequence
    ("esc\x1b\nline", f"esc{MARKER}\nline"),
    ("\x1b]0;never ends", "0;never ends"),  # unterminated OSC: the introducer goes
    ("\x1b[12", "12"),  # unterminated CSI
    ("\x1b\x1b[31m[31m", f"{MARKER}[31m"),  # removing a sequence cannot form a new one
])
def test_lone_controls_become_a_visible_marker(payload: str, shown: str) -> None:
    assert clean(payload) == shown


def test_bidi_overrides_and_isolates_are_marked() -> None:
    # "Trojan source": U+202E makes 'exe.txt' read as 'txt.exe'.
    assert clean("invoice\u202etxt.exe") == f"invoice{MARKER}txt.exe"
    for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        assert clean(f"a{ch}b") == f"a{MARKER}b"
    assert clean("עברית العربية") == "עברית العربية"  # right-to-left text itself is fine


def test_clean_keeps_lines_and_tabs() -> None:
    assert clean("a\tb\nc\r\nd") == "a\tb\nc\nd"


def test_one_line_joins_lines() -> None:
    assert one_line("first\nsecond\r\nthird\rfourth\tfifth\u2028sixth") == \
        "first second third fourth fifth sixth"
    assert one_line("Traceback\x1b[31m\nboom\x1b[0m") == "Traceback boom"
    assert "\n" not in one_line("\n".join(["x"] * 100))


def test_nothing_unsafe_survives_any_mix() -> None:
    pieces = ["\x1b", "[", "]", "\x9b", "\x9d", "\x9c", "\x07", "\\", "0;", "2J", "P", "_", "\n",
              "\r", "\u202e", "a", "\x00", "m", ";"]
    # Every sequence of three pieces, and long runs of introducers (linear time, too).
    for x in pieces:
        for y in pieces:
            for z in pieces:
                assert not UNSAFE.search(clean(x + y + z)), repr(x + y + z)
                assert not UNSAFE.search(one_line(x + y + z).replace("\t", ""))
    for payload in ("\x1b]" * 50_000, "\x1b[" * 50_000, "\x9d" * 50_000, "\x1bP" + "x" * 100_000):
        assert not UNSAFE.search(clean(payload))


def test_empty_and_long() -> None:
    assert clean("") == "" and one_line("") == ""
    long = "ü" * 10_000
    assert clean(long) == long


def test_marks_and_invisible_characters_that_hide_text_are_marked() -> None:
    for ch in "\u200e\u200f\u061c\u200b\u00ad\u2060\u2064\ufeff\U000e0041\U000e007f":
        assert clean(f"x86{ch}_64") == f"x86{MARKER}_64", repr(ch)
    # The joiners stay: emoji sequences and several scripts need them, and they hide nothing.
    assert clean("👩\u200d💻 می\u200cخواهم") == "👩\u200d💻 می\u200cخواهم"
    assert clean("a\u2028b\u2029c") == "a\nb\nc"


def test_clean_all_cleans_every_string_of_a_structure_and_copies_only_what_changed() -> None:
    from dataclasses import dataclass, field
    from typing import NamedTuple

    class Pair(NamedTuple):
        name: str
        value: float

    @dataclass(frozen=True)
    class Inner:
        text: str
        pair: Pair

    @dataclass
    class Outer:
        title: str
        inner: Inner
        items: list[object] = field(default_factory=list)
        by: dict[str, tuple[str, ...]] = field(default_factory=dict)
        plain: Inner = Inner("ok", Pair("ok", 1.0))

    raw = Outer("t\x1b[2J", Inner("i\u202e", Pair("p\x9b1m", 2.0)), ["a\x00", 3, None, {"s"}],
                {"k\x1b]0;x\x07": ("v\u2066",)})
    got = clean_all(raw)
    assert got.title == "t" and got.inner.text == f"i{MARKER}"
    assert got.inner.pair == Pair("p", 2.0) and isinstance(got.inner.pair, Pair)
    assert got.items == [f"a{MARKER}", 3, None, {"s"}]
    assert got.by == {"k": (f"v{MARKER}",)}
    assert got.plain is raw.plain  # nothing to clean: the same object
    assert raw.title == "t\x1b[2J" and raw.inner.text == "i\u202e"  # the original is untouched
    clean_value = Inner("ok", Pair("ok", 1.0))
    assert clean_all(clean_value) is clean_value


# Every code point, surrogates and noncharacters included: what Python can hold in a str that
# came from outside (a command-line value's or a file name's bytes that are not UTF-8 become
# U+DC80-U+DCFF; a JSON "\ud800" escape a lone surrogate).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)


@settings(max_examples=300)
@given(ANY_TEXT)
def test_every_cleaned_text_encodes_as_utf8_and_fits_in_xml(raw: str) -> None:
    # Family "text from outside that no UTF-8 writer can take reaches one" (reliability.md, "Text
    # abibench writes is valid Unicode"): whatever a string holds, the sanitiser's output is
    # UTF-8 and XML text (a character it could not keep is the visible marker, or went with
    # the escape sequence it was inside).
    for out in (clean(raw), one_line(raw)):
        out.encode("utf-8")
        assert not re.search("[\ud800-\udfff\ufffe\uffff]", out), repr(out)
