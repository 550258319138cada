"""Debian provenance: version pinning, the closure of the pinned version, sysroots, isolation.

The resolution tests replay apt output captured on a Debian 12 host (tests/data/); the sysroot
tests use the real archive (small packages; cached in abibench's cache between runs) and are
skipped on hosts without apt or the i386 architecture.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from abibench.abi import ABIS, check_artifact
from abibench.obtain.apt import (
    PackageError,
    Relation,
    deb_filename,
    highest,
    indexed_arch,
    parse_relations,
    parse_reverse_provides,
    parse_show,
    satisfies,
)
from abibench.obtain.resolve import Pinned, resolve
from abibench.obtain.sysroot import Sysroot, prepare

DATA = Path(__file__).parents[1] / "data"


class ReplayApt:
    """apt-cache answers from captured output: the stanzas of the names asked for."""

    def __init__(self, show_text: str, showpkg_text: str = "") -> None:
        self.paras: dict[str, list[str]] = {}
        for para in show_text.split("\n\n"):
            for line in para.splitlines():
                if line.startswith("Package: "):
                    self.paras.setdefault(line.split(": ", 1)[1].strip(), []).append(para)
        self.showpkg_text = showpkg_text
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def show(self, names: Sequence[str], arches: Sequence[str]) -> str:
        self.calls.append(("show", tuple(names)))
        return "\n\n".join(p for n in names for p in self.paras.get(n, [])) + "\n"

    def showpkg(self, names: Sequence[str], arches: Sequence[str]) -> str:
        self.calls.append(("showpkg", tuple(names)))
        return self.showpkg_text


def stanza(name: str, version: str, arch: str, depends: str = "", provides: str = "") -> str:
    lines = [f"Package: {name}", f"Version: {version}", f"Architecture: {arch}",
             f"Filename: pool/main/x/{name}_{version}_{arch}.deb"]
    if depends:
        lines.append(f"Depends: {depends}")
    if provides:
        lines.append(f"Provides: {provides}")
    return "\n".join(lines)


def synthetic(*stanzas: str) -> ReplayApt:
    return ReplayApt("\n\n".join(stanzas))


def captured() -> ReplayApt:
    return ReplayApt((DATA / "apt-show-gzip-nodejs.txt").read_text(),
                     (DATA / "apt-showpkg-awk.txt").read_text())


# ------------------------------------------------------------------------ pure parsing


def test_debian_version_ordering_not_sort_v() -> None:
    # Debian's ordering: tilde sorts before everything, the epoch before everything else.
    assert highest(["1.0", "1.0~rc1"]) == "1.0"
    assert highest(["2.0-1", "1:1.0-1"]) == "1:1.0-1"
    assert highest(["18.20.4+dfsg-1~deb12u2", "18.20.4+dfsg-1~deb12u3"]) == \
        "18.20.4+dfsg-1~deb12u3"
    assert highest(["1.2.13.dfsg-1", "1.2.13.dfsg-1+b1"]) == "1.2.13.dfsg-1+b1"
    assert satisfies("1:1.2.13.dfsg-1", ">=", "1:1.1.4")
    assert not satisfies("1.0~rc1", ">=", "1.0")
    assert satisfies("2.36-9+deb12u14", "<<", "2.37")
    sorted_v = subprocess.run(["sort", "-V"], input="1:1.0-1\n2.0-1\n", capture_output=True,
                              text=True, check=True).stdout.split()
    assert sorted_v[-1] != highest(sorted_v)  # the reason python-debian's Version is used


def test_parse_relations_or_groups_qualifiers_and_bounds() -> None:
    groups = parse_relations("libc6 (>= 2.34), python3:any | foo (<< 3), dpkg (>= 1.15.4) | "
                             "install-info")
    assert groups == (
        (Relation("libc6", ">=", "2.34"),),
        (Relation("python3"), Relation("foo", "<<", "3")),
        (Relation("dpkg", ">=", "1.15.4"), Relation("install-info")),
    )
    assert parse_relations("") == ()
    assert Relation("libc6", ">=", "2.34").accepts("2.36-9")
    assert not Relation("libnode108", "=", "18.20.4+dfsg-1~deb12u2").accepts(
        "18.20.4+dfsg-1~deb12u3")


def test_parse_show_captured_output() -> None:
    recs = parse_show((DATA / "apt-show-gzip-nodejs.txt").read_text())
    gz = [r for r in recs if r.name == "gzip"]
    assert {(r.version, r.arch) for r in gz} == {("1.12-1", "i386"), ("1.12-1", "amd64")}
    # Pre-Depends come first, then Depends; an OR group keeps its alternatives in order.
    assert gz[0].depends[0] == (Relation("libc6", ">=", "2.33"),)
    assert [r.name for r in gz[0].depends[1]] == ["dpkg", "install-info"]
    tz = [r for r in recs if r.arch == "all"]
    assert tz, "Architecture: all stanzas are kept"
    # A version only dpkg's status file knows (installed from elsewhere) cannot be downloaded.
    other = [r for r in recs if r.name == "nodejs" and "nodesource" in r.version]
    assert other and not any(r.downloadable for r in other)


def test_parse_reverse_provides_captured_output() -> None:
    rp = parse_reverse_provides((DATA / "apt-showpkg-awk.txt").read_text())
    assert ("mawk", "1.3.4.20200120-3.1", "i386") in rp["awk"]
    assert ("mawk", "1.3.4.20200120-3.1", None) in rp["awk"]  # native arch: no suffix


def test_deb_filenames_and_download_specs() -> None:
    assert deb_filename("zlib1g", "1:1.2.13.dfsg-1", "i386") == "zlib1g_1%3a1.2.13.dfsg-1_i386.deb"
    assert Pinned("tzdata", "2025b-0+deb12u1", "all").spec() == "tzdata=2025b-0+deb12u1"
    assert Pinned("gzip", "1.12-1", "i386").spec() == "gzip:i386=1.12-1"


# ------------------------------------------------------------------------ resolution


def test_nodejs_closure_follows_the_pinned_version_not_the_candidate() -> None:
    apt = captured()
    c = resolve(["nodejs"], ["i386", "amd64"], apt=apt)
    v = "18.20.4+dfsg-1~deb12u2"  # amd64 also has ~deb12u3 (security) and an installed 20.x
    assert c.requested_versions() == {"nodejs": {"i386": v, "amd64": v}}
    for arch in ("i386", "amd64"):
        names = {p.name: p for p in c.per_arch[arch]}
        assert names["libnode108"].version == v  # Depends: libnode108 (= the pinned version)
        assert "libc-ares2" in names  # the 20.x from elsewhere does not depend on it
        assert names["libc6"].arch == arch
        assert names["node-acorn"].arch == "all"
    assert not c.skew
    # Batched: a handful of apt calls for ~20 packages and two architectures.
    assert len(apt.calls) <= 8


def test_gzip_closure_has_its_own_libc_per_arch() -> None:
    c = resolve(["gzip"], ["i386", "amd64"], apt=captured())
    for arch in ("i386", "amd64"):
        pins = {p.name: p for p in c.per_arch[arch]}
        assert pins["gzip"].version == "1.12-1"
        assert pins["libc6"].arch == arch
    same = {(p.name, p.version) for p in c.per_arch["i386"]} == \
        {(p.name, p.version) for p in c.per_arch["amd64"]}
    assert same


def test_highest_common_version_is_pinned() -> None:
    apt = synthetic(stanza("tool", "1.0-1", "i386", "libc6"),
                    stanza("tool", "1.0-1", "amd64", "libc6"),
                    stanza("tool", "1.1-1", "amd64", "libc6"),
                    stanza("libc6", "2.36-9", "i386"), stanza("libc6", "2.36-9", "amd64"))
    c = resolve(["tool"], ["i386", "amd64"], apt=apt)
    assert c.requested_versions() == {"tool": {"i386": "1.0-1", "amd64": "1.0-1"}}


def test_version_skew_is_refused_naming_every_package() -> None:
    apt = synthetic(stanza("tool", "1.0-1", "i386", "libfoo"),
                    stanza("tool", "1.0-1", "amd64", "libfoo"),
                    stanza("libfoo", "2.0-1", "i386"), stanza("libfoo", "2.1-1", "amd64"))
    with pytest.raises(PackageError) as exc:
        resolve(["tool"], ["i386", "amd64"], apt=apt)
    msg = str(exc.value)
    assert "libfoo: i386 2.0-1, amd64 2.1-1" in msg and "--allow-version-skew" in msg
    assert exc.value.exit_code == 5
    c = resolve(["tool"], ["i386", "amd64"], apt=apt, allow_skew=True)
    assert c.skew == ("libfoo: i386 2.0-1, amd64 2.1-1",)


def test_no_build_for_an_arch_is_one_clear_error() -> None:
    apt = synthetic(stanza("amd64only", "1.0", "amd64"))
    with pytest.raises(PackageError, match=r"'amd64only' has no build for i386 .*amd64: 1.0"):
        resolve(["amd64only"], ["i386", "amd64"], apt=apt)


def test_unsatisfiable_dependency_names_it() -> None:
    apt = synthetic(stanza("tool", "1.0", "i386", "libgone (>= 3)"),
                    stanza("tool", "1.0", "amd64", "libgone (>= 3)"),
                    stanza("libgone", "2.0", "i386"), stanza("libgone", "2.0", "amd64"))
    with pytest.raises(PackageError, match=r"tool:i386=1.0 depends on libgone \(>= 3\)"):
        resolve(["tool"], ["i386", "amd64"], apt=apt)


def test_exact_dependency_restricts_the_pin() -> None:
    # libbar 2.0 is the highest common version, but tool needs exactly 1.0: pin 1.0.
    apt = synthetic(stanza("tool", "1.0", "i386", "libbar (= 1.0)"),
                    stanza("tool", "1.0", "amd64", "libbar (= 1.0)"),
                    *(stanza("libbar", v, a) for v in ("1.0", "2.0") for a in ("i386", "amd64")))
    c = resolve(["tool"], ["i386", "amd64"], apt=apt)
    assert {p.name: p.version for p in c.per_arch["i386"]} == {"tool": "1.0", "libbar": "1.0"}


def test_virtual_dependency_takes_a_real_provider() -> None:
    showpkg = "Package: awk:i386\nVersions: \n\nReverse Provides: \nmawk:i386 1.3 (= )\n" \
              "mawk 1.3 (= )\n"
    apt = ReplayApt("\n\n".join([stanza("tool", "1", a, "awk") for a in ("i386", "amd64")] +
                                [stanza("mawk", "1.3", a, provides="awk")
                                 for a in ("i386", "amd64")]), showpkg)
    c = resolve(["tool"], ["i386", "amd64"], apt=apt)
    assert {p.name for p in c.per_arch["amd64"]} == {"tool", "mawk"}


def test_unsupported_arch_is_refused() -> None:
    with pytest.raises(PackageError, match="x32"):
        resolve(["gzip"], ["x32"], apt=captured())


# ------------------------------------------------------------------------ real sysroots


@pytest.fixture(scope="module")
def gzip_roots(debian_cache: Path) -> dict[str, Sysroot]:
    return prepare(["gzip"], ["i386", "amd64"], debian_cache)


@pytest.mark.needs_apt
def test_sysroots_hold_their_own_arch_and_are_cached(gzip_roots: dict[str, Sysroot],
                                                     debian_cache: Path) -> None:
    for arch, abi in (("i386", ABIS["i386"]), ("amd64", ABIS["x86_64"])):
        root = gzip_roots[arch]
        check_artifact(root.host_path("/bin/gzip"), abi)
        assert any(root.host_path(f"/lib/{root.triplet}").glob("libc.so.6"))
        assert root.versions()["gzip"] == gzip_roots["i386"].versions()["gzip"]
    again = prepare(["gzip"], ["i386", "amd64"], debian_cache)
    assert all(s.cached for s in again.values())
    assert {a: s.path for a, s in again.items()} == {a: s.path for a, s in gzip_roots.items()}


@pytest.mark.needs_apt
def test_missing_package_is_one_clear_error() -> None:
    with pytest.raises(PackageError, match=r"abibench-no-such-package.*no build for i386"):
        resolve(["abibench-no-such-package"], ["i386", "amd64"])


# ------------------------------------------------------------------------ profiles


def test_debian_only_and_server_profiles(tmp_path: Path) -> None:
    from abibench.errors import ProfileError
    from abibench.workloads.profile import load_profile

    base = 'id = "x"\ntitle = "t"\n[run]\ncommand = ["sysbench", "--port={port}"]\n'
    ok = tmp_path / "ok.toml"
    ok.write_text(base + '[debian]\npackages = ["mariadb-server"]\n[server]\nkind = "mariadb"\n'
                  'prepare = ["sysbench", "--mysql-port={port}", "prepare"]\n')
    wl = load_profile(ok)
    assert wl.server is not None and wl.server.kind == "mariadb"
    assert wl.debian_packages == ("mariadb-server",) and not wl.source.artifacts
    bad = tmp_path / "bad.toml"
    bad.write_text(base + '[debian]\npackages = ["x"]\n[server]\nkind = "postgres"\n')
    with pytest.raises(ProfileError, match=r"bad.toml:\d+: \[server\] kind 'postgres'"):
        load_profile(bad)
    nodeb = tmp_path / "nodeb.toml"
    nodeb.write_text(base + '[source]\nfiles = ["a.c"]\nartifacts = ["a"]\n[server]\n'
                     'kind = "mariadb"\n')
    with pytest.raises(ProfileError, match=r"\[server\] runs the server from a Debian sysroot"):
        load_profile(nodeb)


def test_arch_without_an_apt_index_is_detected(tmp_path: Path) -> None:
    (tmp_path / "archive.invalid_debian_dists_bookworm_main_binary-amd64_Packages").write_text("")
    assert indexed_arch("amd64", tmp_path)
    assert not indexed_arch("i386", tmp_path)
    assert not indexed_arch("i386", tmp_path / "missing")
