"""Where the benchmarks find third-party data too large for the repository, and the one line they print without it.

A benchmark takes its data by argument (`--locomo FILE`, `--transcripts DIR`) or from the folder named
by `MEMVAULT_BENCH_DATA`, laid out as `locomo/locomo10.json` and `claude-code-transcripts/…` (the
sources are listed in tests/data/README.md). Without it the benchmark prints one `skipped:` line and
exits 0; a path given by argument that does not exist is an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

ENV = "MEMVAULT_BENCH_DATA"
LOCOMO = "locomo/locomo10.json"
TRANSCRIPTS = "claude-code-transcripts"


def find(given: Path | None, rel: str, option: str) -> Path | None:
    """The path given by argument (it must exist), else `$MEMVAULT_BENCH_DATA/rel` if it exists, else None."""
    if given is not None:
        if not given.expanduser().exists():
            raise SystemExit(f"error: {option} {given}: no such file or folder")
        return given.expanduser()
    base = os.environ.get(ENV, "").strip()
    found = Path(base).expanduser() / rel if base else None
    return found if found is not None and found.exists() else None


def skipped(what: str, rel: str, option: str) -> str:
    """The one line a benchmark (or one part of it) prints when its data is absent."""
    return f"skipped: {what} not found (give {option} PATH, or set {ENV} to a folder holding {rel})"


def skip(what: str, rel: str, option: str) -> NoReturn:
    """Print the `skipped:` line and exit 0."""
    print(skipped(what, rel, option), flush=True)
    sys.exit(0)


def require(given: Path | None, rel: str, option: str, what: str) -> Path:
    """`find()`, or `skip()` when the data is absent."""
    found = find(given, rel, option)
    if found is None:
        skip(what, rel, option)
    return found
