"""One recall for the CLI, the prompt hook and MCP: the same prompt gives the same entries (issue 30, item 6).

Each way is run as a user or a host runs it: the hook as a real subprocess fed the host's JSON (its log line says
what it injected), `memvault recall` through the CLI, and MCP's `recall` tool function. Keyword-only (no
service), then with the real warm embedding service and the packaged model. Also: the idea ledger (`Ideas.md`)
and daily notes are given only for a strong keyword reason, never for a loose match in meaning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memvault import open_vault, runtime
from memvault.claude.settings import INTERPRETER_FLAGS
from memvault.cli import cli
from memvault.mcpserver import tools

from .conftest import REPO, configure

HOOK = REPO / "memvault" / "hooks" / "user_prompt_submit.py"
DEMO = "a test that fails only sometimes"  # install.sh's demo prompt
IDEAS, DAILY = "Ideas.md", "Daily/2026-11-02.md"
# (prompt, whether it is about something in the example vault)
PROMPTS = [
    (DEMO, True),
    ("how do I fix a flaky test that fails only sometimes on CI?", True),
    ("how should we roll out a database migration", True),
    ("the docker buildx cache is never reused in CI", True),
    ("what did I find out about test_dunning_schedule", True),
    ("what was my flaky test detector idea?", True),
    ("What is the capital of France?", False),
    ("any tips for writing the release notes of my fantasy novel?", False),
    ("thanks, that worked, now move the button to the right", False),
    ("write a haiku about autumn leaves falling in the park", False),
]


@pytest.fixture
def example(vault_dir: Path, memvault_home: Path) -> Path:
    """The example vault as the configured vault, indexed keyword-only, the shipped floor, no service."""
    configure(memvault_home, f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    open_vault(vault_dir).reindex(vectors="none")
    return vault_dir


def by_hook(prompt: str, session: str) -> list[str]:
    """What the real prompt hook injects (a fresh session each time: nothing deduplicated)."""
    event = {"session_id": session, "prompt": prompt, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp"}
    done = subprocess.run([sys.executable, *INTERPRETER_FLAGS, str(HOOK)], input=json.dumps(event),
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = [r for r in runtime.read_log() if r.get("hook") == "UserPromptSubmit"][-1]
    assert record["session"] == session, record
    given = [e["path"] for e in record.get("injected", [])]
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""
    assert all(path in context for path in given)
    return given


def by_cli(prompt: str, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["recall", "--json", *extra, prompt], terminal_width=200)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_mcp(prompt: str) -> list[str]:
    return tools.recall(tools.open_memory(), prompt)[1]


def test_keyword_only_the_three_ways_give_the_same_entries(example: Path) -> None:
    for n, (prompt, related) in enumerate(PROMPTS):
        hook = by_hook(prompt, f"kw-{n}")
        cli_paths = [h["path"] for h in by_cli(prompt, "--wait", "0")["hits"]]
        mcp = by_mcp(prompt)
        assert hook == cli_paths == mcp, (prompt, hook, cli_paths, mcp)
        if not related:
            assert hook == [], prompt
    assert "MemoryVault/personal-private/workflow/db-migration-rollout.md" in by_mcp(PROMPTS[2][0])


def test_the_ledger_and_a_daily_note_need_a_strong_keyword_reason(example: Path) -> None:
    """Keyword-only: a loose match is not a reason; naming the idea, or an identifier of the day's log, is."""
    idea = [h["path"] for h in by_cli("what was my flaky test detector idea?", "--wait", "0")["hits"]]
    assert IDEAS in idea
    day = [h["path"] for h in by_cli("what did I find out about test_dunning_schedule", "--wait", "0")["hits"]]
    assert DAILY in day
    loose = by_cli("how do I fix a flaky test that fails only sometimes on CI?", "--wait", "0", "--no-floor")
    assert {IDEAS, DAILY} <= {h["path"] for h in loose["hits"]}  # candidates, searchable with --no-floor
    shown = by_cli("how do I fix a flaky test that fails only sometimes on CI?", "--wait", "0")
    assert not {IDEAS, DAILY} & {h["path"] for h in shown["hits"]}
    why = {h["path"]: h["why"] for h in shown["dropped"]}
    assert "idea ledger" in why.get(IDEAS, "") and "daily note" in why.get(DAILY, ""), why


def test_a_daily_note_is_known_by_the_folder_obsidian_keeps_them_in(example: Path) -> None:
    """A daily note not named like a date, in the folder `.obsidian/daily-notes.json` names, is one too."""
    (example / ".obsidian" / "daily-notes.json").write_text('{"folder": "Journal", "format": "dddd D MMMM"}')
    journal = example / "Journal" / "Monday 2 November.md"
    journal.parent.mkdir()
    journal.write_text("# Monday 2 November\n\nStandup; the flaky test fails on CI again, then lunch with Dana.\n")
    open_vault(example).reindex(vectors="none")
    loose = by_cli("how do I fix a flaky test that fails only sometimes on CI?", "--wait", "0", "--no-floor")
    journal_hit = next(h for h in loose["hits"] if h["path"] == "Journal/Monday 2 November.md")
    assert journal_hit["special"] == "a daily note" and journal_hit["shared_words"] >= 2
    result = by_cli("how do I fix a flaky test that fails only sometimes on CI?", "--wait", "0")
    dropped = {h["path"]: h["why"] for h in result["dropped"]}
    assert "Journal/Monday 2 November.md" not in [h["path"] for h in result["hits"]]
    assert "daily note" in dropped.get("Journal/Monday 2 November.md", ""), dropped


