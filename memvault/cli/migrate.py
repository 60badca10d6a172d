"""`memvault seed` and `memvault import`: start the vault from what the user already has."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from memvault.claude import seed as seed_mod
from memvault.text import plural
from memvault.vault import importer
from memvault.vault.core import Vault

from .group import State, cli, err, json_option, out, pass_state, print_json
from .render import print_table

_FILE = click.Path(dir_okay=False, path_type=Path)
_DIR = click.Path(file_okay=False, path_type=Path)


@cli.command()
@click.option("--project", type=_DIR, metavar="DIR", help="The project to read CLAUDE.md, AGENTS.md from (default: .).")
@click.option("--from", "extra", multiple=True, type=_FILE, metavar="PATH", help="Another file to read (repeatable).")
@click.option("--only", is_flag=True, help="Read only the --from files, not ~/.claude/CLAUDE.md and the project's.")
@click.option("--accept", is_flag=True, help="Save new rules straight to _always-load/ instead of _review/.")
@click.option("--no-protect", is_flag=True, help="Do not mark the seeded entries protected: true.")
@click.option("--group", "-g", help="Group folder under MemoryVault/ (default: personal-private).")
@click.option("--dry-run", is_flag=True, help="Show what would be seeded; write nothing.")
@json_option
@pass_state
def seed(
    state: State,
    project: Path | None,
    extra: tuple[Path, ...],
    only: bool,
    accept: bool,
    no_protect: bool,
    group: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Seed the always-load core from your instruction files: one entry per rule or convention.

    Reads ~/.claude/CLAUDE.md (or $CLAUDE_CONFIG_DIR/CLAUDE.md), the project's CLAUDE.md,
    .claude/CLAUDE.md and AGENTS.md, every --from file, and the markdown files they import with
    @path. Each list item, paragraph or table becomes a candidate with its heading path as context.
    New rules go to _review/ (approving one in `memvault review` puts it in _always-load/), or with
    --accept straight to _always-load/. Seeded entries are protected: true. Running it again adds
    nothing new; a rule you edited in its file becomes a proposal to supersede the entry it produced.
    """
    if only and not extra:
        raise click.UsageError("--only reads the --from files: give at least one")
    vault = state.vault
    report = seed_mod.seed(
        vault, project=project, extra=extra, only=only, accept=accept, protect=not no_protect, group=group,
        dry_run=dry_run,
    )  # fmt: skip
    if as_json:
        print_json(report.as_dict())
        return
    folder = vault.folder + "/"
    rows = []
    for item in report.created:
        where = " › ".join((item["source"], *item["context"]))
        rows.append((escape(item["path"].removeprefix(folder)), item["route"], escape(where)))
    for item in report.proposals:
        note = " (protected: applied only if you confirm)" if item["protected"] else ""
        replaces = f"edited: replaces {item['replaces'].removeprefix(folder)}{note}"
        rows.append((escape(item["path"].removeprefix(folder)), "supersede?", escape(replaces)))
    print_table(("entry", "route", "from"), rows, wrap=(2,))
    verb = "would seed" if dry_run else "seeded"
    out.print(
        f"{plural(len(report.sources), 'file')} read, {plural(report.candidates, 'rule')}: {verb} "
        f"{len(report.created)} new, {plural(len(report.proposals), 'supersede proposal')}, "
        f"{len(report.unchanged)} already in the vault"
    )
    if not report.sources and not report.errors:
        _looked(project, only)
    for item in report.gone:
        out.print(f"[dim]no longer in {escape(item['source'])}: {escape(item['path'])} (left as it is)[/]")
    for item in report.skipped:
        out.print(f"[dim]skipped {escape(item['title'])}: {escape(item['reason'])}[/]")
    if not dry_run and (report.proposals or any(c["route"] == "review" for c in report.created)):
        out.print("run `memvault review` to approve, edit or reject them")
    for problem in report.errors:
        err.print(f"[yellow]skipped:[/] {escape(problem['path'])}: {escape(problem['error'])}")
    for line in report.warnings:
        err.print(f"[yellow]warning:[/] {escape(line)}")


def _looked(project: Path | None, only: bool) -> None:
    """Where seed looked for instruction files, said when it found none."""
    from memvault import paths
    from memvault.claude.settings import claude_dir

    folder = paths.shown((project or Path.cwd()).expanduser().absolute())
    places = [] if only else [paths.shown(claude_dir().expanduser() / "CLAUDE.md"),
                              f"{', '.join(seed_mod.PROJECT_FILES)} in {folder}"]  # fmt: skip
    looked = f"looked for {' and '.join(places)}: none exists; " if places else ""
    out.print(f"{escape(looked)}name a file to read with --from PATH", soft_wrap=True)


