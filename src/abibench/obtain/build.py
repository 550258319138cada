"""Build a workload from source for one ABI, with identical flags apart from the ABI's own.

Builds are cached by (declared inputs, ABI, flags, toolchain versions, recipe): a second run of
the same workload on the same host rebuilds nothing, and says so. What the key leaves out the
build cannot read: every build command runs in obtain/buildbox.py's sandbox, which sees only the
declared inputs; the toolchains are the ones its commands name (obtain/toolchain.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path

from ..abi import Abi, check_artifact
from ..elf import section_sizes
from ..errors import AbibenchError, BuildError, HostError
from ..hashing import sha256_file
from ..ids import file_name
from ..locks import exclusive, made_once
from ..paths import MICRO_DIR
from ..records import Artifact, JSONDict
from ..workloads.confine import inside
from ..workloads.profile import Workload, resolve_source_files, substitute
from ..workspace import owned_dir
from . import buildbox, buildlog, debsource
from .libraries import inspect_artifacts
from .toolchain import install_roots, named_tools, rustup_home, shared_caches, tool_of, versions

DEFAULT_CFLAGS = ("-O2",)
RECIPE_VERSION = "3"  # bump when the way we build changes, so old cache entries are not reused


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


# What gcc itself takes for C++ (its -x c++ suffixes, less the rare .c++ and .cp).
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".C")


def compiler_of(wl: Workload, cc: str) -> str:
    """The compiler driver that compiles and links `[source] files`: the C++ one beside `cc`
    when any file is C++ (g++ links libstdc++; gcc would not), else `cc`."""
    if any(f.endswith(CXX_SUFFIXES) for f in wl.source.files):
        return cxx_for(cc)
    return cc


@dataclass(frozen=True)
class Recipe:
    """Everything one build of (workload, ABI) is made of, known before it runs."""

    inputs: tuple[buildbox.Declared, ...]  # what the profile declares (bound into the sandbox)
    toolchain: dict[str, str]  # every tool the commands name: its own version line
    passes_flags: bool  # whether the ABI flag and --cflags reach a compiler ({cflags}, or files)
    box: buildbox.Box  # where it runs; staging is a placeholder until the build makes it


def _values(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...], staging: Path,
            extras: dict[str, debsource.SourceTree]) -> dict[str, str]:
    return {"cc": cc, "cxx": cxx_for(cc), "cflags": " ".join((*abi.cflags, *cflags)),
            "out": str(staging / "bin"), "abi": abi.name, "micro": str(MICRO_DIR),
            "profile_dir": str(buildbox.profile_dir_of(wl)), "src": str(staging / "src"),
            "host_triplet": abi.autoconf_host, "jobs": str(os.cpu_count() or 1), **wl.params,
            **{name: str(t.path) for name, t in extras.items()}}


def _commands(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...],
              values: dict[str, str]) -> list[list[str]]:
    if wl.source.build:
        return [[substitute(a, values) for a in wl.source.build]]
    files = [str(p) for p in resolve_source_files(wl)]
    ldflags = [substitute(a, values) for a in wl.source.ldflags]
    out = str(Path(values["out"]) / wl.source.artifacts[0])
    return [[compiler_of(wl, cc), *abi.cflags, *cflags, "-o", out, *files, *ldflags]]


def recipe_of(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...],
              extras: dict[str, debsource.SourceTree], staging: Path,
              cache_root: Path) -> Recipe:
    """What a build of (workload, ABI) reads and runs with, before it runs: the declared inputs,
    the toolchains its commands name (with their versions), its sandbox and environment."""
    inputs = tuple(buildbox.declared_inputs(wl))
    commands = _commands(wl, abi, cc, cflags, _values(wl, abi, cc, cflags, staging, extras))
    tools = [commands[0][0]] if not wl.source.build else named_tools(commands)
    env = buildbox.environment(staging, {}, buildbox.sandbox_problem() is None)
    roots = install_roots(tools, env["PATH"], os.environ)
    if any(tool_of(t) in ("rustc", "cargo") for t in tools):
        env["RUSTUP_HOME"] = str(rustup_home(os.environ))
    toolchain = versions(tools, env["PATH"])
    # Go's and cargo's own caches are shared by every build with the same toolchain: one per
    # version line, so another toolchain starts cold (and its builds' cache keys differ anyway).
    caches = shared_caches(toolchain, cache_root, env["PATH"])
    env.update({var: str(d) for var, d in caches.items()})
    box = buildbox.Box(staging, buildbox.profile_dir_of(wl),
                       readonly=(*(d.path for d in inputs), *(t.path for t in extras.values()),
                                 *roots),
                       skip=frozenset({buildbox.normal(cache_root)}), env=env,
                       sandboxed=buildbox.sandbox_problem() is None,
                       writable=tuple(sorted(caches.values())))
    passes = not wl.source.build or any("{cflags}" in a for a in wl.source.build)
    return Recipe(inputs, toolchain, passes, box)


def cache_key(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...], recipe: Recipe,
              debian_version: str | None = None,
              extra_versions: dict[str, str] | None = None) -> str:
    """The build's identity: every input it can read, the toolchains it names, the recipe."""
    key: dict[str, object] = {
        "v": RECIPE_VERSION,
        "abi": abi.name,
        "abi_flags": abi.cflags,
        "cflags": cflags,
        "cc": cc,
        "toolchain": recipe.toolchain,
        "files": list(wl.source.files),
        "ldflags": wl.source.ldflags,
        "build": wl.source.build,
        "artifacts": wl.source.artifacts,
        # Only the parameters the build command uses: --set of a run-time size must not rebuild.
        "params": {k: v for k, v in wl.params.items()
                   if any(f"{{{k}}}" in a for a in (*wl.source.build, *wl.source.files,
                                                    *wl.source.ldflags))},
        # What the sandbox lets the build read of the profile's directory: names, modes, bytes.
        "inputs": buildbox.digest(recipe.inputs, recipe.box.skip),
        # A Debian source tree is identified by its pinned version; its bytes are not re-read.
        "debian": [wl.source.debian, debian_version],
        "data": wl.source.data,
        "extra": extra_versions or {},
    }
    if not recipe.box.sandboxed:
        # Unconfined, the build could read anything in the profile's directory: all of it.
        key["whole_profile_dir"] = buildbox.digest(
            [buildbox.Declared(recipe.box.profile_dir, ".")], recipe.box.skip)
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def build(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...], cache_root: Path) -> Artifact:
    """Return the artifact for (workload, ABI), building it only if the cache has no match."""
    cache_root = buildbox.normal(cache_root)  # the sandbox binds paths; commands run elsewhere
    tree = debsource.fetch(wl.source.debian, wl.source.version, cache_root) \
        if wl.source.debian else None
    extras = {name: debsource.fetch(pkg, version, cache_root)
              for name, pkg, version in wl.source.extra}
    planned = recipe_of(wl, abi, cc, cflags, extras, Path("/staging"), cache_root)
    key = cache_key(wl, abi, cc, cflags, planned, tree.version if tree else None,
                    {t.package: t.version for t in extras.values()})
    # Builds are shared wherever the recipe (the key) is the same: by the workloads built from
    # one Debian source package (gzip and gunzip) and by the instances of one [sweep].
    final = (cache_root / "builds" / file_name("workload", wl.source.debian or wl.base_id or wl.id)
             / f"{abi.name}-{key[:16]}")
    # One maker per entry (locks.py): a concurrent process that wants the same build waits for
    # this one and then finds it made, instead of making it too.
    return made_once(final, lambda: _cached(final, wl, abi),
                     lambda: _make(wl, abi, cc, cflags, tree, extras, key, final, cache_root))


