"""A real `--binary` pair whose x86_64 program loads a library from outside its directory: no
verdict, exit 1, and the verdict back with --allow-host-libs (analyse/foreign.py). The generated
invariant is tests/invariants/test_host_libraries.py."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_a_real_prebuilt_pair_with_a_library_from_elsewhere(
        cli: Callable[..., Any], tmp_path: Path, fixtures: Path) -> None:
    """x86_64's program loads libvalue.so from a directory beside its own (an RPATH): the
    comparison would measure that library, not the program. No verdict, exit 1, the advice of
    --binary mode; with --allow-host-libs the verdict is back and the report says so.
    ~35 s on a busy 2-core machine: two whole `abibench run`s, with and without the option."""
    lib_dir, prog_dir = tmp_path / "lib", tmp_path / "bin"
    lib_dir.mkdir()
    prog_dir.mkdir()
    (tmp_path / "value.c").write_text("int value_of(void) { return 7; }\n")
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\nint value_of(void);\n'
        'int main(void) { printf("value: %d.0\\n", value_of()); return 0; }\n')
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib_dir / "libvalue.so"),
                    str(tmp_path / "value.c")], check=True)
    subprocess.run(["gcc", "-O2", "-o", str(prog_dir / "p64"), str(tmp_path / "main.c"),
                    f"-L{lib_dir}", "-lvalue", f"-Wl,-rpath,{lib_dir}"], check=True)
    subprocess.run(["gcc", "-m32", "-O2", "-o", str(prog_dir / "p32"), str(tmp_path / "value.c"),
                    str(tmp_path / "main.c")], check=True)
    args = ("run", "--binary", f"i386={prog_dir / 'p32'}", "--binary",
            f"x86_64={prog_dir / 'p64'}", "--rounds", "2", "--warmup", "0", "--no-html",
            "--metric", "value:units:higher=value: ([0-9.]+)")
    r = cli(*args)
    out = " ".join(r.stdout.split())
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-1000:]
    assert ("x86_64: no verdict (time or size): it loads the host's libvalue.so, so "
            "it measures the host's libvalue.so, not yours") in out, out
    assert "the recipe" not in out and "RPATH of $ORIGIN" in out
    assert "libvalue.so" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "faster" not in out and "slower" not in out
    r = cli(*args, "--allow-host-libs")
    out = " ".join(r.stdout.split())
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-1000:]
    assert "allowed (--allow-host-libs)" in out
    assert ("x86_64: its program's sizes count the host's libraries it loads: "
            "libvalue.so") in out, out
    # the choice is stored with the run: a later report agrees
    again = " ".join(cli("report", "latest").stdout.split())
    assert "no verdict" not in again and "libvalue.so" in again
