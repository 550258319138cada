#!/usr/bin/env python3
"""The whole-system matrix (issue 28): every kernel/userspace combination, booted N times.

Runs `abibench system run SYSTEM --boots N --json` for each system named (default: minimal),
then prints the table docs/systems.md keeps: combination x system, used / kernel / kernel image /
userspace / page cache (MiB, median [95% interval]), the comparisons with their intervals, and
the published figures beside them (someone else's hardware). An hour or more under TCG here.

    .venv/bin/python bench/system_matrix.py --boots 3 minimal server
    .venv/bin/python bench/system_matrix.py --boots 3 --family arm minimal   # the ARM systems
    .venv/bin/python bench/system_matrix.py --from-json out/minimal.json   # the table again
    .venv/bin/python bench/system_matrix.py --reserves run1.json run2.json  # `abibench export`s
    .venv/bin/python bench/system_matrix.py --merge run1.json run2.json     # one table of both
    .venv/bin/python bench/system_matrix.py --full min.json srv1.json srv2.json  # the full table

--merge takes `abibench export` documents of one profile (runs of some combinations each, or
more boots of the same ones) and prints the table of all their boots together, analysed as one
run (analyse/system.analyse: medians and intervals over every boot of a combination).

--full takes `abibench export` documents of any systems, merges those of each system (as
--merge does) and prints issue 28's closing table: combination x system (and phase) with the
counted boots, used / kernel / userspace PSS / page cache, then each family's verdicts (the
comparisons of combinations of one family, with their intervals).

--merge also prints, per combination, its boots' emulation times: the state and the ready
check's last line of each boot, when the ready check saw the system ready (the guest's uptime
its line names), when it was measured, and how long qemu ran (QEMU's TCG time, not a machine's).

--reserves takes `abibench export RUN -o FILE` documents and prints, per combination and phase,
`used` taken apart as the guest kernel computes MemAvailable (analyse/system.available_parts,
from the zoneinfo the guest reports): what is held, the zones' reserves (high watermarks and
lowmem_reserve), the low watermarks' share of caches, their sum beside `used`, and what the
kernel kept at boot (outside MemTotal).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from abibench.analyse.system import analyse, available_parts
from abibench.codec import decoder
from abibench.report.system import to_json
from abibench.stats import median
from abibench.sysrecords import SystemBoot, SystemConfig

PARTS = ("used", "held", "reserve", "kept", "model", "boot_reserved", "highmem")


def merged(exports: list[dict[str, Any]]) -> dict[str, Any]:
    """The system section of every boot of the exported runs together (one profile)."""
    configs = [decoder(SystemConfig)(d["run"]["config"]["system"]) for d in exports]
    if len({c.profile for c in configs}) != 1:
        raise SystemExit("--merge: the runs are of different systems: "
                         + ", ".join(sorted({c.profile for c in configs})))
    combos = tuple(dict.fromkeys(c for cfg in configs for c in cfg.combinations))
    boots = [decoder(SystemBoot)(raw) for d in exports for raw in d.get("system_boots", [])]
    boots = [dataclasses.replace(b, index=i) for i, b in enumerate(boots)]
    config = dataclasses.replace(configs[0], combinations=combos, boots=len(boots),
                                 kernels={k: v for c in configs for k, v in c.kernels.items()},
                                 images={k: v for c in configs for k, v in c.images.items()})
    return to_json(analyse(config, boots))


def reserves(exports: list[dict[str, Any]]) -> str:
    """MiB, median over the boots that reported zoneinfo: the parts of `used` per combination."""
    rows: dict[tuple[str, str, str], list[dict[str, float]]] = {}
    for doc in exports:
        profile = doc["run"]["config"]["system"]["profile"]
        for raw in doc.get("system_boots", []):
            b = decoder(SystemBoot)(raw)
            for phase, ph in b.phases.items() if b.ok else ():
                if parts := available_parts(ph):
                    rows.setdefault((profile, f"{b.kernel} + {b.userspace}", phase),
                                    []).append(parts)
    out = ["| system | combination | phase | boots | " + " | ".join(PARTS) + " |",
           "|---|---|---|---|" + "---|" * len(PARTS)]
    for (profile, combo, phase), per in sorted(rows.items()):
        out.append(f"| {profile} | {combo} | {phase} | {len(per)} | "
                   + " | ".join(f"{median([p[k] for p in per]):.1f}" for k in PARTS) + " |")
    return "\n".join(out) + "\n"

READY_AT = re.compile(r"^page check \d+ at (\d+(?:\.\d+)?) s: the page has loaded$")


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    mid = f"{median(values):.0f}"
    return mid if len(values) < 2 else f"{mid} [{min(values):.0f}, {max(values):.0f}]"


def times_table(exports: list[dict[str, Any]]) -> str:
    """Per combination (and phase): its boots' states, when the ready check passed, when the
    system was measured, how long qemu ran. Seconds, median [range]: emulation time."""
    rows: dict[tuple[str, str], list[tuple[str, float | None, float, float]]] = {}
    for doc in exports:
        for raw in doc.get("system_boots", []):
            b = decoder(SystemBoot)(raw)
            for phase, ph in b.phases.items():
                m = READY_AT.match(ph.ready)
                rows.setdefault((f"{b.kernel} + {b.userspace}", phase), []).append(
                    (ph.state, float(m.group(1)) if m else None, ph.uptime_s, b.seconds))
    out = ["| combination | phase | boots | states | ready at (guest s) | measured at (guest s) "
           "| qemu ran (s) |", "|---|---|---|---|---|---|---|"]
    for (combo, phase), per in rows.items():
        states = ", ".join(f"{n} {s}" for s, n in sorted(
            {s: sum(1 for p in per if p[0] == s) for s in {p[0] for p in per}}.items()))
        ready = [p[1] for p in per if p[1] is not None]
        out.append(f"| {combo} | {phase} | {len(per)} | {states} | {_spread(ready)} | "
                   f"{_spread([p[2] for p in per])} | {_spread([p[3] for p in per])} |")
    return "\n".join(out) + "\n"


FIGS = ("used", "kernel", "image", "userspace", "cache")
FULL_FIGS = ("used", "kernel", "userspace", "cache")
PHASE_NAME = {"idle": "", "load": " after load"}


def _family(label: str) -> str:
    return "arm" if label.startswith(("arm64", "armmp")) else "x86"


def full_table(exports: list[dict[str, Any]]) -> str:
    """Issue 28's closing table from exports of any systems (each system's runs merged)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for d in exports:
        by.setdefault(d["run"]["config"]["system"]["profile"], []).append(d)
    docs = [merged(group) for group in by.values()]
    out = ["| combination | system | n | " + " | ".join(FULL_FIGS) + " |",
           "|---|---|---|" + "---|" * len(FULL_FIGS)]
    verdicts: list[str] = []
    for doc in docs:
        idle = doc["profile"] + ("" if len(doc["results"]) == len(
            [r for r in doc["results"] if r["phase"] == "idle"]) else " idle")
        for r in sorted(doc["results"], key=lambda r: r["phase"] != "idle"):
            name = idle if r["phase"] == "idle" else doc["profile"] + PHASE_NAME[r["phase"]]
            out.append(f"| {r['combination'].replace(' kernel', '')} | {name} | "
                       f"{r['boots_reported']} | "
                       + " | ".join(cell(r["figures"].get(f)) for f in FULL_FIGS) + " |")
        verdicts += [f"* {doc['profile']}: {c['sentence']}" for c in doc["comparisons"]
                     if _family(c["a"]) == _family(c["b"])]
        verdicts += [f"* {doc['profile']}: problem: {p}" for p in doc["problems"]]
    return "\n".join([*out, "", *verdicts]) + "\n"