def test_explain_shows_what_the_hook_would_inject(example: Path) -> None:
    """`--explain` is the hook's view: the entries it would give, the others with the reason, a skipped prompt."""
    prompt = "how should we roll out a database migration"
    shown = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", prompt], terminal_width=200).output
    given = by_cli(prompt, "--wait", "0")["hits"]
    assert given and f"the prompt hook would inject {len(given)} entr" in shown, shown
    assert "Rolling out a database migration" in shown.split("the prompt hook would inject")[1]
    short = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", "migrations"], terminal_width=200).output
    assert "the prompt hook would skip this prompt" in short and "recall.min_prompt_chars" in short, short


def test_explain_and_the_listing_go_in_the_order_the_hook_gives(example: Path) -> None:
    """Issue 29 item 5: `--explain` numbers the entries as the hook gives them (by what the floor judged, not by
    fusion's score), then the dropped ones."""
    differs = False
    for prompt, _ in [*PROMPTS, ("how do I run the tests", True), ("release the billing service on friday", True)]:
        result = by_cli(prompt, "--wait", "0")
        given = [h["path"] for h in result["hits"]]
        dropped = [h["path"] for h in sorted(result["dropped"], key=lambda h: -h["score"])]
        shown = CliRunner().invoke(cli, ["recall", "--wait", "0", "--explain", prompt], terminal_width=200).output
        table = shown.split("the prompt hook would")[0]
        listed = sorted(given + dropped, key=lambda path: table.index(path + " ") if path + " " in table else 10**6)
        assert listed == given + dropped, (prompt, table)
        all_by_score = [h["path"] for h in sorted(result["hits"] + result["dropped"], key=lambda h: -h["score"])]
        differs |= all_by_score != given + dropped
    assert differs, "no prompt here has the hook's order differ from fusion's: the test would not see a regression"


@pytest.mark.slow
def test_with_the_warm_service_the_three_ways_give_the_same_entries(example: Path, memvault_home: Path) -> None:
    """The install demo: the real service and model; the hook runs in the service, the CLI and MCP ask it."""
    pytest.importorskip("sentence_transformers")
    from memvault.recall import client

    configure(memvault_home, "embedding:\n  warm_service: true\nrecall:\n  prompt_budget_ms: 3000\n")
    assert client.start("default", idle_minutes=5)
    assert client.wait_ready(120) is not None, "the embedding service did not start"
    report = open_vault(example).reindex(vectors="service")
    assert report.embedded > 0 and report.pending == 0
    assert client.query_vector("warm up the model's first query", 30) is not None
    for n, (prompt, related) in enumerate(PROMPTS):
        hook = by_hook(prompt, f"vec-{n}")
        record = [r for r in runtime.read_log() if r.get("hook") == "UserPromptSubmit"][-1]
        result = by_cli(prompt, "--wait", "30")
        assert record["vec_hits"] > 0 and result["vec_hits"] > 0, (record, result)  # with vectors, both ways
        cli_paths = [h["path"] for h in result["hits"]]
        mcp = by_mcp(prompt)
        assert hook == cli_paths == mcp, (prompt, hook, cli_paths, mcp)
        if not related:
            assert hook == [], prompt
        if prompt == DEMO:  # the demo's answer; the ledger and the day's log matched loosely, they are not given
            assert "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md" in hook
            assert IDEAS not in hook and DAILY not in hook, result


def test_the_rule_knows_the_ledger_and_date_named_notes() -> None:
    from memvault.ideas import ledger
    from memvault.recall import eligible

    assert eligible.LEDGER == ledger.LEDGER
    for path in ("Daily/2026-11-02.md", "2026-11-02.md", "Journal/20261102.md", "x/2026.11.02.md"):
        assert eligible.special(path, None) == eligible.DAILY_NOTE, path
    for path in ("Notes/2026-13-02.md", "Notes/release-2026-11-02.md", "Projects/Ideas.md", "Notes/12345678.md"):
        assert eligible.special(path, None) == "", path
    assert eligible.special("Journal/Monday.md", None, "Journal") == eligible.DAILY_NOTE
    assert eligible.special("MemoryVault/personal-skills/x.md", "skill") == eligible.SKILL_ENTRY
    assert eligible.skip_reason("ok", 12) and eligible.skip_reason("/compact the flaky tests", 12)
    assert eligible.skip_reason("how do we roll out migrations", 12) is None
