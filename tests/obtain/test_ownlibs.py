"""A Debian program's size counts its own source package's shared libraries (obtain/ownlibs.py):
on real sysroots of packages the suites use. flac's codec is libFLAC.so.12 (binary package
libflac12, source flac); gzip, the smallest sysroot CI uses, has none of its own."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.analyse.sizes import size_notes, size_rows
from abibench.obtain import debian
from abibench.obtain.ownlibs import contents, own_libraries, source_of
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


# What a .deb says is remembered in the cache (ownlibs.facts_dir): a remembered answer is the
# answer dpkg-deb gives, and a memo that is not one (cut short, another shape, not JSON) is
# asked anew, never believed. Generated: any text or any JSON value in the memo's place but a
# list of strings (the memo's own shape: the cache is abibench's, as its sysroots are).
SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
junk = st.one_of(
    st.text(max_size=24),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                 lambda inner: st.lists(inner, max_size=3), max_leaves=6)
    .filter(lambda v: not (isinstance(v, list) and all(isinstance(x, str) for x in v)))
    .map(json.dumps))


@pytest.fixture(scope="module")
def gzip_deb(debian_cache: Path) -> tuple[Path, str | None, set[str]]:
    """gzip's .deb and what dpkg-deb says of it, asked without a memo."""
    (root,) = prepare(["gzip"], ["amd64"], debian_cache).values()
    (deb,) = [pool_dir(debian_cache) / p.filename for p in root.pins if p.name == "gzip"]
    return deb, source_of(deb), contents(deb)


def test_a_remembered_answer_is_dpkg_debs(gzip_deb: tuple[Path, str | None, set[str]],
                                          tmp_path: Path) -> None:
    deb, source, paths = gzip_deb
    assert source == "gzip" and "/bin/gzip" in paths
    assert (source_of(deb, tmp_path), contents(deb, tmp_path)) == (source, paths)  # asked
    assert len(list(tmp_path.glob(f"{deb.name}.*.json"))) == 2
    assert (source_of(deb, tmp_path), contents(deb, tmp_path)) == (source, paths)  # remembered
    assert not list(tmp_path.glob(".facts-*"))  # nothing half-written left


@settings(max_examples=5 * SCALE, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=junk)
def test_a_bad_memo_is_asked_anew(gzip_deb: tuple[Path, str | None, set[str]],
                                  tmp_path_factory: pytest.TempPathFactory, junk: str) -> None:
    deb, source, paths = gzip_deb
    memo = tmp_path_factory.mktemp("memo")
    st_ = deb.stat()
    places = {kind: memo / f"{deb.name}.{st_.st_size}-{st_.st_mtime_ns}.{kind}.json"
              for kind in ("source", "contents")}
    for place in places.values():
        place.write_text(junk)
    assert (source_of(deb, memo), contents(deb, memo)) == (source, paths)
    # the junk was in the memo's own place: the answer replaced it there
    assert json.loads(places["source"].read_text()) == [source]
    assert set(json.loads(places["contents"].read_text())) == paths
