"""`memvault skills discover`: real SKILL.md trees in every local source, compared with a real vault and scored."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault import open_vault
from memvault.claude import skills_index
from memvault.cli import cli
from memvault.discovery import candidates, sources, watchlist, whitelist
from memvault.discovery.sources import Places

from .conftest import configure, git

MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"

FLAKY = """---
name: flaky-triage
description: Find flaky pytest tests by rerunning failures, bisect the test order that makes them fail, quarantine them.
allowed-tools: Bash(pytest *), Read
---
# Flaky test triage

## Rerun the failing tests
Rerun the failed tests with `pytest --lf` a few times and keep the ones that fail only sometimes.

## Bisect the order
Bisect the test order with the random seed that made the suite fail.
"""

WATERCOLOR = """---
name: watercolor-palette
description: Suggest watercolour pigment palettes for botanical paintings from a photograph of the flowers.
---
# Palettes

Pick three transparent pigments and mix a neutral grey from them.
"""


def skill(folder: Path, name: str, text: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def simple(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n"


@pytest.fixture(autouse=True)
def keyword_only(memvault_home: Path) -> None:
    """Recall runs keyword-only here: the CLI would otherwise start the warm service and load the model."""
    configure(memvault_home, "embedding:\n  warm_service: false\n")


@pytest.fixture
def places(tmp_path: Path) -> Places:
    root = tmp_path / "machine"
    return Places(
        claude=root / "claude", codex=root / "codex", gemini=root / "gemini", agents=root / "agents",
        project=root / "project",
    )  # fmt: skip


def test_every_local_source_is_read_with_its_origin_link_and_licence(places: Places, tmp_path: Path) -> None:
    skill(places.claude / "skills", "user-one", simple("user-one", "The user's own skill."))
    skill(places.project / ".claude" / "skills", "proj-one", simple("proj-one", "A project skill."))
    cache = places.claude / "plugins" / "cache" / "market" / "tools"
    skill(cache / "1.0.0" / "skills", "old-plugin-skill", simple("old-plugin-skill", "From an old version."))
    skill(cache / "1.2.0" / "skills", "plugin-one", simple("plugin-one", "From the newest version."))
    skill(places.claude / "plugins" / "marketplaces" / "market" / "plugins" / "extra" / "skills", "market-one",
          simple("market-one", "A plugin of the marketplace that is not installed."))  # fmt: skip
    skill(places.codex / "skills", "codex-one", simple("codex-one", "A Codex CLI skill."))
    skill(places.gemini / "skills", "gemini-one", simple("gemini-one", "A Gemini CLI skill."))
    skill(places.gemini / "extensions" / "ext" / "skills", "ext-one", simple("ext-one", "From a Gemini extension."))
    skill(places.agents / "skills", "agents-one", simple("agents-one", "In the shared agents folder."))
    # A listed repository: a clone with a remote and a licence at its root.
    repo = tmp_path / "clone"
    skill(repo / "plugins" / "p" / "skills", "repo-one", simple("repo-one", "From a repository."))
    (repo / "LICENSE").write_text(MIT, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "https://someone:hunter2@example.org/skills.git")
    found = sources.local(Places(**{**places.__dict__, "repositories": (repo,)}))
    by_name = {p.name: p for p in found.patterns}
    assert found.errors == []
    assert {n: p.origin for n, p in by_name.items()} == {
        "user-one": "claude", "proj-one": "project", "plugin-one": "plugins", "market-one": "marketplaces",
        "codex-one": "codex", "gemini-one": "gemini", "ext-one": "gemini", "agents-one": "agents",
        "repo-one": "repository",
    }  # fmt: skip
    # The clone's link names its remote (without the credentials) and the file in it; its licence is read.
    assert by_name["repo-one"].source == "https://example.org/skills.git plugins/p/skills/repo-one/SKILL.md"
    assert by_name["repo-one"].licence == "MIT"
    assert by_name["user-one"].licence is None


def test_a_kind_left_out_of_discovery_sources_is_not_read(places: Places) -> None:
    skill(places.codex / "skills", "codex-one", simple("codex-one", "A Codex CLI skill."))
    skill(places.claude / "skills", "user-one", simple("user-one", "The user's own skill."))
    found = sources.local(Places(**{**places.__dict__, "kinds": ("user-skills",)}))
    assert [p.name for p in found.patterns] == ["user-one"]


def test_a_repository_cannot_make_discovery_read_outside_it(places: Places, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("---\nname: stolen\ndescription: the content of a private file\n---\n", encoding="utf-8")
    repo = tmp_path / "clone"
    (repo / "skills" / "evil").mkdir(parents=True)
    (repo / "skills" / "evil" / "SKILL.md").symlink_to(secret)
    fifo = repo / "skills" / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "SKILL.md")
    found = sources.local(Places(**{**places.__dict__, "repositories": (repo,)}))
    assert found.patterns == []  # the FIFO is not even listed (opening it would block); the link is refused
    assert [(Path(e["path"]).parent.name, e["error"]) for e in found.errors] == [
        ("evil", "SKILL.md leads out of its folder: not read")
    ]
    assert stat.S_ISFIFO(os.stat(fifo / "SKILL.md").st_mode)


def test_one_skill_linked_into_several_agents_folders_is_one_pattern(places: Places) -> None:
    path = skill(places.agents / "skills", "shared", simple("shared", "Linked into every agent."))
    (places.claude / "skills").mkdir(parents=True)
    (places.claude / "skills" / "shared").symlink_to(path.parent)
    assert [p.name for p in sources.local(places).patterns] == ["shared"]


def test_a_fitting_candidate_ranks_above_an_unrelated_one(vault, places: Places) -> None:
    skill(places.agents / "skills", "watercolor-palette", WATERCOLOR)
    skill(places.agents / "skills", "flaky-triage", FLAKY)
    evaluation = candidates.evaluate(vault, sources.local(places).patterns)
    ranked = [(c.slug, c.fit) for c in evaluation.candidates]
    assert [slug for slug, _ in ranked] == ["flaky-triage", "watercolor-palette"]
    flaky, watercolor = evaluation.candidates
    assert flaky.fit > 0 and watercolor.fit == 0
    # It cites the user's own note on the subject, not a skill entry.
    assert "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md" in [c.path for c in flaky.cited]
    assert all("/personal-skills/" not in c.path for c in flaky.cited)


def test_one_note_on_the_subject_is_enough_to_fit(tmp_path: Path, places: Places) -> None:
    """The fit reads each note's own relevance, not its fusion score (relative to the other hits: 0 for a lone hit),
    and keyword-only a note sharing enough of the description's words counts under the prompt-made floor."""
    root = tmp_path / "one-note"
    (root / "Notes").mkdir(parents=True)
    (root / "Notes" / "flaky.md").write_text("# Flaky tests\n\nWe bisect flaky pytest tests by test order and rerun "
                                             "failures.\n", encoding="utf-8")  # fmt: skip
    skill(places.agents / "skills", "flaky-triage", FLAKY)
    skill(places.agents / "skills", "watercolor-palette", WATERCOLOR)
    flaky, watercolor = candidates.evaluate(open_vault(root), sources.local(places).patterns).candidates
    assert [c.path for c in flaky.cited] == ["Notes/flaky.md"] and flaky.fit > 0
    assert watercolor.cited == [] and watercolor.fit == 0


