"""The change log in the vault: the page's lines, written with the change they record, and SessionStart's summary."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from memvault import config, open_vault
from memvault.errors import GitError
from memvault.reflect import runner
from memvault.store import changelog
from memvault.store.changelog import Record

from .conftest import git
from .test_hooks import payload, run_hook
from .test_reflect import ASK, OK, PIP, UV, write_transcript

P = "MemoryVault/personal-private/"
PAGE_DIR = "MemoryVault/_meta"
WHEN = dt.datetime(2026, 5, 3, 14, 2, 11)


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reflection never waits for (or starts) the embedding service here."""
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def log_lines(root: Path) -> list[str]:
    """Every line of every page, oldest page first."""
    out: list[str] = []
    for name in changelog.pages(root / "MemoryVault"):
        out += [ln for ln in (root / PAGE_DIR / name).read_text(encoding="utf-8").splitlines() if ln.startswith("- ")]
    return out


def with_config(vault_dir: Path, memvault_home: Path, text: str):
    path = memvault_home / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return open_vault(vault_dir, config=config.load())


# ---- the page ------------------------------------------------------------------------------------


def test_a_line_says_when_what_which_entry_and_why() -> None:
    why = {"rule": "prefs.explicit", "confidence": "high", "session": "s-1"}
    record = Record("saved", detail="high confidence: saved now", **why)
    line = changelog.line(record, WHEN, P + "preference/use-uv.md")
    assert line == (
        "- 2026-05-03 14:02 · saved · [[MemoryVault/personal-private/preference/use-uv|use-uv]] · "
        "high confidence: saved now, rule prefs.explicit, confidence high, session s-1"
    )
    assert changelog.actions(line) == ["saved"]
    secret = "sk-ant-api03-" + "A" * 93
    assert secret not in changelog.line(Record("saved", detail=f"token {secret}\nnext"), WHEN, "x.md")


def test_since_counts_what_was_written_after_the_mark(tmp_path: Path) -> None:
    memory = tmp_path / "MemoryVault"
    (memory / "_meta").mkdir(parents=True)
    counts, mark, page = changelog.since(memory, None)
    assert (counts, page) == ({}, None)
    page_file = memory / "_meta" / changelog.page_name(WHEN)
    first = [changelog.line(Record(a), WHEN, "a.md") for a in ("saved", "saved", "duplicate")]
    page_file.write_text(changelog.appended(None, first, WHEN), encoding="utf-8")
    counts, mark, page = changelog.since(memory, None)  # the first session only sets the mark
    assert counts == {} and mark == {"page": "changelog-2026-05.md", "lines": 3}
    more = [changelog.line(Record(a), WHEN, "b.md") for a in ("saved", "supersede proposed")]
    page_file.write_text(changelog.appended(page_file.read_text(), more, WHEN), encoding="utf-8")
    june = WHEN.replace(month=6)
    (memory / "_meta" / changelog.page_name(june)).write_text(
        changelog.appended(None, [changelog.line(Record("to review"), june, "c.md")], june), encoding="utf-8"
    )
    counts, mark, page = changelog.since(memory, mark)
    assert counts == {"saved": 1, "supersede proposed": 1, "to review": 1}
    assert page == "changelog-2026-06.md" and mark == {"page": "changelog-2026-06.md", "lines": 1}
    assert changelog.summary(counts) == "1 entry saved, 1 sent to review, 1 supersede proposal"
    assert changelog.since(memory, mark)[0] == {}
    assert changelog.summary({"duplicate": 4, "saved": 3}) == "3 entries saved"  # duplicates change nothing


@pytest.mark.usefixtures("today")  # the page is named after the month
def test_a_full_page_continues_on_the_next_page_of_the_month(vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changelog, "PAGE_MAX_BYTES", 600)
    for n in range(6):
        vault.save("fix", f"fix-{n}", f"Fix number {n}.\n", log=[Record("saved", detail="x" * 100)])
    names = changelog.pages(vault.memory_dir)
    assert names[0] == changelog.page_name(dt.datetime.now()) and len(names) >= 2
    assert names[1].endswith("-2.md") and len(log_lines(vault.root)) == 6


# ---- written with the change ---------------------------------------------------------------------


def test_the_line_is_part_of_the_change_and_its_commit(git_vault) -> None:
    result = git_vault.save("fix", "crash-loop", "Restart the worker.\n", log=[Record("saved", rule="r", session="s")])
    page = next(p for p in result.paths if p.startswith(PAGE_DIR + "/"))
    assert git(git_vault.root, "show", "--name-only", "--format=", "HEAD").split() == sorted([result.path, page])
    (line,) = log_lines(git_vault.root)
    assert "· saved · [[MemoryVault/personal-private/fix/crash-loop|crash-loop]] · rule r, session s" in line


