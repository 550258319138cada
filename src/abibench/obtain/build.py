"""Build a workload from source for one ABI, with identical flags apart from the ABI's own.

Builds are cached by (source digest, ABI, flags, compiler version, recipe): a second run of the
same workload on the same host rebuilds nothing, and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any

from ..abi import Abi, check_artifact
from ..elf import section_sizes
from ..errors import AbibenchError, BuildError, HostError
from ..hashing import sha256_file
from ..ids import file_name
from ..paths import MICRO_DIR
from ..records import Artifact, JSONDict
from ..workloads.confine import inside
from ..workloads.profile import Workload, resolve_source_files, substitute
from ..workspace import prefix
from . import debsource
from .libraries import inspect_artifacts

DEFAULT_CFLAGS = ("-O2",)
RECIPE_VERSION = "2"  # bump when the way we build changes, so old cache entries are not reused


@cache
def compiler_version(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise HostError(f"compiler {cc} does not run ({exc}): apt-get install build-essential") \
            from None
    return out.stdout.splitlines()[0].strip()


_EFFECTIVE_KEYS = ("-march=", "-mtune=", "-mfpmath=", "-msse2", "-mavx", "-mavx2", "-m80387")


@cache
def effective_target_flags(cc: str, flags: tuple[str, ...]) -> dict[str, str]:
    """What -Q --help=target says for the options that decide code generation across ABIs."""
    proc = subprocess.run([cc, *flags, "-Q", "--help=target"], capture_output=True, text=True,
                          check=False)
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        opt, val = parts[0], parts[-1]
        for key in _EFFECTIVE_KEYS:
            if opt == key:
                found[opt.rstrip("=")] = val.strip("[]")
    return found


def cxx_for(cc: str) -> str:
    """The C++ compiler beside a C compiler: arm-linux-gnueabihf-gcc -> arm-linux-gnueabihf-g++."""
    path = Path(cc)
    for c, cxx in (("gcc", "g++"), ("clang", "clang++"), ("cc", "c++")):
        if path.name.endswith(c):
            return str(path.with_name(path.name[: -len(c)] + cxx))
    return "g++"


def _digest_sources(paths: list[Path], root: Path | None) -> str:
    h = hashlib.sha256()
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.is_file()))
        else:
            files.append(p)
    for f in files:
        name = str(f.relative_to(root)) if root and f.is_relative_to(root) else f.name
        h.update(name.encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def cache_key(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...],
              debian_version: str | None = None,
              extra_versions: dict[str, str] | None = None) -> str:
    if wl.source.debian:
        # The tree is the Debian package at its pinned version (below) and only it is copied
        # into the build; the recipe is the build command. Other profiles beside this one
        # must not invalidate a build that takes many minutes.
        sources: list[Path] = []
        root: Path | None = None
    elif wl.source.build:
        # The profile's own directory is part of the recipe (scripts, patches it may use).
        sources = [wl.path.parent]
        root = wl.path.parent
    else:
        sources = resolve_source_files(wl)
        # Headers beside the sources are included by them: a change must rebuild too.
        sources += sorted({h for d in {p.parent for p in sources} for h in d.glob("*.h")})
        root = None
    recipe = {
        "v": RECIPE_VERSION,
        "abi": abi.name,
        "abi_flags": abi.cflags,
        "cflags": cflags,
        "cc": cc,
        "cc_version": compiler_version(cc),
        "files": [Path(f).name for f in wl.source.files],
        "ldflags": wl.source.ldflags,
        "build": wl.source.build,
        "artifacts": wl.source.artifacts,
        # Only the parameters the build command uses: --set of a run-time size must not rebuild.
        "params": {k: v for k, v in wl.params.items()
                   if any(f"{{{k}}}" in a for a in wl.source.build)},
        "sources": _digest_sources(sources, root),
        # A Debian source tree is identified by its pinned version; its bytes are not re-read.
        "debian": [wl.source.debian, debian_version],
        "data": wl.source.data,
    }
    if extra_versions:
        recipe["extra"] = extra_versions
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def _run_logged(argv: list[str], cwd: Path, log: Any, env: dict[str, str]) -> int:
    log.write(f"$ {shlex.join(argv)}\n")
    log.flush()
    proc = subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env,
                          check=False)
    return proc.returncode


def build(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...], cache_root: Path) -> Artifact:
    """Return the artifact for (workload, ABI), building it only if the cache has no match."""
    tree = debsource.fetch(wl.source.debian, wl.source.version, cache_root) \
        if wl.source.debian else None
    extras = {name: debsource.fetch(pkg, version, cache_root)
              for name, pkg, version in wl.source.extra}
    key = cache_key(wl, abi, cc, cflags, tree.version if tree else None,
                    {t.package: t.version for t in extras.values()})
    # Builds are shared wherever the recipe (the key) is the same: by the workloads built from
    # one Debian source package (gzip and gunzip) and by the instances of one [sweep].
    final = (cache_root / "builds" / file_name("workload", wl.source.debian or wl.base_id or wl.id)
             / f"{abi.name}-{key[:16]}")
    meta_path = final / "artifact.json"
    if meta_path.is_file():
        art = Artifact.from_dict(json.loads(meta_path.read_text()))
        # A cache entry is only files on disk: the header and the bytes must still be what was
        # built, or the entry is thrown away and built again.
        if _intact(art, abi):
            return replace(art, cached=True, workload=wl.id,
                           inspection=inspect_artifacts(Path(art.bin_dir), art.files))
        shutil.rmtree(final, ignore_errors=True)

    final.parent.mkdir(parents=True, exist_ok=True)
    # Named for its owner: a later run removes it if this one is killed (workspace.clean_stale).
    staging = Path(tempfile.mkdtemp(prefix=prefix(f".{abi.name}"), dir=final.parent))
    out = staging / "bin"
    out.mkdir()
    log_path = staging / "build.log"
    flags = " ".join((*abi.cflags, *cflags))
    values = {"cc": cc, "cxx": cxx_for(cc), "cflags": flags, "out": str(out), "abi": abi.name,
              "micro": str(MICRO_DIR), "profile_dir": str(wl.path.parent),
              "src": str(staging / "src"), "host_triplet": abi.autoconf_host,
              "jobs": str(os.cpu_count() or 1), **wl.params,
              **{name: str(t.path) for name, t in extras.items()}}
    commands: list[list[str]] = []
    if tree is not None:
        # A scratch copy: builds write into their tree, and the cached tree must stay pristine.
        shutil.copytree(tree.path, staging / "src", symlinks=True)
        commands.append([substitute(a, values) for a in wl.source.build])
        cwd = staging / "src"
    elif wl.source.build:
        shutil.copytree(wl.path.parent, staging / "src")
        commands.append([substitute(a, values) for a in wl.source.build])
        cwd = staging / "src"
    else:
        files = [str(p) for p in resolve_source_files(wl)]
        ldflags = [substitute(a, values) for a in wl.source.ldflags]
        commands.append([cc, *abi.cflags, *cflags, "-o", str(out / wl.source.artifacts[0]),
                         *files, *ldflags])
        cwd = staging
    env = {**os.environ, "LC_ALL": "C"}
    t0 = time.monotonic()
    with log_path.open("w") as log:
        for argv in commands:
            rc = _run_logged(argv, cwd, log, env)
            if rc != 0:
                failed_log = final.parent / f"{abi.name}-{key[:16]}.failed.log"
                shutil.copy(log_path, failed_log)
                shutil.rmtree(staging, ignore_errors=True)
                raise BuildError(f"{wl.id}: build for {abi.name} failed (exit {rc}); log: "
                                 f"{failed_log}")
    seconds = time.monotonic() - t0

    for name in wl.source.data:
        src_file = cwd / substitute(name, values)
        if not src_file.exists() or not inside(src_file, cwd):
            shutil.rmtree(staging, ignore_errors=True)
            why = "not found" if not src_file.exists() else "outside the build tree"
            raise BuildError(f"{wl.id}: data file '{name}' {why} after the build for "
                             f"{abi.name}: fix [source] data in {wl.path}")
        dest = out / Path(name).name
        if src_file.is_dir():
            shutil.copytree(src_file, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(src_file, dest)
    sizes: dict[str, dict[str, int | None]] = {}
    elf: dict[str, JSONDict] = {}
    digests: dict[str, str] = {}
    for name in wl.source.artifacts:
        path = out / name
        if not path.is_file() or path.is_symlink() or not inside(path, out):
            why = ("is a link, not the built file" if path.is_symlink() else
                   "is outside the output directory" if path.exists() else "was not produced")
            shutil.rmtree(staging, ignore_errors=True)
            raise BuildError(f"{wl.id}: artifact '{name}' of the {abi.name} build {why}: fix "
                             f"[source] artifacts or the build command in {wl.path}")
        try:
            info = check_artifact(path, abi)
        except AbibenchError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        elf[name] = asdict(info) | {"path": str(final / "bin" / name)}
        sizes[name] = asdict(section_sizes(path))
        digests[name] = sha256_file(path)

    art = Artifact(
        workload=wl.id, abi=abi.name, provenance="source", bin_dir=str(final / "bin"),
        files=wl.source.artifacts, cache_key=key, cached=False, compiler=cc,
        compiler_version=compiler_version(cc), cflags=cflags, abi_flags=abi.cflags,
        commands=tuple(_display(c, staging, final) for c in commands),
        effective=effective_target_flags(cc, (*abi.cflags, *cflags)),
        build_seconds=round(seconds, 3), sizes=sizes, elf=elf, log=str(final / "build.log"),
        source_package=tree.package if tree else None,
        source_version=tree.version if tree else None,
        data=tuple(Path(n).name for n in wl.source.data),
        extra_sources={t.package: t.version for t in extras.values()} or None,
        build_options=_buildinfo(out / "buildinfo.txt"),
        digests=digests,
    )
    (staging / "artifact.json").write_text(json.dumps(art.info_dict(), indent=1))
    try:
        os.rename(staging, final)
    except OSError:
        # Another abibench process finished the same build first; theirs is as good as ours.
        shutil.rmtree(staging, ignore_errors=True)
    return replace(art, inspection=inspect_artifacts(final / "bin", art.files))


def _intact(art: Artifact, abi: Abi) -> bool:
    """Whether a cached build's files are still those that were built, of the right ABI."""
    for f in art.files:
        path = Path(art.bin_dir) / f
        try:
            if art.digests and sha256_file(path) != art.digests.get(f):
                return False
            check_artifact(path, abi)
        except (OSError, AbibenchError):
            return False
    return True


def _buildinfo(path: Path) -> str | None:
    """The text a build left in {out}/buildinfo.txt (its own description of itself), if any."""
    try:
        return path.read_bytes()[:16384].decode("utf-8", errors="replace").strip() or None
    except OSError:
        return None


def _display(argv: list[str], staging: Path, final: Path) -> str:
    return re.sub(re.escape(str(staging)), str(final), shlex.join(argv))
