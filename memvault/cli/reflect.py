"""`memvault reflect`, `memvault review` and `memvault inbox`: reflection and its two queues from the terminal.

Just over 400 lines: three commands that share the queue rendering and the reflection report.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from memvault.errors import MemvaultError, ProtectedError
from memvault.hosts import places
from memvault.reflect import review as review_mod
from memvault.reflect import runner as reflect_mod
from memvault.store import disk
from memvault.store.model import INBOX, REVIEW
from memvault.text import plural
from memvault.vault.core import Vault

from .group import State, cli, confirmed, err, json_option, out, pass_state, print_json, yes_option
from .render import print_table

_CORPUS_DEFAULT = "\0default"


@cli.command()
@click.option(
    "--session", "session", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
    help="The transcript (.jsonl) to reflect (default: the newest one of the current project).",
)  # fmt: skip
@click.option(
    "--corpus", "corpus", metavar="[DIR]", is_flag=False, flag_value=_CORPUS_DEFAULT, default=None,
    help="Reflect every transcript under DIR (default: every agent's history found here: Claude Code's "
    "projects, Codex CLI's sessions, Gemini CLI's chats); resumable.",
)  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Show what would be captured and where; write nothing.")
@click.option(
    "--show-prompt", is_flag=True,
    help="With --dry-run: print exactly what the Claude miner would send (command, system prompt, each window); "
    "call nothing.",
)  # fmt: skip
@json_option
@pass_state
def reflect(
    state: State, session: Path | None, corpus: str | None, dry_run: bool, show_prompt: bool, as_json: bool
) -> None:
    """Mine session transcripts for preferences, fixes, workflows and ideas, and file them.

    High confidence is saved at once, medium goes to _review/ (`memvault review`), low to _inbox/
    (`memvault inbox`), ideas to the idea incubator; near-duplicates of existing entries are skipped
    or proposed as supersedes. Reflecting the same transcript again adds nothing. Without --session
    or --corpus, the newest transcript of the current folder's Claude Code project is reflected.
    While a file named STOP exists in memvault's state folder, reflection does nothing.

    The miner is `reflection.miner`: auto (headless Claude Code when `claude` is found and answers,
    else the offline rules), claude or offline; the output says which ran and why.
    """
    vault = state.vault
    if show_prompt and not dry_run:
        raise click.UsageError("--show-prompt goes with --dry-run (it sends nothing)")
    if show_prompt and corpus is not None:
        raise click.UsageError("--show-prompt shows one session: give --session PATH or none")
    if corpus is not None:
        if session is not None:
            raise click.UsageError("give --session or --corpus, not both")
        folders = _history_folders() if corpus == _CORPUS_DEFAULT else [Path(corpus).expanduser()]
        missing = [f for f in folders if not f.is_dir()]
        if corpus != _CORPUS_DEFAULT and missing:
            raise MemvaultError(f"no transcript folder at {missing[0]}", code="missing")
        if not folders:
            raise MemvaultError(
                f"no agent history found (looked for {reflect_mod.projects_dir()}, {places.codex_sessions()} "
                f"and {places.gemini_dir() / 'tmp'})",
                code="missing",
            )
        reports = [_corpus(vault, folder, dry_run, as_json) for folder in folders]
        if as_json:
            counts = review_mod.counts(vault)
            warnings = {"warnings": list(counts.warnings)}
            print_json({**reports[0], **warnings} if len(reports) == 1 else {"folders": reports, **warnings})
        else:
            _render_counts(review_mod.counts(vault))
        return
    transcript = session or _newest_transcript()
    try:
        found = transcript.is_file()
    except OSError as exc:  # a name too long for the file system, a loop of symlinks…
        why = f"cannot open the transcript {str(transcript)[:200]}: {exc.strerror}"
        raise MemvaultError(why, code="missing") from None
    if not found:
        raise MemvaultError(f"no transcript at {transcript}", code="missing")
    if show_prompt:
        shown: list[Any] = []
        report = reflect_mod.reflect_transcript(vault, transcript, final=True, show_prompt=shown.extend, retry=True)
        _render_prompt(vault, shown, report, as_json)
        return
    # Asked for by name: a quarantined transcript is tried again.
    report = reflect_mod.reflect_transcript(vault, transcript, dry_run=dry_run, final=True, retry=True)
    counts = review_mod.counts(vault)
    if as_json:
        print_json({**report.as_dict(), "warnings": list(counts.warnings)})
        return
    _render_report(report, vault.folder)
    _render_counts(counts)


def _render_prompt(vault: Vault, windows: list[Any], report: reflect_mod.Report, as_json: bool) -> None:
    """What the Claude miner would send for this session: the command line once, then each window's input."""
    from memvault.reflect import miner
    from memvault.reflect.mine import claude

    settings = vault.config.reflection
    argv = claude.command(settings.claude_command, settings.claude_model)
    name, why = miner.choose(settings, probe=False)
    inputs = [claude.window_input(w) for w in windows]
    if as_json:
        print_json({"command": argv, "windows": inputs, "miner": name, "why": why, "turns": report.turns})
        return
    out.print(f"[dim]{len(inputs)} window(s), one call each; {name} miner would run: {escape(why)}[/]")
    if name != "claude":
        out.print("[dim](the offline miner is chosen: nothing would be sent; this is what the Claude miner sends)[/]")
    out.print("[bold]command[/] (the text after --system-prompt is the system prompt):", soft_wrap=True)
    click.echo(" ".join(_shell_word(a) for a in argv))
    for n, text in enumerate(inputs, 1):
        out.rule(f"standard input, call {n} of {len(inputs)}")
        click.echo(text)


