"""Protected entries: no automatic process changes, moves or removes them; explicit commands do after a confirmation."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import config, open_vault
from memvault.claude import auto_memory, seed, skills_index
from memvault.cli import cli
from memvault.errors import MemvaultError, ProtectedError
from memvault.ideas import incubator
from memvault.reflect import review, runner
from memvault.store import journal, protect
from memvault.vault.core import Vault

from .conftest import configure, snapshot
from .test_reflect import ASK, OK, PIP, vector_vault, write_transcript  # noqa: F401 (vector_vault: a fixture)

P = "MemoryVault/personal-private/"
PYTEST = P + "preference/pytest-over-unittest.md"
INC = P + "_idea-incubator"


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def run(vault_dir: Path, *args: str, input: str | None = None, code: int = 0):
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), *args], input=input)
    assert result.exit_code == code, result.output
    return result


def protect_note(vault: Vault, rel: str) -> bytes:
    vault.update(rel, meta={"protected": True})  # not protected yet: an ordinary change
    return (vault.root / rel).read_bytes()


# ---- what protected means ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "meta", "folders", "expected"),
    [
        (PYTEST, {"protected": True}, (), True),
        (PYTEST, {"protected": "yes"}, (), True),
        (PYTEST, {"protected": False}, (), False),
        (PYTEST, {}, ("preference",), True),  # a folder name at any depth
        (PYTEST, {}, ("personal-private/preference",), True),  # a path from the MemoryVault folder
        (PYTEST, {}, ("personal-private/fix",), False),
        (P + "_always-load/dev-flow.md", {}, ("_always-load",), True),
        (P + "_review/x.md", {"protected": True}, ("_review",), False),  # a queued capture is a proposal
        ("Notes/mine.md", {"protected": True}, (), True),
        ("Notes/mine.md", {}, ("Notes",), False),  # folders are under MemoryVault/
    ],
)
def test_what_is_protected(rel: str, meta: dict, folders: tuple[str, ...], expected: bool) -> None:
    assert protect.is_protected(rel, meta, "MemoryVault", folders) is expected


def test_every_vault_change_of_a_protected_entry_is_refused_until_waived(vault: Vault) -> None:
    before = protect_note(vault, PYTEST)
    attempts = [
        lambda: vault.update(PYTEST, meta={"tags": ["x"]}),
        lambda: vault.save("preference", "pytest-over-unittest", "New text.\n", replace=True),
        lambda: vault.evolve(PYTEST, "Use pytest with plugins.\n", reason="changed"),
        lambda: vault.move(PYTEST, P + "preference/moved.md"),
        lambda: vault.remove(PYTEST, reason="gone"),
    ]
    for attempt in attempts:
        with pytest.raises(ProtectedError) as refused:
            attempt()
        assert refused.value.code == "protected" and refused.value.path == PYTEST
    assert (vault.root / PYTEST).read_bytes() == before and not list(vault.journal_dir.glob("*.json"))
    assert vault.save("preference", "new-rule", "A new entry beside it.\n").path  # adding is never refused
    with vault.protection_waived():
        result = vault.evolve(PYTEST, "Use pytest with plugins.\n", reason="changed")
    assert vault.read(result.path).note.meta["protected"] is True  # the replacement is protected too
    with pytest.raises(ProtectedError):
        vault.update(result.path, meta={"tags": ["x"]})  # the waiver ended with its block


def test_protected_folders_from_the_config(vault_dir: Path, memvault_home: Path) -> None:
    (memvault_home / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text("vault:\n  protected_folders: [_always-load, workflow]\n")
    vault = open_vault(vault_dir, config=config.load())
    for rel in (P + "_always-load/dev-flow.md", P + "workflow/release-checklist.md"):
        with pytest.raises(ProtectedError):
            vault.update(rel, meta={"tags": ["x"]})
    assert vault.update(PYTEST, meta={"tags": ["x"]}).path == PYTEST


# ---- every automatic path ------------------------------------------------------------------------


def test_a_supersede_of_a_protected_entry_goes_to_review_and_is_never_applied(
    vector_vault: Vault,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vault = vector_vault
    first = [ASK, PIP, ("user", "Always squash merge pull requests."), OK]
    changed = [ASK, PIP, ("user", "From now on use rebase merges for pull requests, not squash."), OK]
    (old,) = runner.reflect_transcript(vault, write_transcript(tmp_path / "a.jsonl", "sess-a", first)).written
    before = protect_note(vault, old)
    monkeypatch.setenv("MEMVAULT_REVIEW_MODE", "silent")  # would send an ordinary proposal to the inbox
    vault = open_vault(vault.root)
    (route,) = runner.reflect_transcript(vault, write_transcript(tmp_path / "b.jsonl", "sess-b", changed)).routes
    assert route["action"] == "supersede" and route["target"] == old and "protected" in route["reason"]
    assert route["path"].startswith(P + "_review/")  # review, whatever the review mode
    meta = vault.read(route["path"]).note.meta
    assert meta["proposes_supersede"] == old and "never applied automatically" in meta["supersede_note"]
    assert (vault.root / old).read_bytes() == before
    # Review's supersede: refused as a library call; in `memvault review` it asks, and "no" keeps the entry.
    with pytest.raises(ProtectedError):
        review.supersede(vault, route["path"])
    said = run(vault.root, "review", input="s\nx\nn\n").output  # the example's own capture comes first
    assert "never applied automatically" in said and "is protected. Supersede it anyway?" in said
    assert (vault.root / old).read_bytes() == before and (vault.root / route["path"]).exists()
    run(vault.root, "review", input="s\nx\ny\n")
    assert vault.read(old).note.meta["supersedes"].startswith(P + "_archive/")  # replaced, after the yes


def test_inbox_accept_keeps_a_protected_supersede_without_a_terminal_and_applies_it_with_yes(vault: Vault) -> None:
    before = protect_note(vault, PYTEST)
    proposal = vault.save(
        "preference", "pytest-plugins", "# Pytest with plugins\n\nUse pytest-xdist too.\n", folder="_inbox",
        meta={"proposes_supersede": PYTEST},
    ).path  # fmt: skip
    out = json.loads(run(vault.root, "inbox", "accept", "--all", "--json").output)
    (kept,) = [r for r in out["results"] if r["path"] == proposal]
    assert kept["action"] == "kept" and "--yes" in kept["reason"]
    assert (vault.root / PYTEST).read_bytes() == before and (vault.root / proposal).exists()
    run(vault.root, "inbox", "accept", "pytest-plugins", "--yes")
    assert "pytest-xdist" in vault.read(PYTEST).note.body and not (vault.root / proposal).exists()


def test_explicit_commands_ask_or_take_yes(vault: Vault) -> None:
    before = protect_note(vault, PYTEST)
    refused = run(vault.root, "evolve", PYTEST, "Use pytest with plugins.", "-r", "changed", code=1)
    assert "[protected]" in refused.output and "--yes" in refused.output
    run(vault.root, "save", "preference", "pytest-over-unittest", "New.", "--replace", code=1)
    assert (vault.root / PYTEST).read_bytes() == before
    run(vault.root, "evolve", PYTEST, "Use pytest with plugins.", "-r", "changed", "--yes")
    assert "Use pytest with plugins." in vault.read(PYTEST).note.body


def test_gc_never_offers_a_protected_idea(vault: Vault) -> None:
    idea = f"{INC}/flaky-test-detector/_index.md"
    protect_note(vault, idea)
    aged_idea(vault)
    before = snapshot(vault.root)
    (stale,) = incubator.stale(vault, 6)
    assert stale.protected
    listed = json.loads(run(vault.root, "gc", "--json").output)
    assert listed["ideas"] == [] and [i["slug"] for i in listed["protected"]] == ["flaky-test-detector"]
    assert "1 protected idea" in run(vault.root, "gc", "--ask", input="d\ny\n").output
    for clean_up in (incubator.archive, incubator.delete):
        with pytest.raises(ProtectedError):
            clean_up(vault, stale)
    assert snapshot(vault.root) == before


SKILL = "---\nname: deploy\ndescription: Deploy to staging.\n---\nRun the deploy script.\n"


def test_the_skills_index_leaves_a_protected_entry_alone(vault: Vault, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    skill = claude / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    (rel,) = skills_index.index_skills(vault, claude_dir=claude, project=tmp_path).created
    before = protect_note(vault, rel)
    skill.write_text(SKILL.replace("Deploy to staging.", "Deploy to production."))
    changed = skills_index.index_skills(vault, claude_dir=claude, project=tmp_path)
    assert changed.updated == [] and changed.skipped[0]["path"] == rel and "protected" in changed.skipped[0]["reason"]
    skill.unlink()
    gone = skills_index.index_skills(vault, claude_dir=claude, project=tmp_path)
    assert gone.archived == [] and "protected" in gone.skipped[0]["reason"]
    assert (vault.root / rel).read_bytes() == before


def test_the_auto_memory_import_leaves_a_protected_entry_alone(vault: Vault, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    memory = auto_memory.memory_dir(project.resolve(), tmp_path / "claude")
    memory.mkdir(parents=True)
    topic = memory / "feedback_tabs.md"
    topic.write_text("---\nname: Tabs\ntype: feedback\n---\nIndent Makefiles with tabs, never spaces.\n")
    (memory / "MEMORY.md").write_text("- [Tabs](feedback_tabs.md) — Makefiles use tabs\n")
    (rel,) = auto_memory.import_memory(vault, project=project, claude=tmp_path / "claude").created
    before = protect_note(vault, rel)
    # A protected entry edited through memvault keeps its body hash; only protection stops the update.
    topic.write_text(topic.read_text().replace("never spaces", "never spaces, not even once"))
    again = auto_memory.import_memory(vault, project=project, claude=tmp_path / "claude")
    assert again.updated == [] and "protected" in again.skipped[0]["reason"]
    assert (vault.root / rel).read_bytes() == before


def test_seed_only_proposes_when_the_rule_of_a_protected_entry_changes(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "rules.md"
    source.write_text("## Git\n\n- Never push straight to main; open a pull request.\n")
    (created,) = seed.seed(vault, extra=[source], only=True, accept=True).created
    before = (vault.root / created["path"]).read_bytes()
    assert vault.read(created["path"]).note.meta["protected"] is True  # seeded entries are protected
    source.write_text("## Git\n\n- Never push straight to main; open a pull request and wait for review.\n")
    (proposal,) = seed.seed(vault, extra=[source], only=True, accept=True).proposals
    assert proposal["replaces"] == created["path"] and proposal["protected"]
    assert (vault.root / created["path"]).read_bytes() == before


# ---- the folder patterns users write (issue 27, item 3) ----------------------------------------------------

SKILLS = "MemoryVault/personal-skills/deploy.md"
SPELLINGS = (
    "personal-skills", "personal-skills/", "personal-skills/*", "personal-skills/**", "/personal-skills",
    "MemoryVault/personal-skills", "MemoryVault/personal-skills/*", "MemoryVault/personal-skills/**",
    "**/personal-skills", "./personal-skills/", "personal-skills\\*", " personal-skills ",
)  # fmt: skip


@pytest.mark.parametrize("pattern", SPELLINGS)
@pytest.mark.parametrize("rel", [SKILLS, "MemoryVault/personal-skills/ops/deep/deploy.md"])
def test_every_spelling_of_a_folder_protects_the_files_in_it_and_below(pattern: str, rel: str) -> None:
    assert protect.is_protected(rel, {}, "MemoryVault", (pattern,)), pattern


@pytest.mark.parametrize(
    ("pattern", "rel", "expected"),
    [
        ("work/personal-skills", "MemoryVault/work/personal-skills/deploy.md", True),  # nested, from MemoryVault/
        ("work/personal-skills/*", "MemoryVault/work/personal-skills/a/b/deploy.md", True),  # any depth below
        ("personal-skills", "MemoryVault/work/personal-skills/deploy.md", True),  # a bare name: any depth
        ("work/personal-skills", "MemoryVault/personal-skills/deploy.md", False),
        ("personal-skills", "MemoryVault/personal-skills-old/deploy.md", False),
        ("personal-skills/*", "MemoryVault/personal-skills-old/deploy.md", False),
        ("personal-skills", "MemoryVault/work/personal-skills.md", False),  # a note named like the folder
        ("MemoryVault/personal-skills", "Notes/personal-skills/deploy.md", False),  # outside MemoryVault/
        ("personal-skills/*.md", SKILLS, True),  # a glob of the files themselves
        ("Personal-Skills", SKILLS, True),  # case-insensitive, as on macOS and Windows
    ],
)
def test_what_a_folder_pattern_covers(pattern: str, rel: str, expected: bool) -> None:
    assert protect.is_protected(rel, {}, "MemoryVault", (pattern,)) is expected


def test_a_users_edit_under_personal_skills_star_survives_the_skills_index_and_the_session_start_job(
    vault_dir: Path, memvault_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported case: `personal-skills/*` protects the entry; the index neither rewrites nor archives it."""
    from memvault.hooks import jobs

    claude = tmp_path / "claude-config"
    skill = claude / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    (rel,) = json.loads(run(vault_dir, "index-skills", "--project", str(tmp_path), "--json").output)["created"]
    configure(memvault_home, "vault:\n  protected_folders: ['personal-skills/*']\n")
    entry = vault_dir / rel
    entry.write_text(entry.read_text().replace("Deploy to staging.", "Deploy to staging, never on a Friday."))
    edited = entry.read_bytes()
    skill.write_text(SKILL.replace("Run the deploy script.", "Run the deploy script twice."))
    report = json.loads(run(vault_dir, "index-skills", "--project", str(tmp_path), "--json").output)
    assert report["updated"] == [] and "protected" in report["skipped"][0]["reason"]
    skill.unlink()
    vault = open_vault(vault_dir, config=config.load())
    assert jobs.index_skills(vault, tmp_path) == {"skipped": 1}  # what SessionStart's background job runs
    assert entry.read_bytes() == edited


