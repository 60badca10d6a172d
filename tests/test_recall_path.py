"""One recall path (issue 29, item 5): the CLI, the prompt hook and MCP give the same entries AND the same passages.

The hook runs as a real subprocess fed the host's JSON (its injected context is compared whole), `memvault recall`
through the CLI (`--json`, and `--explain`, which prints the hook's context), and MCP's `recall` tool as the MCP
server runs it. Keyword-only here; tests/test_one_recall.py runs the same three ways with the warm service.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli import cli
from memvault.hooks import inject
from memvault.recall import passages

from .conftest import configure
from .test_one_recall import PROMPTS, by_cli, by_mcp, example  # noqa: F401  (example: the fixture)
from .test_one_recall import by_hook as hook_paths


def hook_context(prompt: str, session: str) -> str:
    """The context the real prompt hook injects for `prompt` in a new session ("" when it injects nothing)."""
    import os
    import subprocess
    import sys

    from memvault.claude.settings import INTERPRETER_FLAGS

    from .test_one_recall import HOOK

    event = {"session_id": session, "prompt": prompt, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp"}
    done = subprocess.run([sys.executable, *INTERPRETER_FLAGS, str(HOOK)], input=json.dumps(event),
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""


def test_the_three_ways_show_the_same_passages(example: Path) -> None:  # noqa: F811
    given = 0
    for n, (prompt, _) in enumerate(PROMPTS):
        hits = by_cli(prompt, "--wait", "0")["hits"]
        expected, kept = passages.context(hits, 6000, inject.redact)  # the defaults: recall.max_context_chars, k 5
        assert hook_context(prompt, f"passages-{n}") == expected, prompt
        mcp_text = by_mcp_text(prompt)
        for hit in kept:
            assert hit["passage"], hit["path"]
            assert inject.redact(passages.entry(hit["title"], hit["path"], hit["heading"], hit["passage"])) in mcp_text
        given += len(kept)
    assert given > 0  # the related prompts gave notes, each with its passage


def by_mcp_text(prompt: str) -> str:
    from memvault.mcpserver import tools

    return tools.recall(tools.open_memory(), prompt)[0]


def test_explain_prints_the_hooks_context_and_the_reason_a_special_note_is_given(example: Path) -> None:  # noqa: F811
    prompt = "what was my flaky test detector idea?"
    shown = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", prompt], terminal_width=200).output
    hits = by_cli(prompt, "--wait", "0")["hits"]
    context, _ = passages.context(hits, 6000, inject.redact)
    assert context and " ".join(context.split()) in " ".join(shown.split()), shown
    assert "Ideas.md" in [h["path"] for h in hits] and hook_paths(prompt, "explain") == [h["path"] for h in hits]
    ledger = next(h for h in hits if h["path"] == "Ideas.md")
    assert ledger["why"].startswith("the idea ledger, given only on"), ledger["why"]
    assert "the idea ledger, given only on" in " ".join(shown.split())  # the stated reason, in the hook's view
    assert by_mcp(prompt) == [h["path"] for h in hits]


@pytest.mark.slow
def test_with_the_warm_service_the_three_ways_show_the_same_passages(example: Path, memvault_home: Path) -> None:  # noqa: F811
    """The real service and model: the hook recalls inside the service, the CLI and MCP ask it."""
    pytest.importorskip("sentence_transformers")
    from memvault import open_vault
    from memvault.recall import client

    configure(memvault_home, "embedding:\n  warm_service: true\nrecall:\n  prompt_budget_ms: 3000\n")
    assert client.start("default", idle_minutes=5)
    assert client.wait_ready(120) is not None, "the embedding service did not start"
    assert open_vault(example).reindex(vectors="service").pending == 0
    assert client.query_vector("warm up the model's first query", 30) is not None
    given = 0
    for n, (prompt, _) in enumerate(PROMPTS):
        result = by_cli(prompt, "--wait", "30")
        assert result["vec_hits"] > 0, result
        expected, kept = passages.context(result["hits"], 6000, inject.redact)
        assert hook_context(prompt, f"warm-{n}") == expected, prompt
        mcp_text = by_mcp_text(prompt)
        for hit in kept:
            assert inject.redact(passages.entry(hit["title"], hit["path"], hit["heading"], hit["passage"])) in mcp_text
        given += len(kept)
    assert given > 0


def test_several_chunks_of_one_note_are_shown_the_same_three_ways(example: Path) -> None:  # noqa: F811
    """A strong note shows its best chunk and its second-best one further on (`passages.spread`), through the hook,
    the CLI and MCP alike; the next prompt of the session leaves that note out and spreads over the others."""
    from .test_passages import MATCH, SECOND, two_part_note

    (example / "Notes").mkdir(exist_ok=True)
    (example / "Notes" / "Ops log.md").write_text(two_part_note(), encoding="utf-8")
    from memvault import open_vault

    open_vault(example).reindex(vectors="none")
    prompt = "zephyrq consumer lagged billing topic month-end invoicing"
    hits = by_cli(prompt, "--wait", "0")["hits"]
    ops = next(h for h in hits if h["path"] == "Notes/Ops log.md")
    assert MATCH in ops["passage"] and SECOND in ops["passage"] and passages.GAP in ops["passage"], ops["passage"]
    expected, _ = passages.context(hits, 6000, inject.redact)
    assert hook_context(prompt, "spread") == expected
    assert inject.redact(passages.entry(ops["title"], ops["path"], ops["heading"], ops["passage"])) in by_mcp_text(
        prompt)  # fmt: skip
    runbook = "# Zephyrq runbook\n\nWhen the zephyrq consumer lagged on the billing topic at month-end invoicing.\n"
    (example / "Notes" / "Zephyrq runbook.md").write_text(runbook, encoding="utf-8")
    open_vault(example).reindex(vectors="none")
    again = hook_context(prompt, "spread")  # the same session: the log was given, the runbook is new
    assert "Notes/Zephyrq runbook.md" in again and "Notes/Ops log.md" not in again and len(again) <= 6000, again
