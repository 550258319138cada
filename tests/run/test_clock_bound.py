"""A counted run that loops until time has passed is named as such: under the step clock it
reads the clock a million times, and the run warns that its count measured how long it ran.
A program of fixed work that reads the clock a few times gets no warning. Both natively
(valgrind) and under the emulator (the QEMU plugin), where the step clock is the guest's."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]

PROGRAM = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    unsigned long n = 0;
    if (argc > 1 && strcmp(argv[1], "timed") == 0) {
        double end = now() + 1.5;         /* "run for 1.5 seconds", as a speed test does */
        while (now() < end) n++;
    } else {
        for (int i = 0; i < 10; i++) { (void)now(); n++; }
    }
    printf("done\n");
    return n == 0;
}
'''


def _profile(tmp_path: Path, mode: str) -> Path:
    (tmp_path / "clocky.c").write_text(PROGRAM)
    p = tmp_path / f"clock-{mode}.toml"
    p.write_text(f'''id = "clock-{mode}"
title = "a program that reads the clock ({mode})"
suites = []
[source]
files = ["clocky.c"]
build = ["sh", "-c", "{{cc}} {{cflags}} -O1 -o {{out}}/clocky clocky.c"]
artifacts = ["clocky"]
[run]
command = ["{{bin}}/clocky", "{mode}"]
[validate]
stdout_match = '(done)'
''')
    return p


@pytest.mark.needs_setup("valgrind")
def test_a_time_bound_counted_run_is_named_and_a_fixed_one_is_not(cli: Cli,
                                                                     tmp_path: Path) -> None:
    abis = "x86_64" + (",aarch64" if shutil.which("qemu-aarch64") and
                       shutil.which("aarch64-linux-gnu-gcc") else "")
    proc = cli("run", str(_profile(tmp_path, "timed")), str(_profile(tmp_path, "fixed")),
               "--abi", abis, "--rounds", "1", "--warmup", "0", "--counters", "--no-html")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    doc = json.loads(cli("export").stdout)
    named = {(w["workload"], w["target"]) for w in doc["warnings"]
             if "read the clock" in w["message"]}
    assert named == {("clock-timed", abi) for abi in abis.split(",")}
    # the counts themselves are still stored, for what they are
    counted = {(s["workload"], s["target"]) for s in doc["samples"] if s["kind"] == "counters"
               and s["instructions"]}
    assert ("clock-fixed", "x86_64") in counted and ("clock-timed", "x86_64") in counted
    assert "counted run read the clock" in proc.stdout + proc.stderr
