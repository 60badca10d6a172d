"""`memvault review` and `memvault inbox` driven through CliRunner, checked through the vault."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memvault import open_vault
from memvault.cli import cli

P = "MemoryVault/personal-private/"
ALEMBIC = P + "_review/alembic-enum-add-value.md"
DEPENDABOT = P + "_inbox/dependabot-grouped-updates.md"
FORMATTER = P + "preference/python-formatter.md"


def run(vault_dir: Path, *args: str, input: str | None = None, code: int = 0) -> click.testing.Result:
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), *args], input=input)
    assert result.exit_code == code, result.output
    return result


def queue(vault_dir: Path, folder: str, slug: str, text: str, **meta) -> str:
    vault = open_vault(vault_dir)
    return vault.save("preference", slug, text, folder=folder, source="sess-9", confidence="medium", meta=meta).path


def test_review_approve_moves_the_entry_to_its_kind_folder(vault_dir: Path) -> None:
    result = run(vault_dir, "review", input="a\n")
    assert "Alembic does not pick up new Postgres enum values" in result.output and "1/1" in result.output
    assert not (vault_dir / ALEMBIC).exists()
    nf = open_vault(vault_dir).read(P + "fix/alembic-enum-add-value.md")
    assert nf.note.meta["review"] == "approved" and nf.note.meta["status"] == "active"
    assert nf.note.meta["source"] == "b8922966-c501-4b55-93f9-b7b3210baab3"  # provenance kept
    assert "1 approve" in result.output
    assert "nothing to review" in run(vault_dir, "review").output


def test_review_reject_skip_and_quit(vault_dir: Path) -> None:
    second = queue(vault_dir, "_review", "httpx", "# Use httpx\n\nUse httpx for HTTP calls.\n")
    third = queue(vault_dir, "_review", "no-emoji", "# No emoji\n\nNo emoji in commit messages.\n")
    result = run(vault_dir, "review", input="s\nr\nq\n")
    assert (vault_dir / ALEMBIC).exists() and (vault_dir / third).exists()  # skipped; never reached
    assert not (vault_dir / second).exists()
    assert "1 skip, 1 reject" in result.output
    assert not list((vault_dir / P).rglob("httpx*.md"))  # rejected means gone, not moved


def test_review_edit_opens_the_editor_then_approves(vault_dir: Path, tmp_path: Path, monkeypatch) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text(
        "#!/bin/sh\nsed -i 's/Write it by hand/Write the migration by hand/; s/^kind: fix/kind: workflow/' \"$1\"\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    result = run(vault_dir, "review", input="e\n")
    assert "edited and approved" in result.output
    moved = P + "workflow/alembic-enum-add-value.md"  # the edited kind decides the folder
    nf = open_vault(vault_dir).read(moved)
    assert "Write the migration by hand" in nf.note.body and nf.note.meta["kind"] == "workflow"
    assert not (vault_dir / ALEMBIC).exists()


def test_review_supersede_replaces_the_proposed_entry(vault_dir: Path) -> None:
    os.remove(vault_dir / ALEMBIC)
    proposal = queue(
        vault_dir, "_review", "black-88", "# Python formatter: black, 88\n\nFormat with black at 88.\n",
        proposes_supersede=FORMATTER,
    )  # fmt: skip
    result = run(vault_dir, "review", input="x\n")
    assert f"proposes to supersede {FORMATTER}" in result.output.replace("\n", " ")
    vault = open_vault(vault_dir)
    new = vault.read(FORMATTER).note
    assert "Format with black at 88." in new.body and new.meta["supersedes"].startswith(P + "_archive/")
    assert "proposes_supersede" not in new.meta and new.meta["source"] == "sess-9"
    assert new.meta["tags"] == ["python", "formatting", "ruff"]  # the capture had none: the old ones carry over
    assert vault.read(new.meta["supersedes"]).note.meta["status"] == "superseded"
    assert not (vault_dir / proposal).exists()


def test_review_supersede_asks_for_the_entry_when_none_is_proposed(vault_dir: Path) -> None:
    run(vault_dir, "review", input=f"x\n{P}workflow/db-migration-rollout.md\n")
    vault = open_vault(vault_dir)
    assert "alembic" in vault.read(P + "workflow/db-migration-rollout.md").note.body.lower()
    assert not (vault_dir / ALEMBIC).exists()


def test_inbox_list_accept_and_reject(vault_dir: Path) -> None:
    extra = queue(vault_dir, "_inbox", "tabs-in-go", "# Tabs in Go\n\ngofmt decides.\n")
    listed = json.loads(run(vault_dir, "inbox", "--json").output)
    assert {e["path"] for e in listed["entries"]} == {DEPENDABOT, extra} and listed["warnings"] == []
    assert "2 entries in the inbox" in run(vault_dir, "inbox").output
    accepted = json.loads(run(vault_dir, "inbox", "accept", "dependabot-grouped-updates", "--json").output)
    assert accepted["results"][0]["new"] == P + "preference/dependabot-grouped-updates.md"
    assert open_vault(vault_dir).read(P + "preference/dependabot-grouped-updates.md").note.meta["review"] == "accepted"
    run(vault_dir, "inbox", "reject", "--all")
    assert (
        not (vault_dir / extra).exists() and json.loads(run(vault_dir, "inbox", "list", "--json").output)["inbox"] == 0
    )
    assert "no such entry" in run(vault_dir, "inbox", "accept", "nope", code=1).output
    assert "--all" in run(vault_dir, "inbox", "accept", code=2).output


def test_inbox_accept_applies_a_supersede_proposal(vault_dir: Path) -> None:
    proposal = queue(
        vault_dir, "_inbox", "ruff-120", "# Ruff at 120\n\nLine length 120.\n", proposes_supersede=FORMATTER
    )
    out = json.loads(run(vault_dir, "inbox", "accept", proposal, "--json").output)
    assert out["results"][0]["action"] == "superseded" and out["results"][0]["new"] == FORMATTER
    assert "Line length 120." in open_vault(vault_dir).read(FORMATTER).note.body


@pytest.mark.parametrize("where", ["inbox", "incubator"])
def test_warnings_when_the_inbox_or_incubator_overflows(vault_dir: Path, memvault_home: Path, where: str) -> None:
    memvault_home.mkdir(parents=True, exist_ok=True)
    (memvault_home / "config.yaml").write_text("reflection:\n  inbox_warn: 1\n  incubator_warn: 1\n")
    vault = open_vault(vault_dir)
    if where == "inbox":
        queue(vault_dir, "_inbox", "second", "# Second\n\nSecond capture.\n")
    else:
        vault.save("idea", "_index", "# Idea two\n\nA second idea.\n", folder="_idea-incubator/idea-two",
                   meta={"status": "incubating"})  # fmt: skip
    listed = json.loads(run(vault_dir, "inbox", "--json").output)
    (warning,) = listed["warnings"]
    assert ("inbox holds 2" if where == "inbox" else "incubator holds 2") in warning
    result = CliRunner().invoke(cli, ["--vault", str(vault_dir), "inbox"])
    assert "warning:" in result.stderr and "warning:" not in result.stdout
    assert "warning:" in run(vault_dir, "review", input="s\n").stderr


def write_session(path: Path, session: str, said: str) -> Path:
    lines = [
        {"type": "user", "sessionId": session, "uuid": "u1", "message": {"role": "user", "content": "Set it up."}},
        {"type": "assistant", "sessionId": session, "uuid": "a1",
         "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Done with pip."}]}},
        {"type": "user", "sessionId": session, "uuid": "u2", "message": {"role": "user", "content": said}},
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_reflect_session_dry_run_then_for_real(vault_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from memvault.reflect import runner

    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)
    path = write_session(tmp_path / "s.jsonl", "sess-1", "From now on, always name branches after the ticket number.")
    dry = json.loads(run(vault_dir, "reflect", "--session", str(path), "--dry-run", "--json").output)
    assert dry["dry_run"] and dry["written"] == [] and dry["routes"][0]["action"] == "save"
    assert not (vault_dir / dry["routes"][0]["path"]).exists()
    shown = run(vault_dir, "reflect", "--session", str(path)).output
    assert "save" in shown and "wrote 1 entry " in shown
    assert "miner: offline, because reflection.miner is offline" in shown  # which miner ran, and why
    assert "--show-prompt goes with --dry-run" in run(vault_dir, "reflect", "--show-prompt", code=2).output
    assert (vault_dir / dry["routes"][0]["path"]).exists()
    again = json.loads(run(vault_dir, "reflect", "--session", str(path), "--json").output)
    assert again["written"] == [] and again["turns"] == 0


def test_reflect_corpus_defaults_to_the_claude_projects_folder(vault_dir: Path, tmp_path: Path, monkeypatch) -> None:
    from memvault.reflect import runner

    monkeypatch.setattr(runner, "WAIT_SERVICE_S", 0.0)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    project = tmp_path / "claude" / "projects" / "-home-u-proj"
    write_session(project / "a.jsonl", "sess-a", "Never add emojis to commit messages.")
    write_session(project / "b.jsonl", "sess-b", "Always write SQL keywords in upper case.")
    report = json.loads(run(vault_dir, "reflect", "--corpus", "--json").output)
    assert report["folder"] == str(tmp_path / "claude" / "projects") and report["files"] == 2
    assert len(report["written"]) == 2 and report["warnings"] == []
    assert "2 already done" in run(vault_dir, "reflect", "--corpus", str(project)).output
    # Without --session or --corpus: the newest transcript of the current folder's project.
    monkeypatch.chdir(tmp_path)
    newest = runner.project_folder(tmp_path)
    write_session(newest / "c.jsonl", "sess-c", "Always keep timestamps in UTC.")
    shown = json.loads(run(vault_dir, "reflect", "--json").output)
    assert shown["transcript"] == str(newest / "c.jsonl") and len(shown["written"]) == 1
    assert "--session" in run(vault_dir, "reflect", "--corpus", "--session", "x.jsonl", code=2).output


def test_evolve_with_no_heading_in_the_new_body_keeps_the_old_title(vault_dir: Path) -> None:
    """The example's formatter preference is titled by its heading; the new body has none."""
    vault = open_vault(vault_dir)
    old_title = vault.entry(FORMATTER).title
    assert old_title != "python-formatter"
    run(vault_dir, "evolve", FORMATTER, "Use ruff format everywhere.", "--reason", "ruff replaced black")
    assert open_vault(vault_dir).entry(FORMATTER).title == old_title
    run(vault_dir, "evolve", FORMATTER, "# Ruff only\n\nUse ruff format everywhere.", "--reason", "own title")
    assert open_vault(vault_dir).entry(FORMATTER).title == "Ruff only"  # a heading of its own wins
