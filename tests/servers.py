"""Real servers for the tests and bench/: a throw-away PostgreSQL cluster and sshd "hosts".

Not a test module: tests/conftest.py turns these into fixtures, bench/store_load.py starts a
cluster of its own. Rules every path follows (success, failure, Ctrl-C, SIGTERM):

* each server is started directly (no pg_ctl, no systemd) in its own session, so the PID held
  is the server's; it listens on a 127.0.0.x address and a free port, its data in a temp dir;
* it is stopped by that PID (a polite signal, SIGKILL after a deadline) and every process
  below it too (postgres' and sshd's children call setsid(), sshd's sessions outlive it); the
  kernel stops it if the test process dies without its `finally` (PR_SET_PDEATHSIG);
* the temp dir is removed; if the test process is killed before it can be, the next test
  session removes it (tests/owned.py: every such directory is stamped with its owner).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from urllib.parse import quote

import psycopg
from psycopg import sql

from .owned import owned_tempdir

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
# The checkout's setup.sh: what the fleet hosts run to set themselves up.
SETUP_SH = Path(__file__).resolve().parents[1] / "setup.sh"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every `finally` stops its servers."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM becomes `Terminated` while the block runs (main thread, default handler only)."""
    import threading

    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or \
            previous not in (signal.SIG_DFL, None):
        yield
        return

    def _raise(signum: int, frame: FrameType | None) -> None:
        raise Terminated(f"signal {signum}")

    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Account:
    """Who a server runs as: postgres refuses root, so root's tests use Debian's `postgres`."""

    name: str
    uid: int
    gid: int

    @classmethod
    def for_postgres(cls) -> Account:
        pw = pwd.getpwnam("postgres") if os.getuid() == 0 else pwd.getpwuid(os.getuid())
        return cls(pw.pw_name, pw.pw_uid, pw.pw_gid)

    def popen_kwargs(self) -> dict[str, object]:
        if self.uid == os.getuid():
            return {}
        # Popen changes groups, gid and uid in the child before exec: the PID it returns is
        # the server's own (runuser or su would fork and wait).
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def _child_setup(pdeathsig: int, subreaper: bool) -> Callable[[], None]:
    libc = ctypes.CDLL(None, use_errno=True)

    def setup() -> None:
        # After the change of user (which clears PDEATHSIG), before exec.
        libc.prctl(_PR_SET_PDEATHSIG, pdeathsig, 0, 0, 0)
        if subreaper:  # orphans below the server stay below it, where stop() finds them
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    return setup


def run(argv: Sequence[str], account: Account | None = None,
        env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    kwargs = account.popen_kwargs() if account else {}
    # Killed with this process (initdb would go on writing into a directory already swept).
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=False,
                          env=env, cwd=cwd, preexec_fn=_child_setup(signal.SIGKILL, False),
                          **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited with {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-2000:]}")


def spawn(argv: Sequence[str], log: Path, pdeathsig: int, account: Account | None = None,
          env: dict[str, str] | None = None, cwd: Path | None = None,
          subreaper: bool = False) -> subprocess.Popen[bytes]:
    kwargs = account.popen_kwargs() if account else {}
    with open(log, "ab") as out:
        proc: subprocess.Popen[bytes] = subprocess.Popen(  # type: ignore[call-overload]
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, env=env, cwd=cwd,
            preexec_fn=_child_setup(pdeathsig, subreaper), **kwargs)
    return proc


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def descendants(pid: int) -> list[int]:
    """Every live process below pid, found through /proc parent links."""
    parents = {int(p.name): _parent_of(int(p.name)) for p in Path("/proc").iterdir()
               if p.name.isdigit()}
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = [c for c, parent in parents.items() if parent == todo[-1]]
        todo.pop()
        out += kids
        todo += kids
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def stop(proc: subprocess.Popen[bytes], sig: int, deadline: float = 15.0) -> None:
    """Stop a server by its PID, and every process below it; SIGKILL after the deadline."""
    if proc.poll() is not None:
        return
    below = descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, sig)
    try:
        proc.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        below = sorted(set(below) | set(descendants(proc.pid)))
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    for pid in below:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_until(check: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: Path,
               timeout: float = 60.0) -> None:
    """Poll until the server answers; fail at once, with its log, if it exits."""
    end = time.monotonic() + timeout
    while not check():
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not ready after {timeout:.0f}s")
        time.sleep(0.02)


