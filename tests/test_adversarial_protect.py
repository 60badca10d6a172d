"""Property-based attacks on protection: pattern spellings over folder layouts, notes that cannot be read.

Two promises: a file in a folder a `vault.protected_folders` pattern names is protected however the
pattern is spelled (and `health` agrees the pattern matches), and a note that cannot be read (a NUL,
bytes that are not UTF-8, YAML that does not parse) is protected in every check an automatic writer
passes: `Vault.protected`, the guard before every journal, and gc's look at an idea's folder.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memvault import config, open_vault
from memvault.errors import MemvaultError, ProtectedError
from memvault.ideas import incubator
from memvault.store import journal, protect
from memvault.vault import protection

from .adversarial import say, scale
from .conftest import EXAMPLE_VAULT

pytestmark = pytest.mark.adversarial
FUZZ = settings(
    max_examples=scale(120, 1500), deadline=None, derandomize=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
FOLDER = "MemoryVault"
COUNTS: dict[str, int] = {}

# Folder names people use: letters, digits, dashes, underscores, spaces, dots inside, non-ASCII.
segment = st.from_regex(r"[A-Za-z0-9ÄäÖöÜüß_][A-Za-z0-9ÄäÖöÜüß_ .\-]{0,11}", fullmatch=True).filter(
    lambda s: s.strip() == s and s not in protect.QUEUES and not s.endswith(".")
)
layouts = st.tuples(st.lists(segment, min_size=1, max_size=4), st.lists(segment, max_size=3), segment)


def spellings(path: str) -> list[str]:
    """Every way of writing "this folder" for a folder at `path` (from MemoryVault/)."""
    out = []
    for base in (path, f"{FOLDER}/{path}", f"/{path}", f"./{path}"):
        out += [base, base + "/", base + "/*", base + "/**", base.replace("/", "\\"), base.upper()]
    return out


@FUZZ
@given(layout=layouts, pick=st.integers(min_value=0))
@example(layout=(["personal-skills"], [], "deploy"), pick=2)  # the reported case: personal-skills/*
@example(layout=(["work", "personal-skills"], ["ops", "deep"], "deploy"), pick=0)
def test_a_file_in_a_folder_a_pattern_names_is_always_protected(
    layout: tuple[list[str], list[str], str], pick: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folders, below, stem = layout
    path = "/".join(folders)
    file = "/".join([FOLDER, *folders, *below, f"{stem}.md"])
    anchored = spellings(path)
    bare = [folders[-1], folders[-1] + "/", f"**/{folders[-1]}", f"**/{path}"]
    for pattern in [*anchored, *bare]:
        assert protect.is_protected(file, {}, FOLDER, (pattern,)), (pattern, file)
    sibling = "/".join([FOLDER, *folders[:-1], folders[-1] + "-x", f"{stem}.md"])
    for pattern in anchored:
        assert not protect.is_protected(sibling, {}, FOLDER, (pattern,)), (pattern, sibling)
    # `health` agrees: on a real folder tree, the pattern matches a folder.
    root = tmp_path_factory.mktemp("layout")
    (root / FOLDER / path).mkdir(parents=True)
    pattern = [*anchored, *bare][pick % (len(anchored) + len(bare))]
    assert protection.unmatched(root / FOLDER, FOLDER, [pattern, "no-such-folder-anywhere"]) == [
        "no-such-folder-anywhere"
    ]
    COUNTS["layouts"] = COUNTS.get("layouts", 0) + 1


def unreadable_notes() -> st.SearchStrategy[bytes]:
    """Notes whose frontmatter cannot be read: a NUL anywhere, bytes that are not UTF-8, broken YAML."""
    text = st.text(max_size=200).map(lambda t: t.encode("utf-8"))
    nul = st.tuples(text, text).map(lambda p: b"---\nprotected: true\n---\n" + p[0] + b"\x00" + p[1])
    latin = st.tuples(text, st.binary(min_size=1, max_size=20).map(lambda b: b"\xff" + b)).map(lambda p: p[0] + p[1])
    yaml = st.sampled_from(["protected: [true", "protected: {", "a: b: c", "- x\ny: 1", "protected: 'x"]).map(
        lambda y: f"---\n{y}\n---\nBody.\n".encode()
    )
    twice = st.sampled_from([b"false", b"no", b"true"]).map(
        lambda v: b"---\nprotected: true\nprotected: " + v + b"\n---\n"
    )
    return nul | latin | yaml | twice


@pytest.fixture(scope="module")
def shared_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("protect") / "vault"
    shutil.copytree(EXAMPLE_VAULT, target)
    idea = target / FOLDER / "personal-private" / "_idea-incubator" / "flaky-test-detector"
    index = idea / "_index.md"
    index.write_text(re.sub(r"(?m)^updated: .*$", "updated: 2025-01-10T09:00:00", index.read_text()))
    return target


@FUZZ
@given(content=unreadable_notes())
@example(content=b"---\nprotected: true\n---\nKeep\x00 this.\n")
@example(content=b"Plain text, then a NUL past 8 KB:" + b"x" * 9000 + b"\x00")
def test_a_note_that_cannot_be_read_is_protected_in_every_automatic_writers_check(
    content: bytes, shared_vault: Path
) -> None:
    vault = open_vault(shared_vault, config=config.load())
    idea_dir = shared_vault / FOLDER / "personal-private" / "_idea-incubator" / "flaky-test-detector"
    note = idea_dir / "design.md"
    note.write_bytes(content)
    stamp = dt.datetime(2025, 1, 10).timestamp()
    for path in idea_dir.rglob("*"):
        os.utime(path, (stamp, stamp))
    rel = note.relative_to(shared_vault).as_posix()
    # What the skills index, the auto-memory import, reflection and seed ask before they write.
    assert vault.protected(rel) and vault.protected(rel, {}) and vault.protected(rel, {"protected": False})
    # The guard every change passes before its journal (gc's delete plans exactly this op).
    intent = journal.Intent("x", "delete", f"delete {rel}", (journal.FileOp(rel, None, journal.digest(note)),))
    with pytest.raises(ProtectedError):
        protection.check(shared_vault, vault.folder, (), intent)
    # gc leaves the idea out of its offer, and its clean-ups refuse it.
    (idea,) = incubator.stale(vault, 6)
    assert idea.protected and idea.protected_reason.startswith("design.md: ")
    with pytest.raises(MemvaultError):
        incubator.delete(vault, idea)
    assert note.read_bytes() == content
    COUNTS["unreadable"] = COUNTS.get("unreadable", 0) + 1


def test_report() -> None:
    say(f"protection: {COUNTS.get('layouts', 0)} folder layouts × 28 spellings, "
        f"{COUNTS.get('unreadable', 0)} unreadable notes, none unprotected")  # fmt: skip
