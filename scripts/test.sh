#!/usr/bin/env bash
# The whole test gate: lint, types, tests. Called by `bash setup.sh test` and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/pytest -q "$@"
