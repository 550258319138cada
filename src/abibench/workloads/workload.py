"""What a workload is once its profile is loaded: the Workload record and its parts.

`workloads/profile.py` loads it and re-exports every name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from ..errors import ProfileError
from ..records import BUILTIN_METRICS, Better, Metric
from .pattern import Pattern

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
