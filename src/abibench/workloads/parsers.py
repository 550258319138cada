"""Named parsers for programs whose output holds many figures, and output tolerance checks.

Pure functions of a program's text (or bytes): the run stage applies them to each sample.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

# Named parsers for programs whose output holds many figures (openssl speed, speedtest1, ...):
# name -> function(stdout) -> {key: value}. Profiles pick values with parse = {builtin, key}.
BuiltinParser = Callable[[str], dict[str, float]]
BUILTIN_PARSERS: dict[str, BuiltinParser] = {}


# --------------------------------------------------------------------------------------------
# Built-in parsers. Each takes a program's whole stdout and returns every figure it found.

_OPENSSL_SIZE_HEADER = re.compile(r"^type\s+((?:\d+\s+bytes\s*)+)$", re.M)
_OPENSSL_PKEY = re.compile(
    # "rsa 2048 bits 0.000273s 0.000017s   3657.1  59608.2" (also dsa; OpenSSL 0.9.7 to 3.x)
    r"^\s*(rsa|dsa)\s+(\d+)\s+bits\s+\S+s\s+\S+s\s+([0-9.]+)\s+([0-9.]+)\s*$", re.M)
_OPENSSL_CURVE = re.compile(
    # " 256 bits ecdsa (nistp256)   0.0000s   0.0001s  42933.0  15648.5"
    # " 253 bits EdDSA (Ed25519)   0.0000s   0.0001s  24806.6   9129.4"
    r"^\s*\d+\s+bits\s+(ecdsa|eddsa|sm2)\s+\((\w+)\)\s+\S+s\s+\S+s\s+([0-9.]+)\s+([0-9.]+)\s*$",
    re.M | re.I)
_OPENSSL_ECDH = re.compile(
    # " 256 bits ecdh (nistp256)   0.0001s  11390.5"
    r"^\s*\d+\s+bits\s+(ecdh)\s+\((\w+)\)\s+\S+s\s+([0-9.]+)\s*$", re.M | re.I)
_OPENSSL_BN = re.compile(r"^options:\s*bn\((\d+),(\d+)\)", re.M)


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _openssl_number(text: str) -> float:
    """'243362.10k' is in 1000s of bytes per second; a plain number is bytes per second."""
    if text.endswith("k"):
        return float(text[:-1]) * 1000.0
    return float(text)


def parse_openssl_speed(stdout: str) -> dict[str, float]:
    """Every figure of `openssl speed` (the human-readable table, OpenSSL 0.9.7 to 3.x).

    Keys: `<algorithm>_<block size>` in bytes/s for ciphers and digests (md5_16, aes_128_cbc_8192,
    des_ede3_1024, blowfish_cbc_64 — names lowercased, non-alphanumerics as '_');
    `rsa2048_sign`, `rsa2048_verify`, `dsa2048_sign`, `ecdsap256_sign`, `ecdsap256_verify`,
    `eddsaed25519_sign`, `ecdhp256_op` in operations/s; `bn_limb_bits` (32 or 64) from the
    `options: bn(64,32)` line when the output has it. A figure of 0 (an algorithm this build
    could not run, e.g. Blowfish without the legacy provider) is left out, so a metric asking
    for it fails loudly instead of averaging a zero.
    """
    values: dict[str, float] = {}
    lines = stdout.splitlines()
    sizes: list[int] = []
    for line in lines:
        header = _OPENSSL_SIZE_HEADER.match(line)
        if header:
            sizes = [int(n) for n in re.findall(r"(\d+)\s+bytes", header.group(1))]
            continue
        if not sizes or not line.strip():
            continue
        # "aes-128-cbc    1055801.68k  1345064.48k ..." or "des ede3 20636.86k ..."
        parts = line.split()
        if len(parts) <= len(sizes):
            continue
        figures = parts[-len(sizes):]
        if not all(re.fullmatch(r"[0-9]+(?:\.[0-9]+)?k?", f) for f in figures):
            continue
        name = _key(" ".join(parts[: len(parts) - len(sizes)]))
        if not name:
            continue
        for size, fig in zip(sizes, figures, strict=True):
            v = _openssl_number(fig)
            if v > 0:
                values[f"{name}_{size}"] = v
    for m in _OPENSSL_PKEY.finditer(stdout):
        for op, fig in (("sign", m.group(3)), ("verify", m.group(4))):
            if float(fig) > 0:
                values[f"{m.group(1)}{m.group(2)}_{op}"] = float(fig)
    for m in _OPENSSL_CURVE.finditer(stdout):
        curve = _key(m.group(2)).replace("nist", "")
        for op, fig in (("sign", m.group(3)), ("verify", m.group(4))):
            if float(fig) > 0:
                values[f"{m.group(1).lower()}{curve}_{op}"] = float(fig)
    for m in _OPENSSL_ECDH.finditer(stdout):
        curve = _key(m.group(2)).replace("nist", "")
        if float(m.group(3)) > 0:
            values[f"ecdh{curve}_op"] = float(m.group(3))
    bn = _OPENSSL_BN.search(stdout)
    if bn:
        values["bn_limb_bits"] = float(bn.group(2))
    if not values:
        raise ValueError("no figures found: is this the output of `openssl speed`?")
    return values


_SPEEDTEST_LINE = re.compile(r"^\s*(\d+) - .*?\.*\s+(\d+\.\d+)s\s*$", re.M)
_SPEEDTEST_TOTAL = re.compile(r"^\s*TOTAL\.*\s+(\d+\.\d+)s\s*$", re.M)


def parse_speedtest1(stdout: str) -> dict[str, float]:
    """SQLite's speedtest1: `total` and `t<N>` (test number N) in seconds."""
    values = {f"t{m.group(1)}": float(m.group(2)) for m in _SPEEDTEST_LINE.finditer(stdout)}
    total = _SPEEDTEST_TOTAL.search(stdout)
    if total is None:
        raise ValueError("no TOTAL line: speedtest1 did not finish")
    values["total"] = float(total.group(1))
    return values


