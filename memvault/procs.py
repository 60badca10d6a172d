"""Start a detached background process that outlives its parent (the hook or the CLI) on every OS."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from memvault import paths

MAX_LOG = 1024 * 1024
_WINDOWS_DETACHED = 0x00000008 | 0x00000200 | 0x08000000  # DETACHED_PROCESS, NEW_PROCESS_GROUP, NO_WINDOW

# Processes this one started: kept so they are reaped when they exit, not reported as leaked.
_started: list[subprocess.Popen[bytes]] = []


def prepare_log(log: Path) -> None:
    """A background process's stderr log, user-only, its folder made: over MAX_LOG, the current file and one older."""
    paths.ensure_private_dir(log.parent)
    with contextlib.suppress(OSError):
        if log.stat().st_size > MAX_LOG:
            os.replace(log, log.with_name(log.name + ".1"))
    paths.create_private_file(log)


def spawn(command: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Run `command` in its own session, stdin/stdout closed, stderr appended to `log`; return at once.

    The child survives the parent being killed (a SessionEnd hook past the host's 1.5 s) and holds
    no pipe the host waits on. It runs in the log's folder, not the user's project: `python -m` puts the
    working directory first on sys.path, where a project's `json.py` or `secrets.py` would shadow the stdlib.
    """
    prepare_log(log)
    _started[:] = [proc for proc in _started if proc.poll() is None]
    with open(log, "ab") as stderr:
        windows = sys.platform == "win32"
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
            cwd=log.parent,
            start_new_session=not windows,
            creationflags=_WINDOWS_DETACHED if windows else 0,
        )
    _started.append(proc)
    return proc