# --------------------------------------------------------------------------- PostgreSQL


def postgres_bindir() -> Path | None:
    """Debian keeps the server's programs off PATH, in /usr/lib/postgresql/MAJOR/bin."""
    env = os.environ.get("ABIBENCH_PG_BINDIR")
    if env:
        return Path(env)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                   else 0)
    return found[-1].parent if found else None


@dataclass
class PgCluster:
    host: str
    port: int
    user: str
    password: str = field(repr=False)
    socket_dir: Path
    log: Path
    argv: list[str] = field(repr=False)
    env: dict[str, str] = field(repr=False)
    account: Account = field(repr=False)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    databases: int = 0

    def url(self, dbname: str = "abibench", password: bool = True) -> str:
        """The URL of a database; with its password (pass it on, never print it) or without."""
        secret = f":{quote(self.password, safe='')}" if password else ""
        return f"postgresql://{self.user}{secret}@{self.host}:{self.port}/{dbname}"

    def start(self) -> None:
        """Start postgres on the existing data directory (the same port)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        self.proc = spawn(self.argv, self.log, signal.SIGINT, self.account, self.env,
                          cwd=self.socket_dir.parent)
        wait_until(self._answers, "postgres", self.proc, self.log)

    def stop(self) -> None:
        """Fast shutdown (SIGINT) by PID; the data stays for start()."""
        if self.proc is not None:
            stop(self.proc, signal.SIGINT)
            self.proc = None

    def _answers(self) -> bool:
        try:
            with self.admin():
                return True
        except psycopg.OperationalError:
            return False

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        """The superuser over the private socket (its directory is mode 0700)."""
        return psycopg.connect(host=str(self.socket_dir), port=self.port, user="postgres",
                               dbname="postgres", autocommit=True, connect_timeout=2)

    def new_database(self, prefix: str = "t") -> str:
        """A fresh empty database the test user owns; returns its name."""
        self.databases += 1
        name = f"{prefix}{self.databases}_{secrets.token_hex(3)}"
        with self.admin() as admin:
            admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(self.user)))
        return name

    def write_pgpass(self, path: Path) -> Path:
        """A libpq password file (mode 0600, else libpq ignores it) for every database."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{self.host}:{self.port}:*:{self.user}:{self.password}\n")
        return path


@contextlib.contextmanager
def pg_cluster(settings: Mapping[str, str] | None = None) -> Iterator[PgCluster]:
    """initdb in a temp dir, postgres on 127.0.0.1 and a free port, a login role with a random
    password; always stopped by PID and removed."""
    bindir = postgres_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: bash setup.sh installs it")
    account = Account.for_postgres()
    tmp = owned_tempdir("abibench-pg-")
    cluster: PgCluster | None = None
    try:
        with sigterm_raises():
            os.chmod(tmp, 0o755)
            os.chown(tmp, account.uid, account.gid)
            sock = tmp / "sock"
            sock.mkdir(mode=0o700)
            os.chown(sock, account.uid, account.gid)
            env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}
            run([str(bindir / "initdb"), "-D", str(tmp / "data"), "-U", "postgres", "-E", "UTF8",
                 "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"],
                account, env, cwd=tmp)
            port = free_port("127.0.0.1")
            options = {"listen_addresses": "127.0.0.1", "unix_socket_directories": str(sock),
                       "max_connections": "60", "shared_buffers": "32MB",
                       "logging_collector": "off", "lc_messages": "C", **(settings or {})}
            argv = [str(bindir / "postgres"), "-D", str(tmp / "data"), "-p", str(port)]
            for key, value in options.items():
                argv += ["-c", f"{key}={value}"]
            log = tmp / "postgres.log"
            log.touch()
            os.chown(log, account.uid, account.gid)
            cluster = PgCluster("127.0.0.1", port, "abibench", secrets.token_urlsafe(18), sock,
                                log, argv, env, account)
            cluster.start()
            with cluster.admin() as admin:
                admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(cluster.user), sql.Literal(cluster.password)))
                admin.execute(sql.SQL("CREATE DATABASE abibench OWNER {}").format(
                    sql.Identifier(cluster.user)))
            yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- sshd hosts

SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it (systemd makes it)


@dataclass
class SshHost:
    name: str
    address: str
    port: int
    config: Path
    log: Path
    key: Path | None = None  # the client key it must accept: start() logs in with it
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        """Start sshd and log in with the test key once: a host that exits, does not answer or
        refuses the key raises RuntimeError with sshd's own log lines (never a silent skip)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        # -D: in the foreground (our child, our PID); -e: log to stderr, into the log file
        self.proc = spawn([SSHD, "-D", "-e", "-f", str(self.config)], self.log, signal.SIGTERM,
                          subreaper=True)
        wait_until(lambda: _banner(self.address, self.port), f"sshd {self.name}", self.proc,
                   self.log, timeout=20)
        if self.key is not None:
            self._log_in(self.key)

    def _log_in(self, key: Path) -> None:
        seen = self.log.stat().st_size
        done = subprocess.run(["ssh", *ssh_options(key), "-p", str(self.port),
                               f"root@{self.address}", "true"], capture_output=True, text=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            with self.log.open("rb") as f:
                f.seek(seen)
                said = f.read().decode(errors="replace")
            # Without the lines of the readiness probe's connection (it only read the banner).
            lines = [ln for ln in said.splitlines()
                     if not ln.startswith(("Connection ", "kex_exchange_identification"))]
            raise RuntimeError(f"sshd {self.name} ({self.address}:{self.port}) refused the test "
                               f"key: ssh said {done.stderr.strip()!r}; sshd said "
                               f"{' | '.join(lines)[-1500:]!r} (log: {self.log})")

    def stop(self) -> None:
        """Like a machine switched off: the listener, its sessions and their commands."""
        if self.proc is not None:
            stop(self.proc, signal.SIGTERM, deadline=5)
            self.proc = None


def ssh_options(key: Path) -> list[str]:
    """The ssh client's options for a test host: only this key, no user configuration, no
    known-hosts file (each host key is new)."""
    # As a configuration line, quoted, since ssh expands %-tokens in an identity file's path
    # (a literal % is written %%), and -i would look for the file before that expansion.
    identity = _quoted(str(key).replace("%", "%%"))
    return ["-F", "/dev/null", "-o", f"IdentityFile {identity}", "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10"]


@dataclass
class SshFleet:
    root: Path
    key: Path  # the client key generated for the tests: the only one the hosts accept
    hosts: dict[str, SshHost]

    def env(self) -> dict[str, str]:
        """What tests/fleet/inventory.ini reads: each host's port, the key."""
        out = {"ABIBENCH_TEST_SSH_KEY": str(self.key)}
        for name, h in self.hosts.items():
            out[f"ABIBENCH_TEST_PORT_{name}"] = str(h.port)
        return out


