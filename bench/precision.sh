#!/usr/bin/env bash
# Issue 14's acceptance measurements, back to back, into bench/out/precision-<date>/:
#   1. abibench calibrate (60 s): the machine's noise profile
#   2. the default suite with --budget 10m, quiet
#   3. the same with one busy-loop process (a neighbour) for the whole run
#   4. the harness floor: empty main vs hyperfine -N, interleaved, quiet and with a busy loop
#   5. the design study (bench/designs.py) on the default workloads
# Run by hand on a quiet machine (about 45 minutes); nothing here runs in CI.
#   bash bench/precision.sh [--skip-study]
set -euo pipefail
cd "$(dirname "$0")/.."
out="bench/out/precision-$(date -u +%Y%m%dT%H%M)"
mkdir -p "$out"
export ABIBENCH_DATA="$out/data"
ab=(.venv/bin/abibench)
say() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$out/log.txt" >&2; }

busy_pid=""
stop_busy() { if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; wait "$busy_pid" 2>/dev/null || true; busy_pid=""; fi; }
trap stop_busy EXIT INT TERM
start_busy() { ( while :; do :; done ) & busy_pid=$!; say "busy loop started (pid $busy_pid)"; }

say "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${ab[@]}" calibrate --duration 60s | tee "$out/calibrate.txt"
say "default suite, --budget 10m, quiet"
( time "${ab[@]}" run --budget 10m --no-html --json > "$out/quiet.json" ) 2> "$out/quiet.time"
"${ab[@]}" report "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["id"])' "$out/quiet.json")" > "$out/quiet.txt"
say "default suite, --budget 10m, with one busy loop"
start_busy
( time "${ab[@]}" run --budget 10m --no-html --json > "$out/busy.json" ) 2> "$out/busy.time"
stop_busy
"${ab[@]}" report "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["id"])' "$out/busy.json")" > "$out/busy.txt"
say "harness floor, quiet and busy"
.venv/bin/python bench/harness.py --only P1 --out "$out/harness-quiet.json" > "$out/harness-quiet.txt" 2>&1
.venv/bin/python bench/harness.py --only P1 --busy 1 --out "$out/harness-busy.json" > "$out/harness-busy.txt" 2>&1
if [ "${1:-}" != "--skip-study" ]; then
  say "design study"
  .venv/bin/python bench/designs.py --rounds 8 --blocks 1 --out "$out/designs.json" > "$out/designs.md" 2> "$out/designs.log"
fi
say "done: $out"