def cell(est: dict[str, float] | None) -> str:
    if not est:
        return "-"
    ci = f" [{est['low']:.1f}, {est['high']:.1f}]" if est.get("low") is not None else ""
    return f"{est['median']:.1f}{ci}"


def table(docs: list[dict[str, Any]]) -> str:
    out = ["| system | combination | phase | boots | used | kernel | kernel image | userspace "
           "| page cache |", "|---|---|---|---|---|---|---|---|---|"]
    notes: list[str] = []
    for doc in docs:
        for r in doc["results"]:
            figs = r["figures"]
            out.append(f"| {doc['profile']} | {r['combination']} | {r['phase']} | "
                       f"{r['boots_reported']}/{r['boots']} | "
                       + " | ".join(cell(figs.get(f)) for f in FIGS) + " |")
        notes += [f"* {c['sentence']}" for c in doc["comparisons"]]
        notes += [f"* published, someone else's hardware ({p['hardware']}): {p['what']}: "
                  f"+{p['increase_pct']:.0f}%" for p in doc["published"]]
        notes += [f"* problem: {p}" for p in doc["problems"]]
        notes += [f"* note: {n}" for n in doc.get("notes", [])]
    return "\n".join([*out, "", *dict.fromkeys(notes)]) + "\n"


def unit_table(docs: list[dict[str, Any]], top: int = 8) -> str:
    """Userspace PSS per systemd unit (MiB, median of boots): each system's largest units."""
    out: list[str] = []
    for doc in docs:
        results = [r for r in doc["results"] if r.get("units")]
        if not results:
            continue
        size: dict[str, float] = {}
        for r in results:
            for u, e in r["units"].items():
                if e:
                    size[u] = max(size.get(u, 0.0), e["median"])
        names = sorted(size, key=lambda u: -size[u])[:top]
        out += [f"{doc['profile']}: userspace PSS per unit (MiB, median of boots)", "",
                "| combination | phase | " + " | ".join(names) + " |",
                "|---|---|" + "---|" * len(names)]
        out += [f"| {r['combination']} | {r['phase']} | "
                + " | ".join(cell(r["units"].get(u)) for u in names) + " |" for r in results]
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("systems", nargs="*", default=["minimal"])
    ap.add_argument("--boots", type=int, default=3)
    ap.add_argument("--family", default="x86", help="x86, arm or all (abibench system run's)")
    ap.add_argument("--combo", default=None, help="KERNEL:USERSPACE,... (abibench system run's)")
    ap.add_argument("--out", type=Path, default=Path("system-matrix"))
    ap.add_argument("--from-json", type=Path, nargs="*", default=None)
    ap.add_argument("--reserves", type=Path, nargs="+", default=None,
                    help="`abibench export` files: used taken apart (see above)")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="`abibench export` files of one system: one table of all boots")
    ap.add_argument("--full", type=Path, nargs="+", default=None,
                    help="`abibench export` files of any systems: the full table")
    args = ap.parse_args()
    if args.full:
        print(full_table([json.loads(p.read_text()) for p in args.full]))
        return 0
    if args.merge:
        docs = [merged([json.loads(p.read_text()) for p in args.merge])]
        print(table(docs))
        print(unit_table(docs))
        print(times_table([json.loads(p.read_text()) for p in args.merge]))
        return 0
    if args.reserves:
        print(reserves([json.loads(p.read_text()) for p in args.reserves]))
        return 0
    paths = list(args.from_json or [])
    if not paths:
        args.out.mkdir(parents=True, exist_ok=True)
        abibench = Path(sys.executable).with_name("abibench")
        for system in args.systems:
            name = f"{system}-{args.family}" if not args.combo else f"{system}-combo"
            path = args.out / f"{name}.json"
            cmd = [str(abibench), "system", "run", system, "--boots", str(args.boots),
                   "--family", args.family, *(["--combo", args.combo] if args.combo else []),
                   "--json", str(path), "--html", str(args.out / f"{name}.html")]
            print("$", " ".join(cmd), file=sys.stderr)
            subprocess.run(cmd, check=False)
            if path.is_file():
                paths.append(path)
    docs = [json.loads(p.read_text()) for p in paths]
    print(table(docs))
    print(unit_table(docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
