"""`abibench inspect`: ABI identity, library resolution per ABI, and seed 000's "wrong ELF class"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from abibench.errors import UsageError
from abibench.obtain.libraries import in_root, inspect_binary, ld_so_conf_dirs

Cli = Callable[..., subprocess.CompletedProcess[str]]


WRONG = ("wrong ELF class: {bad} is ELFCLASS32 i386, needs x86_64; install the amd64 package or "
         "remove it from the path")


def _cc(*args: str) -> None:
    subprocess.run(["gcc", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 64-bit program needing libfoo.so, a 64-bit libfoo in good/, a 32-bit one in bad/."""
    d = tmp_path_factory.mktemp("planted")
    (d / "foo.c").write_text("int foo(void) { return 42; }\n")
    (d / "main.c").write_text("int foo(void);\nint main(void) { return foo() == 42 ? 0 : 1; }\n")
    for sub in ("good", "bad", "app/lib"):
        (d / sub).mkdir(parents=True)
    _cc("-m64", "-shared", "-fPIC", "-o", str(d / "good/libfoo.so"), str(d / "foo.c"))
    _cc("-m32", "-shared", "-fPIC", "-o", str(d / "bad/libfoo.so"), str(d / "foo.c"))
    _cc("-m64", "-o", str(d / "main"), str(d / "main.c"), f"-L{d / 'good'}", "-lfoo")
    # The same program finding its library through RUNPATH=$ORIGIN/lib.
    shutil.copy(d / "good/libfoo.so", d / "app/lib/libfoo.so")
    _cc("-m64", "-o", str(d / "app/main"), str(d / "main.c"), f"-L{d / 'good'}", "-lfoo",
        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib")
    for abi, flag in (("i386", "-m32"), ("x32", "-mx32")):
        _cc(flag, "-o", str(d / f"hello-{abi}"), str(d / "foo.c"), "-Dfoo=main")
    return {"dir": d, "main": d / "main", "good": d / "good", "bad": d / "bad"}


def test_planted_32_bit_library_before_the_right_one(planted: dict[str, Path]) -> None:
    ins = inspect_binary(planted["main"], library_path=(f"{planted['bad']}:{planted['good']}",),
                         use_env=False)
    assert ins.abi == "x86_64" and ins.elf_class == 64
    foo = next(lib for lib in ins.libraries if lib.name == "libfoo.so")
    # ld.so skips the wrong class and goes on, so the right one is what loads...
    assert foo.path == str(planted["good"] / "libfoo.so") and foo.found_via == "--library-path"
    assert [r.path for r in foo.rejected] == [str(planted["bad"] / "libfoo.so")]
    # ... and the trap is still named, with the fix.
    (diag,) = ins.diagnostics
    assert diag.level == "warning"
    assert diag.message.startswith(WRONG.format(bad=planted["bad"] / "libfoo.so"))
    assert not ins.ok


def test_only_the_32_bit_library_is_an_error_as_for_ld_so(planted: dict[str, Path]) -> None:
    ins = inspect_binary(planted["main"], library_path=(str(planted["bad"]),), use_env=False)
    foo = next(lib for lib in ins.libraries if lib.name == "libfoo.so")
    assert foo.path is None
    (diag,) = ins.diagnostics
    assert diag.level == "error" and diag.message == WRONG.format(bad=planted["bad"] / "libfoo.so")
    # The real loader agrees: it refuses to start the program for the same reason.
    real = subprocess.run([str(planted["main"])], capture_output=True, text=True, check=False,
                          env=dict(os.environ, LD_LIBRARY_PATH=str(planted["bad"])))
    assert real.returncode != 0 and "wrong ELF class: ELFCLASS32" in real.stderr


def test_missing_library_names_the_fix(planted: dict[str, Path]) -> None:
    ins = inspect_binary(planted["main"], use_env=False)
    (diag,) = ins.diagnostics
    assert diag.level == "error"
    assert diag.message.startswith("libfoo.so (needed by ") and "not found for x86_64" in \
        diag.message and "--library-path" in diag.message


def test_runpath_origin_and_system_libraries(planted: dict[str, Path]) -> None:
    ins = inspect_binary(planted["dir"] / "app/main", use_env=False)
    assert ins.ok, ins.diagnostics
    assert ins.runpath == ("$ORIGIN/lib",)
    by_name = {lib.name: lib for lib in ins.libraries}
    assert by_name["libfoo.so"].found_via == "RUNPATH"
    assert by_name["libfoo.so"].path == str(planted["dir"] / "app/lib/libfoo.so")
    assert by_name["libc.so.6"].path is not None
    assert ins.sizes is not None and (ins.sizes["text"] or 0) > 0


def test_i386_and_x32_are_told_apart(planted: dict[str, Path]) -> None:
    i386 = inspect_binary(planted["dir"] / "hello-i386", use_env=False, sizes=False)
    x32 = inspect_binary(planted["dir"] / "hello-x32", use_env=False, sizes=False)
    assert (i386.abi, i386.elf_class, i386.machine) == ("i386", 32, "EM_386")
    assert (x32.abi, x32.elf_class, x32.machine) == ("x32", 32, "EM_X86_64")
    assert i386.ok and x32.ok, (i386.diagnostics, x32.diagnostics)
    # Each resolves its own libc, never the other's or the 64-bit one.
    libc = {ins.abi: next(lib for lib in ins.libraries if lib.name == "libc.so.6").path
            for ins in (i386, x32)}
    assert len({libc["i386"], libc["x32"]}) == 2
    for abi, path in libc.items():
        assert path is not None
        assert inspect_binary(Path(path), use_env=False, sizes=False).abi == abi


def _sysroot(base: Path, planted: dict[str, Path]) -> Path:
    """A minimal amd64 root laid out like Debian's, with the loader behind an absolute symlink."""
    root = base / "root"
    libdir = root / "usr/lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (root / "lib64").mkdir()
    (root / "lib").symlink_to("usr/lib")
    for name in ("libc.so.6", "ld-linux-x86-64.so.2"):
        shutil.copy(Path("/lib/x86_64-linux-gnu") / name, libdir / name)
    # Absolute, as in Debian's package: followed outside the root it would be the host's loader.
    (root / "lib64/ld-linux-x86-64.so.2").symlink_to("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    shutil.copy(planted["good"] / "libfoo.so", root / "usr/lib/libfoo.so")
    return root


def test_sysroot_resolves_inside_it_and_finds_the_planted_library(
        planted: dict[str, Path], tmp_path: Path) -> None:
    root = _sysroot(tmp_path, planted)
    ins = inspect_binary(planted["main"], sysroot=root, sizes=False)
    assert ins.ok, ins.diagnostics
    assert ins.interpreter_path == str(root / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    assert all(lib.path and lib.path.startswith(str(root)) for lib in ins.libraries)
    # A 32-bit libfoo earlier in the root's own search path (/lib64 before /lib) is named.
    shutil.copy(planted["bad"] / "libfoo.so", root / "lib64/libfoo.so")
    ins = inspect_binary(planted["main"], sysroot=root, sizes=False)
    (diag,) = ins.diagnostics
    assert diag.message.startswith(WRONG.format(bad=root / "lib64/libfoo.so"))
    assert next(lib for lib in ins.libraries if lib.name == "libfoo.so").path == \
        str(root / "usr/lib/libfoo.so")


def test_sysroot_without_a_loader(planted: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    ins = inspect_binary(planted["main"], sysroot=root, sizes=False)
    assert ins.interpreter_path is None
    msgs = [d.message for d in ins.diagnostics]
    assert "interpreter /lib64/ld-linux-x86-64.so.2 not found in" in msgs[0]
    assert "install libc6:amd64" in msgs[0]


def test_in_root_follows_symlinks_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "a/b/f").write_text("x")
    (tmp_path / "abs").symlink_to("/a/b")
    (tmp_path / "rel").symlink_to("a/../a/b")
    (tmp_path / "loop").symlink_to("/loop")
    assert in_root(tmp_path, "/abs/f") == tmp_path / "a/b/f"
    assert in_root(tmp_path, "/rel/f") == tmp_path / "a/b/f"
    assert in_root(tmp_path, "/../../a/b/f") == tmp_path / "a/b/f"
    assert not in_root(tmp_path, "/loop/f").is_file()


def test_ld_so_conf_includes(tmp_path: Path) -> None:
    (tmp_path / "etc/ld.so.conf.d").mkdir(parents=True)
    (tmp_path / "etc/ld.so.conf").write_text("# comment\ninclude /etc/ld.so.conf.d/*.conf\n/opt/x\n")
    (tmp_path / "etc/ld.so.conf.d/b.conf").write_text("/usr/lib/b\n")
    (tmp_path / "etc/ld.so.conf.d/a.conf").write_text("/usr/lib/a  # trailing\n")
    assert ld_so_conf_dirs(tmp_path) == ["/usr/lib/a", "/usr/lib/b", "/opt/x"]


def test_not_elf_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "script").write_text("#!/bin/sh\n")
    with pytest.raises(UsageError, match="not an ELF file"):
        inspect_binary(tmp_path / "script")
    with pytest.raises(UsageError, match="no such file"):
        inspect_binary(tmp_path / "missing")


def test_cli(cli: Cli, planted: dict[str, Path]) -> None:
    bad = f"{planted['bad']}:{planted['good']}"
    r = cli("inspect", str(planted["main"]), "--library-path", bad)
    assert r.returncode == 1
    assert WRONG.format(bad=planted["bad"] / "libfoo.so") in r.stdout
    assert f"libfoo.so => {planted['good'] / 'libfoo.so'} (--library-path)" in r.stdout

    r = cli("inspect", "--json", str(planted["dir"] / "hello-i386"),
            str(planted["dir"] / "hello-x32"))
    assert r.returncode == 0, r.stderr
    docs = json.loads(r.stdout)
    assert [(d["abi"], d["ok"]) for d in docs] == [("i386", True), ("x32", True)]
    assert docs[0]["sizes"]["file"] > 0 and docs[0]["interpreter"] == "/lib/ld-linux.so.2"

    r = cli("inspect", "/etc/hostname")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not an ELF file" in r.stderr
