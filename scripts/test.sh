#!/usr/bin/env bash
# The test command: create .venv if needed, install memvault with its extras, lint, type-check, run pytest.
# Extra arguments go to pytest (e.g. scripts/test.sh -k crash -x).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
TORCH_SPEC=${MEMVAULT_TORCH_SPEC:-torch==2.13.0}  # CPU build; must be installed before sentence-transformers

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PY=.venv/bin/python
"$PY" -m pip install --quiet --upgrade pip
"$PY" -m pip install --quiet "$TORCH_SPEC"
# PYTHONWARNINGS: setuptools' build backend prints a boxed "Editable installation" warning for every
# editable install, which says nothing about this project; pip passes the variable to the backend.
PYTHONWARNINGS=ignore "$PY" -m pip install --quiet -e ".[embeddings,mcp,team,dev]"

"$PY" -m ruff check memvault tests scripts
"$PY" -m mypy memvault
.venv/bin/lint-imports --no-cache --no-logo  # the layer contracts in pyproject.toml

set +e
"$PY" -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
