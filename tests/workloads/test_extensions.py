"""Profile extensions: build commands, data files, setup, stdin, file validation, sweeps, Debian
source versions."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.obtain.debsource import SourceVersionError, parse_showsrc, pick_version
from abibench.workloads.profile import expand_sweep, load_profile, load_workloads

Cli = Callable[..., subprocess.CompletedProcess[str]]
FIXTURES = Path(__file__).parents[1] / "fixtures"


SHOWSRC = """\
Package: openssl
Binary: openssl, libssl3, libcrypto3-udeb
Version: 3.0.17-1~deb12u2
Directory: pool/main/o/openssl

Package: openssl
Binary: openssl, libssl3
Version: 3.0.20-1~deb12u2

Package: openssl-ibmca
Binary: openssl-ibmca
Version: 2.3.1-1
"""


def test_showsrc_versions_in_debian_order() -> None:
    # Debian ordering: 3.0.20 > 3.0.17 (a plain string sort would say otherwise for 3.0.9).
    assert parse_showsrc(SHOWSRC, "openssl") == ["3.0.20-1~deb12u2", "3.0.17-1~deb12u2"]
    assert parse_showsrc(SHOWSRC.replace("3.0.17", "3.0.9"), "openssl")[0] == "3.0.20-1~deb12u2"


def test_unavailable_source_version_names_package_and_version() -> None:
    with pytest.raises(SourceVersionError, match=r"'gzip' version 0.1-1 is not available"):
        pick_version("gzip", "0.1-1")
    with pytest.raises(SourceVersionError, match="'no-such-source-pkg' is not known to apt"):
        pick_version("no-such-source-pkg", None)


def test_sweep_expands_into_named_instances() -> None:
    wl = load_profile(FIXTURES / "ext.toml")
    instances = expand_sweep(wl)
    assert [w.id for w in instances] == ["ext[n=1]", "ext[n=2]"]
    assert [w.params["n"] for w in instances] == ["1", "2"]
    # --set of a swept parameter fixes it: one instance.
    fixed = load_workloads([str(FIXTURES / "ext.toml")], None, {"n": "5"})
    assert [w.id for w in fixed] == ["ext"] and fixed[0].params["n"] == "5"


def test_extensions_end_to_end(cli: Cli) -> None:
    # The JSON is what is read: --no-html spares the run's HTML report.
    r = cli("run", str(FIXTURES / "ext.toml"), "--abi", "i386,x86_64", "--rounds", "2", "--json",
            "--no-html")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    checks = {(s["workload"], s["target"]): s["check"] for s in doc["samples"]}
    assert set(checks) == {(w, t) for w in ("ext[n=1]", "ext[n=2]") for t in ("i386", "x86_64")}
    for w in ("ext[n=1]", "ext[n=2]"):
        assert checks[(w, "i386")] == checks[(w, "x86_64")]
        assert "stdout:" in checks[(w, "i386")] and "out.txt:" in checks[(w, "i386")]
    assert checks[("ext[n=1]", "i386")] != checks[("ext[n=2]", "i386")]
    art = next(a for a in doc["artifacts"] if a["target"] == "i386")
    assert art["data"] == ["words.txt"] and art["files"] == ["upper"]
