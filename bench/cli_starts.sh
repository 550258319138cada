#!/usr/bin/env bash
# CPU seconds (user+sys: a neighbour's load does not inflate them) of one start of the command
# line, median of REPEATS, bytecode compiled first: `--version`, `runs` on an empty database,
# `report --help`, a `run` refused once its workload is loaded (--set nodes=abc) and
# `import abibench.cli`, with `import abibench.records` as the floor.
# REPO (default: this checkout) is any checkout with its own .venv, so that two commits are
# measured back to back at the same load (docs/method.md section 10).
#   bash bench/cli_starts.sh [REPO] [REPEATS]
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
reps=${2:-5}
py=$repo/.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ABIBENCH_DATA=$tmp/data ABIBENCH_CACHE=$tmp/cache CI=true
unset PYTHONDONTWRITEBYTECODE ABIBENCH_DB
"$py" -m compileall -q "$repo/src" >/dev/null
"$py" -c "from abibench.store.open import open_store; open_store('$tmp/empty.sqlite').close()"
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
cpu() {
  for _ in $(seq "$reps"); do
    /usr/bin/time -o "$tmp/t" -f "%U %S" "$@" >/dev/null 2>&1 || true
    tail -1 "$tmp/t" | awk '{printf "%.2f\n", $1 + $2}'
  done | median
}
echo "$repo ($(git -C "$repo" rev-parse --short HEAD)); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "abibench --version            $(cpu "$repo/.venv/bin/abibench" --version)"
echo "abibench runs (empty db)      $(cpu "$repo/.venv/bin/abibench" --db "$tmp/empty.sqlite" runs)"
echo "abibench report --help        $(cpu "$repo/.venv/bin/abibench" report --help)"
echo "abibench run, refused (--set) $(cpu "$repo/.venv/bin/abibench" run ptrtree --set nodes=abc)"
echo "python -c 'import abibench.cli'     $(cpu "$py" -c 'import abibench.cli')"
echo "python -c 'import abibench.records' $(cpu "$py" -c 'import abibench.records')"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
