#!/usr/bin/env bash
# The seed workloads in full (manual benchmark, not CI): every Debian source package of the
# seeds suite built for i386, x86_64 and x32 (x32 is built and sized; this kernel cannot run
# it), then the seeds suite measured in interleaved rounds, printed with the size table.
#
#   bash bench/seeds.sh                 # default adaptive settings
#   bash bench/seeds.sh --max-time 60s  # any `abibench run` option
#
# The first run builds everything (about an hour on 2 shared cores, POV-Ray and OpenSSL take
# most of it); later runs reuse the build cache (~/.cache/abibench) and only measure.
# Writes bench/out/seeds.txt (the table), bench/out/seeds.md (Markdown report) and
# bench/out/seeds.json (the run document).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
start=$(date +%s)
set +e
.venv/bin/abibench run --suite seeds --abi i386,x86_64,x32 --report bench/out/seeds.md "$@" \
  | tee bench/out/seeds.txt
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)
printf 'seeds suite: exit %s, wall time %dm%02ds\n' "$rc" $(((end - start) / 60)) $(((end - start) % 60)) \
  | tee -a bench/out/seeds.txt
.venv/bin/abibench export -o bench/out/seeds.json
exit "$rc"
