"""The real coding-agent clients from npm for the end-to-end tests: pinned, installed once, cached, checked, or skipped.

    binary = npm.require(npm.CLAUDE_CODE)   # the executable, or the test skips with one line saying why
    binary = npm.install(npm.CODEX)         # the same, raising Unavailable instead (for scripts)

Each client is installed once per machine with `npm install <package>@<version>` into its own folder of
the e2e cache (`MEMVAULT_E2E_CACHE`, else `<user cache>/memvault/e2e/`): under a file lock, so parallel
test runs install it once, and into a staging folder renamed into place only when whole, so an
interrupted install is never taken for a cached one. npm is asked with short network retries; the
version the executable reports is asserted on every run. What cannot be had is asked once per test
run: the answer is kept, and once npm or its registry cannot be reached no other client asks again,
so every test skips at once with the same line, which `conftest.py` folds into one summary line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import filelock
import platformdirs
import pytest

NO_CLIENT = "end-to-end tests need the real clients from npm:"  # every such skip starts so (one summary line)
PROBE_TIMEOUT_S = 90  # `npm view`: does the registry answer, and does it have the pinned version
INSTALL_TIMEOUT_S = 300
LOCK_TIMEOUT_S = INSTALL_TIMEOUT_S + 2 * PROBE_TIMEOUT_S  # another process installing the same client
NPM_NETWORK = (
    "--fetch-retries=1",
    "--fetch-retry-mintimeout=2000",
    "--fetch-retry-maxtimeout=5000",
    "--fetch-timeout=30000",
)  # fmt: skip  (fail in seconds, not minutes, when offline)
# npm's codes for "the registry cannot be reached" (a proxy that answers 5xx counts too); any other failure is a defect
NETWORK_ERROR = re.compile(
    r"\b(ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|ENETUNREACH|EHOSTUNREACH|ERR_SOCKET_TIMEOUT|E5\d\d)\b"
)


@dataclass(frozen=True)
class Package:
    """One client on npm, pinned, and where its executable lies under `node_modules` once installed."""

    name: str
    version: str
    folder: str  # the cache folder is `<folder>-<version>`
    executable: str  # a glob under node_modules
    native: bool  # a native binary that runs without Node (else a Node script from node_modules/.bin)

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


# Pinned: without a version npm picks the newest release whose `engines` accept the local Node, often an old one.
# Claude Code from 2.1.2xx on declares Node >= 22: the exact version installs with an EBADENGINE warning on Node
# 20, and its native binary (from a platform package, found even when npm skipped the postinstall) needs no Node.
CLAUDE_CODE = Package("@anthropic-ai/claude-code", "2.1.332", "claude-code", "@anthropic-ai/claude-code-*/claude", True)
CODEX = Package("@openai/codex", "0.169.0", "codex", ".bin/codex", False)
GEMINI_CLI = Package("@google/gemini-cli", "0.61.0", "gemini-cli", ".bin/gemini", False)


class Unavailable(Exception):
    """The client cannot be had here (no npm, its registry unreachable); the message is the skip's one line."""


_ready: dict[str, Path] = {}  # spec -> its executable, checked to run (once per test run)
_failed: dict[str, tuple[type[Exception], str]] = {}  # spec -> why it cannot be had (asked once per test run)
_no_npm: dict[str, str] = {}  # "why": npm cannot install anything here (no npm, registry unreachable), once per run


def cache_root() -> Path:
    """Where the npm installs are kept between test runs: `MEMVAULT_E2E_CACHE`, else the user's cache folder."""
    given = os.environ.get("MEMVAULT_E2E_CACHE")
    return Path(given) if given else platformdirs.user_cache_path("memvault", appauthor=False) / "e2e"


def require(package: Package) -> Path:
    """The client's executable, or skip the test with `NO_CLIENT` and why (conftest folds them into one line)."""
    try:
        return install(package)
    except Unavailable as why:
        pytest.skip(f"{NO_CLIENT} {why}")


