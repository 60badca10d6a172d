"""The real Claude Code client for the end-to-end tests: from npm (`npm.py`), run offline in a throwaway HOME.

    client = Client(npm.require(npm.CLAUDE_CODE))     # or the test skips: npm cannot be reached
    user = User(tmp / "user", client)                 # a throwaway HOME, ~/.claude.json seeded
    user.install_memvault("--vault", str(vault))      # ./install.sh --vault VAULT, as a user runs it
    with AnthropicStub() as stub:
        run = user.claude("-p", "hello", stub=stub, cwd=project).check()   # `claude -p hello` in `project`

`Scenario` gives each test its own copy of an indexed vault (MEMVAULT_VAULT), project folder and stub.
`offline_env` points any `claude` a test process starts (the Claude miner's) at a stub instead.

Every run writes the client's debug log (`--debug-file`), where the client reports each hook's
duration; `hook_runs()` reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from tests.conftest import REPO
from tests.e2e import npm
from tests.e2e.stubs.anthropic import AnthropicStub

API_KEY = "sk-ant-api03-offline-e2e-dummy-key-0123456789abcdef"  # any string: the stub does not check it
QUIET = {  # with these the client connects to nothing but ANTHROPIC_BASE_URL
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # telemetry, error reports, update checks, /api/hello
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",  # the interactive UI's git clone of github.com
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
}
# `… [DEBUG] Hooks: UserPromptSubmit [/venv/bin/python …/user_prompt_submit.py] finished with status 0 (91ms)`
HOOK_LINE = re.compile(
    r"\[DEBUG\] Hooks: (?P<event>[A-Za-z]+)(?::(?P<match>\S+))? \[(?P<command>.*)\]"
    r"(?: \(plugin (?P<plugin>[^)]+)\))? (?P<status>finished with status (?P<code>-?\d+)|timed out after \d+ms|"
    r"cancelled|moved to the background|not run|failed to start) \((?P<ms>\d+)ms\)$"
)


@dataclass(frozen=True)
class Client:
    """The pinned client's native binary (its version was asserted when it was found)."""

    binary: Path
    version: str = npm.CLAUDE_CODE.version


def offline_env(home: Path, stub: AnthropicStub) -> dict[str, str]:
    """Variables that make any `claude` use the stub with a dummy key and a throwaway HOME, and reach nothing else."""
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "USERPROFILE": str(home), "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": API_KEY,
            **QUIET}  # fmt: skip


# ---- a user of it --------------------------------------------------------------------------------------


@dataclass
class Run:
    """One finished client process."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    debug_log: Path

    def check(self) -> Run:
        assert self.returncode == 0, f"claude {' '.join(self.args)} exited {self.returncode}:\n{self.stderr[-3000:]}"
        return self


@dataclass(frozen=True)
class HookRun:
    """One hook run as the client reported it in its debug log."""

    event: str
    match: str | None
    command: str
    plugin: str | None
    status: str
    exit_code: int | None
    ms: int


@dataclass
class User:
    """A person with a throwaway HOME and one project folder, running the real client."""

    root: Path
    client: Client
    runs: list[Run] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.root / "tmp").mkdir(exist_ok=True)
        (self.root / "run").mkdir(mode=0o700, exist_ok=True)  # its runtime folder: never the user's /run/user/<uid>
        (self.root / "debug").mkdir(exist_ok=True)
        self.seed_claude_json()

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def claude_dir(self) -> Path:
        return self.home / ".claude"

    @property
    def venv(self) -> Path:
        return self.home / ".local" / "share" / "memvault" / "venv"

    @property
    def memvault(self) -> Path:
        return self.venv / "bin" / "memvault"

    def seed_claude_json(self, *projects: Path, **extra: Any) -> None:
        """What the interactive UI needs to start straight at the prompt: onboarding done, the key and folders trusted.

        `claude -p` needs none of it; the client adds its own keys to the file as it runs.
        """
        path = self.home / ".claude.json"
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        data.update(
            hasCompletedOnboarding=True,
            lastOnboardingVersion=self.client.version,
            theme="dark",
            customApiKeyResponses={"approved": [API_KEY[-20:]], "rejected": []},
            **extra,
        )
        trusted = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
        data.setdefault("projects", {}).update({str(p): trusted for p in projects})
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")

    def env(self, stub: AnthropicStub | None = None, **extra: str) -> dict[str, str]:
        """The whole environment, built from scratch: nothing of the person running the tests leaks in."""
        path = os.environ.get("PATH", os.defpath).split(os.pathsep)
        outside = [p for p in path if p and not p.startswith(sys.prefix)]  # not the test run's own venv
        env = {
            "PATH": os.pathsep.join([str(self.home / ".local" / "bin"), *outside]),
            "HOME": str(self.home),
            "USER": "e2e",
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "SHELL": "/bin/bash",
            "TMPDIR": str(self.root / "tmp"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "ANTHROPIC_API_KEY": API_KEY,
            **QUIET,
            **pip_settings(),
        }
        if stub is not None:
            env["ANTHROPIC_BASE_URL"] = stub.url
        env.update(extra)
        return env

    def install_memvault(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """`./install.sh ARGS` from the repository, as the user would run it."""
        return subprocess.run(
            ["bash", str(REPO / "install.sh"), *args],
            env=self.env(),
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def run_memvault(
        self, *args: str, cwd: Path | None = None, timeout: float = 300, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """The installed `memvault` command, as the user would type it."""
        return subprocess.run(
            [str(self.memvault), *args],
            env=self.env(**env),
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def index_file(self, vault: Path) -> Path:
        """Where the installed memvault keeps the index of `vault` (asked of memvault itself)."""
        code = (
            "import pathlib, sys; from memvault import config, paths; c = config.load(); "
            "print(paths.index_file(pathlib.Path(sys.argv[1]).resolve(), c.vault.folder, c.index.location))"
        )
        out = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", code, str(vault)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return Path(out.stdout.strip())

    def claude(self, *args: str, stub: AnthropicStub, cwd: Path, timeout: float = 180, **env: str) -> Run:
        """Run the client with ARGS in the folder `cwd` against the stub; its debug log is kept."""
        debug = self.root / "debug" / f"run-{len(self.runs) + 1:03d}-{uuid.uuid4().hex[:8]}.txt"
        argv = [str(self.client.binary), "--debug-file", str(debug), *args]
        started = time.monotonic()
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=self.env(stub, **env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        run = Run(tuple(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started, debug)
        self.runs.append(run)
        return run

    def transcripts(self) -> list[Path]:
        return sorted((self.claude_dir / "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime)

    def hook_log(self) -> list[dict[str, Any]]:
        """memvault's own hook log (one JSON line per hook run) from the user's state folder."""
        records = []
        for path in sorted((self.home / ".local" / "state" / "memvault" / "logs").glob("hooks-*.jsonl")):
            records += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return records


def pip_settings() -> dict[str, str]:
    """pip's settings of the person running the tests (index, certificates, cache), for installs in a throwaway HOME."""
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k == "MEMVAULT_TORCH_SPEC"}
    for config in (Path.home() / ".config" / "pip" / "pip.conf", Path.home() / ".pip" / "pip.conf"):
        if "PIP_CONFIG_FILE" not in env and config.is_file():
            env["PIP_CONFIG_FILE"] = str(config)
    env.setdefault("PIP_CACHE_DIR", platformdirs.user_cache_dir("pip", appauthor=False))
    return env


