"""Small user-only files with the standard library alone: an atomic replace, and a line appended in one write.

Ground floor, so that both the hooks' state (`runtime`) and the prompt hook's short way (`hooks.fast`,
which loads nothing but the standard library) write their files the same way. The vault's own files
go through `store.disk.atomic_write`, which also syncs them to the disk.
"""

from __future__ import annotations

import os
import time


def replace(path: str | os.PathLike[str], text: str) -> None:
    """Atomic, user-only (0600): a temp file in the same folder, which must exist, renamed over `path`."""
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:  # noqa: SIM105 - contextlib costs the prompt hook 5 ms of imports
            os.unlink(tmp)
        except OSError:
            pass
        raise


def append_line(path: str | os.PathLike[str], line: str) -> None:
    """One whole line in one write (O_APPEND), user-only: concurrent writers never interleave; a stray
    surrogate never costs the line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8", "replace"))
    finally:
        os.close(fd)