def install(package: Package) -> Path:
    """The client's executable, from the cache or installed there first; raises Unavailable when it cannot be had.

    A client that installs but is not the pinned version, or npm failing for another reason than the
    network, raises RuntimeError: that is a defect to see, not a reason to skip.
    """
    if package.spec in _ready:
        return _ready[package.spec]
    if package.spec in _failed:
        kind, message = _failed[package.spec]
        raise kind(message)
    try:
        _ready[package.spec] = _install(package)
    except (Unavailable, RuntimeError) as exc:
        _failed[package.spec] = (type(exc), str(exc))
        raise
    return _ready[package.spec]


def _install(package: Package) -> Path:
    folder = cache_root() / f"{package.folder}-{package.version}"
    exe = _executable(package, folder)
    if exe is None:
        if _no_npm:
            raise Unavailable(_no_npm["why"])
        npm = shutil.which("npm")
        if npm is None:
            raise _npm_unavailable("npm is not installed")
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            with filelock.FileLock(f"{folder}.lock", timeout=LOCK_TIMEOUT_S):
                exe = _executable(package, folder) or _npm_install(npm, package, folder)
        except filelock.Timeout:
            raise RuntimeError(f"another process has held {folder}.lock for {LOCK_TIMEOUT_S} s") from None
    if not package.native and shutil.which("node") is None:
        raise Unavailable(f"Node.js is not on PATH ({package.name} runs on it)")
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    if done.returncode != 0 or not re.search(rf"(?<![\w.]){re.escape(package.version)}(?![\w.])", done.stdout):
        said = (done.stdout or done.stderr).strip()[:200]
        raise RuntimeError(f"{exe} --version says {said!r} (exit status {done.returncode}), expected {package.version}")
    return exe


def _executable(package: Package, folder: Path) -> Path | None:
    """The client's executable in an install folder, if that install is there."""
    suffix = (".exe" if package.native else ".cmd") if sys.platform == "win32" else ""
    found = sorted((folder / "node_modules").glob(package.executable + suffix))
    return found[0] if found and os.access(found[0], os.X_OK) else None


def _npm_install(npm: str, package: Package, folder: Path) -> Path:
    """`npm install` of exactly the pinned version into a staging folder, renamed to `folder` once whole."""
    staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", suffix=".partial", dir=folder.parent))
    try:
        _npm(npm, ["view", package.spec, "version"], PROBE_TIMEOUT_S)
        install = ["install", "--no-audit", "--no-fund", "--save-exact", "--prefix", str(staging), package.spec]
        _npm(npm, install, INSTALL_TIMEOUT_S)
        exe = _executable(package, staging)
        if exe is None:
            raise RuntimeError(f"npm installed {package.spec}, but no {package.executable} in its node_modules")
        shutil.rmtree(folder, ignore_errors=True)  # an earlier install without its executable
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    found = _executable(package, folder)
    assert found is not None
    return found


def _npm(npm: str, args: list[str], timeout: float) -> None:
    """Run npm, its output to a file (npm's children may hold a pipe open); raise why when it fails."""
    command = f"npm {args[0]} {args[-1]}"
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        try:
            done = subprocess.run([npm, *args, *NPM_NETWORK], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  timeout=timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise _npm_unavailable(f"`{command}` had no answer from the registry within {timeout:g} s") from None
        if done.returncode == 0:
            return
        log.seek(0)
        output = log.read()
    unreachable = NETWORK_ERROR.search(output)
    if unreachable:
        raise _npm_unavailable(f"the npm registry cannot be reached ({unreachable.group(1)})")
    errors = [line for line in output.splitlines() if line.startswith("npm error")] or output.splitlines()[-5:]
    raise RuntimeError(f"`{command}` failed (exit status {done.returncode}):\n" + "\n".join(errors[:20]))


def _npm_unavailable(why: str) -> Unavailable:
    """Remember for the rest of the run that npm cannot install anything here, and why."""
    _no_npm.setdefault("why", why)
    return Unavailable(why)
