"""What a measurement is of and where: the program built per target (:class:`Artifact`), the
host (:class:`HostContext`) and the workload as a run recorded it (:class:`WorkloadMeta`).

:mod:`abibench.records` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from .codec import JSON, QUANTITY, JSONDict, decoder, encode, rule
from .labels import abi_of
from .metrics import BUILTIN_METRICS, Metric

_QUANTITY = QUANTITY

_SEQ_FIELDS = ("files", "cflags", "abi_flags", "commands", "data", "version_skew")


@dataclass(frozen=True)
class Artifact:
    """One workload's program for one target: how it was obtained, and what it is."""

    workload: str = field(metadata=rule(id="workload"))
    abi: str = ""  # an older export lacks it: then it is the ABI of `target`
    provenance: str = "source"
    bin_dir: str = ""
    files: tuple[str, ...] = ()
    cache_key: str = ""
    cached: bool = False  # True when this run reused an earlier build
    compiler: str = ""
    compiler_version: str | None = None
    cflags: tuple[str, ...] = ()  # identical for every ABI of one run
    abi_flags: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()  # the exact command lines, as a user could re-run them
    effective: dict[str, str] = field(default_factory=dict)  # target options really used
    build_seconds: float | None = field(default=None, metadata=_QUANTITY)
    sizes: dict[str, dict[str, int | None]] = field(default_factory=dict, metadata=_QUANTITY)
    elf: dict[str, JSONDict] = field(default_factory=dict)
    log: str = ""
    source_package: str | None = None  # Debian source package and the pinned version built
    source_version: str | None = None
    data: tuple[str, ...] = ()  # non-ELF files shipped beside the binaries (scripts, scenes)
    # `abibench inspect` of every file, redone on each run (cache hits too): libraries change.
    inspection: JSONDict | None = None
    # provenance "debian": the sysroot the program runs in, the pinned versions of the packages
    # asked for and of the whole closure, and any version skew that was allowed (a warning).
    sysroot: str | None = None
    debian_packages: dict[str, str] | None = None
    debian_closure: dict[str, str] | None = None
    version_skew: tuple[str, ...] = ()
    # [source.extra] Debian source trees the build also read: {package: pinned version}
    extra_sources: dict[str, str] | None = None
    # the program's own account of its build, written by the recipe to {out}/buildinfo.txt,
    # e.g. OpenSSL's `openssl version -a` lines (platform, options: bn(64,32), compiler)
    build_options: str | None = None
    # sha256 of every file at the moment it was built or obtained: what is run must be this
    digests: dict[str, str] = field(default_factory=dict)
    # every toolchain the build's commands name, by its own version command: {tool: version}
    toolchain: dict[str, str] = field(default_factory=dict)
    # what the build could read: sandboxed to its declared inputs, or not (and why)
    isolation: str | None = None
    # the shared libraries its size counts besides its own files, {soname: sizes like `sizes`'}:
    # the host's libraries it loads (obtain/hostlibs.py), or, for a Debian program, those of its
    # own source package (libnode.so for node)
    libraries: dict[str, dict[str, int | None]] = field(default_factory=dict,
                                                       metadata=_QUANTITY)
    # the target label it was measured as; set by the store (empty while building)
    target: str = field(default="", metadata=rule(id="target", required=True))
    # fields an imported file carries that this version does not know: shown, never used
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))

    def __post_init__(self) -> None:
        if not self.abi:
            object.__setattr__(self, "abi", abi_of(self.target))

    @property
    def main_file(self) -> str | None:
        return self.files[0] if self.files else None

    def main_sizes(self) -> dict[str, int | None]:
        return self.sizes.get(self.files[0], {}) if self.files else {}

    def info_dict(self) -> JSONDict:
        """Every field but target and extra, as the build cache and the store keep it."""
        out: JSONDict = {k: v for k, v in encode(replace(self, extra={})).items()
                         if k != "target"}
        return out

    def to_dict(self) -> JSONDict:
        """The export form: workload, target and cached first, then the rest, then extras."""
        info = self.info_dict()
        head: JSONDict = {"workload": self.workload, "target": self.target,
                          "cached": self.cached}
        return {**head, **{k: v for k, v in info.items() if k not in head}, **self.extra}

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> Artifact:
        out: Artifact = decoder(Artifact, strict=False)(d)
        return out


