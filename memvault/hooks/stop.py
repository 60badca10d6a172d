#!/usr/bin/env python3
"""Claude Code Stop hook for MemoryVault: schedule reflection of the new part of the transcript (prints nothing)."""

import os
import sys

# for _launch.py, even with PYTHONSAFEPATH set; os.path, not pathlib: pathlib costs a prompt hook 8 ms of imports
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _launch import run

run("Stop")
