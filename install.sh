#!/usr/bin/env bash
# Install memvault into its own environment (Linux, macOS), connect Claude Code to it (`memvault install`),
# then show recall working on a copy of the bundled example vault. Safe to run again.
#
#   ./install.sh                     install with local embeddings, connect Claude Code, run the demo
#   ./install.sh --vault ~/Obsidian  the same, and record your vault (any option not listed here goes
#                                    to `memvault install`: --vault, --skill-name, --scope, --project, --dry-run)
#   ./install.sh --no-python-deps    without the embedding stack (keyword-only recall)
#   ./install.sh --no-demo           skip the demo
#   ./install.sh --uninstall         `memvault uninstall --all` (every agent's hooks, skill and MCP servers), stop the
#                                    embedding service, then remove the environment and the memvault link
#                                    (never your vault; the config and state are kept)
#
# The options for `memvault install` are checked before anything is installed: a missing --vault folder
# fails at once, not after the dependencies.
#
# Environment: MEMVAULT_VENV (where the environment goes), PYTHON (interpreter to use),
# MEMVAULT_TORCH_SPEC (torch requirement installed before sentence-transformers; default torch==2.13.0).
# PIP_* variables (index, proxy, certificates) reach pip unchanged.
set -euo pipefail

REPO=$(cd "$(dirname "$0")" && pwd)
WITH_EMBEDDINGS=1
DEMO=1
UNINSTALL=0
DRY_RUN=0
PASS=()  # options for `memvault install` / `memvault uninstall`
while [ $# -gt 0 ]; do
  case "$1" in
    --no-python-deps) WITH_EMBEDDINGS=0 ;;
    --no-demo) DEMO=0 ;;
    --uninstall) UNINSTALL=1 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
      [ "$1" = "--dry-run" ] && DRY_RUN=1
      PASS+=("$1") ;;
  esac
  shift
done

if [ "$(uname -s)" = "Darwin" ]; then
  DATA_DIR="$HOME/Library/Application Support/memvault"
else
  DATA_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/memvault"
fi
VENV=${MEMVAULT_VENV:-$DATA_DIR/venv}
BIN_DIR="$HOME/.local/bin"
LINK="$BIN_DIR/memvault"