# ---- unreadable means protected (issue 27, item 9) ---------------------------------------------------------

UNREADABLE = {
    "nul": b"---\nprotected: true\n---\nKeep\x00 this.\n",
    "latin-1": "---\nprotected: true\n---\nCaf\xe9 rules.\n".encode("latin-1"),
    "bad-yaml": b"---\nprotected: [true\n---\nKeep this.\n",
    "duplicate-key": b"---\nprotected: false\nprotected: true\n---\nKeep this.\n",
}


@pytest.mark.parametrize("name", UNREADABLE)
def test_a_note_whose_frontmatter_cannot_be_read_is_protected_from_every_automatic_change(
    vault: Vault, name: str
) -> None:
    (vault.root / PYTEST).write_bytes(UNREADABLE[name])
    assert vault.protected(PYTEST) and vault.protected(PYTEST, {})  # whatever meta a caller read of it
    path = vault.root / PYTEST

    def removal() -> list[journal.FileOp]:  # what gc's delete plans: no read of the note's text
        return [journal.FileOp(PYTEST, None, journal.digest(path))]

    with pytest.raises(ProtectedError) as refused:
        vault.transact("delete", PYTEST, removal)
    assert "cannot be read" in str(refused.value) and path.read_bytes() == UNREADABLE[name]
    with vault.protection_waived():  # an explicit, confirmed command still can
        vault.transact("delete", PYTEST, removal)
    assert not path.exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, True), ("TRUE", True), ("on", True), ([True], True),
        ("false", False), ("no", False), (0, False), (None, False),
    ],
)
def test_the_protected_flag_fails_closed_like_private(value: object, expected: bool) -> None:
    assert protect.is_protected(PYTEST, {"protected": value}, "MemoryVault") is expected


