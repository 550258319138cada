"""The parts of a profile, each read and checked by one step that returns it typed.

`workloads/profile.load_profile` calls the steps in order; the first problem found is the one
reported, with its line and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..ids import id_problem, sweep_value_problem
from ..paths import PAGES_DIR
from ..records import BUILTIN_METRICS
from ..text import one_line
from .loader import Loader, parse_duration
from .workload import (
    DISPLAY_RENDERERS,
    ID_RE,
    INPUT_KINDS,
    MAX_REPEAT,
    MEMORY_KINDS,
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
)

# --------------------------------------------------------------------------- load_profile's steps
# Each reads one part of a profile and returns it typed; load_profile calls them in the order
# a profile's errors are reported (the first problem found is the one named).


def identity(ld: Loader, data: Mapping[str, object]) -> str:
    """The profile's id, and no top-level key abibench does not know."""
    wid = ld.str_(data, "id")
    if not ID_RE.match(wid):
        raise ld.fail("id", f"id '{wid[:60]}' must be lowercase letters, digits, '.', '_' or '-'")
    problem = id_problem(wid)  # ID_RE's `$` lets a final newline through, and has no limit
    if problem is not None:
        raise ld.fail("id", f"id {wid[:60]!r} {problem}")
    known_top = {"id", "title", "description", "seeds", "suites", "primary", "params", "source",
                 "run", "validate", "metric", "inputs", "sweep", "debian", "server", "binaries",
                 "browser", "display"}
    for key in data:
        if key not in known_top:
            raise ld.fail(key, f"unknown key '{key}' (known: {', '.join(sorted(known_top))})")
    return wid


def params(ld: Loader, data: Mapping[str, object]) -> tuple[dict[str, str], dict[str, type]]:
    """[params]: each value as text, and the type of its default (--set is checked against it)."""
    raw_params = ld.table(data, "params", required=False)
    values: dict[str, str] = {}
    param_types: dict[str, type] = {}
    for k, v in raw_params.items():
        if k in RESERVED:
            raise ld.fail(k, f"parameter '{k}' is a reserved placeholder: rename it")
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ld.fail(k, f"parameter '{k}' must be a string or a number")
        if isinstance(v, float) and not math.isfinite(v):
            raise ld.fail(k, f"parameter '{k}' must be a finite number")
        values[k] = str(v)
        param_types[k] = type(v)
    return values, param_types


def source(ld: Loader, data: Mapping[str, object], deb: Mapping[str, object],
           prebuilt: Mapping[str, Path]) -> SourceSpec:
    """[source]: required unless the programs come from Debian or [binaries]."""
    src = ld.table(data, "source", required=not deb and not prebuilt)
    spec = SourceSpec((), (), (), ()) if not src else SourceSpec(
        files=ld.strlist(src, "files"),
        ldflags=ld.strlist(src, "ldflags"),
        artifacts=ld.strlist(src, "artifacts", required=True),
        build=ld.strlist(src, "build"),
        debian=ld.str_(src, "debian", required=False) or None,
        version=ld.str_(src, "version", required=False) or None,
        data=ld.strlist(src, "data"),
        extra=extra_sources(ld, src),
    )
    if src and not spec.files and not spec.build:
        raise ld.fail("source", "[source] needs files = [\"prog.c\"] or a build = [...] command")
    if spec.debian and not spec.build:
        raise ld.fail("debian", "[source] debian = ... needs a build = [...] command to build the tree")
    if src and not spec.artifacts:
        raise ld.fail("artifacts", "[source] artifacts must name at least one built file")
    if src and not spec.build and len(spec.artifacts) != 1:
        raise ld.fail("artifacts", "with files = [...] exactly one artifact is built; use build = "
                      "[...] for more")
    return spec


def run_command(ld: Loader, run: Mapping[str, object]) -> tuple[tuple[str, ...], float]:
    """[run]: no unknown key; the command and its timeout."""
    for key in run:
        if key not in RUN_KEYS:
            raise ld.fail(key, f"[run] has no key '{key}' (it takes {', '.join(RUN_KEYS)})")
    command = ld.strlist(run, "command", required=True)
    if not command:
        raise ld.fail("command", "[run] command is empty")
    try:
        timeout = parse_duration(run.get("timeout", "300s"))
    except ValueError as exc:
        raise ld.fail("timeout", str(exc)) from None
    return command, timeout


