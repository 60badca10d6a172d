#!/usr/bin/env python3
"""Claude Code Notification hook for MemoryVault: on idle_prompt, reflect idle and crashed sessions."""

import sys
from pathlib import Path

try:
    from memvault.hookio import main
except ImportError:  # run from a plugin checkout without an install: use the package next to this folder
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    try:
        from memvault.hookio import main
    except ImportError:
        sys.exit(0)  # MemoryVault is not installed for this Python: stay out of the session's way

sys.exit(main("Notification"))
