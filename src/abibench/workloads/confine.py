"""Which paths a profile may name, and where they may lead.

A profile is untrusted input: abibench deletes the files it validates before every sample,
copies its artifacts, reads its standard input. Every such path has a root, and nothing a
profile names may lead outside it:

* source files: the profile's own directory (or abibench's micro/ sources);
* artifacts and [source] data: the build's output directory {out} (data: the build tree);
* files a run writes, reads back or deletes ([validate] files and close files): {work};
* standard input: {work}, the profile's directory, the artifact directory or a generated input.

The form of each template is checked when the profile is loaded (`template_problem`); the path
it becomes is checked again, symlinks resolved, right before abibench touches it (`confined`),
because a parameter set on the command line or a symlink made by the program can still point
elsewhere.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..errors import UsageError

_LEADING = re.compile(r"^\{([a-z_][a-z0-9_]*)\}")

# What each kind of path may start with; None: a relative path (its root is implied).
ROOTS: dict[str, tuple[str, ...]] = {
    "source": ("micro", "profile_dir"),
    "artifact": (),
    "data": (),
    "work": ("work",),
    "stdin": ("work", "profile_dir", "bin"),
}

ROOT_WORDS = {
    "source": "the profile's directory",
    "artifact": "the build's output directory {out}",
    "data": "the build tree",
    "work": "the run's work directory {work}",
    "stdin": "{work}, {profile_dir}, {bin} or an [inputs] file",
}


def template_problem(template: str, kind: str, inputs: frozenset[str] = frozenset()) -> str | None:
    """Why a path template of this kind may lead outside its root; None when it cannot."""
    if not template.strip():
        return "is empty"
    m = _LEADING.match(template)
    rest = template[m.end():] if m else template
    allowed = set(ROOTS[kind]) | (inputs if kind == "stdin" else set())
    if m and m.group(1) not in allowed:
        return (f"starts with {{{m.group(1)}}}, which is not {ROOT_WORDS[kind]}")
    if not m and template.startswith("/"):
        return f"is an absolute path: name a path inside {ROOT_WORDS[kind]}"
    if ".." in PurePosixPath(rest.lstrip("/")).parts:
        return f"climbs out with '..': name a path inside {ROOT_WORDS[kind]}"
    if kind in ("artifact", "data") and "{" in template:
        return "holds a placeholder: name the file relative to the output directory"
    return None


def inside(path: Path, root: Path) -> bool:
    """Whether path, with every symlink resolved, is root or below it."""
    return path.resolve().is_relative_to(root.resolve())


def confined(path: Path, roots: tuple[Path, ...], what: str) -> Path:
    """The path with symlinks resolved, if it lies inside one of the roots; else a UsageError."""
    real = path.resolve()
    for root in roots:
        if real.is_relative_to(root.resolve()):
            return real
    where = " or ".join(str(r) for r in roots)
    raise UsageError(f"{what} {path} leads to {real}, outside {where}: abibench only touches "
                     "files inside a run's own directories; fix the profile or the --set value")
