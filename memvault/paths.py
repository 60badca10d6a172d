"""Where memvault keeps its per-machine files: config, state (locks, journals, logs, index), cache.

`MEMVAULT_HOME` puts everything under one folder (tests, portable installs); otherwise the
platform's user directories are used (XDG on Linux, ~/Library on macOS, %LOCALAPPDATA% on Windows).
Nothing here is inside the vault: the vault is synced between machines, these files are not.

On the prompt path (a keyword-only prompt hook finds its config, settings cache and index here),
importing platformdirs costs about 15 ms (it imports tempfile, shutil, random, copy). So on Linux the
config, state and cache folders are read from the XDG variables here, by the rules platformdirs
applies (a test holds the two equal); other systems, and the runtime folder, ask platformdirs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memvault.errors import MemvaultError

APP = "memvault"
# XDG Base Directory defaults, under the home folder, for the folders read here on Linux.
_XDG = {"config": ("XDG_CONFIG_HOME", ".config"), "state": ("XDG_STATE_HOME", ".local/state"),
        "cache": ("XDG_CACHE_HOME", ".cache")}  # fmt: skip


def _home() -> Path | None:
    value = os.environ.get("MEMVAULT_HOME")
    return Path(value).expanduser() if value else None


def config_file() -> Path:
    """The YAML config: `MEMVAULT_CONFIG`, else `$MEMVAULT_HOME/config.yaml`, else the user config dir."""
    explicit = os.environ.get("MEMVAULT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    home = _home()
    return (home if home else user_dir("config")) / "config.yaml"


def shown(path: Path) -> str:
    """A file as people and notes see it: `~/…` under the home folder, so no user name is written."""
    full = Path(os.path.abspath(path))
    try:
        return "~/" + full.relative_to(Path.home()).as_posix()
    except ValueError:
        return full.as_posix()


def state_dir() -> Path:
    home = _home()
    return home / "state" if home else user_dir("state")


def cache_dir() -> Path:
    home = _home()
    return home / "cache" if home else user_dir("cache")


def user_dir(kind: str) -> Path:
    """memvault's user `kind` folder ("config", "state" or "cache") as platformdirs names it.

    On Linux: `$XDG_<KIND>_HOME/memvault` when that is an absolute path, else `~/<default>/memvault`, where a
    home that is unset or relative is the user's home from the password database (as platformdirs reads it).
    """
    if not sys.platform.startswith("linux"):
        import platformdirs

        return Path(getattr(platformdirs, f"user_{kind}_path")(APP, appauthor=False))
    variable, default = _XDG[kind]
    base = os.environ.get(variable, "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            import pwd

            try:
                home = pwd.getpwuid(os.getuid()).pw_dir
            except KeyError:
                raise MemvaultError("no home folder: set HOME or MEMVAULT_HOME", code="no_home") from None
        base = os.path.join(home, default)
    return Path(base) / APP


def stop_file() -> Path:
    """While this file exists, no reflection starts and a running one halts (`touch` it to pause reflection)."""
    return state_dir() / "STOP"


def vault_state_dir(vault_root: Path) -> Path:
    """Per-vault state (lock, journal, index): one folder per vault, keyed by its real path."""
    real = os.path.realpath(vault_root)
    digest = sha256_hex(real.encode("utf-8", "surrogateescape"))[:12]
    name = "".join(c for c in Path(real).name if c.isalnum() or c in "-_")[:40] or "vault"
    return state_dir() / "vaults" / f"{name}-{digest}"


def sha256_hex(data: bytes) -> str:
    """`hashlib.sha256(data).hexdigest()` from the standard library's own SHA-256 module where it has one: hashlib
    first loads OpenSSL's, 5 ms of a keyword-only prompt hook, which names its vault's folder with this."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # Python 3.10, 3.11
        except ImportError:  # a Python built without them
            from hashlib import sha256
    return str(sha256(data).hexdigest())


INDEX_FILE = "index.sqlite3"


def index_file(vault_root: Path, folder: str, location: str) -> Path:
    """Where a vault's index lives: its per-machine state dir (default) or `<folder>/_meta/` inside the vault."""
    if location == "vault":
        return vault_root / folder / "_meta" / INDEX_FILE
    return vault_state_dir(vault_root) / INDEX_FILE


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


def ensure_private_dir(path: Path) -> Path:
    """Create `path` and any missing parents, each readable by the current user only from birth.

    Umask-independent: every folder created here is chmod-ed to 0700 (the umask can only narrow the
    mode `mkdir` gets, and a umask such as 0277 would leave it unusable). Inside the state folder,
    every folder from the state folder down to `path` is brought to 0700, which also heals folders an
    older release created with the umask's bits.
    """
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            pass  # made by another process meanwhile
        else:
            _chmod(folder, PRIVATE_DIR)
    if os.name == "posix":
        for folder in _within_state(path):
            _chmod(folder, PRIVATE_DIR)
        _chmod(path, PRIVATE_DIR)
    return path


def create_private_file(path: Path) -> Path:
    """Create `path` empty and user-only (0600) if it does not exist; its folder is made private too."""
    ensure_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), PRIVATE_FILE)
    except FileExistsError:
        return path
    try:
        if os.name == "posix":
            os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return path


def _within_state(path: Path) -> list[Path]:
    """The folders from the state folder down to `path` (none when `path` is not inside it)."""
    base = state_dir()
    try:
        rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(base))
    except ValueError:
        return []
    folders = [Path(os.path.abspath(base))]
    for part in rel.parts:
        folders.append(folders[-1] / part)
    return folders


def _chmod(path: Path, mode: int) -> None:
    if os.name != "posix":
        return
    try:
        if os.stat(path).st_mode & 0o777 != mode:
            os.chmod(path, mode)
    except OSError:
        pass  # not ours, or gone: `health` reports what stays open


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

        import platformdirs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset; the fallback is fine
            try:
                path = platformdirs.user_runtime_path(APP, appauthor=False)
            except OSError as exc:
                raise MemvaultError(f"no usable runtime folder: {exc}", code="runtime_dir") from None
    if os.name == "posix" and len(os.fsencode(path / "embed.sock")) > 100:
        import tempfile

        digest = sha256_hex(os.fsencode(path))[:8]
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
