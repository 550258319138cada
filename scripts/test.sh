#!/usr/bin/env bash
# The whole test gate: lint, types, tests. Called by `bash setup.sh test` and by .ci/run.
#
# The tests run in parallel (pytest-xdist): about half of their time is spent waiting on builds,
# emulators, servers and browsers (a quiet gate: 1,027 CPU s against 2,108 s of tests' wall
# time), so more workers than cores pays: 4 on this 2-core VM (ABIBENCH_TEST_WORKERS, default 4;
# 0 runs them in this process, one after the other). Tests that share a session fixture with
# state outside their own files run on one worker in turn (tests/conftest.py, ONE_WORKER_MODULES);
# every shared cache entry is made once, under its lock (src/abibench/locks.py). The longest
# tests go first (tests/gate_order.json, a recorded gate; bench/gate_order.py rewrites it), so the
# tail packs. What each test costs in CPU seconds, which a neighbour's load does not inflate:
#   bash scripts/test.sh --cpu-durations=30 [--cpu-json=FILE]   (tests/cputime.py)
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${ABIBENCH_TEST_WORKERS:-4}
case "$workers" in
  ''|*[!0-9]*) echo "scripts/test.sh: ABIBENCH_TEST_WORKERS=$workers: give a whole number (0: no workers)" >&2; exit 2 ;;
esac
# ruff and mypy run beside the tests, not before them, and the gate fails when any of the three
# does (scripts/beside.sh: the exit codes combined, the parts stopped by PID on every way out).
# shellcheck source=scripts/beside.sh
. scripts/beside.sh
trap beside_stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
beside ruff .venv/bin/ruff check .
beside mypy .venv/bin/mypy
# Bytecode is cached for the gate: the tests start Python hundreds of times (the command line in
# a subprocess, each xdist worker collecting every test module), and with PYTHONDONTWRITEBYTECODE
# set (as on these VMs) each start compiled abibench's sources anew: 0.86 CPU s to import the
# command line against 0.55 with its bytecode, 7.0 against 2.5 to collect the tests (pytest's
# rewritten test modules are cached the same way). Compiled once here, before the workers start,
# so that no two compile the same module; Python checks each file's stamp against its source.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q src tests bench >/dev/null
rc=0
if [ "$workers" -eq 0 ]; then
  .venv/bin/pytest -q "$@" || rc=$?
else
  .venv/bin/pytest -q -n "$workers" --dist load "$@" || rc=$?
fi
gate_finish "$rc"
