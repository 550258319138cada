"""A Debian program's size counts its own source package's shared libraries (obtain/ownlibs.py):
on real sysroots of packages the suites use. flac's codec is libFLAC.so.12 (binary package
libflac12, source flac); gzip, the smallest sysroot CI uses, has none of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.analyse.sizes import size_notes, size_rows
from abibench.obtain import debian, ownlibs
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


# ------------------------------------------------------------------ what a .deb says, kept

SCALE = int(os.environ.get("ABIBENCH_TEST_SCALE", "1"))
_NAME = st.text(alphabet="abcdefgh0123456789._-", min_size=1, max_size=8).filter(
    lambda n: n not in (".", ".."))


def _build_deb(tree: Path, out: Path, files: list[str], links: dict[str, str],
               source: str | None) -> None:
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "DEBIAN").mkdir(parents=True)
    control = "Package: probe\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n" \
        "Description: t\n" + (f"Source: {source} (0.9)\n" if source else "")
    (tree / "DEBIAN" / "control").write_text(control)
    for f in files:
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        (tree / f).write_text(f)
    for link, target in links.items():
        (tree / link).parent.mkdir(parents=True, exist_ok=True)
        (tree / link).symlink_to(target)
    subprocess.run(["dpkg-deb", "-Zgzip", "-b", str(tree), str(out)], check=True,
                   capture_output=True)


@settings(max_examples=4 * SCALE, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.tuples(_NAME, _NAME), min_size=1, max_size=4, unique_by=lambda t: t[1]),
       links=st.lists(_NAME, max_size=2, unique=True), source=st.none() | _NAME.map(str.lower))
def test_a_debs_kept_facts_are_the_ones_it_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                files: list[tuple[str, str]], links: list[str],
                                                source: str | None) -> None:
    """Generated packages: what is kept beside the pool is what dpkg-deb reads from the file,
    read from the index the second time (dpkg-deb is not asked), and read again once the file
    changes."""
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    deb = work / "debs" / "probe_1_all.deb"
    deb.parent.mkdir()
    paths = [f"usr/{d}/f{n}" for d, n in files]
    link_paths = {f"usr/lib/l{n}": paths[0].rsplit("/", 1)[1] for n in links}
    link_paths = {k: v for k, v in link_paths.items() if k not in paths}
    _build_deb(work / "tree", deb, paths, link_paths, source)
    want = {f"/{p}" for p in [*paths, *link_paths]}
    assert ownlibs.contents(deb) == want
    assert ownlibs.source_of(deb) == (source or "probe")
    for fact in ("contents", "source"):
        assert ownlibs.index_file(deb, fact).is_file()
    with monkeypatch.context() as m:  # kept: no dpkg-deb this time
        m.setattr(ownlibs, "_dpkg_deb", lambda *a: pytest.fail(f"dpkg-deb {a} was run"))
        assert ownlibs.contents(deb) == want
        assert ownlibs.source_of(deb) == (source or "probe")
    # The file replaced by another package of the same name: read again, not the old facts.
    _build_deb(work / "tree", deb, [*paths, "usr/share/added"], {}, "other")
    os.utime(deb, ns=(1, deb.stat().st_mtime_ns + 1))
    assert ownlibs.contents(deb) == {f"/{p}" for p in [*paths, "usr/share/added"]}
    assert ownlibs.source_of(deb) == "other"


# A damaged, foreign or wrong-shaped index entry: tests/invariants/test_kept_answers.py, for every cache.


def test_a_programs_stripped_size_is_kept_by_its_content(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The stripped size kept for a content is the one `strip` gives; read back without
    stripping; measured again when the strip installed changes."""
    from abibench import elf
    from abibench.hashing import sha256_file

    exe = tmp_path / "true"
    shutil.copy("/usr/bin/true", exe)
    digest = sha256_file(exe)
    want = elf.section_sizes(exe)
    assert want.stripped is not None
    assert elf.section_sizes(exe, debian.kept_stripped_size(tmp_path, digest)) == want
    with monkeypatch.context() as m:
        m.setattr(debian, "stripped_size", lambda *a: pytest.fail("stripped again"))
        assert elf.section_sizes(exe, debian.kept_stripped_size(tmp_path, digest)) == want
        m.setattr(debian, "_strips", lambda machine: "another binutils")
        with pytest.raises(pytest.fail.Exception, match="stripped again"):
            elf.section_sizes(exe, debian.kept_stripped_size(tmp_path, digest))
