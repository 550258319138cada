"""Running a program inside a Debian sysroot, as its root filesystem.

``chroot SYSROOT argv`` as root, or ``bwrap --bind SYSROOT / --proc /proc --dev /dev --tmpfs /tmp
argv`` otherwise, so the program sees its own libc, its own loader and its own data files at
their absolute paths (Debian's Node.js needs that).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..abi import by_debian_arch
from ..errors import HostError
from ..obtain.sysroot import WORK_DIR, Sysroot
from ..workspace import owned_dir

SYSROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
Mode = Literal["chroot", "bwrap", "loader"]
# sh -c SCRIPT ROOT CHROOT ARGV...: inside a fresh mount and PID namespace, /proc and a tmpfs
# for /dev/shm, then chroot; the mounts vanish with the namespace (the host never sees them).
PRIVATE_CHROOT = ('mount -t proc proc "$0/proc" && '
                  'mount -t tmpfs -o mode=1777,nosuid,nodev shm "$0/dev/shm" && '
                  'chroot="$1" && shift && exec "$chroot" "$0" "$@"')
# The same with an X server's socket directory: a tmpfs on /tmp holding only the directory
# ($1, inside the sysroot) bound at /tmp/.X11-unix, where X clients look (run/xserver.py).
PRIVATE_CHROOT_X11 = ('mount -t proc proc "$0/proc" && '
                      'mount -t tmpfs -o mode=1777,nosuid,nodev shm "$0/dev/shm" && '
                      'mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$0/tmp" && '
                      'mkdir -m 1777 "$0/tmp/.X11-unix" && '
                      'mount --bind "$0$1" "$0/tmp/.X11-unix" && '
                      'shift && chroot="$1" && shift && exec "$chroot" "$0" "$@"')


def default_mode() -> Mode:
    forced = os.environ.get("ABIBENCH_ISOLATION", "")
    modes: dict[str, Mode] = {"chroot": "chroot", "bwrap": "bwrap", "loader": "loader"}
    if forced in modes:
        return modes[forced]
    return "chroot" if os.geteuid() == 0 else "bwrap"


@dataclass(frozen=True)
class SysrootRunner:
    """Turns an argv meant for the sysroot into one that runs it there, as its root filesystem.

    chroot (as root) execs the program in place, so the launcher's wait4 sees the program
    itself; bwrap stays as a small parent of it, and wait4's rusage then still covers the
    program (its resources are the maximum/sum over the waited-for descendants).
    The program's working directory is / in both modes; use absolute paths under WORK_DIR.

    "loader" (ABIBENCH_ISOLATION=loader) is the fallback for simple binaries: the sysroot's own
    ld.so runs the program with the sysroot's library directories, on the host's filesystem.
    Programs that open data at absolute paths (Debian's Node.js: /usr/share/nodejs) or exec
    helpers escape the sysroot that way; check with foreign_mappings().

    `private` is for programs that need /proc and /dev/shm (a browser reads /proc/self/exe and
    shares memory through /dev/shm). bwrap gives both in every mode (its /dev is a tmpfs). chroot
    mode then runs in a mount and PID namespace of its own (unshare(1)), with /proc and a tmpfs
    on /dev/shm mounted only there; when the namespace's first process ends, the kernel kills
    every other process in it. unshare waits for its child, so wait4's rusage still covers the
    program. bwrap gets no PID namespace: with --unshare-pid its outer process learns the exit
    status without waiting for the program, and the rusage would be bwrap's own; what a bwrap
    program leaves behind is killed by the launcher (a subreaper) and the sample's cgroup.
    """

    sysroot: Sysroot
    mode: Mode = field(default_factory=default_mode)
    private: bool = False
    # An X server's socket directory inside the sysroot (its .X11-unix is what the program sees
    # at /tmp/.X11-unix, alone on a private /tmp): run/xserver.py. Implies `private`.
    x11: str | None = None

    def tool(self) -> str:
        if self.mode == "loader":
            # The sysroot's own loader by its real path: amd64's /lib64/ld-linux-x86-64.so.2 in
            # the .deb is an absolute symlink, which outside the sysroot means the host's.
            return str(self.sysroot.host_path(
                f"/lib/{self.sysroot.triplet}/{by_debian_arch(self.sysroot.arch).loader_name()}"))
        exe = shutil.which("chroot" if self.mode == "chroot" else "bwrap")
        if exe is None:
            fix = ("apt-get install coreutils" if self.mode == "chroot"
                   else "apt-get install bubblewrap")
            raise HostError(f"{self.mode} not found, needed to run programs inside a sysroot: "
                            f"{fix}")
        if self.mode == "chroot" and os.geteuid() != 0:
            raise HostError("chroot needs root: run as root or set ABIBENCH_ISOLATION=bwrap")
        return exe

    def wrap(self, argv: Sequence[str]) -> list[str]:
        root = str(self.sysroot.path)
        if self.mode == "loader" and (self.private or self.x11):
            raise HostError("a browser or an X client needs its own namespaces in the sysroot, "
                            "which ABIBENCH_ISOLATION=loader cannot give: use chroot (root) or "
                            "bwrap")
        if self.mode == "loader":
            # Fallback for simple binaries only: the program sees the host's filesystem, so
            # data files at absolute paths and anything it execs escape the sysroot.
            t = self.sysroot.triplet
            libs = f"{root}/lib/{t}:{root}/usr/lib/{t}"
            return [self.tool(), "--inhibit-cache", "--library-path", libs, "--argv0", argv[0],
                    str(self.sysroot.host_path(argv[0])), *argv[1:]]
        if self.mode == "chroot" and self.x11:
            return [*self._unshare(), PRIVATE_CHROOT_X11, root, f"{self.x11}/.X11-unix",
                    self.tool(), *argv]
        if self.mode == "chroot" and self.private:
            return [*self._unshare(), PRIVATE_CHROOT, root, self.tool(), *argv]
        if self.mode == "chroot":
            return [self.tool(), root, *argv]
        x11 = ([] if not self.x11 else
               ["--bind", str(self.sysroot.host_path(f"{self.x11}/.X11-unix")), "/tmp/.X11-unix"])
        return [self.tool(), "--bind", root, "/", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/tmp", *x11, "--die-with-parent", "--chdir", "/", "--", *argv]

    def _unshare(self) -> list[str]:
        tools = {name: shutil.which(name) for name in ("unshare", "mount", "sh")}
        missing = [name for name, path in tools.items() if path is None]
        if missing:
            raise HostError(f"{', '.join(missing)} not found, needed to give a sysroot program "
                            "its own namespaces: apt-get install util-linux")
        (self.sysroot.path / "dev" / "shm").mkdir(parents=True, exist_ok=True)
        return [str(tools["unshare"]), "--mount", "--propagation", "private", "--pid", "--fork",
                "--kill-child", str(tools["sh"]), "-c"]

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean environment: nothing of the host's (LD_LIBRARY_PATH!) leaks in."""
        return {"PATH": SYSROOT_PATH, "HOME": "/root", "LC_ALL": "C", "TZ": "UTC",
                **(extra or {})}

    @contextlib.contextmanager
    def scratch(self, prefix: str = "work") -> Iterator[tuple[Path, str]]:
        """A fresh directory inside the sysroot: (host path, path inside), removed afterwards."""
        parent = self.sysroot.host_path(WORK_DIR)
        parent.mkdir(parents=True, exist_ok=True)
        # Named for its owner (workspace.py), so a later run removes it if this one is killed;
        # 0777 less the umask, as before: a server that drops root must still reach its datadir.
        with owned_dir(prefix, parent, mode=0o777) as host:
            inner = str(host) if self.mode == "loader" else f"{WORK_DIR}/{host.name}"
            yield host, inner


def foreign_mappings(pid: int, sysroot: Path) -> list[str]:
    """Files mapped by a process that do not come from the sysroot (must be empty).

    Paths in /proc/PID/maps are as the reader sees them: a chrooted process shows host paths
    under the sysroot; one in bwrap's mount namespace shows paths inside it, so a mapping is
    from the sysroot when its device and inode are those of the file at the same path there.
    """
    out: list[str] = []
    text = Path(f"/proc/{pid}/maps").read_text()
    root = str(sysroot.resolve())
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        path = parts[5].removesuffix(" (deleted)")
        if path.startswith(root + "/"):
            continue
        inode = int(parts[4])
        try:
            st = os.stat(root + path)
        except OSError:
            out.append(path)
            continue
        if st.st_ino != inode:
            out.append(path)
    return sorted(set(out))
