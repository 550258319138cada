"""Which toolchains a build's commands name, and each one's version by its own version command.

A build is described, and cached, by the tools it really uses: a Go program built by
`go build` is recorded as `go version go1.22 linux/amd64`, never as the C compiler abibench
would have passed as {cc}. A tool counts as used when a command names it (any word of the
command or of a shell script given to it, by its file name), and a build system counts for the
compilers it calls on its own: make, cmake, meson and ./configure call `cc`, cargo calls rustc.
Naming a tool that does not run is recorded too ("not found"): the build then fails by itself.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

VERSION_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Tool:
    version_args: tuple[str, ...] = ("--version",)
    implies: tuple[str, ...] = ()  # tools it runs by itself when a command names it


# A C or C++ compiler by its file name: gcc, g++-12, clang-16, arm-linux-gnueabihf-gcc, cc.
_C_COMPILER = re.compile(r"(?:[a-z0-9_]+(?:-[a-z0-9_]+)*-)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+)"
                         r"(?:-\d+(?:\.\d+)*)?")
C_COMPILER_TOOL = Tool()

KNOWN_TOOLS: dict[str, Tool] = {
    "go": Tool(("version",)),
    "rustc": Tool(implies=("cc",)),  # rustc links through cc
    "cargo": Tool(implies=("rustc",)),
    "make": Tool(implies=("cc",)),  # make's built-in rules call $(CC), which is cc
    "cmake": Tool(implies=("cc", "c++")),
    "meson": Tool(implies=("cc", "c++")),
    "ninja": Tool(),
    "configure": Tool(("--version",), implies=("cc",)),  # ./configure: autoconf picks cc
    "nasm": Tool(("-v",)),
    "yasm": Tool(),
    "as": Tool(),
    "ld": Tool(),
    "gfortran": Tool(),
    "gdc": Tool(),
    "zig": Tool(("version",)),
    "javac": Tool(("-version",)),
    "python3": Tool(),
    "perl": Tool(("-e", "print \"perl $^V\\n\"")),
}

# Shell punctuation and quoting between words of a script: `CC='gcc' make && ./configure`.
_WORD_SPLIT = re.compile(r"[\s;&|()<>`'\"=$,{}]+")


def tool_of(word: str) -> str | None:
    """The tool a word of a command names, by its file name, or None."""
    name = word.rsplit("/", 1)[-1]
    if name in KNOWN_TOOLS or _C_COMPILER.fullmatch(name):
        return name
    return None


def named_tools(commands: Iterable[Iterable[str]]) -> list[str]:
    """Every known tool the commands name, with the tools those run by themselves, in order."""
    found: dict[str, None] = {}

    def add(tool: str) -> None:
        if tool in found:
            return
        found[tool] = None
        for implied in KNOWN_TOOLS.get(tool.rsplit("/", 1)[-1], C_COMPILER_TOOL).implies:
            add(implied)

    for argv in commands:
        for arg in argv:
            for word in _WORD_SPLIT.split(arg):
                name = tool_of(word) if word and _may_run(word) else None
                if name is not None:
                    # A path names that very binary (a cross compiler); ./configure is the
                    # tree's own script, known by its name.
                    add(word if "/" in word and name != "configure" else name)
    return list(found)


def _may_run(word: str) -> bool:
    """Whether a word can be a command a shell runs: a bare name, an absolute path, or an
    explicit relative one (./configure, ../bin/go). "examples/meson" in a message names a
    directory, not meson."""
    return "/" not in word or word.startswith(("/", "./", "../"))


def is_c_compiler(tool: str) -> bool:
    return _C_COMPILER.fullmatch(tool.rsplit("/", 1)[-1]) is not None


@cache
def version(tool: str, path: str | None = None) -> str:
    """The first line the tool's own version command prints, or why there is none.

    `path` is the PATH it is looked up in (the build's), part of the cache so that another PATH
    is asked again."""
    name = tool.rsplit("/", 1)[-1]
    spec = KNOWN_TOOLS.get(name, C_COMPILER_TOOL)
    exe = tool if "/" in tool else shutil.which(tool, path=path)
    if exe is None:
        return f"{name}: not found"
    if name == "configure":
        return "configure (the build tree's own script)"
    try:
        proc = subprocess.run([exe, *spec.version_args], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, check=False,
                              env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{name}: does not run ({type(exc).__name__})"
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if line.strip():
            return line.strip()[:200]
    return f"{name}: printed no version (exit {proc.returncode})"


def versions(tools: Iterable[str], path: str | None = None) -> dict[str, str]:
    """{tool: version line} for each tool, in the order given."""
    return {t: version(t, path) for t in tools}


def install_roots(tools: Iterable[str], path: str | None,
                  environ: Mapping[str, str]) -> list[Path]:
    """The directories a tool outside /usr needs to run: the tree its binary is in
    (`X` for `X/bin/go`), and for a rustup proxy the rustup home with its toolchains."""
    roots: list[Path] = []
    for tool in tools:
        exe = tool if "/" in tool else shutil.which(tool, path=path)
        if exe is None:
            continue
        for p in {Path(exe).absolute(), Path(exe).resolve()}:
            if p.is_relative_to("/usr"):
                continue
            roots.append(p.parent.parent if p.parent.name == "bin" else p.parent)
            if p.name == "rustup":
                roots.append(rustup_home(environ))
    return sorted(set(roots))


def rustup_home(environ: Mapping[str, str]) -> Path:
    home = environ.get("RUSTUP_HOME")
    return Path(home) if home else Path(environ.get("HOME", "/root")) / ".rustup"


# Tools whose own cache is shared between builds: the environment variable that places it. Go's
# build cache (GOCACHE) holds its compiled standard library and runtime, so a build with a cold
# one compiles the runtime again (minutes on a loaded machine); cargo's home holds its registry.
# Both are content-addressed by the tool itself. cargo's target directory is not shared: each
# build's sources are at a new path, which cargo's fingerprints would rebuild from anyway.
SHARED_CACHES: dict[str, str] = {"go": "GOCACHE", "cargo": "CARGO_HOME"}


@cache
def go_root(exe: str) -> str | None:
    """The GOROOT a go command really runs (a wrapper script's included), or None."""
    try:
        proc = subprocess.run([exe, "env", "GOROOT"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, check=False,
                              env={**os.environ, "GOTOOLCHAIN": "local", "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    root = proc.stdout.strip()
    return root if proc.returncode == 0 and Path(root, "bin", "go").is_file() else None


def cache_identity(tool: str, line: str, path: str | None = None) -> str:
    """What a tool's shared cache is keyed by: the toolchain that really compiles. For go, its
    GOROOT and that root's own go's version line (a wrapper that prints another version line
    runs the same compiler, and Go keys its cache by the compiler's content anyway); for others,
    the resolved binary and its version line."""
    exe = tool if "/" in tool else shutil.which(tool, path=path)
    if exe is None:
        return f"{tool}\0{line}"
    if tool.rsplit("/", 1)[-1] == "go":
        root = go_root(exe)
        if root is not None:
            return f"go\0{root}\0{version(str(Path(root, 'bin', 'go')))}"
    return f"{Path(exe).resolve()}\0{line}"


def shared_caches(toolchain: Mapping[str, str], root: Path,
                  path: str | None = None) -> dict[str, Path]:
    """{environment variable: directory under root} of the caches the named tools share between
    builds: one per toolchain (cache_identity), so that another toolchain starts from an empty
    cache and builds everything itself."""
    out: dict[str, Path] = {}
    for tool, line in toolchain.items():
        name = tool.rsplit("/", 1)[-1]
        var = SHARED_CACHES.get(name)
        if var is None:
            continue
        key = hashlib.sha256(cache_identity(tool, line, path).encode()).hexdigest()[:16]
        out[var] = root / "toolcache" / f"{name}-{key}"
    return out
