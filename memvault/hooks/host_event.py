#!/usr/bin/env python3
"""Hook launcher for agent hosts besides Claude Code: `host_event.py <host> <event>` (e.g. `codex SessionStart`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _launch.py, even with PYTHONSAFEPATH set
from _launch import run_host

run_host(sys.argv[1:])