def _cached(final: Path, wl: Workload, abi: Abi) -> Artifact | None:
    """The cache entry at final, when it is there and still what was built."""
    meta_path = final / "artifact.json"
    if not meta_path.is_file():
        return None
    art = Artifact.from_dict(json.loads(meta_path.read_text()))
    # A cache entry is only files on disk: the header and the bytes must still be what was
    # built, or the entry is thrown away and built again.
    if _intact(art, abi):
        return replace(art, cached=True, workload=wl.id,
                       inspection=inspect_artifacts(Path(art.bin_dir), art.files))
    shutil.rmtree(final, ignore_errors=True)
    return None


def _make(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...],
          tree: debsource.SourceTree | None, extras: dict[str, debsource.SourceTree],
          key: str, final: Path, cache_root: Path) -> Artifact:
    final.parent.mkdir(parents=True, exist_ok=True)
    # Named for its owner and removed on every exit; a later run removes it, and kills what
    # still works in it, if this one is killed (workspace.clean_stale).
    with owned_dir(f".{abi.name}", parent=final.parent) as staging:
        art = _build_in(wl, abi, cc, cflags, tree, extras, key, final, staging, cache_root)
        (staging / "artifact.json").write_text(json.dumps(art.info_dict(), indent=1))
        # Failing: another abibench process (one without the lock: an older version) finished
        # the same build first, as good as ours.
        with contextlib.suppress(OSError):
            os.rename(staging, final)
    return replace(art, inspection=inspect_artifacts(final / "bin", art.files))