# ---- uninstall ------------------------------------------------------------------------------
# Every registration first (hooks, skill, MCP servers of every agent: they name this environment's Python,
# and would fail on every prompt once it is gone), then the service, then the environment: renamed aside at
# once and its files (tens of thousands with torch) deleted in the background.
if [ "$UNINSTALL" = 1 ]; then
  START=$SECONDS
  WHERE=""
  if [ -x "$VENV/bin/memvault" ]; then
    echo "==> removing memvault's hooks, skill and MCP servers from every agent (memvault uninstall --all${PASS[*]:+ ${PASS[*]}})"
    "$VENV/bin/memvault" uninstall --all ${PASS[@]+"${PASS[@]}"}
    WHERE=$("$VENV/bin/python" -c 'from memvault import paths; print(paths.config_file()); print(paths.state_dir())' 2>/dev/null || true)
    if [ "$DRY_RUN" = 1 ]; then
      echo "==> dry run: would stop the embedding service if it runs"
    else
      echo "==> stopping the embedding service: $("$VENV/bin/memvault" serve --stop 2>/dev/null || echo "not running")"
    fi
  else
    echo "==> no environment at $VENV: nothing to uninstall (run memvault uninstall --all if you installed it elsewhere)"
  fi
  if [ "$DRY_RUN" = 1 ]; then
    echo "==> dry run: would remove $VENV and $LINK"
    exit 0
  fi
  if [ -L "$LINK" ] && case "$(readlink "$LINK")" in "$VENV"/*) true ;; *) false ;; esac; then
    rm -f "$LINK"
    echo "==> removed the link $LINK"
  fi
  if [ -d "$VENV" ]; then
    TRASH="$(dirname "$VENV")/.memvault-removed-$$"
    if mv "$VENV" "$TRASH" 2>/dev/null; then
      # Detached, quiet: the user's terminal and any caller's pipes are not held open while it runs.
      nohup sh -c 'rm -rf "$1" "$(dirname "$1")"/.memvault-removed-*; rmdir "$2" 2>/dev/null' sh "$TRASH" "$DATA_DIR" \
        </dev/null >/dev/null 2>&1 &
      echo "==> removed the environment $VENV (its files are deleted in the background)"
    else
      rm -rf "$VENV"
      echo "==> removed the environment $VENV"
    fi
  fi
  rmdir "$DATA_DIR" 2>/dev/null || true
  echo
  echo "Uninstalled in $((SECONDS - START)) s. Your vault is untouched."
  if [ -n "$WHERE" ]; then
    echo "Kept: the config $(echo "$WHERE" | sed -n 1p)"
    echo "      and the per-machine state (index, hook logs) in $(echo "$WHERE" | sed -n 2p); delete them by hand if you want."
  fi
  exit 0
fi

# ---- install --------------------------------------------------------------------------------
fail() { echo "install.sh: $*" >&2; exit 2; }

# The options for `memvault install`, checked before the minute-long dependency install.
check_options() {
  local n=0 opt value
  while [ "$n" -lt "${#PASS[@]}" ]; do
    opt=${PASS[$n]}
    case "$opt" in
      --vault|--project|--skill-name|--scope|--host)
        n=$((n + 1))
        [ "$n" -lt "${#PASS[@]}" ] || fail "$opt needs a value"
        value=${PASS[$n]} ;;
      --vault=*|--project=*|--skill-name=*|--scope=*|--host=*) value=${opt#*=}; opt=${opt%%=*} ;;
      --dry-run|--json) value="" ;;
      *) fail "unknown option $opt (see $0 --help)" ;;
    esac
    value=${value/#\~/$HOME}
    case "$opt" in
      --vault) [ -d "$value" ] || fail "--vault $value: no such folder (create the Obsidian vault first, or check the path); nothing was installed" ;;
      --project) [ -d "$value" ] || fail "--project $value: no such folder; nothing was installed" ;;
      --scope) case "$value" in user|project) ;; *) fail "--scope $value: use user or project" ;; esac ;;
      --skill-name) [[ "$value" =~ ^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$ ]] ||
        fail "--skill-name $value: use lowercase letters, digits and hyphens (at most 64 characters)" ;;
    esac
    n=$((n + 1))
  done
}
check_options
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
  "$VENV/bin/python" -m pip install --quiet --upgrade "$REPO[embeddings,mcp]"
else
  echo "==> installing memvault without embeddings (keyword-only recall)"
  "$VENV/bin/python" -m pip install --quiet --upgrade "$REPO[mcp]"
fi

mkdir -p "$BIN_DIR"
if [ -e "$LINK" ] && [ ! -L "$LINK" ]; then
  echo "==> $LINK exists and is not a link: left alone (run $VENV/bin/memvault, or remove it and run again)"
else
  ln -sfn "$VENV/bin/memvault" "$LINK"
  echo "==> memvault linked at $LINK"
fi
case ":$PATH:" in *":$BIN_DIR:"*) ;; *) echo "    add $BIN_DIR to your PATH to run it by name" ;; esac

echo
echo "==> memvault install ${PASS[*]:-}"
"$VENV/bin/memvault" install ${PASS[@]+"${PASS[@]}"}

if [ "$DEMO" = 1 ] && [ "$DRY_RUN" = 0 ]; then
  # A throwaway copy of the example vault and a throwaway MEMVAULT_HOME: the demo touches nothing of yours.
  DEMO_DIR=$(mktemp -d "${TMPDIR:-/tmp}/memvault-demo.XXXXXX")
  cp -R "$REPO/examples/vault" "$DEMO_DIR/vault"
  (
    export MEMVAULT_HOME="$DEMO_DIR/home"
    MV=("$VENV/bin/memvault" --vault "$DEMO_DIR/vault")
    echo
    echo "==> demo on a copy of examples/vault ($DEMO_DIR/vault)"
    "${MV[@]}" init >/dev/null
    "${MV[@]}" save preference demo-install "MemoryVault was installed on $(date +%Y-%m-%d)." --tag demo
    echo
    echo "==> indexing the demo vault, then recalling: the note says \"flaky\", the question does not"
    "${MV[@]}" reindex
    # --wait: the first recall starts the warm embedding service (a few seconds to load the model).
    "${MV[@]}" recall "a test that fails only sometimes" --wait 120  # the same entries the hook injects (recall.k, the floor)
    echo
    echo "==> what Claude Code's prompt hook adds to the same question"
    HOOK=$("$VENV/bin/python" -c 'import memvault, os; print(os.path.join(os.path.dirname(memvault.__file__), "hooks"))')
    echo '{"session_id": "demo", "prompt": "a test that fails only sometimes"}' |
      "$VENV/bin/python" "$HOOK/user_prompt_submit.py" |
      "$VENV/bin/python" -c 'import json, sys; out = json.loads(sys.stdin.read() or "{}"); print(out.get("systemMessage", "(nothing recalled)"))'
    "${MV[@]}" serve --stop >/dev/null 2>&1 || true
  )
  rm -rf "$DEMO_DIR"
fi

echo
if [ "$DRY_RUN" = 1 ]; then
  echo "Dry run: the environment is ready; nothing of Claude Code's was changed. Run again without --dry-run."
  exit 0
fi
echo "Done. Next steps:"
# The vault memvault knows now (from --vault, the config file or MEMVAULT_VAULT), if any.
KNOWN=$("$VENV/bin/python" -c 'from memvault import config; print(config.load().vault_root or "")' 2>/dev/null || true)
if [ -n "$KNOWN" ]; then
  echo "  your vault: $KNOWN (memvault init PATH records another)"
else
  echo "  memvault init ~/path/to/your/ObsidianVault               record your vault"
fi
echo "  start a new Claude Code session: relevant notes are recalled into your prompts"
echo "  memvault health     check the vault, index, service and reflection, and that each agent's memvault"
echo "                      hooks and MCP server run an interpreter that exists (not whether the agent calls them)"
echo "  $0 --uninstall                                  remove every agent's hooks, the skill and the environment"
