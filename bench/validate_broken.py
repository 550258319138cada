#!/usr/bin/env python3
"""Each formerly unvalidated built-in workload, as it is and deliberately broken: caught?

For every profile below, two runs with Debian's i386 and amd64 builds (`--provenance debian`,
one round, no warm-up, small sizes): the built-in profile, whose output check must pass
(identical, or equal within its close tolerance), and a broken variant, a copy of the profile
with ONE change (a wrong known answer, an input or a scene that differs on i386, a sub-test
that throws, rows lost on one ABI), which must end as a MISCOMPARE or as failed samples with
the reason. The variants run from a scratch directory holding the copy and the profile's
`deb/` files; nothing of the installed profiles is changed.

    .venv/bin/python bench/validate_broken.py [--only deb-7z,deb-flac] [--db-dir DIR]

Needs apt (the packages are downloaded into abibench's cache once), npm for the Octane
profiles, sysbench for mariadb-sysbench. Prints one line per run and exits 1 when a built-in
profile did not validate or a broken variant was not caught.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from abibench.paths import PROFILES_DIR


@dataclass(frozen=True)
class Case:
    profile: str
    sets: tuple[str, ...]  # --set NAME=VALUE: small sizes
    old: str  # the text of the profile the broken variant replaces ...
    new: str  # ... and what it puts there
    broken: str  # what the change does


INJECT_THROW = (" && sed -i 's/^function runRichards() {/function runRichards() { throw new "
                "Error(\\\"injected\\\");/' {work}/package/lib/octane/richards.js")

CASES = (
    Case("deb-7z", ("dict=18",), "5085c7e8a7f45ae354fae8", "5085c7e8a7f45ae354fae9",
         "the known archive's SHA-256 expected one digit off"),
    Case("deb-openssl", ("seconds=1",), "258424e016354758373b7c", "258424e016354758373b7d",
         "the known file's digest expected one digit off"),
    Case("deb-gcc", ("opt=-O1",), "answer: 2262 ", "answer: 2263 ",
         "the Lua script's known answer expected one off"),
    Case("deb-flac", ("seconds=2",),
         '["python3", "{profile_dir}/deb/mkwav.py", "{work}/in.wav", "{seconds}"]',
         '["sh", "-c", "s={seconds}; [ {abi} = i386 ] && s=$((s + 1)); '
         'python3 {profile_dir}/deb/mkwav.py {work}/in.wav $s"]',
         "i386 encodes one second more audio (a build that changed the PCM)"),
    Case("deb-povray", ("width=160", "height=120"),
         '["cp", "{profile_dir}/deb/scene.pov", "{work}/scene.pov"]',
         '["sh", "-c", "cp {profile_dir}/deb/scene.pov {work}/scene.pov; [ {abi} = i386 ] && '
         'sed -i s/1.5/1.6/ {work}/scene.pov; true"]',
         "i386 renders the glass sphere with another index of refraction"),
    Case("mariadb-sysbench", ("test=oltp_point_select", "seconds=2", "warm=1",
                              "table_size=2000"),
         "SELECT 'rows', COUNT(*), SUM(id)", "SELECT 'rows', COUNT(*) - ('{abi}' = 'i386'), SUM(id)",
         "i386 reports one row fewer after the run"),
    Case("node-octane", (), 'tar xzf benchmark-octane-{octane}.tgz"]',
         'tar xzf benchmark-octane-{octane}.tgz' + INJECT_THROW + '"]',
         "Richards throws"),
    Case("chromium-octane", ("suites=Richards,DeltaBlue",),
         'tar xzf benchmark-octane-{octane}.tgz"]',
         'tar xzf benchmark-octane-{octane}.tgz' + INJECT_THROW + '"]',
         "Richards throws in the page"),
)


def _abibench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "abibench", *args], capture_output=True,
                          text=True, check=False)


def _variant(case: Case, where: Path) -> Path:
    text = (PROFILES_DIR / f"{case.profile}.toml").read_text()
    if text.count(case.old) != 1:
        raise SystemExit(f"{case.profile}: the text to break is not in the profile once: "
                         f"{case.old!r}")
    shutil.copytree(PROFILES_DIR / "deb", where / "deb")
    path = where / f"{case.profile}.toml"
    path.write_text(text.replace(f'id = "{case.profile}"', f'id = "{case.profile}-broken"', 1)
                    .replace(case.old, case.new))
    return path


def _outcome(db: Path) -> tuple[str, str]:
    """(ok | MISCOMPARE | FAILED | ..., the detail) of the run stored in db."""
    rep = _abibench("report", "--db", str(db), "--json")
    exp = _abibench("export", "--db", str(db))
    if exp.returncode != 0:
        return "NO RUN", (exp.stderr.strip().splitlines() or [""])[-1]
    samples = json.loads(exp.stdout).get("samples", [])
    failed = [s for s in samples if s.get("status") != "ok"]
    validation, detail = "unchecked", ""
    if rep.returncode == 0:
        for w in json.loads(rep.stdout).get("workloads", []):
            validation, detail = w.get("validation", ""), w.get("validation_detail", "")
    if failed:
        errors = sorted({f"{s['target']}: {s.get('error') or s.get('status')}" for s in failed})
        return "FAILED", "; ".join(errors)[:400]
    return ("MISCOMPARE" if validation == "miscompare" else validation), detail[:400]


def run_case(case: Case, db_dir: Path) -> tuple[bool, list[str]]:
    lines, good = [], True
    with tempfile.TemporaryDirectory(prefix="abibench-broken-") as tmp:
        for name, profile in (("as built in", case.profile),
                              (f"broken: {case.broken}", str(_variant(case, Path(tmp))))):
            db = db_dir / f"{case.profile}-{'ok' if profile == case.profile else 'broken'}.sqlite"
            db.unlink(missing_ok=True)
            sets = [a for s in case.sets for a in ("--set", s)]
            r = _abibench("run", profile, "--provenance", "debian", "--abi", "i386,x86_64",
                          "--rounds", "1", "--warmup", "0", "--no-html", "--db", str(db), *sets)
            outcome, detail = _outcome(db)
            want = ("ok",) if profile == case.profile else ("MISCOMPARE", "FAILED")
            caught = outcome in want
            good &= caught
            lines.append(f"{case.profile:17} {name}\n    -> {outcome} (exit {r.returncode})"
                         f"{'' if caught else '  <-- NOT AS EXPECTED'}: {detail}")
    return good, lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated profile ids (default: all)")
    p.add_argument("--db-dir", type=Path, default=Path("bench/out/validate_broken"),
                   help="where each run's results database is kept")
    args = p.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    unknown = only - {c.profile for c in CASES}
    if unknown:
        p.error(f"no case for {', '.join(sorted(unknown))}")
    args.db_dir.mkdir(parents=True, exist_ok=True)
    ok, caught = True, 0
    cases = [c for c in CASES if not only or c.profile in only]
    for case in cases:
        good, lines = run_case(case, args.db_dir)
        print("\n".join(lines), flush=True)
        ok &= good
        caught += good
    print(f"{caught} of {len(cases)} profiles validated as built in and caught broken")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
