# Parts of the gate that run beside the tests (sourced by scripts/test.sh; bash).
#
# ruff and mypy need one core for a few seconds (a cold mypy on a fresh clone: 13.6 CPU s, 31 s
# wall at load 7), while the tests' first minute mostly waits on source downloads, servers and
# emulators. So they start in the background before the tests and are waited for after them.
# The one rule (docs/reliability.md, "The gate fails when any of its parts fails"): the gate's
# exit code is pytest's when pytest failed, else the first failing part's, else 0; every part
# started is waited for or, on any other way out (an error, Ctrl-C, SIGTERM), stopped by its PID.
#
#   beside NAME CMD...      start CMD in the background, its output kept until the end
#   gate_finish PYTEST_RC   wait for every part, print its output, exit with the combined code
#   beside_stop             stop the parts still running (the EXIT trap)

BESIDE_PIDS=()
BESIDE_NAMES=()
BESIDE_LOGS=()
BESIDE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/abibench-gate.XXXXXX")

beside() {
  local name=$1
  shift
  local log="$BESIDE_DIR/${#BESIDE_PIDS[@]}.log"
  "$@" >"$log" 2>&1 &
  BESIDE_PIDS+=("$!")
  BESIDE_NAMES+=("$name")
  BESIDE_LOGS+=("$log")
}

beside_stop() {
  local pid
  for pid in "${BESIDE_PIDS[@]}"; do
    # Our own children only, by the PID we started; a part that ended is already reaped.
    if kill -TERM "$pid" 2>/dev/null; then wait "$pid" 2>/dev/null || true; fi
  done
  BESIDE_PIDS=()
  rm -rf "$BESIDE_DIR"
}

gate_finish() {
  local pytest_rc=$1 rc=0 code i
  for i in "${!BESIDE_PIDS[@]}"; do
    code=0
    wait "${BESIDE_PIDS[$i]}" || code=$?
    cat "${BESIDE_LOGS[$i]}"
    if [ "$code" -ne 0 ]; then
      printf 'gate: %s failed (exit %d)\n' "${BESIDE_NAMES[$i]}" "$code" >&2
      [ "$rc" -ne 0 ] || rc=$code
    fi
  done
  BESIDE_PIDS=()
  if [ "$pytest_rc" -ne 0 ]; then
    exit "$pytest_rc"
  fi
  exit "$rc"
}
