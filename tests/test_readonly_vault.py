"""A vault (or state folder) that cannot be written: one clear line, nothing left pending, every other command works.

Two ways to make a write fail: `MEMVAULT_FAULT_OSERROR=ERRNO@FOLDER` (every test machine; `disk` raises the real
OSError there), and real filesystems — a read-only bind mount, a full tmpfs — where mounting is permitted (root,
as in CI); those skip in one line elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault import paths

from .conftest import EXAMPLE_VAULT, REPO, configure, snapshot
from .test_hooks import HOOKS, KEYWORD_FLOOR, payload

SAVED = "MemoryVault/personal-private/fix/failed-save.md"
EVOLVED = "MemoryVault/personal-private/preference/pytest-over-unittest.md"
WHY = {
    "EROFS": "the vault is read-only",
    "ENOSPC": "the disk holding the vault is full",
    "EACCES": "no permission to write in the vault",
    "EPERM": "no permission to write in the vault",
}


def memvault(vault: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("MEMVAULT_FAULT_OSERROR", None)
    if fault:
        env["MEMVAULT_FAULT_OSERROR"] = fault
    command = [sys.executable, "-m", "memvault", "--vault", str(vault), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def pending(vault: Path) -> list[str]:
    """Journal records of changes not finished (conflicts set aside included: none may appear either)."""
    folder = paths.vault_state_dir(vault) / "journal"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def one_clear_line(done: subprocess.CompletedProcess[str], why: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert why in lines[0] and "nothing was written" in lines[0] and lines[0].endswith("[not_writable]"), lines[0]


@pytest.fixture
def ready(vault_dir: Path, memvault_home: Path) -> Path:
    """The example vault, indexed keyword-only, no embedding service."""
    configure(memvault_home, "embedding:\n  warm_service: false\n" + KEYWORD_FLOOR)
    assert memvault(vault_dir, "reindex", "--keyword-only").returncode == 0
    return vault_dir


def readers_work(vault: Path, listed: str, healthy: int) -> None:
    """list, health, recall and reindex answer as they did before the failed write."""
    done = memvault(vault, "list")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == listed
    done = memvault(vault, "health")
    assert done.returncode == healthy and "Traceback" not in done.stderr, done.stdout + done.stderr
    done = memvault(vault, "recall", "--wait", "0", "flaky", "test")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "flaky" in done.stdout.lower()
    done = memvault(vault, "reindex", "--keyword-only")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


# ---- faulted writes: run everywhere -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(WHY))
def test_a_save_the_vault_refuses_writes_nothing_and_leaves_nothing_pending(ready: Path, name: str) -> None:
    listed, healthy = memvault(ready, "list").stdout, memvault(ready, "health").returncode
    before = snapshot(ready)
    done = memvault(ready, "save", "fix", "failed-save", "Restart the worker.", fault=f"{name}@{ready}")
    one_clear_line(done, WHY[name])
    assert snapshot(ready) == before and pending(ready) == []
    readers_work(ready, listed, healthy)
    assert memvault(ready, "save", "fix", "later", "Another note.").returncode == 0  # a writer replays nothing
    assert not (ready / SAVED).exists() and snapshot(ready).keys() - before.keys() == {
        "MemoryVault/personal-private/fix/later.md"
    }


def test_a_change_that_fails_half_way_is_rolled_back(ready: Path) -> None:
    """evolve writes the archived copy first, then the note: the note's folder is full, so the copy goes again."""
    before = snapshot(ready)
    folder = (ready / EVOLVED).parent
    done = memvault(ready, "evolve", EVOLVED, "Use pytest with plugins.", "-r", "test", fault=f"ENOSPC@{folder}")
    one_clear_line(done, WHY["ENOSPC"])
    assert snapshot(ready) == before and pending(ready) == []
    assert memvault(ready, "list").returncode == 0 and snapshot(ready) == before


def test_a_full_state_folder_refuses_the_save_before_the_vault_is_touched(ready: Path) -> None:
    before = snapshot(ready)
    done = memvault(ready, "save", "fix", "failed-save", "Restart the worker.", fault=f"ENOSPC@{paths.state_dir()}")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "memvault's state folder" in done.stderr, done.stderr
    assert "nothing was written" in done.stderr and snapshot(ready) == before and pending(ready) == []


