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
* a lone control character (C0 but newline and tab, DEL, C1, a stray ESC, NUL), a bidirectional
  embedding, override, isolate or mark (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C)
  and an invisible character that can hide or split text (U+200B zero width space, U+00AD soft
  hyphen, U+2060-U+2064 and U+206A-U+206F, U+180E, U+FEFF, the tag characters U+E0000-U+E007F
  that smuggle ASCII past a reader), a lone surrogate (U+D800-U+DFFF: what Python makes of a
  file name's or a command-line value's bytes that are not UTF-8, or a JSON ``\\ud800``
  escape; no UTF-8 writer, terminal, file or database, can take one) and the noncharacters
  U+FFFE and U+FFFF (no XML can hold them) becomes :data:`MARKER`, U+FFFD, the character that
  already stands for undecodable bytes in a program's output: the reader sees that something
  was there, and every cleaned text encodes as UTF-8.
  The zero width joiner and non-joiner stay: emoji and several scripts need them, and they
  cannot hide a character.

A CR LF line end is a line end, kept as LF, and so are the Unicode line and paragraph separators
(U+2028, U+2029), which some viewers break lines at and others do not: a line break every format
treats the same way. Both functions are pure and never fail.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import operator
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

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
# C0 except tab and newline, DEL, C1, the bidirectional embeddings, overrides, isolates and marks,
# and the invisible characters that can hide text (see the module's docstring).
_LONE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f"
                   "\u061c\u200b\u00ad\u2060-\u2064\u206a-\u206f\u180e\ufeff"
                   "\U000e0000-\U000e007f\ud800-\udfff\ufffe\uffff]")
_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n"})
# Whether clean() would change a text at all: a quick test that lets clean_all skip most strings.
_TOUCHED = re.compile(_LONE.pattern[:-1] + "\r\u2028\u2029]")
# What a terminal, or str.splitlines, would start a new line at.
_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def clean(text: str) -> str:
    """``text`` without escape sequences and control characters; newlines and tabs are kept."""
    text = text.replace("\r\n", "\n").translate(_SEPARATORS)
    return _LONE.sub(MARKER, _SEQUENCE.sub("", text))


def one_line(text: str) -> str:
    """:func:`clean` for a place that must stay one line: every line break and tab is a space."""
    return clean(_BREAK.sub(" ", text).replace("\t", " "))


def needs_clean(text: str) -> bool:
    """Whether :func:`clean` could change ``text``: False means it gives ``text`` back as it
    is. One search, so that a writer can test a whole batch of rows it wrote (every string
    written verbatim, as CSV writes them) and clean only the batch that needs it."""
    if text.isascii():  # (known in O(1)) the touched ASCII are the controls but tab and newline
        return not text.replace("\n", "").replace("\t", "").isprintable()  # a pass in C
    return _TOUCHED.search(text) is not None


# In JSON written with ensure_ascii, every character `clean` touches (C0 but tab and newline,
# CR, DEL, C1, and the non-ASCII ones it removes or turns into line breaks) is an escape
# `\uXXXX`, `\b`, `\f` or `\r`: a backslash (not itself escaped) before one of these letters.
_JSON_TOUCHED = re.compile(r"\\[bfru]")


def json_needs_clean(ascii_json: str) -> bool:
    """:func:`needs_clean` for JSON text written with ``ensure_ascii`` (the default of the json
    module): False means that no string in it (keys included) is changed by :func:`clean`.
    Cautious: any non-ASCII character or escaped backslash before those letters says True."""
    return _JSON_TOUCHED.search(ascii_json) is not None


T = TypeVar("T")


def clean_all(value: T) -> T:
    """``value`` with :func:`clean` applied to every string it holds, however deep: in a
    dataclass's fields (frozen or not), lists, tuples (named ones too), sets and dicts (keys
    included). What holds no string that changes comes back as the same object; what does comes
    back as a copy, and the original is left as it was.

    This is how a whole structure (the analysis's Report) is made safe in one step: a field
    added to it later is cleaned without anyone remembering to, because nothing is listed.
    Numbers, booleans, None and objects of other kinds (str subclasses such as markup a renderer
    built itself) pass unchanged."""
    return cast(T, _walk(value, {}))


# Values that hold no text: returned as they are without a call (most of a Report's values).
_SCALARS: frozenset[type] = frozenset({int, float, bool, type(None), complex, bytes})


