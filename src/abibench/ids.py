"""Identifiers are never paths: the one rule for run ids, workload ids, tags and labels.

Every identifier abibench accepts from any source (a profile, an imported file, the command
line, a fleet host) passes `check_id` before it is stored or used; every file named after one
is built by `file_name`, which only accepts what `check_id` accepts. An id starts with a letter
or digit, holds no path separator, no NUL, no control or bidi character and no whitespace, and
is at most `ID_MAX` characters: so `../../x`, `/etc/passwd`, `.`, `..`, an empty string and a
100,000-character string are refused in one place, whatever reached them.
"""

from __future__ import annotations

import re

from .errors import UsageError

ID_MAX = 128

# Sweep instances extend a workload id with `[name=value,name=value]`; `:` and `@` appear in
# tags (`v1.4@gcc-13`), `+` in Debian versions. Nothing here can climb out of a directory:
# there is no `/`, and the first character is never `.`.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=,:@\[\]~-]*")


# A [sweep] value inside an instance id `base[name=value,...]`: the id's own characters, less
# the ones that delimit the brackets (`[`, `]`, `,`, `=`), so that an instance id names its values
# unambiguously and is itself a valid id. Profile values such as 10000, 1e-05, 0.5, oltp_read_only
# or v1.4+dfsg fit.
_SWEEP_VALUE = re.compile(r"[A-Za-z0-9._+:@~-]+")


class BadId(UsageError, ValueError):
    """An identifier that breaks the rule; str() names what it was and the rule. A UsageError
    (exit 2, one line) wherever it is not caught, a ValueError for the validators that are."""


def id_problem(value: object) -> str | None:
    """Why `value` is not a valid identifier, or None when it is."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if len(value) > ID_MAX:
        return f"is {len(value)} characters long (at most {ID_MAX})"
    if _ID.fullmatch(value) is None:
        return ("must start with a letter or digit and hold only letters, digits and "
                "._+=,:@[]~- (no '/', spaces or control characters)")
    return None


def sweep_value_problem(value: str) -> str | None:
    """Why a [sweep] value cannot be part of an instance id, or None when it can."""
    if not value:
        return "is empty"
    if len(value) > ID_MAX:
        return f"is {len(value)} characters long (at most {ID_MAX})"
    if _SWEEP_VALUE.fullmatch(value) is None:
        return ("may hold only letters, digits and ._+:@~- (it becomes part of the workload id "
                "`id[name=value]`; no '/', spaces, brackets, ',' or '=')")
    return None


def check_id(kind: str, value: object) -> str:
    """`value` if it is a valid identifier; otherwise BadId naming `kind` and the rule."""
    problem = id_problem(value)
    if problem is not None:
        shown = repr(value)[:60] if isinstance(value, str) else type(value).__name__
        raise BadId(f"{kind} {shown} {problem}")
    assert isinstance(value, str)
    return value


def file_name(kind: str, value: object, suffix: str = "") -> str:
    """A file name made from a validated identifier: never a path, never empty."""
    return check_id(kind, value) + suffix
