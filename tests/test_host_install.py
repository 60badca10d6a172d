"""`memvault install|uninstall --host codex|gemini` and `--mcp CLIENT` on temp folders: merged, undone byte for byte."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path, PureWindowsPath
from typing import Any

import pytest
from click.testing import CliRunner

from memvault.cli import cli
from memvault.hosts import codex_toml, spec
from memvault.hosts import install as hi

from .conftest import REPO, home_env, snapshot

THEIRS = {"type": "command", "command": "/usr/local/bin/other-tool --hook", "timeout": 30}
CODEX_HOOKS = '{\n    "description": "team hooks",\n  "hooks": {"Stop": [{"hooks": [THEIRS]}]}\n}'.replace(
    "THEIRS", json.dumps(THEIRS)
)
CODEX_CONFIG = 'model = "o4"   # mine\n\n[mcp_servers.other]\ncommand = "other"\n'
GEMINI_SETTINGS = (
    '{\r\n  "theme": "Dracula",\r\n  "hooks": {"BeforeAgent": [{"hooks": [THEIRS]}]},\r\n'
    '  "mcpServers": {"x": {"command": "x"}}\r\n}'
).replace("THEIRS", json.dumps(THEIRS))


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Private Codex, Gemini, Claude, Cursor folders; HOME elsewhere."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gem"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return {"codex": tmp_path / "codex", "gemini": tmp_path / "gem" / ".gemini", "home": home}


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def ours(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [h for g in groups for h in g["hooks"] if spec.our_hook(h)]
        for event, groups in data.get("hooks", {}).items()
        if any(spec.our_hook(h) for g in groups for h in g["hooks"])
    }


def test_codex_install_merges_beside_other_hooks_trusts_only_when_asked_and_uninstalls_byte_for_byte(homes) -> None:
    codex = homes["codex"]
    codex.mkdir()
    (codex / "hooks.json").write_text(CODEX_HOOKS)
    (codex / "config.toml").write_text(CODEX_CONFIG)
    before = snapshot(codex)

    result = run("install", "--host", "codex", "--no-trust-hooks")
    assert "skips hooks until they are trusted" in result.output
    assert (codex / "config.toml").read_text() == CODEX_CONFIG  # no consent, no change
    data = json.loads((codex / "hooks.json").read_text())
    assert data["description"] == "team hooks" and data["hooks"]["Stop"][0]["hooks"] == [THEIRS]
    mine = ours(data)
    assert set(mine) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    assert [h["timeout"] for h in mine["SessionEnd"]] == [3]  # seconds; Codex clamps SessionEnd to 3
    words = shlex.split(mine["UserPromptSubmit"][0]["command"])
    assert words == [sys.executable, "-S", str(REPO / "memvault/hooks/host_event.py"), "codex", "UserPromptSubmit"]
    assert "args" not in mine["UserPromptSubmit"][0]  # Codex ignores `args`

    run("install", "--host", "codex", "--trust-hooks")
    config = (codex / "config.toml").read_text()
    assert config.startswith(CODEX_CONFIG)
    state = codex_toml.parse(config, "config.toml")["hooks"]["state"]
    hooks_file = str(codex / "hooks.json")
    assert set(state) == {f"{hooks_file}:{e}:{1 if e == 'stop' else 0}:0" for e in
                          ("session_start", "user_prompt_submit", "stop", "session_end")}  # fmt: skip
    assert all(v["trusted_hash"].startswith("sha256:") and len(v["trusted_hash"]) == 71 for v in state.values())
    tree = snapshot(codex)
    assert "already up to date" in run("install", "--host", "codex").output  # consent remembered, nothing new
    assert snapshot(codex) == tree

    result = run("uninstall", "--host", "codex")
    assert "byte for byte" in result.output
    assert snapshot(codex) == before  # hooks.json and config.toml as they were; backups removed


def test_gemini_install_writes_milliseconds_keeps_crlf_and_other_keys_and_uninstalls_byte_for_byte(homes) -> None:
    gemini = homes["gemini"]
    gemini.mkdir(parents=True)
    (gemini / "settings.json").write_bytes(GEMINI_SETTINGS.encode())
    run("install", "--host", "gemini")
    raw = (gemini / "settings.json").read_bytes()
    assert b"\r\n" in raw and b'"theme": "Dracula"' in raw
    data = json.loads(raw)
    mine = ours(data)
    assert set(mine) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}
    assert data["hooks"]["BeforeAgent"][0]["hooks"] == [THEIRS] and len(data["hooks"]["BeforeAgent"]) == 2
    assert mine["BeforeAgent"][0]["timeout"] == 5000 and mine["BeforeAgent"][0]["name"] == "memvault-BeforeAgent"
    assert (gemini / "settings.json.memvault-backup").read_bytes() == GEMINI_SETTINGS.encode()

    run("install", "--mcp", "gemini", "--approve-tools")
    server = json.loads((gemini / "settings.json").read_text())["mcpServers"]["memvault"]
    assert server == {"command": sys.executable, "args": ["-m", "memvault", "mcp"], "timeout": 60000, "trust": True,
                      "env": {"MEMVAULT_HOME": os.environ["MEMVAULT_HOME"]}}  # fmt: skip
    run("uninstall", "--host", "gemini")
    left = json.loads((gemini / "settings.json").read_text())
    assert not ours(left) and "memvault" in left["mcpServers"]  # the MCP registration is a separate step
    run("uninstall", "--mcp", "gemini")
    assert (gemini / "settings.json").read_bytes() == GEMINI_SETTINGS.encode()
    assert not (gemini / "settings.json.memvault-backup").exists()


def test_changes_made_after_install_are_kept_by_uninstall(homes) -> None:
    run("install", "--host", "gemini")
    settings = homes["gemini"] / "settings.json"
    data = json.loads(settings.read_text())
    data["theme"] = "GitHub"
    settings.write_text(json.dumps(data))
    run("uninstall", "--host", "gemini")
    assert json.loads(settings.read_text()) == {"theme": "GitHub"}


def test_a_file_install_created_is_deleted_again(homes) -> None:
    run("install", "--host", "codex", "--trust-hooks")
    assert (homes["codex"] / "hooks.json").exists() and (homes["codex"] / "config.toml").exists()
    run("uninstall", "--host", "codex")
    assert not (homes["codex"] / "hooks.json").exists() and not (homes["codex"] / "config.toml").exists()


@pytest.mark.parametrize("client", ["codex", "cursor", "claude-desktop", "claude-code"])
def test_mcp_registration_is_idempotent_and_undone_byte_for_byte(client: str, homes) -> None:
    target = hi.MCP_CLIENTS[client]()
    target.parent.mkdir(parents=True, exist_ok=True)
    original = CODEX_CONFIG if client == "codex" else '{"mcpServers": {"other": {"command": "x"}}, "a": 1}\n'
    target.write_text(original)
    run("install", "--mcp", client, "--approve-tools")
    text = target.read_text()
    if client == "codex":
        server = codex_toml.parse(text, "config.toml")["mcp_servers"]
        assert server["memvault"]["args"] == ["-m", "memvault", "mcp"] and "other" in server
        assert server["memvault"]["default_tools_approval_mode"] == "approve"
    else:
        assert json.loads(text)["mcpServers"]["memvault"]["command"] == sys.executable
    assert "already up to date" in run("install", "--mcp", client).output
    run("uninstall", "--mcp", client)
    assert target.read_text() == original


def test_a_memvault_server_someone_else_wrote_is_refused(homes) -> None:
    target = hi.MCP_CLIENTS["cursor"]()
    target.parent.mkdir(parents=True)
    target.write_text('{"mcpServers": {"memvault": {"url": "http://example.invalid"}}}')
    result = CliRunner().invoke(cli, ["install", "--mcp", "cursor"])
    assert result.exit_code == 1 and "did not write" in result.output


def test_host_all_connects_only_the_agents_found_here(homes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    homes["gemini"].mkdir(parents=True)
    result = run("install", "--host", "all", "--json")
    hosts = [r["host"] for r in json.loads(result.output)["results"]]
    assert hosts == ["claude-code", "gemini"]  # no ~/.codex and no codex on PATH


def test_windows_commands_are_quoted_for_each_hosts_shell_and_recognised() -> None:
    python = PureWindowsPath(r"C:\Program Files\Python312\python.exe")
    hooks = PureWindowsPath(r"C:\Users\Ann O'Neil\venv\Lib\site-packages\memvault\hooks")
    gemini = hi.hook_entries("gemini", python, hooks)["BeforeAgent"]["hooks"][0]["command"]
    assert gemini.startswith("& 'C:\\Program Files\\Python312\\python.exe' ") and "Ann O''Neil" in gemini
    codex = hi.hook_entries("codex", python, hooks)["Stop"]["hooks"][0]["command"]
    assert codex.startswith('"C:\\Program Files\\Python312\\python.exe" ')
    assert spec.our_hook({"command": gemini}) == ("gemini", "BeforeAgent")
    assert spec.our_hook({"command": codex}) == ("codex", "Stop")


def test_the_installed_codex_command_runs_as_written_through_a_shell(homes, vault_dir: Path) -> None:
    run("install", "--host", "codex", "--no-trust-hooks", "--vault", str(vault_dir))
    command = json.loads((homes["codex"] / "hooks.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    event = {"session_id": "s1", "source": "startup", "cwd": str(vault_dir), "transcript_path": "/nonexistent.jsonl"}
    result = subprocess.run(["sh", "-c", command], input=json.dumps(event), capture_output=True, text=True, timeout=60)
    out = json.loads(result.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Core dev flow" in out["hookSpecificOutput"]["additionalContext"]


def test_codex_hooks_switched_off_are_switched_on_only_with_consent_and_back_off_at_uninstall(homes) -> None:
    codex = homes["codex"]
    codex.mkdir()
    original = 'model = "o4"\n\n[features]\n# off while I test something\nhooks = false   # mine\nplugins = false\n'
    (codex / "config.toml").write_text(original)
    result = run("install", "--host", "codex", "--no-trust-hooks", "--no-enable-hooks")
    assert "switched off" in result.output and (codex / "config.toml").read_text() == original
    run("install", "--host", "codex", "--no-trust-hooks", "--enable-hooks")
    text = (codex / "config.toml").read_text()
    assert "hooks = true   # mine" in text and "# off while I test something" in text and "plugins = false" in text
    assert codex_toml.parse(text, "config.toml")["features"] == {"hooks": True, "plugins": False}
    run("uninstall", "--host", "codex")
    assert (codex / "config.toml").read_text() == original


# ---- a whole machine: the guide's steps, every registration removed, interpreters checked ---------------


def machine_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A throwaway HOME with every agent's and memvault's folders in their default places under it."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return home_env(home, tmp_path / "run", TMPDIR=str(tmp_path), **extra)


def memvault_cmd(python: str, env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """`memvault ARGS` run for real by `python`, under umask 022 (a common default)."""
    proc = subprocess.run(
        [python, "-m", "memvault", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(0o022),  # a plain umask, no threads involved
    )
    if ok:
        assert proc.returncode == 0, f"memvault {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def fake_environment(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A real venv (no pip, nothing installed) that runs this checkout's memvault: the environment that
    install.sh would make, small enough to create in a test. Returns its folder and PYTHONPATH for it."""
    import sysconfig

    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    memvault = venv / "bin" / "memvault"
    memvault.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m memvault "$@"\n')
    memvault.chmod(0o755)
    return venv, {"PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])}


GUIDE_STEPS = [  # wiki/how-to/other-agents.md, in its order
    ("install", "--host", "codex", "--trust-hooks"),
    ("install", "--host", "gemini"),
    ("install", "--mcp", "codex", "--approve-tools"),
    ("install", "--mcp", "gemini"),
    ("install", "--mcp", "cursor", "--mcp", "claude-desktop"),
]


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_following_the_other_agents_guide_ends_healthy(tmp_path: Path, vault_dir: Path) -> None:
    env = machine_env(tmp_path)
    home = Path(env["HOME"])
    for folder in (".codex", ".gemini", ".cursor", ".config/Claude"):
        (home / folder).mkdir(parents=True)  # the agents are installed here
    memvault_cmd(sys.executable, env, "install", "--vault", str(vault_dir))  # what install.sh runs
    for step in GUIDE_STEPS:
        memvault_cmd(sys.executable, env, *step)
    records = sorted((home / ".local/state/memvault/installs").iterdir())
    assert len(records) == 6  # Claude Code's settings, hooks.json, config.toml, Gemini's, Cursor's, Claude Desktop's
    assert [r.name for r in records if r.stat().st_mode & 0o077] == []
    memvault_cmd(sys.executable, env, "reindex")
    health = memvault_cmd(sys.executable, env, "health", "--json", ok=False)
    assert json.loads(health.stdout)["problems"] == [] and health.returncode == 0, health.stdout


@pytest.mark.skipif(os.name != "posix", reason="the environment is a POSIX venv")
def test_uninstall_all_removes_every_registration_and_health_names_a_missing_interpreter(
    tmp_path: Path, vault_dir: Path
) -> None:
    venv, extra = fake_environment(tmp_path)
    env = machine_env(tmp_path, **extra)
    home = Path(env["HOME"])
    python = str(venv / "bin" / "python")
    for folder in (".codex", ".gemini", ".cursor", ".config/Claude"):
        (home / folder).mkdir(parents=True)
    (home / ".gemini/settings.json").write_bytes(GEMINI_SETTINGS.encode())
    memvault_cmd(python, env, "install", "--vault", str(vault_dir))
    for step in GUIDE_STEPS:
        memvault_cmd(python, env, *step)
    memvault_cmd(python, env, "install", "--mcp", "claude-code")
    project = tmp_path / "project"
    project.mkdir()
    memvault_cmd(python, env, "install", "--scope", "project", "--project", str(project))

    def mentions() -> list[str]:
        """Every file outside the state folder that names the environment."""
        found = []
        for path in [*home.rglob("*"), *project.rglob("*")]:
            if path.is_file() and ".local/state" not in str(path) and str(venv).encode() in path.read_bytes():
                found.append(str(path.relative_to(tmp_path)))
        return sorted(found)

    registered = mentions()
    assert len(registered) >= 8, registered  # hooks, trust, MCP servers, Claude's settings and skills

    # The environment goes away (as install.sh --uninstall removed it before it undid these): health says so.
    moved = tmp_path / "env-moved"
    venv.rename(moved)
    memvault_cmd(sys.executable, env, "reindex")
    health = json.loads(memvault_cmd(sys.executable, env, "health", "--json", ok=False).stdout)
    missing = [p for p in health["problems"] if python in p]
    assert missing, health["problems"]
    for name in ("settings.json", "hooks.json", "config.toml", "mcp.json", "claude_desktop_config.json"):
        assert any(name in p for p in missing), (name, missing)
    moved.rename(venv)

    dry = memvault_cmd(python, env, "uninstall", "--all", "--dry-run").stdout
    assert mentions() == registered  # a dry run writes nothing
    for path in registered:
        if "/skills/" not in path:
            assert path.split("/", 1)[1] in dry, (path, dry)

    memvault_cmd(python, env, "uninstall", "--all")
    assert mentions() == []
    assert (home / ".gemini/settings.json").read_bytes() == GEMINI_SETTINGS.encode()
    assert list((home / ".local/state/memvault/installs").iterdir()) == []
    health = json.loads(memvault_cmd(sys.executable, env, "health", "--json", ok=False).stdout)
    assert not [p for p in health["problems"] if "interpreter" in p]
