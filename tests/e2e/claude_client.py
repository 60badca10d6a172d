"""The real Claude Code client for end-to-end tests: a pinned npm install, cached, and how to run it offline.

    binary = claude_client.install()        # a Path, or raises Unavailable with one line saying why
    env = claude_client.offline_env(home, stub.url)

The npm package `@anthropic-ai/claude-code` is installed once per machine into the user's cache
folder (`<cache>/memvault-tests/claude-code-<version>`; `MEMVAULT_TEST_CACHE` overrides the base), under
a file lock so parallel test processes install it once. Its native binary comes from the platform
package npm installs beside it; that binary runs without Node. Pointed at a stub of the Messages API
on 127.0.0.1 with a dummy key and the variables below, the client makes no other network call.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs

from memvault.store import disk

VERSION = "2.1.330"  # pinned: without a version npm picks an older release whose engines match the local Node
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT_S = 300
API_KEY = "sk-ant-api03-dummy-offline-key-0123456789abcdefghij"
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # with it, -p talks to the base URL only
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",  # the interactive UI would clone a marketplace
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
}


class Unavailable(Exception):
    """The client cannot be installed or run here; the message is the one line a skipped test shows."""


def cache_root() -> Path:
    base = os.environ.get("MEMVAULT_TEST_CACHE")
    return Path(base) if base else Path(platformdirs.user_cache_dir("memvault-tests"))


def install(version: str = VERSION) -> Path:
    """The path of the pinned client's binary, installing it into the cache first if needed."""
    folder = cache_root() / f"claude-code-{version}"
    found = _binary(folder)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed, so the real Claude Code client cannot be installed")
    folder.mkdir(parents=True, exist_ok=True)
    with disk.try_lock(folder.parent / f"claude-code-{version}.lock", INSTALL_TIMEOUT_S) as held:
        if not held:
            raise Unavailable(f"another process has been installing the Claude Code client for {INSTALL_TIMEOUT_S} s")
        found = _binary(folder)
        if found is not None:
            return found
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(folder), f"{PACKAGE}@{version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"npm install {PACKAGE}@{version} failed: {exc}") from exc
        found = _binary(folder)
        if found is None:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise Unavailable(f"npm install {PACKAGE}@{version} gave no runnable client ({last[0][:160]})")
    return found


def _binary(folder: Path) -> Path | None:
    """The native binary of an install in `folder`, when it answers --version."""
    scoped = folder / "node_modules" / "@anthropic-ai"
    names = ["claude.exe", "claude"] if sys.platform == "win32" else ["claude"]
    candidates = [scoped / f"claude-code-{_platform()}" / name for name in names]
    candidates.append(folder / "node_modules" / ".bin" / ("claude.cmd" if sys.platform == "win32" else "claude"))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            try:
                done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0 and "Claude Code" in done.stdout:
                return path
    return None


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    return f"{system}-{arch}"


def offline_env(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    """Variables that make the client use `base_url` with a dummy key, a throwaway HOME, and nothing else."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(home),
        "USERPROFILE": str(home),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": API_KEY,
        **QUIET_ENV,
        **extra,
    }
    return env
