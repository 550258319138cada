"""Turning a program's output into metric values and a validation value."""

from __future__ import annotations

from .profile import Workload


class ParseError(ValueError):
    pass


def parse_metrics(wl: Workload, stdout: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for m in wl.metrics:
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
