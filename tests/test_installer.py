"""`memvault install` / `uninstall`: the pure settings merge, the real CLI on temp Claude Code folders, the skill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pytest
from click.testing import CliRunner

from memvault.claude import settings as cs
from memvault.claude import skillfile
from memvault.cli import cli
from memvault.errors import MemvaultError
from memvault.store import notes

from .conftest import REPO, snapshot

WIN_PY = PureWindowsPath(r"C:\Users\Ann\AppData\Local\memvault\venv\Scripts\python.exe")
WIN_HOOKS = PureWindowsPath(r"C:\Users\Ann\AppData\Local\memvault\venv\Lib\site-packages\memvault\hooks")
OLD_PY, OLD_HOOKS = PurePosixPath("/old/venv/bin/python"), PurePosixPath("/old/venv/lib/memvault/hooks")
NEW_PY, NEW_HOOKS = PurePosixPath("/new/venv/bin/python"), PurePosixPath("/new/venv/lib/memvault/hooks")
SCRIPTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "Stop": "stop",
    "SessionEnd": "session_end",
    "Notification": "idle",
}
THEIRS_STOP = {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 3}]}
THEIRS_START = {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
# Another tool's settings, formatted the way no JSON library would write them.
ODD = (
    '{"model":"opus",   "hooks": {\n'
    '\t"Stop": [ {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 3}]} ],\n'
    '\t"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}]\n'
    "  },\n"
    '"permissions": {"allow": ["Bash(ls *)"]}}'
)


def settings_with_theirs() -> dict[str, Any]:
    return {"model": "opus", "hooks": {"Stop": [THEIRS_STOP], "SessionStart": [THEIRS_START]}, "theme": "dark"}


def ours(data: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for g in data["hooks"].get(event, []) for h in g["hooks"] if cs.our_script(h)]


# ---- the pure merge --------------------------------------------------------------------------------


@pytest.mark.parametrize("interpreter,hooks_dir", [(NEW_PY, NEW_HOOKS), (WIN_PY, WIN_HOOKS)])
def test_hook_entries_have_the_contracts_exec_form(interpreter, hooks_dir) -> None:
    entries = cs.hook_entries(interpreter, hooks_dir)
    assert list(entries) == list(SCRIPTS)
    for event, group in entries.items():
        # §2.3: a matcher only where the event matches on something we filter; SessionStart takes every source.
        assert set(group) == ({"matcher", "hooks"} if event == "Notification" else {"hooks"})
        [handler] = group["hooks"]
        assert set(handler) == {"type", "command", "args", "timeout"}  # §2.2 handler fields, exec form
        assert handler["type"] == "command" and handler["command"] == str(interpreter)
        assert handler["args"] == ["-S", str(hooks_dir / f"{SCRIPTS[event]}.py")]  # site set-up only when needed
        assert isinstance(handler["timeout"], int) and 1 <= handler["timeout"] <= 10  # seconds (§1.4)
        assert cs.our_script(handler) == SCRIPTS[event]
    assert entries["Notification"]["matcher"] == "idle_prompt"
    assert entries["UserPromptSubmit"]["hooks"][0]["timeout"] <= 5  # it blocks the prompt


def test_windows_entries_use_the_venvs_python_exe_and_backslash_paths() -> None:
    handler = cs.hook_entries(WIN_PY, WIN_HOOKS)["SessionStart"]["hooks"][0]
    assert handler["command"] == r"C:\Users\Ann\AppData\Local\memvault\venv\Scripts\python.exe"
    assert handler["args"] == [
        "-S",
        r"C:\Users\Ann\AppData\Local\memvault\venv\Lib\site-packages\memvault\hooks\session_start.py",
    ]
    cs.check_interpreter(WIN_PY)  # accepted


@pytest.mark.parametrize(
    "path,reason",
    [
        (r"C:\Users\Ann\AppData\Local\Microsoft\WindowsApps\python.exe", "Microsoft Store"),
        (r"C:\Users\Ann\AppData\Local\Microsoft\WindowsApps\python3.exe", "Microsoft Store"),
        (r"C:\Users\Ann\AppData\Local\memvault\venv\Scripts\python.cmd", ".cmd and .bat"),
        (r"C:\tools\python.bat", ".cmd and .bat"),
        (r"C:\Python312\pythonw.exe", "no standard output"),
        ("python.exe", "not absolute"),
    ],
)
def test_interpreters_claude_code_cannot_start_are_refused(path: str, reason: str) -> None:
    with pytest.raises(MemvaultError, match=reason) as caught:
        cs.check_interpreter(PureWindowsPath(path))
    assert caught.value.code == "install"


def test_merge_keeps_other_tools_hooks_and_key_order() -> None:
    before = settings_with_theirs()
    result = cs.merge(before, cs.hook_entries(NEW_PY, NEW_HOOKS))
    data = result.data
    assert list(data) == ["model", "hooks", "theme"]
    assert list(data["hooks"]) == ["Stop", "SessionStart", "UserPromptSubmit", "SessionEnd", "Notification"]
    assert data["hooks"]["Stop"][0] == THEIRS_STOP and data["hooks"]["SessionStart"][0] == THEIRS_START
    assert [cs.our_script(g["hooks"][0]) for g in data["hooks"]["Stop"]] == [None, "stop"]
    assert set(result.added) == set(SCRIPTS) and not result.updated
    assert before == settings_with_theirs()  # the input is not modified


def test_merge_into_empty_or_null_hooks() -> None:
    for settings in ({}, {"hooks": None}, {"hooks": {}}):
        data = cs.merge(settings, cs.hook_entries(NEW_PY, NEW_HOOKS)).data
        assert cs.installed_events(data) == SCRIPTS and list(data) == ["hooks"]


def test_merge_again_changes_nothing() -> None:
    once = cs.merge(settings_with_theirs(), cs.hook_entries(NEW_PY, NEW_HOOKS))
    twice = cs.merge(once.data, cs.hook_entries(NEW_PY, NEW_HOOKS))
    assert not twice.changed and twice.data == once.data and set(twice.unchanged) == set(SCRIPTS)


def test_a_moved_venv_replaces_ours_in_place() -> None:
    old = cs.merge(settings_with_theirs(), cs.hook_entries(OLD_PY, OLD_HOOKS)).data
    old["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "later-tool"}]})
    new = cs.merge(old, cs.hook_entries(NEW_PY, NEW_HOOKS))
    assert set(new.updated) == set(SCRIPTS) and not new.added
    for event in SCRIPTS:
        [handler] = ours(new.data, event)
        assert handler["command"] == str(NEW_PY) and handler["args"][-1].startswith("/new/venv/")
    stop = new.data["hooks"]["Stop"]
    assert stop[0] == THEIRS_STOP and stop[2]["hooks"][0]["command"] == "later-tool"  # ours kept its place
    assert stop[1]["hooks"][0]["command"] == str(NEW_PY)


def test_an_install_from_before_the_site_flag_is_recognised_and_upgraded_in_place() -> None:
    """Releases before `-S` wrote `args: [script]`: still ours, and a new install rewrites it with the flag."""
    old = cs.merge(settings_with_theirs(), cs.hook_entries(OLD_PY, OLD_HOOKS)).data
    for groups in old["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                if cs.our_script(handler):
                    handler["args"] = handler["args"][1:]
    assert cs.installed_events(old) == SCRIPTS
    new = cs.merge(old, cs.hook_entries(NEW_PY, NEW_HOOKS))
    assert set(new.updated) == set(SCRIPTS) and not new.added
    assert all(ours(new.data, event)[0]["args"][0] == "-S" for event in SCRIPTS)


def test_duplicates_and_our_handler_inside_another_tools_group_are_cleaned_up() -> None:
    mine = cs.hook_entries(OLD_PY, OLD_HOOKS)["Stop"]["hooks"][0]
    shared = {"hooks": [{"type": "command", "command": "theirs"}, mine]}
    settings = {"hooks": {"Stop": [shared, {"hooks": [mine]}, {"hooks": [mine]}]}}
    merged = cs.merge(settings, cs.hook_entries(NEW_PY, NEW_HOOKS)).data
    assert merged["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "theirs"}]},
        cs.hook_entries(NEW_PY, NEW_HOOKS)["Stop"],
    ]
    back = cs.unmerge(merged).data
    assert back == {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "theirs"}]}]}}


def test_unmerge_recognises_windows_paths_and_leaves_lookalikes() -> None:
    lookalike = {"hooks": [{"type": "command", "command": "py", "args": ["/opt/mymemvault/hooks/stop.py"]}]}
    settings = cs.merge({"hooks": {"Stop": [lookalike]}}, cs.hook_entries(WIN_PY, WIN_HOOKS)).data
    assert cs.installed_events(settings) == SCRIPTS
    result = cs.unmerge(settings, created_events=frozenset(SCRIPTS) - {"Stop"}, created_hooks=False)
    assert result.data == {"hooks": {"Stop": [lookalike]}}
    assert set(result.removed) == set(SCRIPTS)


def test_unmerge_keeps_an_event_list_and_hooks_object_that_existed_before() -> None:
    settings = cs.merge({"hooks": {"Stop": []}}, cs.hook_entries(NEW_PY, NEW_HOOKS)).data
    assert cs.unmerge(settings, created_events=frozenset(SCRIPTS) - {"Stop"}, created_hooks=False).data == {
        "hooks": {"Stop": []}
    }


def test_invalid_settings_are_refused_with_the_reason() -> None:
    for text, reason in [
        ('{"hooks": {', "not valid JSON"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"hooks": []}', '"hooks" must be an object'),
        ('{"hooks": {"Stop": {}}}', "hooks.Stop must be a list"),
    ]:
        with pytest.raises(MemvaultError, match=reason):
            cs.parse(text, "settings.json")


def test_dump_keeps_the_files_indent_and_line_endings() -> None:
    assert cs.dump({"a": [1]}, like='{\n\t"x": 1\n}') == '{\n\t"a": [\n\t\t1\n\t]\n}\n'
    assert cs.dump({"a": 1}, like='{\r\n    "x": 1\r\n}\r\n') == '{\r\n    "a": 1\r\n}\r\n'
    assert cs.dump({"a": 1}) == '{\n  "a": 1\n}\n'


def test_the_skills_command_on_windows_uses_forward_slashes_and_quotes_spaces() -> None:
    assert skillfile.memvault_command(WIN_PY) == "C:/Users/Ann/AppData/Local/memvault/venv/Scripts/memvault.exe"
    spaced = PureWindowsPath(r"C:\Users\Ann Lee\venv\Scripts\python.exe")
    assert skillfile.memvault_command(spaced) == "'C:/Users/Ann Lee/venv/Scripts/memvault.exe'"


def test_claude_dir_honours_claude_config_dir(tmp_path: Path) -> None:
    assert cs.claude_dir({"CLAUDE_CONFIG_DIR": str(tmp_path / "c")}) == tmp_path / "c"
    assert cs.claude_dir({}, home=tmp_path) == tmp_path / ".claude"


# ---- the CLI against real folders ------------------------------------------------------------------


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private Claude Code folder (CLAUDE_CONFIG_DIR) that does not exist yet; HOME points elsewhere."""
    folder = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return folder


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result


