"""What a newcomer hits at the command line: busy reindex, 80-column output, one-line errors, refused names."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import filelock
import pytest
from click.testing import CliRunner

from memvault import config, open_vault, paths
from memvault.cli import cli
from memvault.store import model
from memvault.vault import indexing

from .conftest import git

LONG_GROUP = "team-platform-infrastructure-and-reliability"


def run(*args: str, input: str | None = None, code: int = 0) -> click.testing.Result:
    result = CliRunner().invoke(cli, list(args), input=input)
    assert result.exit_code == code, result.output
    return result


def memvault(vault: Path, *args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memvault", "--vault", str(vault), *args],
                          capture_output=True, text=True, timeout=timeout, **kw)  # fmt: skip


def in_a_terminal(argv: list[str], answers: bytes, timeout: float = 120) -> tuple[int, str]:
    """Run `argv` with a real terminal as its standard input and output; type `answers` once it asks."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    seen, deadline, typed = b"", time.monotonic() + timeout, False
    while proc.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
        if not typed and b"?" in seen:
            os.write(leader, answers)
            typed = True
    proc.wait(max(1, deadline - time.monotonic()))
    while True:  # what is left in the terminal's buffer
        ready, _, _ = select.select([leader], [], [], 0.1)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.returncode, seen.decode("utf-8", "replace")


# ---- a second reindex ---------------------------------------------------------------------------------


@pytest.fixture
def reindexing(vault_dir: Path) -> filelock.FileLock:
    """This vault's reindex lock held, as a running reindex holds it (with its owner file)."""
    state = paths.ensure_private_dir(paths.vault_state_dir(vault_dir.resolve()))
    lock = filelock.FileLock(str(state / indexing.REINDEX_LOCK), thread_local=False)  # a timer may release it
    lock.acquire()
    (state / indexing.REINDEX_OWNER).write_text(json.dumps({"pid": 4242, "since": time.time() - 180}))
    yield lock
    lock.release()


def test_a_second_reindex_says_at_once_that_another_runs(vault_dir: Path, reindexing: filelock.FileLock) -> None:
    started = time.monotonic()
    done = memvault(vault_dir, "reindex", "--keyword-only", stdin=subprocess.DEVNULL)
    assert time.monotonic() - started < 30  # not the old 600 s of silence
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "another reindex of this vault is running (pid 4242, for 3 min)" in line
    assert "memvault reindex --wait" in line and line.endswith("[busy]")


def test_reindex_wait_waits_for_the_other_one_then_catches_up(vault_dir: Path, reindexing: filelock.FileLock) -> None:
    argv = [sys.executable, "-m", "memvault", "--vault", str(vault_dir), "reindex", "--keyword-only", "--wait"]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    said = proc.stderr.readline()  # at once, while the other reindex still runs
    assert "another reindex of this vault is running (pid 4242" in said and "waiting for it to finish" in said
    assert proc.poll() is None
    reindexing.release()
    out, rest = proc.communicate(timeout=120)
    assert proc.returncode == 0, rest
    assert "27 added" in out


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_in_a_terminal_reindex_offers_to_wait(vault_dir: Path, reindexing: filelock.FileLock) -> None:
    argv = [sys.executable, "-m", "memvault", "--vault", str(vault_dir), "reindex", "--keyword-only"]
    code, seen = in_a_terminal(argv, b"n\n")
    assert code == 1 and "Wait for it to finish, then catch up?" in seen and "nothing done" in seen
    threading.Timer(2.0, reindexing.release).start()
    code, seen = in_a_terminal(argv, b"y\n")
    assert code == 0 and "27 added" in seen, seen


# ---- 80 columns ---------------------------------------------------------------------------------------