# ---- undo: the log is append-only (issue 27, item 11) --------------------------------------------


@pytest.mark.usefixtures("today")  # the page is named after the month
def test_undo_keeps_the_changes_line_and_adds_an_undone_line(git_vault) -> None:
    result = git_vault.save("fix", "crash-loop", "Restart the worker.\n", log=[Record("saved", session="s")])
    sha = git(git_vault.root, "rev-parse", "HEAD").strip()
    page = git_vault.root / PAGE_DIR / changelog.page_name(dt.datetime.now())
    (saved,) = log_lines(git_vault.root)  # the month's first line: the undone change created the page
    git_vault.undo()
    assert not (git_vault.root / result.path).exists()
    assert page.exists() and log_lines(git_vault.root)[0] == saved
    (undone,) = log_lines(git_vault.root)[1:]
    stamp = git(git_vault.root, "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%d %H:%M", sha).strip()
    assert " · undone · [[MemoryVault/personal-private/fix/crash-loop|crash-loop]] · " in undone
    assert f"the change of {stamp}" in undone and sha[:8] in undone and "save personal-private/fix/crash-loop" in undone
    assert changelog.actions(page.read_text(encoding="utf-8")) == ["saved", "undone"]
    assert git(git_vault.root, "status", "--porcelain") == ""


def test_two_undos_take_back_two_changes_never_a_log_only_commit(git_vault) -> None:
    one = git_vault.save("fix", "one", "One.\n", log=[Record("saved")])
    git_vault.record([Record("duplicate", one.path)])  # a commit of the log alone
    two = git_vault.save("fix", "two", "Two.\n", log=[Record("saved")])
    git_vault.record([Record("duplicate", two.path)])
    lines = log_lines(git_vault.root)
    git_vault.undo()
    assert not (git_vault.root / two.path).exists() and (git_vault.root / one.path).exists()
    git_vault.undo()
    assert not (git_vault.root / one.path).exists()
    after = log_lines(git_vault.root)
    assert after[: len(lines)] == lines  # nothing the log said is taken back
    assert [changelog.actions(ln)[0] for ln in after[len(lines) :]] == ["undone", "undone"]
    assert "fix/two" in after[-2] and "fix/one" in after[-1]
    with pytest.raises(GitError, match="nothing to undo"):
        git_vault.undo()  # the two log-only commits are not changes to undo


def test_a_gitignored_log_does_not_stop_the_commit_of_the_entry(git_vault) -> None:
    (git_vault.root / ".gitignore").write_text("MemoryVault/_meta/\n")
    result = git_vault.save("fix", "ignored-log", "Text.\n", log=[Record("saved")])
    assert result.commit and result.warning is None
    assert git(git_vault.root, "show", "--name-only", "--format=", "HEAD").split() == [result.path]
    assert len(log_lines(git_vault.root)) == 1  # written, just not committed


def test_silent_writes_no_log(vault_dir: Path, memvault_home: Path) -> None:
    vault = with_config(vault_dir, memvault_home, "memory:\n  transparency: silent\n")
    result = vault.save("fix", "quiet", "Text.\n", log=[Record("saved")])
    assert result.paths == (result.path,) and not (vault_dir / PAGE_DIR).exists()
    assert vault.record([Record("duplicate", P + "fix/quiet.md")]) is None


def test_the_log_is_never_listed_indexed_or_recalled(vault) -> None:
    vault.save("fix", "zebra-crossing", "Zebra crossings need paint.\n", log=[Record("saved", detail="zebra zebra")])
    vault.reindex(vectors="none")
    assert not [e for e in vault.list(scope="all") if "/_meta/" in e.path]
    assert all("/_meta/" not in h.path for h in vault.recall("zebra zebra crossings", 10).hits)


def test_reflection_logs_saves_and_duplicates_with_rule_confidence_and_session(vault, tmp_path: Path) -> None:
    runner.reflect_transcript(vault, write_transcript(tmp_path / "a.jsonl", "sess-a", [ASK, PIP, UV, OK]))
    runner.reflect_transcript(vault, write_transcript(tmp_path / "b.jsonl", "sess-b", [ASK, PIP, UV, OK]))
    saved, duplicate = log_lines(vault.root)
    assert "· saved · [[MemoryVault/personal-private/preference/" in saved
    assert "confidence high, session sess-a" in saved and ", rule " in saved
    assert "· duplicate · [[MemoryVault/personal-private/preference/" in duplicate
    assert "not saved again" in duplicate and "session sess-b" in duplicate


# ---- SessionStart --------------------------------------------------------------------------------


