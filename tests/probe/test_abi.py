from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from abibench.abi import ABIS, check_artifact, get_abi, parse_abi_list
from abibench.elf import read_elf, section_sizes
from abibench.errors import AbiMismatchError, UsageError

SRC = "int main(void) { return 0; }\n"


def _compile(tmp_path: Path, flag: str) -> Path:
    src = tmp_path / "t.c"
    src.write_text(SRC)
    out = tmp_path / f"t{flag}"
    subprocess.run(["gcc", flag, "-O2", "-o", str(out), str(src)], check=True)
    return out


@pytest.mark.parametrize("flag,abi", [("-m32", "i386"), ("-m64", "x86_64"), ("-mx32", "x32")])
def test_built_artifact_matches_its_abi(tmp_path: Path, flag: str, abi: str) -> None:
    info = check_artifact(_compile(tmp_path, flag), ABIS[abi])
    assert info.elf_class == ABIS[abi].elf_class
    assert info.interpreter == ABIS[abi].loader


def test_x32_and_i386_are_told_apart_by_machine(tmp_path: Path) -> None:
    x32 = _compile(tmp_path, "-mx32")
    i386 = _compile(tmp_path, "-m32")
    assert read_elf(x32).elf_class == read_elf(i386).elf_class == 32
    with pytest.raises(AbiMismatchError, match="x32"):
        check_artifact(x32, ABIS["i386"])
    with pytest.raises(AbiMismatchError, match="i386"):
        check_artifact(i386, ABIS["x32"])


def test_wrong_class_is_rejected_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(AbiMismatchError, match=r"built for x86_64 .* but the file is i386.*-m64"):
        check_artifact(_compile(tmp_path, "-m32"), ABIS["x86_64"])


def test_non_elf_is_rejected(tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(AbiMismatchError, match="not a readable ELF"):
        check_artifact(script, ABIS["x86_64"])


def test_sizes_add_up(tmp_path: Path) -> None:
    exe = _compile(tmp_path, "-m64")
    sizes = section_sizes(exe)
    assert sizes.file == exe.stat().st_size
    assert 0 < sizes.text < sizes.file
    assert sizes.stripped is not None and sizes.stripped < sizes.file


def test_unknown_abi_names_the_choices() -> None:
    with pytest.raises(UsageError, match="unknown ABI 'i486': choose one of i386, x86_64"):
        get_abi("i486")
    assert [a.name for a in parse_abi_list("i386, x86_64")] == ["i386", "x86_64"]
