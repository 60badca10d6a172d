"""Fault injection for the crash and adversarial tests: kill, fail or pause a process at a named checkpoint.

Every durable step of a mutation (and a few other steps) calls `checkpoint(label)`. Outside tests
none of the variables below is set and it is a counter increment.

- `MEMVAULT_FAULT_AFTER=N` kills the process at checkpoint N (exit status 86): the crash tests run
  a real mutation in a subprocess for N = 1, 2, … and check that the next open of the vault finds
  the whole old state or the whole new state.
- `MEMVAULT_FAULT_RAISE=TEXT` raises `RuntimeError` at every checkpoint whose label contains TEXT:
  a failure nobody foresaw, to check that it is contained (a reflection that keeps failing is
  quarantined, the sweep goes on).
- `MEMVAULT_FAULT_PAUSE=TEXT@FOLDER` stops at the first checkpoint whose label contains TEXT,
  creates `FOLDER/paused` and waits (at most a minute) until `FOLDER/resume` exists: a test can then
  do something at exactly that moment, such as editing a note as Obsidian would.
"""

from __future__ import annotations

import os
import time

_count = 0
_paused = False


def checkpoint(label: str) -> None:
    global _count, _paused
    _count += 1
    limit = os.environ.get("MEMVAULT_FAULT_AFTER")
    if limit and _count >= int(limit):
        os.write(2, f"memvault: fault injected after step {_count} ({label})\n".encode())
        os._exit(86)
    failing = os.environ.get("MEMVAULT_FAULT_RAISE")
    if failing and failing in label:
        raise RuntimeError(f"fault injected at {label}")
    pause = os.environ.get("MEMVAULT_FAULT_PAUSE")
    if pause and not _paused:
        text, _, folder = pause.rpartition("@")
        if text and text in label:
            _paused = True
            with open(os.path.join(folder, "paused"), "w", encoding="utf-8") as handle:
                handle.write(label)
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(folder, "resume")) and time.monotonic() < deadline:
                time.sleep(0.01)
