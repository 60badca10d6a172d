"""A terminal program driven under tmux (a private server per instance): start, type, read the screen, stop."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class Terminal:
    """`argv` running in a detached tmux session of its own, with exactly the environment `env`."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], width: int = 160, height: int = 50) -> None:
        self.socket = f"memvault-e2e-{os.getpid()}-{time.monotonic_ns()}"
        command = " ".join(["env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, argv)])
        self._tmux("new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height), "-c", str(cwd), command)

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        return proc.stdout

    def screen(self) -> str:
        """What the terminal shows now, with its scrollback."""
        return self._tmux("capture-pane", "-p", "-t", "main", "-S", "-2000")

    def submit(self, text: str, done: Callable[[], object], timeout: float = 60) -> None:
        """Type `text`, then press Enter until `done()` says it was taken.

        Enter is pressed only once the text shows, and again every few seconds while it is not taken:
        a busy UI (a loaded machine) can drop a key that arrives while it is still drawing the text.
        """
        self._tmux("send-keys", "-t", "main", "-l", text)
        deadline = time.monotonic() + timeout
        while text[-20:] not in self.screen() and time.monotonic() < deadline:
            time.sleep(0.1)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            self._tmux("send-keys", "-t", "main", "Enter")
            until = time.monotonic() + 4
            while time.monotonic() < until:
                if done():
                    return
                time.sleep(0.2)
        raise AssertionError(f"the UI did not take {text!r} within {timeout:g} s:\n{self.screen()}")

    def close(self) -> None:
        self._tmux("kill-server")