# ---- gc and a protected note inside an idea folder (issue 27, item 9) ---------------------------------------


def aged_idea(vault: Vault) -> Path:
    """The example's idea, untouched since January 2025 (every file and its `updated`)."""
    folder = vault.root / INC / "flaky-test-detector"
    index = folder / "_index.md"
    index.write_text(re.sub(r"(?m)^updated: .*$", "updated: 2025-01-10T09:00:00", index.read_text()))
    stamp = dt.datetime(2025, 1, 10).timestamp()
    for path in folder.rglob("*"):
        os.utime(path, (stamp, stamp))
    return folder


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"---\nprotected: true\n---\nThe design I keep.\n", "has protected: true"),
        ("---\nprotected: true\n---\nCaf\xe9 design.\n".encode("latin-1"), "cannot be read"),
        (b"---\nprotected: true\n---\nThe design\x00 I keep.\n", "cannot be read"),
        (b"The design I keep.\n\x00" + b"x" * 9000 + b"\x00\n", "cannot be read"),  # a NUL past the first 8 KB
    ],
)
def test_gc_leaves_an_idea_holding_a_protected_or_unreadable_note_out_of_its_offer_with_the_reason(
    vault: Vault, content: bytes, reason: str
) -> None:
    folder = vault.root / INC / "flaky-test-detector"
    (folder / "design.md").write_bytes(content)
    aged_idea(vault)
    before = snapshot(vault.root)
    (stale,) = incubator.stale(vault, 6)
    assert stale.protected and "design.md" in stale.protected_reason and reason in stale.protected_reason
    listed = json.loads(run(vault.root, "gc", "--json").output)
    assert listed["ideas"] == [] and [i["slug"] for i in listed["protected"]] == ["flaky-test-detector"]
    said = run(vault.root, "gc", "--ask", input="d\ny\n").output  # never offered, so never failing after a yes
    assert "flaky-test-detector" in said and reason in said and "delete?" not in said.lower()
    assert snapshot(vault.root) == before
    for clean_up in (incubator.archive, incubator.delete):  # the library calls refuse it too
        with pytest.raises(MemvaultError):
            clean_up(vault, stale)
    assert snapshot(vault.root) == before
