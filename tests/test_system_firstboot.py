"""A server's data directory is made on the guest's first boot (obtain/sysimage.FirstBoot).

The invariant "a disk holds no state a server made while the image was built"
(docs/reliability.md): a maintainer script that starts a server (MariaDB's mysql_install_db)
runs under the build host's kernel or qemu-user, where the aarch64 server died; so the image's
data directory is emptied, but for the package's flags, and a unit the server requires makes
it on the guest's own kernel. Generated: data directories of any content.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.obtain.sysimage import FIRST_BOOT, defer_to_first_boot, image_key
from abibench.workloads.system import load_system

MARIADB = FIRST_BOOT[0]
_NAME = st.text(st.sampled_from("abcdefgmysqlib_0123456789."), min_size=1, max_size=12).filter(
    lambda n: n not in (".", ".."))


def _tree(root: Path, files: list[str], dirs: list[str], flag: bool) -> Path:
    (root / "usr/sbin").mkdir(parents=True)
    (root / MARIADB.installed).write_bytes(b"\x7fELF")
    datadir = root / MARIADB.datadir
    datadir.mkdir(parents=True)
    for d in dirs:
        (datadir / d).mkdir(exist_ok=True)
        (datadir / d / "t.frm").write_bytes(b"x")
    for f in files:
        if not (datadir / f).exists():
            (datadir / f).write_bytes(b"x")
    if flag:
        (datadir / "debian-10.11.flag").touch()
    return datadir


@settings(max_examples=30, deadline=None)
@given(st.lists(_NAME, max_size=6), st.lists(_NAME.map(lambda n: f"d{n}"), max_size=3),
       st.booleans())
def test_the_data_directory_keeps_only_the_packages_flags(files: list[str], dirs: list[str],
                                                          flag: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        datadir = _tree(root, files, dirs, flag)
        assert defer_to_first_boot(root) == [MARIADB.unit]
        left = sorted(p.name for p in datadir.iterdir())
        assert left == sorted({p for p in [*files, *(["debian-10.11.flag"] if flag else [])]
                               if p.startswith("debian-") and p.endswith(".flag")})
        unit = root / "etc/systemd/system" / MARIADB.unit
        link = root / "etc/systemd/system/mariadb.service.requires" / MARIADB.unit
        assert unit.read_text() == MARIADB.unit_text()
        assert link.is_symlink() and str(link.readlink()) == f"/etc/systemd/system/{MARIADB.unit}"
        # Again (a second customise of the same tree): the same tree.
        assert defer_to_first_boot(root) == [MARIADB.unit]
        assert sorted(p.name for p in datadir.iterdir()) == left


def test_a_tree_without_the_server_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "var/lib/mysql").mkdir(parents=True)
    (tmp_path / "var/lib/mysql/ibdata1").write_bytes(b"x")
    assert defer_to_first_boot(tmp_path) == []
    assert (tmp_path / "var/lib/mysql/ibdata1").exists()
    assert not (tmp_path / "etc").exists()


def test_the_unit_runs_debians_own_command_before_the_server_only_when_not_made() -> None:
    text = MARIADB.unit_text()
    assert "Before=mariadb.service\n" in text and "RequiredBy=mariadb.service\n" in text
    assert "ConditionPathExists=!/var/lib/mysql/mysql\n" in text
    # mariadb-server's postinst (bookworm): TMPDIR= bash /usr/bin/mysql_install_db --rpm
    # --cross-bootstrap --user=mysql --disable-log-bin --skip-test-db
    assert "ExecStart=/bin/bash /usr/bin/mysql_install_db --rpm --cross-bootstrap " \
        "--user=mysql --disable-log-bin --skip-test-db\n" in text
    assert "Environment=TMPDIR=\n" in text and "Type=oneshot\n" in text


def test_the_rule_is_one_for_every_architecture_and_in_the_disks_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same units for every userspace (no architecture's special case), and a change of
    # the rule is a new disk, as a change of the packages is.
    server = load_system("server")
    reporter = tmp_path / "abc123" / "abibench-sysreport"
    keys = {image_key(server, ABIS[a].debian_arch, reporter) for a in
            ("i386", "x86_64", "armhf", "aarch64")}
    assert len(keys) == 4
    before = image_key(server, "arm64", reporter)
    monkeypatch.setattr("abibench.obtain.sysimage.FIRST_BOOT", ())
    assert image_key(server, "arm64", reporter) != before
