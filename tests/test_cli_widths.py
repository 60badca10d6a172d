"""Every table the CLI prints, at 60, 80 and 200 columns: no path or identifier split, no cell cut mid-word."""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memvault import open_vault, runtime
from memvault.claude import auto_memory
from memvault.cli import cli
from memvault.reflect import runner

from .conftest import configure
from .test_reflect import write_transcript

GROUP = "team-platform-infrastructure-and-reliability"
F = "MemoryVault/"
WIDTHS = (60, 80, 200)


@pytest.fixture(autouse=True)
def no_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)


def run(width: int, vault: Path, *args: str) -> str:
    """The command's output as a user sees it in a terminal `width` columns wide."""
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(cli, ["--vault", str(vault), *args])
    assert result.exit_code == 0, result.output
    return result.output


def data(vault: Path, *args: str) -> object:
    return json.loads(run(200, vault, *args, "--json"))


def whole(output: str, *, lines: list[str] = (), words: list[str] = (), width: int = 0) -> None:  # type: ignore[assignment]
    """Each of `lines` (a path, a name) sits whole on one line; each word of `words` is printed unbroken.

    With `width`, no table row and no field of a block (the lines that start with a space; sentences are
    left to the terminal) is wider than the terminal, which would break it anywhere, unless it is one word
    alone: a path longer than the terminal is wide.
    """
    printed = output.splitlines()
    for line in [line for line in printed if line.startswith(" ")] if width else ():
        assert len(line) <= width or len(line.split()) == 1, f"a line wider than {width} columns:\n{line}"
    for ident in lines:
        assert ident and any(ident in line for line in printed), f"{ident!r} is split or cut in:\n{output}"
    tokens = output.split()
    for text in words:
        for word in str(text).split():
            assert any(word in token for token in tokens), f"{word!r} is cut mid-word in:\n{output}"


@pytest.fixture
def long_vault(vault_dir: Path, memvault_home: Path) -> Path:
    """The example vault plus entries with long paths, a promoted one, an inbox capture and a hook log."""
    vault = open_vault(vault_dir)
    vault.save("preference", "prefer-small-focused-pull-requests-with-tests", "# Small focused pull requests\n\n"
               "Keep pull requests small and focused, each with its tests; reviewers read them in one sitting.",
               group=GROUP, tags=("code-review", "pull-requests"))  # fmt: skip
    vault.save("workflow", "promote-the-dependency-graph-cache-project", "Cache the dependency graph.", group=GROUP,
               meta={"status": "promoted"})  # fmt: skip
    vault.save("fix", "restart-the-flaky-runner-before-blaming-the-test-suite-again", "Restart the runner first.",
               group=GROUP, folder="_inbox", confidence="low")  # fmt: skip
    vault.reindex(vectors="none")
    runtime.log_event({"hook": "UserPromptSubmit", "session": "5f0c2a7e-long-session", "result": "success",
                       "duration_ms": 41, "prompt": "how big should a pull request be",
                       "injected": [{"path": f"{F}{GROUP}/preference/prefer-small-focused-pull-requests-with-tests.md",
                                     "score": 0.61, "vec": 0.4, "kw": 0.9,
                                     "why": "meaning and keywords above the relevance floor"}],
                       "dropped": [{"path": f"{F}{GROUP}/workflow/promote-the-dependency-graph-cache-project.md",
                                    "score": 0.1, "vec": 0.1, "kw": 0.0,
                                    "why": "below the relevance floor"}]})  # fmt: skip
    configure(memvault_home, "reflection:\n  miner: offline\n")
    return vault_dir


@pytest.mark.parametrize("width", WIDTHS)
def test_list_inbox_and_health_keep_paths_names_and_statuses_whole(long_vault: Path, width: int) -> None:
    listed = data(long_vault, "list", "--all")
    output = run(width, long_vault, "list", "--all")
    fields = [f"{e['kind'] or ''} {e['status']} {', '.join(e['tags'])}" for e in listed]
    whole(output, width=width, lines=[e["path"] for e in listed], words=fields)
    promoted = run(width, long_vault, "list", "--status", "promoted")
    whole(promoted, width=width, lines=[f"{F}{GROUP}/workflow/promote-the-dependency-graph-cache-project.md",
                                        f"{F}personal-projects/cli-dashboard/_index.md"],
          words=["promoted", "idea, project, textual, cli"])  # fmt: skip
    inbox = data(long_vault, "inbox")["entries"]
    whole(run(width, long_vault, "inbox"), width=width, lines=[Path(e["path"]).stem for e in inbox],
          words=[f"{e['title']} {e['kind']} {e['confidence']}" for e in inbox])  # fmt: skip
    for file in (long_vault / F / "personal-private" / "_idea-incubator").rglob("*"):
        os.utime(file, (0, 0))  # untouched since 1970: `gc` lists the idea (without a terminal it changes nothing)
    ideas = data(long_vault, "gc", "--months", "1")["ideas"]
    assert ideas
    whole(run(width, long_vault, "gc", "--months", "1"), lines=[i["slug"] for i in ideas],
          words=[i["title"] for i in ideas])  # fmt: skip
    health = data(long_vault, "health")
    whole(run(width, long_vault, "health"), lines=[*health["by_group"], *health["by_kind"], *health["by_status"]])


