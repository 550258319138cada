"""A Debian program's size counts its own source package's shared libraries (obtain/ownlibs.py):
on real sysroots of packages the suites use. flac's codec is libFLAC.so.12 (binary package
libflac12, source flac); gzip, the smallest sysroot CI uses, has none of its own."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from abibench.abi import ABIS
from abibench.analyse.sizes import size_notes, size_rows
from abibench.obtain import debian
from abibench.obtain.ownlibs import own_libraries, source_of
from abibench.obtain.sysroot import pool_dir, prepare, resolve_inside
from abibench.workloads.profile import load_workloads

pytestmark = pytest.mark.needs_apt


def test_gzip_has_no_library_of_its_own(debian_cache: Path) -> None:
    for root in prepare(["gzip"], ["i386", "amd64"], debian_cache).values():
        exe = resolve_inside(root.path, "/bin/gzip")
        assert own_libraries(root, exe, debian_cache, ["gzip"]) == {}
        # it loads the C library, which is glibc's, not gzip's
        libc = next(p for p in root.pins if p.name == "libc6")
        assert source_of(pool_dir(debian_cache) / libc.filename) == "glibc"


def test_flac_counts_libflac_in_its_size_on_every_arch(debian_cache: Path) -> None:
    (wl,) = load_workloads(["deb-flac"], None, {})
    arts = debian.obtain(wl, [ABIS["i386"], ABIS["x86_64"]], debian_cache)
    for art in arts.values():
        assert list(art.libraries) == ["libFLAC.so.12"]
        lib = art.libraries["libFLAC.so.12"]
        assert (lib["file"] or 0) > (art.main_sizes()["file"] or 0)  # the codec is the bulk
    rows = size_rows([replace(a, target=f"{n}/debian") for n, a in arts.items()])
    (main,) = [r for r in rows if r.target == "i386/debian"]
    own = arts["i386"].main_sizes()["file"] or 0
    assert main.file == own + (arts["i386"].libraries["libFLAC.so.12"]["file"] or 0)
    assert main.libraries == ("libFLAC.so.12",) and not main.host_libraries
    assert main.file_larger_pct is not None  # a Debian sysroot is no host library
    notes = " ".join(size_notes(rows))
    assert ("i386/debian: its program's sizes count the shared libraries of its own source "
            "package: libFLAC.so.12") in notes