@cli.command("import")
@click.argument("folder", type=_DIR, required=False)
@click.option("--group", "-g", help="Group folder under MemoryVault/ (default: personal-private).")
@click.option("--kind", "-k", default=importer.DEFAULT_KIND, show_default=True, help="Kind of the imported notes.")
@click.option(
    "--map", "mapping", multiple=True, metavar="SUB=KIND",
    help="Notes under the sub-folder SUB get kind KIND (repeatable), e.g. --map domains=domain.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@click.option("--skip-refused", is_flag=True, help="Import the other notes when some cannot be imported.")
@click.option("--undo", "undo_id", is_flag=False, flag_value="last", metavar="[ID]", help="Take back an import.")
@click.option("--yes", "-y", is_flag=True, help="With --undo: remove the listed notes without asking (for scripts).")
@json_option
@pass_state
def import_(
    state: State,
    folder: Path | None,
    group: str | None,
    kind: str,
    mapping: tuple[str, ...],
    dry_run: bool,
    skip_refused: bool,
    undo_id: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Bring an existing folder of markdown notes into MemoryVault/<group>/<kind>/, as one change.

    Every note keeps its file name, text and frontmatter; only missing keys are added (kind, group,
    status, created, source: import, imported). Links between the notes keep opening the same notes:
    the ones a new place would change are rewritten to a path Obsidian cannot mistake. Notes with a
    secret, too large, not UTF-8, with broken frontmatter, symlinks, names already taken, names
    `save` would refuse (CON.md, a:b.md) or differing only in case are listed and nothing is written
    (--skip-refused imports the rest). A note that would load at every session start (always_load,
    or under _always-load/) and that reads like a risky standing instruction goes to _review/ for you
    to approve. `--undo [ID]` lists the notes of the last (or that) import that you have not edited
    since and removes them once you confirm; in a git vault `memvault undo` works too.

    \b
    Examples:
      memvault import ~/ContextVault --map domains=domain --map projects=project --dry-run
      memvault import ~/notes/old-project --group work --kind reference
      memvault import --undo
    """
    vault = state.vault
    if undo_id is not None:
        if folder is not None:
            raise click.UsageError("--undo takes an import id, not a folder")
        undone = _undo(vault, None if undo_id == "last" else undo_id, yes=yes, as_json=as_json)
        if undone is None:
            return
        if as_json:
            print_json(
                {"id": undone.id, "removed": list(undone.paths), "kept": list(undone.kept), "commit": undone.commit}
            )
            return
        out.print(f"import {undone.id} taken back: {plural(len(undone.paths), 'note')} removed")
        if undone.commit:
            out.print(f"committed {undone.commit[:10]}")
        if undone.warning:
            err.print(f"[yellow]warning:[/] {escape(undone.warning)}")
        for rel in undone.paths:
            out.print(f"  removed {escape(rel)}")
        for rel in undone.kept:
            out.print(f"  kept {escape(rel)} (edited since the import)")
        return
    if folder is None:
        raise click.UsageError("give the FOLDER to import (or --undo)")
    pairs = {}
    for item in mapping:
        sub, sep, sub_kind = item.partition("=")
        if not sep or not sub.strip() or not sub_kind.strip():
            raise click.UsageError(f"--map {item}: write it as SUB=KIND, e.g. domains=domain")
        pairs[sub.strip()] = sub_kind.strip()
    plan = importer.plan(vault, folder, group=group, kind=kind, mapping=pairs)
    if not as_json:
        _render_plan(plan, vault.folder + "/")
    done = None if dry_run else importer.apply(vault, plan, skip_refused=skip_refused)
    if as_json:
        print_json({**plan.as_dict(), "dry_run": dry_run, "id": done.id if done else None,
                    "commit": done.commit if done else None})  # fmt: skip
        return
    if done is None:
        out.print(f"dry run: would import {plural(len(plan.notes), 'note')} from {escape(plan.folder)}")
    else:
        out.print(f"imported {plural(len(plan.notes), 'note')} from {escape(plan.folder)} (import {done.id}; "
                  "`memvault import --undo` takes it back)")  # fmt: skip
        if done.commit:
            out.print(f"committed {done.commit[:10]}")
        held = sum(1 for n in plan.notes if n.held)
        if held:
            out.print(f"{plural(held, 'note')} held for review: run `memvault review` to approve or reject them")


def _undo(vault: Vault, import_id: str | None, *, yes: bool, as_json: bool) -> importer.Outcome | None:
    """List what the undo removes, ask (unless --yes), then undo exactly that import; None when declined."""
    preview = importer.undo_preview(vault, import_id)
    if preview.paths and not yes:
        if as_json:
            raise click.UsageError("--undo --json removes notes without asking: add --yes")
        out.print(f"import {preview.id} of {escape(preview.folder)}: {plural(len(preview.paths), 'note')} to remove")
        for rel in preview.paths:
            out.print(f"  remove {escape(rel)}")
        for rel in preview.kept:
            out.print(f"  keep {escape(rel)} (edited since the import)")
        if not click.confirm("Remove them?", default=False):
            out.print("nothing removed")
            return None
    return importer.undo_import(vault, preview.id, expect=preview.paths)


def _render_plan(plan: importer.Plan, folder: str) -> None:
    rows = [(escape(n.source), escape(n.path.removeprefix(folder)), str(len(n.added)) if n.added else "",
             str(n.links) if n.links else "") for n in plan.notes]  # fmt: skip
    print_table(("note", f"into {folder}", "keys added", "links fixed"), rows)
    for n in plan.notes:
        if n.held:
            err.print(f"[yellow]held for review:[/] {escape(n.source)}: {escape(n.held)}; it is written to "
                      f"{escape(n.path.removeprefix(folder))}, not loaded at session start until you approve it "
                      "(`memvault review`)")  # fmt: skip
    for item in plan.refused:
        err.print(f"[red]refused:[/] {escape(item['path'])}: {escape(item['reason'])}")
    for item in plan.skipped:
        out.print(f"[dim]skipped {escape(item['path'])}: {escape(item['reason'])}[/]")
    for line in plan.warnings:
        err.print(f"[yellow]warning:[/] {escape(line)}")