@pytest.mark.parametrize("width", WIDTHS)
def test_recall_gives_each_hit_its_path_whole_and_a_readable_match(long_vault: Path, width: int) -> None:
    for query in (("small", "focused", "pull", "requests"), ("python", "formatter", "ruff", "environments")):
        recall(long_vault, width, query)


def recall(long_vault: Path, width: int, query: tuple[str, ...]) -> None:
    hits = data(long_vault, "recall", "--wait", "0", "--no-floor", *query)["hits"]
    output = run(width, long_vault, "recall", "--wait", "0", "--no-floor", *query)
    whole(output, width=width, lines=[h["path"] for h in hits], words=[f"{h['title']} {h['snippet']}" for h in hits])
    # A match column squeezed to a few characters takes 25 lines a hit; a readable one under ten.
    assert len(output.splitlines()) <= 10 * len(hits) + 2, output
    explained = run(width, long_vault, "recall", "--wait", "0", "--explain", *query)
    whole(explained, width=width, lines=[h["path"] for h in hits], words=[h["title"] for h in hits])


@pytest.mark.parametrize("width", WIDTHS)
def test_inspect_keeps_injected_paths_whole(long_vault: Path, width: int) -> None:
    records = data(long_vault, "inspect")
    entries = [e for r in records for e in (*r.get("injected", ()), *r.get("dropped", ()))]
    assert len(entries) == 2
    output = run(width, long_vault, "inspect")
    whole(output, width=width, lines=[e["path"] for e in entries], words=[e["why"] for e in entries])


@pytest.mark.parametrize("width", WIDTHS)
def test_seed_import_and_reflect_keep_paths_whole(long_vault: Path, tmp_path: Path, width: int) -> None:
    rules = tmp_path / "instructions-for-the-platform-infrastructure-team" / "CLAUDE.md"
    rules.parent.mkdir()
    rules.write_text("# Conventions for the deployment pipeline\n\n## Release engineering\n\n"
                     "- Always tag release candidates with the ticket number before promoting them to staging.\n"
                     "- Never force-push to the protected release branches of the deployment repository.\n",
                     encoding="utf-8")  # fmt: skip
    seeded = data(long_vault, "seed", "--only", "--from", str(rules), "--dry-run")["created"]
    output = run(width, long_vault, "seed", "--only", "--from", str(rules), "--dry-run")
    whole(output, lines=[c["path"].removeprefix(F) for c in seeded] + [str(rules)],
          words=[" ".join(c["context"]) for c in seeded])  # fmt: skip

    notes = tmp_path / "old-notes"
    (notes / "architecture-decisions").mkdir(parents=True)
    (notes / "architecture-decisions" / "adopt-event-sourcing-for-the-billing-ledger-service.md").write_text(
        "# Event sourcing\n\nSee [[why-we-moved-the-billing-ledger-off-the-shared-postgres-cluster]].\n")
    (notes / "why-we-moved-the-billing-ledger-off-the-shared-postgres-cluster.md").write_text("# Why\n\nLoad.\n")
    plan = data(long_vault, "import", str(notes), "-g", GROUP, "--dry-run")["notes"]
    output = run(width, long_vault, "import", str(notes), "-g", GROUP, "--dry-run")
    whole(output, lines=[n["source"] for n in plan] + [n["path"].removeprefix(F) for n in plan])

    transcript = write_transcript(tmp_path / "session-with-a-long-name.jsonl", "s-widths", [
        ("user", "From now on, always name branches after the ticket number, like PLAT-1234-short-description."),
        ("assistant", "Understood, I will do that from now on."),
    ])  # fmt: skip
    routes = data(long_vault, "reflect", "--session", str(transcript), "--dry-run")["routes"]
    assert routes
    output = run(width, long_vault, "reflect", "--session", str(transcript), "--dry-run")
    folder = F
    whole(output, lines=[(r.get("path") or r["target"]).removeprefix(folder) for r in routes],
          words=[f"{r['action']} {r.get('confidence', '')} {r.get('title', '')}" for r in routes])  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_skills_and_claude_memory_keep_entries_whole(
    long_vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    claude = tmp_path / "claude-config"
    skill = claude / "skills" / "summarise-the-failing-continuous-integration-runs" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: summarise-the-failing-continuous-integration-runs\ndescription: Summarise CI.\n"
                     "---\nRead the logs.\n", encoding="utf-8")  # fmt: skip
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.delenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", raising=False)
    project = tmp_path / "work" / "shop_api"
    project.mkdir(parents=True)
    memory = claude / "projects" / auto_memory.project_key(project.resolve()) / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [Database migrations](database_migrations_are_reviewed_by_the_dba.md)\n")
    (memory / "database_migrations_are_reviewed_by_the_dba.md").write_text(
        "---\nname: Database migrations\ndescription: the DBA reviews them\ntype: project\n---\n"
        "Every database migration of shop_api is reviewed by the database administrator before it merges.\n")

    created = data(long_vault, "index-skills", "--project", str(project), "--dry-run")["created"]
    assert created
    output = run(width, long_vault, "index-skills", "--project", str(project), "--dry-run")
    whole(output, lines=[rel.removeprefix(F) for rel in created])
    imported = data(long_vault, "import-claude-memory", "--project", str(project), "--dry-run")["created"]
    assert imported
    output = run(width, long_vault, "import-claude-memory", "--project", str(project), "--dry-run")
    whole(output, lines=[rel.removeprefix(F) for rel in imported])


