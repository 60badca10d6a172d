"""What memvault reads: what Obsidian shows, regular files only, every read bounded, every skipped file reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import health, open_vault
from memvault.errors import MemvaultError
from memvault.index import core as ix
from memvault.index import schema
from memvault.recall import scan, search
from memvault.store import disk

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
KEYWORD_ONLY = search.Options(k=10, budget_ms=5000)
HUB_NOTE = """---
aliases:
- @kepano
tags: [plugin]
---
# Zebra calendar

The zebra calendar plugin shows daily notes on a calendar.
"""


def memvault(vault: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process: a hang is a timeout, not a stuck test run."""
    return subprocess.run([sys.executable, "-m", "memvault", "--vault", str(vault), *args],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip


@needs_fifo
def test_a_fifo_named_like_a_note_never_blocks_list_reindex_recall_or_health(vault_dir: Path) -> None:
    os.mkfifo(vault_dir / "x.md")
    os.mkfifo(vault_dir / "MemoryVault" / "personal-private" / "fix" / "pipe.md")
    started = time.monotonic()
    with pytest.raises(MemvaultError, match="not a regular file"):
        disk.read_text(vault_dir / "x.md")
    assert time.monotonic() - started < 1
    listing = disk.list_markdown(vault_dir, disk.ignore_patterns(vault_dir))
    assert "x.md" not in listing.notes and ("x.md", "not a regular file") in listing.skipped
    # before any index exists the prompt path scans the files: it must not open the FIFO
    result = scan.scan(vault_dir, "MemoryVault", disk.ignore_patterns(vault_dir), "postgres index", KEYWORD_ONLY)
    assert result.hits
    for args in (["list", "--all"], ["reindex", "--keyword-only"], ["recall", "--wait", "0", "postgres"]):
        done = memvault(vault_dir, *args)
        assert done.returncode == 0, (args, done.stderr)
    report = json.loads(memvault(vault_dir, "health", "--json").stdout)
    assert "x.md: not a regular file" in report["skipped"]
    assert "MemoryVault/personal-private/fix/pipe.md: not a regular file" in report["skipped"]


@needs_fifo
def test_saving_over_a_fifo_is_a_clear_error_not_a_hang(vault_dir: Path) -> None:
    os.mkfifo(vault_dir / "MemoryVault" / "personal-private" / "fix" / "pipe.md")
    done = memvault(vault_dir, "save", "fix", "pipe", "text", timeout=60)
    assert done.returncode == 1 and "not a regular file" in done.stderr and len(done.stderr.splitlines()) == 1


def test_hidden_folders_and_files_are_not_read_as_obsidian_does_not_show_them(vault_dir: Path) -> None:
    for rel in (".github/ISSUE_TEMPLATE.md", "Notes/.draft.md", ".hidden/deep/note.md"):
        (vault_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault_dir / rel).write_text("# Hidden\n\nzebra calendar\n", encoding="utf-8")
    vault = open_vault(vault_dir)
    listed = disk.list_markdown(vault_dir, vault.ignore).notes
    assert not [p for p in listed if "/." in "/" + p]
    vault.reindex(vectors="none")
    assert vault.recall("zebra calendar", include_inbox=True).hits == []


def test_only_the_configured_templates_folder_is_skipped(vault_dir: Path) -> None:
    (vault_dir / "Projects" / "Templates").mkdir()
    (vault_dir / "Projects" / "Templates" / "plan.md").write_text("# Plan\n\nzebra rollout plan\n", encoding="utf-8")
    vault = open_vault(vault_dir)
    listed = disk.list_markdown(vault_dir, vault.ignore).notes
    assert "Projects/Templates/plan.md" in listed  # a folder of that name elsewhere is the user's
    assert not [p for p in listed if p.startswith("Templates/")]  # the folder .obsidian/templates.json names
    (vault_dir / ".obsidian" / "templates.json").unlink()  # no templates folder configured: nothing skipped
    assert "Templates/Daily note.md" in disk.list_markdown(vault_dir, disk.ignore_patterns(vault_dir)).notes


def test_a_note_whose_frontmatter_yaml_rejects_is_recalled_by_its_text(vault_dir: Path) -> None:
    (vault_dir / "Notes" / "Zebra calendar.md").write_text(HUB_NOTE, encoding="utf-8")
    entry = vault_dir / "MemoryVault" / "personal-private" / "fix" / "broken.md"
    entry.write_text(HUB_NOTE.replace("Zebra calendar", "Broken zebra entry"), encoding="utf-8")
    secret = vault_dir / "Notes" / "Zebra secret.md"
    secret.write_text(HUB_NOTE.replace("tags: [plugin]", "private: true"), encoding="utf-8")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    paths = [h.path for h in vault.recall("zebra", k=20).hits]
    assert paths == ["Notes/Zebra calendar.md"]  # not the broken entry (status unknown), not the private note
    index = ix.open_index(vault.index_file)
    try:
        rows = dict(index.conn.execute("SELECT path, visibility FROM notes WHERE path LIKE '%ebra%' OR path = ?",
                                       ("MemoryVault/personal-private/fix/broken.md",)))  # fmt: skip
        ids = {note_id for note_id, _ in index.pending(100)}
        pending = {p for i, p in index.conn.execute("SELECT id, path FROM notes") if i in ids}
    finally:
        index.close()
    assert rows["Notes/Zebra calendar.md"] == schema.VISIBLE and rows["Notes/Zebra secret.md"] == schema.PRIVATE
    assert rows["MemoryVault/personal-private/fix/broken.md"] == schema.HIDDEN
    assert "Notes/Zebra calendar.md" in pending  # it gets vectors like any other note
    report = health.check(vault, service=False)
    mine = [line for line in report.invalid if line.startswith("Notes/Zebra calendar.md: ")]
    assert len(mine) == 1 and mine[0].endswith("(recalled by its text)")
    assert any(line.startswith("MemoryVault/personal-private/fix/broken.md: ") for line in report.invalid)


def test_health_reports_every_file_recall_never_sees(vault_dir: Path) -> None:
    (vault_dir / "Notes" / "huge.md").write_bytes(b"# Huge\n" + b"x" * (disk.MAX_NOTE_BYTES + 10))
    (vault_dir / "Notes" / "latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    (vault_dir / "MemoryVault" / "personal-private" / "fix" / "bin.md").write_bytes(b"\x00\x01binary")
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    report = health.check(vault, service=False)
    skipped = "\n".join(report.skipped)
    for rel in ("Notes/huge.md", "Notes/latin1.md", "MemoryVault/personal-private/fix/bin.md"):
        assert f"{rel}: " in skipped, skipped
    assert any("3 files skipped" in w for w in report.warnings), report.warnings
