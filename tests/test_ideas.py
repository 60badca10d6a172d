"""The idea ledger: capture into Ideas.md and the incubator, `promote idea`, `gc`, crash safety, reflection."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memvault import open_vault
from memvault.cli import cli
from memvault.errors import MemvaultError, SafetyError
from memvault.ideas import incubator
from memvault.index import core as ix
from memvault.reflect import runner
from memvault.vault.core import Vault

from .conftest import git, snapshot
from .test_reflect import ASK, OK, PIP, write_transcript

INC = "MemoryVault/personal-private/_idea-incubator"
PROJ = "MemoryVault/personal-projects"
BODY = "A nightly job that reruns the suite with random seeds. It records which tests flip. Then it posts a list."


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def run(vault_dir: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault_dir), *args], input=input)


def ledger(vault: Vault) -> bytes:
    return (vault.root / "Ideas.md").read_bytes()


def make_old(vault: Vault, slug: str, when: str = "2025-01-10T09:00:00") -> None:
    """Backdate an idea: `updated` in its note and the mtime of every file of its folder."""
    folder = vault.root / INC / slug
    index = folder / "_index.md"
    index.write_text(re.sub(r"(?m)^updated: .*$", f"updated: {when}", index.read_text()))
    stamp = dt.datetime.fromisoformat(when).timestamp()
    for path in folder.rglob("*"):
        os.utime(path, (stamp, stamp))


# ---- capture --------------------------------------------------------------------------------------


def test_capture_creates_ideas_md_and_the_incubator_note_in_one_commit(git_vault: Vault, today: dt.date) -> None:
    vault = git_vault
    (vault.root / "Ideas.md").unlink()
    git(vault.root, "commit", "-qam", "no ledger")
    meta = {"related": ["[[bisecting-flaky-tests]]"], "reflect_key": "idea:flaky", "evidence": ["L3"]}
    result = incubator.capture(vault, "Flaky test radar", BODY, session="sess-1", confidence="low", meta=meta)
    rel = f"{INC}/flaky-test-radar/_index.md"
    assert result.path == rel and set(result.paths) == {rel, "Ideas.md"}
    assert ledger(vault).decode() == (
        f"# Ideas\n\n## {today}: Flaky test radar\n"
        "A nightly job that reruns the suite with random seeds. It records which tests flip.\n"
        f"[[{INC}/flaky-test-radar/_index|Flaky test radar]]\n"
    )
    note = vault.read(rel).note
    assert note.meta["kind"] == "idea" and note.meta["status"] == "incubating"
    assert note.meta["surfaced_in_session"] == "sess-1" and note.meta["source"] == "sess-1"
    assert note.meta["related"] == ["[[bisecting-flaky-tests]]"] and note.meta["reflect_key"] == "idea:flaky"
    assert note.meta["confidence"] == "low" and note.meta["tags"] == ["idea"]
    assert note.body.startswith("# Flaky test radar\n\n" + BODY)
    assert git(vault.root, "status", "--porcelain") == ""
    changed = git(vault.root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["Ideas.md", rel]


def test_capture_twice_never_adds_a_second_section(vault: Vault) -> None:
    incubator.capture(vault, "Flaky test radar", BODY)
    once = ledger(vault)
    with pytest.raises(SafetyError, match="already in the incubator"):
        incubator.capture(vault, "Flaky test radar", BODY)
    assert ledger(vault) == once
    # The note is gone but its section stays (found by its link, whatever the heading says): no new section.
    (vault.root / INC / "flaky-test-radar" / "_index.md").unlink()
    edited = once.replace(b"Flaky test radar\n", b"Radar for flaky tests (my words)\n", 1)
    (vault.root / "Ideas.md").write_bytes(edited)
    incubator.capture(vault, "Flaky test radar", BODY)
    assert ledger(vault) == edited and (vault.root / INC / "flaky-test-radar" / "_index.md").is_file()


def test_the_users_own_bytes_in_ideas_md_are_never_changed(vault: Vault, today: dt.date) -> None:
    mine = (
        "\ufeff---\r\ntags: [ideas]\r\n---\r\n# My ideas\r\nFree text before.\r\n\r\n"
        "## 2026-01-02: Garden planner\r\nRaised beds.  \r\n- [ ] seeds\r\n\r\nTrailing words without newline"
    ).encode()
    (vault.root / "Ideas.md").write_bytes(mine)
    incubator.capture(vault, "Flaky test radar", BODY)
    after = ledger(vault)
    assert after.startswith(mine)
    link = f"[[{INC}/flaky-test-radar/_index|Flaky test radar]]"
    added = after[len(mine) :].decode()
    assert added == f"\r\n\r\n## {today}: Flaky test radar\r\n{BODY.rsplit(' Then', 1)[0]}\r\n{link}\r\n"
    # The user renames our heading and writes a section after ours: promote marks ours, at its end only.
    renamed = after.replace(b": Flaky test radar\r\n", b": Radar (renamed)\r\n")
    user_after = b"## 2026-12-01: Another of mine\r\nText.\r\n"
    (vault.root / "Ideas.md").write_bytes(renamed + b"\r\n" + user_after)
    incubator.promote(vault, "flaky-test-radar")
    marker = f"\u2192 promoted {today} to [[{PROJ}/flaky-test-radar/_index]]".encode()
    assert ledger(vault) == renamed[:-2] + b"\r\n" + marker + b"\r\n" + b"\r\n" + user_after


def test_private_spans_and_secrets_never_reach_ideas_md(vault: Vault, today: dt.date) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(SafetyError) as refused:
        incubator.capture(vault, "Deploy bot", f"Use the token {token} in CI. Then deploy.")
    assert refused.value.code == "secret" and b"Deploy bot" not in ledger(vault)
    assert not (vault.root / INC / "deploy-bot").exists()
    incubator.capture(
        vault, "Deploy <private>acme</private> bot", "A bot. <private>Client acme pays.</private> It ships."
    )
    text = ledger(vault).decode() + (vault.root / INC / "deploy-bot" / "_index.md").read_text()
    assert "acme" not in text and f"## {today}: Deploy bot" in text


# ---- promote ----------------------------------------------------------------------------------------


def test_promote_moves_the_whole_folder_marks_the_section_and_updates_the_index(
    vault_dir: Path, today: dt.date
) -> None:
    vault = open_vault(vault_dir)
    incubator.capture(vault, "Flaky test radar", BODY)
    folder = vault_dir / INC / "flaky-test-radar"
    (folder / "research.md").write_text("# Research\n\nCompare pytest-flakefinder.\n")
    (folder / "sketches").mkdir()
    (folder / "sketches" / "plan.canvas").write_text('{"nodes": []}\n')
    (folder / ".DS_Store").write_bytes(b"\x00\x01\xff")
    vault.reindex(vectors="none")
    result = run(vault_dir, "promote", "idea", "flaky-test-radar", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    dest = vault_dir / PROJ / "flaky-test-radar"
    assert data["action"] == "promoted" and data["path"] == f"{PROJ}/flaky-test-radar/_index.md"
    assert data["section_marked"] is True and sorted(data["files"]) == [
        f"{PROJ}/flaky-test-radar/_index.md", f"{PROJ}/flaky-test-radar/research.md",
        f"{PROJ}/flaky-test-radar/sketches/plan.canvas",
    ]  # fmt: skip
    assert not folder.exists()
    assert (dest / "research.md").read_text() == "# Research\n\nCompare pytest-flakefinder.\n"
    assert (dest / "sketches" / "plan.canvas").read_text() == '{"nodes": []}\n'
    meta = vault.read(f"{PROJ}/flaky-test-radar/_index.md").note.meta
    assert meta["status"] == "promoted" and str(meta["promoted"]) == str(today) and meta["group"] == "personal-projects"
    assert (
        ledger(vault)
        .decode()
        .endswith(
            f"[[{INC}/flaky-test-radar/_index|Flaky test radar]]\n"
            f"\u2192 promoted {today} to [[{PROJ}/flaky-test-radar/_index]]\n"
        )
    )
    with sqlite3.connect(vault.index_file) as db:
        indexed = {row[0] for row in db.execute("SELECT path FROM notes WHERE path LIKE '%flaky-test-radar%'")}
    assert indexed == {f"{PROJ}/flaky-test-radar/_index.md", f"{PROJ}/flaky-test-radar/research.md"}
    listed = json.loads(run(vault_dir, "list", "--status", "promoted", "--json").output)
    assert f"{PROJ}/flaky-test-radar/_index.md" in {e["path"] for e in listed}
    assert incubator.incubating(vault) == [i for i in incubator.incubating(vault) if i.slug != "flaky-test-radar"]


def test_promote_in_git_commits_once_even_with_a_file_never_committed(git_vault: Vault) -> None:
    vault = git_vault
    incubator.capture(vault, "Flaky test radar", BODY)
    (vault.root / INC / "flaky-test-radar" / "research.md").write_text("# Research\n")  # untracked
    outcome = incubator.promote(vault, "flaky-test-radar")
    assert outcome.commit and outcome.warning is None
    assert git(vault.root, "status", "--porcelain") == ""
    changed = git(vault.root, "show", "--name-only", "--no-renames", "--format=", "HEAD").split()
    assert sorted(changed) == sorted(["Ideas.md", f"{INC}/flaky-test-radar/_index.md", *outcome.files])


def test_promote_errors_are_clear_and_change_nothing(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    incubator.capture(vault, "Flaky test radar", BODY)
    incubator.capture(vault, "Offline docs search", "Search my docs offline.")
    before = snapshot(vault_dir)
    unknown = run(vault_dir, "promote", "idea", "flaky-radar")
    assert unknown.exit_code == 1 and "no idea 'flaky-radar'" in unknown.output
    assert "did you mean flaky-test-radar" in unknown.output
    (vault_dir / PROJ / "offline-docs-search").mkdir()
    taken = run(vault_dir, "promote", "idea", "offline-docs-search")
    assert taken.exit_code == 1 and f"{PROJ}/offline-docs-search/ already exists" in taken.output
    (vault_dir / PROJ / "offline-docs-search").rmdir()
    vault.update(f"{INC}/flaky-test-radar/_index.md", meta={"status": "archived"})
    before = snapshot(vault_dir)
    archived = run(vault_dir, "promote", "idea", "flaky-test-radar")
    assert archived.exit_code == 1 and "is archived, not incubating" in archived.output
    assert snapshot(vault_dir) == before
    assert run(vault_dir, "promote", "idea", "offline-docs-search").exit_code == 0
    again = run(vault_dir, "promote", "idea", "offline-docs-search")
    assert again.exit_code == 1 and f"promoted to {PROJ}/offline-docs-search/_index.md" in again.output
    (vault_dir / INC / "binary").mkdir()
    (vault_dir / INC / "binary" / "_index.md").write_text("# Binary\n")
    (vault_dir / INC / "binary" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    before = snapshot(vault_dir)
    with pytest.raises(MemvaultError, match=r"photo\.png is not a text file"):
        incubator.promote(vault, "binary")
    assert snapshot(vault_dir) == before


def test_promote_without_a_section_says_so_and_still_promotes(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    incubator.capture(vault, "Flaky test radar", BODY)
    kept = b"# Ideas\n\nI cleaned this file up.\n"
    (vault_dir / "Ideas.md").write_bytes(kept)
    result = run(vault_dir, "promote", "idea", "flaky-test-radar")
    assert result.exit_code == 0, result.output
    assert "no section of Ideas.md links to" in result.output and "promoted anyway" in result.output
    assert (vault_dir / PROJ / "flaky-test-radar" / "_index.md").is_file() and ledger(vault) == kept


# ---- gc --------------------------------------------------------------------------------------------


@pytest.fixture
def aged(vault_dir: Path, today: dt.date) -> Vault:
    """Three ideas: two untouched since January 2025 (one with an extra file), one fresh."""
    vault = open_vault(vault_dir)
    for title in ("Old one", "Old two", "Fresh idea"):
        incubator.capture(vault, title, f"{title} in two sentences. Second one.")
    (vault_dir / INC / "old-two" / "notes.md").write_text("more\n")
    make_old(vault, "old-one")
    make_old(vault, "old-two")
    make_old(vault, "flaky-test-detector")  # the example vault's own idea
    return vault


def test_gc_lists_only_old_ideas_and_changes_nothing_without_answers(aged: Vault) -> None:
    before = snapshot(aged.root)
    listed = json.loads(run(aged.root, "gc", "--json").output)
    assert listed["months"] == 6
    assert [i["slug"] for i in listed["ideas"]] == ["flaky-test-detector", "old-one", "old-two"]
    assert all(i["section_present"] for i in listed["ideas"])
    plain = run(aged.root, "gc", input="d\ny\nd\ny\nd\ny\n")  # not a terminal, no --ask: only a list
    assert plain.exit_code == 0 and "old-one" in plain.output and "nothing changed" in plain.output
    assert snapshot(aged.root) == before
    # A touched file makes an idea fresh again; --months widens or narrows the window.
    os.utime(aged.root / INC / "old-two" / "notes.md")
    assert [i.slug for i in incubator.stale(aged, 6)] == ["flaky-test-detector", "old-one"]
    assert json.loads(run(aged.root, "gc", "--months", "100", "--json").output)["ideas"] == []


def test_gc_keep_archive_delete(aged: Vault, today: dt.date) -> None:
    vault_dir = aged.root
    result = run(vault_dir, "gc", "--ask", input="k\na\nd\ny\n")
    assert result.exit_code == 0, result.output
    assert "1 idea kept, 1 idea archived, 1 idea deleted" in result.output
    assert (vault_dir / INC / "flaky-test-detector" / "_index.md").is_file()
    day = today.strftime("%Y%m%d")
    archived = f"MemoryVault/personal-private/_archive/personal-private/_idea-incubator/old-one.{day}"
    assert not (vault_dir / INC / "old-one").exists()
    assert aged.read(f"{archived}/_index.md").note.meta["status"] == "archived"
    assert not (vault_dir / INC / "old-two").exists()
    assert not list(vault_dir.rglob("old-two*"))
    text = ledger(aged).decode()
    assert f"[[{INC}/old-one/_index|Old one]]\n\u2192 archived {today} to [[{archived}/_index]]\n" in text
    assert text.endswith(f"[[{INC}/old-two/_index|Old two]]\n\u2192 deleted {today}\n\n" + _fresh_section(today))
    # the archived and deleted ideas are no longer recalled through Ideas.md; the kept one still is
    aged.reindex(vectors="none")
    index = ix.open_index(aged.index_file)
    try:
        sql = "SELECT group_concat(c.text, ' ') FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = ?"
        (indexed,) = index.conn.execute(sql, ("Ideas.md",)).fetchone()
    finally:
        index.close()
    assert "Old one" not in indexed and "Old two" not in indexed and "Fresh idea" in indexed


def _fresh_section(today: dt.date) -> str:
    return f"## {today}: Fresh idea\nFresh idea in two sentences. Second one.\n[[{INC}/fresh-idea/_index|Fresh idea]]\n"


@pytest.mark.parametrize("answers", ["d\n\nd\nn\nd\nno\n", "d\n", ""])
def test_gc_never_deletes_without_confirmation(aged: Vault, answers: str) -> None:
    before = snapshot(aged.root)
    result = run(aged.root, "gc", "--ask", input=answers)
    assert result.exit_code == 0, result.output
    assert snapshot(aged.root) == before  # the end of the input is not an answer either
    assert "3 ideas kept" in result.output


# ---- crash safety and reflection --------------------------------------------------------------------

CRASH = {
    "capture": "incubator.capture(v, 'Flaky test radar', 'Rerun tests. Record flips.', session='s')",
    "promote": "incubator.promote(v, 'flaky-test-detector')",
}


@pytest.mark.parametrize("op", list(CRASH))
def test_a_crash_at_any_step_leaves_both_files_or_neither(tmp_path: Path, vault_dir: Path, op: str) -> None:
    pristine = tmp_path / "pristine"
    os.rename(vault_dir, pristine)
    old = snapshot(pristine)
    code = "from memvault import open_vault\nfrom memvault.ideas import incubator\n"
    code += f"v = open_vault({str(vault_dir)!r})\n{CRASH[op]}\n"
    seen = []
    for step in range(1, 20):
        subprocess.run(["cp", "-a", str(pristine), str(vault_dir)], check=True)
        env = {**os.environ, "MEMVAULT_FAULT_AFTER": str(step)}
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode in (0, 86), proc.stderr
        open_vault(vault_dir)
        now = snapshot(vault_dir)
        if now == old:
            seen.append("old")
        else:
            added, removed = set(now) - set(old), set(old) - set(now)
            changed = {p for p in set(now) & set(old) if now[p] != old[p]}
            if op == "capture":
                assert added == {f"{INC}/flaky-test-radar/_index.md"} and not removed
                assert changed == {"Ideas.md"} and f"{INC}/flaky-test-radar/_index|" in now["Ideas.md"].decode()
            else:
                assert added == {f"{PROJ}/flaky-test-detector/_index.md"}
                assert removed == {f"{INC}/flaky-test-detector/_index.md"} and changed == {"Ideas.md"}
                assert "\u2192 promoted" in now["Ideas.md"].decode()
            seen.append("new")
        subprocess.run(["rm", "-rf", str(vault_dir)], check=True)
        if proc.returncode == 0:
            break
    assert seen[0] == "old" and seen[-1] == "new" and len(seen) >= 4, seen


def test_reflecting_an_idea_adds_its_ideas_md_section_once(vault: Vault, tmp_path: Path, today: dt.date) -> None:
    said = [ASK, PIP, ("user", "We should also add a flaky test detector to CI later."), OK]
    report = runner.reflect_transcript(vault, write_transcript(tmp_path / "a.jsonl", "sess-a", said))
    (path,) = report.written
    folder = path.removesuffix("/_index.md")
    title = vault.read(path).title
    text = ledger(vault).decode()
    assert text.endswith(
        f"## {today}: {title}\n> We should also add a flaky test detector to CI later. The user said (follow-up).\n"
        .replace("> ", "") + f"[[{folder}/_index|{title}]]\n"
    )  # fmt: skip
    assert vault.read(path).note.meta["surfaced_in_session"] == "sess-a"
    runner.reflect_transcript(vault, write_transcript(tmp_path / "b.jsonl", "sess-b", said))
    assert ledger(vault).decode() == text
    dry = runner.reflect_transcript(
        vault, write_transcript(tmp_path / "c.jsonl", "sess-c", [ASK, ("user", "TODO: try a new idea later.")]),
        dry_run=True,
    )  # fmt: skip
    assert ledger(vault).decode() == text and dry.dry_run
