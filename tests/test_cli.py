"""The CLI through click's CliRunner, asserting through the library; help and docs for every command."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memvault import config, open_vault
from memvault.cli import cli

from .conftest import REPO

REL = "MemoryVault/personal-private/preference/pytest-over-unittest.md"


def run(*args: str, input: str | None = None, code: int = 0) -> click.testing.Result:
    result = CliRunner().invoke(cli, list(args), input=input)
    assert result.exit_code == code, result.output
    return result


def test_init_creates_structure_and_config(tmp_path: Path) -> None:
    root = tmp_path / "Obsidian"
    (root / ".obsidian").mkdir(parents=True)
    result = run("init", str(root), "--json")
    assert json.loads(result.output)["found"] == "an Obsidian vault with 0 notes"
    created = json.loads(result.output)["created"]
    assert "MemoryVault/personal-private/_always-load" in created and "MemoryVault/personal-skills" in created
    assert config.load().vault_root == root.resolve()
    assert json.loads(run("init", str(root), "--json").output)["created"] == []  # idempotent
    assert open_vault().root == root.resolve()  # the config now finds the vault on its own


def test_save_from_argument_and_stdin(vault_dir: Path) -> None:
    run("--vault", str(vault_dir), "save", "fix", "pip-cache", "Clear ~/.cache/pip when wheels are stale.", "-t", "pip")
    out = run(
        "--vault",
        str(vault_dir),
        "save",
        "workflow",
        "triage",
        "-",
        "--always-load",
        "--json",
        input="# Triage\n\nLabel, reproduce, assign.\n",
    )
    saved = json.loads(out.output)
    vault = open_vault(vault_dir)
    assert saved["path"] == "MemoryVault/personal-private/workflow/triage.md"
    assert vault.read(saved["path"]).note.meta["always_load"] is True
    assert vault.read("MemoryVault/personal-private/fix/pip-cache.md").note.meta["tags"] == ["pip"]


def test_evolve_and_show(vault_dir: Path) -> None:
    out = run("--vault", str(vault_dir), "evolve", REL, "-", "--reason", "xdist", "--json", input="Use pytest-xdist.\n")
    data = json.loads(out.output)
    shown = json.loads(run("--vault", str(vault_dir), "show", data["archived"], "--json").output)
    assert shown["meta"]["status"] == "superseded" and shown["meta"]["superseded_by"] == REL
    assert open_vault(vault_dir).read(REL).note.body == "Use pytest-xdist.\n"
    plain = run("--vault", str(vault_dir), "show", REL).output
    assert plain.startswith("---\nkind: preference\n") and plain.endswith("Use pytest-xdist.\n")


def test_health_json_counts(vault_dir: Path) -> None:
    (vault_dir / "Notes" / "Postgres indexing (conflict 2026-11-02).md").write_text("copy")
    data = json.loads(run("--vault", str(vault_dir), "health", "--json").output)
    assert data["ok"] is True and data["entries"] == 21
    assert data["by_group"] == {"personal-private": 19, "personal-projects": 1, "personal-skills": 1}
    assert data["by_status"]["superseded"] == 1 and data["inbox"] == 1 and data["review"] == 1
    assert data["conflict_copies"] == ["Notes/Postgres indexing (conflict 2026-11-02).md"]
    human = run("--vault", str(vault_dir), "health").output
    assert "healthy" in human and "personal-projects" in human


def test_health_exits_1_when_unhealthy(tmp_path: Path) -> None:
    result = run("--vault", str(tmp_path), "health", code=1)
    assert "MemoryVault/ does not exist" in result.output


def test_list_json(vault_dir: Path) -> None:
    rows = json.loads(run("--vault", str(vault_dir), "list", "--kind", "fix", "--json").output)
    assert len(rows) == 5 and {r["kind"] for r in rows} == {"fix"}  # 4 in fix/, 1 awaiting review
    assert "21 entries" in run("--vault", str(vault_dir), "list").output


def test_undo_in_a_git_vault(git_vault) -> None:
    run("--vault", str(git_vault.root), "save", "fix", "one", "text")
    assert "undo:" in run("--vault", str(git_vault.root), "undo").output
    assert not (git_vault.memory_dir / "personal-private" / "fix" / "one.md").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["save", "fix", "leak", "key AKIA" + "Q3X7ZP2M" * 2], "[secret]"),
        (["evolve", "../x.md", "new", "-r", "why"], "[path_escape]"),
        (["evolve", "MemoryVault/personal-private/fix/none.md", "new", "-r", "why"], "[missing]"),
        (["show", "Notes/nothing.md"], "[missing]"),
        (["undo"], "[git]"),
    ],
)
def test_errors_are_one_line_with_a_reason_code_and_exit_1(vault_dir: Path, args: list[str], needle: str) -> None:
    result = run("--vault", str(vault_dir), *args, code=1)
    assert result.output.startswith("Error: ") and needle in result.output and "Traceback" not in result.output


def test_no_vault_and_usage_errors() -> None:
    assert "[no_vault]" in run("health", code=1).output
    assert "Missing option '--reason'" in run("--vault", ".", "evolve", "a.md", "x", code=2).output
    assert "No such command" in run("frobnicate", code=2).output
    assert (
        "content is empty" in run("--vault", str(REPO / "examples" / "vault"), "save", "fix", "x", " ", code=2).output
    )


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help(name: str) -> None:
    command = cli.commands[name]
    assert command.help and len(command.help.strip()) > 20
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help"
    assert run(name, "--help").output.startswith("Usage: ")


def test_cli_reference_is_in_sync_with_help() -> None:
    module = runpy.run_path(str(REPO / "scripts" / "gen_cli_docs.py"))
    expected = module["render"]()
    assert (REPO / "wiki" / "reference" / "cli.md").read_text(encoding="utf-8") == expected, (
        "wiki/reference/cli.md is stale: run python scripts/gen_cli_docs.py"
    )
