"""Sync conflict copies: listed by health, never indexed, never recalled next to their original."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memvault import health
from memvault.recall import scan, search
from memvault.store.disk import ignore_patterns

ORIGINAL = "MemoryVault/personal-private/preference/uv-for-envs.md"
COPIES = (
    "MemoryVault/personal-private/preference/uv-for-envs.sync-conflict-20261121-101502-LAPTOP7.md",
    "MemoryVault/personal-private/preference/uv-for-envs (conflict 2026-11-21 laptop).md",
)


@pytest.mark.parametrize("copy", COPIES)
def test_conflict_copy_is_reported_but_never_recalled(vault, vault_dir: Path, copy: str) -> None:
    shutil.copyfile(vault_dir / ORIGINAL, vault_dir / copy)
    report = vault.reindex(vectors="none")
    assert report.scanned == 27  # the example vault's notes, without the copy

    hits = [hit.path for hit in vault.recall("uv sync lockfile python environments", k=10).hits]
    assert ORIGINAL in hits
    assert copy not in hits

    found = health.check(vault, service=False)
    assert found.conflict_copies == [copy]
    assert found.index["stale"] == 0  # the unindexed copy does not make the index look stale


def test_copy_arriving_later_is_not_indexed(vault, vault_dir: Path) -> None:
    vault.reindex(vectors="none")
    copy = COPIES[0]
    shutil.copyfile(vault_dir / ORIGINAL, vault_dir / copy)
    report = vault.reindex(vectors="none")
    assert (report.added, report.removed) == (0, 0)
    (vault_dir / copy).unlink()
    assert vault.reindex(vectors="none").changed == 0


def test_file_scan_without_index_skips_copies(vault_dir: Path) -> None:
    copy = COPIES[1]
    shutil.copyfile(vault_dir / ORIGINAL, vault_dir / copy)
    result = scan.scan(
        vault_dir, "MemoryVault", ignore_patterns(vault_dir), "uv sync lockfile", search.Options(k=10, budget_ms=5000)
    )
    paths = [hit.path for hit in result.hits]
    assert ORIGINAL in paths
    assert copy not in paths
