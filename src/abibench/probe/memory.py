"""How this host can measure the memory of a whole process tree (a browser, a server and its
helpers, a compiler driver and cc1): a memory cgroup per sample, or sampling.

`wait4`'s ru_maxrss is the largest single process of a tree, not their sum. The sum's peak comes
from, best first:

* ``cgroup-v2``: a cgroup per sample under ``<unified mount>/abibench``; ``memory.peak`` is the
  kernel's exact high-water mark (Linux 5.19 and later);
* ``cgroup-v1``: the same under the v1 ``memory`` hierarchy; ``memory.max_usage_in_bytes`` is
  the kernel's high-water mark of everything charged to the group, page cache included;
* ``sampled``: the sum of the tree's PSS (proportional set size: a shared page counts once,
  split between its users), read every 50 ms; it can miss a peak shorter than that.

Only root (or a delegated hierarchy) can create cgroups, so which one applies is a property of
the host and of who runs abibench; `abibench probe` says which, and why not a better one.
ABIBENCH_TREE_MEMORY=cgroup-v2|cgroup-v1|sampled chooses one (a cgroup kind only where it is
available).
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

TreeKind = Literal["cgroup-v2", "cgroup-v1", "sampled"]
KINDS: tuple[TreeKind, ...] = ("cgroup-v2", "cgroup-v1", "sampled")
FORCE_ENV = "ABIBENCH_TREE_MEMORY"
GROUP_NAME = "abibench"  # the cgroup abibench owns; one child per sample
MOUNTINFO = Path("/proc/self/mountinfo")
SAMPLE_INTERVAL_S = 0.05

# What each kind's number is, as reports and `probe` say it.
# A group is charged what its processes allocate (anonymous and shared memory) and the page
# cache they bring in; file pages already cached by others (a binary run before) are not
# charged again, so a tree's peak can be below its largest process's RSS, which counts them.
DESCRIPTIONS: dict[str, str] = {
    "cgroup-v2": "cgroup v2 memory.peak of the sample's own group: the exact high-water mark "
                 "of what the tree was charged (its memory and the page cache it brought in)",
    "cgroup-v1": "cgroup v1 memory.max_usage_in_bytes of the sample's own group: the exact "
                 "high-water mark of what the tree was charged (its memory and the page cache "
                 "it brought in)",
    "sampled": "sampled: the sum of PSS over the process tree every 50 ms (a shorter peak "
               "can be missed)",
}


@dataclass(frozen=True)
class TreeAccounting:
    """The accounting a run uses for `[run] memory = "tree"` workloads."""

    kind: TreeKind
    parent: Path | None  # <hierarchy>/abibench, under which each sample gets its group
    reason: str  # why this one, and why not a better one

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.kind]

    def to_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind, "parent": str(self.parent) if self.parent else None,
                "reason": self.reason, "description": self.description}


@dataclass(frozen=True)
class Mount:
    point: Path
    fstype: str
    options: frozenset[str]  # the super block's options: a v1 hierarchy names its controllers


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of /proc/self/mountinfo: point, file system type, super options."""
    out = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        # Spaces and the like are octal escapes in mountinfo (\040).
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
        out.append(Mount(Path(point), rest[0], frozenset(rest[2].split(","))))
    return out


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def kernel_at_least(major: int, minor: int, release: str | None = None) -> bool:
    m = re.match(r"(\d+)\.(\d+)", release or platform.release())
    return m is not None and (int(m[1]), int(m[2])) >= (major, minor)


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def v2_problem(mount: Mount | None, release: str | None = None) -> str | None:
    """Why a v2 group per sample cannot be made here; None when it can."""
    if mount is None:
        return "no cgroup v2 hierarchy is mounted"
    if "memory" not in _words(mount.point / "cgroup.controllers"):
        return f"the cgroup v2 hierarchy at {mount.point} has no memory controller"
    if not kernel_at_least(5, 19, release):
        return f"kernel {release or platform.release()} has no memory.peak (Linux 5.19+)"
    parent = mount.point / GROUP_NAME
    if parent.is_dir():
        return None if _writable_dir(parent) else f"{parent} is not writable by this user"
    if not _writable_dir(mount.point):
        return f"{mount.point} is not writable by this user (root can create cgroups)"
    control = mount.point / "cgroup.subtree_control"
    if "memory" not in _words(control) and not os.access(control, os.W_OK):
        return f"the memory controller cannot be enabled in {control}"
    return None


def v1_problem(mount: Mount | None) -> str | None:
    """Why a v1 memory group per sample cannot be made here; None when it can."""
    if mount is None:
        return "no cgroup v1 memory hierarchy is mounted"
    parent = mount.point / GROUP_NAME
    if parent.is_dir():
        return None if _writable_dir(parent) else f"{parent} is not writable by this user"
    if not _writable_dir(mount.point):
        return f"{mount.point} is not writable by this user (root can create cgroups)"
    return None


def choose(mounts: list[Mount], forced: str = "", release: str | None = None) -> TreeAccounting:
    """The best accounting these mounts allow (or the one forced, where it is available)."""
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    v1 = next((m for m in mounts if m.fstype == "cgroup" and "memory" in m.options), None)
    problems = {"cgroup-v2": v2_problem(v2, release), "cgroup-v1": v1_problem(v1)}
    parents = {"cgroup-v2": v2.point / GROUP_NAME if v2 else None,
               "cgroup-v1": v1.point / GROUP_NAME if v1 else None}
    if forced in KINDS:
        wanted: list[TreeKind] = [k for k in KINDS if k == forced]
    else:
        wanted = list(KINDS)
    skipped: list[str] = []
    for kind in wanted:
        if kind == "sampled":
            break
        problem = problems[kind]
        if problem is None:
            why = f"chosen with {FORCE_ENV}={forced}" if forced in KINDS else "available"
            if skipped:
                why += f"; not {'; '.join(skipped)}"
            return TreeAccounting(kind, parents[kind], why)
        skipped.append(f"{kind}: {problem}")
    if forced in KINDS and forced != "sampled":
        skipped.insert(0, f"{FORCE_ENV}={forced} asked for, not available")
    reason = "; ".join(skipped) if skipped else f"chosen with {FORCE_ENV}=sampled"
    return TreeAccounting("sampled", None, reason)


@cache
def tree_accounting() -> TreeAccounting:
    """This host's accounting for whole process trees (looked up once per process)."""
    try:
        mounts = parse_mountinfo(MOUNTINFO.read_text())
    except OSError:
        mounts = []
    return choose(mounts, os.environ.get(FORCE_ENV, ""))
