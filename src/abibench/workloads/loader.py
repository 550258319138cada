"""The TOML tables of one profile read with errors that name the file, the line and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import ProfileError
from ..records import BUILTIN_METRICS, Better
from ..text import one_line
from .parsers import BUILTIN_PARSERS
from .pattern import Pattern, PatternError
from .workload import ID_RE, MetricRule


def _line_of(text: str, key: str, array: str | None = None, index: int = 0) -> int:
    """Best-effort line of a key or table header, so a semantic error can point at it.

    With `array`, the search starts at the index-th [[array]] header, so an error in the third
    [[metric]] points into the third one.
    """
    start = 0
    if array is not None:
        headers = list(re.finditer(rf"^\s*\[\[\s*{re.escape(array)}\s*\]\]", text, re.M))
        if index < len(headers):
            start = headers[index].start()
    pat = re.compile(rf"^\s*\[+\s*{re.escape(key)}\s*\]+|(?:^|[{{,]|\s){re.escape(key)}\s*=",
                     re.M)
    m = pat.search(text, start)
    if m is None:
        return text.count("\n", 0, start) + 1
    return text.count("\n", 0, m.start() + (1 if text[m.start()] == "\n" else 0)) + 1


def parse_duration(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*", value)
        if m:
            factor = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2) or "s"]
            seconds = float(m.group(1)) * factor
            if seconds > 0:
                return seconds
    raise ValueError(f"bad duration {value!r}: write e.g. \"90s\", \"2m\" or 500ms")


class Loader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.within: tuple[str, int] | None = None  # set while reading one [[metric]]

    def fail(self, key: str, msg: str) -> ProfileError:
        line = _line_of(self.text, key, *self.within) if self.within else _line_of(self.text, key)
        return ProfileError(f"{self.path}:{line}: {msg}")

    def only_keys(self, table: Mapping[str, object], what: str, keys: Sequence[str]) -> None:
        """Refuse a key `what` (a table, a metric) does not take, naming the first one's line and
        every key it does take: a typo is an error, never a silently ignored setting."""
        unknown = sorted(set(table) - set(keys))
        if unknown:
            raise self.fail(unknown[0], f"{what} has no key {', '.join(unknown)} (it takes "
                            f"{', '.join(keys)})")

    def str_(self, table: Mapping[str, object], key: str, *, required: bool = True,
             default: str = "") -> str:
        if key not in table:
            if required:
                raise self.fail(key, f"missing '{key}': add {key} = \"...\"")
            return default
        value = table[key]
        if not isinstance(value, str):
            raise self.fail(key, f"'{key}' must be a string, not {type(value).__name__}")
        return value

    def strlist(self, table: Mapping[str, object], key: str, *, required: bool = False) -> tuple[str, ...]:
        if key not in table:
            if required:
                raise self.fail(key, f"missing '{key}': add {key} = [\"...\"]")
            return ()
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, f"'{key}' must be a list of strings, like {key} = [\"a\", \"b\"]")
        return tuple(value)

    def regex(self, table: Mapping[str, object], key: str) -> Pattern:
        """A pattern matched against program output: compiled here, by RE2, so that one it
        cannot match in linear time (a backreference, a lookaround) is refused at load."""
        pattern = self.str_(table, key)
        try:
            rx = Pattern.compile(pattern)
        except PatternError as exc:
            raise self.fail(key, f"bad regular expression in '{key}': {one_line(str(exc))} "
                            "(patterns are matched in linear time by RE2, which has no "
                            "backreferences or lookaround: rewrite it without them)") from None
        if rx.groups < 1:
            raise self.fail(key, f"'{key}' needs one capture group (...) around the value")
        return rx

    def table(self, data: Mapping[str, object], key: str, *, required: bool = True) -> dict[str, object]:
        if key not in data:
            if required:
                raise self.fail(key, f"missing table [{key}]")
            return {}
        value = data[key]
        if not isinstance(value, dict):
            raise self.fail(key, f"'{key}' must be a table [{key}]")
        return value

    def metric(self, m: object, index: int) -> MetricRule:
        if not isinstance(m, dict):
            raise self.fail("metric", f"[[metric]] number {index + 1} must be a table")
        name = self.str_(m, "name")
        if not ID_RE.match(name.replace("_", "-")):
            raise self.fail("name", f"metric name '{name}' must be lowercase letters, digits, _ - .")
        if name in BUILTIN_METRICS:
            raise self.fail("name", f"metric name '{name}' is measured by abibench itself: rename it")
        better = self.str_(m, "better")
        if better not in ("higher", "lower"):
            raise self.fail("better", f"metric '{name}': better = \"higher\" or \"lower\", not "
                            f"{better!r}")
        parse = m.get("parse")
        if not isinstance(parse, dict) or not ("regex" in parse or "builtin" in parse):
            raise self.fail("parse", f"metric '{name}': add parse = {{ regex = '...([0-9.]+)...' }}"
                            " or parse = { builtin = \"NAME\", key = \"...\" }")
        scale = m.get("scale", 1.0)
        if not isinstance(scale, int | float) or isinstance(scale, bool) or \
                not math.isfinite(scale) or scale <= 0:  # TOML has nan and inf
            raise self.fail("scale", f"metric '{name}': scale must be a positive number")
        direction: Better = "higher" if better == "higher" else "lower"
        unit = self.str_(m, "unit")
        optional = m.get("optional", False)
        if not isinstance(optional, bool):
            raise self.fail("optional", f"metric '{name}': optional = true or false")
        self.only_keys(m, f"metric '{name}'",
                       ("name", "unit", "better", "parse", "scale", "optional"))
        if "builtin" in parse:
            builtin = self.str_(parse, "builtin")
            if builtin not in BUILTIN_PARSERS:
                raise self.fail("builtin", f"metric '{name}': no builtin parser '{builtin}' (have: "
                                f"{', '.join(sorted(BUILTIN_PARSERS)) or 'none'})")
            key = self.str_(parse, "key", required=False, default=name)
            return MetricRule(name, unit, direction, None, float(scale), builtin, key, optional)
        return MetricRule(name, unit, direction, self.regex(parse, "regex"), float(scale),
                          optional=optional)
