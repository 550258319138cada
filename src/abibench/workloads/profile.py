"""Workload profiles: one TOML file per workload, the same format for built-ins and users.

Errors name the file, the line where it can be found, and what to write instead.
"""


from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

from ..errors import ProfileError
from ..files import TooLarge, read_regular
from ..ids import id_problem
from ..paths import PROFILES_DIR
from . import sections
from .checks import check_paths, check_placeholders, resolve_source_files, substitute
from .loader import Loader, parse_duration
from .sections import (
    CLOSE_FORMATS,
    MAX_REASON,
    NO_VALIDATION_RE,
    PAGE_PATH_RE,
    SCREEN_RE,
    SERVE_NAME_RE,
    VALIDATE_KEYS,
    no_validation_reason,
    parse_screen,
)
from .workload import (
    DISPLAY_RENDERERS,
    ID_RE,
    INPUT_KINDS,
    MAX_PROFILE_BYTES,
    MAX_REPEAT,
    MEMORY_KINDS,
    PLACEHOLDER_RE,
    RESERVED,
    RUN_KEYS,
    SERVER_KINDS,
    BrowserSpec,
    CloseSpec,
    DisplaySpec,
    MetricRule,
    ServerSpec,
    SourceSpec,
    ValidateSpec,
    Workload,
    check_param,
)

# Re-exported: the profile format is split by concern (workload, loader, sections, checks) and
# every stage keeps importing its names from here.
__all__ = [
    "CLOSE_FORMATS", "DISPLAY_RENDERERS", "ID_RE", "INPUT_KINDS", "MAX_PROFILE_BYTES",
    "MAX_REASON", "MAX_REPEAT", "MEMORY_KINDS", "NO_VALIDATION_RE", "PAGE_PATH_RE",
    "PLACEHOLDER_RE", "RESERVED", "RUN_KEYS", "SCREEN_RE", "SERVER_KINDS", "SERVE_NAME_RE",
    "VALIDATE_KEYS", "BrowserSpec", "CloseSpec", "DisplaySpec", "Loader", "MetricRule",
    "ServerSpec", "SourceSpec", "ValidateSpec", "Workload", "check_param",
    "no_validation_reason", "parse_duration", "parse_screen", "resolve_source_files",
    "substitute",
]


def _read(path: Path) -> tuple[str, dict[str, object]]:
    """The profile's text and its TOML tables; every way that fails is one ProfileError."""
    try:
        # Only a regular file: a FIFO would block, /dev/zero never end.
        text = read_regular(path, MAX_PROFILE_BYTES).decode("utf-8")
    except TooLarge as exc:
        raise ProfileError(f"{path}: {exc.size} bytes is too large for a workload profile "
                           f"(at most {MAX_PROFILE_BYTES >> 20} MiB): give the TOML profile") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: not UTF-8 text (byte {exc.start}): a profile is a TOML "
                           "file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ProfileError(f"{path}: not valid TOML: nested too deeply for a workload "
                           "profile") from None
    return text, data


def load_profile(path: Path) -> Workload:
    """A profile read and checked, one step per part (workloads/sections.py), then its paths
    and placeholders (workloads/checks.py)."""
    # Absolute from here on: {profile_dir} and relative sources mean the same from any directory.
    path = path.absolute()
    text, data = _read(path)
    ld = Loader(path, text)
    wid = sections.identity(ld, data)
    params, param_types = sections.params(ld, data)
    deb = ld.table(data, "debian", required=False)
    binaries = sections.binaries(ld, data, path.parent)
    source = sections.source(ld, data, deb, binaries)
    run = ld.table(data, "run")
    command, timeout = sections.run_command(ld, run)
    check = sections.validation(ld, data, run, params)
    inputs = sections.inputs(ld, data, params)
    sweep = sections.sweep(ld, data, params)
    server = sections.server(ld, data, deb)
    browser = sections.browser(ld, data, bool(deb), server is not None)
    display = sections.display(ld, data, bool(deb), server is not None or browser is not None)
    metrics, primary = sections.metrics(ld, data)
    opts = sections.run_options(ld, run, data, params)
    wl = Workload(
        id=wid,
        title=ld.str_(data, "title"),
        description=ld.str_(data, "description", required=False),
        path=path,
        seeds=ld.strlist(data, "seeds"),
        suites=ld.strlist(data, "suites"),
        params=params,
        source=source,
        command=command,
        timeout=timeout,
        stdout_match=check.base.stdout_match,
        metrics=metrics,
        primary=primary,
        inputs=inputs,
        setup=ld.strlist(run, "setup"),
        after=check.after,
        stdin=opts.stdin,
        repeat=opts.repeat,
        threads=opts.threads,
        short=opts.short,
        memory=opts.memory,
        browser=browser,
        display=display,
        merge_stderr=opts.merge_stderr,
        stdout_digest=check.base.stdout_digest,
        validate_files=check.base.files,
        close=check.base.close,
        after_match=check.base.after_match,
        no_validation=check.no_validation,
        sweep=sweep,
        debian_packages=ld.strlist(deb, "packages"),
        debian_bin=ld.str_(deb, "bin", required=False, default="/usr/bin"),
        base_id=wid,
        server=server,
        param_types=param_types,
        validate_when=check.when,
        binaries=binaries,
        count_command=ld.strlist(run, "counters"),
    )
    check_placeholders(ld, wl)
    check_paths(ld, wl)
    return wl


