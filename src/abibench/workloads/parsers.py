"""Turning a program's output into metric values and a validation value."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .profile import Workload

# Named parsers for programs whose output holds many figures (openssl speed, speedtest1, ...):
# name -> function(stdout) -> {key: value}. Profiles pick values with parse = {builtin, key}.
BuiltinParser = Callable[[str], dict[str, float]]
BUILTIN_PARSERS: dict[str, BuiltinParser] = {}


class ParseError(ValueError):
    pass


def parse_metrics(wl: Workload, stdout: str) -> dict[str, float]:
    values: dict[str, float] = {}
    parsed: dict[str, dict[str, float]] = {}
    for m in wl.metrics:
        if m.builtin is not None:
            if m.builtin not in parsed:
                try:
                    parsed[m.builtin] = BUILTIN_PARSERS[m.builtin](stdout)
                except ValueError as exc:
                    raise ParseError(f"parser '{m.builtin}': {exc}") from None
            found_value = parsed[m.builtin].get(m.key or m.name)
            if found_value is None:
                raise ParseError(f"metric '{m.name}': parser '{m.builtin}' found no '{m.key}' in "
                                 "the output")
            values[m.name] = found_value * m.scale
            continue
        if m.regex is None:
            continue
        found = m.regex.search(stdout)
        if not found:
            raise ParseError(f"metric '{m.name}' not found in the output (pattern "
                             f"{m.regex.pattern!r})")
        try:
            values[m.name] = float(found.group(1)) * m.scale
        except ValueError:
            raise ParseError(f"metric '{m.name}': {found.group(1)!r} is not a number") from None
    return values


def validation_value(wl: Workload, stdout: str) -> str | None:
    """What must be equal across ABIs; None when the profile asks for no validation."""
    if wl.stdout_match is None:
        return None
    found = wl.stdout_match.search(stdout)
    if not found:
        raise ParseError(f"validation pattern {wl.stdout_match.pattern!r} not found in the output")
    return found.group(1)