def _shell_word(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _newest_transcript() -> Path:
    folder = reflect_mod.project_folder(Path.cwd())
    found = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    if not found:
        raise click.UsageError(f"no transcript of this folder's project in {folder}: give --session PATH or --corpus")
    return found[-1]


def _history_folders() -> list[Path]:
    """Every agent's transcript folder that exists on this machine: Claude Code, Codex CLI, Gemini CLI (per project)."""
    found = [reflect_mod.projects_dir(), places.codex_sessions(), *places.gemini_chats()]
    return [f for f in found if f.is_dir()]


def _corpus(vault: Vault, folder: Path, dry_run: bool, as_json: bool) -> dict[str, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=as_json) as bar:
        task = bar.add_task("reflecting transcripts", total=None)

        def progress(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=f"reflecting {Path(path).name}"[:60])

        report = reflect_mod.reflect_corpus(vault, folder, progress=progress, dry_run=dry_run)
    if as_json:
        return report.as_dict()
    verb = "would write" if dry_run else "wrote"
    out.print(
        f"{report.files} transcripts under {escape(report.folder)}: {report.reflected} reflected, "
        f"{report.unchanged} already done; {plural(report.candidates, 'candidate')}, {verb} "
        f"{plural(len(report.written), 'entry')} in {report.ms / 1000:.1f}s"
    )
    for path, problem in report.errors.items():
        err.print(f"[yellow]warning:[/] {escape(path)}: {escape(problem)}")
    for path in report.quarantined:
        err.print(f"[yellow]quarantined:[/] {escape(path)} failed repeatedly; retry: memvault reflect --session PATH")
    if report.halted:
        err.print(f"[yellow]halted:[/] {'another reflection is running' if report.busy else 'the STOP file exists'}; "
                  "run the same command again to resume")  # fmt: skip
    return report.as_dict()


def _render_report(report: reflect_mod.Report, folder: str) -> None:
    if report.busy:
        err.print("[yellow]busy:[/] another reflection of this vault is running; nothing was done")
        return
    if report.halted:
        err.print(f"[yellow]halted:[/] the STOP file {reflect_mod.stop_file()} exists; nothing more was written")
    rows = []
    for route in report.routes:
        where = (route.get("path") or route.get("target") or "").removeprefix(folder + "/")
        if route["action"] in ("duplicate", "supersede", "promote"):
            verb = {"duplicate": "of", "supersede": "to replace", "promote": "moved from"}[route["action"]]
            where = f"{verb} {route['target'].removeprefix(folder + '/')}"
            where += f" → {route['path'].removeprefix(folder + '/')}" if route.get("path") else ""
        rows.append((escape(where), route["action"], route.get("confidence", ""), escape(route.get("title", ""))))
    print_table((f"where (in {folder}/)", "action", "conf.", "candidate"), rows, wrap=(0, 3))
    verb = "would write" if report.dry_run else "wrote"
    out.print(
        f"[dim]{plural(report.turns, 'new turn')}, {plural(report.candidates, 'candidate')} ({report.miner} miner), "
        f"{verb} {plural(len([r for r in report.routes if r.get('path')]), 'entry')} in {report.ms:.0f} ms[/]"
    )
    if report.miner_reason:
        spent = f"; {plural(report.claude_calls, 'Claude call')}" if report.claude_calls else ""
        cost = f", ${report.cost_usd:.4f}" if report.cost_usd else ""
        out.print(f"[dim]miner: {report.miner}, because {escape(report.miner_reason)}{spent}{cost}[/]")
    for line in report.notes:
        err.print(f"[yellow]note:[/] {escape(line)}")


def _render_counts(counts: review_mod.Counts) -> None:
    if counts.review:
        out.print(f"{plural(counts.review, 'entry waits', 'entries wait')} in _review/: run `memvault review`")
    for line in counts.warnings:
        err.print(f"[yellow]warning:[/] {line}")


# ---- review ---------------------------------------------------------------------------------

_CHOICES = {"a": "approve", "e": "edit", "r": "reject", "s": "skip", "x": "supersede", "q": "quit"}


@cli.command()
@pass_state
def review(state: State) -> None:
    """Go through the medium-confidence captures in _review/, one at a time.

    \b
    For each entry:
      a  approve: move it to <kind>/ as an active entry
      e  edit: open it in $EDITOR, then approve the edited text
      r  reject: delete it (a git vault keeps it in history)
      s  skip: leave it for later
      x  supersede existing: replace the entry it proposes (or one you name) with it
      t  approve and publish to team (when team memory is set up): `memvault team publish`
      q  quit
    """
    vault = state.vault
    queue = review_mod.pending(vault, REVIEW)
    if not queue:
        out.print("nothing to review: _review/ is empty")
        _render_counts(review_mod.counts(vault))
        return
    done: dict[str, int] = {}
    try:
        _review_queue(vault, queue, done)
    except click.Abort:  # Ctrl-C, or standard input ended (`review </dev/null`)
        ended = "standard input ended" if not sys.stdin.isatty() else "interrupted"
        err.print(f"stopped ({ended}): the entries not yet answered stay in _review/")
        raise click.exceptions.Exit(1) from None
    finally:
        if done:
            out.print(", ".join(f"{n} {a}" for a, n in done.items()))
    if not done:
        out.print("nothing done")
    _render_counts(review_mod.counts(vault))


def _review_queue(vault: Vault, queue: list[Any], done: dict[str, int]) -> None:
    for number, entry in enumerate(queue, 1):
        nf = vault.read(entry.path)
        meta = nf.note.meta
        proposes = meta.get("proposes_supersede")
        out.rule(f"{number}/{len(queue)}  {escape(entry.title)}")
        facts = [f"{k}: {meta[k]}" for k in ("kind", "confidence", "rule", "source", "captured") if meta.get(k)]
        out.print(f"[dim]{escape(entry.path)}\n{escape('  '.join(facts))}[/]", soft_wrap=True)
        if proposes:
            out.print(f"[bold]proposes to supersede[/] {escape(str(proposes))}", soft_wrap=True)
        if meta.get("supersede_note"):
            out.print(f"[yellow]{escape(str(meta['supersede_note']))}[/]", soft_wrap=True)
        if meta.get("warning"):
            out.print(f"[bold red]warning:[/] this {escape(str(meta['warning']))}", soft_wrap=True)
        out.print(escape(nf.note.body.strip()))
        keys, offered, team = "a/e/r/s/x/q", dict(_CHOICES), _team_offered(vault)
        if team:  # team memory configured: approve and publish to the team, the person's explicit choice
            keys, offered["t"] = "a/t/e/r/s/x/q", "team"
        choice = click.prompt(
            f"approve{', publish to team' if team else ''}, edit, reject, skip, "
            f"supersede{' ' + str(proposes) if proposes else ' existing…'}, quit [{keys}]",
            type=click.Choice(list(offered)), show_choices=False, default="s",
        )  # fmt: skip
        action = offered[choice]
        if action == "quit":
            break
        try:
            _review_one(vault, entry.path, action, proposes)
        except MemvaultError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}")
            action = "failed"
        done[action] = done.get(action, 0) + 1


