"""The canonical vault on disk: listing notes, reading them safely, atomic writes, the vault lock.

Does NOT parse frontmatter (that is `notes`) or decide what may be written (that is `safety`).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import json
import os
import re
import stat
from collections.abc import Callable, Container, Iterator
from pathlib import Path

from memvault import fault
from memvault.errors import MemvaultError, VaultBusy
from memvault.records import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time (SessionStart reads notes here)
if TYPE_CHECKING:
    from typing import BinaryIO

# Read scope exclusions that always apply (names match any path component). Obsidian shows no file or
# folder whose name starts with a dot (.obsidian, .trash, .git, .github, .stversions, …), so neither do we.
DEFAULT_IGNORE = (".*", "node_modules", "_meta")
TEMP_SUFFIX = ".memvault.tmp"
MAX_NOTE_BYTES = 5 * 1024 * 1024  # a bigger file is not read as a note (every read is bounded)
# Copies left by sync tools: Obsidian Sync / Dropbox / iCloud "(conflict …)", Syncthing ".sync-conflict-…".
_CONFLICT = re.compile(r"(\([^)]*conflict[^)]*\d[^)]*\)|\.sync-conflict-\d{8}-\d{6})", re.IGNORECASE)


class Listing(Record):
    """What a walk of the vault found: markdown paths (vault-relative, POSIX) and what it skipped."""

    notes: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (path, reason)


def templates_folder(root: Path) -> str | None:
    """The templates folder configured in Obsidian (`.obsidian/templates.json`), if any."""
    for name in ("templates.json", "plugins/templater-obsidian/data.json"):
        try:
            data = json.loads((root / ".obsidian" / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        folder = data.get("folder") or data.get("templates_folder") if isinstance(data, dict) else None
        if isinstance(folder, str) and folder.strip("/"):
            return folder.strip("/")
    return None


def ignore_patterns(root: Path, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Default exclusions + the templates folder configured in Obsidian (that folder only) + configured globs."""
    templates = templates_folder(root)
    return (*DEFAULT_IGNORE, *(("/" + templates,) if templates else ()), *extra)


def is_ignored(rel: str, patterns: tuple[str, ...]) -> bool:
    """Gitignore-like: a pattern without '/' matches any path component; one starting with or containing '/'
    matches the path from the vault's root (and everything below it)."""
    parts = rel.split("/")
    for pattern in patterns:
        anchored = "/" in pattern.strip("/") or pattern.startswith("/")
        pattern = pattern.strip("/")
        if anchored:
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*"):
                return True
        elif any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False


def free_note(root: Path, folder: str, stem: str, taken: Container[str] = ()) -> str:
    """`<folder>/<stem>.md`, or `<stem>-2.md`, `-3`, … when that note exists in the vault (or is in `taken`)."""
    rel, n = f"{folder}/{stem}.md", 2
    while (root / rel).exists() or rel in taken:
        rel, n = f"{folder}/{stem}-{n}.md", n + 1
    return rel


def is_conflict_copy(rel: str) -> bool:
    return bool(_CONFLICT.search(rel.rsplit("/", 1)[-1]))


def list_markdown(root: Path, patterns: tuple[str, ...] = DEFAULT_IGNORE, under: str = "") -> Listing:
    """Walk the vault for `.md` files, honouring ignore patterns, never leaving the vault.

    Symlinked folders are followed only when they resolve inside the vault, and each real folder
    is visited once, so symlink loops end. Temp files of interrupted writes are skipped, and so is
    anything that is not a regular file (a FIFO named `x.md` would block whoever reads it).
    """
    real_root = os.path.realpath(root)
    found: list[str] = []
    skipped: list[tuple[str, str]] = []
    seen: set[tuple[int, int]] = set()
    stack = [_join("", under.strip("/"))] if under else [""]
    while stack:
        rel_dir = stack.pop()
        folder = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen or not is_inside(os.path.realpath(folder), real_root):
                why = "symlink loop" if (st.st_dev, st.st_ino) in seen else "symlink leaves the vault"
                skipped.append((rel_dir, why))
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            if rel_dir or under:
                skipped.append((rel_dir, f"unreadable: {exc.strerror}"))
            continue
        folders = []
        for entry in entries:
            rel = _join(rel_dir, entry.name)
            if is_ignored(rel, patterns):
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                folders.append(rel)
                continue
            if not entry.name.lower().endswith(".md") or entry.name.endswith(TEMP_SUFFIX):
                continue
            problem = _not_a_note(entry, real_root)
            if problem:
                skipped.append((rel, problem))
            else:
                found.append(rel)
        stack.extend(reversed(folders))  # depth first, in name order
    return Listing(tuple(found), tuple(skipped))


def _not_a_note(entry: os.DirEntry[str], real_root: str) -> str | None:
    """Why a listed `.md` entry cannot be read as a note, or None (a regular file inside the vault)."""
    try:
        if entry.is_symlink() and not is_inside(os.path.realpath(entry.path), real_root):
            return "symlink leaves the vault"
        if not entry.is_file():  # follows a symlink; a FIFO, socket or device is not a regular file
            return "not a regular file"
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    return None


