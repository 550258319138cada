"""Real servers on loopback for a workload: MariaDB's `mariadbd` from a Debian sysroot.

Rules every path follows, success, failure, timeout and Ctrl-C alike:
- 127.0.0.1 only, on a free port, with a temporary datadir inside the sysroot;
- the server is tracked and stopped by its PID (SIGTERM, then SIGKILL to its own process
  group after a deadline), never by name; it also dies with us (PR_SET_PDEATHSIG);
- the datadir is removed when the datadir's context ends.

Usage::

    with MariaDBDatadir(runner) as data:          # `mariadbd --bootstrap`, once per target
        with MariaDBServer(data) as server:       # one start/stop (e.g. per sample)
            ... client on 127.0.0.1:server.port ...
            peak = server.peak_rss_kb()
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from ..errors import EXIT_WORKLOAD, AbibenchError
from ..probe.memory import TreeAccounting
from .sandbox import SysrootRunner
from .treemem import GroupError, PssSampler, SampleGroup

LOOPBACK = "127.0.0.1"
MARIADBD = "/usr/sbin/mariadbd"
SHARE = "/usr/share/mysql"
# The SQL mariadb-install-db feeds to --bootstrap (it execs through the host's loader, so we
# do its job ourselves); help tables are left out: nothing here reads them.
BOOTSTRAP_FILES = ("mysql_system_tables.sql", "mysql_performance_tables.sql",
                   "mysql_system_tables_data.sql", "maria_add_gis_sp_bootstrap.sql",
                   "mysql_sys_schema.sql")
PR_SET_PDEATHSIG = 1


class StoppedOnExit:
    """A server started on entering its `with` and stopped, by its PID, on every way out of it,
    a start that failed half-way included (a process may already be running then)."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class ServerError(AbibenchError):
    exit_code = EXIT_WORKLOAD


def free_port() -> int:
    """A TCP port nothing listens on right now (the server is still checked after it binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_listening(port: int) -> bool:
    """Is anything listening on 127.0.0.1:port (from /proc/net/tcp, without connecting)?"""
    want = f"{socket.htonl(0x7F000001):08X}:{port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        parts = line.split()
        # local address, state 0A = LISTEN; 0.0.0.0 listeners also take 127.0.0.1
        if len(parts) > 3 and parts[3] == "0A" and parts[1].split(":")[1] == f"{port:04X}" and \
                parts[1] in (want, f"00000000:{port:04X}"):
            return True
    return False


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def peak_rss_kb(pid: int) -> int | None:
    """VmHWM of a live process: its resident high-water mark, in KiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out.extend(int(x) for x in (task / "children").read_text().split())
    return out


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when abibench dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _join_then_die_with_parent(procs: str) -> Callable[[], None]:
    """In the child before exec: into the sample's memory cgroup (so the server's whole tree
    is born there), then as _die_with_parent. The path is made before the fork: nothing but a
    write happens in the child."""
    def run() -> None:
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, b"0\n")
        finally:
            os.close(fd)
        _die_with_parent()

    return run


def _wait_for(cond: Callable[[], bool], deadline_s: float, interval: float = 0.05) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(interval)
    return cond()


