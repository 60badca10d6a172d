"""Every spelling of "private" through every reader: MCP tools, the CLI, the hooks, `inspect` and the hook log.

One vault holds a note per spelling (in `_always-load/`, in `_review/` and outside `MemoryVault/`), notes with
`<private>` spans in frontmatter values and in the body, and a note of the user's own holding an AWS key pair.
Whatever reads them, the private words (all spelled with "xylophage") and the key never come out, while the
public parts do (so a reader that printed nothing would not pass).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import open_vault
from memvault.cli import cli
from memvault.errors import MemvaultError
from memvault.mcpserver import tools
from memvault.store import privacy
from memvault.store.model import INBOX, REVIEW

from .test_hooks import hook_vault, log_records, payload, run_hook

__all__ = ["hook_vault"]  # the fixture, used by name below

HIDDEN = "xylophage"  # in every private note and span, nowhere else
QUERY = "quokka harbour procedure"
AKIA = "AKIA" + "Q3X7" * 4  # shaped like an AWS access key id
AWS_SECRET = "Zq8vLm3Np7Rt2Wx5/b9Kc4" + "Hf6Jd1Gs0Ae8Uo3Ti"  # 40 characters, shaped like its secret
MEMORY = "MemoryVault/personal-private"

# (id, frontmatter lines): each must make its note private to every reader.
SPELLINGS = [
    ("true", "private: true"),
    ("quoted-true", 'private: "true"'),
    ("yes", "private: yes"),
    ("on", "private: on"),
    ("one", "private: 1"),
    ("list", "private: [x]"),
    ("nested", "meta:\n  private: yes"),
    ("duplicated", "private: yes\nprivate: no"),  # YAML keeps the last; the line reader fails closed
    ("yaml-invalid", "private: yes\ntitle: [unclosed"),
]
PLACES = (f"{MEMORY}/_always-load", f"{MEMORY}/_review", "Notes")
SPAN_NOTE = f"{MEMORY}/_always-load/quokka-spans.md"
SPAN_TEXT = f"""---
kind: preference
summary: visible summary <private>{HIDDEN} in a value</private>
title: Quokka spans <private>{HIDDEN} title</private>
tags:
  - quokka
  - "<private>{HIDDEN}-tag</private>"
aliases: ["open <private>{HIDDEN} unclosed"]
---
# Quokka spans

The quokka harbour procedure is public <private>but the {HIDDEN} vault code is not</private> and ends here.
"""
HOMELAB = f"""# Homelab quokka