def everything(root: Path) -> list[str]:
    """Every file and folder under `root`."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_install_creates_settings_and_skill_and_uninstall_removes_all_of_it(claude: Path, memvault_home) -> None:
    result = run("install")
    assert result.exit_code == 0, result.output
    settings = read_json(claude / "settings.json")
    assert cs.installed_events(settings) == SCRIPTS
    handler = ours(settings, "SessionStart")[0]
    assert handler["command"] == os.path.abspath(sys.executable)
    assert Path(handler["args"][-1]) == REPO / "memvault" / "hooks" / "session_start.py"
    skill = claude / "skills" / "memvault" / "SKILL.md"
    assert skillfile.is_our_skill(skill)
    assert "add hook SessionStart" in result.output and "memvault init PATH" in result.output  # no vault yet
    assert "reflection mines finished sessions offline (reflection.miner: offline" in result.output
    assert not (claude / "settings.json.memvault-backup").exists()  # nothing to back up
    assert list((memvault_home / "state" / "installs").iterdir())

    result = run("uninstall")
    assert result.exit_code == 0, result.output
    assert "delete" in result.output
    assert not claude.exists()  # the file, the skill and the folders install created are gone
    assert not list((memvault_home / "state" / "installs").iterdir())


def test_install_says_in_one_line_that_reflection_uses_claude_code_and_how_to_turn_it_off(
    claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMVAULT_MINER")  # the default: auto
    lines = [line for line in run("install").output.splitlines() if line.startswith("reflection")]
    assert len(lines) == 1
    assert "with your Claude Code (`claude -p`, model haiku, at most 20 calls a day)" in lines[0]
    assert "to keep it offline, set reflection.miner: offline in" in lines[0]


def test_reinstall_is_a_no_op_and_uninstall_restores_odd_formatting_byte_for_byte(claude: Path) -> None:
    claude.mkdir()
    settings_file = claude / "settings.json"
    settings_file.write_bytes(ODD.encode("utf-8"))
    assert run("install").exit_code == 0
    installed = settings_file.read_bytes()
    data = json.loads(installed)
    assert data["hooks"]["Stop"][0] == THEIRS_STOP and data["permissions"] == {"allow": ["Bash(ls *)"]}
    assert list(data) == ["model", "hooks", "permissions"]
    assert (claude / "settings.json.memvault-backup").read_bytes() == ODD.encode("utf-8")
    tree = snapshot(claude)

    again = run("install")
    assert again.exit_code == 0 and "already installed" in again.output
    assert snapshot(claude) == tree

    result = run("uninstall")
    assert result.exit_code == 0 and "byte for byte" in result.output
    assert settings_file.read_bytes() == ODD.encode("utf-8")
    assert not (claude / "settings.json.memvault-backup").exists()
    assert not (claude / "skills" / "memvault").exists()


def test_uninstall_keeps_changes_made_after_install(claude: Path) -> None:
    claude.mkdir()
    settings_file = claude / "settings.json"
    settings_file.write_text(ODD, encoding="utf-8")
    run("install")
    data = read_json(settings_file)
    data["theme"] = "dark"
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "added-later"}]})
    settings_file.write_text(json.dumps(data, indent=2), encoding="utf-8")

    result = run("uninstall", "--json")
    report = json.loads(result.output)
    assert report["settings_action"] == "rewritten" and set(report["removed_hooks"]) == set(SCRIPTS)
    after = read_json(settings_file)
    assert after["theme"] == "dark" and list(after) == ["model", "hooks", "permissions", "theme"]
    assert after["hooks"] == {
        "Stop": [THEIRS_STOP, {"hooks": [{"type": "command", "command": "added-later"}]}],
        "SessionStart": [THEIRS_START],
    }
    assert report["backup_kept"] == str(claude / "settings.json.memvault-backup")
    assert Path(report["backup_kept"]).read_text(encoding="utf-8") == ODD


def test_a_moved_environment_replaces_the_old_hooks(claude: Path) -> None:
    claude.mkdir()
    old = cs.merge({"hooks": {"Stop": [THEIRS_STOP]}}, cs.hook_entries(OLD_PY, OLD_HOOKS)).data
    (claude / "settings.json").write_text(json.dumps(old), encoding="utf-8")
    report = json.loads(run("install", "--json").output)
    assert set(report["hooks"]["updated"]) == set(SCRIPTS)
    settings = read_json(claude / "settings.json")
    for event in SCRIPTS:
        assert [h["command"] for h in ours(settings, event)] == [os.path.abspath(sys.executable)]
    assert settings["hooks"]["Stop"][0] == THEIRS_STOP


def test_invalid_json_is_refused_and_nothing_is_written(claude: Path, memvault_home: Path) -> None:
    claude.mkdir()
    (claude / "settings.json").write_text('{"hooks": {"Stop": [}', encoding="utf-8")
    tree = snapshot(claude)
    result = CliRunner().invoke(cli, ["install"])
    assert result.exit_code == 1
    assert "not valid JSON" in result.output and "nothing was written" in result.output
    assert snapshot(claude) == tree
    assert not (memvault_home / "state" / "installs").exists()


def test_dry_run_writes_nothing(claude: Path, memvault_home: Path, vault_dir: Path) -> None:
    claude.mkdir()
    (claude / "settings.json").write_text(ODD, encoding="utf-8")
    (vault_dir / "MemoryVault" / "personal-projects").rename(vault_dir / "projects-elsewhere")  # one to create
    before_claude, before_vault = snapshot(claude), everything(vault_dir)
    result = run("install", "--dry-run", "--vault", str(vault_dir))
    assert result.exit_code == 0
    assert "would add hook SessionStart" in result.output and "nothing was written" in result.output
    assert "would record the vault" in result.output
    assert "would create MemoryVault/personal-projects/" in result.output
    assert snapshot(claude) == before_claude and everything(vault_dir) == before_vault
    assert not memvault_home.exists() or not any(p.is_file() for p in memvault_home.rglob("*"))

    run("install")
    installed = snapshot(claude)
    result = run("uninstall", "--dry-run")
    assert "would remove hook Stop" in result.output
    assert snapshot(claude) == installed


def test_vault_option_records_the_vault_and_creates_the_folders(claude: Path, memvault_home: Path, tmp_path) -> None:
    vault = tmp_path / "Obsidian"
    vault.mkdir()
    report = json.loads(run("install", "--vault", str(vault), "--json").output)
    assert report["vault"] == str(vault) and report["config"] == str(memvault_home / "config.yaml")
    assert "MemoryVault/personal-private/_inbox" in report["created_folders"]
    assert (vault / "MemoryVault" / "personal-private" / "_inbox").is_dir()
    assert f"root: {vault}" in (memvault_home / "config.yaml").read_text(encoding="utf-8")
    assert "memvault init" not in run("install").output  # configured now
    run("uninstall")
    assert (vault / "MemoryVault" / "personal-private" / "_inbox").is_dir()  # the vault stays
    assert f"root: {vault}" in (memvault_home / "config.yaml").read_text(encoding="utf-8")  # and the config


def test_missing_vault_folder_is_refused(claude: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["install", "--vault", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "create the Obsidian vault first" in result.output
    assert not claude.exists()


def test_project_scope_writes_into_the_project(claude: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert run("install", "--scope", "project", "--project", str(project)).exit_code == 0
    assert cs.installed_events(read_json(project / ".claude" / "settings.json")) == SCRIPTS
    assert skillfile.is_our_skill(project / ".claude" / "skills" / "memvault" / "SKILL.md")
    assert not claude.exists()
    assert run("uninstall", "--scope", "project", "--project", str(project)).exit_code == 0
    assert not (project / ".claude").exists()
    assert project.is_dir()


def test_plugin_route_enabled_as_well_is_warned_about(claude: Path) -> None:
    claude.mkdir()
    (claude / "settings.json").write_text('{"enabledPlugins": {"memvault@memvault": true}}', encoding="utf-8")
    report = json.loads(run("install", "--json").output)
    assert any("memvault@memvault" in w and "both run" in w for w in report["warnings"])


# ---- the skill -------------------------------------------------------------------------------------


def test_rendered_skill_names_itself_and_runs_this_installs_memvault(claude: Path) -> None:
    run("install", "--skill-name", "mem")
    text = (claude / "skills" / "mem" / "SKILL.md").read_text(encoding="utf-8")
    meta = notes.parse(text).meta
    command = skillfile.memvault_command(PurePosixPath(os.path.abspath(sys.executable)))
    assert Path(command.split()[0]).is_absolute()
    assert meta["name"] == "mem" and meta["allowed-tools"] == f"Bash({command} *)"
    assert meta["metadata"]["managed-by"] == "memvault"
    assert f"`{command} $ARGUMENTS`" in text and "/mem recall QUERY" in text and "{{" not in text
    assert len(meta["description"]) + len(meta["when_to_use"]) < 1536  # the listing cuts there
    assert len(text) < 16_000  # well under the 5,000 tokens that survive compaction


def test_the_skill_documents_every_command() -> None:
    text = skillfile.render_skill("memvault", "mv")
    missing = [name for name in cli.commands if f"mv {name}" not in text]  # type: ignore[attr-defined]
    assert not missing, f"document these in memvault/skill/SKILL.md: {missing}"
    for name in ("init", "save", "evolve", "recall", "search", "list", "show", "reflect", "review", "inbox"):
        assert f"mv {name}" in text or f"`{name}`" in text
    for name in ("promote idea", "gc", "reindex", "health", "inspect", "undo", "index-skills"):
        assert f"mv {name}" in text
    assert "mv import-claude-memory" in text and "mv install" in text and "mv uninstall" in text
    assert "mv serve" in text


def test_the_plugin_copy_is_the_template_with_the_default_name() -> None:
    plugin_copy = (REPO / "skills" / "memvault" / "SKILL.md").read_text(encoding="utf-8")
    assert plugin_copy == skillfile.render_skill(skillfile.DEFAULT_SKILL, "memvault"), (
        'regenerate: python -c "from memvault.claude import skillfile; from pathlib import Path; '
        "Path('skills/memvault/SKILL.md').write_text(skillfile.render_skill('memvault', 'memvault'))\""
    )


def test_skill_name_memory_warns_about_the_builtin(claude: Path) -> None:
    result = CliRunner().invoke(cli, ["install", "--skill-name", "memory"])
    assert result.exit_code == 0
    assert "clashes with Claude Code's built-in /memory" in result.stderr
    assert skillfile.is_our_skill(claude / "skills" / "memory" / "SKILL.md")


def test_a_skill_folder_that_is_not_ours_is_refused(claude: Path) -> None:
    foreign = claude / "skills" / "memvault" / "SKILL.md"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("---\nname: memvault\ndescription: someone else's\n---\nbody\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["install"])
    assert result.exit_code == 1 and "not written by memvault" in result.output
    assert not (claude / "settings.json").exists()
    assert foreign.read_text(encoding="utf-8").endswith("body\n")
    assert CliRunner().invoke(cli, ["install", "--skill-name", "bad name"]).exit_code == 2


def test_renaming_the_skill_removes_the_earlier_one_and_uninstall_finds_ours_by_marker(claude: Path) -> None:
    run("install")
    run("install", "--skill-name", "mem")
    assert not (claude / "skills" / "memvault").exists()
    assert (claude / "skills" / "mem" / "SKILL.md").is_file()
    extra = claude / "skills" / "mem" / "notes.txt"
    extra.write_text("mine", encoding="utf-8")
    run("uninstall")
    assert not (claude / "skills" / "mem" / "SKILL.md").exists() and extra.read_text(encoding="utf-8") == "mine"


# ---- end to end ------------------------------------------------------------------------------------


def test_the_installed_session_start_command_runs_as_written(claude: Path, memvault_home: Path, vault_dir) -> None:
    config = memvault_home / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("embedding:\n  warm_service: false\n", encoding="utf-8")  # no model in this test
    assert run("install", "--vault", str(vault_dir)).exit_code == 0
    from memvault import open_vault

    open_vault(vault_dir).reindex(vectors="none")
    [handler] = ours(read_json(claude / "settings.json"), "SessionStart")
    event = {"session_id": "e2e-1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(vault_dir)}
    done = subprocess.run(
        [handler["command"], *handler["args"]],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=vault_dir,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert output["hookSpecificOutput"]["additionalContext"]
