"""Built-in parsers, on real outputs of the programs abibench builds (tests/data/seeds/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from abibench.paths import PROFILES_DIR
from abibench.run.samples import ParseError, parse_metrics, validation_value
from abibench.workloads.parsers import BUILTIN_PARSERS, parse_openssl_speed, parse_speedtest1
from abibench.workloads.profile import load_profile

DATA = Path(__file__).parents[1] / "data" / "seeds"
SIZES = (16, 64, 256, 1024, 8192, 16384)
CIPHERS = ("aes_128_cbc", "sha256", "sha1", "md5", "des_ede3", "blowfish")
PKEYS = ("rsa2048", "rsa4096", "dsa2048", "ecdsap256")


def _openssl_captures() -> list[Path]:
    return sorted(p for p in DATA.glob("openssl-speed-*.txt") if "no-legacy" not in p.name)


def test_parsers_are_registered() -> None:
    assert BUILTIN_PARSERS["openssl-speed"] is parse_openssl_speed
    assert BUILTIN_PARSERS["speedtest1"] is parse_speedtest1


@pytest.mark.parametrize("capture", _openssl_captures(), ids=lambda p: p.stem)
def test_openssl_speed_every_figure(capture: Path) -> None:
    values = parse_openssl_speed(capture.read_text())
    for alg in CIPHERS:
        for size in SIZES:
            assert values[f"{alg}_{size}"] > 1e6, (alg, size)  # bytes/s: at least 1 MB/s
    for key in PKEYS:
        assert values[f"{key}_sign"] > 0 and values[f"{key}_verify"] > 0
    assert values["rsa2048_sign"] > values["rsa4096_sign"]
    assert values["bn_limb_bits"] in (32.0, 64.0)


def test_openssl_speed_numbers_and_units() -> None:
    values = parse_openssl_speed((DATA / "openssl-speed-3.0.20-x86_64.txt").read_text())
    # "sha256   108547.70k ..." is in 1000s of bytes per second
    assert values["sha256_16"] == pytest.approx(108547.70e3)
    assert values["aes_128_cbc_16384"] == pytest.approx(1369593.17e3)
    assert values["rsa2048_sign"] == 3416.2 and values["rsa2048_verify"] == 51051.4
    assert values["ecdsap256_sign"] == 46583.3 and values["ecdsap256_verify"] == 15309.1
    assert values["bn_limb_bits"] == 64.0


def test_openssl_speed_leaves_out_algorithms_that_did_not_run() -> None:
    # A build without the legacy provider prints Blowfish as 0.00: no figure, not a zero.
    values = parse_openssl_speed(
        (DATA / "openssl-speed-3.0.20-x86_64-no-legacy-provider.txt").read_text())
    assert not any(k.startswith("blowfish") for k in values)
    assert values["md5_16"] == pytest.approx(77244.28e3)


def test_openssl_speed_reads_the_old_format_of_seed_002() -> None:
    # OpenSSL 0.9.7e as printed in seed 002 (a 2005 study): no space after "options:",
    # five block sizes, names with spaces.
    text = """OpenSSL 0.9.7e 25 Oct 2004