def test_at_80_columns_no_path_or_name_is_cut(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    saved = vault.save("preference", "prefer-small-focused-pull-requests-with-tests", "Small PRs.", group=LONG_GROUP)
    inbox = vault.save("fix", "restart-the-flaky-runner-before-blaming-the-test-suite-again", "Restart it.",
                       group=LONG_GROUP, folder="_inbox")  # fmt: skip
    listed = run("--vault", str(vault_dir), "list").output  # CliRunner's console is 80 columns, like a pipe
    assert saved.path in listed.splitlines()  # on a line of its own, whole, ready to copy into `evolve`
    names = run("--vault", str(vault_dir), "inbox").output
    assert any(line.strip() == Path(inbox.path).stem for line in names.splitlines()), names
    idea = run("--vault", str(vault_dir), "idea", "A very long idea title about caching the dependency graph").output
    assert "personal-private/_idea-incubator/a-very-long-idea-title-about-caching-the-dependency-graph/_index.md" in (
        idea
    )
    short = run("--vault", str(vault_dir), "list", "-g", "personal-skills").output
    assert "path" in short.splitlines()[0]  # short paths still fit a table
    vault.reindex(vectors="none")
    recalled = run("--vault", str(vault_dir), "recall", "--wait", "0", "small focused pull requests").output
    assert saved.path in recalled.splitlines()


# ---- one-line errors and refused names ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["save", "fix", "../../../etc/passwd", "x"], "slug '../../../etc/passwd' is not a valid name: it is one file"),
        (["save", "fix", "a/b/c", "x"], "slug 'a/b/c' is not a valid name"),
        (["save", "-g", "_archive", "fix", "ok", "x"], "names starting with '_' are memvault's own folders"),
        (["save", "fix", "CON", "x"], "Windows reserves the name CON"),
        (["save", "fix", "nul.txt", "x"], "Windows reserves the name NUL"),
        (["save", "_inbox", "ok", "x"], "kind '_inbox' is not a valid name"),
    ],
)
def test_invalid_names_are_refused_in_one_line_not_rewritten(vault_dir: Path, args: list[str], says: str) -> None:
    before = sorted(p for p in vault_dir.rglob("*") if p.is_file())
    done = memvault(vault_dir, *args)
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert says in line and line.endswith("[invalid_name]")
    assert sorted(p for p in vault_dir.rglob("*") if p.is_file()) == before


def test_an_unknown_kind_gets_close_matches(vault_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "list", "--kind", "prefrence"])
    assert result.exit_code == 0
    assert "no entry has kind 'prefrence'; did you mean 'preference'?" in result.output


