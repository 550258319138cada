"""Where one target's samples run: on the host, or inside a Debian sysroot, with a server or not.

The schedule asks a Placement for the argv, environment, working directory and placeholder
values of each sample; a Placement of provenance "debian" wraps the program in chroot/bwrap,
puts {work} and the inputs inside the sysroot (paths as the program sees them), and for a
[server] workload starts the target's server around every sample and reports its peak RSS.
Everything a Placement starts or creates is closed by the ExitStack it is given.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..abi import FAMILY_CPU, check_artifact
from ..errors import AbiMismatchError, UsageError
from ..hashing import sha256_file
from ..obtain.sysroot import Sysroot, debian_arch, resolve_inside
from ..paths import MICRO_DIR
from ..probe.memory import tree_accounting
from ..records import Artifact, Sample, Target
from ..workloads.confine import confined
from ..workloads.profile import Workload, substitute
from .pinned import ProgramGuard, pin_artifact
from .runtime import AbiRuntime
from .sandbox import SysrootRunner
from .servers import LOOPBACK, MariaDBDatadir, MariaDBServer, ServerError
from .steps import untimed_step
from .xserver import XServer


@dataclass
class ServerRun:
    """What a sample learns from the server it ran against."""

    port: int = 0
    peak_rss_kb: int | None = None
    tree_peak_kb: int | None = None  # [run] memory = "tree": the server's whole tree
    tree_memory: str | None = None


@dataclass
class Placement:
    wl: Workload
    target: Target
    art: Artifact
    work: Path  # on the host
    inner_work: str  # as the program sees it
    inputs: dict[str, Path]  # on the host
    inner_inputs: dict[str, str]
    runner: SysrootRunner | None = None
    datadir: MariaDBDatadir | None = None
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    runtime: AbiRuntime = field(default_factory=AbiRuntime)
    # Under an emulator: {bin} as the host's shell sees it, each program a script that runs
    # the built one under the emulator (emulated_bin), for setup steps and `sh -c` commands.
    guest_bin: Path | None = None
    # [display]: the directory (on the host) that is the X server's /tmp, and the server of
    # the sample that runs now (run/xserver.py)
    x11_dir: Path | None = None
    xserver: XServer | None = None
    # {work} as it was made, every link resolved: the root of what a sample touches there, so
    # that a program which puts a link in its place cannot lead abibench elsewhere.
    work_real: Path = field(init=False)
    # What the program files are (run/pinned.py), vouched for after every sample.
    guard: ProgramGuard = field(init=False)
    # Where the program files were built, when they run from the run's own copy (pinned.py).
    origin: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        self.work_real = self.work.resolve()
        self.guard = ProgramGuard.record(self.program_files())

    @staticmethod
    def create(wl: Workload, target: Target, art: Artifact, tmp: Path, inputs: dict[str, Path],
               stack: contextlib.ExitStack, runtime: AbiRuntime | None = None) -> Placement:
        label = target.label.replace("/", "_")
        if art.sysroot is None:
            # The program runs from the run's own read-only copy, never from the build cache
            # or a --binary's directory, which others may change (run/pinned.py).
            origin = tuple(Path(art.bin_dir) / f for f in art.files)
            art = pin_artifact(art, tmp / f"{label}.program")
            work = tmp / label
            work.mkdir(exist_ok=True)
            # An emulated program sees the host's files (qemu-user's guest root only holds
            # its C library), so its paths are the host's.
            pl = Placement(wl, target, art, work, str(work), inputs,
                           {k: str(v) for k, v in inputs.items()}, stack=stack,
                           runtime=runtime or AbiRuntime(), origin=origin)
            if pl.emulated:
                pl.guest_bin = emulated_bin(art, pl.runtime, tmp / f"{label}.emulated-bin")
            return pl
        root = Sysroot(Path(art.sysroot), debian_arch(target.abi), (), art.cache_key)
        # A browser gets PID and mount namespaces of its own (/proc, /dev/shm): run/browser.py.
        runner = SysrootRunner(root, private=wl.browser is not None)
        x11_dir = None
        if wl.display is not None:
            # The X server's private /tmp lives inside the sysroot, so that the program's own
            # namespace can bind its socket directory (and nothing else) at /tmp/.X11-unix.
            x11_dir, x11_inner = stack.enter_context(runner.scratch(f"x11-{label}"))
            runner = SysrootRunner(root, private=True, x11=x11_inner)
        work, inner = stack.enter_context(runner.scratch(f"{wl.base_id or wl.id}-{label}"))
        inner_inputs: dict[str, str] = {}
        for name, path in inputs.items():
            # The program sees only the sysroot: link (or copy) each input into its scratch.
            dest = work / f"input-{name}{''.join(path.suffixes)}"
            try:
                os.link(path, dest)
            except OSError:
                shutil.copyfile(path, dest)
            inner_inputs[name] = f"{inner}/{dest.name}"
        return Placement(wl, target, art, work, inner, inputs, inner_inputs, runner, stack=stack,
                         x11_dir=x11_dir)

    @property
    def in_sysroot(self) -> bool:
        return self.runner is not None

    @property
    def emulated(self) -> bool:
        return self.runtime.emulated and self.runner is None

    def timeout(self, seconds: float) -> float:
        """A sample's time limit: the profile's, longer under an emulator."""
        return self.runtime.timeout(seconds) if self.emulated else seconds

    def _base(self) -> dict[str, str]:
        return {"abi": self.target.abi.name, "micro": str(MICRO_DIR),
                "profile_dir": str(self.wl.path.parent), **self.wl.params,
                "host": LOOPBACK}

    @property
    def direct(self) -> bool:
        """Whether the command starts the built program itself (not a shell around it)."""
        return bool(self.wl.command) and self.wl.command[0].startswith("{bin}/")

    def values(self, server: ServerRun | None = None, *,
               direct: bool | None = None) -> dict[str, str]:
        """Placeholders for [run] command (or, with `direct` said, another command that does or
        does not start the built program itself): paths as the program sees them."""
        if self.wl.server is not None:  # the command is the host's client
            return self.host_values(server)
        if self.guest_bin is not None and not (self.direct if direct is None else direct):
            # A shell command runs on the host: its programs are the emulator's scripts.
            return self.host_values(server)
        return self._inner_values(server)

    def _inner_values(self, server: ServerRun | None = None) -> dict[str, str]:
        """Placeholders as a program the target runs sees them: in a sysroot, its own paths."""
        program = f"{self.art.bin_dir}/{self.art.files[0]}" if self.art.files else ""
        return {**self._base(), "bin": self.art.bin_dir, "work": self.inner_work,
                **self.inner_inputs, "port": str(server.port if server else 0),
                "program": program}

    def host_values(self, server: ServerRun | None = None) -> dict[str, str]:
        """Placeholders for what runs or is read on the host: setup, stdin, validated files."""
        bin_dir = self.art.bin_dir
        if self.runner is not None:
            bin_dir = str(self.runner.sysroot.host_path(self.art.bin_dir))
        elif self.guest_bin is not None:
            bin_dir = str(self.guest_bin)
        return {**self._base(), "bin": bin_dir, "work": str(self.work),
                **{k: str(v) for k, v in self.inputs.items()},
                "port": str(server.port if server else 0),
                "program": f"{bin_dir}/{self.art.files[0]}" if self.art.files else ""}

    def argv(self, argv: list[str]) -> list[str]:
        """The command as it runs: wrapped to run inside the sysroot, or under the target's
        emulator. A server workload's command is the host's client; a browser's is completed
        per sample and wrapped then (run/browser.py)."""
        if self.wl.server is not None or self.wl.browser is not None:
            return argv
        if self.runner is None:
            emu = self.runtime.emulator
            # A shell command reaches the emulator through {bin}'s scripts (guest_bin).
            return emu.wrap(argv) if emu is not None and self.direct else argv
        return self.runner.wrap(argv)

    def step_argv(self, template: tuple[str, ...],
                  server: ServerRun | None = None) -> list[str]:
        """[run] after as it runs: where the program ran (in the sysroot; under the emulator
        when it starts a built program), a host tool otherwise; a [server] workload's step
        reaches the sample's server at {host}:{port}."""
        if self.runner is not None:
            # In the sysroot, with its paths, also for a [server] workload (whose command is a
            # host client, but whose after step is the target's own client)
            return self.runner.wrap([substitute(a, self._inner_values(server)) for a in template])
        values = self.host_values(server)
        emu = self.runtime.emulator
        if emu is not None and self.emulated and template and template[0].startswith("{bin}/"):
            return emu.wrap([substitute(a, {**values, "bin": self.art.bin_dir})
                             for a in template])
        return [substitute(a, values) for a in template]

    # -- paths a sample touches, confined to their roots ---------------------------------------

    def check_work(self) -> None:
        """{work} is still the directory abibench made: a program that removed it, or put a
        link or a file in its place, fails its target before anything is touched there."""
        try:
            intact = (not self.work.is_symlink() and self.work.is_dir()
                      and self.work.resolve() == self.work_real)
        except OSError:
            intact = False
        if not intact:
            raise UsageError(f"the work directory {self.work} was removed or replaced by the "
                             "program: a program may write inside {work}, not remove it")

    def _host_path(self, template: str, values: dict[str, str], default_root: Path) -> Path:
        p = Path(substitute(template, values))
        return p if p.is_absolute() else default_root / p

    def output_files(self, server: ServerRun | None = None) -> tuple[list[Path], list[tuple[
            str, Path]]]:
        """The [validate] files and close files of a sample, inside {work} (they are deleted
        before the sample, so a stale one cannot pass for its output)."""
        self.check_work()
        values = self.host_values(server)
        files = [confined(self._host_path(f, values, self.work), (self.work_real,),
                          "[validate] file") for f in self.wl.validate_files]
        close = [(t, confined(self._host_path(t, values, self.work), (self.work_real,),
                              "[validate] close file"))
                 for t in (self.wl.close.files if self.wl.close else ())]
        return files, close

    def stdin_path(self, server: ServerRun | None = None) -> Path | None:
        """[run] stdin, inside {work}, the profile's directory, {bin} or a generated input."""
        if self.wl.stdin is None:
            return None
        values = self.host_values(server)
        roots = (self.work_real, self.wl.path.parent, Path(values["bin"]), Path(self.art.bin_dir),
                 *(p.parent for p in self.inputs.values()))
        return confined(self._host_path(self.wl.stdin, values, self.wl.path.parent), roots,
                        "[run] stdin")

    def program_files(self) -> list[Path]:
        """The artifact's files as they are on the host (in a sysroot: links followed there)."""
        if self.runner is None:
            return [Path(self.art.bin_dir) / f for f in self.art.files]
        out = []
        for f in self.art.files:
            inner = self.art.elf.get(f, {}).get("path")
            inner = inner if isinstance(inner, str) else f"{self.art.bin_dir}/{f}"
            out.append(resolve_inside(self.runner.sysroot.path, inner))
        return out

    def built_files(self) -> list[Path]:
        """The program files where they were built or unpacked (not the run's copy)."""
        return list(self.origin) if self.origin else self.program_files()

    def emulation_problem(self) -> str | None:
        """Why this target cannot run under its emulator, or None: a server or a browser
        workload runs Debian's programs in a sysroot, which abibench does not emulate."""
        if not self.emulated or (self.wl.server is None and self.wl.browser is None):
            return None
        cpu = FAMILY_CPU.get(self.target.abi.family, f"a {self.target.abi.family}")
        return ("a server or browser workload does not run under an emulator: run it on "
                f"{cpu} host")

    def verify(self) -> str | None:
        """Is what would run the very program that was built? None, or why not.

        Checked before the first sample and after the last: the digest recorded when it was
        built or unpacked, and the ELF header against the target's ABI. (Between them, every
        sample is vouched for by the cheaper identity check: vouch.)
        """
        for name, path in zip(self.art.files, self.program_files(), strict=True):
            want = self.art.digests.get(name)
            try:
                got = sha256_file(path)
            except OSError as exc:
                return f"{path} cannot be read ({exc.strerror}): it was removed or replaced"
            if want is not None and got != want:
                return (f"{path} changed since it was built (sha256 {got[:12]} instead of "
                        f"{want[:12]}): its samples would not measure the built program")
            try:
                check_artifact(path, self.target.abi)
            except AbiMismatchError as exc:
                return str(exc)
        return None

    def vouch(self, sample: Sample) -> Sample:
        """Every sample of this target, before it is stored: the program that ran must still be
        the one recorded at the start (run/pinned.py). If it is not, the sample failed, with
        the one line saying between which samples the program changed."""
        changed = self.guard.vouch()
        if changed is None or sample.status == "interrupted":
            return sample
        return replace(sample, status="failed", error=changed, check=None, metrics={})

    def env(self, base: dict[str, str], pad: str) -> dict[str, str]:
        if self.runner is None or self.wl.server is not None:
            return {**base, "ABIBENCH_PAD": pad}
        extra = {"ABIBENCH_PAD": pad}
        if self.wl.display is not None and self.xserver is not None:
            extra = {**self.wl.display.env(), "DISPLAY": self.xserver.display, **extra}
        return self.runner.env(extra)

    @contextlib.contextmanager
    def display(self) -> Iterator[XServer | None]:
        """[display] workloads: a fresh X server around one sample, stopped by its PID and its
        socket removed however the sample ends; nothing for other workloads."""
        if self.wl.display is None:
            yield None
            return
        if self.x11_dir is None:
            raise ServerError("[display] workloads run their X client from a Debian sysroot: "
                              "use --provenance debian")
        with XServer(self.x11_dir, self.wl.display.screen) as x:
            self.xserver = x
            try:
                yield x
            finally:
                self.xserver = None

    # -- servers ---------------------------------------------------------------------------

    def prepare_server(self, timeout_s: float) -> str | None:
        """Initialise the target's datadir and run [server] prepare once; the error or None."""
        spec = self.wl.server
        if spec is None:
            return None
        if self.runner is None:
            return "[server] workloads run their server from a Debian sysroot: use --provenance debian"
        try:
            self.datadir = self.stack.enter_context(
                MariaDBDatadir(self.runner, options=spec.options))
            if spec.prepare:
                with self.server() as srv:
                    return self._client(spec.prepare, srv, timeout_s, "prepare")
        except ServerError as exc:
            return str(exc)
        return None

    @contextlib.contextmanager
    def server(self) -> Iterator[ServerRun]:
        """The target's server for one sample (nothing for other workloads); stopped by PID."""
        if self.datadir is None:
            yield ServerRun()
            return
        run = ServerRun()
        tree = tree_accounting() if self.wl.memory == "tree" else None
        with MariaDBServer(self.datadir, tree=tree) as srv:
            run.port = srv.port
            yield run
            run.peak_rss_kb = srv.peak_rss_kb()
            run.tree_peak_kb, run.tree_memory = srv.tree_peak()

    def warm_server(self, run: ServerRun, timeout_s: float) -> str | None:
        spec = self.wl.server
        if spec is None or not spec.warmup:
            return None
        return self._client(spec.warmup, run, timeout_s, "warm-up")

    def _client(self, template: tuple[str, ...], run: ServerRun, timeout_s: float,
                what: str) -> str | None:
        argv = [substitute(a, self.host_values(run)) for a in template]
        return untimed_step(argv, self.work, None, timeout_s, f"server {what} step")


