"""The Vault API: save, evolve, update, read, list — checked on a real copy of the example vault."""

from __future__ import annotations

import datetime as dt

import pytest

from memvault import open_vault
from memvault.errors import MemvaultError, VaultNotFound

FORMATTER = "MemoryVault/personal-private/preference/python-formatter.md"


def test_save_writes_the_spec_frontmatter(vault) -> None:
    result = vault.save(
        "preference",
        "Go Formatting",
        "# Go formatting\n\nAlways run gofmt.",
        tags=["go", "#style"],
        always_load=True,
        source="3f2a9c1e",
        confidence="high",
    )
    assert result.path == "MemoryVault/personal-private/preference/go-formatting.md"
    nf = vault.read(result.path)
    meta = nf.note.meta
    assert list(meta) == [
        "kind",
        "status",
        "created",
        "updated",
        "tags",
        "group",
        "always_load",
        "confidence",
        "source",
        "private",
    ]
    assert meta["kind"] == "preference" and meta["status"] == "active" and meta["group"] == "personal-private"
    assert meta["tags"] == ["go", "style"] and meta["always_load"] is True and meta["private"] is False
    assert meta["source"] == "3f2a9c1e" and meta["confidence"] == "high"
    assert isinstance(meta["created"], dt.datetime) and meta["created"] == meta["updated"]
    assert nf.note.body == "# Go formatting\n\nAlways run gofmt.\n" and nf.title == "Go formatting"


def test_save_with_group_and_frontmatter_in_the_body(vault) -> None:
    body = "---\naliases: [deploy]\ntags: [ops]\n---\nShip small.\n"
    result = vault.save("workflow", "shipping", body, group="Team Notes")
    meta = vault.read(result.path).note.meta
    assert result.path == "MemoryVault/team-notes/workflow/shipping.md"
    assert meta["aliases"] == ["deploy"] and meta["tags"] == ["ops"] and meta["group"] == "team-notes"


def test_replace_keeps_created_and_unknown_keys(vault) -> None:
    rel = "MemoryVault/personal-private/preference/uv-for-envs.md"
    before = vault.read(rel).note.meta
    vault.update(rel, meta={"aliases": ["uv"]})
    vault.save("preference", "uv-for-envs", "Use uv everywhere.\n", replace=True)
    after = vault.read(rel).note.meta
    assert after["created"] == before["created"] and after["aliases"] == ["uv"] and after["tags"] == before["tags"]
    assert vault.read(rel).note.body == "Use uv everywhere.\n"


def test_evolve_is_a_supersede_with_an_archive(vault, today: dt.date) -> None:
    rel = "MemoryVault/personal-private/preference/pytest-over-unittest.md"
    old = vault.read(rel)
    result = vault.evolve(rel, "Use pytest with the randomly plugin.\n", reason="we adopted pytest-randomly")
    day = today.strftime("%Y%m%d")
    archived = f"MemoryVault/personal-private/_archive/personal-private/preference/pytest-over-unittest.{day}.md"
    assert result.path == rel and result.archived == archived and set(result.paths) == {rel, archived}
    new, arch = vault.read(rel).note, vault.read(archived).note
    assert new.meta["supersedes"] == archived and new.meta["status"] == "active"
    assert new.meta["supersede_reason"] == "we adopted pytest-randomly" and new.meta["tags"] == old.note.meta["tags"]
    assert arch.meta["status"] == "superseded" and arch.meta["superseded_by"] == rel
    assert arch.body == old.note.body  # the old text is kept verbatim
    assert arch.meta["created"] == old.note.meta["created"]


def test_evolve_twice_the_same_day_and_to_a_new_slug(vault) -> None:
    first = vault.evolve(FORMATTER, "ruff format, line length 110\n", reason="wider screens")
    second = vault.evolve(FORMATTER, "ruff format, line length 120\n", reason="even wider", slug="ruff-format")
    assert second.path == "MemoryVault/personal-private/preference/ruff-format.md"
    assert second.archived != first.archived and second.archived.endswith("-2.md")
    assert not (vault.root / FORMATTER).exists()
    chain = vault.read(second.archived).note.meta
    assert chain["supersedes"] == first.archived and chain["superseded_by"] == second.path