def parse_json(stdout: str) -> dict[str, float]:
    """A JSON object (a browser page's result): every number in it, keyed by its path with dots,
    e.g. ``tests.list_build.ops_per_s`` or ``results.Richards``. Booleans are not numbers here;
    non-finite values are left to the metric check (samples.py), which fails the sample."""
    try:
        doc = json.loads(stdout)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    values: dict[str, float] = {}

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(node, int | float) and not isinstance(node, bool):
            values[path] = float(node)

    walk(doc, "")
    return values


_GLMARK2_SCENE = re.compile(
    # "[bump] bump-render=high-poly: FPS: 57 FrameTime: 17.691 ms"; "[terrain] <default>: FPS: 1 ..."
    r"^\[([a-z0-9-]+)\] (.*?): FPS: (\d+) FrameTime: ([0-9.]+) ms\s*$", re.M)
_GLMARK2_SCORE = re.compile(r"^\s*glmark2 Score: (\d+)\s*$", re.M)


def glmark2_scene_key(scene: str, options: str) -> str:
    """A scene's key: its name and its options (without duration, which a run may set for
    every scene), e.g. bump_bump_render_high_poly, terrain."""
    opts = [o for o in options.split(":") if o and o != "<default>"
            and not o.startswith("duration=")]
    return _key(" ".join([scene, *opts]))


def parse_glmark2(stdout: str) -> dict[str, float]:
    """glmark2's results: `score` (its own total: the mean of the scenes' FPS) and each scene's
    frames per second keyed by glmark2_scene_key, with `<key>_ms` its mean frame time."""
    values: dict[str, float] = {}
    for m in _GLMARK2_SCENE.finditer(stdout):
        key = glmark2_scene_key(m.group(1), m.group(2))
        if key in values:
            raise ValueError(f"scene {key} appears twice: name each benchmark's options apart")
        values[key] = float(m.group(3))
        values[f"{key}_ms"] = float(m.group(4))
    score = _GLMARK2_SCORE.search(stdout)
    if score is None:
        raise ValueError("no 'glmark2 Score' line: glmark2 did not finish")
    values["score"] = float(score.group(1))
    return values


