#!/usr/bin/env bash
# What one start of the command line costs in CPU seconds (user+sys, which a neighbour's load
# does not inflate), as it is (scipy.stats imported at first use, src/abibench/lazy.py) and with
# scipy.stats imported before abibench starts, which is what every start paid before.
# Commands that compute no statistic; the gate starts hundreds of them.
#   bash bench/cli_startup.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
py=$PWD/.venv/bin/python
reps=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ABIBENCH_DATA=$tmp/data ABIBENCH_CACHE=$tmp/cache CI=true
uptime
for cmd in "--help" "runs --json" "run --binary i386=/bin/true --rounds 1 --no-html" "report --json"; do
  for mode in lazy eager; do
    pre=""
    [ "$mode" = eager ] && pre="import scipy.stats;"
    tot=0
    for _ in $(seq "$reps"); do
      # shellcheck disable=SC2086  # the command's words
      /usr/bin/time -o "$tmp/t" -f "%U %S" "$py" -c "${pre}import runpy, sys; sys.argv = ['abibench'] + sys.argv[1:]; runpy.run_module('abibench', run_name='__main__')" $cmd >/dev/null 2>&1 || true
      tot=$(awk -v t="$tot" '{print t + $1 + $2}' "$tmp/t")
    done
    awk -v t="$tot" -v n="$reps" -v m="$mode" -v c="$cmd" 'BEGIN {printf "%-5s %.3f CPU s (mean of %d)  abibench %s\n", m, t / n, n, c}'
  done
done
uptime