def test_an_archived_entry_cannot_be_evolved_again(vault) -> None:
    archived = "MemoryVault/personal-private/_archive/personal-private/preference/python-formatter.20260612.md"
    with pytest.raises(Exception, match="already superseded") as exc:
        vault.evolve(archived, "x", reason="r")
    assert exc.value.code == "conflict"


def test_list_filters(vault) -> None:
    entries = vault.list()
    assert len(entries) == 21 and all(e.in_memory for e in entries)
    private = [e.path for e in entries if e.private]
    assert private == ["MemoryVault/personal-private/domain/oncall-contacts.md"]
    assert [e.path for e in vault.list(status="superseded")] == [
        "MemoryVault/personal-private/_archive/personal-private/preference/python-formatter.20260612.md"
    ]
    assert {e.kind for e in vault.list(kind="fix")} == {"fix"}
    assert {e.group for e in vault.list(group="personal-skills")} == {"personal-skills"}
    assert any(e.path == "Notes/Postgres indexing.md" for e in vault.list(scope="all"))
    always = [e.path for e in entries if e.always_load]
    assert always == ["MemoryVault/personal-private/_always-load/dev-flow.md"]


def test_init_structure_is_idempotent(vault) -> None:
    created = vault.init_structure()
    assert "MemoryVault/personal-private/_inbox" not in created  # the example vault has it
    assert "MemoryVault/personal-private/_always-load" not in created
    assert vault.init_structure() == []
    for sub in ("_always-load", "_inbox", "_review", "_archive", "_idea-incubator"):
        assert (vault.memory_dir / "personal-private" / sub).is_dir()


def test_open_vault_errors_are_clear(tmp_path) -> None:
    with pytest.raises(VaultNotFound, match="no vault given"):
        open_vault()
    with pytest.raises(VaultNotFound, match="does not exist"):
        open_vault(tmp_path / "unmounted")


def test_evolving_a_chain_relinks_the_previous_archive(vault) -> None:
    first = vault.evolve(FORMATTER, "ruff format, line length 110\n", reason="wider screens")
    second = vault.evolve(FORMATTER, "ruff format, line length 120\n", reason="even wider")
    oldest = "MemoryVault/personal-private/_archive/personal-private/preference/python-formatter.20260612.md"
    assert vault.read(oldest).note.meta["superseded_by"] == first.archived  # was: the live path
    assert vault.read(first.archived).note.meta["superseded_by"] == second.archived
    assert vault.read(second.archived).note.meta["superseded_by"] == FORMATTER
    assert oldest in first.paths and first.archived in second.paths


@pytest.mark.parametrize(
    ("call", "message", "code"),
    [
        (lambda v: v.save("fix", "empty", "  \n"), "content is empty", "usage"),
        (lambda v: v.save("fix", "odd", "---\nstatus: bogus\n---\ntext"), "status 'bogus'", "usage"),
        (lambda v: v.update(FORMATTER, meta={"status": "done"}), "status 'done'", "usage"),
        (lambda v: v.save("fix", "!!!", "text"), "no usable characters", "invalid_name"),
        (lambda v: v.evolve(FORMATTER, "text", reason="  "), "needs a --reason", "usage"),
    ],
)
def test_usage_errors(vault, call, message: str, code: str) -> None:
    with pytest.raises(MemvaultError, match=message) as exc:
        call(vault)
    assert exc.value.code == code


def test_titles_skip_code_blocks(vault) -> None:
    result = vault.save("fix", "bash-comments", "```bash\n# not a title\nls\n```\n\n# Real title\n")
    assert vault.read(result.path).title == "Real title"
