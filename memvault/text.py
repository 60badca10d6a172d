"""Small pure helpers for words people read: the ground floor's text, shared by the CLI, health and the hooks."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 relevant entry', '3 relevant entries'; `many` when the plural is not regular ('entries wait')."""
    if n == 1:
        return f"{n} {one}"
    return f"{n} {many or (one[:-1] + 'ies' if one.endswith('y') else one + 's')}"
