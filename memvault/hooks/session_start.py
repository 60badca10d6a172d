#!/usr/bin/env python3
"""Claude Code SessionStart hook for MemoryVault: always-load entries in, session marked open, warm-up started."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run

run("SessionStart")
