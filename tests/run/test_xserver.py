"""The virtual X server: a real Xvfb that answers the X protocol on a socket of ours only, and
leaves nothing behind (process, socket, lock file) however its user ends."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from abibench.run.servers import pid_alive
from abibench.run.xserver import XServer, displays_in_use, free_display

needs_xvfb = pytest.mark.needs_setup("xvfb")


def x_handshake(path: Path) -> int:
    """Open an X connection (no authorisation) and return the setup reply's status byte:
    1 = the server accepted us, with its vendor string after the fixed part."""
    dirfd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)  # a short address for a long path
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(f"/proc/self/fd/{dirfd}/{path.name}")
        os.close(dirfd)
        s.sendall(struct.pack("<cxHHHHxx", b"l", 11, 0, 0, 0))
        head = s.recv(8)
    return head[0]


def leftovers(root: Path) -> list[str]:
    """Anything Xvfb leaves in its /tmp: sockets, lock files (the empty socket dir and our log
    of its output stay until the directory's owner removes it)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if not p.is_dir() and p.name != "xvfb.log")


def test_free_display_skips_every_number_in_use() -> None:
    assert free_display(set()) == 20
    assert free_display({20, 21, 23}) == 22
    assert isinstance(displays_in_use(), set)


@needs_xvfb
def test_speaks_x_on_its_private_socket_only_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "x"
    with XServer(root, "320x240x24") as x:
        pid = x.pid
        assert pid_alive(pid)
        assert x.socket_path == root / ".X11-unix" / f"X{x.number}"
        assert x_handshake(x.socket_path) == 1
        # Neither TCP nor Linux's abstract namespace: the socket file is the only way in.
        unix = Path("/proc/net/unix").read_text()
        assert f"@/tmp/.X11-unix/X{x.number}" not in unix
        assert not Path(f"/tmp/.X11-unix/X{x.number}").exists()
        assert not Path(f"/tmp/.X{x.number}-lock").exists()
    assert not pid_alive(pid)
    assert leftovers(root) == []


@needs_xvfb
def test_two_servers_at_once_get_two_displays(tmp_path: Path) -> None:
    with XServer(tmp_path / "a", "320x240x24") as a, XServer(tmp_path / "b", "320x240x24") as b:
        assert a.number != b.number
        assert x_handshake(a.socket_path) == 1 and x_handshake(b.socket_path) == 1


@needs_xvfb
def test_stopped_when_the_block_fails(tmp_path: Path) -> None:
    root = tmp_path / "x"
    pid = 0
    with pytest.raises(RuntimeError), XServer(root, "320x240x24") as x:
        pid = x.pid
        raise RuntimeError("the sample failed")
    assert pid and not pid_alive(pid)
    assert leftovers(root) == []


SIGINT_CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from abibench.run.xserver import XServer
    with XServer(Path(sys.argv[1]), "320x240x24") as x:
        print(x.pid, x.socket_path, flush=True)
        os.kill(os.getpid(), int(sys.argv[2]))
        time.sleep(60)
""")


@needs_xvfb
@pytest.mark.parametrize("sig", [signal.SIGINT])
def test_ctrl_c_stops_the_server_and_removes_its_socket(tmp_path: Path, sig: int) -> None:
    root = tmp_path / "x"
    proc = subprocess.run([sys.executable, "-c", SIGINT_CHILD, str(root), str(int(sig))],
                          capture_output=True, text=True, timeout=60, check=False)
    assert "KeyboardInterrupt" in proc.stderr
    pid_s, sock = proc.stdout.split()
    assert not pid_alive(int(pid_s))
    assert not Path(sock).exists()
    assert leftovers(root) == []