options:bn(64,32) md2(int) rc4(idx,int) des(ptr,risc1,16,long) aes(partial) idea(int) blowfish(idx)
The 'numbers' are in 1000s of bytes per second processed.
type 16 bytes 64 bytes 256 bytes 1024 bytes 8192 bytes
md5 17130.05k 59096.75k 169058.56k 314997.76k 425473.37k
hmac(md5) 23604.52k 74008.53k 197261.27k 339661.82k 430830.93k
des ede3 20636.86k 21323.07k 21541.21k 21596.84k 21613.23k
blowfish cbc 95399.50k 101648.68k 103123.63k 103719.25k 103890.94k
sign verify sign/s verify/s
rsa 2048 bits 0.0114s 0.0003s 87.8 3073.1
dsa 2048 bits 0.0030s 0.0037s 330.6 268.2
"""
    values = parse_openssl_speed(text)
    assert values["bn_limb_bits"] == 32.0
    assert values["des_ede3_8192"] == pytest.approx(21613.23e3)
    assert values["blowfish_cbc_16"] == pytest.approx(95399.50e3)
    assert values["hmac_md5_1024"] == pytest.approx(339661.82e3)
    assert values["rsa2048_sign"] == 87.8 and values["dsa2048_verify"] == 268.2
    assert "md5_16384" not in values


def test_openssl_speed_rejects_other_output() -> None:
    with pytest.raises(ValueError, match="openssl speed"):
        parse_openssl_speed("hello\nworld\n")


@pytest.mark.parametrize("capture", sorted(DATA.glob("speedtest1-*.txt")), ids=lambda p: p.stem)
def test_speedtest1(capture: Path) -> None:
    values = parse_speedtest1(capture.read_text())
    assert values["total"] > 0
    tests = {k: v for k, v in values.items() if k[1:].isdigit()}
    assert {"t100", "t142", "t150", "t310", "t980", "t990"} <= set(tests)
    # TOTAL is the sum of the per-test times as printed (each rounded to milliseconds)
    assert sum(tests.values()) == pytest.approx(values["total"], abs=0.001 * len(tests) + 0.002)


def test_speedtest1_known_values_and_missing_total() -> None:
    text = (DATA / "speedtest1-3.40.1-i386.txt").read_text()
    values = parse_speedtest1(text)
    assert values["t100"] == 0.187 and values["total"] == 12.906
    with pytest.raises(ValueError, match="TOTAL"):
        parse_speedtest1(text.replace("TOTAL", "T0TAL"))


def test_seed_profiles_parse_their_captures() -> None:
    """The profiles' metrics and validation patterns find what the real programs print."""
    sqlite = load_profile(PROFILES_DIR / "sqlite-speedtest1.toml")
    hashes = set()
    for capture in sorted(DATA.glob("speedtest1-*.txt")):
        text = capture.read_text()
        assert parse_metrics(sqlite.metrics, text)["total"] > 0
        hashes.add(validation_value(sqlite, text))
    assert len(hashes) == 1 and None not in hashes  # the same --verify hash on every ABI
    for name in ("openssl-speed", "openssl-speed-noasm"):
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        checks = set()
        for capture in _openssl_captures():
            text = capture.read_text()
            values = parse_metrics(wl.metrics, text)
            assert len(values) == len(wl.metrics) == 44
            assert values["aes_128_cbc_16"] > 1.0  # MB/s after the profile's scale
            checks.add(validation_value(wl, text))
        assert len(checks) == 1 and None not in checks  # known answers equal on every capture
    with pytest.raises(ParseError, match="blowfish"):
        parse_metrics(load_profile(PROFILES_DIR / "openssl-speed.toml").metrics,
                      (DATA / "openssl-speed-3.0.20-x86_64-no-legacy-provider.txt").read_text())


def test_close_enough_tolerates_small_differences_in_few_bytes() -> None:
    from abibench.workloads.parsers import close_enough

    ref = bytes(range(200)) * 5
    one_off = bytearray(ref)
    one_off[10] += 1
    one_off[500] -= 1
    assert close_enough(ref, bytes(one_off), 1, 0.01) == (True, 1, 2 / 1000)
    assert close_enough(ref, bytes(one_off), 0, 0.01)[0] is False
    assert close_enough(ref, bytes(one_off), 1, 0.001)[0] is False  # too many bytes differ
    far = bytearray(ref)
    far[3] = (far[3] + 100) % 256
    assert close_enough(ref, bytes(far), 2, 0.5)[:2] == (False, 100)
    assert close_enough(ref, ref[:-1], 255, 1.0) == (False, 256, 1.0)  # another size
    assert close_enough(b"", b"", 0, 0.0) == (True, 0, 0.0)


def test_close_enough_compares_audio_sample_by_sample() -> None:
    from abibench.workloads.parsers import close_enough

    ref = np.array([255, -1, 1000, -32768, 32767, 0], dtype="<i2").tobytes()
    # 255 -> 256 changes both bytes (0xff 0x00 -> 0x00 0x01): one step as a sample
    near = np.array([256, -1, 999, -32768, 32767, 0], dtype="<i2").tobytes()
    assert close_enough(ref, near, 255, 1.0)[1] == 255  # byte by byte: nonsense for audio
    assert close_enough(ref, near, 1, 0.5, "s16le") == (True, 1, 2 / 6)
    assert close_enough(ref, near, 1, 0.3, "s16le")[0] is False  # too many samples differ
    flipped = np.array([255, -1, 1000, 32767, 32767, 0], dtype="<i2").tobytes()
    assert close_enough(ref, flipped, 2048, 1.0, "s16le")[:2] == (False, 65535)
    assert close_enough(ref, ref[:-2], 2048, 1.0, "s16le") == (False, 65536, 1.0)  # shorter
    assert close_enough(ref + b"x", ref + b"x", 0, 0.0, "s16le")[0] is False  # half a sample


def test_close_enough_in_slices_sees_every_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    from abibench.workloads import parsers

    monkeypatch.setattr(parsers, "CLOSE_SLICE", 3)
    ref = np.zeros(10, dtype="<i2")
    data = ref.copy()
    data[[4, 9]] = [2, -5]  # in the second and the last, partial, slice
    assert parsers.close_enough(ref.tobytes(), data.tobytes(), 5, 0.2, "s16le") == (True, 5, 0.2)
    assert parsers.close_enough(ref.tobytes(), data.tobytes(), 4, 1.0, "s16le")[:2] == (False, 5)
