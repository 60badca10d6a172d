"""The Gemini miner's own Gemini home: private, carrying the user's sign-in and nothing else, always removed.

Real files and folders throughout; the calls run a stand-in `gemini` (a real process) that reports what it
was given and what its home held while it ran.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from memvault.reflect.mine import claude, gemini
from memvault.reflect.mine.headless import MinerError
from memvault.reflect.transcript import Turn

from .conftest import snapshot

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX permissions and a POSIX stand-in client")

KEY = "AIza-not-a-real-key-0123456789"
SIGN_IN = {
    "oauth_creds.json": '{"access_token": "ya29.a", "refresh_token": "1//r", "token_type": "Bearer"}',
    "gemini-credentials.json": '{"gemini-cli-oauth": {"main-account": "iv:tag:data"}}',
    "google_accounts.json": '{"active": "someone@example.com", "old": []}',
    ".env": f"GEMINI_API_KEY={KEY}\n",
}
USER_SETTINGS = """{
  // the user's own settings, with a comment as Gemini CLI allows
  "security": {"auth": {"selectedType": "oauth-personal"}, "folderTrust": {"enabled": true}},
  "model": {"name": "gemini-2.5-pro"},
  "mcpServers": {"spy": {"command": "spy-server"}},
  "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "memvault hook gemini"}]}]},
  "tools": {"core": ["run_shell_command"], "sandbox": false},
  "context": {"fileName": "AGENTS.md"},
  "ui": {"theme": "url: http://example.com/theme"}
}"""
NOT_SIGN_IN = {  # what a user's ~/.gemini holds beside the sign-in: none of it goes to the miner's home
    "settings.json": USER_SETTINGS,
    "GEMINI.md": "Always answer in French.",
    "trustedFolders.json": "{}",
    "projects.json": "{}",
    "installation_id": "x",
    "mcp-oauth-tokens.json": '{"server": "token"}',
    "extensions/spy/gemini-extension.json": '{"name": "spy"}',
    "commands/deploy.toml": 'prompt = "deploy"',
    "skills/s/SKILL.md": "skill",
    "tmp/abc/chats/session-2026-01-01T10-00-aaaaaaaa.json": '{"sessionId": "aaaaaaaa"}',
}


def user_home(root: Path, files: dict[str, str]) -> Path:
    """A user's Gemini home (GEMINI_CLI_HOME) at `root`, `.gemini` holding `files`."""
    for name, text in files.items():
        path = root / ".gemini" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_home_is_private_and_holds_the_sign_in_and_the_miners_settings_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = user_home(tmp_path / "user", {**SIGN_IN, **NOT_SIGN_IN})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    before = snapshot(user)
    with gemini.private_home(tmp_path / "miner") as home:
        assert mode(home) == 0o700 and mode(home / ".gemini") == 0o700 and mode(home / "work") == 0o700
        files = {p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file()}
        assert files == {f".gemini/{name}" for name in SIGN_IN} | {".gemini/settings.json", "system.md"}
        for name, text in SIGN_IN.items():
            assert (home / ".gemini" / name).read_text(encoding="utf-8") == text
        assert all(mode(home / f) == 0o600 for f in files), {f: oct(mode(home / f)) for f in files}
        assert list((home / "work").iterdir()) == []
        settings = json.loads((home / ".gemini" / "settings.json").read_text(encoding="utf-8"))
        assert settings["security"]["auth"] == {"selectedType": "oauth-personal"}  # the user's sign-in method
        assert settings["model"] == {"name": "gemini-2.5-pro"}  # and the user's model
        assert settings["tools"] == {"core": []} and settings["mcpServers"] == {} and settings["hooks"] == {}
        assert settings["hooksConfig"]["enabled"] is False and settings["telemetry"]["enabled"] is False
        assert settings["context"]["memoryBoundaryMarkers"] == [] and "fileName" not in settings["context"]
        assert (home / "system.md").read_text(encoding="utf-8") == claude.PROMPT
    assert not home.exists()
    assert snapshot(user) == before  # copied, never moved or changed


def test_a_user_with_no_sign_in_files_or_settings_gets_the_miners_settings_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "nobody"))  # no .gemini at all: an API key in the env
    with gemini.private_home(tmp_path / "miner") as home:
        files = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
        assert files == [".gemini/settings.json", "system.md"]
        settings = json.loads((home / ".gemini" / "settings.json").read_text(encoding="utf-8"))
        assert "security" not in settings and "model" not in settings
    assert not home.exists() and not (tmp_path / "nobody").exists()


def test_unreadable_user_settings_are_not_fatal_and_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = user_home(tmp_path / "user", {"settings.json": "{ not json", "oauth_creds.json": "{}"})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    with gemini.private_home(tmp_path / "miner") as home:
        assert (home / ".gemini" / "oauth_creds.json").is_file()
        assert json.loads((home / ".gemini" / "settings.json").read_text(encoding="utf-8")) == gemini.SETTINGS


