"""What each test costs in CPU seconds, and the longest-first order of the gate.

Under a neighbour's load, wall durations lie (a test waits for a core as long as the neighbour
holds it); CPU seconds do not. Each phase of a test (setup with its fixtures, call, teardown) is
measured as the CPU usage of a cgroup v2 group the process running it (an xdist worker) moved
into (root, a writable hierarchy): itself and every descendant, those in a sandbox's PID
namespace and detached daemons included. Elsewhere, getrusage deltas: RUSAGE_SELF (every thread
of the worker) plus RUSAGE_CHILDREN (every child, and their children, that was reaped
meanwhile), which miss a sandbox's processes (bwrap reaps them) and a daemon that detached.
The figure travels on the test's report (user_properties), so pytest-xdist's controller sums
it like any report.

    pytest --cpu-durations=30                 the 30 dearest tests at the end
    pytest --cpu-json=out.json                every test: {nodeid: [cpu_s, wall_s]}
    bench/gate_order.py RECORD                (re)writes tests/gate_order.json from a record

tests/gate_order.json, committed, holds the seconds each long test held its worker in a recorded
whole gate: the scheduler (tests/conftest.py) sends the longest first so that the gate's tail
packs; a test missing from it goes after them, in collection order.
"""

from __future__ import annotations

import json
import math
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ORDER_FILE = Path(__file__).parent / "gate_order.json"
# Another record in its place (the test of the scheduler gives one of its own).
ORDER_ENV = "ABIBENCH_TEST_ORDER"
_CPU = "cpu_s"
_WALL = "wall_s"
_phase_cost = pytest.StashKey[tuple[float, float]]()


def _rusage_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# getrusage misses what runs in a PID namespace: bwrap (the builds' and samples' sandbox)
# reaps its command where the parent cannot count it (measured: a 0.35 CPU s loop run through
# `bwrap --unshare-all` adds 0.003 s to RUSAGE_CHILDREN), and /usr/bin/time misses it the same
# way. Where this process may make a cgroup v2 group of its own (root, a writable hierarchy),
# it moves itself there and reads the group's usage_usec, which counts every descendant,
# sandboxed or detached, for as long as the process lives: a server a session fixture started
# is charged to the tests that run while it works.
_GROUP: list[Path] = []


def _cgroup2_mount() -> Path | None:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def _own_group() -> Path | None:
    """A new cgroup v2 group holding this process (made beside nothing else of ours), or None
    where none can be made here."""
    mount = _cgroup2_mount()
    if mount is None or os.geteuid() != 0:
        return None
    try:
        current = next(ln[3:] for ln in Path("/proc/self/cgroup").read_text().splitlines()
                       if ln.startswith("0::"))
        group = mount / current.lstrip("/") / f"abibench-test-{os.getpid()}"
        group.mkdir()
        try:
            (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
            float((group / "cpu.stat").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            group.rmdir()
            return None
    except (OSError, StopIteration):
        return None
    return group


def _leave_group(group: Path) -> None:
    try:
        (group.parent / "cgroup.procs").write_text(f"{os.getpid()}\n")
        group.rmdir()  # refused while something started here still runs: left, harmless
    except OSError:
        pass


def _cpu_now() -> float:
    if _GROUP:
        try:
            for line in (_GROUP[0] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
    return _rusage_now()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cputime", "CPU seconds per test (tests/cputime.py)")
    group.addoption("--cpu-durations", type=int, default=None, metavar="N",
                    help="show the N tests that cost the most CPU seconds (0: all)")
    group.addoption("--cpu-json", default=None, metavar="PATH",
                    help="write every test's CPU and wall seconds to PATH as JSON")


def _measured(item: pytest.Item) -> Generator[None, Any, Any]:
    cpu, wall = _cpu_now(), time.perf_counter()
    try:
        return (yield)
    finally:
        item.stash[_phase_cost] = (_cpu_now() - cpu, time.perf_counter() - wall)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measured(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measured(item))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measured(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    cost = item.stash.get(_phase_cost, None)
    if cost is not None:
        del item.stash[_phase_cost]
        report.user_properties.append((_CPU, cost[0]))
        report.user_properties.append((_WALL, cost[1]))
    return report


class CpuTable:
    """Each test's CPU and wall seconds, summed over its phases' reports; shown and written at
    the end (in pytest-xdist's controller, or in the one process without workers)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.costs: dict[str, list[float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = self.costs.setdefault(report.nodeid, [0.0, 0.0])
        for key, value in report.user_properties:
            if key in (_CPU, _WALL) and isinstance(value, float):
                row[key == _WALL] += value

    def ranked(self) -> list[tuple[str, float, float]]:
        return sorted(((n, c, w) for n, (c, w) in self.costs.items()), key=lambda r: -r[1])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        ranked = self.ranked()
        path = self.config.getoption("cpu_json")
        if path:
            Path(path).write_text(as_json(ranked))
        top = self.config.getoption("cpu_durations")
        if top is None:
            return
        total = sum(c for _, c, _ in ranked)
        terminalreporter.write_sep("=", f"CPU seconds per test ({len(ranked)} tests, "
                                        f"{total:.1f} s in all)")
        for nodeid, cpu, wall in ranked[:top] if top > 0 else ranked:
            terminalreporter.write_line(f"{cpu:8.2f}s cpu {wall:8.2f}s wall  {nodeid}")


def as_json(ranked: list[tuple[str, float, float]]) -> str:
    """{nodeid: [cpu_s, wall_s]}, one test a line (a record that diffs well)."""
    lines = [f"{json.dumps(n)}: [{c:.3f}, {w:.3f}]" for n, c, w in ranked]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuTable(config), "cputime-table")
    # Only where a figure is asked for (the workers see the controller's options).
    if config.getoption("cpu_json") or config.getoption("cpu_durations") is not None:
        group = _own_group()
        if group is not None:
            _GROUP.append(group)


def pytest_unconfigure(config: pytest.Config) -> None:
    while _GROUP:
        _leave_group(_GROUP.pop())


def recorded_order(path: Path | None = None) -> dict[str, float]:
    """The committed record (or $ABIBENCH_TEST_ORDER's), {nodeid: seconds the test held its
    worker}; a row that is not a finite number is left out, and an unreadable or missing file
    orders nothing (the gate then runs in collection order)."""
    if path is None:
        path = Path(os.environ.get(ORDER_ENV) or ORDER_FILE)
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(rows, dict):
        return {}
    return {str(nodeid): float(v) for nodeid, v in rows.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}


def longest_first(units: list[tuple[str, list[str]]],
                  cost: dict[str, float]) -> list[tuple[str, list[str]]]:
    """Work units (a scope and its tests) by their recorded cost, dearest first; units none of
    whose tests is recorded keep their order, after the rest (sorted() is stable)."""
    return sorted(units, key=lambda unit: -sum(cost.get(n, 0.0) for n in unit[1]))
