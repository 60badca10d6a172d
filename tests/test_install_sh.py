"""install.sh for real in a throwaway HOME: environment, link, hooks merged beside another tool's, re-run, uninstall."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, home_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="install.sh is for Linux and macOS (install.ps1 on Windows)"),
]

# Another tool's hooks, formatted the way no JSON library writes them: uninstall must give these bytes back.
OTHER_TOOL = (
    '{\n\t"model":   "opus",\n\t"hooks": {\n\t\t"UserPromptSubmit": [ { "hooks": [ {"type": "command",'
    ' "command": "/opt/other/guard.sh", "timeout": 3} ] } ],\n'
    '\t\t"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/other/pre.sh"}]}]\n'
    '\t},\n\t"permissions": {"allow": ["Bash(ls:*)"]}\n}\n'
)


def _env(home: Path) -> dict[str, str]:
    env = home_env(home, home.parent / f"{home.name}-run", drop=("PYTHONPATH",))
    # The real user's pip config (a registry mirror, certificates) still applies with the throwaway HOME.
    for config in (Path.home() / ".config/pip/pip.conf", Path.home() / ".pip/pip.conf"):
        if "PIP_CONFIG_FILE" not in env and config.is_file():
            env["PIP_CONFIG_FILE"] = str(config)
    return env


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["bash", str(REPO / "install.sh"), *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"install.sh {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _start_service(home: Path) -> int:
    """Start the user's warm embedding service (as SessionStart would) and return its pid."""
    pytest.importorskip("sentence_transformers")
    started = subprocess.run(
        [sys.executable, "-m", "memvault", "serve", "--background", "--json"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr
    return int(json.loads(started.stdout)["pid"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:  # an exited process nobody has reaped yet (a container's init may never) is not running
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _exits(pid: int, timeout: float = 30) -> bool:
    """Whether the process is gone within `timeout` s (a stopped service releases its lock, then unloads torch)."""
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _alive(pid)


def _our_handlers(settings: dict) -> dict[str, dict]:
    found = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if "/memvault/hooks/" in " ".join(handler.get("args", [])):
                    found[event] = handler
    return found


def test_install_sh_merges_into_existing_settings_is_idempotent_and_uninstalls_byte_for_byte(tmp_path: Path) -> None:
    home = tmp_path / "home"
    claude = home / ".claude"
    claude.mkdir(parents=True)
    settings_file = claude / "settings.json"
    settings_file.write_bytes(OTHER_TOOL.encode())
    vault = tmp_path / "vault"
    vault.mkdir()
    venv = home / ".local/share/memvault/venv"
    link = home / ".local/bin/memvault"

    first = _run(home, "--no-python-deps", "--no-demo", "--vault", str(vault))

    # A fresh environment with memvault in it, linked from ~/.local/bin.
    assert (venv / "bin/python").exists()
    assert link.is_symlink() and Path(os.readlink(link)) == venv / "bin/memvault"
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, env=_env(home))
    assert version.returncode == 0 and "0.1.0" in version.stdout
    # `memvault mcp` works from the installed environment (the MCP SDK comes with it): it answers a handshake.
    client = {"name": "test", "version": "0"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    served = subprocess.run([str(link), "mcp"], input=json.dumps(hello) + "\n", capture_output=True, text=True,
                            env=_env(home), timeout=120)  # fmt: skip
    assert json.loads(served.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "memvault", served.stderr
    # Our five hooks, exec form with the venv's interpreter; the other tool's hooks and keys kept.
    after = json.loads(settings_file.read_text())
    ours = _our_handlers(after)
    assert set(ours) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "Notification"}
    for handler in ours.values():
        assert handler["command"] == str(venv / "bin/python")
        assert Path(handler["args"][-1]).is_file()
    before = json.loads(OTHER_TOOL)
    assert after["model"] == "opus" and after["permissions"] == before["permissions"]
    assert before["hooks"]["UserPromptSubmit"][0] in after["hooks"]["UserPromptSubmit"]
    assert after["hooks"]["PreToolUse"] == before["hooks"]["PreToolUse"]
    skill = claude / "skills/memvault/SKILL.md"
    assert skill.is_file()
    assert (vault / "MemoryVault").is_dir()
    assert "memvault install" in first.stdout and "Next steps" in first.stdout

    # A second run changes nothing.
    merged, skill_bytes = settings_file.read_bytes(), skill.read_bytes()
    _run(home, "--no-python-deps", "--no-demo", "--vault", str(vault))
    assert settings_file.read_bytes() == merged
    assert skill.read_bytes() == skill_bytes
    assert link.is_symlink()

    # A warm embedding service runs for this user (started here by the test's own environment, which has the
    # embedding stack); uninstall stops it rather than leave it running from a removed environment.
    service = _start_service(home)

    # Uninstall: the original bytes back, skill, environment and link gone, vault and config kept.
    out = _run(home, "--uninstall").stdout
    assert "stopping the embedding service: stopped" in out
    assert _exits(service)
    assert settings_file.read_bytes() == OTHER_TOOL.encode()
    assert not (claude / "skills/memvault").exists()
    assert not venv.exists()
    assert not link.exists() and not link.is_symlink()
    assert (vault / "MemoryVault").is_dir()
    config = home / ".config/memvault/config.yaml"
    assert config.is_file() and str(config) in out


def test_install_sh_uninstall_without_an_environment_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        ["bash", str(REPO / "install.sh"), "--uninstall", "--no-such-option"],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0  # no environment yet: nothing to pass it to, nothing removed
    assert "nothing to uninstall" in proc.stdout
    assert not (home / ".claude").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vault", "MISSING"], "no such folder"),
        (["--vault=MISSING"], "no such folder"),
        (["--skill-name", "Not A Name"], "--skill-name"),
        (["--scope", "global"], "--scope global"),
        (["--no-such-option"], "unknown option --no-such-option"),
        (["--vault"], "--vault needs a value"),
    ],
)
def test_install_sh_checks_its_arguments_before_installing_anything(
    tmp_path: Path, args: list[str], message: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    args = [a.replace("MISSING", str(tmp_path / "no-such-vault")) for a in args]
    proc = subprocess.run(
        ["bash", str(REPO / "install.sh"), "--no-python-deps", "--no-demo", *args],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert sorted(p.name for p in home.iterdir()) == []  # no environment, no link, no settings: nothing at all


def test_install_sh_help_lists_its_own_options() -> None:
    proc = subprocess.run(["bash", str(REPO / "install.sh"), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    for option in ("--no-python-deps", "--no-demo", "--uninstall", "--vault"):
        assert option in proc.stdout


def test_install_sh_uninstall_removes_every_agents_registration_says_each_step_and_is_quick(
    tmp_path: Path, vault_dir: Path
) -> None:
    """Codex, Gemini and MCP registrations made from install.sh's environment are gone with it (before, they
    were left pointing at the removed environment: Gemini's hook then failed with exit 127 on every prompt)."""
    from tests.test_host_install import GUIDE_STEPS, fake_environment, machine_env, memvault_cmd

    venv, extra = fake_environment(tmp_path)
    env = machine_env(tmp_path, MEMVAULT_VENV=str(venv), **extra)
    home = Path(env["HOME"])
    for folder in (".codex", ".gemini", ".cursor", ".config/Claude"):
        (home / folder).mkdir(parents=True)
    python = str(venv / "bin/python")
    memvault_cmd(python, env, "install", "--vault", str(vault_dir))
    for step in GUIDE_STEPS:
        memvault_cmd(python, env, *step)
    named = [p for p in home.rglob("*") if p.is_file() and str(venv).encode() in p.read_bytes()]
    assert len(named) >= 6

    def uninstall(*args: str) -> tuple[str, float]:
        start = time.monotonic()
        proc = subprocess.run(["bash", str(REPO / "install.sh"), "--uninstall", *args], env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout, time.monotonic() - start

    dry, _ = uninstall("--dry-run")
    for path in named:
        if not any(part in str(path) for part in ("/skills/", "/.local/state/", ".memvault-backup")):
            assert str(path) in dry, (path, dry)
    assert venv.is_dir() and [p for p in named if str(venv).encode() in p.read_bytes()] == named

    out, seconds = uninstall()
    for step in ("==> removing memvault's hooks", "==> stopping the embedding service", "==> removed the environment"):
        assert step in out, out
    assert not venv.exists()
    left = [p for p in home.rglob("*") if p.is_file() and str(venv).encode() in p.read_bytes()]
    assert left == []
    assert seconds < 30, out
    deadline = time.monotonic() + 30  # the removed environment's files are deleted in the background
    while list(tmp_path.glob(".memvault-removed-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.glob(".memvault-removed-*")) == []
