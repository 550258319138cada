"""A JSON object read as it streams: its top-level members one by one, and the items of one
array member one at a time, never the whole text (an exported run of 10^6 samples is 511 MiB;
`json.loads` of it takes about 4 GB).

Each value is parsed by the standard library's decoder (`raw_decode`, the C scanner), so a
value means exactly what `json.loads` makes of it; only the object's and the array's own
punctuation is read here. Limits are per value (`item_limit`) and on the text that is not in
the streamed array (`head_limit`), so the size of the file is bounded by its count of items,
not by a whole-file read. A syntax error is a `StreamError` with the line and column in the
file, as `json.JSONDecodeError` gives them.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..text import may_spell_surrogate, not_text

_WS = " \t\n\r"
_CHUNK = 1 << 20
_MARGIN = 64  # characters: more than a number, a literal or an escape can hold
_SPACE = re.compile(f"[{_WS}]*").match


class StreamError(ValueError):
    """Not valid JSON, or a value over its limit: `msg`, `lineno` and `colno` in the file."""

    def __init__(self, msg: str, lineno: int, colno: int) -> None:
        super().__init__(f"{msg}: line {lineno} column {colno}")
        self.msg, self.lineno, self.colno = msg, lineno, colno


class NotText(StreamError):
    """A string (key or value) holding a lone surrogate: JSON can spell one, no run writes one
    and no UTF-8 writer takes one (text.not_text)."""


class TooBig(ValueError):
    """A value over its limit; `what` names it."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(what)
        self.what, self.limit = what, limit


