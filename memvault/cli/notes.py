"""`memvault init`, `save`, `evolve`, `undo`, `list`, `show`: writing and reading entries."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from memvault import config as config_mod
from memvault.errors import MemvaultError
from memvault.store import notes, privacy, secrets
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
    print_table,
    yes_option,
)


@cli.command()
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@json_option
@pass_state
def init(state: State, path: Path | None, as_json: bool) -> None:
    """Create the MemoryVault/ folders in a vault and record the vault in the config.

    PATH defaults to --vault. Safe to run again: existing folders and notes are left alone.
    """
    root = path or (Path(state.vault_path) if state.vault_path else None)
    if root is None:
        raise click.UsageError("give the vault folder: memvault init PATH")
    if not root.is_dir():
        raise MemvaultError(f"{root} is not a folder: create the Obsidian vault first", code="no_vault")
    vault = open_vault(root)
    created = vault.init_structure()
    cfg_path = config_mod.write_vault_root(vault.root)
    if as_json:
        print_json({"vault": str(vault.root), "created": created, "config": str(cfg_path)})
        return
    for rel in created:
        out.print(f"created [bold]{rel}/[/]")
    out.print(
        f"vault [bold]{vault.root}[/] is ready ({'nothing to create' if not created else f'{len(created)} folders'});"
        f" config: {cfg_path}"
    )


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

    BODY is the markdown text; omit it or give - to read standard input. A body that starts with
    its own frontmatter contributes those keys. Replacing a protected entry asks first (--yes: don't).

    \b
    Example:
      memvault save preference pytest-style "Use plain asserts and fixtures." -t python
    """
    text = body_of(body)
    result = confirmed(
        state.vault,
        lambda: state.vault.save(
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
    print_result(state.vault.undo(), as_json)


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
    print_table(("path", "kind", "status", "tags"), rows)
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
