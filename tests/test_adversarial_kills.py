"""Every mutating command killed (SIGKILL) at random moments, not only at the built-in checkpoints.

A worker process repeats one operation on a git vault and prints `done N` after each; the test kills
it after a random delay, lets the next open recover, and checks what must always hold: no pending
journal or temp file, the work tree equal to the last commit, every note parseable, no REVERT_HEAD,
every operation reported done fully there, nothing half-made, and the index rebuildable. Then the
worker starts again on the same vault, so later kills land on a vault that already survived some.
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
from memvault.ideas import incubator
from memvault.store import disk, journal, notes

from .adversarial import say, scale
from .conftest import REPO, git

pytestmark = [pytest.mark.adversarial, pytest.mark.slow]
G = "MemoryVault/personal-private"
TARGET = f"{G}/preference/pytest-over-unittest.md"

WORKER = """
import sys, os, json
from pathlib import Path
op, root, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
from memvault import open_vault
from memvault.reflect import runner
runner.WAIT_SERVICE_S = 0.0
v = open_vault(root)
G = "MemoryVault/personal-private"
print("ready", flush=True)
i = start
while True:
    if op == "save":
        v.save("fix", f"k{i}", f"Fix number {i}.\\n")
    elif op == "evolve":
        v.evolve(sys.argv[4], f"Version {i} of the rule.\\n", reason=f"round {i}")
    elif op == "update":
        v.update(sys.argv[4], meta={"counter": i})
    elif op == "move":
        a, b = f"{G}/_review/mover.md", f"{G}/fix/mover.md"
        src, dst = (a, b) if (Path(root) / a).exists() else (b, a)
        v.move(src, dst, meta={"moves": i})
    elif op == "remove":
        v.remove(f"{G}/fix/r{i}.md", reason=f"round {i}")
    elif op == "undo":
        v.save("fix", f"u{i}", f"Undo me {i}.\\n")
        v.undo()
    elif op == "reindex":
        v.reindex(full=True, vectors="none")
    elif op in ("promote", "archive"):
        from memvault.ideas import incubator
        incubator.capture(v, f"Idea {i}", f"An idea worth {i} tries.\\n", slug=f"idea-{i}")
        if op == "promote":
            incubator.promote(v, f"idea-{i}")
        else:
            incubator.archive(v, incubator.find(v, f"idea-{i}"))
    elif op == "reflect":
        path = Path(sys.argv[4])
        line = {"type": "user", "sessionId": "kill", "uuid": f"u{i}",
                "message": {"role": "user", "content": f"From now on always use tool{i} for step {i}."}}
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\\n")
        runner.reflect_transcript(v, path, final=True)
    elif op == "index-skills":
        from memvault.claude import skills_index
        skill = Path(sys.argv[4]) / "skills" / f"s{i % 3}" / "SKILL.md"
        skill.parent.mkdir(parents=True, exist_ok=True)
        skill.write_text(f"---\\ndescription: Skill {i % 3} at revision {i}.\\n---\\nDo step {i}.\\n")
        skills_index.index_skills(v, claude_dir=Path(sys.argv[4]), project=Path(root))
    print(f"done {i}", flush=True)
    i += 1
