"""The repository as a Claude Code plugin: manifests, hooks.json, bin/memvault, the first-run venv, install.ps1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.claude import plugin_setup, settings
from tests.conftest import REPO

KEBAB = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
HOOK_EVENTS = {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "Notification"}


def _json(rel: str) -> dict:
    return json.loads((REPO / rel).read_text(encoding="utf-8"))


def _pyproject_version() -> str:
    match = re.search(r'^version\s*=\s*"([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert match
    return match.group(1)


# ---- manifests ---------------------------------------------------------------------------------


def test_plugin_manifest_has_the_contract_fields_and_the_package_version() -> None:
    manifest = _json(".claude-plugin/plugin.json")
    assert KEBAB.match(manifest["name"]) and manifest["name"] == "memvault"
    assert manifest["version"] == _pyproject_version()
    assert manifest["description"] and manifest["author"]["name"]
    assert manifest["license"] == "MIT"
    assert "repository" not in manifest or manifest["repository"].startswith("https://")  # set when published
    assert isinstance(manifest["keywords"], list) and all(isinstance(k, str) for k in manifest["keywords"])
    assert sorted(p.name for p in (REPO / ".claude-plugin").iterdir()) == ["marketplace.json", "plugin.json"]


def test_marketplace_lists_this_repository_as_its_one_plugin() -> None:
    market = _json(".claude-plugin/marketplace.json")
    assert KEBAB.match(market["name"])
    assert market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == _json(".claude-plugin/plugin.json")["name"]
    assert entry["source"] == "./"
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()
    assert entry.get("version", _pyproject_version()) == _pyproject_version()


def test_plugin_skills_are_where_claude_code_looks_for_them() -> None:
    skills = sorted((REPO / "skills").glob("*/SKILL.md"))
    assert skills, "the plugin has no skills/<name>/SKILL.md"
    for skill in skills:
        assert skill.read_text(encoding="utf-8").startswith("---\n")


# ---- hooks.json --------------------------------------------------------------------------------


def _plugin_hooks() -> dict:
    return _json("hooks/hooks.json")


def test_hooks_json_is_exec_form_with_scripts_that_exist_in_the_plugin() -> None:
    data = _plugin_hooks()
    assert set(data) <= {"description", "hooks"} and data["description"]
    assert set(data["hooks"]) == HOOK_EVENTS
    for groups in data["hooks"].values():
        [group] = groups
        [handler] = group["hooks"]
        assert handler["type"] == "command" and handler["command"] == "python3"
        flag, script = handler["args"]
        assert flag == "-S"  # as `memvault install` writes it: the launcher runs the site set-up when needed
        assert script.startswith("${CLAUDE_PLUGIN_ROOT}/")
        assert (REPO / script.removeprefix("${CLAUDE_PLUGIN_ROOT}/")).is_file()
        assert settings.our_script(handler) is not None  # `memvault install` recognises it as ours


def test_hooks_json_matches_what_memvault_install_writes() -> None:
    """Same events, scripts, matchers and timeouts as the settings.json route (settings.HOOKS)."""
    data = _plugin_hooks()["hooks"]
    plugin = {
        event: (Path(g["hooks"][0]["args"][-1]).stem, g.get("matcher"), g["hooks"][0]["timeout"])
        for event, [g] in data.items()
    }
    installed = {spec.event: (spec.script, spec.matcher, spec.timeout) for spec in settings.HOOKS}
    assert plugin == installed
    entries = settings.hook_entries(Path("/venv/bin/python"), Path("/x/memvault/hooks"))
    for event, group in entries.items():
        plugin_group = dict(data[event][0])
        handler = {**plugin_group.pop("hooks")[0], "command": "/venv/bin/python"}
        handler["args"] = [a.replace("${CLAUDE_PLUGIN_ROOT}", "/x") for a in handler["args"]]
        assert {**plugin_group, "hooks": [handler]} == group


def test_the_dependency_reader_agrees_with_a_toml_parser() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps, extra = plugin_setup.requirements(REPO)
    assert deps == project["dependencies"]
    assert extra == project["optional-dependencies"]["embeddings"]


# ---- the first-run install (real hook processes) -------------------------------------------------


@pytest.fixture
def bare_python(tmp_path: Path) -> Path:
    """A real Python with none of memvault's dependencies: what `python3` is on a fresh machine."""
    venv = tmp_path / "bare"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)  # type: ignore[attr-defined]
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    probe = subprocess.run([str(python), "-c", "import yaml, click, platformdirs"], capture_output=True)
    assert probe.returncode != 0, "the bare Python can import memvault's dependencies"
    return python


def _hook(
    python: Path, script: str, data: Path, payload: dict, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "MEMVAULT_PLUGIN_"))}
    environ.pop("PYTHONPATH", None)
    environ.update(CLAUDE_PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(REPO), **env)
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), str(REPO / "memvault" / "hooks" / f"{script}.py")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=environ,
        timeout=30,
        cwd=str(data.parent),
    )
    return proc, time.monotonic() - started


