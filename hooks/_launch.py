"""Shared by the hook scripts here: import memvault (this checkout's when it is not installed), run one event.

A hook must never hurt the session, so a Python without memvault makes every hook exit 0 silently.
"""

import sys
from pathlib import Path


def run(event: str) -> None:
    try:
        from memvault.hookio import main
    except ImportError:  # run from a plugin checkout without an install: use the package next to this folder
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        try:
            from memvault.hookio import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(event))