def _review_one(vault: Vault, rel: str, action: str, proposes: Any) -> None:
    if action == "approve":
        result = confirmed(vault, lambda: review_mod.approve(vault, rel), yes=False, ask=True)
        out.print(f"approved → [bold]{escape(result.path)}[/]", soft_wrap=True)
    elif action == "edit":
        text = disk.read_text(vault.root / rel)
        edited = click.edit(text, extension=".md")
        result = confirmed(vault, lambda: review_mod.approve(vault, rel, edited=edited), yes=False, ask=True)
        out.print(f"edited and approved → [bold]{escape(result.path)}[/]", soft_wrap=True)
    elif action == "team":
        result = confirmed(vault, lambda: review_mod.approve(vault, rel), yes=False, ask=True)
        out.print(f"approved → [bold]{escape(result.path)}[/]", soft_wrap=True)
        from .team import publish_reviewed

        publish_reviewed(vault, result.path)
    elif action == "reject":
        confirmed(vault, lambda: review_mod.reject(vault, rel), yes=False, ask=True)
        out.print("rejected")
    elif action == "supersede":
        target = str(proposes) if proposes else _ask_target(vault)
        if target is None:
            out.print("skipped: no entry named")
            return
        result = confirmed(
            vault, lambda: review_mod.supersede(vault, rel, target), yes=False, ask=True, what="Supersede it"
        )
        out.print(
            f"superseded {escape(target)} → [bold]{escape(result.path)}[/] (archived {escape(result.archived or '')})"
        )


