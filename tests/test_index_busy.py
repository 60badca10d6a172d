"""While another process holds the index's write lock (a long reindex), recall, list and health still answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memvault import open_vault
from memvault.index import db


def cli(vault_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memvault", "--vault", str(vault_dir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ})


def test_recall_list_and_health_answer_while_a_writer_holds_the_index(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    (vault_dir / "MemoryVault/personal-private/fix/new-since.md").write_text("---\nkind: fix\n---\n# New\nflaky\n")
    writer = db.connect(vault.index_file, vector=False)
    writer.execute("BEGIN IMMEDIATE")  # held for the whole test, as a reindex of a big vault would
    try:
        started = time.monotonic()
        recalled = cli(vault_dir, "recall", "--wait", "0", "--no-floor", "--json", "flaky test fails sometimes")
        assert recalled.returncode == 0, recalled.stderr
        result = json.loads(recalled.stdout)
        assert "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md" in [h["path"] for h in result["hits"]]
        assert result["partial"] and "another process is writing the index" in result["reason"]
        assert time.monotonic() - started < 60  # (5 s per write attempt before: it never answered at all)
        listed = cli(vault_dir, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        checked = cli(vault_dir, "health", "--json")
        assert "database is locked" not in checked.stderr and checked.stdout, checked.stderr
        assert any("recall counts were not brought up to date" in w for w in json.loads(checked.stdout)["warnings"])
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    after = json.loads(cli(vault_dir, "recall", "--wait", "0", "--json", "flaky test").stdout)
    assert not (after["reason"] or "").startswith("another process")