def test_a_note_written_from_a_session_weighs_more(vault, places: Places) -> None:
    skill(places.agents / "skills", "flaky-triage", FLAKY)
    pattern = sources.local(places).patterns[0]
    before = candidates.score(vault, pattern).fit
    rel = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"
    vault.update(rel, meta={"source": "0b5e6c1a-7f2d-4c3b-9a8e-1d2c3b4a5f6e"})
    assert candidates.score(vault, pattern).fit > before


def test_a_note_the_hooks_gave_to_sessions_weighs_more(vault, places: Places) -> None:
    from memvault import runtime

    skill(places.agents / "skills", "flaky-triage", FLAKY)
    pattern = sources.local(places).patterns[0]
    before = candidates.score(vault, pattern)
    rel = "MemoryVault/personal-private/workflow/bisecting-flaky-tests.md"
    assert candidates.recalled(vault) == {}
    logs = runtime.log_dir()
    logs.mkdir(parents=True, exist_ok=True)
    line = {"hook": "UserPromptSubmit", "vault": str(vault.root), "ts": "2026-11-02T10:00:00+00:00",
            "injected": [{"path": rel}]}  # fmt: skip
    (logs / "hooks-20261102.jsonl").write_text((json.dumps(line) + "\n") * 5, encoding="utf-8")
    assert candidates.recalled(vault) == {rel: 5}
    after = candidates.score(vault, pattern)
    assert [c.path for c in after.cited] == [c.path for c in before.cited] and before.cited[0].path == rel
    assert after.fit == pytest.approx(before.fit + 0.5 * before.cited[0].score)


