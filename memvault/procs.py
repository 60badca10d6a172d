"""Start a detached background process that outlives its parent (the hook or the CLI) on every OS."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from . import paths

# Processes this one started: kept so they are reaped when they exit, not reported as leaked.
_started: list[subprocess.Popen[bytes]] = []


def spawn(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Run `command` in its own session, stdin/stdout closed, stderr appended to `log`; return at once.

    The child survives the parent being killed (a SessionEnd hook past the host's 1.5 s) and holds
    no pipe the host waits on.
    """
    paths.ensure_private_dir(log.parent)
    _started[:] = [proc for proc in _started if proc.poll() is None]
    with open(log, "ab") as stderr:
        if sys.platform == "win32":
            flags = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, creationflags=flags
            )
        else:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
    _started.append(proc)
    return proc