_HOST_FIELDS = ("hostname", "cpu_model", "cpus_online", "machine", "kernel_release",
                "kernel_version", "kernel_bits", "kernel_x32", "governor", "turbo",
                "virtualization", "mem_total_kb", "load_average", "libc", "compilers", "python",
                "os_release")


@dataclass(frozen=True)
class HostContext:
    """Where a result was measured. Fields an older or newer abibench wrote go to ``extra``."""

    hostname: str | None = None
    cpu_model: str | None = None
    cpus_online: int | None = field(default=None, metadata=_QUANTITY)
    machine: str | None = None
    kernel_release: str | None = None
    kernel_version: str | None = None
    kernel_bits: int | None = None
    kernel_x32: str | None = None
    governor: str | None = None
    turbo: str | None = None
    virtualization: str | None = None
    mem_total_kb: int | None = field(default=None, metadata=_QUANTITY)
    load_average: tuple[float, ...] = field(default=(), metadata=rule(null_default=True))
    libc: str | None = None
    compilers: dict[str, str] = field(default_factory=dict, metadata=rule(null_default=True))
    python: str | None = None
    os_release: str | None = None
    # what a run adds: the ABI probe and the C library of every ABI
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))
    # which known fields the source had (only those are written back)
    present: tuple[str, ...] = field(default=_HOST_FIELDS, metadata=rule(present=True))

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    def get(self, key: str) -> JSON:
        """A field by name, extras included (None when absent)."""
        if key in _HOST_FIELDS:
            v = getattr(self, key)
            value: JSON = list(v) if isinstance(v, tuple) else v
            return value
        return self.extra.get(key)

    def with_extra(self, **values: JSON) -> HostContext:
        return replace(self, extra={**self.extra, **values})

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> HostContext:
        out: HostContext = decoder(HostContext, strict=False)(d)
        return out


@dataclass(frozen=True)
class WorkloadMeta:
    """What a run recorded about one workload: its metrics, targets and parameters."""

    id: str = field(metadata=rule(key=True, id="workload"))  # its key in `workloads`
    primary: str
    targets: tuple[str, ...] = field(metadata=rule(id="target"))
    metrics: dict[str, Metric]
    title: str = ""
    params: JSONDict = field(default_factory=dict)
    seeds: tuple[str, ...] = ()
    path: str | None = None
    validates: bool | None = None  # whether the profile compares outputs (None: not recorded)
    # validate = "none: REASON" of the profile: why its outputs are not compared
    no_validation: str | None = None
    # inputs, and what newer versions add
    extra: JSONDict = field(default_factory=dict, metadata=rule(extra=True))

    def metric(self, name: str) -> Metric:
        """A declared metric, else a built-in one, else a unitless lower-is-better one."""
        if name in self.metrics:
            return self.metrics[name]
        if name in BUILTIN_METRICS:
            return BUILTIN_METRICS[name]
        return Metric(name, "", "lower")

    @property
    def primary_metric(self) -> Metric:
        m = self.metrics.get(self.primary)
        if m is not None:
            return m
        known = BUILTIN_METRICS.get(self.primary)
        return known if known is not None else Metric(self.primary, "", "lower")

    def to_dict(self) -> JSONDict:
        out: JSONDict = encode(self)
        return out

    def with_targets(self, targets: Sequence[str]) -> WorkloadMeta:
        return replace(self, targets=tuple(targets))

    @staticmethod
    def from_dict(wid: str, d: Mapping[str, object]) -> WorkloadMeta:
        return replace(_WORKLOAD(d), id=wid)


def _workload_meta(d: Mapping[str, object]) -> WorkloadMeta:
    out: WorkloadMeta = decoder(WorkloadMeta, strict=False)(d)
    return out


_WORKLOAD = _workload_meta
