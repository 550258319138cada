"""An ELF file's header facts are kept under its content (elf.kept_facts, kept.py) and change
nothing a reader says: every answer and every error of a damaged or hostile file is the one the
live parse gives (the readers of before), whether the facts were kept or not."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abibench import elf
from abibench.abi import ABIS
from abibench.errors import UsageError
from abibench.obtain import libraries, prebuilt
from abibench.obtain.libraries import inspect_binary

from ..conftest import Cli

SCALE = int(os.environ.get("ABIBENCH_INVARIANTS_SCALE", "1"))


def _no_strip(_: Path, __: str) -> int | None:
    return None


def _outcome(call: Callable[[], object]) -> tuple[str, ...]:
    try:
        return ("ok", repr(call()))
    except Exception as exc:  # the exception itself is what is compared
        return ("error", type(exc).__name__, str(exc))


def _live_header(path: Path) -> object:
    if not path.is_file():
        raise ValueError("not a regular file")
    return libraries._read_header_live(path)


def _readings(path: Path) -> list[tuple[str, ...]]:
    """What each reader says (value or error), through the kept facts."""
    return [_outcome(lambda: elf.read_elf(path)),
            _outcome(lambda: elf.section_sizes(path, _no_strip)),
            _outcome(lambda: libraries._read_header(path)),
            _outcome(lambda: inspect_binary(path, sizes=False, use_env=False))]


def _live_readings(path: Path) -> list[tuple[str, ...]]:
    """What each reader said before there were kept facts: the live parse alone."""
    with mock.patch.object(elf, "kept_facts", lambda _: None), \
            mock.patch.object(libraries, "kept_facts", lambda _: None):
        return _readings(path)


def make_bases(src: Path) -> list[bytes]:
    """Real ELF files to damage: a 64-bit and a 32-bit program, and a shared library."""
    (src / "p.c").write_text("int main(void) { return 0; }\n")
    out = []
    for flags in ((), ("-m32",)):
        exe = src / f"p{len(flags)}"
        subprocess.run(["gcc", "-O2", *flags, "-o", str(exe), str(src / "p.c")], check=True)
        out.append(exe.read_bytes())
    out.append(Path("/lib/ld-linux.so.2").read_bytes() if Path("/lib/ld-linux.so.2").is_file()
               else Path("/usr/bin/true").read_bytes())
    return out


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    return make_bases(tmp_path_factory.mktemp("elf"))


def _tables(data: bytes) -> list[tuple[int, int]]:
    """(start, length) of the ELF header, the program headers and the section headers."""
    out = [(0, min(len(data), 64))]
    if data[4:5] == b"\x02":
        phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
        phent, phnum, shent, shnum = struct.unpack_from("<HHxxHH", data, 0x36)
    else:
        phoff, shoff = struct.unpack_from("<II", data, 0x1C)
        phent, phnum, shent, shnum = struct.unpack_from("<HHxxHH", data, 0x2A)
    out += [(phoff, phent * phnum), (shoff, shent * shnum), (0, len(data))]
    return [(s, n) for s, n in out if n > 0 and s < len(data)]


# How a file is damaged: cut short, some bytes of a header table overwritten, or no ELF at all.
DAMAGE = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("poke"), st.tuples(st.integers(0, 3), st.floats(0, 1),
                                         st.binary(min_size=1, max_size=8))),
    st.tuples(st.just("noise"), st.binary(max_size=200)),
    st.tuples(st.just("magic+noise"), st.binary(max_size=200)),
)


def _damaged(base: bytes, kind: str, arg: object) -> bytes:
    if kind == "cut":
        assert isinstance(arg, float)
        return base[:int(len(base) * arg)]
    if kind == "noise":
        assert isinstance(arg, bytes)
        return arg
    if kind == "magic+noise":
        assert isinstance(arg, bytes)
        return b"\x7fELF" + arg
    assert isinstance(arg, tuple)
    which, where, data = arg
    assert isinstance(data, bytes)
    tables = _tables(base)
    start, length = tables[which % len(tables)]
    at = start + int(length * where) % max(length, 1)
    return base[:at] + data + base[at + len(data):]


@settings(max_examples=40 * SCALE, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.integers(0, 2), damage=DAMAGE)
def test_a_damaged_elf_gets_the_answer_and_the_error_it_got_before(
        bases: list[bytes], which: int, damage: tuple[str, object]) -> None:
    with tempfile.TemporaryDirectory() as tmp, \
            mock.patch.dict(os.environ, {"ABIBENCH_CACHE": str(Path(tmp, "cache"))}):
        path = Path(tmp, "program")
        path.write_bytes(_damaged(bases[which], *damage))
        path.chmod(0o755)
        before = _live_readings(path)
        assert _readings(path) == before  # facts read now (and kept if the parse succeeded)
        assert _readings(path) == before  # facts read back
        # A prebuilt program's refusal (or acceptance) for either ABI: the same words.
        for abi in (ABIS["i386"], ABIS["x86_64"]):
            said = _outcome(partial(prebuilt.identify, abi, path))
            with mock.patch.object(elf, "kept_facts", lambda _: None):
                assert _outcome(partial(prebuilt.identify, abi, path)) == said


def test_the_facts_are_kept_by_content_and_by_the_reader(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    parses = [0]
    real = elf._parse_facts

    def counted(fh: object) -> elf.ElfFacts:
        parses[0] += 1
        return real(fh)  # type: ignore[arg-type]

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copy("/usr/bin/true", a)
    shutil.copy("/usr/bin/true", b)
    with mock.patch.dict(os.environ, {"ABIBENCH_CACHE": str(cache)}), \
            mock.patch.object(elf, "_parse_facts", counted):
        info = elf.read_elf(a)
        assert elf.read_elf(b) == replace(info, path=str(b))
        assert parses[0] == 1 and len(list((cache / "elf").iterdir())) == 1  # one content
        # Another content at the same path, its times put back: other facts, never the old.
        stamp = os.stat(a)
        shutil.copy(sys.executable, a)
        os.utime(a, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert elf.read_elf(a) == elf._read_elf_live(a) and parses[0] == 2
        with mock.patch.object(elf, "READER", "another pyelftools"):
            assert elf.read_elf(b) == elf._read_elf_live(b) and parses[0] == 3
        with mock.patch.object(elf, "KEEP_MAX", 100):  # too big to be worth a digest: live
            assert elf.kept_facts(tmp_path / "a") is None


def test_facts_of_a_file_written_while_it_is_read_are_not_kept(tmp_path: Path) -> None:
    exe = tmp_path / "p"
    shutil.copy("/usr/bin/true", exe)
    real = elf._parse_facts

    def written_meanwhile(fh: object) -> elf.ElfFacts:
        with exe.open("ab") as out:
            out.write(b"\0" * 16)
        return real(fh)  # type: ignore[arg-type]

    with mock.patch.dict(os.environ, {"ABIBENCH_CACHE": str(tmp_path / "cache")}), \
            mock.patch.object(elf, "_parse_facts", written_meanwhile):
        assert elf.kept_facts(exe) is None
        assert not (tmp_path / "cache" / "elf").exists() or \
            not list((tmp_path / "cache" / "elf").glob("*.json"))


def test_a_hostile_program_is_refused_in_one_line_with_facts_kept_or_not(
        cli: Cli, tmp_path: Path, bases: list[bytes]) -> None:
    """Through the command line, cold and warm: the refusal of a program whose headers parse
    (a 32-bit program named for x86_64) and of one whose headers do not."""
    wrong = tmp_path / "wrong"
    wrong.write_bytes(bases[1])
    cut = tmp_path / "cut"
    cut.write_bytes(bases[0][:100])
    for f in (wrong, cut):
        f.chmod(0o755)
    for _ in range(2):
        r = cli("run", "--binary", f"x86_64={wrong}", "--binary", f"i386={wrong}", "--rounds", "1")
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "is i386 (ELFCLASS32 EM_386), not x86_64" in r.stderr
        r = cli("inspect", str(cut))
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "not an ELF file" in r.stderr
    with pytest.raises(UsageError, match="not an ELF file"):
        inspect_binary(cut)
