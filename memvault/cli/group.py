"""The click group every command hangs on, and what the command modules share: consoles, options, the
vault state, and printing results. Command modules import this; only `memvault.cli` imports them."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.console import Console

from memvault import __version__
from memvault.errors import DENIED, FULL, READ_ONLY, MemvaultError, NotWritable, ProtectedError
from memvault.vault.core import Vault, WriteResult, open_vault

# soft_wrap: a line longer than the terminal is left for the terminal to wrap, never broken by us, so a
# path in it copies whole; tables (render.print_table) keep paths and names whole too.
out = Console(highlight=False, soft_wrap=True, emoji=False)  # a note's ":name:" is text, not an emoji code
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)


class _Group(click.Group):
    """Maps every MemvaultError, once, to a clear message and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, click.Abort):  # one line, not click's "Aborted!"; every write is atomic
            err.print("stopped: interrupted (nothing is left half-written)")
            raise click.exceptions.Exit(130) from None
        except NotWritable as exc:  # its one line also says when an earlier, interrupted change still waits
            if isinstance(ctx.obj, State):
                ctx.obj.unfinished = None
            raise click.ClickException(str(exc)) from None
        except MemvaultError as exc:
            if exc.code == "usage":
                raise click.UsageError(exc.args[0]) from None
            raise click.ClickException(str(exc)) from None
        except OSError as exc:  # a folder that cannot be written, met outside a vault change: one line too
            if exc.errno not in (*READ_ONLY, *FULL, *DENIED):
                raise
            message = f"cannot write {exc.filename}: {exc.strerror}" if exc.filename else str(exc)
            raise click.ClickException(f"{message} [{NotWritable.code}]") from None
        finally:
            if isinstance(ctx.obj, State) and ctx.obj.unfinished:  # after the command's own output
                err.print(f"[yellow]warning:[/] {ctx.obj.unfinished}")


class State:
    def __init__(self, vault_path: str | None) -> None:
        self.vault_path = vault_path
        self._vault: Vault | None = None
        self.unfinished: str | None = None  # an interrupted change opening the vault could not finish

    @property
    def vault(self) -> Vault:
        if self._vault is None:
            self._vault = open_vault(self.vault_path)
            self.unfinished = self._vault.changes.unfinished  # a reader still answers; it says why at the end
        return self._vault


pass_state = click.make_pass_decorator(State)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
yes_option = click.option("--yes", "-y", is_flag=True, help="Change protected entries without asking (for scripts).")
T = TypeVar("T")


def confirmed(vault: Vault, change: Callable[[], T], *, yes: bool, what: str = "Change it", ask: bool = False) -> T:
    """Run `change`; when it would touch a protected entry, ask first (or take --yes), then run it again allowed.

    A refused change wrote nothing, so running it again is safe. Without a terminal to ask on and
    without --yes, the refusal stands (error code `protected`); `ask` asks on standard input anyway
    (a command that is a dialogue already, like `review`).
    """
    try:
        return change()
    except ProtectedError as exc:
        if not yes:
            if not ask and (sys.stdin is None or not sys.stdin.isatty()):
                raise ProtectedError(f"{exc.args[0]}; pass --yes to do it anyway", path=exc.path) from None
            if not click.confirm(f"{exc.path} is protected. {what} anyway?", default=False, err=True):
                raise
        with vault.protection_waived():
            return change()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault_path",
    envvar="MEMVAULT_VAULT",
    metavar="PATH",
    help="The Obsidian vault (default: $MEMVAULT_VAULT, then the config file).",
)
@click.version_option(__version__, prog_name="memvault")
@click.pass_context
def cli(ctx: click.Context, vault_path: str | None) -> None:
    """MemoryVault: permanent, human-editable memory for coding agents, kept in your Obsidian vault."""
    ctx.obj = State(vault_path)


def body_of(value: str | None) -> str:
    if value is not None and value != "-":
        return value
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("give the content as an argument, or pipe it on standard input with -")
    return sys.stdin.read()


def print_result(result: WriteResult, as_json: bool) -> None:
    if as_json:
        print_json(dataclasses.asdict(result))
        return
    archived = f" (archived {result.archived})" if result.archived else ""
    out.print(f"{result.op}: [bold]{result.path}[/]{archived}", soft_wrap=True)  # a path is never broken
    if result.commit:
        out.print(f"committed {result.commit[:10]}")
    if result.warning:
        err.print(f"[yellow]warning:[/] {result.warning}")


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