def read_text(path: Path, max_bytes: int = MAX_NOTE_BYTES) -> str:
    """A note's text. Clear errors for missing, binary, non-UTF-8, oversized and non-regular files."""
    data = read_bytes(path, max_bytes)
    if b"\x00" in data[:8192]:
        raise MemvaultError(f"{path}: looks binary, not a markdown note", code="unreadable", path=str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemvaultError(f"{path}: not UTF-8 text (byte {exc.start})", code="unreadable", path=str(path)) from None


def atomic_write(
    path: Path, data: bytes, *, private: bool = False, before_replace: Callable[[], object] | None = None
) -> None:
    """Replace `path` with `data` so readers see the old or the new file, never a torn one.

    Temp file in the same folder, fsync, rename over the target, fsync the folder. The file's
    permission bits are kept when it already exists; `private` makes it user-only (0600) whatever
    the umask, for memvault's own state (journals, reflection state, manifests). `before_replace` runs
    right before the rename (after the slow part: writing and syncing the temp file); if it raises,
    nothing is renamed.
    """
    _injected_error(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = 0o600 if private else os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    tmp = path.parent / f".{path.name[:100]}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        fault.checkpoint("temp file written")
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove(path: Path) -> None:
    """Delete a file durably (missing is fine)."""
    _injected_error(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        fsync_dir(path.parent)


FAULT_OSERROR = "MEMVAULT_FAULT_OSERROR"


def _injected_error(path: Path) -> None:
    """Tests only: with `MEMVAULT_FAULT_OSERROR=ENOSPC@FOLDER` (any errno name) every atomic write or removal
    below FOLDER raises that OSError, as a full disk, a read-only mount or a missing permission would (root
    ignores file modes, and not every test machine may mount a filesystem). Unset, it costs one lookup."""
    spec = os.environ.get(FAULT_OSERROR)
    if not spec:
        return
    name, _, folder = spec.partition("@")
    if is_inside(os.path.realpath(path), os.path.realpath(folder)):
        code = getattr(errno, name)
        raise OSError(code, os.strerror(code), str(path))


def fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return  # Windows cannot open a directory for fsync; NTFS journals the rename itself
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep_temp_files(folder: Path) -> int:
    """Remove temp files that an interrupted write left in `folder`."""
    count = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    count += 1
    return count


@contextlib.contextmanager
def vault_lock(lock_file: Path, timeout: float) -> Iterator[None]:
    """The one vault-wide lock that serialises every mutation (across processes)."""
    import filelock  # here, not at the top: the prompt path reads notes through this module

    lock = filelock.FileLock(str(lock_file), timeout=timeout, mode=0o600)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise VaultBusy(f"another memvault process has held the vault lock for {timeout:g}s ({lock_file})") from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def try_lock(lock_file: Path, timeout: float) -> Iterator[bool]:
    """A cross-process lock, waited for at most `timeout` seconds; yields whether it was taken."""
    import filelock

    lock = filelock.FileLock(str(lock_file), mode=0o600)
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


class NotRegularFile(OSError):
    """A FIFO, socket, device or folder where a regular file was expected."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for binary reading, only if it is a regular file (a symlink is followed); else an OSError.

    The one way memvault opens a file it did not write (a note, a transcript a host event names, a file a
    glob found): what `stat` calls a FIFO, socket, device or folder is refused unopened (`NotRegularFile`,
    `IsADirectoryError`), and the open itself is non-blocking and checked again with `fstat`, so one
    swapped in meanwhile never blocks the reader. The caller bounds how much it reads.
    """
    _check_regular(os.stat(path).st_mode, path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        _check_regular(os.fstat(fd).st_mode, path)
        if os.name == "posix":
            os.set_blocking(fd, True)  # a regular file: reads behave as usual
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_regular(mode: int, path: str | os.PathLike[str]) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{os.fspath(path)}: is a folder")
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"{os.fspath(path)}: not a regular file")


def read_bytes(path: Path, max_bytes: int = MAX_NOTE_BYTES) -> bytes:
    """A file's bytes, read only if it is a regular file and at most `max_bytes` long; a clear error otherwise.

    Opened by `open_regular`, so a FIFO or a device never blocks the reader.
    """
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        raise MemvaultError(f"{path}: no such note", code="missing", path=str(path)) from None
    except IsADirectoryError:
        raise MemvaultError(f"{path}: is a folder, not a note", code="not_markdown", path=str(path)) from None
    except NotRegularFile:
        raise MemvaultError(f"{path}: not a regular file", code="unreadable", path=str(path)) from None
    except OSError as exc:
        raise MemvaultError(f"{path}: cannot read ({exc.strerror})", code="unreadable", path=str(path)) from None
    with handle:
        try:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                raise MemvaultError(f"{path}: larger than {max_bytes // 1024} KB", code="too_large", path=str(path))
            chunks, size = [], 0
            while size <= max_bytes:
                chunk = handle.read(min(1024 * 1024, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise MemvaultError(f"{path}: cannot read ({exc.strerror})", code="unreadable", path=str(path)) from None
    if size > max_bytes:  # it grew while being read
        raise MemvaultError(f"{path}: larger than {max_bytes // 1024} KB", code="too_large", path=str(path))
    return b"".join(chunks)


def is_inside(real: str, real_root: str) -> bool:
    """Whether real path `real` is `real_root` or below it (both already resolved)."""
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _rel(root: Path, path: str) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name