def hook_runs(debug_logs: Iterable[Path]) -> list[HookRun]:
    """Every hook run with a duration that the client reported in these debug logs."""
    found = []
    for path in debug_logs:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = HOOK_LINE.search(line)
            if m:
                code = int(m["code"]) if m["code"] is not None else None
                found.append(
                    HookRun(m["event"], m["match"], m["command"], m["plugin"], m["status"], code, int(m["ms"]))
                )
    return found


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.25) -> Any:
    """Poll `predicate` until it returns something truthy (background jobs are detached processes)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(interval)


# ---- one test's world on top of the shared install ----------------------------------------------------

PRIVATE_SPAN = "<private>door code 4471-e2e</private>"  # put into notes that are injected: must never reach the model


def seed_vault(dest: Path) -> Path:
    """A copy of the example vault, with a `<private>` span in the always-load note and in a recallable note."""
    shutil.copytree(REPO / "examples" / "vault", dest)
    memory = dest / "MemoryVault" / "personal-private"
    for note in (memory / "_always-load" / "dev-flow.md", memory / "workflow" / "bisecting-flaky-tests.md"):
        note.write_text(note.read_text(encoding="utf-8") + f"\nLab access: {PRIVATE_SPAN}\n", encoding="utf-8")
    return dest


def indexed_vault(user: User, dest: Path) -> tuple[Path, Path]:
    """A seeded vault indexed by the installed memvault (vectors from its warm service); the vault and its index."""
    seed_vault(dest)
    done = user.run_memvault("reindex", MEMVAULT_VAULT=str(dest))
    assert done.returncode == 0, done.stderr
    index = user.index_file(dest)
    with contextlib.closing(sqlite3.connect(index)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the whole index in the one file, ready to copy
    return dest, index


@dataclass
class Scenario:
    """A test's own vault (chosen with MEMVAULT_VAULT), project folder and stub, for the one installed user.

    The vault is a copy of `template` (see `indexed_vault`), file times kept, and its index a copy of the
    template's: memvault finds every note unchanged, exactly as after its own reindex of the copy.
    """

    user: User
    root: Path
    stub: AnthropicStub
    template: tuple[Path, Path]

    def __post_init__(self) -> None:
        vault, index = self.template
        shutil.copytree(vault, self.vault)
        target = self.user.index_file(self.vault)
        target.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        shutil.copy2(index, target)
        self.project.mkdir(parents=True)
        self.user.seed_claude_json(self.project)

    @property
    def vault(self) -> Path:
        return self.root / "vault"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def env(self) -> dict[str, str]:
        return {"MEMVAULT_VAULT": str(self.vault)}

    def claude(self, *args: str, timeout: float = 180, **env: str) -> Run:
        return self.user.claude(*args, stub=self.stub, cwd=self.project, timeout=timeout, **self.env(), **env)

    def memvault(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return self.user.run_memvault(*args, cwd=self.project, timeout=timeout, **self.env())

    def records(self, session: str, hook: str | None = None) -> list[dict[str, Any]]:
        """memvault's hook log lines for one session (and one hook)."""
        return [r for r in self.user.hook_log() if r.get("session") == session and hook in (None, r.get("hook"))]
