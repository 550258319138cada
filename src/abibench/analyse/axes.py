"""The axes along which results change: what differs between two stored runs.

Every run already records them, scattered over its host context, configuration and artifacts;
`axes_of` names them once, so that baselines, history and reports ask one function rather
than each digging in the document (and none needs a store column of its own).
"""

from __future__ import annotations

from ..records import RunDoc

# The axes `abibench history --by` can group by, and what each one is read from.
AXES: dict[str, str] = {
    "version": "the run's tag (`run --label`), else the program's source version or build digest",
    "program": "the program's source version, else the first 12 digits of its build's digest",
    "tag": "the run's tag, `abibench run --label NAME` (None when not given)",
    "tool": "the abibench version that measured",
    "compiler": "the compiler and its version (the artifact's, else the host's gcc)",
    "cflags": "the flags the run built with",
    "release": "the distribution release (/etc/os-release)",
    "kernel": "the kernel release and its bitness",
    "host": "the host name",
}


def _program(doc: RunDoc, workload: str | None) -> str | None:
    """What identifies the program measured: a Debian or source version when the build knew
    one, else its build's content digest (the cache key covers every input of the build)."""
    arts = [a for a in doc.artifacts if workload is None or a.workload == workload]
    versions = sorted({a.source_version for a in arts if a.source_version})
    if versions:
        return ",".join(versions)
    keys = sorted({a.cache_key[:12] for a in arts if a.cache_key})
    if keys:
        return ",".join(keys)
    digests = sorted({d[:12] for a in arts for d in a.digests.values()})
    return ",".join(digests) if digests else None


def _compiler(doc: RunDoc, workload: str | None) -> str | None:
    arts = [a for a in doc.artifacts if workload is None or a.workload == workload]
    found = sorted({a.compiler_version for a in arts if a.compiler_version})
    if found:
        return ",".join(found)
    gcc = doc.host.compilers.get("gcc") if doc.host.compilers else None
    return gcc or None


def _str(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def axes_of(doc: RunDoc, workload: str | None = None) -> dict[str, str | None]:
    """Every axis of AXES for one run (and, for the program and compiler, one workload of it);
    None where the run did not record it."""
    tag = _str(doc.host.get("label"))
    program = _program(doc, workload)
    bits = doc.host.kernel_bits
    kernel = _str(doc.host.kernel_release)
    if kernel is not None and bits is not None:
        kernel = f"{kernel} ({bits}-bit)"
    return {
        "version": tag or program,
        "program": program,
        "tag": tag,
        "tool": _str(doc.run.tool_version),
        "compiler": _compiler(doc, workload),
        "cflags": " ".join(doc.run.config.cflags) or None,
        "release": _str(doc.host.os_release),
        "kernel": kernel,
        "host": _str(doc.host.hostname),
    }
