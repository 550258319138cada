"""A profile's regular expressions ([[metric]] parse.regex, [validate] stdout_match), run by a
linear-time engine.

A profile is untrusted, and so is the output its patterns are matched against: with a
backtracking engine (Python's `re`), `(a+)+$` over a line of a's takes exponential time, and no
sample timeout bounds it (the match runs in abibench, after the sample). RE2 (google-re2)
matches in time linear in the text for every pattern it accepts; what it cannot do that way
(backreferences, lookaround) it refuses, and that refusal is a profile error at load, with its
file and line, never a surprise halfway through a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import re2

# RE2's memory for one pattern (its default is 8 MiB): a pattern that needs more is refused at
# compile time; matching never needs more than this.
MAX_MEM = 64 << 20


class PatternError(ValueError):
    """RE2 refused the pattern; str() says why, in RE2's words."""


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False  # RE2 would write its own error lines to stderr
    opts.max_mem = MAX_MEM
    return opts


@dataclass(frozen=True)
class Pattern:
    """One compiled pattern; equal when its text is."""

    pattern: str
    _rx: Any = field(compare=False, repr=False)

    @staticmethod
    def compile(text: str) -> Pattern:
        try:
            rx = re2.compile(text, _options())
        except re2.error as exc:
            why = exc.args[0] if exc.args else exc
            raise PatternError(why.decode("utf-8", "replace") if isinstance(why, bytes)
                               else str(why)) from None
        except (TypeError, ValueError) as exc:  # e.g. a NUL in the pattern
            raise PatternError(str(exc)) from None
        return Pattern(text, rx)

    @property
    def groups(self) -> int:
        return int(self._rx.groups)

    @property
    def engine(self) -> str:
        """Which engine matches this pattern: always RE2 (a test asserts it)."""
        return type(self._rx).__module__.split(".")[0]

    def find(self, text: str) -> str | None:
        """The first capture group of the first match in text ("" when that group took no part
        in the match); None when nothing matches."""
        found = self._rx.search(text)
        if found is None:
            return None
        value = found.group(1)
        return "" if value is None else str(value)

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the first capture group of the first match lies in text; None when nothing
        matches or the group took no part."""
        found = self._rx.search(text)
        if found is None or found.start(1) < 0:
            return None
        return int(found.start(1)), int(found.end(1))
