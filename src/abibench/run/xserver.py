"""A virtual X server (the host's Xvfb) for one sample, reachable only through a private socket.

Xvfb hard-codes where it puts its socket and lock file (/tmp/.X11-unix/XN, /tmp/.XN-lock), so
it runs in a mount namespace of its own (unshare) in which a directory of ours is bound over
/tmp: the socket and the lock file land in that directory and nowhere else. It listens neither
on TCP nor on Linux's abstract socket namespace (`-nolisten tcp -nolisten local`), so a client
reaches it only through that socket file; a sysroot program sees it because run/sandbox.py binds
the directory's .X11-unix over the program's /tmp/.X11-unix.

Readiness is Xvfb's own word: `-displayfd` writes the display number on a pipe once it accepts
connections (EOF means it died), then a connect() to the socket confirms it. It is stopped by
its PID (SIGTERM, then SIGKILL to its process group), dies with abibench (PR_SET_PDEATHSIG)
even on SIGKILL, and the socket and lock file are removed on every path.

    with XServer(host_dir, "1024x768x24") as x:
        env["DISPLAY"] = x.display
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path

from ..errors import HostError
from ..workloads.profile import parse_screen
from .servers import (
    ServerError,
    StoppedOnExit,
    _die_with_parent,
    _wait_for,
    pid_alive,
    stop_by_pid,
)

SOCKET_DIR = ".X11-unix"  # inside the private /tmp, as clients look for it
# sh -c SCRIPT DIR XVFB ARGS...: in the new mount namespace, DIR becomes /tmp, then Xvfb
BIND_TMP = 'mount --bind "$0" /tmp && exec "$@"'
FIRST_DISPLAY = 20  # above the :0/:1 of a desktop and the :99 habit of xvfb-run


def displays_in_use() -> set[int]:
    """Display numbers some X server on this host holds: abstract or file sockets of any
    namespace's /tmp/.X11-unix/XN that the kernel lists, and lock files in the host's /tmp."""
    used: set[int] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            m = re.search(r"/tmp/\.X11-unix/X(\d+)$", line)
            if m:
                used.add(int(m.group(1)))
    with contextlib.suppress(OSError):
        for entry in Path("/tmp").iterdir():
            m = re.fullmatch(r"\.X(\d+)-lock", entry.name)
            if m:
                used.add(int(m.group(1)))
    return used


def free_display(used: set[int]) -> int:
    """The lowest display number from FIRST_DISPLAY on that nobody holds. Ours is private (its
    socket is in our directory) so a clash could not connect the wrong client, but a number no
    other server shows keeps the X server's and its clients' logs unambiguous."""
    n = FIRST_DISPLAY
    while n in used:
        n += 1
    return n


def _xvfb() -> str:
    exe = shutil.which("Xvfb")
    if exe is None:
        raise HostError("Xvfb not found, needed by the GL and game workloads: apt-get install "
                        "xvfb (bash setup.sh installs it)")
    return exe


def _namespace_tool() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None or shutil.which("mount") is None:
        raise HostError("unshare or mount not found, needed to give Xvfb a private socket "
                        "directory: apt-get install util-linux")
    # Not root: a user namespace of our own maps us to root in it, which may mount there.
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return [unshare, *user, "--mount", "--propagation", "private", "sh", "-c", BIND_TMP]


def connects(path: Path) -> bool:
    """Whether a unix socket accepts a connection. Through the directory's descriptor in
    /proc/self/fd: a sysroot's scratch path is longer than the 107 bytes a socket address holds."""
    try:
        dirfd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(f"/proc/self/fd/{dirfd}/{path.name}")
    except OSError:
        return False
    finally:
        os.close(dirfd)
    return True


class XServer(StoppedOnExit):
    """One Xvfb on a display of its own; its /tmp is `root` (a directory we own and empty)."""

    def __init__(self, root: Path, screen: str = "1024x768x24", *,
                 start_timeout_s: float = 30.0, stop_timeout_s: float = 5.0) -> None:
        if parse_screen(screen)[0] == 0:
            raise ValueError(f"screen '{screen[:40]}' is not WIDTHxHEIGHTxDEPTH, like 1024x768x24")
        self.root = root
        self.screen = screen
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.number = -1
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "xvfb.log"  # beside the socket dir; the sysroot sees only the latter

    @property
    def display(self) -> str:
        return f":{self.number}"

    @property
    def socket_path(self) -> Path:
        return self.root / SOCKET_DIR / f"X{self.number}"

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    def argv(self, displayfd: int) -> list[str]:
        return [*_namespace_tool(), str(self.root), _xvfb(), self.display,
                "-nolisten", "tcp", "-nolisten", "local", "-screen", "0", self.screen,
                "-nocursor", "-noreset", "-displayfd", str(displayfd)]

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        # The sysroot binds this directory before the server exists: make it now, root's and
        # sticky, as Xvfb wants /tmp/.X11-unix.
        sockets = self.root / SOCKET_DIR
        sockets.mkdir(exist_ok=True)
        os.chmod(sockets, 0o1777)
        self.number = free_display(displays_in_use())
        argv = None
        rfd, wfd = os.pipe()
        try:
            argv = self.argv(wfd)
            with self.log.open("wb") as fh:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh,
                                             stderr=subprocess.STDOUT, pass_fds=(wfd,),
                                             start_new_session=True,
                                             preexec_fn=_die_with_parent)
            os.close(wfd)
            wfd = -1
            said = self._read_display(rfd)
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
        if said != str(self.number):
            raise ServerError(f"Xvfb {self.display} did not start: {self._last_line()}")
        if not _wait_for(self._accepts, self.start_timeout_s, 0.02):
            raise ServerError(f"Xvfb {self.display} said it was ready but its socket "
                              f"{self.socket_path} does not accept: {self._last_line()}")

    def _read_display(self, rfd: int) -> str:
        """What Xvfb writes on -displayfd, up to its newline, or '' when it exits first."""
        got = b""
        deadline = time.monotonic() + self.start_timeout_s
        while not got.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return ""
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                return ""
            chunk = os.read(rfd, 64)
            if not chunk:  # every writer closed: Xvfb exited (or wrote no newline)
                break
            got += chunk
        return got.decode(errors="replace").strip()

    def _accepts(self) -> bool:
        if self.proc is None or not pid_alive(self.proc.pid):
            return False
        return connects(self.socket_path)

    def _last_line(self) -> str:
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines()
                     if ln.strip()]
        except OSError:
            return "(no log)"
        return (lines or ["(no output)"])[-1].strip()[:300]

    def stop(self) -> None:
        """SIGTERM to Xvfb's PID, SIGKILL to its process group after the deadline; then its
        socket and lock file removed, whatever state it left them in."""
        proc = self.proc
        try:
            if proc is not None:
                try:
                    stop_by_pid(proc, proc.pid, self.stop_timeout_s, 0.02)
                finally:
                    self.proc = None
        finally:
            self._remove_traces()

    def _remove_traces(self) -> None:
        if self.number >= 0:
            self.socket_path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            for entry in self.root.iterdir():
                if re.fullmatch(r"\.X\d+-lock", entry.name):
                    entry.unlink(missing_ok=True)
