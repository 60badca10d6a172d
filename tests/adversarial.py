"""How long the adversarial tests run: short by default (the test command), longer with MEMVAULT_ADVERSARIAL=long.

    MEMVAULT_ADVERSARIAL=long .venv/bin/python -m pytest -m adversarial -s

prints what each part did (examples fuzzed, processes killed, edits raced) with `-s`.
"""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T", int, float)
LONG = os.environ.get("MEMVAULT_ADVERSARIAL", "").lower() == "long"


def scale(short: T, long: T) -> T:
    return long if LONG else short


def say(text: str) -> None:
    """One line of what a test did (shown with `pytest -s`; the numbers the wiki quotes come from here)."""
    print(f"\n[adversarial{' long' if LONG else ''}] {text}")
