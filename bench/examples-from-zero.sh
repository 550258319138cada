#!/usr/bin/env bash
# Each example of examples/ from an empty cache to its verdict, by its README's own command (a
# new user's first run): a fresh ABIBENCH_CACHE and ABIBENCH_DATA per example, the wall time,
# the CPU seconds of the process tree (user+sys by rusage, which the machine's load does not
# inflate; a sandboxed build's own CPU time is not in it: bwrap's PID namespace keeps it from
# rusage), the load average at the start, and the verdict lines. Output in bench/out/examples/.
#   bash bench/examples-from-zero.sh [NAME...]     (default: every example with a README command)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
abibench=${ABIBENCH:-$here/.venv/bin/abibench}
out=$here/bench/out/examples
mkdir -p "$out"
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(hello cxx-map go meson cmake prebuilt rust jq)
printf 'example\twall_s\tcpu_s\tload_at_start\texit\tverdict\n' | tee "$out/summary.tsv"
for name in "${names[@]}"; do
  readme=$here/examples/$name/README.md
  # The README's command lines (continuations joined), its `abibench run` the measured one.
  cmd=$(awk '/^```sh/{f=1;next} /^```/{f=0} f' "$readme" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' \
        | grep '^abibench run' | sed -n 1p)
  pre=$(awk '/^```sh/{f=1;next} /^```/{f=0} f' "$readme" | grep '^sh ' | sed -n 1p || true)
  [ -n "$cmd" ] || { echo "$name: no abibench run command in its README" >&2; continue; }
  work=$(mktemp -d "/tmp/abibench-zero-$name.XXXXXX")
  load=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s.%N)
  set +e
  (cd "$here" && ABIBENCH_CACHE=$work/cache ABIBENCH_DATA=$work/data \
     /usr/bin/time -o "$work/time" -f '%U %S' \
     bash -c "${pre:+$pre && }${cmd/#abibench/$abibench} --no-html" ) >"$out/$name.txt" 2>&1
  rc=$?
  set -e
  end=$(date +%s.%N)
  cpu=$(awk '{printf "%.1f", $1 + $2}' "$work/time" 2>/dev/null || echo "?")
  verdict=$(grep -E '→|faster|slower|no significant|no verdict' "$out/$name.txt" | sed -n 1,2p \
            | tr -s ' ' | tr '\n' ' ' | cut -c1-220)
  printf '%s\t%.0f\t%s\t%s\t%s\t%s\n' "$name" "$(echo "$end - $start" | bc)" "$cpu" "$load" \
    "$rc" "$verdict" | tee -a "$out/summary.tsv"
  rm -rf "$work"
done