def _banner(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _quoted(value: str) -> str:
    """A value for sshd_config, whatever its characters (a temporary directory may have spaces,
    quotes or backslashes): double-quoted, as sshd's own argument splitting reads it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sshd_config(h: SshHost, host_key: Path, public_key: str) -> str:
    # The accepted key is given inline, printed by echo (AuthorizedKeysCommand), not read from
    # an AuthorizedKeysFile: with StrictModes, sshd refuses such a file unless every directory
    # up to / belongs to root and no one else may write to it, and /tmp (1777), a pytest
    # directory or any TMPDIR can break that. No file, no path rule: the hosts work from any
    # temporary directory. The key is base64 and words: nothing for sshd to expand or split.
    if not re.fullmatch(r"[\w+/=@.:-]+( [\w+/=@.:-]+)*", public_key):
        raise ValueError(f"unexpected public key text: {public_key!r}")
    return "\n".join([
        f"ListenAddress {h.address}:{h.port}", "AddressFamily inet",
        f"HostKey {_quoted(str(host_key))}", "PidFile none", "AuthorizedKeysFile none",
        f"AuthorizedKeysCommand /bin/echo {public_key.strip()}", "AuthorizedKeysCommandUser root",
        "AuthenticationMethods publickey", "PubkeyAuthentication yes",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password", "AllowUsers root", "UsePAM no", "StrictModes yes",
        "Subsystem sftp internal-sftp", "MaxStartups 50:30:100", "UseDNS no", "PrintMotd no",
        "X11Forwarding no", "AllowTcpForwarding no", "LogLevel VERBOSE", *_session_env(), ""])


def optional_packages(setup_sh: Path = SETUP_SH) -> list[str]:
    """The packages setup.sh only tries to install (OPTIONAL_PKGS), on any architecture."""
    text = setup_sh.read_text()
    return sorted({p for group in re.findall(r"OPTIONAL_PKGS=\(([^)]*)\)", text)
                   for p in group.split() if re.fullmatch(r"[a-z0-9][a-z0-9+.:-]+", p)})


def _session_env() -> list[str]:
    # The hosts are this machine: their sessions get the test run's apt configuration
    # (tests/aptcache.py: the system's, with a package cache), so each host's setup.sh asks apt
    # the same questions in 0.03 CPU s instead of re-reading four architectures' lists (about 3
    # s a call, every fleet test, every host).
    # (One SetEnv line: sshd takes the first of the keyword and ignores the others.)
    out = []
    apt = os.environ.get("APT_CONFIG")
    if apt:
        out.append(_quoted("APT_CONFIG=" + apt))
    # Nor do they try setup.sh's optional packages again: the gate's own setup.sh has just tried
    # them on this very machine, and one that cannot be installed here (libstd-rust-dev:i386
    # where the mirror's i386 index lags) cost every host's setup.sh an apt-get install, 3.8 CPU
    # s, holding dpkg's lock beside the other workers' tests.
    skip = optional_packages()
    if skip:
        out.append(_quoted("ABIBENCH_SETUP_SKIP=" + " ".join(skip)))
    return ["SetEnv " + " ".join(out)] if out else []


@contextlib.contextmanager
def sshd_hosts(addresses: Mapping[str, str], parent: Path | None = None) -> Iterator[SshFleet]:
    """One sshd per (name -> 127.0.0.x), each with its own host key, accepting only a client
    key generated here, each logged into once before this yields; in a new directory of
    ``parent`` (default: this process's own, tests/owned.py); always stopped by PID and removed."""
    if os.getuid() != 0:
        raise PermissionError("sshd hosts need root (privilege separation, root login)")
    tmp = Path(tempfile.mkdtemp(prefix="abibench-sshd-", dir=parent)) if parent else \
        owned_tempdir("abibench-sshd-")
    fleet = SshFleet(tmp, tmp / "client_ed25519", {})
    try:
        with sigterm_raises():
            PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "abibench-test",
                 "-f", str(fleet.key)])
            public_key = fleet.key.with_suffix(".pub").read_text().strip()
            for name, address in addresses.items():
                if not address.startswith("127."):
                    raise ValueError(f"{address}: test hosts listen on loopback only")
                hdir = tmp / name
                hdir.mkdir()
                host_key = hdir / "ssh_host_ed25519_key"
                run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)])
                h = SshHost(name, address, free_port(address), hdir / "sshd_config",
                            hdir / "sshd.log", fleet.key)
                h.config.write_text(_sshd_config(h, host_key, public_key))
                run([SSHD, "-t", "-f", str(h.config)])
                fleet.hosts[name] = h
            for h in fleet.hosts.values():
                h.start()
            yield fleet
    finally:
        for h in fleet.hosts.values():
            h.stop()
        shutil.rmtree(tmp, ignore_errors=True)
