"""The yes or no to the web at `memvault install`: a flag, else one question on a terminal (default no), asked once."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from memvault import config, paths
from memvault.cli import cli

from .test_cli_newcomer import in_a_terminal
from .test_installer import claude  # noqa: F401 - the fixture: a private Claude Code folder, HOME elsewhere


def saved() -> dict[str, object]:
    file = paths.config_file()
    return (yaml.safe_load(file.read_text()) or {}) if file.exists() else {}


@pytest.mark.usefixtures("claude")
def test_the_flags_record_the_answer_and_keep_every_other_key(vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["install", "--vault", str(vault_dir), "--web"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "web research and discovery: on" in result.output
    loaded = config.load()
    assert loaded.discovery.web and loaded.ideas.research == "web" and loaded.vault.root == str(vault_dir)
    CliRunner().invoke(cli, ["install", "--no-web"], catch_exceptions=False)
    loaded = config.load()
    assert not loaded.discovery.web and loaded.ideas.research == "local" and loaded.vault.root == str(vault_dir)


@pytest.mark.usefixtures("claude")
def test_without_a_terminal_nothing_is_asked_and_the_web_stays_off(vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["install", "--vault", str(vault_dir)], catch_exceptions=False)
    assert result.exit_code == 0 and "web research" not in result.output and "use the web" not in result.output
    assert "discovery" not in saved() and not config.load().discovery.web


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.usefixtures("claude")
def test_on_a_terminal_it_asks_once_default_no(vault_dir: Path) -> None:
    argv = [sys.executable, "-m", "memvault", "install", "--vault", str(vault_dir)]
    code, seen = in_a_terminal(argv, b"\n")  # Enter: the default, no
    assert code == 0 and "Let your own coding agent use the web" in seen and "[y/N]" in seen, seen
    assert saved()["discovery"] == {"web": False} and not config.load().discovery.web
    code, seen = in_a_terminal(argv, b"y\n")
    assert code == 0 and "use the web" not in seen  # answered at the first install: not asked again
    (paths.config_file()).write_text(yaml.safe_dump({"vault": {"root": str(vault_dir)}}))
    code, seen = in_a_terminal(argv, b"y\n")
    assert code == 0 and config.load().discovery.web and config.load().ideas.research == "web"
