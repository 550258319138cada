"""Workload profiles: one TOML file per workload, the same format for built-ins and users.

Errors name the file, the line where it can be found, and what to write instead.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import ProfileError
from ..paths import MICRO_DIR, PROFILES_DIR
from ..records import BUILTIN_METRICS, Better, Metric
from .parsers import BUILTIN_PARSERS

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
PLACEHOLDER_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
# Placeholders the tool fills in per target; params may not shadow them.
RESERVED = {"bin", "out", "cc", "cflags", "abi", "micro", "profile_dir", "work", "src",
            "host_triplet", "jobs", "host", "port"}
SERVER_KINDS = ("mariadb",)


# Input kinds a profile may name under [inputs], with the parameters each takes; the
# generators live in obtain/inputs.py, which checks it covers exactly these.
INPUT_KINDS: dict[str, tuple[str, ...]] = {"corpus": ("mb",), "wav": ("seconds",), "lua": ()}


@dataclass(frozen=True)
class MetricRule:
    """A metric a profile declares, and how to read it from the program's output."""

    name: str
    unit: str
    better: Better
    regex: re.Pattern[str] | None  # None for builtin parsers
    scale: float = 1.0
    builtin: str | None = None  # a named parser of workloads/parsers.py
    key: str | None = None  # which value of the builtin parser's result

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
    max_fraction: float  # largest allowed fraction of bytes that differ at all


@dataclass(frozen=True)
class ServerSpec:
    """[server]: a server started per sample from the target; [run] command is its client."""

    kind: str  # one of SERVER_KINDS
    options: tuple[str, ...] = ()  # extra server options
    prepare: tuple[str, ...] = ()  # client command once per target with the server up (untimed)
    warmup: tuple[str, ...] = ()  # client command before every sample (untimed)


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
    stdout_match: re.Pattern[str] | None
    metrics: tuple[MetricRule, ...]
    primary: str
    inputs: dict[str, dict[str, str | int | float]] = field(default_factory=dict)  # {kind, ...}
    setup: tuple[str, ...] = ()  # once per target before its warm-up, not timed
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
        return replace(self, params={**self.params, **overrides})


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

    def regex(self, table: Mapping[str, object], key: str) -> re.Pattern[str]:
        pattern = self.str_(table, key)
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise self.fail(key, f"bad regular expression in '{key}': {exc}") from None
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
        if "builtin" in parse:
            builtin = self.str_(parse, "builtin")
            if builtin not in BUILTIN_PARSERS:
                raise self.fail("builtin", f"metric '{name}': no builtin parser '{builtin}' (have: "
                                f"{', '.join(sorted(BUILTIN_PARSERS)) or 'none'})")
            key = self.str_(parse, "key", required=False, default=name)
            return MetricRule(name, unit, direction, None, float(scale), builtin, key)
        return MetricRule(name, unit, direction, self.regex(parse, "regex"), float(scale))


def load_profile(path: Path) -> Workload:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    ld = _Loader(path, text)

    wid = ld.str_(data, "id")
    if not ID_RE.match(wid):
        raise ld.fail("id", f"id '{wid}' must be lowercase letters, digits, '.', '_' or '-'")
    known_top = {"id", "title", "description", "seeds", "suites", "primary", "params", "source",
                 "run", "validate", "metric", "inputs", "sweep", "debian", "server"}
    for key in data:
        if key not in known_top:
            raise ld.fail(key, f"unknown key '{key}' (known: {', '.join(sorted(known_top))})")

    raw_params = ld.table(data, "params", required=False)
    params: dict[str, str] = {}
    for k, v in raw_params.items():
        if k in RESERVED:
            raise ld.fail(k, f"parameter '{k}' is a reserved placeholder: rename it")
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ld.fail(k, f"parameter '{k}' must be a string or a number")
        params[k] = str(v)

    deb = ld.table(data, "debian", required=False)
    src = ld.table(data, "source", required=not deb)
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
    command = ld.strlist(run, "command", required=True)
    if not command:
        raise ld.fail("command", "[run] command is empty")
    try:
        timeout = parse_duration(run.get("timeout", "300s"))
    except ValueError as exc:
        raise ld.fail("timeout", str(exc)) from None

    validate = ld.table(data, "validate", required=False)
    stdout_match = ld.regex(validate, "stdout_match") if "stdout_match" in validate else None
    stdout_digest = validate.get("stdout_digest", False)
    if not isinstance(stdout_digest, bool):
        raise ld.fail("stdout_digest", "stdout_digest = true or false")
    close = None
    if "close" in validate:
        raw_close = validate["close"]
        max_diff = raw_close.get("max_diff") if isinstance(raw_close, dict) else None
        max_fraction = raw_close.get("max_fraction") if isinstance(raw_close, dict) else None
        if not isinstance(max_diff, int) or isinstance(max_diff, bool) or max_diff < 0 or \
                not isinstance(max_fraction, int | float) or not 0 <= max_fraction <= 1:
            raise ld.fail("close", "close = { files = [\"...\"], max_diff = 1, max_fraction = "
                          "0.01 }: max_diff a whole number >= 0, max_fraction from 0 to 1")
        assert isinstance(raw_close, dict)  # checked above: max_diff came from it
        close = CloseSpec(ld.strlist(raw_close, "files", required=True), max_diff,
                          float(max_fraction))

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
    if stdin is not None and not isinstance(stdin, str):
        raise ld.fail("stdin", "stdin must be a path string, like stdin = \"{corpus}\"")
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
        stdout_match=stdout_match,
        metrics=metrics,
        primary=primary,
        inputs=inputs,
        setup=ld.strlist(run, "setup"),
        stdin=stdin,
        stdout_digest=stdout_digest,
        validate_files=ld.strlist(validate, "files"),
        close=close,
        sweep=sweep,
        debian_packages=ld.strlist(deb, "packages"),
        debian_bin=ld.str_(deb, "bin", required=False, default="/usr/bin"),
        base_id=wid,
        server=server,
    )
    _check_placeholders(ld, wl)
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
    for key, items in (("command", wl.command),
                       ("build", wl.source.build if not wl.source.extra else ()),
                       ("files", wl.source.files), ("ldflags", wl.source.ldflags),
                       ("setup", wl.setup), ("stdin", (wl.stdin or "",)),
                       ("files", wl.validate_files),
                       ("close", wl.close.files if wl.close else ()),
                       ("prepare", wl.server.prepare if wl.server else ()),
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


def resolve_source_files(wl: Workload) -> list[Path]:
    values = {"micro": str(MICRO_DIR), "profile_dir": str(wl.path.parent), **wl.params}
    out = []
    for f in wl.source.files:
        p = Path(substitute(f, values))
        if not p.is_absolute():
            p = wl.path.parent / p
        if not p.is_file():
            raise ProfileError(f"{wl.path}: source file {p} does not exist: fix [source] files")
        out.append(p)
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
        chosen = [replace(w, params={**w.params, **{k: v for k, v in overrides.items()
                                                      if k in w.params}},
                          sweep={k: v for k, v in w.sweep.items() if k not in overrides})
                  for w in chosen]
    return [inst for wl in chosen for inst in expand_sweep(wl)]


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
        if item.endswith(".toml") or "/" in item:
            chosen.append(load_profile(Path(item)))
        elif item in builtins:
            chosen.append(load_profile(builtins[item]))
        else:
            raise ProfileError(f"unknown workload '{item}': see `abibench list`, or give a path "
                               "to a .toml profile")
    return chosen
