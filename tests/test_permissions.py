"""Everything memvault creates in its state folder is user-only from birth, whatever the umask."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memvault import health, open_vault, paths, runtime
from memvault.claude.settings import INTERPRETER_FLAGS
from memvault.recall import client
from memvault.vault import indexing

from . import transcripts
from .conftest import EXAMPLE_VAULT, REPO, git

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")

# The order matters: the journal folder (a save) comes first, then the index, reflection, a hook and its job.
SCRIPT = """
import os, sys, json, subprocess
os.umask(int(sys.argv[3], 8))
from memvault import open_vault
from memvault.reflect import runner
runner.WAIT_SERVICE_S = 0.0
v = open_vault(sys.argv[1])
v.save("fix", "umask-test", "Restart the worker.\\n")
v.reindex(vectors="none")
runner.reflect_transcript(v, __import__("pathlib").Path(sys.argv[2]), final=True)
hook = os.path.join(os.environ["REPO"], "memvault", "hooks", "user_prompt_submit.py")
subprocess.run([sys.executable, hook], input=json.dumps({"session_id": "s", "prompt": "how do I restart the worker"}),
               text=True, check=True)
"""


def open_to_others(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISSOCK(mode):
                continue
            if mode & 0o077:
                found.append(f"{path.relative_to(root)} {oct(mode & 0o777)}")
    return found


@pytest.mark.parametrize("umask", ["022", "002", "000"])
def test_the_state_folder_is_user_only_from_birth(vault_dir: Path, memvault_home: Path, tmp_path: Path, umask: str):
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text(f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n")
    transcript = transcripts.write(tmp_path / "s.jsonl", "s")
    subprocess.run(
        [sys.executable, "-c", SCRIPT, str(vault_dir), str(transcript), umask],
        env={**os.environ, "REPO": str(REPO), "PYTHONPATH": str(REPO)}, check=True, timeout=300,
    )  # fmt: skip
    state = memvault_home / "state"
    made = {p.name for p in state.rglob("*")}
    assert {"index.sqlite3", "journal", "logs", "sessions"} <= made, made
    assert open_to_others(state) == []
    assert not [p for p in health.check(open_vault(vault_dir), service=False).problems if "open to" in p]


def test_health_reports_and_a_write_heals_a_state_folder_an_older_release_left_open(
    vault_dir: Path, memvault_home: Path
) -> None:
    vault = open_vault(vault_dir)
    vault.save("fix", "heal", "Restart the worker.\n")
    vault.reindex(vectors="none")
    os.chmod(vault.state_dir, 0o755)  # noqa: S103 - as the previous release left it
    os.chmod(vault.index_file, 0o644)
    problems = health.check(vault, service=False).problems
    assert any("open to other users" in p and str(vault.state_dir) in p for p in problems), problems
    vault.save("fix", "heal-2", "Restart the worker again.\n")  # any change locks the folders down again
    assert stat.S_IMODE(os.stat(vault.state_dir).st_mode) == 0o700
    problems = health.check(vault, service=False).problems
    assert not [p for p in problems if "open to other users" in p and p.endswith(str(vault.state_dir))], problems
    report = json.dumps(health.check(vault, service=False).problems)
    assert "index.sqlite3" in report  # a file left 0644 inside is still named: the folder only hides it


# A warm service as `memvault serve` runs it, with a stand-in model: its socket, info file, lock and catch-up are real.
SERVICE = """
import struct, sys
from memvault.recall import service
class Model:
    name, dim = "stand-in", 4
    def encode(self, texts, **_):
        return [struct.pack("<4f", 1.0, float(len(t) % 7), 0.5, 0.25) for t in texts]
