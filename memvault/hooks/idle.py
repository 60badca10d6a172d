#!/usr/bin/env python3
"""Claude Code Notification hook for MemoryVault: on idle_prompt, reflect idle and crashed sessions."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run

run("Notification")
