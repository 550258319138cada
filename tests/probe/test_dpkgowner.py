"""The owner of a C library is asked of dpkg once per state of its database, never read stale."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abibench.abi import ABIS
from abibench.probe import dpkgowner, host

LOADERS = [a.loader for a in (ABIS["i386"], ABIS["x86_64"]) if Path(a.loader).exists()]


@pytest.mark.skipif(shutil.which("dpkg") is None or not LOADERS, reason="no dpkg or no loader")
def test_the_kept_answer_is_dpkgs_and_a_second_run_asks_nothing(tmp_path: Path) -> None:
    for loader in LOADERS:
        fresh = dpkgowner.ask_dpkg(loader)
        assert fresh is not None and " " in fresh, fresh
        assert host.runtime_library(loader, tmp_path) == fresh == host.runtime_library(loader)

        def refuse(_: str) -> str | None:
            raise AssertionError("dpkg asked again with its database unchanged")

        assert dpkgowner.owner(loader, tmp_path, ask=refuse) == fresh


# What dpkg does to its database: the status and diversions files are written anew and renamed
# over the old ones (an install, a removal, an upgrade, a diversion), a package's file list is
# renamed into info/ or removed from it. Contents are drawn small: the same sizes come back.
CONTENT = st.binary(min_size=0, max_size=3)
OPS = st.one_of(
    st.tuples(st.just("status"), CONTENT),
    st.tuples(st.just("diversions"), CONTENT),
    st.tuples(st.just("list+"), st.sampled_from(["a", "b", "c"])),
    st.tuples(st.just("list-"), st.sampled_from(["a", "b", "c"])),
)


def _apply(admin: Path, op: tuple[str, object]) -> None:
    kind, arg = op
    if kind in ("status", "diversions"):
        assert isinstance(arg, bytes)
        new = admin / f"{kind}-new"
        new.write_bytes(arg)
        os.replace(new, admin / kind)
    elif kind == "list+":
        new = admin / "info" / f"{arg}.list.new"
        new.write_text(f"/{arg}\n")
        os.replace(new, admin / "info" / f"{arg}.list")
    else:
        (admin / "info" / f"{arg}.list").unlink(missing_ok=True)


def _state(admin: Path) -> str:
    """What the answer is read from: the files' contents and which lists there are."""
    parts = [(admin / n).read_bytes() if (admin / n).exists() else b"-"
             for n in ("status", "diversions")]
    parts.append("\n".join(sorted(os.listdir(admin / "info"))).encode())
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(OPS, min_size=1, max_size=12))
def test_every_change_dpkg_makes_to_its_database_asks_again(
        ops: list[tuple[str, object]]) -> None:
    # Family "a cached host answer outlives what it was read from": the owner kept under a key of
    # dpkg's database is, after any sequence of changes dpkg makes, what dpkg would answer now.
    with tempfile.TemporaryDirectory() as tmp:
        admin, cache = Path(tmp, "dpkg"), Path(tmp, "cache")
        (admin / "info").mkdir(parents=True)
        loader = Path(tmp, "ld.so")
        loader.write_bytes(b"")
        asked: list[str] = []

        def ask(_: str) -> str | None:
            asked.append(_state(admin))
            return f"libc6 {asked[-1][:8]}"

        with mock.patch.dict(os.environ, {"DPKG_ADMINDIR": str(admin)}):
            for op in [None, *ops]:
                if op is not None:
                    _apply(admin, op)
                assert dpkgowner.owner(str(loader), cache, ask) == f"libc6 {_state(admin)[:8]}"
                # The same state again is read back, not asked.
                before = len(asked)
                assert dpkgowner.owner(str(loader), cache, ask) == f"libc6 {_state(admin)[:8]}"
                assert len(asked) == before
