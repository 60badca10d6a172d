#!/usr/bin/env python3
"""Claude Code SessionEnd hook for MemoryVault: schedule the final reflection of the session."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run

run("SessionEnd")
