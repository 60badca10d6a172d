"""The plugin route in a second HOME: `claude plugin marketplace add` + `install`, its background install, recall."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.conftest import REPO
from tests.e2e.claude import Client, User, hook_runs, seed_vault, wait_until
from tests.e2e.stubs.anthropic import AnthropicStub, messages_text, tool_results

FLAKY = "How do I fix a flaky test that fails only sometimes on CI?"
FLAKY_NOTE = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"


def clone(dest: Path) -> Path:
    """The repository as a user's clone has it: tracked and new files, nothing ignored (no .venv)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode("utf-8")
        .split("\0")
    )
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    return dest


def test_the_plugin_installs_its_dependencies_in_the_background_then_recalls(
    claude_code: Client, tmp_path: Path
) -> None:
    user = User(tmp_path / "plugin-user", claude_code)
    project = tmp_path / "project"
    project.mkdir()
    user.seed_claude_json(project)
    marketplace = clone(tmp_path / "memvault")
    vault = seed_vault(tmp_path / "Obsidian")
    data = user.claude_dir / "plugins" / "data" / "memvault-memvault"
    keyword_only = {"MEMVAULT_PLUGIN_NO_EMBEDDINGS": "1"}  # a smaller background install; recall by keywords

    with AnthropicStub(log_path=tmp_path / "requests.jsonl") as stub:

        def claude(*args: str) -> str:
            return user.claude(*args, stub=stub, cwd=project, **keyword_only).check().stdout

        assert "Successfully added marketplace: memvault" in claude("plugin", "marketplace", "add", str(marketplace))
        assert "Successfully installed plugin: memvault@memvault" in claude("plugin", "install", "memvault@memvault")

        # First session: the hooks find no dependencies, start one background install and add nothing yet.
        claude("-p", "hello")
        assert "<memoryvault-" not in messages_text(stub.bodies()[-1])
        wait_until(lambda: (data / "venv-ready.json").is_file(), 600, "the plugin's background install")

        # The vault is recorded through the plugin's skill; `memvault` is the plugin's bin/memvault.
        stub.reply(
            {"call": "Bash", "args": {"command": f"memvault init {vault}", "description": "init"}},
            {"text": "Your vault is recorded."},
        )
        claude("-p", f"/memvault:memvault init {vault}")
        [result] = tool_results(stub.bodies()[-1])
        assert not result.get("is_error"), result
        config_file = user.home / ".config" / "memvault" / "config.yaml"
        config = yaml.safe_load(config_file.read_text(encoding="utf-8"))
        assert config["vault"]["root"] == str(vault)
        # The plugin's first sessions may recall keyword-only (its embedding service still loading on a busy
        # machine): a patient budget, and the keyword floor of the hook tests, keep this test about the route.
        config["recall"] = {"prompt_budget_ms": 3000, "min_coverage": 0.3, "min_probability": 0.02}
        config_file.write_text(yaml.safe_dump(config), encoding="utf-8")

        stub.reply({"text": "Bisect it."})
        claude("-p", FLAKY)
        sent = messages_text(stub.bodies()[-1])
    assert "<memoryvault-always-load" in sent and FLAKY_NOTE in sent
    assert "door code" not in sent  # a <private> span
    # The model sees the skill as the docs name it: /memvault:memvault (the folder's name, not the alias).
    assert "- memvault:memvault" in sent and "memvault:memory" not in sent
    plugin_runs = [r for r in hook_runs(run.debug_log for run in user.runs) if r.plugin == "memvault@memvault"]
    assert {r.event for r in plugin_runs} >= {"SessionStart", "UserPromptSubmit", "Stop"}
    assert all(r.exit_code == 0 for r in plugin_runs), plugin_runs
