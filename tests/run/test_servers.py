"""MariaDB from Debian's sysroots: started on 127.0.0.1, stopped by PID on every path.

After success, after a failure injected in the middle, after Ctrl-C (and SIGTERM) of a process
that runs it: no server process, no listening port, no datadir left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from abibench.obtain.sysroot import Sysroot, prepare
from abibench.run.sandbox import SysrootRunner, foreign_mappings
from abibench.run.servers import (
    MariaDBDatadir,
    MariaDBServer,
    ServerError,
    free_port,
    peak_rss_kb,
    pid_alive,
    port_listening,
)

pytestmark = pytest.mark.needs_apt
SMALL = ("--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M",
         "--performance-schema=OFF")


@pytest.fixture(scope="module")
def roots(debian_cache: Path) -> dict[str, Sysroot]:
    return prepare(["mariadb-server"], ["i386", "amd64"], debian_cache)


def assert_gone(pid: int, port: int, datadir: Path) -> None:
    deadline = time.monotonic() + 10
    while (pid_alive(pid) or port_listening(port)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid), f"server pid {pid} survived"
    assert not port_listening(port), f"port {port} still listening"
    assert not datadir.exists(), f"datadir {datadir} left behind"


def _exe(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/exe")


@pytest.mark.parametrize("arch", ["i386", "amd64"])
def test_start_serve_stop_leaves_nothing(roots: dict[str, Sysroot], arch: str,
                                         isolation: str) -> None:
    runner = SysrootRunner(roots[arch], "chroot" if isolation == "chroot" else "bwrap")
    with MariaDBDatadir(runner, options=SMALL) as data, MariaDBServer(data) as server:
        assert port_listening(server.port)
        assert _exe(server.pid).endswith("/usr/sbin/mariadbd")  # the server, not chroot/bwrap
        # Every library the server maps is the sysroot's own, none of the host's.
        assert foreign_mappings(server.pid, roots[arch].path) == []
        peak = server.peak_rss_kb()
        assert peak is not None and peak > 10 * 1024
        pid, port, datadir = server.pid, server.port, data.host_dir
    assert_gone(pid, port, datadir)


def test_failure_in_the_middle_stops_the_server(roots: dict[str, Sysroot]) -> None:
    runner = SysrootRunner(roots["amd64"])
    seen: dict[str, object] = {}
    with pytest.raises(RuntimeError, match="injected"), \
            MariaDBDatadir(runner, options=SMALL) as data:
        seen["datadir"] = data.host_dir
        with MariaDBServer(data) as server:
            seen["pid"], seen["port"] = server.pid, server.port
            assert port_listening(server.port)
            raise RuntimeError("injected failure while the client runs")
    assert isinstance(seen["pid"], int) and isinstance(seen["port"], int)
    assert isinstance(seen["datadir"], Path)
    assert_gone(seen["pid"], seen["port"], seen["datadir"])


def test_a_server_that_cannot_start_is_an_error_and_leaves_nothing(
        roots: dict[str, Sysroot]) -> None:
    runner = SysrootRunner(roots["i386"])
    with MariaDBDatadir(runner, options=SMALL) as data:
        datadir = data.host_dir
        server = MariaDBServer(data, startup_timeout_s=60, options=("--abibench-no-such-option",))
        with pytest.raises(ServerError, match="did not start"):
            server.__enter__()
        assert server.proc is None
    assert not datadir.exists()


def test_port_in_use_is_reported(roots: dict[str, Sysroot]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        runner = SysrootRunner(roots["amd64"])
        with MariaDBDatadir(runner, options=SMALL) as data, \
                pytest.raises(ServerError, match=r"did not start on 127\.0\.0\.1"):
            MariaDBServer(data, port=port, startup_timeout_s=60).__enter__()


SCRIPT = textwrap.dedent("""
    import signal, sys
    from pathlib import Path
    from abibench.obtain.resolve import Pinned
    from abibench.obtain.sysroot import Sysroot
    from abibench.run.sandbox import SysrootRunner
    from abibench.run.servers import MariaDBDatadir, MariaDBServer
    from abibench.run.signals import signals_as_interrupt
    root = Sysroot(Path(sys.argv[1]), sys.argv[2], (), "test")
    with signals_as_interrupt():
        with MariaDBDatadir(SysrootRunner(root), options=tuple(sys.argv[3:])) as data:
            with MariaDBServer(data) as server:
                print(server.pid, server.port, data.host_dir, flush=True)
                while True:
                    signal.pause()
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_process_stops_its_server(roots: dict[str, Sysroot], sig: int,
                                              tmp_path: Path) -> None:
    root = roots["i386"]
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(root.path), root.arch, *SMALL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        pid_s, port_s, datadir = line.split()
        pid, port = int(pid_s), int(port_s)
        assert pid_alive(pid) and port_listening(port) and peak_rss_kb(pid)
        proc.send_signal(sig)  # what Ctrl-C in a terminal delivers (or a polite kill)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert_gone(pid, port, Path(datadir))


def test_server_dies_with_a_killed_parent(roots: dict[str, Sysroot]) -> None:
    """Even SIGKILL of abibench (no cleanup can run) takes the server down with it."""
    root = roots["amd64"]
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(root.path), root.arch, *SMALL],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid_s, port_s, datadir = proc.stdout.readline().split()
    proc.kill()
    proc.wait()
    subprocess.run(["rm", "-rf", datadir], check=True)  # only this path has no cleanup
    assert_gone(int(pid_s), int(port_s), Path(datadir))


def test_free_port_is_free() -> None:
    port = free_port()
    assert 1024 <= port < 65536 and not port_listening(port)
