#!/usr/bin/env python3
"""Claude Code UserPromptSubmit hook for MemoryVault: recall the notes relevant to the prompt (300 ms budget)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run

run("UserPromptSubmit")