def test_an_interrupted_change_the_vault_cannot_take_is_reported_not_raised(ready: Path) -> None:
    """A crash left a journal entry; the vault is read-only now: readers answer and say so; a writer says why."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMVAULT_FAULT_AFTER": "2"}  # killed after the journal write
    code = f"from memvault import open_vault\nopen_vault({str(ready)!r}).save('fix', 'failed-save', 'Body.\\n')\n"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True).returncode == 86
    assert len(pending(ready)) == 1
    listed = memvault(ready, "list", fault=f"EROFS@{ready}")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert "interrupted change" in listed.stderr and "read-only" in listed.stderr, listed.stderr
    assert "pytest-over-unittest" in listed.stdout
    recalled = memvault(ready, "recall", "--wait", "0", "flaky", "test", fault=f"EROFS@{ready}")
    assert recalled.returncode == 0 and "flaky" in recalled.stdout.lower(), recalled.stderr
    saved = memvault(ready, "save", "fix", "other", "Body.", fault=f"EROFS@{ready}")
    one_clear_line(saved, WHY["EROFS"])
    hook = run_hook(ready, fault=f"EROFS@{ready}")
    assert hook.returncode == 0 and "Traceback" not in hook.stderr, hook.stderr
    assert len(pending(ready)) == 1  # kept: the change was made durable before the crash, it is finished later
    assert memvault(ready, "list").returncode == 0 and (ready / SAVED).exists() and pending(ready) == []


def run_hook(vault: Path, fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMVAULT_VAULT": str(vault)}
    if fault:
        env["MEMVAULT_FAULT_OSERROR"] = fault
    event = json.dumps(payload("UserPromptSubmit", prompt="how do I fix a flaky test that fails only on CI?"))
    hook = HOOKS / "user_prompt_submit.py"
    return subprocess.run([sys.executable, str(hook)], input=event, capture_output=True, text=True, env=env)


# ---- real filesystems: where mounting is permitted ----------------------------------------------------


@contextlib.contextmanager
def mounted(target: Path, *args: str) -> Iterator[None]:
    done = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting is not permitted here: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` bound read-only onto itself: the same path, the real EROFS, even for root."""
    with mounted(folder, "-o", "bind,ro", str(folder)):
        try:
            (folder / ".probe").touch()
        except OSError as exc:
            assert exc.errno == errno.EROFS
        else:
            (folder / ".probe").unlink()
            pytest.skip("this system's bind mount stayed writable")
        yield


@pytest.mark.skipif(sys.platform != "linux", reason="bind mounts are Linux's")
def test_a_read_only_vault_mount(ready: Path, memvault_home: Path) -> None:
    listed, healthy = memvault(ready, "list").stdout, memvault(ready, "health").returncode
    before = snapshot(ready)
    with read_only(ready):
        one_clear_line(memvault(ready, "save", "fix", "failed-save", "Restart the worker."), WHY["EROFS"])
        assert pending(ready) == []
        readers_work(ready, listed, healthy)
        hook = run_hook(ready)
        assert hook.returncode == 0 and "Traceback" not in hook.stderr, hook.stderr
        assert "flaky" in hook.stdout.lower()  # recall still injects from a read-only vault
    done = memvault(ready, "list")
    assert done.returncode == 0 and done.stdout == listed and snapshot(ready) == before and pending(ready) == []


@pytest.mark.skipif(sys.platform != "linux", reason="tmpfs is Linux's")
def test_a_full_disk(tmp_path: Path, memvault_home: Path) -> None:
    vault = tmp_path / "small"
    vault.mkdir()
    with mounted(vault, "-t", "tmpfs", "-o", "size=2m", "tmpfs"):
        shutil.copytree(EXAMPLE_VAULT, vault, dirs_exist_ok=True)
        configure(memvault_home, "embedding:\n  warm_service: false\n" + KEYWORD_FLOOR)
        assert memvault(vault, "reindex", "--keyword-only").returncode == 0
        listed, healthy = memvault(vault, "list").stdout, memvault(vault, "health").returncode
        filler = vault / "filler.bin"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        before = snapshot(vault)
        one_clear_line(memvault(vault, "save", "fix", "failed-save", "Restart the worker. " * 200), WHY["ENOSPC"])
        assert snapshot(vault) == before and pending(vault) == []
        readers_work(vault, listed, healthy)
        filler.unlink()
        assert memvault(vault, "list").stdout == listed and not (vault / SAVED).exists() and pending(vault) == []


@pytest.mark.skipif(sys.platform != "linux", reason="bind mounts are Linux's")
def test_a_read_only_state_folder_mount(ready: Path) -> None:
    before = snapshot(ready)
    with read_only(paths.state_dir()):
        done = memvault(ready, "save", "fix", "failed-save", "Restart the worker.")
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "memvault's state folder" in done.stderr, done.stderr
        assert snapshot(ready) == before
        done = memvault(ready, "list")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        done = memvault(ready, "reindex", "--keyword-only")  # the index lives there: a clear line, not a traceback
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("Error: cannot write ") and line.endswith("[not_writable]"), line
        hook = run_hook(ready)
        assert hook.returncode == 0 and "Traceback" not in hook.stderr, hook.stderr
    assert pending(ready) == [] and snapshot(ready) == before


@pytest.mark.skipif(sys.platform != "linux", reason="bind mounts are Linux's")
def test_a_change_neither_done_nor_undone_is_kept_and_finished_later(ready: Path, tmp_path: Path) -> None:
    """The vault turns read-only between evolve's two writes: the archived copy cannot be taken back either, so
    the journal entry stays (the message says so) and the next command that can write lands the whole change."""
    signals = tmp_path / "signals"
    signals.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMVAULT_FAULT_PAUSE": f"_archive@{signals}"}
    command = [sys.executable, "-m", "memvault", "--vault", str(ready), "evolve", EVOLVED, "Use plugins.", "-r", "t"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(3000):
            if (signals / "paused").exists() or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert (signals / "paused").exists(), proc.communicate()
        with read_only(ready):
            (signals / "resume").touch()
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 1 and "Traceback" not in err, err
            (line,) = err.strip().splitlines()
            assert "the vault is read-only" in line and "half written" in line and line.endswith("[not_writable]")
            assert len(pending(ready)) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    done = memvault(ready, "list")
    assert done.returncode == 0 and pending(ready) == [], done.stderr
    assert "Use plugins." in (ready / EVOLVED).read_text(encoding="utf-8")
    assert list((ready / "MemoryVault/personal-private/_archive").rglob("pytest-over-unittest.*.md"))
