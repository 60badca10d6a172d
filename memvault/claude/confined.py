"""Reading a file of a folder memvault does not own (a repository, a plugin, ~/.claude) without leaving that folder.

The skills index and `memvault seed` read files a cloned repository controls. Both go through `read`:
the file is read only if its real path (every symlink, of the file and of the folders on the way,
resolved) lies inside the folder it belongs to, only if it is a regular file (opened non-blocking,
so a FIFO or a device never blocks), and at most `max_bytes` of it. A repository therefore cannot
make memvault copy `~/.ssh/config`, `~/.netrc` or `~/.ssh/id_rsa` into the vault.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memvault.errors import MemvaultError
from memvault.store import disk

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, every symlink resolved, is `root` (resolved too) or below it."""
    return disk.is_inside(os.path.realpath(path), os.path.realpath(root))


def read(path: Path, root: Path, max_bytes: int, *, leaving: str, code: str) -> bytes:
    """The bytes of `path` if it really lies in `root`, is a regular file and is at most `max_bytes` long.

    Raises `MemvaultError` with `code`: `leaving` is the message when the file leads out of `root`.
    """
    real = os.path.realpath(path)
    if not disk.is_inside(real, os.path.realpath(root)) or real == os.path.realpath(root):
        raise MemvaultError(leaving, code=code)
    try:
        fd = os.open(real, _FLAGS)  # no symlink may replace the last part between realpath and here
    except OSError as exc:
        raise MemvaultError(f"cannot read it: {exc.strerror or exc}", code=code) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise MemvaultError(f"{path.name} is not a regular file: not read", code=code)
        if info.st_size > max_bytes:
            raise MemvaultError(f"{info.st_size // 1024} KB is over the {max_bytes // 1024} KB limit", code=code)
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise MemvaultError(f"cannot read it: {exc.strerror or exc}", code=code) from None
    finally:
        os.close(fd)
    if size > max_bytes:  # it grew while being read
        raise MemvaultError(f"over the {max_bytes // 1024} KB limit", code=code)
    return b"".join(chunks)
