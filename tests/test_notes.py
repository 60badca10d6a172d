"""notes.py: byte-exact round trips, minimal frontmatter edits, invalid YAML handled, never destroyed."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from memvault import open_vault
from memvault.errors import InvalidNote
from memvault.store import disk, notes

from .conftest import KEPANO


@pytest.fixture
def kepano(tmp_path: Path) -> Path:
    target = tmp_path / "kepano"
    shutil.copytree(KEPANO, target)
    return target


def test_every_kepano_note_round_trips_byte_for_byte(kepano: Path) -> None:
    files = disk.list_markdown(kepano, (".obsidian",)).notes  # templates included on purpose
    assert len(files) > 90
    invalid = 0
    for rel in files:
        path = kepano / rel
        original = path.read_bytes()
        note = notes.parse(disk.read_text(path))
        invalid += note.error is not None
        disk.atomic_write(path, notes.dump(note).encode("utf-8"))
        assert path.read_bytes() == original, rel
    assert invalid == 28  # the templates whose {{date}} placeholders YAML rejects


def test_kepano_templates_are_readable_but_never_rewritten(kepano: Path) -> None:
    vault = open_vault(kepano)
    rel = "Templates/Album Template.md"
    before = (kepano / rel).read_bytes()
    nf = vault.read(rel)
    assert nf.note.error and nf.note.meta == {}
    assert "{{date" in nf.note.frontmatter
    with pytest.raises(InvalidNote):
        vault.update(rel, meta={"status": "active"}, outside=True)
    assert (kepano / rel).read_bytes() == before


def test_changing_one_key_keeps_every_other_line() -> None:
    text = (
        "---\n"
        "title: Plan  # a comment\n"
        "created: 2024-01-05\n"
        "related:\n"
        '  - "[[Billing service]]"\n'
        "empty:\n"
        "status: active\n"
        "---\n"
        "# Plan\n"
    )
    note = notes.parse(text)
    assert note.meta["created"] == dt.date(2024, 1, 5)
    assert note.meta["related"] == ["[[Billing service]]"] and note.meta["empty"] is None
    changed = notes.dump(notes.with_meta(note, {"status": "superseded"}))
    assert changed == text.replace("status: active", "status: superseded")
    added = notes.dump(notes.with_meta(note, {"superseded_by": "MemoryVault/x.md"}))
    assert added == text.replace("---\n# Plan", "superseded_by: MemoryVault/x.md\n---\n# Plan")
    removed = notes.dump(notes.with_meta(note, {}, remove=["empty"]))
    assert removed == text.replace("empty:\n", "")


def test_crlf_and_bom_survive_edits() -> None:
    text = "\ufeff---\r\nkind: fix\r\ntags:\r\n  - a\r\n---\r\nbody\r\n"
    note = notes.parse(text)
    assert notes.dump(note) == text and note.meta["tags"] == ["a"]
    edited = notes.dump(notes.with_meta(note, {"tags": ["a", "b"]}))
    assert edited == "\ufeff---\r\nkind: fix\r\ntags:\r\n  - a\r\n  - b\r\n---\r\nbody\r\n"


def test_note_without_frontmatter_gets_a_block_on_first_edit() -> None:
    note = notes.parse("# Just text\n\n---\nnot frontmatter: a rule above\n")
    assert note.frontmatter is None and note.meta == {}
    assert notes.dump(notes.with_meta(note, {"kind": "fix"})) == "---\nkind: fix\n---\n" + note.body


def test_unusual_layouts_fall_back_to_a_correct_full_rewrite() -> None:
    text = "---\nnotes: |\n  line one\n\n  line three\nkind: fix\n---\nbody\n"
    note = notes.with_meta(notes.parse(text), {"notes": "short"})
    assert notes.parse(notes.dump(note)).meta == {"notes": "short", "kind": "fix"}


@pytest.mark.parametrize("text", ["---\n- a\n- b\n---\nbody", "---\nkey: [unclosed\n---\nbody", "---\n: :\n---\n"])
def test_invalid_frontmatter_is_reported_not_raised(text: str) -> None:
    note = notes.parse(text)
    assert note.error and note.meta == {} and notes.dump(note) == text
    with pytest.raises(InvalidNote):
        notes.with_meta(note, {"kind": "fix"})


def test_new_note_is_obsidian_style_yaml() -> None:
    stamp = dt.datetime(2026, 3, 2, 9, 14)
    text = notes.dump(
        notes.new_note(
            {"kind": "fix", "created": stamp, "updated": stamp, "tags": ["a"], "supersedes": None, "private": False},
            "# T\n",
        )
    )
    assert text == (
        "---\nkind: fix\ncreated: 2026-03-02T09:14:00\nupdated: 2026-03-02T09:14:00\n"
        "tags:\n  - a\nsupersedes:\nprivate: false\n---\n# T\n"
    )
    assert notes.parse(text).meta["created"] == stamp


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("Tabs vs Spaces!", "tabs-vs-spaces"),
        ("  _a__b_ ", "a-b"),
        ("日本語 メモ", "日本語-メモ"),
        ("Café ☕ notes", "café-notes"),
        ("../../etc/passwd", "etcpasswd"),
    ],
)
def test_slugify(raw: str, slug: str) -> None:
    assert notes.slugify(raw) == slug


def test_titles() -> None:
    assert notes.title_of(notes.parse("---\ntitle: Prop\n---\ntext"), "stem") == "Prop"
    assert notes.title_of(notes.parse("intro\n# Heading One #\n"), "stem") == "Heading One"
    assert notes.title_of(notes.parse("no heading"), "stem") == "stem"
