#!/usr/bin/env python3
"""Claude Code Stop hook for MemoryVault: schedule reflection of the new part of the transcript (prints nothing)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run

run("Stop")
