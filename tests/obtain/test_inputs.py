"""Deterministic inputs: the corpus (file choice, tar metadata, caching), the WAV, Lua scripts."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import wave
from pathlib import Path
from typing import Any

import pytest

from abibench.obtain import inputs
from abibench.obtain.inputs import (
    CorpusGroup,
    InputError,
    describe_input,
    generate_input,
    packaged_files,
    select_files,
    synth_pcm,
    wav_bytes_header,
    write_tar,
)

GROUPS = (
    CorpusGroup("text", 0.5, ("/t/",)),
    CorpusGroup("bin", 0.5, ("/b/",)),
)


def test_every_documented_kind_is_registered() -> None:
    assert {"corpus", "wav", "lua"} <= set(inputs.GENERATORS)


def test_select_files_keeps_order_caps_and_passes_the_shortfall_on() -> None:
    sizes = {"/t/a": 30, "/t/b": 40, "/t/c": 10, "/t/d": 0, "/b/x": 50, "/b/y": 60, "/b/z": 5,
             "/other/q": 1}
    chosen = select_files(sorted(sizes), GROUPS, 100, sizes.get)
    # text cap 50: a (30) fits, b (40) would overflow and is skipped, c (10) still fits
    assert [(g, p) for g, p, _ in chosen if g == "text"] == [("text", "/t/a"), ("text", "/t/c")]
    # the binary group takes the rest of the total (60): x (50), not y (60), then z (5)
    assert [p for g, p, _ in chosen if g == "bin"] == ["/b/x", "/b/z"]
    assert sum(s for _, _, s in chosen) <= 100
    assert "/t/d" not in [p for _, p, _ in chosen]  # empty files are left out
    assert "/other/q" not in [p for _, p, _ in chosen]


def test_select_files_skips_what_is_not_a_regular_file_and_huge_files() -> None:
    sizes: dict[str, int | None] = {"/t/link": None, "/t/big": inputs.MAX_FILE + 1, "/t/ok": 7}
    chosen = select_files(sorted(sizes), GROUPS, 10 * inputs.MAX_FILE, sizes.get)
    assert [p for _, p, _ in chosen] == ["/t/ok"]


def test_packaged_files_reads_dpkg_lists_sorted_bytewise(tmp_path: Path) -> None:
    (tmp_path / "b.list").write_text("/usr\n/usr/b\n/usr/B\n")
    (tmp_path / "a.list").write_text("/usr\n/usr/a\n/usr/b\n")
    (tmp_path / "a.md5sums").write_text("ignored /usr/zz\n")
    assert packaged_files(tmp_path) == ["/usr", "/usr/B", "/usr/a", "/usr/b"]


def test_write_tar_is_byte_identical_and_normalised(tmp_path: Path) -> None:
    files = []
    for i, name in enumerate(["b.txt", "a.bin"]):
        p = tmp_path / name
        p.write_bytes(bytes([i]) * (1000 + i))
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
        files.append(str(p))
    write_tar(files, tmp_path / "one.tar")
    for f in files:
        os.utime(f, (2_000_000, 2_000_000))  # a new mtime must not change the tar
    write_tar(files, tmp_path / "two.tar")
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
    with tarfile.open(tmp_path / "one.tar") as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == [f.lstrip("/") for f in files]  # the order given
    assert all(m.mtime == 0 and m.uid == 0 and m.gid == 0 for m in members)


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not any(Path("/var/lib/dpkg/info").glob("*.list")):
        pytest.skip("not a Debian system (no dpkg file lists)")
    root = tmp_path_factory.mktemp("inputs")
    return generate_input("corpus", {"kind": "corpus", "mb": 2}, root)


def test_corpus_is_a_mix_of_packaged_files_with_a_recorded_digest(small_corpus: Path) -> None:
    info: dict[str, Any] = dict(describe_input(small_corpus))
    assert info["kind"] == "corpus"
    assert info["sha256"] == hashlib.sha256(small_corpus.read_bytes()).hexdigest()
    assert 0.9 * 2 * inputs.MIB <= info["content_bytes"] <= 2 * inputs.MIB
    assert set(info["groups"]) == {"text", "compressed", "binary"}
    assert all(g["files"] > 0 for g in info["groups"].values())
    listing = small_corpus.with_suffix(".list").read_text().splitlines()
    assert listing == sorted(listing, key=lambda p: p.encode())
    with tarfile.open(small_corpus) as tar:
        names = tar.getnames()
    assert names == [p.lstrip("/") for p in listing]


def test_corpus_is_cached_and_regenerates_identically(small_corpus: Path) -> None:
    first = describe_input(small_corpus)["sha256"]
    mtime = small_corpus.stat().st_mtime_ns
    inputs._corpus_cached.cache_clear()
    again = generate_input("corpus", {"kind": "corpus", "mb": 2}, small_corpus.parents[2])
    assert again == small_corpus and again.stat().st_mtime_ns == mtime  # reused, not rewritten
    small_corpus.unlink()
    inputs._corpus_cached.cache_clear()
    remade = generate_input("corpus", {"kind": "corpus", "mb": 2}, small_corpus.parents[2])
    assert hashlib.sha256(remade.read_bytes()).hexdigest() == first


def test_corpus_refuses_bad_parameters(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="mb"):
        generate_input("c", {"kind": "corpus", "mb": 0}, tmp_path)
    with pytest.raises(InputError, match="no parameter size"):
        generate_input("c", {"kind": "corpus", "size": 3}, tmp_path)


def test_wav_header_matches_python_wave_reader(tmp_path: Path) -> None:
    path = generate_input("wav", {"kind": "wav", "seconds": 2}, tmp_path)
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (2, 2, 44100)
        assert w.getnframes() == 2 * 44100
    assert describe_input(path)["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(wav_bytes_header(10)) == 44


def test_wav_samples_are_fixed_integer_arithmetic() -> None:
    pcm = synth_pcm(1)
    assert pcm.dtype.str == "<i2" and len(pcm) == 2 * 44100
    # audible, not clipped flat, and the two channels differ (stereo for FLAC's decorrelation)
    assert 1000 < int(abs(pcm.astype("int64")).mean()) < 20000
    assert (pcm[0::2] != pcm[1::2]).any()
    assert int(pcm.max()) < 32767 and int(pcm.min()) > -32768
    # Integer-only synthesis: the bytes are the same on every machine and numpy version. If
    # this changes, bump WAV_RECIPE_VERSION (cached inputs and old results name the old bytes).
    assert hashlib.sha256(pcm.tobytes()).hexdigest()[:16] == GOLDEN_WAV_1S


GOLDEN_WAV_1S = "b374169e472e0d94"


def test_wav_is_cached_by_recipe(tmp_path: Path) -> None:
    a = generate_input("wav", {"kind": "wav", "seconds": 1}, tmp_path)
    mtime = a.stat().st_mtime_ns
    b = generate_input("wav", {"kind": "wav", "seconds": "1"}, tmp_path)
    assert a == b and b.stat().st_mtime_ns == mtime
    assert json.loads((a.parent / (a.name + ".json")).read_text())["recipe"]["seconds"] == 1


def test_lua_scripts_are_copied_by_digest(tmp_path: Path) -> None:
    d = generate_input("scripts", {"kind": "lua"}, tmp_path)
    names = {p.name for p in d.glob("*.lua")}
    assert {"bench.lua", "binary-trees.lua", "n-body.lua", "spectral-norm.lua", "fannkuch.lua",
            "string-build.lua"} <= names
    assert generate_input("scripts", {"kind": "lua"}, tmp_path) == d
    for p in d.glob("*.lua"):
        assert p.read_bytes() == (inputs.LUA_DIR / p.name).read_bytes()
