"""The vault's health as data: counts per group / kind / status, problems found, and whether it is healthy.

Does NOT render anything; the CLI turns a `Health` into a table or JSON.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from . import hookstate, journal, store
from .inject import plural
from .vault import Vault


@dataclass(frozen=True)
class Health:
    vault: str
    folder: str
    config: str | None
    git: bool
    entries: int  # notes under MemoryVault/
    user_notes: int  # notes elsewhere in the read scope
    by_group: dict[str, int]
    by_kind: dict[str, int]
    by_status: dict[str, int]
    inbox: int
    review: int
    invalid: list[str] = field(default_factory=list)  # "path: reason"
    conflict_copies: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # make the vault unhealthy (exit 1)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check(vault: Vault) -> Health:
    listing = store.list_markdown(vault.root, vault.ignore)
    memory = [rel for rel in listing.notes if vault.in_memory(rel)]
    entries = [vault.entry(rel) for rel in memory]  # one walk of the vault serves both counts
    groups: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    invalid = []
    for entry in entries:
        groups[entry.group or "(none)"] += 1
        kinds[entry.kind or "(none)"] += 1
        statuses[entry.status] += 1
        if entry.error:
            invalid.append(f"{entry.path}: {entry.error}")
    problems, warnings = [], []
    if not vault.memory_dir.is_dir():
        problems.append(f"{vault.folder}/ does not exist in the vault: run `memvault init`")
    for path in journal.conflicts(vault.journal_dir):
        problems.append(f"an interrupted write could not be finished because the notes changed since: {path}")
    copies = [rel for rel in listing.notes if store.is_conflict_copy(rel)]
    if copies:
        warnings.append(f"{plural(len(copies), 'sync conflict copy')}: merge them by hand")
    if invalid:
        warnings.append(f"{len(invalid)} note(s) with invalid frontmatter or unreadable text: memvault won't edit them")
    inbox = sum(1 for e in entries if "/_inbox/" in e.path)
    review = sum(1 for e in entries if "/_review/" in e.path)
    if inbox > vault.config.reflection.inbox_warn:
        warnings.append(f"the inbox holds {inbox} entries: run `memvault inbox`")
    warnings += hookstate.warnings().values()  # recorded by the hooks' idle sweep (e.g. reflection has stalled)
    return Health(
        vault=str(vault.root),
        folder=vault.folder,
        config=vault.config.source,
        git=vault.git_repo() is not None,
        entries=len(memory),
        user_notes=len(listing.notes) - len(memory),
        by_group=dict(sorted(groups.items())),
        by_kind=dict(sorted(kinds.items())),
        by_status=dict(sorted(statuses.items())),
        inbox=inbox,
        review=review,
        invalid=invalid,
        conflict_copies=copies,
        skipped=[f"{p}: {why}" for p, why in listing.skipped],
        problems=problems,
        warnings=warnings,
    )