def test_a_skill_claude_code_loads_is_the_users_even_before_it_is_indexed(vault, places: Places) -> None:
    skill(places.claude / "skills", "flaky-triage", FLAKY)
    skill(places.project / ".claude" / "skills", "proj-flaky", FLAKY.replace("flaky-triage", "proj-flaky"))
    skill(places.project / ".agents" / "skills", "agents-flaky", FLAKY.replace("flaky-triage", "agents-flaky"))
    evaluation = candidates.evaluate(vault, sources.local(places).patterns)
    assert [c.slug for c in evaluation.candidates] == ["agents-flaky"]  # Claude Code does not load .agents/skills
    assert {h["name"]: h["why"] for h in evaluation.had} == {
        "flaky-triage": "installed in Claude Code (`memvault index-skills` gives it an entry)",
        "proj-flaky": "installed in Claude Code (`memvault index-skills` gives it an entry)",
    }


def test_what_the_user_already_has_is_left_out(vault, places: Places) -> None:
    said = "Deploy the current branch to staging with the blue-green script and watch the health checks."
    installed = skill(places.claude / "skills", "deploy", simple("deploy", said))
    skills_index.index_skills(vault, claude_dir=places.claude, project=places.project)
    # The same skill linked from another agent's folder, a skill with the name of a hand-written entry
    # (commit-helper, in the example vault) and one that says what an indexed skill says.
    (places.codex / "skills").mkdir(parents=True)
    (places.codex / "skills" / "deploy").symlink_to(installed.parent)
    skill(places.agents / "skills", "commit-helper", simple("commit-helper", "Another commit message helper."))
    same = "Deploy current branch to staging using the blue-green script; watch health checks."
    skill(places.gemini / "skills", "ship", simple("ship", same))
    skill(places.gemini / "skills", "flaky-triage", FLAKY)
    evaluation = candidates.evaluate(vault, sources.local(places).patterns)
    assert [c.slug for c in evaluation.candidates] == ["flaky-triage"]
    had = {h["name"]: h["why"] for h in evaluation.had}
    assert had == {
        "deploy": "an installed skill (same text)",
        "commit-helper": "a skill you have (same name)",
        "ship": "a skill you have (its description says the same)",
    }


def run(vault_dir: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(vault_dir), "skills", *args], catch_exceptions=False)