@dataclass(frozen=True)
class Validation:
    """What a profile says of comparing outputs: [validate], its cases, or why not at all."""

    base: ValidateSpec
    when: tuple[tuple[dict[str, str], ValidateSpec], ...]
    no_validation: str | None
    after: tuple[str, ...]  # [run] after: after_match reads what it prints


def validation(ld: Loader, data: Mapping[str, object], run: Mapping[str, object],
               values: dict[str, str]) -> Validation:
    raw_validate = data.get("validate")
    no_validation = None
    if raw_validate is not None and not isinstance(raw_validate, dict):
        no_validation = no_validation_reason(ld, raw_validate)
    validate = ld.table(data, "validate", required=False) if no_validation is None else {}
    for key in validate:
        if key not in (*VALIDATE_KEYS, "when"):
            raise ld.fail(key, f"[validate] has no key '{key}' (it takes "
                          f"{', '.join(VALIDATE_KEYS)} and [[validate.when]])")
    base_validation = validate_spec(ld, validate)
    when = validate_when(ld, validate, values)
    after = ld.strlist(run, "after")
    if not after and (base_validation.after_match
                      or any(spec.after_match for _, spec in when)):
        raise ld.fail("after_match", "after_match reads what the [run] after step prints: add "
                      "[run] after = [\"...\"]")
    return Validation(base_validation, when, no_validation, after)


def inputs(ld: Loader, data: Mapping[str, object],
           values: dict[str, str]) -> dict[str, dict[str, str | int | float]]:
    """[inputs]: generated input files, each of a known kind with its own keys."""
    out: dict[str, dict[str, str | int | float]] = {}
    for name, spec in ld.table(data, "inputs", required=False).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
            raise ld.fail(name, f"input '{name}' must be a table like {name} = {{ kind = \"corpus\" }}")
        if name in RESERVED or name in values:
            raise ld.fail(name, f"input '{name}' clashes with a parameter or placeholder: rename it")
        if spec["kind"] not in INPUT_KINDS:
            raise ld.fail(name, f"input '{name}': unknown kind '{spec['kind']}' (have: "
                          f"{', '.join(sorted(INPUT_KINDS)) or 'none'})")
        unknown = sorted(set(spec) - {"kind", *INPUT_KINDS[spec["kind"]]})
        if unknown:
            raise ld.fail(name, f"input '{name}' of kind '{spec['kind']}' has no key "
                          f"{', '.join(unknown)} (it takes: "
                          f"{', '.join(INPUT_KINDS[spec['kind']]) or 'nothing but kind'})")
        out[name] = dict(spec)
    return out


