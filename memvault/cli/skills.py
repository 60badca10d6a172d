"""`memvault index-skills` and `memvault import-claude-memory`: bring what Claude Code already knows into the vault."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from memvault.claude import auto_memory, skills_index
from memvault.text import plural

from .group import State, cli, err, json_option, out, pass_state, print_json
from .render import print_table

_PROJECT = click.Path(file_okay=False, path_type=Path)


@cli.command("index-skills")
@click.option(
    "--project", type=_PROJECT, metavar="DIR", help="The project whose .claude/skills/ to index (default: .)."
)
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@json_option
@pass_state
def index_skills(state: State, project: Path | None, dry_run: bool, as_json: bool) -> None:
    """Keep one personal-skills/<name>.md entry per installed Claude Code skill.

    Reads the SKILL.md files of your skills (~/.claude/skills, or $CLAUDE_CONFIG_DIR/skills), the
    project's (.claude/skills) and the newest version of each installed plugin. Unchanged skills are
    not written; changed ones are updated in place; entries of removed skills get status: archived.
    A malformed SKILL.md is reported and skipped.
    """
    report = skills_index.index_skills(state.vault, project=project, dry_run=dry_run)
    if as_json:
        print_json(report.as_dict())
        return
    folder = state.vault.folder + "/"
    rows = [(escape(rel.removeprefix(folder)), change) for change in ("created", "updated", "archived")
            for rel in getattr(report, change)]  # fmt: skip
    print_table(("entry", "change"), rows)
    for item in report.skipped:
        out.print(f"skipped {escape(item['path'].removeprefix(folder))}: {escape(item['reason'])}", soft_wrap=True)
    verb = "would change" if dry_run else "changed"
    changed = len(report.created) + len(report.updated) + len(report.archived)
    out.print(
        f"{verb} {plural(changed, 'entry')}: {len(report.created)} created, {len(report.updated)} updated, "
        f"{len(report.archived)} archived, {len(report.unchanged)} unchanged"
    )
    for problem in report.errors:
        err.print(f"[yellow]skipped:[/] {escape(problem['path'])}: {escape(problem['error'])}")


@cli.command("import-claude-memory")
@click.option("--project", type=_PROJECT, metavar="DIR", help="The project whose auto memory to import (default: .).")
@click.option("--all", "all_projects", is_flag=True, help="Import the auto memory of every Claude Code project.")
@click.option("--review", is_flag=True, help="Put the imports in _review/ for `memvault review` instead of saving.")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; write nothing.")
@json_option
@pass_state
def import_claude_memory(
    state: State, project: Path | None, all_projects: bool, review: bool, dry_run: bool, as_json: bool
) -> None:
    """Import Claude Code's built-in auto memory (MEMORY.md and its topic files) into the vault.

    Each topic file and each fact written into MEMORY.md becomes one entry (feedback and user →
    preference, project → domain, reference → reference) with source: claude-auto-memory and the
    file it came from. Running it again imports nothing new; facts that nearly duplicate a note
    already in the vault are skipped; secrets are redacted and <private> spans dropped.
    """
    if project is not None and all_projects:
        raise click.UsageError("give --project DIR or --all, not both")
    vault = state.vault
    wait = 30.0 if vault.config.embedding.warm_service and not dry_run else 0.0
    report = auto_memory.import_memory(
        vault, project=project, all_projects=all_projects, dry_run=dry_run, review=review, wait_service=wait
    )
    if as_json:
        print_json({**report.as_dict(), "auto_memory": auto_memory.status(project)})
        return
    folder = vault.folder + "/"
    rows = [(escape(rel.removeprefix(folder)), change) for change in ("created", "updated")
            for rel in getattr(report, change)]  # fmt: skip
    print_table(("entry", "result"), rows)
    for dup in report.duplicates:
        out.print(f"duplicate: {escape(dup['title'])} (of {escape(dup['of'].removeprefix(folder))})", soft_wrap=True)
    for item in report.skipped:
        out.print(f"skipped: {escape(item['reason'])}", soft_wrap=True)
    verb = "would import" if dry_run else "imported"
    where = "_review/" if review else "the vault"
    out.print(
        f"{verb} {plural(len(report.created), 'entry')} into {where} from {plural(len(report.folders), 'folder')}; "
        f"{len(report.updated)} updated, {len(report.unchanged)} already imported, "
        f"{plural(len(report.duplicates), 'near-duplicate')} skipped"
    )
    for note in report.notes:
        err.print(f"[yellow]note:[/] {escape(note)}")
    auto = auto_memory.status(project)
    if not all_projects and auto["active"]:
        out.print(
            "Claude Code's auto memory is still on for this project: it keeps its own copy, and new facts "
            "reach MemoryVault only when you import again (autoMemoryEnabled: false turns it off)."
        )
    for problem in report.errors:
        err.print(f"[yellow]skipped:[/] {escape(problem['path'])}: {escape(problem['error'])}")