def _build_in(wl: Workload, abi: Abi, cc: str, cflags: tuple[str, ...],
              tree: debsource.SourceTree | None, extras: dict[str, debsource.SourceTree],
              key: str, final: Path, staging: Path, cache_root: Path) -> Artifact:
    recipe = recipe_of(wl, abi, cc, cflags, extras, staging, cache_root)
    out = staging / "bin"
    out.mkdir()
    if not recipe.box.sandboxed:
        (staging / "tmp").mkdir()  # its HOME and TMPDIR (the sandbox has a /tmp of its own)
    log_path = staging / "build.log"
    values = _values(wl, abi, cc, cflags, staging, extras)
    commands = _commands(wl, abi, cc, cflags, values)
    if not wl.source.build and commands[0][0] != cc and shutil.which(commands[0][0]) is None:
        # The C++ driver of a C toolchain is a package of its own: say which, not "exit 1".
        raise BuildError(f"{wl.base_id or wl.id}: no C++ compiler {commands[0][0]} for "
                         f"{abi.name} (its [source] files include C++): apt-get install "
                         f"{' '.join(abi.cxx_packages(platform.machine()))}")
    cwd = staging / "src"
    if tree is not None:
        # A scratch copy: builds write into their tree, and the cached tree must stay pristine.
        shutil.copytree(tree.path, cwd, symlinks=True)
    elif wl.source.build and recipe.box.sandboxed:
        cwd.mkdir()
        buildbox.copy_into(recipe.inputs, cwd, recipe.box.skip)
    elif wl.source.build:
        # Unconfined: the whole directory, all of it hashed.
        buildbox.copy_whole(recipe.box.profile_dir, cwd, recipe.box.skip)
    else:
        cwd = staging
    t0 = time.monotonic()
    with log_path.open("w") as log, _holding(recipe.box.writable):
        for argv in commands:
            rc = buildbox.run(argv, cwd, log, recipe.box)
            if rc != 0:
                failed_log = final.parent / f"{abi.name}-{key[:16]}.failed.log"
                shutil.copy(log_path, failed_log)
                raise BuildError(failure_message(wl, abi.name, rc, log_path, failed_log,
                                                 _undeclared(wl, recipe, log_path),
                                                 _debian_rust(abi, recipe, log_path)))
    seconds = time.monotonic() - t0

    _copy_data(wl, abi, cwd, out, values)
    sizes, elf, digests = _check_artifacts(wl, abi, out, final)

    # Flags and effective target options only where a C compiler got them: a Go or Rust
    # build is not described by gcc's options.
    flags = recipe.passes_flags
    return Artifact(
        workload=wl.id, abi=abi.name, provenance="source", bin_dir=str(final / "bin"),
        files=wl.source.artifacts, cache_key=key, cached=False,
        # The compiler abibench passed when the recipe used it, else the tools it named.
        compiler=commands[0][0] if not wl.source.build else ", ".join(recipe.toolchain),
        compiler_version="; ".join(recipe.toolchain.values()),
        cflags=cflags if flags else (), abi_flags=abi.cflags if flags else (),
        commands=tuple(_display(c, staging, final) for c in commands),
        effective=effective_target_flags(cc, (*abi.cflags, *cflags)) if flags else {},
        build_seconds=round(seconds, 3), sizes=sizes, elf=elf, log=str(final / "build.log"),
        source_package=tree.package if tree else None,
        source_version=tree.version if tree else None,
        data=tuple(Path(n).name for n in wl.source.data),
        extra_sources={t.package: t.version for t in extras.values()} or None,
        build_options=_buildinfo(out / "buildinfo.txt"),
        digests=digests,
        toolchain=recipe.toolchain,
        isolation=recipe.box.isolation,
    )


