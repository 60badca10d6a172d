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
NPM_NETWORK = ("--fetch-retries=1", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=5000",
               "--fetch-timeout=30000")  # fmt: skip
_unavailable: dict[str, str] = {}  # package@version -> why it cannot be had (asked once per test run)
_ready: dict[str, Path] = {}  # package@version -> its executable, checked to run (once per test run)


def cache_root() -> Path:
    """Where the npm installs are kept between runs: `MEMVAULT_E2E_CACHE`, else the user cache folder."""
    given = os.environ.get("MEMVAULT_E2E_CACHE")
    return Path(given) if given else platformdirs.user_cache_path("memvault-e2e", appauthor=False)


def npm_client(package: str, version: str, binary: str) -> Path:
    """The client's executable from a cached `npm install` of exactly `package@version`; skips when impossible."""
    key = f"{package}@{version}"
    if key in _ready:
        return _ready[key]
    if key in _unavailable:
        pytest.skip(_unavailable[key])
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"e2e: {package} needs Node.js and npm on PATH (not found)")
    folder = cache_root() / f"{package.replace('/', '+')}@{version}"
    exe = folder / "node_modules" / ".bin" / binary
    folder.parent.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(folder) + ".lock", timeout=INSTALL_TIMEOUT_S + 60):
        if not exe.exists():
            staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
            install = ["install", "--no-audit", "--no-fund", "--save-exact", "--prefix", str(staging), key]
            failed = _npm(npm, ["view", key, "version"], 90) or _npm(npm, install, INSTALL_TIMEOUT_S)
            if failed:
                shutil.rmtree(staging, ignore_errors=True)
                _unavailable[key] = f"e2e: npm install {key} failed (registry unreachable?): {failed.strip()}"
                pytest.skip(_unavailable[key])
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
    version_out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120)
    if version not in version_out.stdout:
        _unavailable[key] = f"e2e: {key} does not run here: {(version_out.stderr or version_out.stdout).strip()[:200]}"
        pytest.skip(_unavailable[key])
    _ready[key] = exe
    return exe


def _npm(npm: str, args: list[str], timeout: float) -> str:
    """Run npm (output to a file: npm's children may hold a pipe open); "" on success, else the reason."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        try:
            done = subprocess.run([npm, *args, *NPM_NETWORK], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"no answer in {timeout:.0f} s"
        if done.returncode == 0:
            return ""
        log.seek(0)
        lines = log.read().splitlines()
        return next(
            (ln for ln in lines if ln.startswith("npm error") and " code " in ln), f"exit status {done.returncode}"
        )


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
