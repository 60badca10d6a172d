"""Shared by the hook scripts here: import memvault (the enclosing checkout's when it is not installed), run one event.

A hook must never hurt the session, so a Python without memvault makes every hook exit 0 silently.
"""

import sys
from pathlib import Path


def run(event: str) -> None:
    try:
        from memvault.hookio import main
    except ImportError:  # a plugin checkout without an install: use the package this folder is in
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        try:
            from memvault.hookio import main
        except ImportError:
            sys.exit(0)
    sys.exit(main(event))
