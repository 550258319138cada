"""Workload profiles: one TOML file per workload, the same format for built-ins and users.

Errors name the file, the line where it can be found, and what to write instead.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ..errors import ProfileError
from ..files import TooLarge, existing_kind_problem, read_regular
from ..ids import id_problem, sweep_value_problem
from ..outputs import protect
from ..paths import MICRO_DIR, PAGES_DIR, PROFILES_DIR
from ..records import BUILTIN_METRICS, Better, Metric
from ..text import one_line
from .confine import ROOT_WORDS, confined, inside, template_problem
from .parsers import BUILTIN_PARSERS
from .pattern import Pattern, PatternError

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
PLACEHOLDER_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# Placeholders the tool fills in per target; params may not shadow them.
RESERVED = {"bin", "out", "cc", "cflags", "abi", "micro", "profile_dir", "work", "src",
            "host_triplet", "jobs", "host", "port", "program", "cxx"}
SERVER_KINDS = ("mariadb",)
RUN_KEYS = ("command", "timeout", "setup", "stdin", "stderr", "repeat", "threads", "short",
            "counters", "memory", "after")
# [run] memory: "process" (wait4's peak RSS of the largest process, the default) or "tree" (the
# whole process tree's peak as well: a browser, a server and its helpers, a compiler driver)
MEMORY_KINDS = ("process", "tree")
MAX_REPEAT = 1000
MAX_PROFILE_BYTES = 1 << 20  # the largest built-in profile is a few kB


# Input kinds a profile may name under [inputs], with the parameters each takes; the
# generators live in obtain/inputs.py, which checks it covers exactly these.
INPUT_KINDS: dict[str, tuple[str, ...]] = {"corpus": ("mb",), "wav": ("seconds",), "lua": ()}


@dataclass(frozen=True)
class MetricRule:
    """A metric a profile declares, and how to read it from the program's output."""

    name: str
    unit: str
    better: Better
    regex: Pattern | None  # None for builtin parsers; matched by RE2 (workloads/pattern.py)
    scale: float = 1.0
    builtin: str | None = None  # a named parser of workloads/parsers.py
    key: str | None = None  # which value of the builtin parser's result
    # optional = true: absent from an output, the sample has no value of it (a parameter that
    # selects a subset of sub-tests); present, it must be a finite number like any metric
    optional: bool = False

    @property
    def metric(self) -> Metric:
        return Metric(self.name, self.unit, self.better)


@dataclass(frozen=True)
class SourceSpec:
    files: tuple[str, ...]  # compiled and linked in one compiler call when `build` is empty
    ldflags: tuple[str, ...]
    artifacts: tuple[str, ...]
    build: tuple[str, ...]  # a full build command for projects that need more than one cc call
    debian: str | None = None  # a Debian source package to build from (apt-get source)
    version: str | None = None  # its pinned version; None: the newest apt knows
    data: tuple[str, ...] = ()  # non-ELF files copied from the tree into {out}
    # [source.extra] NAME = { debian = "pkg", version = "v" }: more Debian source trees the
    # build reads (never writes), at {NAME}; e.g. boost's thread library for POV-Ray.
    extra: tuple[tuple[str, str, str | None], ...] = ()


@dataclass(frozen=True)
class CloseSpec:
    files: tuple[str, ...]
    max_diff: int  # largest allowed difference of one byte (e.g. one colour channel)
    max_fraction: float  # largest allowed fraction of elements that differ at all
    # what one element is: "u8" a byte (an image's colour channel), "s16le" a 16-bit signed
    # little-endian audio sample (decoded PCM), where a byte-wise difference means nothing
    format: str = "u8"


@dataclass(frozen=True)
class ValidateSpec:
    """What must be identical across ABIs: the parts of [validate]."""

    stdout_match: Pattern | None = None
    stdout_digest: bool = False
    files: tuple[str, ...] = ()
    # close = { files = [...], max_diff = 1, max_fraction = 0.01 }: files that must match the
    # run's first output byte for byte within a tolerance (floating-point renders)
    close: CloseSpec | None = None
    # after_match: a pattern in what the [run] after step printed, group 1 compared like
    # stdout_match's (a known answer computed by the same build, the rows a server kept)
    after_match: Pattern | None = None

    @property
    def any(self) -> bool:
        return bool(self.stdout_match or self.stdout_digest or self.files or self.close
                    or self.after_match)


