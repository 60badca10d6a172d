"""`memvault inspect`: which entries the hooks injected, for which prompt, and why (read from the hook log)."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from memvault import runtime

from .group import cli, json_option, out, print_json
from .render import print_table

SESSION_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "Notification")


def select(records: list[dict[str, Any]], session: str | None, every: bool, limit: int) -> list[dict[str, Any]]:
    """The records to show: one session's (`session` is a prefix), else the latest session's, else all."""
    if every:
        return records[-limit:]
    if session is None:
        latest = next((r.get("session") for r in reversed(records) if r.get("hook") in SESSION_EVENTS), None)
        if latest is None:
            return []
        session = str(latest)
    return [r for r in records if str(r.get("session") or "").startswith(session)][-limit:]


def why(entry: dict[str, Any], hook: Any) -> str:
    """Why an entry was given: SessionStart gives the always-load notes; a prompt's entries were recalled."""
    if hook == "SessionStart":
        return "always-load"
    vec, kw = entry.get("vec") or 0, entry.get("kw") or 0
    if vec and kw:
        return "meaning and keywords"
    return "meaning" if vec else "keywords" if kw else "recalled (no score)"


@cli.command()
@click.option("--session", metavar="ID", help="One session (a prefix of its id is enough); default: the latest.")
@click.option("--all", "every", is_flag=True, help="Every session's records, not just one.")
@click.option("--limit", default=50, show_default=True, help="Show at most this many records (the newest).")
@json_option
def inspect(session: str | None, every: bool, limit: int, as_json: bool) -> None:
    """Show which entries the hooks injected into which prompt, and why.

    Reads the hook log in the state dir (one JSON line per hook run, kept 30 days): for each
    prompt, the entries injected with their score parts (meaning = vector, keywords = FTS5) and
    the relevance floor's verdict, the ones the floor dropped, the ones skipped because the
    session already had them, and whether recall ran keyword-only or ran out of time. Background
    jobs (reflection, reindex) are listed too.
    """
    records = select(list(runtime.read_log()), session, every, limit)
    if as_json:
        print_json(records)
        return
    if not records:
        where = f" for session {escape(session)}" if session else ""
        out.print(f"no hook runs logged{where} (log: {runtime.log_dir()})")
        return
    current: object = object()  # no session printed yet (a record without one is a group too)
    for record in records:
        if record.get("session") != current:
            current = record.get("session")
            name = f"session {escape(str(current))}" if current else "background jobs and hooks without a session"
            out.print(f"\n[bold]{name}[/]")
        _render(record)


def _render(record: dict[str, Any]) -> None:
    status = record.get("result", "?")
    colour = {"success": "green", "partial": "yellow", "error": "red"}.get(status, "dim")
    host = f" ({record['host']})" if record.get("host") else ""  # Codex CLI, Gemini CLI, MCP; none: Claude Code
    line = f"{str(record.get('ts', ''))[:19].replace('T', ' ')}  {record.get('hook')}{host}  [{colour}]{status}[/]"
    if record.get("mode"):
        line += f"  {record['mode']}"
    line += f"  {record.get('duration_ms', '?')} ms"
    out.print(line)
    if record.get("prompt"):
        out.print(f"  prompt: {escape(str(record['prompt']))}")
    if record.get("reason"):
        out.print(f"  [dim]{escape(str(record['reason']))}[/]")
    injected = record.get("injected") or []
    if injected:
        _entries(injected, record.get("hook"))
    dropped = record.get("dropped") or []
    if dropped:
        out.print(f"  [dim]below the relevance floor, not injected ({len(dropped)}):[/]")
        _entries(dropped, record.get("hook"), style="dim")
    if record.get("deduped"):
        out.print(f"  [dim]already given this session: {escape(', '.join(record['deduped']))}[/]")
    if record.get("written"):
        out.print(f"  wrote: {escape(', '.join(record['written']))}")


def _entries(entries: list[dict[str, Any]], hook: Any, style: str = "") -> None:
    """Entries with their score parts and the relevance floor's verdict (older log lines have no verdict)."""
    rows = []
    for entry in entries:
        cells = (
            escape(str(entry.get("path"))),
            _num(entry.get("score")),
            _num(entry.get("vec")),
            _num(entry.get("kw")),
            escape(str(entry["why"])) if entry.get("why") else why(entry, hook),
        )
        rows.append([f"[{style}]{c}[/]" if style and c else c for c in cells])
    print_table(("entry", "score", "meaning", "keywords", "why"), rows, wrap=(4,))


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else ""