def test_the_helper_falls_back_to_blocks_and_wraps_prose_between_words() -> None:
    """print_table straight: at 60 columns a long key goes on a line of its own; prose never breaks a word."""
    from rich.console import Console

    from memvault.cli import render

    key = f"{F}{GROUP}/preference/prefer-small-focused-pull-requests-with-tests.md"
    prose = "a long explanation " * 8 + "with-an-unbreakable-hyphenated-identifier-in-it"
    for width in WIDTHS:
        console = Console(width=width, record=True, highlight=False)
        render.print_table(("entry", "score", "match"), [(key, "0.512", prose)], wrap=(2,), console=console)
        output = console.export_text()
        whole(output, lines=[key, "with-an-unbreakable-hyphenated-identifier-in-it"], words=[prose, "0.512"])
        table = width >= len(key) + len("0.512") + 20 + 6
        assert (output.splitlines()[0].split() == ["entry", "score", "match"]) == table, output
        assert all(len(line.rstrip()) <= width for line in output.splitlines() if key not in line), output


def test_click_runner_columns_reach_the_console(long_vault: Path) -> None:
    """The tests above rely on COLUMNS deciding the width, as it does in a terminal or with `COLUMNS=… memvault`."""
    narrow, wide = run(60, long_vault, "list"), run(200, long_vault, "list")
    assert narrow != wide


NAME = st.text(alphabet=string.ascii_lowercase + string.digits + "-_./", min_size=1, max_size=90)
PROSE = st.lists(st.text(alphabet=string.ascii_letters + string.digits + "-,.:`()", min_size=1, max_size=30),
                 max_size=25).map(" ".join)  # fmt: skip


@settings(max_examples=150, deadline=None)
@example(rows=[("0", "0", ":A: and :smile:", 0)], width=60)  # rich read ":a:" as an emoji code (found by hypothesis)
@given(
    rows=st.lists(st.tuples(NAME, NAME, PROSE, st.integers(0, 10**6)), min_size=1, max_size=5),
    width=st.integers(60, 200),
)
def test_any_table_at_any_width_keeps_names_whole_and_words_unbroken(rows: list, width: int) -> None:
    from rich.console import Console

    from memvault.cli import render

    console = Console(width=width, record=True, highlight=False)
    cells = [(path, name, prose, str(n)) for path, name, prose, n in rows]
    render.print_table(("path", "name", "about", "count"), cells, wrap=(2,), console=console)
    output = console.export_text()
    whole(output, width=width, lines=[c for row in cells for c in (row[0], row[1], row[3])],
          words=[row[2] for row in cells])  # fmt: skip


def test_a_title_that_looks_like_an_emoji_code_prints_as_written(vault_dir: Path) -> None:
    vault = open_vault(vault_dir)
    vault.save("workflow", "tada-release-checklist", "# :tada: release checklist\n\nTag, then announce.")
    output = run(200, vault_dir, "search", "release checklist announce")
    assert ":tada: release checklist" in output and "\N{PARTY POPPER}" not in output
