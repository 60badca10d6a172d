"""`memvault health` and recall analytics on real temp vaults: every warning condition, exit codes, JSON."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import config as config_mod
from memvault import health, open_vault, runtime
from memvault.cli import cli
from memvault.recall import analytics
from memvault.vault import indexing
from tests.test_hooks import hook_vault, payload, run_hook  # noqa: F401  (hook_vault is a fixture)

FLAKY = "how do I fix a flaky test that fails only sometimes on CI?"


def run_health(vault_dir: Path, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "health", "--json", *args])
    return result.exit_code, json.loads(result.output)


def with_config(vault_dir: Path, **values: object):
    config = config_mod.load()
    for key, value in values.items():
        config = config_mod.with_value(config, key.replace("__", "."), value)
    return open_vault(vault_dir, config=config)


def test_a_fresh_example_vault_is_healthy_and_reports_every_section(vault_dir: Path) -> None:
    open_vault(vault_dir).reindex(vectors="none")
    code, data = run_health(vault_dir)
    assert code == 0 and data["ok"] is True
    assert data["entries"] > 0 and sum(data["by_group"].values()) == data["entries"]
    assert data["index"]["exists"] and data["index"]["notes"] == data["entries"] + data["user_notes"]
    assert data["index"]["stale"] == 0
    assert data["embedding"]["configured"] and data["embedding"]["service"] is None
    assert data["last_reflection"] is None and data["never_recalled"] == []
    assert (data["inbox"], data["review"], data["incubator"]) == (1, 1, 1)
    assert data["miner"] == {"configured": "offline", "next": "offline", "why": "reflection.miner is offline"}


def test_health_says_which_miner_reflection_uses_and_why(
    vault_dir: Path, memvault_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text("reflection:\n  claude_command: no-such-claude\n")
    monkeypatch.setenv("MEMVAULT_MINER", "auto")
    _, data = run_health(vault_dir)
    assert data["miner"]["next"] == "offline" and data["miner"]["why"] == "'no-such-claude' was not found"
    assert (data["miner"]["calls_today"], data["miner"]["cap"], data["miner"]["model"]) == (0, 20, "haiku")
    assert not any("reflection.miner" in w for w in data["warnings"])  # auto falling back is normal
    monkeypatch.setenv("MEMVAULT_MINER", "claude")
    _, data = run_health(vault_dir)
    warning = "reflection.miner is claude, but the offline miner runs: 'no-such-claude' was not found"
    assert any(w.startswith(warning) for w in data["warnings"])
    shown = CliRunner().invoke(cli, ["--vault", str(vault_dir), "health"]).output
    assert "reflection miner (claude): offline, because 'no-such-claude' was not found" in shown
    assert "0 of 20 Claude calls used today" in shown


def test_sync_conflict_copies_are_listed_and_warned_not_fatal(vault_dir: Path) -> None:
    prefs = vault_dir / "MemoryVault" / "personal-private" / "preference"
    original = prefs / "uv-for-envs.md"
    (prefs / "uv-for-envs (conflict 2026-11-02 laptop).md").write_bytes(original.read_bytes())
    (prefs / "uv-for-envs.sync-conflict-20261102-101500-ABCDEF1.md").write_bytes(original.read_bytes())
    open_vault(vault_dir).reindex(vectors="none")
    code, data = run_health(vault_dir)
    assert code == 0  # a warning, not a problem
    assert sorted(Path(p).name for p in data["conflict_copies"]) == [
        "uv-for-envs (conflict 2026-11-02 laptop).md",
        "uv-for-envs.sync-conflict-20261102-101500-ABCDEF1.md",
    ]
    assert any("2 sync conflict copies" in w for w in data["warnings"])
    assert run_health(vault_dir, "--strict")[0] == 1


def test_queue_thresholds_warn(vault_dir: Path) -> None:
    vault = with_config(vault_dir, reflection__inbox_warn=1, reflection__incubator_warn=1)
    vault.save("preference", "second-capture", "Also low confidence.", folder="_inbox", confidence="low")
    vault.save(
        "idea", "_index", "# Another idea\n\nLater.", folder="_idea-incubator/another", meta={"status": "incubating"}
    )
    report = health.check(vault, service=False)
    assert (report.inbox, report.incubator) == (2, 2)
    assert any("inbox holds 2" in w for w in report.warnings)
    assert any("incubator holds 2" in w for w in report.warnings)
    assert report.ok


def test_no_reflection_for_a_week_of_sessions_warns(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    assert not any("reflection" in w for w in health.check(vault, service=False).warnings)
    runtime.write_start_marker("old-session", {})
    old = time.time() - 9 * 86400
    os.utime(runtime.marker("old-session", "start"), (old, old))
    assert any("7+ days" in w for w in health.check(vault, service=False).warnings)


def test_stale_index_and_missing_index_warn(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    assert any("no index yet" in w for w in health.check(vault, service=False).warnings)
    vault.reindex(vectors="none")
    note = vault_dir / "MemoryVault" / "personal-private" / "preference" / "uv-for-envs.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nEdited in Obsidian.\n", encoding="utf-8")
    (vault_dir / "New note.md").write_text("# New\n\nWritten by hand.\n", encoding="utf-8")
    report = health.check(vault, service=False)
    assert report.index["stale"] == 2
    assert any("index is stale: 2 notes changed" in w for w in report.warnings)
    vault.reindex(vectors="none")
    assert health.check(vault, service=False).index["stale"] == 0


def test_model_mismatch_warns(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        index.use_model("some-older-model", 768)  # the vector space an index built with another model has
    finally:
        index.close()
    report = health.check(vault, service=False)
    assert report.embedding["index_model"] == "some-older-model"
    assert any(w.startswith("model mismatch") for w in report.warnings)


def test_missing_memory_folder_is_unhealthy_exit_1(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "note.md").write_text("# A note\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["--vault", str(bare), "health"])
    assert result.exit_code == 1
    assert "MemoryVault/ does not exist" in result.output and "unhealthy" in result.output


def test_injections_are_counted_once_and_old_unrecalled_entries_listed(hook_vault: Path, today: dt.date) -> None:  # noqa: F811
    result = run_hook("user_prompt_submit", payload("UserPromptSubmit", prompt=FLAKY))
    injected = [r for r in runtime.read_log() if r.get("hook") == "UserPromptSubmit"][-1]["injected"]
    assert result.returncode == 0 and injected
    vault = open_vault(hook_vault)
    first = health.check(vault, service=False)
    assert first.index["recalls_folded"] == len(injected)
    assert health.check(vault, service=False).index["recalls_folded"] == 0  # each log line counts once
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        counted = analytics.recalled(index)
        assert {i["path"] for i in injected} == set(counted)
        assert all(r.count == 1 and r.last_recalled.startswith(str(today.year)) for r in counted.values())
        # Recalls watched for longer than gc.unrecalled_days: old entries never injected become candidates.
        index.conn.execute("UPDATE recall_cursor SET since = '2025-01-01T00:00:00+00:00'")
        index.conn.commit()
    finally:
        index.close()
    assert first.never_recalled == []  # before that, "never recalled" would mean nothing
    old = health.check(vault, service=False, now=dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)).never_recalled
    assert old and not set(old) & set(counted)
    assert not any("/_inbox/" in p or "/_archive/" in p or "_idea-incubator" in p for p in old)
    assert "MemoryVault/personal-private/preference/uv-for-envs.md" in old


def test_a_fold_keeps_a_half_written_line_for_later(vault_dir: Path, tmp_path: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    logs = tmp_path / "logs"
    logs.mkdir()
    line = {"hook": "UserPromptSubmit", "vault": str(vault_dir.resolve()), "ts": "2026-11-02T10:00:00.000+00:00",
            "injected": [{"path": "MemoryVault/personal-private/preference/uv-for-envs.md"}]}  # fmt: skip
    other_vault = {**line, "vault": "/elsewhere"}
    log = logs / "hooks-20261102.jsonl"
    full, half = json.dumps(line) + "\n", json.dumps(line)
    log.write_text(full + json.dumps(other_vault) + "\n" + half[:30], encoding="utf-8")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        assert analytics.fold(index, vault.root, logs) == 1
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(half[30:] + "\n")
        assert analytics.fold(index, vault.root, logs) == 1  # the finished line, once
        assert analytics.recalled(index)["MemoryVault/personal-private/preference/uv-for-envs.md"].count == 2
    finally:
        index.close()


def test_recall_counts_survive_a_full_reindex(vault_dir: Path, tmp_path: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    path = indexing.index_file(vault.root, vault.config)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO recalls VALUES ('MemoryVault/x.md', 3, '2026-11-01T00:00:00+00:00')")
    vault.reindex(full=True, vectors="none")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count FROM recalls").fetchall() == [(3,)]


def test_claude_codes_own_auto_memory_next_to_memvault_is_reported(
    vault_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.claude import auto_memory

    project = tmp_path / "project"
    project.mkdir()
    vault = open_vault(vault_dir)
    assert not any("auto memory" in w for w in health.check(vault, service=False, project=project).warnings)
    memory = auto_memory.memory_dir(project.resolve())
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- Use uv for environments\n", encoding="utf-8")
    report = health.check(vault, service=False, project=project)
    assert report.claude_memory["active"] and report.claude_memory["files"] == 1
    assert any("auto memory is also active" in w for w in report.warnings)
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    report = health.check(vault, service=False, project=project)
    assert not report.claude_memory["active"]
    assert not any("auto memory" in w for w in report.warnings)


def summary(report: health.Health) -> tuple:
    return (report.entries, report.by_group, report.by_kind, report.by_status, report.inbox, report.review,
            report.incubator, sorted(i.split(":")[0] for i in report.invalid))  # fmt: skip


def test_counts_from_the_index_match_counts_from_the_files(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    (vault_dir / "MemoryVault" / "personal-private" / "domain" / "broken.md").write_text(
        "---\nkind: [unclosed\n---\n# Broken\n", encoding="utf-8"
    )
    from_files = health.check(vault, service=False)  # no index yet: every note is read
    vault.reindex(vectors="none")
    from_index = health.check(vault, service=False)
    assert from_index.index["stale"] == 0
    assert summary(from_index) == summary(from_files)
    assert from_files.invalid and summary(from_files)[-1] == ["MemoryVault/personal-private/domain/broken.md"]


def test_an_index_from_before_created_was_kept_is_reread_once(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    path = indexing.index_file(vault.root, vault.config)
    with sqlite3.connect(path) as conn:  # the index as the previous release left it
        conn.execute("ALTER TABLE notes DROP COLUMN created")
        conn.execute("DELETE FROM _memvault_migrations WHERE name = '0005_created'")
    report = health.check(vault, service=False)  # opening it migrates: every row must be re-read
    assert report.index["stale"] == report.index["notes"]
    vault.reindex(vectors="none")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        rows = index.rows()
    finally:
        index.close()
    assert rows["MemoryVault/personal-private/preference/uv-for-envs.md"].created
    assert health.check(vault, service=False).index["stale"] == 0


def test_a_rolled_log_file_is_neither_counted_twice_nor_skipped(vault_dir: Path, tmp_path: Path) -> None:
    vault = open_vault(vault_dir)
    vault.reindex(vectors="none")
    logs = tmp_path / "logs"
    logs.mkdir()
    first, second = "MemoryVault/a.md", "MemoryVault/b.md"
    root = str(vault_dir.resolve())

    def lines(rel: str, n: int) -> str:
        records = [{"hook": "UserPromptSubmit", "vault": root, "injected": [{"path": rel}], "n": i} for i in range(n)]
        return "".join(json.dumps(r) + "\n" for r in records)

    log = logs / "hooks-20261102.jsonl"
    log.write_text(lines(first, 3), encoding="utf-8")
    index, _ = indexing.open_index(vault.root, vault.config)
    try:
        assert analytics.fold(index, vault.root, logs) == 3
        log.rename(logs / "hooks-20261102.1.jsonl")  # what the hook log does when a file is full
        log.write_text(lines(second, 5), encoding="utf-8")  # the new file outgrows the old cursor before the next fold
        assert analytics.fold(index, vault.root, logs) == 5
        assert analytics.fold(index, vault.root, logs) == 0
        counted = analytics.recalled(index)
        assert (counted[first].count, counted[second].count) == (3, 5)
    finally:
        index.close()


def test_a_protected_folders_pattern_that_matches_no_folder_is_named_in_a_warning(vault_dir: Path) -> None:
    patterns = ["personal-skills/*", "MemoryVault/personal-private/workflow", "_always-load", "persnal-skills/**",
                "work/personal-skills"]  # fmt: skip
    vault = with_config(vault_dir, vault__protected_folders=patterns)
    vault.reindex(vectors="none")
    report = health.check(vault, service=False)
    (warning,) = [w for w in report.warnings if "protected_folders" in w]
    assert "'persnal-skills/**'" in warning and "'work/personal-skills'" in warning
    assert "'personal-skills/*'" not in warning and "_always-load" not in warning and "workflow" not in warning
    (vault_dir / "MemoryVault" / "work" / "personal-skills").mkdir(parents=True)  # an empty folder is a folder
    (vault_dir / "MemoryVault" / "persnal-skills").mkdir()
    assert not [w for w in health.check(vault, service=False).warnings if "protected_folders" in w]
