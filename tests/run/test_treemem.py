"""The memory of a whole process tree: a cgroup per sample (v2, v1) or PSS sampling.

The correctness test is the one the issue asks for: four children of 50 MB each make a tree of
at least 200 MB, while wait4's ru_maxrss (max_rss) stays at one child's 50 MB. The others do the
bad things for real (a stray that leaves the process group, a timeout, abibench killed by
SIGTERM or SIGKILL) and then look at the process table and the cgroup directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from abibench.probe.memory import (
    KINDS,
    TreeAccounting,
    TreeKind,
    choose,
    parse_mountinfo,
    tree_accounting,
)
from abibench.run.launcher import Stopper, run_sample
from abibench.run.treemem import SampleGroup, clean_stale_groups, remove_group
from abibench.workspace import current, owner_of
from tests.processes import alive, wait_until

Program = Callable[[str], Path]
MB = 1024  # KiB


def accounting(kind: TreeKind) -> TreeAccounting:
    """This host's accounting of one kind, or the test is skipped with the reason."""
    mounts = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    acc = choose(mounts, kind)
    if acc.kind != kind:
        pytest.skip(f"{kind} is not available here: {acc.reason}")
    return acc


def groups_of(acc: TreeAccounting, pid: int) -> list[Path]:
    """The sample groups process `pid` owns (other sessions may have their own)."""
    assert acc.parent is not None
    if not acc.parent.is_dir():
        return []
    return [p for p in acc.parent.iterdir()
            if (o := owner_of(p.name)) is not None and o.pid == pid]


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------------- which accounting

MOUNTINFO = """\
25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
27 25 0:25 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
28 25 0:26 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
"""


def test_mountinfo_names_the_hierarchies() -> None:
    mounts = parse_mountinfo(MOUNTINFO + "29 1 0:9 / /mnt/with\\040space rw - ext4 /dev/x rw\n")
    by_point = {str(m.point): m for m in mounts}
    assert by_point["/sys/fs/cgroup/memory"].fstype == "cgroup"
    assert "memory" in by_point["/sys/fs/cgroup/memory"].options
    assert by_point["/sys/fs/cgroup/unified"].fstype == "cgroup2"
    assert "/mnt/with space" in by_point


def test_without_any_cgroup_the_tree_is_sampled_and_says_why() -> None:
    acc = choose([])
    assert acc.kind == "sampled" and acc.parent is None
    assert "no cgroup v2 hierarchy" in acc.reason and "no cgroup v1 memory" in acc.reason


def test_a_v2_hierarchy_without_the_memory_controller_is_passed_over(tmp_path: Path) -> None:
    unified, v1 = tmp_path / "unified", tmp_path / "memory"
    unified.mkdir()
    v1.mkdir()
    (unified / "cgroup.controllers").write_text("cpu io\n")
    (unified / "cgroup.subtree_control").write_text("")
    text = (f"1 0 0:1 / {unified} rw - cgroup2 cgroup2 rw\n"
            f"2 0 0:2 / {v1} rw - cgroup cgroup rw,memory\n")
    acc = choose(parse_mountinfo(text))
    if not os.access(v1, os.W_OK):
        pytest.skip("the test directory is not writable")
    assert acc.kind == "cgroup-v1" and acc.parent == v1 / "abibench"
    assert "has no memory controller" in acc.reason
    # With the controller and a kernel that has memory.peak, v2 wins.
    (unified / "cgroup.controllers").write_text("cpu memory io\n")
    assert choose(parse_mountinfo(text), release="6.1.0").kind == "cgroup-v2"
    old = choose(parse_mountinfo(text), release="5.10.0")
    assert old.kind == "cgroup-v1" and "memory.peak" in old.reason
    # Forced: only what is available; sampling always is.
    assert choose(parse_mountinfo(text), "sampled", release="6.1.0").kind == "sampled"
    assert choose(parse_mountinfo(text), "cgroup-v1", release="6.1.0").kind == "cgroup-v1"
    assert choose([], "cgroup-v1").kind == "sampled"


def test_probe_names_the_accounting(main_in_process: Callable[..., tuple[int, str, str]]
                                    ) -> None:
    code, out, _ = main_in_process("probe")
    assert code == 0
    assert f"process-tree memory: {tree_accounting().kind}" in out


# ------------------------------------------------------------------------- four children

