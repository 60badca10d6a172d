"""`memvault promote idea` and `memvault gc`: the idea ledger from the terminal."""

from __future__ import annotations

from .cli import cli  # noqa: F401
