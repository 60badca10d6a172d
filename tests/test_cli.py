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


# ---- output that says what happened (issue 30, item 8) -----------------------------------------------

TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa98"


def test_a_secret_is_pointed_to_on_the_line_of_the_text_given(vault_dir: Path) -> None:
    one = run("--vault", str(vault_dir), "save", "fix", "token", f"use {TOKEN} here", code=1).output
    assert "github_token on line 1 of the text given" in one, one
    three = run("--vault", str(vault_dir), "save", "fix", "token", "-", input=f"# Token\n\nuse {TOKEN}\n", code=1)
    assert "github_token on line 3 of the text given" in three.output, three.output


def test_seed_that_finds_no_file_says_where_it_looked(vault_dir: Path, tmp_path: Path, monkeypatch) -> None:
    claude, project = tmp_path / "claude-config", tmp_path / "project"
    claude.mkdir()
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    said = run("--vault", str(vault_dir), "seed", "--project", str(project), "--dry-run").output
    assert "0 files read" in said
    assert str(claude / "CLAUDE.md") in said and str(project) in said and "AGENTS.md" in said, said
    assert "--from" in said


def test_import_undo_prints_its_commit(git_vault, tmp_path: Path) -> None:
    from .conftest import git

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "old-note.md").write_text("# Old\n\nAn old note.\n", encoding="utf-8")
    run("--vault", str(git_vault.root), "import", str(notes))
    said = run("--vault", str(git_vault.root), "import", "--undo", "--yes").output
    head = git(git_vault.root, "rev-parse", "HEAD").strip()
    assert f"committed {head[:10]}" in said, said


def test_reindex_in_a_pipe_says_it_started_and_how_fast_it_went(vault_dir: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "memvault", "--vault", str(vault_dir), "reindex", "--keyword-only"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"reindexing {vault_dir}…", done.stderr  # first, with the first batch of work
    assert any(line.startswith("reading notes: 27 of 27") and "notes/s" in line for line in lines), done.stderr


@pytest.mark.parametrize("name", ["user_prompt_submit", "session_start", "stop"])
def test_a_hook_run_by_hand_without_input_says_what_it_expects(name: str, vault_dir: Path) -> None:
    import subprocess
    import sys

    from memvault.claude.settings import INTERPRETER_FLAGS

    done = subprocess.run([sys.executable, *INTERPRETER_FLAGS, str(REPO / "memvault" / "hooks" / f"{name}.py")],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0
    assert "expects the host's event JSON on standard input" in done.stderr, done.stderr


def test_a_hook_run_at_a_terminal_says_what_to_paste_before_it_waits(vault_dir: Path) -> None:
    import os
    import pty
    import select
    import subprocess
    import sys

    from memvault.claude.settings import INTERPRETER_FLAGS

    leader, follower = pty.openpty()
    script = REPO / "memvault" / "hooks" / "user_prompt_submit.py"
    hook = subprocess.Popen([sys.executable, *INTERPRETER_FLAGS, str(script)], stdin=follower,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    os.close(follower)
    try:
        assert select.select([hook.stderr], [], [], 30)[0], "the hook waits without a word"
        first = hook.stderr.readline()  # said before it reads: the hook is waiting now
        assert "expects the host's event JSON on standard input; paste it, then press Ctrl-D" in first
        os.write(leader, b"\x04")  # Ctrl-D: no input
        assert hook.wait(timeout=60) == 0
    finally:
        hook.kill()
        os.close(leader)
