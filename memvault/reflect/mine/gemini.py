"""The Gemini CLI miner: one `gemini -p` call per window, its answer checked as strictly as Claude's.

Each call runs in a Gemini home of its own (`private_home`: GEMINI_CLI_HOME, a 0700 folder under
memvault's state, removed when the call ends, answered, failed, timed out or interrupted; one left by
a killed run is swept at the next). Gemini CLI reads a system settings file only from folders only
root can write, so the miner's settings are that home's user settings: no core tools (`tools.core: []`,
so the request declares no tool at all), no MCP servers (`mcpServers: {}`, and
`--allowed-mcp-server-names` naming none), no hooks (`hooksConfig.enabled: false`, and
MEMVAULT_ENABLED=0 for memvault's own), no checkpoints, no skills, no extensions (`-e none`), no
GEMINI.md memory, no telemetry. The home carries the user's sign-in, copied (never moved or changed)
from the user's Gemini home (GEMINI_CLI_HOME, else the home folder): the OAuth and encrypted-file
credentials, the cached account, `.gemini/.env`, and from their settings.json only `security.auth` and
`model.name`; an API key or Vertex AI variables in the environment reach the child as they are, never
on its command line. The chat the client records is written inside that home and goes with it.
It runs from the home's empty `work` folder, trusted for this call only (`--skip-trust`). The system
prompt is `claude.PROMPT` (`GEMINI_SYSTEM_MD`); one window of the transcript (`claude.window_input`)
is read on standard input; the answer (`-o json`, its `response`) is checked by `claude.parse_answer`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memvault.reflect.transcript import Turn

from . import claude
from .claude import Call, Window
from .headless import MinerError, run_child
from .text import clip

SETTINGS: dict[str, Any] = {
    "tools": {"core": []},
    "mcpServers": {},
    "hooks": {},
    "hooksConfig": {"enabled": False},
    "general": {"checkpointing": {"enabled": False}, "enableAutoUpdate": False,
                "enableAutoUpdateNotification": False},
    "skills": {"enabled": False},
    "context": {"memoryBoundaryMarkers": [], "includeDirectoryTree": False},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "ide": {"enabled": False},
}  # fmt: skip
# What a user's Gemini home holds for signing in (its `.gemini` folder): OAuth credentials, the same kept in
# an encrypted file (its key comes from the machine and the user's name, not the folder), the signed-in
# account, and the `.env` file Gemini CLI reads an API key or a Google Cloud project from.
SIGN_IN = ("oauth_creds.json", "gemini-credentials.json", "google_accounts.json", ".env")
SIGN_IN_MAX_BYTES = 1 << 20
HOME_PREFIX = "home-"  # a call's home: home-<pid>-<random> in the miner's folder
STALE_S = 3 * 3600  # a home older than this outlives any call (reflection.claude_timeout_s is at most an hour)


def command(executable: str, model: str) -> list[str]:
    """The child's command line (the system prompt and settings are files in its home)."""
    argv = [executable, "-p", claude.ASK, "--output-format", "json", "--skip-trust",
            "--allowed-mcp-server-names", "none", "--extensions", "none"]  # fmt: skip
    return [*argv, "--model", model] if model else argv


def child_env(home: Path) -> dict[str, str]:
    """The child's environment: memvault's hooks off, its own Gemini home and the miner's system prompt."""
    return {**claude.child_env(), "GEMINI_CLI_HOME": str(home), "GEMINI_SYSTEM_MD": str(home / "system.md")}


def ask(window: Window, turns: Sequence[Turn], *, executable: str, model: str, timeout: float, cwd: str) -> Call:
    """Run one `gemini -p` for `window`, killed after `timeout` s; validate its answer. Failures raise MinerError."""
    with private_home(Path(cwd)) as home:
        code, stdout, stderr = run_child(command(executable, model), claude.window_input(window),
                                         env=child_env(home), cwd=str(home / "work"), timeout=timeout)  # fmt: skip
    report = report_of(executable, code, stdout, stderr)
    answer = report.get("response")
    if not isinstance(answer, str):
        raise MinerError("the output has no 'response' text", answered=True)
    try:
        return claude.parse_answer(answer, window, turns)
    except MinerError as exc:
        exc.answered = True  # the model answered, if not as asked
        raise


