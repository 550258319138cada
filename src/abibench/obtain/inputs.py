"""Deterministic workload inputs (corpora, audio, scripts), generated once and cached.

A profile names an input under [inputs] with a `kind` registered here; the generated file's
absolute path fills the {name} placeholder. Generators must be deterministic: the same
parameters on the same machine give byte-identical files, so every ABI reads the same input.

Every generated input has a sidecar `<file>.json` describing how it was made and its sha256
(`describe_input`), so a result can say exactly which bytes were measured.

Kinds:
- `corpus`: a tar of files owned by installed Debian packages (source code and text, ELF
  binaries and libraries, already-compressed manual pages and docs), like the seed's tar of
  /usr/local. Files are chosen from dpkg's file lists in byte-wise sorted order under per-group
  byte caps, and the tar's metadata is normalised (mtime 0, owner 0/0, GNU format), so the same
  installed packages give the same bytes. Cached by a digest of the recipe, the file list and
  the files' contents. Parameter `mb` (default 200).
- `wav`: a synthesised 16-bit stereo 44.1 kHz WAV (chords of sine tones with envelopes plus
  low-passed pseudo-noise), made with integer arithmetic only. Parameter `seconds` (default 60).
- `lua`: abibench's own Lua benchmark scripts (workloads/lua/*.lua), copied to a directory
  named by their digest; {name} is that directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import stat
import struct
import sysconfig
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from ..abi import host_abi
from ..errors import AbibenchError
from ..hashing import sha256_file
from ..records import JSONDict
from ..workloads.profile import INPUT_KINDS

# kind -> generator(spec without "kind", cache directory for this kind) -> path of the input
InputParams = Mapping[str, object]  # an [inputs] table without its kind, checked here
Generator = Callable[[InputParams, Path], Path]
GENERATORS: dict[str, Generator] = {}

LUA_DIR = Path(__file__).resolve().parent.parent / "workloads" / "lua"
DPKG_INFO = Path("/var/lib/dpkg/info")
MIB = 1024 * 1024


class InputError(AbibenchError):
    """An input cannot be generated as asked (bad parameter, nothing to build it from)."""

    exit_code = 2


def generate_input(name: str, spec: Mapping[str, object], cache_root: Path) -> Path:
    kind = str(spec["kind"])
    params = {k: v for k, v in spec.items() if k != "kind"}
    out_dir = cache_root / "inputs" / kind
    out_dir.mkdir(parents=True, exist_ok=True)
    return GENERATORS[kind](params, out_dir)


def describe_input(path: Path) -> JSONDict:
    """The sidecar record of a generated input: recipe, digest and size (empty when none)."""
    side = path.parent / (path.name + ".json")
    try:
        data: JSONDict = json.loads(side.read_text())
    except (OSError, ValueError):
        return {}
    return data


def _int_param(params: InputParams, key: str, default: int, lo: int, hi: int) -> int:
    value = params.get(key, default)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InputError(f"input parameter {key} = {value!r}: write a whole number from {lo} "
                         f"to {hi}")
    return value


def _check_known(kind: str, params: InputParams, known: set[str]) -> None:
    unknown = set(params) - known
    if unknown:
        raise InputError(f"input kind '{kind}' has no parameter {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(sorted(known)) or 'none'})")


def _publish(tmp: Path, final: Path, record: Mapping[str, object]) -> Path:
    """Move a finished input into place with its sidecar; a concurrent twin is as good."""
    record = {**record, "sha256": sha256_file(tmp), "bytes": tmp.stat().st_size,
              "file": final.name}
    side = final.parent / (final.name + ".json")
    side_tmp = side.with_suffix(f".tmp{os.getpid()}")
    side_tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, final)
    os.replace(side_tmp, side)
    return final


# --------------------------------------------------------------------------------------------
# corpus

CORPUS_RECIPE_VERSION = 2
MAX_FILE = 8 * MIB  # larger files are left out, as in the original sketch


@dataclass(frozen=True)
class CorpusGroup:
    name: str
    share: float  # fraction of the requested size
    prefixes: tuple[str, ...]


def corpus_groups(multiarch: str | None = None) -> tuple[CorpusGroup, ...]:
    """The mix: text first, then already-compressed files, then binaries (which take up any
    shortfall of the groups before them, being the largest pool on any installed system)."""
    host = host_abi(os.uname().machine)
    arch = multiarch or sysconfig.get_config_var("MULTIARCH") or (host.gnu_triplet if host else "")
    return (
        CorpusGroup("text", 0.40, ("/usr/include/", "/usr/lib/python3/", "/usr/lib/python3.11/",
                                   "/usr/share/perl/", "/usr/share/perl5/", "/usr/share/i18n/",
                                   "/usr/share/vim/")),
        CorpusGroup("compressed", 0.15, ("/usr/share/doc/", "/usr/share/man/")),
        CorpusGroup("binary", 0.45, (f"/usr/lib/{arch}/", "/usr/bin/", "/usr/libexec/")),
    )


def packaged_files(info_dir: Path = DPKG_INFO) -> list[str]:
    """Every path listed in dpkg's per-package file lists, sorted byte-wise, without repeats."""
    paths: set[str] = set()
    for lst in info_dir.glob("*.list"):
        with lst.open(encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                p = line.rstrip("\n")
                if p.startswith("/"):
                    paths.add(p)
    return sorted(paths, key=lambda p: p.encode("utf-8", "surrogateescape"))


def select_files(candidates: Iterable[str], groups: tuple[CorpusGroup, ...], total: int,
                 size_of: Callable[[str], int | None]) -> list[tuple[str, str, int]]:
    """(group, path, size) chosen greedily in the candidates' order under per-group caps.

    `size_of` returns None for anything that is not a regular, readable file. A file that
    would overflow its group's cap is skipped and smaller later ones may still fit (as in
    mkcorpus.sh). What a group cannot fill passes on to the next group.
    """
    cands = list(candidates)
    chosen: list[tuple[str, str, int]] = []
    carry = 0
    for gi, g in enumerate(groups):
        cap = int(total * g.share) + carry
        if gi == len(groups) - 1:
            cap = total - sum(s for _, _, s in chosen)
        used = 0
        for p in cands:
            if not p.startswith(g.prefixes):
                continue
            size = size_of(p)
            if size is None or size == 0 or size > MAX_FILE:
                continue
            if used + size <= cap:
                chosen.append((g.name, p, size))
                used += size
        carry = cap - used
    return chosen


def _regular_size(path: str) -> int | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or not os.access(path, os.R_OK):
        return None
    return st.st_size


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode &= 0o755
    return info


def write_tar(files: list[str], dest: Path) -> None:
    """A GNU tar of `files` in the given order with normalised metadata (like tar --sort=name
    --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu)."""
    with tarfile.open(dest, "w", format=tarfile.GNU_FORMAT) as tar:
        for f in files:
            info = _normalise(tar.gettarinfo(f, arcname=f.lstrip("/")))
            with open(f, "rb") as fh:
                tar.addfile(info, fh)


@cache
def _corpus_cached(mb: int, out_dir: Path) -> Path:
    groups = corpus_groups()
    files = select_files(packaged_files(), groups, mb * MIB, _regular_size)
    # one list in byte-wise order, like tar --sort=name (groups are chosen one after another)
    files.sort(key=lambda f: f[1].encode("utf-8", "surrogateescape"))
    if not files:
        raise InputError("corpus: no packaged files found under /usr (is this a Debian system "
                         f"with {DPKG_INFO}?)")
    got = sum(s for _, _, s in files)
    if got < 0.9 * mb * MIB:
        raise InputError(f"corpus: only {got / MIB:.0f} MiB of packaged files are available, "
                         f"asked for {mb} MiB: ask for less (mb = ...)")
    recipe = {"v": CORPUS_RECIPE_VERSION, "mb": mb, "max_file": MAX_FILE,
              "groups": [[g.name, g.share, list(g.prefixes)] for g in groups]}
    h = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode())
    for _, path, _ in files:
        h.update(path.encode("utf-8", "surrogateescape") + b"\0")
        h.update(sha256_file(Path(path)).encode() + b"\n")
    key = h.hexdigest()
    final = out_dir / f"corpus-{mb}mb-{key[:16]}.tar"
    if final.is_file() and describe_input(final).get("key") == key:
        return final
    fd, tmp_name = tempfile.mkstemp(prefix=".corpus-", suffix=".tar", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write_tar([p for _, p, _ in files], tmp)
        by_group = {g.name: {"files": 0, "bytes": 0} for g in groups}
        for g, _, s in files:
            by_group[g]["files"] += 1
            by_group[g]["bytes"] += s
        (out_dir / f"corpus-{mb}mb-{key[:16]}.list").write_text(
            "".join(p + "\n" for _, p, _ in files), encoding="utf-8", errors="surrogateescape")
        return _publish(tmp, final, {"kind": "corpus", "recipe": recipe, "key": key,
                                     "files": len(files), "content_bytes": got,
                                     "groups": by_group})
    finally:
        tmp.unlink(missing_ok=True)


def corpus(params: InputParams, out_dir: Path) -> Path:
    _check_known("corpus", params, {"mb"})
    return _corpus_cached(_int_param(params, "mb", 200, 1, 4096), out_dir)


# --------------------------------------------------------------------------------------------
# wav

WAV_RECIPE_VERSION = 1
RATE = 44100
TABLE_BITS = 12  # sine table of 4096 entries, phase in 32-bit fixed point
# Chord progression (Hz) and the seconds each chord lasts; partials add some harmonic texture.
CHORDS = ((220.0, 277.18, 329.63), (196.0, 246.94, 293.66), (174.61, 220.0, 261.63),
          (164.81, 207.65, 246.94, 329.63), (130.81, 164.81, 196.0, 392.0))
CHORD_SECONDS = 2


def _sine_table() -> np.ndarray:
    n = 1 << TABLE_BITS
    return np.array([round(32767 * math.sin(2 * math.pi * i / n)) for i in range(n)],
                    dtype=np.int64)


def _lcg_noise(n: int, seed: int) -> np.ndarray:
    """Uniform integers in [-32768, 32767] from a 32-bit LCG, vectorised by jumping ahead.

    x_k = A_k x_0 + C_k (mod 2**32); uint64 arithmetic wraps mod 2**64, which keeps the low
    32 bits exact.
    """
    a, c, m = 1664525, 1013904223, 1 << 32
    block = 4096
    ak = np.empty(block, dtype=np.uint64)
    ck = np.empty(block, dtype=np.uint64)
    mul, add = 1, 0
    for k in range(block):
        mul, add = (a * mul) % m, (a * add + c) % m
        ak[k], ck[k] = mul, add
    out = np.empty(n, dtype=np.int64)
    x = np.uint64(seed % m)
    low = np.uint64(0xFFFFFFFF)
    for start in range(0, n, block):
        cnt = min(block, n - start)
        vals = (ak[:cnt] * x + ck[:cnt]) & low
        out[start:start + cnt] = (vals >> np.uint64(16)).astype(np.int64) - 32768
        x = vals[cnt - 1]
    return out


def synth_pcm(seconds: int, rate: int = RATE) -> np.ndarray:
    """Interleaved stereo int16 samples; integer arithmetic only, so the bytes never vary."""
    n = seconds * rate
    table = _sine_table()
    mask = (1 << TABLE_BITS) - 1
    t = np.arange(n, dtype=np.int64)
    left = np.zeros(n, dtype=np.int64)
    right = np.zeros(n, dtype=np.int64)
    seg = CHORD_SECONDS * rate
    for start in range(0, n, seg):
        stop = min(n, start + seg)
        chord = CHORDS[(start // seg) % len(CHORDS)]
        tt = t[start:stop] - start
        # attack-decay envelope in 1/1024 units: rises over 50 ms, decays linearly to 25%
        attack = rate // 20
        env = np.where(tt < attack, tt * 1024 // attack,
                       1024 - (tt - attack) * 768 // max(1, seg - attack))
        for k, f in enumerate(chord):
            step = round(f * (1 << 32) / rate)  # phase increment, 32-bit fixed point
            for h, weight in ((1, 6), (2, 2), (3, 1)):  # partials
                phase = (tt * step * h + (k << 28)) & 0xFFFFFFFF
                s = table[(phase >> (32 - TABLE_BITS)) & mask] * weight
                detune = (tt * (step * h + 37 * (k + 1)) + (k << 29)) & 0xFFFFFFFF
                s2 = table[(detune >> (32 - TABLE_BITS)) & mask] * weight
                left[start:stop] += s * env // 1024
                right[start:stop] += s2 * env // 1024
    # low-passed noise: a moving average over 8 samples of LCG noise (exact integer FIR)
    for chan, seed in ((left, 12345), (right, 67890)):
        noise = _lcg_noise(n + 8, seed)
        csum = np.cumsum(noise)
        chan += (csum[8:] - csum[:-8]) * 3 // 8
    # worst case: four tones of partial weight 9 each plus the noise; keep peaks below full scale
    left = np.clip(left // 40, -32768, 32767)
    right = np.clip(right // 40, -32768, 32767)
    pcm = np.empty(2 * n, dtype="<i2")
    pcm[0::2] = left
    pcm[1::2] = right
    return pcm


def wav_bytes_header(frames: int, channels: int = 2, rate: int = RATE, bits: int = 16) -> bytes:
    block = channels * bits // 8
    data = frames * block
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVE" + b"fmt "
            + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, bits)
            + b"data" + struct.pack("<I", data))


def wav(params: InputParams, out_dir: Path) -> Path:
    _check_known("wav", params, {"seconds"})
    seconds = _int_param(params, "seconds", 60, 1, 3600)
    recipe = {"v": WAV_RECIPE_VERSION, "seconds": seconds, "rate": RATE, "channels": 2,
              "bits": 16}
    key = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    final = out_dir / f"synth-{seconds}s-{key[:16]}.wav"
    if final.is_file() and describe_input(final).get("key") == key:
        return final
    fd, tmp_name = tempfile.mkstemp(prefix=".wav-", suffix=".wav", dir=out_dir)
    tmp = Path(tmp_name)
    try:
        pcm = synth_pcm(seconds)
        with os.fdopen(fd, "wb") as fh:
            fh.write(wav_bytes_header(len(pcm) // 2))
            fh.write(pcm.tobytes())
        return _publish(tmp, final, {"kind": "wav", "recipe": recipe, "key": key})
    finally:
        tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# lua scripts


def lua_scripts(params: InputParams, out_dir: Path) -> Path:
    _check_known("lua", params, set())
    scripts = sorted(LUA_DIR.glob("*.lua"))
    if not scripts:
        raise InputError(f"no Lua scripts in {LUA_DIR}: the abibench installation is incomplete")
    h = hashlib.sha256()
    for s in scripts:
        h.update(s.name.encode() + b"\0" + s.read_bytes() + b"\0")
    key = h.hexdigest()
    final = out_dir / f"scripts-{key[:16]}"
    if (final / ".complete").is_file():
        return final
    staging = Path(tempfile.mkdtemp(prefix=".scripts-", dir=out_dir))
    try:
        for s in scripts:
            shutil.copy2(s, staging / s.name)
        (staging / ".complete").write_text(json.dumps({"kind": "lua", "key": key,
                                                       "files": [s.name for s in scripts]}))
        with contextlib.suppress(OSError):  # a concurrent process published them first
            staging.rename(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final


GENERATORS.update({"corpus": corpus, "wav": wav, "lua": lua_scripts})
# The profile format names the kinds and their keys; every one needs a generator here.
assert set(GENERATORS) == set(INPUT_KINDS), "obtain/inputs.py and workloads/profile.py disagree"
