"""abibench's QEMU plugin (native/insncount.c), built against the installed QEMU's plugin API.

The plugin API header (include/qemu/qemu-plugin.h) is not packaged in Debian's binaries and must
match the QEMU that loads the plugin, so it is taken from Debian's `qemu` source package at
exactly the source version the installed qemu-user was built from (a binNMU such as
1:7.2+dfsg-7+deb12u18+b3 is built from source 1:7.2+dfsg-7+deb12u18). `apt-get source
--download-only` fetches it (about 24 MB), checked against the signed Sources index; only the
header is read out of the upstream tarball (unless a Debian patch changes it: then the tree is
unpacked with its patches), and the tarballs are deleted. The cache keeps the header, a stamp
saying where it came from, and the plugins built from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import HostError
from ..locks import made_once
from ..paths import NATIVE_DIR

HEADER = "include/qemu/qemu-plugin.h"
SOURCE = NATIVE_DIR / "insncount.c"
COUNT_FORMAT = ("insncount", "1")


class PluginError(HostError):
    """The plugin cannot be had here (exit 3): the message names why and the fix."""


@dataclass(frozen=True)
class Plugin:
    path: Path  # the built shared object
    qemu_source: str  # the Debian source version of qemu its header came from
    header_sha256: str

    def argument(self, out: Path) -> str:
        """The -plugin argument that writes the count to `out`."""
        return f"{self.path},out={out}"


def qemu_source_version(package: str = "qemu-user") -> str:
    """The source version the installed qemu-user binary package was built from."""
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status} ${source:Version}",
                               package], capture_output=True, text=True, check=False)
    except OSError:
        raise PluginError("dpkg-query not found: instruction counts under qemu need a Debian "
                          "system") from None
    fields = proc.stdout.split()
    if proc.returncode != 0 or len(fields) != 2 or fields[0] != "installed":
        raise PluginError(f"{package} is not installed: apt-get install {package}")
    return fields[1]


def _apt_reason(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("E:"):
            return line[2:].strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def _fix_for(reason: str) -> str:
    if "deb-src" in reason or "source package" in reason.lower():
        return "add deb-src entries for Debian's archive and apt-get update (bash setup.sh does)"
    if "version" in reason.lower():
        return ("the archive no longer has the installed qemu's source: apt-get update && "
                "apt-get install --only-upgrade qemu-user")
    return "check the network and apt's sources, then run again"


def _patched(debian_tarball: Path) -> bool:
    """Whether a Debian patch changes the header (then the patched tree is what was built)."""
    with tarfile.open(debian_tarball) as tar:
        for member in tar:
            if member.isfile() and member.name.startswith("debian/patches/"):
                data = tar.extractfile(member)
                if data is not None and HEADER.encode() in data.read():
                    return True
    return False


def _from_upstream(tarball: Path) -> bytes:
    # Streamed: the 24 MB tarball is read once and nothing else is written.
    with tarfile.open(tarball, mode="r|*") as tar:
        for member in tar:
            top_and_rest = member.name.split("/", 1)
            if len(top_and_rest) == 2 and top_and_rest[1] == HEADER and member.isfile():
                data = tar.extractfile(member)
                if data is not None:
                    return data.read()
    raise PluginError(f"{tarball.name} has no {HEADER}: instruction counts under qemu are not "
                      "possible with this QEMU")


def _from_patched_tree(work: Path) -> bytes:
    dsc = next(work.glob("qemu_*.dsc"))
    proc = subprocess.run(["dpkg-source", "-x", dsc.name, "tree"], cwd=work,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PluginError(f"dpkg-source -x {dsc.name} failed: {_apt_reason(proc.stderr)} "
                          "(apt-get install dpkg-dev)")
    return (work / "tree" / HEADER).read_bytes()


def header(cache_root: Path, version: str | None = None) -> Path:
    """qemu-plugin.h of QEMU source `version` (default: the installed one), fetched once."""
    version = version or qemu_source_version()
    where = cache_root / "qemu-plugin" / re.sub(r"[^A-Za-z0-9.+~-]", "_", version)
    found = where / "qemu-plugin.h"
    def have() -> Path | None:
        return found if found.is_file() and (where / "stamp.json").is_file() else None

    # One fetch of QEMU's source at a time (locks.py): a concurrent process waits, then finds it.
    return made_once(where, have, lambda: _fetch_header(version, where, found))


def _fetch_header(version: str, where: Path, found: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise PluginError("apt-get not found: the plugin header comes from Debian's qemu source "
                          "package")
    where.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=where.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # apt's unprivileged _apt user downloads into it when run as root
        proc = subprocess.run(["apt-get", "source", "--download-only", "-q", f"qemu={version}"],
                              cwd=work, capture_output=True, text=True, check=False)
        upstream = sorted(work.glob("qemu_*.orig.tar.*"))
        debian = sorted(work.glob("qemu_*.debian.tar.*"))
        if proc.returncode != 0 or not upstream or not debian:
            reason = _apt_reason(proc.stderr + proc.stdout)
            raise PluginError(f"cannot fetch the QEMU plugin header (apt-get source "
                              f"qemu={version}: {reason}): {_fix_for(reason)}")
        data = _from_patched_tree(work) if _patched(debian[0]) else _from_upstream(upstream[0])
    where.mkdir(parents=True, exist_ok=True)
    api = re.search(rb"#define\s+QEMU_PLUGIN_VERSION\s+(\d+)", data)
    tmp_header = where / f".qemu-plugin.h.{os.getpid()}"
    tmp_header.write_bytes(data)
    os.replace(tmp_header, found)
    (where / "stamp.json").write_text(json.dumps({
        "qemu_source_version": version, "member": HEADER,
        "sha256": hashlib.sha256(data).hexdigest(),
        "plugin_api_version": int(api.group(1)) if api else None}, indent=1) + "\n")
    return found


def build(cache_root: Path, version: str | None = None) -> Plugin:
    """The plugin for the installed QEMU, compiled once per (source, header, compiler)."""
    version = version or qemu_source_version()
    hdr = header(cache_root, version)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise PluginError("no C compiler to build the QEMU plugin: apt-get install build-essential")
    text = hdr.read_bytes()
    key = hashlib.sha256(SOURCE.read_bytes() + text + cc.encode()).hexdigest()[:16]
    built = hdr.parent / f"libinsncount-{key}.so"
    if not built.is_file():
        tmp = hdr.parent / f".libinsncount-{key}.{os.getpid()}.so"
        proc = subprocess.run([cc, "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
                               "-pthread", f"-I{hdr.parent}", "-o", str(tmp), str(SOURCE)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            raise PluginError(f"the QEMU plugin does not build against qemu {version}'s header "
                              f"({first[:200]}): counting instructions under this QEMU needs "
                              "a newer abibench")
        os.replace(tmp, built)
    return Plugin(built, version, hashlib.sha256(text).hexdigest())


def read_count(path: Path) -> int | None:
    """The instructions in the plugin's count file; None when it is missing or not one
    whole line of the format (a guest killed by a signal writes nothing)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    fields = text.split()
    if text.count("\n") != 1 or not text.endswith("\n") or tuple(fields[:2]) != COUNT_FORMAT:
        return None
    values = dict(f.split("=", 1) for f in fields[2:] if "=" in f)
    insns = values.get("insns", "")
    return int(insns) if insns.isdigit() else None
