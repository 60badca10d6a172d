"""Fault injection for crash-safety tests: `MEMVAULT_FAULT_AFTER=N` kills the process at checkpoint N.

Every durable step of a mutation calls `checkpoint(label)`. Unset (always, outside tests), it is a
counter increment. The crash tests run a real mutation in a subprocess for N = 1, 2, … and check
that the next open of the vault finds the whole old state or the whole new state.
"""

from __future__ import annotations

import os

_count = 0


def checkpoint(label: str) -> None:
    global _count
    _count += 1
    limit = os.environ.get("MEMVAULT_FAULT_AFTER")
    if limit and _count >= int(limit):
        os.write(2, f"memvault: fault injected after step {_count} ({label})\n".encode())
        os._exit(86)
