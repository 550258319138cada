"""The MP3 and Vorbis encoders (seed 002): built per ABI from Debian's sources, compared by
their decoded audio, since the encoded bytes legitimately differ by ABI.

On a 10-second WAV (the profiles encode 20 minutes). Building lame, libogg and libvorbis for
i386 and x86_64 takes about three minutes on 2 busy cores; the runs themselves a few seconds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from abibench.paths import PROFILES_DIR
from abibench.workloads.profile import load_profile

from .test_seeds import Cli, needs_apt_source

ENCODERS = ("lame-encode", "vorbis-encode")
# Overwrites 8 bytes of the x86_64 stream, 100 kB in, before it is decoded: a damaged frame
# (lame) or a page that fails its CRC and is dropped (Vorbis).
DAMAGE = ("test {abi} != x86_64 || printf UUUUUUUU | dd of={work}/%s bs=1 seek=100000 "
          "conv=notrunc 2>/dev/null; ")


def _tiny(name: str, dest: Path, damage: bool = False) -> Path:
    text = (PROFILES_DIR / f"{name}.toml").read_text()
    assert "seconds = 1200" in text
    text = text.replace("seconds = 1200", "seconds = 10")
    if damage:
        stream = "out.mp3" if name == "lame-encode" else "out.ogg"
        after = re.search(r"(?m)^after = \[(.*)\]$", text)
        assert after is not None
        words = json.loads(f"[{after.group(1)}]")
        # the decode as one shell line, behind the damage
        line = " ".join(words[2:]) if words[:2] == ["sh", "-c"] else " ".join(words)
        text = text.replace(after.group(0), "after = " + json.dumps(
            ["sh", "-c", DAMAGE % stream + line]))
    path = dest / f"{name}.toml"
    path.write_text(text)
    return path


def test_encoder_profiles_compare_decoded_audio_within_a_stated_tolerance() -> None:
    for name in (*ENCODERS, "deb-lame", "deb-oggenc"):
        wl = load_profile(PROFILES_DIR / f"{name}.toml")
        assert wl.close is not None and wl.close.format == "s16le", name
        assert wl.after and "decoded" in " ".join(wl.after), name
        assert wl.inputs["wav"]["seconds"] == 1200
        assert "games-media" in wl.suites
        assert "seeds" in wl.suites and (name in ENCODERS or "debian" in wl.suites)


@needs_apt_source
def test_encoders_build_per_abi_agree_on_the_audio_and_reject_a_damaged_stream(
        cli: Cli, tmp_path: Path) -> None:
    good = [str(_tiny(n, tmp_path)) for n in ENCODERS]
    proc = cli("run", *good, "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html", timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    doc = json.loads(cli("export").stdout)
    arts = {(a["workload"], a["target"]): a for a in doc["artifacts"]}
    for target in ("i386", "x86_64"):
        assert (arts[("lame-encode", target)]["source_package"],
                arts[("lame-encode", target)]["source_version"]) == ("lame", "3.100-6")
        assert arts[("vorbis-encode", target)]["source_version"] == "1.3.7-1"
    for wl in ENCODERS:
        samples = [s for s in doc["samples"] if s["workload"] == wl]
        assert {s["target"] for s in samples} == {"i386", "x86_64"}
        assert all(s["status"] == "ok" for s in samples), samples
        checks = {s["check"] for s in samples}
        # within the tolerance: both ABIs carry the reference's check value
        assert len(checks) == 1 and "~" in str(checks), (wl, checks)

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    bad = [str(_tiny(n, damaged, damage=True)) for n in ENCODERS]
    proc = cli("run", *bad, "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html", timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:] + proc.stdout[-2000:]
    assert "(builds: 0 new, 4 reused from cache)" in proc.stdout
    assert proc.stdout.count("MISCOMPARE") == 2, proc.stdout
    doc = json.loads(cli("export").stdout)
    for wl in ENCODERS:
        by = {s["target"]: s["check"] for s in doc["samples"] if s["workload"] == wl}
        assert "~" in by["i386"] and by["i386"] != by["x86_64"], by
        # lame: a damaged frame decodes far off; Vorbis: a dropped page makes it shorter
        assert re.search(r"differs from the run's first output by up to \d+ in [\d.]+% of "
                         r"samples", by["x86_64"]), by


def test_a_close_format_other_than_bytes_or_audio_is_refused_at_its_line(
        tmp_path: Path) -> None:
    import pytest

    from abibench.errors import ProfileError

    text = (PROFILES_DIR / "lame-encode.toml").read_text().replace('"s16le"', '"f32le"')
    bad = tmp_path / "lame-encode.toml"
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("close ="))
    with pytest.raises(ProfileError, match=rf"lame-encode.toml:{line}: close format .*s16le"):
        load_profile(bad)
