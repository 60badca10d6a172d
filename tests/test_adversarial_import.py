"""`memvault import` and `memvault import --undo` killed (SIGKILL) at random moments, and at every durable step.

A real `memvault import FOLDER` or `memvault import --undo --yes` process is killed after a random
delay, or stops dead (`os._exit`) at a random checkpoint; then what the next import or undo does first
runs (`import_manifests.recover`), and what must always hold is checked: every import is wholly in the
vault with its manifest or wholly absent without one, an undo takes back only the last import, no
pending journal, manifest marker or temp file is left, and the user's own notes are untouched. At the
end every import is undone one by one and the vault is as it was, apart from the change log.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.store import disk, journal, notes
from memvault.vault import import_manifests, importer

from .adversarial import say, scale
from .conftest import git, snapshot

pytestmark = [pytest.mark.adversarial, pytest.mark.slow]
P = "MemoryVault/personal-private/note/"
LOG = "MemoryVault/_meta/"
MAX_STEP = 12  # more than the checkpoints one import or undo passes


def sources(tmp_path: Path, count: int) -> dict[str, list[str]]:
    """`count` folders of notes, each with a nested one; folder → the vault paths its import writes."""
    out = {}
    for i in range(count):
        folder = tmp_path / f"src{i}"
        (folder / "sub").mkdir(parents=True)
        (folder / f"n{i}-a.md").write_text(f"# Note {i} a\n\nSee [[n{i}-b]].\n", encoding="utf-8")
        (folder / "sub" / f"n{i}-b.md").write_text(f"---\ntags: [t{i}]\n---\nNote {i} b.\n", encoding="utf-8")
        out[str(folder)] = [f"{P}n{i}-a.md", f"{P}sub/n{i}-b.md"]
    return out


def launch(vault_dir: Path, args: list[str], step: int | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, **({"MEMVAULT_FAULT_AFTER": str(step)} if step else {})}
    command = [sys.executable, "-m", "memvault", "--vault", str(vault_dir), "import", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def leftovers(root: Path) -> list[str]:
    """Temp files of interrupted writes, pending journals and manifest markers under `root`."""
    found = []
    for here, _, names in os.walk(root):
        for name in names:
            pending = here.endswith("journal") and name.endswith(".json")
            marker = name.endswith((import_manifests.PENDING, import_manifests.UNDOING))
            if name.endswith(disk.TEMP_SUFFIX) or pending or marker:
                found.append(os.path.join(here, name))
    return found


def state(vault_dir: Path, plan: dict[str, list[str]]) -> list[str]:
    """The imported folders, oldest first, after checking each is wholly in the vault with its manifest or absent."""
    vault = open_vault(vault_dir)
    listed = {m["folder"]: m for m in importer.manifests(vault)}
    order = [m["folder"] for m in importer.manifests(vault)]
    present = []
    for folder, files in plan.items():
        there = [(vault_dir / f).exists() for f in files]
        shown = next((s for s in listed if Path(s).expanduser() == Path(folder)), None)
        assert all(there) or not any(there), f"{folder} half imported: {there}"
        assert all(there) == (shown is not None), f"{folder}: notes there {all(there)}, manifest {shown}"
        if all(there):
            for f in files:
                assert notes.parse((vault_dir / f).read_text(encoding="utf-8")).meta["source"] == "import"
            present.append(folder)
    assert len(order) == len(present)
    return sorted(present, key=lambda f: next(i for i, s in enumerate(order) if Path(s).expanduser() == Path(f)))


@pytest.mark.parametrize("with_git", [False, True], ids=["plain", "git"])
def test_imports_and_undos_killed_at_random_moments_leave_each_import_whole_or_absent(
    vault_dir: Path, tmp_path: Path, memvault_home: Path, with_git: bool
) -> None:
    if with_git:
        git(vault_dir, "init", "-q", "-b", "main")
        git(vault_dir, "add", "-A")
        git(vault_dir, "commit", "-qm", "initial")
    seed = int(os.environ.get("MEMVAULT_SEED", "0")) or time.time_ns()
    rng = random.Random(seed)  # noqa: S311 - timing, not cryptography
    rounds = scale(8, 60)
    plan = sources(tmp_path, rounds)
    user_notes = {p: b for p, b in snapshot(vault_dir).items() if not p.startswith(LOG)}
    imported: list[str] = []
    killed = finished = 0
    for _ in range(rounds):
        waiting = [f for f in plan if f not in imported]
        undo = bool(imported) and (not waiting or rng.random() < 0.4)
        args = ["--undo", "--yes"] if undo else [rng.choice(waiting)]
        step = rng.randint(1, MAX_STEP) if rng.random() < 0.5 else None
        proc = launch(vault_dir, args, step)
        if step is None:
            time.sleep(rng.uniform(0.2, 2.5))
            proc.send_signal(signal.SIGKILL)
        code = proc.wait(timeout=60)
        killed, finished = killed + (code != 0), finished + (code == 0)
        import_manifests.recover(open_vault(vault_dir))  # what the next import or undo does first
        now = state(vault_dir, plan)
        if undo:  # the last import is whole or gone; every earlier one as it was
            assert now in (imported, imported[:-1]), (imported, now, f"MEMVAULT_SEED={seed}")
        else:  # the new one is whole or absent; the others as they were
            assert now in (imported, [*imported, args[0]]), (imported, now, f"MEMVAULT_SEED={seed}")
        imported = now
        assert leftovers(vault_dir) == [] and leftovers(memvault_home) == []
        assert {p: b for p, b in snapshot(vault_dir).items() if p in user_notes} == user_notes
        if with_git:
            assert git(vault_dir, "status", "--porcelain", "--untracked-files=no") == ""
    say(
        f"import/undo {'git' if with_git else 'plain'}: {rounds} runs, {killed} killed, {finished} finished "
        f"(MEMVAULT_SEED={seed})"
    )
    vault = open_vault(vault_dir)
    while imported:  # every import taken back, newest first: exactly its notes each time
        last = imported.pop()
        done = importer.undo_import(vault)
        assert set(done.paths) == set(plan[last]) and state(vault_dir, plan) == imported
    now = snapshot(vault_dir)
    assert {p: b for p, b in now.items() if not p.startswith(LOG)} == user_notes
    assert journal.pending(vault.changes.journal_dir) == []
