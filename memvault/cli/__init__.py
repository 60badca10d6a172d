"""The `memvault` command line: click commands grouped by family, on top of the library.

`group` holds the click group and what the command modules share; each other module registers one
family of commands on it. Importing this package imports them all, so `memvault.cli:cli` is complete.
"""

from . import discover, health, hooks, ideas, install, migrate, notes, reflect, search, skills, team
from .group import cli

__all__ = [
    "cli",
    "discover",
    "health",
    "hooks",
    "ideas",
    "install",
    "migrate",
    "notes",
    "reflect",
    "search",
    "skills",
    "team",
]
