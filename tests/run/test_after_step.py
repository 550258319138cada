"""[run] after: an untimed step after every sample, before its outputs are validated."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]

PROFILE = '''id = "after"
title = "writes a number; the after step copies it where [validate] reads it"
suites = []
[source]
files = ["prog.c"]
build = ["sh", "-c", "{cc} {cflags} -o {out}/prog prog.c"]
artifacts = ["prog"]
[run]
command = ["{bin}/prog", "{work}/made.txt"]
after = AFTER
[validate]
files = ["{work}/copied.txt"]
'''
PROG = r'''#include <stdio.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "w");
    if (!f) return 1;
    fprintf(f, "%d\n", (int)sizeof(void *));  /* 4 or 8: the ABIs must NOT agree */
    return fclose(f) != 0;
}
'''


def _profile(tmp_path: Path, after: list[str]) -> Path:
    (tmp_path / "prog.c").write_text(PROG)
    path = tmp_path / "after.toml"
    path.write_text(PROFILE.replace("AFTER", json.dumps(after)))
    return path


def test_the_after_step_output_is_validated_and_its_failure_fails_the_sample(
        cli: Cli, tmp_path: Path) -> None:
    # The copy keeps only what both ABIs share (the line count), so they agree.
    same = _profile(tmp_path, ["sh", "-c", "wc -l < {work}/made.txt > {work}/copied.txt"])
    proc = cli("run", str(same), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(cli("export").stdout)
    checks = {s["check"] for s in doc["samples"]}
    assert len(checks) == 1 and None not in checks

    # The whole file: 4 against 8, a miscompare found through the after step's output.
    differ = _profile(tmp_path, ["sh", "-c", "cp {work}/made.txt {work}/copied.txt"])
    proc = cli("run", str(differ), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html")
    assert proc.returncode == 1 and "MISCOMPARE" in proc.stdout, proc.stdout[-2000:]

    failing = _profile(tmp_path, ["sh", "-c", "echo cannot decode >&2; exit 3"])
    proc = cli("run", str(failing), "--abi", "i386,x86_64", "--rounds", "1", "--warmup", "0",
               "--no-html")
    assert proc.returncode == 1, proc.stderr[-2000:]
    doc = json.loads(cli("export").stdout)
    errors = {s["target"]: s["error"] for s in doc["samples"]}
    assert set(errors) == {"i386", "x86_64"}
    for error in errors.values():
        assert error == "[run] after step failed (exit 3): cannot decode"
    assert all(s["status"] == "failed" for s in doc["samples"])
