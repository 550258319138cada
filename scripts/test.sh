#!/usr/bin/env bash
# The whole test gate: lint, types, tests. Called by `bash setup.sh test` and by .ci/run.
#
# The tests run in parallel (pytest-xdist): most of their time is spent waiting on builds,
# emulators, servers and browsers, so more workers than cores pays (ABIBENCH_TEST_WORKERS, default
# 3; 0 runs them in this process, one after the other). Tests that share a session fixture with
# state outside their own files run on one worker in turn (tests/conftest.py, ONE_WORKER_MODULES);
# every shared cache entry is made once, under its lock (src/abibench/locks.py). The longest
# tests go first (tests/gate_order.json, a recorded gate; bench/gate_order.py rewrites it), so the
# tail packs. What each test costs in CPU seconds, which a neighbour's load does not inflate:
#   bash scripts/test.sh --cpu-durations=30 [--cpu-json=FILE]   (tests/cputime.py)
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy
workers=${ABIBENCH_TEST_WORKERS:-3}
case "$workers" in
  ''|*[!0-9]*) echo "scripts/test.sh: ABIBENCH_TEST_WORKERS=$workers: give a whole number (0: no workers)" >&2; exit 2 ;;
esac
if [ "$workers" -eq 0 ]; then
  exec .venv/bin/pytest -q "$@"
fi
exec .venv/bin/pytest -q -n "$workers" --dist load "$@"
