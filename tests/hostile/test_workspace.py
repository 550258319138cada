"""Temporary directories under attack: removed however their owner ends, what a killed run
left removed at the next start, and nothing else touched (links, other owners, live runs)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.obtain.sysroot import Sysroot
from abibench.run.sandbox import SysrootRunner
from abibench.workspace import (
    clean_stale,
    current,
    owned_dir,
    owner_of,
    start_time,
    temp_root,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
Cli = Callable[..., subprocess.CompletedProcess[str]]


def dead_pid() -> int:
    """The PID of a process that has ended and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert start_time(proc.pid) is None
    return proc.pid


def make(parent: Path, name: str) -> Path:
    path = parent / name
    path.mkdir(parents=True)
    (path / "file").write_text("x")
    return path


def test_owned_dir_is_removed_when_its_context_ends_however_it_ends(tmp_path: Path) -> None:
    with owned_dir("sample", tmp_path) as d:
        (d / "out").write_text("data")
        assert owner_of(d.name) == current()
    assert not d.exists()
    with pytest.raises(KeyboardInterrupt), owned_dir("sample", tmp_path) as d:
        raise KeyboardInterrupt
    assert not d.exists()


def test_clean_stale_removes_exactly_the_dirs_of_dead_owners(tmp_path: Path) -> None:
    me = current()
    dead = dataclasses.replace(me, pid=dead_pid(), start=1)
    other_boot = dataclasses.replace(me, boot="0" * 8 if me.boot != "0" * 8 else "1" * 8)
    reused = dataclasses.replace(me, start=me.start + 1)  # our PID, another process's start
    other_ns = dataclasses.replace(dead, pidns=me.pidns + 1)  # a PID of another container
    base = tmp_path / "tmp"
    base.mkdir()
    root = temp_root(base)
    cache = tmp_path / "cache"
    sysroot = cache / "debian" / "sysroots" / "amd64-0123456789abcdef"
    expected = [
        make(root, f"sample-{dead.tag()}-aaaa"),
        make(root, f"probe-{other_boot.tag()}-bbbb"),
        make(root, f"nbody-{reused.tag()}-cccc"),
        make(cache / "builds" / "nbody", f".x86_64-{dead.tag()}-q1w2e3r4"),
        make(cache / "debian" / "sysroots", f".amd64-{dead.tag()}-q1w2e3r4"),
        make(cache / "debian" / "debs", f".dl-{dead.tag()}-q1w2e3r4"),
        make(sysroot / "abibench", f"nodejs-x86_64-{dead.tag()}-0123abcd"),
        make(sysroot / "abibench", f"mariadb-p{dead.pid}-0123456789ab"),  # before the full tag
    ]
    kept = [
        make(root, f"sample-{me.tag()}-dddd"),
        make(root, f"sample-{other_ns.tag()}-eeee"),
        make(root, "not-ours"),
        make(cache / "builds" / "nbody", f".x86_64-{me.tag()}-q1w2e3r4"),
        make(cache / "builds" / "nbody", "x86_64-0123456789abcdef"),  # a finished build
        make(sysroot / "abibench", f"work-p{os.getpid()}-0123456789ab"),
        make(sysroot, "usr"),
    ]
    # Canaries: a dead owner's name outside abibench's places, and a symlink with a dead
    # owner's name inside the temp root that points at one.
    canary = make(tmp_path, f"sample-{dead.tag()}-ffff")
    (root / f"sample-{dead.tag()}-link").symlink_to(canary)
    stale_file = root / f"sample-{dead.tag()}-file"
    stale_file.write_text("not a directory")

    removed = clean_stale(cache, temp_base=base)

    assert sorted(removed) == sorted(expected)
    assert not any(p.exists() for p in expected)
    assert all((p / "file").is_file() for p in kept)
    assert (canary / "file").read_text() == "x"
    assert (root / f"sample-{dead.tag()}-link").is_symlink() and stale_file.is_file()
    assert clean_stale(cache, temp_base=base) == []


def test_the_temp_root_must_be_this_users_own(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / f"abibench-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(Exception, match="not a directory of this user"):
        temp_root(tmp_path)


def test_a_live_sysroot_scratch_dir_is_never_swept(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = cache / "debian" / "sysroots" / "amd64-0123456789abcdef"
    runner = SysrootRunner(Sysroot(root, "amd64", (), "0123456789abcdef"), mode="chroot")
    with runner.scratch("work") as (host, inner):
        assert inner == f"/abibench/{host.name}" and host.parent == root / "abibench"
        assert owner_of(host.name) == current()
        assert clean_stale(cache, temp_base=tmp_path) == []
        assert host.is_dir()
    assert not host.exists()


def test_abibench_run_cleans_what_a_killed_run_left_and_records_strays(
        cli: Cli, cli_env: dict[str, str], db_file: Path, shared_cache: Path,
        tmp_path: Path) -> None:
    me = current()
    dead = dataclasses.replace(me, pid=dead_pid(), start=1)
    base = tmp_path / "tmp"
    base.mkdir()
    left_temp = make(temp_root(base), f"sample-{dead.tag()}-aaaa")
    left_build = make(shared_cache / "builds" / "escape", f".x86_64-{dead.tag()}-q1w2e3r4")
    live = make(temp_root(base), f"sample-{me.tag()}-bbbb")
    env = {**cli_env, "TMPDIR": str(base)}
    r = cli("run", str(FIXTURES / "escape.toml"), "--abi", "x86_64", "--rounds", "1",
            "--no-html", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not left_temp.exists() and not left_build.exists() and live.is_dir()
    # Its own temporary directories are gone too.
    assert sorted(p.name for p in temp_root(base).iterdir()) == [live.name]
    # Every sample (warm-up and one round) left its grandchild: not a failure, but recorded.
    db = sqlite3.connect(db_file)
    statuses = [s for (s,) in db.execute("SELECT status FROM samples")]
    assert statuses == ["ok", "ok"]
    (message,) = [m for (m,) in db.execute("SELECT message FROM warnings WHERE target='x86_64'")]
    assert message.startswith("x86_64: its samples left 2 processes running")