_TIMEDEMO = re.compile(
    # ioquake3's CL_DemoCompleted: "3398 frames 372.7 seconds 9.1 fps 28.0/109.7/1856.0/38.3 ms"
    # (frame time min/mean/max/standard deviation; min and max are whole milliseconds)
    r"^(\d+) frames ([0-9.]+) seconds ([0-9.]+) fps ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms\s*$",
    re.M)


def parse_ioquake3_timedemo(stdout: str) -> dict[str, float]:
    """An ioquake3 timedemo's result line: `frames`, `seconds`, `fps` (frames over seconds),
    the frame times `frame_min_ms`, `frame_ms` (mean), `frame_max_ms`, `frame_sd_ms`, and the
    frame rates they mean: `min_fps` (1000 / the longest frame: seed 002's "lowest recorded
    framerate") and `max_fps` (1000 / the shortest; the engine counts whole milliseconds, so
    a frame under 1 ms gives none)."""
    found = _TIMEDEMO.findall(stdout)
    if not found:
        raise ValueError("no timedemo result line ('N frames S seconds F fps ...'): the demo did "
                         "not play to its end")
    if len(found) > 1:
        raise ValueError(f"{len(found)} timedemo result lines: play one demo per sample")
    frames, seconds, fps, lo, mean, hi, sd = (float(x) for x in found[0])
    values = {"frames": frames, "seconds": seconds, "fps": fps, "frame_min_ms": lo,
              "frame_ms": mean, "frame_max_ms": hi, "frame_sd_ms": sd}
    if hi > 0:
        values["min_fps"] = 1000.0 / hi
    if lo > 0:
        values["max_fps"] = 1000.0 / lo
    return values


def close_enough(reference: bytes, data: bytes, max_diff: int, max_fraction: float,
                 fmt: str = "u8") -> tuple[bool, int, float]:
    """Whether data matches reference element for element within a tolerance.

    An element is a byte (`u8`) or a 16-bit signed little-endian audio sample (`s16le`: a
    sample one step off can change both of its bytes, by 255 in one). Returns (within, largest
    element difference, fraction of elements that differ). Different lengths are never close
    (a different image size or a shorter decoded stream is not a rounding difference).
    """
    # numpy is imported here, not at the top: every start of the command line imports this
    # module (the workloads' output checks), and only comparing outputs computes with numpy.
    import numpy as np

    width, dtype, never = (2, "<i2", 65536) if fmt == "s16le" else (1, "u1", 256)
    if len(reference) != len(data) or len(data) % width:
        return False, never, 1.0
    if not data:
        return True, 0, 0.0
    a = np.frombuffer(reference, dtype=dtype)
    b = np.frombuffer(data, dtype=dtype)
    largest, differing = 0, 0
    # In slices: 20 minutes of decoded audio are 106 M samples, and whole int32 copies of both
    # would take over a GB beside the run.
    for i in range(0, len(a), CLOSE_SLICE):
        diff = np.abs(a[i:i + CLOSE_SLICE].astype(np.int32) - b[i:i + CLOSE_SLICE].astype(np.int32))
        largest = max(largest, int(diff.max()))
        differing += int(np.count_nonzero(diff))
    fraction = differing / len(a)
    return largest <= max_diff and fraction <= max_fraction, largest, fraction


CLOSE_SLICE = 1 << 22


BUILTIN_PARSERS.update({
    "openssl-speed": parse_openssl_speed,
    "speedtest1": parse_speedtest1,
    "json": parse_json,
    "glmark2": parse_glmark2,
    "ioquake3-timedemo": parse_ioquake3_timedemo,
})