@dataclass(frozen=True)
class ServerSpec:
    """[server]: a server started per sample from the target; [run] command is its client."""

    kind: str  # one of SERVER_KINDS
    options: tuple[str, ...] = ()  # extra server options
    prepare: tuple[str, ...] = ()  # client command once per target with the server up (untimed)
    warmup: tuple[str, ...] = ()  # client command before every sample (untimed)


@dataclass(frozen=True)
class BrowserSpec:
    """[browser]: [run] command is a browser, which opens one of abibench's own pages (pages/)
    served on loopback; the metrics are read from the result the page leaves (run/browser.py)."""

    page: str  # path under pages/ with its query, e.g. "dom/index.html?n={n}"
    serve: tuple[tuple[str, str], ...] = ()  # (name, directory): also served at /vendor/NAME/


DISPLAY_RENDERERS = ("llvmpipe",)


@dataclass(frozen=True)
class DisplaySpec:
    """[display]: the program is an X client; a virtual X server (the host's Xvfb) runs for each
    sample on a private socket only the program sees (run/xserver.py), and GL renders in
    software with the Mesa driver of the program's own sysroot."""

    screen: str = "1024x768x24"  # WIDTHxHEIGHTxDEPTH of Xvfb's screen 0
    renderer: str = "llvmpipe"  # one of DISPLAY_RENDERERS

    def env(self) -> dict[str, str]:
        """What the program's environment gets beside DISPLAY: Mesa's software rasterizer
        chosen by name (there is no GPU device in a sysroot anyway; this makes it explicit and
        the same for every ABI)."""
        return {"LIBGL_ALWAYS_SOFTWARE": "1", "GALLIUM_DRIVER": self.renderer}


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    description: str
    path: Path
    seeds: tuple[str, ...]
    suites: tuple[str, ...]
    params: dict[str, str]
    source: SourceSpec
    command: tuple[str, ...]
    timeout: float
    stdout_match: Pattern | None
    metrics: tuple[MetricRule, ...]
    primary: str
    inputs: dict[str, dict[str, str | int | float]] = field(default_factory=dict)  # {kind, ...}
    setup: tuple[str, ...] = ()  # once per target before its warm-up, not timed
    # [run] after: once after every sample, not timed, before its outputs are validated (an
    # encoder's output decoded by the same build, so that [validate] compares audio)
    after: tuple[str, ...] = ()
    stdin: str | None = None
    stdout_digest: bool = False
    validate_files: tuple[str, ...] = ()
    # [validate] close = { files = [...], max_diff = 1, max_fraction = 0.01 }: files that must
    # match the run's first output byte for byte within a tolerance (floating-point renders)
    close: CloseSpec | None = None
    sweep: dict[str, tuple[str, ...]] = field(default_factory=dict)
    debian_packages: tuple[str, ...] = ()
    debian_bin: str = "/usr/bin"
    base_id: str = ""  # the profile's id when this is one instance of a [sweep]
    server: ServerSpec | None = None
    # the type of each parameter's default (int, float or str): --set is checked against it
    param_types: dict[str, type] = field(default_factory=dict)
    # [[validate.when]]: (parameter values, the [validate] to use when they all match)
    validate_when: tuple[tuple[dict[str, str], ValidateSpec], ...] = ()
    # [binaries] ABI = "path": prebuilt programs to compare instead of building
    binaries: dict[str, Path] = field(default_factory=dict)
    # [run] counters: what the counted run (--counters) executes instead of [run] command, for
    # a program that runs for a fixed time rather than a fixed amount of work
    count_command: tuple[str, ...] = ()
    # [run] repeat: back-to-back runs per sample; "auto" sizes a short program's sample to
    # REPEAT_TARGET_S (run/designs.py)
    repeat: int | Literal["auto"] = 1
    threads: int = 1  # [run] threads: CPUs the program keeps busy (more than 1: never pinned)
    # [run] short = { param = value }: the parameters of the short design's smaller size
    short: dict[str, str] = field(default_factory=dict)
    # [run] memory = "tree": also measure the peak of the whole process tree (run/treemem.py)
    memory: str = "process"
    browser: BrowserSpec | None = None
    display: DisplaySpec | None = None
    # [run] stderr = "stdout": the program's stderr goes into its stdout, which metrics and
    # validation read (ioquake3 prints its console, the timedemo result included, on stderr)
    merge_stderr: bool = False
    # [validate] after_match: a pattern in the [run] after step's standard output
    after_match: Pattern | None = None
    # validate = "none: REASON": the profile says why its output cannot be checked; every
    # report prints the reason where the output check would be
    no_validation: str | None = None

    @property
    def validates(self) -> bool:
        """Whether this instance asks for anything to be compared across ABIs."""
        return bool(self.stdout_match or self.stdout_digest or self.validate_files or self.close
                    or self.after_match)

    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m.metric
        if name in BUILTIN_METRICS:
            return BUILTIN_METRICS[name]
        raise KeyError(name)

    def with_params(self, overrides: dict[str, str]) -> Workload:
        unknown = set(overrides) - set(self.params)
        if unknown:
            known = ", ".join(sorted(self.params)) or "none"
            raise ProfileError(
                f"{self.id}: unknown parameter {', '.join(sorted(unknown))} in --set "
                f"(this workload takes: {known})"
            )
        for name, value in overrides.items():
            check_param(self, name, value)
        return replace(self, params={**self.params, **overrides})

    def with_validation(self) -> Workload:
        """This instance with the [[validate.when]] case its parameters match, if any."""
        for when, spec in self.validate_when:
            if all(self.params.get(k) == v for k, v in when.items()):
                return replace(self, stdout_match=spec.stdout_match,
                               stdout_digest=spec.stdout_digest, validate_files=spec.files,
                               close=spec.close, after_match=spec.after_match)
        return self


