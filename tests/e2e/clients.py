"""The real Codex CLI and Gemini CLI from npm, installed once per version into the user cache, run offline.

`codex()` / `gemini()` give the client's executable, or skip the test with one line saying why (no
Node, no npm, the registry unreachable). Each client gets a throwaway home wired to a local stub of
its model API: telemetry, update checks and usage statistics off, so it talks to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import filelock
import platformdirs
import pytest

CODEX_PACKAGE, CODEX_VERSION = "@openai/codex", "0.169.0"
GEMINI_PACKAGE, GEMINI_VERSION = "@google/gemini-cli", "0.61.0"
GEMINI_MODEL = "gemini-2.5-flash"  # pinned: the default (auto) model first asks a routing classifier
INSTALL_TIMEOUT_S = 300


def cache_root() -> Path:
    """Where the npm installs are kept between runs: `MEMVAULT_E2E_CACHE`, else the user cache folder."""
    given = os.environ.get("MEMVAULT_E2E_CACHE")
    return Path(given) if given else platformdirs.user_cache_path("memvault-e2e", appauthor=False)


def npm_client(package: str, version: str, binary: str) -> Path:
    """The client's executable from a cached `npm install` of exactly `package@version`; skips when impossible."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"e2e: {package} needs Node.js and npm on PATH (not found)")
    folder = cache_root() / f"{package.replace('/', '+')}@{version}"
    exe = folder / "node_modules" / ".bin" / binary
    folder.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(folder) + ".lock", timeout=INSTALL_TIMEOUT_S + 60):
        if not exe.exists():
            staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
            cmd = [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--save-exact",
                "--prefix",
                str(staging),
                f"{package}@{version}",
            ]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                shutil.rmtree(staging, ignore_errors=True)
                pytest.skip(f"e2e: npm install {package}@{version} timed out (registry unreachable?)")
            if done.returncode != 0:
                shutil.rmtree(staging, ignore_errors=True)
                reason = next((ln for ln in done.stderr.splitlines() if "ERR" in ln), done.stderr.strip()[:200])
                pytest.skip(f"e2e: npm install {package}@{version} failed: {reason}")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
    version_out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    if version not in version_out.stdout:
        pytest.skip(f"e2e: {package}@{version} does not run here: {(version_out.stderr or version_out.stdout)[:200]}")
    return exe


def codex() -> Path:
    return npm_client(CODEX_PACKAGE, CODEX_VERSION, "codex")


def gemini() -> Path:
    return npm_client(GEMINI_PACKAGE, GEMINI_VERSION, "gemini")


# ---- throwaway homes -----------------------------------------------------------------------------


def codex_config(base_url: str) -> str:
    """config.toml for an offline Codex: the stub as a Responses-API provider, nothing else reached."""
    return f"""model = "stub-model"
model_provider = "stub"
check_for_update_on_startup = false

[model_providers.stub]
name = "stub"
base_url = "{base_url}"
wire_api = "responses"
env_key = "STUB_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
"""


def gemini_settings() -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "model": {"name": GEMINI_MODEL},
    }


def environment(home: Path, memvault_home: Path, **extra: str) -> dict[str, str]:
    """The client's environment: a throwaway HOME, the test's memvault state, this Python's memvault first."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "SYSTEMROOT", "TMPDIR")}
    return {
        **keep,
        "HOME": str(home),
        "USERPROFILE": str(home),
        "MEMVAULT_HOME": str(memvault_home),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), keep.get("PATH", "")]),
        "NO_COLOR": "1",
        **extra,
    }


def write_gemini_home(home: Path) -> Path:
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(gemini_settings(), indent=2) + "\n", encoding="utf-8")
    return folder