@contextlib.contextmanager
def _holding(caches: tuple[Path, ...]) -> Iterator[None]:
    """Each shared toolchain cache made and locked (locks.py) while a build writes it: one build
    at a time per cache, the rest wait. Taken in sorted order, always inside the build entry's
    own lock and never the other way round, so no two builds wait for each other."""
    with contextlib.ExitStack() as held:
        for d in sorted(caches):
            d.mkdir(parents=True, exist_ok=True)
            held.enter_context(exclusive(d))
        yield


def _copy_data(wl: Workload, abi: Abi, cwd: Path, out: Path, values: dict[str, str]) -> None:
    """[source] data: files the build made that the program reads, beside its binaries."""
    for name in wl.source.data:
        src_file = cwd / substitute(name, values)
        if not src_file.exists() or not inside(src_file, cwd):
            why = "not found" if not src_file.exists() else "outside the build tree"
            raise BuildError(f"{wl.id}: data file '{name}' {why} after the build for "
                             f"{abi.name}: fix [source] data in {wl.path}")
        dest = out / Path(name).name
        if src_file.is_dir():
            shutil.copytree(src_file, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(src_file, dest)


def _check_artifacts(wl: Workload, abi: Abi, out: Path, final: Path,
                     ) -> tuple[dict[str, dict[str, int | None]], dict[str, JSONDict],
                                dict[str, str]]:
    """Every artifact the build must produce: a regular file in {out}, an ELF file of
    the ABI; its sizes, ELF identity and digest."""
    sizes: dict[str, dict[str, int | None]] = {}
    elf: dict[str, JSONDict] = {}
    digests: dict[str, str] = {}
    for name in wl.source.artifacts:
        path = out / name
        if not path.is_file() or path.is_symlink() or not inside(path, out):
            why = ("is a link, not the built file" if path.is_symlink() else
                   "is outside the output directory" if path.exists() else "was not produced")
            raise BuildError(f"{wl.id}: artifact '{name}' of the {abi.name} build {why}: fix "
                             f"[source] artifacts or the build command in {wl.path}")
        info = check_artifact(path, abi)
        elf[name] = asdict(info) | {"path": str(final / "bin" / name)}
        sizes[name] = asdict(section_sizes(path))
        digests[name] = sha256_file(path)
    return sizes, elf, digests


def failure_message(wl: Workload, abi: str, rc: int, log_path: Path, kept: Path,
                    undeclared: str = "", no_rustup: str = "") -> str:
    """One line: which build failed, why in its log's own words, and where the whole log is.

    Named for the profile (a sweep's instances share their build), so it is said once."""
    why = " | ".join(buildlog.cause_of(log_path))
    if no_rustup:
        # rustc's own fix names rustup, which this host does not use; first, as the line is
        # bounded where it is printed
        why = f"{no_rustup} | {why}"
    return (f"{wl.base_id or wl.id}: build for {abi} failed (exit {rc})"
            f"{undeclared}{': ' + why if why else ''}; log: {kept}")


def _debian_rust(abi: Abi, recipe: Recipe, log_path: Path) -> str:
    """The fix for a missing Rust standard library when the rustc that ran is no rustup proxy
    (Debian's): its targets' libraries are Debian packages, one per architecture."""
    if "rustc" not in recipe.toolchain or shutil.which("rustup", path=recipe.box.env["PATH"]):
        return ""
    try:
        if b"can't find crate for `std`" not in log_path.read_bytes()[-buildlog.TAIL_BYTES:]:
            return ""
    except OSError:
        return ""
    return (f"this rustc is not rustup's: apt-get install libstd-rust-dev:{abi.debian_arch} "
            "(Debian's standard library for that target)")


def _undeclared(wl: Workload, recipe: Recipe, log_path: Path) -> str:
    """The files beside the profile a failed sandboxed build's log names but the profile does
    not declare: the likely reason it failed."""
    if not recipe.box.sandboxed:
        return ""
    try:
        text = log_path.read_bytes()[-65536:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    names = buildbox.named_in(text, buildbox.undeclared_files(recipe.box.profile_dir, recipe.inputs,
                                                              recipe.box.skip))
    if not names:
        return ""
    return (f": no such file in the build's sandbox: {', '.join(names[:5])}; declare it in "
            f"[source] files of {wl.path}")


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