def _team_offered(vault: Vault) -> bool:
    """Whether review offers "publish to team" (team memory configured on this machine)."""
    from memvault.team import status

    return status.configured(vault.config)


def _ask_target(vault: Vault) -> str | None:
    """The path of an existing entry, asked until it names one (a typo is said and asked again); empty skips."""
    while True:
        answer = click.prompt("path of the entry this one replaces (empty: skip)", default="", show_default=False)
        if not answer.strip():
            return None
        try:
            vault.read(answer.strip())
        except MemvaultError as exc:
            err.print(f"[red]error:[/] {escape(str(exc))}; try again", soft_wrap=True)
            continue
        return answer.strip()


# ---- inbox ----------------------------------------------------------------------------------


@cli.command()
@click.argument("action", type=click.Choice(["list", "accept", "reject"]), default="list")
@click.argument("paths", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Accept or reject every entry in the inbox.")
@yes_option
@json_option
@pass_state
def inbox(state: State, action: str, paths: tuple[str, ...], everything: bool, yes: bool, as_json: bool) -> None:
    """List, accept or reject the low-confidence captures in _inbox/.

    PATHS are vault-relative paths or just the entries' file names. `accept` moves an entry to
    <kind>/ as an active entry (or, when it proposes a supersede, replaces that entry); `reject`
    deletes it. A supersede of a protected entry is applied only after you confirm (--yes: without
    asking); without a terminal it stays in the inbox.

    \b
    Examples:
      memvault inbox
      memvault inbox accept dependabot-grouped-updates
      memvault inbox reject --all
    """
    vault = state.vault
    if action == "list":
        if paths or everything:
            raise click.UsageError("`inbox list` takes no paths")
        _inbox_list(vault, as_json)
        return
    if everything == bool(paths):
        raise click.UsageError(f"give the entries to {action}, or --all")
    targets = [e.path for e in review_mod.pending(vault, INBOX)] if everything else [
        review_mod.resolve(vault, p, INBOX) for p in paths
    ]  # fmt: skip
    results: list[dict[str, Any]] = []
    for rel in targets:
        try:
            results.append(_inbox_one(vault, rel, action, yes))
        except ProtectedError as exc:  # no terminal to ask on, or the answer was no: it stays in the inbox
            results.append({"path": rel, "action": "kept", "reason": exc.args[0]})
    counts = review_mod.counts(vault)
    if as_json:
        print_json({"results": results, "inbox": counts.inbox, "warnings": list(counts.warnings)})
        return
    for r in results:
        new = f" → [bold]{escape(r['new'])}[/]" if r.get("new") else ""
        why = f"\n  [yellow]{escape(r['reason'])}[/]" if r.get("reason") else ""
        out.print(f"{r['action']}: {escape(r['path'])}{new}{why}", soft_wrap=True)
    out.print(f"{plural(counts.inbox, 'entry')} left in the inbox")
    _render_counts(counts)


def _inbox_one(vault: Vault, rel: str, action: str, yes: bool) -> dict[str, Any]:
    if action == "reject":
        confirmed(vault, lambda: review_mod.reject(vault, rel, how="rejected from the inbox"), yes=yes)
        return {"path": rel, "action": "rejected"}
    if vault.read(rel).note.meta.get("proposes_supersede"):
        done = confirmed(vault, lambda: review_mod.supersede(vault, rel), yes=yes, what="Supersede it")
        return {"path": rel, "action": "superseded", "new": done.path, "archived": done.archived}
    done = confirmed(vault, lambda: review_mod.approve(vault, rel, how="accepted"), yes=yes)
    return {"path": rel, "action": "accepted", "new": done.path}


def _inbox_list(vault: Vault, as_json: bool) -> None:
    entries = review_mod.pending(vault, INBOX)
    counts = review_mod.counts(vault)
    rows: list[dict[str, Any]] = []
    for e in entries:
        meta = vault.read(e.path).note.meta
        rows.append({
            "path": e.path, "title": e.title, "kind": e.kind, "confidence": meta.get("confidence"),
            "captured": str(meta.get("captured") or e.updated or ""), "source": meta.get("source"),
            "proposes_supersede": meta.get("proposes_supersede"), "warning": meta.get("warning"),
        })  # fmt: skip
    if as_json:
        print_json({"entries": rows, "inbox": counts.inbox, "warnings": list(counts.warnings)})
        return
    cells = []
    for r in rows:
        extra = f"; would supersede {escape(str(r['proposes_supersede']))}" if r["proposes_supersede"] else ""
        name = os.path.splitext(os.path.basename(r["path"]))[0]  # what `inbox accept NAME` takes
        cells.append((f"[bold]{escape(name)}[/]", escape(r["title"]) + extra, escape(r["kind"] or ""),
                      str(r["confidence"] or ""), r["captured"][:10]))  # fmt: skip
    print_table(("name", "title", "kind", "confidence", "captured"), cells, wrap=(1,))
    out.print(
        f"{plural(len(rows), 'entry')} in the inbox"
        + (": `memvault inbox accept NAME…` or `reject NAME…`" if rows else "")
    )
    for line in counts.warnings:
        err.print(f"[yellow]warning:[/] {line}")