def check_param(wl: Workload, name: str, value: str) -> None:
    """A --set value must have the type of the parameter's default: 'abc' is no node count."""
    kind = wl.param_types.get(name, str)
    if kind is int:
        ok = re.fullmatch(r"[+-]?\d+", value.strip()) is not None
        what = "a whole number"
    elif kind is float:
        try:
            ok = math.isfinite(float(value))
        except ValueError:
            ok = False
        what = "a number"
    else:
        ok, what = True, "text"
    if not ok:
        raise ProfileError(f"--set {name}={value}: {wl.base_id or wl.id} takes {what} for "
                           f"'{name}' (default {wl.params.get(name)}); write e.g. --set "
                           f"{name}={wl.params.get(name)}")


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


class _Loader:
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


def load_profile(path: Path) -> Workload:
    # Absolute from here on: {profile_dir} and relative sources mean the same from any directory.
    path = path.absolute()
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
    ld = _Loader(path, text)

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

    raw_params = ld.table(data, "params", required=False)
    params: dict[str, str] = {}
    param_types: dict[str, type] = {}
    for k, v in raw_params.items():
        if k in RESERVED:
            raise ld.fail(k, f"parameter '{k}' is a reserved placeholder: rename it")
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ld.fail(k, f"parameter '{k}' must be a string or a number")
        if isinstance(v, float) and not math.isfinite(v):
            raise ld.fail(k, f"parameter '{k}' must be a finite number")
        params[k] = str(v)
        param_types[k] = type(v)

    deb = ld.table(data, "debian", required=False)
    binaries = _binaries(ld, data, path.parent)
    src = ld.table(data, "source", required=not deb and not binaries)
    source = SourceSpec((), (), (), ()) if not src else SourceSpec(
        files=ld.strlist(src, "files"),
        ldflags=ld.strlist(src, "ldflags"),
        artifacts=ld.strlist(src, "artifacts", required=True),
        build=ld.strlist(src, "build"),
        debian=ld.str_(src, "debian", required=False) or None,
        version=ld.str_(src, "version", required=False) or None,
        data=ld.strlist(src, "data"),
        extra=_extra_sources(ld, src),
    )
    if src and not source.files and not source.build:
        raise ld.fail("source", "[source] needs files = [\"prog.c\"] or a build = [...] command")
    if source.debian and not source.build:
        raise ld.fail("debian", "[source] debian = ... needs a build = [...] command to build the tree")
    if src and not source.artifacts:
        raise ld.fail("artifacts", "[source] artifacts must name at least one built file")
    if src and not source.build and len(source.artifacts) != 1:
        raise ld.fail("artifacts", "with files = [...] exactly one artifact is built; use build = "
                      "[...] for more")

    run = ld.table(data, "run")
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

    raw_validate = data.get("validate")
    no_validation = None
    if raw_validate is not None and not isinstance(raw_validate, dict):
        no_validation = no_validation_reason(ld, raw_validate)
    validate = ld.table(data, "validate", required=False) if no_validation is None else {}
    for key in validate:
        if key not in (*VALIDATE_KEYS, "when"):
            raise ld.fail(key, f"[validate] has no key '{key}' (it takes "
                          f"{', '.join(VALIDATE_KEYS)} and [[validate.when]])")
    base_validation = _validate_spec(ld, validate)
    validate_when = _validate_when(ld, validate, params)
    after = ld.strlist(run, "after")
    if not after and (base_validation.after_match
                      or any(spec.after_match for _, spec in validate_when)):
        raise ld.fail("after_match", "after_match reads what the [run] after step prints: add "
                      "[run] after = [\"...\"]")

    inputs: dict[str, dict[str, str | int | float]] = {}
    for name, spec in ld.table(data, "inputs", required=False).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
            raise ld.fail(name, f"input '{name}' must be a table like {name} = {{ kind = \"corpus\" }}")
        if name in RESERVED or name in params:
            raise ld.fail(name, f"input '{name}' clashes with a parameter or placeholder: rename it")
        if spec["kind"] not in INPUT_KINDS:
            raise ld.fail(name, f"input '{name}': unknown kind '{spec['kind']}' (have: "
                          f"{', '.join(sorted(INPUT_KINDS)) or 'none'})")
        unknown = sorted(set(spec) - {"kind", *INPUT_KINDS[spec["kind"]]})
        if unknown:
            raise ld.fail(name, f"input '{name}' of kind '{spec['kind']}' has no key "
                          f"{', '.join(unknown)} (it takes: "
                          f"{', '.join(INPUT_KINDS[spec['kind']]) or 'nothing but kind'})")
        inputs[name] = dict(spec)

    sweep: dict[str, tuple[str, ...]] = {}
    for name, values in ld.table(data, "sweep", required=False).items():
        if name not in params:
            raise ld.fail(name, f"[sweep] {name}: sweep a parameter declared under [params]")
        if not isinstance(values, list) or not values or \
                not all(isinstance(v, str | int | float) for v in values):
            raise ld.fail(name, f"[sweep] {name} must be a non-empty list of values")
        sweep[name] = tuple(str(v) for v in values)
        for v in sweep[name]:
            problem = sweep_value_problem(v)
            if problem is not None:
                raise ld.fail(name, f"[sweep] {name} value {v[:60]!r} {problem}")

    if deb and not ld.strlist(deb, "packages"):
        raise ld.fail("debian", "[debian] needs packages = [\"...\"]: the Debian binary packages")
    server = None
    srv = ld.table(data, "server", required=False)
    if srv:
        kind = ld.str_(srv, "kind")
        if kind not in SERVER_KINDS:
            raise ld.fail("kind", f"[server] kind '{kind}' is not known (have: "
                          f"{', '.join(SERVER_KINDS)})")
        if not deb:
            raise ld.fail("server", "[server] runs the server from a Debian sysroot: add "
                          "[debian] packages = [...]")
        server = ServerSpec(kind, ld.strlist(srv, "options"), ld.strlist(srv, "prepare"),
                            ld.strlist(srv, "warmup"))

    browser = _browser(ld, data, bool(deb), server is not None)
    display = _display(ld, data, bool(deb), server is not None or browser is not None)

    raw_metrics = data.get("metric", [])
    if not isinstance(raw_metrics, list):
        raise ld.fail("metric", "metrics are written as [[metric]] tables")
    metric_list = []
    for i, m in enumerate(raw_metrics):
        ld.within = ("metric", i)
        metric_list.append(ld.metric(m, i))
    ld.within = None
    metrics = tuple(metric_list)
    names = [m.name for m in metrics]
    if len(set(names)) != len(names):
        raise ld.fail("metric", "two [[metric]] tables have the same name")

    primary = ld.str_(data, "primary", required=False, default=names[0] if names else "wall")
    if primary not in names and primary not in BUILTIN_METRICS:
        raise ld.fail("primary", f"primary = '{primary}' is not a metric of this workload "
                      f"(have: {', '.join(names + list(BUILTIN_METRICS))})")

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
    short_tbl = run.get("short", {})
    if not isinstance(short_tbl, dict):
        raise ld.fail("short", "short must be a table of parameters, like short = { n = 1000 }")
    short: dict[str, str] = {}
    for name, value in short_tbl.items():
        if name not in params or not isinstance(value, str | int | float) \
                or isinstance(value, bool):
            raise ld.fail("short", f"short: '{name}' must be a parameter declared under "
                          "[params], with a value")
        short[name] = str(value)
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
        stdout_match=base_validation.stdout_match,
        metrics=metrics,
        primary=primary,
        inputs=inputs,
        setup=ld.strlist(run, "setup"),
        after=after,
        stdin=stdin,
        repeat=repeat,
        threads=threads,
        short=short,
        memory=str(memory),
        browser=browser,
        display=display,
        merge_stderr=stderr == "stdout",
        stdout_digest=base_validation.stdout_digest,
        validate_files=base_validation.files,
        close=base_validation.close,
        after_match=base_validation.after_match,
        no_validation=no_validation,
        sweep=sweep,
        debian_packages=ld.strlist(deb, "packages"),
        debian_bin=ld.str_(deb, "bin", required=False, default="/usr/bin"),
        base_id=wid,
        server=server,
        param_types=param_types,
        validate_when=validate_when,
        binaries=binaries,
        count_command=ld.strlist(run, "counters"),
    )
    _check_placeholders(ld, wl)
    _check_paths(ld, wl)
    return wl


