"""`memvault init`, `save`, `evolve`, `undo`, `list`, `show`: writing and reading entries."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from memvault import config as config_mod
from memvault.errors import MemvaultError
from memvault.store import model, notes, privacy, secrets
from memvault.text import plural
from memvault.vault.core import open_vault

from .group import (
    State,
    body_of,
    cli,
    confirmed,
    err,
    json_option,
    out,
    pass_state,
    print_json,
    print_result,
    yes_option,
)
from .render import print_table


@cli.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--force", is_flag=True, help="Use a folder that is no Obsidian vault, or replace the configured vault, unasked."
)
@json_option
@pass_state
def init(state: State, path: Path | None, force: bool, as_json: bool) -> None:
    """Create the MemoryVault/ folders in a vault and record the vault in the config.

    PATH defaults to --vault. Says what it found there; a folder without .obsidian/ (not an
    Obsidian vault), or replacing the vault the config names, is asked about first (--force: don't).
    Safe to run again: existing folders and notes are left alone.
    """
    root = path or (Path(state.vault_path) if state.vault_path else None)
    if root is None:
        raise click.UsageError("give the vault folder: memvault init PATH")
    if not root.is_dir():
        raise MemvaultError(f"{root} is not a folder: create the Obsidian vault first", code="no_vault")
    found, obsidian = _found(root)
    if not obsidian:
        _ask_or_force(force, f"{root} is {found}, so not an Obsidian vault", "Use it anyway?", "not_obsidian")
    configured = config_mod.load(env={}).vault_root
    if configured is not None and not _same_folder(configured, root):
        _ask_or_force(force, f"memvault init {root} replaces the configured vault {configured}", "Replace it?",
                      "replace_vault")  # fmt: skip
    vault = open_vault(root)
    created = vault.init_structure()
    cfg_path = config_mod.write_vault_root(vault.root)
    if as_json:
        print_json({"vault": str(vault.root), "found": found, "created": created, "config": str(cfg_path)})
        return
    out.print(f"found {escape(found)} in [bold]{escape(str(vault.root))}[/]", soft_wrap=True)
    for rel in created:
        out.print(f"created [bold]{rel}/[/]")
    out.print(
        f"vault [bold]{vault.root}[/] is ready ({'nothing to create' if not created else f'{len(created)} folders'});"
        f" config: {cfg_path}"
    )


CODE_SUFFIXES = frozenset(
    [".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".cs", ".rb",
     ".php", ".swift", ".scala", ".sh"]
)  # fmt: skip
SCAN_LIMIT = 50_000  # files looked at to tell what a folder is: a huge folder is described from its first ones


def _found(root: Path) -> tuple[str, bool]:
    """What `root` is, in words ("an Obsidian vault with 173 notes"), and whether it is an Obsidian vault."""
    notes_n = code_n = 0
    for seen, path in enumerate(_files(root)):
        if seen >= SCAN_LIMIT:
            break
        notes_n += path.suffix.lower() == ".md"
        code_n += path.suffix.lower() in CODE_SUFFIXES
    counted = plural(notes_n, "note")
    if (root / ".obsidian").is_dir():
        return f"an Obsidian vault with {counted}", True
    if (root / ".git").exists():
        if code_n:
            return f"a git repository with code ({plural(code_n, 'source file')}, {counted}) and no .obsidian", False
        return f"a git repository ({counted}) with no .obsidian", False
    return f"a folder with no .obsidian ({counted})", False


def _files(root: Path) -> Iterator[Path]:
    """The files under `root`, not looking into hidden folders (.git, .obsidian, .venv) or node_modules."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        for name in files:
            yield Path(folder) / name


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.expanduser().resolve() == b.resolve()
    except OSError:
        return False


def _ask_or_force(force: bool, what: str, question: str, code: str) -> None:
    """Go on with --force or a yes at the terminal; else stop before anything is written."""
    if force:
        return
    if sys.stdin is None or not sys.stdin.isatty():
        raise MemvaultError(f"{what}: nothing changed; run it again with --force to go ahead anyway", code=code)
    if not click.confirm(f"{what}. {question}", default=False, err=True):
        raise MemvaultError(f"{what}: nothing changed", code=code)


@cli.command()
@click.argument("kind")
@click.argument("slug")
@click.argument("body", required=False)
@click.option("--group", "-g", help="Group folder under MemoryVault/ (default: personal-private).")
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--always-load", is_flag=True, help="Load this entry at every session start.")
@click.option("--private", is_flag=True, help="Never inject this entry into agent context.")
@click.option("--replace", is_flag=True, help="Overwrite an existing entry in place (keeps created and unknown keys).")
@click.option("--source", default="manual", show_default=True, help="Provenance: a session id, or manual.")
@click.option("--confidence", type=click.Choice(["high", "medium", "low"]), help="Confidence at capture.")
@yes_option
@json_option
@pass_state
def save(
    state: State,
    kind: str,
    slug: str,
    body: str | None,
    group: str | None,
    tags: tuple[str, ...],
    always_load: bool,
    private: bool,
    replace: bool,
    source: str,
    confidence: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Write an entry to MemoryVault/<group>/<kind>/<slug>.md.

    KIND is one of {kinds}, or a kind folder the vault already has (create
    MemoryVault/<group>/<kind>/ to start a new kind); another is refused as a typo.

    BODY is the markdown text; omit it or give - to read standard input. A body that starts with
    its own frontmatter contributes those keys. Replacing a protected entry asks first (--yes: don't).

    \b
    Example:
      memvault save preference pytest-style "Use plain asserts and fixtures." -t python
    """
    vault = state.vault
    kind = model.check_kind(kind, model.kind_folders(vault.root / vault.folder))
    text = body_of(body)
    result = confirmed(
        vault,
        lambda: vault.save(
            kind,
            slug,
            text,
            group=group,
            tags=tags,
            always_load=always_load,
            private=private,
            replace=replace,
            source=source,
            confidence=confidence,
        ),
        yes=yes,
        what="Replace it",
    )
    print_result(result, as_json)


save.help = (save.help or "").replace("{kinds}", ", ".join(model.KINDS))  # the kinds are named once, in the model


@cli.command()
@click.argument("old_path")
@click.argument("content", required=False)
@click.option("--reason", "-r", required=True, help="Why the old entry is outdated (recorded in the new one).")
@click.option("--slug", help="Give the new entry another slug (default: it takes the old entry's place).")
@click.option("--tag", "-t", "tags", multiple=True, help="Replace the tags (repeatable; default: keep the old ones).")
@click.option("--outside", is_flag=True, help="Allow evolving a note outside MemoryVault/.")
@yes_option
@json_option
@pass_state
def evolve(
    state: State,
    old_path: str,
    content: str | None,
    reason: str,
    slug: str | None,
    tags: tuple[str, ...],
    outside: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Supersede OLD_PATH atomically with new CONTENT (or - / standard input).

    The new entry records `supersedes:`; the old one moves to _archive/ with `status: superseded`
    and `superseded_by:`. A crash at any moment leaves either the whole old or the whole new state.
    Superseding a protected entry asks first (--yes: don't); the new entry stays protected.
    """
    text = body_of(content)
    result = confirmed(
        state.vault,
        lambda: state.vault.evolve(old_path, text, reason=reason, slug=slug, tags=tags or None, outside=outside),
        yes=yes,
        what="Supersede it",
    )
    print_result(result, as_json)


@cli.command()
@json_option
@pass_state
def undo(state: State, as_json: bool) -> None:
    """Revert the last memvault change with `git revert` (the vault must be a git repository)."""
    from memvault.store import gitops  # prints the change it undid, then every file it restored or removed

    vault = state.vault
    result = vault.undo()
    repo = vault.git_repo()
    undid = gitops.reverts(repo, result.commit) if repo and result.commit else None
    target = gitops.commit_of(repo, undid) if repo and undid else None
    restored = [p for p in result.paths if (vault.root / p).exists()]
    removed = [p for p in result.paths if not (vault.root / p).exists()]
    if as_json:
        undone = {"commit": undid, "subject": target.subject.removeprefix("memvault: ") if target else None}
        print_json({**dataclasses.asdict(result), "undid": undone, "restored": restored, "removed": removed})
        return
    what = target.subject.removeprefix("memvault: ") if target else "the last memvault change"
    out.print(f"undo: {escape(what)}" + (f" (commit {undid[:10]})" if undid else ""), soft_wrap=True)
    for word, paths in (("restored", restored), ("removed", removed)):
        for rel in paths:
            out.print(f"  {word} {escape(rel)}", soft_wrap=True)
    if result.commit:
        out.print(f"committed {result.commit[:10]}")
    if result.warning:
        err.print(f"[yellow]warning:[/] {escape(result.warning)}")


@cli.command(name="list")
@click.option("--group", "-g", help="Only this group.")
@click.option("--kind", "-k", help="Only this kind.")
@click.option("--status", "-s", help="Only this status (active, superseded, …).")
@click.option("--all", "everything", is_flag=True, help="Include your own notes outside MemoryVault/.")
@json_option
@pass_state
def list_(
    state: State, group: str | None, kind: str | None, status: str | None, everything: bool, as_json: bool
) -> None:
    """List entries with their kind, status and group."""
    scope = "all" if everything else "memory"
    entries = state.vault.list(scope=scope, group=group, kind=kind, status=status)
    if not entries and (group or kind or status):
        _hint_unknown(state, scope, group=group, kind=kind, status=status)
    # A private note is listed (it is the user's) by its path alone: its title and tags are its own text.
    entries = [dataclasses.replace(e, title=Path(e.path).stem, tags=()) if e.private else e for e in entries]
    if as_json:
        print_json([_public(dataclasses.asdict(e)) for e in entries])
        return
    rows = [(escape(e.path), escape(e.kind or ""), e.status + (" (private)" if e.private else ""),
             escape(", ".join(_public(list(e.tags))))) for e in entries]  # fmt: skip
    print_table(("path", "kind", "status", "tags"), rows, narrow=(3,))
    out.print(plural(len(entries), "entry"))


def _hint_unknown(state: State, scope: str, **wanted: str | None) -> None:
    """One line on standard error when a filter names a group, kind or status no entry has, with close matches."""
    import difflib

    every = state.vault.list(scope=scope)
    for field, value in wanted.items():
        known = sorted({str(getattr(e, field)) for e in every if getattr(e, field)})
        if value is None or value in known:
            continue
        close = difflib.get_close_matches(value, known, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        err.print(f"no entry has {field} {value!r}; {hint}{field}s in this vault: {', '.join(known) or 'none'}",
                  soft_wrap=True)  # fmt: skip


@cli.command()
@click.argument("path")
@click.option(
    "--include-private",
    is_flag=True,
    help="Show a private note and its <private> spans as written (for your eyes; never paste into agent context).",
)
@json_option
@pass_state
def show(state: State, path: str, include_private: bool, as_json: bool) -> None:
    """Print one note (vault-relative PATH).

    A private note is refused, and <private> spans and secret-shaped strings are left out, unless
    --include-private: then the file is printed exactly as written.
    """
    nf = state.vault.read(path)
    note = nf.note
    if not include_private:
        if privacy.note_is_private(note.meta, note.frontmatter):
            raise MemvaultError(
                f"{nf.path} is private: `memvault show --include-private` shows it to you "
                "(never paste it into agent context)",
                code="private",
                path=nf.path,
            )
        raw = None if note.frontmatter is None else privacy.strip_private(note.frontmatter)
        note = dataclasses.replace(note, frontmatter=raw, body=privacy.strip_private(note.body))
    if as_json:
        data = {
            "path": nf.path,
            "title": nf.title,
            "meta": dict(note.meta),
            "body": note.body,
            "error": note.error,
            "mtime_ns": nf.mtime_ns,
        }
        print_json(data if include_private else _public(data))
        return
    if note.error:
        err.print(f"[yellow]warning:[/] frontmatter is not valid YAML: {escape(note.error)}")
    text = notes.dump(note)  # exactly the file, fences and line endings included, less what is private
    click.echo(text if include_private else secrets.redact(text)[0], nl=False)


def _public(value: Any) -> Any:
    """`value` (JSON-shaped) with <private> spans removed from every text and secret-shaped strings redacted."""
    if isinstance(value, str):
        return secrets.redact(privacy.strip_private(value))[0]
    if isinstance(value, Mapping):
        return {_public(k): _public(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_public(v) for v in value]
    return value