def test_review_without_input_or_interrupted_ends_in_one_line(vault_dir: Path) -> None:
    done = memvault(vault_dir, "review", stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and "Aborted" not in done.stderr + done.stdout
    assert done.stderr.splitlines() == ["stopped (standard input ended): the entries not yet answered stay in _review/"]


def test_a_typo_at_the_supersede_prompt_is_asked_again(vault_dir: Path) -> None:
    target = "MemoryVault/personal-private/preference/pytest-over-unittest.md"
    queue = [p for p in (vault_dir / "MemoryVault" / "personal-private" / "_review").glob("*.md")]
    assert queue
    result = run("--vault", str(vault_dir), "review", input=f"x\nMemoryVault/no/such-entry.md\n{target}\n" + "s\n" * 9)
    assert "try again" in result.output and "superseded" in result.output
    assert "1 supersede" in result.output


def test_small_ones(vault_dir: Path, tmp_path: Path) -> None:
    done = memvault(vault_dir / "Ideas.md", "list")
    assert done.returncode == 1 and "is a file, not a folder" in done.stderr and "mounted" not in done.stderr
    assert "Alias: `memvault search`" not in run("search", "--help").output
    assert "memvault recall" in run("search", "--help").output
    done = memvault(vault_dir, "reindex", "--keyword-only", stdin=subprocess.DEVNULL)
    said = done.stderr.splitlines()  # in a pipe: no bar and no stray blank line, the start and progress lines
    assert done.returncode == 0 and said == [f"reindexing {vault_dir}…", said[1]], done.stderr
    assert said[1].startswith("reading notes: 27 of 27, ") and said[1].endswith(" notes/s")
    assert "1 entry" in run("--vault", str(vault_dir), "list", "-k", "skill").output
    log = paths.state_dir() / "logs"
    log.mkdir(parents=True, exist_ok=True)
    line = {"ts": "2026-11-23T10:00:00+00:00", "hook": "job:idle", "result": "success", "duration_ms": 3}
    (log / "hooks-20261123.jsonl").write_text(json.dumps(line) + "\n")
    inspected = run("inspect", "--all").output
    assert "session None" not in inspected and "without a session" in inspected


# ---- typos refused: kinds, and the folder given to init ------------------------------------------------


def test_an_unknown_kind_is_refused_with_the_known_ones_and_the_nearest(vault_dir: Path) -> None:
    before = sorted(p for p in vault_dir.rglob("*"))
    done = memvault(vault_dir, "save", "preferences", "tabs", "Use tabs.")
    assert done.returncode == 1 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "unknown kind 'preferences' (did you mean preference?)" in line and line.endswith("[unknown_kind]")
    assert all(kind in line for kind in model.KINDS), line
    assert sorted(p for p in vault_dir.rglob("*")) == before  # no preferences/ folder
    assert "did you mean" not in memvault(vault_dir, "save", "zzzz", "tabs", "Use tabs.").stderr


def test_a_kind_folder_the_vault_has_is_a_known_kind(vault_dir: Path) -> None:
    (vault_dir / "MemoryVault" / "personal-private" / "recipe").mkdir()
    run("--vault", str(vault_dir), "save", "recipe", "pancakes", "Flour, eggs, milk.")
    run("--vault", str(vault_dir), "save", "Domain", "billing", "Invoices go out on the 1st.")  # case is a name's
    assert (vault_dir / "MemoryVault/personal-private/recipe/pancakes.md").is_file()
    typo = run("--vault", str(vault_dir), "save", "recipes", "x", "y", code=1).output
    assert "'recipes' (did you mean recipe?)" in typo


def test_save_help_lists_the_kinds() -> None:
    shown = " ".join(run("save", "--help").output.split())
    assert f"KIND is one of {', '.join(model.KINDS)}" in shown


def test_the_mcp_save_tool_applies_the_same_kind_rule(vault_dir: Path) -> None:
    from memvault.mcpserver import tools

    vault = open_vault(vault_dir)
    with pytest.raises(model.UnknownKind, match="did you mean preference"):
        tools.save(vault, "preferences", "tabs", "# Tabs\nUse tabs.")
    assert not (vault_dir / "MemoryVault/personal-private/preferences").exists()
    assert "saved" in tools.save(vault, "preference", "tabs", "# Tabs\nUse tabs.")


def obsidian_vault(root: Path, notes: int) -> Path:
    (root / ".obsidian").mkdir(parents=True)
    for i in range(notes):
        (root / f"note-{i}.md").write_text(f"# Note {i}\n", encoding="utf-8")
    return root


def test_init_says_what_it_found_and_needs_force_for_a_folder_that_is_not_an_obsidian_vault(tmp_path: Path) -> None:
    plain, repo = tmp_path / "plain", tmp_path / "repo"
    plain.mkdir()
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (repo / "README.md").write_text("# App\n", encoding="utf-8")
    git(repo, "init", "-q")
    for folder, found in ((plain, "a folder with no .obsidian"), (repo, "a git repository with code")):
        said = run("init", str(folder), code=1).output
        assert found in said and "--force" in said and "[not_obsidian]" in said, said
        assert not (folder / "MemoryVault").exists() and not paths.config_file().exists()
    said = run("init", str(plain), "--force").output
    assert "a folder with no .obsidian" in said and (plain / "MemoryVault").is_dir()
    said = run("init", str(obsidian_vault(tmp_path / "Obsidian", 3)), "--force").output
    assert "an Obsidian vault with 3 notes" in said


def test_init_asks_before_replacing_the_configured_vault(tmp_path: Path) -> None:
    first, second = obsidian_vault(tmp_path / "First", 1), obsidian_vault(tmp_path / "Second", 2)
    run("init", str(first))
    assert "is already the configured vault" not in run("init", str(first)).output  # again: nothing asked
    said = run("init", str(second), code=1).output
    assert "replaces the configured vault" in said and str(first) in said and "[replace_vault]" in said, said
    assert config.load().vault_root == first.resolve()
    if hasattr(os, "openpty"):
        argv = [sys.executable, "-m", "memvault", "init", str(second)]
        code, seen = in_a_terminal(argv, b"n\n")
        assert code == 1 and "Replace it?" in seen and config.load().vault_root == first.resolve(), seen
        code, seen = in_a_terminal(argv, b"y\n")
        assert code == 0 and config.load().vault_root == second.resolve(), seen
    run("init", str(first), "--force")
    assert config.load().vault_root == first.resolve()