@pytest.mark.parametrize("kind", KINDS)
def test_four_children_of_50_mb_make_a_tree_of_200_mb(kind: TreeKind, c_program: Program,
                                                      sample_launcher: Path,
                                                      tmp_path: Path) -> None:
    acc = accounting(kind)
    # Held for a second once all four have their memory: the sampler looks every 50 ms.
    r = run_sample([str(c_program("forktree")), "4", "50", "1000"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=60, launch=sample_launcher, tree=acc)
    assert r.ok, r.stderr_tail
    assert r.tree_memory == kind
    assert r.tree_peak_kb is not None and r.tree_peak_kb >= 200 * MB, r.tree_peak_kb
    # wait4 sees the largest single process: one child.
    assert 50 * MB <= r.max_rss_kb < 60 * MB, r.max_rss_kb
    assert r.tree_peak_kb < 260 * MB, r.tree_peak_kb
    if acc.parent is not None:
        assert groups_of(acc, os.getpid()) == []


def test_without_tree_memory_nothing_is_measured_or_created(c_program: Program,
                                                            sample_launcher: Path,
                                                            tmp_path: Path) -> None:
    r = run_sample([str(c_program("forktree")), "2", "10", "0"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=60, launch=sample_launcher)
    assert r.ok and r.tree_peak_kb is None and r.tree_memory is None


# ------------------------------------------------------------------------- nothing left

@pytest.mark.parametrize("mode", ["exit", "hang"])
def test_a_stray_dies_with_the_group_and_the_group_is_removed(
        mode: str, c_program: Program, sample_launcher: Path, tmp_path: Path,
        reaper: list[int]) -> None:
    acc = accounting("cgroup-v1") if tree_accounting().kind == "cgroup-v1" \
        else accounting("cgroup-v2")
    pidfile = tmp_path / "pids"
    # exit: the program ends and leaves a setsid grandchild; hang: the sample times out.
    r = run_sample([str(c_program("escape")), str(pidfile), mode], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=1.0 if mode == "hang" else 60,
                   launch=sample_launcher, tree=acc)
    pids = [int(x) for x in pidfile.read_text().split()]
    reaper.extend(pids)
    assert r.status == ("timeout" if mode == "hang" else "exited")
    assert r.escaped == 1 and r.tree_peak_kb is not None and r.tree_peak_kb > 0
    assert not any(alive(p) for p in pids)
    assert groups_of(acc, os.getpid()) == []


def _parent(fixtures: Path, launch: Path, program: Path, pidfile: Path, tmp: Path
            ) -> tuple[subprocess.Popen[str], list[int]]:
    env = {**os.environ, "TMPDIR": str(tmp), "ABIBENCH_TEST_TREE": "1"}
    parent = subprocess.Popen([sys.executable, str(fixtures / "sample_parent.py"), str(launch),
                               str(program), str(pidfile), "hang"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: pidfile.exists() or parent.poll() is not None, 60)
    assert parent.poll() is None, parent.communicate()
    return parent, [int(x) for x in pidfile.read_text().split()]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_abibench_stopped_mid_sample_leaves_no_process_and_no_group(
        sig: int, fixtures: Path, c_program: Program, sample_launcher: Path, tmp_path: Path,
        reaper: list[int]) -> None:
    acc = tree_accounting()
    if acc.parent is None:
        pytest.skip(f"no cgroup here: {acc.reason}")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    parent, pids = _parent(fixtures, sample_launcher, c_program("escape"), tmp_path / "pids",
                           tmp)
    reaper.extend([parent.pid, *pids])
    (group,) = groups_of(acc, parent.pid)
    in_group = {int(x) for x in (group / "cgroup.procs").read_text().split()}
    assert set(pids) <= in_group  # the program and its setsid grandchild were born inside
    parent.send_signal(sig)
    _, err = parent.communicate(timeout=60)
    if sig != signal.SIGKILL:
        # Ctrl-C or a polite kill: run_sample returned after everything was gone.
        assert parent.returncode == 130, err
        assert not any(alive(p) for p in pids)
        assert not group.exists()
        return
    # No cleanup code ran: the launcher learned of its parent's death from the kernel...
    assert wait_until(lambda: not any(alive(p) for p in pids), 15)
    # ...and the group it leaves is removed by the next run: its owner is gone.
    assert group.exists()
    assert group in clean_stale_groups(acc)
    assert not group.exists()


def test_a_stale_group_with_a_live_process_is_emptied_and_removed(
        c_program: Program, reaper: list[int]) -> None:
    acc = tree_accounting()
    if acc.parent is None:
        pytest.skip(f"no cgroup here: {acc.reason}")
    # A group made by a child process that then died, still holding a process of its own.
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys; from abibench.run.treemem import SampleGroup; "
        "from abibench.probe.memory import tree_accounting; "
        "g = SampleGroup(tree_accounting()); print(g.path)")], stdout=subprocess.PIPE,
        text=True)
    out, _ = child.communicate(timeout=60)
    group = Path(out.strip())
    group.mkdir()
    try:
        # Not our child (its shell has exited): init reaps it, as it would a dead run's.
        sleeper = int(subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
                                     capture_output=True, text=True, check=True).stdout)
        reaper.append(sleeper)
        (group / "cgroup.procs").write_text(f"{sleeper}\n")
        # Another process's live group is never touched.
        with SampleGroup(acc) as mine:
            removed = clean_stale_groups(acc)
            assert group in removed and mine.path not in removed
            assert mine.path.exists()
            assert owner_of(mine.path.name) == current()
        assert wait_until(lambda: not alive(sleeper), 15)
        assert not group.exists()
    finally:
        remove_group(group)


def test_a_stopped_sample_is_killed_with_its_tree(c_program: Program, sample_launcher: Path,
                                                  tmp_path: Path, reaper: list[int]) -> None:
    """What a browser's driver does when its page fails: the launcher kills the tree."""
    pidfile = tmp_path / "pids"
    stopper = Stopper()
    stopper.stop()  # asked before the launcher even runs: it is told once it can hear it
    r = run_sample([str(c_program("escape")), str(pidfile), "hang"], cwd=tmp_path,
                   env=dict(os.environ), timeout_s=600, launch=sample_launcher,
                   tree=tree_accounting(), stopper=stopper)
    assert r.status == "stopped" and not r.ok
    assert r.describe_failure() == "stopped by abibench"
    if pidfile.exists():
        pids = [int(x) for x in pidfile.read_text().split()]
        reaper.extend(pids)
        assert not any(alive(p) for p in pids)
