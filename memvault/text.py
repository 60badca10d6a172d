"""Small pure helpers for text: plurals for words people read, and the bounded form of a recall query."""

from __future__ import annotations


def plural(n: int, one: str, many: str | None = None) -> str:
    """'1 relevant entry', '3 relevant entries'; `many` when the plural is not regular ('entries wait')."""
    if n == 1:
        return f"{n} {one}"
    return f"{n} {many or (one[:-1] + 'ies' if one.endswith('y') else one + 's')}"


# A recall query is cut to its first QUERY_HEAD and last QUERY_TAIL characters (a pasted log usually ends
# with the question): a multi-megabyte prompt costs what a page costs (the embedding model reads ~256 tokens).
QUERY_HEAD, QUERY_TAIL = 1_500, 500


def bounded_query(text: str) -> str:
    """`text` cut to its first QUERY_HEAD and last QUERY_TAIL characters: recall's work does not grow with it."""
    if len(text) <= QUERY_HEAD + QUERY_TAIL:
        return text
    return text[:QUERY_HEAD] + "\n…\n" + text[-QUERY_TAIL:]
