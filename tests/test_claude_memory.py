"""`memvault import-claude-memory` and `auto_memory.status` on a real-shaped auto memory folder and a real vault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import open_vault
from memvault.claude import auto_memory
from memvault.cli import cli
from memvault.vault.core import Vault

from .conftest import git, snapshot

P = "MemoryVault/personal-private/"
TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98"

MEMORY_INDEX = """# Memory index

- [Testing preference](feedback_testing.md) — integration tests hit a real Postgres, never mocks
- [Release freeze](project_freeze.md) — mobile release freeze starts 2026-12-01
- [Bug tracker](reference_tracker.md) — pipeline bugs live in Linear project INGEST

## Project notes

- The staging cluster is called kestrel and deploys from the `release` branch only.
- Run the payments service locally with `make dev-payments`; it needs Docker Compose v2.
"""

TOPICS = {
    "feedback_testing.md": """---
name: Testing preference
description: integration tests must hit a real Postgres database, never mocks
type: feedback
---
Integration tests must run against a real Postgres database, not mocks.

**Why:** last quarter a mocked test passed while the production migration failed.
**How to apply:** use the `pg_container` fixture for anything touching SQL.
""",
    "project_freeze.md": """---
name: Release freeze
description: mobile release freeze starts 2026-12-01
type: project
---
The mobile team freezes merges to main from 2026-12-01 until the 3.0 release ships.
<private>The release manager's phone is 555-0100.</private>
""",
    "reference_tracker.md": f"""---
