"""A simulated Obsidian editor types into the notes memvault keeps changing: no edit the user saved is ever lost.

The editor appends a numbered line to one of a few notes at a time, read-modify-write in place as an
editor does (truncate, write), a few times a second per note. Meanwhile two memvault processes keep
updating and evolving the same notes; a write that finds the note changed since it read it must
refuse (`conflict`). At the end every line the editor saved is still in the vault: in the note, or in
the archived copy an evolve made of it.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.store import disk, notes

from .adversarial import say, scale
from .conftest import REPO, git

pytestmark = [pytest.mark.adversarial, pytest.mark.slow]
G = "MemoryVault/personal-private/preference"
NOTES = [f"{G}/edited-{n}.md" for n in range(3)]
WRITER = """
import sys, time
from memvault import open_vault, MemvaultError
v = open_vault(sys.argv[1])
paths, until, who = sys.argv[2].split(","), time.monotonic() + float(sys.argv[3]), sys.argv[4]
done = refused = 0
i = 0
while time.monotonic() < until:
    rel = paths[i % len(paths)]
    try:
        if i % 4 == 3:
            v.evolve(rel, v.read(rel).note.body + f"\\nevolved by {who} round {i}\\n", reason=f"round {i}")
        else:
            v.update(rel, meta={f"touched_{who}": i})
        done += 1
    except MemvaultError as exc:
        if exc.code not in ("conflict", "busy", "invalid_note"):
            raise
        refused += 1
    i += 1
print(done, refused)
"""


def editor(root: Path, until: float, saved: list[str], rng: random.Random) -> None:
    """Obsidian as a person uses it: open a note, add a line, save (in place), a few times a second."""
    n = 0
    while time.monotonic() < until:
        rel = rng.choice(NOTES)
        path = root / rel
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        line = f"edit-{n} typed in Obsidian"
        with open(path, "w", encoding="utf-8") as handle:  # truncate and write, not atomic: as editors do
            handle.write(text.rstrip("\n") + f"\n{line}\n")
        saved.append(line)
        n += 1
        time.sleep(rng.uniform(0.02, 0.08))


def test_no_edit_saved_in_obsidian_is_lost_while_memvault_writes(vault_dir: Path) -> None:
    for rel in NOTES:
        (vault_dir / rel).write_text(f"---\nkind: preference\n---\n# {Path(rel).stem}\nStart.\n", encoding="utf-8")
    git(vault_dir, "init", "-q", "-b", "main")
    git(vault_dir, "add", "-A")
    git(vault_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    open_vault(vault_dir)
    seconds = scale(8.0, 90.0)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", WRITER, str(vault_dir), ",".join(NOTES), str(seconds)]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    writers = [subprocess.Popen([*command, who], **pipes) for who in ("a", "b")]  # type: ignore[call-overload]
    time.sleep(1.0)  # the writers are importing; then edit for as long as they write
    saved: list[str] = []
    rng = random.Random(os.getpid())  # noqa: S311 - timing, not cryptography
    until = time.monotonic() + seconds - 1.0
    typing = threading.Thread(target=editor, args=(vault_dir, until, saved, rng))
    typing.start()
    typing.join()
    results = [w.communicate(timeout=300) for w in writers]
    assert all(w.returncode == 0 for w in writers), [err for _, err in results]
    written, refused = (sum(int(out.split()[k]) for out, _ in results) for k in (0, 1))
    vault = open_vault(vault_dir)
    everything = "\n".join(
        (vault_dir / rel).read_text(encoding="utf-8") for rel in disk.list_markdown(vault_dir, vault.ignore).notes
    )
    lost = [line for line in saved if line not in everything]
    say(f"simulated editor: {len(saved)} edits saved while memvault made {written} writes"
        f" ({refused} refused as conflicts); lost edits: {len(lost)}")  # fmt: skip
    assert lost == [], lost
    assert written > 0 and saved
    for rel in NOTES:  # and the notes are still notes
        assert notes.parse((vault_dir / rel).read_text(encoding="utf-8")).ok
