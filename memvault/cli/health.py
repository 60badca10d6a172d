"""`memvault health`: the vault's health report as rich tables or JSON, and its exit status."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click
from rich.markup import escape

from memvault import health as health_mod
from memvault import paths
from memvault.text import plural

from .group import State, cli, json_option, out, pass_state, print_json
from .render import fits, print_table


@cli.command()
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too, not only on problems.")
@json_option
@pass_state
def health(state: State, strict: bool, as_json: bool) -> None:
    """Check the vault, its index, the embedding model and service, reflection and the review queues.

    Prints entries per group, kind and status, the index's size and freshness, which model made the
    vectors, whether the warm service runs, the last reflection, inbox / review / incubator counts,
    sync conflict copies, old entries that were never recalled (clean-up candidates: you decide), and
    every warning. Exits 1 when unhealthy (a problem; with --strict, any warning).
    """
    report = health_mod.check(state.vault)
    failed = not report.ok or (strict and bool(report.warnings))
    if as_json:
        print_json({**dataclasses.asdict(report), "ok": report.ok, "exit": int(failed)})
    else:
        _render_health(report)
    if failed:
        sys.exit(1)


NEVER_RECALLED_SHOWN = 20


def _render_counts(report: health_mod.Health) -> None:
    """Entries per group, kind and status: three column pairs side by side, or one under another when too wide."""
    headers = ("group", "", "kind", "", "status", "")
    columns = [[(escape(name), str(n)) for name, n in c.items()] for c in (report.by_group, report.by_kind,
                                                                           report.by_status)]  # fmt: skip
    rows: list[list[str]] = []
    for row in range(max((len(c) for c in columns), default=0)):
        rows.append([cell for col in columns for cell in (col[row] if row < len(col) else ("", ""))])
    if fits(headers, rows, wrap=(), width=out.width):
        print_table(headers, rows)
        return
    for header, pairs in zip(headers[::2], columns, strict=True):
        print_table((header, "entries"), pairs)


def _render_web(web: dict[str, Any]) -> None:
    """One line for web research and discovery (off and why, or on), and one for the last run."""
    parts = [f"{what} {'on' if web[key] is None else 'off (' + escape(web[key].split(' (')[0]) + ')'}"
             for what, key in (("discovery", "discovery"), ("idea research", "research"))]  # fmt: skip
    out.print(f"web: {'; '.join(parts)}; {web['runs_today']} of {web['cap']} runs today", soft_wrap=True)
    last = web.get("last")
    if last:
        cost = f", ${last['cost_usd']:.4f}" if isinstance(last.get("cost_usd"), (int, float)) else ""
        result = "answered" if last.get("ok") else f"failed: {escape(str(last.get('why') or ''))}"
        out.print(f"  last web run {last['time']}: {last.get('purpose')} by {last.get('host')}, {result}, "
                  f"{last.get('fetches', 0)} web calls, {last.get('seconds', 0)} s{cost}", soft_wrap=True)  # fmt: skip


def _render_health(report: health_mod.Health) -> None:
    out.print(
        f"vault [bold]{report.vault}[/]  ({report.entries} entries in {report.folder}/, "
        f"{report.user_notes} of your own notes; git: {'yes' if report.git else 'no'})"
    )
    config = escape(report.config or f"{paths.config_file()} (not written yet: every setting is its default)")
    out.print(f"config: {config}")
    _render_counts(report)
    out.print(f"inbox: {report.inbox}   review: {report.review}   incubator: {report.incubator}")
    out.print(f"last reflection: {report.last_reflection or 'never (on this machine)'}")
    miner = report.miner
    if miner:
        calls = f"; {miner['calls_today']} of {miner['cap']} Claude calls used today" if "cap" in miner else ""
        why = escape(miner["why"])
        out.print(f"reflection miner ({escape(miner['configured'])}): {miner['next']}, because {why}{calls}")
        if miner.get("last"):
            out.print(f"  last reflection used {miner['last']}: {escape(miner.get('last_why') or '')}")
    ix = report.index
    if ix.get("exists"):
        size = f"{int(ix.get('bytes') or 0) / 1e6:.1f} MB"
        fresh = "up to date" if not ix.get("stale") else f"{plural(int(ix['stale']), 'note')} changed since"
        out.print(
            f"index: {ix.get('notes')} notes, {ix.get('chunks')} chunks, {ix.get('vectors')} vectors, {size};"
            f" last reindex {ix.get('last_sync') or 'never'} ({fresh})"
        )
        since = ix.get("recall_tracking_since")
        out.print(
            f"recalls: {ix.get('recalled_entries', 0)} entries injected at least once"
            + (f" (counted since {since[:10]})" if since else " (no injection counted yet)")
        )
    else:
        out.print(f"index: none yet ({escape(str(ix.get('path')))})")
    emb = report.embedding
    service = emb.get("service")
    running = f"running (pid {service.get('pid')}, {service.get('model')})" if service else "not running"
    out.print(
        f"embedding model: {emb.get('configured')}"
        + ("" if emb.get("installed") else " (not installed: keyword-only)")
        + f"; index vectors: {emb.get('index_model') or 'none'}; service: {running}"
    )
    if report.web:
        _render_web(report.web)
    auto = report.claude_memory
    if auto:
        state = "on" if auto.get("active") else "off"
        out.print(f"Claude Code auto memory (this project): {state}, {plural(int(auto.get('files', 0)), 'file')}")
    if report.team:
        out.print(escape(report.team["line"]))
    if report.never_recalled:
        count = len(report.never_recalled)
        out.print(f"never recalled, older than gc.unrecalled_days ({count}; clean-up candidates, you decide):")
        for rel in report.never_recalled[:NEVER_RECALLED_SHOWN]:
            out.print(f"  {escape(rel)}")
        if len(report.never_recalled) > NEVER_RECALLED_SHOWN:
            out.print(f"  … and {len(report.never_recalled) - NEVER_RECALLED_SHOWN} more (--json lists them all)")
    for label, lines in (("conflict copy", report.conflict_copies), ("invalid", report.invalid),
                         ("skipped", report.skipped)):  # fmt: skip
        for line in lines:
            out.print(f"[yellow]{label}:[/] {escape(line)}")
    for line in report.warnings:
        out.print(f"[yellow]warning:[/] {escape(line)}")
    for line in report.problems:
        out.print(f"[red]problem:[/] {escape(line)}")
    out.print("[green]healthy[/]" if report.ok else "[red]unhealthy[/]")