@pytest.fixture
def hook_home(vault_dir: Path, memvault_home: Path) -> Path:
    (memvault_home / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text(
        f"vault:\n  root: {vault_dir}\nembedding:\n  warm_service: false\n", encoding="utf-8"
    )
    return memvault_home


def message(result) -> str:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout or "{}").get("systemMessage", "")


@pytest.mark.usefixtures("today")  # the page is named after the month
def test_session_start_says_what_changed_since_the_last_session(vault_dir: Path, hook_home: Path) -> None:
    start = payload("SessionStart", source="startup")
    assert "Since your last session" not in message(run_hook("session_start", start))  # the first start sets the mark
    vault = open_vault(vault_dir)
    vault.save("fix", "one", "One.\n", log=[Record("saved")])
    vault.save("fix", "two", "Two.\n", log=[Record("saved")])
    vault.save("fix", "three", "Three.\n", folder="_review", log=[Record("supersede proposed")])
    vault.record([Record("duplicate", P + "fix/one.md")])
    said = message(run_hook("session_start", payload("SessionStart", session="sess-2", source="startup")))
    page = changelog.page_name(dt.datetime.now())
    assert f"Since your last session: 2 entries saved, 1 supersede proposal (see MemoryVault/_meta/{page})" in said
    compact = payload("SessionStart", session="sess-2", source="compact")
    vault.save("fix", "four", "Four.\n", log=[Record("saved")])
    assert "Since your last session" not in message(run_hook("session_start", compact))  # not a new session
    said = message(run_hook("session_start", payload("SessionStart", session="sess-3", source="startup")))
    assert "Since your last session: 1 entry saved" in said
    assert "Since your last session" not in message(run_hook("session_start", payload("SessionStart")))


def test_logged_keeps_the_log_but_says_nothing(vault_dir: Path, hook_home: Path) -> None:
    config_file = hook_home / "config.yaml"
    config_file.write_text(config_file.read_text() + "memory:\n  transparency: logged\n", encoding="utf-8")
    run_hook("session_start", payload("SessionStart", source="startup"))
    open_vault(vault_dir, config=config.load()).save("fix", "one", "One.\n", log=[Record("saved")])
    assert "Since your last session" not in message(run_hook("session_start", payload("SessionStart")))
    assert len(log_lines(vault_dir)) == 1


def test_undoing_a_promote_prints_the_change_it_undid_and_every_path_it_restored_or_removed(git_vault) -> None:
    from click.testing import CliRunner

    from memvault.cli import cli
    from memvault.ideas import incubator

    vault = git_vault
    incubator.capture(vault, "Flaky test radar", "Find flaky tests by rerunning failures.\n")
    promoted = incubator.promote(vault, "flaky-test-radar")
    sha = git(vault.root, "rev-parse", "HEAD").strip()
    subject = git(vault.root, "log", "-n1", "--format=%s", sha).strip().removeprefix("memvault: ")
    result = CliRunner().invoke(cli, ["--vault", str(vault.root), "undo"], terminal_width=200)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"undo: {subject} (commit {sha[:10]})", result.output
    restored = {x.removeprefix("  restored ") for x in lines if x.startswith("  restored ")}
    removed = {x.removeprefix("  removed ") for x in lines if x.startswith("  removed ")}
    assert "Ideas.md" in restored and removed == set(promoted.files), result.output
    revert = next(x.split()[-1] for x in lines if x.startswith("committed "))
    touched = set(git(vault.root, "show", "--name-only", "--no-renames", "--format=", revert).split())
    assert restored | removed == touched


def test_a_capture_lines_link_still_opens_the_entry_after_review_approves_and_moves_it(vault) -> None:
    """The log is append-only: the `to review` line written with the capture must still lead to the entry
    once approving moved it out of `_review/` (Obsidian resolves the link by name)."""
    import re

    from memvault.reflect import review
    from memvault.store import disk
    from memvault.vault import links

    queued = vault.save("fix", "celery-visibility-timeout", "Raise visibility_timeout above the longest ETA.\n",
                        folder="_review", source="sess-9", confidence="medium",
                        log=[Record(changelog.REVIEW)]).path  # fmt: skip
    approved = review.approve(vault, queued).path
    assert approved != queued and not (vault.root / queued).exists()
    page = next((vault.root / PAGE_DIR).glob("changelog-*.md")).read_text(encoding="utf-8")
    files = links.Files.of(disk.list_markdown(vault.root, vault.ignore).notes)
    opened = {}
    for line in page.splitlines():
        for target in re.findall(r"\[\[([^|\]]+)", line):
            opened[line.split(changelog.SEP)[1]] = links.resolve(target, f"{PAGE_DIR}/page.md", files)
    assert opened == {changelog.REVIEW: approved, changelog.APPROVED: approved}, page