def _wait_for_install(data: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (data / plugin_setup.LOCK).exists():
        assert time.monotonic() < deadline, (data / plugin_setup.LOG).read_text()
        time.sleep(0.2)


def _fake_install(python: Path, exit_code: int = 0, seconds: float = 2.0) -> str:
    """An install command that counts its runs in the data folder (its working directory) instead of installing."""
    code = f"import sys, time; open('runs', 'a').write('x'); time.sleep({seconds}); sys.exit({exit_code})"
    return json.dumps([str(python), "-c", code])


def test_first_session_start_starts_one_background_install_and_says_so(tmp_path: Path, bare_python: Path) -> None:
    data = tmp_path / "plugin-data"
    fake = _fake_install(bare_python)
    first, first_s = _hook(bare_python, "session_start", data, {"session_id": "s1"}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    second, second_s = _hook(bare_python, "session_start", data, {"session_id": "s2"}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    for proc in (first, second):
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == {"systemMessage": plugin_setup.INSTALLING}
    assert min(first_s, second_s) < 0.3, (first_s, second_s)  # the hook never waits for the install
    # The other hooks exit 0 silently until the environment is there.
    for script, payload in (("user_prompt_submit", {"prompt": "how do I run the tests here"}), ("stop", {})):
        proc, _ = _hook(bare_python, script, data, payload)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    _wait_for_install(data, 30)
    assert (data / "runs").read_text() == "x"  # exactly one install ran
    log = (data / plugin_setup.LOG).read_text()
    assert "install started" in log and "install finished" in log
    assert (data / plugin_setup.STAMP).is_file()


def test_a_failed_install_is_logged_and_retried_once_a_day(tmp_path: Path, bare_python: Path) -> None:
    data = tmp_path / "plugin-data"
    fake = _fake_install(bare_python, exit_code=3, seconds=0)
    _hook(bare_python, "session_start", data, {}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    _wait_for_install(data, 30)
    assert "install failed" in (data / plugin_setup.LOG).read_text()
    assert not (data / plugin_setup.STAMP).exists()

    again, _ = _hook(bare_python, "session_start", data, {}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    assert again.returncode == 0
    assert "could not install its dependencies" in json.loads(again.stdout)["systemMessage"]
    time.sleep(0.5)
    assert (data / "runs").read_text() == "x"  # not retried within the day

    failed = json.loads((data / plugin_setup.FAILED).read_text())
    failed["time"] -= plugin_setup.RETRY_S + 60
    (data / plugin_setup.FAILED).write_text(json.dumps(failed))
    later, _ = _hook(bare_python, "session_start", data, {}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    assert json.loads(later.stdout) == {"systemMessage": plugin_setup.INSTALLING}
    _wait_for_install(data, 30)
    assert (data / "runs").read_text() == "xx"


def test_a_lock_left_by_a_crashed_install_is_taken_over(tmp_path: Path, bare_python: Path) -> None:
    data = tmp_path / "plugin-data"
    data.mkdir()
    lock = data / plugin_setup.LOCK
    lock.write_text(json.dumps({"pid": 0, "time": 0}))
    old = time.time() - plugin_setup.LOCK_STALE_S - 60
    os.utime(lock, (old, old))
    proc, _ = _hook(bare_python, "session_start", data, {}, MEMVAULT_PLUGIN_INSTALL_CMD=_fake_install(bare_python))
    assert json.loads(proc.stdout) == {"systemMessage": plugin_setup.INSTALLING}
    _wait_for_install(data, 30)
    assert (data / "runs").read_text() == "x"


@pytest.mark.slow
def test_after_the_real_install_the_hooks_recall_with_the_plugins_own_memvault(
    tmp_path: Path, bare_python: Path, vault_dir: Path
) -> None:
    """A real venv (no embeddings) in CLAUDE_PLUGIN_DATA; the bare Python's hooks then recall from the vault."""
    data = tmp_path / "plugin-data"
    proc, _ = _hook(bare_python, "session_start", data, {}, MEMVAULT_PLUGIN_NO_EMBEDDINGS="1")
    assert json.loads(proc.stdout) == {"systemMessage": plugin_setup.INSTALLING}
    _wait_for_install(data, 300)
    stamp = json.loads((data / plugin_setup.STAMP).read_text())
    assert stamp["embeddings"] is False and stamp["site"]
    assert not any((Path(site) / "memvault").exists() for site in stamp["site"])  # memvault comes from the plugin

    cli = [sys.executable, "-m", "memvault", "--vault", str(vault_dir)]
    subprocess.run([*cli, "init"], check=True, capture_output=True)
    subprocess.run([*cli, "reindex", "--keyword-only"], check=True, capture_output=True)
    start, _ = _hook(bare_python, "session_start", data, {"session_id": "p1"}, MEMVAULT_PLUGIN_NO_EMBEDDINGS="1")
    assert start.returncode == 0 and "always-load" in start.stdout
    prompt, _ = _hook(bare_python, "user_prompt_submit", data, {"session_id": "p1", "prompt": "bisecting flaky tests"})
    out = json.loads(prompt.stdout)
    assert out["systemMessage"].startswith("Loaded ")
    assert "bisecting-flaky-tests" in out["hookSpecificOutput"]["additionalContext"]

    # A changed dependency set (here: embeddings wanted) re-installs in the background; the hooks keep working.
    fake = _fake_install(bare_python, seconds=0)
    again, _ = _hook(bare_python, "session_start", data, {"session_id": "p2"}, MEMVAULT_PLUGIN_INSTALL_CMD=fake)
    assert "always-load" in again.stdout and plugin_setup.INSTALLING not in again.stdout
    _wait_for_install(data, 30)
    assert (data / "runs").read_text() == "x"
    assert json.loads((data / plugin_setup.STAMP).read_text())["embeddings"] is True


# ---- bin/memvault ------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="bin/memvault is the POSIX wrapper (bin/memvault.cmd on Windows)")
def test_bin_memvault_runs_the_plugins_memvault_with_the_plugin_venv(tmp_path: Path) -> None:
    data = tmp_path / "plugin-data"
    env = {**os.environ, "CLAUDE_PLUGIN_DATA": str(data)}
    missing = subprocess.run([str(REPO / "bin/memvault"), "--version"], capture_output=True, text=True, env=env)
    assert missing.returncode == 1 and "start a new Claude Code session" in missing.stderr
    data.mkdir()
    (data / "venv").symlink_to(sys.prefix, target_is_directory=True)  # an environment that has the dependencies
    ok = subprocess.run([str(REPO / "bin/memvault"), "--version"], capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and _pyproject_version() in ok.stdout
    assert (REPO / "bin/memvault.cmd").read_bytes().count(b"\r\n") >= 5  # cmd.exe wants CRLF


# ---- install.ps1 (static: no PowerShell on this machine) ------------------------------------------


PS1 = REPO / "install.ps1"


def test_install_ps1_has_its_switches_and_passes_the_rest_to_memvault_install() -> None:
    text = PS1.read_text(encoding="ascii")  # PowerShell 5.1 reads a BOM-less file as ANSI: keep it ASCII
    params = re.search(r"^param\((.*?)^\)", text, re.M | re.S)
    assert params
    for switch in ("NoPythonDeps", "NoDemo", "Uninstall"):
        assert f"[switch]${switch}" in params.group(1)
    assert "$Pass = @($args)" in text
    assert "@('install') + $Pass" in text and "@('uninstall', '--all') + $Pass" in text
    assert "Test-Python 'py' @('-3')" in text  # py -3 first
    assert text.index("'py' @('-3')") < text.index("Get-Command python.exe")
    assert "\\WindowsApps\\" in text  # the Store alias is skipped
    assert "Join-Path $env:LOCALAPPDATA 'memvault'" in text and "'Scripts\\memvault.exe'" in text
    assert "--index-url" not in text


def test_install_ps1_uses_only_windows_powershell_5_1_syntax() -> None:
    code = "\n".join(
        line.split(" #", 1)[0] for line in PS1.read_text().splitlines() if not line.lstrip().startswith("#")
    )
    code = re.sub(r"<#.*?#>", "", code, flags=re.S)
    code = re.sub(r"'[^']*'", "''", code)  # single-quoted strings hold no operators
    assert "&&" not in code and "||" not in code  # pipeline chain operators: PowerShell 7 only
    assert "??" not in code and "?." not in code  # null-coalescing and null-conditional: PowerShell 7 only
    assert not re.search(r"\)\s*\?\s*[^:\n]+\s:\s", code)  # ternary: PowerShell 7 only
    assert not re.search(r"ForEach-Object\s+-Parallel|-AsHashtable|\bclean\s*\{", code)
    assert "$ErrorActionPreference = 'Stop'" in PS1.read_text()


def test_the_plugin_skill_is_named_as_the_docs_say() -> None:
    """Claude Code names a plugin's skill `<plugin>:<folder under skills/>`; the frontmatter `name` is only an alias."""
    plugin = _json(".claude-plugin/plugin.json")["name"]
    [skill] = sorted((REPO / "skills").glob("*/SKILL.md"))
    listed = f"/{plugin}:{skill.parent.name}"
    assert listed == "/memvault:memvault"
    frontmatter = re.search(r"^name: (.+)$", skill.read_text(encoding="utf-8"), re.M)
    assert frontmatter and frontmatter.group(1) == skill.parent.name  # the alias agrees with the name
    for page in ("wiki/reference/skill.md", "wiki/how-to/install.md"):
        assert listed in (REPO / page).read_text(encoding="utf-8"), page