sys.exit(service.serve(idle_minutes=2, embedder=Model()))
"""
SESSION = "permissions-session"


def wait_for(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def not_private(root: Path) -> list[str]:
    """Every file not 0600 and folder not 0700 under `root` (`root` included); sockets and symlinks aside."""
    found = []
    for folder, dirs, files in os.walk(root):
        for path in [Path(folder), *(Path(folder) / n for n in dirs + files)]:
            mode = os.lstat(path).st_mode
            want = 0o700 if stat.S_ISDIR(mode) else 0o600
            if not (stat.S_ISSOCK(mode) or stat.S_ISLNK(mode)) and stat.S_IMODE(mode) != want and path != root.parent:
                found.append(f"{path.relative_to(root.parent)} {oct(stat.S_IMODE(mode))}")
    return sorted(set(found))


def test_a_full_session_of_commands_leaves_only_user_only_files_behind(tmp_path: Path, memvault_home: Path) -> None:
    """init, the warm service and its catch-up, save, reindex, recall, a hook session with its background jobs,
    import and its undo, reflect, undo and health, each a real process started with umask 022."""
    vault_dir = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault_dir)
    git(vault_dir, "init", "-q", "-b", "main")
    git(vault_dir, "add", "-A")
    git(vault_dir, "commit", "-qm", "initial")
    source = tmp_path / "old-notes"
    source.mkdir()
    (source / "deploys.md").write_text("# Deploys\n\nCanary first, then four traffic steps.\n", encoding="utf-8")
    transcript = transcripts.write(tmp_path / f"{SESSION}.jsonl", SESSION)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    previous = os.umask(0o022)  # every process below inherits it
    service_proc = None
    try:

        def memvault(*args: str, check: bool = True, answer: str = "") -> subprocess.CompletedProcess[str]:
            result = subprocess.run([sys.executable, "-m", "memvault", *args], env=env, capture_output=True,
                                    text=True, timeout=120, input=answer)  # fmt: skip
            assert result.returncode == 0 or not check, (args, result.stdout, result.stderr)
            return result

        def hook(name: str, payload: dict[str, object]) -> None:
            script = REPO / "memvault" / "hooks" / f"{name}.py"
            result = subprocess.run([sys.executable, *INTERPRETER_FLAGS, str(script)], input=json.dumps(payload),
                                    env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
            assert result.returncode == 0, result.stderr

        memvault("init", str(vault_dir))
        with open(paths.config_file(), "a", encoding="utf-8") as config:  # as the user edits it: its mode is kept
            config.write("embedding:\n  warm_service: false\n")  # the hooks start no model
        with open(tmp_path / "service.log", "ab") as log:
            service_proc = subprocess.Popen([sys.executable, "-c", SERVICE], env=env, stdout=subprocess.DEVNULL,
                                            stderr=log)  # fmt: skip
        wait_for(lambda: client.status(timeout=0.5), "the warm service")
        vault_state = paths.vault_state_dir(vault_dir)
        lock = vault_state / "reindex.lock"
        assert client.catch_up(str(vault_state / paths.INDEX_FILE), str(lock), timeout=5)  # before any reindex
        caught_up = lambda: "caught up" in (log_text := (tmp_path / "service.log").read_text()) or "failed" in log_text  # noqa: E731
        wait_for(caught_up, "the service's catch-up")
        memvault("save", "fix", "restart-worker", "Restart the worker after a deploy.")
        memvault("reindex", "--keyword-only")
        memvault("recall", "restart the worker", "--wait", "0")
        start = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(tmp_path), "source": "startup"}
        hook("session_start", {**start, "hook_event_name": "SessionStart"})
        hook("user_prompt_submit", {"session_id": SESSION, "prompt": "how do I restart the worker",
                                    "hook_event_name": "UserPromptSubmit"})  # fmt: skip
        hook("stop", {"session_id": SESSION, "transcript_path": str(transcript), "hook_event_name": "Stop"})
        hook("session_end", {"session_id": SESSION, "transcript_path": str(transcript), "reason": "exit",
                             "hook_event_name": "SessionEnd"})  # fmt: skip
        jobs = lambda: [r for r in runtime.read_log() if str(r.get("hook", "")).startswith("job:")]  # noqa: E731
        wait_for(lambda: len(jobs()) >= 3, "the hooks' background jobs (start, reflect, final reflect)")
        memvault("import", str(source), "--group", "imported")
        memvault("import", "--undo", answer="y\n")
        memvault("reflect", "--session", str(transcript))
        memvault("save", "fix", "undo-me", "A change to take back.")
        memvault("undo", answer="y\n")
        health_report = json.loads(memvault("health", "--json", check=False).stdout)
        running = {p.name for p in memvault_home.rglob("*")}, not_private(memvault_home)  # the service still up
    finally:
        if service_proc is not None:
            client.stop(timeout=10)
            if service_proc.poll() is None:
                service_proc.kill()
            service_proc.wait(10)
        os.umask(previous)
    made = {"reindex.lock", "index.sqlite3", "journal", "logs", "sessions", "service.json", "service.lock"}
    assert made | {"config.yaml"} <= running[0], running[0]
    assert running[1] == [], "\n".join(running[1])
    assert not_private(memvault_home) == []
    problems = health_report.get("problems", [])
    assert not [p for p in problems if "open to other users" in p], problems


def test_the_file_naming_a_running_reindex_is_user_only_while_it_exists(vault_dir: Path, memvault_home: Path) -> None:
    """`reindex.json` (who holds the reindex lock) lives only while a reindex runs: looked at from inside one."""
    vault = open_vault(vault_dir)
    owner = paths.vault_state_dir(vault_dir) / "reindex.json"
    seen: list[int] = []
    previous = os.umask(0o022)
    try:
        indexing.reindex(vault.root, vault.config, vectors="none",
                         progress=lambda *_: seen.append(os.stat(owner).st_mode))
    finally:
        os.umask(previous)
    assert seen and {stat.S_IMODE(mode) for mode in seen} == {0o600}
    assert not owner.exists()


def test_asking_whether_a_service_runs_leaves_a_user_only_lock_file(memvault_home: Path) -> None:
    """`client.start` first checks the service's lock (taking it for an instant): the file that creates is 0600."""
    previous = os.umask(0o022)
    try:
        assert client._lock_free()  # the check `start` and `stop` make, without starting a model
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(client.lock_file()).st_mode) == 0o600