def expand_sweep(wl: Workload) -> list[Workload]:
    """One instance per combination of swept values; ids name the values, e.g. list[n=10000]."""
    instances = [wl]
    for name, values in wl.sweep.items():
        instances = [
            replace(w, id=f"{w.id}[{name}={v}]" if w.id == wl.id else f"{w.id[:-1]},{name}={v}]",
                    params={**w.params, name: v}, sweep={})
            for w in instances for v in values
        ]
    return instances



def builtin_profiles() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PROFILES_DIR.glob("*.toml"))}


def load_workloads(selection: list[str] | None, suite: str | None,
                   overrides: dict[str, str] | None = None) -> list[Workload]:
    """Select workloads by id, suite or profile path; [sweep] profiles become one per value.

    `overrides` (--set) apply to every selected workload that has the parameter; a swept
    parameter that is set explicitly is no longer swept.
    """
    chosen = _select(selection, suite)
    if overrides:
        unknown = set(overrides) - {k for w in chosen for k in w.params}
        if unknown:
            raise ProfileError(f"--set {', '.join(sorted(unknown))}: no selected workload takes "
                               "this parameter (see `abibench list --json`)")
        chosen = [replace(w.with_params({k: v for k, v in overrides.items() if k in w.params}),
                          sweep={k: v for k, v in w.sweep.items() if k not in overrides})
                  for w in chosen]
    instances = [inst.with_validation() for wl in chosen for inst in expand_sweep(wl)]
    for inst in instances:  # many swept values together can make an id too long
        problem = id_problem(inst.id)
        if problem is not None:
            raise ProfileError(f"{inst.path}: workload id {inst.id[:60]!r}... {problem}: give "
                               "shorter [sweep] values or fewer swept parameters")
    _refuse_duplicates(instances)
    return instances


def _refuse_duplicates(workloads: list[Workload]) -> None:
    """One id, one workload in a run: a run holding two under one id can never be reported.
    (A copy of a built-in profile under its id, run on its own, is fine.)"""
    seen: dict[str, Path] = {}
    for w in workloads:
        other = seen.get(w.id)
        if other is not None:
            where = f"in {other} and in {w.path}" if other != w.path else f"twice in {w.path}"
            raise ProfileError(f"workload id '{w.id}' is selected {where}: give one of them "
                               "another id, or select it once")
        seen[w.id] = w.path


def names_a_profile_file(item: str) -> bool:
    """Whether a selected workload is a path to a profile (else a built-in id)."""
    return item.endswith(".toml") or "/" in item


def _select(selection: list[str] | None, suite: str | None) -> list[Workload]:
    """Select built-in workloads by id or suite; a path to a .toml file loads a user's profile."""
    builtins = builtin_profiles()
    if not selection:
        loaded = [load_profile(p) for p in builtins.values()]
        want = suite or "default"
        chosen = [w for w in loaded if want in w.suites]
        if not chosen:
            suites = sorted({s for w in loaded for s in w.suites})
            raise ProfileError(f"no workload in suite '{want}' (suites: {', '.join(suites)})")
        return chosen
    chosen = []
    for item in selection:
        if names_a_profile_file(item):
            chosen.append(load_profile(Path(item)))
        elif item in builtins:
            chosen.append(load_profile(builtins[item]))
        else:
            raise ProfileError(f"unknown workload '{item}': see `abibench list`, or give a path "
                               "to a .toml profile")
    return chosen
