"""The memory of a whole process tree during one sample (`[run] memory = "tree"`).

With a cgroup (probe/memory.py says which), each sample gets its own group under the one
abibench owns, named for its owner process like every temporary directory (workspace.py):
``<hierarchy>/abibench/sample-p{pid}-t{start}-...``. The program's tree is born inside it (the
launcher joins it before the program starts, or a server's child joins it before exec), so
the kernel's high-water mark of the group is the tree's peak. When the sample ends, every
process still in the group is killed and the group removed, on every path; a group whose owner
died (SIGKILL, a crash) is removed by the next run (`clean_stale_groups`).

Without one, `PssSampler` sums the PSS of the tree's processes every 50 ms from a thread.
One pass over a browser's processes costs tens of milliseconds of CPU (V8 and PartitionAlloc
map gigabytes of address space, and smaps_rollup walks them all), so the pause between passes
is stretched to four times the last pass's cost: sampling never takes more than a fifth of a
CPU from the measurement.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType

from ..probe.memory import SAMPLE_INTERVAL_S, TreeAccounting
from ..workspace import owner_of, prefix

KILL_DEADLINE_S = 10.0  # a process stuck in D state is not waited out longer than this
SAMPLER_COST_FACTOR = 4.0  # the pause between passes is at least this times a pass's cost


class GroupError(OSError):
    """The sample's cgroup could not be made: the run falls back to sampling."""


def _write(path: Path, text: str) -> None:
    with path.open("w") as fh:
        fh.write(text)


def _procs(group: Path) -> list[int]:
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def empty_group(group: Path, deadline_s: float = KILL_DEADLINE_S) -> int:
    """SIGKILL every process in the group until none is left; how many were killed.

    The PIDs come from the group itself, so nothing outside the sample can be hit; a killed
    process leaves the group when it exits (a zombie is no longer in it).
    """
    killed: set[int] = set()
    end = time.monotonic() + deadline_s
    while True:
        pids = _procs(group)
        if not pids:
            return len(killed)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        if time.monotonic() > end:
            return len(killed)
        time.sleep(0.01)


def remove_group(group: Path, deadline_s: float = KILL_DEADLINE_S) -> bool:
    """Kill what is left in the group and remove it; False when it could not be removed."""
    end = time.monotonic() + deadline_s
    while True:
        empty_group(group, max(0.0, end - time.monotonic()))
        try:
            group.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            # EBUSY while the last member is still exiting.
            if exc.errno != errno.EBUSY or time.monotonic() > end:
                return False
        time.sleep(0.01)


def _enable_memory(group: Path) -> None:
    """v2: the memory controller for the children of `group` (no-op when it already is)."""
    control = group / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        _write(control, "+memory")


class SampleGroup:
    """One sample's memory cgroup: created on enter, emptied and removed on exit."""

    def __init__(self, accounting: TreeAccounting, kind: str = "sample") -> None:
        if accounting.parent is None:
            raise GroupError(errno.EINVAL, "no cgroup to create a group in")
        self.accounting = accounting
        self.path = accounting.parent / f"{prefix(kind)}{uuid.uuid4().hex[:8]}"

    def __enter__(self) -> SampleGroup:
        parent = self.accounting.parent
        assert parent is not None
        try:
            if self.accounting.kind == "cgroup-v2":
                _enable_memory(parent.parent)
                parent.mkdir(exist_ok=True)
                _enable_memory(parent)
            else:
                parent.mkdir(exist_ok=True)
            self.path.mkdir()
        except OSError as exc:
            raise GroupError(exc.errno or errno.EIO,
                             f"cannot create the memory cgroup {self.path}: {exc.strerror}"
                             ) from None
        peak = "memory.peak" if self.accounting.kind == "cgroup-v2" \
            else "memory.max_usage_in_bytes"
        if not (self.path / peak).is_file():
            remove_group(self.path)
            raise GroupError(errno.ENOENT, f"{self.path} has no {peak}")
        return self

    def join_file(self) -> Path:
        """Where a process writes "0" to move itself into the group."""
        return self.path / "cgroup.procs"

    def peak_kb(self) -> int | None:
        """The group's high-water mark so far, in KiB."""
        name = "memory.peak" if self.accounting.kind == "cgroup-v2" \
            else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text().split()[0]) // 1024
        except (OSError, ValueError, IndexError):
            return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        remove_group(self.path)


def clean_stale_groups(accounting: TreeAccounting) -> list[Path]:
    """Remove every sample group whose owner is gone (killed with SIGKILL, crashed): its
    processes are killed first. Only names of abibench's own form are touched."""
    parent = accounting.parent
    removed: list[Path] = []
    if parent is None:
        return removed
    try:
        entries = [p for p in parent.iterdir() if p.is_dir()]
    except OSError:
        return removed
    for entry in entries:
        owner = owner_of(entry.name)
        if owner is not None and owner.gone() and remove_group(entry):
            removed.append(entry)
    return removed


# --------------------------------------------------------------------------- sampling


def tree_pids(root: int) -> list[int]:
    """The root and all its descendants (through /proc/PID/task/TID/children)."""
    out, i = [root], 0
    while i < len(out):
        pid = out[i]
        i += 1
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    out.extend(int(c) for c in fh.read().split() if int(c) not in out)
            except OSError:
                continue
    return out


def pss_kb(pid: int) -> int:
    """A process's proportional set size in KiB (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return 0


class PssSampler:
    """The peak of the sum of PSS over a process tree, sampled from a thread."""

    def __init__(self, root: int, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        self.root = root
        self.interval_s = interval_s
        self.peak_kb = 0
        self.passes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="abibench-pss", daemon=True)

    def sample_once(self) -> int:
        total = sum(pss_kb(p) for p in tree_pids(self.root))
        self.peak_kb = max(self.peak_kb, total)
        self.passes += 1
        return total

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            self.sample_once()
            cost = time.monotonic() - t0
            self._stop.wait(max(self.interval_s, SAMPLER_COST_FACTOR * cost))

    def start(self) -> PssSampler:
        self._thread.start()
        return self

    def stop(self) -> int | None:
        """Stop sampling; the peak in KiB, None when nothing was ever seen."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.peak_kb or None