PAGE_PATH_RE = re.compile(r"^[a-z0-9_-]+(?:/[a-z0-9_.-]+)*\.html$")
SERVE_NAME_RE = re.compile(r"^[a-z0-9_-]+$")


def _browser(ld: _Loader, data: Mapping[str, object], debian: bool,
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


def _display(ld: _Loader, data: Mapping[str, object], debian: bool,
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


VALIDATE_KEYS = ("stdout_match", "stdout_digest", "files", "close", "after_match")
# validate = "none: REASON": the one form of `validate` that is not a table
NO_VALIDATION_RE = re.compile(r"none:[ \t]*(\S[^\n]*)")
MAX_REASON = 300
CLOSE_FORMATS = ("u8", "s16le")


def _validate_spec(ld: _Loader, table: Mapping[str, object],
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


def no_validation_reason(ld: _Loader, value: object) -> str:
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


def _validate_when(ld: _Loader, validate: Mapping[str, object],
                   params: dict[str, str]) -> tuple[tuple[dict[str, str], ValidateSpec], ...]:
    """[[validate.when]] cases: for these parameter values, validate this way instead."""
    raw = validate.get("when", [])
    if not isinstance(raw, list):
        raise ld.fail("when", "write each case as a [[validate.when]] table with params = { ... }")
    base = _validate_spec(ld, validate)
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
        cases.append((when, _validate_spec(ld, case, base)))
    return tuple(cases)


def _binaries(ld: _Loader, data: Mapping[str, object], profile_dir: Path) -> dict[str, Path]:
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


def _check_paths(ld: _Loader, wl: Workload) -> None:
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


def _check_stdin_kind(ld: _Loader, wl: Workload) -> None:
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


def _extra_sources(ld: _Loader, src: Mapping[str, object]) -> tuple[tuple[str, str, str | None], ...]:
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


def _check_placeholders(ld: _Loader, wl: Workload) -> None:
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
