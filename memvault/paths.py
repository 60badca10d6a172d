"""Where memvault keeps its per-machine files: config, state (locks, journals, logs, index), cache.

`MEMVAULT_HOME` puts everything under one folder (tests, portable installs); otherwise the
platform's user directories are used (XDG on Linux, ~/Library on macOS, %LOCALAPPDATA% on Windows).
Nothing here is inside the vault: the vault is synced between machines, these files are not.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

from memvault.errors import MemvaultError

APP = "memvault"


def _home() -> Path | None:
    value = os.environ.get("MEMVAULT_HOME")
    return Path(value).expanduser() if value else None


def config_file() -> Path:
    """The YAML config: `MEMVAULT_CONFIG`, else `$MEMVAULT_HOME/config.yaml`, else the user config dir."""
    explicit = os.environ.get("MEMVAULT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    home = _home()
    return (home if home else platformdirs.user_config_path(APP, appauthor=False)) / "config.yaml"


def shown(path: Path) -> str:
    """A file as people and notes see it: `~/…` under the home folder, so no user name is written."""
    full = Path(os.path.abspath(path))
    try:
        return "~/" + full.relative_to(Path.home()).as_posix()
    except ValueError:
        return full.as_posix()


def state_dir() -> Path:
    home = _home()
    return home / "state" if home else platformdirs.user_state_path(APP, appauthor=False)


def cache_dir() -> Path:
    home = _home()
    return home / "cache" if home else platformdirs.user_cache_path(APP, appauthor=False)


def stop_file() -> Path:
    """While this file exists, no reflection starts and a running one halts (`touch` it to pause reflection)."""
    return state_dir() / "STOP"


def vault_state_dir(vault_root: Path) -> Path:
    """Per-vault state (lock, journal, index): one folder per vault, keyed by its real path."""
    real = os.path.realpath(vault_root)
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = "".join(c for c in Path(real).name if c.isalnum() or c in "-_")[:40] or "vault"
    return state_dir() / "vaults" / f"{name}-{digest}"


INDEX_FILE = "index.sqlite3"


def index_file(vault_root: Path, folder: str, location: str) -> Path:
    """Where a vault's index lives: its per-machine state dir (default) or `<folder>/_meta/` inside the vault."""
    if location == "vault":
        return vault_root / folder / "_meta" / INDEX_FILE
    return vault_state_dir(vault_root) / INDEX_FILE


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) readable by the current user only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        os.chmod(path, 0o700)
    return path


def runtime_dir() -> Path:
    """Where the embedding service's socket, info file and lock live: a folder only the user can open.

    `$MEMVAULT_HOME/run`, else the platform's user runtime dir. When `<dir>/embed.sock` would pass the
    AF_UNIX path limit, a short per-user folder in the temp dir is used instead. A folder that exists but
    belongs to someone else is refused: whoever created it could stand in for the service.
    """
    home = _home()
    if home:
        path = Path(os.path.abspath(home / "run"))  # the socket address must not depend on the working folder
    else:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset; the fallback is fine
            try:
                path = platformdirs.user_runtime_path(APP, appauthor=False)
            except OSError as exc:
                raise MemvaultError(f"no usable runtime folder: {exc}", code="runtime_dir") from None
    if os.name == "posix" and len(os.fsencode(path / "embed.sock")) > 100:
        import tempfile

        digest = hashlib.sha256(os.fsencode(path)).hexdigest()[:8]
        path = Path(tempfile.gettempdir()) / f"memvault-{os.getuid()}-{digest}"
    try:
        ensure_private_dir(path)
    except OSError as exc:
        raise MemvaultError(f"cannot create the runtime folder {path}: {exc}", code="runtime_dir") from None
    if os.name == "posix":
        # Checked after creating it, so a folder slipped in between check and use is caught as well.
        for info in (os.lstat(path), os.stat(path)):
            if info.st_uid != os.getuid() or info.st_mode & 0o077:
                raise MemvaultError(
                    f"{path} belongs to another user or is open to others; refusing to use it for the service socket",
                    code="runtime_dir",
                )
    return path