name: Bug tracker
description: pipeline bugs are tracked in Linear project INGEST
type: reference
---
Pipeline bugs are tracked in the Linear project INGEST (https://linear.app/acme/project/ingest).
The CI bot posts there with token {TOKEN} when a nightly run fails.
""",
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_warm_service(memvault_home: Path) -> None:
    """Duplicate checks run keyword-only here: no embedding model is loaded."""
    write(memvault_home / "config.yaml", "embedding:\n  warm_service: false\n")


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "claude-config"
    root.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", raising=False)
    return root


@pytest.fixture
def project(tmp_path: Path, claude: Path) -> Path:
    """A project with a Claude Code auto memory folder: MEMORY.md plus three topic files."""
    root = (tmp_path / "work" / "shop_api").resolve()
    root.mkdir(parents=True)
    memory = claude / "projects" / auto_memory.project_key(root) / "memory"
    write(memory / "MEMORY.md", MEMORY_INDEX)
    for name, text in TOPICS.items():
        write(memory / name, text)
    return root


def imported(vault: Vault) -> dict[str, dict]:
    """Every imported entry: path → frontmatter."""
    out = {}
    for path in sorted((vault.root / "MemoryVault").rglob("*.md")):
        meta = vault.read(path.relative_to(vault.root).as_posix()).note.meta
        if meta.get("source") == "claude-auto-memory":
            out[path.relative_to(vault.root).as_posix()] = dict(meta)
    return out


def test_project_key_matches_claude_codes_folder_names() -> None:
    assert auto_memory.project_key(Path("/home/me/my_app.v2")) == "-home-me-my-app-v2"


def test_import_maps_each_fact_to_an_entry_with_provenance(vault: Vault, claude: Path, project: Path) -> None:
    report = auto_memory.import_memory(vault, project=project)
    assert report.errors == [] and report.duplicates == []
    entries = imported(vault)
    assert sorted(entries) == sorted(report.created) and len(entries) == 5
    by_type = {m.get("memory_type"): (rel, m) for rel, m in entries.items() if m.get("memory_type")}
    rel, meta = by_type["feedback"]
    assert rel == P + "preference/testing-preference.md" and meta["kind"] == "preference"
    assert meta["confidence"] == "high" and meta["tags"] == ["claude-memory"]
    assert meta["origin"].endswith("/memory/feedback_testing.md")
    assert meta["import_key"].endswith("-work-shop-api/feedback_testing.md")
    body = vault.read(rel).note.body
    assert body.startswith("# Testing preference\n\nintegration tests must hit a real Postgres")
    assert "pg_container" in body
    assert by_type["project"][1]["kind"] == "domain" and by_type["reference"][1]["kind"] == "reference"
    # The two facts written into MEMORY.md itself (under "## Project notes"); index lines are not facts.
    inline = [m for m in entries.values() if "#" in m["import_key"]]
    assert len(inline) == 2 and all(m["kind"] == "domain" and m["memory_type"] == "project" for m in inline)
    kestrel = next(rel for rel in entries if "kestrel" in rel)
    assert "deploys from the `release` branch only" in vault.read(kestrel).note.body


def test_secrets_and_private_spans_never_reach_the_vault(vault: Vault, claude: Path, project: Path) -> None:
    report = auto_memory.import_memory(vault, project=project)
    text = "".join((vault.root / rel).read_text() for rel in report.created)
    assert TOKEN not in text and "[REDACTED:github_token]" in text
    assert "555-0100" not in text and "release manager" not in text
    assert any("secrets were redacted" in note for note in report.notes)


def test_a_rerun_imports_nothing_and_commits_nothing(git_vault: Vault, claude: Path, project: Path) -> None:
    auto_memory.import_memory(git_vault, project=project)
    before = snapshot(git_vault.root)
    commits = git(git_vault.root, "rev-list", "--count", "HEAD")
    report = auto_memory.import_memory(git_vault, project=project)
    assert report.created == report.updated == [] and len(report.unchanged) == 5
    assert snapshot(git_vault.root) == before
    assert git(git_vault.root, "rev-list", "--count", "HEAD") == commits


def test_a_changed_topic_updates_its_entry_unless_edited_in_the_vault(
    vault: Vault, claude: Path, project: Path
) -> None:
    auto_memory.import_memory(vault, project=project)
    memory = auto_memory.memory_dir(project)
    write(memory / "project_freeze.md", TOPICS["project_freeze.md"].replace("2026-12-01", "2026-12-08"))
    report = auto_memory.import_memory(vault, project=project)
    rel = P + "domain/release-freeze.md"
    assert report.updated == [rel] and report.created == []
    assert "2026-12-08" in vault.read(rel).note.body

    vault.update(rel, body="# Release freeze\n\nMy own wording of the freeze.\n")
    write(memory / "project_freeze.md", TOPICS["project_freeze.md"].replace("2026-12-01", "2026-12-15"))
    report = auto_memory.import_memory(vault, project=project)
    assert report.updated == [] and "edited in the vault" in report.skipped[0]["reason"]
    assert "My own wording" in vault.read(rel).note.body


def test_a_similar_existing_entry_is_not_duplicated(vault: Vault, claude: Path, project: Path) -> None:
    existing = vault.save(
        "preference", "real-postgres-in-tests",
        "# Testing preference: a real Postgres\n\nIntegration tests must hit a real Postgres database, never mocks: "
        "run them against a real Postgres, not mocks. Use the pg_container fixture for anything touching SQL; a mocked "
        "test passed last quarter while the production migration failed.\n",
    ).path  # fmt: skip
    report = auto_memory.import_memory(vault, project=project)
    assert [d["of"] for d in report.duplicates] == [existing]
    assert report.duplicates[0]["key"].endswith("feedback_testing.md") and report.duplicates[0]["measure"] == "keyword"
    assert not (vault.root / P / "preference" / "testing-preference.md").exists()
    assert len(report.created) == 4


def test_review_puts_imports_in_the_review_queue(vault: Vault, claude: Path, project: Path) -> None:
    report = auto_memory.import_memory(vault, project=project, review=True)
    assert report.created and all(rel.startswith(P + "_review/") for rel in report.created)
    assert vault.read(report.created[0]).note.meta["route"] == "review"


def test_dry_run_and_all_projects(vault: Vault, claude: Path, project: Path, tmp_path: Path) -> None:
    write(
        claude / "projects" / "-srv-other" / "memory" / "MEMORY.md", "- Build the docs with `mkdocs build --strict`.\n"
    )
    before = snapshot(vault.root)
    report = auto_memory.import_memory(vault, all_projects=True, dry_run=True)
    assert len(report.folders) == 2 and len(report.created) == 6
    assert snapshot(vault.root) == before


def test_missing_memory_folder_is_a_clear_error(vault: Vault, claude: Path, tmp_path: Path) -> None:
    with pytest.raises(auto_memory.MemvaultError, match="no Claude Code auto memory"):
        auto_memory.import_memory(vault, project=tmp_path)


def test_a_malformed_topic_file_is_reported_and_the_rest_imported(vault: Vault, claude: Path, project: Path) -> None:
    write(auto_memory.memory_dir(project) / "broken.md", "---\nname: [oops\n---\nbody\n")
    report = auto_memory.import_memory(vault, project=project)
    assert len(report.created) == 5 and report.errors[0]["path"].endswith("broken.md")


def test_status_with_each_switch(claude: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on = auto_memory.status(project)
    assert on["active"] is True and on["files"] == 4 and on["topics"] == 3 and on["index"] is True
    assert on["reason"] == "on by default"

    write(claude / "settings.json", json.dumps({"autoMemoryEnabled": False}))
    off = auto_memory.status(project)
    assert off["active"] is False and "settings.json" in off["reason"]

    write(project / ".claude" / "settings.json", json.dumps({"autoMemoryEnabled": True}))
    assert auto_memory.status(project)["active"] is True  # the project's setting wins over the user's

    write(project / ".claude" / "settings.local.json", json.dumps({"env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}}))
    assert auto_memory.status(project)["active"] is False

    (project / ".claude" / "settings.local.json").unlink()
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    env = auto_memory.status(project)
    assert env["active"] is False and env["reason"] == "CLAUDE_CODE_DISABLE_AUTO_MEMORY is set"


def test_status_of_a_project_without_memory(claude: Path, tmp_path: Path) -> None:
    info = auto_memory.status(tmp_path)
    assert info["active"] is True and info["files"] == 0 and info["index"] is False


def test_cli_import_json_then_human(vault_dir: Path, claude: Path, project: Path) -> None:
    runner = CliRunner()
    args = ["--vault", str(vault_dir), "import-claude-memory", "--project", str(project)]
    result = runner.invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert len(data["created"]) == 5 and data["auto_memory"]["active"] is True
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "imported 0 entries" in result.output and "5 already imported" in result.output
    assert len(imported(open_vault(vault_dir))) == 5
    result = runner.invoke(cli, [*args, "--all"])
    assert result.exit_code == 2 and "not both" in result.output


def test_an_imported_entry_you_delete_is_not_imported_again(vault: Vault, claude: Path, project: Path) -> None:
    first = auto_memory.import_memory(vault, project=project, review=True)
    rejected = next(rel for rel in first.created if "release-freeze" in rel)
    vault.remove(rejected, reason="rejected in review")
    report = auto_memory.import_memory(vault, project=project)
    assert report.created == [] and len(report.unchanged) == 4
    assert [s["key"].rsplit("/", 1)[-1] for s in report.skipped] == ["project_freeze.md"]
    assert "deleted from the vault" in report.skipped[0]["reason"]
