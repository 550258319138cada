"""How long the run format takes to write and read at 100,000 samples, by each way of doing it.

    .venv/bin/python bench/schema_speed.py [--samples N] [--old REV] [--store]

Times (best of --repeat, seconds) for a run of N samples:

* export: `RunDoc.to_dict` + `json.dumps` (the records' derived encoder, codec.py);
* import: `json.loads` + `exchange.document` (strict decode: every type and rule, then the
  document's own checks) and the store's lax `RunDoc.from_dict`;
* with --old REV: the same with the hand-written `to_dict`/`from_dict` and validator of that
  revision (e.g. `main`), loaded from git;
* with msgspec installed (it is not a dependency): `msgspec.json.encode` / `decode(type=...)`
  into the same dataclasses (types only: no identifiers, timestamps or least values checked);
* with --store: `import_doc` into a new SQLite file and `load_run` back (what an import costs
  in all, the database included).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def make_doc(n: int) -> dict[str, Any]:
    """A valid export of one workload, two targets, n samples (rounds alternate the order)."""
    targets = ["i386", "x86_64"]
    samples = []
    for i in range(n):
        rnd, pos = divmod(i, 2)
        samples.append({
            "run_id": "r", "workload": "w", "target": targets[pos ^ (rnd & 1)], "round": rnd,
            "position": pos, "warmup": rnd == 0, "status": "ok", "exit_code": 0,
            "wall_s": 1.0 + i * 1e-6, "user_s": 0.9, "sys_s": 0.01, "max_rss_kb": 2048 + i % 7,
            "stdout_digest": "d" * 64, "check": "42", "metrics": {"rate": 100.0 + i % 13},
            "error": None, "started_at": "2026-01-01T00:00:00+00:00", "env_pad": i % 64,
            "instructions": None, "kind": "timed", "minflt": 120, "majflt": 0,
            "design": "sequential", "repeat": 1})
    return {"format": "abibench-run", "version": 1,
            "run": {"id": "r", "started": "2026-01-01T00:00:00+00:00",
                    "finished": "2026-01-02T00:00:00+00:00", "status": "complete",
                    "tool_version": "0",
                    "config": {"workloads": {"w": {
                        "primary": "rate", "targets": targets, "title": "w",
                        "metrics": {"rate": {"unit": "ops/s", "better": "higher"}}}}}},
            "host": {"hostname": "h"}, "samples": samples}


def load_old(rev: str) -> tuple[types.ModuleType, types.ModuleType]:
    """records.py and store/exchange.py of another revision, as modules beside the current."""
    out = []
    for name, path in (("records", "src/abibench/records.py"),
                       ("exchange", "src/abibench/store/exchange.py")):
        text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"],
                              capture_output=True, text=True, check=True).stdout
        text = (text.replace("from .abi import", "from abibench.abi import")
                .replace("from ..records import", "from abibench_old_records import")
                .replace("from ..errors import", "from abibench.errors import")
                .replace("from ..files import", "from abibench.files import")
                .replace("from .sql import", "from abibench.store.sql import"))
        spec = importlib.util.spec_from_loader(f"abibench_old_{name}", loader=None)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        exec(compile(text, f"{rev}:{path}", "exec"), module.__dict__)
        out.append(module)
    return out[0], out[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old", metavar="REV", help="also time the records of this git revision")
    ap.add_argument("--store", action="store_true", help="also import into SQLite and load back")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from abibench.records import RunDoc
    from abibench.store.exchange import document

    raw = make_doc(args.samples)
    text = json.dumps(raw)
    typed = document(json.loads(text), "bench")
    # Every way is timed once per round, the rounds interleaved, so that a machine whose load
    # changes during the run slows all of them alike; the best round of each is kept.
    tasks: list[tuple[str, Callable[[], Any]]] = []
    rows: list[tuple[str, float]] = []
    tasks.append(("codec: export (to_dict + json.dumps)",
                 lambda: json.dumps(typed.to_dict())))
    tasks.append(("codec: import, strict (json.loads + document)",
                 lambda: document(json.loads(text), "bench")))
    tasks.append(("codec: read back, lax (json.loads + RunDoc.from_dict)",
                 lambda: RunDoc.from_dict(json.loads(text))))
    tasks.append(("json.loads alone", lambda: json.loads(text)))
    if args.old:
        old_records, old_exchange = load_old(args.old)
        old_typed = old_records.RunDoc.from_dict(raw)
        tasks.append((f"{args.old}: export (hand-written to_dict + json.dumps)",
                     lambda: json.dumps(old_typed.to_dict())))
        tasks.append((f"{args.old}: import (json.loads + validate + from_dict)",
                     lambda: old_records.RunDoc.from_dict(
                         old_exchange.validate(json.loads(text), "bench"))))
    msgspec: Any = None
    if importlib.util.find_spec("msgspec") is not None:  # not a dependency: measured if there
        msgspec = importlib.import_module("msgspec")
    if msgspec is not None:
        from abibench.records import Run, Sample
        body = json.dumps(raw["samples"]).encode()
        decoder = msgspec.json.Decoder(list[Sample])
        tasks.append(("msgspec: samples decoded into the dataclasses (types only)",
                     lambda: decoder.decode(body)))
        samples = decoder.decode(body)
        tasks.append(("msgspec: samples encoded", lambda: msgspec.json.encode(samples)))
        try:  # the whole document's types, not only a sample's
            msgspec.convert(raw["run"], Run)
        except TypeError as exc:
            print(f"msgspec cannot read a Run as typed here: {exc}")
    times: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, fn in tasks:
            times[name] = min(times.get(name, float("inf")), best(fn, 1))
    rows += list(times.items())
    if args.store:
        from abibench.store.exchange import import_doc
        from abibench.store.sqlite import Store

        with tempfile.TemporaryDirectory() as where:
            store = Store(Path(where) / "r.sqlite")
            t = time.perf_counter()
            res = import_doc(store, typed, "bench.json")
            rows.append(("store: import_doc into SQLite", time.perf_counter() - t))
            rows.append(("store: load_run from SQLite",
                         best(lambda: store.load_run(res.run_id), 1)))
            store.close()
    print(f"{args.samples} samples, best of {args.repeat}:")
    for name, seconds in rows:
        print(f"  {name:62s} {seconds:7.3f} s  {seconds / args.samples * 1e6:6.2f} us/sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