class MariaDBDatadir:
    """A temporary MariaDB datadir inside the sysroot, initialised with `mariadbd --bootstrap`."""

    def __init__(self, runner: SysrootRunner, *, options: tuple[str, ...] = (),
                 bootstrap_timeout_s: float = 300.0) -> None:
        self.runner = runner
        self.options = options  # extra server options, used for bootstrap and every start
        self.bootstrap_timeout_s = bootstrap_timeout_s
        self._scratch: contextlib.ExitStack | None = None
        self.host_dir = Path()
        self.inner_dir = ""

    def __enter__(self) -> MariaDBDatadir:
        stack = contextlib.ExitStack()
        try:
            self.host_dir, self.inner_dir = stack.enter_context(self.runner.scratch("mariadb"))
            (self.host_dir / "data").mkdir()
            (self.host_dir / "tmp").mkdir()
            self._bootstrap()
        except BaseException:
            stack.close()
            raise
        self._scratch = stack
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._scratch is not None:
            self._scratch.close()
            self._scratch = None

    def inner(self, name: str) -> str:
        return f"{self.inner_dir}/{name}"

    def base_options(self) -> list[str]:
        opts = ["--no-defaults", f"--datadir={self.inner('data')}",
                f"--tmpdir={self.inner('tmp')}", "--plugin-dir=/usr/lib/mysql/plugin",
                f"--lc-messages-dir={SHARE}", f"--character-sets-dir={SHARE}/charsets"]
        if os.geteuid() == 0:
            opts.append("--user=root")
        return [*opts, *self.options]

    def bootstrap_sql(self) -> str:
        share = self.runner.sysroot.host_path(SHARE)
        parts = ["create database if not exists mysql;", "use mysql;",
                 # no unix_socket auth: root@127.0.0.1 without password is what clients use
                 "SET @auth_root_socket=NULL;"]
        for name in BOOTSTRAP_FILES:
            path = share / name
            if not path.is_file():
                raise ServerError(f"{path} is missing from the sysroot: is mariadb-server in "
                                  "[debian] packages?")
            parts.append(path.read_text())
        parts.append("CREATE DATABASE IF NOT EXISTS sbtest;")
        return "\n".join(parts) + "\n"

    def _bootstrap(self) -> None:
        sql = self.host_dir / "bootstrap.sql"
        sql.write_text(self.bootstrap_sql())
        log = self.host_dir / "bootstrap.log"
        argv = self.runner.wrap([MARIADBD, *self.base_options(), "--bootstrap",
                                 "--log-warnings=0", "--enforce-storage-engine=",
                                 "--max_allowed_packet=8M", "--net_buffer_length=16K"])
        with sql.open("rb") as stdin, log.open("wb") as out:
            proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
                                    env=self.runner.env(), start_new_session=True,
                                    preexec_fn=_die_with_parent)
            try:
                rc = proc.wait(timeout=self.bootstrap_timeout_s)
            except BaseException:
                _kill_group(proc)
                raise
        if rc != 0:
            raise ServerError(f"mariadbd --bootstrap failed ({self.runner.sysroot.arch}, exit "
                              f"{rc}): {_last_line(log)}")


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    errors = [ln for ln in lines if "ERROR" in ln]
    return (errors or lines or ["(empty log)"])[-1].strip()[:300]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group we created for this process, then reap it.

    The group's id is our child's PID, and that PID stays ours until we reap it (a zombie keeps
    it), so the signal can only reach what we started.
    """
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop_by_pid(proc: subprocess.Popen[bytes], pid: int, timeout_s: float,
                poll_s: float) -> None:
    """SIGTERM to `pid` (the server: proc's own PID, or its child under a wrapper), a wait
    until proc is gone, then SIGKILL to proc's process group whatever happened, even a second
    Ctrl-C in the wait. Not proc.wait() in between: the PID must stay ours (unreaped) until the
    group is killed, so the signal reaches only what we started."""
    try:
        if proc.returncode is None and pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            _wait_for(lambda: not pid_alive(proc.pid), timeout_s, poll_s)
    finally:
        _kill_group(proc)


class MariaDBServer(StoppedOnExit):
    """One running `mariadbd` on 127.0.0.1:port, from a datadir; stopped by PID on exit."""

    def __init__(self, datadir: MariaDBDatadir, *, startup_timeout_s: float = 120.0,
                 stop_timeout_s: float = 60.0, port: int | None = None,
                 options: tuple[str, ...] = (), tree: TreeAccounting | None = None) -> None:
        self.datadir = datadir
        self.options = options  # extra options for this start only
        # [run] memory = "tree": the server's whole process tree is measured, in its own
        # memory cgroup or by sampling (run/treemem.py)
        self.tree = tree
        self.group: SampleGroup | None = None
        self.sampler: PssSampler | None = None
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.port = port or 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0  # mariadbd's own PID (bwrap's child, when bwrap is the wrapper)
        self.log = datadir.host_dir / "error.log"

    def argv(self) -> list[str]:
        d = self.datadir
        return d.runner.wrap([
            MARIADBD, *d.base_options(), f"--socket={d.inner('mysqld.sock')}",
            f"--pid-file={d.inner('mysqld.pid')}", f"--port={self.port}",
            f"--bind-address={LOOPBACK}", "--skip-name-resolve",
            f"--log-error={d.inner('error.log')}", *self.options])

    def start(self) -> None:
        chosen = self.port
        for _attempt in range(3):
            self.port = chosen or free_port()
            if self._start_once():
                return
            self.stop()
            if chosen or "Address already in use" not in _last_line(self.log):
                break
        raise ServerError(f"mariadbd ({self.datadir.runner.sysroot.arch}) did not start on "
                          f"{LOOPBACK}:{self.port}: {_last_line(self.log)}")

    def _start_once(self) -> bool:
        self.log.write_bytes(b"")
        out = self.datadir.host_dir / "stdout.log"
        before_exec = _die_with_parent
        if self.tree is not None and self.tree.kind != "sampled":
            try:
                self.group = SampleGroup(self.tree, "server").__enter__()
                before_exec = _join_then_die_with_parent(str(self.group.join_file()))
            except GroupError:
                self.group = None  # the hierarchy changed since the probe: sample instead
        with out.open("ab") as fh:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=fh,
                                         stderr=subprocess.STDOUT,
                                         env=self.datadir.runner.env(),
                                         start_new_session=True, preexec_fn=before_exec)
        self.pid = self.proc.pid
        if self.tree is not None and self.group is None:
            self.sampler = PssSampler(self.proc.pid).start()
        if self.datadir.runner.mode == "bwrap":
            # bwrap stays as the parent: the server is its child.
            proc = self.proc
            _wait_for(lambda: bool(_children(proc.pid)) or not pid_alive(proc.pid), 10)
            kids = _children(self.proc.pid)
            self.pid = kids[0] if kids else self.proc.pid
        return _wait_for(self._ready_or_dead, self.startup_timeout_s, 0.1) and self._accepts()

    def _ready_or_dead(self) -> bool:
        return self.proc is None or not pid_alive(self.proc.pid) or self._accepts()

    def _accepts(self) -> bool:
        """A connection gets MariaDB's handshake (protocol 10) from our own, live server."""
        if self.proc is None or not pid_alive(self.pid):
            return False
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=2) as s:
                head = s.recv(5)
        except OSError:
            return False
        return len(head) == 5 and head[4] == 10

    def peak_rss_kb(self) -> int | None:
        """The server's resident high-water mark so far (VmHWM from /proc/PID/status)."""
        return peak_rss_kb(self.pid) if self.pid else None

    def tree_peak(self) -> tuple[int | None, str | None]:
        """The server tree's peak so far (KiB) and how it was measured; (None, None) unless
        asked for."""
        if self.group is not None:
            return self.group.peak_kb(), self.group.accounting.kind
        if self.sampler is not None:
            return self.sampler.peak_kb or None, "sampled"
        return None, None

    def stop(self) -> None:
        """SIGTERM to the server's PID, SIGKILL to its process group after the deadline."""
        proc = self.proc
        if proc is None:
            self._end_tree()
            return
        try:
            stop_by_pid(proc, self.pid, self.stop_timeout_s, 0.05)
        finally:
            if self.pid != proc.pid:
                _wait_for(lambda: not pid_alive(self.pid), 5)
            self.proc = None
            self._end_tree()

    def _end_tree(self) -> None:
        """The tree's cgroup emptied (anything that left the process group) and removed."""
        if self.sampler is not None:
            self.sampler.stop()
            self.sampler = None
        if self.group is not None:
            self.group.__exit__(None, None, None)
            self.group = None