class ObjectStream:
    """The members of the JSON object in a binary file, read in chunks."""

    def __init__(self, raw: IO[bytes], parse_constant: Callable[[str], Any],
                 item_limit: int, head_limit: int) -> None:
        self._raw = raw
        self._text = codecs.getincrementaldecoder("utf-8")("strict")
        self._decoder = json.JSONDecoder(parse_constant=parse_constant)
        # the C scanner `raw_decode` calls (a run's 10^6 samples: one call each, not three)
        self._scan = self._decoder.scan_once  # type: ignore[attr-defined]
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._lines = 0  # line breaks in the text already dropped from the buffer
        self._carried = 0  # characters of the current line already dropped
        self._dropped = 0  # characters dropped from the buffer
        # Whether the text read so far may spell a surrogate's escape (text.may_spell_surrogate;
        # `_tail` is the last characters of the previous chunk, for an escape cut by the chunk):
        # only then is each value handed out searched for a lone surrogate.
        self._suspect = False
        self._tail = ""
        self.item_limit, self.head_limit = item_limit, head_limit
        self.head_chars = 0
        self._marker: str | None = None  # between two object items: `_learn`
        self._comma = 0
        self._retry = 0  # where `_many` may try again (characters from the start)

    # ------------------------------------------------------------------ the buffer

    def _more(self, want: int = _CHUNK) -> bool:
        """Read more text onto the buffer (dropping what has been read); False at the end."""
        if self._eof:
            return False
        done = self._buf[:self._pos]
        breaks = done.count("\n")
        if breaks:
            self._lines += breaks
            self._carried = len(done) - (done.rfind("\n") + 1)
        else:
            self._carried += len(done)
        self._dropped += self._pos
        self._buf = self._buf[self._pos:]
        self._pos = 0
        data = self._raw.read(max(want, _CHUNK))
        if not data:
            self._eof = True
            self._take(self._text.decode(b"", final=True))
            return False
        self._take(self._text.decode(data))
        return True

    def _take(self, piece: str) -> None:
        if not self._suspect and (may_spell_surrogate(piece)
                                  or may_spell_surrogate(self._tail + piece[:3])):
            self._suspect = True
        self._tail = (self._tail + piece[-3:])[-3:]
        self._buf += piece

    def _text_only(self, value: Any) -> Any:
        """`value`, when every string it holds is text; NotText where it ends, if not."""
        if self._suspect and not_text(value):
            raise NotText("a string holds a lone surrogate (a \\uD800-\\uDFFF escape "
                          "without its pair), which is not text", *self._where(self._pos))
        return value

    def _where(self, pos: int) -> tuple[int, int]:
        """Line and column (from 1) of a place in the buffer, in the whole file."""
        before = self._buf[:pos]
        breaks = before.count("\n")
        if breaks:
            return self._lines + breaks + 1, pos - before.rfind("\n")
        return self._lines + 1, self._carried + pos + 1

    def _error(self, msg: str, pos: int | None = None) -> StreamError:
        return StreamError(msg, *self._where(self._pos if pos is None else pos))

    def consumed(self) -> int:
        """Characters read so far."""
        return self._dropped + self._pos

    def _skip_ws(self) -> str:
        """The next character that is not white space ('' at the end), not consumed."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._more():
                return ""

    def _value(self, limit: int, what: str) -> Any:
        """The JSON value that starts here, however many chunks it spans (up to `limit`)."""
        self._skip_ws()
        want = _CHUNK
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                # An error at the end of the text read so far, or a string not closed in it,
                # may be a value cut by the chunk: read again with more text. Any other is
                # the file's.
                if self._eof or not (exc.pos >= len(self._buf) - _MARGIN
                                     or exc.msg.startswith("Unterminated string")):
                    raise self._error(exc.msg, exc.pos) from None
                end = -1
            # A value that ends near the end of the text read so far (a number such as 1e5
            # cut after its 1) may go on in the next chunk: it is read again with more text.
            if end != -1 and (end < len(self._buf) - _MARGIN or self._eof):
                if end - self._pos > limit:
                    raise TooBig(what, limit)
                self._pos = end
                return value
            if len(self._buf) - self._pos > limit:
                raise TooBig(what, limit)
            self._more(want)
            want *= 2  # a long value is read in fewer, longer steps: linear, not quadratic

    def _expect(self, chars: str, msg: str) -> str:
        c = self._skip_ws()
        if c == "" or c not in chars:
            raise self._error(msg)
        self._pos += 1
        return c

    # ------------------------------------------------------------------ the object

    def starts_object(self) -> bool:
        """Whether the text is a JSON object (else the caller reads it whole, as it was)."""
        return self._skip_ws() == "{"

    def members(self, streamed: str) -> Iterator[tuple[str, Any]]:
        """(key, value) of each member in the file's order; the member named `streamed`, when
        its value is an array, comes as (key, an iterator of lists of its items, in order, each
        list one or more), which must be read to its end before the next member."""
        self._expect("{", "Expecting value")
        if self._skip_ws() == "}":
            self._pos += 1
            self._end()
            return
        while True:
            if self._skip_ws() != '"':
                raise self._error("Expecting property name enclosed in double quotes")
            key = self._value(self.head_limit, "a key")
            self._expect(":", "Expecting ':' delimiter")
            if key == streamed and self._skip_ws() == "[":
                self._pos += 1
                yield self._text_only(key), self._items(key)
            else:
                start = self._pos
                value = self._value(self.head_limit - self.head_chars, "the document")
                self.head_chars += self._pos - start
                yield self._text_only(key), self._text_only(value)
            if self._expect(",}", "Expecting ',' delimiter") == "}":
                self._end()
                return

    def _items(self, key: str) -> Iterator[list[Any]]:
        if self._skip_ws() == "]":
            self._pos += 1
            return
        while True:
            many = self._many()
            if many is not None:  # whole items, each followed by a `,`
                yield self._text_only(many)
                continue
            done = self._quick()
            if done is not None:  # an item well inside the text read, and its separator
                value, after, last = done
                yield [self._text_only(value)]
                self._pos = after
                if last:
                    return
                continue
            self._skip_ws()
            yield [self._text_only(self._value(self.item_limit, f"an item of {key}"))]
            if self._expect(",]", "Expecting ',' delimiter") == "]":
                return

    def _many(self) -> list[Any] | None:
        """The items from here to the last place in the text read where one object item ends
        and the next begins (`_marker`, learnt from two items `_quick` read), parsed by one
        call of the scanner as the array `[` + that text + `]`; None when there is no such
        place or that is not a whole array of it (then `_quick` and `_value` read item by
        item, as they always did, until past the place tried).

        Why it means what the items read one by one mean: the text is followed by a `,`, and
        a JSON value's end does not depend on what follows it when a `,` does; so when the
        text is a whole array's items, they are the items here, each followed by a `,`.
        Neither a cut inside a string nor one at a nested object's end can pass (an open
        string, or brackets that do not balance, fail the scan or leave text unread)."""
        marker = self._marker
        buf, pos = self._buf, self._pos
        if marker is None or self._dropped + pos < self._retry:
            return None
        cut = buf.rfind(marker, pos, pos + self.item_limit)
        if cut <= pos:
            return None
        text = "[" + buf[pos:cut + 1] + "]"
        try:
            value, end = self._scan(text, 0)
        except (StopIteration, json.JSONDecodeError, RecursionError):
            end = -1
        if end != len(text) or type(value) is not list or not value:
            self._retry = self._dropped + cut + 1  # item by item up to there: linear
            return None
        self._pos = cut + self._comma
        return value

    def _learn(self, buf: str, end: int, after: int) -> None:
        """The text between two object items (`}`, the `,` and white space, `{"`), when the
        item that ends at `end` is one and the next begins like one: where `_many` cuts. The
        same text elsewhere (in a string, between nested objects) makes a cut that `_many`'s
        scan refuses."""
        space = _SPACE(buf, after)
        start = space.end() if space else after
        if buf[end - 1] == "}" and buf.startswith('{"', start):
            self._marker = buf[end - 1:start + 2]
            self._comma = after - (end - 1)  # from the marker's start to past its `,`

    def _quick(self) -> tuple[Any, int, bool] | None:
        """The item that starts here, where it and the separator after it are whole in the
        text read and within the limit: (the value, the place after the separator, whether
        it was the last); None for anything else, which `_value` and `_expect` then read as
        they always did (a value cut by the chunk, an error, the end of the text). What this
        returns is what they would: the same scanner, the same limit, and only a `,` or `]`
        as what follows it. The buffer's place is left at the value's end until the item has
        been taken, as `_value` leaves it."""
        buf = self._buf
        space = _SPACE(buf, self._pos)  # always matches: white space or none
        pos = space.end() if space else self._pos
        try:
            value, end = self._scan(buf, pos)
        except (StopIteration, json.JSONDecodeError):
            return None
        if end >= len(buf) - _MARGIN or end - pos > self.item_limit:
            return None
        space = _SPACE(buf, end)
        after = space.end() if space else end
        if after >= len(buf):
            return None
        c = buf[after]
        if c not in ",]":
            return None
        if self._marker is None and c == ",":
            self._learn(buf, end, after + 1)
        self._pos = end
        return value, after + 1, c == "]"

    def _end(self) -> None:
        if self._skip_ws() != "":
            raise self._error("Extra data")
