"""`memvault mcp` as a client sees it: the real server process over stdio, driven with the official SDK's client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from memvault.vault.core import Vault

from .conftest import git

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'memvault[mcp]')")

import anyio  # installed with the SDK
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HTTPX = "MemoryVault/personal-private/preference/httpx.md"
AKIA = "AKIA" + "Q3X7" * 4  # shaped like an AWS access key id


@pytest.fixture
def configured(git_vault: Vault, memvault_home: Path) -> Vault:
    config = memvault_home / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"vault:\n  root: {git_vault.root}\nembedding:\n  warm_service: false\n", encoding="utf-8")
    git_vault.reindex(vectors="none")
    return git_vault


def session(steps: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """Run `memvault mcp`, call each (tool, arguments) in turn; (is_error, text) per call. A name starting with
    'resource:' reads that resource instead."""

    async def main() -> list[tuple[bool, str]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "memvault", "mcp"], env=dict(os.environ))
        results: list[tuple[bool, str]] = []
        async with stdio_client(params) as streams, ClientSession(*streams[:2]) as client:
            await client.initialize()
            tools = await client.list_tools()
            results.append((False, json.dumps(sorted(t.name for t in tools.tools))))
            for name, arguments in steps:
                if name.startswith("resource:"):
                    read = await client.read_resource(name.removeprefix("resource:"))
                    results.append((False, read.contents[0].text))
                    continue
                result = await client.call_tool(name, arguments)
                text = "\n".join(c.text for c in result.content if hasattr(c, "text"))
                results.append((bool(result.is_error), text))
        return results

    return anyio.run(main)


def test_every_tool_follows_the_clis_rules_and_every_write_is_committed(configured: Vault) -> None:
    private = "MemoryVault/personal-private/domain/oncall-contacts.md"  # `private: true` in the example vault
    results = session(
        [
            ("recall", {"query": "flaky test that fails only sometimes"}),
            ("recall", {"query": "oncall contacts phone numbers"}),
            ("save", {"kind": "preference", "slug": "httpx", "body": "# Use httpx\nPrefer httpx over requests."}),
            ("save", {"kind": "preference", "slug": "aws", "body": f"# Key\nThe key is {AKIA}"}),
            ("save", {"kind": "preference", "slug": "../../escape", "body": "x"}),
            ("evolve", {"old_path": HTTPX, "reason": "async too", "body": "# Use httpx\nPrefer httpx (async, too)."}),
            ("show", {"path": "MemoryVault/personal-private/preference/httpx.md"}),
            ("show", {"path": private}),
            ("show", {"path": "Daily/2026-11-02.md"}),  # a note of the user's own: recall returns such notes
            ("show", {"path": "../outside.md"}),
            ("list", {}),
            ("review_queue", {}),
            ("inbox_queue", {}),
            ("resource:memvault://always-load", {}),
        ]
    )
    names, flaky, oncall, saved, secret, escape, evolved, shown, refused, daily, outside, listed, review, inbox = (
        results[:-1]
    )
    always = results[-1]
    assert json.loads(names[1]) == ["evolve", "inbox_queue", "list", "recall", "review_queue", "save", "show"]
    assert not flaky[0] and "bisecting-flaky-tests.md" in flaky[1]
    assert "(MemoryVault/personal-private/domain/oncall-contacts.md" not in oncall[1]  # private: never recalled
    assert not saved[0] and saved[1].startswith("saved MemoryVault/personal-private/preference/httpx.md (commit ")
    assert secret[0] and "secret" in secret[1].lower() and AKIA not in secret[1]
    assert escape[0] and "not a valid name" in escape[1]  # a path is never a slug
    assert not evolved[0] and evolved[1].startswith("evolved MemoryVault/personal-private/preference/httpx.md")
    assert "(async, too)" in shown[1] and "source: mcp" in shown[1]
    assert refused[0] and "private" in refused[1]
    assert not daily[0] and daily[1].startswith("Daily/2026-11-02.md")
    assert outside[0] and "outside" in outside[1]
    assert "oncall-contacts.md" not in listed[1] and "dev-flow.md" in listed[1]
    assert "alembic-enum-add-value.md" in review[1] and "dependabot-grouped-updates.md" in inbox[1]
    assert "Core dev flow" in always[1] and "oncall-contacts.md" not in always[1]

    vault = configured
    assert not (vault.root / "MemoryVault/personal-private/preference/aws.md").exists()
    log = git(vault.root, "log", "--format=%s%n%b")
    assert log.count("Memvault-Op: save") == 1 and log.count("Memvault-Op: evolve") == 1
    assert git(vault.root, "status", "--porcelain") == ""  # nothing left uncommitted
    assert not list(vault.journal_dir.glob("*.json"))  # every journal finished


def test_the_kill_switch_refuses_every_tool(configured: Vault, memvault_home: Path) -> None:
    config = memvault_home / "config.yaml"
    config.write_text(config.read_text() + "memory:\n  enabled: false\n")
    (_, _), (error, text) = session([("recall", {"query": "flaky"})])
    assert error and "switched off" in text
