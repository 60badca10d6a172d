"""What every host's headless miner shares: its error, running one child call with a deadline, killing what it started.

The prompt, the JSON contract and the strict check that every quote is the user's words are in
`claude.py` (`PROMPT`, `window_input`, `parse_answer`); `codex.py` and `gemini.py` use them as they are.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence


class MinerError(Exception):
    """A headless miner failed (missing, timed out, exited non-zero, over its cap, or answered something invalid).

    `answered`: the model did answer (and so the call cost something); False when no answer came back.
    """

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


def run_child(
    argv: Sequence[str], stdin: str, *, env: dict[str, str], cwd: str, timeout: float
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `argv` fed `stdin`, run in its own process group and killed after `timeout`."""
    executable = argv[0]
    windows_os = sys.platform == "win32"
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            encoding="utf-8", errors="replace", env=env, cwd=cwd, start_new_session=not windows_os,
            creationflags=0x00000200 if windows_os else 0,  # CREATE_NEW_PROCESS_GROUP
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise MinerError(f"{executable!r} is not installed") from exc
    except OSError as exc:
        raise MinerError(f"could not run {executable}: {exc}") from exc
    try:
        stdout, stderr = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        kill(proc)
        raise MinerError(f"{executable} did not answer within {timeout:g} s") from exc
    return proc.returncode, stdout, stderr


def kill(proc: subprocess.Popen[str]) -> None:
    """Stop the child and everything it started, then reap it."""
    try:
        if sys.platform == "win32":
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True, check=False)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        proc.communicate(timeout=10)