def sweep(ld: Loader, data: Mapping[str, object],
          values: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """[sweep]: declared parameters, each with values that fit in an instance id."""
    out: dict[str, tuple[str, ...]] = {}
    for name, swept in ld.table(data, "sweep", required=False).items():
        if name not in values:
            raise ld.fail(name, f"[sweep] {name}: sweep a parameter declared under [params]")
        if not isinstance(swept, list) or not swept or \
                not all(isinstance(v, str | int | float) for v in swept):
            raise ld.fail(name, f"[sweep] {name} must be a non-empty list of values")
        out[name] = tuple(str(v) for v in swept)
        for v in out[name]:
            problem = sweep_value_problem(v)
            if problem is not None:
                raise ld.fail(name, f"[sweep] {name} value {v[:60]!r} {problem}")
    return out


def server(ld: Loader, data: Mapping[str, object],
           deb: Mapping[str, object]) -> ServerSpec | None:
    """[debian] packages, then [server]: a known kind, run from the Debian sysroot."""
    if deb and not ld.strlist(deb, "packages"):
        raise ld.fail("debian", "[debian] needs packages = [\"...\"]: the Debian binary packages")
    srv = ld.table(data, "server", required=False)
    if not srv:
        return None
    kind = ld.str_(srv, "kind")
    if kind not in SERVER_KINDS:
        raise ld.fail("kind", f"[server] kind '{kind}' is not known (have: "
                      f"{', '.join(SERVER_KINDS)})")
    if not deb:
        raise ld.fail("server", "[server] runs the server from a Debian sysroot: add "
                      "[debian] packages = [...]")
    return ServerSpec(kind, ld.strlist(srv, "options"), ld.strlist(srv, "prepare"),
                      ld.strlist(srv, "warmup"))


def metrics(ld: Loader, data: Mapping[str, object]) -> tuple[tuple[MetricRule, ...], str]:
    """[[metric]] tables, and the primary metric (the first declared, else wall)."""
    raw_metrics = data.get("metric", [])
    if not isinstance(raw_metrics, list):
        raise ld.fail("metric", "metrics are written as [[metric]] tables")
    metric_list = []
    for i, m in enumerate(raw_metrics):
        ld.within = ("metric", i)
        metric_list.append(ld.metric(m, i))
    ld.within = None
    rules = tuple(metric_list)
    names = [m.name for m in rules]
    if len(set(names)) != len(names):
        raise ld.fail("metric", "two [[metric]] tables have the same name")
    primary = ld.str_(data, "primary", required=False, default=names[0] if names else "wall")
    if primary not in names and primary not in BUILTIN_METRICS:
        raise ld.fail("primary", f"primary = '{primary}' is not a metric of this workload "
                      f"(have: {', '.join(names + list(BUILTIN_METRICS))})")
    return rules, primary


@dataclass(frozen=True)
class RunOptions:
    """[run]'s settings beyond the command: input, output, repetition, CPUs, memory, size."""

    stdin: str | None
    merge_stderr: bool
    repeat: int | Literal["auto"]
    threads: int
    memory: str
    short: dict[str, str]


def run_options(ld: Loader, run: Mapping[str, object], data: Mapping[str, object],
                values: dict[str, str]) -> RunOptions:
    stdin = run.get("stdin")
    stderr = run.get("stderr", "separate")
    if stderr not in ("separate", "stdout"):
        raise ld.fail("stderr", f"stderr must be \"stdout\" (merged into the output metrics "
                      f"read) or \"separate\", not {stderr!r:.40}")
    if stdin is not None and not isinstance(stdin, str):
        raise ld.fail("stdin", "stdin must be a path string, like stdin = \"{corpus}\"")
    repeat = run.get("repeat", 1)
    if repeat != "auto" and (not isinstance(repeat, int) or isinstance(repeat, bool)
                             or not 1 <= repeat <= MAX_REPEAT):
        raise ld.fail("repeat", f"repeat must be \"auto\" or a whole number from 1 to "
                      f"{MAX_REPEAT}, not {repeat!r:.40}")
    if repeat != 1 and "browser" in data:
        raise ld.fail("repeat", "a [browser] workload runs one browser per sample: leave out "
                      "[run] repeat")
    threads = run.get("threads", 1)
    if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= 4096:
        raise ld.fail("threads", f"threads must be a whole number from 1 to 4096, not "
                      f"{threads!r:.40}")
    memory = run.get("memory", "process")
    if memory not in MEMORY_KINDS:
        raise ld.fail("memory", f"memory must be \"process\" or \"tree\", not {memory!r:.40}")
    return RunOptions(stdin, stderr == "stdout", repeat, threads, str(memory),
                      _short(ld, run, values))


def _short(ld: Loader, run: Mapping[str, object], values: dict[str, str]) -> dict[str, str]:
    short_tbl = run.get("short", {})
    if not isinstance(short_tbl, dict):
        raise ld.fail("short", "short must be a table of parameters, like short = { n = 1000 }")
    short: dict[str, str] = {}
    for name, value in short_tbl.items():
        if name not in values or not isinstance(value, str | int | float) \
                or isinstance(value, bool):
            raise ld.fail("short", f"short: '{name}' must be a parameter declared under "
                          "[params], with a value")
        short[name] = str(value)
    return short


PAGE_PATH_RE = re.compile(r"^[a-z0-9_-]+(?:/[a-z0-9_.-]+)*\.html$")
SERVE_NAME_RE = re.compile(r"^[a-z0-9_-]+$")


def browser(ld: Loader, data: Mapping[str, object], debian: bool,
             server: bool) -> BrowserSpec | None:
    """[browser] page = "dom/index.html?n={n}", serve = { octane = "{work}/package/..." }"""
    tbl = ld.table(data, "browser", required=False)
    if not tbl:
        return None
    ld.only_keys(tbl, "[browser]", ("page", "serve"))
    if not debian or server:
        raise ld.fail("browser", "[browser] runs Debian's browser from its sysroot: add "
                      "[debian] packages = [\"chromium\"] (and no [server])")
    page = ld.str_(tbl, "page")
    path = page.split("?", 1)[0]
    if not PAGE_PATH_RE.match(path) or ".." in path.split("/") or \
            not (PAGES_DIR / path).is_file():
        known = ", ".join(str(p.relative_to(PAGES_DIR)) for p in sorted(PAGES_DIR.rglob("*.html")))
        raise ld.fail("page", f"[browser] page '{path}' is not one of abibench's pages "
                      f"(have: {known})")
    serve_tbl = ld.table(tbl, "serve", required=False)
    serve = []
    for name, where in serve_tbl.items():
        if not SERVE_NAME_RE.match(name) or not isinstance(where, str) or not where:
            raise ld.fail("serve", f"[browser] serve: {name} = \"{{work}}/dir\" names a "
                          "directory served at /vendor/NAME/ (lowercase name)")
        serve.append((name, where))
    return BrowserSpec(page, tuple(serve))


def display(ld: Loader, data: Mapping[str, object], debian: bool,
             other: bool) -> DisplaySpec | None:
    """[display] screen = "1024x768x24", renderer = "llvmpipe" (both optional)."""
    if "display" not in data:
        return None
    tbl = ld.table(data, "display", required=False)
    ld.only_keys(tbl, "[display]", ("screen", "renderer"))
    if not debian or other:
        raise ld.fail("display", "[display] runs an X client from its Debian sysroot: add "
                      "[debian] packages = [...] (and no [server] or [browser])")
    screen = ld.str_(tbl, "screen", required=False, default="1024x768x24")
    if parse_screen(screen)[0] == 0:
        raise ld.fail("screen", f"[display] screen '{screen[:40]}' must be WIDTHxHEIGHTxDEPTH, "
                      "like 1024x768x24 (at most 8192x8192, depth 8, 15, 16 or 24)")
    renderer = ld.str_(tbl, "renderer", required=False, default="llvmpipe")
    if renderer not in DISPLAY_RENDERERS:
        raise ld.fail("renderer", f"[display] renderer '{renderer[:40]}' is not known (have: "
                      f"{', '.join(DISPLAY_RENDERERS)})")
    return DisplaySpec(screen, renderer)


SCREEN_RE = re.compile(r"^([1-9][0-9]{1,3})x([1-9][0-9]{1,3})x(8|15|16|24)$")


def parse_screen(screen: str) -> tuple[int, int, int]:
    """(width, height, depth) of WIDTHxHEIGHTxDEPTH, or zeros when it is not one."""
    m = SCREEN_RE.match(screen)
    if not m:
        return 0, 0, 0
    w, h, d = (int(g) for g in m.groups())
    return (w, h, d) if w <= 8192 and h <= 8192 else (0, 0, 0)


VALIDATE_KEYS = ("stdout_match", "stdout_digest", "files", "close", "after_match")
# validate = "none: REASON": the one form of `validate` that is not a table
NO_VALIDATION_RE = re.compile(r"none:[ \t]*(\S[^\n]*)")
MAX_REASON = 300
CLOSE_FORMATS = ("u8", "s16le")


def validate_spec(ld: Loader, table: Mapping[str, object],
                   base: ValidateSpec | None = None) -> ValidateSpec:
    """A [validate] table (or a [[validate.when]] case: keys it leaves out come from `base`)."""
    spec = base or ValidateSpec()
    stdout_match = ld.regex(table, "stdout_match") if "stdout_match" in table \
        else spec.stdout_match
    after_match = ld.regex(table, "after_match") if "after_match" in table \
        else spec.after_match
    stdout_digest = table.get("stdout_digest", spec.stdout_digest)
    if not isinstance(stdout_digest, bool):
        raise ld.fail("stdout_digest", "stdout_digest = true or false")
    close = spec.close
    if "close" in table:
        raw_close = table["close"]
        max_diff = raw_close.get("max_diff") if isinstance(raw_close, dict) else None
        max_fraction = raw_close.get("max_fraction") if isinstance(raw_close, dict) else None
        if not isinstance(raw_close, dict) or not isinstance(max_diff, int) or \
                isinstance(max_diff, bool) or max_diff < 0 or \
                not isinstance(max_fraction, int | float) or not 0 <= max_fraction <= 1:
            raise ld.fail("close", "close = { files = [\"...\"], max_diff = 1, max_fraction = "
                          "0.01 }: max_diff a whole number >= 0, max_fraction from 0 to 1")
        fmt = raw_close.get("format", "u8")
        if fmt not in CLOSE_FORMATS:
            raise ld.fail("close", f"close format must be one of {', '.join(CLOSE_FORMATS)} "
                          f"(u8: bytes, s16le: 16-bit audio samples), not {fmt!r:.40}")
        close = CloseSpec(ld.strlist(raw_close, "files", required=True), max_diff,
                          float(max_fraction), str(fmt))
    files = ld.strlist(table, "files") if "files" in table else spec.files
    return ValidateSpec(stdout_match, stdout_digest, files, close, after_match)


def no_validation_reason(ld: Loader, value: object) -> str:
    """The reason of validate = "none: REASON"; any other value of a `validate` key that is not
    a [validate] table is refused with its line."""
    text = value.strip() if isinstance(value, str) else ""
    m = NO_VALIDATION_RE.fullmatch(text)
    reason = one_line(m.group(1)).strip() if m else ""
    if not reason:
        shown = one_line(repr(value))[:60]
        raise ld.fail("validate", f"validate = {shown} is not a form abibench knows: write a "
                      "[validate] table, or validate = \"none: <why this output cannot be "
                      "checked>\"")
    if len(reason) > MAX_REASON:
        raise ld.fail("validate", f"validate = \"none: ...\": the reason has {len(reason)} "
                      f"characters; say it in at most {MAX_REASON}")
    return reason


def validate_when(ld: Loader, validate: Mapping[str, object],
                   params: dict[str, str]) -> tuple[tuple[dict[str, str], ValidateSpec], ...]:
    """[[validate.when]] cases: for these parameter values, validate this way instead."""
    raw = validate.get("when", [])
    if not isinstance(raw, list):
        raise ld.fail("when", "write each case as a [[validate.when]] table with params = { ... }")
    base = validate_spec(ld, validate)
    cases = []
    for case in raw:
        if not isinstance(case, dict) or not isinstance(case.get("params"), dict) or \
                not case["params"]:
            raise ld.fail("when", "[[validate.when]] needs params = { name = \"value\" } naming "
                          "the parameter values it applies to")
        when: dict[str, str] = {}
        for name, value in case["params"].items():
            if name not in params:
                raise ld.fail("when", f"[[validate.when]] params: '{name}' is not a parameter "
                              f"of this workload (have: {', '.join(sorted(params)) or 'none'})")
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ld.fail("when", f"[[validate.when]] params: {name} must be a value")
            when[name] = str(value)
        unknown = sorted(set(case) - {"params", *VALIDATE_KEYS})
        if unknown:
            raise ld.fail("when", f"[[validate.when]] has no key {', '.join(unknown)} (it takes "
                          f"params and {', '.join(VALIDATE_KEYS)})")
        cases.append((when, validate_spec(ld, case, base)))
    return tuple(cases)


def binaries(ld: Loader, data: Mapping[str, object], profile_dir: Path) -> dict[str, Path]:
    """[binaries] ABI = "path": prebuilt programs, one per ABI, compared without a build.

    They are only read and executed, never written, so an absolute path (a vendor's package
    under /opt) is allowed; a relative one is relative to the profile.
    """
    out: dict[str, Path] = {}
    for abi, value in ld.table(data, "binaries", required=False).items():
        if not isinstance(value, str) or not value.strip():
            raise ld.fail(abi, f"[binaries] {abi} must be the path of a program, like "
                          f"{abi} = \"./prog-{abi}\"")
        p = Path(value)
        out[abi] = (p if p.is_absolute() else profile_dir / p).absolute()
    if len(out) == 1:
        raise ld.fail("binaries", "[binaries] names one program: name one per ABI to compare, "
                      "e.g. i386 = \"./prog32\" and x86_64 = \"./prog64\"")
    return out



def extra_sources(ld: Loader, src: Mapping[str, object]) -> tuple[tuple[str, str, str | None], ...]:
    out = []
    for name, spec in ld.table(src, "extra", required=False).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("debian"), str):
            raise ld.fail(name, f"[source.extra] {name} must be a table like {name} = "
                          "{ debian = \"package\", version = \"1.0-1\" }")
        if name in RESERVED or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ld.fail(name, f"[source.extra] {name}: use a lowercase name that is not a "
                          "reserved placeholder")
        version = spec.get("version")
        if version is not None and not isinstance(version, str):
            raise ld.fail(name, f"[source.extra] {name}: version must be a string")
        out.append((name, spec["debian"], version))
    return tuple(out)
