#!/usr/bin/env python3
"""Hook launcher for agent hosts besides Claude Code: `host_event.py <host> <event>` (e.g. `codex SessionStart`)."""

import os
import sys

# for _launch.py, even with PYTHONSAFEPATH set; os.path, not pathlib: pathlib costs a prompt hook 8 ms of imports
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _launch import run_host

run_host(sys.argv[1:])