def _walk(value: object, seen: dict[int, object]) -> object:
    kind: Any = type(value)
    if kind is str:
        text = cast(str, value)
        return clean(text) if _TOUCHED.search(text) else text
    if kind in _SCALARS or isinstance(value, str):
        return value
    key = id(value)
    if key in seen:  # shared (or cyclic) objects are cleaned once and stay shared
        return seen[key]
    out: object = value
    if kind in _DATACLASSES or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        _DATACLASSES.add(kind)
        changes: dict[str, object] = {}
        # A report holds every sample of a run (10^6 of them): a record's fields are read in
        # one call, its texts tested in one search of them joined by a space (which nothing
        # cleans), and only a record whose texts hold something to clean is gone through.
        names, read = _field_reader(kind)
        values = read(value)
        texts = [v for v in values if type(v) is str]
        dirty = bool(texts) and _TOUCHED.search(" ".join(texts)) is not None
        for name, old in zip(names, values, strict=True):
            kind_of = type(old)
            if kind_of in _SCALARS:
                continue
            if kind_of is str:
                if dirty and _TOUCHED.search(cast(str, old)):
                    changes[name] = clean(cast(str, old))
                continue
            new = _walk(old, seen)
            if new is not old:
                changes[name] = new
        if changes:
            out = copy.copy(value)
            for name, new in changes.items():
                # object.__setattr__: a frozen dataclass is copied, never changed in place.
                object.__setattr__(out, name, new)
    elif kind is dict and _plain_dict(cast(dict[Any, Any], value)):
        pass  # text keys with nothing to clean, values that hold no text: itself
    elif isinstance(value, list | tuple | set | frozenset):
        # A report holds each target's values (a shape's points, a comparison's pairs): 10^6
        # numbers in a large run, told to hold no text by one pass in C.
        if _SCALARS.issuperset(map(type, value)):
            seen[key] = value
            return value
        items = [v if type(v) in _SCALARS else _walk(v, seen) for v in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            out = kind(*items) if hasattr(value, "_fields") else kind(items)  # a NamedTuple
    elif isinstance(value, dict):
        pairs = [(_walk(k, seen), v if type(v) in _SCALARS else _walk(v, seen))
                 for k, v in value.items()]
        if any(nk is not k or nv is not v
               for (nk, nv), (k, v) in zip(pairs, value.items(), strict=True)):
            out = kind(pairs)
    seen[key] = out
    return out


_DATACLASSES: set[type] = set()  # types already seen to be dataclasses


@functools.cache
def _field_reader(kind: type) -> tuple[tuple[str, ...], Callable[[object], tuple[object, ...]]]:
    """A dataclass's field names, and a function reading all of them in one call."""
    names = tuple(f.name for f in dataclasses.fields(kind))
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return names, lambda value: (one(value),)
    if not names:
        return names, lambda value: ()
    many: Callable[[object], tuple[object, ...]] = operator.attrgetter(*names)
    return names, many


def _plain_dict(value: dict[Any, Any]) -> bool:
    """Whether a dict is text keys with nothing to clean and values that hold no text (a
    sample's metrics): then it is returned as it is, without building its pairs."""
    for k, v in value.items():
        if type(k) is not str or type(v) not in _SCALARS:
            return False
    return not value or _TOUCHED.search(" ".join(value)) is None


# ------------------------------------------------------------------ text that is not text
#
# A JSON document may spell a lone UTF-16 surrogate (`"\ud800"`): json gives it as a str that
# no UTF-8 writer (SQLite, PostgreSQL, a report file, a digest) can encode. abibench writes no
# such string (a program's output is decoded with "replace", a profile's TOML refuses the
# escape, the command line refuses what is not UTF-8), so a document that holds one did not
# come from a run, and its reader refuses it (reliability.md, "Text abibench writes is valid
# Unicode"). These two functions are that rule, for every reader.


def may_spell_surrogate(json_text: str) -> bool:
    """Whether JSON text may hold a surrogate's escape: False means no string parsed from it
    holds a lone surrogate (a JSON string holds one only as a ``\\uD800``-``\\uDFFF`` escape).
    Two searches in C; cautious (an escaped backslash before ``ud``, a valid pair, say True)."""
    return "\\ud" in json_text or "\\uD" in json_text


def not_text(value: object) -> bool:
    """Whether a parsed JSON value holds a string (a key or a value, at any depth) that is not
    Unicode text: a lone surrogate, which UTF-8 cannot encode."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False
