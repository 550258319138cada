#!/usr/bin/env bash
# The gate's time from a fresh clone (issue 30: "the gate's time, quiet and loaded, with the
# command"), as CI runs it, quiet or beside a neighbour's load of N busy loops.
#
#   bash bench/gate_time.sh [--neighbours N] [--keep] [COMMIT] [-- PYTEST-ARGS]
#                                           (default: 0 neighbours, HEAD, the whole gate)
#
# It clones this repository at COMMIT into a new temporary directory, runs `bash setup.sh` there
# (timed apart: on a machine where the system packages are installed it makes the clone's
# virtual environment), then starts N neighbours (`nice -n 0` shell loops, each a whole core's
# worth of demand, the load a second user's job puts beside the gate) and runs the gate
# (`bash scripts/test.sh --cpu-json=...`, what `.ci/run` runs, plus the per-test CPU record).
# The neighbours are stopped by the PIDs this script started, on every way out. It prints one
# line per phase: wall seconds, user+sys CPU seconds of the gate's process tree (/usr/bin/time,
# which misses the builds' and samples' sandboxes), the tests' CPU seconds by the cgroup meter
# (tests/cputime.py), what the neighbours ran, and the load average before, during and after.
# The clone is removed unless --keep (its record: bench/out/gate-<commit>-n<N>.json).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
neighbours=0 keep=0 commit=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    --neighbours) neighbours=${2:?--neighbours needs a number}; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "bench/gate_time.sh: unknown option $1 (--neighbours N, --keep, COMMIT)" >&2; exit 2 ;;
    *) commit=$1; shift ;;
  esac
done
case "$neighbours" in
  ''|*[!0-9]*) echo "bench/gate_time.sh: --neighbours $neighbours: give a whole number" >&2; exit 2 ;;
esac
sha=$(git -C "$here" rev-parse --short "$commit")
work=$(mktemp -d "${TMPDIR:-/tmp}/abibench-gatetime.XXXXXX")
pids=()
loads=()
stop() {
  local pid
  for pid in "${pids[@]}"; do
    if kill -TERM "$pid" 2>/dev/null; then wait "$pid" 2>/dev/null || true; fi
  done
  pids=()
  if [ "$keep" -eq 0 ]; then rm -rf "$work"; fi
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$here/bench/out"
record=$here/bench/out/gate-$sha-n$neighbours.json
loadavg() { cut -d' ' -f1 /proc/loadavg; }

git clone -q "$here" "$work/clone"
git -C "$work/clone" checkout -q "$sha"
cd "$work/clone"
/usr/bin/time -o "$work/setup.time" -f "%e %U %S" bash setup.sh >"$work/setup.log" 2>&1 || {
  echo "bench/gate_time.sh: bash setup.sh failed in $work/clone (its log: $work/setup.log)" >&2
  keep=1; exit 1; }
read -r s_wall s_user s_sys <"$work/setup.time"

# The neighbours' CPU is read from their own /proc/PID/stat (utime+stime, clock ticks) just
# before they are stopped: what the gate had to share the cores with.
for _ in $(seq "$neighbours"); do
  sh -c 'while :; do :; done' &
  pids+=("$!")
done
before=$(loadavg)
(while sleep 30; do loadavg; done) >"$work/loads" &
sampler=$!
pids+=("$sampler")
rc=0
CI=true /usr/bin/time -o "$work/gate.time" -f "%e %U %S" \
  bash scripts/test.sh --cpu-json="$record" "$@" >"$work/gate.log" 2>&1 || rc=$?
tick=$(getconf CLK_TCK)
hog=0
for pid in "${pids[@]}"; do
  [ "$pid" = "$sampler" ] && continue
  t=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
  hog=$((hog + t))
done
stop_loads=$(sort -n "$work/loads" | awk '{v[NR]=$1} END {if (NR) printf "%s-%s", v[1], v[NR]; else print "-"}')
read -r g_wall g_user g_sys <"$work/gate.time"
meter=$("$work/clone/.venv/bin/python" - "$record" <<'EOF2' 2>/dev/null || echo "-"
import json, sys
print(f"{sum(v[0] for v in json.load(open(sys.argv[1])).values()):.1f}")
EOF2
)
summary=$(grep -E '[0-9]+ (passed|failed)' "$work/gate.log" | tail -1 || true)
if [ "$rc" -ne 0 ]; then keep=1; fi
stop
echo "gate of $sha, $neighbours neighbour(s), $(date -u +%FT%TZ)"
printf 'setup.sh: %.0f s wall, %.1f CPU s\n' "$s_wall" "$(awk -v a="$s_user" -v b="$s_sys" 'BEGIN {print a + b}')"
secs=$(awk -v w="$g_wall" 'BEGIN {printf "%d", w + 0.5}')
printf 'gate:     %d s wall (%d min %d s), %.1f CPU s (user+sys), exit %d: %s\n' \
  "$secs" "$((secs / 60))" "$((secs % 60))" \
  "$(awk -v a="$g_user" -v b="$g_sys" 'BEGIN {print a + b}')" "$rc" "$summary"
echo "tests by the cgroup meter: $meter CPU s (record $record)"
printf 'neighbours ran %.1f CPU s; load average %s before, %s while (every 30 s)\n' \
  "$(awk -v a="$hog" -v b="$tick" 'BEGIN {print a / b}')" "$before" "$stop_loads"
[ "$rc" -eq 0 ] || echo "the gate failed: its log is $work/gate.log (kept)"
exit "$rc"
