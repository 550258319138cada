"""Untrusted text made safe to show on a terminal.

A program's stderr, a profile's names and units, an imported file's host fields and file paths
can hold bytes a terminal obeys rather than shows: ``ESC [2J`` clears the screen, ``ESC ]0;...``
sets the window title, OSC 8 turns text into a hyperlink, an 8-bit CSI (U+009B) does what
``ESC [`` does on terminals that read C1 controls, and a bidirectional override (U+202E) makes
text read differently from what it is. Every string that did not come from abibench itself goes
through :func:`clean` (or :func:`one_line`) before it reaches a terminal.

What a removed character becomes:

* a whole escape sequence (CSI, OSC, DCS, SOS, PM, APC, an nF or two-byte ESC sequence, and
  their 8-bit forms) becomes nothing: it is an instruction to the terminal, not text, and what
  it wraps (a hyperlink's visible text, say) stays;
* a lone control character (C0 but newline and tab, DEL, C1, a stray ESC) and a bidirectional
  override or isolate becomes :data:`MARKER`, U+FFFD, the character that already stands for
  undecodable bytes in a program's output: the reader sees that something unprintable was there.

A CR LF line end is a line end, kept as LF. Both functions are pure and never fail.
"""

from __future__ import annotations

import re

MARKER = "\ufffd"

# String terminators: ST as ESC \ or its 8-bit form, and BEL, which xterm accepts for OSC.
_ST = r"(?:\x1b\\|\x9c|\x07)"
_SEQUENCE = re.compile(
    # CSI: ESC [ or 8-bit CSI, parameter bytes, intermediate bytes, one final byte.
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    # OSC, DCS, SOS, PM, APC (7- and 8-bit introducers) up to their terminator. The body holds
    # no ESC and no C1, so the scan stops at the next introducer and the whole pass stays linear
    # in the length of the text; an unterminated one loses only its introducer (the next
    # alternative, or the marker below), and the rest is plain text.
    rf"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x80-\x9f]*{_ST}"
    # nF (ESC, intermediates, final: character set designations) and two-byte ESC sequences
    # (ESC c resets the terminal, ESC 7 saves the cursor, an unterminated ESC [ or ESC ] ...).
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]"
)
# C0 except tab and newline, DEL, C1, and the bidirectional embeddings, overrides and isolates.
_LONE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# What a terminal, or str.splitlines, would start a new line at.
_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def clean(text: str) -> str:
    """``text`` without escape sequences and control characters; newlines and tabs are kept."""
    text = text.replace("\r\n", "\n")
    return _LONE.sub(MARKER, _SEQUENCE.sub("", text))


def one_line(text: str) -> str:
    """:func:`clean` for a place that must stay one line: every line break and tab is a space."""
    return clean(_BREAK.sub(" ", text).replace("\t", " "))
