"""Shared toolchain caches (docs/reliability.md, "A build's cache key covers every input"): Go's
GOCACHE and cargo's home are one per toolchain that really compiles, generated over toolchains
(fake go roots with their own version lines, wrappers that print another line over the same
root, cargo version lines, tools that share nothing). The real Go example's rebuild under a
wrapper: tests/examples."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.obtain import buildbox
from abibench.obtain.toolchain import SHARED_CACHES, shared_caches

line_st = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.", min_size=1, max_size=12)


def _script(path: Path, body: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def _go_root(where: Path, line: str) -> str:
    """A go toolchain's root: its bin/go answers `version` and `env GOROOT` as go does."""
    return _script(where / "bin" / "go", f'if [ "$1" = env ]; then echo {where}; '
                                         f'else echo "go version {line} linux/amd64"; fi')


def _wrapper(where: Path, real: str, line: str) -> str:
    """Another go earlier on PATH: prints another version line, runs the real one."""
    return _script(where / "go", f'if [ "$1" = version ]; then echo "go version {line}"; '
                                 f'exit 0; fi\nexec {real} "$@"')


@settings(max_examples=15, deadline=None)
@given(line_st, line_st, line_st, line_st)
def test_each_toolchain_has_its_own_shared_cache_and_a_wrapper_shares_its_roots(
        a: str, b: str, fake: str, cargo: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        cache = base / "cache"
        go_a, go_b = _go_root(base / "a", a), _go_root(base / "b", b)
        wrap = _wrapper(base / "wrap", go_a, fake)

        def place(tool: str, line: str) -> dict[str, Path]:
            return shared_caches({tool: line, "gcc": "gcc 12", "rustc": "rustc 1"}, cache)

        at_a, at_b, at_wrap = place(go_a, a), place(go_b, b), place(wrap, fake)
        # one cache, Go's, under the cache directory; nothing for tools that share none
        assert set(at_a) == {"GOCACHE"} and at_a["GOCACHE"].parent == cache / "toolcache"
        # another root is another toolchain: its own cache, even with the same version line
        assert at_a != at_b
        # a wrapper printing another line runs root a's compiler: root a's cache
        assert at_wrap == at_a
        # cargo: its home, one per version line
        c1 = shared_caches({"cargo": f"cargo {cargo}"}, cache)
        c2 = shared_caches({"cargo": f"cargo {cargo}.1"}, cache)
        assert set(c1) == {"CARGO_HOME"} and c1 != c2
        assert set(SHARED_CACHES.values()) == {"GOCACHE", "CARGO_HOME"}


def test_a_shared_cache_is_bound_writable_into_the_sandbox(tmp_path: Path) -> None:
    shared = tmp_path / "toolcache" / "go-0"
    box = buildbox.Box(tmp_path / "staging", tmp_path / "profile", writable=(shared,))
    argv = box.argv(["true"], tmp_path)
    i = argv.index(str(shared))
    assert argv[i - 1] == "--bind" and argv[i + 1] == str(shared)
