"""The program measured is the program built, for every sample.

A workload's targets do not run their programs where they were built (the build cache, a
--binary's directory): at the workload's start each program file is copied into the run's own
directory (workspace.py owns it, only this user can enter it), made read-only, and what the
copy is, is recorded: its device, inode, size, mode, mtime and ctime (`Identity`). Nothing else
can replace that copy by accident; a cache entry rebuilt, touched or swapped by another process
is simply not what runs.

What could still change it (a program that, running as root, writes over its own file; an
attacker) is caught by `ProgramGuard.vouch`, asked after every sample: any difference in the
identity (a rename changes the inode, a write the size or mtime, a chmod, touch or a rename
back the ctime) means the sample may have measured another program, so it fails with one line
saying between which samples the program changed. That check is a few stat calls; the full
digest (Placement.verify) is still compared before the first sample and after the last.

A program run inside a Debian sysroot runs where it was unpacked (its own loader and data are
found at absolute paths there): it is not copied, but its identity is recorded and vouched for
the same way, by the same guard.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..records import Artifact

READ_ONLY_FILE = 0o555
READ_ONLY_DIR = 0o555


@dataclass(frozen=True)
class Identity:
    """What a file is, cheaply: equal identities mean no write, rename or chmod happened
    between the two looks (each of those changes the ctime, which no user can set)."""

    dev: int
    ino: int
    size: int
    mode: int
    mtime_ns: int
    ctime_ns: int

    @staticmethod
    def of(path: Path) -> Identity:
        # lstat: a link put where the program was is a change, not a way to another file.
        st = os.lstat(path)
        return Identity(st.st_dev, st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns,
                        st.st_ctime_ns)

    def differences(self, now: Identity) -> list[str]:
        """What differs from `now`, in words, most telling first."""
        out = []
        if not stat.S_ISREG(now.mode):
            out.append("it is no longer a regular file")
        if (self.dev, self.ino) != (now.dev, now.ino):
            out.append("it was replaced by another file")
        if self.size != now.size:
            out.append(f"its size went from {self.size} to {now.size} bytes")
        if self.mtime_ns != now.mtime_ns:
            out.append("it was written or touched")
        if self.mode != now.mode:
            out.append("its mode changed")
        if not out and self.ctime_ns != now.ctime_ns:
            out.append("it was renamed, linked or had its metadata changed")
        return out


def _origin_relative(art: Artifact) -> bool:
    """Whether a program file of the artifact loads libraries relative to its own directory
    (what `abibench inspect` found: Artifact.inspection)."""
    for name in art.files:
        info = (art.inspection or {}).get(name)
        if not isinstance(info, dict):
            continue
        rpath, runpath = info.get("rpath"), info.get("runpath")
        paths = [*(rpath if isinstance(rpath, list) else []),
                 *(runpath if isinstance(runpath, list) else [])]
        if any("ORIGIN" in str(p) for p in paths):
            return True
    return False


def pin_artifact(art: Artifact, where: Path) -> Artifact:
    """The artifact as it runs for this workload: its program files copied into `where` (a new
    directory inside the run's own one), read-only; its data files (scripts, scenes) linked
    beside them, as data they are not the program measured. A file missing from the build is
    left missing, for Placement.verify to say so.

    A program that finds its libraries relative to itself ($ORIGIN in its RPATH or RUNPATH)
    would not find them from a copy: such an artifact runs where it is, and only the guard's
    check after every sample stands between it and a swap."""
    if _origin_relative(art):
        return art
    where.mkdir(mode=0o700)
    src = Path(art.bin_dir)
    for name in art.files:
        dest = where / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            # copyfile, not copy2: the copy's own times are what the guard records.
            shutil.copyfile(src / name, dest, follow_symlinks=False)
        except OSError:
            continue
        dest.chmod(READ_ONLY_FILE)
    for name in art.data:
        if name in art.files or not (src / name).exists():
            continue
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).symlink_to(src / name)
    # Deepest first, the directory itself last; workspace.remove_tree can still remove it.
    for d, _, _ in sorted(os.walk(where), key=lambda t: -len(t[0])):
        os.chmod(d, READ_ONLY_DIR)
    return replace(art, bin_dir=str(where))


@dataclass
class ProgramGuard:
    """The identities of a target's program files, and how many samples were vouched for."""

    files: tuple[tuple[Path, Identity | None], ...]
    vouched: int = 0  # samples of this target that ran the recorded program
    broken: str | None = field(default=None)  # set once a change was seen; it stays seen

    @staticmethod
    def record(paths: Iterable[Path]) -> ProgramGuard:
        out: list[tuple[Path, Identity | None]] = []
        for p in paths:
            try:
                out.append((p, Identity.of(p)))
            except OSError:
                out.append((p, None))  # missing: Placement.verify fails the target first
        return ProgramGuard(tuple(out))

    def _change(self) -> str | None:
        for path, was in self.files:
            if was is None:
                continue
            try:
                now = Identity.of(path)
            except OSError as exc:
                return f"{path}: it cannot be found any more ({exc.strerror})"
            diff = was.differences(now)
            if diff:
                return f"{path}: {', '.join(diff)}"
        return None

    def vouch(self) -> str | None:
        """After one sample: None when the program is still the recorded one; else why not,
        as one line naming between which of this target's samples it changed. Once changed, it
        stays changed (a program swapped back is no proof of what ran meanwhile)."""
        if self.broken is None:
            what = self._change()
            if what is None:
                self.vouched += 1
                return None
            k = self.vouched
            when = f"between samples {k} and {k + 1}" if k else "by the end of its first sample"
            self.broken = (f"the program changed since it was built, {when} of this target "
                           f"({what}): no sample from then on measured the built program, so "
                           "none of them counts; measure it again in a fresh run")
        return self.broken