def report_of(executable: str, code: int, stdout: str, stderr: str) -> dict[str, Any]:
    """`gemini -p --output-format json`'s report; MinerError (with the error's message, or the last line said)
    when it failed or reported an error."""
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    report = report if isinstance(report, dict) else {}
    if code != 0 or "error" in report:
        error = report.get("error")
        said = error.get("message") if isinstance(error, dict) else None
        lines = [line for line in (stderr or stdout).splitlines() if line.strip()]
        said = said if isinstance(said, str) and said else (lines[-1] if lines else "no output")
        raise MinerError(f"{executable} exited with {code}: {clip(said, 200)}", answered=_spent(report))
    return report


def user_home() -> Path:
    """The user's Gemini home, the folder holding `.gemini`: GEMINI_CLI_HOME, else the home folder."""
    return Path(os.environ.get("GEMINI_CLI_HOME") or Path.home())


@contextlib.contextmanager
def private_home(base: Path, *, sign_in: bool = True) -> Iterator[Path]:
    """A Gemini home for one call, in `base`: 0700, the miner's settings and the user's sign-in; removed after.

    `sign_in=False`: no sign-in copied (for `gemini --version`, which writes its project list in its home).
    """
    sweep(base)
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-", dir=base))  # 0700 from birth
    try:
        build(home, user_home() / ".gemini", sign_in=sign_in)
        yield home
    finally:
        remove(home)


def build(home: Path, user: Path, *, sign_in: bool = True) -> None:
    """Fill `home`: `.gemini` with the miner's settings and copies of the sign-in files of `user` (a `.gemini`)."""
    folder = home / ".gemini"
    for made in (folder, home / "work"):
        made.mkdir(mode=0o700)
        made.chmod(0o700)
    for name in SIGN_IN if sign_in else ():
        source = user / name
        try:
            if not source.is_file() or source.stat().st_size > SIGN_IN_MAX_BYTES:
                continue
            data = source.read_bytes()
        except OSError:
            continue  # unreadable: the client then says it is not signed in, and the miner falls back
        _write_private(folder / name, data)
    _write_private(folder / "settings.json", json.dumps(settings_for(user / "settings.json")).encode("utf-8"))
    _write_private(home / "system.md", claude.PROMPT.encode("utf-8"))


def settings_for(user_settings: Path) -> dict[str, Any]:
    """The miner's settings, with the user's sign-in method (`security.auth`) and model (`model.name`)."""
    out = json.loads(json.dumps(SETTINGS))
    theirs = _read_settings(user_settings)
    auth = theirs.get("security", {}).get("auth") if isinstance(theirs.get("security"), dict) else None
    if isinstance(auth, dict) and auth:
        out["security"] = {"auth": auth}
    model = theirs.get("model", {}).get("name") if isinstance(theirs.get("model"), dict) else None
    if isinstance(model, str) and model:
        out["model"] = {"name": model}
    return out


def sweep(base: Path) -> None:
    """Remove the homes of calls that are over: their process is gone, or they are older than any call lasts."""
    try:
        found = [p for p in base.iterdir() if p.name.startswith(HOME_PREFIX) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return
    now = time.time()
    for home in found:
        pid = home.name[len(HOME_PREFIX) :].split("-", 1)[0]
        try:
            old = now - home.stat().st_mtime > STALE_S
        except OSError:
            continue
        if old or (pid.isdigit() and not _alive(int(pid))):
            remove(home)


def remove(home: Path) -> None:
    """Delete a home and all in it, folders made read-only included; what cannot be removed now is swept later."""
    if not home.is_dir() or home.is_symlink():
        return
    for folder, subfolders, _ in os.walk(home):
        for name in subfolders:
            inner = os.path.join(folder, name)
            if not os.path.islink(inner):  # a link is removed, never followed
                with contextlib.suppress(OSError):
                    os.chmod(inner, stat.S_IRWXU)
    shutil.rmtree(home, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process `pid` exists (POSIX; elsewhere only the age of a home says it is stale)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if os.name == "posix":
            os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)


_COMMENT = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', re.DOTALL)


def _read_settings(path: Path) -> dict[str, Any]:
    """A Gemini CLI settings file (JSON with comments) as a dict; {} when it is missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(_COMMENT.sub(lambda m: m.group(1) or "", text))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _spent(report: dict[str, object]) -> bool:
    """Whether a failed call's report says the model produced something (and so it cost)."""
    stats = report.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    for one in (models or {}).values() if isinstance(models, dict) else ():
        tokens = one.get("tokens") if isinstance(one, dict) else None
        if isinstance(tokens, dict) and isinstance(tokens.get("candidates"), int) and tokens["candidates"] > 0:
            return True
    return False