"""

OPS = ["save", "evolve", "update", "move", "remove", "undo", "reindex", "promote", "archive", "reflect", "index-skills"]
KILLS: dict[str, int] = {}


def prepared(vault_dir: Path, tmp_path: Path, op: str) -> Path:
    if op == "move":
        (vault_dir / f"{G}/_review/mover.md").write_text("---\nkind: fix\nstatus: active\n---\n# Mover\nmoves\n")
    if op == "remove":
        for i in range(scale(400, 4000)):
            (vault_dir / f"{G}/fix/r{i}.md").write_text(f"---\nkind: fix\n---\n# R{i}\nremove me\n")
    git(vault_dir, "init", "-q", "-b", "main")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    return vault_dir


def worker(op: str, root: Path, start: int, extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", WORKER, op, str(root), str(start), extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def settle(root: Path) -> None:
    """A git child of the killed worker may still be finishing: wait for it to let go of the index."""
    deadline = time.monotonic() + 20
    while (root / ".git" / "index.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def check(op: str, root: Path, finished: set[int], extra: str) -> None:
    """What must hold after any crash and the next open, for the operations reported done (`finished`)."""
    done = max(finished, default=-1) + 1
    vault = open_vault(root)  # replays or sets aside what the crash interrupted
    assert not journal.pending(vault.journal_dir) and not journal.pending_undos(vault.journal_dir)
    assert not journal.conflicts(vault.journal_dir), "a crash alone never makes a conflict"
    assert not [p for p in root.rglob(f"*{disk.TEMP_SUFFIX}")]
    assert git(root, "status", "--porcelain") == "", "the work tree is not what was committed"
    assert not (root / ".git" / "REVERT_HEAD").exists()
    for rel in disk.list_markdown(root, vault.ignore, under="MemoryVault").notes:
        assert notes.parse((root / rel).read_text(encoding="utf-8")).ok, rel
    if op == "save":
        for i in sorted(finished):
            assert vault.read(f"{G}/fix/k{i}.md").note.body == f"Fix number {i}.\n"
    elif op == "evolve":
        archived = [e for e in vault.list(status="superseded") if "pytest-over-unittest" in e.path]
        assert len(archived) >= len(finished)  # each evolve reported done left its archived copy
        if finished:
            assert int(vault.read(extra).note.body.split()[1]) >= max(finished)
        for entry in archived:
            successor = vault.read(entry.path).note.meta["superseded_by"]
            assert (root / successor).exists() or successor.startswith(f"{G}/_archive/")
    elif op == "update":
        counter = vault.read(extra).note.meta.get("counter", -1)
        assert counter >= done - 1
    elif op == "move":
        here = [(root / f"{G}/{d}/mover.md").exists() for d in ("_review", "fix")]
        assert sum(here) == 1, here
    elif op == "remove":
        for i in sorted(finished):
            assert not (root / f"{G}/fix/r{i}.md").exists()
    elif op == "undo":
        for i in sorted(finished):
            assert not (root / f"{G}/fix/u{i}.md").exists()
    elif op in ("promote", "archive"):
        ledger = incubator.read_ledger(vault) or ""
        for idea in incubator.ideas_in(vault, statuses=None):
            assert f"idea-{idea.slug.split('-')[-1]}" in ledger or idea.slug in ledger
        for i in sorted(finished):  # moved on, fully (a replay may leave the emptied folder: harmless, no file in it)
            assert not [p for p in (root / f"{G}/_idea-incubator/idea-{i}").rglob("*") if p.is_file()]
    elif op == "reflect":
        keys: dict[str, int] = {}
        for entry in vault.list():
            key = vault.read(entry.path).note.meta.get("reflect_key")
            if key:
                keys[str(key)] = keys.get(str(key), 0) + 1
        assert all(n == 1 for n in keys.values()), keys  # nothing captured twice
    elif op == "index-skills":
        ids: dict[str, int] = {}
        for entry in vault.list(group="personal-skills"):
            sid = vault.read(entry.path).note.meta.get("skill_id")
            ids[str(sid)] = ids.get(str(sid), 0) + 1
        assert all(n == 1 for n in ids.values()), ids
    report = vault.reindex(full=True, vectors="none")  # the index is always rebuildable from the notes
    assert report.scanned == len(disk.list_markdown(root, vault.ignore).notes) - len(
        [p for p in disk.list_markdown(root, vault.ignore).notes if disk.is_conflict_copy(p)]
    )


@pytest.mark.parametrize("op", OPS)
def test_killed_at_random_moments(vault_dir: Path, tmp_path: Path, op: str) -> None:
    root = prepared(vault_dir, tmp_path, op)
    extra = {"evolve": TARGET, "update": TARGET, "reflect": str(tmp_path / "kill.jsonl"),
             "index-skills": str(tmp_path / "claude")}.get(op, "")  # fmt: skip
    rng = random.Random(f"{op}-{os.getpid()}-{time.time_ns()}")  # noqa: S311 - timing, not cryptography
    done, rounds, finished_all = 0, scale(2, 15), set()
    for _ in range(rounds):
        proc = worker(op, root, done, extra)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        time.sleep(rng.uniform(0.05, scale(1.5, 3.0)))  # anywhere: inside a write, a commit, an index refresh
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        finished = [int(line.split()[1]) for line in out.splitlines() if line.startswith("done ")]
        finished_all.update(finished)
        settle(root)
        done = (max(finished) + 1 if finished else done) + 1  # the one in flight may or may not have landed
        check(op, root, finished_all, extra)
        KILLS[op] = KILLS.get(op, 0) + 1
    say(f"{op}: killed {KILLS[op]} times at random moments; {len(finished_all)} operations completed in between")
