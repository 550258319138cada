"""A loaded profile's paths and placeholders checked; placeholders filled in.

Every path a profile names stays inside its root (workloads/confine.py); every placeholder is
one the workload defines; source files are protected from being overwritten by an output.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ProfileError
from ..files import existing_kind_problem
from ..outputs import protect
from ..paths import MICRO_DIR
from .confine import ROOT_WORDS, confined, inside, template_problem
from .loader import Loader
from .workload import PLACEHOLDER_RE, RESERVED, Workload


def check_paths(ld: Loader, wl: Workload) -> None:
    """Every path the profile names stays inside its root (workloads/confine.py)."""
    inputs = frozenset(wl.inputs)
    checks: list[tuple[str, str, str]] = [
        *(("artifacts", a, "artifact") for a in wl.source.artifacts),
        *(("data", d, "data") for d in wl.source.data),
        *(("files", f, "source") for f in wl.source.files),
        *(("files", f, "work") for f in wl.validate_files),
        *(("close", f, "work") for f in (wl.close.files if wl.close else ())),
        *(("files", f, "work") for _, spec in wl.validate_when for f in spec.files),
        *(("close", f, "work") for _, spec in wl.validate_when
          for f in (spec.close.files if spec.close else ())),
        *((("stdin", wl.stdin, "stdin"),) if wl.stdin is not None else ()),
    ]
    for key, template, kind in checks:
        problem = template_problem(template, kind, inputs)
        if problem:
            raise ld.fail(key, f"{key} entry '{template}' {problem} (abibench only touches "
                          f"paths inside {ROOT_WORDS[kind]})")
    _check_stdin_kind(ld, wl)
    if not wl.source.build:
        roots = (wl.path.parent, MICRO_DIR)
        for f, p in zip(wl.source.files, _source_paths(wl), strict=True):
            if not p.is_file():
                raise ld.fail("files", f"source file '{f}' does not exist ({p}): fix [source] "
                              "files")
            if not any(inside(p, r) for r in roots):
                raise ld.fail("files", f"source file '{f}' leads to {p.resolve()}, outside the "
                              "profile's directory: copy it next to the profile")
            protect(p, f"a source file of workload {wl.id}")
    elif not wl.source.debian:
        _protect_build_tree(wl)


# A build = [...] profile builds from a copy of its whole directory: every file there is a source.
# Bounded, so that a profile beside a home directory's worth of files costs nothing noticeable.
_TREE_FILES_PROTECTED = 5000


def _protect_build_tree(wl: Workload) -> None:
    seen = 0
    for root, dirs, names in os.walk(wl.path.parent):
        dirs.sort()
        for name in names:
            protect(Path(root) / name, f"a file of workload {wl.id}'s source tree")
            seen += 1
            if seen >= _TREE_FILES_PROTECTED:
                return


def _check_stdin_kind(ld: Loader, wl: Workload) -> None:
    """[run] stdin that names a file already there (in the profile's directory): it must be a
    regular file. A FIFO would block the run before its first sample, a device would never
    end. (Checked again when the sample opens it: files.open_regular.)"""
    if wl.stdin is None:
        return
    try:
        at_load = substitute(wl.stdin, {"profile_dir": str(wl.path.parent), **wl.params})
    except ProfileError:
        return  # {work}, {bin} or an input: it exists only in the run
    path = Path(at_load) if Path(at_load).is_absolute() else wl.path.parent / at_load
    problem = existing_kind_problem(path)
    if problem is not None:
        raise ld.fail("stdin", f"stdin '{wl.stdin}' is {problem}, not a regular file: name a "
                      "file (a FIFO would block the run, a device would never end)")


def check_placeholders(ld: Loader, wl: Workload) -> None:
    allowed = RESERVED | set(wl.params) | set(wl.inputs)
    for key, items in (("command", wl.command), ("counters", wl.count_command),
                       ("build", wl.source.build if not wl.source.extra else ()),
                       ("files", wl.source.files), ("ldflags", wl.source.ldflags),
                       ("setup", wl.setup), ("after", wl.after), ("stdin", (wl.stdin or "",)),
                       ("files", wl.validate_files),
                       ("close", wl.close.files if wl.close else ()),
                       ("prepare", wl.server.prepare if wl.server else ()),
                       ("page", (wl.browser.page,) if wl.browser else ()),
                       ("serve", tuple(d for _, d in wl.browser.serve) if wl.browser else ()),
                       ("warmup", wl.server.warmup if wl.server else ())):
        for item in items:
            for name in PLACEHOLDER_RE.findall(item):
                if name not in allowed:
                    raise ld.fail(key, f"unknown placeholder {{{name}}} in '{key}': known are "
                                  f"{', '.join(sorted(allowed))} (add it under [params])")
    with_extra = allowed | {e[0] for e in wl.source.extra}
    for item in wl.source.build if wl.source.extra else ():
        for name in PLACEHOLDER_RE.findall(item):
            if name not in with_extra:
                raise ld.fail("build", f"unknown placeholder {{{name}}} in 'build': known are "
                              f"{', '.join(sorted(with_extra))} (add it under [params])")


def substitute(template: str, values: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in values:
            raise ProfileError(f"placeholder {{{name}}} has no value here (known: "
                               f"{', '.join(sorted(values))})")
        return values[name]

    return PLACEHOLDER_RE.sub(repl, template)


def _source_paths(wl: Workload) -> list[Path]:
    values = {"micro": str(MICRO_DIR), "profile_dir": str(wl.path.parent), **wl.params}
    out = []
    for f in wl.source.files:
        p = Path(substitute(f, values))
        out.append(p if p.is_absolute() else wl.path.parent / p)
    return out


def resolve_source_files(wl: Workload) -> list[Path]:
    """The source files of a build, each inside the profile's directory or abibench's micro/."""
    out = []
    for p in _source_paths(wl):
        if not p.is_file():
            raise ProfileError(f"{wl.path}: source file {p} does not exist: fix [source] files")
        out.append(confined(p, (wl.path.parent, MICRO_DIR), "source file"))
    return out
