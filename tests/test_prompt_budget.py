"""However big the prompt, the prompt hook recalls from a bounded query (scripts/bench_big_prompts.py times it)."""

from __future__ import annotations

import sys
from pathlib import Path

from memvault import text
from memvault.index import chunking

from .conftest import REPO, configure
from .test_hooks import FLAKY, hook_vault, log_records, payload, run_hook

__all__ = ["hook_vault"]


def pasted_log(megabytes: int) -> str:
    """A pasted build log full of identifiers (each would be one more FTS term), then the question."""
    sys.path.insert(0, str(REPO / "scripts"))
    import bench_big_prompts

    return bench_big_prompts.prompt(megabytes)


def test_a_query_is_cut_to_its_head_and_tail() -> None:
    assert text.bounded_query(FLAKY) == FLAKY
    big = pasted_log(1)
    cut = text.bounded_query(big)
    assert len(cut) <= text.QUERY_HEAD + text.QUERY_TAIL + 3 and cut.endswith(FLAKY) and cut.startswith(big[:100])
    assert len(chunking.identifiers(cut)) < 200 < len(chunking.identifiers(big[:200_000]))


def test_a_three_megabyte_prompt_is_recalled_from_a_bounded_query(hook_vault: Path, memvault_home: Path) -> None:
    # Measure the work, not the clock; and the bounded query, not the relevance floor (a pasted log's words
    # dilute the question's keyword coverage: the floor has its own tests).
    configure(memvault_home, "recall:\n  prompt_budget_ms: 9000\n  min_relevance: 0\n")
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=pasted_log(3)))
    assert result.returncode == 0 and "bisecting-flaky-tests.md" in result.stdout  # the question at the end counts
    record = log_records("UserPromptSubmit")[-1]
    assert record["result"] in ("success", "partial") and record["prompt_chars"] > 3_000_000
    assert record["query_chars"] <= text.QUERY_HEAD + text.QUERY_TAIL + 3
    assert record["not_served"] == "the event is over 1 MB"  # never handed to the service: it runs here