The quokka harbour procedure for the homelab backups:
aws_access_key_id = {AKIA}
aws_secret_access_key = {AWS_SECRET}
"""


def private_paths() -> list[str]:
    return [f"{place}/leak-{name}.md" for place in PLACES for name, _ in SPELLINGS]


@pytest.fixture
def readers_vault(hook_vault: Path) -> Path:
    for place in PLACES:
        for name, lines in SPELLINGS:
            text = f"---\nkind: preference\n{lines}\n---\n# Quokka {HIDDEN} {name}\n\n{QUERY} {HIDDEN} {name} words\n"
            (hook_vault / place).mkdir(parents=True, exist_ok=True)
            (hook_vault / place / f"leak-{name}.md").write_text(text, encoding="utf-8")
    (hook_vault / SPAN_NOTE).write_text(SPAN_TEXT, encoding="utf-8")
    (hook_vault / f"{MEMORY}/_review/quokka-spans.md").write_text(SPAN_TEXT, encoding="utf-8")
    (hook_vault / "Notes/homelab.md").write_text(HOMELAB, encoding="utf-8")
    open_vault(hook_vault).reindex(vectors="none")
    return hook_vault


def assert_nothing_private(said: str) -> None:
    assert HIDDEN not in said.lower()
    assert AKIA not in said and AWS_SECRET not in said


def test_every_spelling_is_private_to_the_one_definition(readers_vault: Path) -> None:
    vault = open_vault(readers_vault)
    for rel in private_paths():
        note = vault.read(rel).note
        assert privacy.note_is_private(note.meta, note.frontmatter), rel


def test_mcp_tools_never_give_out_a_private_note_span_or_secret(readers_vault: Path) -> None:
    vault = open_vault(readers_vault)
    said: list[str] = []
    for rel in private_paths():
        with pytest.raises(MemvaultError) as refused:
            tools.show(vault, rel)
        said.append(str(refused.value))
    shown = tools.show(vault, SPAN_NOTE)
    assert "The quokka harbour procedure is public" in shown and "and ends here" in shown
    assert "visible summary" in shown
    homelab = tools.show(vault, "Notes/homelab.md")  # a note of the user's own: recall returns it, so show does
    assert "homelab backups" in homelab
    said += [shown, homelab]
    found, paths = tools.recall(vault, QUERY, 20)
    assert SPAN_NOTE in paths and "Notes/homelab.md" in paths
    said.append(found)
    listed = tools.list_entries(vault)
    assert SPAN_NOTE in [e["path"] for e in listed]
    said.append(json.dumps(listed))
    said.append(json.dumps(tools.queue(vault, REVIEW)) + json.dumps(tools.queue(vault, INBOX)))
    standing = tools.always_load(vault)
    assert "Quokka spans" in standing
    said.append(standing)
    assert_nothing_private("\n".join(said))


def test_mcp_show_refuses_the_review_queue_and_ignored_notes(readers_vault: Path, memvault_home: Path) -> None:
    vault = open_vault(readers_vault)
    for rel in (f"{MEMORY}/_review/quokka-spans.md", "MemoryVault/_meta/anything.md", ".obsidian/x.md"):
        with pytest.raises(MemvaultError):
            tools.show(vault, rel)


def cli_said(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), terminal_width=250)
    return result.exit_code, result.output + str(result.exception or "")


def test_the_cli_never_prints_a_private_note_span_or_secret(readers_vault: Path) -> None:
    said: list[str] = []
    for rel in private_paths():
        for extra in ((), ("--json",)):
            code, text = cli_said("show", rel, *extra)
            assert code != 0, (rel, text)
            said.append(text)
    code, shown = cli_said("show", SPAN_NOTE)
    assert code == 0 and "The quokka harbour procedure is public" in shown and "visible summary" in shown
    code, shown_json = cli_said("show", SPAN_NOTE, "--json")
    assert code == 0 and "visible summary" in shown_json
    code, homelab = cli_said("show", "Notes/homelab.md")
    assert code == 0 and "homelab backups" in homelab
    said += [shown, shown_json, homelab]
    for args in (["list"], ["list", "--all"], ["list", "--all", "--json"]):
        code, text = cli_said(*args)
        assert code == 0 and "quokka-spans.md" in text
        said.append(text)
    for extra in ((), ("--json",), ("--explain",), ("--include-inbox",)):
        code, text = cli_said("recall", "--wait", "0", "-k", "30", QUERY, *extra)
        assert code == 0 and "homelab.md" in text, text
        said.append(text)
    assert_nothing_private("\n".join(said))


def test_the_hooks_their_log_and_inspect_never_say_a_private_note_span_or_secret(readers_vault: Path) -> None:
    start = run_hook("session_start", payload("SessionStart", source="startup"))
    prompt = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=f"{QUERY} for the homelab?"))
    assert "Quokka spans" in start.stdout  # the always-load note, without its spans
    assert "homelab.md" in prompt.stdout  # recalled, key redacted
    logged = "\n".join(json.dumps(r) for r in log_records())
    _, inspected = cli_said("inspect")
    _, inspected_json = cli_said("inspect", "--json")
    assert "homelab.md" in inspected_json
    assert_nothing_private("\n".join((start.stdout, prompt.stdout, logged, inspected, inspected_json)))
