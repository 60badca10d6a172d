"""What "private" means, defined once for every place text leaves the vault: `<private>…</private>` spans."""

from __future__ import annotations

import re

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)


def strip_private(text: str) -> str:
    """Remove `<private>…</private>` spans (an unclosed span runs to the end)."""
    return _PRIVATE.sub("", text)