def test_the_home_is_removed_when_the_call_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user_home(tmp_path / "user", SIGN_IN)))
    seen: list[Path] = []
    with pytest.raises(KeyboardInterrupt), gemini.private_home(tmp_path / "miner") as home:
        seen.append(home)
        chats = home / ".gemini" / "tmp" / "x" / "chats"
        chats.mkdir(parents=True)  # what the client leaves behind
        (chats / "session-1.jsonl").write_text("{}")
        chats.chmod(0o500)  # in a folder made read-only
        raise KeyboardInterrupt
    assert seen and not seen[0].exists() and list((tmp_path / "miner").iterdir()) == []


def test_a_stale_home_from_a_run_that_was_killed_is_swept_at_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user_home(tmp_path / "user", SIGN_IN)))
    base = tmp_path / "miner"
    dead = base / f"{gemini.HOME_PREFIX}{2**22 + 12345}-x1"  # a pid above any pid_max: no such process
    old = base / f"{gemini.HOME_PREFIX}{os.getpid()}-x2"  # a live pid, but older than any call can last
    live = base / f"{gemini.HOME_PREFIX}{os.getppid()}-x3"  # another run's, in use right now
    for folder in (dead, old, live):
        (folder / ".gemini").mkdir(parents=True)
        (folder / ".gemini" / "oauth_creds.json").write_text("{}")
    long_ago = time.time() - gemini.STALE_S - 60
    os.utime(old, (long_ago, long_ago))
    other = base / "answer.txt"  # not a home: left alone
    other.write_text("x")
    with gemini.private_home(base) as home:
        assert not dead.exists() and not old.exists() and live.exists() and other.exists()
    assert not home.exists() and live.exists()


FAKE = """
import json, os, sys, time
home = os.environ["GEMINI_CLI_HOME"]
files = sorted(os.path.relpath(os.path.join(d, f), home) for d, _, fs in os.walk(home) for f in fs)
with open(os.environ["FAKE_LOG"], "a") as out:
    out.write(json.dumps({"argv": sys.argv[1:], "home": home, "cwd": os.getcwd(), "files": files,
                          "system": os.environ.get("GEMINI_SYSTEM_MD")}) + "\\n")
os.makedirs(os.path.join(home, ".gemini", "tmp", "p", "chats"), exist_ok=True)
open(os.path.join(home, ".gemini", "tmp", "p", "chats", "session-1.jsonl"), "w").write("{}")
if os.environ["FAKE_MODE"] == "hang":
    time.sleep(60)
print(json.dumps({"response": json.dumps({"candidates": []}), "stats": {}}))
"""


def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode_: str) -> str:
    exe = tmp_path / "bin" / "gemini"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n{FAKE}", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("FAKE_MODE", mode_)
    return str(exe)


TURNS = [Turn("user", "we never run pip here, dependencies go through uv add", 1, "u1", None, False)]


@pytest.mark.parametrize("mode_", ["answer", "hang"])
def test_each_call_runs_in_its_own_home_which_is_gone_after_answer_or_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode_: str
) -> None:
    user = user_home(tmp_path / "user", {**SIGN_IN, **NOT_SIGN_IN})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    before = snapshot(user)
    exe = fake(tmp_path, monkeypatch, mode_)
    base = tmp_path / "miner"
    base.mkdir()
    (window,) = claude.windows(TURNS, 10_000)
    started = time.monotonic()
    if mode_ == "hang":
        with pytest.raises(MinerError, match="did not answer within 2 s"):
            gemini.ask(window, TURNS, executable=exe, model="m", timeout=2, cwd=str(base))
        assert time.monotonic() - started < 30
    else:
        assert gemini.ask(window, TURNS, executable=exe, model="m", timeout=30, cwd=str(base)).candidates == []
    (call,) = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    home = Path(call["home"])
    assert home.parent == base and call["cwd"] == str(home / "work") and call["system"] == str(home / "system.md")
    assert {f".gemini/{n}" for n in SIGN_IN} <= set(call["files"])
    assert not any(KEY in a or "refresh_token" in a for a in call["argv"])  # no secret on the command line
    assert not home.exists() and list(base.iterdir()) == []  # the home, its chat file and the sign-in copy: gone
    assert snapshot(user) == before


VERSION = """
import os, sys, uuid
folder = os.path.join(os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~"), ".gemini")
os.makedirs(folder, exist_ok=True)  # as Gemini CLI 0.61 does even for --version: its project list, left half-written
open(os.path.join(folder, f"projects.json.{uuid.uuid4()}.tmp"), "w").write("{}")
print("0.61.0")
"""


def test_asking_the_client_its_version_writes_nothing_in_the_users_gemini_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.config import ReflectionSettings
    from memvault.reflect import miner

    user = user_home(tmp_path / "user", {**SIGN_IN, **NOT_SIGN_IN})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(user))
    before = snapshot(user)
    exe = tmp_path / "bin" / "gemini"
    exe.parent.mkdir()
    exe.write_text(f"#!{sys.executable}\n{VERSION}", encoding="utf-8")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(exe.parent))
    assert miner.choose(ReflectionSettings(miner="auto"), host="gemini")[0] == "gemini"
    assert snapshot(user) == before
    assert not list((miner.paths.state_dir() / "gemini-miner").glob(f"{gemini.HOME_PREFIX}*"))