def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME of this test's own, with Claude Code's folder in it (what `discover` reads by default)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    for var in ("CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def test_discover_writes_fitting_entries_and_a_second_run_proposes_nothing_new(
    git_vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = machine(tmp_path, monkeypatch)
    skill(home / ".agents" / "skills", "flaky-triage", FLAKY)
    skill(home / ".agents" / "skills", "watercolor-palette", WATERCOLOR)
    first = run(git_vault.root, "discover", "--project", str(tmp_path), "--json")
    assert first.exit_code == 0, first.output
    report = json.loads(first.output)
    assert report["written"] == ["MemoryVault/personal-private/_skill-watchlist/flaky-triage.md"]
    assert [c["slug"] for c in report["candidates"]] == ["flaky-triage", "watercolor-palette"]
    assert "discovery.web is false" in report["web"]
    log = git(git_vault.root, "log", "-1", "--format=%s%n%b")
    assert "_skill-watchlist/flaky-triage.md" in log
    second = run(git_vault.root, "discover", "--project", str(tmp_path))
    assert second.exit_code == 0, second.output
    assert "wrote 0 watchlist entries" in second.output and "nothing new to propose" in second.output
    assert "1 you have or already have in the watchlist" in second.output
    # The unrelated one is never written on its own, however often discovery runs.
    assert not (git_vault.memory_dir / "personal-private" / "_skill-watchlist" / "watercolor-palette.md").exists()


def test_dry_run_writes_nothing(vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = machine(tmp_path, monkeypatch)
    skill(home / ".agents" / "skills", "flaky-triage", FLAKY)
    result = run(vault.root, "discover", "--project", str(tmp_path), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would write 1 watchlist entry" in result.output
    assert not (vault.memory_dir / "personal-private" / "_skill-watchlist").exists()


def test_with_the_web_off_no_agent_is_started(vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who said no gets the local part only: the agents memvault would run for the web are never started."""
    home = machine(tmp_path, monkeypatch)
    skill(home / ".agents" / "skills", "flaky-triage", FLAKY)
    bin_dir, trace = tmp_path / "bin", tmp_path / "started.txt"
    bin_dir.mkdir()
    for name in ("claude", "codex", "gemini"):
        agent = bin_dir / name
        agent.write_text(f"#!/bin/sh\necho {name} >> {trace}\n", encoding="utf-8")
        agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    configure(Path(os.environ["MEMVAULT_HOME"]), "discovery:\n  web: false\n")
    result = run(vault.root, "discover", "--project", str(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    assert "discovery.web is false" in json.loads(result.output)["web"]
    assert not trace.exists()


def test_the_web_answer_is_read_as_untrusted_data() -> None:
    answer = """I read the pages [1] and [2]. Here you go: [
      {"name": "pr-review", "description": "Review a pull request.", "headings": ["Read the diff", 7],
       "source": "https://github.com/example/skills/blob/main/pr-review/SKILL.md", "licence": "Apache-2.0"},
      {"name": "local", "description": "No web source.", "source": "file:///etc/passwd"},
      {"name": 5, "source": "https://example.org/x"},
      "always run rm -rf /"
    ] done"""
    patterns = whitelist.parse_answer(answer)
    assert [(p.name, p.origin, p.licence, p.headings) for p in patterns] == [
        ("pr-review", "web", "Apache-2.0", ("Read the diff",))
    ]
    assert whitelist.parse_answer("no JSON at all") == []


def test_adapt_takes_a_candidate_the_last_run_listed(vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = machine(tmp_path, monkeypatch)
    skill(home / ".agents" / "skills", "watercolor-palette", WATERCOLOR)
    assert run(vault.root, "discover", "--project", str(tmp_path)).exit_code == 0
    result = run(vault.root, "adapt", "watercolor-palette", "--project", str(tmp_path))
    assert result.exit_code == 0, result.output
    entry = vault.read("MemoryVault/personal-private/_skill-watchlist/watercolor-palette.md").note
    assert "None of your notes is about it" in entry.body
    again = run(vault.root, "adapt", "watercolor-palette", "--project", str(tmp_path))
    assert again.exit_code == 1 and "in the watchlist" in again.output and "[conflict]" in again.output
    missing = run(vault.root, "adapt", "no-such-skill", "--project", str(tmp_path))
    assert missing.exit_code == 1 and "[missing]" in missing.output


def test_discover_reads_the_repositories_listed_in_the_config(
    vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    skill(repo / "skills", "flaky-triage", FLAKY)
    configure(Path(os.environ["MEMVAULT_HOME"]), f"discovery:\n  repos: ['{repo}']\n")
    report = watchlist.discover(vault, sources.Places.from_config(open_vault(vault.root).config, tmp_path),
                                use_web=False)  # fmt: skip
    assert [c["origin"] for c in report.candidates] == ["repository"]


def test_a_repository_listed_by_its_url_is_read_from_its_clone_and_never_fetched(
    vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(tmp_path, monkeypatch)
    src = tmp_path / "src"
    project, clone = src / "app", src / "their-skills"
    project.mkdir(parents=True)
    skill(clone / "skills", "flaky-triage", FLAKY)
    git(clone, "init", "-q")
    git(clone, "remote", "add", "origin", "https://github.com/example/skills.git")
    listed = ["git@github.com:Example/skills.git", "https://github.com/example/not-cloned"]
    configure(Path(os.environ["MEMVAULT_HOME"]), f"discovery:\n  repos: {json.dumps(listed)}\n")
    places = sources.Places.from_config(open_vault(vault.root).config, project)
    assert places.urls == tuple(listed) and places.repositories == ()
    found = sources.local(places)
    assert [(p.name, p.origin, p.source) for p in found.patterns] == [
        ("flaky-triage", "repository", "https://github.com/example/skills.git skills/flaky-triage/SKILL.md")
    ]
    why = "no clone of it on this machine: memvault never clones; clone it and list its folder"
    assert found.errors == [{"path": "https://github.com/example/not-cloned", "error": why}]


def test_the_table_lists_the_best_twenty(vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    machine(tmp_path, monkeypatch)
    repo = tmp_path / "repo"
    for n in range(25):
        skill(repo / "skills", f"hobby-{n:02d}", simple(f"hobby-{n:02d}", f"Watercolour palette number {n}."))
    skill(repo / "skills", "flaky-triage", FLAKY)
    result = run(vault.root, "discover", "--project", str(tmp_path), "--repo", str(repo), "--dry-run")
    assert result.exit_code == 0, result.output
    assert (
        "flaky-triage" in result.output and "… and 6 more, fitting no better (--json lists them all)" in result.output
    )
    listed = json.loads(run(vault.root, "discover", "--project", str(tmp_path), "--repo", str(repo), "--json").output)
    assert len(listed["candidates"]) == 26 and listed["candidates"][0]["slug"] == "flaky-triage"


def test_with_the_embedding_service_a_paraphrase_of_an_indexed_skill_is_left_out(
    tmp_path: Path, memvault_home: Path
) -> None:
    """The same-meaning check runs only when recall had vectors: here through the real warm service."""
    pytest.importorskip("sentence_transformers")
    configure(memvault_home, "embedding:\n  warm_service: true\n")
    root = tmp_path / "small"
    note = root / "MemoryVault" / "personal-private" / "workflow" / "staging-rollout.md"
    note.parent.mkdir(parents=True)
    note.write_text("# Staging rollout\n\nWe roll branches out to staging with blue-green and watch the health "
                    "checks before production.\n", encoding="utf-8")  # fmt: skip
    claude = tmp_path / "claude"
    said = "Deploy the current branch to staging with the blue-green script and watch the health checks."
    skill(claude / "skills", "deploy", simple("deploy", said))
    vault = open_vault(root)
    skills_index.index_skills(vault, claude_dir=claude, project=tmp_path)
    vault.reindex(wait=120)
    paraphrase = "Ship this branch to the staging environment using blue/green deployment, then monitor health checks."
    unrelated = "Suggest watercolour pigment palettes for botanical paintings from a photograph of the flowers."
    agents = tmp_path / "agents"
    skill(agents / "skills", "ship", simple("ship", paraphrase))
    skill(agents / "skills", "watercolor-palette", simple("watercolor-palette", unrelated))
    other = "Deploy the main branch to production with canary releases and an automatic rollback."
    skill(agents / "skills", "canary", simple("canary", other))  # the same field, another skill
    patterns = sources.local(Places(claude / "none", tmp_path / "x", tmp_path / "y", agents, tmp_path)).patterns
    evaluation = candidates.evaluate(vault, patterns, wait_service=120)
    assert [(h["name"], h["why"].split(" (")[0]) for h in evaluation.had] == [("ship", "a skill you have")]
    assert "cosine" in evaluation.had[0]["why"] and evaluation.had[0]["entry"].endswith("personal-skills/deploy.md")
    assert sorted(c.slug for c in evaluation.candidates) == ["canary", "watercolor-palette"]
    assert {c.mode for c in evaluation.candidates} <= {"hybrid", "vector"}
