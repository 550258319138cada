"""Architecture: all packages (a game's data) are unpacked once and hard-linked into every
sysroot, not unpacked per arch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from abibench.obtain.sysroot import shared_dir, unpack

pytestmark = pytest.mark.needs_setup("dpkg")  # dpkg-deb


def build_deb(tmp: Path, name: str, arch: str, files: dict[str, bytes]) -> Path:
    """A real .deb made by dpkg-deb from a small tree."""
    tree = tmp / f"{name}-{arch}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1.0-1\nArchitecture: {arch}\nMaintainer: t <t@t>\n"
        "Description: test\n")
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    (tree / "usr/share/doc").mkdir(parents=True, exist_ok=True)
    (tree / "usr/share/doc/link").symlink_to("../game/pak0.pk3")
    deb = tmp / f"{name}_1.0-1_{arch}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)],
                   check=True, capture_output=True)
    return deb


def test_arch_all_data_is_shared_and_per_arch_files_are_not(tmp_path: Path) -> None:
    data = build_deb(tmp_path, "game-data", "all", {"usr/share/game/pak0.pk3": b"x" * 100000})
    prog = {a: build_deb(tmp_path, "game", a, {"usr/bin/game": a.encode()})
            for a in ("i386", "amd64")}
    shared = shared_dir(tmp_path / "cache")
    roots = {a: tmp_path / f"root-{a}" for a in prog}
    for arch, root in roots.items():
        root.mkdir()
        unpack([prog[arch], data], root, shared)
    pak = [r / "usr/share/game/pak0.pk3" for r in roots.values()]
    assert pak[0].read_bytes() == pak[1].read_bytes() == b"x" * 100000
    assert pak[0].stat().st_ino == pak[1].stat().st_ino  # one copy on disk
    assert pak[0].stat().st_nlink == 3  # the shared tree and two sysroots
    assert [p.name for p in shared.iterdir()] == ["game-data_1.0-1_all"]
    # Links stay links; per-arch packages are each arch's own.
    assert all((r / "usr/share/doc/link").readlink() == Path("../game/pak0.pk3")
               for r in roots.values())
    assert (roots["i386"] / "usr/bin/game").read_bytes() == b"i386"
    assert (roots["amd64"] / "usr/bin/game").read_bytes() == b"amd64"


def test_without_a_shared_directory_every_package_is_unpacked(tmp_path: Path) -> None:
    data = build_deb(tmp_path, "game-data", "all", {"usr/share/game/pak0.pk3": b"y" * 10})
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
        unpack([data], root)
    inodes = {(r / "usr/share/game/pak0.pk3").stat().st_ino for r in roots}
    assert len(inodes) == 2
