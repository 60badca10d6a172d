"""The index on real SQLite + sqlite-vec: sync, incremental changes, filters, links, corruption, keyword search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.index import core as ix
from memvault.index import schema, sync
from memvault.paths import INDEX_FILE
from memvault.recall import scan, search
from memvault.vault import indexing
from memvault.vault.core import Vault

FORMATTER = "MemoryVault/personal-private/preference/python-formatter.md"
ARCHIVED = "MemoryVault/personal-private/_archive/personal-private/preference/python-formatter.20260612.md"
PRIVATE = "MemoryVault/personal-private/domain/oncall-contacts.md"
INBOX = "MemoryVault/personal-private/_inbox/dependabot-grouped-updates.md"
KEYWORD_ONLY = search.Options(k=10, budget_ms=5000)


def open_synced(vault: Vault) -> ix.Index:
    vault.reindex(vectors="none")
    return ix.open_index(vault.index_file)


def paths(result: search.Result) -> list[str]:
    return [hit.path for hit in result.hits]


def test_sync_indexes_the_read_scope_and_records_metadata(vault: Vault) -> None:
    report = vault.reindex(vectors="none")
    assert report.added == 27 and report.removed == 0  # 28 files minus the ignored Templates/ folder
    index = ix.open_index(vault.index_file)
    rows = dict(index.conn.execute("SELECT path, visibility FROM notes"))
    assert "Templates/Daily note.md" not in rows
    assert rows[FORMATTER] == schema.VISIBLE
    assert rows[ARCHIVED] == schema.HIDDEN
    assert rows[PRIVATE] == schema.PRIVATE
    assert rows[INBOX] == schema.INBOX
    assert rows["MemoryVault/personal-private/_idea-incubator/flaky-test-detector/_index.md"] == schema.HIDDEN
    assert rows["Projects/Billing service.md"] == schema.VISIBLE  # the user's own notes are indexed too
    title, grp, tags, area = index.conn.execute(
        "SELECT title, grp, tags, area FROM notes WHERE path = ?", (INBOX,)
    ).fetchone()
    assert (grp, area) == ("personal-private", "_inbox")
    assert title and json.loads(tags)
    assert index.stats()["notes"] == 27


def test_incremental_sync_rereads_only_what_changed(vault: Vault) -> None:
    vault.reindex(vectors="none")
    again = vault.reindex(vectors="none")
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 27)
    target = vault.root / "Notes" / "Postgres indexing.md"
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))  # touched, same bytes: hash says unchanged
    (vault.root / "People" / "Dana Kim.md").unlink()
    (vault.root / "Notes" / "new.md").write_text("# New\n\nZebracorn deployment notes\n", encoding="utf-8")
    report = vault.reindex(vectors="none")
    assert (report.added, report.updated, report.removed) == (1, 0, 1)
    assert report.unchanged == 26
    index = ix.open_index(vault.index_file)
    assert paths(search.recall(index, "zebracorn", KEYWORD_ONLY)) == ["Notes/new.md"]


def test_keyword_recall_filters_superseded_private_and_inbox(vault: Vault) -> None:
    index = open_synced(vault)
    found = paths(search.recall(index, "ruff format line length", KEYWORD_ONLY))
    assert FORMATTER in found and ARCHIVED not in found
    assert PRIVATE not in paths(search.recall(index, "PagerDuty rotation phone", KEYWORD_ONLY))
    mine = search.Options(k=10, include_private=True, budget_ms=5000)
    assert PRIVATE in paths(search.recall(index, "PagerDuty rotation phone", mine))
    assert INBOX not in paths(search.recall(index, "dependabot grouped updates", KEYWORD_ONLY))
    with_inbox = search.Options(k=10, include_inbox=True, budget_ms=5000)
    assert INBOX in paths(search.recall(index, "dependabot grouped updates", with_inbox))


def test_group_scope_and_memory_only(vault: Vault) -> None:
    index = open_synced(vault)
    everywhere = paths(search.recall(index, "billing", KEYWORD_ONLY))
    assert any(not p.startswith("MemoryVault/") for p in everywhere)
    memory_only = paths(search.recall(index, "billing", search.Options(memory_only=True)))
    assert memory_only and all(p.startswith("MemoryVault/") for p in memory_only)
    scoped = paths(search.recall(index, "command", search.Options(k=10, group="personal-skills")))
    assert scoped == ["MemoryVault/personal-skills/commit-helper.md"]


def test_exclude_drops_already_injected_paths(vault: Vault) -> None:
    index = open_synced(vault)
    first = paths(search.recall(index, "ruff format", KEYWORD_ONLY))
    rest = paths(search.recall(index, "ruff format", search.Options(k=10, exclude=frozenset(first[:1]))))
    assert first[0] not in rest and rest == first[1:] + rest[len(first) - 1 :]


def test_hits_carry_snippet_heading_and_scores(vault: Vault) -> None:
    index = open_synced(vault)
    result = search.recall(index, "ERR_OSSL_EVP_UNSUPPORTED", KEYWORD_ONLY)
    assert result.mode == "keyword" and result.reason and "no vectors" in result.reason
    top = result.hits[0]
    assert top.path.endswith("node-openssl-legacy-provider.md")  # status: resolved fixes stay recallable
    assert top.kw_score == 1.0 and top.vec_score == 0.0
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert "ERR_OSSL_EVP_UNSUPPORTED" in top.snippet and len(top.snippet) <= 230


def test_prompts_with_fts_syntax_or_only_stop_words_do_not_fail(vault: Vault) -> None:
    index = open_synced(vault)
    for query in ['"unbalanced', "NEAR(a b)", "col:value AND OR NOT *", "the and of", "", "🚀"]:
        assert search.recall(index, query, KEYWORD_ONLY).mode in ("keyword", "none")


def test_wikilinks_resolve_to_out_and_backlinks(vault: Vault) -> None:
    index = open_synced(vault)
    out = dict(index.outlinks("Projects/Billing service.md"))
    assert out["Dana Kim"] == "People/Dana Kim.md"
    assert out["psycopg-ssl-eof"] == "MemoryVault/personal-private/fix/psycopg-ssl-eof.md"
    assert out["Projects"] is None  # a link to a note that does not exist yet
    assert "Projects/Billing service.md" in index.backlinks("People/Dana Kim.md")
    aliased = dict(index.outlinks("Ideas.md"))
    assert aliased["MemoryVault/personal-projects/cli-dashboard/_index"] == (
        "MemoryVault/personal-projects/cli-dashboard/_index.md"
    )


def test_save_is_searchable_at_once_and_evolve_hides_the_old_entry(vault: Vault) -> None:
    vault.reindex(vectors="none")
    saved = vault.save("fix", "qux-timeout", "# Qux timeout\n\nRaise QUX_TIMEOUT_MS to 9000 for the frobnicator.\n")
    assert saved.warning is None
    result = vault.recall("frobnicator QUX_TIMEOUT_MS")
    assert paths(result)[:1] == [saved.path]
    evolved = vault.evolve(saved.path, "# Qux timeout\n\nSet QUX_TIMEOUT_MS to 12000 now.\n", reason="new limit")
    found = paths(vault.recall("QUX_TIMEOUT_MS", 10))
    assert found[0] == evolved.path and evolved.archived not in found
    assert "12000" in vault.recall("QUX_TIMEOUT_MS").hits[0].snippet


def test_a_note_edited_on_disk_is_found_by_the_next_recall(vault: Vault) -> None:
    vault.reindex(vectors="none")
    note = vault.root / "Notes" / "Postgres indexing.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nBRIN indexes suit the append-only ledger table.\n")
    assert paths(vault.recall("BRIN ledger"))[:1] == ["Notes/Postgres indexing.md"]


def test_cjk_and_emoji_file_names(vault: Vault) -> None:
    folder = vault.root / "Notes"
    (folder / "日本語メモ.md").write_text("# 日本語メモ\n\n東京 の 会議 メモ。 Kaigi agenda.\n", encoding="utf-8")
    (folder / "🚀 launch plan.md").write_text("# 🚀 Launch plan\n\nRocketship launch checklist.\n", encoding="utf-8")
    vault.reindex(vectors="none")
    assert paths(vault.recall("東京"))[:1] == ["Notes/日本語メモ.md"]
    assert paths(vault.recall("rocketship launch"))[:1] == ["Notes/🚀 launch plan.md"]
    index = ix.open_index(vault.index_file)
    assert index.conn.execute("SELECT title FROM notes WHERE path = ?", ("Notes/🚀 launch plan.md",)).fetchone() == (
        "🚀 Launch plan",
    )


def test_unreadable_notes_are_recorded_not_recalled_and_invalid_frontmatter_is_recalled_by_text(vault: Vault) -> None:
    (vault.root / "Notes" / "binary.md").write_bytes(b"\x00\x01 zebracorn")
    (vault.root / "Notes" / "broken.md").write_text("---\ntags: [unclosed\n---\nzebracorn body\n", encoding="utf-8")
    report = vault.reindex(vectors="none")
    assert report.added == 29
    index = ix.open_index(vault.index_file)
    errors = dict(index.conn.execute("SELECT path, error FROM notes WHERE error IS NOT NULL"))
    assert "binary" in errors["Notes/binary.md"] and "frontmatter" in errors["Notes/broken.md"]
    # the user's own note is still theirs: Obsidian shows it, so recall finds it by its text
    assert [h.path for h in search.recall(index, "zebracorn", KEYWORD_ONLY).hits] == ["Notes/broken.md"]


def test_corrupt_index_is_rebuilt_with_a_warning(vault: Vault) -> None:
    vault.reindex(vectors="none")
    path = vault.index_file
    path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    prompt_path = search.recall_file(path, "ruff", KEYWORD_ONLY, None)
    assert prompt_path.hits == [] and prompt_path.partial and "damaged" in (prompt_path.reason or "")
    report = vault.reindex(vectors="none")
    assert report.rebuilt and "rebuilt" in report.rebuilt and report.added == 27
    assert list(path.parent.glob("index.sqlite3.corrupt-*"))  # the damaged file is kept aside, not deleted
    assert FORMATTER in paths(vault.recall("ruff format"))


def test_full_reindex_starts_over(vault: Vault) -> None:
    vault.reindex(vectors="none")
    report = vault.reindex(full=True, vectors="none")
    assert report.added == 27 and report.unchanged == 0


def test_missing_index_gives_an_empty_partial_result_on_the_prompt_path(tmp_path: Path) -> None:
    result = search.recall_file(tmp_path / "none.sqlite3", "anything", KEYWORD_ONLY, None)
    assert result.hits == [] and result.partial and "no index" in (result.reason or "")


def test_index_location_vault_puts_it_under_meta(vault_dir: Path) -> None:
    from memvault import config as config_mod
    from memvault import open_vault

    config = config_mod.from_dict({"index": {"location": "vault"}})
    vault = open_vault(vault_dir, config=config)
    vault.reindex(vectors="none")
    assert vault.index_file == vault_dir / "MemoryVault" / "_meta" / "index.sqlite3"
    assert vault.index_file.is_file()
    assert "MemoryVault/_meta/index.sqlite3" not in {r[0] for r in ix.open_index(vault.index_file).known().items()}


def test_without_sqlite_vec_the_index_is_keyword_only(vault_dir: Path, tmp_path: Path) -> None:
    """A Python whose sqlite3 cannot load extensions still indexes and recalls by keywords."""
    code = (
        "import json, sys; from memvault import open_vault; v = open_vault(sys.argv[1]); r = v.reindex(); "
        "res = v.recall('ruff format'); print(json.dumps([r.warnings, res.mode, [h.path for h in res.hits]]))"
    )
    env = {**os.environ, "MEMVAULT_SQLITE_BINDING": "stdlib"}
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        pytest.skip("this Python's sqlite3 can load extensions; nothing to fall back from")
    done = subprocess.run([sys.executable, "-c", code, str(vault_dir)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    warnings, mode, found = json.loads(done.stdout.strip().splitlines()[-1])
    assert any("cannot load extensions" in w for w in warnings)
    assert mode == "keyword" and FORMATTER in found


def test_layout_row_is_pure_and_strips_private_spans() -> None:
    layout = sync.Layout(Path("/v"), "MemoryVault", ())
    text = "---\ntags: [a]\nstatus: superseded\n---\n# T\n\nkeep <private>secret words</private> this\n"
    row, parts, links = layout.row("MemoryVault/g/_archive/x.md", text, 1, len(text), "h")
    assert (row.group, row.area, row.visibility, row.tags) == ("g", "_archive", schema.HIDDEN, ("a",))
    assert "secret" not in " ".join(p.text for p in parts) and links == []


def test_indexing_module_paths(vault: Vault) -> None:
    assert indexing.index_file(vault.root, vault.config) == vault.index_file
    assert vault.index_file.name == INDEX_FILE


def test_scan_fallback_before_any_index_applies_the_same_filters(vault: Vault) -> None:
    from memvault.store import disk

    ignore = disk.ignore_patterns(vault.root)
    found = paths(scan.scan(vault.root, "MemoryVault", ignore, "ruff format line length", KEYWORD_ONLY))
    assert found[0] == FORMATTER and ARCHIVED not in found
    assert PRIVATE not in paths(scan.scan(vault.root, "MemoryVault", ignore, "PagerDuty rotation", KEYWORD_ONLY))
    assert INBOX not in paths(scan.scan(vault.root, "MemoryVault", ignore, "dependabot grouped", KEYWORD_ONLY))
    inbox = search.Options(include_inbox=True)
    assert INBOX in paths(scan.scan(vault.root, "MemoryVault", ignore, "dependabot grouped", inbox))
    assert not vault.index_file.exists()  # nothing was indexed
    hurried = scan.scan(vault.root, "MemoryVault", ignore, "ruff", search.Options(budget_ms=0))
    assert hurried.partial and "out of time" in (hurried.reason or "")