COUNT_DIR_ENV = "ABIBENCH_COUNT_DIR"  # set: the emulator scripts count guest instructions there


def emulated_bin(art: Artifact, runtime: AbiRuntime, where: Path) -> Path:
    """A {bin} for the host's shell: every built program a script that runs it under the
    target's emulator (with the counting plugin when ABIBENCH_COUNT_DIR is set, one count file
    per process), every other file (scripts, data) a link to the built one."""
    emu = runtime.emulator
    assert emu is not None
    where.mkdir(exist_ok=True)
    real = Path(art.bin_dir)
    for entry in sorted(real.iterdir()):
        dest = where / entry.name
        dest.unlink(missing_ok=True)
        if entry.name not in art.files:
            dest.symlink_to(entry)
            continue
        run = shlex.join(emu.wrap([str(entry)]))
        lines = ["#!/bin/sh", f"# abibench: {entry.name} ({art.abi}) under {emu.version}"]
        if runtime.plugin is not None:
            base = [emu.command, "-L", emu.root]
            if runtime.stepclock is not None:
                base += ["-E", f"LD_PRELOAD={runtime.stepclock}"]
            lines += [f'if [ -n "${COUNT_DIR_ENV}" ]; then',
                      f'  exec {shlex.join(base)} -plugin '
                      f'"{runtime.plugin.path},out=${COUNT_DIR_ENV}/count.$$" '
                      f'{shlex.quote(str(entry))} "$@"',
                      "fi"]
        lines.append(f'exec {run} "$@"')
        dest.write_text("\n".join(lines) + "\n")
        dest.chmod(0o755)
    return where
