"""Concurrency: 8 real processes saving and evolving at once lose no write and tear no file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.store import disk, notes

from .conftest import git

pytestmark = pytest.mark.slow
SHARED = "MemoryVault/personal-private/preference/uv-for-envs.md"
WORKER = """
import sys
from memvault import open_vault, MemvaultError
v = open_vault(sys.argv[1])
i = sys.argv[2]
for j in range(4):
    v.save("fix", f"worker-{i}-{j}", f"Fix number {j} from worker {i}.\\n" * 50, tags=[f"w{i}"])
v.evolve(f"MemoryVault/personal-private/fix/worker-{i}-0.md", f"Better fix from worker {i}.\\n", reason="retry")
try:
    v.evolve(sys.argv[3], f"uv, as decided by worker {i}\\n", reason="race", expected_mtime_ns=int(sys.argv[4]))
    print("won")
except MemvaultError as exc:
    print("lost", exc.code)
"""


def test_eight_processes_at_once(vault_dir: Path) -> None:
    git(vault_dir, "init", "-q")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    seen = str(open_vault(vault_dir).read(SHARED).mtime_ns)  # every worker read the note before racing
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(vault_dir), str(i), SHARED, seen],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[1] for r in results]
    outcomes = sorted(r[0].strip() for r in results)
    assert outcomes == ["lost conflict"] * 7 + ["won"]  # optimistic concurrency: one supersede wins

    vault = open_vault(vault_dir)
    for i in range(8):
        assert (
            vault.read(f"MemoryVault/personal-private/fix/worker-{i}-0.md").note.body
            == f"Better fix from worker {i}.\n"
        )
        for j in range(1, 4):
            nf = vault.read(f"MemoryVault/personal-private/fix/worker-{i}-{j}.md")
            assert nf.note.ok and nf.note.body == f"Fix number {j} from worker {i}.\n" * 50  # whole, not torn
    archived = [e for e in vault.list(status="superseded") if "uv-for-envs" in e.path]
    assert len(archived) == 1
    for rel in disk.list_markdown(vault_dir).notes:
        assert notes.parse((vault_dir / rel).read_text()).ok or rel.startswith("Templates/")
    # one commit per successful mutation: 8 × (4 saves + 1 evolve) + the one winning evolve
    assert git(vault_dir, "rev-list", "--count", "HEAD").strip() == str(1 + 8 * 5 + 1)
    assert git(vault_dir, "status", "--porcelain") == ""
